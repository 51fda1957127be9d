//! Helpers for the barrier tests.

#![allow(dead_code, unreachable_pub)]

use curator_framework::CuratorFramework;
use curator_test::Timing;

/// A started, connected client.
pub async fn client(connect: &str) -> CuratorFramework {
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .build()
        .unwrap();
    client.start().await.unwrap();
    client
        .block_until_connected(Timing::new().wait())
        .await
        .unwrap();
    client
}
