//! The in-process model server driven by curator-framework's real client.

use std::future::IntoFuture;
use std::time::Duration;

use curator_framework::acl::{Acl, Perms};
use curator_framework::ops::transaction::TransactionResult;
use curator_framework::retry::RetryNTimes;
use curator_framework::types::EventType;
use curator_framework::{ConnectionState, CreateMode, CuratorFramework, Error};
use curator_zkmodel::{InProcessServer, ModelConfig};
use futures::StreamExt;

/// How long a test waits for an event before it fails (waits end on the event).
const WAIT: Duration = Duration::from_secs(20);

async fn within<T>(future: impl IntoFuture<Output = T>) -> T {
    tokio::time::timeout(WAIT, future.into_future())
        .await
        .expect("in time")
}

fn builder(server: &InProcessServer) -> curator_framework::CuratorFrameworkBuilder {
    CuratorFramework::builder()
        .connect_string(server.connect_string())
        .session_timeout(Duration::from_secs(10))
        .connection_timeout(Duration::from_secs(10))
        .retry_policy(RetryNTimes::new(40, Duration::from_millis(100)))
}

async fn started(builder: curator_framework::CuratorFrameworkBuilder) -> CuratorFramework {
    let client = builder.build().expect("valid settings");
    client.start().await.expect("start");
    client.block_until_connected(WAIT).await.expect("connected");
    client
}

async fn connected(server: &InProcessServer) -> CuratorFramework {
    started(builder(server)).await
}

#[tokio::test]
async fn create_read_update_delete_with_stats() {
    let server = InProcessServer::start().await.unwrap();
    let client = connected(&server).await;
    assert_eq!(
        client.negotiated_session_timeout(),
        Some(Duration::from_secs(10))
    );

    let (path, stat) = client
        .create()
        .creating_parents_if_needed()
        .for_path("/app/a", b"one")
        .with_stat()
        .await
        .unwrap();
    assert_eq!(path, "/app/a");
    assert_eq!(
        (stat.version, stat.data_length, stat.ephemeral_owner),
        (0, 3, 0)
    );
    assert_eq!(stat.czxid, stat.mzxid);
    let (data, read) = client.get_data().for_path(&path).await.unwrap();
    assert_eq!((data.as_slice(), read), (&b"one"[..], stat));

    let updated = client
        .set_data()
        .with_version(0)
        .for_path(&path, b"two")
        .await
        .unwrap();
    assert_eq!((updated.version, updated.czxid), (1, stat.czxid));
    assert!(updated.mzxid > stat.mzxid);
    assert_eq!(
        client
            .set_data()
            .with_version(0)
            .for_path(&path, b"x")
            .await,
        Err(Error::BadVersion)
    );
    assert_eq!(
        client.create().for_path(&path, b"").await,
        Err(Error::NodeExists)
    );
    assert_eq!(client.delete().for_path("/app").await, Err(Error::NotEmpty));

    let (children, parent) = client.get_children().for_path("/app").await.unwrap();
    assert_eq!(
        (children, parent.num_children, parent.cversion),
        (vec!["a".to_owned()], 1, 1)
    );
    assert_eq!(client.check_exists().for_path("/app/none").await, Ok(None));
    let (acl, _) = client.get_acl().for_path(&path).await.unwrap();
    assert_eq!(acl, Acl::open_unsafe());

    client
        .delete()
        .with_version(1)
        .for_path(&path)
        .await
        .unwrap();
    assert_eq!(client.get_data().for_path(&path).await, Err(Error::NoNode));
    assert_eq!(client.delete().for_path(&path).await, Err(Error::NoNode));
    client.close().await.unwrap();
}

#[tokio::test]
async fn sequential_names_and_ephemerals_that_go_with_a_closed_session() {
    let server = InProcessServer::start().await.unwrap();
    let owner = connected(&server).await;
    let observer = connected(&server).await;
    owner.create().for_path("/locks", b"").await.unwrap();
    let mut paths = Vec::new();
    for _ in 0..3 {
        paths.push(
            owner
                .create()
                .with_mode(CreateMode::EphemeralSequential)
                .for_path("/locks/lock-", b"")
                .await
                .unwrap(),
        );
    }
    assert_eq!(
        paths,
        [
            "/locks/lock-0000000000",
            "/locks/lock-0000000001",
            "/locks/lock-0000000002"
        ]
    );
    let (_, stat) = observer.get_data().for_path(&paths[0]).await.unwrap();
    assert_eq!(Some(stat.ephemeral_owner), owner.session_id());

    let (_, _, children) = observer
        .get_children()
        .watched()
        .for_path("/locks")
        .await
        .unwrap();
    owner.close().await.unwrap();
    assert_eq!(
        within(children).await.event_type,
        EventType::NodeChildrenChanged
    );
    let (left, _) = observer.get_children().for_path("/locks").await.unwrap();
    assert!(left.is_empty());
    observer.close().await.unwrap();
}

