//! The one engine behind every cache: a store of nodes ([`Store`]) kept level-triggered.
//!
//! Every change the engine learns of (a watch event, a reconnect) becomes a *read* of the node's
//! current state, queued in order. Reads are sent in queue order and their replies are applied in
//! the same order; ZooKeeper answers one session's requests in order and reflects every change a
//! notification announced in the replies that follow it, so the states applied to each path only
//! move forward. Applying a state emits exactly the difference with what the cache held (by
//! `czxid` and `mzxid`), so nothing is emitted twice and no event describes a state the server
//! never had.
//!
//! Two ways of hearing about changes:
//! - **persistent**: one `add_watch().recursive()` on the root (ZooKeeper 3.6+); each node event
//!   becomes a data read.
//! - **one-shot**: a data watch and a children watch on each cached node (and an exists watch on
//!   a missing root), set by the reads themselves, as Curator's `TreeCache` does.
//!
//! After a reconnect or a new session the engine starts a new *generation*: replies and watches
//! of earlier generations are ignored, and the tree is walked again from the root, diffing as it
//! goes (children missing from a listing are deleted; every listed child is read again).

mod barrier;

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::listen::{ListenerContainer, ListenerStream};
use curator_framework::metrics::{RecipeName, names};
use curator_framework::ops::multi_read::ReadResult;
use curator_framework::recipe::{Backoff, RecipeOptions, RecipeTasks, TaskHandle};
use curator_framework::types::{EventType, KeeperState, WatchedEvent};
use curator_framework::watcher::{PersistentWatcher, Watcher};
use curator_framework::{ConnectionState, CuratorFramework, Error, Stat, paths};
use futures::future::{BoxFuture, FutureExt};
use futures::stream::{FuturesOrdered, FuturesUnordered, StreamExt};
use parking_lot::{Mutex, RwLock};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

pub(crate) use barrier::{Barrier, wait_for};
use barrier::{Barriers, next_catch_up};

use crate::event::{CacheError, CacheEvent, ChildData};
use crate::selector::TreeCacheSelector;
use crate::store::Store;

/// Default bound on reads in flight at once during a load.
pub(crate) const DEFAULT_MAX_IN_FLIGHT: usize = 256;
/// Default bound on the children listed per node.
pub(crate) const DEFAULT_MAX_CHILDREN: usize = 100_000;

/// How a cache hears about changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum WatchMode {
    /// One persistent recursive watch on the root when the server supports it (ZooKeeper 3.6+),
    /// otherwise one-shot watches on every node.
    #[default]
    Auto,
    /// One persistent recursive watch on the root; a server without `addWatch` makes the cache
    /// report an error instead of falling back.
    Persistent,
    /// One-shot data and children watches on every cached node (works on ZooKeeper 3.5).
    OneShot,
}

/// The settings of one engine.
pub(crate) struct Config {
    /// The cache's kind (its type's name).
    pub(crate) kind: &'static str,
    pub(crate) root: Arc<str>,
    pub(crate) mode: WatchMode,
    /// Levels below the root that are cached (0: the root only).
    pub(crate) max_depth: usize,
    pub(crate) selector: Option<Arc<dyn TreeCacheSelector>>,
    pub(crate) cache_data: bool,
    pub(crate) max_children: usize,
    pub(crate) max_in_flight: usize,
    /// The cache's name (`metrics_name`; its root by default).
    pub(crate) options: RecipeOptions,
}

impl Config {
    /// A cache of `kind` at `root` (not validated yet), keeping data, with the default limits
    /// and no selector.
    pub(crate) fn new(kind: &'static str, root: &str, mode: WatchMode, max_depth: usize) -> Self {
        Self {
            kind,
            root: Arc::from(root),
            mode,
            max_depth,
            selector: None,
            cache_data: true,
            max_children: DEFAULT_MAX_CHILDREN,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            options: RecipeOptions::new(),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("kind", &self.kind)
            .field("root", &self.root)
            .field("mode", &self.mode)
            .field("max_depth", &self.max_depth)
            .field("selector", &self.selector.is_some())
            .field("cache_data", &self.cache_data)
            .field("max_children", &self.max_children)
            .field("max_in_flight", &self.max_in_flight)
            .finish()
    }
}

/// What the engine shares with the cache handles.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) nodes: RwLock<Store>,
    /// Where the engine publishes its events.
    pub(crate) events: ListenerContainer<CacheEvent>,
    /// Where the initial load stands.
    pub(crate) phase: watch::Sender<Phase>,
    /// The watch mode in use (`None` until the first walk chose one).
    pub(crate) active: Mutex<Option<WatchMode>>,
    /// The `name` label of the event lag.
    metrics: RecipeName,
}

