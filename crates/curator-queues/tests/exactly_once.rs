//! The exactly-once mode of SimpleDistributedQueue and DistributedQueue against a real
//! ZooKeeper: a take or offer whose reply is lost (the proxy holds replies, then cuts the
//! connection) counts once; the taker's session expiring in the middle changes nothing; and
//! competing producers and consumers under repeated cuts deliver every item exactly once and
//! leave no outcome marker behind.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use curator_queues::{DistributedQueue, SimpleDistributedQueue};
use curator_test::{FaultProxy, TestingServer, Timing, eventually, expire_session, unique_root};
use curator_testkit::{children, client};
use support::{assert_each_once, chaos};
use tracing_subscriber::layer::{Context, SubscriberExt};

/// Holds the proxy's replies the moment the next transaction (a multi) is created, before it is
/// sent: the multi reaches the server and is applied, its reply does not come back.
struct LoseNextMultiReply {
    proxy: Arc<FaultProxy>,
    armed: Arc<AtomicBool>,
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for LoseNextMultiReply {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: Context<'_, S>,
    ) {
        if attrs.metadata().name() == "zk.transaction" && self.armed.swap(false, Ordering::SeqCst) {
            self.proxy.pause_replies();
        }
    }
}

/// Arms [`LoseNextMultiReply`] for this thread (the tests using it run on a current-thread
/// runtime, so the client's tasks see it too).
fn lose_next_multi_reply(
    proxy: &Arc<FaultProxy>,
) -> (tracing::subscriber::DefaultGuard, Arc<AtomicBool>) {
    let armed = Arc::new(AtomicBool::new(true));
    let subscriber = tracing_subscriber::registry().with(LoseNextMultiReply {
        proxy: Arc::clone(proxy),
        armed: Arc::clone(&armed),
    });
    (tracing::subscriber::set_default(subscriber), armed)
}

/// One offer and take, so the outcome directory exists before a test holds the replies of the
/// next multi (the first write of a queue otherwise fails once on the missing directory).
async fn warm_up(queue: &SimpleDistributedQueue) {
    queue.offer(b"warm-up").await.unwrap();
    assert_eq!(queue.take().await.unwrap(), b"warm-up");
}

fn outcomes(path: &str) -> String {
    format!("{path}-outcomes")
}

/// Loses the held replies for good: cuts the connection, then lets bytes flow again.
fn cut(proxy: &FaultProxy) {
    proxy.drop_connections();
    proxy.resume();
}

#[tokio::test]
async fn a_take_whose_reply_is_lost_is_delivered_once_and_its_marker_deleted() {
    let server = TestingServer::start().await.unwrap();
    let proxy = Arc::new(FaultProxy::start(&server.connect_string()).await.unwrap());
    let observer = client(&server.connect_string()).await;
    let taker = client(&proxy.connect_string()).await;
    let path = unique_root("eo-lost-take");
    let queue = SimpleDistributedQueue::builder(taker.clone(), &path)
        .exactly_once()
        .build()
        .unwrap();
    warm_up(&queue).await;
    let plain = SimpleDistributedQueue::builder(observer.clone(), &path)
        .build()
        .unwrap();
    plain.offer(b"only").await.unwrap();

    let (_guard, armed) = lose_next_multi_reply(&proxy);
    let take = tokio::spawn(async move { queue.take().await.map(|item| (item, queue)) });
    eventually("the held request reaches the server", || async {
        children(&observer, &path).await.is_empty()
            && children(&observer, &outcomes(&path)).await.len() == 1
    })
    .await;
    cut(&proxy);
    assert!(!armed.load(Ordering::SeqCst));
    let (item, queue) = tokio::time::timeout(Timing::new().wait(), take)
        .await
        .expect("the take ends")
        .unwrap()
        .expect("the take learns it applied");
    assert_eq!(item, b"only");
    assert!(taker.metrics().retries >= 1, "the reply was lost");
    assert_eq!(
        children(&observer, &outcomes(&path)).await,
        Vec::<String>::new()
    );
    assert_eq!(
        queue.poll().await.unwrap(),
        None,
        "delivered once, not lost"
    );
}

