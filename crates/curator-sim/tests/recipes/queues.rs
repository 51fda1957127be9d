//! curator-queues' single-server fault tests under the simulator, a module per test file of the
//! crate: nothing lost across a server restart (simple, bucketed and lock-safe queues), a
//! consumer's session expiring while it holds an item, the exactly-once mode through lost
//! replies, an expiry before the reply, and competing producers and consumers under repeated
//! cuts and expiries.
//!
//! Every client that a fault singles out sits on a host of its own; the server's state is read
//! from the model directly (no observer client, so no fault can hide it).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use curator_framework::{CuratorFramework, Error};
use curator_queues::{DistributedQueue, SimpleDistributedQueue};
use curator_sim::{Fault, SimClient, SimFaults};
use parking_lot::Mutex;

type BoxError = Box<dyn std::error::Error>;

/// How long a test waits for what the real test waits for "in time".
const WAIT: Duration = Duration::from_secs(30);

/// The children of `path` as the server has them, sorted (none when it does not exist).
fn children(client: &SimClient, path: &str) -> Vec<String> {
    client
        .faults()
        .server()
        .with_model(|model| model.children(path))
        .unwrap_or_default()
}

/// The outcome directory of the exactly-once queue at `path`.
fn outcomes(path: &str) -> String {
    format!("{path}-outcomes")
}

/// Every item of `expected` distinct ones was taken, none twice.
fn assert_each_once(taken: &[String], expected: usize) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for item in taken {
        *counts.entry(item).or_default() += 1;
    }
    let duplicates: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(duplicates.is_empty(), "duplicates: {duplicates:?}");
    assert_eq!(counts.len(), expected, "no item lost");
}

/// A spawned task's outcome as the body's error type (a panic or an error in it fails the
/// body).
async fn joined<T>(
    task: tokio::task::JoinHandle<Result<T, Error>>,
    what: &str,
) -> Result<T, BoxError> {
    match tokio::time::timeout(WAIT, task).await {
        Err(_) => Err(format!("{what}: not within {WAIT:?}").into()),
        Ok(Err(panicked)) => Err(format!("{what}: {panicked}").into()),
        Ok(Ok(result)) => Ok(result.map_err(|error| format!("{what}: {error}"))?),
    }
}

/// A tracing subscriber that loses the replies to `host` the moment the next transaction (a
/// multi) is made, before it is sent: the multi reaches the server and is applied, its reply
/// does not come back (until [`SimFaults::repair`]). Every host runs on the thread that runs
/// the simulation, so a thread's default subscriber sees every client's spans.
struct LoseNextMultiReply {
    faults: SimFaults,
    host: String,
    armed: Arc<AtomicBool>,
    ids: AtomicU64,
}

