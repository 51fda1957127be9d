//! `InterProcessMutex::try_acquire` against a real ZooKeeper server.

use curator_locks::InterProcessMutex;
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit as testkit;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_acquire_refuses_at_once_and_leaves_nothing_behind() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("mutex-try");
    let holder_client = testkit::client(&server.connect_string()).await;
    let other_client = testkit::client(&server.connect_string()).await;
    let holder = InterProcessMutex::builder(holder_client.clone(), &path)
        .build()
        .unwrap();
    let other = InterProcessMutex::builder(other_client.clone(), &path)
        .build()
        .unwrap();

    // Free: a guard.
    let guard = holder
        .try_acquire()
        .await
        .unwrap()
        .expect("the lock is free");
    let held_node = guard.node_path().to_owned();
    // Reentrant for the holding handle.
    let again = holder.try_acquire().await.unwrap().expect("reentrant");
    again.release().await.unwrap();

    // Held by another session: None, without waiting, and no node of ours is left.
    for _ in 0..5 {
        let attempt = tokio::time::timeout(Timing::new().wait(), other.try_acquire())
            .await
            .expect("try_acquire does not wait for the holder")
            .unwrap();
        assert!(attempt.is_none());
        let children = testkit::children(&other_client, &path).await;
        assert_eq!(
            children,
            vec![curator_framework::paths::node_name(&held_node).to_owned()],
            "a refused try_acquire left a node behind"
        );
    }
    assert!(!other.is_acquired_in_this_process());

    // Once released, the other handle gets it.
    guard.release().await.unwrap();
    let taken = other.try_acquire().await.unwrap().expect("free again");
    assert_eq!(
        other.participant_nodes().await.unwrap(),
        vec![taken.node_path().to_owned()]
    );
    taken.release().await.unwrap();
    holder_client.close().await.unwrap();
    other_client.close().await.unwrap();
}
