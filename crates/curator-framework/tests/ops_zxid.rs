//! `last_zxid()`: the highest reply zxid a client has seen, at least each write's own zxid once
//! the write returns, per client, never decreasing across reconnects and new sessions.

mod support;

use curator_framework::ConnectionState::{Connected, Lost, Reconnected, Suspended};
use curator_framework::ops::transaction::TransactionResult;
use curator_test::{FaultProxy, TestingServer};

#[tokio::test]
async fn every_write_leaves_last_zxid_at_least_its_own_zxid() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let other = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "zxid-writes").await;
    let mut seen = client.last_zxid();
    assert!(seen > 0, "the root's create was answered");

    for round in 0..20 {
        let path = format!("{root}/n{round}");
        let (_, created) = client
            .create()
            .for_path(&path, b"a")
            .with_stat()
            .await
            .unwrap();
        assert!(client.last_zxid() >= created.czxid);
        assert!(created.czxid > seen, "a write moves history forward");
        let changed = client.set_data().for_path(&path, b"b").await.unwrap();
        assert!(client.last_zxid() >= changed.mzxid);
        assert!(changed.mzxid > created.czxid);
        // Another client's write: this client's reads see it, and with it its zxid.
        let theirs = other.set_data().for_path(&path, b"c").await.unwrap();
        let (_, stat) = client.get_data().for_path(&path).await.unwrap();
        assert_eq!(stat.mzxid, theirs.mzxid);
        assert!(client.last_zxid() >= theirs.mzxid);
        let before_delete = client.last_zxid();
        client.delete().for_path(&path).await.unwrap();
        let after_delete = client.last_zxid();
        assert!(
            after_delete > before_delete,
            "a delete's reply carries its own, newer zxid"
        );
        seen = after_delete;
    }

    let results = client
        .transaction()
        .create(&format!("{root}/t"), b"1")
        .set_data(&format!("{root}/t"), b"2")
        .commit()
        .await
        .unwrap();
    let Some(TransactionResult::SetData { stat }) = results.last() else {
        panic!("a set_data result last: {results:?}");
    };
    assert!(client.last_zxid() >= stat.mzxid);
    // Per client: the other client saw only its own writes and reads.
    assert!(other.last_zxid() < client.last_zxid());
}

#[tokio::test]
async fn last_zxid_survives_a_reconnect_and_a_new_session() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = support::builder(&proxy.connect_string()).build().unwrap();
    assert_eq!(client.last_zxid(), 0, "nothing seen before the first reply");
    let mut states = client.connection_state_stream();
    client.start().await.unwrap();
    support::expect_states(&mut states, &[Connected]).await;
    let root = support::create_root(&client, "zxid-sessions").await;
    let written = client.last_zxid();
    assert!(written > 0);

    proxy.drop_connections();
    support::expect_states(&mut states, &[Suspended, Reconnected]).await;
    assert!(client.last_zxid() >= written, "kept across a reconnect");

    let session = client.session_id();
    client.inject_session_expiration().await.unwrap();
    assert_ne!(client.session_id(), session);
    support::expect_states(&mut states, &[Suspended, Lost, Reconnected]).await;
    assert!(client.last_zxid() >= written, "kept across a new session");
    let stat = client.set_data().for_path(&root, b"x").await.unwrap();
    assert!(client.last_zxid() >= stat.mzxid);
    assert!(stat.mzxid > written);
}

#[tokio::test]
async fn a_sync_of_a_missing_path_goes_through_and_moves_last_zxid_on() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let other = support::connected(&server.connect_string()).await;
    let root = support::create_root(&other, "zxid-sync").await;
    let written = other.last_zxid();
    client
        .sync()
        .for_path(&format!("{root}/missing/too"))
        .await
        .unwrap();
    assert!(
        client.last_zxid() >= written,
        "the sync's reply carries the server's zxid"
    );
    let namespaced = client
        .using_namespace("zxid-sync-missing-namespace")
        .unwrap();
    namespaced.sync().for_path("/").await.unwrap();
}
