//! `DistributedQueue<T>` and its priority, delay and id variants: Curator's item envelope and
//! node names, a consumer task, and lock-safe consumption.
//!
//! One generic [`Queue`] carries what the four kinds share; a kind marker ([`kind`]) picks the
//! names its items get and the `put` it offers. Rooms: `names` (Curator's item names) and
//! `consume` (the consumer loop).

mod consume;
mod names;

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use curator_framework::codec::{self, Codec, Json};
use curator_framework::listen::{Listenable, ListenerContainer, ListenerStream};
use curator_framework::recipe::{HandleGuard, Recipe, RecipeCore, RecipeEvents, RecipeOptions};
use curator_framework::watcher::Watcher;
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};

use crate::bucket::{self, Buckets};
use crate::envelope;
use crate::outcome::Outcomes;
use consume::ConsumeFn;

/// Item nodes are `<path>/queue-…<sequence>`.
pub const QUEUE_PREFIX: &str = "queue-";

/// What a lock-safe consumer does with an item whose consumer failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ErrorMode {
    /// Put the item back at the tail (the default).
    #[default]
    Requeue,
    /// Drop it.
    Delete,
}

/// A completed put of this queue handle, told to its listeners.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PutEvent {
    /// The node created (in exactly-once mode, when the put's reply was lost, only its prefix
    /// path `<path>/queue-…`: the item was stored once under a name the put did not learn).
    pub node: String,
    /// How many items it holds.
    pub items: usize,
}

/// The kinds of queue: the marker types of [`Queue`]'s first parameter.
pub mod kind {
    use super::Kind;

    mod sealed {
        pub trait Sealed {}
        impl Sealed for super::Fifo {}
        impl Sealed for super::Priority {}
        impl Sealed for super::Delay {}
        impl Sealed for super::Id {}
    }

    /// A kind of queue.
    pub trait QueueKind: sealed::Sealed + Send + Sync + 'static {
        #[doc(hidden)]
        const KIND: Kind;
    }

    /// FIFO ([`DistributedQueue`](crate::DistributedQueue)).
    #[derive(Debug, Clone, Copy)]
    pub struct Fifo;

    /// Lowest priority first ([`DistributedPriorityQueue`](crate::DistributedPriorityQueue)).
    #[derive(Debug, Clone, Copy)]
    pub struct Priority;

    /// Visible once due ([`DistributedDelayQueue`](crate::DistributedDelayQueue)).
    #[derive(Debug, Clone, Copy)]
    pub struct Delay;

    /// FIFO, removable by id ([`DistributedIdQueue`](crate::DistributedIdQueue)).
    #[derive(Debug, Clone, Copy)]
    pub struct Id;

    impl QueueKind for Fifo {
        const KIND: Kind = Kind::Fifo;
    }
    impl QueueKind for Priority {
        const KIND: Kind = Kind::Priority;
    }
    impl QueueKind for Delay {
        const KIND: Kind = Kind::Delay;
    }
    impl QueueKind for Id {
        const KIND: Kind = Kind::Id;
    }
}

use kind::QueueKind;

#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Fifo,
    Priority,
    Delay,
    Id,
}

impl Kind {
    /// The name of the queue type of this kind, as the recipe reports under.
    fn type_name(self) -> &'static str {
        match self {
            Kind::Fifo => "DistributedQueue",
            Kind::Priority => "DistributedPriorityQueue",
            Kind::Delay => "DistributedDelayQueue",
            Kind::Id => "DistributedIdQueue",
        }
    }
}

/// A FIFO queue of typed items, stored as Curator's `DistributedQueue` stores them
/// (persistent-sequential `queue-<seq>` nodes holding the multi-item envelope), so Java and
/// Rust processes share a queue.
///
/// Consumers list the children once per batch and work through the list, holding one watch;
/// with [`QueueBuilder::lock_path`] consumption is lock-safe (at least once, nothing lost when a
/// consumer dies), otherwise at most once.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_queues::DistributedQueue;
/// let queue = DistributedQueue::<String>::builder(client, "/queues/mail")
///     .lock_path("/queues/mail-locks")
///     .consumer(|message: String| async move {
///         println!("sending {message}");
///         Ok::<_, std::io::Error>(())
///     })
///     .build()?;
/// queue.start().await?;
/// queue.put(&"hello".to_owned()).await?;
/// queue.put_multi(&["a".to_owned(), "b".to_owned()]).await?;
/// queue.close().await?;
/// # Ok(()) }
/// ```
pub type DistributedQueue<T, C = Json> = Queue<kind::Fifo, T, C>;