#[tokio::test]
async fn an_expired_session_loses_its_ephemerals_and_the_client_makes_a_new_one() {
    let server = InProcessServer::start().await.unwrap();
    let owner = connected(&server).await;
    let observer = connected(&server).await;
    let mut states = owner.connection_state_stream();
    let node = owner
        .create()
        .with_mode(CreateMode::Ephemeral)
        .for_path("/member", b"")
        .await
        .unwrap();
    let (_, deleted) = observer
        .check_exists()
        .watched()
        .for_path(&node)
        .await
        .unwrap();
    let first = owner.session_id().unwrap();

    assert!(server.expire_session(first));
    assert_eq!(within(deleted).await.event_type, EventType::NodeDeleted);
    let mut seen = Vec::new();
    while seen.last() != Some(&ConnectionState::Reconnected) {
        seen.push(within(states.next()).await.expect("a state"));
    }
    assert!(seen.contains(&ConnectionState::Lost), "{seen:?}");
    assert_ne!(owner.session_id(), Some(first));
    assert_eq!(owner.check_exists().for_path(&node).await, Ok(None));
    owner.close().await.unwrap();
    observer.close().await.unwrap();
}

#[tokio::test]
async fn one_shot_and_persistent_recursive_watches_fire() {
    let server = InProcessServer::start().await.unwrap();
    let client = connected(&server).await;
    let writer = connected(&server).await;
    writer.create().for_path("/tree", b"").await.unwrap();

    let (_, _, changed) = client.get_data().watched().for_path("/tree").await.unwrap();
    let mut recursive = client
        .add_watch()
        .recursive()
        .for_path("/tree")
        .await
        .unwrap();
    writer.create().for_path("/tree/a", b"").await.unwrap();
    writer.create().for_path("/tree/a/b", b"").await.unwrap();
    writer.set_data().for_path("/tree/a/b", b"x").await.unwrap();
    writer.set_data().for_path("/tree", b"y").await.unwrap();
    writer.set_data().for_path("/tree", b"z").await.unwrap();
    writer.delete().for_path("/tree/a/b").await.unwrap();

    let mut events = Vec::new();
    for _ in 0..6 {
        let event = within(recursive.next()).await.expect("an event");
        events.push((event.event_type, event.path));
    }
    assert_eq!(
        events,
        [
            (EventType::NodeCreated, "/tree/a".to_owned()),
            (EventType::NodeCreated, "/tree/a/b".to_owned()),
            (EventType::NodeDataChanged, "/tree/a/b".to_owned()),
            (EventType::NodeDataChanged, "/tree".to_owned()),
            (EventType::NodeDataChanged, "/tree".to_owned()),
            (EventType::NodeDeleted, "/tree/a/b".to_owned()),
        ]
    );
    let event = within(changed.changed()).await;
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeDataChanged, "/tree")
    );
    assert!(event.zxid.is_some(), "a 3.9 server sends the change's zxid");
    client.close().await.unwrap();
    writer.close().await.unwrap();
}

