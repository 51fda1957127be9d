//! Operation builders: `client.<op>()` → options → `for_path(..)` → `.await`.
//!
//! Every operation:
//! - validates its input when its path is given (a bad path, data over 1 MiB, a TTL on a mode
//!   without one) and fails with a typed error without touching the server;
//! - applies the handle's namespace, and removes it from the paths it returns;
//! - hands its first request over when its future is created (`into_future()`, which `.await`
//!   calls): sent at once when a session is connected, otherwise queued and sent, in order, when
//!   one connects. So `tokio::join!(a, b)` reaches the server as `a` then `b`, also under a fresh
//!   namespace and while disconnected, and ZooKeeper answers in that order;
//! - waits for a connection up to the connection timeout, and retries connection loss, no
//!   connection, operation timeouts, session moves and session expiry under the client's retry
//!   policy;
//! - runs in a `zk.<op>` tracing span with the path and the session id, and an `attempt` span per
//!   attempt;
//! - records its latency, its retries and its failure under the label `op="zk.<op>"` (see
//!   [`metrics::names`](crate::metrics::names)).
//!
//! Each operation has one builder type owning a cheap client handle; `.watched()` changes its
//! type parameter from [`Unwatched`] to [`Watched`], and with it the output.

pub mod create;
pub mod delete;
pub mod exists;
pub mod future;
pub mod get_acl;
pub mod get_all_children_number;
pub mod get_children;
pub mod get_config;
pub mod get_data;
pub mod get_ephemerals;
pub mod multi_read;
pub mod reconfig;
pub mod set_acl;
pub mod set_data;
pub mod sync;
pub mod transaction;
pub mod watch;

use std::future::Future;
use std::sync::Arc;

use tracing::Instrument;

use crate::client::{CuratorFramework, Dispatch, Inner, Submitted};
use crate::error::{Error, Result};
use crate::metrics::Counters;
use crate::paths::MAX_DATA_LEN;
use crate::wire::WireSession;

pub use future::OpFuture;
use future::Sent;

/// The type parameter of a read builder that sets no watch.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unwatched;

/// The type parameter of a read builder that also sets a one-shot watch (`.watched()`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Watched;

/// One attempt of an operation: given the session and the attempt number (from 0), a future
/// that does it. Its first wire call must come before its first suspension point.
pub(crate) trait Attempt<T>:
    Fn(Arc<WireSession>, u32) -> Self::Future + Send + Sync + 'static
{
    type Future: Future<Output = Result<T>> + Send + 'static;
}

impl<T, F, Fut> Attempt<T> for F
where
    F: Fn(Arc<WireSession>, u32) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T>> + Send + 'static,
{
    type Future = Fut;
}

/// An operation's `zk.<op>` tracing span and its name, which labels its metrics (the span
/// alone cannot say: a disabled span has no name).
#[derive(Debug)]
pub(crate) struct OpSpan {
    pub(crate) op: &'static str,
    pub(crate) span: tracing::Span,
}

/// Runs an operation: submits attempt 0 now (see the module docs; under a namespace whose nodes
/// are not known to exist, their creates go first), then, inside `span`, awaits it and retries
/// under the client's policy; `finish` turns the result into the operation's
/// output. `finish` is dropped unused if the future is, so a guard it owns sees the abandonment.
/// Records the operation's metrics under `span.op` when it ends (not when abandoned).
pub(crate) fn run<T, U, A, F>(
    client: &CuratorFramework,
    span: OpSpan,
    attempt: A,
    finish: F,
) -> OpFuture<U>
where
    T: Send + 'static,
    U: Send + 'static,
    A: Attempt<T>,
    F: FnOnce(Result<T>) -> Result<U> + Send + 'static,
{
    run_ensuring(client, client.namespace.clone(), span, attempt, finish)
}

