//! Helpers for the election tests.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_framework::retry::RetryNTimes;
use curator_test::Timing;
use tokio::time::Instant;

/// A started, connected client with the given session timeout.
pub async fn client_with(connect: &str, session_timeout: Duration) -> CuratorFramework {
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(session_timeout)
        .connection_timeout(Timing::new().scale(Duration::from_millis(800)))
        .retry_policy(RetryNTimes::new(20, Duration::from_millis(250)))
        .build()
        .unwrap();
    client.start().await.unwrap();
    client
        .block_until_connected(Timing::new().wait())
        .await
        .unwrap();
    client
}

/// A started, connected client with a 15 s (scaled) session.
pub async fn client(connect: &str) -> CuratorFramework {
    client_with(connect, Timing::new().scale(Duration::from_secs(15))).await
}

/// Polls `condition` until it holds (for states nothing notifies), up to the wait deadline.
pub async fn eventually(what: &str, condition: impl Fn() -> bool) {
    let end = Instant::now() + Timing::new().wait();
    while !condition() {
        assert!(Instant::now() < end, "{what} did not happen in time");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
