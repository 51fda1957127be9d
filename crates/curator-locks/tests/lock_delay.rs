//! Lock-delay against a real server: a holder whose session expires keeps the lock (or its
//! semaphore slot) unavailable for its delay on ZooKeeper's clock; a release hands over at once.

use std::time::Duration;

use curator_framework::{CuratorFramework, paths};
use curator_locks::{
    InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, LockDelayEntry,
    LockDelayRecord, MaxLeases,
};
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use curator_testkit as testkit;

/// Long enough that a test waiting for it would time out: an acquisition that succeeds was not
/// delayed.
const NEVER: Duration = Duration::from_secs(3600);
const DELAY: Duration = Duration::from_secs(2);

/// The record in `dir`'s data and the `mtime` of its last write (ZooKeeper's clock).
async fn record(client: &CuratorFramework, dir: &str) -> (LockDelayRecord, i64) {
    let (data, stat) = client.get_data().for_path(dir).await.unwrap();
    let record = LockDelayRecord::parse(&data)
        .unwrap()
        .expect("the directory holds a record");
    (record, stat.mtime)
}

/// A client whose link goes through its own proxy (so its session can be expired behind it).
async fn doomed(server: &TestingServer) -> (CuratorFramework, FaultProxy) {
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    (testkit::client(&proxy.connect_string()).await, proxy)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_holders_lock_stays_unavailable_for_its_delay_on_the_servers_clock() {
    let server = TestingServer::start().await.unwrap();
    let wait = Timing::new().wait();
    let path = format!("{}/lock", unique_root("lock-delay-expiry"));
    let (holder_client, proxy) = doomed(&server).await;
    let holder = InterProcessMutex::builder(holder_client.clone(), &path)
        .lock_delay(DELAY)
        .build()
        .unwrap();
    let guard = holder.acquire().await.unwrap();
    let holder_node = paths::node_name(guard.node_path()).to_owned();

    let waiter_client = testkit::client(&server.connect_string()).await;
    let waiter = InterProcessMutex::builder(waiter_client.clone(), &path)
        .lock_delay(DELAY)
        .build()
        .unwrap();
    let (record_before, _) = record(&waiter_client, &path).await;
    assert!(
        record_before.entries().contains(&LockDelayEntry::Held {
            node: holder_node.clone(),
            delay_ms: 2_000
        }),
        "the holder wrote its line: {record_before:?}"
    );
    let waiting = tokio::spawn({
        let waiter = waiter.clone();
        async move { waiter.acquire().await }
    });
    testkit::eventually("the waiter is in line", || async {
        waiter.participant_nodes().await.unwrap().len() == 2
    })
    .await;

    testkit::expire_behind(&holder_client, &proxy, &server.connect_string()).await;
    let next = tokio::time::timeout(wait + DELAY, waiting)
        .await
        .expect("the waiter acquires once the delay ran out")
        .unwrap()
        .unwrap();

    // The server's evidence: the failure was marked by a write, and the write that admitted
    // the waiter came at least the delay after it, on ZooKeeper's clock.
    let (after, admitted_at) = record(&waiter_client, &path).await;
    let since = after
        .entries()
        .iter()
        .find_map(|entry| match entry {
            LockDelayEntry::Failed { node, since_ms, .. } if *node == holder_node => {
                Some(since_ms.expect("dated by the admitting write"))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("the failure is in the record: {after:?}"));
    assert!(
        admitted_at >= since + 2_000,
        "admitted at {admitted_at}, {} ms after the failure was seen",
        admitted_at - since
    );
    assert!(after.entries().contains(&LockDelayEntry::Held {
        node: paths::node_name(next.node_path()).to_owned(),
        delay_ms: 2_000
    }));

    // The next release clears the record of both lines (the failure's delay is over).
    next.release().await.unwrap();
    let (cleared, _) = record(&waiter_client, &path).await;
    assert!(cleared.entries().is_empty(), "{cleared:?}");
    drop(guard);
    proxy.resume();
    holder_client.close().await.unwrap();
    waiter_client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_hands_over_at_once_and_a_failure_keeps_try_acquire_out() {
    let server = TestingServer::start().await.unwrap();
    let wait = Timing::new().wait();
    let path = format!("{}/lock", unique_root("lock-delay-release"));
    let a_client = testkit::client(&server.connect_string()).await;
    let b_client = testkit::client(&server.connect_string()).await;
    let a = InterProcessMutex::builder(a_client.clone(), &path)
        .lock_delay(NEVER)
        .build()
        .unwrap();
    let b = InterProcessMutex::builder(b_client.clone(), &path)
        .lock_delay(NEVER)
        .build()
        .unwrap();
    // Releases, explicit and by drop, hand over at once (many times over).
    for round in 0..20 {
        let guard = a.acquire().await.unwrap();
        let waiting = tokio::spawn({
            let b = b.clone();
            async move { b.acquire().await }
        });
        if round % 2 == 0 {
            guard.release().await.unwrap();
        } else {
            drop(guard);
        }
        let next = tokio::time::timeout(wait, waiting)
            .await
            .expect("a release hands over at once")
            .unwrap()
            .unwrap();
        next.release().await.unwrap();
    }
    let (clean, _) = record(&a_client, &path).await;
    assert!(clean.entries().is_empty(), "{clean:?}");

    // A holder that fails keeps the lock unavailable: try_acquire says so at once, and an
    // acquisition with a timeout gives up without leaving a node behind.
    let (doomed_client, proxy) = doomed(&server).await;
    let doomed_mutex = InterProcessMutex::builder(doomed_client.clone(), &path)
        .lock_delay(NEVER)
        .build()
        .unwrap();
    let lost = doomed_mutex.acquire().await.unwrap();
    testkit::expire_behind(&doomed_client, &proxy, &server.connect_string()).await;
    testkit::eventually("the failed holder's node is gone", || async {
        a.participant_nodes().await.unwrap().is_empty()
    })
    .await;
    assert!(a.try_acquire().await.unwrap().is_none());
    assert!(
        b.acquire_timeout(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
    assert!(a.participant_nodes().await.unwrap().is_empty());
    let (failed, _) = record(&a_client, &path).await;
    assert!(
        matches!(failed.entries(), [LockDelayEntry::Failed { node, delay_ms: 3_600_000, .. }]
            if *node == paths::node_name(lost.node_path())),
        "{failed:?}"
    );
    // A contender without lock-delay neither honours it nor changes the record.
    let plain = InterProcessMutex::builder(a_client.clone(), &path)
        .build()
        .unwrap();
    plain.acquire().await.unwrap().release().await.unwrap();
    assert_eq!(record(&a_client, &path).await.0, failed);

    drop(lost);
    proxy.resume();
    doomed_client.close().await.unwrap();
    a_client.close().await.unwrap();
    b_client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_reader_keeps_writers_out_and_a_failed_writer_everyone() {
    let server = TestingServer::start().await.unwrap();
    let wait = Timing::new().wait();
    let root = unique_root("lock-delay-rw");
    let client = testkit::client(&server.connect_string()).await;
    let lock = |client: CuratorFramework, path: String| {
        InterProcessReadWriteLock::builder(client, &path)
            .lock_delay(NEVER)
            .build()
            .unwrap()
    };

    // A reader fails: another reader holds at once, a writer is kept out.
    let path = format!("{root}/reader-fails");
    let (doomed_client, proxy) = doomed(&server).await;
    let read = lock(doomed_client.clone(), path.clone())
        .read_lock()
        .acquire()
        .await
        .unwrap();
    testkit::expire_behind(&doomed_client, &proxy, &server.connect_string()).await;
    let ours = lock(client.clone(), path.clone());
    testkit::eventually("the failed reader's node is gone", || async {
        ours.read_lock()
            .participant_nodes()
            .await
            .unwrap()
            .is_empty()
    })
    .await;
    let reading = tokio::time::timeout(wait, ours.read_lock().acquire())
        .await
        .expect("a failed reader keeps no reader out")
        .unwrap();
    reading.release().await.unwrap();
    assert!(ours.write_lock().try_acquire().await.unwrap().is_none());
    drop(read);
    proxy.resume();
    doomed_client.close().await.unwrap();

    // A writer fails: readers and writers are kept out.
    let path = format!("{root}/writer-fails");
    let (doomed_client, proxy) = doomed(&server).await;
    let write = lock(doomed_client.clone(), path.clone())
        .write_lock()
        .acquire()
        .await
        .unwrap();
    testkit::expire_behind(&doomed_client, &proxy, &server.connect_string()).await;
    let ours = lock(client.clone(), path.clone());
    testkit::eventually("the failed writer's node is gone", || async {
        ours.write_lock()
            .participant_nodes()
            .await
            .unwrap()
            .is_empty()
    })
    .await;
    assert!(ours.read_lock().try_acquire().await.unwrap().is_none());
    assert!(ours.write_lock().try_acquire().await.unwrap().is_none());
    drop(write);
    proxy.resume();
    doomed_client.close().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_lease_keeps_its_slot_and_a_returned_one_frees_it() {
    let server = TestingServer::start().await.unwrap();
    let wait = Timing::new().wait();
    let path = unique_root("lock-delay-semaphore");
    let semaphore = |client: CuratorFramework| {
        InterProcessSemaphoreV2::builder(client, &path, MaxLeases::Fixed(2))
            .lock_delay(NEVER)
            .build()
            .unwrap()
    };
    let (doomed_client, proxy) = doomed(&server).await;
    let lost = semaphore(doomed_client.clone()).acquire().await.unwrap();
    testkit::expire_behind(&doomed_client, &proxy, &server.connect_string()).await;
    let client = testkit::client(&server.connect_string()).await;
    let ours = semaphore(client.clone());
    testkit::eventually("the failed lease's node is gone", || async {
        ours.participant_nodes().await.unwrap().is_empty()
    })
    .await;
    // Two slots: the failed lease keeps one, so one more lease and no second.
    let first = tokio::time::timeout(wait, ours.acquire())
        .await
        .expect("the free slot is taken at once")
        .unwrap();
    assert!(ours.try_acquire().await.unwrap().is_none());
    // A returned lease frees its slot at once.
    first.release().await.unwrap();
    let again = tokio::time::timeout(wait, ours.acquire())
        .await
        .expect("a returned lease's slot is free at once")
        .unwrap();
    assert!(ours.try_acquire().await.unwrap().is_none());
    let (record, _) = record(&client, &format!("{path}/leases")).await;
    assert!(
        record.entries().iter().any(|entry| matches!(entry,
            LockDelayEntry::Failed { node, .. } if *node == paths::node_name(lost.node_path()))),
        "{record:?}"
    );
    again.release().await.unwrap();
    drop(lost);
    proxy.resume();
    doomed_client.close().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_delays_and_foreign_directory_data_are_typed_errors() {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    for delay in [Duration::ZERO, Duration::from_secs(2 * 24 * 3600)] {
        let error = InterProcessMutex::builder(client.clone(), "/locks/x")
            .lock_delay(delay)
            .build()
            .unwrap_err();
        assert!(error.to_string().contains("lock-delay"), "{error}");
    }
    // A directory that holds data of its own is never overwritten.
    let path = format!("{}/lock", unique_root("lock-delay-foreign"));
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&path, b"not a record")
        .await
        .unwrap();
    let mutex = InterProcessMutex::builder(client.clone(), &path)
        .lock_delay(NEVER)
        .build()
        .unwrap();
    let error = mutex.acquire().await.unwrap_err();
    assert!(
        error.to_string().contains("not a lock-delay record"),
        "{error}"
    );
    assert_eq!(testkit::raw(&client, &path).await, b"not a record");
    assert!(mutex.participant_nodes().await.unwrap().is_empty());
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_health_check_is_a_failure_and_delays_the_next_holder() {
    let server = TestingServer::start().await.unwrap();
    let path = format!("{}/lock", unique_root("lock-delay-health"));
    let client = testkit::client(&server.connect_string()).await;
    let healthy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sick_one = InterProcessMutex::builder(client.clone(), &path)
        .lock_delay(NEVER)
        .health_check(Duration::from_millis(50), {
            let healthy = std::sync::Arc::clone(&healthy);
            move || {
                let healthy = healthy.load(std::sync::atomic::Ordering::SeqCst);
                async move { healthy }
            }
        })
        .build()
        .unwrap();
    let guard = sick_one.acquire().await.unwrap();
    let node = paths::node_name(guard.node_path()).to_owned();
    healthy.store(false, std::sync::atomic::Ordering::SeqCst);
    tokio::time::timeout(Timing::new().wait(), guard.lost())
        .await
        .expect("the failed check ends the hold");
    let other = InterProcessMutex::builder(client.clone(), &path)
        .lock_delay(NEVER)
        .build()
        .unwrap();
    testkit::eventually("the sick holder's node is gone", || async {
        other.participant_nodes().await.unwrap().is_empty()
    })
    .await;
    assert!(other.try_acquire().await.unwrap().is_none());
    let (failed, _) = record(&client, &path).await;
    assert!(
        matches!(failed.entries(), [LockDelayEntry::Failed { node: failed, .. }] if *failed == node),
        "{failed:?}"
    );
    drop(guard);
    client.close().await.unwrap();
}

/// A server restart while held: the record lives on the server's disk with the lock's nodes,
/// the holder keeps its session, and its release still hands over at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_survives_a_server_restart_and_its_release_hands_over_at_once() {
    // Its own server: the one a test run shares must not restart under the others.
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let wait = Timing::new().wait();
    let path = format!("{}/lock", unique_root("lock-delay-restart"));
    let client = testkit::client(&server.connect_string()).await;
    let mutex = |client: &CuratorFramework| {
        InterProcessMutex::builder(client.clone(), &path)
            .lock_delay(NEVER)
            .build()
            .unwrap()
    };
    let guard = mutex(&client).acquire().await.unwrap();
    let session = client.session_id();
    server.restart().await.unwrap();
    testkit::eventually("the holder is back on its session", || async {
        client.is_connected() && client.session_id() == session
    })
    .await;
    let (held, _) = record(&client, &path).await;
    assert!(
        held.entries().contains(&LockDelayEntry::Held {
            node: paths::node_name(guard.node_path()).to_owned(),
            delay_ms: 3_600_000
        }),
        "{held:?}"
    );
    let other = testkit::client(&server.connect_string()).await;
    let waiting = tokio::spawn({
        let next = mutex(&other);
        async move { next.acquire().await }
    });
    guard.release().await.unwrap();
    let next = tokio::time::timeout(wait, waiting)
        .await
        .expect("a release after a restart hands over at once")
        .unwrap()
        .unwrap();
    next.release().await.unwrap();
    assert!(record(&client, &path).await.0.entries().is_empty());
    client.close().await.unwrap();
    other.close().await.unwrap();
}