impl Shared {
    pub(crate) fn new(
        events: ListenerContainer<CacheEvent>,
        root: Arc<str>,
        metrics: RecipeName,
    ) -> Arc<Self> {
        Arc::new(Self {
            metrics,
            nodes: RwLock::new(Store::new(root)),
            events,
            phase: watch::channel(Phase::Loading).0,
            active: Mutex::new(None),
        })
    }

    pub(crate) fn get(&self, path: &str) -> Option<ChildData> {
        self.nodes.read().get(path)
    }

    pub(crate) fn children(&self, path: &str) -> Vec<ChildData> {
        self.nodes.read().children(path)
    }

    pub(crate) fn snapshot(&self) -> Vec<ChildData> {
        self.nodes.read().snapshot()
    }

    pub(crate) fn len(&self) -> usize {
        self.nodes.read().len()
    }

    /// Waits for the initial load: `true` once done, `false` when the cache stopped first.
    pub(crate) async fn wait_initialized(&self) -> bool {
        let mut receiver = self.phase.subscribe();
        // The sender lives as long as `self`, so the wait always ends with a phase.
        let phase = receiver.wait_for(|phase| *phase != Phase::Loading).await;
        phase.is_ok_and(|phase| *phase == Phase::Initialized)
    }

    pub(crate) fn is_initialized(&self) -> bool {
        *self.phase.borrow() == Phase::Initialized
    }

    fn publish_all(&self, events: Vec<CacheEvent>) {
        // Only after the initial load: a node found by it may have changed long ago.
        let live = self.is_initialized();
        for event in events {
            if live {
                self.record_lag(&event);
            }
            self.events.publish(event);
        }
    }

    /// Records the time from the change of a created or changed node (its `mtime`, server
    /// clock) to its event's publication (local clock); clock skew between the server and this
    /// process shifts it, and negative readings count as 0. A deletion carries no time of its
    /// own, so it records nothing.
    fn record_lag(&self, event: &CacheEvent) {
        let node = match event {
            CacheEvent::Created { node } | CacheEvent::Changed { node, .. } => node,
            _ => return,
        };
        let lag = curator_framework::metrics::seconds_since_epoch_millis(node.stat().mtime);
        self.metrics
            .record_seconds(names::CACHE_EVENT_LAG_SECONDS, lag);
    }

    /// Records that the cache stopped (unless its initial load was done).
    pub(crate) fn stopped(&self) {
        self.phase.send_if_modified(|phase| {
            let loading = *phase == Phase::Loading;
            if loading {
                *phase = Phase::Stopped;
            }
            loading
        });
    }
}

/// Where a cache's initial load stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Loading,
    Initialized,
    /// Stopped before the initial load was done.
    Stopped,
}

/// Starts an engine task on `tasks`. It stops when its handle is dropped, when `tasks` are
/// cancelled or closed, and when the client closes; the cache's watches go with it.
pub(crate) fn spawn(
    tasks: &RecipeTasks,
    client: CuratorFramework,
    config: Config,
    shared: Arc<Shared>,
    requests: mpsc::UnboundedReceiver<Barrier>,
) -> TaskHandle {
    let states = client.connection_state_stream();
    let engine = Engine {
        client,
        config,
        shared,
        generation: 0,
        queue: VecDeque::new(),
        in_flight: FuturesOrdered::new(),
        reads_in_flight: 0,
        mean_data_len: 0,
        walk_pending: 0,
        walking: false,
        initialized: false,
        live: HashSet::new(),
        watchers: FuturesUnordered::new(),
        retired: None,
        persistent: None,
        one_shot: false,
        retry_at: None,
        backoff: Backoff::new(MIN_BACKOFF, MAX_BACKOFF),
        walk_failed: false,
        tick: 0,
        outstanding: BTreeMap::new(),
        stale: false,
        requests,
        barriers: Barriers::new(),
    };
    let span = tracing::debug_span!("cache", kind = engine.config.kind, root = %engine.config.root);
    // However the task ends (cancelled even before its first poll), dropping the future drops
    // the guard, which records that the cache stopped.
    let stopped = StopGuard(Arc::clone(&engine.shared));
    let run = async move {
        let _stopped = stopped;
        engine.follow(states).await;
    };
    tasks.spawn(tracing::Instrument::instrument(run, span))
}

