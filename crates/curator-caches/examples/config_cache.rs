//! A configuration tree followed by a `CuratorCache`: the cache loads it, reports each change as
//! another session makes it, and decodes values through a typed view. Connects to `ZK_CONNECT`,
//! or starts a ZooKeeper server of its own.
//!
//! ```text
//! cargo run -p curator-caches --example config_cache
//! ```

use std::sync::Arc;
use std::time::Duration;

use curator_caches::{CuratorCache, CuratorCacheListener, TypedEvent};
use curator_framework::CuratorFramework;
use curator_framework::retry::ExponentialBackoffRetry;
use curator_test::{TestingServer, unique_root};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Limits {
    max_connections: u32,
    timeout_ms: u64,
}

async fn client(connect: &str) -> Result<CuratorFramework> {
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()?;
    client.start().await?;
    Ok(client)
}

#[tokio::main]
async fn main() -> Result {
    let server;
    let connect = match std::env::var("ZK_CONNECT") {
        Ok(connect) => connect,
        Err(_) => {
            server = TestingServer::start().await?;
            server.connect_string()
        }
    };
    let reader = client(&connect).await?;
    let writer = client(&connect).await?;
    let root = unique_root("config-example");
    writer
        .create()
        .creating_parents_if_needed()
        .for_path(
            &format!("{root}/limits"),
            br#"{"max_connections":10,"timeout_ms":500}"#,
        )
        .await?;

    let cache = CuratorCache::builder(reader.clone(), &root).build()?;
    let _printing = cache.listenable().add_listener_object(Arc::new(
        CuratorCacheListener::builder()
            .for_creates(|node| {
                println!(
                    "created {} ({} bytes)",
                    node.path(),
                    node.stat().data_length
                )
            })
            .for_changes(|old, node| {
                println!(
                    "changed {}: version {} -> {}",
                    node.path(),
                    old.stat().version,
                    node.stat().version
                )
            })
            .for_deletes(|old| println!("deleted {}", old.path()))
            .for_initialized(|| println!("initial load done"))
            .build(),
    ));
    let limits = cache.typed::<Limits>();
    let mut decoded = limits.stream();
    cache.start().await?;
    cache.initialized().await?;
    println!("cached: {:?}", limits.get(&format!("{root}/limits")));

    let new = limits.encode(&Limits {
        max_connections: 20,
        timeout_ms: 250,
    })?;
    writer
        .set_data()
        .for_path(&format!("{root}/limits"), new)
        .await?;
    while let Some(event) = decoded.next().await {
        if let TypedEvent::Changed { value, .. } = event {
            println!("new limits: {value:?}");
            break;
        }
    }
    writer
        .set_data()
        .for_path(&format!("{root}/limits"), b"not json")
        .await?;
    while let Some(event) = decoded.next().await {
        if let TypedEvent::Undecodable { error, .. } = event {
            println!("reported, not a panic: {error}");
            break;
        }
    }
    cache.close().await?;
    writer
        .delete()
        .deleting_children_if_needed()
        .for_path(&root)
        .await?;
    reader.close().await?;
    writer.close().await?;
    Ok(())
}
