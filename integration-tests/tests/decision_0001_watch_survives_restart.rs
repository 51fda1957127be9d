//! Evidence for docs/decisions/0001-wire-client.md: with `zookeeper-client`, a watch set before a
//! server restart (same session, new TCP connection) still fires after it, because the client
//! re-registers its watches when it reconnects.

use std::time::Duration;

use curator_test::{TestingServer, Timing, unique_root};
use zookeeper_client as zk;

async fn connect(connect_string: &str, session_timeout: Duration) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(session_timeout)
        .with_connection_timeout(Timing::new().connection_timeout())
        .connect(connect_string)
        .await
        .unwrap()
}

#[tokio::test]
async fn an_exists_watch_set_before_a_restart_fires_after_it() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let watcher_client = connect(
        &server.connect_string(),
        Timing::new().scale(Duration::from_secs(20)),
    )
    .await;
    let root = unique_root("decision-0001");
    watcher_client
        .mkdir(
            &root,
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let node = format!("{root}/created-after-restart");
    let (stat, watch) = watcher_client.check_and_watch_stat(&node).await.unwrap();
    assert_eq!(stat, None);
    let session = watcher_client.session_id();

    server.restart().await.unwrap();

    // A second client creates the node once the server is back.
    let writer = connect(&server.connect_string(), Timing::new().session_timeout()).await;
    writer
        .create(
            &node,
            b"",
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();

    let event = tokio::time::timeout(Timing::new().wait(), watch.changed())
        .await
        .expect("the watch set before the restart never fired");
    assert_eq!(event.event_type, zk::EventType::NodeCreated);
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
    let root = unique_root("decision-0001");
    client
        .mkdir(
            &root,
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let (_, _, watch) = client.get_and_watch_data(&root).await.unwrap();

    server.restart().await.unwrap();

    let writer = connect(&server.connect_string(), Timing::new().session_timeout()).await;
    writer.set_data(&root, b"changed", None).await.unwrap();
    let event = tokio::time::timeout(Timing::new().wait(), watch.changed())
        .await
        .expect("the data watch set before the restart never fired");
    assert_eq!(event.event_type, zk::EventType::NodeDataChanged);
}
