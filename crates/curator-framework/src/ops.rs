//! Operation builders: `client.<op>()` → options → `for_path(..)` → `.await`.
//!
//! Every operation:
//! - validates its input first (a bad path, data over 1 MiB, a TTL on a mode without one) and
//!   fails with a typed error without touching the server;
//! - applies the handle's namespace, and removes it from the paths it returns;
//! - sends its first request when the future is created (`into_future()`, which `.await` calls),
//!   so `tokio::join!(a, b)` reaches the server as `a` then `b`, and ZooKeeper answers in that
//!   order;
//! - waits for a connection up to the connection timeout, and retries connection loss, operation
//!   timeouts, session moves and session expiry under the client's retry policy;
//! - runs in a `zk.<op>` tracing span with the path and the session id, and an `attempt` span per
//!   attempt.

pub mod create;
pub mod delete;
pub mod exists;
pub mod future;
pub mod get_acl;
pub mod get_children;
pub mod get_config;
pub mod get_data;
pub mod multi_read;
pub mod set_acl;
pub mod set_data;
pub mod sync;
pub mod transaction;
pub mod watch;

use std::future::Future;
use std::sync::Arc;

use tracing::Instrument;

use crate::client::CuratorFramework;
use crate::error::{Error, Result};
use crate::paths::MAX_DATA_LEN;
use crate::wire::WireSession;

pub use future::OpFuture;

/// Starts an operation: namespace first (once per client), then `attempt` under the retry
/// policy, all inside the operation's span. Polled once here, so the first request is sent now.
pub(crate) fn start<T, F, Fut>(
    client: &CuratorFramework,
    name: &'static str,
    path: &str,
    attempt: F,
) -> OpFuture<T>
where
    T: Send + 'static,
    F: Fn(Arc<WireSession>, u32) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T>> + Send,
{
    let client = client.clone();
    let span = tracing::debug_span!("zk.op", op = name, path, session_id = ?client.session_id());
    let future = async move {
        if !client.namespace_ready() {
            client.ensure_namespace().await?;
        }
        client.inner.with_retry(attempt).await
    }
    .instrument(span);
    OpFuture::eager(future)
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
