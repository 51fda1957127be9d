//! A session against a real ZooKeeper: operations, order, watches across a restart, expiry,
//! closing with the link down, refused credentials.

use std::time::Duration;

use curator_session::proto::{
    AddWatchMode, CheckVersionRequest, CreateMode, ErrorCode, EventType, KeeperState, MultiOp,
    MultiResult, SetDataRequest,
};
use curator_session::{Error, Session, SessionConfig, SessionState, open_acl};
use curator_test::{FaultProxy, SessionCredentials, TestingServer, Timing, unique_root};
use futures::FutureExt;

fn config(connect: &str) -> SessionConfig {
    let timing = Timing::new();
    SessionConfig::new(connect)
        .unwrap()
        .session_timeout(timing.session_timeout())
        .connection_timeout(timing.connection_timeout())
}

async fn connect(connect: &str) -> Session {
    Session::connect(config(connect)).await.unwrap()
}

/// Creates `root` (and the shared parent of test roots) with `data`.
async fn create_root(session: &Session, root: &str, data: &[u8], mode: CreateMode) {
    let parent = &root[..root.rfind('/').unwrap()];
    match session
        .create(parent, b"", open_acl(), CreateMode::Persistent, None)
        .await
    {
        Ok(_) | Err(Error::Server(ErrorCode::NodeExists)) => {}
        Err(error) => panic!("{error}"),
    }
    session
        .create(root, data, open_acl(), mode, None)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_round_trip_under_a_chroot() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("session-ops");
    let plain = connect(&server.connect_string()).await;
    create_root(&plain, &root, b"", CreateMode::Persistent).await;
    let session = connect(&format!("{}{root}", server.connect_string())).await;
    assert_eq!(session.state(), SessionState::Connected);
    assert!(session.session_id() != 0);

    let (path, stat) = session
        .create("/a", b"one", open_acl(), CreateMode::Persistent, None)
        .await
        .unwrap();
    assert_eq!(path, "/a");
    assert_eq!(stat.version, 0);
    let (seq, _) = session
        .create(
            "/a/job-",
            b"",
            open_acl(),
            CreateMode::EphemeralSequential,
            None,
        )
        .await
        .unwrap();
    assert_eq!(seq, "/a/job-0000000000");
    let (data, stat) = session.get_data("/a").await.unwrap();
    assert_eq!((data.as_slice(), stat.num_children), (&b"one"[..], 1));
    assert_eq!(session.set_data("/a", b"two", 0).await.unwrap().version, 1);
    assert_eq!(
        session.set_data("/a", b"x", 0).await,
        Err(Error::Server(ErrorCode::BadVersion))
    );
    let (children, _) = session.get_children("/a").await.unwrap();
    assert_eq!(children, ["job-0000000000"]);
    assert_eq!(
        session.get_ephemerals("/a").await.unwrap(),
        std::slice::from_ref(&seq)
    );
    assert_eq!(session.get_all_children_number("/").await.unwrap(), 2);
    assert!(session.exists("/nope").await.unwrap().is_none());
    assert_eq!(
        session.get_data("/nope").await,
        Err(Error::Server(ErrorCode::NoNode))
    );
    let (acl, _) = session.get_acl("/a").await.unwrap();
    assert_eq!(acl, open_acl());
    session.sync("/a").await.unwrap();
    // Seen from outside the chroot.
    let (data, _) = plain.get_data(&format!("{root}/a")).await.unwrap();
    assert_eq!(data, b"two");

    // A transaction: created paths come back without the chroot; a failure names its step.
    let results = session
        .multi(vec![
            MultiOp::Create2(curator_session::proto::CreateRequest {
                path: "/b".into(),
                data: vec![],
                acl: open_acl(),
                mode: CreateMode::Persistent,
            }),
            MultiOp::SetData(SetDataRequest {
                path: "/a".into(),
                data: b"three".to_vec(),
                version: 1,
            }),
        ])
        .await
        .unwrap();
    match &results[0] {
        MultiResult::Create2(created) => assert_eq!(created.path, "/b"),
        MultiResult::Create(created) => assert_eq!(created.path, "/b"),
        other => panic!("{other:?}"),
    }
    let failed = session
        .multi(vec![
            MultiOp::Delete(curator_session::proto::DeleteRequest {
                path: "/b".into(),
                version: -1,
            }),
            MultiOp::Check(CheckVersionRequest {
                path: "/a".into(),
                version: 99,
            }),
        ])
        .await
        .unwrap();
    assert_eq!(failed[1], MultiResult::Error(ErrorCode::BadVersion));
    assert!(
        session.exists("/b").await.unwrap().is_some(),
        "nothing applied"
    );

    let identities = session.who_am_i().await.unwrap();
    assert!(identities.iter().any(|i| i.auth_scheme == "ip"));
    session.close().await.unwrap();
    assert_eq!(session.state(), SessionState::Closed);
    assert_eq!(session.get_data("/a").await, Err(Error::Closed));
    // The ephemeral node went with the session.
    assert!(
        plain
            .exists(&format!("{root}{seq}"))
            .await
            .unwrap()
            .is_none()
    );
    plain.close().await.unwrap();
}