/// [`run`] for an operation that only reads: it never creates the namespace's nodes, so a read
/// under a namespace that does not exist yet finds nothing there (as a read of any missing path
/// does) and leaves nothing behind.
pub(crate) fn run_read<T, U, A, F>(
    client: &CuratorFramework,
    span: OpSpan,
    attempt: A,
    finish: F,
) -> OpFuture<U>
where
    T: Send + 'static,
    U: Send + 'static,
    A: Attempt<T>,
    F: FnOnce(Result<T>) -> Result<U> + Send + 'static,
{
    run_ensuring(client, None, span, attempt, finish)
}

/// [`run`], with the creates of `namespace`'s nodes first when they are not known to exist.
fn run_ensuring<T, U, A, F>(
    client: &CuratorFramework,
    namespace: Option<Arc<str>>,
    span: OpSpan,
    attempt: A,
    finish: F,
) -> OpFuture<U>
where
    T: Send + 'static,
    U: Send + 'static,
    A: Attempt<T>,
    F: FnOnce(Result<T>) -> Result<U> + Send + 'static,
{
    let inner = Arc::clone(&client.inner);
    Counters::bump(&inner.counters.operations);
    let attempt = Arc::new(attempt);
    let start = tokio::time::Instant::now();
    let OpSpan { op, span } = span;
    let first = span.in_scope(|| submit(&inner, namespace.as_ref(), &attempt, 0));
    OpFuture::new(
        async move {
            let result = attempts(&inner, op, namespace, attempt, first, start).await;
            if result.is_err() {
                Counters::bump(&inner.counters.failed_operations);
            }
            crate::metrics::operation_finished(op, start.elapsed(), result.as_ref().err());
            finish(result)
        }
        .instrument(span),
    )
}

/// Awaits `first`, then resubmits under the retry policy until it gives up.
async fn attempts<T, A>(
    inner: &Arc<Inner>,
    op: &'static str,
    namespace: Option<Arc<str>>,
    attempt: Arc<A>,
    first: Submitted<T>,
    start: tokio::time::Instant,
) -> Result<T>
where
    T: Send + 'static,
    A: Attempt<T>,
{
    let timeout = inner.settings.connection_timeout;
    let mut submitted = first;
    let mut retry_count = 0u32;
    loop {
        let outcome = Dispatch::outcome(submitted, timeout)
            .instrument(tracing::debug_span!("attempt", attempt = retry_count));
        // The client's close ends the wait at once: with the connection down, the wire client
        // would hold a sent request until it gives the session up. A reply already there wins.
        let error = match tokio::select! {
            biased;
            outcome = outcome => outcome,
            () = inner.cancel.cancelled() => Err(Error::Closed),
        } {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        let policy = &inner.settings.retry_policy;
        let Some(sleep) = crate::retry::decide(policy, retry_count, start, &error) else {
            return Err(error);
        };
        Counters::bump(&inner.counters.retries);
        crate::metrics::operation_retried(op);
        retry_count = retry_count.saturating_add(1);
        // The pause ends with the client's close too: it may be long, and what follows it would
        // fail with `Closed` anyway.
        if !sleep.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(sleep) => {}
                () = inner.cancel.cancelled() => return Err(Error::Closed),
            }
        }
        submitted = submit(inner, namespace.as_ref(), &attempt, retry_count);
    }
}

/// A read of one path with no options but the watch: given the session, the (namespaced) path
/// and the namespace, its attempt.
pub(crate) type PathOp<Fut> = fn(Arc<WireSession>, Arc<str>, Option<Arc<str>>) -> Fut;

/// Runs a [`PathOp`] under the retry policy, in the span `span(path)`.
pub(crate) fn on_path<T, Fut>(
    client: &CuratorFramework,
    path: Result<Arc<str>>,
    span: impl FnOnce(&str) -> OpSpan,
    op: PathOp<Fut>,
) -> OpFuture<T>
where
    T: Send + 'static,
    Fut: Future<Output = Result<T>> + Send + 'static,
{
    on_path_then(client, path, span, op, |result| result)
}

