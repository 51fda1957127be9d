//! A session on a real 3-member ensemble: failover when its member dies, a server list that
//! changes within the session, planned moves that nobody sees as a disconnection, and the
//! search for a read-write server from a read-only one.

use std::time::Duration;

use curator_session::proto::{CreateMode, ErrorCode};
use curator_session::{Error, ServerAddress, Session, SessionConfig, SessionState, open_acl};
use curator_test::{TestingCluster, Timing, unique_root};

fn config(connect: &str, session_timeout: Duration) -> SessionConfig {
    SessionConfig::new(connect)
        .unwrap()
        .session_timeout(session_timeout)
        .connection_timeout(Timing::new().connection_timeout())
}

fn member(cluster: &TestingCluster, index: usize) -> ServerAddress {
    cluster.member_connect_string(index).parse().unwrap()
}

fn index_of(cluster: &TestingCluster, server: &ServerAddress) -> usize {
    (0..cluster.len())
        .find(|&i| member(cluster, i) == *server)
        .expect("a member's address")
}

async fn create_root(session: &Session, root: &str) {
    let parent = &root[..root.rfind('/').unwrap()];
    match session
        .create(parent, b"", open_acl(), CreateMode::Persistent, None)
        .await
    {
        Ok(_) | Err(Error::Server(ErrorCode::NodeExists)) => {}
        Err(error) => panic!("{error}"),
    }
    session
        .create(root, b"", open_acl(), CreateMode::Persistent, None)
        .await
        .unwrap();
}

/// Retries a read until the session is connected again (connection loss while it moves).
async fn read_back(session: &Session, path: &str) -> Vec<u8> {
    let timing = Timing::new();
    tokio::time::timeout(timing.forever(), async {
        loop {
            match session.get_data(path).await {
                Ok((data, _)) => return data,
                Err(Error::ConnectionLoss) => {
                    let mut state = session.state_watch();
                    let _ = state
                        .wait_for(|s| s.is_connected() || s.is_terminal())
                        .await;
                }
                Err(error) => panic!("{error}"),
            }
        }
    })
    .await
    .expect("connected again")
}

/// The session's member dies: the session moves to another member, keeping its id and its
/// ephemeral node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_fails_over_when_its_member_dies() {
    let mut cluster = TestingCluster::start(3).await.unwrap();
    let session = Session::connect(config(&cluster.connect_string(), Duration::from_secs(6)))
        .await
        .unwrap();
    let root = unique_root("failover");
    create_root(&session, &root).await;
    let node = format!("{root}/mine");
    session
        .create(&node, b"held", open_acl(), CreateMode::Ephemeral, None)
        .await
        .unwrap();
    let id = session.session_id();
    let first = session.server().unwrap();
    let mut states = session.state_changes();
    cluster.kill(index_of(&cluster, &first)).unwrap();
    assert_eq!(read_back(&session, &node).await, b"held");
    assert_eq!(session.session_id(), id);
    assert_ne!(session.server().unwrap(), first);
    assert_eq!(states.next().await, Some(SessionState::Disconnected));
    assert_eq!(states.next().await, Some(SessionState::Connected));
    session.close().await.unwrap();
}

/// Given only member 0, then the whole list: when member 0 is stopped for longer than the
/// session timeout, the session lives on on the other members.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_server_list_lets_a_session_outlive_its_first_member() {
    let mut cluster = TestingCluster::start(3).await.unwrap();
    let timeout = Duration::from_secs(4);
    let session = Session::connect(config(&cluster.member_connect_string(0), timeout))
        .await
        .unwrap();
    let root = unique_root("server-list");
    create_root(&session, &root).await;
    let node = format!("{root}/mine");
    session
        .create(&node, b"held", open_acl(), CreateMode::Ephemeral, None)
        .await
        .unwrap();
    let all: Vec<ServerAddress> = (0..3).map(|i| member(&cluster, i)).collect();
    session.update_server_list(all.clone()).unwrap();
    assert_eq!(session.servers().len(), 3);
    let on = index_of(&cluster, &read_server(&session).await);
    cluster.kill(on).unwrap();
    // Longer than the session timeout, with a write from elsewhere to wait on.
    let witness = Session::connect(config(
        &cluster.member_connect_string((on + 1) % 3),
        timeout,
    ))
    .await
    .unwrap();
    tokio::time::sleep(timeout + Duration::from_secs(1)).await;
    assert!(
        witness.exists(&node).await.unwrap().is_some(),
        "the ephemeral node lives"
    );
    assert_eq!(read_back(&session, &node).await, b"held");
    assert_ne!(index_of(&cluster, &session.server().unwrap()), on);
    witness.close().await.unwrap();
    session.close().await.unwrap();
}