/// ZooKeeper's guarantee: a watcher sees its event before the caller sees the reply of a
/// later request. Here the change and the read are sent together; when the read's reply is
/// in hand, the watch has already fired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_fires_before_the_reply_that_follows_it() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("session-order");
    let session = connect(&server.connect_string()).await;
    create_root(&session, &root, b"0", CreateMode::Persistent).await;
    for round in 0..50 {
        let (_, watch) = session.get_data_watched(&root).await.unwrap();
        let write = session.set_data(&root, round.to_string().as_bytes(), -1);
        let read = session.get_data(&root);
        let mut watch = Box::pin(watch.changed());
        let (written, (data, _)) = tokio::try_join!(write, read).unwrap();
        assert_eq!(data, round.to_string().as_bytes());
        let event = (&mut watch)
            .now_or_never()
            .unwrap_or_else(|| panic!("round {round}: the reply came before the watch fired"));
        assert_eq!(event.event_type, EventType::NodeDataChanged);
        assert_eq!(event.path, root);
        let _ = written;
    }
    session.close().await.unwrap();
}

/// Watches set before a server restart fire after it: the session sets them again on its new
/// connection (the one-shot, the persistent and the recursive kinds), and persistent watchers
/// hear the disconnection and the reconnection in between.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_survive_a_restart() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let root = unique_root("session-restart");
    let session = connect(&server.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    create_root(&session, &root, b"", CreateMode::Persistent).await;
    let missing = format!("{root}/later");
    let (stat, exists) = session.exists_watched(&missing).await.unwrap();
    assert!(stat.is_none());
    let (_, data) = session.get_data_watched(&root).await.unwrap();
    let mut persistent = session
        .add_watch(&root, AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    let id = session.session_id();

    server.restart().await.unwrap();
    let timing = Timing::new();
    let event = tokio::time::timeout(timing.wait(), persistent.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event.state, KeeperState::Disconnected);
    let event = tokio::time::timeout(timing.wait(), persistent.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event.state, KeeperState::SyncConnected);
    assert_eq!(session.session_id(), id);

    // The other session reconnects too before it writes.
    let write = async {
        loop {
            match other
                .create(&missing, b"", open_acl(), CreateMode::Persistent, None)
                .await
            {
                Ok(_) => break,
                Err(Error::ConnectionLoss) => tokio::task::yield_now().await,
                Err(error) => panic!("{error}"),
            }
        }
        other.set_data(&root, b"x", -1).await.unwrap();
    };
    tokio::time::timeout(timing.wait(), write).await.unwrap();
    let event = tokio::time::timeout(timing.wait(), exists.changed())
        .await
        .unwrap();
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeCreated, missing.as_str())
    );
    let event = tokio::time::timeout(timing.wait(), data.changed())
        .await
        .unwrap();
    assert_eq!(event.event_type, EventType::NodeDataChanged);
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(timing.wait(), persistent.next())
            .await
            .unwrap()
            .unwrap();
        seen.push((event.event_type, event.path));
    }
    assert!(seen.contains(&(EventType::NodeCreated, missing.clone())));
    assert!(seen.contains(&(EventType::NodeDataChanged, root.clone())));
    session.close().await.unwrap();
    other.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_ends_everything_waiting_on_it() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("session-expiry");
    let session = connect(&server.connect_string()).await;
    create_root(&session, &root, b"", CreateMode::Ephemeral).await;
    let (_, watch) = session.exists_watched(&format!("{root}-x")).await.unwrap();
    let mut persistent = session
        .add_watch(&root, AddWatchMode::Persistent)
        .await
        .unwrap();
    let mut states = session.state_changes();
    let expiry = curator_test::expire_session(
        &server.connect_string(),
        &SessionCredentials::new(session.session_id(), session.password()),
        Timing::new().wait(),
    )
    .await
    .unwrap();
    assert_eq!(expiry, curator_test::Expiry::Expired);
    let timing = Timing::new();
    let event = tokio::time::timeout(timing.wait(), watch.changed())
        .await
        .unwrap();
    assert_eq!(event.state, KeeperState::Expired);
    let mut last = None;
    while let Some(event) = tokio::time::timeout(timing.wait(), persistent.next())
        .await
        .unwrap()
    {
        last = Some(event.state);
    }
    assert_eq!(last, Some(KeeperState::Expired));
    let mut seen = Vec::new();
    while let Some(state) = tokio::time::timeout(timing.wait(), states.next())
        .await
        .unwrap()
    {
        seen.push(state);
    }
    assert_eq!(seen.last(), Some(&SessionState::Expired));
    assert_eq!(session.get_data("/").await, Err(Error::SessionExpired));
}

