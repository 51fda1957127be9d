//! Protected creates and guaranteed deletes when replies are lost and futures are dropped.

mod support;

use std::time::Duration;

use curator_framework::retry::RetryNTimes;
use curator_framework::types::EventType;
use curator_framework::{CreateMode, CuratorFramework, Error, paths};
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use futures::StreamExt;

/// A client through `proxy`, plus an observer straight to the server, and a fresh root.
async fn setup(
    server: &TestingServer,
    proxy: &FaultProxy,
) -> (CuratorFramework, CuratorFramework, String) {
    let client = support::connected(&proxy.connect_string()).await;
    let observer = support::connected(&server.connect_string()).await;
    let root = support::create_root(&observer, "protection").await;
    (client, observer, root)
}

async fn children(observer: &CuratorFramework, root: &str) -> Vec<String> {
    observer.get_children().for_path(root).await.unwrap().0
}

/// Holds the replies, waits until the server has applied the request (a child appeared under
/// `root`), then cuts the link so the reply is lost.
async fn lose_the_reply(proxy: &FaultProxy, observer: &CuratorFramework, root: &str) {
    curator_test::eventually("the create reaches the server", || async {
        !children(observer, root).await.is_empty()
    })
    .await;
    proxy.drop_connections();
    proxy.resume();
}

#[tokio::test]
async fn a_protected_create_whose_reply_is_lost_leaves_exactly_one_node() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let (client, observer, root) = setup(&server, &proxy).await;

    proxy.pause_replies();
    let create = tokio::spawn({
        let (client, path) = (client.clone(), format!("{root}/lock-"));
        async move {
            client
                .create()
                .with_protection()
                .with_mode(CreateMode::EphemeralSequential)
                .for_path(&path, b"")
                .await
        }
    });
    lose_the_reply(&proxy, &observer, &root).await;
    let created = tokio::time::timeout(Timing::new().wait(), create)
        .await
        .unwrap()
        .unwrap()
        .unwrap();

    let names = children(&observer, &root).await;
    assert_eq!(names.len(), 1, "{names:?}");
    assert_eq!(
        created,
        paths::join(&root, &names[0]),
        "the retry adopted the node it had made"
    );
    assert!(paths::is_protected(&names[0]));
    assert!(client.metrics().retries >= 1);
}

#[tokio::test]
async fn without_protection_the_same_lost_reply_leaves_a_duplicate() {
    // The contrast that shows what protection is for.
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let (client, observer, root) = setup(&server, &proxy).await;

    proxy.pause_replies();
    let create = tokio::spawn({
        let (client, path) = (client.clone(), format!("{root}/lock-"));
        async move {
            client
                .create()
                .with_mode(CreateMode::EphemeralSequential)
                .for_path(&path, b"")
                .await
        }
    });
    lose_the_reply(&proxy, &observer, &root).await;
    tokio::time::timeout(Timing::new().wait(), create)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(children(&observer, &root).await.len(), 2);
}

#[tokio::test]
async fn a_dropped_protected_create_leaves_no_node() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let (client, observer, root) = setup(&server, &proxy).await;
    let (_, _, child_watch) = observer
        .get_children()
        .watched()
        .for_path(&root)
        .await
        .unwrap();

    proxy.pause_replies();
    let create = client
        .create()
        .with_protection()
        .with_mode(CreateMode::PersistentSequential)
        .for_path(&format!("{root}/job-"), b"")
        .into_future();
    // The request was sent when the future was made; the node appears at the server.
    assert_eq!(
        tokio::time::timeout(Timing::new().wait(), child_watch)
            .await
            .unwrap()
            .event_type,
        EventType::NodeChildrenChanged
    );
    assert_eq!(children(&observer, &root).await.len(), 1);
    drop(create);
    proxy.resume();
    // The client finds the node by its protected prefix and deletes it in the background.
    curator_test::eventually("the abandoned node is deleted", || async {
        children(&observer, &root).await.is_empty()
    })
    .await;
    curator_test::eventually("the cleanup finishes", || async {
        client.metrics().pending_guaranteed_deletes == 0
    })
    .await;
}

