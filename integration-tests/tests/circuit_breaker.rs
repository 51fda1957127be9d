//! Recipes under the client's connection-state circuit breaker: a mutex holder whose connection
//! flaps hears fewer transitions, and the soak's mutex checker still finds no overlapping holders
//! and no action after a holder was told its lock may be lost; and every hold (a lock's, a
//! latch's, a selector's) learns of a `Suspended` by one route, at one moment, even one that the
//! breaker keeps from the listeners.

use std::sync::Arc;
use std::time::Duration;

use curator_election::{LeaderLatch, LeaderSelector};
use curator_framework::ConnectionState;
use curator_framework::retry::RetryNTimes;
use curator_locks::InterProcessMutex;
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use integration_tests::checkers::check_mutex;
use integration_tests::history::{Clock, LogEntry};
use integration_tests::workloads::{self, Ctx, Gate, Paths, Recorded};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutex_holders_keep_the_invariants_while_a_circuit_broken_connection_flaps() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let session_timeout = Duration::from_secs(6);
    let flappy = curator_testkit::started(
        curator_testkit::builder(&proxy.connect_string(), session_timeout)
            .ensemble_tracking(false)
            .connection_state_circuit_breaker(RetryNTimes::new(3, Duration::from_millis(500))),
    )
    .await;
    let steady = curator_testkit::client_with(&server.connect_string(), session_timeout).await;
    let paths = Paths::new(&unique_root("breaker"));
    steady
        .create()
        .creating_parents_if_needed()
        .for_path(&paths.mutex_log, b"")
        .await
        .unwrap();

    let ctx = Ctx {
        clock: Clock::new(),
        stop: CancellationToken::new(),
        stop_producers: CancellationToken::new(),
        record: Arc::new(Mutex::new(Recorded::default())),
        gate: Arc::new(Gate::default()),
        paths: Arc::new(paths.clone()),
    };
    let workers = [
        tokio::spawn(workloads::mutex_worker(ctx.clone(), flappy.clone(), 0, 1)),
        tokio::spawn(workloads::mutex_worker(ctx.clone(), steady.clone(), 1, 2)),
    ];

    // Twenty flaps: the flappy client's connection is cut, and it reconnects.
    let timing = Timing::new();
    for _ in 0..20 {
        proxy.drop_connections();
        flappy
            .block_until_connected(timing.wait())
            .await
            .expect("the client reconnects");
        // Pacing, not an assertion: let the holders work between flaps.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    ctx.stop.cancel();
    for worker in workers {
        worker.await.unwrap();
    }

    steady.sync().for_path(&paths.mutex_log).await.unwrap();
    let (children, _) = steady
        .get_children()
        .for_path(&paths.mutex_log)
        .await
        .unwrap();
    let mut log: Vec<LogEntry> = children.iter().filter_map(|c| LogEntry::parse(c)).collect();
    log.sort_by_key(|e| e.seq);
    let episodes = ctx.record.lock().mutex.clone();
    let violations = check_mutex(&episodes, &log);
    assert!(violations.is_empty(), "{violations:?}");
    for client in [0, 1] {
        assert!(
            episodes
                .iter()
                .any(|e| e.client == client && e.actions.iter().any(|a| a.ok)),
            "client {client} held the lock and acted"
        );
    }
    flappy.close().await.unwrap();
    steady.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_a_latch_and_a_selector_lose_their_holds_at_the_same_moment() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let timing = Timing::new();
    // A breaker whose circuit, once open, stays open for the whole test.
    let client = curator_testkit::started(
        curator_testkit::builder(&proxy.connect_string(), Duration::from_secs(30))
            .ensemble_tracking(false)
            .connection_state_circuit_breaker(RetryNTimes::new(1, Duration::from_secs(3600))),
    )
    .await;
    let heard = Arc::new(Mutex::new(Vec::new()));
    let _listening = client.connection_state_listenable().add_listener({
        let heard = Arc::clone(&heard);
        move |state| heard.lock().push(state)
    });
    let mut states = client.connection_state_stream();

    // A first flap opens the listeners' circuits: they hear `Suspended`, and nothing after it.
    proxy.drop_connections();
    tokio::time::timeout(timing.wait(), async {
        while let Some(state) = futures::StreamExt::next(&mut states).await {
            if state == ConnectionState::Suspended {
                return;
            }
        }
    })
    .await
    .expect("the first Suspended passes the breaker");
    client.block_until_connected(timing.wait()).await.unwrap();

    // Holders made now, while the circuits are open.
    let root = unique_root("breaker-holds");
    let mutex = InterProcessMutex::builder(client.clone(), &format!("{root}/lock"))
        .build()
        .unwrap();
    let lock = mutex.acquire().await.unwrap();
    let latch = LeaderLatch::builder(client.clone(), &format!("{root}/latch"), "latch")
        .build()
        .unwrap();
    latch.start().await.unwrap();
    tokio::time::timeout(timing.wait(), latch.await_leadership())
        .await
        .expect("the latch leads")
        .unwrap();
    let latch_hold = latch.hold().expect("the leader's hold");
    let (contexts_tx, mut contexts) = tokio::sync::mpsc::unbounded_channel();
    let selector = LeaderSelector::builder(
        client.clone(),
        &format!("{root}/selector"),
        "selector",
        move |context| {
            let _ = contexts_tx.send(context.clone());
            async move { context.lost().await }
        },
    )
    .build()
    .unwrap();
    selector.start().await.unwrap();
    let selector_hold = tokio::time::timeout(timing.wait(), contexts.recv())
        .await
        .expect("the selector leads")
        .unwrap();
    assert!(!lock.is_lost() && !latch_hold.is_lost() && !selector_hold.is_lost());

    // The second `Suspended` the breakers absorb: every hold learns it, at the same moment.
    proxy.drop_connections();
    tokio::time::timeout(timing.wait(), lock.lost())
        .await
        .expect("the lock's hold is lost at Suspended");
    assert!(latch_hold.is_lost(), "the latch's hold with the lock's");
    assert!(
        selector_hold.is_lost(),
        "the selector's hold with the lock's"
    );
    curator_testkit::eventually("the leaders step down", || {
        std::future::ready(!latch.has_leadership() && !selector.has_leadership())
    })
    .await;
    client.block_until_connected(timing.wait()).await.unwrap();
    let heard = heard.lock().clone();
    assert_eq!(
        heard.last(),
        Some(&ConnectionState::Suspended),
        "the listeners heard nothing after the first Suspended: {heard:?}"
    );
    assert_eq!(
        heard
            .iter()
            .filter(|state| **state == ConnectionState::Suspended)
            .count(),
        1,
        "{heard:?}"
    );

    selector.close().await.unwrap();
    latch.close().await.unwrap();
    drop(lock);
    client.close().await.unwrap();
}
