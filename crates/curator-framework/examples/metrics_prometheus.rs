//! The client's metrics as a Prometheus `/metrics` page: installs
//! `metrics-exporter-prometheus`'s recorder (before any client is built), runs a few operations
//! (one of them failing), serves the page with plain tokio, fetches it once and prints it.
//! Connects to `ZK_CONNECT`, or starts a ZooKeeper server of its own. With `--serve` it keeps
//! serving on `--addr` (or `METRICS_ADDR`; default `127.0.0.1:9898`) until Ctrl-C, for a
//! Prometheus to scrape.
//!
//! ```text
//! cargo run -p curator-framework --example metrics_prometheus [-- --serve [--addr HOST:PORT]]
//! ```
//!
//! The exporter is built without its own HTTP server (`default-features = false`), to keep
//! hyper out of the build; with its `http-listener` feature,
//! `PrometheusBuilder::new().with_http_listener(addr).install()` serves the page instead of
//! [`serve`] below.
//!
//! # Histograms or summaries
//!
//! The exporter renders histograms as summaries unless it is given buckets; the buckets below
//! (seconds, matched by the `_seconds` suffix of every curator histogram) suit ZooKeeper
//! latencies. Summaries need `handle.run_upkeep()` now and then, which this example does.
//!
//! # Traces: OpenTelemetry
//!
//! Spans stay `tracing` (`zk.create` … per operation with `path` and `session_id`, `attempt` per
//! retry attempt), so traces go wherever a `tracing` subscriber sends them. To export them over
//! OTLP, add `opentelemetry`, `opentelemetry_sdk`, `opentelemetry-otlp` and
//! `tracing-opentelemetry` to the application (not to curator-rs) and install a layer; the
//! framework needs nothing more:
//!
//! ```ignore
//! use opentelemetry::trace::TracerProvider as _;
//! use tracing_subscriber::prelude::*;
//!
//! let exporter = opentelemetry_otlp::SpanExporter::builder().with_tonic().build()?;
//! let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
//!     .with_batch_exporter(exporter)
//!     .build();
//! tracing_subscriber::registry()
//!     .with(tracing_subscriber::EnvFilter::new("curator_framework=debug"))
//!     .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("my-service")))
//!     .init();
//! // … build and use clients; each operation is a span, each retry attempt a child span.
//! ```
//!
//! Metrics can go the same way: `metrics-exporter-opentelemetry` is a recorder for the
//! `metrics` facade, installed instead of the Prometheus one.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use curator_framework::CuratorFramework;
use curator_framework::retry::ExponentialBackoffRetry;
use curator_test::{TestingServer, unique_root};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The client's metrics as a Prometheus page: runs a few operations against ZK_CONNECT (or a
/// server of its own), prints the page once, and with --serve keeps serving it.
#[derive(Debug, Parser)]
#[command(name = "metrics_prometheus")]
struct Args {
    /// Keep serving /metrics until Ctrl-C.
    #[arg(long)]
    serve: bool,
    /// Where --serve listens.
    #[arg(long, env = "METRICS_ADDR", default_value = "127.0.0.1:9898")]
    addr: SocketAddr,
}

#[tokio::main]
async fn main() -> Result {
    let args = Args::parse();
    // First the recorder: clients describe their metrics to it when they start.
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Suffix("_seconds".into()),
            &[
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                10.0, 30.0, 60.0, 300.0, 3600.0,
            ],
        )?
        .install_recorder()?;
    let upkeep = handle.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            upkeep.run_upkeep();
        }
    });

    let server;
    let connect = match std::env::var("ZK_CONNECT") {
        Ok(connect) => connect,
        Err(_) => {
            server = TestingServer::start().await?;
            server.connect_string()
        }
    };
    let client = CuratorFramework::builder()
        .connect_string(&connect)
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()?;
    client.start().await?;

    let root = unique_root("metrics-example");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&root, b"")
        .await?;
    for i in 0..5 {
        let node = format!("{root}/item-{i}");
        client.create().for_path(&node, b"x").await?;
        client.get_data().for_path(&node).await?;
    }
    // A failure: `curator_operation_failures_total{op="zk.delete",error="no_node"}`.
    let _ = client.delete().for_path(&format!("{root}/missing")).await;
    client
        .delete()
        .deleting_children_if_needed()
        .for_path(&root)
        .await?;

    let serving = args.serve;
    let listener = TcpListener::bind(if serving {
        args.addr
    } else {
        SocketAddr::from(([127, 0, 0, 1], 0))
    })
    .await?;
    let local = listener.local_addr()?;
    tokio::spawn(serve(listener, handle));

    println!("{}", scrape(&local.to_string()).await?);
    if serving {
        println!("serving http://{local}/metrics; Ctrl-C to stop");
        tokio::signal::ctrl_c().await?;
    }
    client.close().await?;
    Ok(())
}

/// Answers every request on `listener` with the rendered metrics (a minimal HTTP/1.1 server:
/// enough for a Prometheus scrape).
async fn serve(listener: TcpListener, handle: PrometheusHandle) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        let handle = handle.clone();
        tokio::spawn(async move {
            // The request line and headers; the page is the same whatever was asked.
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request).await;
            let body = handle.render();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
        });
    }
}

/// GETs `/metrics` from `addr` and returns the body.
async fn scrape(addr: &str) -> Result<String> {
    let mut stream = TcpStream::connect(addr).await?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .ok_or("no HTTP body")?;
    Ok(body)
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser, error::ErrorKind};

    use super::Args;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once(&"metrics_prometheus").chain(args))
    }

    #[test]
    fn arguments_are_checked() {
        Args::command().debug_assert();
        let args = parse(&["--serve", "--addr", "0.0.0.0:9100"]).expect("valid");
        assert!(args.serve);
        assert_eq!(args.addr.port(), 9100);
        assert_eq!(
            parse(&["--help"]).unwrap_err().kind(),
            ErrorKind::DisplayHelp
        );
        for bad in [&["--addr", "nowhere"][..], &["--serv"], &["extra"]] {
            let error = parse(bad).expect_err("refused");
            assert_eq!(error.exit_code(), 2, "{bad:?}: {error}");
        }
    }
}
