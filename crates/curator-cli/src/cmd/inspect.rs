//! `curator inspect PATH [--json] [--watch]`: who holds what at PATH (see `curator-inspect`).

use curator_framework::CuratorFramework;
use curator_inspect::Report;

use crate::exit::{CliError, CliResult, codes};
use crate::output::{self, WriteError};
use crate::report::Reporter;

pub(crate) async fn run(
    client: &CuratorFramework,
    report: Reporter,
    path: &str,
    watch: bool,
) -> CliResult {
    let failed = |error| CliError::zk(&format!("inspecting {path}"), error);
    if !watch {
        let inspected = curator_inspect::inspect(client, path)
            .await
            .map_err(failed)?;
        print(report, &inspected)?;
        return Ok(codes::OK);
    }
    // Nobody reads any more (`curator inspect --watch P | head`): stop at once rather than at
    // the next change, which may never come.
    output::watch_pipes();
    let (first, mut changes) = tokio::select! {
        watched = curator_inspect::watch(client, path) => watched.map_err(failed)?,
        _ = output::gone() => return Err(CliError::output_closed()),
    };
    print(report, &first)?;
    let mut last = first;
    loop {
        let next = tokio::select! {
            next = changes.next() => next,
            _ = output::gone() => return Err(CliError::output_closed()),
        };
        // The client closed (an interrupt): done.
        let Some(next) = next else {
            return Ok(codes::OK);
        };
        let next = next.map_err(failed)?;
        // Several events may describe one change; print only what differs.
        if next != last {
            print(report, &next)?;
            last = next;
        }
    }
}

/// The report as one JSON object per line, or as text.
fn print(report: Reporter, inspected: &Report) -> Result<(), WriteError> {
    let value = serde_json::to_value(inspected).unwrap_or_default();
    report.result(value, inspected.to_string().trim_end())
}
