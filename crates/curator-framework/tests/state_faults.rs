//! Connection states and recovery under real faults: server restarts, session expiry, network
//! partitions.

mod support;

use std::time::Duration;

use curator_framework::retry::{RetryNTimes, RetryUntilElapsed};
use curator_framework::types::EventType;
use curator_framework::{ConnectionState, CreateMode, Error};
use curator_test::{Expiry, FaultProxy, TestingServer, Timing, expire_session, unique_root};

use ConnectionState::{Connected, Lost, Reconnected, Suspended};

#[tokio::test]
async fn a_server_restart_is_suspended_then_reconnected_on_the_same_session() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let client = support::builder(&server.connect_string()).build().unwrap();
    let mut states = client.connection_state_stream();
    client.start().await.unwrap();
    support::expect_states(&mut states, &[Connected]).await;
    let root = unique_root("restart");
    let node = client
        .create()
        .creating_parents_if_needed()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&format!("{root}/e"), b"")
        .await
        .unwrap();
    let session = client.session_id();

    server.restart().await.unwrap();
    support::expect_states(&mut states, &[Suspended, Reconnected]).await;
    assert_eq!(client.session_id(), session);
    assert!(
        client
            .check_exists()
            .for_path(&node)
            .await
            .unwrap()
            .is_some(),
        "the ephemeral node survives"
    );
}

#[tokio::test]
async fn an_operation_issued_while_the_server_is_down_completes_after_restart() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let client = support::started(
        support::builder(&server.connect_string())
            .connection_timeout(Duration::from_millis(500))
            .retry_policy(RetryUntilElapsed::new(
                Timing::new().forever(),
                Duration::from_millis(100),
            )),
    )
    .await;
    let root = support::create_root(&client, "retry").await;

    let mut states = client.connection_state_stream();
    server.stop().unwrap();
    support::expect_states(&mut states, &[Suspended]).await;
    // The requests start while the server is down; they run out of connection time at least
    // once, go to the retry policy, and complete once the server is back.
    let pending = tokio::spawn({
        let (client, path) = (client.clone(), format!("{root}/during-outage"));
        async move { client.create().for_path(&path, b"ok").await }
    });
    let get = tokio::spawn({
        let (client, root) = (client.clone(), root.clone());
        async move { client.get_data().for_path(&root).await }
    });
    curator_test::eventually("a retry", || async { client.metrics().retries > 0 }).await;
    server.restart().await.unwrap();
    support::expect_states(&mut states, &[Reconnected]).await;
    assert_eq!(
        pending.await.unwrap().unwrap(),
        format!("{root}/during-outage")
    );
    assert_eq!(get.await.unwrap().unwrap().0, b"");
    assert!(client.metrics().retries > 0, "{:?}", client.metrics());
}

#[tokio::test]
async fn session_expiry_is_lost_then_reconnected_on_a_new_session_and_a_listener_recreates_its_node()
 {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let observer = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "expiry").await;
    let node = format!("{root}/registration");
    client
        .create()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&node, b"v1")
        .await
        .unwrap();
    let old_session = client.session_id().unwrap();

    // The recipe pattern: on a new session, put the registration back.
    let first_session = client.session_id();
    let (recreated_tx, mut recreated) = tokio::sync::mpsc::unbounded_channel();
    let listener_client = client.clone();
    let listener_node = node.clone();
    let _recreate = client
        .connection_state_listenable()
        .add_async_listener(move |state| {
            let (client, node, done) = (
                listener_client.clone(),
                listener_node.clone(),
                recreated_tx.clone(),
            );
            async move {
                if state == Reconnected && client.session_id() != first_session {
                    let result = client
                        .create()
                        .with_mode(CreateMode::Ephemeral)
                        .for_path(&node, b"v2")
                        .await;
                    let _ = done.send(result);
                }
            }
        });
    let mut states = client.connection_state_stream();
    let (_, _, gone) = observer.get_data().watched().for_path(&node).await.unwrap();

    client.inject_session_expiration().await.unwrap();

    support::expect_states(&mut states, &[Suspended, Lost, Reconnected]).await;
    assert_eq!(
        tokio::time::timeout(Timing::new().wait(), gone)
            .await
            .unwrap()
            .event_type,
        EventType::NodeDeleted
    );
    let new_session = client.session_id().unwrap();
    assert_ne!(new_session, old_session, "a new session after Lost");
    let created = tokio::time::timeout(Timing::new().wait(), recreated.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(created, Ok(node.clone()));
    let (data, stat) = observer.get_data().for_path(&node).await.unwrap();
    assert_eq!(
        (data.as_slice(), stat.ephemeral_owner),
        (&b"v2"[..], new_session)
    );
    assert_eq!(client.metrics().sessions, 2);
}

