//! PathChildrenCache: start modes, child events, and its path created as a container.

mod support;

use std::time::Duration;

use curator_caches::{PathChildrenCache, PathChildrenCacheEvent, StartMode};
use curator_framework::Error;
use curator_framework::listen::ListenerStream;
use curator_test::{TestingServer, Timing, unique_root};
use futures::StreamExt;

async fn next(stream: &mut ListenerStream<PathChildrenCacheEvent>) -> PathChildrenCacheEvent {
    tokio::time::timeout(Timing::new().wait(), stream.next())
        .await
        .expect("an event in time")
        .unwrap()
}

fn names(children: &[curator_caches::ChildData]) -> Vec<&str> {
    children.iter().map(|c| c.name()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_modes_decide_what_the_initial_load_reports() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("pcc-modes");
    for name in ["x", "y"] {
        client
            .create()
            .creating_parents_if_needed()
            .for_path(&format!("{root}/{name}"), name)
            .await
            .unwrap();
    }

    // BuildInitialCache: loaded when start returns, and silent about it.
    let cache = PathChildrenCache::builder(client.clone(), &root)
        .with_start_mode(StartMode::BuildInitialCache)
        .build()
        .unwrap();
    let mut events = cache.listenable().stream();
    cache.start().await.unwrap();
    assert_eq!(names(&cache.current_data()), ["x", "y"]);
    client
        .create()
        .for_path(&format!("{root}/z"), b"z")
        .await
        .unwrap();
    match next(&mut events).await {
        PathChildrenCacheEvent::ChildAdded(child) => assert_eq!(child.name(), "z"),
        other => panic!("expected z, got {other:?}"),
    }
    cache.close().await.unwrap();

    // PostInitializedEvent: adds, then Initialized with them.
    let cache = PathChildrenCache::builder(client.clone(), &root)
        .with_start_mode(StartMode::PostInitializedEvent)
        .build()
        .unwrap();
    let mut events = cache.listenable().stream();
    cache.start().await.unwrap();
    let mut added = Vec::new();
    loop {
        match next(&mut events).await {
            PathChildrenCacheEvent::ChildAdded(child) => added.push(child.name().to_owned()),
            PathChildrenCacheEvent::Initialized(initial) => {
                assert_eq!(names(&initial), ["x", "y", "z"]);
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(added, ["x", "y", "z"]);
    cache.close().await.unwrap();

    // Normal: adds, no Initialized.
    let cache = PathChildrenCache::builder(client.clone(), &root)
        .with_start_mode(StartMode::Normal)
        .build()
        .unwrap();
    let mut events = cache.listenable().stream();
    cache.start().await.unwrap();
    for expected in ["x", "y", "z"] {
        match next(&mut events).await {
            PathChildrenCacheEvent::ChildAdded(child) => assert_eq!(child.name(), expected),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(
        tokio::time::timeout(Duration::from_millis(300), events.next())
            .await
            .is_err()
    );
    cache.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_are_added_updated_and_removed_and_grandchildren_ignored() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("pcc-events");
    let cache = PathChildrenCache::builder(client.clone(), &root)
        .with_start_mode(StartMode::BuildInitialCache)
        .build()
        .unwrap();
    let mut events = cache.listenable().stream();
    cache.start().await.unwrap();
    // Created by start, as a container.
    assert!(
        client
            .check_exists()
            .for_path(&root)
            .await
            .unwrap()
            .is_some()
    );

    let child = format!("{root}/c");
    client.create().for_path(&child, b"1").await.unwrap();
    assert!(
        matches!(next(&mut events).await, PathChildrenCacheEvent::ChildAdded(c) if c.data() == Some(&b"1"[..]))
    );
    client
        .create()
        .for_path(&format!("{child}/grandchild"), b"")
        .await
        .unwrap();
    client.set_data().for_path(&child, b"2").await.unwrap();
    match next(&mut events).await {
        PathChildrenCacheEvent::ChildUpdated(c) => assert_eq!(c.data(), Some(&b"2"[..])),
        other => panic!("expected an update, got {other:?}"),
    }
    assert_eq!(cache.current_data_for(&child).unwrap().stat().version, 1);
    assert!(
        cache
            .current_data_for(&format!("{child}/grandchild"))
            .is_none()
    );
    client
        .delete()
        .deleting_children_if_needed()
        .for_path(&child)
        .await
        .unwrap();
    match next(&mut events).await {
        PathChildrenCacheEvent::ChildRemoved(c) => assert_eq!(c.data(), Some(&b"2"[..])),
        other => panic!("expected a removal, got {other:?}"),
    }
    assert!(cache.current_data().is_empty());
    cache.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_start_fails_and_leaves_the_events_flowing() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("pcc-restart");
    let cache = PathChildrenCache::builder(client.clone(), &root)
        .with_start_mode(StartMode::BuildInitialCache)
        .build()
        .unwrap();
    let mut events = cache.listenable().stream();
    cache.start().await.unwrap();
    assert_eq!(cache.start().await, Err(Error::AlreadyStarted));
    client
        .create()
        .for_path(&format!("{root}/after"), b"")
        .await
        .unwrap();
    match next(&mut events).await {
        PathChildrenCacheEvent::ChildAdded(child) => assert_eq!(child.name(), "after"),
        other => panic!("expected the new child, got {other:?}"),
    }
    cache.close().await.unwrap();
}
