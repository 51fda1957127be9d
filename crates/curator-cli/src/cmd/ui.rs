//! `curator ui PATH [--listen ADDR] [--allow-remote]`: a live dashboard of the tree under PATH
//! (see [`crate::ui`]), until SIGINT, SIGTERM or SIGHUP.

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{Ctx, Run, valid_path};
use crate::args::{Session, Takes};
use crate::connect::connect;
use crate::exit::{CliError, CliResult, codes};
use crate::report::Reporter;
use crate::signals::Signals;
use crate::ui::{live, server};

const UI_HELP: &str = "\
Endpoints (GET only):
  /            the dashboard: one self-contained page (no script or style from elsewhere)
  /events      the annotated tree as server-sent events (`tree`), again after each change
  /api/tree    the annotated tree now, as JSON
  /metrics     this process's metrics, Prometheus text format 0.0.4";

/// Serve a live dashboard of the tree under PATH (recipes recognized: holders, waiters,
/// leaders, queue depths) and this process's metrics, until interrupted
///
/// Prints the page's URL as the first line of stdout. Read-only: the server has no endpoint
/// that writes to ZooKeeper. It still shows who holds what (host names, process ids, session
/// ids, paths): it listens on a loopback address only, unless --allow-remote.
#[derive(Debug, Args)]
#[command(after_help = UI_HELP)]
pub(crate) struct Ui {
    /// The root of the tree to show
    path: String,
    /// The address to serve on (port 0: any free port)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Allow a --listen address other than loopback (anyone who reaches it sees the tree;
    /// there is no login)
    #[arg(long)]
    allow_remote: bool,
    #[command(flatten)]
    session: Session,
}

/// Histogram buckets (seconds) for every `*_seconds` metric: ZooKeeper latencies, lock waits
/// and holds, leader tenures. Without buckets the exporter renders summaries.
const BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// How long open pages get to see their event streams end, after a signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

impl Run for Ui {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    /// Binds and installs its metrics recorder before it connects, with a client of its own
    /// that it closes itself.
    async fn run(self, ctx: &Ctx) -> CliResult {
        let Ui {
            path,
            listen,
            allow_remote,
            ..
        } = self;
        let (report, settings) = (ctx.report, &ctx.settings);
        valid_path(&path)?;
        if !allow_remote && !listen.ip().is_loopback() {
            return Err(CliError::usage(format!(
                "--listen {listen} is not a loopback address: anyone who reaches it would see who \
                 holds what under {path}; add --allow-remote to serve there anyway"
            )));
        }
        // Before the client is built: clients describe their metrics when they start.
        let metrics = recorder()?;
        let listener = TcpListener::bind(listen).await.map_err(|error| {
            CliError::new(codes::OTHER, format!("cannot listen on {listen}: {error}"))
        })?;
        let bound = listener.local_addr().map_err(|error| {
            CliError::new(codes::OTHER, format!("cannot listen on {listen}: {error}"))
        })?;
        let client = connect(settings, &settings.connect_string()).await?;
        let result = serve(
            report,
            &client,
            &path,
            listener,
            bound,
            allow_remote,
            metrics,
        )
        .await;
        let _ = client.close().await;
        result
    }
}

fn recorder() -> CliResult<PrometheusHandle> {
    let failed = |error| {
        CliError::new(
            codes::OTHER,
            format!("cannot install the metrics recorder: {error}"),
        )
    };
    PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)
        .map_err(failed)?
        .install_recorder()
        .map_err(failed)
}

async fn serve(
    report: Reporter,
    client: &curator_framework::CuratorFramework,
    path: &str,
    listener: TcpListener,
    bound: SocketAddr,
    allow_remote: bool,
    metrics: PrometheusHandle,
) -> CliResult {
    let mut signals = Signals::install()?;
    let stop = CancellationToken::new();
    let (snapshots, updater) = live::start(client.clone(), path.to_owned(), stop.clone())
        .await
        .map_err(|error| CliError::zk(&format!("reading {path}"), error))?;
    let hosts = if allow_remote {
        Vec::new()
    } else {
        own_hosts(bound)
    };
    let app = server::router(snapshots, metrics, hosts);
    let shutdown = stop.clone();
    let mut server = tokio::spawn(
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .into_future(),
    );
    let url = format!("http://{bound}/");
    report.result(json!({ "url": url, "listen": bound.to_string() }), &url)?;
    report.status(
        "serving",
        json!({ "url": url, "path": path }),
        format!("serving the tree under {path} at {url} (read-only) until interrupted (Ctrl-C)"),
    )?;
    let outcome = tokio::select! {
        signal = signals.recv() => Ok(signal),
        served = &mut server => Err(match served {
            Ok(Ok(())) => "the server stopped".to_owned(),
            Ok(Err(error)) => format!("the server failed: {error}"),
            Err(error) => format!("the server failed: {error}"),
        }),
    };
    // Ending the updater closes the snapshots' channel, which ends every page's event stream,
    // so the graceful shutdown does not wait on them.
    stop.cancel();
    let _ = updater.await;
    match outcome {
        Ok(signal) => {
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, server).await;
            let _ = report.status(
                "stopped",
                json!({ "signal": signal.as_str() }),
                format!("{signal}: stopping"),
            );
            Ok(codes::OK)
        }
        Err(why) => Err(CliError::new(codes::OTHER, why)),
    }
}

/// The `Host` headers a browser sends to `bound`: its address, and `localhost` for a loopback
/// one.
fn own_hosts(bound: SocketAddr) -> Vec<String> {
    let port = bound.port();
    let mut hosts = vec![bound.to_string(), bound.ip().to_string()];
    if bound.ip().is_loopback() {
        hosts.push(format!("localhost:{port}"));
        hosts.push("localhost".to_owned());
    }
    if bound.is_ipv6() {
        hosts.push(format!("[{}]", bound.ip()));
    }
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_server_answers_to_its_own_names_only() {
        let hosts = own_hosts("127.0.0.1:8080".parse().unwrap());
        assert!(hosts.contains(&"127.0.0.1:8080".to_owned()));
        assert!(hosts.contains(&"localhost:8080".to_owned()));
        assert!(!hosts.iter().any(|host| host.contains("evil")));
        let v6 = own_hosts("[::1]:9".parse().unwrap());
        assert!(v6.contains(&"[::1]:9".to_owned()));
    }
}
