//! The HTTP side: the page, its events, the JSON snapshot and the metrics. GET only: nothing
//! here writes to ZooKeeper.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::Stream;
use metrics_exporter_prometheus::PrometheusHandle;

use super::live::Snapshots;

/// The page: plain HTML, its style and script inline (no build step, nothing fetched from
/// elsewhere).
const PAGE: &str = include_str!("index.html");

/// Only what the page itself carries runs; it may talk only to this server.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// Prometheus's text exposition format.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4";

#[derive(Clone)]
struct Served {
    snapshots: Snapshots,
    metrics: PrometheusHandle,
    /// The `Host` headers accepted (empty: any, with `--allow-remote`).
    hosts: Arc<[String]>,
}

/// The routes, with `hosts` the `Host` headers to accept (empty: any).
pub(crate) fn router(
    snapshots: Snapshots,
    metrics: PrometheusHandle,
    hosts: Vec<String>,
) -> Router {
    let served = Served {
        snapshots,
        metrics,
        hosts: hosts.into(),
    };
    Router::new()
        .route("/", get(page))
        .route("/events", get(events))
        .route("/api/tree", get(tree))
        .route("/metrics", get(prometheus))
        .layer(middleware::from_fn_with_state(served.clone(), host_check))
        .with_state(served)
}

/// A page on another site can make a browser send requests here through a name of its own
/// that resolves to 127.0.0.1 (DNS rebinding), and read the answers as same-origin: refuse any
/// `Host` but this server's own address.
async fn host_check(State(served): State<Served>, request: Request, next: Next) -> Response {
    if served.hosts.is_empty() {
        return next.run(request).await;
    }
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|host| host.to_str().ok());
    match host {
        Some(host) if served.hosts.iter().any(|allowed| allowed == host) => next.run(request).await,
        _ => (
            StatusCode::MISDIRECTED_REQUEST,
            "this dashboard answers only at its own address (see `curator ui --help`)\n",
        )
            .into_response(),
    }
}

async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
            (header::CACHE_CONTROL, "no-store"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        PAGE,
    )
        .into_response()
}

async fn tree(State(served): State<Served>) -> Response {
    let json = served.snapshots.borrow().clone();
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        json.to_string(),
    )
        .into_response()
}

/// The current snapshot at once, then each new one; ends when the server stops (the
/// snapshots' channel closes).
async fn events(
    State(served): State<Served>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut snapshots = served.snapshots.clone();
    snapshots.mark_changed();
    let stream = futures::stream::unfold(snapshots, |mut snapshots| async move {
        snapshots.changed().await.ok()?;
        let json = snapshots.borrow_and_update().clone();
        Some((Ok(Event::default().event("tree").data(&*json)), snapshots))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn prometheus(State(served): State<Served>) -> Response {
    served.metrics.run_upkeep();
    let mut response = served.metrics.render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(PROMETHEUS_TEXT),
    );
    response
}
