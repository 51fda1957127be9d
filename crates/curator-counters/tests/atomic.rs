//! Distributed atomic numbers against a real ZooKeeper: Curator's encodings, exact totals under
//! contention (optimistic and promoted), and exactly-once outcomes through lost replies, server
//! restarts and session expiry.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use curator_counters::{
    CachedAtomicLong, DistributedAtomicInteger, DistributedAtomicLong, DistributedAtomicValue,
    MARKER_PREFIX, PromotedToLock,
};
use curator_framework::Error;
use curator_framework::retry::{RetryNTimes, RetryOneTime};
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use curator_testkit::{client, eventually, patient, raw};

#[tokio::test]
async fn numbers_are_stored_as_curator_stores_them() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let root = unique_root("atomic-encoding");
    let long = DistributedAtomicLong::builder(c.clone(), &format!("{root}/long"), patient())
        .build()
        .unwrap();
    let int = DistributedAtomicInteger::builder(c.clone(), &format!("{root}/int"), patient())
        .build()
        .unwrap();

    assert_eq!(
        long.get().await.unwrap().post_value,
        0,
        "a missing node reads 0"
    );
    let result = long.subtract(2).await.unwrap();
    assert!(result.succeeded);
    assert_eq!((result.pre_value, result.post_value), (0, -2));
    assert_eq!(
        raw(&c, &format!("{root}/long")).await,
        [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]
    );
    int.add(10).await.unwrap();
    assert_eq!(raw(&c, &format!("{root}/int")).await, [0, 0, 0, 10]);

    // Wrapping, as Java does.
    int.force_set(i32::MAX).await.unwrap();
    assert_eq!(int.increment().await.unwrap().post_value, i32::MIN);

    // Corrupt data: a typed error, nothing written.
    c.set_data()
        .for_path(&format!("{root}/long"), [1, 2, 3])
        .await
        .unwrap();
    let Err(Error::Decode { path, reason }) = long.increment().await else {
        panic!("three bytes read as a long");
    };
    assert_eq!(path, format!("{root}/long"));
    assert!(reason.contains("3 bytes"), "{reason}");
    assert_eq!(raw(&c, &format!("{root}/long")).await, [1, 2, 3]);
}

#[tokio::test]
async fn compare_and_set_try_set_force_set_and_initialize() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let path = format!("{}/n", unique_root("atomic-ops"));
    let n = DistributedAtomicLong::builder(c.clone(), &path, RetryOneTime::new(Duration::ZERO))
        .build()
        .unwrap();

    assert!(n.initialize(5).await.unwrap());
    assert!(!n.initialize(7).await.unwrap(), "initialize only creates");
    assert_eq!(n.get().await.unwrap().post_value, 5);

    let missed = n.compare_and_set(4, 9).await.unwrap();
    assert!(!missed.succeeded);
    assert_eq!((missed.pre_value, missed.post_value), (5, 5));
    let hit = n.compare_and_set(5, 9).await.unwrap();
    assert!(hit.succeeded);
    assert_eq!((hit.pre_value, hit.post_value), (5, 9));
    assert_eq!(hit.stats.optimistic_tries, 1);

    let set = n.try_set(-1).await.unwrap();
    assert!(set.succeeded);
    assert_eq!((set.pre_value, set.post_value), (9, -1));
    n.force_set(42).await.unwrap();
    assert_eq!(n.get().await.unwrap().post_value, 42);

    // The bytes-level value on another node.
    let bytes = DistributedAtomicValue::builder(c.clone(), &format!("{path}-bytes"), patient())
        .build()
        .unwrap();
    assert!(bytes.compare_and_set(b"", b"init").await.unwrap().succeeded);
    assert!(
        !bytes
            .compare_and_set(b"", b"again")
            .await
            .unwrap()
            .succeeded
    );
    let next = bytes
        .update(|current| Ok((current == b"init").then(|| b"running".to_vec())))
        .await
        .unwrap();
    assert_eq!(next.post_value, b"running");

    // Markers are cleaned up.
    n.flush_markers().await.unwrap();
    bytes.flush_markers().await.unwrap();
    assert!(c.get_children().for_path(&path).await.unwrap().0.is_empty());
}

