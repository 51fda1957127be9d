//! The key property: whatever happens to the connection, a cache ends equal to the server's tree,
//! and its event log, replayed onto an empty map, gives the same tree.
//!
//! Other clients mutate a small tree at random (seeded; the seed is printed, and
//! `CACHE_TEST_SEED` replays one) while the test drops a cache's connection, restarts the
//! (dedicated) server, and expires sessions both at the server and from the client side.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use curator_caches::{
    CacheEvent, CuratorCache, PathChildrenCache, PathChildrenCacheEvent, StartMode, TreeCache,
    WatchMode,
};
use curator_framework::CuratorFramework;
use curator_framework::listen::ListenerStream;
use curator_test::{
    Expiry, FaultProxy, TestingServer, Timing, eventually, expire_session, unique_root,
};
use curator_testkit::writers::{Control, mutate};
use futures::StreamExt;
use support::{Recorder, Tree, cache_tree, replay, server_tree};
use tokio::sync::watch;
use tokio::time::Instant;

async fn ops_pass(done: &AtomicUsize, more: usize) {
    let target = done.load(Ordering::SeqCst) + more;
    eventually("the mutators to make progress", || {
        std::future::ready(done.load(Ordering::SeqCst) >= target)
    })
    .await;
}

/// Pulls events until their replay equals `expected`.
async fn replay_converges(name: &str, recorder: &mut Recorder, expected: &Tree) {
    let end = Instant::now() + Timing::new().wait();
    while replay(&recorder.log) != *expected {
        assert!(
            Instant::now() < end,
            "{name}: the event log does not replay to the server's tree\nreplayed: {:#?}\nserver: {expected:#?}",
            replay(&recorder.log)
        );
        let _ = tokio::time::timeout(Duration::from_millis(200), recorder.next()).await;
    }
    let initialized = recorder
        .log
        .iter()
        .filter(|e| matches!(e, CacheEvent::Initialized))
        .count();
    assert_eq!(initialized, 1, "{name}: Initialized exactly once");
}

