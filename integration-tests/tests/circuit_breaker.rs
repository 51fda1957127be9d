//! A mutex holder whose connection flaps, with the client's connection-state circuit breaker on:
//! the recipe hears fewer transitions, and the soak's mutex checker still finds no overlapping
//! holders and no action after a holder was told its lock may be lost.

use std::sync::Arc;
use std::time::Duration;

use curator_framework::retry::RetryNTimes;
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
    flappy.close().await;
    steady.close().await;
}
