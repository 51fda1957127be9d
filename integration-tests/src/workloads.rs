//! The workloads each client runs, recording what they did and what they were told.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use curator_counters::DistributedAtomicLong;
use curator_election::{CloseMode, LeaderLatch};
use curator_framework::ops::transaction::{TransactionOp, TransactionResult};
use curator_framework::recipe::Hold;
use curator_framework::retry::RetryNTimes;
use curator_framework::{CreateMode, CuratorFramework, Error, paths};
use curator_locks::InterProcessMutex;
use curator_queues::{DistributedQueue, SimpleDistributedQueue};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::history::{
    Action, Clock, CounterHistory, Episode, LogEntry, Put, RegisterInput, RegisterOp,
    RegisterOutput, Take,
};

/// The znodes of one run, under its root.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The run's root.
    pub root: String,
    /// The mutex.
    pub lock: String,
    /// The mutex holders' log.
    pub mutex_log: String,
    /// The leader latch.
    pub latch: String,
    /// The leaders' log.
    pub leader_log: String,
    /// The current term.
    pub term: String,
    /// The counter.
    pub counter: String,
    /// The simple queue.
    pub simple_queue: String,
    /// The lock-safe queue.
    pub safe_queue: String,
    /// The lock-safe queue's locks.
    pub safe_queue_locks: String,
    /// The subtree the caches follow.
    pub cache: String,
    /// The parent of the register nodes (`register-<key>`, [`REGISTERS`] of them).
    pub registers: String,
    /// The register writes' markers (see [`register_worker`]).
    pub register_markers: String,
}

/// How many register nodes the register workers share.
pub const REGISTERS: usize = 2;

/// A register node's value and data version when [`create_registers`] made it.
pub const REGISTER_INITIAL: (u64, i32) = (0, 0);

impl Paths {
    /// The paths under `root`.
    pub fn new(root: &str) -> Self {
        let at = |name: &str| paths::join(root, name);
        Self {
            root: root.to_owned(),
            lock: at("mutex"),
            mutex_log: at("mutex-log"),
            latch: at("latch"),
            leader_log: at("leader-log"),
            term: at("term"),
            counter: at("counter"),
            simple_queue: at("simple-queue"),
            safe_queue: at("safe-queue"),
            safe_queue_locks: at("safe-queue-locks"),
            cache: at("cache"),
            registers: at("registers"),
            register_markers: at("register-markers"),
        }
    }

    /// The register node `key`.
    pub fn register(&self, key: usize) -> String {
        paths::join(&self.registers, &format!("register-{key}"))
    }
}

/// Everything the workloads record.
#[derive(Debug, Default)]
pub struct Recorded {
    /// Mutex holds.
    pub mutex: Vec<Episode>,
    /// Leaderships.
    pub leader: Vec<Episode>,
    /// Counter increments.
    pub counter: CounterHistory,
    /// Puts into the simple queue.
    pub simple_puts: Vec<Put>,
    /// Takes from the simple queue.
    pub simple_takes: Vec<Take>,
    /// Puts into the lock-safe queue.
    pub safe_puts: Vec<Put>,
    /// Deliveries of the lock-safe queue.
    pub safe_takes: Vec<Take>,
    /// Operations on the register nodes.
    pub register: Vec<RegisterOp>,
    /// Other counts by name (errors, writes).
    pub counts: BTreeMap<&'static str, u64>,
}

impl Recorded {
    fn count(&mut self, what: &'static str) {
        *self.counts.entry(what).or_default() += 1;
    }
}

/// Stops the cache writers at quiet points.
#[derive(Debug)]
pub struct Gate {
    closed: watch::Sender<bool>,
    parked: watch::Sender<usize>,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            closed: watch::Sender::new(false),
            parked: watch::Sender::new(0),
        }
    }
}

impl Gate {
    /// Waits while the gate is closed (counted as parked meanwhile).
    async fn pass(&self) {
        if !*self.closed.borrow() {
            return;
        }
        self.parked.send_modify(|p| *p += 1);
        let mut closed = self.closed.subscribe();
        let _ = closed.wait_for(|c| !*c).await;
        self.parked.send_modify(|p| *p -= 1);
    }