/// The most reads in one multi-read.
const MAX_BATCH_READS: usize = 64;
/// The data one multi-read is expected to bring back, at most (by the mean data length so far).
const BATCH_BYTES: usize = 512 * 1024;
/// The data length assumed per read before any was seen, and at least.
const MIN_EXPECTED_DATA_LEN: usize = 256;

/// The pause before walking again after a failed read: from this, doubling...
const MIN_BACKOFF: Duration = Duration::from_millis(200);
/// ... up to this, and back to the shortest after a walk that went through.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FetchKind {
    Data,
    Children { refresh: bool },
    Exists,
}

#[derive(Debug)]
struct Fetch {
    path: Arc<str>,
    kind: FetchKind,
    origin: Origin,
}

/// Why a read was queued: the reads a reply queues share the reply's origin.
#[derive(Debug, Clone, Copy)]
struct Origin {
    /// Part of the current walk (counted for "walk finished").
    walk: bool,
    /// The walk or notification that started the chain of reads (see `Engine::tick`).
    cause: u64,
}

enum Outcome {
    Data(curator_framework::Result<(Vec<u8>, Stat, Option<Watcher>)>),
    Children(curator_framework::Result<(Vec<String>, Option<Watcher>)>),
    Exists(curator_framework::Result<(Option<Stat>, Watcher)>),
}

struct Reply {
    generation: u64,
    fetch: Fetch,
    outcome: Outcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum WatchKind {
    Data,
    Children,
    Exists,
}

type Fired = (u64, WatchKind, Arc<str>, WatchedEvent);

struct Engine {
    client: CuratorFramework,
    config: Config,
    shared: Arc<Shared>,
    generation: u64,
    /// Reads decided but not sent yet (sent in this order, at most `max_in_flight` at a time).
    queue: VecDeque<Fetch>,
    /// Requests sent (one read, or a batch of reads), answered in order.
    in_flight: FuturesOrdered<BoxFuture<'static, Vec<Reply>>>,
    /// Reads in `in_flight`.
    reads_in_flight: usize,
    /// The mean data length of the nodes read so far (it sizes multi-read batches).
    mean_data_len: usize,
    /// Reads of the current walk not applied yet.
    walk_pending: usize,
    walking: bool,
    initialized: bool,
    /// (path, kind) of the live one-shot watches of the current generation: a read that would
    /// add a second one drops it (the server holds one watch per path and kind anyway).
    live: HashSet<(Arc<str>, WatchKind)>,
    /// One-shot watches of the current generation.
    watchers: FuturesUnordered<BoxFuture<'static, Fired>>,
    /// The previous generation's one-shot watches, kept until the walk has replaced them (so
    /// the client does not remove and re-add the same watches at the server).
    retired: Option<FuturesUnordered<BoxFuture<'static, Fired>>>,
    persistent: Option<PersistentWatcher>,
    /// Whether one-shot watches are in use.
    one_shot: bool,
    /// When to walk again after a failed read.
    retry_at: Option<Instant>,
    backoff: Backoff,
    /// A read of the current walk failed with a connection or session error.
    walk_failed: bool,
    /// Counts the causes of reads: each walk and each notification takes the next tick, and the
    /// reads a reply queues keep the cause of the read they answer.
    tick: u64,
    /// Reads of the current generation queued or in flight, by cause.
    outstanding: BTreeMap<u64, usize>,
    /// The cache may lack changes until a walk completes without failure: a read failed, a
    /// watch ended with its session, or the persistent watch was disconnected (ZooKeeper does
    /// not replay what a persistent watch missed).
    stale: bool,
    /// Waits for zxids, from the cache's handles.
    requests: mpsc::UnboundedReceiver<Barrier>,
    barriers: Barriers,
}

impl Engine {
    /// Follows the tree until the client closes; the task's cancellation (the cache's close)
    /// drops the engine with its watches and reads in flight.
    async fn follow(mut self, mut states: ListenerStream<ConnectionState>) {
        if !self.resync().await {
            return;
        }
        loop {
            self.settle_barriers();
            self.pump();
            let retry_at = self.retry_at;
            let catch_up_at = self.barriers.retry_at;
            tokio::select! {
                biased;
                Some(state) = states.next() => {
                    if state == ConnectionState::Reconnected && !self.resync().await {
                        return;
                    }
                }
                Some(replies) = self.in_flight.next(), if !self.in_flight.is_empty() => {
                    self.reads_in_flight -= replies.len();
                    for reply in replies {
                        if !self.apply(reply) {
                            return;
                        }
                    }
                }
                Some(fired) = self.watchers.next(), if !self.watchers.is_empty() => {
                    self.on_fired(fired);
                }
                event = next_persistent(&mut self.persistent) => {
                    self.on_persistent(event);
                }
                () = sleep_until(retry_at) => {
                    self.retry_at = None;
                    if self.client.is_connected() {
                        if !self.resync().await {
                            return;
                        }
                    } else {
                        // The coming `Reconnected` starts the walk, unless this looks again
                        // first (its dispatch may be held up by a slow listener).
                        self.schedule_retry();
                    }
                }
                Some(barrier) = self.requests.recv() => self.barriers.push(barrier),
                caught = next_catch_up(&mut self.barriers.catch_up) => {
                    self.barriers.caught_up(caught);
                }
                () = sleep_until(catch_up_at) => self.barriers.retry_at = None,
            }
        }
    }

