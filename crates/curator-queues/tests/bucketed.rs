//! The bucketed layout against a real ZooKeeper, with small buckets (1 or 10 items) so a few
//! hundred items span many buckets: FIFO across bucket boundaries, competing producers and
//! consumers with no item lost or taken twice (and each consumer seeing each producer's items
//! in order), the bucket deletion races, the DistributedQueue consumer (plain and lock-safe),
//! exactly-once mode under cuts and session expiry, a server restart, and bad settings.

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use curator_framework::{CuratorFramework, Error};
use curator_queues::{DistributedPriorityQueue, DistributedQueue, SimpleDistributedQueue};
use curator_test::{FaultProxy, TestingServer, Timing, eventually, unique_root};
use curator_testkit::{children, client};
use support::{assert_each_once, chaos};

fn bucketed(client: CuratorFramework, path: &str, capacity: usize) -> SimpleDistributedQueue {
    SimpleDistributedQueue::builder(client, path)
        .bucketed(capacity)
        .build()
        .unwrap()
}

/// The bucket directories under `path`, lowest first.
async fn buckets(client: &CuratorFramework, path: &str) -> Vec<String> {
    children(client, path)
        .await
        .into_iter()
        .filter(|c| c.starts_with("bucket-"))
        .collect()
}

fn bucket_number(name: &str) -> u64 {
    name.trim_start_matches("bucket-").parse().unwrap()
}

/// Each consumer saw each producer's items (`p<p>-<i>`) in the producer's order.
fn assert_fifo_per_consumer(per_consumer: &[Vec<String>]) {
    for (c, taken) in per_consumer.iter().enumerate() {
        let mut last: HashMap<&str, usize> = HashMap::new();
        for item in taken {
            let (producer, i) = item.split_once('-').unwrap();
            let i: usize = i.parse().unwrap();
            if let Some(before) = last.insert(producer, i) {
                assert!(
                    before < i,
                    "consumer {c} took {producer}-{i} after {producer}-{before}"
                );
            }
        }
    }
}

#[tokio::test]
async fn bad_settings_are_typed_errors() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let path = unique_root("bucketed-bad");
    assert!(matches!(
        SimpleDistributedQueue::builder(c.clone(), &path)
            .bucketed(0)
            .build(),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        DistributedQueue::<String>::builder(c.clone(), &path)
            .bucketed(0)
            .build(),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        DistributedQueue::<String>::builder(c.clone(), &path)
            .bucketed(10)
            .max_items(5)
            .build(),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        DistributedPriorityQueue::<String>::builder(c.clone(), &path)
            .bucketed(10)
            .build(),
        Err(Error::InvalidArgument(_))
    ));
    // Too large an item: refused before anything is written.
    let queue = bucketed(c.clone(), &path, 10);
    assert!(matches!(
        queue.offer(&vec![0u8; 2 * 1024 * 1024]).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(children(&c, &path).await.is_empty());
}

#[tokio::test]
async fn one_producer_gets_fifo_order_across_buckets_and_drained_buckets_go() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let path = unique_root("bucketed-fifo");
    let queue = bucketed(c.clone(), &path, 10);
    assert_eq!(queue.poll().await.unwrap(), None);
    for i in 0..250u32 {
        queue.offer(&i.to_be_bytes()).await.unwrap();
    }
    let layout = buckets(&c, &path).await;
    assert_eq!(layout.len(), 26, "25 full buckets and the next: {layout:?}");
    for bucket in &layout[..25] {
        assert_eq!(children(&c, &format!("{path}/{bucket}")).await.len(), 10);
    }
    assert_eq!(
        queue.peek().await.unwrap(),
        Some(0u32.to_be_bytes().to_vec())
    );
    // Another handle takes; the first keeps no stale view that matters.
    let consumer = bucketed(c.clone(), &path, 10);
    for i in 0..250u32 {
        assert_eq!(consumer.take().await.unwrap(), i.to_be_bytes());
    }
    assert_eq!(consumer.poll().await.unwrap(), None);
    assert_eq!(
        buckets(&c, &path).await,
        ["bucket-0000000025"],
        "drained buckets are deleted, the highest stays"
    );

    // A waiting take wakes for an item in the current bucket, and for one in a new bucket.
    let waiting = tokio::spawn({
        let consumer = bucketed(c.clone(), &path, 10);
        async move {
            let first = consumer.take().await?;
            let second = consumer.take().await?;
            Ok::<_, Error>((first, second))
        }
    });
    queue.offer(b"late").await.unwrap();
    let filler = bucketed(c.clone(), &path, 10);
    for _ in 0..20 {
        filler.offer(b"filler").await.unwrap();
    }
    let (first, _) = tokio::time::timeout(Timing::new().wait(), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first, b"late");
}

