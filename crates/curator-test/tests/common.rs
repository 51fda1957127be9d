//! Helpers shared by this crate's tests: a `zookeeper-client` session and event waits.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use curator_test::Timing;
use zookeeper_client as zk;

/// Connects a bare `zookeeper-client` session.
pub async fn connect(connect_string: &str, session_timeout: Duration) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(session_timeout)
        .with_connection_timeout(Timing::new().connection_timeout())
        .connect(connect_string)
        .await
        .unwrap_or_else(|e| panic!("connecting to {connect_string}: {e}"))
}

/// Waits for the session to reach `wanted`, returning every state seen on the way.
pub async fn await_state(client: &zk::Client, wanted: zk::SessionState) -> Vec<zk::SessionState> {
    let mut watcher = client.state_watcher();
    let mut seen = vec![watcher.state()];
    let wait = async {
        while *seen.last().unwrap() != wanted {
            seen.push(watcher.changed().await);
        }
    };
    tokio::time::timeout(Timing::new().wait(), wait)
        .await
        .unwrap_or_else(|_| panic!("session never reached {wanted:?}; saw {seen:?}"));
    seen
}

/// Creates `path` and its parents as persistent nodes.
pub async fn mkdirs(client: &zk::Client, path: &str) {
    client
        .mkdir(
            path,
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap_or_else(|e| panic!("mkdir {path}: {e}"));
}

/// Runs `op` until it succeeds, retrying the errors a reconnecting client sees, up to the long
/// deadline.
pub async fn retry<T, F, Fut>(mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, zk::Error>>,
{
    let deadline = tokio::time::Instant::now() + Timing::new().forever();
    loop {
        match op().await {
            Ok(value) => return value,
            Err(e @ (zk::Error::ConnectionLoss | zk::Error::Timeout | zk::Error::SessionMoved))
                if tokio::time::Instant::now() < deadline =>
            {
                tracing::debug!("retrying after {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("operation failed: {e}"),
        }
    }
}