    /// Starts a new generation and walks the tree from the root. `false` when the client is
    /// closed.
    async fn resync(&mut self) -> bool {
        self.generation += 1;
        tracing::debug!(generation = self.generation, "walking the tree");
        self.queue.clear();
        self.outstanding.clear();
        self.in_flight = FuturesOrdered::new();
        self.reads_in_flight = 0;
        self.walk_pending = 0;
        self.walking = true;
        self.walk_failed = false;
        self.retry_at = None;
        match self.config.mode {
            WatchMode::OneShot => self.one_shot = true,
            WatchMode::Auto | WatchMode::Persistent if !self.one_shot => {
                // Added on every walk. A new session needs it; within one session the
                // framework's `PersistentWatcher` already re-adds itself after a reconnect, and
                // adding it again is one cheap request that keeps this path simple. The old
                // watcher is dropped after the new one exists, so no removal is sent for it.
                let added = self
                    .client
                    .add_watch()
                    .recursive()
                    .for_path(&self.config.root)
                    .await;
                match added {
                    Ok(watcher) => {
                        self.persistent = Some(watcher);
                    }
                    Err(Error::Unimplemented) if self.config.mode == WatchMode::Auto => {
                        tracing::info!(root = %self.config.root, "the server has no persistent watches; using one-shot watches");
                        self.one_shot = true;
                        self.persistent = None;
                    }
                    Err(Error::Closed) => return false,
                    Err(error) if error.is_retryable() || error.is_session_terminal() => {
                        tracing::debug!(%error, "adding the persistent watch failed; walking again later");
                        self.schedule_retry();
                        return true;
                    }
                    Err(error) => {
                        self.report(CacheError::Read {
                            path: self.config.root.to_string(),
                            error,
                        });
                        self.schedule_retry();
                        return true;
                    }
                }
            }
            _ => {}
        }
        *self.shared.active.lock() = Some(if self.one_shot {
            WatchMode::OneShot
        } else {
            WatchMode::Persistent
        });
        if self.one_shot {
            self.live.clear();
            let old = std::mem::take(&mut self.watchers);
            if !old.is_empty() {
                self.retired = Some(old);
            }
        }
        let root = Arc::clone(&self.config.root);
        let walk = self.origin(true);
        self.enqueue(root, FetchKind::Data, walk);
        // The reads waits were counting on are gone with the old generation: they wait for
        // the walk instead, which reads everything again.
        self.barriers.rearm(walk.cause);
        true
    }

    /// Moves the waits for zxids on: arms those whose session has reached their zxid (after
    /// taking in every notification already delivered), ends those whose reads are applied,
    /// and starts a catch-up for the others (see `barrier`).
    fn settle_barriers(&mut self) {
        if self.barriers.is_idle() {
            return;
        }
        self.barriers.prune();
        let session = self.client.session_id();
        self.barriers.demote(session);
        if let Some(session) = session.filter(|_| self.barriers.can_arm(session)) {
            self.take_delivered();
            self.barriers.arm(session, self.tick);
        }
        let oldest = self.outstanding.keys().next().copied();
        self.barriers.resolve(oldest, self.stale);
        if self.barriers.wants_catch_up() {
            self.barriers
                .start_catch_up(&self.client, &self.config.root);
        }
    }

    /// Handles every notification its watchers already hold, without waiting for more.
    /// (`unconstrained`: Tokio's cooperative budget would make a ready channel look empty.)
    fn take_delivered(&mut self) {
        loop {
            if let Some(Some(fired)) =
                tokio::task::unconstrained(self.watchers.next()).now_or_never()
            {
                self.on_fired(fired);
                continue;
            }
            if self.persistent.is_some()
                && let Some(event) =
                    tokio::task::unconstrained(next_persistent(&mut self.persistent)).now_or_never()
            {
                self.on_persistent(event);
                continue;
            }
            return;
        }
    }

