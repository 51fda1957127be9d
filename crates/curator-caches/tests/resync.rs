//! After a reconnect or a new session, a cache reports exactly the difference between what it
//! held and the server's tree: one event per changed node, none for the others.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use curator_caches::{CacheEvent, CuratorCache, TreeCache, WatchMode};
use curator_framework::{ConnectionState, CuratorFramework};
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use futures::StreamExt;
use support::Recorder;

/// One cache under test: its name, its client, its events from the start (the initial load
/// already consumed), and the cache itself, kept alive.
struct UnderTest {
    name: &'static str,
    client: CuratorFramework,
    events: Recorder,
    _cache: Box<dyn std::any::Any + Send>,
}

/// The caches under test, each on its own session through `proxy`.
async fn caches(proxy: &FaultProxy, root: &str) -> Vec<UnderTest> {
    let mut out = Vec::new();
    for (name, mode) in [
        ("persistent", Some(WatchMode::Persistent)),
        ("one-shot", Some(WatchMode::OneShot)),
        ("tree", None),
    ] {
        let client = curator_testkit::client(&proxy.connect_string()).await;
        let (mut events, cache): (Recorder, Box<dyn std::any::Any + Send>) = match mode {
            Some(mode) => {
                let cache = CuratorCache::builder(client.clone(), root)
                    .with_mode(mode)
                    .build()
                    .unwrap();
                let events = Recorder::new(&cache.listenable());
                cache.start().await.unwrap();
                (events, Box::new(cache))
            }
            None => {
                let cache = TreeCache::builder(client.clone(), root).build().unwrap();
                let events = Recorder::new(&cache.listenable());
                cache.start().await.unwrap();
                (events, Box::new(cache))
            }
        };
        events
            .until("Initialized", |e| matches!(e, CacheEvent::Initialized))
            .await;
        out.push(UnderTest {
            name,
            client,
            events,
            _cache: cache,
        });
    }
    out
}

fn describe(event: &CacheEvent) -> String {
    match event {
        CacheEvent::Created { node } => format!("created {} {:?}", node.name(), node.data()),
        CacheEvent::Changed { old, node } => {
            format!(
                "changed {} {:?} -> {:?}",
                node.name(),
                old.data(),
                node.data()
            )
        }
        CacheEvent::Deleted { old } => format!("deleted {}", old.name()),
        other => format!("{other:?}"),
    }
}

async fn expect_exactly(name: &str, recorder: &mut Recorder, expected: &[String]) {
    let mut seen = BTreeSet::new();
    while seen.len() < expected.len() {
        seen.insert(describe(&recorder.next().await));
    }
    let extra = recorder.drain(Duration::from_millis(500)).await;
    let expected: BTreeSet<String> = expected.iter().cloned().collect();
    assert_eq!(seen, expected, "{name}");
    assert!(
        extra.is_empty(),
        "{name}: more events than the difference: {extra:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_yields_exactly_the_missed_changes() {
    support::init_logging();
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let writer = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("resync-partition");
    for (node, data) in [("keep", "k"), ("change", "c1"), ("gone", "g")] {
        writer
            .create()
            .creating_parents_if_needed()
            .for_path(&format!("{root}/{node}"), data)
            .await
            .unwrap();
    }
    let mut caches = caches(&proxy, &root).await;
    let mut states: Vec<_> = caches
        .iter()
        .map(|c| c.client.connection_state_stream())
        .collect();

    proxy.pause();
    writer
        .set_data()
        .for_path(&format!("{root}/change"), b"c2")
        .await
        .unwrap();
    writer
        .delete()
        .for_path(&format!("{root}/gone"))
        .await
        .unwrap();
    writer
        .create()
        .for_path(&format!("{root}/new"), b"n")
        .await
        .unwrap();
    proxy.drop_connections();
    proxy.resume();
    for states in &mut states {
        loop {
            let state = tokio::time::timeout(Timing::new().wait(), states.next())
                .await
                .expect("a reconnect in time")
                .unwrap();
            if state == ConnectionState::Reconnected {
                break;
            }
        }
    }
    let expected = [
        r#"changed change Some([99, 49]) -> Some([99, 50])"#.to_owned(),
        "deleted gone".to_owned(),
        r#"created new Some([110])"#.to_owned(),
    ];
    for cache in &mut caches {
        expect_exactly(cache.name, &mut cache.events, &expected).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_with_nothing_changed_yields_no_events() {
    support::init_logging();
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let writer = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("resync-expiry");
    for node in ["a", "a/b", "c"] {
        writer
            .create()
            .creating_parents_if_needed()
            .for_path(&format!("{root}/{node}"), node)
            .await
            .unwrap();
    }
    let mut caches = caches(&proxy, &root).await;
    for cache in &caches {
        let old = cache.client.session_id();
        cache.client.inject_session_expiration().await.unwrap();
        assert_ne!(cache.client.session_id(), old);
    }
    // A marker written after the new sessions: each cache reports it, and nothing else.
    writer
        .create()
        .for_path(&format!("{root}/marker"), b"m")
        .await
        .unwrap();
    for cache in &mut caches {
        let expected = [r#"created marker Some([109])"#.to_owned()];
        expect_exactly(cache.name, &mut cache.events, &expected).await;
    }
}