#[tokio::test]
async fn an_offer_whose_reply_is_lost_is_stored_once() {
    let server = TestingServer::start().await.unwrap();
    let proxy = Arc::new(FaultProxy::start(&server.connect_string()).await.unwrap());
    let observer = client(&server.connect_string()).await;
    let producer = client(&proxy.connect_string()).await;
    let path = unique_root("eo-lost-offer");
    let queue = SimpleDistributedQueue::builder(producer.clone(), &path)
        .exactly_once()
        .build()
        .unwrap();
    warm_up(&queue).await;
    // An item stays, so the queue node (a container) stays too.
    queue.offer(b"first").await.unwrap();

    let (_guard, _) = lose_next_multi_reply(&proxy);
    let offer = tokio::spawn(async move { queue.offer(b"once").await });
    eventually("the held request reaches the server", || async {
        children(&observer, &path).await.len() == 2
    })
    .await;
    cut(&proxy);
    tokio::time::timeout(Timing::new().wait(), offer)
        .await
        .expect("the offer ends")
        .unwrap()
        .expect("the offer learns it applied");
    assert!(producer.metrics().retries >= 1, "the reply was lost");
    assert_eq!(children(&observer, &path).await.len(), 2, "stored once");
    assert_eq!(
        children(&observer, &outcomes(&path)).await,
        Vec::<String>::new()
    );
    let plain = SimpleDistributedQueue::builder(observer.clone(), &path)
        .build()
        .unwrap();
    assert_eq!(plain.poll().await.unwrap().as_deref(), Some(&b"first"[..]));
    assert_eq!(plain.poll().await.unwrap().as_deref(), Some(&b"once"[..]));
    assert_eq!(plain.poll().await.unwrap(), None);
}

#[tokio::test]
async fn without_exactly_once_an_offer_whose_reply_is_lost_is_stored_twice() {
    // The contrast: Curator's plain sequential create, retried after the lost reply.
    let server = TestingServer::start().await.unwrap();
    let proxy = Arc::new(FaultProxy::start(&server.connect_string()).await.unwrap());
    let observer = client(&server.connect_string()).await;
    let producer = client(&proxy.connect_string()).await;
    let path = unique_root("eo-lost-offer-plain");
    let queue = SimpleDistributedQueue::builder(producer.clone(), &path)
        .build()
        .unwrap();
    // The plain offer is a create, not a multi: hold replies once the queue node exists (it
    // is made by an earlier offer, taken again).
    queue.offer(b"first").await.unwrap();
    assert_eq!(queue.take().await.unwrap(), b"first");
    proxy.pause_replies();
    let offer = tokio::spawn(async move { queue.offer(b"twice").await });
    eventually("the held request reaches the server", || async {
        !children(&observer, &path).await.is_empty()
    })
    .await;
    cut(&proxy);
    tokio::time::timeout(Timing::new().wait(), offer)
        .await
        .expect("the offer ends")
        .unwrap()
        .unwrap();
    assert_eq!(children(&observer, &path).await.len(), 2, "stored twice");
}

#[tokio::test]
async fn a_take_survives_its_session_expiring_before_the_reply() {
    let server = TestingServer::start().await.unwrap();
    let proxy = Arc::new(FaultProxy::start(&server.connect_string()).await.unwrap());
    let observer = client(&server.connect_string()).await;
    let taker = client(&proxy.connect_string()).await;
    let path = unique_root("eo-expiry");
    let queue = SimpleDistributedQueue::builder(taker.clone(), &path)
        .exactly_once()
        .build()
        .unwrap();
    warm_up(&queue).await;
    let plain = SimpleDistributedQueue::builder(observer.clone(), &path)
        .build()
        .unwrap();
    plain.offer(b"a").await.unwrap();
    plain.offer(b"b").await.unwrap();
    let session = proxy
        .sessions()
        .last()
        .cloned()
        .expect("the taker's session");

    let (_guard, _) = lose_next_multi_reply(&proxy);
    let take = tokio::spawn(async move { queue.take().await.map(|item| (item, queue)) });
    eventually("the take reaches the server", || async {
        children(&observer, &path).await.len() == 1
    })
    .await;
    // The session ends while the reply is held: the taker hears of it only on reconnecting.
    expire_session(&server.connect_string(), &session, Timing::new().wait())
        .await
        .unwrap();
    proxy.drop_connections();
    proxy.resume();
    let (item, queue) = tokio::time::timeout(Timing::new().wait(), take)
        .await
        .expect("the take ends")
        .unwrap()
        .expect("the take learns it applied, on a new session");
    assert_eq!(item, b"a");
    assert_ne!(taker.session_id(), Some(session.id), "a new session");
    assert_eq!(
        children(&observer, &outcomes(&path)).await,
        Vec::<String>::new()
    );
    assert_eq!(queue.take().await.unwrap(), b"b");
    assert_eq!(queue.poll().await.unwrap(), None);
}

