//! PersistentNode and PersistentTtlNode against a real ZooKeeper: re-created with the latest
//! data after deletion, session expiry and server restart, exactly once, owned by the live
//! session.

use std::time::Duration;

use curator_framework::{CreateMode, CuratorFramework, Error};
use curator_nodes::{PersistentNode, PersistentTtlNode};
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::{client, eventually};

/// The children of `parent` and, for `node`, its data and owner.
async fn look(
    c: &CuratorFramework,
    parent: &str,
    node: &str,
) -> (Vec<String>, Option<(Vec<u8>, i64)>) {
    let children = c
        .get_children()
        .for_path(parent)
        .await
        .map(|(c, _)| c)
        .unwrap_or_default();
    let node = match c.get_data().for_path(node).await {
        Ok((data, stat)) => Some((data, stat.ephemeral_owner)),
        Err(Error::NoNode) => None,
        Err(error) => panic!("{error}"),
    };
    (children, node)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ephemeral_node_comes_back_once_with_its_latest_data() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("persistent-node");
    let path = format!("{root}/me");
    let owner = client(&server.connect_string()).await;
    let observer = client(&server.connect_string()).await;
    let node = PersistentNode::builder(owner.clone(), &path, CreateMode::Ephemeral, b"v1")
        .build()
        .unwrap();
    node.start().await.unwrap();
    tokio::time::timeout(Timing::new().wait(), node.initialized())
        .await
        .expect("created in time")
        .unwrap();
    assert_eq!(node.actual_path().as_deref(), Some(path.as_str()));
    assert_eq!(look(&observer, &root, &path).await.1.unwrap().0, b"v1");

    // Someone deletes it: it comes back, with the latest data.
    node.set_data(b"v2").await.unwrap();
    observer.delete().for_path(&path).await.unwrap();
    eventually("re-created after deletion", || async {
        look(&observer, &root, &path)
            .await
            .1
            .is_some_and(|(data, _)| data == b"v2")
    })
    .await;

    // The session ends: one node again, owned by the new session, with the latest data.
    node.set_data(b"v3").await.unwrap();
    let old_session = owner.session_id().unwrap();
    owner.inject_session_expiration().await.unwrap();
    eventually("re-created in the new session", || async {
        let (children, found) = look(&observer, &root, &path).await;
        children.len() == 1
            && found.is_some_and(|(data, owner_session)| {
                data == b"v3"
                    && owner_session != old_session
                    && Some(owner_session) == owner.session_id()
            })
    })
    .await;

    node.close().await.unwrap();
    assert!(
        look(&observer, &root, &path).await.1.is_none(),
        "close deletes it"
    );
    assert_eq!(node.start().await, Err(Error::Closed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protected_sequential_node_keeps_its_path_through_expiry_and_restart() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let root = unique_root("persistent-seq");
    let owner = client(&server.connect_string()).await;
    let node = PersistentNode::builder(
        owner.clone(),
        &format!("{root}/member-"),
        CreateMode::EphemeralSequential,
        b"m",
    )
    .with_protection()
    .build()
    .unwrap();
    node.start().await.unwrap();
    tokio::time::timeout(Timing::new().wait(), node.initialized())
        .await
        .expect("created in time")
        .unwrap();
    let actual = node.actual_path().unwrap();
    assert!(curator_framework::paths::is_protected(
        curator_framework::paths::node_name(&actual)
    ));

    server.restart().await.unwrap();
    let observer = client(&server.connect_string()).await;
    eventually("still one node after a restart", || async {
        let (children, found) = look(&observer, &root, &actual).await;
        children.len() == 1 && found.is_some()
    })
    .await;

    // The owner's own reconnect after the restart may come later than the observer's first
    // connection (a loaded machine): expire the session once it is connected again.
    owner
        .block_until_connected(Timing::new().wait())
        .await
        .unwrap();
    owner.inject_session_expiration().await.unwrap();
    eventually("the same path in the new session", || async {
        let (children, found) = look(&observer, &root, &actual).await;
        children.len() == 1 && found.is_some_and(|(_, session)| Some(session) == owner.session_id())
    })
    .await;
    assert_eq!(node.actual_path().unwrap(), actual);
    node.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_of_another_session_is_replaced() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("persistent-stale");
    let path = format!("{root}/me");
    // A previous incarnation left its ephemeral node (its session still alive).
    let previous = client(&server.connect_string()).await;
    previous
        .create()
        .creating_parents_if_needed()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&path, b"stale")
        .await
        .unwrap();
    let owner = client(&server.connect_string()).await;
    let node = PersistentNode::builder(owner.clone(), &path, CreateMode::Ephemeral, b"fresh")
        .build()
        .unwrap();
    node.start().await.unwrap();
    eventually("ours now", || async {
        look(&owner, &root, &path)
            .await
            .1
            .is_some_and(|(data, session)| data == b"fresh" && Some(session) == owner.session_id())
    })
    .await;
    // Persistent nodes are simply adopted, with our data.
    let kept = format!("{root}/config");
    owner.create().for_path(&kept, b"old").await.unwrap();
    let config = PersistentNode::builder(owner.clone(), &kept, CreateMode::Persistent, b"new")
        .build()
        .unwrap();
    config.start().await.unwrap();
    eventually("adopted with our data", || async {
        look(&owner, &root, &kept)
            .await
            .1
            .is_some_and(|(data, _)| data == b"new")
    })
    .await;
    config.close().await.unwrap();
    node.close().await.unwrap();

    assert!(matches!(
        PersistentNode::builder(
            owner.clone(),
            &path,
            CreateMode::Ephemeral,
            vec![0; 2 << 20]
        )
        .build(),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        PersistentNode::builder(owner.clone(), &path, CreateMode::PersistentWithTtl, b"").build(),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        PersistentNode::builder(owner, &path, CreateMode::Ephemeral, b"")
            .with_ttl(Duration::from_secs(1))
            .build(),
        Err(Error::InvalidArgument(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ttl_node_lives_while_touched_and_goes_after() {
    let server = TestingServer::start().await.unwrap();
    let path = format!("{}/worker", unique_root("ttl-node"));
    let c = client(&server.connect_string()).await;
    let ttl = Duration::from_millis(600);
    let node = PersistentTtlNode::new(c.clone(), &path, ttl, b"busy").unwrap();
    node.start().await.unwrap();
    tokio::time::timeout(Timing::new().wait(), node.initialized())
        .await
        .expect("created in time")
        .unwrap();
    eventually("touched", || async {
        c.check_exists()
            .for_path(&format!("{path}/touch"))
            .await
            .unwrap()
            .is_some()
    })
    .await;
    // Alive for several TTLs while touched: watch the touch node change three times.
    for _ in 0..3 {
        let (_, _, watcher) = c
            .get_data()
            .watched()
            .for_path(&format!("{path}/touch"))
            .await
            .unwrap();
        tokio::time::timeout(Timing::new().wait(), watcher.changed())
            .await
            .unwrap();
        assert!(c.check_exists().for_path(&path).await.unwrap().is_some());
    }
    node.close().await.unwrap();
    eventually("gone after the TTL", || async {
        c.check_exists().for_path(&path).await.unwrap().is_none()
    })
    .await;
}