/// A queue consumed by priority, lowest first (Curator's `DistributedPriorityQueue`: the
/// priority is in the node name, `queue-<prio><seq>`, so sorting names sorts priorities).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_queues::DistributedPriorityQueue;
/// let queue = DistributedPriorityQueue::<String>::builder(client, "/queues/urgent").build()?;
/// queue.start().await?;
/// queue.put(&"later".to_owned(), 10).await?;
/// queue.put(&"now".to_owned(), -1).await?;
/// # Ok(()) }
/// ```
pub type DistributedPriorityQueue<T, C = Json> = Queue<kind::Priority, T, C>;

/// A queue whose items become visible at a time (Curator's `DistributedDelayQueue`: nodes
/// `queue-|<epoch-ms hex>|<seq>`); consumers wait with a timer for the earliest item.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_queues::DistributedDelayQueue;
/// let queue = DistributedDelayQueue::<String>::builder(client, "/queues/reminders").build()?;
/// queue.start().await?;
/// queue.put_after(&"call back".to_owned(), Duration::from_secs(60)).await?;
/// # Ok(()) }
/// ```
pub type DistributedDelayQueue<T, C = Json> = Queue<kind::Delay, T, C>;

/// A FIFO queue whose items carry an id (Curator's `DistributedIdQueue`: nodes
/// `queue-|<id>|<seq>`), so they can be removed by id.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_queues::DistributedIdQueue;
/// let queue = DistributedIdQueue::<String>::builder(client, "/queues/orders").build()?;
/// queue.start().await?;
/// queue.put(&"order 7".to_owned(), "order-7").await?;
/// assert_eq!(queue.remove("order-7").await?, 1);
/// # Ok(()) }
/// ```
pub type DistributedIdQueue<T, C = Json> = Queue<kind::Id, T, C>;

/// A queue of kind `K` (see the aliases [`DistributedQueue`], [`DistributedPriorityQueue`],
/// [`DistributedDelayQueue`], [`DistributedIdQueue`]) with items of type `T` encoded by `C`.
///
/// Built with `builder(client, path)…build()`, it is started (`start`, which also starts the
/// consumer, if the builder was given one) before items are put, and closed (`close`, which
/// stops the consumer once the item in hand is finished). Puts are heard through
/// [`listenable`](Self::listenable) and [`stream`](Self::stream).
pub struct Queue<K, T, C = Json> {
    core: Arc<Core<T, C>>,
    /// Cancels the recipe's tasks when the last handle is dropped.
    _guard: HandleGuard,
    kind: PhantomData<K>,
}

struct Core<T, C> {
    client: CuratorFramework,
    path: String,
    codec: C,
    lock_path: Option<String>,
    error_mode: ErrorMode,
    max_items: Option<usize>,
    kind: Kind,
    consumer: Option<ConsumeFn<T>>,
    /// The outcome markers, in exactly-once mode.
    outcomes: Option<Outcomes>,
    /// The bucketed layout, when asked for.
    buckets: Option<Buckets>,
    puts: ListenerContainer<PutEvent>,
    /// The queue's name (the `name` label of the consumer's metrics), lifecycle and consumer.
    recipe: RecipeCore,
}

impl<K, T, C> Clone for Queue<K, T, C> {
    fn clone(&self) -> Self {
        Self {
            core: Arc::clone(&self.core),
            _guard: self._guard.clone(),
            kind: PhantomData,
        }
    }
}

impl<K, T, C: fmt::Debug> fmt::Debug for Queue<K, T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let core = &self.core;
        f.debug_struct("Queue")
            .field("path", &core.path)
            .field("kind", &core.kind)
            .field("codec", &core.codec)
            .field("lock_path", &core.lock_path)
            .field("error_mode", &core.error_mode)
            .field("max_items", &core.max_items)
            .field("consumer", &core.consumer.is_some())
            .field("exactly_once", &core.outcomes.is_some())
            .field("bucketed", &core.buckets.is_some())
            .field("state", &core.recipe.state())
            .finish()
    }
}

