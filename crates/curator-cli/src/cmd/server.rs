//! `curator server [--cluster N | --in-process] [--port PORT]`.

use std::net::TcpListener;

use clap::Args;
use curator_test::{TestingCluster, TestingServer};
use curator_zkmodel::InProcessServer;
use serde_json::json;

use super::{Ctx, Run};
use crate::args::{DEFAULT_CONNECT, Output, Takes};
use crate::exit::{CliError, CliResult, codes};
use crate::signals::Signals;

/// Start a local ZooKeeper server (or ensemble) and print its connect string until interrupted
#[derive(Debug, Args)]
pub(crate) struct Server {
    /// Start an ensemble of N members instead of one server
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=9))]
    cluster: Option<u16>,
    /// Serve a model of ZooKeeper in this process instead of a real server (curator-zkmodel: no
    /// Java needed; one server, in memory, for tests and trying things out, never production)
    #[arg(long, conflicts_with = "cluster")]
    in_process: bool,
    /// Serve on this port [default: 2181 when free, else any free port]
    #[arg(long, value_name = "PORT", conflicts_with = "cluster", value_parser = clap::value_parser!(u16).range(1..))]
    port: Option<u16>,
    #[command(flatten)]
    output: Output,
}

/// The port every other command looks at without `--connect` (see [`DEFAULT_CONNECT`]).
const DEFAULT_PORT: u16 = 2181;

impl Run for Server {
    fn takes(&self) -> Takes<'_> {
        Takes::Output(&self.output)
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let Server {
            cluster,
            port,
            in_process,
            ..
        } = self;
        let report = ctx.report;
        let mut signals = Signals::install()?;
        let failed = |error: curator_test::Error| {
            CliError::new(codes::OTHER, format!("cannot start ZooKeeper: {error}"))
        };
        // Keep whichever handle was started until the end: dropping it stops the server(s).
        let (connect, _server, _cluster, _model) = match cluster {
            None if in_process => {
                let model = match port {
                    Some(port) if !is_free(port) => {
                        return Err(CliError::new(
                            codes::OTHER,
                            format!("cannot start the in-process server: port {port} is taken"),
                        ));
                    }
                    Some(port) => start_model(port).await,
                    None if is_free(DEFAULT_PORT) => match start_model(DEFAULT_PORT).await {
                        Ok(model) => Ok(model),
                        Err(_) => start_model(0).await,
                    },
                    None => start_model(0).await,
                }
                .map_err(|error| {
                    CliError::new(
                        codes::OTHER,
                        format!("cannot start the in-process server: {error}"),
                    )
                })?;
                (model.connect_string(), None, None, Some(model))
            }
            None => {
                let server = match port {
                    Some(port) if !is_free(port) => {
                        return Err(CliError::new(
                            codes::OTHER,
                            format!("cannot start ZooKeeper: port {port} is taken"),
                        ));
                    }
                    Some(port) => start_on(port).await.map_err(failed)?,
                    // Where the other commands look by default, so that a first `curator server`
                    // and the next command meet.
                    None if is_free(DEFAULT_PORT) => match start_on(DEFAULT_PORT).await {
                        Ok(server) => server,
                        // Taken in the meantime (or another failure, which the next start
                        // reports): any free port then.
                        Err(_) => TestingServer::start_dedicated().await.map_err(failed)?,
                    },
                    None => TestingServer::start_dedicated().await.map_err(failed)?,
                };
                (server.connect_string(), Some(server), None, None)
            }
            Some(n) => {
                let cluster = TestingCluster::start(usize::from(n))
                    .await
                    .map_err(failed)?;
                (cluster.connect_string(), None, Some(cluster), None)
            }
        };
        let default = connect == DEFAULT_CONNECT;
        if cluster.is_none() && port.is_none() && !default {
            report.status(
                "port_taken",
                json!({ "port": DEFAULT_PORT }),
                format!("port {DEFAULT_PORT} is taken; serving at {connect} instead"),
            )?;
        }
        // Nobody to tell where the server is: stop it (by dropping it) rather than serve unseen.
        report.result(json!({ "connect": connect }), &connect)?;
        let export = format!("export ZK_CONNECT={connect}");
        let elsewhere = std::env::var("ZK_CONNECT")
            .ok()
            .filter(|set| !set.trim().is_empty() && set.trim() != connect);
        let reach = match (default, elsewhere) {
            (true, None) => "other commands reach it without --connect".to_owned(),
            (true, Some(_)) => format!(
                "other commands reach it without --connect once $ZK_CONNECT, set here to another server, is unset, or after: {export}"
            ),
            (false, _) => format!("in other shells: {export}"),
        };
        let what = if in_process {
            "serving a model of ZooKeeper in this process (curator-zkmodel; not for production) until interrupted (Ctrl-C)"
        } else {
            "serving until interrupted (Ctrl-C)"
        };
        report.status(
            "serving",
            json!({ "connect": connect, "default": default, "export": export, "in_process": in_process }),
            format!("{what}; {reach}"),
        )?;
        let signal = signals.recv().await;
        let _ = report.status(
            "stopped",
            json!({ "signal": signal.as_str() }),
            format!("{signal}: stopping"),
        );
        Ok(codes::OK)
    }
}

/// Whether nothing listens on `127.0.0.1:port` (the address the server binds).
fn is_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// The in-process model on `port` (0: any free one).
async fn start_model(port: u16) -> std::io::Result<InProcessServer> {
    InProcessServer::builder().port(port).start().await
}

async fn start_on(port: u16) -> curator_test::Result<TestingServer> {
    TestingServer::builder().port(port).start().await
}
