//! The recipe contract, as the locks keep it (with `curator_testkit::contract`'s helpers).
//! Locks are not long-lived recipes (no `start` or `close`, no listeners): what they hold is a
//! `Hold` (a lock guard, a semaphore lease, a time-boxed lease's grant), released by the guard
//! (now, or in the background on drop) or by the client's close, and their background work
//! (revocation watches, releases on drop) runs as the client's recipe tasks.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use curator_framework::Error;
use curator_framework::recipe::Hold;
use curator_locks::{
    InterProcessMultiLock, InterProcessMutex, InterProcessMutexBuilder, InterProcessReadWriteLock,
    InterProcessSemaphoreMutex, InterProcessSemaphoreMutexBuilder, InterProcessSemaphoreV2,
    InterProcessSemaphoreV2Builder, Lease, LeaseGrant, LockGuard, MaxLeases, MultiLockGuard,
    NonBlockingLease, Revoker,
};
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::contract;

#[test]
fn handles_guards_and_futures_are_send_and_sync() {
    contract::send_sync::<InterProcessMutex>();
    contract::send_sync::<InterProcessMutexBuilder>();
    contract::send_sync::<InterProcessReadWriteLock>();
    contract::send_sync::<InterProcessSemaphoreV2>();
    contract::send_sync::<InterProcessSemaphoreV2Builder>();
    contract::send_sync::<InterProcessSemaphoreMutex>();
    contract::send_sync::<InterProcessSemaphoreMutexBuilder>();
    contract::send_sync::<InterProcessMultiLock>();
    contract::send_sync::<LockGuard>();
    contract::send_sync::<Lease>();
    contract::send_sync::<MultiLockGuard>();
    contract::send_sync::<NonBlockingLease>();
    contract::send_sync::<LeaseGrant>();
    // Never called: the futures only have to type-check as `Send`.
    fn send<T: Send>(_: &T) {}
    let _futures = |mutex: InterProcessMutex,
                    guard: LockGuard,
                    semaphore: InterProcessSemaphoreV2,
                    lease: Lease,
                    multi: InterProcessMultiLock| {
        send(&mutex.acquire());
        send(&guard.release());
        send(&semaphore.acquire_many(2));
        send(&lease.release());
        send(&multi.acquire());
    };
}

#[tokio::test]
async fn construction_validates_the_path() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let bad = "no-leading-slash";
    assert!(matches!(
        InterProcessMutex::builder(client.clone(), bad).build(),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        InterProcessReadWriteLock::builder(client.clone(), bad).build(),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        InterProcessSemaphoreV2::builder(client.clone(), bad, MaxLeases::Fixed(1)).build(),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        InterProcessSemaphoreMutex::builder(client.clone(), bad).build(),
        Err(Error::InvalidPath { .. })
    ));
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_guard_is_a_hold_and_its_revocation_watch_is_a_recipe_task_until_released() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let path = unique_root("contract-guard");
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let mutex = InterProcessMutex::builder(client.clone(), &path)
        .make_revocable(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    let guard = mutex.acquire().await.unwrap();

    // The guard is the framework's hold: node, fencing token (the node's czxid), loss signal.
    contract::holds(&client, &guard).await;
    assert_eq!(client.metrics().recipe_tasks, 1, "the revocation watch");

    // A reentrant hold shares the node and the watch.
    let again = mutex.acquire().await.unwrap();
    assert_eq!(again.node_path(), guard.node_path());
    assert_eq!(client.metrics().recipe_tasks, 1);
    again.release().await.unwrap();

    Revoker::attempt_revoke(&client, guard.node_path())
        .await
        .unwrap();
    tokio::time::timeout(Timing::new().wait(), guard.revocation_requested())
        .await
        .expect("the holder hears");
    assert_eq!(asked.load(Ordering::SeqCst), 1);

    guard.release().await.unwrap();
    assert!(
        curator_testkit::children(&client, &path).await.is_empty(),
        "released and deleted"
    );
    assert_eq!(client.metrics().recipe_tasks, 0, "the watch ended");
    client.close().await.unwrap();
}

