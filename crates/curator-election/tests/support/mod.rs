//! Helpers for the election tests.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_framework::retry::RetryNTimes;
use curator_test::Timing;

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
