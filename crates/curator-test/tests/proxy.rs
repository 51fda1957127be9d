//! `FaultProxy` between a real client and a real server.

mod common;

use std::time::Duration;

use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use zookeeper_client as zk;

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
    let seen = common::await_state(&client, zk::SessionState::Disconnected).await;
    assert_eq!(seen.last(), Some(&zk::SessionState::Disconnected));
    // While paused, nothing reaches the server.
    let stalled = tokio::time::timeout(Duration::from_millis(300), client.check_stat(&root)).await;
    assert!(
        !matches!(stalled, Ok(Ok(_))),
        "a request went through a paused proxy: {stalled:?}"
    );

    proxy.resume();
    common::await_state(&client, zk::SessionState::SyncConnected).await;
    assert_eq!(
        client.session_id(),
        session,
        "the session survives a short partition"
    );
    assert!(common::retry(|| client.check_stat(&root)).await.is_some());
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
    let mut states = client.state_watcher();
    let session = client.session_id();

    proxy.drop_connections();
    let disconnected = tokio::time::timeout(Timing::new().wait(), states.changed())
        .await
        .unwrap();
    assert_eq!(disconnected, zk::SessionState::Disconnected);
    common::await_state(&client, zk::SessionState::SyncConnected).await;
    assert_eq!(client.session_id(), session);
    assert!(common::retry(|| client.check_stat(&root)).await.is_some());
    // The reconnect went through the proxy again and re-attached the same session.
    let sessions = proxy.sessions();
    assert!(
        sessions.len() >= 2 && sessions.iter().all(|s| s.id == session.0),
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
    let create = tokio::spawn({
        let client = client.clone();
        let node = node.clone();
        async move {
            client
                .create(
                    &node,
                    b"",
                    &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
                )
                .await
        }
    });
    // The request is applied although its reply is held.
    let deadline = tokio::time::Instant::now() + Timing::new().wait();
    while observer.check_stat(&node).await.unwrap().is_none() {
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
    assert!(
        matches!(outcome, Err(zk::Error::ConnectionLoss)),
        "{outcome:?}"
    );
}
