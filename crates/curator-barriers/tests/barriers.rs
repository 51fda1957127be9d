//! Barriers against a real ZooKeeper server.

use std::sync::Arc;
use std::time::Duration;

use curator_barriers::{DistributedBarrier, DistributedDoubleBarrier};
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::client;
use tokio::sync::Mutex;
use tokio::time::Instant;

#[tokio::test]
async fn a_barrier_holds_waiters_until_removed() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("barrier");
    let owner = DistributedBarrier::new(client(&server.connect_string()).await, &path).unwrap();
    let waiter = DistributedBarrier::new(client(&server.connect_string()).await, &path).unwrap();
    assert!(
        waiter
            .wait_on_barrier_timeout(Duration::from_millis(100))
            .await
            .unwrap(),
        "no barrier yet"
    );
    owner.set_barrier().await.unwrap();
    owner.set_barrier().await.unwrap();
    assert!(
        !waiter
            .wait_on_barrier_timeout(Duration::from_millis(300))
            .await
            .unwrap()
    );
    let waiting = tokio::spawn(async move { waiter.wait_on_barrier().await });
    owner.remove_barrier().await.unwrap();
    tokio::time::timeout(Timing::new().wait(), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_enter_together_and_leave_together() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("double-barrier");
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..4 {
        let member =
            DistributedDoubleBarrier::new(client(&server.connect_string()).await, &path, 4)
                .unwrap();
        let log = Arc::clone(&log);
        tasks.push(tokio::spawn(async move {
            // Members arrive at different times.
            tokio::time::sleep(Duration::from_millis(50 * i)).await;
            let arrived = Instant::now();
            member.enter().await.unwrap();
            let entered = Instant::now();
            tokio::time::sleep(Duration::from_millis(50 * (3 - i))).await;
            let leaving = Instant::now();
            member.leave().await.unwrap();
            let left = Instant::now();
            log.lock().await.push((arrived, entered, leaving, left));
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let log = log.lock().await.clone();
    let last_arrival = log.iter().map(|e| e.0).max().unwrap();
    let first_entry = log.iter().map(|e| e.1).min().unwrap();
    assert!(
        last_arrival <= first_entry,
        "someone entered before everyone arrived"
    );
    let last_leaving = log.iter().map(|e| e.2).max().unwrap();
    let first_left = log.iter().map(|e| e.3).min().unwrap();
    assert!(
        last_leaving <= first_left,
        "someone left before everyone was leaving"
    );
    let observer = client(&server.connect_string()).await;
    let left_over = observer
        .get_children()
        .for_path(&path)
        .await
        .map(|(c, _)| c)
        .unwrap_or_default();
    assert!(left_over.is_empty(), "{left_over:?}");
}

#[tokio::test]
async fn an_enter_timeout_leaves_no_node() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("double-barrier-timeout");
    let observer = client(&server.connect_string()).await;
    let a =
        DistributedDoubleBarrier::new(client(&server.connect_string()).await, &path, 3).unwrap();
    let b =
        DistributedDoubleBarrier::new(client(&server.connect_string()).await, &path, 3).unwrap();
    let (ra, rb) = futures::join!(
        a.enter_timeout(Duration::from_millis(300)),
        b.enter_timeout(Duration::from_millis(300))
    );
    assert!(!ra.unwrap() && !rb.unwrap());
    let left_over = observer
        .get_children()
        .for_path(&path)
        .await
        .map(|(c, _)| c)
        .unwrap_or_default();
    assert!(left_over.is_empty(), "{left_over:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_whose_session_ends_inside_the_barrier_does_not_block_the_others() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("double-barrier-expiry");
    let doomed_client = client(&server.connect_string()).await;
    let doomed = DistributedDoubleBarrier::new(doomed_client.clone(), &path, 3).unwrap();
    let a =
        DistributedDoubleBarrier::new(client(&server.connect_string()).await, &path, 3).unwrap();
    let b =
        DistributedDoubleBarrier::new(client(&server.connect_string()).await, &path, 3).unwrap();
    let (x, y, z) = futures::join!(a.enter(), b.enter(), doomed.enter());
    x.unwrap();
    y.unwrap();
    z.unwrap();
    doomed_client.inject_session_expiration().await.unwrap();
    let (x, y) = futures::join!(
        a.leave_timeout(Timing::new().wait()),
        b.leave_timeout(Timing::new().wait())
    );
    assert!(x.unwrap() && y.unwrap());
}

#[tokio::test]
async fn a_waiter_survives_a_server_restart() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let path = unique_root("barrier-restart");
    let owner = DistributedBarrier::new(client(&server.connect_string()).await, &path).unwrap();
    let waiter = DistributedBarrier::new(client(&server.connect_string()).await, &path).unwrap();
    owner.set_barrier().await.unwrap();
    let probe = waiter.clone();
    let waiting = tokio::spawn(async move { waiter.wait_on_barrier().await });
    // While the probe waits, the waiter task runs and sets its watch (the barrier is up).
    assert!(
        !probe
            .wait_on_barrier_timeout(Duration::from_millis(100))
            .await
            .unwrap()
    );
    server.restart().await.unwrap();
    owner.remove_barrier().await.unwrap();
    tokio::time::timeout(Timing::new().wait(), waiting)
        .await
        .expect("the watch survived the restart")
        .unwrap()
        .unwrap();
}