/// Settings of a queue of kind `K`; [`build`](Self::build) makes it.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_queues::{DistributedQueue, ErrorMode};
/// #[derive(serde::Serialize, serde::Deserialize, Debug)]
/// struct Job { id: u64 }
/// let queue = DistributedQueue::<Job>::builder(client, "/queues/jobs")
///     .lock_path("/queues/jobs-locks")     // lock-safe: nothing lost if a consumer dies
///     .error_mode(ErrorMode::Requeue)
///     .build()?;
/// queue.start().await?;
/// queue.put(&Job { id: 1 }).await?;
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until built"]
pub struct QueueBuilder<K, T, C = Json> {
    client: CuratorFramework,
    path: String,
    codec: C,
    lock_path: Option<String>,
    error_mode: ErrorMode,
    max_items: Option<usize>,
    consumer: Option<ConsumeFn<T>>,
    exactly_once: bool,
    bucket_capacity: Option<usize>,
    options: RecipeOptions,
    kind: PhantomData<K>,
}

impl<K, T, C: fmt::Debug> fmt::Debug for QueueBuilder<K, T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueBuilder")
            .field("path", &self.path)
            .field("codec", &self.codec)
            .field("lock_path", &self.lock_path)
            .field("error_mode", &self.error_mode)
            .field("max_items", &self.max_items)
            .field("consumer", &self.consumer.is_some())
            .field("exactly_once", &self.exactly_once)
            .field("bucket_capacity", &self.bucket_capacity)
            .field("options", &self.options)
            .finish()
    }
}

impl<K: QueueKind, T: Send + 'static> Queue<K, T, Json> {
    /// Settings for a queue at `path` (JSON items unless [`QueueBuilder::codec`] says
    /// otherwise; no consumer unless [`QueueBuilder::consumer`] gives one).
    pub fn builder(client: CuratorFramework, path: &str) -> QueueBuilder<K, T, Json> {
        QueueBuilder {
            client,
            path: path.to_owned(),
            codec: Json,
            lock_path: None,
            error_mode: ErrorMode::default(),
            max_items: None,
            consumer: None,
            exactly_once: false,
            bucket_capacity: None,
            options: RecipeOptions::new(),
            kind: PhantomData,
        }
    }
}