impl tracing::Subscriber for LoseNextMultiReply {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.is_span()
    }

    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        if span.metadata().name() == "zk.transaction" && self.armed.swap(false, Ordering::SeqCst) {
            self.faults.lose_replies(&self.host);
        }
        tracing::span::Id::from_u64(self.ids.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, _: &tracing::Event<'_>) {}

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

/// Arms [`LoseNextMultiReply`] for the replies to `host`, while the guard lives; the flag
/// says whether it is still armed.
fn lose_next_multi_reply(
    faults: &SimFaults,
    host: &str,
) -> (tracing::subscriber::DefaultGuard, Arc<AtomicBool>) {
    let armed = Arc::new(AtomicBool::new(true));
    let subscriber = LoseNextMultiReply {
        faults: faults.clone(),
        host: host.to_owned(),
        armed: Arc::clone(&armed),
        ids: AtomicU64::new(0),
    };
    (tracing::subscriber::set_default(subscriber), armed)
}

/// A worker's host, and its framework client when a fault may expire its session.
type Target = (String, Option<CuratorFramework>);

/// What the bodies of a test under repeated faults share: each worker's host (and, when a
/// fault may expire its session, its framework client) by slot, how many workers are done, and
/// the test's phase (the workers keep their clients until the director moves it on, so their
/// background work, such as deleting outcome markers, goes on).
struct Crew {
    slots: Mutex<Vec<Option<Target>>>,
    finished: AtomicUsize,
    phase: tokio::sync::watch::Sender<u32>,
}

impl Crew {
    fn new(workers: usize) -> Arc<Self> {
        Arc::new(Self {
            slots: Mutex::new(vec![None; workers]),
            finished: AtomicUsize::new(0),
            phase: tokio::sync::watch::channel(0).0,
        })
    }

    /// Worker `slot` is on `host`; `expirable` when a fault may expire its session.
    fn enlist(&self, slot: usize, host: &str, expirable: Option<CuratorFramework>) {
        self.slots.lock()[slot] = Some((host.to_owned(), expirable));
    }

    /// The workers' hosts and clients, once every worker enlisted.
    async fn targets(&self) -> Result<Vec<Target>, BoxError> {
        crate::until("every worker is up", WAIT, || async {
            self.slots.lock().iter().all(Option::is_some)
        })
        .await?;
        Ok(self.slots.lock().iter().flatten().cloned().collect())
    }

    /// A worker did its part.
    fn finish(&self) {
        self.finished.fetch_add(1, Ordering::SeqCst);
    }

    /// How many workers did their part.
    fn finished(&self) -> usize {
        self.finished.load(Ordering::SeqCst)
    }

    /// Waits until the director moved the test to `phase` (or further).
    async fn until_phase(&self, phase: u32) {
        let _ = self.phase.subscribe().wait_for(|now| *now >= phase).await;
    }

    /// Moves the test to `phase`.
    fn to_phase(&self, phase: u32) {
        self.phase.send_replace(phase);
    }
}

/// Cuts every target's connections in turn, one every 150 ms (every other time after losing
/// its replies a moment, so requests are applied with their replies lost), until `done`;
/// returns how many cuts it made. At each cut number in `expiries`, the target's client is cut
/// off from the server and its session expired first.
async fn chaos(
    faults: SimFaults,
    targets: Vec<Target>,
    expiries: Vec<usize>,
    done: Arc<AtomicBool>,
) -> Result<usize, Error> {
    let mut cuts = 0;
    while !done.load(Ordering::SeqCst) {
        // Fault timing, not synchronisation: how long a link works between cuts.
        tokio::time::sleep(Duration::from_millis(150)).await;
        let (host, client) = &targets[cuts % targets.len()];
        match client {
            Some(client) if expiries.contains(&cuts) => {
                let session = client.session_id().ok_or(Error::ConnectionLoss)?;
                faults.partition(host);
                assert!(faults.expire_session(session), "the session was alive");
            }
            _ if cuts % 2 == 0 => {
                faults.lose_replies(host);
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            _ => {}
        }
        faults.cut(host);
        faults.repair(host);
        cuts += 1;
    }
    Ok(cuts)
}

/// The tests of `tests/simple.rs`.
mod simple {
    use super::*;
    use crate::{SEEDS, run, sim, until};

    #[test]
    fn a_server_restart_loses_no_item() {
        const PRODUCERS: usize = 2;
        const PER_PRODUCER: usize = 60;
        const CONSUMERS: usize = 2;
        let total = PRODUCERS * PER_PRODUCER;
        for seed in SEEDS {
            let mut sim = sim(seed);
            sim.client("c0", move |client| async move {
                let path = "/simple-restart";
                let taken = Arc::new(Mutex::new(Vec::<String>::new()));
                let mut producers = Vec::new();
                for p in 0..PRODUCERS {
                    let queue =
                        SimpleDistributedQueue::builder(client.connect().await?, path).build()?;
                    producers.push(tokio::spawn(async move {
                        for i in 0..PER_PRODUCER {
                            queue.offer(format!("p{p}-{i}").as_bytes()).await?;
                        }
                        Ok(())
                    }));
                }
                let mut consumers = Vec::new();
                for _ in 0..CONSUMERS {
                    let queue =
                        SimpleDistributedQueue::builder(client.connect().await?, path).build()?;
                    let taken = Arc::clone(&taken);
                    consumers.push(tokio::spawn(async move {
                        while taken.lock().iter().collect::<HashSet<_>>().len() < total {
                            if let Some(item) =
                                queue.poll_timeout(Duration::from_millis(200)).await?
                            {
                                taken.lock().push(String::from_utf8(item).unwrap());
                            }
                        }
                        Ok(())
                    }));
                }
                // Restart once some items are in flight.
                until("items flow", WAIT, || async {
                    client
                        .faults()
                        .server()
                        .with_model(|model| model.node(path))
                        .is_some_and(|(_, stat)| stat.cversion >= 20)
                })
                .await?;
                client.faults().restart_server();
                for task in producers {
                    joined(task, "every item is offered").await?;
                }
                for task in consumers {
                    joined(task, "every item is taken").await?;
                }
                let taken = taken.lock().clone();
                let distinct: HashSet<&String> = taken.iter().collect();
                assert_eq!(distinct.len(), total, "no item lost");
                println!(
                    "{} duplicate deliveries across the restart",
                    taken.len() - distinct.len()
                );
                Ok(())
            });
            run(&mut sim);
        }
    }
}

/// The tests of `tests/bucketed.rs`.
mod bucketed {
    use super::*;
    use crate::{SEEDS, run, session_of, sim, until};

    fn bucketed(
        client: CuratorFramework,
        path: &str,
        capacity: usize,
    ) -> Result<SimpleDistributedQueue, Error> {
        SimpleDistributedQueue::builder(client, path)
            .bucketed(capacity)
            .build()
    }

    /// The bucket directories under `path` on the server, lowest first.
    fn buckets(client: &SimClient, path: &str) -> Vec<String> {
        children(client, path)
            .into_iter()
            .filter(|c| c.starts_with("bucket-"))
            .collect()
    }

    fn bucket_number(name: &str) -> u64 {
        name.trim_start_matches("bucket-").parse().unwrap()
    }

    #[test]
    fn a_server_restart_loses_no_item() {
        const PRODUCERS: usize = 2;
        const PER_PRODUCER: usize = 150;
        const CONSUMERS: usize = 2;
        let total = PRODUCERS * PER_PRODUCER;
        for seed in SEEDS {
            let mut sim = sim(seed);
            sim.client("c0", move |client| async move {
                let path = "/bucketed-restart";
                // Distinct items taken: across a restart an item may be delivered twice (at
                // least once), so the consumers stop when every item was seen.
                let seen = Arc::new(Mutex::new(HashSet::new()));
                let mut producers = Vec::new();
                for p in 0..PRODUCERS {
                    let queue = bucketed(client.connect().await?, path, 10)?;
                    producers.push(tokio::spawn(async move {
                        for i in 0..PER_PRODUCER {
                            queue.offer(format!("p{p}-{i}").as_bytes()).await?;
                        }
                        Ok(())
                    }));
                }
                let mut consumers = Vec::new();
                for _ in 0..CONSUMERS {
                    let queue = bucketed(client.connect().await?, path, 10)?;
                    let seen = Arc::clone(&seen);
                    consumers.push(tokio::spawn(async move {
                        let mut taken = Vec::new();
                        while seen.lock().len() < total {
                            if let Some(item) =
                                queue.poll_timeout(Duration::from_millis(200)).await?
                            {
                                let item = String::from_utf8(item).unwrap();
                                seen.lock().insert(item.clone());
                                taken.push(item);
                            }
                        }
                        Ok(taken)
                    }));
                }
                until("items flow over several buckets", WAIT, || async {
                    buckets(&client, path)
                        .last()
                        .is_some_and(|b| bucket_number(b) >= 3)
                })
                .await?;
                client.faults().restart_server();
                for task in producers {
                    joined(task, "every item is offered").await?;
                }
                let mut all = Vec::new();
                for task in consumers {
                    all.extend(joined(task, "every item is taken").await?);
                }
                let mut distinct = all.clone();
                distinct.sort();
                distinct.dedup();
                assert_eq!(distinct.len(), total, "no item lost");
                println!(
                    "{} duplicate deliveries across the restart (at least once)",
                    all.len() - distinct.len()
                );
                Ok(())
            });
            run(&mut sim);
        }
    }

    #[test]
    fn exactly_once_under_cuts_and_session_expiry_delivers_each_item_once() {
        const PRODUCERS: usize = 3;
        const PER_PRODUCER: usize = 60;
        const CONSUMERS: usize = 3;
        let total = PRODUCERS * PER_PRODUCER;
        let path = "/bucketed-eo-chaos";
        let queue_on = move |client: CuratorFramework| {
            SimpleDistributedQueue::builder(client, path)
                .bucketed(10)
                .exactly_once()
                .build()
        };
        for seed in SEEDS {
            let mut sim = sim(seed);
            let crew = Crew::new(CONSUMERS + PRODUCERS);
            let taken = Arc::new(Mutex::new(Vec::new()));
            let count = Arc::new(AtomicUsize::new(0));
            for c in 0..CONSUMERS {
                let (crew, taken, count) =
                    (Arc::clone(&crew), Arc::clone(&taken), Arc::clone(&count));
                sim.client(&format!("consumer-{c}"), move |client| async move {
                    let zk = client.connect().await?;
                    let queue = queue_on(zk.clone())?;
                    crew.enlist(c, client.name(), Some(zk));
                    while count.load(Ordering::SeqCst) < total {
                        // An error means not taken by this consumer.
                        if let Ok(Some(item)) = queue.poll_timeout(Duration::from_millis(200)).await
                        {
                            taken.lock().push(String::from_utf8(item)?);
                            count.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    crew.finish();
                    crew.until_phase(1).await;
                    Ok(())
                });
            }
            for p in 0..PRODUCERS {
                let crew = Arc::clone(&crew);
                sim.client(&format!("producer-{p}"), move |client| async move {
                    let zk = client.connect().await?;
                    let queue = queue_on(zk.clone())?;
                    crew.enlist(CONSUMERS + p, client.name(), Some(zk));
                    for i in 0..PER_PRODUCER {
                        let item = format!("p{p}-{i}");
                        // An error means not stored: offering again cannot duplicate it.
                        while let Err(error) = queue.offer(item.as_bytes()).await {
                            assert_ne!(error, Error::Closed);
                        }
                    }
                    crew.finish();
                    crew.until_phase(1).await;
                    Ok(())
                });
            }
            sim.client("chaos", move |client| async move {
                let done = Arc::new(AtomicBool::new(false));
                // Two of the sessions expire on the way (the 4th cut's and the 11th's).
                let chaos = tokio::spawn(chaos(
                    client.faults().clone(),
                    crew.targets().await?,
                    vec![3, 10],
                    Arc::clone(&done),
                ));
                until(
                    "every item is offered and taken",
                    Duration::from_secs(100),
                    || async { crew.finished() == CONSUMERS + PRODUCERS },
                )
                .await?;
                done.store(true, Ordering::SeqCst);
                let cuts = joined(chaos, "the chaos").await?;
                assert!(cuts > 5, "faults happened: {cuts}");
                assert_each_once(&taken.lock(), total);
                let left = buckets(&client, path);
                assert_eq!(left.len(), 1, "{left:?}");
                assert!(children(&client, &format!("{path}/{}", left[0])).is_empty());
                until("every outcome marker is deleted", WAIT, || async {
                    children(&client, &outcomes(path)).is_empty()
                })
                .await?;
                crew.to_phase(1);
                Ok(())
            });
            let report = run(&mut sim);
            let expiries = report
                .faults
                .iter()
                .filter(|record| {
                    matches!(
                        record.fault,
                        Fault::Expiry {
                            session: Some(_),
                            ..
                        }
                    )
                })
                .count();
            assert_eq!(expiries, 2, "seed {seed}: two sessions expired on the way");
        }
    }

    #[test]
    fn a_lock_safe_consumer_hung_in_an_item_neither_blocks_later_buckets_nor_loses_it() {
        for seed in SEEDS {
            let mut sim = sim(seed);
            sim.client("c0", |client| async move {
                let (path, locks) = ("/bucketed-lock-safe/q", "/bucketed-lock-safe/locks");
                let doomed_client = client.connect().await?;
                // The doomed consumer takes the first item and hangs in it.
                let (got_tx, mut got_rx) = tokio::sync::mpsc::unbounded_channel();
                let release = Arc::new(tokio::sync::Notify::new());
                let doomed = DistributedQueue::<String>::builder(doomed_client.clone(), path)
                    .bucketed(1)
                    .lock_path(locks)
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
                    .build()?;
                doomed.start().await?;
                doomed.put(&"precious".to_owned()).await?;
                let got = tokio::time::timeout(WAIT, got_rx.recv()).await?;
                assert_eq!(got.as_deref(), Some("precious"));
                // Every item is a bucket of its own (capacity 1): the next ones are in later
                // buckets.
                doomed.put(&"second".to_owned()).await?;
                doomed.put(&"third".to_owned()).await?;
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let healthy = DistributedQueue::<String>::builder(client.connect().await?, path)
                    .bucketed(1)
                    .lock_path(locks)
                    .consumer(move |item: String| {
                        let _ = tx.send(item);
                        async { Ok::<_, String>(()) }
                    })
                    .build()?;
                healthy.start().await?;
                // The locked bucket does not hold the healthy consumer back.
                let got = tokio::time::timeout(WAIT, rx.recv()).await?;
                assert_eq!(got.as_deref(), Some("second"));
                let got = tokio::time::timeout(WAIT, rx.recv()).await?;
                assert_eq!(got.as_deref(), Some("third"));
                // The doomed consumer's session ends: its lock goes, the item is not lost.
                client
                    .faults()
                    .expire_session(session_of(&doomed_client).await?);
                let got = tokio::time::timeout(WAIT, rx.recv()).await?;
                assert_eq!(got.as_deref(), Some("precious"));
                until("the item is deleted once consumed", WAIT, || async {
                    healthy.is_empty().await.unwrap_or(false)
                })
                .await?;
                until("drained buckets are deleted", WAIT, || async {
                    buckets(&client, path).len() == 1
                })
                .await?;
                release.notify_one();
                doomed.close().await?;
                healthy.close().await?;
                assert!(children(&client, locks).is_empty(), "no lock left");
                Ok(())
            });
            run(&mut sim);
        }
    }
}

/// The tests of `tests/queue.rs`.
mod queue {
    use super::*;
    use crate::{SEEDS, run, session_of, sim, until};

    #[test]
    fn a_dead_consumers_item_goes_to_another_consumer() {
        for seed in SEEDS {
            let mut sim = sim(seed);
            sim.client("c0", |client| async move {
                let (path, locks) = ("/queue-lock-safe/q", "/queue-lock-safe/locks");
                let doomed_client = client.connect().await?;
                // The doomed consumer takes the item and hangs in it.
                let (got_tx, mut got_rx) = tokio::sync::mpsc::unbounded_channel();
                let release = Arc::new(tokio::sync::Notify::new());
                let doomed = DistributedQueue::<String>::builder(doomed_client.clone(), path)
                    .lock_path(locks)
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
                    .build()?;
                doomed.start().await?;
                doomed.put(&"precious".to_owned()).await?;
                let got = tokio::time::timeout(WAIT, got_rx.recv()).await?;
                assert_eq!(got.as_deref(), Some("precious"));

                // A second consumer waits: the item is locked.
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let healthy = DistributedQueue::<String>::builder(client.connect().await?, path)
                    .lock_path(locks)
                    .consumer(move |item: String| {
                        let _ = tx.send(item);
                        async { Ok::<_, String>(()) }
                    })
                    .build()?;
                healthy.start().await?;
                assert!(
                    tokio::time::timeout(Duration::from_millis(300), rx.recv())
                        .await
                        .is_err(),
                    "not while the lock is held"
                );
                // The doomed consumer's session ends: its lock goes, the item is not lost.
                client
                    .faults()
                    .expire_session(session_of(&doomed_client).await?);
                let got = tokio::time::timeout(WAIT, rx.recv()).await?;
                assert_eq!(got.as_deref(), Some("precious"));
                until("the item is deleted once consumed", WAIT, || async {
                    healthy.is_empty().await.unwrap_or(false)
                })
                .await?;
                release.notify_one();
                doomed.close().await?;
                healthy.close().await?;
                assert!(children(&client, locks).is_empty(), "no lock left");
                Ok(())
            });
            run(&mut sim);
        }
    }

    #[test]
    fn a_server_restart_loses_no_item_of_a_lock_safe_queue() {
        const TOTAL: usize = 120;
        for seed in SEEDS {
            let mut sim = sim(seed);
            sim.client("c0", |client| async move {
                let (path, locks) = ("/queue-restart/q", "/queue-restart/locks");
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let mut consumers = Vec::new();
                for _ in 0..2 {
                    let tx = tx.clone();
                    let queue = DistributedQueue::<String>::builder(client.connect().await?, path)
                        .lock_path(locks)
                        .consumer(move |item: String| {
                            let _ = tx.send(item);
                            futures::future::ready(Ok::<_, String>(()))
                        })
                        .build()?;
                    queue.start().await?;
                    consumers.push(queue);
                }
                let producer =
                    DistributedQueue::<String>::builder(client.connect().await?, path).build()?;
                producer.start().await?;
                let producing = tokio::spawn(async move {
                    for i in 0..TOTAL {
                        producer.put(&format!("item-{i}")).await?;
                    }
                    Ok(())
                });
                let mut seen = Vec::new();
                while seen.len() < 20 {
                    let item = tokio::time::timeout(WAIT, rx.recv()).await?;
                    seen.push(item.ok_or("the consumers run")?);
                }
                client.faults().restart_server();
                joined(producing, "every item is put").await?;
                let mut distinct: HashSet<String> = seen.iter().cloned().collect();
                while distinct.len() < TOTAL {
                    let item = tokio::time::timeout(WAIT, rx.recv())
                        .await
                        .map_err(|_| "no item lost")?
                        .ok_or("the consumers run")?;
                    seen.push(item.clone());
                    distinct.insert(item);
                }
                println!(
                    "{} duplicate deliveries across the restart",
                    seen.len() - distinct.len()
                );
                for consumer in consumers {
                    consumer.close().await?;
                }
                Ok(())
            });
            run(&mut sim);
        }
    }
}

/// The tests of `tests/exactly_once.rs`.
mod exactly_once {
    use super::*;
    use crate::{SEEDS, run, session_of, sim, until};

    /// One offer and take, so the outcome directory exists before a test loses the reply of
    /// the next multi (the first write of a queue otherwise fails once on the missing
    /// directory).
    async fn warm_up(queue: &SimpleDistributedQueue) -> Result<(), BoxError> {
        queue.offer(b"warm-up").await?;
        assert_eq!(queue.take().await?, b"warm-up");
        Ok(())
    }

    /// Loses the replies for good: cuts `host`'s connections, then lets messages flow again.
    fn cut(faults: &SimFaults, host: &str) {
        faults.cut(host);
        faults.repair(host);
    }

    #[test]
    fn a_take_whose_reply_is_lost_is_delivered_once_and_its_marker_deleted() {
        for seed in SEEDS {
            let mut sim = sim(seed);
            sim.client("taker", |client| async move {
                let path = "/eo-lost-take";
                let taker = client.connect().await?;
                let queue = SimpleDistributedQueue::builder(taker.clone(), path)
                    .exactly_once()
                    .build()?;
                warm_up(&queue).await?;
                let observer = client.connect().await?;
                let plain = SimpleDistributedQueue::builder(observer.clone(), path).build()?;
                plain.offer(b"only").await?;
                observer.close().await?;

                let (_guard, armed) = lose_next_multi_reply(client.faults(), client.name());
                let take =
                    tokio::spawn(async move { queue.take().await.map(|item| (item, queue)) });
                until("the held request reaches the server", WAIT, || async {
                    children(&client, path).is_empty()
                        && children(&client, &outcomes(path)).len() == 1
                })
                .await?;
                cut(client.faults(), client.name());
                assert!(!armed.load(Ordering::SeqCst));
                let (item, queue) = joined(take, "the take learns it applied").await?;
                assert_eq!(item, b"only");
                assert!(taker.metrics().retries >= 1, "the reply was lost");
                assert_eq!(children(&client, &outcomes(path)), Vec::<String>::new());
                assert_eq!(queue.poll().await?, None, "delivered once, not lost");
                taker.close().await?;
                Ok(())
            });
            run(&mut sim);
        }
    }

    #[test]
    fn an_offer_whose_reply_is_lost_is_stored_once() {
        for seed in SEEDS {
            let mut sim = sim(seed);
            sim.client("producer", |client| async move {
                let path = "/eo-lost-offer";
                let producer = client.connect().await?;
                let queue = SimpleDistributedQueue::builder(producer.clone(), path)
                    .exactly_once()
                    .build()?;
                warm_up(&queue).await?;
                // An item stays, so the queue node (a container) stays too.
                queue.offer(b"first").await?;

                let (_guard, _) = lose_next_multi_reply(client.faults(), client.name());
                let offer = tokio::spawn(async move { queue.offer(b"once").await });
                until("the held request reaches the server", WAIT, || async {
                    children(&client, path).len() == 2
                })
                .await?;
                cut(client.faults(), client.name());
                joined(offer, "the offer learns it applied").await?;
                assert!(producer.metrics().retries >= 1, "the reply was lost");
                assert_eq!(children(&client, path).len(), 2, "stored once");
                assert_eq!(children(&client, &outcomes(path)), Vec::<String>::new());
                let plain = SimpleDistributedQueue::builder(producer.clone(), path).build()?;
                assert_eq!(plain.poll().await?.as_deref(), Some(&b"first"[..]));
                assert_eq!(plain.poll().await?.as_deref(), Some(&b"once"[..]));
                assert_eq!(plain.poll().await?, None);
                producer.close().await?;
                Ok(())
            });
            run(&mut sim);
        }
    }

    #[test]
    fn without_exactly_once_an_offer_whose_reply_is_lost_is_stored_twice() {
        // The contrast: Curator's plain sequential create, retried after the lost reply.
        for seed in SEEDS {
            let mut sim = sim(seed);
            sim.client("producer", |client| async move {
                let path = "/eo-lost-offer-plain";
                let producer = client.connect().await?;
                let queue = SimpleDistributedQueue::builder(producer.clone(), path).build()?;
                // The plain offer is a create, not a multi: lose replies once the queue node
                // exists (it is made by an earlier offer, taken again).
                queue.offer(b"first").await?;
                assert_eq!(queue.take().await?, b"first");
                client.faults().lose_replies(client.name());
                let offer = tokio::spawn(async move { queue.offer(b"twice").await });
                until("the held request reaches the server", WAIT, || async {
                    !children(&client, path).is_empty()
                })
                .await?;
                cut(client.faults(), client.name());
                joined(offer, "the offer ends").await?;
                assert_eq!(children(&client, path).len(), 2, "stored twice");
                producer.close().await?;
                Ok(())
            });
            run(&mut sim);
        }
    }

    #[test]
    fn a_take_survives_its_session_expiring_before_the_reply() {
        for seed in SEEDS {
            let mut sim = sim(seed);
            sim.client("taker", |client| async move {
                let path = "/eo-expiry";
                let taker = client.connect().await?;
                let queue = SimpleDistributedQueue::builder(taker.clone(), path)
                    .exactly_once()
                    .build()?;
                warm_up(&queue).await?;
                let observer = client.connect().await?;
                let plain = SimpleDistributedQueue::builder(observer.clone(), path).build()?;
                plain.offer(b"a").await?;
                plain.offer(b"b").await?;
                observer.close().await?;
                let session = session_of(&taker).await?;

                let (_guard, _) = lose_next_multi_reply(client.faults(), client.name());
                let take =
                    tokio::spawn(async move { queue.take().await.map(|item| (item, queue)) });
                until("the take reaches the server", WAIT, || async {
                    children(&client, path).len() == 1
                })
                .await?;
                // The session ends while the reply is lost: the taker hears of it only on
                // reconnecting.
                assert!(client.faults().expire_session(session));
                cut(client.faults(), client.name());
                let (item, queue) =
                    joined(take, "the take learns it applied, on a new session").await?;
                assert_eq!(item, b"a");
                assert_ne!(taker.session_id(), Some(session), "a new session");
                assert_eq!(children(&client, &outcomes(path)), Vec::<String>::new());
                assert_eq!(queue.take().await?, b"b");
                assert_eq!(queue.poll().await?, None);
                taker.close().await?;
                Ok(())
            });
            run(&mut sim);
        }
    }

    #[test]
    fn a_distributed_queue_consumer_whose_take_reply_is_lost_consumes_once() {
        for seed in SEEDS {
            let mut sim = sim(seed);
            let path = "/eo-queue-lost-take";
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let close = Arc::new(tokio::sync::Notify::new());
            let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
            // The consumer, on a host of its own (its replies are lost, the producer's are not).
            sim.client("consumer", {
                let close = Arc::clone(&close);
                move |client| async move {
                    let consumer =
                        DistributedQueue::<String>::builder(client.connect().await?, path)
                            .exactly_once()
                            .consumer(move |item: String| {
                                let _ = tx.send(item);
                                async { Ok::<_, std::io::Error>(()) }
                            })
                            .build()?;
                    consumer.start().await?;
                    close.notified().await;
                    consumer.close().await?;
                    let _ = closed_tx.send(());
                    Ok(())
                }
            });
            sim.client("producer", move |client| async move {
                let producer =
                    DistributedQueue::<String>::builder(client.connect().await?, path).build()?;
                producer.start().await?;
                // The first take makes the outcome directory.
                producer.put(&"warm-up".to_owned()).await?;
                let got = tokio::time::timeout(WAIT, rx.recv()).await?;
                assert_eq!(got.as_deref(), Some("warm-up"));
                let (_guard, _) = lose_next_multi_reply(client.faults(), "consumer");
                producer.put(&"one".to_owned()).await?;
                until("the held request reaches the server", WAIT, || async {
                    children(&client, path).is_empty()
                })
                .await?;
                cut(client.faults(), "consumer");
                let got = tokio::time::timeout(WAIT, rx.recv()).await?;
                assert_eq!(got.as_deref(), Some("one"));
                producer.put(&"two".to_owned()).await?;
                let got = tokio::time::timeout(WAIT, rx.recv()).await?;
                assert_eq!(got.as_deref(), Some("two"), "\"one\" came once");
                close.notify_one();
                tokio::time::timeout(WAIT, closed_rx).await??;
                assert!(rx.try_recv().is_err());
                assert_eq!(children(&client, &outcomes(path)), Vec::<String>::new());
                producer.close().await?;
                Ok(())
            });
            run(&mut sim);
        }
    }

    #[test]
    fn simple_producers_and_consumers_under_cuts_deliver_each_item_exactly_once() {
        const PRODUCERS: usize = 3;
        const PER_PRODUCER: usize = 50;
        const CONSUMERS: usize = 3;
        let total = PRODUCERS * PER_PRODUCER;
        let path = "/eo-simple-chaos";
        for seed in SEEDS {
            let mut sim = sim(seed);
            let crew = Crew::new(PRODUCERS + CONSUMERS);
            let taken = Arc::new(Mutex::new(Vec::new()));
            let count = Arc::new(AtomicUsize::new(0));
            for p in 0..PRODUCERS {
                let crew = Arc::clone(&crew);
                sim.client(&format!("producer-{p}"), move |client| async move {
                    let queue = SimpleDistributedQueue::builder(client.connect().await?, path)
                        .exactly_once()
                        .build()?;
                    crew.enlist(p, client.name(), None);
                    for i in 0..PER_PRODUCER {
                        let item = format!("p{p}-{i}");
                        // An error means not stored: offering again cannot duplicate it.
                        while let Err(error) = queue.offer(item.as_bytes()).await {
                            assert_ne!(error, Error::Closed);
                        }
                    }
                    crew.finish();
                    crew.until_phase(1).await;
                    Ok(())
                });
            }
            for c in 0..CONSUMERS {
                let (crew, taken, count) =
                    (Arc::clone(&crew), Arc::clone(&taken), Arc::clone(&count));
                sim.client(&format!("consumer-{c}"), move |client| async move {
                    let queue = SimpleDistributedQueue::builder(client.connect().await?, path)
                        .exactly_once()
                        .build()?;
                    crew.enlist(PRODUCERS + c, client.name(), None);
                    while count.load(Ordering::SeqCst) < total {
                        // An error means not taken by this consumer.
                        if let Ok(Some(item)) = queue.poll_timeout(Duration::from_millis(200)).await
                        {
                            taken.lock().push(String::from_utf8(item)?);
                            count.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    crew.finish();
                    crew.until_phase(1).await;
                    Ok(())
                });
            }
            sim.client("chaos", move |client| async move {
                let done = Arc::new(AtomicBool::new(false));
                let chaos = tokio::spawn(chaos(
                    client.faults().clone(),
                    crew.targets().await?,
                    Vec::new(),
                    Arc::clone(&done),
                ));
                until(
                    "every item is offered and taken",
                    Duration::from_secs(100),
                    || async { crew.finished() == PRODUCERS + CONSUMERS },
                )
                .await?;
                done.store(true, Ordering::SeqCst);
                let cuts = joined(chaos, "the chaos").await?;
                assert!(cuts > 0);
                assert_each_once(&taken.lock(), total);
                assert_eq!(children(&client, path), Vec::<String>::new());
                until("every outcome marker is deleted", WAIT, || async {
                    children(&client, &outcomes(path)).is_empty()
                })
                .await?;
                crew.to_phase(1);
                Ok(())
            });
            run(&mut sim);
        }
    }

    #[test]
    fn distributed_queue_consumers_under_cuts_consume_each_item_exactly_once() {
        const PRODUCERS: usize = 2;
        const PER_PRODUCER: usize = 60;
        const CONSUMERS: usize = 3;
        let total = PRODUCERS * PER_PRODUCER;
        let path = "/eo-queue-chaos";
        for seed in SEEDS {
            let mut sim = sim(seed);
            let crew = Crew::new(CONSUMERS + PRODUCERS);
            let taken = Arc::new(Mutex::new(Vec::new()));
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
            for c in 0..CONSUMERS {
                let (crew, taken, tx) = (Arc::clone(&crew), Arc::clone(&taken), tx.clone());
                sim.client(&format!("consumer-{c}"), move |client| async move {
                    let queue = DistributedQueue::<String>::builder(client.connect().await?, path)
                        .exactly_once()
                        .consumer(move |item: String| {
                            taken.lock().push(item);
                            let _ = tx.send(());
                            async { Ok::<_, std::io::Error>(()) }
                        })
                        .build()?;
                    queue.start().await?;
                    crew.enlist(c, client.name(), None);
                    // Consume until the queue is empty, then close; keep the client until the
                    // outcome markers are checked.
                    crew.until_phase(1).await;
                    queue.close().await?;
                    crew.finish();
                    crew.until_phase(2).await;
                    Ok(())
                });
            }
            drop(tx);
            for p in 0..PRODUCERS {
                let crew = Arc::clone(&crew);
                sim.client(&format!("producer-{p}"), move |client| async move {
                    let queue = DistributedQueue::<String>::builder(client.connect().await?, path)
                        .exactly_once()
                        .build()?;
                    queue.start().await?;
                    crew.enlist(CONSUMERS + p, client.name(), None);
                    for i in 0..PER_PRODUCER {
                        let item = format!("p{p}-{i}");
                        while let Err(error) = queue.put(&item).await {
                            assert_ne!(error, Error::Closed);
                        }
                    }
                    crew.finish();
                    crew.until_phase(2).await;
                    Ok(())
                });
            }
            sim.client("chaos", move |client| async move {
                let done = Arc::new(AtomicBool::new(false));
                let chaos = tokio::spawn(chaos(
                    client.faults().clone(),
                    crew.targets().await?,
                    Vec::new(),
                    Arc::clone(&done),
                ));
                until("every item is put", Duration::from_secs(100), || async {
                    crew.finished() == PRODUCERS
                })
                .await?;
                for _ in 0..total {
                    tokio::time::timeout(Duration::from_secs(100), rx.recv())
                        .await
                        .map_err(|_| "every item is consumed")?
                        .ok_or("the consumers run")?;
                }
                done.store(true, Ordering::SeqCst);
                let cuts = joined(chaos, "the chaos").await?;
                assert!(cuts > 0);
                until("the queue is empty", WAIT, || async {
                    children(&client, path).is_empty()
                })
                .await?;
                crew.to_phase(1);
                until("every consumer closed", WAIT, || async {
                    crew.finished() == PRODUCERS + CONSUMERS
                })
                .await?;
                assert_each_once(&taken.lock(), total);
                until("every outcome marker is deleted", WAIT, || async {
                    children(&client, &outcomes(path)).is_empty()
                })
                .await?;
                crew.to_phase(2);
                Ok(())
            });
            run(&mut sim);
        }
    }
}