/// Closing never waits for the network: with the link black-holed, every watch ends at once,
/// and `close_within` returns after its bound with everything still waiting failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_with_the_link_down_ends_watches_at_once() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let root = unique_root("session-close-down");
    let session = connect(&proxy.connect_string()).await;
    create_root(&session, &root, b"", CreateMode::Persistent).await;
    let (_, watch) = session.get_data_watched(&root).await.unwrap();
    let mut persistent = session
        .add_watch(&root, AddWatchMode::Persistent)
        .await
        .unwrap();
    proxy.pause();
    let pending = session.get_data(&root);
    let closing = tokio::spawn({
        let session = session.clone();
        async move { session.close_within(Duration::from_millis(300)).await }
    });
    let event = tokio::time::timeout(Duration::from_secs(1), watch.changed())
        .await
        .expect("watches end when the close starts");
    assert_eq!(event.state, KeeperState::Closed);
    assert_eq!(
        persistent.next().await.map(|e| e.state),
        Some(KeeperState::Closed)
    );
    assert_eq!(persistent.next().await, None);
    assert_eq!(
        session.get_data(&root).await,
        Err(Error::Closed),
        "new requests are refused"
    );
    tokio::time::timeout(Duration::from_secs(2), closing)
        .await
        .expect("the close is bounded")
        .unwrap()
        .unwrap();
    assert_eq!(pending.await, Err(Error::Closed));
    assert_eq!(session.state(), SessionState::Closed);
    proxy.resume();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_credentials_end_the_session() {
    let server = TestingServer::start().await.unwrap();
    let refused =
        Session::connect(config(&server.connect_string()).auth("no-such-scheme", b"x".to_vec()))
            .await;
    assert!(matches!(refused, Err(Error::AuthFailed(_))), "{refused:?}");
    let digest =
        Session::connect(config(&server.connect_string()).auth("digest", b"alice:secret".to_vec()))
            .await
            .unwrap();
    let identities = digest.who_am_i().await.unwrap();
    assert!(
        identities
            .iter()
            .any(|i| i.auth_scheme == "digest" && i.user == "alice")
    );
    digest.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_server_names_every_reason() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let result = Session::connect(
        SessionConfig::new(&format!("127.0.0.1:{port}"))
            .unwrap()
            .connection_timeout(Duration::from_secs(2)),
    )
    .await;
    match result {
        Err(Error::NoServer(reasons)) => assert!(reasons.contains(&port.to_string()), "{reasons}"),
        other => panic!("{other:?}"),
    }
}

