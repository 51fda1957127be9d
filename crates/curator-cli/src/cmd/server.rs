//! `curator server [--cluster N]`.

use serde_json::json;

use crate::exit::{CliError, CliResult, codes};
use crate::report::Reporter;
use crate::signals::Signals;

pub(crate) async fn run(report: Reporter, cluster: Option<u16>) -> CliResult {
    let mut signals = Signals::install()?;
    let failed = |error: curator_test::Error| {
        CliError::new(codes::OTHER, format!("cannot start ZooKeeper: {error}"))
    };
    // Keep whichever handle was started until the end: dropping it stops the server(s).
    let (connect, _server, _cluster) = match cluster {
        None => {
            let server = curator_test::TestingServer::start_dedicated()
                .await
                .map_err(failed)?;
            (server.connect_string(), Some(server), None)
        }
        Some(n) => {
            let cluster = curator_test::TestingCluster::start(usize::from(n))
                .await
                .map_err(failed)?;
            (cluster.connect_string(), None, Some(cluster))
        }
    };
    // Nobody to tell where the server is: stop it (by dropping it) rather than serve unseen.
    report.result(json!({ "connect": connect }), &connect)?;
    report.status(
        "serving",
        json!({ "connect": connect }),
        "serving until interrupted (Ctrl-C)",
    )?;
    let signal = signals.recv().await;
    let _ = report.status(
        "stopped",
        json!({ "signal": signal.as_str() }),
        format!("{signal}: stopping"),
    );
    Ok(codes::OK)
}
