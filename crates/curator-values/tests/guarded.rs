//! Guarded writes against a real server, with holds made by hand on ephemeral nodes: a write
//! lands while the hold's node exists on the hold's session, and is refused with nothing
//! written when the node was deleted by someone else, when the session that made it ended
//! (even if the same path exists again), or when the hold was signalled lost.

use curator_framework::recipe::Hold;
use curator_framework::{CreateMode, CuratorFramework, Error};
use curator_test::{TestingServer, unique_root};
use curator_testkit as testkit;
use curator_values::Guarded;
use tokio::sync::watch;

/// An ephemeral node of `client` standing for a lock node, and a hold on it that is never
/// signalled lost unless the test says so (a holder that has not noticed anything: the server's
/// check is all that stands). Every hold learns of connection trouble through its client's
/// count of error states, so this one watches `quiet`'s, a client nothing happens to.
async fn unaware_hold(
    client: &CuratorFramework,
    quiet: &CuratorFramework,
    node: &str,
) -> (Hold, watch::Sender<bool>) {
    let (_, stat) = client
        .create()
        .creating_parents_if_needed()
        .with_mode(CreateMode::Ephemeral)
        .for_path(node, b"")
        .with_stat()
        .await
        .unwrap();
    let (signal, lost) = watch::channel(false);
    let hold = Hold::new(quiet, node.to_owned(), stat.czxid)
        .on_session(stat.ephemeral_owner)
        .ended_by(lost);
    (hold, signal)
}

async fn data(client: &CuratorFramework, path: &str) -> Vec<u8> {
    client.get_data().for_path(path).await.unwrap().0
}

async fn setup(name: &str) -> (TestingServer, CuratorFramework, CuratorFramework, String) {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let other = testkit::client(&server.connect_string()).await;
    let root = unique_root(name);
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/target"), b"initial")
        .await
        .unwrap();
    (server, client, other, root)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_land_while_the_hold_stands() {
    let (_server, client, other, root) = setup("guarded-ok").await;
    let (hold, _signal) = unaware_hold(&client, &other, &format!("{root}/lock-0000000001")).await;
    let guarded = Guarded::new(client.clone(), &hold);
    let target = format!("{root}/target");

    let stat = guarded.set_data(&target, b"one").await.unwrap();
    assert_eq!(stat.version, 1);
    assert_eq!(data(&other, &target).await, b"one");
    assert_eq!(
        guarded.set_data_with_version(&target, b"stale", 0).await,
        Err(Error::BadVersion)
    );
    let made = guarded
        .create_with_mode(
            &format!("{root}/log-"),
            b"entry",
            CreateMode::PersistentSequential,
        )
        .await
        .unwrap();
    assert!(made.starts_with(&format!("{root}/log-")), "{made}");
    guarded.delete(&made).await.unwrap();
    assert_eq!(guarded.delete(&made).await, Err(Error::NoNode));

    // A transaction: the check is not among the results, and step indices are the caller's.
    let results = guarded
        .transaction()
        .set_data(&target, b"two")
        .create(&format!("{root}/made"), b"")
        .commit()
        .await
        .unwrap();
    assert_eq!(results.len(), 2);
    let error = guarded
        .transaction()
        .set_data(&target, b"three")
        .create(&format!("{root}/made"), b"")
        .commit()
        .await
        .unwrap_err();
    match error {
        Error::Transaction { index, cause } => assert_eq!((index, *cause), (1, Error::NodeExists)),
        other => panic!("expected a transaction error, got {other:?}"),
    }
    assert_eq!(data(&other, &target).await, b"two");
    client.close().await.unwrap();
    other.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_deleted_by_someone_else_refuses_the_write() {
    let (_server, client, other, root) = setup("guarded-deleted").await;
    let node = format!("{root}/lock-0000000001");
    let (hold, _signal) = unaware_hold(&client, &other, &node).await;
    other.delete().for_path(&node).await.unwrap();
    let target = format!("{root}/target");
    let guarded = Guarded::new(client.clone(), &hold);
    assert_eq!(
        guarded.set_data(&target, b"late").await,
        Err(Error::LockLost { node: node.clone() })
    );
    assert_eq!(
        guarded.create(&format!("{root}/late"), b"").await,
        Err(Error::LockLost { node: node.clone() })
    );
    assert_eq!(
        guarded.transaction().delete(&target).commit().await,
        Err(Error::LockLost { node })
    );
    assert_eq!(data(&other, &target).await, b"initial");
    assert_eq!(
        other.check_exists().for_path(&format!("{root}/late")).await,
        Ok(None)
    );
    client.close().await.unwrap();
    other.close().await.unwrap();
}

/// The holder's session ends; its node path is even made again on the new session (as a lock
/// parent removed and made again could). The write goes on the hold's session or not at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_of_an_ended_session_refuses_the_write_even_if_its_path_is_back() {
    let (_server, client, other, root) = setup("guarded-session").await;
    let node = format!("{root}/lock-0000000001");
    let (hold, _signal) = unaware_hold(&client, &other, &node).await;
    let hold = hold.for_leadership();
    client.inject_session_expiration().await.unwrap();
    client
        .create()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&node, b"")
        .await
        .unwrap();
    let target = format!("{root}/target");
    assert_eq!(
        Guarded::new(client.clone(), &hold)
            .set_data(&target, b"late")
            .await,
        Err(Error::NotLeader { node })
    );
    assert_eq!(data(&other, &target).await, b"initial");
    client.close().await.unwrap();
    other.close().await.unwrap();
}

/// A hold signalled lost refuses without asking the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_signalled_lost_refuses_the_write() {
    let (_server, client, other, root) = setup("guarded-signalled").await;
    let node = format!("{root}/lock-0000000001");
    let (hold, signal) = unaware_hold(&client, &other, &node).await;
    let target = format!("{root}/target");
    let guarded = Guarded::new(client.clone(), &hold);
    guarded.set_data(&target, b"one").await.unwrap();
    signal.send_replace(true);
    let operations = client.metrics().operations;
    assert_eq!(
        guarded.set_data(&target, b"two").await,
        Err(Error::LockLost { node: node.clone() })
    );
    assert_eq!(client.metrics().operations, operations, "nothing was sent");
    assert_eq!(data(&other, &target).await, b"one");

    // A hold made by `Hold::new` is lost once the connection is.
    let hold = Hold::new(&client, node.clone(), 1);
    client.inject_session_expiration().await.unwrap();
    assert_eq!(
        Guarded::new(client.clone(), &hold)
            .set_data(&target, b"three")
            .await,
        Err(Error::LockLost { node })
    );
    assert_eq!(data(&other, &target).await, b"one");
    client.close().await.unwrap();
    other.close().await.unwrap();
}