    /// The cache may lack changes until a walk completes cleanly: one is due (after this walk,
    /// or after a pause; without waiting for the `Reconnected` that usually starts it).
    fn mark_stale(&mut self) {
        self.stale = true;
        if self.walking {
            self.walk_failed = true;
        } else {
            self.schedule_retry();
        }
    }

    fn schedule_retry(&mut self) {
        self.stale = true;
        if self.retry_at.is_none() {
            self.retry_at = Some(Instant::now() + self.backoff.next_pause());
        }
    }

    fn enqueue(&mut self, path: Arc<str>, kind: FetchKind, origin: Origin) {
        if origin.walk {
            self.walk_pending += 1;
        }
        *self.outstanding.entry(origin.cause).or_insert(0) += 1;
        self.queue.push_back(Fetch { path, kind, origin });
    }

    /// A new origin: a walk's, or a notification's.
    fn origin(&mut self, walk: bool) -> Origin {
        self.tick += 1;
        Origin {
            walk,
            cause: self.tick,
        }
    }

    /// One read of the current generation is applied (whatever its outcome).
    fn settled(&mut self, cause: u64) {
        let std::collections::btree_map::Entry::Occupied(mut reads) = self.outstanding.entry(cause)
        else {
            unreachable!("every queued read is counted");
        };
        *reads.get_mut() -= 1;
        if *reads.get() == 0 {
            reads.remove();
        }
    }

    /// Sends queued reads, in order, up to the in-flight bound. With a persistent watch (no
    /// per-node watches to set), consecutive data and children reads go out as multi-reads of
    /// up to [`MAX_BATCH_READS`] reads and about [`BATCH_BYTES`] of expected data each.
    fn pump(&mut self) {
        while self.reads_in_flight < self.config.max_in_flight && !self.queue.is_empty() {
            let room = self.config.max_in_flight - self.reads_in_flight;
            let batch = if self.one_shot {
                1
            } else {
                let per_read = self.mean_data_len.max(MIN_EXPECTED_DATA_LEN);
                (BATCH_BYTES / per_read).clamp(1, MAX_BATCH_READS).min(room)
            };
            let take = self
                .queue
                .iter()
                .take(batch)
                .take_while(|fetch| fetch.kind != FetchKind::Exists)
                .count()
                .max(1);
            let fetches: Vec<Fetch> = self.queue.drain(..take).collect();
            self.reads_in_flight += fetches.len();
            let generation = self.generation;
            let future = if fetches.len() == 1 {
                let future = self.send(&fetches[0]);
                async move {
                    let outcome = future.await;
                    let fetch = fetches.into_iter().next().expect("one fetch");
                    vec![Reply {
                        generation,
                        fetch,
                        outcome,
                    }]
                }
                .boxed()
            } else {
                self.send_batch(fetches, generation)
            };
            self.in_flight.push_back(future);
        }
        // A walk can queue a read per node; do not keep that room once it is used up.
        if self.queue.is_empty() && self.queue.capacity() > MAX_BATCH_READS {
            self.queue = VecDeque::new();
        }
    }

    /// Sends `fetches` (data and children reads, no watches) as one multi-read.
    fn send_batch(&self, fetches: Vec<Fetch>, generation: u64) -> BoxFuture<'static, Vec<Reply>> {
        let mut reads = self.client.multi_read();
        for fetch in &fetches {
            reads = match fetch.kind {
                FetchKind::Data => reads.get_data(&fetch.path),
                FetchKind::Children { .. } => reads.get_children(&fetch.path),
                FetchKind::Exists => unreachable!("exists reads are sent alone"),
            };
        }
        let future = reads.commit();
        async move {
            let results = match future.await {
                Ok(results) if results.len() == fetches.len() => {
                    results.into_iter().map(Ok).collect()
                }
                Ok(results) => {
                    let error = Error::UnexpectedReply(format!(
                        "a multi-read of {} reads answered {}",
                        fetches.len(),
                        results.len()
                    ));
                    vec![Err(error); fetches.len()]
                }
                Err(error) => vec![Err(error); fetches.len()],
            };
            fetches
                .into_iter()
                .zip(results)
                .map(|(fetch, result)| {
                    let outcome = match (fetch.kind, result) {
                        (_, Ok(ReadResult::Error(error))) | (_, Err(error)) => match fetch.kind {
                            FetchKind::Children { .. } => Outcome::Children(Err(error)),
                            _ => Outcome::Data(Err(error)),
                        },
                        (FetchKind::Data, Ok(ReadResult::Data { data, stat })) => {
                            Outcome::Data(Ok((data, stat, None)))
                        }
                        (FetchKind::Children { .. }, Ok(ReadResult::Children { children })) => {
                            Outcome::Children(Ok((children, None)))
                        }
                        (_, Ok(other)) => {
                            let error =
                                Error::UnexpectedReply(format!("a multi-read answered {other:?}"));
                            match fetch.kind {
                                FetchKind::Children { .. } => Outcome::Children(Err(error)),
                                _ => Outcome::Data(Err(error)),
                            }
                        }
                    };
                    Reply {
                        generation,
                        fetch,
                        outcome,
                    }
                })
                .collect()
        }
        .boxed()
    }

