//! The recipe contract (`curator_testkit::contract`) for every queue kind and the sharder; the
//! simple queue, which is not long-lived, only builds (one builder, its input checked) and
//! works; and puts are refused once a queue is closed.

use std::sync::Arc;
use std::time::Duration;

use curator_framework::Error;
use curator_queues::{
    DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue, DistributedQueue,
    PutEvent, QueueSharder, QueueSharderBuilder, SimpleDistributedQueue,
    SimpleDistributedQueueBuilder,
};
use curator_test::{TestingServer, unique_root};
use curator_testkit::{client, contract};
use parking_lot::Mutex;

fn one_put(event: &PutEvent) -> bool {
    event.items == 1
}

#[test]
fn handles_and_builders_are_send_and_sync() {
    contract::send_sync::<SimpleDistributedQueue>();
    contract::send_sync::<SimpleDistributedQueueBuilder>();
    contract::send_sync::<DistributedQueue<String>>();
    contract::send_sync::<DistributedPriorityQueue<String>>();
    contract::send_sync::<QueueSharder>();
    contract::send_sync::<QueueSharderBuilder>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_simple_queue_builds_once_and_works() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let root = unique_root("queues-contract-simple");
    let simple = SimpleDistributedQueue::builder(c.clone(), &format!("{root}/simple"))
        .build()
        .unwrap();
    simple.offer(b"x").await.unwrap();
    assert_eq!(simple.take().await.unwrap(), b"x");
    // The builder reports bad input from `build()`.
    let builder = SimpleDistributedQueue::builder(c.clone(), "/").exactly_once();
    assert!(format!("{builder:?}").contains("exactly_once: true"));
    assert!(matches!(builder.build(), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        SimpleDistributedQueue::builder(c.clone(), "no-slash").build(),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        DistributedQueue::<String>::builder(c.clone(), "/")
            .exactly_once()
            .build(),
        Err(Error::InvalidArgument(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_queue_with_a_consumer_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let path = unique_root("queues-contract-fifo");
    let consumed = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&consumed);
    let fifo = DistributedQueue::<String>::builder(c.clone(), &path)
        .consumer(move |item: String| {
            sink.lock().push(item);
            futures::future::ready(Ok::<_, String>(()))
        })
        .build()
        .unwrap();
    contract::check_events(
        &c,
        &fifo,
        async || {
            fifo.put(&"one".to_owned()).await.unwrap();
            curator_testkit::eventually("the consumer takes the item", || async {
                consumed.lock().as_slice() == ["one"]
            })
            .await;
        },
        one_put,
    )
    .await;
    assert_eq!(fifo.put(&"late".to_owned()).await, Err(Error::Closed));

    // The client's close ends the consumer; an item put by another client stays queued.
    let c = client(&server.connect_string()).await;
    let producer =
        DistributedQueue::<String>::builder(client(&server.connect_string()).await, &path)
            .build()
            .unwrap();
    producer.start().await.unwrap();
    let taken = Arc::new(Mutex::new(0));
    let count = Arc::clone(&taken);
    let fifo = DistributedQueue::<String>::builder(c.clone(), &path)
        .consumer(move |_: String| {
            *count.lock() += 1;
            futures::future::ready(Ok::<_, String>(()))
        })
        .build()
        .unwrap();
    contract::ends_with_its_client(
        &c,
        &fifo,
        async || {
            fifo.put(&"two".to_owned()).await.unwrap();
            curator_testkit::eventually("the consumer takes the item", || async {
                *taken.lock() == 1
            })
            .await;
        },
        one_put,
        async || producer.put(&"after".to_owned()).await.unwrap(),
        |_| true,
    )
    .await;
    assert_eq!(producer.len().await.unwrap(), 1, "the item put after stays");
    assert_eq!(*taken.lock(), 1, "only the item put before was taken");
    producer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_queue_kind_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let root = unique_root("queues-contract-kinds");
    let priority =
        DistributedPriorityQueue::<String>::builder(c.clone(), &format!("{root}/priority"))
            .build()
            .unwrap();
    contract::check_events(
        &c,
        &priority,
        async || priority.put(&"p".to_owned(), 1).await.unwrap(),
        one_put,
    )
    .await;
    let delay = DistributedDelayQueue::<String>::builder(c.clone(), &format!("{root}/delay"))
        .build()
        .unwrap();
    contract::check_events(
        &c,
        &delay,
        async || {
            delay
                .put_after(&"d".to_owned(), Duration::ZERO)
                .await
                .unwrap();
        },
        one_put,
    )
    .await;
    let ids = DistributedIdQueue::<String>::builder(c.clone(), &format!("{root}/ids"))
        .build()
        .unwrap();
    contract::check_events(
        &c,
        &ids,
        async || ids.put(&"i".to_owned(), "id").await.unwrap(),
        one_put,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_sharder_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("queues-contract-sharder");
    let make = |c| {
        QueueSharder::builder(
            c,
            &format!("{root}/sharded"),
            &format!("{root}/sharder-leader"),
        )
        .check_interval(Duration::from_secs(3600))
        .build()
        .unwrap()
    };
    let c = client(&server.connect_string()).await;
    let sharder = make(c.clone());
    contract::check(&c, &sharder, async || {
        assert_eq!(sharder.shards().len(), 1, "start made a shard");
    })
    .await;

    let c = client(&server.connect_string()).await;
    contract::ends_with_its_client_quietly(&c, &make(c.clone())).await;
}
