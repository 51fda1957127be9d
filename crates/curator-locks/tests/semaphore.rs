//! `InterProcessSemaphoreV2` and `InterProcessSemaphoreMutex` against a real ZooKeeper server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use curator_framework::{Error, paths};
use curator_locks::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2, MaxLeases};
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit as testkit;

const SHORT: Duration = Duration::from_millis(300);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holders_never_exceed_the_leases_across_clients() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("semaphore-limit");
    let holders = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let client = testkit::client(&server.connect_string()).await;
        let (path, holders, most) = (path.clone(), Arc::clone(&holders), Arc::clone(&most));
        tasks.push(tokio::spawn(async move {
            let semaphore =
                InterProcessSemaphoreV2::builder(client.clone(), &path, MaxLeases::Fixed(2))
                    .build()
                    .unwrap();
            for _ in 0..5 {
                let lease = semaphore.acquire().await.unwrap();
                let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                assert!(now <= 2, "{now} holders of 2 leases");
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                holders.fetch_sub(1, Ordering::SeqCst);
                lease.release().await.unwrap();
            }
            client.close().await.unwrap();
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert!(most.load(Ordering::SeqCst) <= 2);
}

#[tokio::test]
async fn leases_timeouts_and_bad_input() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("semaphore-basics");
    let a = InterProcessSemaphoreV2::builder(
        testkit::client(&server.connect_string()).await,
        &path,
        MaxLeases::Fixed(2),
    )
    .build()
    .unwrap();
    let b = InterProcessSemaphoreV2::builder(
        testkit::client(&server.connect_string()).await,
        &path,
        MaxLeases::Fixed(2),
    )
    .build()
    .unwrap();
    let two = a.acquire_many(2).await.unwrap();
    assert_eq!(a.participant_nodes().await.unwrap().len(), 2);
    assert!(b.acquire_timeout(SHORT).await.unwrap().is_none());
    assert_eq!(
        a.participant_nodes().await.unwrap().len(),
        2,
        "a timed-out waiter leaves no lease"
    );
    drop(two);
    let both = b
        .acquire_many_timeout(2, Timing::new().wait())
        .await
        .unwrap()
        .expect("returned leases are free");
    assert_eq!(both.len(), 2);
    drop(both);

    let zero = InterProcessSemaphoreV2::builder(
        testkit::client(&server.connect_string()).await,
        &path,
        MaxLeases::Fixed(0),
    )
    .build();
    assert!(matches!(zero, Err(Error::InvalidArgument(_))));
    assert!(matches!(
        a.acquire_many(0).await,
        Err(Error::InvalidArgument(_))
    ));
}

#[tokio::test]
async fn a_holder_whose_session_expires_frees_its_lease() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("semaphore-expiry");
    let holder_client = testkit::client(&server.connect_string()).await;
    let holder =
        InterProcessSemaphoreV2::builder(holder_client.clone(), &path, MaxLeases::Fixed(1))
            .build()
            .unwrap();
    let waiter = InterProcessSemaphoreV2::builder(
        testkit::client(&server.connect_string()).await,
        &path,
        MaxLeases::Fixed(1),
    )
    .build()
    .unwrap();
    let lease = holder.acquire().await.unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await });
    holder_client.inject_session_expiration().await.unwrap();
    let theirs = tokio::time::timeout(Timing::new().wait(), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_ne!(theirs.node_path(), lease.node_path());
    assert_eq!(
        holder.participant_nodes().await.unwrap().len(),
        1,
        "only the waiter's lease remains"
    );
}

#[tokio::test]
async fn the_number_of_leases_can_come_from_a_shared_count_node() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("semaphore-count");
    let admin = testkit::client(&server.connect_string()).await;
    let count = format!("{path}-count");
    admin
        .create()
        .creating_parents_if_needed()
        .for_path(&count, 1i32.to_be_bytes())
        .await
        .unwrap();
    let semaphore = InterProcessSemaphoreV2::builder(
        testkit::client(&server.connect_string()).await,
        &path,
        MaxLeases::SharedCount(count.clone()),
    )
    .build()
    .unwrap();
    let first = semaphore.acquire().await.unwrap();
    let waiting = tokio::spawn({
        let semaphore = semaphore.clone();
        async move { semaphore.acquire().await }
    });
    // Raising the count lets the waiter in while the first lease is still out.
    admin
        .set_data()
        .for_path(&count, 2i32.to_be_bytes())
        .await
        .unwrap();
    let second = tokio::time::timeout(Timing::new().wait(), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(semaphore.participant_nodes().await.unwrap().len(), 2);
    drop((first, second));

    admin.set_data().for_path(&count, b"bad").await.unwrap();
    assert!(matches!(
        semaphore.acquire_timeout(SHORT).await,
        Err(Error::InvalidArgument(_))
    ));
}