impl<K, T, C> QueueBuilder<K, T, C>
where
    K: QueueKind,
    T: Send + 'static,
    C: Codec<T>,
{
    /// Uses `codec` for items instead of JSON.
    pub fn codec<D: Codec<T>>(self, codec: D) -> QueueBuilder<K, T, D> {
        QueueBuilder {
            client: self.client,
            path: self.path,
            codec,
            lock_path: self.lock_path,
            error_mode: self.error_mode,
            max_items: self.max_items,
            consumer: self.consumer,
            exactly_once: self.exactly_once,
            bucket_capacity: self.bucket_capacity,
            options: self.options,
            kind: PhantomData,
        }
    }

    /// The queue's name (default: its path): the `name` label of its consumer metrics
    /// (`curator_queue_depth`, `curator_queue_consumer_lag_seconds`), and what its logs and
    /// unhandled errors say. Queues sharing a name share their series.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let queue = curator_queues::DistributedQueue::<String>::builder(client, "/queues/tenant-9")
    ///     .metrics_name("tenant-queues")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// Lock-safe consumption: a consumer holds an ephemeral lock node `<lock_path>/<item>`
    /// while it processes the item, and deletes the item only after its consumer returned, so
    /// a consumer that dies loses nothing (another takes the item over once the lock's session
    /// is gone). Without it, an item is deleted before it is consumed (at most once).
    pub fn lock_path(mut self, lock_path: &str) -> Self {
        self.lock_path = Some(lock_path.to_owned());
        self
    }

    /// What lock-safe consumers do when the consumer fails ([`ErrorMode::Requeue`] by default).
    pub fn error_mode(mut self, mode: ErrorMode) -> Self {
        self.error_mode = mode;
        self
    }

    /// Exactly-once puts, and exactly-once takes by the consumer without a lock path, across
    /// lost replies, connection loss and session expiry: each write goes in one transaction with
    /// a persistent outcome marker in the sibling node `<path>-outcomes`, which tells the writer
    /// what happened when the reply is lost. Costs one more round trip per put and per take (the
    /// marker's delete). Item nodes and data stay Curator's, so Java processes share the queue
    /// (without the guarantee for their own writes). With a [`lock_path`](Self::lock_path) the
    /// consumer stays lock-safe (at least once: a consumer that dies mid-item has its item
    /// redone); only its puts and requeues are exactly once. See the crate's README,
    /// "Exactly-once mode".
    pub fn exactly_once(mut self) -> Self {
        self.exactly_once = true;
        self
    }

    /// The bucketed layout, for queues beyond one listing (FIFO [`DistributedQueue`] only):
    /// items go into child directories `<path>/bucket-<n>` of about `capacity` item nodes each,
    /// so a consumer lists one bucket, never the whole backlog. FIFO by (bucket, sequence);
    /// works with [`lock_path`](Self::lock_path) and [`exactly_once`](Self::exactly_once);
    /// not with [`max_items`](Self::max_items). The layout is not Curator's: every handle of
    /// the queue (no Java process) must use it. See the crate's README, "Bucketed layout".
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let queue = curator_queues::DistributedQueue::<u64>::builder(client, "/queues/events")
    ///     .bucketed(10_000)
    ///     .consumer(|event: u64| async move { Ok::<_, std::io::Error>(()) })
    ///     .build()?;
    /// queue.start().await?;
    /// queue.put(&7).await?;
    /// # Ok(()) }
    /// ```
    pub fn bucketed(mut self, capacity: usize) -> Self {
        self.bucket_capacity = Some(capacity);
        self
    }

    /// Puts wait while the queue has `max_items` nodes or more. The bound is approximate:
    /// producers that check at the same moment may each add one.
    pub fn max_items(mut self, max_items: usize) -> Self {
        self.max_items = Some(max_items);
        self
    }

    /// Consumes the queue from `start` to `close`: `consumer` is called with each item, one at a
    /// time, in queue order. A consumer error is logged; in lock-safe mode it requeues or
    /// deletes the item per the [`ErrorMode`]. Without a consumer the queue only produces.
    pub fn consumer<F, Fut, E>(mut self, consumer: F) -> Self
    where
        F: Fn(T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        self.consumer = Some(consume::consume_fn(consumer));
        self
    }

    /// The queue (not started).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path; [`Error::InvalidArgument`] for `max_items(0)`,
    /// for exactly-once mode at `/` (the markers' sibling directory would have no place), and
    /// for `bucketed` with a capacity of 0 (or over `i32::MAX`), with `max_items`, or on a
    /// priority, delay or id queue.
    pub fn build(self) -> Result<Queue<K, T, C>> {
        paths::validate(&self.path)?;
        let buckets = match self.bucket_capacity {
            Some(capacity) => {
                bucket::validate_capacity(capacity)?;
                if K::KIND != Kind::Fifo {
                    return Err(Error::InvalidArgument(format!(
                        "the bucketed layout is for FIFO queues; a {:?} queue orders items by \
                         their names across the whole queue, which buckets would split",
                        K::KIND
                    )));
                }
                if self.max_items.is_some() {
                    return Err(Error::InvalidArgument(
                        "a bucketed queue cannot be bounded with max_items (the bound counts \
                         one listing, and a bucketed queue has no single listing)"
                            .into(),
                    ));
                }
                Some(Buckets::new(
                    self.client.clone(),
                    &self.path,
                    capacity,
                    CreateMode::Persistent,
                )?)
            }
            None => None,
        };
        let outcomes = if self.exactly_once {
            Some(Outcomes::new(
                self.client.clone(),
                &self.path,
                CreateMode::Persistent,
            )?)
        } else {
            None
        };
        if let Some(lock_path) = &self.lock_path {
            paths::validate(lock_path)?;
        }
        if self.max_items == Some(0) {
            return Err(Error::InvalidArgument(
                "a bounded queue needs room for at least one item".into(),
            ));
        }
        let recipe = RecipeCore::new(&self.client, K::KIND.type_name(), &self.path, &self.options);
        let puts = recipe.listener_container(&self.client);
        let core = Arc::new(Core {
            recipe,
            client: self.client,
            path: self.path,
            codec: self.codec,
            lock_path: self.lock_path,
            error_mode: self.error_mode,
            max_items: self.max_items,
            kind: K::KIND,
            consumer: self.consumer,
            outcomes,
            buckets,
            puts,
        });
        Ok(Queue {
            _guard: core.recipe.handle_guard(),
            core,
            kind: PhantomData,
        })
    }
}

