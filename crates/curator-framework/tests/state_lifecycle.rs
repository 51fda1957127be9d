//! Lifecycle, namespaces, listeners and auto traits of the client, against a real server.

mod support;

use std::sync::Arc;
use std::time::Duration;

use curator_framework::listen::ListenerHandle;
use curator_framework::ops::OpFuture;
use curator_framework::retry::RetryNTimes;
use curator_framework::state::FrameworkState;
use curator_framework::types::EventType;
use curator_framework::watcher::{PersistentWatcher, Watcher};
use curator_framework::{ConnectionState, CreateMode, CuratorFramework, Error};
use curator_test::{TestingServer, Timing, unique_root};
use futures::StreamExt;
use parking_lot::Mutex;

#[test]
fn handles_futures_and_errors_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<CuratorFramework>();
    send_sync::<Error>();
    send_sync::<ListenerHandle>();
    send::<OpFuture<String>>();
    send::<Watcher>();
    send::<PersistentWatcher>();
    fn future_is_send<F: std::future::Future + Send>(_: &F) {}
    let client = CuratorFramework::builder()
        .connect_string("127.0.0.1:1")
        .build()
        .unwrap();
    future_is_send(&client.close());
    future_is_send(&client.block_until_connected(Duration::ZERO));
}

#[tokio::test]
async fn lifecycle_from_latent_to_stopped() {
    let server = TestingServer::start().await.unwrap();
    let client = support::builder(&server.connect_string()).build().unwrap();
    assert_eq!(client.state(), FrameworkState::Latent);
    assert_eq!(
        client.get_data().for_path("/").await,
        Err(Error::NotStarted)
    );
    assert_eq!(
        client
            .block_until_connected(Duration::from_millis(10))
            .await,
        Err(Error::NotStarted)
    );

    let mut states = client.connection_state_stream();
    client.start().await.unwrap();
    assert_eq!(client.state(), FrameworkState::Started);
    assert_eq!(client.start().await, Err(Error::AlreadyStarted));
    support::expect_states(&mut states, &[ConnectionState::Connected]).await;
    assert!(client.is_connected());
    assert!(client.session_id().is_some());
    assert!(client.negotiated_session_timeout().is_some());
    assert_eq!(client.connection_state(), Some(ConnectionState::Connected));

    client.close().await.unwrap();
    client.close().await.unwrap(); // idempotent
    assert_eq!(client.state(), FrameworkState::Stopped);
    assert_eq!(client.get_data().for_path("/").await, Err(Error::Closed));
    assert_eq!(client.start().await, Err(Error::Closed));
    assert!(!client.is_connected());
}

/// A client with a long session (so only an explicit close can remove its ephemeral node in
/// time), and an observer (kept alive with its watch) watching that node.
async fn ephemeral_under_watch(
    server: &TestingServer,
) -> (CuratorFramework, CuratorFramework, Watcher) {
    let builder =
        support::builder(&server.connect_string()).session_timeout(Duration::from_secs(60));
    let client = support::started(builder).await;
    let observer = support::connected(&server.connect_string()).await;
    let root = support::create_root(&observer, "ephemeral").await;
    let node = client
        .create()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&format!("{root}/e"), b"")
        .await
        .unwrap();
    let (_, watcher) = observer
        .check_exists()
        .watched()
        .for_path(&node)
        .await
        .unwrap();
    (client, observer, watcher)
}

#[tokio::test]
async fn close_removes_ephemeral_nodes_at_once() {
    let server = TestingServer::start().await.unwrap();
    let (client, _observer, watcher) = ephemeral_under_watch(&server).await;
    client.close().await.unwrap();
    let event = tokio::time::timeout(Timing::new().wait(), watcher)
        .await
        .unwrap();
    assert_eq!(event.event_type, EventType::NodeDeleted);
}

#[tokio::test]
async fn dropping_the_last_handle_closes_the_session() {
    let server = TestingServer::start().await.unwrap();
    let (client, _observer, watcher) = ephemeral_under_watch(&server).await;
    let clone = client.clone();
    drop(client);
    assert!(clone.is_connected(), "a clone keeps the client open");
    drop(clone);
    let event = tokio::time::timeout(Timing::new().wait(), watcher)
        .await
        .unwrap();
    assert_eq!(event.event_type, EventType::NodeDeleted);
}

