//! The wire layer keeps watches across reconnects: with curator-session, a watch set before a
//! server restart (same session, new TCP connection) still fires after it, because the session
//! sets its watches again when it reconnects. This test kept decision 0001
//! (docs/decisions/0001-wire-client.md) honest; it now holds the workspace's own wire layer to
//! the same bar.

use std::time::Duration;

use curator_session::proto::{CreateMode, EventType};
use curator_session::{Session, SessionConfig, open_acl};
use curator_test::{TestingServer, Timing, unique_root};

/// Opens a session; `Session::connect` tries the servers round after round until its
/// connection timeout, long here: a JVM on a loaded machine may answer later than one attempt
/// waits.
async fn connect(connect_string: &str, session_timeout: Duration) -> Session {
    let config = SessionConfig::new(connect_string)
        .unwrap()
        .session_timeout(session_timeout)
        .connection_timeout(Timing::new().forever());
    Session::connect(config)
        .await
        .unwrap_or_else(|e| panic!("connecting to {connect_string}: {e}"))
}

/// Creates `path` and its missing parents as persistent nodes.
async fn mkdirs(session: &Session, path: &str) {
    let mut at = String::new();
    for part in path.split('/').filter(|part| !part.is_empty()) {
        at = format!("{at}/{part}");
        match session
            .create(&at, b"", open_acl(), CreateMode::Persistent, None)
            .await
        {
            Ok(_)
            | Err(curator_session::Error::Server(curator_session::proto::ErrorCode::NodeExists)) => {
            }
            Err(e) => panic!("mkdir {at}: {e}"),
        }
    }
}

#[tokio::test]
async fn an_exists_watch_set_before_a_restart_fires_after_it() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let watcher_client = connect(
        &server.connect_string(),
        Timing::new().scale(Duration::from_secs(20)),
    )
    .await;
    let root = unique_root("wire-watch");
    mkdirs(&watcher_client, &root).await;
    let node = format!("{root}/created-after-restart");
    let (stat, watch) = watcher_client.exists_watched(&node).await.unwrap();
    assert_eq!(stat, None);
    let session = watcher_client.session_id();

    server.restart().await.unwrap();

    // A second client creates the node once the server is back.
    let writer = connect(&server.connect_string(), Timing::new().session_timeout()).await;
    writer
        .create(&node, b"", open_acl(), CreateMode::Persistent, None)
        .await
        .unwrap();

    let event = tokio::time::timeout(Timing::new().wait(), watch.changed())
        .await
        .expect("the watch set before the restart never fired");
    assert_eq!(event.event_type, EventType::NodeCreated);
    assert_eq!(event.path, node);
    assert_eq!(
        watcher_client.session_id(),
        session,
        "same session across the restart"
    );
}

#[tokio::test]
async fn a_data_watch_set_before_a_restart_fires_after_it() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let client = connect(
        &server.connect_string(),
        Timing::new().scale(Duration::from_secs(20)),
    )
    .await;
    let root = unique_root("wire-watch");
    mkdirs(&client, &root).await;
    let (_, watch) = client.get_data_watched(&root).await.unwrap();
    let session = client.session_id();

    server.restart().await.unwrap();

    let writer = connect(&server.connect_string(), Timing::new().session_timeout()).await;
    writer.set_data(&root, b"changed", -1).await.unwrap();
    let event = tokio::time::timeout(Timing::new().wait(), watch.changed())
        .await
        .expect("the data watch set before the restart never fired");
    assert_eq!(event.event_type, EventType::NodeDataChanged);
    assert_eq!(event.path, root);
    assert_eq!(
        client.session_id(),
        session,
        "same session across the restart"
    );
}