#[tokio::test]
async fn dropped_guards_and_leases_are_released_by_recipe_tasks_that_end() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("contract-drop");
    let (lock_path, semaphore_path) = (format!("{root}/lock"), format!("{root}/semaphore"));
    let mutex = InterProcessMutex::builder(client.clone(), &lock_path)
        .build()
        .unwrap();
    let semaphore =
        InterProcessSemaphoreV2::builder(client.clone(), &semaphore_path, MaxLeases::Fixed(2))
            .build()
            .unwrap();
    let guard = mutex.acquire().await.unwrap();
    let lease = semaphore.acquire().await.unwrap();
    let hold: &Hold = &lease;
    assert!(hold.node_path().starts_with(&semaphore_path));
    contract::holds(&client, &lease).await;
    drop(guard);
    drop(lease);
    curator_testkit::eventually("both nodes are deleted", || async {
        curator_testkit::children(&client, &lock_path)
            .await
            .is_empty()
            && curator_testkit::children(&client, &format!("{semaphore_path}/leases"))
                .await
                .is_empty()
    })
    .await;
    contract::no_recipe_tasks(&client).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_held_lock_is_released_by_the_clients_close_and_its_tasks_end() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("contract-close");
    let client = curator_testkit::client(&server.connect_string()).await;
    let mutex = InterProcessMutex::builder(client.clone(), &path)
        .make_revocable(|| {})
        .build()
        .unwrap();
    let guard = mutex.acquire().await.unwrap();
    let multi = InterProcessMultiLock::new(vec![
        InterProcessMutex::builder(client.clone(), &format!("{path}-a"))
            .make_revocable(|| {})
            .build()
            .unwrap(),
    ]);
    let multi_guard = multi.acquire().await.unwrap();
    let multi_holds: Vec<&Hold> = multi_guard.holds().collect();
    assert_eq!(multi_holds.len(), 1);
    assert!(
        multi_holds[0]
            .node_path()
            .starts_with(&format!("{path}-a/"))
    );
    assert_eq!(client.metrics().recipe_tasks, 2, "two revocation watches");

    client.close().await.unwrap();
    assert_eq!(
        client.metrics().recipe_tasks,
        0,
        "the revocation watches ended with the client"
    );
    // The session closed: the lock nodes are gone, and someone else takes the locks at once.
    let other = curator_testkit::client(&server.connect_string()).await;
    let theirs = InterProcessMutex::builder(other.clone(), &path)
        .build()
        .unwrap()
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap()
        .expect("free once the holder's client closed");
    assert_ne!(theirs.node_path(), guard.node_path());
    // Dropping the old guards afterwards starts nothing that outlives the closed client.
    drop(guard);
    drop(multi_guard);
    assert_eq!(client.metrics().recipe_tasks, 0);
    theirs.release().await.unwrap();
    other.close().await.unwrap();
}

#[tokio::test]
async fn a_lease_grant_is_a_hold_that_ends_at_its_deadline() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let path = unique_root("contract-lease");
    let lease = NonBlockingLease::new(client.clone(), &path, "me").unwrap();
    let short = Timing::new().scale(std::time::Duration::from_millis(300));
    let grant = lease
        .try_acquire(short)
        .await
        .unwrap()
        .expect("a free lease");
    // The grant is the framework's hold: the lease node, its winning write's zxid.
    let hold: &Hold = &grant;
    let stat = client
        .check_exists()
        .for_path(hold.node_path())
        .await
        .unwrap()
        .expect("the lease node exists");
    assert_eq!(hold.fencing_token(), stat.mzxid);
    assert_eq!(hold.deadline(), Some(grant.deadline()));
    assert!(!hold.is_lost());
    tokio::time::timeout(Timing::new().wait(), hold.lost())
        .await
        .expect("lost at the deadline");
    assert!(grant.is_lost());
    client.close().await.unwrap();
}
