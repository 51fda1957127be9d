//! Every recipe of the crate used exactly as the recipe contract says: `new` without options
//! (the simple queue), `builder(..)…build()` with them (one builder per queue type); `start` /
//! `close` (a second start is `AlreadyStarted`, a second close is fine); `listenable()` and
//! `stream()`; no task left once the recipes or the client are closed.

use std::sync::Arc;
use std::time::Duration;

use curator_framework::Error;
use curator_queues::{
    DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue, DistributedQueue,
    QueueSharder, SimpleDistributedQueue,
};
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::client;
use futures::StreamExt;
use parking_lot::Mutex;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_follow_the_recipe_contract() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let root = unique_root("queues-contract");

    let simple = SimpleDistributedQueue::new(c.clone(), &format!("{root}/simple")).unwrap();
    simple.offer(b"x").await.unwrap();
    assert_eq!(simple.take().await.unwrap(), b"x");
    // The builder (for the exactly-once option) reports bad input from `build()`.
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
    fn send_sync<T: Send + Sync>() {}
    send_sync::<curator_queues::SimpleDistributedQueueBuilder>();
    send_sync::<SimpleDistributedQueue>();

    let consumed = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&consumed);
    let fifo = DistributedQueue::<String>::builder(c.clone(), &format!("{root}/fifo"))
        .consumer(move |item: String| {
            sink.lock().push(item);
            futures::future::ready(Ok::<_, String>(()))
        })
        .build()
        .unwrap();
    let priority =
        DistributedPriorityQueue::<String>::builder(c.clone(), &format!("{root}/priority"))
            .build()
            .unwrap();
    let delay = DistributedDelayQueue::<String>::builder(c.clone(), &format!("{root}/delay"))
        .build()
        .unwrap();
    let ids = DistributedIdQueue::<String>::builder(c.clone(), &format!("{root}/ids"))
        .build()
        .unwrap();
    let sharder = QueueSharder::builder(
        c.clone(),
        &format!("{root}/sharded"),
        &format!("{root}/sharder-leader"),
    )
    .check_interval(Duration::from_secs(3600))
    .build()
    .unwrap();

    fifo.start().await.unwrap();
    priority.start().await.unwrap();
    delay.start().await.unwrap();
    ids.start().await.unwrap();
    sharder.start().await.unwrap();
    assert_eq!(fifo.start().await, Err(Error::AlreadyStarted));
    assert_eq!(priority.start().await, Err(Error::AlreadyStarted));
    assert_eq!(delay.start().await, Err(Error::AlreadyStarted));
    assert_eq!(ids.start().await, Err(Error::AlreadyStarted));
    assert_eq!(sharder.start().await, Err(Error::AlreadyStarted));
    assert!(
        c.metrics().recipe_tasks >= 2,
        "consumer and sharder run as client tasks"
    );

    // Puts are heard through listenable() and stream().
    let heard = Arc::new(Mutex::new(0));
    let count = Arc::clone(&heard);
    let _listener = priority
        .listenable()
        .add_listener(move |_| *count.lock() += 1);
    let mut puts = fifo.stream();
    fifo.put(&"one".to_owned()).await.unwrap();
    priority.put(&"p".to_owned(), 1).await.unwrap();
    delay
        .put_after(&"d".to_owned(), Duration::ZERO)
        .await
        .unwrap();
    ids.put(&"i".to_owned(), "id").await.unwrap();
    let put = tokio::time::timeout(Timing::new().wait(), puts.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(put.items, 1);
    curator_testkit::eventually(
        "the consumer takes the item and the listener hears",
        || async { consumed.lock().as_slice() == ["one"] && *heard.lock() == 1 },
    )
    .await;

    for closed in [
        fifo.close().await,
        priority.close().await,
        delay.close().await,
        ids.close().await,
        sharder.close().await,
    ] {
        closed.unwrap();
    }
    fifo.close().await.unwrap();
    sharder.close().await.unwrap();
    assert_eq!(fifo.put(&"late".to_owned()).await, Err(Error::Closed));
    assert_eq!(fifo.start().await, Err(Error::Closed));
    assert_eq!(c.metrics().recipe_tasks, 0, "closed recipes leave no task");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_ends_a_started_consumer() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let path = unique_root("queues-client-close");
    let taken = Arc::new(Mutex::new(0));
    let count = Arc::clone(&taken);
    let queue = DistributedQueue::<String>::builder(c.clone(), &path)
        .consumer(move |_: String| {
            *count.lock() += 1;
            futures::future::ready(Ok::<_, String>(()))
        })
        .build()
        .unwrap();
    queue.start().await.unwrap();
    assert!(c.metrics().recipe_tasks > 0);
    c.close().await;
    assert_eq!(
        c.metrics().recipe_tasks,
        0,
        "the client's close ended the consumer"
    );

    // An item put afterwards by another client stays in the queue.
    let other = client(&server.connect_string()).await;
    let producer = DistributedQueue::<String>::builder(other, &path)
        .build()
        .unwrap();
    producer.start().await.unwrap();
    producer.put(&"after".to_owned()).await.unwrap();
    assert_eq!(producer.len().await.unwrap(), 1);
    assert_eq!(*taken.lock(), 0);
    queue.close().await.unwrap();
}