impl<K, T, C> Queue<K, T, C>
where
    K: QueueKind,
    T: Send + 'static,
    C: Codec<T>,
{
    /// The queue's path.
    pub fn path(&self) -> &str {
        &self.core.path
    }

    /// Creates the queue's node (persistent, its parents containers, as Curator does) and starts
    /// the consumer, if there is one.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`], [`Error::Closed`]; connection errors (the queue is then not
    /// started and `start` may be called again).
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the queue not started.
    pub async fn start(&self) -> Result<()> {
        let core = &self.core;
        core.recipe.lifecycle().ensure_startable()?;
        match core
            .client
            .create()
            .creating_parent_containers_if_needed()
            .for_path(&core.path, [])
            .await
        {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(error) => return Err(error),
        }
        core.recipe.lifecycle().start()?;
        if let Some(consumer) = &core.consumer {
            let (core, consumer) = (Arc::clone(&self.core), Arc::clone(consumer));
            self.core
                .recipe
                .tasks()
                .spawn_cooperative(|cancelled| consume::consume_loop(core, consumer, cancelled))
                .detach();
        }
        Ok(())
    }

    /// Stops the consumer (the item in hand is finished first, within the client's
    /// `max_close_wait`) and refuses further puts. Idempotent.
    ///
    /// # Errors
    /// None: nothing is deleted, so nothing can fail.
    ///
    /// # Cancellation safety
    /// Safe: the consumer is told to stop at the first poll; dropping the future only stops the
    /// wait.
    pub async fn close(&self) -> Result<()> {
        self.core.recipe.close_tasks().await;
        Ok(())
    }

    /// Listeners told of every completed put of this handle.
    pub fn listenable(&self) -> Listenable<PutEvent> {
        self.core.puts.listenable()
    }

    /// The completed puts of this handle, as a stream.
    pub fn stream(&self) -> ListenerStream<PutEvent> {
        self.core.puts.listenable().stream()
    }

    /// The number of item nodes now in the queue (each may hold several items).
    ///
    /// # Errors
    /// Connection errors.
    pub async fn len(&self) -> Result<usize> {
        if let Some(buckets) = &self.core.buckets {
            return buckets.count().await;
        }
        Ok(self.core.item_names(&HashSet::new()).await?.0.len())
    }

    /// Deletes exactly-once outcome markers older than `max_age`: those of puts and takes whose
    /// process died after the server applied them and before it learned so (a live handle
    /// deletes its own at once). Pick `max_age` far above any partition a live consumer could
    /// sit out: a taker that asks after its marker was purged concludes the take did not
    /// apply, and the item is then lost (never duplicated). Returns how many; `0` outside
    /// exactly-once mode.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn purge_outcomes(&self, max_age: Duration) -> Result<usize> {
        match &self.core.outcomes {
            Some(outcomes) => outcomes.purge(max_age).await,
            None => Ok(0),
        }
    }

    /// Whether the queue has no item node now.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn is_empty(&self) -> Result<bool> {
        Ok(self.len().await? == 0)
    }
}

impl<T: Send + 'static, C: Codec<T>> Queue<kind::Fifo, T, C> {
    /// Adds an item.
    ///
    /// # Errors
    /// [`Error::NotStarted`] / [`Error::Closed`] outside `start`…`close`; [`Error::Decode`]
    /// when the codec fails; [`Error::InvalidArgument`] when the item is over ZooKeeper's 1 MiB
    /// limit (nothing written); connection errors.
    ///
    /// # Cancellation safety
    /// The put may or may not be applied when the future is dropped.
    pub async fn put(&self, item: &T) -> Result<()> {
        self.core
            .put(QUEUE_PREFIX.to_owned(), std::slice::from_ref(item))
            .await
    }

    /// Adds several items in one node (consumed in order, by one consumer).
    ///
    /// # Errors
    /// As [`put`](Self::put); the items together must fit in 1 MiB.
    ///
    /// # Cancellation safety
    /// As [`put`](Self::put).
    pub async fn put_multi(&self, items: &[T]) -> Result<()> {
        self.core.put(QUEUE_PREFIX.to_owned(), items).await
    }
}