#[tokio::test]
async fn a_semaphore_mutex_is_not_reentrant() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("semaphore-mutex");
    let mutex =
        InterProcessSemaphoreMutex::builder(testkit::client(&server.connect_string()).await, &path)
            .build()
            .unwrap();
    let lease = mutex.acquire().await.unwrap();
    assert!(
        mutex.acquire_timeout(SHORT).await.unwrap().is_none(),
        "a second acquire waits, even from the same handle"
    );
    lease.release().await.unwrap();
    assert!(
        mutex
            .acquire_timeout(Timing::new().wait())
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn a_lease_reports_loss_carries_a_fencing_token_and_dropped_acquisitions_leave_nothing() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("semaphore-lease");
    let holder_client = testkit::client(&server.connect_string()).await;
    let semaphore =
        InterProcessSemaphoreV2::builder(holder_client.clone(), &path, MaxLeases::Fixed(1))
            .build()
            .unwrap();
    let lease = semaphore.acquire().await.unwrap();
    let stat = holder_client
        .check_exists()
        .for_path(lease.node_path())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lease.fencing_token(), stat.czxid);

    // Acquisitions dropped at any point (waiting for the guard, or for room) leave no node.
    let contender = InterProcessSemaphoreV2::builder(
        testkit::client(&server.connect_string()).await,
        &path,
        MaxLeases::Fixed(1),
    )
    .build()
    .unwrap();
    for delay_us in [0u64, 100, 1000, 5000, 20000, 50000] {
        let _ = tokio::time::timeout(Duration::from_micros(delay_us), contender.acquire()).await;
    }
    curator_test::eventually(
        "the dropped acquisitions' lease nodes are deleted",
        || async { semaphore.participant_nodes().await.unwrap().len() == 1 },
    )
    .await;

    assert!(!lease.is_lost());
    holder_client.inject_session_expiration().await.unwrap();
    tokio::time::timeout(Timing::new().wait(), lease.lost())
        .await
        .expect("the holder is told");
    assert!(lease.is_lost());
}

#[tokio::test]
async fn a_waiter_gets_its_lease_after_a_server_restart() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let path = unique_root("semaphore-restart");
    let holder = InterProcessSemaphoreV2::builder(
        testkit::client(&server.connect_string()).await,
        &path,
        MaxLeases::Fixed(1),
    )
    .build()
    .unwrap();
    let waiter = InterProcessSemaphoreV2::builder(
        testkit::client(&server.connect_string()).await,
        &path,
        MaxLeases::Fixed(1),
    )
    .build()
    .unwrap();
    let lease = holder.acquire().await.unwrap();
    let waiting = tokio::spawn({
        let waiter = waiter.clone();
        async move { waiter.acquire().await }
    });
    curator_test::eventually("the waiter's lease node exists", || async {
        holder
            .participant_nodes()
            .await
            .map(|p| p.len() == 2)
            .unwrap_or(false)
    })
    .await;
    server.restart().await.unwrap();
    lease.release().await.unwrap();
    let theirs = tokio::time::timeout(Timing::new().wait(), waiting)
        .await
        .expect("the watch survived")
        .unwrap()
        .unwrap();
    assert_eq!(waiter.participant_nodes().await.unwrap().len(), 1);
    drop(theirs);
}

/// Tasks sharing one handle wait for the lease one after the other. (The guard mutex used to
/// be one reentrant handle shared by the clones: the second waiter walked into the guard and
/// added its own lease node, and with more waiters than leases nobody could proceed.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_sharing_one_semaphore_mutex_handle_take_turns() {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let path = unique_root("semaphore-shared-handle");
    let mutex = InterProcessSemaphoreMutex::builder(client.clone(), &path)
        .build()
        .unwrap();
    let held = mutex.acquire().await.unwrap();
    let holders = Arc::new(AtomicUsize::new(0));
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let (mutex, holders) = (mutex.clone(), Arc::clone(&holders));
            tokio::spawn(async move {
                let lease = mutex.acquire().await.unwrap();
                assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                tokio::task::yield_now().await;
                holders.fetch_sub(1, Ordering::SeqCst);
                lease.release().await.unwrap();
            })
        })
        .collect();
    // Both waiters are in line: one in the guard with its lease node, the other waiting for the
    // guard (with the defect: both lease nodes made, one guard node).
    let leases = paths::join(&path, "leases");
    let guard = paths::join(&path, "locks");
    curator_test::eventually("both waiters in line", || async {
        let (leases, guard) = (
            testkit::children(&client, &leases).await,
            testkit::children(&client, &guard).await,
        );
        leases.len() == 3 || (leases.len() == 2 && guard.len() == 2)
    })
    .await;
    assert_eq!(
        testkit::children(&client, &leases).await.len(),
        2,
        "a lease node beyond the one lease and its one waiter"
    );
    held.release().await.unwrap();
    for waiter in waiters {
        tokio::time::timeout(Timing::new().wait(), waiter)
            .await
            .expect("a waiter on a shared handle never got the lease")
            .unwrap();
    }
    assert!(testkit::children(&client, &leases).await.is_empty());
}