    /// Creates the read's future, which sends the request now.
    fn send(&self, fetch: &Fetch) -> BoxFuture<'static, Outcome> {
        let client = &self.client;
        let path = &*fetch.path;
        match (fetch.kind, self.one_shot) {
            // The stored bytes, as a multi-read gives them: `apply_data` decompresses, so a node
            // that does not decompress keeps its watch and its place in the tree.
            (FetchKind::Data, true) => {
                let f = client
                    .get_data()
                    .watched()
                    .undecompressed()
                    .for_path(path)
                    .into_future();
                async move { Outcome::Data(f.await.map(|(d, s, w)| (d, s, Some(w)))) }.boxed()
            }
            (FetchKind::Data, false) => {
                let f = client
                    .get_data()
                    .undecompressed()
                    .for_path(path)
                    .into_future();
                async move { Outcome::Data(f.await.map(|(d, s)| (d, s, None))) }.boxed()
            }
            (FetchKind::Children { .. }, true) => {
                let f = client.get_children().watched().for_path(path).into_future();
                async move { Outcome::Children(f.await.map(|(c, _, w)| (c, Some(w)))) }.boxed()
            }
            (FetchKind::Children { .. }, false) => {
                let f = client.get_children().for_path(path).into_future();
                async move { Outcome::Children(f.await.map(|(c, _)| (c, None))) }.boxed()
            }
            (FetchKind::Exists, _) => {
                let f = client.check_exists().watched().for_path(path).into_future();
                async move { Outcome::Exists(f.await) }.boxed()
            }
        }
    }

    fn watch(&mut self, kind: WatchKind, path: Arc<str>, watcher: Watcher) {
        if !self.live.insert((Arc::clone(&path), kind)) {
            return; // dropping it removes nothing at the server: the other one stays
        }
        let generation = self.generation;
        self.watchers.push(
            async move {
                let event = watcher.changed().await;
                (generation, kind, path, event)
            }
            .boxed(),
        );
    }

    /// Applies one reply. `false` when the client is closed.
    fn apply(&mut self, reply: Reply) -> bool {
        if reply.generation != self.generation {
            return true;
        }
        let Reply { fetch, outcome, .. } = reply;
        self.settled(fetch.origin.cause);
        if fetch.origin.walk {
            self.walk_pending -= 1;
        }
        let alive = match outcome {
            Outcome::Data(result) => self.apply_data(&fetch, result),
            Outcome::Children(result) => self.apply_children(&fetch, result),
            Outcome::Exists(result) => self.apply_exists(&fetch, result),
        };
        if !alive {
            return false;
        }
        if self.walking && self.walk_pending == 0 {
            self.walk_done();
        }
        true
    }

    fn walk_done(&mut self) {
        self.walking = false;
        self.retired = None;
        if self.walk_failed {
            self.schedule_retry();
        } else {
            self.stale = false;
            self.backoff.reset();
        }
        if !self.initialized {
            self.initialized = true;
            // The phase first: a listener that hears `Initialized` sees `is_initialized()`.
            self.shared.phase.send_replace(Phase::Initialized);
            self.shared.events.publish(CacheEvent::Initialized);
        }
    }

    /// A read failed: `false` for a closed client; connection and session errors make the
    /// cache walk again (after the reconnect, or after a backoff); other errors are reported.
    fn failed(&mut self, path: &str, error: Error) -> bool {
        match error {
            Error::Closed => false,
            error if error.is_retryable() || error.is_session_terminal() => {
                tracing::debug!(path, %error, "cache read failed; walking again later");
                self.stale = true;
                if self.walking {
                    self.walk_failed = true;
                } else {
                    self.schedule_retry();
                }
                true
            }
            error => {
                self.report(CacheError::Read {
                    path: path.to_owned(),
                    error,
                });
                true
            }
        }
    }

    fn report(&self, error: CacheError) {
        tracing::warn!(%error, "cache error");
        self.shared.events.publish(CacheEvent::Error(error));
    }

    fn apply_data(
        &mut self,
        fetch: &Fetch,
        result: curator_framework::Result<(Vec<u8>, Stat, Option<Watcher>)>,
    ) -> bool {
        let path = &fetch.path;
        let (data, stat, watcher) = match result {
            Ok(found) => found,
            Err(Error::NoNode) => {
                self.remove(path);
                if self.one_shot && **path == *self.config.root {
                    self.enqueue(Arc::clone(path), FetchKind::Exists, fetch.origin);
                }
                return true;
            }
            Err(error) => return self.failed(path, error),
        };
        if let Some(watcher) = watcher {
            self.watch(WatchKind::Data, Arc::clone(path), watcher);
        }
        // A running mean of the stored sizes, weighted towards recent reads.
        self.mean_data_len = (self.mean_data_len * 7 + data.len()) / 8;
        let data = self
            .config
            .cache_data
            .then(|| Arc::<[u8]>::from(self.decompressed(path, data)));
        let mut events = Vec::new();
        let upserted = self
            .shared
            .nodes
            .write()
            .upsert(path, stat, data, &mut events);
        self.shared.publish_all(events);
        let depth = self.depth(path);
        let descend = depth < self.config.max_depth && self.trace(path);
        let list = if self.one_shot {
            upserted.fresh || fetch.origin.walk
        } else {
            fetch.origin.walk && (stat.num_children > 0 || upserted.had_children)
        };
        if descend && list {
            let children = usize::try_from(stat.num_children).unwrap_or(0);
            if children > self.config.max_children {
                self.report(CacheError::TooManyChildren {
                    path: path.to_string(),
                    children,
                    limit: self.config.max_children,
                });
            } else {
                self.enqueue(
                    Arc::clone(path),
                    FetchKind::Children {
                        refresh: fetch.origin.walk,
                    },
                    fetch.origin,
                );
            }
        }
        true
    }

    /// `data` as the client's `get_data()` would give it: decompressed when the client
    /// decompresses by default. Empty data stays empty (parents and containers are made with
    /// empty, uncompressed data). Data that does not decompress is kept as stored and reported.
    fn decompressed(&self, path: &str, data: Vec<u8>) -> Vec<u8> {
        if !self.client.compression_enabled() || data.is_empty() {
            return data;
        }
        match self.client.data_as_read(path, data.clone()) {
            Ok(data) => data,
            Err(error) => {
                self.report(CacheError::Read {
                    path: path.to_owned(),
                    error,
                });
                data
            }
        }
    }

    fn apply_children(
        &mut self,
        fetch: &Fetch,
        result: curator_framework::Result<(Vec<String>, Option<Watcher>)>,
    ) -> bool {
        let path = &fetch.path;
        let FetchKind::Children { refresh } = fetch.kind else {
            unreachable!("a children reply answers a children read");
        };
        let (names, watcher) = match result {
            Ok(found) => found,
            Err(Error::NoNode) => {
                self.remove(path);
                if self.one_shot && **path == *self.config.root {
                    self.enqueue(Arc::clone(path), FetchKind::Exists, fetch.origin);
                }
                return true;
            }
            Err(error) => return self.failed(path, error),
        };
        if names.len() > self.config.max_children {
            self.report(CacheError::TooManyChildren {
                path: path.to_string(),
                children: names.len(),
                limit: self.config.max_children,
            });
            return true;
        }
        let Some(cached) = self.shared.nodes.read().child_paths(path) else {
            // Gone from the cache since (a later read found it deleted), yet it exists now:
            // read it again, which lists its children again.
            self.enqueue(Arc::clone(path), FetchKind::Data, fetch.origin);
            return true;
        };
        if let Some(watcher) = watcher {
            self.watch(WatchKind::Children, Arc::clone(path), watcher);
        }
        let listed: HashSet<Arc<str>> = names
            .iter()
            .map(|name| Arc::<str>::from(paths::join(path, name)))
            .filter(|child| self.accept(child))
            .collect();
        let gone: Vec<&Arc<str>> = cached.iter().filter(|c| !listed.contains(*c)).collect();
        for child in gone {
            self.remove(child);
        }
        let mut unknown: Vec<Arc<str>> = if refresh {
            listed.into_iter().collect()
        } else {
            let cached: HashSet<&Arc<str>> = cached.iter().collect();
            listed.into_iter().filter(|c| !cached.contains(c)).collect()
        };
        unknown.sort();
        for child in unknown {
            self.enqueue(child, FetchKind::Data, fetch.origin);
        }
        true
    }

    fn apply_exists(
        &mut self,
        fetch: &Fetch,
        result: curator_framework::Result<(Option<Stat>, Watcher)>,
    ) -> bool {
        match result {
            Ok((Some(_), _watcher)) => {
                self.enqueue(Arc::clone(&fetch.path), FetchKind::Data, fetch.origin);
                true
            }
            Ok((None, watcher)) => {
                self.watch(WatchKind::Exists, Arc::clone(&fetch.path), watcher);
                true
            }
            Err(error) => self.failed(&fetch.path, error),
        }
    }

    fn on_fired(&mut self, (generation, kind, path, event): Fired) {
        if generation != self.generation {
            return;
        }
        self.live.remove(&(Arc::clone(&path), kind));
        if event.event_type == EventType::Session {
            // The watch ended with its session: the cache is blind there until the next walk.
            self.mark_stale();
            return;
        }
        match (kind, event.event_type) {
            (WatchKind::Children, EventType::NodeChildrenChanged) => {
                let origin = self.origin(false);
                self.enqueue(path, FetchKind::Children { refresh: false }, origin);
            }
            (WatchKind::Children, _) => {} // deletion: the data watch reports it
            (WatchKind::Data | WatchKind::Exists, _) => {
                let origin = self.origin(false);
                self.enqueue(path, FetchKind::Data, origin);
            }
        }
    }

    fn on_persistent(&mut self, event: Option<WatchedEvent>) {
        let Some(event) = event else {
            // The session ended; the next `Reconnected` adds the watch on the new session.
            self.persistent = None;
            self.mark_stale();
            return;
        };
        if event.event_type == EventType::Session {
            tracing::debug!(state = ?event.session_state, "persistent watch: session event");
        }
        let ended = matches!(
            event.session_state,
            KeeperState::Expired | KeeperState::Closed | KeeperState::AuthFailed
        );
        match event.event_type {
            EventType::Session if ended => {
                self.persistent = None;
                self.mark_stale();
            }
            // Changes made while disconnected are not replayed to a persistent watch: the
            // `Reconnected` that follows walks the tree again.
            EventType::Session if event.session_state == KeeperState::Disconnected => {
                self.mark_stale();
            }
            EventType::NodeCreated | EventType::NodeDataChanged | EventType::NodeDeleted
                if self.in_scope(&event.path) =>
            {
                let origin = self.origin(false);
                self.enqueue(Arc::from(event.path), FetchKind::Data, origin);
            }
            // Other session states, paths out of scope; children changes are not sent to
            // recursive watches.
            _ => {}
        }
    }

    /// Removes `path` and everything below it, emitting deletions deepest first.
    fn remove(&mut self, path: &str) {
        let mut events = Vec::new();
        self.shared.nodes.write().remove_subtree(path, &mut events);
        self.shared.publish_all(events);
    }

    /// Levels below the root.
    fn depth(&self, path: &str) -> usize {
        let root = &*self.config.root;
        if path == root {
            0
        } else if root == "/" {
            path.matches('/').count()
        } else {
            path[root.len()..].matches('/').count()
        }
    }

    fn trace(&self, path: &str) -> bool {
        self.config
            .selector
            .as_ref()
            .is_none_or(|s| s.trace_children(path))
    }

    fn accept(&self, path: &str) -> bool {
        self.config
            .selector
            .as_ref()
            .is_none_or(|s| s.accept_child(path))
    }

    /// Whether a persistent watch's event path is inside the root. (Only `CuratorCache` uses
    /// persistent watches, and it has neither a depth limit nor a selector.)
    fn in_scope(&self, path: &str) -> bool {
        let root = &*self.config.root;
        root == "/"
            || path
                .strip_prefix(root)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }
}

/// Records that the cache stopped when the engine ends, however it ends.
struct StopGuard(Arc<Shared>);

impl Drop for StopGuard {
    fn drop(&mut self) {
        self.0.stopped();
    }
}

async fn next_persistent(watcher: &mut Option<PersistentWatcher>) -> Option<WatchedEvent> {
    match watcher {
        Some(watcher) => watcher.next().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
