//! TreeCache: events, depth limits and selectors.

mod support;

use std::time::Duration;

use curator_caches::{CacheEvent, FnSelector, TreeCache};
use curator_test::{TestingServer, unique_root};
use support::{Recorder, cache_tree, replay, server_tree};

async fn create(client: &curator_framework::CuratorFramework, path: &str, data: &str) {
    client
        .create()
        .creating_parents_if_needed()
        .for_path(path, data)
        .await
        .unwrap();
}

fn paths(cache: &TreeCache, root: &str) -> Vec<String> {
    cache
        .snapshot()
        .iter()
        .map(|n| n.path().trim_start_matches(root).to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_cache_follows_the_whole_subtree() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("tc-events");
    create(&client, &format!("{root}/a/b"), "ab").await;
    let cache = TreeCache::builder(client.clone(), &root).build().unwrap();
    let mut events = Recorder::new(&cache.listenable());
    cache.start().await.unwrap();
    events
        .until("Initialized", |e| matches!(e, CacheEvent::Initialized))
        .await;
    assert_eq!(paths(&cache, &root), ["", "/a", "/a/b"]);

    create(&client, &format!("{root}/a/b/c"), "abc").await;
    events
        .until(
            "c",
            |e| matches!(e, CacheEvent::Created { node } if node.name() == "c"),
        )
        .await;
    client
        .set_data()
        .for_path(&format!("{root}/a"), b"a2")
        .await
        .unwrap();
    events
        .until("a's change", |e| matches!(e, CacheEvent::Changed { .. }))
        .await;
    client
        .delete()
        .deleting_children_if_needed()
        .for_path(&format!("{root}/a/b"))
        .await
        .unwrap();
    events
        .until(
            "b's deletion",
            |e| matches!(e, CacheEvent::Deleted { old } if old.name() == "b"),
        )
        .await;
    let expected = server_tree(&client, &root).await;
    assert_eq!(cache_tree(&cache.snapshot()), expected);
    assert_eq!(replay(&events.log), expected);
    assert_eq!(
        cache.get(&format!("{root}/a")).unwrap().data(),
        Some(&b"a2"[..])
    );
    cache.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_depth_limits_what_is_cached_and_watched() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("tc-depth");
    create(&client, &format!("{root}/a/b/c"), "").await;
    for (depth, expected) in [
        (0, vec![""]),
        (1, vec!["", "/a"]),
        (2, vec!["", "/a", "/a/b"]),
    ] {
        let cache = TreeCache::builder(client.clone(), &root)
            .max_depth(depth)
            .build()
            .unwrap();
        cache.start().await.unwrap();
        cache.initialized().await.unwrap();
        assert_eq!(paths(&cache, &root), expected, "depth {depth}");
        cache.close().await.unwrap();
    }

    let cache = TreeCache::builder(client.clone(), &root)
        .max_depth(1)
        .build()
        .unwrap();
    let mut events = Recorder::new(&cache.listenable());
    cache.start().await.unwrap();
    events
        .until("Initialized", |e| matches!(e, CacheEvent::Initialized))
        .await;
    // Too deep: nothing. Then one within the limit: its event, and only its.
    create(&client, &format!("{root}/a/deep"), "").await;
    create(&client, &format!("{root}/shallow"), "").await;
    let event = events
        .until("shallow", |e| matches!(e, CacheEvent::Created { .. }))
        .await;
    assert_eq!(event.path(), Some(format!("{root}/shallow").as_str()));
    assert!(
        events
            .drain(Duration::from_millis(300))
            .await
            .iter()
            .all(|e| !matches!(e, CacheEvent::Created { .. }))
    );
    assert_eq!(paths(&cache, &root), ["", "/a", "/shallow"]);
    cache.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_decides_what_is_descended_into_and_cached() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("tc-selector");
    for path in ["/keep/x", "/skip/y", "/opaque/z"] {
        create(&client, &format!("{root}{path}"), "").await;
    }
    let cache = TreeCache::builder(client.clone(), &root)
        .selector(FnSelector::new(
            |path| !path.ends_with("/opaque"),
            |path| !path.ends_with("/skip") && !path.ends_with("/late-skip"),
        ))
        .build()
        .unwrap();
    let mut events = Recorder::new(&cache.listenable());
    cache.start().await.unwrap();
    cache.initialized().await.unwrap();
    assert_eq!(paths(&cache, &root), ["", "/keep", "/keep/x", "/opaque"]);

    create(&client, &format!("{root}/late-skip"), "").await;
    create(&client, &format!("{root}/opaque/w"), "").await;
    create(&client, &format!("{root}/keep/v"), "").await;
    events
        .until(
            "keep/v",
            |e| matches!(e, CacheEvent::Created { node } if node.name() == "v"),
        )
        .await;
    assert_eq!(
        paths(&cache, &root),
        ["", "/keep", "/keep/v", "/keep/x", "/opaque"]
    );
    cache.close().await.unwrap();
}
