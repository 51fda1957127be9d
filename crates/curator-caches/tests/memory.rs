//! Memory per cached node, measured as the growth of the process's resident set while a cache
//! loads 10,000 nodes (an upper bound: it includes the allocator's slack). Alone in its own test
//! binary so nothing else allocates meanwhile.

mod support;

use curator_caches::{CuratorCache, WatchMode};
use curator_test::{TestingServer, unique_root};

fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_per_cached_node_stays_small() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("memory");
    support::build_tree(&client, &root, 100, 100).await;
    let nodes = 1 + 100 + 100 * 100;
    let Some(before) = resident_bytes() else {
        println!("no /proc/self/statm: nothing measured");
        return;
    };
    let cache = CuratorCache::builder(client.clone(), &root)
        .with_mode(WatchMode::Persistent)
        .build()
        .unwrap();
    cache.start().await.unwrap();
    cache.initialized().await.unwrap();
    assert_eq!(cache.len(), nodes);
    let after = resident_bytes().unwrap();
    let per_node = after.saturating_sub(before) / nodes as u64;
    println!(
        "{nodes} nodes (paths of ~60 bytes, 16 bytes of data): resident set grew by {} KiB, {per_node} bytes per node",
        after.saturating_sub(before) / 1024
    );
    assert!(per_node < 1024, "{per_node} bytes per node");
    cache.close().await.unwrap();
}
