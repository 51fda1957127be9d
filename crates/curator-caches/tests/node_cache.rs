//! NodeCache: one node's life, and its parents created as containers.

mod support;

use curator_caches::{CacheEvent, NodeCache};
use curator_test::{FaultProxy, TestingServer, unique_root};
use support::Recorder;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cache_follows_its_node_through_create_change_and_delete() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("nc");
    let path = format!("{root}/parent/node");
    let cache = NodeCache::builder(client.clone(), &path).build().unwrap();
    let mut events = Recorder::new(&cache.listenable());
    cache.start().await.unwrap();
    cache.initialized().await.unwrap();
    assert!(cache.current_data().is_none());
    // Like Curator, the parents exist now (as containers); the node does not.
    assert!(
        client
            .check_exists()
            .for_path(&format!("{root}/parent"))
            .await
            .unwrap()
            .is_some()
    );

    client.create().for_path(&path, b"one").await.unwrap();
    match events
        .until("create", |e| !matches!(e, CacheEvent::Initialized))
        .await
    {
        CacheEvent::Created { node } => assert_eq!(node.data(), Some(&b"one"[..])),
        other => panic!("expected a create, got {other:?}"),
    }
    client.set_data().for_path(&path, b"two").await.unwrap();
    match events.next().await {
        CacheEvent::Changed { old, node } => {
            assert_eq!(old.data(), Some(&b"one"[..]));
            assert_eq!(node.data(), Some(&b"two"[..]));
        }
        other => panic!("expected a change, got {other:?}"),
    }
    assert_eq!(cache.current_data().unwrap().stat().version, 1);
    // Children are not the node cache's business.
    client
        .create()
        .for_path(&format!("{path}/child"), b"")
        .await
        .unwrap();
    client
        .delete()
        .deleting_children_if_needed()
        .for_path(&path)
        .await
        .unwrap();
    match events.next().await {
        CacheEvent::Deleted { old } => assert_eq!(old.data(), Some(&b"two"[..])),
        other => panic!("expected a delete, got {other:?}"),
    }
    assert!(cache.current_data().is_none());
    // The parent is a container: empty now, the server may have removed it.
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&path, b"three")
        .await
        .unwrap();
    events
        .until("the new node", |e| matches!(e, CacheEvent::Created { .. }))
        .await;
    assert_eq!(cache.current_data().unwrap().data(), Some(&b"three"[..]));
    let initialized = events
        .log
        .iter()
        .filter(|e| matches!(e, CacheEvent::Initialized))
        .count();
    assert_eq!(initialized, 1);
    cache.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cache_catches_up_after_a_partition_and_a_new_session() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let writer = curator_testkit::client(&server.connect_string()).await;
    let client = curator_testkit::client(&proxy.connect_string()).await;
    let path = format!("{}/node", unique_root("nc-faults"));
    writer
        .create()
        .creating_parents_if_needed()
        .for_path(&path, b"one")
        .await
        .unwrap();
    let cache = NodeCache::builder(client.clone(), &path).build().unwrap();
    let mut events = Recorder::new(&cache.listenable());
    cache.start().await.unwrap();
    events
        .until("Initialized", |e| matches!(e, CacheEvent::Initialized))
        .await;

    // A change the watch cannot carry: made while the cache's connection is cut.
    proxy.pause();
    writer.set_data().for_path(&path, b"two").await.unwrap();
    proxy.drop_connections();
    proxy.resume();
    match events.next().await {
        CacheEvent::Changed { old, node } => {
            assert_eq!(old.data(), Some(&b"one"[..]));
            assert_eq!(node.data(), Some(&b"two"[..]));
        }
        other => panic!("expected the missed change, got {other:?}"),
    }

    // A new session: the watch is gone with the old one, and the cache sets it again.
    client.inject_session_expiration().await.unwrap();
    writer.delete().for_path(&path).await.unwrap();
    match events.next().await {
        CacheEvent::Deleted { old } => assert_eq!(old.data(), Some(&b"two"[..])),
        other => panic!("expected the deletion, got {other:?}"),
    }
    assert!(cache.current_data().is_none());
    cache.close().await.unwrap();
}
