//! Lock-delay for leadership against a real server: a leader whose session expires keeps the
//! next participant from leading for its delay on ZooKeeper's clock; a leader that leaves hands
//! over at once.

use std::time::Duration;

use curator_election::{LeaderLatch, LeaderSelector};
use curator_framework::{CuratorFramework, paths};
use curator_locks::{LockDelayEntry, LockDelayRecord};
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use curator_testkit as testkit;
use tokio::sync::mpsc;

const DELAY: Duration = Duration::from_secs(2);
/// Long enough that a test waiting for it would time out.
const NEVER: Duration = Duration::from_secs(3600);

/// The record in `dir`'s data and the `mtime` of its last write (ZooKeeper's clock).
async fn record(client: &CuratorFramework, dir: &str) -> (LockDelayRecord, i64) {
    let (data, stat) = client.get_data().for_path(dir).await.unwrap();
    let record = LockDelayRecord::parse(&data)
        .unwrap()
        .expect("the directory holds a record");
    (record, stat.mtime)
}

/// The failure of `node` in `record`, dated.
fn failure_since(record: &LockDelayRecord, node: &str) -> i64 {
    record
        .entries()
        .iter()
        .find_map(|entry| match entry {
            LockDelayEntry::Failed {
                node: failed,
                since_ms,
                ..
            } if failed == node => Some(since_ms.expect("dated by the admitting write")),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the failure of {node} is in the record: {record:?}"))
}

async fn doomed(server: &TestingServer) -> (CuratorFramework, FaultProxy) {
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    (testkit::client(&proxy.connect_string()).await, proxy)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latch_leader_that_fails_delays_the_next_and_one_that_closes_does_not() {
    let server = TestingServer::start().await.unwrap();
    let wait = Timing::new().wait();
    let path = format!("{}/latch", unique_root("lock-delay-latch"));
    let (doomed_client, proxy) = doomed(&server).await;
    let first = LeaderLatch::builder(doomed_client.clone(), &path, "first")
        .lock_delay(DELAY)
        .build()
        .unwrap();
    first.start().await.unwrap();
    tokio::time::timeout(wait, first.await_leadership())
        .await
        .unwrap()
        .unwrap();
    let first_node = paths::node_name(&first.node_path().unwrap()).to_owned();

    let client = testkit::client(&server.connect_string()).await;
    let second = LeaderLatch::builder(client.clone(), &path, "second")
        .lock_delay(DELAY)
        .build()
        .unwrap();
    second.start().await.unwrap();
    testkit::expire_behind(&doomed_client, &proxy, &server.connect_string()).await;
    tokio::time::timeout(wait + DELAY, second.await_leadership())
        .await
        .expect("the next participant leads once the delay ran out")
        .unwrap();
    let (after, led_at) = record(&client, &path).await;
    let since = failure_since(&after, &first_node);
    assert!(
        led_at >= since + 2_000,
        "led {} ms after the failure was seen",
        led_at - since
    );

    // A leader that closes hands over at once, even with a delay no test would wait for.
    let third = LeaderLatch::builder(client.clone(), &path, "third")
        .lock_delay(NEVER)
        .build()
        .unwrap();
    third.start().await.unwrap();
    second.close().await.unwrap();
    tokio::time::timeout(wait, third.await_leadership())
        .await
        .expect("a closed leader hands over at once")
        .unwrap();
    third.close().await.unwrap();
    let (cleared, _) = record(&client, &path).await;
    assert!(cleared.entries().is_empty(), "{cleared:?}");
    proxy.resume();
    let _ = first.close().await;
    doomed_client.close().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_leader_that_fails_delays_the_next_and_one_that_returns_does_not() {
    let server = TestingServer::start().await.unwrap();
    let wait = Timing::new().wait();
    let path = format!("{}/selector", unique_root("lock-delay-selector"));
    let (led_tx, mut led) = mpsc::unbounded_channel::<(String, String)>();
    let selector = |client: CuratorFramework, id: &str, delay: Duration, lead_for: Option<()>| {
        let led_tx = led_tx.clone();
        let id_for_task = id.to_owned();
        LeaderSelector::builder(client, &path, id, move |context| {
            let led_tx = led_tx.clone();
            let id = id_for_task.clone();
            async move {
                let node = paths::node_name(context.node_path()).to_owned();
                let _ = led_tx.send((id, node));
                if lead_for.is_some() {
                    context.lost().await;
                }
            }
        })
        .lock_delay(delay)
        .build()
        .unwrap()
    };
    let (doomed_client, proxy) = doomed(&server).await;
    let first = selector(doomed_client.clone(), "first", DELAY, Some(()));
    first.start().await.unwrap();
    let (id, first_node) = tokio::time::timeout(wait, led.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(id, "first");

    let client = testkit::client(&server.connect_string()).await;
    let second = selector(client.clone(), "second", DELAY, None);
    second.start().await.unwrap();
    testkit::expire_behind(&doomed_client, &proxy, &server.connect_string()).await;
    let (id, _) = tokio::time::timeout(wait + DELAY, led.recv())
        .await
        .expect("the next participant leads once the delay ran out")
        .unwrap();
    assert_eq!(id, "second");
    let (after, led_at) = record(&client, &path).await;
    let since = failure_since(&after, &first_node);
    assert!(
        led_at >= since + 2_000,
        "led {} ms after the failure was seen",
        led_at - since
    );

    // Leaderships that end by returning hand over at once.
    let third = selector(client.clone(), "third", NEVER, None);
    let fourth = selector(client.clone(), "fourth", NEVER, None);
    third.start().await.unwrap();
    fourth.start().await.unwrap();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let (id, _) = tokio::time::timeout(wait, led.recv())
            .await
            .expect("an ended leadership hands over at once")
            .unwrap();
        ids.push(id);
    }
    ids.sort();
    assert_eq!(ids, ["fourth", "third"]);
    for s in [&second, &third, &fourth] {
        s.close().await.unwrap();
    }
    proxy.resume();
    let _ = first.close().await;
    doomed_client.close().await.unwrap();
    client.close().await.unwrap();
}