#[tokio::test]
async fn transactions_succeed_whole_or_fail_whole() {
    let server = InProcessServer::start().await.unwrap();
    let client = connected(&server).await;
    client.create().for_path("/t", b"").await.unwrap();
    let results = client
        .transaction()
        .create("/t/a", b"1")
        .set_data("/t", b"2")
        .check("/t", 1)
        .commit()
        .await
        .unwrap();
    assert!(matches!(&results[0], TransactionResult::Create { path, .. } if path == "/t/a"));
    assert!(matches!(&results[1], TransactionResult::SetData { stat } if stat.version == 1));
    assert_eq!(results[2], TransactionResult::Check);

    let failed = client
        .transaction()
        .create("/t/b", b"")
        .check("/t", 7)
        .delete("/t/a")
        .commit()
        .await;
    assert_eq!(
        failed,
        Err(Error::Transaction {
            index: 1,
            cause: Box::new(Error::BadVersion)
        })
    );
    assert_eq!(client.check_exists().for_path("/t/b").await, Ok(None));
    assert!(
        client
            .check_exists()
            .for_path("/t/a")
            .await
            .unwrap()
            .is_some()
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn empty_containers_are_reaped() {
    let server = InProcessServer::builder()
        .container_check_interval(Duration::from_millis(50))
        .start()
        .await
        .unwrap();
    let client = connected(&server).await;
    client
        .create()
        .creating_parent_containers_if_needed()
        .for_path("/queue/item", b"")
        .await
        .unwrap();
    let (stat, _) = client
        .check_exists()
        .watched()
        .for_path("/queue")
        .await
        .unwrap();
    assert!(stat.is_some());
    let (_, _, gone) = client
        .get_data()
        .watched()
        .for_path("/queue")
        .await
        .unwrap();
    client.delete().for_path("/queue/item").await.unwrap();
    assert_eq!(
        within(gone.changed()).await.event_type,
        EventType::NodeDeleted
    );
    assert_eq!(client.check_exists().for_path("/queue").await, Ok(None));
    client.close().await.unwrap();
}

#[tokio::test]
async fn acls_refuse_strangers_and_admit_digest_users() {
    let server = InProcessServer::builder()
        .config(ModelConfig::default())
        .start()
        .await
        .unwrap();
    let alice = started(builder(&server).authorization("digest", b"alice:secret".to_vec())).await;
    let stranger = connected(&server).await;
    alice
        .create()
        .with_acl(Acl::creator_all())
        .for_path("/private", b"mine")
        .await
        .unwrap();
    assert_eq!(
        alice.get_data().for_path("/private").await.unwrap().0,
        b"mine"
    );
    assert_eq!(
        stranger.get_data().for_path("/private").await,
        Err(Error::NoAuth)
    );
    assert_eq!(
        stranger.set_data().for_path("/private", b"theirs").await,
        Err(Error::NoAuth)
    );
    alice.create().for_path("/shared", b"").await.unwrap();
    alice
        .set_acl()
        .with_acl(vec![Acl::world_anyone(Perms::READ)])
        .for_path("/shared")
        .await
        .unwrap();
    assert_eq!(
        stranger.create().for_path("/shared/kid", b"").await,
        Err(Error::NoAuth)
    );
    let identities = alice.who_am_i().await.unwrap();
    assert!(
        identities
            .iter()
            .any(|who| who.scheme == "digest" && who.id == "alice"),
        "{identities:?}"
    );
    alice.close().await.unwrap();
    stranger.close().await.unwrap();
}

#[tokio::test]
async fn a_restart_keeps_the_session_its_ephemerals_and_its_watches() {
    let server = InProcessServer::start().await.unwrap();
    let client = connected(&server).await;
    let writer = connected(&server).await;
    let mut states = client.connection_state_stream();
    let session = client.session_id().unwrap();
    client
        .create()
        .with_mode(CreateMode::Ephemeral)
        .for_path("/alive", b"")
        .await
        .unwrap();
    writer.create().for_path("/config", b"v1").await.unwrap();
    let (_, _, changed) = client
        .get_data()
        .watched()
        .for_path("/config")
        .await
        .unwrap();

    server.restart().await.unwrap();
    let mut seen = Vec::new();
    while seen.last() != Some(&ConnectionState::Reconnected) {
        seen.push(within(states.next()).await.expect("a state"));
    }
    assert_eq!(
        seen,
        [ConnectionState::Suspended, ConnectionState::Reconnected]
    );
    assert_eq!(client.session_id(), Some(session));
    let (_, stat) = writer.get_data().for_path("/alive").await.unwrap();
    assert_eq!(stat.ephemeral_owner, session);

    // The watch was set again on the new connection (setWatches) and still fires.
    writer.set_data().for_path("/config", b"v2").await.unwrap();
    assert_eq!(
        within(changed.changed()).await.event_type,
        EventType::NodeDataChanged
    );
    client.close().await.unwrap();
    writer.close().await.unwrap();
    assert!(
        server
            .server()
            .with_model(|model| model.node("/alive").is_none())
    );
}
