//! Helpers for the node tests.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_framework::retry::RetryNTimes;
use curator_test::Timing;

/// A started, connected client with a retry policy that covers a server restart.
pub async fn client(connect: &str) -> CuratorFramework {
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(Timing::new().scale(Duration::from_secs(15)))
        .connection_timeout(Timing::new().connection_timeout())
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

/// Polls `condition` until it holds (for what nothing notifies), up to the wait deadline.
pub async fn eventually<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let end = tokio::time::Instant::now() + Timing::new().wait();
    while !condition().await {
        assert!(
            tokio::time::Instant::now() < end,
            "{what} did not happen in time"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A retry policy for optimistic attempts that practically never gives up (contention tests
/// count successes, not give-ups).
pub fn patient() -> RetryNTimes {
    RetryNTimes::new(10_000, Duration::from_millis(1))
}

/// The node's bytes, read through `client`.
pub async fn raw(client: &CuratorFramework, path: &str) -> Vec<u8> {
    client.get_data().for_path(path).await.unwrap().0
}
