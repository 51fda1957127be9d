//! One-shot and persistent watches through the framework.

mod support;

use curator_framework::types::{EventType, KeeperState};
use curator_framework::{ConnectionState, Error};
use curator_test::{FaultProxy, TestingServer, Timing};

async fn within<T>(future: impl std::future::IntoFuture<Output = T>) -> T {
    tokio::time::timeout(Timing::new().wait(), future)
        .await
        .expect("event in time")
}

#[tokio::test]
async fn one_shot_watches_fire_once_with_the_right_event() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let writer = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "watch").await;
    let node = format!("{root}/n");

    let (stat, created) = client
        .check_exists()
        .watched()
        .for_path(&node)
        .await
        .unwrap();
    assert_eq!(stat, None);
    let (_, _, children) = client
        .get_children()
        .watched()
        .for_path(&root)
        .await
        .unwrap();
    writer.create().for_path(&node, b"1").await.unwrap();
    let event = within(created).await;
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeCreated, node.as_str())
    );
    assert_eq!(event.session_state, KeeperState::SyncConnected);
    assert_eq!(
        within(children).await.event_type,
        EventType::NodeChildrenChanged
    );

    let (_, _, changed) = client.get_data().watched().for_path(&node).await.unwrap();
    writer.set_data().for_path(&node, b"2").await.unwrap();
    assert_eq!(
        within(changed.changed()).await.event_type,
        EventType::NodeDataChanged
    );

    let (_, _, deleted) = client.get_data().watched().for_path(&node).await.unwrap();
    writer.delete().for_path(&node).await.unwrap();
    assert_eq!(within(deleted).await.event_type, EventType::NodeDeleted);

    // Reading a missing node with a data watch fails and sets no watch.
    assert!(matches!(
        client.get_data().watched().for_path(&node).await,
        Err(Error::NoNode)
    ));
}

#[tokio::test]
async fn a_removed_watch_does_not_fire() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "watch-remove").await;
    let (_, _, watcher) = client.get_data().watched().for_path(&root).await.unwrap();
    watcher.remove().await.unwrap();
    // A second watch set after the removal sees the change; the removed one is gone.
    let (_, _, second) = client.get_data().watched().for_path(&root).await.unwrap();
    client.set_data().for_path(&root, b"x").await.unwrap();
    assert_eq!(within(second).await.event_type, EventType::NodeDataChanged);
}

#[tokio::test]
async fn persistent_recursive_watches_see_the_whole_subtree() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "persistent").await;
    let mut recursive = client
        .add_watch()
        .recursive()
        .for_path(&root)
        .await
        .unwrap();
    // ZooKeeper keeps one watch mode per path and session, so the plain persistent watch on the
    // same path comes from a second client.
    let other = support::connected(&server.connect_string()).await;
    let mut plain = other.add_watch().for_path(&root).await.unwrap();

    let child = format!("{root}/a");
    let grandchild = format!("{child}/b");
    client.create().for_path(&child, b"").await.unwrap();
    client.create().for_path(&grandchild, b"").await.unwrap();
    client.set_data().for_path(&grandchild, b"x").await.unwrap();
    client.delete().for_path(&grandchild).await.unwrap();
    client.set_data().for_path(&root, b"y").await.unwrap();

    let mut seen = Vec::new();
    for _ in 0..5 {
        let event = within(recursive.next()).await.unwrap();
        seen.push((event.event_type, event.path));
    }
    assert_eq!(
        seen,
        vec![
            (EventType::NodeCreated, child.clone()),
            (EventType::NodeCreated, grandchild.clone()),
            (EventType::NodeDataChanged, grandchild.clone()),
            (EventType::NodeDeleted, grandchild.clone()),
            (EventType::NodeDataChanged, root.clone()),
        ]
    );
    // The plain persistent watch sees its own node only, and keeps firing.
    let first = within(plain.next()).await.unwrap();
    assert_eq!(
        (first.event_type, first.path.as_str()),
        (EventType::NodeChildrenChanged, root.as_str())
    );
    let second = within(plain.next()).await.unwrap();
    assert_eq!(second.event_type, EventType::NodeDataChanged);
    plain.remove().await.unwrap();
}

#[tokio::test]
async fn watches_set_through_the_framework_survive_a_server_restart() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "watch-restart").await;
    let node = format!("{root}/later");
    let session = client.session_id();
    let (_, exists_watch) = client
        .check_exists()
        .watched()
        .for_path(&node)
        .await
        .unwrap();
    let (_, _, data_watch) = client.get_data().watched().for_path(&root).await.unwrap();
    let mut persistent = client
        .add_watch()
        .recursive()
        .for_path(&root)
        .await
        .unwrap();
    let mut states = client.connection_state_stream();

    server.restart().await.unwrap();
    // Once reconnected, the client has re-registered its watches; changes made after that are
    // reported in the order they happen.
    support::expect_states(
        &mut states,
        &[ConnectionState::Suspended, ConnectionState::Reconnected],
    )
    .await;

    let writer = support::connected(&server.connect_string()).await;
    writer.create().for_path(&node, b"").await.unwrap();
    writer.set_data().for_path(&root, b"changed").await.unwrap();
    assert_eq!(
        within(exists_watch).await.event_type,
        EventType::NodeCreated
    );
    assert_eq!(
        within(data_watch).await.event_type,
        EventType::NodeDataChanged
    );
    // The persistent watch reports the reconnect, then the changes.
    let mut node_events = Vec::new();
    while node_events.len() < 2 {
        let event = within(persistent.next()).await.unwrap();
        if event.event_type != EventType::Session {
            node_events.push(event.event_type);
        }
    }
    assert_eq!(
        node_events,
        vec![EventType::NodeCreated, EventType::NodeDataChanged]
    );
    assert_eq!(client.session_id(), session);
}

/// Nothing but the persistent watch follows the path (a one-shot watch on it would make the
/// server send the events anyway), so this checks the watch itself is registered again after
/// a reconnect within the session: first a cut connection, then a server restart.
#[tokio::test]
async fn a_persistent_watch_is_registered_again_after_a_reconnect() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = support::connected(&proxy.connect_string()).await;
    let root = support::create_root(&client, "persistent-reconnect").await;
    let session = client.session_id();
    let mut persistent = client
        .add_watch()
        .recursive()
        .for_path(&root)
        .await
        .unwrap();

    for round in 0..2 {
        if round == 0 {
            proxy.drop_connections();
        } else {
            server.restart().await.unwrap();
        }
        // `next` registers the watch again when it takes the reconnect.
        let mut seen = Vec::new();
        loop {
            let event = within(persistent.next()).await.unwrap();
            assert_eq!(event.event_type, EventType::Session, "round {round}");
            seen.push(event.session_state);
            if event.session_state == KeeperState::SyncConnected {
                break;
            }
        }
        assert!(
            seen.contains(&KeeperState::Disconnected),
            "round {round}: {seen:?}"
        );
        let node = format!("{root}/n{round}");
        client.create().for_path(&node, b"").await.unwrap();
        let event = within(persistent.next()).await.unwrap();
        assert_eq!(
            (event.event_type, event.path.as_str()),
            (EventType::NodeCreated, node.as_str()),
            "round {round}"
        );
    }
    assert_eq!(client.session_id(), session);
}