    /// A writer that stopped for good counts as parked from now on.
    fn leave(&self) {
        self.parked.send_modify(|p| *p += 1);
    }

    /// Asks writers to stop.
    pub fn close(&self) {
        self.closed.send_replace(true);
    }

    /// Lets writers go on.
    pub fn open(&self) {
        self.closed.send_replace(false);
    }

    /// Waits until `writers` writers are parked (or gone); `false` after `timeout`.
    pub async fn all_parked(&self, writers: usize, timeout: Duration) -> bool {
        let mut parked = self.parked.subscribe();
        tokio::time::timeout(timeout, parked.wait_for(|p| *p >= writers))
            .await
            .is_ok()
    }
}

/// What every workload task shares.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The run's clock.
    pub clock: Clock,
    /// Ends every workload.
    pub stop: CancellationToken,
    /// Ends the producers (queue puts) first, so consumers can empty the queues.
    pub stop_producers: CancellationToken,
    /// The record.
    pub record: Arc<Mutex<Recorded>>,
    /// Quiet points for the cache writers.
    pub gate: Arc<Gate>,
    /// The znodes.
    pub paths: Arc<Paths>,
}

impl Ctx {
    /// Counts one `what` in the run's operations.
    pub fn count(&self, what: &'static str) {
        self.record.lock().count(what);
    }
}