#[tokio::test]
async fn an_unreachable_ensemble_times_out_cleanly() {
    let client = CuratorFramework::builder()
        .connect_string("127.0.0.1:1")
        .connection_timeout(Duration::from_millis(200))
        .session_timeout(Duration::from_secs(2))
        .retry_policy(RetryNTimes::new(2, Duration::from_millis(10)))
        .build()
        .unwrap();
    client.start().await.unwrap();
    assert!(matches!(
        client
            .block_until_connected(Duration::from_millis(300))
            .await,
        Err(Error::NotConnected { waited }) if waited == Duration::from_millis(300)
    ));
    // Each attempt waits the connection timeout; the retry policy then gives up.
    let error = client.get_data().for_path("/").await.unwrap_err();
    assert_eq!(
        error,
        Error::NotConnected {
            waited: Duration::from_millis(200)
        }
    );
    assert!(error.is_retryable());
    assert_eq!(error.code(), Some(-4));
    let metrics = client.metrics();
    assert_eq!(
        (
            metrics.operations,
            metrics.retries,
            metrics.failed_operations
        ),
        (1, 2, 1)
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn namespaces_isolate_and_are_stripped_from_results() {
    let server = TestingServer::start().await.unwrap();
    let raw = support::connected(&server.connect_string()).await;
    let ns_root = unique_root("ns");
    let namespace = ns_root.trim_start_matches('/').to_owned();
    let client =
        support::started(support::builder(&server.connect_string()).namespace(namespace.clone()))
            .await;
    assert_eq!(client.namespace(), Some(namespace.as_str()));

    let created = client
        .create()
        .with_mode(CreateMode::PersistentSequential)
        .for_path("/job-", b"x")
        .await
        .unwrap();
    assert!(created.starts_with("/job-"), "{created}");
    let (data, _) = raw
        .get_data()
        .for_path(&format!("{ns_root}{created}"))
        .await
        .unwrap();
    assert_eq!(data, b"x");
    assert_eq!(
        client.get_children().for_path("/").await.unwrap().0.len(),
        1
    );

    let (_, _, watcher) = client
        .get_data()
        .watched()
        .for_path(&created)
        .await
        .unwrap();
    raw.set_data()
        .for_path(&format!("{ns_root}{created}"), b"y")
        .await
        .unwrap();
    let event = tokio::time::timeout(Timing::new().wait(), watcher)
        .await
        .unwrap();
    assert_eq!(event.path, created, "event paths lose the namespace");

    // A view with another namespace shares the session but not the tree.
    let other = client
        .using_namespace(&format!("{namespace}-other"))
        .unwrap();
    assert_eq!(other.session_id(), client.session_id());
    assert_eq!(other.check_exists().for_path(&created).await, Ok(None));
    let plain = client.without_namespace();
    assert!(
        plain
            .check_exists()
            .for_path(&format!("{ns_root}{created}"))
            .await
            .unwrap()
            .is_some()
    );
    assert!(client.using_namespace("/bad").is_err());
}

/// Reads never create the namespace's nodes: under a namespace that does not exist they find
/// nothing, as anywhere else. The first write creates them (as containers).
#[tokio::test]
async fn reads_under_a_missing_namespace_create_nothing() {
    let server = TestingServer::start().await.unwrap();
    let raw = support::connected(&server.connect_string()).await;
    let top = unique_root("ns-reads");
    let namespace = format!("{}/b", top.trim_start_matches('/'));
    let client = raw.using_namespace(&namespace).unwrap();

    assert_eq!(
        client.get_children().for_path("/").await,
        Err(Error::NoNode)
    );
    assert_eq!(client.get_data().for_path("/x").await, Err(Error::NoNode));
    assert_eq!(client.check_exists().for_path("/").await, Ok(None));
    let (stat, _watcher) = client
        .check_exists()
        .watched()
        .for_path("/x")
        .await
        .unwrap();
    assert_eq!(stat, None);
    assert_eq!(client.get_acl().for_path("/").await, Err(Error::NoNode));
    assert_eq!(
        client.get_all_children_number().for_path("/").await,
        Err(Error::NoNode)
    );
    assert!(
        client
            .get_ephemerals()
            .for_path("/")
            .await
            .unwrap()
            .is_empty()
    );
    let read = client.multi_read().get_data("/x").commit().await.unwrap();
    assert_eq!(
        read,
        [curator_framework::ops::multi_read::ReadResult::Error(
            Error::NoNode
        )]
    );
    let _ = client.sync().for_path("/").await;
    let _persistent = client.add_watch().recursive().for_path("/").await.unwrap();
    assert!(!client.who_am_i().await.unwrap().is_empty());
    for path in [top.as_str(), &format!("/{namespace}")] {
        assert_eq!(
            raw.check_exists().for_path(path).await,
            Ok(None),
            "{path} was made"
        );
    }

    // The first write makes the namespace (its nodes as containers).
    client.create().for_path("/x", b"1").await.unwrap();
    let (_, stat) = raw
        .get_data()
        .for_path(&format!("/{namespace}"))
        .await
        .unwrap();
    assert_eq!(stat.ephemeral_owner, 0);
    assert_eq!(client.get_children().for_path("/").await.unwrap().0, ["x"]);
}

#[tokio::test]
async fn listeners_hear_every_transition_in_order_and_a_panicking_one_is_reported() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let client = support::builder(&server.connect_string()).build().unwrap();
    let recorded = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&recorded);
    let _recorder = client
        .connection_state_listenable()
        .add_listener(move |state| sink.lock().push(state));
    let _panicker = client.connection_state_listenable().add_listener(|state| {
        if state == ConnectionState::Suspended {
            panic!("listener cannot cope with {state}");
        }
    });
    let mut errors = client.unhandled_error_listenable().stream();
    let mut states = client.connection_state_stream();
    client.start().await.unwrap();
    support::expect_states(&mut states, &[ConnectionState::Connected]).await;

    server.restart().await.unwrap();
    support::expect_states(
        &mut states,
        &[ConnectionState::Suspended, ConnectionState::Reconnected],
    )
    .await;
    let report = tokio::time::timeout(Timing::new().wait(), errors.next())
        .await
        .unwrap()
        .unwrap();
    assert!(
        report.message.contains("cannot cope with SUSPENDED"),
        "{report:?}"
    );
    // The recorder, registered before the panicking listener and dispatched in the same order,
    // heard every transition.
    curator_test::eventually("the recorder hears Reconnected", || {
        let recorded = Arc::clone(&recorded);
        async move { recorded.lock().len() == 3 }
    })
    .await;
    assert_eq!(
        *recorded.lock(),
        vec![
            ConnectionState::Connected,
            ConnectionState::Suspended,
            ConnectionState::Reconnected
        ]
    );
    assert_eq!(client.metrics().state_transitions, 3);
}

