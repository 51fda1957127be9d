//! Requests reach the server in the order their operations were created: under a fresh
//! namespace (whose nodes the first request has to create) and while disconnected (the requests
//! wait and go out, in order, when the connection returns).

mod support;

use std::future::IntoFuture;

use curator_framework::ops::OpFuture;
use curator_framework::{ConnectionState, CreateMode, CuratorFramework, paths};
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};

const N: usize = 30;

/// `N` sequential creates under `parent`, created in order (each future made, none awaited).
fn creates(client: &CuratorFramework, parent: &str) -> Vec<OpFuture<String>> {
    (0..N)
        .map(|i| {
            client
                .create()
                .with_mode(CreateMode::PersistentSequential)
                .for_path(&format!("{parent}/n-"), format!("{i}"))
                .into_future()
        })
        .collect()
}

/// Awaits `futures` last to first, then checks the server numbered the nodes in creation order.
async fn assert_created_in_order(client: &CuratorFramework, futures: Vec<OpFuture<String>>) {
    let mut created = Vec::new();
    for future in futures.into_iter().rev() {
        created.push(future.await.expect("the create succeeds"));
    }
    created.reverse();
    let sequences: Vec<i64> = created
        .iter()
        .map(|p| paths::sequence(p).unwrap())
        .collect();
    let mut sorted = sequences.clone();
    sorted.sort_unstable();
    assert_eq!(
        sequences, sorted,
        "the server saw another order: {created:?}"
    );
    for (i, path) in created.iter().enumerate() {
        assert_eq!(
            client.get_data().for_path(path).await.unwrap().0,
            format!("{i}").into_bytes(),
            "{path} holds another operation's data"
        );
    }
}

#[tokio::test]
async fn under_a_fresh_namespace_the_first_requests_keep_their_order() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let namespace = unique_root("order-ns")
        .trim_start_matches('/')
        .replace('/', "-");
    let scoped = client.using_namespace(&namespace).unwrap();
    // The namespace node does not exist: the first operation's request must wait behind its
    // creation, and every later one behind that.
    assert!(
        client
            .check_exists()
            .for_path(&format!("/{namespace}"))
            .await
            .unwrap()
            .is_none()
    );
    let futures = creates(&scoped, "");
    assert_created_in_order(&scoped, futures).await;
}

#[tokio::test]
async fn while_disconnected_requests_wait_and_go_out_in_order() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    // The requests wait for the connection up to the connection timeout: longer than the cut.
    let client = support::started(
        support::builder(&proxy.connect_string()).connection_timeout(Timing::new().wait()),
    )
    .await;
    let root = support::create_root(&client, "order-disconnected").await;
    let namespace = unique_root("order-ns-cut")
        .trim_start_matches('/')
        .replace('/', "-");
    let scoped = client.using_namespace(&namespace).unwrap();
    let mut states = client.connection_state_stream();

    proxy.pause();
    support::expect_states(&mut states, &[ConnectionState::Suspended]).await;
    assert!(!client.is_connected());
    // Made while disconnected, alternating between a plain path and a fresh namespace.
    let plain = creates(&client, &root);
    let scoped_futures = creates(&scoped, "");
    proxy.resume();
    support::expect_states(&mut states, &[ConnectionState::Reconnected]).await;

    assert_created_in_order(&client, plain).await;
    assert_created_in_order(&scoped, scoped_futures).await;
}