/// Ten tasks share one 5-lease handle for several rounds: at most five hold at once, and every
/// round completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_tasks_share_one_five_lease_handle() {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let path = unique_root("semaphore-shared-v2");
    let semaphore = InterProcessSemaphoreV2::builder(client.clone(), &path, MaxLeases::Fixed(5))
        .build()
        .unwrap();
    let holders = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let (semaphore, holders, most) =
                (semaphore.clone(), Arc::clone(&holders), Arc::clone(&most));
            tokio::spawn(async move {
                for _ in 0..3 {
                    let lease = semaphore.acquire().await.unwrap();
                    let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(now <= 5, "{now} holders of 5 leases");
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    holders.fetch_sub(1, Ordering::SeqCst);
                    lease.release().await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        tokio::time::timeout(Timing::new().wait(), task)
            .await
            .expect("tasks sharing a handle deadlocked")
            .unwrap();
    }
    assert!(most.load(Ordering::SeqCst) >= 1);
    assert!(
        testkit::children(&client, &paths::join(&path, "leases"))
            .await
            .is_empty()
    );
}

/// `participant_nodes()` has one shape across recipes: full paths, in the order the nodes were
/// made (it used to return bare names for the semaphore, full paths for the mutex).
#[tokio::test]
async fn participant_nodes_are_full_paths_in_order_like_the_mutex() {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let path = unique_root("semaphore-participants");
    let semaphore = InterProcessSemaphoreV2::builder(client.clone(), &path, MaxLeases::Fixed(3))
        .build()
        .unwrap();
    let leases = semaphore.acquire_many(3).await.unwrap();
    let nodes = semaphore.participant_nodes().await.unwrap();
    let held: Vec<&str> = leases.iter().map(|lease| lease.node_path()).collect();
    assert_eq!(nodes, held, "lease nodes as full paths, in sequence order");

    let mutex_path = unique_root("semaphore-participants-mutex");
    let mutex = curator_locks::InterProcessMutex::builder(client.clone(), &mutex_path)
        .build()
        .unwrap();
    let guard = mutex.acquire().await.unwrap();
    assert_eq!(
        mutex.participant_nodes().await.unwrap(),
        [guard.node_path()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_acquire_takes_a_free_lease_and_leaves_nothing_when_full() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("semaphore-try");
    let holder_client = testkit::client(&server.connect_string()).await;
    let other_client = testkit::client(&server.connect_string()).await;
    let holder =
        InterProcessSemaphoreV2::builder(holder_client.clone(), &path, MaxLeases::Fixed(2))
            .build()
            .unwrap();
    let other = InterProcessSemaphoreV2::builder(other_client.clone(), &path, MaxLeases::Fixed(2))
        .build()
        .unwrap();
    let first = holder
        .try_acquire()
        .await
        .unwrap()
        .expect("two leases free");
    let second = holder.acquire().await.unwrap();
    let before = other.participant_nodes().await.unwrap();
    assert_eq!(before.len(), 2);
    for _ in 0..3 {
        let attempt = tokio::time::timeout(Timing::new().wait(), other.try_acquire())
            .await
            .expect("try_acquire does not wait for room")
            .unwrap();
        assert!(attempt.is_none());
        assert_eq!(other.participant_nodes().await.unwrap(), before);
    }
    first.release().await.unwrap();
    let taken = other
        .try_acquire()
        .await
        .unwrap()
        .expect("a lease is free again");
    taken.release().await.unwrap();
    second.release().await.unwrap();

    let mutex = InterProcessSemaphoreMutex::builder(holder_client.clone(), &unique_root("sm-try"))
        .build()
        .unwrap();
    let lease = mutex.try_acquire().await.unwrap().expect("free");
    assert!(
        mutex.try_acquire().await.unwrap().is_none(),
        "not reentrant"
    );
    lease.release().await.unwrap();
    holder_client.close().await.unwrap();
    other_client.close().await.unwrap();
}