impl<T: Send + 'static, C: Codec<T>> Queue<kind::Priority, T, C> {
    /// Adds an item with `priority` (lower first).
    ///
    /// # Errors
    /// As [`DistributedQueue::put`].
    ///
    /// # Cancellation safety
    /// As [`DistributedQueue::put`].
    pub async fn put(&self, item: &T, priority: i32) -> Result<()> {
        self.core
            .put(
                format!("{QUEUE_PREFIX}{}", names::priority_code(priority)),
                std::slice::from_ref(item),
            )
            .await
    }
}

impl<T: Send + 'static, C: Codec<T>> Queue<kind::Delay, T, C> {
    /// Adds an item that becomes visible at `at`.
    ///
    /// # Errors
    /// As [`DistributedQueue::put`].
    ///
    /// # Cancellation safety
    /// As [`DistributedQueue::put`].
    pub async fn put_at(&self, item: &T, at: SystemTime) -> Result<()> {
        let epoch = names::epoch_ms(at);
        self.core
            .put(
                format!("{QUEUE_PREFIX}|{epoch:08X}|"),
                std::slice::from_ref(item),
            )
            .await
    }

    /// Adds an item that becomes visible after `delay`.
    ///
    /// # Errors
    /// As [`DistributedQueue::put`].
    ///
    /// # Cancellation safety
    /// As [`DistributedQueue::put`].
    pub async fn put_after(&self, item: &T, delay: Duration) -> Result<()> {
        self.put_at(item, SystemTime::now() + delay).await
    }
}

impl<T: Send + 'static, C: Codec<T>> Queue<kind::Id, T, C> {
    /// Adds an item with `id` (`/` and `|` in the id become `_`, as in Curator).
    ///
    /// # Errors
    /// As [`DistributedQueue::put`].
    ///
    /// # Cancellation safety
    /// As [`DistributedQueue::put`].
    pub async fn put(&self, item: &T, id: &str) -> Result<()> {
        self.core
            .put(
                format!("{QUEUE_PREFIX}|{}|", names::id_code(id)),
                std::slice::from_ref(item),
            )
            .await
    }

    /// Removes every item with `id` that no consumer is processing now; returns how many.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn remove(&self, id: &str) -> Result<usize> {
        let core = &self.core;
        let wanted = format!("|{}|", names::id_code(id));
        let (names, _) = core.item_names(&HashSet::new()).await?;
        let mut removed = 0;
        for name in names.iter().filter(|n| n.contains(&wanted)) {
            if let Some(lock_path) = &core.lock_path {
                let locked = core
                    .client
                    .check_exists()
                    .for_path(&paths::join(lock_path, name))
                    .await?;
                if locked.is_some() {
                    continue;
                }
            }
            match core
                .client
                .delete()
                .for_path(&paths::join(&core.path, name))
                .await
            {
                Ok(()) => removed += 1,
                Err(Error::NoNode) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(removed)
    }
}

impl<K, T, C> Recipe for Queue<K, T, C>
where
    K: QueueKind + Send + Sync,
    T: Send + 'static,
    C: Codec<T>,
{
    fn core(&self) -> &RecipeCore {
        &self.core.recipe
    }

    async fn start(&self) -> Result<()> {
        Queue::start(self).await
    }

    async fn close(&self) -> Result<()> {
        Queue::close(self).await
    }
}

impl<K, T, C> RecipeEvents for Queue<K, T, C>
where
    K: QueueKind + Send + Sync,
    T: Send + 'static,
    C: Codec<T>,
{
    type Event = PutEvent;

    fn listenable(&self) -> Listenable<PutEvent> {
        Queue::listenable(self)
    }
}