#[tokio::test]
async fn a_partition_is_suspended_then_lost_after_the_session_timeout_then_reconnected_after_healing()
 {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let timing = Timing::new();
    let session_timeout = timing.scale(Duration::from_secs(3));
    let client = support::builder(&proxy.connect_string())
        .session_timeout(session_timeout)
        .connection_timeout(timing.scale(Duration::from_millis(800)))
        .retry_policy(RetryNTimes::new(1, Duration::from_millis(10)))
        .build()
        .unwrap();
    let observer = support::connected(&server.connect_string()).await;
    let mut states = client.connection_state_stream();
    client.start().await.unwrap();
    support::expect_states(&mut states, &[Connected]).await;
    let root = unique_root("partition");
    let node = client
        .create()
        .creating_parents_if_needed()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&format!("{root}/e"), b"")
        .await
        .unwrap();
    let old_session = client.session_id().unwrap();
    let (_, old_node_gone) = observer
        .check_exists()
        .watched()
        .for_path(&node)
        .await
        .unwrap();

    proxy.pause();
    support::expect_states(&mut states, &[Suspended]).await;
    let suspended_at = tokio::time::Instant::now();
    // Lost comes from the client's own clock, while the partition lasts.
    support::expect_states(&mut states, &[Lost]).await;
    assert!(proxy.is_paused());
    assert!(
        suspended_at.elapsed() >= session_timeout.mul_f64(0.5),
        "Lost came too early: {:?}",
        suspended_at.elapsed()
    );
    assert!(matches!(
        client.get_data().for_path(&root).await,
        Err(Error::NotConnected { .. })
    ));

    proxy.resume();
    support::expect_states(&mut states, &[Reconnected]).await;
    let new_session = client.session_id().unwrap();
    assert_ne!(
        new_session, old_session,
        "the abandoned session is never used again"
    );
    // The server expires the abandoned session on its own; its ephemeral node goes with it.
    let event = tokio::time::timeout(timing.wait(), old_node_gone)
        .await
        .unwrap();
    assert_eq!(event.event_type, EventType::NodeDeleted);
    client.get_data().for_path(&root).await.unwrap();
}

#[tokio::test]
async fn a_cut_connection_reconnects_to_the_same_session() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = support::builder(&proxy.connect_string()).build().unwrap();
    let mut states = client.connection_state_stream();
    client.start().await.unwrap();
    support::expect_states(&mut states, &[Connected]).await;
    let session = client.session_id();
    proxy.drop_connections();
    support::expect_states(&mut states, &[Suspended, Reconnected]).await;
    assert_eq!(client.session_id(), session);
}

#[tokio::test]
async fn a_session_expired_by_the_server_is_lost_then_replaced() {
    let server = TestingServer::start().await.unwrap();
    // The proxy reads the session's credentials so the test can expire it the classic way.
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = support::builder(&proxy.connect_string()).build().unwrap();
    let observer = support::connected(&server.connect_string()).await;
    let mut states = client.connection_state_stream();
    client.start().await.unwrap();
    support::expect_states(&mut states, &[Connected]).await;
    let root = unique_root("server-expiry");
    let node = client
        .create()
        .creating_parents_if_needed()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&format!("{root}/e"), b"")
        .await
        .unwrap();
    let old_session = client.session_id().unwrap();
    let credentials = proxy.session(old_session).unwrap();

    let outcome = expire_session(&server.connect_string(), &credentials, Timing::new().wait())
        .await
        .unwrap();
    assert_eq!(outcome, Expiry::Expired);
    support::expect_loss_and_recovery(&mut states).await;
    assert_ne!(client.session_id(), Some(old_session));
    assert_eq!(observer.check_exists().for_path(&node).await, Ok(None));
    // The new session works.
    client
        .create()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&node, b"again")
        .await
        .unwrap();
}

/// `simulated_session_expiration_percent(0)` leaves `Lost` to the server, as Curator does: the
/// partition outlasts the session at the server (its ephemeral node goes), and the client still
/// says `Suspended`; once the link is back, the server's word makes it `Lost`, then a new
/// session `Reconnected`.
#[tokio::test]
async fn with_simulated_expiration_off_lost_comes_from_the_server() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let timing = Timing::new();
    let client = support::builder(&proxy.connect_string())
        .session_timeout(timing.scale(Duration::from_secs(2)))
        .connection_timeout(timing.scale(Duration::from_millis(800)))
        .simulated_session_expiration_percent(0)
        .build()
        .unwrap();
    let mut states = client.connection_state_stream();
    client.start().await.unwrap();
    support::expect_states(&mut states, &[Connected]).await;
    let root = support::create_root(&client, "expiration-off").await;
    let node = client
        .create()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&format!("{root}/mine"), b"")
        .await
        .unwrap();
    let observer = support::started(support::builder(&server.connect_string())).await;
    let (_, gone) = observer
        .check_exists()
        .watched()
        .for_path(&node)
        .await
        .unwrap();

    proxy.pause();
    support::expect_states(&mut states, &[Suspended]).await;
    let event = tokio::time::timeout(timing.forever(), gone).await.unwrap();
    assert_eq!(
        event.event_type,
        EventType::NodeDeleted,
        "the server expired the session"
    );
    use futures::FutureExt;
    assert!(
        futures::StreamExt::next(&mut states)
            .now_or_never()
            .is_none(),
        "no Lost on the client's own clock"
    );
    proxy.resume();
    support::expect_states(&mut states, &[Lost, Reconnected]).await;
}
