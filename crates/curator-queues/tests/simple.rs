//! SimpleDistributedQueue against a real ZooKeeper: FIFO order, exactly-once delivery to
//! competing consumers, bad input, and nothing lost across a server restart.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::Error;
use curator_framework::retry::RetryNTimes;
use curator_queues::SimpleDistributedQueue;
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use curator_testkit::client;

#[tokio::test]
async fn one_producer_gets_fifo_order() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let queue = SimpleDistributedQueue::builder(c.clone(), &unique_root("simple-fifo"))
        .build()
        .unwrap();
    assert_eq!(queue.poll().await.unwrap(), None);
    assert_eq!(queue.peek().await.unwrap(), None);
    assert_eq!(queue.element().await, Err(Error::NoNode));
    assert_eq!(queue.remove().await, Err(Error::NoNode));
    for i in 0..20u8 {
        queue.offer(&[i]).await.unwrap();
    }
    assert_eq!(queue.peek().await.unwrap(), Some(vec![0]));
    assert_eq!(
        queue.element().await.unwrap(),
        vec![0],
        "peek removes nothing"
    );
    for i in 0..20u8 {
        assert_eq!(queue.take().await.unwrap(), vec![i]);
    }
    assert_eq!(
        queue
            .poll_timeout(Duration::from_millis(100))
            .await
            .unwrap(),
        None
    );

    // Too large: a typed error and nothing written.
    let huge = vec![0u8; 2 * 1024 * 1024];
    assert!(matches!(
        queue.offer(&huge).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(
        // The parent is a container: the server may already have reaped it.
        c.get_children()
            .for_path(queue.path())
            .await
            .map_or_else(
                |e| {
                    assert_eq!(e, Error::NoNode);
                    Vec::new()
                },
                |(c, _)| c
            )
            .is_empty()
    );

    // A waiting take wakes up for a new item.
    let waiting = tokio::spawn({
        let queue = SimpleDistributedQueue::builder(c.clone(), queue.path())
            .build()
            .unwrap();
        async move { queue.take().await }
    });
    queue.offer(b"late").await.unwrap();
    let got = tokio::time::timeout(Timing::new().wait(), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(got, b"late");
}

/// `producers` × `per_producer` distinct items, `consumers` competing; returns every item taken.
async fn produce_and_consume(
    connect: &str,
    path: &str,
    producers: usize,
    per_producer: usize,
    consumers: usize,
    during: impl std::future::Future<Output = ()>,
) -> (Vec<String>, usize) {
    let total = producers * per_producer;
    let taken = Arc::new(tokio::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for p in 0..producers {
        let queue = SimpleDistributedQueue::builder(client(connect).await, path)
            .build()
            .unwrap();
        tasks.push(tokio::spawn(async move {
            for i in 0..per_producer {
                queue.offer(format!("p{p}-{i}").as_bytes()).await.unwrap();
            }
        }));
    }
    let mut consumer_tasks = Vec::new();
    for _ in 0..consumers {
        let queue = SimpleDistributedQueue::builder(client(connect).await, path)
            .build()
            .unwrap();
        let taken = Arc::clone(&taken);
        consumer_tasks.push(tokio::spawn(async move {
            loop {
                {
                    let taken = taken.lock().await;
                    if taken.iter().collect::<HashSet<_>>().len() >= total {
                        return;
                    }
                }
                if let Some(item) = queue
                    .poll_timeout(Duration::from_millis(200))
                    .await
                    .unwrap()
                {
                    taken.lock().await.push(String::from_utf8(item).unwrap());
                }
            }
        }));
    }
    during.await;
    for task in tasks {
        task.await.unwrap();
    }
    for task in consumer_tasks {
        tokio::time::timeout(Timing::new().forever(), task)
            .await
            .expect("every item is taken")
            .unwrap();
    }
    let taken = taken.lock().await.clone();
    (taken, total)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producers_and_consumers_deliver_every_item_exactly_once() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("simple-many");
    let (taken, total) =
        produce_and_consume(&server.connect_string(), &path, 3, 40, 3, async {}).await;
    assert_eq!(taken.len(), total, "no item twice");
    let distinct: HashSet<&String> = taken.iter().collect();
    assert_eq!(distinct.len(), total, "every item once");
    // One producer's items come out in its order.
    for p in 0..3 {
        let mine: Vec<usize> = taken
            .iter()
            .filter_map(|item| item.strip_prefix(&format!("p{p}-")))
            .map(|i| i.parse().unwrap())
            .collect();
        let mut sorted = mine.clone();
        sorted.sort_unstable();
        // Consumers race, so only each consumer's own takes are ordered; all arrive.
        assert_eq!(sorted, (0..40).collect::<Vec<_>>());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_loses_no_item() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("simple-restart");
    let observer = client(&connect).await;
    let restarted = async {
        // Restart once some items are in flight.
        curator_testkit::eventually("items flow", || async {
            observer
                .check_exists()
                .for_path(&path)
                .await
                .unwrap()
                .is_some_and(|stat| stat.cversion >= 20)
        })
        .await;
        server.restart().await.unwrap();
    };
    let (taken, total) = produce_and_consume(&connect, &path, 2, 60, 2, restarted).await;
    let distinct: HashSet<&String> = taken.iter().collect();
    assert_eq!(distinct.len(), total, "no item lost");
    println!(
        "{} duplicate deliveries across the restart",
        taken.len() - distinct.len()
    );
}

/// A take that fails (the connection went while it read the item) leaves the item where it
/// was, and the next take of the same consumer gets it: the consumer does not pass over it to
/// the items after it.
#[tokio::test]
async fn a_take_that_fails_midway_does_not_pass_over_its_item() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = unique_root("simple-failed-take");
    let producer = SimpleDistributedQueue::builder(client(&server.connect_string()).await, &path)
        .build()
        .unwrap();
    // No retries: the take fails as soon as the connection does.
    let consumer_client = curator_testkit::started(
        curator_testkit::builder(&proxy.connect_string(), Duration::from_secs(3))
            .retry_policy(RetryNTimes::new(0, Duration::from_millis(10))),
    )
    .await;
    let consumer = SimpleDistributedQueue::builder(consumer_client.clone(), &path)
        .build()
        .unwrap();
    for item in [b"a", b"b", b"c"] {
        producer.offer(item).await.unwrap();
    }
    assert_eq!(consumer.poll().await.unwrap(), Some(b"a".to_vec()));

    // The consumer knows b and c from its listing; the read of b fails.
    proxy.pause();
    let failed = tokio::time::timeout(Timing::new().wait(), consumer.poll())
        .await
        .expect("the take fails with the connection");
    assert!(failed.is_err(), "{failed:?}");
    proxy.resume();
    consumer_client
        .block_until_connected(Timing::new().wait())
        .await
        .unwrap();
    assert_eq!(consumer.poll().await.unwrap(), Some(b"b".to_vec()));
    assert_eq!(consumer.poll().await.unwrap(), Some(b"c".to_vec()));
    assert_eq!(consumer.poll().await.unwrap(), None);
}