#[tokio::test]
async fn a_stale_producer_fills_in_late_or_moves_on_when_its_bucket_is_gone() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let path = unique_root("bucketed-stale");
    let stale = bucketed(c.clone(), &path, 10);
    let gone = bucketed(c.clone(), &path, 10);
    let fresh = bucketed(c.clone(), &path, 10);
    let consumer = bucketed(c.clone(), &path, 10);
    // The stale producers know bucket 0 only.
    stale.offer(b"s0").await.unwrap();
    gone.offer(b"g0").await.unwrap();
    for i in 0..10 {
        fresh.offer(format!("f{i}").as_bytes()).await.unwrap();
    }
    // Bucket 0: s0, g0, f0..f7 (its tenth item opened bucket 1); bucket 1: f8, f9.
    assert_eq!(buckets(&c, &path).await.len(), 2);
    assert_eq!(consumer.take().await.unwrap(), b"s0");
    assert_eq!(consumer.take().await.unwrap(), b"g0");
    for i in 0..8 {
        assert_eq!(consumer.take().await.unwrap(), format!("f{i}").as_bytes());
    }
    // Bucket 0 is empty but not yet deleted: a late item still lands there, and is next.
    stale.offer(b"late").await.unwrap();
    assert_eq!(consumer.take().await.unwrap(), b"late");
    assert_eq!(consumer.take().await.unwrap(), b"f8");
    assert_eq!(consumer.take().await.unwrap(), b"f9");
    // This scan deleted the drained bucket 0 (bucket 1 is newer).
    assert_eq!(consumer.poll().await.unwrap(), None);
    assert_eq!(buckets(&c, &path).await, ["bucket-0000000001"]);
    // The other stale producer meets `NoNode`, looks again and puts into bucket 1.
    gone.offer(b"after").await.unwrap();
    assert_eq!(
        children(&c, &format!("{path}/bucket-0000000001"))
            .await
            .len(),
        1
    );
    assert_eq!(consumer.take().await.unwrap(), b"after");
    assert_eq!(buckets(&c, &path).await, ["bucket-0000000001"]);
}

