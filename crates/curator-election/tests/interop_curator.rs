//! Rust and Java (Apache Curator 5.4) participants in one election: exactly one leader, and each
//! lists the other.

use std::path::Path;
use std::time::Duration;

use curator_election::{LeaderLatch, LeaderObserver, LeaderSelector, Participant};
use curator_test::{CuratorProgram, JavaPeer, TestingServer, Timing, unique_root};
use curator_testkit as testkit;
use futures::StreamExt;
use tokio::time::Instant;

fn java(connect: &str, path: &str, id: &str, kind: &str) -> JavaPeer {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/ElectionPeer.java");
    let mut peer = CuratorProgram::compile(&source)
        .unwrap()
        .start(&[connect, path, id, kind])
        .unwrap();
    assert_eq!(peer.read_line().unwrap(), "ready");
    peer
}

async fn ask(peer: &mut JavaPeer, line: &str) -> String {
    tokio::task::block_in_place(|| peer.ask(line)).unwrap()
}

/// The observer's next change, as (id, epoch).
async fn next_leader(
    changes: &mut (impl futures::Stream<Item = Option<Participant>> + Unpin),
) -> Option<(String, i64)> {
    tokio::time::timeout(Timing::new().wait(), changes.next())
        .await
        .expect("the observer delivers in time")
        .expect("the observer's stream goes on")
        .map(|leader| (leader.id, leader.epoch))
}

/// Polls the Java peer until it answers `expected` to `question`.
async fn java_says(peer: &mut JavaPeer, question: &str, expected: &str) {
    let end = Instant::now() + Timing::new().wait();
    loop {
        let answer = ask(peer, question).await;
        if answer == expected {
            return;
        }
        assert!(
            Instant::now() < end,
            "Java answered {answer:?} to {question:?}, not {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_and_java_leader_latches_elect_one_leader() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("interop-latch");
    let mut java =
        tokio::task::block_in_place(|| java(&server.connect_string(), &path, "java-1", "latch"));
    java_says(&mut java, "leading", "yes").await;
    // A Rust observer of the Java leader: its id, and an epoch.
    let observer =
        LeaderObserver::new(testkit::client(&server.connect_string()).await, &path).unwrap();
    let mut changes = observer.stream();
    observer.start().await.unwrap();
    let (java_id, java_epoch) = next_leader(&mut changes).await.unwrap();
    assert_eq!(java_id, "java-1");
    let rust = LeaderLatch::builder(
        testkit::client(&server.connect_string()).await,
        &path,
        "rust-1",
    )
    .build()
    .unwrap();
    rust.start().await.unwrap();
    java_says(
        &mut java,
        "participants",
        "participants java-1:true,rust-1:false",
    )
    .await;
    let seen: Vec<(String, bool)> = rust
        .participants()
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.id, p.is_leader))
        .collect();
    assert_eq!(
        seen,
        vec![("java-1".to_owned(), true), ("rust-1".to_owned(), false)]
    );
    assert!(!rust.has_leadership());

    assert_eq!(ask(&mut java, "release").await, "released");
    tokio::time::timeout(Timing::new().wait(), rust.await_leadership())
        .await
        .expect("leads in time")
        .unwrap();
    let rust_epoch = rust.leader_epoch().unwrap();
    assert!(rust_epoch > java_epoch);
    assert_eq!(
        next_leader(&mut changes).await,
        Some(("rust-1".to_owned(), rust_epoch))
    );
    rust.close().await.unwrap();
    observer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_and_java_leader_selectors_take_turns() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("interop-selector");
    let mut java =
        tokio::task::block_in_place(|| java(&server.connect_string(), &path, "java-1", "selector"));
    java_says(&mut java, "leading", "yes").await;
    let observer =
        LeaderObserver::new(testkit::client(&server.connect_string()).await, &path).unwrap();
    let mut changes = observer.stream();
    observer.start().await.unwrap();
    let (java_id, java_epoch) = next_leader(&mut changes).await.unwrap();
    assert_eq!(java_id, "java-1");
    let rust = LeaderSelector::builder(
        testkit::client(&server.connect_string()).await,
        &path,
        "rust-1",
        |context| async move {
            context.lost().await;
        },
    )
    .build()
    .unwrap();
    rust.start().await.unwrap();
    java_says(
        &mut java,
        "participants",
        "participants java-1:true,rust-1:false",
    )
    .await;
    let seen = || async {
        rust.participants()
            .await
            .unwrap()
            .into_iter()
            .map(|p| (p.id, p.is_leader))
            .collect::<Vec<(String, bool)>>()
    };
    curator_test::eventually("Rust sees both participants", || async {
        seen().await.len() == 2
    })
    .await;
    assert_eq!(
        seen().await,
        vec![("java-1".to_owned(), true), ("rust-1".to_owned(), false)]
    );
    assert!(!rust.has_leadership());

    assert_eq!(ask(&mut java, "release").await, "released");
    curator_test::eventually("the Rust selector takes over", || async {
        rust.has_leadership()
    })
    .await;
    java_says(&mut java, "leading", "no").await;
    let rust_epoch = rust.leader_epoch().unwrap();
    assert!(rust_epoch > java_epoch);
    assert_eq!(
        next_leader(&mut changes).await,
        Some(("rust-1".to_owned(), rust_epoch))
    );
    rust.close().await.unwrap();
    observer.close().await.unwrap();
}
