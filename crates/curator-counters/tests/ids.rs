//! The sequential id generator against a real ZooKeeper.

use curator_counters::SequentialIdGenerator;
use curator_framework::Error;
use curator_test::{TestingServer, unique_root};
use curator_testkit::client;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_are_unique_increasing_and_leave_no_node() {
    let server = TestingServer::start().await.unwrap();
    let parent = format!("{}/type2", unique_root("ids"));
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let generator = SequentialIdGenerator::new(
            client(&server.connect_string()).await,
            &parent,
            "type2-job-",
        )
        .unwrap();
        generator.start().await.unwrap();
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            for _ in 0..10 {
                got.push(generator.next_id().await.unwrap());
            }
            got.extend(generator.next_ids(15).await.unwrap());
            generator.close().await.unwrap();
            got
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        let got = task.await.unwrap();
        assert!(
            got.windows(2).all(|w| w[0].id < w[1].id),
            "increasing per generator"
        );
        for id in &got {
            assert_eq!(id.name, format!("type2-job-{:010}", id.id));
        }
        all.extend(got.into_iter().map(|id| id.id));
    }
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), count, "unique across generators");
    let c = client(&server.connect_string()).await;
    let (children, stat) = c.get_children().for_path(&parent).await.unwrap();
    assert!(
        children.is_empty(),
        "every id node was deleted: {children:?}"
    );
    // A plain persistent parent: a container (owner i64::MIN) would be removed once empty, and
    // a new one would count from 0 again.
    assert_eq!(stat.ephemeral_owner, 0);
    assert!(matches!(
        SequentialIdGenerator::new(c.clone(), &parent, "a/b"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        SequentialIdGenerator::new(c, "no-slash", "x-"),
        Err(Error::InvalidPath { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_stay_unique_and_increasing_across_a_server_restart() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let parent = format!("{}/jobs", unique_root("ids-restart"));
    let generator =
        SequentialIdGenerator::new(client(&server.connect_string()).await, &parent, "job-")
            .unwrap();
    generator.start().await.unwrap();
    let (first_tx, mut first_rx) = tokio::sync::mpsc::unbounded_channel();
    let producing = tokio::spawn(async move {
        let mut got = Vec::new();
        for _ in 0..60 {
            let id = generator.next_id().await.unwrap();
            let _ = first_tx.send(id.id);
            got.push(id.id);
        }
        generator.close().await.unwrap();
        got
    });
    // Restart once ids are flowing.
    for _ in 0..10 {
        first_rx.recv().await.unwrap();
    }
    server.restart().await.unwrap();
    let got = producing.await.unwrap();
    assert_eq!(got.len(), 60);
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "unique and increasing: {got:?}"
    );
}