/// A short random pause, so faults land at every step of the workloads.
async fn jitter(rng: &mut StdRng, max_ms: u64) {
    let ms = rng.random_range(0..=max_ms);
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// Connection-state transitions so far: a change across an operation means it ran across a
/// connection loss (where the recipes document duplicates).
fn transitions(client: &CuratorFramework) -> u64 {
    client.metrics().state_transitions
}

/// A log entry: a sequential child of `log`, written as a write guarded by `hold` (the actor's
/// lock or leadership: refused unless its node still exists, on its session). `first` steps go
/// before it in the same transaction.
async fn act(
    client: &CuratorFramework,
    hold: &Hold,
    first: Vec<TransactionOp>,
    log: &str,
    prefix: &str,
) -> bool {
    let mut transaction = client.transaction().guarded_by(hold);
    for op in first {
        transaction = transaction.op(op);
    }
    transaction
        .op(TransactionOp::create(&paths::join(log, prefix), [])
            .with_mode(CreateMode::PersistentSequential))
        .commit()
        .await
        .is_ok()
}

/// Takes the mutex again and again; each hold acts twice (checked against the holder's node),
/// unless the guard reports the lock may be lost.
pub async fn mutex_worker(ctx: Ctx, client: CuratorFramework, index: usize, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let Ok(mutex) = InterProcessMutex::builder(client.clone(), &ctx.paths.lock).build() else {
        return;
    };
    while !ctx.stop.is_cancelled() {
        // Told to stop, a waiter gives up its place at once (a dropped acquisition leaves no
        // node behind).
        let acquired = tokio::select! {
            biased;
            () = ctx.stop.cancelled() => break,
            acquired = mutex.acquire_timeout(Duration::from_secs(1)) => acquired,
        };
        let guard = match acquired {
            Ok(Some(guard)) => guard,
            Ok(None) => continue,
            Err(_) => {
                ctx.count("mutex acquire errors");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let mut episode = Episode {
            client: index,
            token: guard.fencing_token(),
            started_at: ctx.clock.now(),
            actions: Vec::new(),
            lost_at: None,
        };
        let prefix = LogEntry::prefix(0, episode.token, index);
        for _ in 0..2 {
            jitter(&mut rng, 5).await;
            if guard.is_lost() {
                episode.lost_at = Some(ctx.clock.now());
                break;
            }
            let sent_at = ctx.clock.now();
            let ok = act(&client, &guard, Vec::new(), &ctx.paths.mutex_log, &prefix).await;
            episode.actions.push(Action { sent_at, ok });
            if !ok {
                break;
            }
        }
        let _ = guard.release().await;
        ctx.record.lock().mutex.push(episode);
    }
}

/// Spawns into `workers` the mix one client runs (client `index`, drawing from `seed`): the
/// mutex, the leader latch, the counter, the simple queue's producer and consumer and the
/// lock-safe queue; the soak and the simulation run the same.
pub fn spawn_mix(
    workers: &mut tokio::task::JoinSet<()>,
    ctx: &Ctx,
    client: &CuratorFramework,
    index: usize,
    seed: u64,
) {
    let c = || (ctx.clone(), client.clone());
    let (x, cl) = c();
    workers.spawn(mutex_worker(x, cl, index, seed + 1));
    let (x, cl) = c();
    workers.spawn(leader_worker(x, cl, index, seed + 2));
    let (x, cl) = c();
    workers.spawn(counter_worker(x, cl, seed + 3));
    let (x, cl) = c();
    workers.spawn(simple_producer(x, cl, index, seed + 4));
    let (x, cl) = c();
    workers.spawn(simple_consumer(x, cl, index));
    let (x, cl) = c();
    workers.spawn(safe_queue_worker(x, cl, index, seed + 5));
    let (x, cl) = c();
    workers.spawn(register_worker(x, cl, index, seed + 7));
}

/// Creates the register nodes (each holding `0`, at data version 0) and their markers'
/// parent; idempotent.
///
/// # Errors
/// Connection errors.
pub async fn create_registers(client: &CuratorFramework, paths: &Paths) -> Result<(), Error> {
    for path in [&paths.registers, &paths.register_markers] {
        client
            .create()
            .creating_parents_if_needed()
            .idempotent()
            .for_path(path, [])
            .await?;
    }
    for key in 0..REGISTERS {
        client
            .create()
            .idempotent()
            .for_path(&paths.register(key), b"0")
            .await?;
    }
    Ok(())
}

/// Operations on the register nodes, recorded for the linearizability checker
/// ([`crate::checkers::check_register`]): reads, writes of values unique in the run, and
/// compare-and-sets (a read, then `set_data().with_version(v)` of a unique value), on a node
/// drawn from [`REGISTERS`], paced like the other workers.
///
/// - **Reads are `sync` then `get_data`, on this client.** A plain ZooKeeper read is served by
///   whichever member the client is connected to, which may lag the leader: reads are
///   sequentially consistent (each client sees the writes in order, its own included), not
///   linearizable. A `sync` first makes the member catch up with the leader as of the `sync`,
///   so the read that follows sees every write that completed before the `sync` was sent: that
///   read is checked as linearizable (invoked when the `sync` was sent). A failed read did
///   nothing and is not recorded.
/// - **Writes apply at most once.** The framework retries an operation whose reply was lost,
///   and a plain `set_data` whose first attempt applied then applies again: one write, two
///   instants, which no single linearization point explains (and a write of another client in
///   between makes the value go back). So a write is a transaction that creates a marker node
///   unique to it along with the `set_data`: a retry of an applied write meets the marker and
///   fails as a whole, which tells the writer that its write applied (version unknown). The
///   marker is deleted afterwards.
/// - **Compare-and-sets** are `idempotent()` (a retry that meets `BadVersion` and finds the
///   node at `v + 1` with exactly its value succeeds). A version-conditioned write applies at
///   most once anyway; its `BadVersion` is a definite failure (the node was at another version)
///   only on a first attempt: if the client retried anything meanwhile, the outcome is unknown.
/// - Any other error: the outcome is unknown (it may have applied once, or not).
pub async fn register_worker(ctx: Ctx, client: CuratorFramework, index: usize, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut n = 0u64;
    // Values unique in the run: the client in the high bits.
    let mut unique = || {
        n += 1;
        ((index as u64 + 1) << 40) | n
    };
    while !ctx.stop.is_cancelled() {
        let key = rng.random_range(0..REGISTERS);
        let path = ctx.paths.register(key);
        let record = |op: RegisterOp| ctx.record.lock().register.push(op);
        let op = |input, invoked, output| RegisterOp {
            key,
            client: index,
            input,
            invoked,
            completed: ctx.clock.now(),
            output,
        };
        match rng.random_range(0..10) {
            0..=3 => {
                let _ = register_read(&ctx, &client, key, index).await;
            }
            4..=6 => {
                let value = unique();
                let marker = paths::join(&ctx.paths.register_markers, &format!("w-{value}"));
                let retries = client.metrics().retries;
                let invoked = ctx.clock.now();
                let result = client
                    .transaction()
                    .op(TransactionOp::create(&marker, []))
                    .op(TransactionOp::set_data(&path, value.to_string()))
                    .commit()
                    .await;
                let output = match result {
                    Ok(results) => Some(RegisterOutput::Written {
                        version: results.iter().find_map(|r| match r {
                            TransactionResult::SetData { stat } => Some(stat.version),
                            _ => None,
                        }),
                    }),
                    // Only a retry of this very write made the marker.
                    Err(Error::Transaction { index: 0, cause })
                        if *cause == Error::NodeExists && client.metrics().retries != retries =>
                    {
                        Some(RegisterOutput::Written { version: None })
                    }
                    Err(_) => None,
                };
                record(op(RegisterInput::Write(value), invoked, output));
                let _ = client.delete().quietly().for_path(&marker).await;
            }
            _ => {
                let Some(expected) = register_read(&ctx, &client, key, index).await else {
                    continue;
                };
                let value = unique();
                let retries = client.metrics().retries;
                let invoked = ctx.clock.now();
                let result = client
                    .set_data()
                    .with_version(expected)
                    .idempotent()
                    .for_path(&path, value.to_string())
                    .await;
                let output = match result {
                    Ok(stat) => Some(RegisterOutput::Written {
                        version: Some(stat.version),
                    }),
                    Err(Error::BadVersion) if client.metrics().retries == retries => {
                        Some(RegisterOutput::CasFailed)
                    }
                    Err(_) => None,
                };
                record(op(RegisterInput::Cas { expected, value }, invoked, output));
            }
        }
        // Paced: a few hundred operations a simulated run are plenty for the checker.
        tokio::time::sleep(Duration::from_millis(20)).await;
        jitter(&mut rng, 80).await;
    }
}

/// A linearizable read of register `key` (`sync`, then `get_data`), recorded; its version.
async fn register_read(
    ctx: &Ctx,
    client: &CuratorFramework,
    key: usize,
    index: usize,
) -> Option<i32> {
    let path = ctx.paths.register(key);
    let invoked = ctx.clock.now();
    client.sync().for_path(&path).await.ok()?;
    let (data, stat) = client.get_data().for_path(&path).await.ok()?;
    let value = String::from_utf8_lossy(&data).parse().ok()?;
    ctx.record.lock().register.push(RegisterOp {
        key,
        client: index,
        input: RegisterInput::Read,
        invoked,
        completed: ctx.clock.now(),
        output: Some(RegisterOutput::Read {
            value,
            version: stat.version,
        }),
    });
    Some(stat.version)
}

/// The sequence number at the end of a sequential node's name.
fn sequence_of(node: &str) -> Option<i64> {
    node.get(node.len().saturating_sub(10)..)?.parse().ok()
}

/// Joins the election; as leader, starts a term (read the term, write term + 1) and acts a few
/// times while the latch says it leads, then resigns (closes the latch) and joins again.
pub async fn leader_worker(ctx: Ctx, client: CuratorFramework, index: usize, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let id = format!("c{index}");
    let new_latch = || {
        LeaderLatch::builder(client.clone(), &ctx.paths.latch, id.clone())
            .close_mode(CloseMode::Silent)
            .build()
    };
    let Ok(mut latch) = new_latch() else { return };
    if latch.start().await.is_err() {
        return;
    }
    while !ctx.stop.is_cancelled() {
        let led = tokio::select! {
            biased;
            () = ctx.stop.cancelled() => break,
            led = tokio::time::timeout(Duration::from_secs(1), latch.await_leadership()) => led,
        };
        match led {
            Ok(Ok(())) => {}
            Err(_) => continue,
            Ok(Err(_)) => break,
        }
        let started_at = ctx.clock.now();
        let Some(hold) = latch.hold() else {
            continue;
        };
        let Some(token) = sequence_of(hold.node_path()) else {
            continue;
        };
        let mut episode = Episode {
            client: index,
            token,
            started_at,
            actions: Vec::new(),
            lost_at: None,
        };
        let term = match client.get_data().for_path(&ctx.paths.term).await {
            Ok((data, _)) => String::from_utf8_lossy(&data).parse::<u64>().unwrap_or(0) + 1,
            Err(_) => {
                ctx.count("leader term read errors");
                continue;
            }
        };
        let prefix = LogEntry::prefix(term, token, index);
        for step in 0..3 {
            if !latch.has_leadership() {
                episode.lost_at = Some(ctx.clock.now());
                break;
            }
            let first = if step == 0 {
                vec![TransactionOp::set_data(&ctx.paths.term, term.to_string())]
            } else {
                Vec::new()
            };
            let sent_at = ctx.clock.now();
            let ok = act(&client, &hold, first, &ctx.paths.leader_log, &prefix).await;
            episode.actions.push(Action { sent_at, ok });
            if !ok {
                break;
            }
            jitter(&mut rng, 10).await;
        }
        ctx.record.lock().leader.push(episode);
        // Resign, and stand again.
        let _ = latch.close().await;
        let Ok(next) = new_latch() else { return };
        latch = next;
        if latch.start().await.is_err() {
            return;
        }
    }
    let _ = latch.close().await;
}

/// Increments the shared counter, recording what each increment reported.
pub async fn counter_worker(ctx: Ctx, client: CuratorFramework, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let Ok(counter) = DistributedAtomicLong::builder(
        client,
        &ctx.paths.counter,
        RetryNTimes::new(100, Duration::from_millis(5)),
    )
    .build() else {
        return;
    };
    while !ctx.stop.is_cancelled() {
        let invoked = ctx.clock.now();
        let result = counter.increment().await;
        let completed = ctx.clock.now();
        {
            let mut record = ctx.record.lock();
            let history = &mut record.counter;
            let mut applied = None;
            let mut unknown = false;
            match result {
                Ok(value) if value.succeeded => {
                    history.succeeded += 1;
                    applied = Some((value.pre_value, value.post_value));
                }
                Ok(_) => history.not_applied += 1,
                Err(Error::Closed) => {
                    history.unknown += 1;
                    unknown = true;
                }
                Err(_) => history.not_applied += 1,
            }
            history.ops.push(crate::history::CounterOp {
                invoked,
                completed,
                applied,
                unknown,
            });
        }
        jitter(&mut rng, 20).await;
    }
    let _ = counter.flush_markers().await;
}

/// Waits while a queue's backlog (items put and not yet delivered, as recorded) is large, so
/// producers do not outrun the consumers (the lock-safe queue takes several round trips per item)
/// and the queues can be emptied at the end. Kept small: a longer queue makes every consumer's
/// listing longer and the end's drain slower, not the consumers busier.
async fn backlog_room(ctx: &Ctx, safe: bool) {
    const MAX_BACKLOG: usize = 25;
    loop {
        let backlog = {
            let record = ctx.record.lock();
            if safe {
                record
                    .safe_puts
                    .len()
                    .saturating_sub(record.safe_takes.len())
            } else {
                record
                    .simple_puts
                    .len()
                    .saturating_sub(record.simple_takes.len())
            }
        };
        if backlog < MAX_BACKLOG || ctx.stop_producers.is_cancelled() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Offers unique items to the simple queue (exactly once) until the producers stop.
pub async fn simple_producer(ctx: Ctx, client: CuratorFramework, index: usize, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let Ok(queue) = SimpleDistributedQueue::builder(client.clone(), &ctx.paths.simple_queue)
        .exactly_once()
        .build()
    else {
        return;
    };
    let mut n = 0u64;
    while !ctx.stop_producers.is_cancelled() {
        backlog_room(&ctx, false).await;
        let item = format!("s{index}-{n}");
        n += 1;
        let before = transitions(&client);
        let invoked = ctx.clock.now();
        let ok = queue.offer(item.as_bytes()).await.is_ok();
        let completed = ctx.clock.now();
        let across_fault = transitions(&client) != before;
        ctx.record.lock().simple_puts.push(Put {
            item,
            ok,
            across_fault,
            invoked,
            completed,
        });
        jitter(&mut rng, 30).await;
    }
}

/// Takes from the simple queue (exactly once) until told to stop.
pub async fn simple_consumer(ctx: Ctx, client: CuratorFramework, index: usize) {
    let Ok(queue) = SimpleDistributedQueue::builder(client.clone(), &ctx.paths.simple_queue)
        .exactly_once()
        .build()
    else {
        return;
    };
    while !ctx.stop.is_cancelled() {
        let before = transitions(&client);
        let invoked = ctx.clock.now();
        match queue.poll_timeout(Duration::from_millis(500)).await {
            Ok(Some(item)) => {
                let across_fault = transitions(&client) != before;
                ctx.record.lock().simple_takes.push(Take {
                    item: String::from_utf8_lossy(&item).into_owned(),
                    by: format!("c{index}"),
                    across_fault,
                    invoked,
                    completed: ctx.clock.now(),
                });
            }
            Ok(None) => {}
            Err(_) => {
                ctx.count("simple queue take errors");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// A started lock-safe queue consumer that records every delivery as taken by `by`.
pub async fn safe_consumer(
    ctx: &Ctx,
    client: CuratorFramework,
    by: String,
) -> Option<DistributedQueue<String>> {
    let record = Arc::clone(&ctx.record);
    let clock = ctx.clock;
    let queue = DistributedQueue::<String>::builder(client, &ctx.paths.safe_queue)
        .lock_path(&ctx.paths.safe_queue_locks)
        .consumer(move |item: String| {
            let now = clock.now();
            record.lock().safe_takes.push(Take {
                item,
                by: by.clone(),
                across_fault: false,
                invoked: now,
                completed: now,
            });
            async { Ok::<(), std::convert::Infallible>(()) }
        })
        .build()
        .ok()?;
    queue.start().await.ok()?;
    Some(queue)
}

/// Puts unique items into the lock-safe queue until the producers stop, and consumes it (with
/// its own consumer) until everything stops.
pub async fn safe_queue_worker(ctx: Ctx, client: CuratorFramework, index: usize, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let Ok(queue) = DistributedQueue::<String>::builder(client.clone(), &ctx.paths.safe_queue)
        .lock_path(&ctx.paths.safe_queue_locks)
        .build()
    else {
        return;
    };
    // Started until it is (a start that met a fault is tried again).
    while queue
        .start()
        .await
        .is_err_and(|e| e != Error::AlreadyStarted)
    {
        if ctx.stop_producers.is_cancelled() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let consumer = safe_consumer(&ctx, client.clone(), format!("c{index}")).await;
    let mut n = 0u64;
    while !ctx.stop_producers.is_cancelled() {
        backlog_room(&ctx, true).await;
        let item = format!("d{index}-{n}");
        n += 1;
        let before = transitions(&client);
        let invoked = ctx.clock.now();
        let ok = queue.put(&item).await.is_ok();
        let completed = ctx.clock.now();
        let across_fault = transitions(&client) != before;
        ctx.record.lock().safe_puts.push(Put {
            item,
            ok,
            across_fault,
            invoked,
            completed,
        });
        jitter(&mut rng, 30).await;
    }
    ctx.stop.cancelled().await;
    if let Some(consumer) = consumer {
        let _ = consumer.close().await;
    }
}

/// Random creates, sets and deletes in the cached subtree, pausing at quiet points.
pub async fn cache_writer(ctx: Ctx, client: CuratorFramework, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    while !ctx.stop.is_cancelled() {
        ctx.gate.pass().await;
        // Errors (no node, node exists, connection loss) are part of the game.
        curator_testkit::writers::random_write(&client, &mut rng, &ctx.paths.cache, 2).await;
        ctx.count("cache writes");
        jitter(&mut rng, 40).await;
    }
    ctx.gate.leave();
}