/// The session's server once it is connected and not moving.
async fn read_server(session: &Session) -> ServerAddress {
    let mut state = session.state_watch();
    state.wait_for(|s| s.is_connected()).await.unwrap();
    tokio::time::timeout(Timing::new().wait(), async {
        loop {
            if let Some(server) = session.server() {
                return server;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the session settles on a server")
}

/// A new list without the session's server moves it there and then, without a disconnection:
/// requests made during the move wait and succeed, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_move_holds_requests_instead_of_failing_them() {
    // The session's own account of a move (and of a connection lost, if one is), shown with a
    // failure.
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter("curator_session=debug")
        .try_init();
    let cluster = TestingCluster::start(3).await.unwrap();
    let session = Session::connect(config(&cluster.connect_string(), Duration::from_secs(6)))
        .await
        .unwrap();
    let root = unique_root("planned-move");
    create_root(&session, &root).await;
    let node = format!("{root}/counter");
    session
        .create(&node, b"0", open_acl(), CreateMode::Ephemeral, None)
        .await
        .unwrap();
    let mut states = session.state_changes();
    for round in 0..6 {
        let from = read_server(&session).await;
        let others: Vec<ServerAddress> = (0..3)
            .map(|i| member(&cluster, i))
            .filter(|server| *server != from)
            .collect();
        // Writes in flight and queued across the move.
        let writes: Vec<_> = (0..20)
            .map(|i| session.set_data(&node, format!("{round}-{i}").as_bytes(), -1))
            .collect();
        if round % 2 == 0 {
            assert!(
                session.update_server_list(others).unwrap(),
                "its server left the list"
            );
        } else {
            session.reconnect();
        }
        let more: Vec<_> = (20..40)
            .map(|i| session.set_data(&node, format!("{round}-{i}").as_bytes(), -1))
            .collect();
        let mut last = 0;
        for write in writes.into_iter().chain(more) {
            let stat = write.await.expect("a planned move fails no request");
            assert!(stat.version > last, "in order");
            last = stat.version;
        }
        let (data, _) = session.get_data(&node).await.unwrap();
        assert_eq!(data, format!("{round}-39").as_bytes());
        read_server(&session).await;
        // Put every member back in the list for the next round.
        session
            .update_server_list((0..3).map(|i| member(&cluster, i)).collect())
            .unwrap();
        let _ = from;
    }
    // No state change was seen (the stream holds every change since it was made).
    if let Ok(state) = tokio::time::timeout(Duration::from_millis(10), states.next()).await {
        panic!("a planned move published a state change: {state:?}");
    }
    session.close().await.unwrap();
}

/// A server closes a session's old connection when the session is taken up on another one
/// (here the same server, reached through a second proxy, whose answer to the handshake is
/// held): the old connection breaks while the move's handshake is under way, because of it.
/// Nobody sees a disconnection, and what was asked meanwhile is answered on the new connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_old_connection_closed_by_the_move_itself_is_no_disconnection() {
    let server = curator_test::TestingServer::start().await.unwrap();
    let old = curator_test::FaultProxy::start(&server.connect_string())
        .await
        .unwrap();
    let new = curator_test::FaultProxy::start(&server.connect_string())
        .await
        .unwrap();
    let session = Session::connect(config(&old.connect_string(), Duration::from_secs(6)))
        .await
        .unwrap();
    let root = unique_root("moved-away");
    create_root(&session, &root).await;
    let mut states = session.state_changes();

    new.pause_replies();
    let target: ServerAddress = new.connect_string().parse().unwrap();
    assert!(session.update_server_list(vec![target.clone()]).unwrap());
    // The server took the session up on the new connection and closed the old one.
    curator_test::eventually("the old connection is closed", || async {
        old.open_connections() == 0
    })
    .await;
    let held = session.exists(&root);
    new.resume();
    assert!(held.await.unwrap().is_some(), "answered after the move");
    assert_eq!(read_server(&session).await, target);
    if let Ok(state) = tokio::time::timeout(Duration::from_millis(10), states.next()).await {
        panic!("the move published a state change: {state:?}");
    }
    session.close().await.unwrap();
}

/// A read-only member serves the session while the quorum is gone; once a read-write member
/// is back, the session moves there by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_session_finds_a_read_write_server() {
    let mut cluster = TestingCluster::start_read_only_capable(3).await.unwrap();
    let root = unique_root("read-only");
    let writer = Session::connect(config(&cluster.connect_string(), Duration::from_secs(6)))
        .await
        .unwrap();
    create_root(&writer, &root).await;
    writer.close().await.unwrap();
    cluster.kill(1).unwrap();
    cluster.kill(2).unwrap();
    let timing = Timing::new();
    // Member 0 alone: read-only once it notices the quorum is gone.
    let session = tokio::time::timeout(timing.forever(), async {
        loop {
            match Session::connect(
                config(&cluster.connect_string(), Duration::from_secs(6)).can_be_read_only(true),
            )
            .await
            {
                Ok(session) if session.state() == SessionState::ConnectedReadOnly => break session,
                Ok(session) => session.close().await.unwrap(),
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    })
    .await
    .expect("a read-only session");
    assert!(session.exists(&root).await.unwrap().is_some());
    assert_eq!(
        session
            .create(
                &format!("{root}/x"),
                b"",
                open_acl(),
                CreateMode::Persistent,
                None
            )
            .await,
        Err(Error::Server(ErrorCode::NotReadOnly))
    );
    cluster.restart(1).await.unwrap();
    cluster.restart(2).await.unwrap();
    let mut state = session.state_watch();
    tokio::time::timeout(
        timing.forever(),
        state.wait_for(|s| *s == SessionState::Connected),
    )
    .await
    .expect("moved to a read-write server")
    .unwrap();
    session
        .create(
            &format!("{root}/x"),
            b"",
            open_acl(),
            CreateMode::Persistent,
            None,
        )
        .await
        .unwrap();
    session.close().await.unwrap();
}

/// The link to the session's member is black-holed while the member itself is fine: nothing
/// comes back, so after `2T/3` of silence the session gives the connection up and fails over
/// to another member well within the session timeout, keeping its ephemeral node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_link_fails_over_within_the_session() {
    let cluster = TestingCluster::start(3).await.unwrap();
    let mut proxies = Vec::new();
    for index in 0..3 {
        proxies.push(
            curator_test::FaultProxy::start(&cluster.member_connect_string(index))
                .await
                .unwrap(),
        );
    }
    let through: Vec<String> = proxies.iter().map(|p| p.connect_string()).collect();
    let session = Session::connect(config(&through.join(","), Duration::from_secs(6)))
        .await
        .unwrap();
    let root = unique_root("black-hole");
    create_root(&session, &root).await;
    let node = format!("{root}/mine");
    session
        .create(&node, b"held", open_acl(), CreateMode::Ephemeral, None)
        .await
        .unwrap();
    let id = session.session_id();
    let on = session.server().unwrap().to_string();
    let cut = through.iter().position(|p| *p == on).unwrap();
    let mut states = session.state_changes();
    proxies[cut].pause();
    assert_eq!(states.next().await, Some(SessionState::Disconnected));
    assert_eq!(states.next().await, Some(SessionState::Connected));
    assert_eq!(session.session_id(), id);
    assert_ne!(session.server().unwrap().to_string(), on);
    assert_eq!(read_back(&session, &node).await, b"held");
    proxies[cut].resume();
    session.close().await.unwrap();
}