#[tokio::test]
async fn a_guaranteed_delete_keeps_going_after_the_caller_gave_up() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = support::started(
        support::builder(&proxy.connect_string())
            .connection_timeout(Duration::from_millis(300))
            .retry_policy(RetryNTimes::new(1, Duration::from_millis(10))),
    )
    .await;
    let observer = support::connected(&server.connect_string()).await;
    let root = unique_root("guaranteed");
    let node = client
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/n"), b"")
        .await
        .unwrap();
    let (_, gone) = observer
        .check_exists()
        .watched()
        .for_path(&node)
        .await
        .unwrap();

    proxy.pause();
    // The first attempt's connection is lost; the retry finds no connection.
    assert!(matches!(
        client.delete().guaranteed().for_path(&node).await,
        Err(Error::NotConnected { .. })
    ));
    assert_eq!(client.metrics().pending_guaranteed_deletes, 1);
    assert!(
        observer
            .check_exists()
            .for_path(&node)
            .await
            .unwrap()
            .is_some(),
        "not deleted yet"
    );

    proxy.resume();
    let event = tokio::time::timeout(Timing::new().wait(), gone)
        .await
        .unwrap();
    assert_eq!(event.event_type, EventType::NodeDeleted);
    curator_test::eventually("the pending count drops", || async {
        client.metrics().pending_guaranteed_deletes == 0
    })
    .await;
}

/// A client through `proxy` that gives up quickly while the link is down.
async fn impatient_client(proxy: &FaultProxy) -> CuratorFramework {
    support::started(
        support::builder(&proxy.connect_string())
            .connection_timeout(Duration::from_millis(300))
            .retry_policy(RetryNTimes::new(1, Duration::from_millis(10))),
    )
    .await
}

/// The background retry of a guaranteed delete keeps `deleting_children_if_needed()` (it used
/// to retry a plain delete, meet "node has children", and stop as if done).
#[tokio::test]
async fn a_guaranteed_recursive_delete_finishes_after_the_outage() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = impatient_client(&proxy).await;
    let observer = support::connected(&server.connect_string()).await;
    let jobs = format!("{}/jobs", unique_root("guaranteed-recursive"));
    for node in ["a", "b/c"] {
        observer
            .create()
            .creating_parents_if_needed()
            .for_path(&format!("{jobs}/{node}"), b"")
            .await
            .unwrap();
    }
    let (_, gone) = observer
        .check_exists()
        .watched()
        .for_path(&jobs)
        .await
        .unwrap();

    proxy.pause();
    let error = client
        .delete()
        .guaranteed()
        .deleting_children_if_needed()
        .for_path(&jobs)
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error}");
    assert_eq!(client.metrics().pending_guaranteed_deletes, 1);
    proxy.resume();

    let event = tokio::time::timeout(Timing::new().wait(), gone)
        .await
        .expect("the directory is deleted after the outage");
    assert_eq!(event.event_type, EventType::NodeDeleted);
    curator_test::eventually("the background delete is counted as completed", || async {
        let metrics = client.metrics();
        metrics.pending_guaranteed_deletes == 0 && metrics.completed_guaranteed_deletes == 1
    })
    .await;
    assert_eq!(client.metrics().abandoned_guaranteed_deletes, 0);
}

/// A background delete that meets an error retrying cannot fix is counted as abandoned (and
/// reported), not as done.
#[tokio::test]
async fn a_guaranteed_delete_that_gives_up_is_counted_as_abandoned() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = impatient_client(&proxy).await;
    let observer = support::connected(&server.connect_string()).await;
    let node = format!("{}/n", unique_root("guaranteed-abandoned"));
    observer
        .create()
        .creating_parents_if_needed()
        .for_path(&node, b"")
        .await
        .unwrap();
    let mut errors = client.unhandled_error_listenable().stream();

    proxy.pause();
    let error = client
        .delete()
        .guaranteed()
        .with_version(7)
        .for_path(&node)
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error}");
    proxy.resume();

    let reported = tokio::time::timeout(Timing::new().wait(), errors.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reported.context, "guaranteed delete");
    assert!(reported.message.contains("bad version"), "{reported:?}");
    curator_test::eventually("the background delete is counted as abandoned", || async {
        client.metrics().pending_guaranteed_deletes == 0
    })
    .await;
    let metrics = client.metrics();
    assert_eq!(
        (
            metrics.completed_guaranteed_deletes,
            metrics.abandoned_guaranteed_deletes
        ),
        (0, 1)
    );
    assert!(
        observer
            .check_exists()
            .for_path(&node)
            .await
            .unwrap()
            .is_some(),
        "the node is still there"
    );
}