/// `clients` clients each add 1 `per_client` times; returns (successes, final value).
async fn contend(
    connect: &str,
    path: &str,
    clients: usize,
    per_client: usize,
    make: impl Fn(curator_framework::CuratorFramework) -> DistributedAtomicLong,
) -> (u64, i64, u32) {
    let successes = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let counter = make(client(connect).await);
        let successes = Arc::clone(&successes);
        tasks.push(tokio::spawn(async move {
            let mut promoted = 0;
            for _ in 0..per_client {
                let result = counter.increment().await.unwrap();
                if result.succeeded {
                    assert_eq!(result.post_value, result.pre_value + 1);
                    successes.fetch_add(1, Ordering::SeqCst);
                }
                promoted += result.stats.promoted_lock_tries;
            }
            counter.flush_markers().await.unwrap();
            promoted
        }));
    }
    let mut promoted = 0;
    for task in tasks {
        promoted += task.await.unwrap();
    }
    let c = client(connect).await;
    let total = DistributedAtomicLong::builder(c, path, patient())
        .build()
        .unwrap()
        .get()
        .await
        .unwrap()
        .post_value;
    (successes.load(Ordering::SeqCst), total, promoted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_clients_increment_to_the_exact_total() {
    let server = TestingServer::start().await.unwrap();
    let path = format!("{}/hits", unique_root("atomic-contention"));
    let (successes, total, _) = contend(&server.connect_string(), &path, 8, 40, |c| {
        DistributedAtomicLong::builder(c, &path, patient())
            .build()
            .unwrap()
    })
    .await;
    assert_eq!(successes, 320, "the patient policy never gives up");
    assert_eq!(total, 320);
    let c = client(&server.connect_string()).await;
    assert_eq!(
        c.get_children().for_path(&path).await.unwrap().0,
        Vec::<String>::new(),
        "every outcome marker was deleted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promoted_increments_reach_the_exact_total() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("atomic-promoted");
    let path = format!("{root}/hits");
    let lock = format!("{root}/lock");
    // No optimistic retry at all: every conflict goes to the lock.
    let (successes, total, promoted) = contend(&server.connect_string(), &path, 8, 25, |c| {
        DistributedAtomicLong::builder(c, &path, RetryNTimes::new(0, Duration::ZERO))
            .promoted_to_lock(PromotedToLock::new(&lock, patient()))
            .build()
            .unwrap()
    })
    .await;
    assert_eq!(successes, 200);
    assert_eq!(total, 200);
    assert!(promoted > 0, "some increments went through the lock");
}

/// The write is applied but its reply never arrives (the proxy holds replies, then cuts the
/// connection). With outcome markers the increment counts once; without (Curator's behaviour)
/// the retry applies it a second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_reply_is_applied_exactly_once() {
    let server = TestingServer::start().await.unwrap();
    let observer = client(&server.connect_string()).await;
    // With markers: the instance's first write (its marker created in the transaction) and a
    // later one (the marker's data set at the version the instance knows).
    for (markers, earlier) in [(true, 0i64), (true, 2), (false, 0)] {
        let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
        let path = format!("{}/n", unique_root("atomic-lost-reply"));
        let builder =
            DistributedAtomicLong::builder(client(&proxy.connect_string()).await, &path, patient());
        let counter = if markers {
            builder
        } else {
            builder.without_markers()
        }
        .build()
        .unwrap();
        assert!(counter.initialize(0).await.unwrap());
        for _ in 0..earlier {
            assert!(counter.increment().await.unwrap().succeeded);
        }

        // Replies stop between the read and the write: the write goes out, its answer never
        // comes back.
        let proxy = Arc::new(proxy);
        let increment = tokio::spawn({
            let (counter, proxy) = (counter.clone(), Arc::clone(&proxy));
            let first = AtomicBool::new(true);
            async move {
                counter
                    .as_value()
                    .update(|current| {
                        if first.swap(false, Ordering::SeqCst) {
                            proxy.pause_replies();
                        }
                        let n = i64::from_be_bytes(current.try_into().unwrap());
                        Ok(Some((n + 1).to_be_bytes().to_vec()))
                    })
                    .await
            }
        });
        let reader = DistributedAtomicLong::builder(observer.clone(), &path, patient())
            .build()
            .unwrap();
        eventually("the write reached the server", || async {
            reader.get().await.unwrap().post_value == earlier + 1
        })
        .await;
        proxy.drop_connections();
        proxy.resume();
        let result = tokio::time::timeout(Timing::new().wait(), increment)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(result.succeeded);
        let total = reader.get().await.unwrap().post_value;
        if markers {
            assert_eq!(
                (result.pre_value, result.post_value),
                (
                    earlier.to_be_bytes().to_vec(),
                    (earlier + 1).to_be_bytes().to_vec()
                )
            );
            assert_eq!(total, earlier + 1, "applied once");
            // One marker per instance, whatever it wrote.
            let markers = observer.get_children().for_path(&path).await.unwrap().0;
            assert_eq!(markers.len(), 1, "{markers:?}");
            counter.flush_markers().await.unwrap();
            assert!(
                observer
                    .get_children()
                    .for_path(&path)
                    .await
                    .unwrap()
                    .0
                    .is_empty()
            );
        } else {
            assert_eq!(total, 2, "Curator's plain retry applies it twice");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_increment_is_lost_or_doubled_across_restart_and_expiry() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let connect = server.connect_string();
    let path = format!("{}/n", unique_root("atomic-faults"));
    let stop = Arc::new(AtomicBool::new(false));
    let successes = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let c = client(&connect).await;
        clients.push(c.clone());
        let counter = DistributedAtomicLong::builder(c, &path, patient())
            .build()
            .unwrap();
        let (stop, successes, failures) = (
            Arc::clone(&stop),
            Arc::clone(&successes),
            Arc::clone(&failures),
        );
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                match counter.increment().await {
                    Ok(result) if result.succeeded => {
                        successes.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(_) | Err(_) => {
                        failures.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
        }));
    }
    let progress = |at_least: u64| {
        let successes = Arc::clone(&successes);
        async move {
            eventually("increments make progress", || {
                let successes = Arc::clone(&successes);
                async move { successes.load(Ordering::SeqCst) >= at_least }
            })
            .await;
        }
    };
    progress(50).await;
    server.restart().await.unwrap();
    let after_restart = successes.load(Ordering::SeqCst);
    progress(after_restart + 50).await;
    // Two sessions end in the middle of their increments (each back from the restart first:
    // the others' progress does not say that these two reconnected).
    for client in &clients[..2] {
        client
            .block_until_connected(Timing::new().wait())
            .await
            .unwrap();
        client.inject_session_expiration().await.unwrap();
    }
    let after_expiry = successes.load(Ordering::SeqCst);
    progress(after_expiry + 50).await;
    stop.store(true, Ordering::SeqCst);
    for task in tasks {
        task.await.unwrap();
    }
    let total = DistributedAtomicLong::builder(client(&connect).await, &path, patient())
        .build()
        .unwrap()
        .get()
        .await
        .unwrap()
        .post_value;
    let successes = successes.load(Ordering::SeqCst);
    println!(
        "{successes} increments succeeded, {} failed",
        failures.load(Ordering::SeqCst)
    );
    assert_eq!(
        total as u64, successes,
        "every successful increment applied exactly once, no failed one applied"
    );
    // Markers left are at most one per instance (the instances were dropped with their tasks,
    // which deletes them in the background).
    let c = client(&connect).await;
    eventually("markers are cleaned up", || async {
        c.get_children()
            .for_path(&path)
            .await
            .unwrap()
            .0
            .iter()
            .all(|name| !name.starts_with(MARKER_PREFIX))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_longs_hand_out_unique_numbers() {
    let server = TestingServer::start().await.unwrap();
    let path = format!("{}/ids", unique_root("atomic-cached"));
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let counter = DistributedAtomicLong::builder(
            client(&server.connect_string()).await,
            &path,
            patient(),
        )
        .build()
        .unwrap();
        let cached = CachedAtomicLong::new(counter, 7).unwrap();
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            for _ in 0..20 {
                let id = cached.next().await.unwrap();
                assert!(id.succeeded);
                got.push(id.post_value);
            }
            got
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        let got = task.await.unwrap();
        assert!(got.windows(2).all(|w| w[0] < w[1]), "increasing: {got:?}");
        all.extend(got);
    }
    all.sort_unstable();
    let before = all.len();
    all.dedup();
    assert_eq!(all.len(), before, "unique");
    assert!(matches!(
        CachedAtomicLong::new(
            DistributedAtomicLong::builder(
                client(&server.connect_string()).await,
                &path,
                patient()
            )
            .build()
            .unwrap(),
            0
        ),
        Err(Error::InvalidArgument(_))
    ));
}
