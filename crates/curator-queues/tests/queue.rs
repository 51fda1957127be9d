//! DistributedQueue and its priority, delay and id variants against a real ZooKeeper:
//! Curator's bytes, order, error modes, lock-safe consumption through a consumer's death, and
//! nothing lost across a server restart.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use curator_framework::Error;
use curator_framework::codec::Utf8;
use curator_queues::{
    DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue, DistributedQueue,
    ErrorMode,
};
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::{client, raw};
use futures::StreamExt;
use tokio::sync::mpsc;

type Forward = Box<dyn Fn(String) -> futures::future::Ready<Result<(), String>> + Send + Sync>;

/// A consumer that forwards every item to a channel.
fn forward() -> (Forward, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let consumer: Forward = Box::new(move |item: String| {
        let _ = tx.send(item);
        futures::future::ready(Ok(()))
    });
    (consumer, rx)
}

async fn next(rx: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Timing::new().wait(), rx.recv())
        .await
        .expect("an item in time")
        .expect("the consumer runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_are_stored_as_curator_stores_them_and_consumed_in_order() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let path = unique_root("queue-fifo");
    let queue = DistributedQueue::<String>::builder(c.clone(), &path)
        .codec(Utf8)
        .build()
        .unwrap();
    assert_eq!(
        queue.put(&"early".to_owned()).await,
        Err(Error::NotStarted),
        "puts wait for start, as in Curator"
    );
    queue.start().await.unwrap();
    let mut puts = queue.stream();
    queue.put(&"hi".to_owned()).await.unwrap();
    let put = puts.next().await.unwrap();
    assert_eq!(put.items, 1);
    assert!(
        put.node.starts_with(&format!("{path}/queue-")),
        "{}",
        put.node
    );
    assert_eq!(
        raw(&c, &put.node).await,
        [0, 1, 0, 1, 1, 0, 0, 0, 2, b'h', b'i', 2],
        "Curator's envelope"
    );
    queue
        .put_multi(&["a".to_owned(), "b".to_owned()])
        .await
        .unwrap();
    for i in 0..5 {
        queue.put(&format!("n{i}")).await.unwrap();
    }
    let (forwarding, mut rx) = forward();
    let consumer = DistributedQueue::<String>::builder(c.clone(), &path)
        .codec(Utf8)
        .consumer(forwarding)
        .build()
        .unwrap();
    consumer.start().await.unwrap();
    let mut got = Vec::new();
    for _ in 0..8 {
        got.push(next(&mut rx).await);
    }
    assert_eq!(got, ["hi", "a", "b", "n0", "n1", "n2", "n3", "n4"]);
    // Items put while the consumer waits arrive too.
    queue.put(&"later".to_owned()).await.unwrap();
    assert_eq!(next(&mut rx).await, "later");
    consumer.close().await.unwrap();
    assert!(queue.is_empty().await.unwrap());

    // Too large: a typed error, nothing written.
    let huge = "x".repeat(2 * 1024 * 1024);
    assert!(matches!(
        queue.put(&huge).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(queue.is_empty().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_items_are_requeued_or_deleted_per_error_mode() {
    let server = TestingServer::start().await.unwrap();
    for mode in [ErrorMode::Requeue, ErrorMode::Delete] {
        let root = unique_root("queue-errors");
        let failed_once = Arc::new(AtomicBool::new(false));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let queue = DistributedQueue::<String>::builder(
            client(&server.connect_string()).await,
            &format!("{root}/q"),
        )
        .lock_path(&format!("{root}/locks"))
        .error_mode(mode)
        .consumer({
            let failed_once = Arc::clone(&failed_once);
            move |item: String| {
                let fail = item == "flaky" && !failed_once.swap(true, Ordering::SeqCst);
                let _ = tx.send((item, fail));
                async move { if fail { Err("not now") } else { Ok(()) } }
            }
        })
        .build()
        .unwrap();
        let producer = DistributedQueue::<String>::builder(
            client(&server.connect_string()).await,
            &format!("{root}/q"),
        )
        .build()
        .unwrap();
        producer.start().await.unwrap();
        producer.put(&"flaky".to_owned()).await.unwrap();
        producer.put(&"fine".to_owned()).await.unwrap();
        queue.start().await.unwrap();
        let mut seen = vec![
            tokio::time::timeout(Timing::new().wait(), rx.recv())
                .await
                .unwrap()
                .unwrap(),
            tokio::time::timeout(Timing::new().wait(), rx.recv())
                .await
                .unwrap()
                .unwrap(),
        ];
        if mode == ErrorMode::Requeue {
            seen.push(
                tokio::time::timeout(Timing::new().wait(), rx.recv())
                    .await
                    .unwrap()
                    .unwrap(),
            );
            assert_eq!(
                seen,
                [
                    ("flaky".into(), true),
                    ("fine".into(), false),
                    ("flaky".into(), false)
                ],
                "requeued at the tail"
            );
        } else {
            assert_eq!(seen, [("flaky".into(), true), ("fine".into(), false)]);
        }
        curator_testkit::eventually("the queue drains", || async {
            queue.is_empty().await.unwrap()
        })
        .await;
        queue.close().await.unwrap();
        assert!(
            tokio::time::timeout(Duration::from_millis(200), rx.recv())
                .await
                .map_or(true, |item| item.is_none()),
            "nothing else"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_consumers_item_goes_to_another_consumer() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("queue-lock-safe");
    let (path, locks) = (format!("{root}/q"), format!("{root}/locks"));
    let doomed_client = client(&server.connect_string()).await;
    // The doomed consumer takes the item and hangs in it.
    let (got_tx, mut got_rx) = mpsc::unbounded_channel();
    let release = Arc::new(tokio::sync::Notify::new());
    let doomed = DistributedQueue::<String>::builder(doomed_client.clone(), &path)
        .lock_path(&locks)
        .consumer({
            let release = Arc::clone(&release);
            move |item: String| {
                let _ = got_tx.send(item);
                let release = Arc::clone(&release);
                async move {
                    release.notified().await;
                    Ok::<_, String>(())
                }
            }
        })
        .build()
        .unwrap();
    doomed.start().await.unwrap();
    doomed.put(&"precious".to_owned()).await.unwrap();
    assert_eq!(next(&mut got_rx).await, "precious");

    // A second consumer waits: the item is locked.
    let (forwarding, mut rx) = forward();
    let healthy =
        DistributedQueue::<String>::builder(client(&server.connect_string()).await, &path)
            .lock_path(&locks)
            .consumer(forwarding)
            .build()
            .unwrap();
    healthy.start().await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(300), rx.recv())
            .await
            .is_err(),
        "not while the lock is held"
    );
    // The doomed consumer's session ends: its lock goes, the item is not lost.
    doomed_client.inject_session_expiration().await.unwrap();
    assert_eq!(next(&mut rx).await, "precious");
    curator_testkit::eventually("the item is deleted once consumed", || async {
        healthy.is_empty().await.unwrap()
    })
    .await;
    release.notify_one();
    doomed.close().await.unwrap();
    healthy.close().await.unwrap();
    let c = client(&server.connect_string()).await;
    assert!(
        c.get_children()
            .for_path(&locks)
            .await
            .map(|(l, _)| l)
            .unwrap_or_default()
            .is_empty(),
        "no lock left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priority_delay_and_id_queues_order_their_items() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;

    // Each kind: a producer handle puts, then a consumer handle on the same path consumes.
    let path = unique_root("queue-priority");
    let priority = DistributedPriorityQueue::<String>::builder(c.clone(), &path)
        .build()
        .unwrap();
    priority.start().await.unwrap();
    for (item, p) in [("low", 10), ("urgent", -5), ("normal", 0), ("urgent2", -5)] {
        priority.put(&item.to_owned(), p).await.unwrap();
    }
    let (forwarding, mut rx) = forward();
    let consumer = DistributedPriorityQueue::<String>::builder(c.clone(), &path)
        .consumer(forwarding)
        .build()
        .unwrap();
    consumer.start().await.unwrap();
    let mut got = Vec::new();
    for _ in 0..4 {
        got.push(next(&mut rx).await);
    }
    assert_eq!(got, ["urgent", "urgent2", "normal", "low"]);
    consumer.close().await.unwrap();

    let path = unique_root("queue-delay");
    let delay = DistributedDelayQueue::<String>::builder(c.clone(), &path)
        .build()
        .unwrap();
    delay.start().await.unwrap();
    let later = SystemTime::now() + Duration::from_millis(700);
    delay.put_at(&"later".to_owned(), later).await.unwrap();
    delay
        .put_after(&"now".to_owned(), Duration::ZERO)
        .await
        .unwrap();
    let (forwarding, mut rx) = forward();
    let consumer = DistributedDelayQueue::<String>::builder(c.clone(), &path)
        .consumer(forwarding)
        .build()
        .unwrap();
    consumer.start().await.unwrap();
    assert_eq!(next(&mut rx).await, "now");
    assert_eq!(next(&mut rx).await, "later");
    assert!(SystemTime::now() >= later, "not before its time");
    consumer.close().await.unwrap();

    let path = unique_root("queue-id");
    let ids = DistributedIdQueue::<String>::builder(c.clone(), &path)
        .build()
        .unwrap();
    ids.start().await.unwrap();
    ids.put(&"a1".to_owned(), "a").await.unwrap();
    ids.put(&"b1".to_owned(), "b/x").await.unwrap();
    ids.put(&"a2".to_owned(), "a").await.unwrap();
    ids.put(&"c1".to_owned(), "c").await.unwrap();
    assert_eq!(ids.remove("a").await.unwrap(), 2);
    assert_eq!(ids.remove("nobody").await.unwrap(), 0);
    let (forwarding, mut rx) = forward();
    let consumer = DistributedIdQueue::<String>::builder(c.clone(), &path)
        .consumer(forwarding)
        .build()
        .unwrap();
    consumer.start().await.unwrap();
    assert_eq!(next(&mut rx).await, "b1");
    assert_eq!(next(&mut rx).await, "c1");
    consumer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_loses_no_item_of_a_lock_safe_queue() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let connect = server.connect_string();
    let root = unique_root("queue-restart");
    let (path, locks) = (format!("{root}/q"), format!("{root}/locks"));
    let total = 120;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut consumers = Vec::new();
    for _ in 0..2 {
        let tx = tx.clone();
        let queue = DistributedQueue::<String>::builder(client(&connect).await, &path)
            .lock_path(&locks)
            .consumer(move |item: String| {
                let _ = tx.send(item);
                futures::future::ready(Ok::<_, String>(()))
            })
            .build()
            .unwrap();
        queue.start().await.unwrap();
        consumers.push(queue);
    }
    let producer = DistributedQueue::<String>::builder(client(&connect).await, &path)
        .build()
        .unwrap();
    producer.start().await.unwrap();
    let producing = tokio::spawn(async move {
        for i in 0..total {
            producer.put(&format!("item-{i}")).await.unwrap();
        }
    });
    let mut seen = Vec::new();
    while seen.len() < 20 {
        seen.push(next(&mut rx).await);
    }
    server.restart().await.unwrap();
    producing.await.unwrap();
    let mut distinct: HashSet<String> = seen.iter().cloned().collect();
    while distinct.len() < total {
        let item = tokio::time::timeout(Timing::new().forever(), rx.recv())
            .await
            .expect("no item lost")
            .unwrap();
        seen.push(item.clone());
        distinct.insert(item);
    }
    println!(
        "{} duplicate deliveries across the restart",
        seen.len() - distinct.len()
    );
    for consumer in consumers {
        consumer.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sharder_adds_shards_as_they_fill_up() {
    use curator_queues::QueueSharder;
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("queue-sharder");
    let sharder = async || {
        QueueSharder::builder(
            client(&server.connect_string()).await,
            &format!("{root}/q"),
            &format!("{root}/leader"),
        )
        .threshold(5)
        .max_shards(2)
        .check_interval(Duration::from_secs(3600))
        .build()
        .unwrap()
    };
    let leader = sharder().await;
    leader.start().await.unwrap();
    let follower = sharder().await;
    follower.start().await.unwrap();
    assert_eq!(leader.shards().len(), 1, "one shard to begin with");
    assert_eq!(follower.shards(), leader.shards());
    let shard = leader.pick();
    let queue = DistributedQueue::<String>::builder(client(&server.connect_string()).await, &shard)
        .build()
        .unwrap();
    queue.start().await.unwrap();
    for i in 0..5 {
        queue.put(&format!("e{i}")).await.unwrap();
    }
    curator_testkit::eventually("the leader is elected", || async {
        leader.check_now().await.unwrap() == 2 || follower.check_now().await.unwrap() == 2
    })
    .await;
    for _ in 0..5 {
        queue.put(&"more".to_owned()).await.unwrap();
    }
    assert_eq!(leader.check_now().await.unwrap(), 2, "never over the limit");
    assert_eq!(follower.check_now().await.unwrap(), 2);
    leader.close().await.unwrap();
    follower.close().await.unwrap();
}