/// `producers` × `per_producer` items `p<p>-<i>`, `consumers` competing `SimpleDistributedQueue`
/// handles (each on its own client); returns what each consumer took, in its order.
async fn produce_and_consume(
    connect: &str,
    path: &str,
    capacity: usize,
    (producers, per_producer, consumers): (usize, usize, usize),
    during: impl std::future::Future<Output = ()>,
) -> Vec<Vec<String>> {
    let total = producers * per_producer;
    // Distinct items taken: across a restart an item may be delivered twice (at least once),
    // so the consumers stop when every item was seen, not after `total` deliveries.
    let seen = Arc::new(parking_lot::Mutex::new(std::collections::HashSet::new()));
    let mut tasks = Vec::new();
    for p in 0..producers {
        let queue = bucketed(client(connect).await, path, capacity);
        tasks.push(tokio::spawn(async move {
            for i in 0..per_producer {
                queue.offer(format!("p{p}-{i}").as_bytes()).await.unwrap();
            }
        }));
    }
    let mut consumer_tasks = Vec::new();
    for _ in 0..consumers {
        let queue = bucketed(client(connect).await, path, capacity);
        let seen = Arc::clone(&seen);
        consumer_tasks.push(tokio::spawn(async move {
            let mut taken = Vec::new();
            while seen.lock().len() < total {
                if let Some(item) = queue
                    .poll_timeout(Duration::from_millis(200))
                    .await
                    .unwrap()
                {
                    let item = String::from_utf8(item).unwrap();
                    seen.lock().insert(item.clone());
                    taken.push(item);
                }
            }
            taken
        }));
    }
    during.await;
    for task in tasks {
        tokio::time::timeout(Timing::new().forever(), task)
            .await
            .expect("every item is offered")
            .unwrap();
    }
    let mut taken = Vec::new();
    for task in consumer_tasks {
        taken.push(
            tokio::time::timeout(Timing::new().forever(), task)
                .await
                .expect("every item is taken")
                .unwrap(),
        );
    }
    taken
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn competing_producers_and_consumers_over_hundreds_of_buckets() {
    let server = TestingServer::start().await.unwrap();
    let observer = client(&server.connect_string()).await;
    let path = unique_root("bucketed-many");
    let taken =
        produce_and_consume(&server.connect_string(), &path, 10, (3, 400, 3), async {}).await;
    let all: Vec<String> = taken.iter().flatten().cloned().collect();
    assert_each_once(&all, 1200);
    assert_fifo_per_consumer(&taken);
    let left = buckets(&observer, &path).await;
    assert_eq!(left.len(), 1, "only the highest bucket stays: {left:?}");
    // Each bucket holds at most 10 + (producers - 1) items.
    assert!(
        bucket_number(&left[0]) >= 100,
        "spanned {} buckets",
        left[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_item_buckets_race_creation_and_deletion_without_loss() {
    // Capacity 1: every put opens a bucket and every take drains one, so producers constantly
    // put into buckets consumers are deleting.
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("bucketed-one");
    let taken =
        produce_and_consume(&server.connect_string(), &path, 1, (4, 100, 3), async {}).await;
    let all: Vec<String> = taken.iter().flatten().cloned().collect();
    assert_each_once(&all, 400);
    assert_fifo_per_consumer(&taken);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_loses_no_item() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("bucketed-restart");
    let observer = client(&connect).await;
    let restarted = async {
        eventually("items flow over several buckets", || async {
            buckets(&observer, &path)
                .await
                .last()
                .is_some_and(|b| bucket_number(b) >= 3)
        })
        .await;
        server.restart().await.unwrap();
    };
    let taken = produce_and_consume(&connect, &path, 10, (2, 150, 2), restarted).await;
    let all: Vec<String> = taken.iter().flatten().cloned().collect();
    let mut distinct = all.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 300, "no item lost");
    println!(
        "{} duplicate deliveries across the restart (at least once)",
        all.len() - distinct.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distributed_queue_consumers_plain_and_lock_safe_take_every_item_once() {
    let server = TestingServer::start().await.unwrap();
    let observer = client(&server.connect_string()).await;
    for lock_safe in [false, true] {
        let path = unique_root("bucketed-dq");
        let producer = DistributedQueue::<String>::builder(observer.clone(), &path)
            .bucketed(10)
            .build()
            .unwrap();
        producer.start().await.unwrap();
        // A backlog before the consumers start: len counts every bucket.
        for i in 0..25 {
            producer.put(&format!("p0-{i}")).await.unwrap();
        }
        assert_eq!(producer.len().await.unwrap(), 25);
        let taken = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        let mut consumers = Vec::new();
        for c in 0..2 {
            let (taken, tx) = (Arc::clone(&taken), tx.clone());
            let mut builder =
                DistributedQueue::<String>::builder(client(&server.connect_string()).await, &path)
                    .bucketed(10)
                    .consumer(move |item: String| {
                        taken.lock().push((c, item));
                        let _ = tx.send(());
                        async { Ok::<_, std::io::Error>(()) }
                    });
            if lock_safe {
                builder = builder.lock_path(&format!("{path}-locks"));
            }
            let queue = builder.build().unwrap();
            queue.start().await.unwrap();
            consumers.push(queue);
        }
        let mut producers = Vec::new();
        for p in 1..3 {
            let queue =
                DistributedQueue::<String>::builder(client(&server.connect_string()).await, &path)
                    .bucketed(10)
                    .build()
                    .unwrap();
            queue.start().await.unwrap();
            producers.push(tokio::spawn(async move {
                for i in 0..150 {
                    queue.put(&format!("p{p}-{i}")).await.unwrap();
                }
                // put_multi: one node, several items, across the same buckets.
                queue
                    .put_multi(&[format!("p{p}-150"), format!("p{p}-151")])
                    .await
                    .unwrap();
            }));
        }
        for task in producers {
            task.await.unwrap();
        }
        let total = 25 + 2 * 152;
        for _ in 0..total {
            tokio::time::timeout(Timing::new().forever(), rx.recv())
                .await
                .expect("every item is consumed")
                .unwrap();
        }
        // The consumers' next scan deletes the drained buckets (lazily: a lock-safe consumer
        // deletes its last item after consuming it).
        eventually("drained buckets are deleted", || async {
            buckets(&observer, &path).await.len() == 1
        })
        .await;
        for queue in &consumers {
            queue.close().await.unwrap();
        }
        let taken = taken.lock().clone();
        let all: Vec<String> = taken.iter().map(|(_, item)| item.clone()).collect();
        assert_each_once(&all, total);
        let per_consumer: Vec<Vec<String>> = (0..2)
            .map(|c| {
                taken
                    .iter()
                    .filter(|(who, _)| *who == c)
                    .map(|(_, item)| item.clone())
                    .collect()
            })
            .collect();
        assert_fifo_per_consumer(&per_consumer);
        assert_eq!(producer.len().await.unwrap(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_under_cuts_and_session_expiry_delivers_each_item_once() {
    const PRODUCERS: usize = 3;
    const PER_PRODUCER: usize = 100;
    const CONSUMERS: usize = 3;
    let total = PRODUCERS * PER_PRODUCER;
    let server = TestingServer::start().await.unwrap();
    let observer = client(&server.connect_string()).await;
    let path = unique_root("bucketed-eo-chaos");
    let mut proxies = Vec::new();
    let taken = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let queue_on = |client: CuratorFramework| {
        SimpleDistributedQueue::builder(client, &path)
            .bucketed(10)
            .exactly_once()
            .build()
            .unwrap()
    };
    let mut consumers = Vec::new();
    for _ in 0..CONSUMERS {
        let proxy = Arc::new(FaultProxy::start(&server.connect_string()).await.unwrap());
        let client = client(&proxy.connect_string()).await;
        let queue = queue_on(client.clone());
        proxies.push((proxy, Some(client)));
        let (taken, count) = (Arc::clone(&taken), Arc::clone(&count));
        consumers.push(tokio::spawn(async move {
            while count.load(Ordering::SeqCst) < total {
                // An error means not taken by this consumer.
                if let Ok(Some(item)) = queue.poll_timeout(Duration::from_millis(200)).await {
                    taken.lock().push(String::from_utf8(item).unwrap());
                    count.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }
    let mut producers = Vec::new();
    for p in 0..PRODUCERS {
        let proxy = Arc::new(FaultProxy::start(&server.connect_string()).await.unwrap());
        let client = client(&proxy.connect_string()).await;
        let queue = queue_on(client.clone());
        proxies.push((proxy, Some(client)));
        producers.push(tokio::spawn(async move {
            for i in 0..PER_PRODUCER {
                let item = format!("p{p}-{i}");
                // An error means not stored: offering again cannot duplicate it.
                while let Err(error) = queue.offer(item.as_bytes()).await {
                    assert_ne!(error, Error::Closed);
                }
            }
        }));
    }
    let done = Arc::new(AtomicBool::new(false));
    // Two of the sessions expire on the way (the 4th cut's and the 11th's).
    let chaos = tokio::spawn(chaos(
        proxies,
        &[3, 10],
        server.connect_string(),
        Arc::clone(&done),
    ));
    for task in producers.into_iter().chain(consumers) {
        tokio::time::timeout(Timing::new().forever(), task)
            .await
            .expect("every item is offered and taken")
            .unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let cuts = chaos.await.unwrap();
    assert!(cuts > 5, "faults happened: {cuts}");
    assert_each_once(&taken.lock(), total);
    let left = buckets(&observer, &path).await;
    assert_eq!(left.len(), 1);
    assert!(
        children(&observer, &format!("{path}/{}", left[0]))
            .await
            .is_empty()
    );
    eventually("every outcome marker is deleted", || async {
        children(&observer, &format!("{path}-outcomes"))
            .await
            .is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_safe_consumer_hung_in_an_item_neither_blocks_later_buckets_nor_loses_it() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("bucketed-lock-safe");
    let (path, locks) = (format!("{root}/q"), format!("{root}/locks"));
    let doomed_client = client(&server.connect_string()).await;
    // The doomed consumer takes the first item and hangs in it.
    let (got_tx, mut got_rx) = tokio::sync::mpsc::unbounded_channel();
    let release = Arc::new(tokio::sync::Notify::new());
    let doomed = DistributedQueue::<String>::builder(doomed_client.clone(), &path)
        .bucketed(1)
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
    let wait = Timing::new().wait();
    assert_eq!(
        tokio::time::timeout(wait, got_rx.recv())
            .await
            .unwrap()
            .unwrap(),
        "precious"
    );
    // Every item is a bucket of its own (capacity 1): the next ones are in later buckets.
    doomed.put(&"second".to_owned()).await.unwrap();
    doomed.put(&"third".to_owned()).await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let healthy =
        DistributedQueue::<String>::builder(client(&server.connect_string()).await, &path)
            .bucketed(1)
            .lock_path(&locks)
            .consumer(move |item: String| {
                let _ = tx.send(item);
                async { Ok::<_, String>(()) }
            })
            .build()
            .unwrap();
    healthy.start().await.unwrap();
    // The locked bucket does not hold the healthy consumer back.
    assert_eq!(
        tokio::time::timeout(wait, rx.recv())
            .await
            .unwrap()
            .unwrap(),
        "second"
    );
    assert_eq!(
        tokio::time::timeout(wait, rx.recv())
            .await
            .unwrap()
            .unwrap(),
        "third"
    );
    // The doomed consumer's session ends: its lock goes, the item is not lost.
    doomed_client.inject_session_expiration().await.unwrap();
    assert_eq!(
        tokio::time::timeout(wait, rx.recv())
            .await
            .unwrap()
            .unwrap(),
        "precious"
    );
    eventually("the item is deleted once consumed", || async {
        healthy.is_empty().await.unwrap()
    })
    .await;
    let observer = client(&server.connect_string()).await;
    eventually("drained buckets are deleted", || async {
        buckets(&observer, &path).await.len() == 1
    })
    .await;
    release.notify_one();
    doomed.close().await.unwrap();
    healthy.close().await.unwrap();
    assert!(children(&observer, &locks).await.is_empty(), "no lock left");
}
