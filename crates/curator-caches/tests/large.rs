//! Large trees: the initial load keeps many reads in flight, and a node with more children than
//! the limit is reported with a typed error instead of being listed.

mod support;

use std::time::Instant;

use curator_caches::{CacheError, CacheEvent, CuratorCache, TreeCache, WatchMode};
use curator_test::{TestingServer, unique_root};
use support::{Recorder, build_tree};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_tree_loads_with_reads_in_flight_together() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("large-load");
    build_tree(&client, &root, 20, 100).await;
    let expected = 1 + 20 + 20 * 100;
    for (name, in_flight) in [("one read at a time", 1), ("256 reads in flight", 256)] {
        let cache = CuratorCache::builder(client.clone(), &root)
            .with_mode(WatchMode::Persistent)
            .max_in_flight(in_flight)
            .build()
            .unwrap();
        let started = Instant::now();
        cache.start().await.unwrap();
        cache.initialized().await.unwrap();
        println!("{name}: {expected} nodes loaded in {:?}", started.elapsed());
        assert_eq!(cache.len(), expected);
        cache.close().await.unwrap();
    }
    let cache = TreeCache::builder(client.clone(), &root).build().unwrap();
    let started = Instant::now();
    cache.start().await.unwrap();
    cache.initialized().await.unwrap();
    println!(
        "TreeCache: {expected} nodes loaded in {:?}",
        started.elapsed()
    );
    assert_eq!(cache.len(), expected);
    cache.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_over_the_children_limit_is_reported_and_not_listed() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("large-limit");
    build_tree(&client, &root, 1, 10).await;
    let dir = format!("{root}/d00");
    for mode in [WatchMode::Persistent, WatchMode::OneShot] {
        let cache = CuratorCache::builder(client.clone(), &root)
            .with_mode(mode)
            .max_children(5)
            .build()
            .unwrap();
        let mut events = Recorder::new(&cache.listenable());
        cache.start().await.unwrap();
        let error = events
            .until("the limit error", |e| matches!(e, CacheEvent::Error(_)))
            .await;
        assert_eq!(
            error,
            CacheEvent::Error(CacheError::TooManyChildren {
                path: dir.clone(),
                children: 10,
                limit: 5
            }),
            "{mode:?}"
        );
        events
            .until("Initialized", |e| matches!(e, CacheEvent::Initialized))
            .await;
        assert_eq!(
            cache.len(),
            2,
            "{mode:?}: the root and d00, not d00's children"
        );
        cache.close().await.unwrap();
    }
}
