//! Helpers for the lock tests.

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
