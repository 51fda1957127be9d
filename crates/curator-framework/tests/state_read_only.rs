//! Read-only mode: a client that allows it reads from an ensemble member that lost its quorum,
//! and reports `ReadOnly`.

mod support;

use std::time::Duration;

use curator_framework::{ConnectionState, Error};
use curator_test::{TestingCluster, Timing, four_letter_word, unique_root};

#[tokio::test]
async fn a_member_without_quorum_serves_reads_to_a_read_only_client() {
    let mut cluster = TestingCluster::start_read_only_capable(3).await.unwrap();
    let writer = support::connected(&cluster.connect_string()).await;
    let root = unique_root("read-only");
    writer
        .create()
        .creating_parents_if_needed()
        .for_path(&root, b"before")
        .await
        .unwrap();
    writer.close().await.unwrap();

    cluster.kill(1).unwrap();
    cluster.kill(2).unwrap();
    let lone = cluster.member_connect_string(0);
    support::eventually_within("member 0 turns read-only", Timing::new().forever(), || {
        let lone = lone.clone();
        async move {
            four_letter_word(&lone, "isro", Duration::from_secs(2))
                .await
                .is_ok_and(|a| a == "ro")
        }
    })
    .await;

    let client = support::builder(&lone)
        .can_be_read_only(true)
        .build()
        .unwrap();
    let mut states = client.connection_state_stream();
    client.start().await.unwrap();
    support::expect_states(&mut states, &[ConnectionState::ReadOnly]).await;
    assert!(client.is_connected());
    assert_eq!(
        client.get_data().for_path(&root).await.unwrap().0,
        b"before"
    );
    assert_eq!(
        client
            .create()
            .for_path(&format!("{root}/write"), b"")
            .await,
        Err(Error::NotReadOnly)
    );
}