#[tokio::test]
async fn a_distributed_queue_consumer_whose_take_reply_is_lost_consumes_once() {
    let server = TestingServer::start().await.unwrap();
    let proxy = Arc::new(FaultProxy::start(&server.connect_string()).await.unwrap());
    let observer = client(&server.connect_string()).await;
    let path = unique_root("eo-queue-lost-take");
    let producer = DistributedQueue::<String>::builder(observer.clone(), &path)
        .build()
        .unwrap();
    producer.start().await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let consumer =
        DistributedQueue::<String>::builder(client(&proxy.connect_string()).await, &path)
            .exactly_once()
            .consumer(move |item: String| {
                let _ = tx.send(item);
                async { Ok::<_, std::io::Error>(()) }
            })
            .build()
            .unwrap();
    consumer.start().await.unwrap();
    // The first take makes the outcome directory.
    producer.put(&"warm-up".to_owned()).await.unwrap();
    let got = tokio::time::timeout(Timing::new().wait(), rx.recv())
        .await
        .unwrap();
    assert_eq!(got.as_deref(), Some("warm-up"));
    let (_guard, _) = lose_next_multi_reply(&proxy);
    producer.put(&"one".to_owned()).await.unwrap();
    eventually("the held request reaches the server", || async {
        children(&observer, &path).await.is_empty()
    })
    .await;
    cut(&proxy);
    let got = tokio::time::timeout(Timing::new().wait(), rx.recv())
        .await
        .unwrap();
    assert_eq!(got.as_deref(), Some("one"));
    producer.put(&"two".to_owned()).await.unwrap();
    let got = tokio::time::timeout(Timing::new().wait(), rx.recv())
        .await
        .unwrap();
    assert_eq!(got.as_deref(), Some("two"), "\"one\" came once");
    consumer.close().await.unwrap();
    assert!(rx.try_recv().is_err());
    assert_eq!(
        children(&observer, &outcomes(&path)).await,
        Vec::<String>::new()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_producers_and_consumers_under_cuts_deliver_each_item_exactly_once() {
    const PRODUCERS: usize = 3;
    const PER_PRODUCER: usize = 100;
    const CONSUMERS: usize = 3;
    let total = PRODUCERS * PER_PRODUCER;
    let server = TestingServer::start().await.unwrap();
    let observer = client(&server.connect_string()).await;
    let path = unique_root("eo-simple-chaos");
    let mut proxies = Vec::new();
    let taken = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let mut producers = Vec::new();
    for p in 0..PRODUCERS {
        let proxy = Arc::new(FaultProxy::start(&server.connect_string()).await.unwrap());
        let queue = SimpleDistributedQueue::builder(client(&proxy.connect_string()).await, &path)
            .exactly_once()
            .build()
            .unwrap();
        proxies.push((proxy, None));
        producers.push(tokio::spawn(async move {
            for i in 0..PER_PRODUCER {
                let item = format!("p{p}-{i}");
                // An error means not stored: offering again cannot duplicate it.
                while let Err(error) = queue.offer(item.as_bytes()).await {
                    assert_ne!(error, curator_framework::Error::Closed);
                }
            }
        }));
    }
    let mut consumers = Vec::new();
    for _ in 0..CONSUMERS {
        let proxy = Arc::new(FaultProxy::start(&server.connect_string()).await.unwrap());
        let queue = SimpleDistributedQueue::builder(client(&proxy.connect_string()).await, &path)
            .exactly_once()
            .build()
            .unwrap();
        proxies.push((proxy, None));
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
    let done = Arc::new(AtomicBool::new(false));
    let chaos = tokio::spawn(chaos(
        proxies,
        &[],
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
    assert!(cuts > 0);
    assert_each_once(&taken.lock(), total);
    assert_eq!(children(&observer, &path).await, Vec::<String>::new());
    eventually("every outcome marker is deleted", || async {
        children(&observer, &outcomes(&path)).await.is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distributed_queue_consumers_under_cuts_consume_each_item_exactly_once() {
    const PRODUCERS: usize = 2;
    const PER_PRODUCER: usize = 100;
    const CONSUMERS: usize = 3;
    let total = PRODUCERS * PER_PRODUCER;
    let server = TestingServer::start().await.unwrap();
    let observer = client(&server.connect_string()).await;
    let path = unique_root("eo-queue-chaos");
    let mut proxies = Vec::new();
    let taken = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let mut queues = Vec::new();
    for _ in 0..CONSUMERS {
        let proxy = Arc::new(FaultProxy::start(&server.connect_string()).await.unwrap());
        let (taken, tx) = (Arc::clone(&taken), tx.clone());
        let queue =
            DistributedQueue::<String>::builder(client(&proxy.connect_string()).await, &path)
                .exactly_once()
                .consumer(move |item: String| {
                    taken.lock().push(item);
                    let _ = tx.send(());
                    async { Ok::<_, std::io::Error>(()) }
                })
                .build()
                .unwrap();
        queue.start().await.unwrap();
        proxies.push((proxy, None));
        queues.push(queue);
    }
    let mut producers = Vec::new();
    for p in 0..PRODUCERS {
        let proxy = Arc::new(FaultProxy::start(&server.connect_string()).await.unwrap());
        let queue =
            DistributedQueue::<String>::builder(client(&proxy.connect_string()).await, &path)
                .exactly_once()
                .build()
                .unwrap();
        queue.start().await.unwrap();
        proxies.push((proxy, None));
        producers.push(tokio::spawn(async move {
            for i in 0..PER_PRODUCER {
                let item = format!("p{p}-{i}");
                while let Err(error) = queue.put(&item).await {
                    assert_ne!(error, curator_framework::Error::Closed);
                }
            }
        }));
    }
    let done = Arc::new(AtomicBool::new(false));
    let chaos = tokio::spawn(chaos(
        proxies,
        &[],
        server.connect_string(),
        Arc::clone(&done),
    ));
    for task in producers {
        tokio::time::timeout(Timing::new().forever(), task)
            .await
            .expect("every item is put")
            .unwrap();
    }
    for _ in 0..total {
        tokio::time::timeout(Timing::new().forever(), rx.recv())
            .await
            .expect("every item is consumed")
            .unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let cuts = chaos.await.unwrap();
    assert!(cuts > 0);
    eventually("the queue is empty", || async {
        children(&observer, &path).await.is_empty()
    })
    .await;
    for queue in &queues {
        queue.close().await.unwrap();
    }
    assert_each_once(&taken.lock(), total);
    eventually("every outcome marker is deleted", || async {
        children(&observer, &outcomes(&path)).await.is_empty()
    })
    .await;
}

#[tokio::test]
async fn purge_outcomes_deletes_the_markers_of_dead_writers() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let path = unique_root("eo-purge");
    let queue = SimpleDistributedQueue::builder(c.clone(), &path)
        .exactly_once()
        .build()
        .unwrap();
    warm_up(&queue).await;
    // What a taker that died right after its take applied leaves behind.
    c.create()
        .for_path(
            &format!("{}/qn-0000000042", outcomes(&path)),
            b"a dead taker",
        )
        .await
        .unwrap();
    assert_eq!(queue.purge_outcomes(Duration::from_secs(3600)).await, Ok(0));
    assert_eq!(children(&c, &outcomes(&path)).await.len(), 1, "too young");
    assert_eq!(queue.purge_outcomes(Duration::ZERO).await, Ok(1));
    assert_eq!(children(&c, &outcomes(&path)).await, Vec::<String>::new());
    let plain = SimpleDistributedQueue::builder(c.clone(), &path)
        .build()
        .unwrap();
    assert_eq!(plain.purge_outcomes(Duration::ZERO).await, Ok(0));
}
