//! Traces of a client's operations through OpenTelemetry.
//!
//! ```text
//! cargo run -p curator-framework --example otel_traces            # starts a ZooKeeper itself
//! ZK_CONNECT=127.0.0.1:2181 cargo run -p curator-framework --example otel_traces
//! ```
//!
//! The framework's spans are `tracing` spans (`zk.create`, `zk.get_data`, … per operation with
//! its `path` and `session_id`, and `attempt` per attempt), so an application sends them to
//! OpenTelemetry by installing `tracing-opentelemetry`'s layer over an OpenTelemetry tracer; the
//! framework needs nothing more and depends on no OpenTelemetry crate. This example uses the
//! SDK's in-memory exporter, so it can print what was exported and check it; a service would
//! use an OTLP exporter instead (`opentelemetry-otlp`):
//!
//! ```ignore
//! let exporter = opentelemetry_otlp::SpanExporter::builder().with_tonic().build()?;
//! let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).build();
//! ```
//!
//! The versions must match one another (here `opentelemetry` 0.33 with `tracing-opentelemetry`
//! 0.34). Metrics go through the `metrics` facade instead: see `metrics_prometheus.rs`.

use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_framework::retry::ExponentialBackoffRetry;
use curator_test::{TestingServer, unique_root};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing_subscriber::prelude::*;

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

#[tokio::main]
async fn main() -> Result {
    // The tracer first, then the clients: every operation becomes a span.
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("otel-example")))
        .init();

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
    let root = unique_root("otel-example");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&root, b"")
        .await?;
    client.get_data().for_path(&root).await?;
    client.delete().for_path(&root).await?;
    client.close().await?;

    provider.force_flush()?;
    let spans = exporter.get_finished_spans()?;
    let text = |value: &Value| value.as_str().into_owned();
    let attribute = |attributes: &[KeyValue], key: &str| {
        attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| text(&kv.value))
    };
    let mut operations = 0;
    for span in &spans {
        if !span.name.starts_with("zk.") {
            continue;
        }
        operations += 1;
        println!(
            "{:<14} path={:<40} trace={} span={}",
            span.name,
            attribute(&span.attributes, "path").unwrap_or_default(),
            span.span_context.trace_id(),
            span.span_context.span_id(),
        );
    }
    println!(
        "{operations} operation spans exported ({} spans in all)",
        spans.len()
    );
    if operations < 3 {
        return Err("expected a span for each of the three operations".into());
    }
    provider.shutdown()?;
    Ok(())
}