/// With the link black-holed (the wire client does not know it is down), `close()` ends what
/// waits at once: a one-shot watch resolves with a `Closed` session event, a persistent watch
/// ends, and a read whose request went out fails with `Closed`. Before, each waited until the
/// wire client gave the session up (a read 2/3 of the session timeout, a watch about 1.4 of it:
/// here 40 s and 84 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_ends_watches_and_requests_while_the_link_is_down() {
    let server = TestingServer::start().await.unwrap();
    let proxy = curator_test::FaultProxy::start(&server.connect_string())
        .await
        .unwrap();
    let root = unique_root("close-link-down");
    let client = CuratorFramework::builder()
        .connect_string(proxy.connect_string())
        .session_timeout(Duration::from_secs(60))
        .connection_timeout(Timing::new().connection_timeout())
        .max_close_wait(Duration::from_millis(500))
        .retry_policy(RetryNTimes::new(3, Duration::from_millis(100)))
        .build()
        .unwrap();
    client.start().await.unwrap();
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&root, b"")
        .await
        .unwrap();
    let (_, watcher) = client
        .check_exists()
        .watched()
        .for_path(&root)
        .await
        .unwrap();
    let mut persistent = client.add_watch().for_path(&root).await.unwrap();

    proxy.pause();
    let read = tokio::spawn(client.get_data().for_path(&root).into_future());
    let watch = tokio::spawn(watcher.changed());
    let persistent = tokio::spawn(async move { persistent.next().await });
    client.close().await.unwrap();

    // Far below the 40 s the wire client would take, and far above what the close takes.
    let bound = Timing::new().wait();
    let event = tokio::time::timeout(bound, watch).await.unwrap().unwrap();
    assert_eq!(
        (event.event_type, event.session_state),
        (
            EventType::Session,
            curator_framework::types::KeeperState::Closed
        )
    );
    let next = tokio::time::timeout(bound, persistent)
        .await
        .unwrap()
        .unwrap();
    assert!(
        next.is_none(),
        "a persistent watch ends with the client: {next:?}"
    );
    let read = tokio::time::timeout(bound, read).await.unwrap().unwrap();
    assert_eq!(read.unwrap_err(), Error::Closed);
    proxy.resume();
}

/// An operation pausing between attempts (the connection down, the retry policy's pause long)
/// fails with `Closed` as soon as the client closes, not when its pause ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_ends_an_operation_pausing_between_retries() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let client = CuratorFramework::builder()
        .connect_string(server.connect_string())
        .session_timeout(Duration::from_secs(60))
        .connection_timeout(Duration::from_millis(200))
        .max_close_wait(Duration::from_millis(500))
        // A pause far longer than the bound below.
        .retry_policy(RetryNTimes::new(3, Duration::from_secs(120)))
        .build()
        .unwrap();
    client.start().await.unwrap();
    client
        .block_until_connected(Timing::new().wait())
        .await
        .unwrap();

    server.stop().unwrap();
    let read = tokio::spawn(client.get_data().for_path("/").into_future());
    // The first attempt gave up waiting for a connection: the pause has begun.
    curator_test::eventually("the first retry", || async {
        client.metrics().retries >= 1
    })
    .await;
    client.close().await.unwrap();
    let read = tokio::time::timeout(Timing::new().wait(), read)
        .await
        .expect("the operation must end with the client, not after its pause")
        .unwrap();
    assert_eq!(read.unwrap_err(), Error::Closed);
}