/// A SASL login asked of a server without SASL: the server would go on with an anonymous
/// session; the session refuses instead of running as someone it was not asked to be.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sasl_login_to_a_server_without_sasl_is_refused() {
    let server = TestingServer::start().await.unwrap();
    let result = Session::connect(
        config(&server.connect_string()).sasl(curator_session::Sasl::digest_md5("bob", "secret")),
    )
    .await;
    match result {
        Err(Error::SaslUnavailable(reason)) => assert!(reason.contains("not enabled"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

/// A one-shot watch on a path this session also watches persistently rides on the persistent
/// watch instead of asking the server for its own: on ZooKeeper 3.8 (before ZOOKEEPER-4466) a
/// one-shot watch would turn the persistent watch on the same path into a one-shot one, and its
/// later events would be lost. Dropping the one-shot watch removes nothing at the server either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_watch_leaves_a_persistent_watch_on_the_same_path_whole() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("session-4466");
    let session = connect(&server.connect_string()).await;
    create_root(&session, &root, b"0", CreateMode::Persistent).await;
    let timing = Timing::new();
    for mode in [AddWatchMode::PersistentRecursive, AddWatchMode::Persistent] {
        let mut persistent = session.add_watch(&root, mode).await.unwrap();
        let (_, once) = session.get_data_watched(&root).await.unwrap();
        let (_, dropped) = session.exists_watched(&root).await.unwrap();
        drop(dropped);
        for round in 1..=3 {
            session
                .set_data(&root, round.to_string().as_bytes(), -1)
                .await
                .unwrap();
            let event = tokio::time::timeout(timing.wait(), persistent.next())
                .await
                .expect("every change reaches the persistent watch")
                .unwrap();
            assert_eq!(
                (event.event_type, event.path.as_str()),
                (EventType::NodeDataChanged, root.as_str())
            );
        }
        let event = once
            .changed()
            .now_or_never()
            .expect("the one-shot watch fired too");
        assert_eq!(event.event_type, EventType::NodeDataChanged);
        persistent.remove().await.unwrap();
    }
    session.close().await.unwrap();
}

/// The same while the persistent watch is still being added: a one-shot watch asked for in the
/// meantime goes after the `addWatch` at the server, so it rides on it too (else, on ZooKeeper
/// 3.8, it would turn the persistent watch into a one-shot one as above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_watch_asked_while_a_persistent_watch_is_added_leaves_it_whole() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("session-4466-inflight");
    let session = connect(&server.connect_string()).await;
    create_root(&session, &root, b"0", CreateMode::Persistent).await;
    let timing = Timing::new();
    for mode in [AddWatchMode::PersistentRecursive, AddWatchMode::Persistent] {
        // Both sent before either reply is read.
        let adding = session.add_watch(&root, mode);
        let reading = session.get_data_watched(&root);
        let children = session.get_children_watched(&root);
        let (persistent, once, children) = tokio::join!(adding, reading, children);
        let (mut persistent, (_, once), (_, children)) =
            (persistent.unwrap(), once.unwrap(), children.unwrap());
        for round in 1..=3 {
            session
                .set_data(&root, round.to_string().as_bytes(), -1)
                .await
                .unwrap();
            let event = tokio::time::timeout(timing.wait(), persistent.next())
                .await
                .expect("every change reaches the persistent watch")
                .unwrap();
            assert_eq!(
                (event.event_type, event.path.as_str()),
                (EventType::NodeDataChanged, root.as_str())
            );
        }
        let event = once
            .changed()
            .now_or_never()
            .expect("the one-shot watch fired too");
        assert_eq!(event.event_type, EventType::NodeDataChanged);
        drop(children);
        persistent.remove().await.unwrap();
    }
    session.close().await.unwrap();
}

/// `last_renewed`: set by the handshake, moved to the sending of each request a server answers
/// (a ping's too), and frozen while the link is black-holed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_renewal_is_when_an_answered_request_was_sent() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let before_connect = tokio::time::Instant::now();
    let session = connect(&proxy.connect_string()).await;
    let first = session.last_renewed().expect("the handshake renews");
    assert!(first >= before_connect);

    let sent = tokio::time::Instant::now();
    session.exists("/").await.unwrap();
    let answered = session.last_renewed().unwrap();
    assert!(
        answered >= sent,
        "the renewal is the answered request's sending"
    );
    assert!(answered <= tokio::time::Instant::now());

    // Pings alone move it on an idle session.
    curator_test::eventually("a ping's answer renews", || async {
        session.last_renewed().is_some_and(|at| at > answered)
    })
    .await;

    proxy.pause();
    let mut states = session.state_changes();
    while let Some(state) = states.next().await {
        if state == SessionState::Disconnected {
            break;
        }
    }
    // Disconnected after a read timeout of silence: whatever was answered last was sent before
    // that silence began.
    let disconnected_at = tokio::time::Instant::now();
    let last = session.last_renewed().unwrap();
    assert!(
        last + session.negotiated_timeout() / 2 <= disconnected_at,
        "nothing renews while nothing is answered"
    );
    proxy.resume();
    session.close().await.unwrap();
}
