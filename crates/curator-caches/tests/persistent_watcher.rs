//! `PersistentWatcher` (the recipe) against a real server: its watch is set again after
//! session expiries (from the client, and at the server) and a server restart, with a `Reset`
//! each time; recursive and not; `close()` removes the watch; `client.close()` ends it.

mod support;

use std::time::Duration;

use curator_caches::{PersistentWatcher, PersistentWatcherEvent};
use curator_framework::listen::ListenerStream;
use curator_framework::types::EventType;
use curator_framework::{CuratorFramework, Error};
use curator_test::{
    Expiry, FaultProxy, TestingServer, Timing, eventually, expire_session, four_letter_word,
    unique_root,
};
use futures::StreamExt;

/// Takes events until one `matches`, within the test deadline; returns what came before it.
async fn until(
    what: &str,
    stream: &mut ListenerStream<PersistentWatcherEvent>,
    matches: impl Fn(&PersistentWatcherEvent) -> bool,
) -> Vec<PersistentWatcherEvent> {
    let mut seen = Vec::new();
    let found = tokio::time::timeout(Timing::new().wait(), async {
        while let Some(event) = stream.next().await {
            if matches(&event) {
                return true;
            }
            seen.push(event);
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "{what} was not heard; saw {seen:#?}");
    seen
}

fn reset(event: &PersistentWatcherEvent) -> bool {
    matches!(event, PersistentWatcherEvent::Reset)
}

fn watched(path: &str, kind: EventType) -> impl Fn(&PersistentWatcherEvent) -> bool {
    let path = path.to_owned();
    move |event| {
        matches!(event, PersistentWatcherEvent::Watched(event)
            if event.path == path && event.event_type == kind)
    }
}

async fn create(client: &CuratorFramework, path: &str) {
    client
        .create()
        .creating_parents_if_needed()
        .for_path(path, b"")
        .await
        .unwrap();
}

async fn set(client: &CuratorFramework, path: &str, data: &[u8]) {
    client.set_data().for_path(path, data).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watch_survives_three_session_expiries() {
    support::init_logging();
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("pw-expiry");
    let node = format!("{root}/a");
    let watcher = PersistentWatcher::builder(client.clone(), &root)
        .build()
        .unwrap();
    let mut events = watcher.stream();
    watcher.start().await.unwrap();
    until("the first reset", &mut events, reset).await;
    create(&client, &node).await;
    until(
        "a's creation",
        &mut events,
        watched(&node, EventType::NodeCreated),
    )
    .await;

    for round in 1..=3u8 {
        let old = client.session_id();
        client.inject_session_expiration().await.unwrap();
        assert_ne!(client.session_id(), old, "a new session");
        // Writes made before the `Reset` may be missed; after it they may not.
        until("the reset on the new session", &mut events, reset).await;
        set(&client, &node, &[round]).await;
        until(
            "the change on the new session",
            &mut events,
            watched(&node, EventType::NodeDataChanged),
        )
        .await;
    }
    watcher.close().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watch_survives_an_expiry_at_the_server() {
    support::init_logging();
    let server = TestingServer::start().await.unwrap();
    // The watcher's client talks through a proxy, so the test can read its session's
    // credentials and keep it away while the server expires the session.
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = curator_testkit::client(&proxy.connect_string()).await;
    let writer = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("pw-server-expiry");
    let watcher = PersistentWatcher::builder(client.clone(), &root)
        .recursive(false)
        .build()
        .unwrap();
    let mut events = watcher.stream();
    watcher.start().await.unwrap();
    until("the first reset", &mut events, reset).await;

    let old = client.session_id().unwrap();
    let credentials = proxy.sessions().into_iter().find(|s| s.id == old).unwrap();
    proxy.pause();
    let expiry = expire_session(&server.connect_string(), &credentials, Timing::new().wait())
        .await
        .unwrap();
    assert_eq!(expiry, Expiry::Expired);
    proxy.resume();
    until("the reset on the new session", &mut events, reset).await;
    assert_ne!(client.session_id(), Some(old));
    create(&writer, &root).await;
    until(
        "the root's creation",
        &mut events,
        watched(&root, EventType::NodeCreated),
    )
    .await;
    watcher.close().await.unwrap();
    client.close().await.unwrap();
    writer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recursive_watch_sees_the_subtree_and_a_plain_one_the_node() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("pw-modes");
    let child = format!("{root}/child");
    create(&client, &root).await;
    let recursive = PersistentWatcher::builder(client.clone(), &root)
        .build()
        .unwrap();
    assert!(recursive.is_recursive());
    // Two watches of different modes on one path need two sessions (the server keeps one
    // mode per path and session), so the plain one gets a client of its own.
    let other = curator_testkit::client(&server.connect_string()).await;
    let plain_other = PersistentWatcher::builder(other.clone(), &root)
        .recursive(false)
        .build()
        .unwrap();
    assert!(!plain_other.is_recursive());
    let mut deep = recursive.stream();
    let mut shallow = plain_other.stream();
    recursive.start().await.unwrap();
    plain_other.start().await.unwrap();
    until("the recursive reset", &mut deep, reset).await;
    until("the plain reset", &mut shallow, reset).await;

    create(&client, &child).await;
    set(&client, &child, b"1").await;
    set(&client, &root, b"1").await;

    until(
        "the child's creation",
        &mut deep,
        watched(&child, EventType::NodeCreated),
    )
    .await;
    until(
        "the child's change",
        &mut deep,
        watched(&child, EventType::NodeDataChanged),
    )
    .await;
    until(
        "the root's change",
        &mut deep,
        watched(&root, EventType::NodeDataChanged),
    )
    .await;

    // The plain watch hears the root's children list change, then the root's data change, and
    // nothing about the child itself in between.
    let before: Vec<_> = until(
        "the root's change (plain)",
        &mut shallow,
        watched(&root, EventType::NodeDataChanged),
    )
    .await
    .into_iter()
    .filter_map(|event| match event {
        PersistentWatcherEvent::Watched(event) => Some((event.path, event.event_type)),
        _ => None,
    })
    .collect();
    assert_eq!(before, vec![(root.clone(), EventType::NodeChildrenChanged)]);
    recursive.close().await.unwrap();
    plain_other.close().await.unwrap();
    other.close().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watch_survives_a_server_restart() {
    support::init_logging();
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("pw-restart");
    let watcher = PersistentWatcher::builder(client.clone(), &root)
        .build()
        .unwrap();
    let mut events = watcher.stream();
    watcher.start().await.unwrap();
    until("the first reset", &mut events, reset).await;

    server.restart().await.unwrap();
    until("the reset after the restart", &mut events, reset).await;
    create(&client, &root).await;
    until(
        "the root's creation",
        &mut events,
        watched(&root, EventType::NodeCreated),
    )
    .await;
    watcher.close().await.unwrap();
    client.close().await.unwrap();
}

/// Whether the server lists a watch on `path` (`wchp`: watches by path).
async fn server_watches(server: &TestingServer, path: &str) -> bool {
    let listing = four_letter_word(&server.connect_string(), "wchp", Timing::new().wait())
        .await
        .unwrap();
    listing.lines().any(|line| line.trim() == path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_removes_the_watch_and_stops_the_events() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("pw-close");
    let watcher = PersistentWatcher::builder(client.clone(), &root)
        .recursive(false)
        .build()
        .unwrap();
    let mut events = watcher.stream();
    watcher.start().await.unwrap();
    assert_eq!(watcher.start().await, Err(Error::AlreadyStarted));
    until("the first reset", &mut events, reset).await;
    assert!(server_watches(&server, &root).await, "the watch is set");

    watcher.close().await.unwrap();
    watcher.close().await.unwrap();
    assert_eq!(watcher.start().await, Err(Error::Closed));
    let (server_ref, root_ref) = (&server, &root);
    eventually("the server to drop the watch", || async move {
        !server_watches(server_ref, root_ref).await
    })
    .await;
    create(&client, &root).await;
    // Nothing is published after close; a bounded wait is the only way to see an absence.
    let late = tokio::time::timeout(Duration::from_millis(500), events.next()).await;
    assert!(late.is_err(), "no event after close: {late:?}");
    assert_eq!(client.metrics().recipe_tasks, 0);
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_ends_the_watcher() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("pw-client-close");
    let watcher = PersistentWatcher::builder(client.clone(), &root)
        .build()
        .unwrap();
    let mut events = watcher.stream();
    watcher.start().await.unwrap();
    until("the first reset", &mut events, reset).await;
    assert!(client.metrics().recipe_tasks >= 1);

    client.close().await.unwrap();
    assert_eq!(client.metrics().recipe_tasks, 0, "the watcher's task ended");
    let end = tokio::time::timeout(Timing::new().wait(), events.next()).await;
    assert_eq!(end, Ok(None), "the stream ends with the client");
    watcher.close().await.unwrap();
}
