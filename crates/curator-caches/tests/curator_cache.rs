//! CuratorCache against a real server, in both watch modes: events with the right data, in
//! server order, without duplicates; `Initialized` once; listeners; a missing root; close.

mod support;

use std::future::IntoFuture;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use curator_caches::{CacheEvent, CuratorCache, CuratorCacheListener, WatchMode};
use curator_framework::{CuratorFramework, Error};
use curator_test::{TestingServer, unique_root};
use support::{Recorder, cache_tree, replay, server_tree};

const MODES: [WatchMode; 2] = [WatchMode::Persistent, WatchMode::OneShot];

fn created(event: &CacheEvent) -> Option<(String, Vec<u8>)> {
    match event {
        CacheEvent::Created { node } => Some((node.path().to_owned(), node.data()?.to_vec())),
        _ => None,
    }
}

async fn started(
    client: &CuratorFramework,
    root: &str,
    mode: WatchMode,
) -> (CuratorCache, Recorder) {
    let cache = CuratorCache::builder(client.clone(), root)
        .with_mode(mode)
        .build()
        .unwrap();
    let mut recorder = Recorder::new(&cache.listenable());
    cache.start().await.unwrap();
    recorder
        .until("Initialized", |e| matches!(e, CacheEvent::Initialized))
        .await;
    (cache, recorder)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_changes_and_deletes_arrive_with_their_data() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    for mode in MODES {
        let root = unique_root("cc-events");
        client
            .create()
            .creating_parents_if_needed()
            .for_path(&format!("{root}/a"), b"1")
            .await
            .unwrap();
        let (cache, mut events) = started(&client, &root, mode).await;
        assert_eq!(cache.active_mode(), Some(mode));
        let initial: Vec<_> = events.log.iter().filter_map(created).collect();
        assert_eq!(
            initial,
            [(root.clone(), vec![]), (format!("{root}/a"), b"1".to_vec())],
            "{mode:?}: the initial load, parents first, then Initialized"
        );
        assert!(cache.is_initialized());

        client
            .set_data()
            .for_path(&format!("{root}/a"), b"2")
            .await
            .unwrap();
        match events.next().await {
            CacheEvent::Changed { old, node } => {
                assert_eq!(node.path(), format!("{root}/a"));
                assert_eq!(old.data(), Some(&b"1"[..]));
                assert_eq!(node.data(), Some(&b"2"[..]));
                assert_eq!(node.stat().version, 1);
            }
            other => panic!("{mode:?}: expected a change, got {other:?}"),
        }

        client
            .create()
            .creating_parents_if_needed()
            .for_path(&format!("{root}/b/c"), b"deep")
            .await
            .unwrap();
        let b = events.until("b", |e| created(e).is_some()).await;
        assert_eq!(b.path(), Some(format!("{root}/b").as_str()));
        let c = events.until("c", |e| created(e).is_some()).await;
        assert_eq!(created(&c), Some((format!("{root}/b/c"), b"deep".to_vec())));
        assert_eq!(cache.children(&format!("{root}/b")).len(), 1);

        client
            .delete()
            .deleting_children_if_needed()
            .for_path(&format!("{root}/b"))
            .await
            .unwrap();
        let gone: Vec<String> = [events.next().await, events.next().await]
            .iter()
            .map(|e| match e {
                CacheEvent::Deleted { old } => old.path().to_owned(),
                other => panic!("{mode:?}: expected deletions, got {other:?}"),
            })
            .collect();
        assert_eq!(gone, [format!("{root}/b/c"), format!("{root}/b")]);

        let expected = server_tree(&client, &root).await;
        assert_eq!(cache_tree(&cache.snapshot()), expected);
        assert_eq!(replay(&events.log), expected);
        assert_eq!(cache.len(), 2);

        // Deleting the root empties the cache.
        client
            .delete()
            .deleting_children_if_needed()
            .for_path(&root)
            .await
            .unwrap();
        events
            .until(
                "the root's deletion",
                |e| matches!(e, CacheEvent::Deleted { old } if old.path() == root),
            )
            .await;
        assert!(cache.is_empty());
        cache.close().await.unwrap();
        cache.close().await.unwrap(); // idempotent
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rapid_updates_of_one_node_arrive_in_order_without_duplicates() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    for mode in MODES {
        let root = unique_root("cc-order");
        let node = format!("{root}/hot");
        client
            .create()
            .creating_parents_if_needed()
            .for_path(&node, b"0")
            .await
            .unwrap();
        let (cache, mut events) = started(&client, &root, mode).await;
        // 200 writes in flight at once, from another session.
        let writer = curator_testkit::client(&server.connect_string()).await;
        let writes: Vec<_> = (1..=200)
            .map(|i| {
                writer
                    .set_data()
                    .for_path(&node, i.to_string())
                    .into_future()
            })
            .collect();
        for write in futures::future::join_all(writes).await {
            write.unwrap();
        }
        let last = events
            .until(
                "the last write",
                |e| matches!(e, CacheEvent::Changed { node: n, .. } if n.stat().version == 200),
            )
            .await;
        let CacheEvent::Changed { node: last, .. } = last else {
            unreachable!()
        };
        assert_eq!(last.data(), Some(&b"200"[..]), "{mode:?}");
        let versions: Vec<i32> = events
            .log
            .iter()
            .filter_map(|e| match e {
                CacheEvent::Changed { node: n, .. } if n.path() == node => {
                    assert_eq!(n.data().unwrap(), n.stat().version.to_string().as_bytes());
                    Some(n.stat().version)
                }
                _ => None,
            })
            .collect();
        assert!(
            versions.windows(2).all(|w| w[0] < w[1]),
            "{mode:?}: versions strictly increase: {versions:?}"
        );
        assert!(events.drain(Duration::from_millis(300)).await.is_empty());
        cache.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_root_is_picked_up_when_created() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    for mode in MODES {
        let root = unique_root("cc-missing");
        let (cache, mut events) = started(&client, &root, mode).await;
        assert!(cache.is_empty());
        client
            .create()
            .creating_parents_if_needed()
            .for_path(&format!("{root}/x"), b"x")
            .await
            .unwrap();
        events
            .until(
                "x",
                |e| matches!(e, CacheEvent::Created { node } if node.name() == "x"),
            )
            .await;
        assert_eq!(cache.len(), 2, "{mode:?}");
        assert_eq!(
            cache.get(&format!("{root}/x")).unwrap().data(),
            Some(&b"x"[..])
        );
        cache.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_builder_routes_each_kind_of_event() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("cc-listener");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/old"), b"o")
        .await
        .unwrap();
    let cache = CuratorCache::builder(client.clone(), &root)
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let later = Arc::new(Mutex::new(Vec::<String>::new()));
    let record = |seen: &Arc<Mutex<Vec<String>>>, tag: &'static str| {
        let seen = Arc::clone(seen);
        move |path: &str| seen.lock().unwrap().push(format!("{tag} {path}"))
    };
    let (c, u, d) = (
        record(&seen, "create"),
        record(&seen, "change"),
        record(&seen, "delete"),
    );
    let i = record(&seen, "initialized");
    let _all = cache.listenable().add_listener_object(Arc::new(
        CuratorCacheListener::builder()
            .for_creates(move |n| c(n.name()))
            .for_changes(move |_, n| u(n.name()))
            .for_deletes(move |n| d(n.name()))
            .for_initialized(move || i("-"))
            .build(),
    ));
    let a = record(&later, "create");
    let _after = cache.listenable().add_listener_object(Arc::new(
        CuratorCacheListener::builder()
            .for_creates_and_changes(move |old, n| a(&format!("{} {}", n.name(), old.is_some())))
            .after_initialized()
            .build(),
    ));
    let mut events = Recorder::new(&cache.listenable());
    cache.start().await.unwrap();
    cache.initialized().await.unwrap();
    // One write at a time: a cache reports states, so a write made while the read of the
    // previous one is in flight may be folded into it.
    client
        .create()
        .for_path(&format!("{root}/new"), b"n")
        .await
        .unwrap();
    events
        .until(
            "the create",
            |e| matches!(e, CacheEvent::Created { node } if node.name() == "new"),
        )
        .await;
    client
        .set_data()
        .for_path(&format!("{root}/new"), b"m")
        .await
        .unwrap();
    events
        .until("the change", |e| matches!(e, CacheEvent::Changed { .. }))
        .await;
    client
        .delete()
        .for_path(&format!("{root}/old"))
        .await
        .unwrap();
    events
        .until("the delete", |e| matches!(e, CacheEvent::Deleted { .. }))
        .await;
    // The recorder is the last listener, so the others have run by now.
    let name = curator_framework::paths::node_name(&root).to_owned();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            format!("create {name}"),
            "create old".to_owned(),
            "initialized -".to_owned(),
            "create new".to_owned(),
            "change new".to_owned(),
            "delete old".to_owned(),
        ]
    );
    assert_eq!(
        *later.lock().unwrap(),
        ["create new false".to_owned(), "create new true".to_owned()]
    );
    cache.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_data_keeps_stats_only() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("cc-nodata");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/a"), b"payload")
        .await
        .unwrap();
    let cache = CuratorCache::builder(client.clone(), &root)
        .without_data()
        .build()
        .unwrap();
    cache.start().await.unwrap();
    cache.initialized().await.unwrap();
    let a = cache.get(&format!("{root}/a")).unwrap();
    assert_eq!(a.data(), None);
    assert_eq!(a.stat().data_length, 7);
    cache.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_close_no_more_events_arrive() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    for mode in MODES {
        let root = unique_root("cc-close");
        let (cache, mut events) = started(&client, &root, mode).await;
        cache.close().await.unwrap();
        client
            .create()
            .creating_parents_if_needed()
            .for_path(&format!("{root}/late"), b"")
            .await
            .unwrap();
        assert!(events.drain(Duration::from_millis(300)).await.is_empty());
        assert_eq!(
            cache.start().await,
            Err(Error::Closed),
            "a closed cache does not start again"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_for_the_initial_load_ends_when_the_cache_stops_first() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("cc-stopped");
    let cache = CuratorCache::builder(client.clone(), &root)
        .build()
        .unwrap();
    let waiting = tokio::spawn({
        let cache = cache.clone();
        async move { cache.initialized().await }
    });
    cache.close().await.unwrap();
    let loaded = tokio::time::timeout(curator_test::Timing::new().wait(), waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(loaded, Err(curator_framework::Error::Closed));
    assert!(!cache.is_initialized());

    // A cache that loaded stays initialized after close.
    let cache = CuratorCache::builder(client.clone(), &root)
        .build()
        .unwrap();
    cache.start().await.unwrap();
    cache.initialized().await.unwrap();
    cache.close().await.unwrap();
    assert!(cache.is_initialized());
}
