//! `curator counter PATH get|set N|incr [N]` on a `DistributedAtomicLong`.

use std::time::Duration;

use clap::{Args, Subcommand};
use curator_counters::DistributedAtomicLong;
use curator_framework::retry::RetryNTimes;
use serde_json::json;

use super::{Ctx, Run};
use crate::args::{Session, Takes};
use crate::exit::{CliError, CliResult, codes};

/// A shared counter (Curator's DistributedAtomicLong: 8 bytes, big-endian)
#[derive(Debug, Args)]
pub(crate) struct Counter {
    /// The counter's path
    path: String,
    #[command(subcommand)]
    op: CounterOp,
    #[command(flatten)]
    session: Session,
}

/// What `curator counter` does.
#[derive(Debug, Subcommand)]
#[command(args_conflicts_with_subcommands = false)]
enum CounterOp {
    /// Print the value (0 when the node does not exist)
    Get {
        #[command(flatten)]
        session: Session,
    },
    /// Set the value
    Set {
        /// The new value
        #[arg(allow_negative_numbers = true)]
        value: i64,
        #[command(flatten)]
        session: Session,
    },
    /// Add N (default 1) and print the new value
    Incr {
        /// How much to add
        #[arg(allow_negative_numbers = true, default_value_t = 1)]
        by: i64,
        #[command(flatten)]
        session: Session,
    },
}

impl Run for Counter {
    fn takes(&self) -> Takes<'_> {
        let (CounterOp::Get { session: op }
        | CounterOp::Set { session: op, .. }
        | CounterOp::Incr { session: op, .. }) = &self.op;
        Takes::Session(vec![&self.session, op])
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let Counter { path, op, .. } = self;
        let client = ctx.client_for(&path).await?;
        let what = format!("counter {path}");
        let counter = DistributedAtomicLong::builder(
            client.clone(),
            &path,
            RetryNTimes::new(50, Duration::from_millis(10)),
        )
        .build()
        .map_err(|error| CliError::zk(&what, error))?;
        let outcome = apply(&counter, &what, op).await;
        // Each write leaves an outcome marker that the instance deletes with its next write;
        // this process makes no next write, so it deletes the marker now (also after a failed
        // write, which may have been applied). A failure here leaves one empty marker: nothing
        // to report.
        let _ = counter.flush_markers().await;
        let (previous, value) = outcome?;
        ctx.report.result(
            json!({ "path": path, "value": value, "previous": previous }),
            value.to_string(),
        )?;
        Ok(codes::OK)
    }
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
