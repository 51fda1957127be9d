//! `FaultProxy` between a real client and a real server.

mod common;

use std::time::Duration;

use curator_session::proto::CreateMode;
use curator_session::{Error, SessionState, open_acl};
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};

#[tokio::test]
async fn pause_disconnects_the_client_and_resume_reconnects_it_to_the_same_session() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    // Long enough that the session outlives the pause, short enough that the client's ping
    // deadline (a fraction of it) notices the silence quickly.
    let client = common::connect(
        &proxy.connect_string(),
        Timing::new().scale(Duration::from_secs(6)),
    )
    .await;
    let root = unique_root("proxy-pause");
    common::mkdirs(&client, &root).await;
    let session = client.session_id();

    proxy.pause();
    assert!(proxy.is_paused());
    let seen = common::await_state(&client, SessionState::Disconnected).await;
    assert_eq!(seen.last(), Some(&SessionState::Disconnected));
    // While paused, nothing reaches the server.
    let stalled = tokio::time::timeout(Duration::from_millis(300), client.exists(&root)).await;
    assert!(
        !matches!(stalled, Ok(Ok(_))),
        "a request went through a paused proxy: {stalled:?}"
    );

    proxy.resume();
    common::await_state(&client, SessionState::Connected).await;
    assert_eq!(
        client.session_id(),
        session,
        "the session survives a short partition"
    );
    assert!(common::retry(|| client.exists(&root)).await.is_some());
}

#[tokio::test]
async fn drop_connections_cuts_the_link_and_the_client_reconnects() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = common::connect(
        &proxy.connect_string(),
        Timing::new().scale(Duration::from_secs(20)),
    )
    .await;
    let root = unique_root("proxy-drop");
    common::mkdirs(&client, &root).await;
    assert_eq!(proxy.open_connections(), 1);
    let mut states = client.state_changes();
    let session = client.session_id();

    proxy.drop_connections();
    let disconnected = tokio::time::timeout(Timing::new().wait(), states.next())
        .await
        .unwrap();
    assert_eq!(disconnected, Some(SessionState::Disconnected));
    common::await_state(&client, SessionState::Connected).await;
    assert_eq!(client.session_id(), session);
    assert!(common::retry(|| client.exists(&root)).await.is_some());
    // The reconnect went through the proxy again and re-attached the same session.
    let sessions = proxy.sessions();
    assert!(
        sessions.len() >= 2 && sessions.iter().all(|s| s.id == session),
        "{sessions:?}"
    );
}

#[tokio::test]
async fn paused_replies_let_requests_through_and_dropping_them_loses_the_answer() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = common::connect(
        &proxy.connect_string(),
        Timing::new().scale(Duration::from_secs(20)),
    )
    .await;
    let observer = common::connect(&server.connect_string(), Timing::new().session_timeout()).await;
    let root = unique_root("proxy-replies");
    common::mkdirs(&observer, &root).await;
    let node = format!("{root}/applied");

    proxy.pause_replies();
    // The request is sent when `create` is called; the spawned future only awaits its reply.
    let create = tokio::spawn(client.create(&node, b"", open_acl(), CreateMode::Persistent, None));
    // The request is applied although its reply is held.
    let deadline = tokio::time::Instant::now() + Timing::new().wait();
    while observer.exists(&node).await.unwrap().is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the request never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    proxy.drop_connections();
    proxy.resume();
    let outcome = tokio::time::timeout(Timing::new().wait(), create)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(outcome, Err(Error::ConnectionLoss)), "{outcome:?}");
}
