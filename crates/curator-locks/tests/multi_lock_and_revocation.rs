//! `InterProcessMultiLock` and revocation against a real ZooKeeper server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use curator_locks::{InterProcessMultiLock, InterProcessMutex, Revoker};
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit as testkit;

#[tokio::test]
async fn a_multi_lock_takes_all_or_nothing() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("multi-lock");
    let (a, b) = (format!("{root}/a"), format!("{root}/b"));
    let mine = testkit::client(&server.connect_string()).await;
    let other = testkit::client(&server.connect_string()).await;
    let multi = InterProcessMultiLock::new(vec![
        InterProcessMutex::builder(mine.clone(), &a)
            .build()
            .unwrap(),
        InterProcessMutex::builder(mine.clone(), &b)
            .build()
            .unwrap(),
    ]);
    let their_b = InterProcessMutex::builder(other.clone(), &b)
        .build()
        .unwrap();
    let their_a = InterProcessMutex::builder(other.clone(), &a)
        .build()
        .unwrap();

    let held_b = their_b.acquire().await.unwrap();
    assert!(
        multi
            .acquire_timeout(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
    // Nothing stays held: `a` is free for someone else at once.
    let probe = their_a
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap()
        .expect("a was released");
    probe.release().await.unwrap();
    held_b.release().await.unwrap();

    let both = multi
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap()
        .expect("both free");
    assert!(
        their_a
            .acquire_timeout(Duration::from_millis(200))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        their_b
            .acquire_timeout(Duration::from_millis(200))
            .await
            .unwrap()
            .is_none()
    );
    both.release().await.unwrap();
    assert!(
        their_a
            .acquire_timeout(Timing::new().wait())
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_lock_whose_session_ends_frees_every_lock_and_its_late_release_harms_no_one() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("multi-lock-expiry");
    let paths = [format!("{root}/a"), format!("{root}/b")];
    let first_client = testkit::client(&server.connect_string()).await;
    let second_client = testkit::client(&server.connect_string()).await;
    let multi = |client: &curator_framework::CuratorFramework| {
        InterProcessMultiLock::new(
            paths
                .iter()
                .map(|p| {
                    InterProcessMutex::builder(client.clone(), p)
                        .build()
                        .unwrap()
                })
                .collect(),
        )
    };
    let (first, second) = (multi(&first_client), multi(&second_client));
    let held = first.acquire().await.unwrap();
    assert!(
        second
            .acquire_timeout(Duration::from_millis(200))
            .await
            .unwrap()
            .is_none()
    );
    // The holder's session ends: both of its lock nodes go, and the other takes both.
    first_client.inject_session_expiration().await.unwrap();
    let theirs = second
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap()
        .expect("both locks free once the holder's session ended");
    // The old holder's release comes late: it deletes nothing of the new holder's.
    held.release().await.unwrap();
    let probe = InterProcessMutex::builder(first_client.clone(), &paths[0])
        .build()
        .unwrap();
    assert!(
        probe
            .acquire_timeout(Duration::from_millis(200))
            .await
            .unwrap()
            .is_none(),
        "the new holder still holds a"
    );
    theirs.release().await.unwrap();
    assert!(
        first
            .acquire_timeout(Timing::new().wait())
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn a_revocation_request_reaches_the_holder() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("revocation");
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let holder = InterProcessMutex::builder(testkit::client(&server.connect_string()).await, &path)
        .make_revocable(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    let guard = holder.acquire().await.unwrap();

    let other_client = testkit::client(&server.connect_string()).await;
    let other = InterProcessMutex::builder(other_client.clone(), &path)
        .build()
        .unwrap();
    let holder_node = other.participant_nodes().await.unwrap()[0].clone();
    assert_eq!(holder_node, guard.node_path());
    Revoker::attempt_revoke(&other_client, &holder_node)
        .await
        .unwrap();

    tokio::time::timeout(Timing::new().wait(), guard.revocation_requested())
        .await
        .expect("the holder hears");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // The holder complies; the other side gets the lock.
    guard.release().await.unwrap();
    assert!(
        other
            .acquire_timeout(Timing::new().wait())
            .await
            .unwrap()
            .is_some()
    );
    // Revoking a node that is gone is not an error.
    Revoker::attempt_revoke(&other_client, &holder_node)
        .await
        .unwrap();
}
