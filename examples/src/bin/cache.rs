//! A cache (`CuratorCache`): a local copy of a subtree, kept up to date, with an event for
//! every change another process makes, and a typed view decoding the nodes' JSON
//! (`crates/curator-caches/examples/config_cache.rs` goes further with typed views).
//!
//! ```text
//! cargo run -p curator-examples --bin cache
//! ```

use clap::Parser;
use curator_caches::{CacheEvent, CuratorCache};
use curator_examples::{Result, ZooKeeper};
use curator_framework::listen::ListenerStream;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

/// A configuration tree followed by a cache while another client changes it.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    zookeeper: ZooKeeper,
    /// The subtree the cache follows
    #[arg(long, default_value = "/examples/cache")]
    path: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Limits {
    max_connections: u32,
}

#[tokio::main]
async fn main() -> Result {
    let args = Args::parse();
    let server = args.zookeeper.connect().await?;
    let reader = server.client().await?;
    let writer = server.client().await?;
    let limits_path = format!("{}/limits", args.path);
    writer
        .create()
        .creating_parents_if_needed()
        .for_path(&limits_path, br#"{"max_connections":10}"#)
        .await?;

    let cache = CuratorCache::builder(reader.clone(), &args.path).build()?;
    let limits = cache.typed::<Limits>();
    cache.start().await?;
    cache.initialized().await?;
    let mut events = cache.stream();
    println!(
        "loaded {} nodes; limits: {:?}",
        cache.len(),
        limits.get(&limits_path)
    );

    // Another process changes the tree; the cache hears each change.
    let flag = format!("{}/flag", args.path);
    writer
        .set_data()
        .for_path(
            &limits_path,
            limits.encode(&Limits {
                max_connections: 20,
            })?,
        )
        .await?;
    heard(&mut events, |event| {
        matches!(event, CacheEvent::Changed { .. })
    })
    .await;
    writer.create().for_path(&flag, b"on").await?;
    heard(&mut events, |event| {
        matches!(event, CacheEvent::Created { .. })
    })
    .await;
    writer.delete().for_path(&flag).await?;
    heard(&mut events, |event| {
        matches!(event, CacheEvent::Deleted { .. })
    })
    .await;
    if let Some(Ok(now)) = limits.get(&limits_path) {
        println!("limits now: {} connections", now.max_connections);
    }
    cache.close().await?;
    reader.close().await?;
    writer.close().await?;
    server.remove(&[&args.path]).await?;
    Ok(())
}

/// Waits for the next event `matches` accepts, and prints it.
async fn heard(events: &mut ListenerStream<CacheEvent>, matches: impl Fn(&CacheEvent) -> bool) {
    while let Some(event) = events.next().await {
        if matches(&event) {
            match event {
                CacheEvent::Created { node } => println!("created {}", node.path()),
                CacheEvent::Changed { node, .. } => println!("changed {}", node.path()),
                CacheEvent::Deleted { old } => println!("deleted {}", old.path()),
                _ => {}
            }
            return;
        }
    }
}