impl<T, C> Core<T, C>
where
    T: Send + 'static,
    C: Codec<T>,
{
    async fn put(&self, prefix: String, items: &[T]) -> Result<()> {
        self.recipe.lifecycle().ensure_started()?;
        let encoded = items
            .iter()
            .map(|item| {
                self.codec
                    .encode(item)
                    .map_err(|e| codec::with_path(e, &self.path))
            })
            .collect::<Result<Vec<_>>>()?;
        let data = envelope::encode(&encoded);
        if data.len() > paths::MAX_DATA_LEN {
            return Err(Error::InvalidArgument(format!(
                "{} queue item(s) take {} bytes, over ZooKeeper's limit of {} bytes",
                items.len(),
                data.len(),
                paths::MAX_DATA_LEN
            )));
        }
        if let Some(max) = self.max_items {
            self.wait_for_room(max).await?;
        }
        if let Some(buckets) = &self.buckets {
            let client = &self.client;
            let outcomes = self.outcomes.as_ref();
            let data = &data;
            let node = buckets
                .put(&prefix, |prefix_path| async move {
                    match outcomes {
                        Some(outcomes) => outcomes.put(&prefix_path, data, false).await,
                        // No parents made: a bucket a consumer deleted answers `NoNode`.
                        None => client
                            .create()
                            .with_mode(CreateMode::PersistentSequential)
                            .for_path(&prefix_path, data)
                            .await
                            .map(Some),
                    }
                })
                .await?;
            self.puts.publish(PutEvent {
                node: node.unwrap_or_else(|| paths::join(&self.path, &prefix)),
                items: items.len(),
            });
            return Ok(());
        }
        let prefix_path = paths::join(&self.path, &prefix);
        if let Some(outcomes) = &self.outcomes {
            // After a lost reply the item is stored once but its name is unknown: the event
            // then names the prefix.
            let node = outcomes.put(&prefix_path, &data, true).await?;
            self.puts.publish(PutEvent {
                node: node.unwrap_or(prefix_path),
                items: items.len(),
            });
            return Ok(());
        }
        let node = self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(CreateMode::PersistentSequential)
            .for_path(&prefix_path, &data)
            .await?;
        self.puts.publish(PutEvent {
            node,
            items: items.len(),
        });
        Ok(())
    }

    async fn wait_for_room(&self, max: usize) -> Result<()> {
        loop {
            match self
                .client
                .get_children()
                .watched()
                .for_path(&self.path)
                .await
            {
                Ok((children, _, watcher)) => {
                    if children.len() < max {
                        return Ok(());
                    }
                    watcher.changed().await;
                }
                Err(Error::NoNode) => return Ok(()),
                Err(error) => return Err(error),
            }
        }
    }

    fn sort(&self, item_names: &mut [String]) {
        match self.kind {
            Kind::Fifo | Kind::Priority => item_names.sort_unstable(),
            Kind::Delay => item_names.sort_by(|a, b| {
                names::delay_epoch(a)
                    .cmp(&names::delay_epoch(b))
                    .then_with(|| names::sequence(a).cmp(names::sequence(b)))
            }),
            Kind::Id => item_names.sort_by(|a, b| names::sequence(a).cmp(names::sequence(b))),
        }
    }

    /// The item names in consumption order (bucketed: those of the lowest bucket with items,
    /// as `bucket-<n>/<item>`, and of the buckets after it while all items so far are in
    /// `locked`), and the watches that fire when they change.
    async fn item_names(&self, locked: &HashSet<String>) -> Result<(Vec<String>, Vec<Watcher>)> {
        if let Some(buckets) = &self.buckets {
            let scan = buckets.scan(QUEUE_PREFIX, true, locked).await?;
            return Ok((scan.items, scan.watchers));
        }
        let (children, watcher) = match self
            .client
            .get_children()
            .watched()
            .for_path(&self.path)
            .await
        {
            Ok((children, _, watcher)) => (children, Some(watcher)),
            Err(Error::NoNode) => {
                let (stat, watcher) = self
                    .client
                    .check_exists()
                    .watched()
                    .for_path(&self.path)
                    .await?;
                (Vec::new(), stat.is_none().then_some(watcher))
            }
            Err(error) => return Err(error),
        };
        let mut item_names: Vec<String> = children
            .into_iter()
            .filter(|name| {
                let item = name.starts_with(QUEUE_PREFIX);
                if !item {
                    tracing::debug!(name, "not a queue item; skipped");
                }
                item
            })
            .collect();
        self.sort(&mut item_names);
        Ok((item_names, watcher.into_iter().collect()))
    }
}
