//! Helpers for the framework's tests against real ZooKeeper servers.

#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::time::Duration;

use curator_framework::listen::ListenerStream;
use curator_framework::retry::RetryNTimes;
use curator_framework::{ConnectionState, CuratorFramework, CuratorFrameworkBuilder};
use curator_test::Timing;
use futures::StreamExt;

/// Logs to the test's output when `RUST_LOG` is set (once per test binary).
pub fn init_logging() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

/// A builder with test-friendly timeouts and a retry policy that covers a server restart.
pub fn builder(connect: &str) -> CuratorFrameworkBuilder {
    init_logging();
    let timing = Timing::new();
    CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(timing.scale(Duration::from_secs(15)))
        .connection_timeout(timing.connection_timeout())
        .retry_policy(RetryNTimes::new(20, Duration::from_millis(250)))
}

/// Creates a fresh `curator_test::unique_root(name)` (and its parents) and returns its path.
pub async fn create_root(client: &CuratorFramework, name: &str) -> String {
    let root = curator_test::unique_root(name);
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&root, b"")
        .await
        .expect("create the test's root");
    root
}

/// A started client, connected.
pub async fn connected(connect: &str) -> CuratorFramework {
    started(builder(connect)).await
}

/// Builds, starts and waits for the first connection.
pub async fn started(builder: CuratorFrameworkBuilder) -> CuratorFramework {
    let client = builder.build().expect("valid settings");
    client.start().await.expect("start");
    client
        .block_until_connected(Timing::new().wait())
        .await
        .expect("connected");
    client
}

/// The next state of `stream`, within the wait deadline.
pub async fn next_state(stream: &mut ListenerStream<ConnectionState>) -> ConnectionState {
    tokio::time::timeout(Timing::new().wait(), stream.next())
        .await
        .expect("a connection state in time")
        .expect("the state stream ended")
}

/// Asserts the next states of `stream` are exactly `expected`.
pub async fn expect_states(
    stream: &mut ListenerStream<ConnectionState>,
    expected: &[ConnectionState],
) {
    let mut seen = Vec::new();
    for _ in expected {
        seen.push(next_state(stream).await);
    }
    assert_eq!(seen, expected);
}

/// Polls `condition` until it holds, for things nothing notifies, up to `deadline` (for a longer
/// deadline than `curator_test::eventually`'s).
pub async fn eventually_within<F, Fut>(what: &str, deadline: Duration, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let end = tokio::time::Instant::now() + deadline;
    while !condition().await {
        assert!(
            tokio::time::Instant::now() < end,
            "{what} did not happen within {deadline:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Reads states until the session was lost and a new one connected. A session expired the
/// classic way (a second connection attaches, then closes it) may first be taken back and forth
/// between the two connections, so `Suspended`/`Reconnected` pairs may come before the
/// `Suspended` that precedes `Lost`. `Lost` comes once, and `Reconnected` right after it.
pub async fn expect_loss_and_recovery(stream: &mut ListenerStream<ConnectionState>) {
    let mut seen = Vec::new();
    loop {
        let state = next_state(stream).await;
        seen.push(state);
        if state == ConnectionState::Lost {
            break;
        }
        assert!(
            matches!(
                state,
                ConnectionState::Suspended | ConnectionState::Reconnected
            ),
            "unexpected state before Lost: {seen:?}"
        );
    }
    assert!(
        seen.len() % 2 == 0,
        "Lost must follow a Suspended: {seen:?}"
    );
    assert!(
        seen.chunks(2)
            .all(|pair| pair[0] == ConnectionState::Suspended),
        "Suspended and Reconnected must alternate before Lost: {seen:?}"
    );
    assert_eq!(
        next_state(stream).await,
        ConnectionState::Reconnected,
        "after {seen:?}"
    );
}
