//! `curator counter PATH get|set N|incr [N]` on a `DistributedAtomicLong`.

use std::time::Duration;

use curator_counters::DistributedAtomicLong;
use curator_framework::CuratorFramework;
use curator_framework::retry::RetryNTimes;
use serde_json::json;

use crate::args::CounterOp;
use crate::exit::{CliError, CliResult, codes};
use crate::report::Reporter;

pub(crate) async fn run(
    client: &CuratorFramework,
    report: Reporter,
    path: &str,
    op: CounterOp,
) -> CliResult {
    let what = format!("counter {path}");
    let counter = DistributedAtomicLong::builder(
        client.clone(),
        path,
        RetryNTimes::new(50, Duration::from_millis(10)),
    )
    .build()
    .map_err(|error| CliError::zk(&what, error))?;
    let outcome = apply(&counter, &what, op).await;
    // Each write leaves an outcome marker that the instance deletes with its next write; this
    // process makes no next write, so it deletes the marker now (also after a failed write,
    // which may have been applied). A failure here leaves one empty marker: nothing to report.
    let _ = counter.flush_markers().await;
    let (previous, value) = outcome?;
    report.result(
        json!({ "path": path, "value": value, "previous": previous }),
        value.to_string(),
    )?;
    Ok(codes::OK)
}

/// Runs `op`; the previous value (for `incr`) and the value after it.
async fn apply(
    counter: &DistributedAtomicLong,
    what: &str,
    op: CounterOp,
) -> CliResult<(Option<i64>, i64)> {
    match op {
        CounterOp::Get { .. } => {
            let value = counter
                .get()
                .await
                .map_err(|error| CliError::zk(what, error))?;
            Ok((None, value.post_value))
        }
        CounterOp::Set { value, .. } => {
            counter
                .force_set(value)
                .await
                .map_err(|error| CliError::zk(what, error))?;
            Ok((None, value))
        }
        CounterOp::Incr { by, .. } => {
            let result = counter
                .add(by)
                .await
                .map_err(|error| CliError::zk(what, error))?;
            if !result.succeeded {
                return Err(CliError::new(
                    codes::OTHER,
                    format!("{what}: too much contention, the increment was not applied"),
                ));
            }
            Ok((Some(result.pre_value), result.post_value))
        }
    }
}
