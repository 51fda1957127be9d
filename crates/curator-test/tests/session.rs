//! Expiring a session on demand, against a real ZooKeeper process.

mod common;

use curator_session::proto::{CreateMode, EventType};
use curator_session::{SessionState, open_acl};
use curator_test::{
    Expiry, FaultProxy, SessionCredentials, TestingServer, Timing, expire_session, unique_root,
};

#[tokio::test]
async fn expiry_removes_the_sessions_ephemeral_node_and_tells_its_client() {
    let server = TestingServer::start().await.unwrap();
    // The proxy records the session credentials the server hands this client.
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let victim = common::connect(
        &proxy.connect_string(),
        Timing::new().scale(std::time::Duration::from_secs(20)),
    )
    .await;
    let observer = common::connect(&server.connect_string(), Timing::new().session_timeout()).await;

    let root = unique_root("expiry");
    common::mkdirs(&observer, &root).await;
    let node = format!("{root}/ephemeral");
    victim
        .create(&node, b"", open_acl(), CreateMode::Ephemeral, None)
        .await
        .unwrap();
    let (_, watch) = observer.exists_watched(&node).await.unwrap();

    let sessions = proxy.sessions();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0].id, victim.session_id());
    assert_eq!(sessions[0].password, victim.password());

    let outcome = expire_session(&server.connect_string(), &sessions[0], Timing::new().wait())
        .await
        .unwrap();
    assert_eq!(outcome, Expiry::Expired);

    // The node goes with the session; the observer's watch says so.
    let event = tokio::time::timeout(Timing::new().wait(), watch.changed())
        .await
        .unwrap();
    assert_eq!(event.event_type, EventType::NodeDeleted);
    assert_eq!(observer.exists(&node).await.unwrap(), None);

    // The victim learns its session expired.
    common::await_state(&victim, SessionState::Expired).await;

    // A second attempt finds nothing to expire.
    let again = expire_session(&server.connect_string(), &sessions[0], Timing::new().wait())
        .await
        .unwrap();
    assert_eq!(again, Expiry::AlreadyGone);
}

#[tokio::test]
async fn an_unknown_session_is_already_gone() {
    let server = TestingServer::start().await.unwrap();
    let unknown = SessionCredentials::new(0x7fff_0000_0000_0001, vec![0; 16]);
    let outcome = expire_session(&server.connect_string(), &unknown, Timing::new().wait())
        .await
        .unwrap();
    assert_eq!(outcome, Expiry::AlreadyGone);
}

#[tokio::test]
async fn an_unreachable_host_is_skipped_for_the_next() {
    let server = TestingServer::start().await.unwrap();
    let unknown = SessionCredentials::new(0x7fff_0000_0000_0002, vec![0; 16]);
    let hosts = format!("127.0.0.1:1,{}", server.connect_string());
    let outcome = expire_session(&hosts, &unknown, Timing::new().wait())
        .await
        .unwrap();
    assert_eq!(outcome, Expiry::AlreadyGone);
    let none = expire_session("127.0.0.1:1", &unknown, Timing::new().wait()).await;
    assert!(none.is_err());
}