/// Holds the writers, then waits until every cache equals the server's tree; lets the writers
/// go on afterwards.
async fn checkpoint(
    what: &str,
    writer: &CuratorFramework,
    root: &str,
    running: &watch::Sender<bool>,
    parked: &AtomicUsize,
    caches: &[(&str, &dyn Fn() -> Tree)],
) {
    running.send_replace(false);
    eventually("the writers to stop", || {
        std::future::ready(parked.load(Ordering::SeqCst) == 2)
    })
    .await;
    writer.sync().for_path(root).await.unwrap();
    let expected = server_tree(writer, root).await;
    for (name, content) in caches {
        let end = Instant::now() + Timing::new().wait();
        loop {
            let seen = content();
            if seen == expected {
                break;
            }
            assert!(
                Instant::now() < end,
                "{what}: {name} does not converge\n{}",
                support::diff(&seen, &expected)
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
    running.send_replace(true);
}

fn children_only(tree: &Tree, root: &str) -> Tree {
    tree.iter()
        .filter(|(path, _)| curator_framework::paths::parent(path) == Some(root))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caches_converge_through_reconnects_restarts_and_expiries() {
    support::init_logging();
    let seed = std::env::var("CACHE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    println!("CACHE_TEST_SEED={seed}");

    let mut server = TestingServer::start_dedicated().await.unwrap();
    let connect = server.connect_string();
    let proxy = FaultProxy::start(&connect).await.unwrap();
    let root = unique_root("convergence");
    let session = Timing::new().scale(Duration::from_secs(20));
    let writer = curator_testkit::client_with(&connect, session).await;
    let writer2 = curator_testkit::client_with(&connect, session).await;
    writer
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/a/b"), b"seed")
        .await
        .unwrap();

    // The caches' clients go through the proxy, so they can be partitioned from the server
    // while the writers go on, and their sessions expired at the server.
    let through_proxy = proxy.connect_string();
    let persistent_client = curator_testkit::client_with(&through_proxy, session).await;
    let one_shot_client = curator_testkit::client_with(&through_proxy, session).await;
    let tree_client = curator_testkit::client_with(&through_proxy, session).await;
    let children_client = curator_testkit::client_with(&through_proxy, session).await;

    let persistent = CuratorCache::builder(persistent_client.clone(), &root)
        .with_mode(WatchMode::Persistent)
        .build()
        .unwrap();
    let one_shot = CuratorCache::builder(one_shot_client.clone(), &root)
        .with_mode(WatchMode::OneShot)
        .build()
        .unwrap();
    let tree = TreeCache::builder(tree_client.clone(), &root)
        .build()
        .unwrap();
    let children = PathChildrenCache::builder(children_client.clone(), &root)
        .with_start_mode(StartMode::PostInitializedEvent)
        .build()
        .unwrap();
    let mut persistent_log = Recorder::new(&persistent.listenable());
    let mut one_shot_log = Recorder::new(&one_shot.listenable());
    let mut tree_log = Recorder::new(&tree.listenable());
    let mut children_log: ListenerStream<PathChildrenCacheEvent> = children.listenable().stream();
    persistent.start().await.unwrap();
    one_shot.start().await.unwrap();
    tree.start().await.unwrap();
    children.start().await.unwrap();
    for (cache, log) in [
        ("persistent", &mut persistent_log),
        ("one-shot", &mut one_shot_log),
        ("tree", &mut tree_log),
    ] {
        log.until(cache, |e| matches!(e, CacheEvent::Initialized))
            .await;
    }
    assert_eq!(persistent.active_mode(), Some(WatchMode::Persistent));
    assert_eq!(one_shot.active_mode(), Some(WatchMode::OneShot));

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let phase = Arc::new(AtomicUsize::new(0));
    let (running, running_rx) = watch::channel(true);
    let parked = Arc::new(AtomicUsize::new(0));
    let control = Control {
        phase: phase.clone(),
        stop: stop.clone(),
        done: done.clone(),
        running: running_rx,
        parked: parked.clone(),
    };
    let mutators = [
        tokio::spawn(mutate(writer.clone(), root.clone(), seed, control.clone())),
        tokio::spawn(mutate(
            writer2.clone(),
            root.clone(),
            seed.wrapping_add(1),
            control,
        )),
    ];
    ops_pass(&done, 200).await;

    // A partition while the writers go on, then the same sessions come back: whatever the
    // watches carried during the partition is lost.
    proxy.pause();
    phase.store(1, Ordering::SeqCst);
    ops_pass(&done, 300).await;
    phase.store(2, Ordering::SeqCst);
    proxy.drop_connections();
    proxy.resume();
    ops_pass(&done, 200).await;
    let whole = |cache: &CuratorCache| cache_tree(&cache.snapshot());
    let caches: [(&str, &dyn Fn() -> Tree); 3] = [
        ("the persistent-watch CuratorCache", &|| whole(&persistent)),
        ("the one-shot CuratorCache", &|| whole(&one_shot)),
        ("the TreeCache", &|| cache_tree(&tree.snapshot())),
    ];
    checkpoint(
        "after a partition",
        &writer,
        &root,
        &running,
        &parked,
        &caches,
    )
    .await;

    // A server restart: every client reconnects to its session.
    server.restart().await.unwrap();
    ops_pass(&done, 200).await;
    checkpoint(
        "after a server restart",
        &writer,
        &root,
        &running,
        &parked,
        &caches,
    )
    .await;

    // A partition during which the server expires two sessions.
    proxy.pause();
    phase.store(3, Ordering::SeqCst);
    let sessions = proxy.sessions();
    let mut expired = Vec::new();
    for client in [&persistent_client, &tree_client] {
        let id = client.session_id().unwrap();
        let credentials = sessions.iter().find(|s| s.id == id).unwrap();
        let outcome = expire_session(&connect, credentials, Timing::new().wait())
            .await
            .unwrap();
        assert_eq!(outcome, Expiry::Expired);
        expired.push(id);
    }
    ops_pass(&done, 300).await;
    phase.store(4, Ordering::SeqCst);
    proxy.drop_connections();
    proxy.resume();
    ops_pass(&done, 100).await;

    // Expiries from the client side, while the writers go on.
    phase.store(5, Ordering::SeqCst);
    one_shot_client.inject_session_expiration().await.unwrap();
    ops_pass(&done, 100).await;
    children_client.inject_session_expiration().await.unwrap();
    ops_pass(&done, 200).await;
    phase.store(6, Ordering::SeqCst);
    ops_pass(&done, 50).await;

    stop.store(true, Ordering::SeqCst);
    for mutator in mutators {
        mutator.await.unwrap();
    }
    let ops = done.load(Ordering::SeqCst);
    writer.sync().for_path(&root).await.unwrap();
    let expected = server_tree(&writer, &root).await;
    println!(
        "{ops} random operations; final tree of {} nodes",
        expected.len()
    );

    eventually("the persistent-watch cache to converge", || {
        std::future::ready(cache_tree(&persistent.snapshot()) == expected)
    })
    .await;
    eventually("the one-shot CuratorCache to converge", || {
        std::future::ready(cache_tree(&one_shot.snapshot()) == expected)
    })
    .await;
    eventually("the TreeCache to converge", || {
        std::future::ready(cache_tree(&tree.snapshot()) == expected)
    })
    .await;
    let expected_children = children_only(&expected, &root);
    eventually("the PathChildrenCache to converge", || {
        std::future::ready(cache_tree(&children.current_data()) == expected_children)
    })
    .await;
    assert_ne!(persistent_client.session_id(), Some(expired[0]));
    assert_ne!(tree_client.session_id(), Some(expired[1]));

    replay_converges("persistent", &mut persistent_log, &expected).await;
    replay_converges("one-shot", &mut one_shot_log, &expected).await;
    replay_converges("tree", &mut tree_log, &expected).await;

    // PathChildrenCache: its own events replay to the children.
    let mut replayed: Tree = BTreeMap::new();
    let mut initialized = 0;
    let end = Instant::now() + Timing::new().wait();
    while replayed != expected_children {
        assert!(
            Instant::now() < end,
            "children events do not replay: {replayed:#?}"
        );
        let Ok(Some(event)) =
            tokio::time::timeout(Duration::from_millis(200), children_log.next()).await
        else {
            continue;
        };
        match event {
            PathChildrenCacheEvent::ChildAdded(node) => {
                assert!(
                    replayed
                        .insert(node.path().to_owned(), value(&node))
                        .is_none()
                );
            }
            PathChildrenCacheEvent::ChildUpdated(node) => {
                assert!(
                    replayed
                        .insert(node.path().to_owned(), value(&node))
                        .is_some()
                );
            }
            PathChildrenCacheEvent::ChildRemoved(node) => {
                assert!(replayed.remove(node.path()).is_some());
            }
            PathChildrenCacheEvent::Initialized(_) => initialized += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(initialized <= 1);

    for cache in [&persistent, &one_shot] {
        cache.close().await.unwrap();
    }
    tree.close().await.unwrap();
    children.close().await.unwrap();
}

fn value(node: &curator_caches::ChildData) -> (String, i32) {
    (
        support::text(node.data().unwrap_or_default()),
        node.stat().version,
    )
}