/// [`on_path`], with `finish` turning the final result into the output.
pub(crate) fn on_path_then<T, U, Fut, F>(
    client: &CuratorFramework,
    path: Result<Arc<str>>,
    span: impl FnOnce(&str) -> OpSpan,
    op: PathOp<Fut>,
    finish: F,
) -> OpFuture<U>
where
    T: Send + 'static,
    U: Send + 'static,
    Fut: Future<Output = Result<T>> + Send + 'static,
    F: FnOnce(Result<T>) -> Result<U> + Send + 'static,
{
    let fixed = match path {
        Ok(path) => path,
        Err(error) => return OpFuture::ready(Err(error)),
    };
    let namespace = client.namespace.clone();
    run_read(
        client,
        span(&fixed),
        move |session, _| op(session, Arc::clone(&fixed), namespace.clone()),
        finish,
    )
}

/// Hands attempt number `n` to the dispatcher; under a namespace whose nodes are not known to
/// exist yet, their creates go first, in the same dispatch.
fn submit<T, A>(
    inner: &Arc<Inner>,
    namespace: Option<&Arc<str>>,
    attempt: &Arc<A>,
    n: u32,
) -> Submitted<T>
where
    T: Send + 'static,
    A: Attempt<T>,
{
    let attempt = Arc::clone(attempt);
    let namespace = namespace
        .filter(|ns| !inner.namespaces.is_ensured(ns))
        .cloned();
    let owner = Arc::clone(inner);
    inner.dispatch.submit(move |session| {
        let namespace =
            namespace.filter(|ns| owner.namespaces.needs_creates(ns, session.session_id()));
        let Some(namespace) = namespace else {
            return Sent::now(attempt(Arc::clone(session), n));
        };
        let creates = crate::client::namespace_creates(
            Arc::clone(session),
            &namespace,
            &*owner.settings.acl_provider,
        );
        let operation = attempt(Arc::clone(session), n);
        Sent::now(async move {
            // Polled in this order: the creates are sent before the operation's request.
            let (created, result) = futures::join!(creates, operation);
            owner.namespaces.settle(&namespace, created.is_ok());
            match (created, result) {
                (Err(error), Err(Error::NoNode)) => Err(error),
                (_, result) => result,
            }
        })
    })
}

/// The data a write sends: compressed with the client's provider when `compress` says so (or,
/// when it says nothing, when the client compresses by default), then checked against the size
/// limit (the compressed size is what the server stores). `path` is the caller's.
pub(crate) fn outgoing_data(
    client: &CuratorFramework,
    path: &str,
    data: Vec<u8>,
    compress: Option<bool>,
) -> Result<Vec<u8>> {
    let data = client
        .inner
        .settings
        .compression
        .outgoing(path, data, compress)?;
    check_data(&data)?;
    Ok(data)
}

/// `path` (validated and namespaced) after the client's schema set, if any, has checked a read
/// of it that sets a watch or not; the schema sees the path without the namespace.
pub(crate) fn schema_watch(
    client: &CuratorFramework,
    path: Result<Arc<str>>,
    watching: bool,
) -> Result<Arc<str>> {
    let Some(set) = client.schemas() else {
        return path;
    };
    let fixed = path?;
    set.check_watch(&client.unfix_path(&fixed), watching)?;
    Ok(fixed)
}

/// Checks node data against ZooKeeper's default packet limit.
pub(crate) fn check_data(data: &[u8]) -> Result<()> {
    if data.len() > MAX_DATA_LEN {
        return Err(Error::InvalidArgument(format!(
            "node data of {} bytes exceeds ZooKeeper's limit of {MAX_DATA_LEN} bytes",
            data.len()
        )));
    }
    Ok(())
}

/// A `zk.<op>` span with the operation's path and the client's session id (an [`OpSpan`]).
macro_rules! op_span {
    ($name:literal, $client:expr, $path:expr) => {
        $crate::ops::OpSpan {
            op: $name,
            span: tracing::debug_span!($name, path = %$path, session_id = ?$client.session_id()),
        }
    };
}
pub(crate) use op_span;
