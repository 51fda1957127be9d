//! `TestingCluster`: a real three-member ensemble.

mod common;

use std::time::Duration;

use curator_session::open_acl;
use curator_session::proto::{CreateMode, ErrorCode};
use curator_test::{Error, TestingCluster, Timing, four_letter_word, unique_root};

#[tokio::test]
async fn the_ensemble_accepts_writes_after_its_leader_is_killed() {
    let mut cluster = TestingCluster::start(3).await.unwrap();
    assert_eq!(cluster.len(), 3);
    assert_eq!(cluster.connect_string().split(',').count(), 3);
    let leader = cluster.await_leader().await.unwrap();
    assert_eq!(cluster.leader().await, Some(leader));

    let client = common::connect(
        &cluster.connect_string(),
        Timing::new().scale(Duration::from_secs(20)),
    )
    .await;
    let root = unique_root("cluster");
    common::mkdirs(&client, &root).await;
    client
        .create(
            &format!("{root}/before"),
            b"1",
            open_acl(),
            CreateMode::Persistent,
            None,
        )
        .await
        .unwrap();

    cluster.kill(leader).unwrap();
    assert!(!cluster.is_running(leader));
    let next = cluster.await_leader().await.unwrap();
    assert_ne!(next, leader);

    let after = format!("{root}/after");
    common::retry(|| async {
        match client
            .create(&after, b"2", open_acl(), CreateMode::Persistent, None)
            .await
        {
            // A create whose reply was lost to the fail-over may have been applied.
            Err(curator_session::Error::Server(ErrorCode::NodeExists)) => Ok(()),
            other => other.map(|_| ()),
        }
    })
    .await;
    let (data, _) = common::retry(|| client.get_data(&format!("{root}/before"))).await;
    assert_eq!(data, b"1");

    // The old leader rejoins as a follower and has every write.
    cluster.restart(leader).await.unwrap();
    let member = common::connect(
        &cluster.member_connect_string(leader),
        Timing::new().session_timeout(),
    )
    .await;
    common::retry(|| member.sync(&root)).await;
    let (data, _) = common::retry(|| member.get_data(&after)).await;
    assert_eq!(data, b"2");
    let answer = four_letter_word(
        &cluster.member_connect_string(leader),
        "srvr",
        Timing::new().wait(),
    )
    .await
    .unwrap();
    assert!(answer.contains("Mode: follower"), "{answer}");
}

#[tokio::test]
async fn bad_member_indexes_are_typed_errors() {
    assert!(matches!(
        TestingCluster::start(0).await,
        Err(Error::InvalidArgument(_))
    ));
}
