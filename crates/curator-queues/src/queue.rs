//! `DistributedQueue<T>` and its priority, delay and id variants: Curator's item envelope and
//! node names, a consumer task, and lock-safe consumption.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use curator_framework::codec::{self, Codec, Json};
use curator_framework::listen::{Listenable, ListenerContainer};
use curator_framework::ops::transaction::TransactionOp;
use curator_framework::watcher::Watcher;
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};
use futures::future::{BoxFuture, select_all};
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::envelope;

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

/// A completed put, told to put listeners.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PutEvent {
    /// The node created.
    pub node: String,
    /// How many items it holds.
    pub items: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Standard,
    Priority,
    Delay,
    Id,
}

struct Core<T, C> {
    client: CuratorFramework,
    path: String,
    codec: C,
    lock_path: Option<String>,
    error_mode: ErrorMode,
    max_items: Option<usize>,
    kind: Kind,
    puts: ListenerContainer<PutEvent>,
    _item: PhantomData<fn() -> T>,
}

impl<T, C: fmt::Debug> fmt::Debug for Core<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue")
            .field("path", &self.path)
            .field("kind", &self.kind)
            .field("codec", &self.codec)
            .field("lock_path", &self.lock_path)
            .field("error_mode", &self.error_mode)
            .field("max_items", &self.max_items)
            .finish()
    }
}

/// Settings of a queue; [`build`](Self::build) and its siblings make the queue.
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
/// queue.put(&Job { id: 1 }).await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until built"]
pub struct QueueBuilder<T, C = Json> {
    client: CuratorFramework,
    path: String,
    codec: C,
    lock_path: Option<String>,
    error_mode: ErrorMode,
    max_items: Option<usize>,
    _item: PhantomData<fn() -> T>,
}

impl<T, C> QueueBuilder<T, C>
where
    T: Send + 'static,
    C: Codec<T>,
{
    /// Uses `codec` for items instead of JSON.
    pub fn codec<D: Codec<T>>(self, codec: D) -> QueueBuilder<T, D> {
        QueueBuilder {
            client: self.client,
            path: self.path,
            codec,
            lock_path: self.lock_path,
            error_mode: self.error_mode,
            max_items: self.max_items,
            _item: PhantomData,
        }
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

    /// Puts wait while the queue has `max_items` nodes or more. The bound is approximate:
    /// producers that check at the same moment may each add one.
    pub fn max_items(mut self, max_items: usize) -> Self {
        self.max_items = Some(max_items);
        self
    }

    fn core(self, kind: Kind) -> Result<Arc<Core<T, C>>> {
        paths::validate(&self.path)?;
        if let Some(lock_path) = &self.lock_path {
            paths::validate(lock_path)?;
        }
        if self.max_items == Some(0) {
            return Err(Error::InvalidArgument(
                "a bounded queue needs room for at least one item".into(),
            ));
        }
        let puts = self.client.listener_container("queue puts");
        Ok(Arc::new(Core {
            client: self.client,
            path: self.path,
            codec: self.codec,
            lock_path: self.lock_path,
            error_mode: self.error_mode,
            max_items: self.max_items,
            kind,
            puts,
            _item: PhantomData,
        }))
    }

    /// A FIFO queue.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path; [`Error::InvalidArgument`] for `max_items(0)`.
    pub fn build(self) -> Result<DistributedQueue<T, C>> {
        Ok(DistributedQueue {
            core: self.core(Kind::Standard)?,
        })
    }

    /// A priority queue: lower priorities are consumed first.
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn build_priority(self) -> Result<DistributedPriorityQueue<T, C>> {
        Ok(DistributedPriorityQueue {
            core: self.core(Kind::Priority)?,
        })
    }

    /// A delay queue: items are consumed once their time has come.
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn build_delay(self) -> Result<DistributedDelayQueue<T, C>> {
        Ok(DistributedDelayQueue {
            core: self.core(Kind::Delay)?,
        })
    }

    /// A queue whose items carry an id, by which they can be removed.
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn build_id(self) -> Result<DistributedIdQueue<T, C>> {
        Ok(DistributedIdQueue {
            core: self.core(Kind::Id)?,
        })
    }
}

macro_rules! queue_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name<T, C = Json> {
            core: Arc<Core<T, C>>,
        }

        impl<T, C> Clone for $name<T, C> {
            fn clone(&self) -> Self {
                Self { core: Arc::clone(&self.core) }
            }
        }

        impl<T, C: fmt::Debug> fmt::Debug for $name<T, C> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.core.fmt(f)
            }
        }

        impl<T, C> $name<T, C>
        where
            T: Send + 'static,
            C: Codec<T>,
        {
            /// The queue's path.
            pub fn path(&self) -> &str {
                &self.core.path
            }

            /// Listeners told of every completed put of this handle.
            pub fn put_listenable(&self) -> Listenable<PutEvent> {
                self.core.puts.listenable()
            }

            /// Starts a consumer task that calls `consumer` with each item, one at a time, in
            /// queue order, until [`QueueConsumer::close`]. A consumer error is logged; in
            /// lock-safe mode it requeues or deletes the item per the [`ErrorMode`].
            pub fn start_consumer<F, Fut, E>(&self, consumer: F) -> QueueConsumer
            where
                F: Fn(T) -> Fut + Send + Sync + 'static,
                Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
                E: fmt::Display + Send + 'static,
            {
                start_consumer(Arc::clone(&self.core), consumer)
            }

            /// The number of item nodes now in the queue (each may hold several items).
            ///
            /// # Errors
            /// Connection errors.
            pub async fn len(&self) -> Result<usize> {
                Ok(self.core.item_names().await?.0.len())
            }

            /// Whether the queue has no item node now.
            ///
            /// # Errors
            /// Connection errors.
            pub async fn is_empty(&self) -> Result<bool> {
                Ok(self.len().await? == 0)
            }
        }
    };
}

queue_type!(
    /// A FIFO queue of typed items, stored as Curator's `DistributedQueue` stores them
    /// (persistent-sequential `queue-<seq>` nodes holding the multi-item envelope), so Java and
    /// Rust processes share a queue.
    ///
    /// Consumers list the children once per batch and work through the list, holding one watch;
    /// with [`QueueBuilder::lock_path`] consumption is lock-safe (at least once, nothing lost
    /// when a consumer dies), otherwise at most once.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// use curator_queues::DistributedQueue;
    /// let queue = DistributedQueue::<String>::builder(client, "/queues/mail")
    ///     .lock_path("/queues/mail-locks")
    ///     .build()?;
    /// let consumer = queue.start_consumer(|message: String| async move {
    ///     println!("sending {message}");
    ///     Ok::<_, std::io::Error>(())
    /// });
    /// queue.put(&"hello".to_owned()).await?;
    /// queue.put_multi(&["a".to_owned(), "b".to_owned()]).await?;
    /// consumer.close().await;
    /// # Ok(()) }
    /// ```
    DistributedQueue
);
queue_type!(
    /// A queue consumed by priority, lowest first (Curator's `DistributedPriorityQueue`: the
    /// priority is in the node name, `queue-<prio><seq>`, so sorting names sorts priorities).
    DistributedPriorityQueue
);
queue_type!(
    /// A queue whose items become visible at a time (Curator's `DistributedDelayQueue`: nodes
    /// `queue-|<epoch-ms hex>|<seq>`); consumers wait with a timer for the earliest item.
    DistributedDelayQueue
);
queue_type!(
    /// A FIFO queue whose items carry an id (Curator's `DistributedIdQueue`: nodes
    /// `queue-|<id>|<seq>`), so they can be removed by id.
    DistributedIdQueue
);

impl<T: Send + 'static> DistributedQueue<T, Json> {
    /// Settings for a queue at `path` (JSON items by default).
    pub fn builder(client: CuratorFramework, path: &str) -> QueueBuilder<T, Json> {
        QueueBuilder {
            client,
            path: path.to_owned(),
            codec: Json,
            lock_path: None,
            error_mode: ErrorMode::default(),
            max_items: None,
            _item: PhantomData,
        }
    }
}

impl<T: Send + 'static, C: Codec<T>> DistributedQueue<T, C> {
    /// Adds an item.
    ///
    /// # Errors
    /// [`Error::Decode`] when the codec fails; [`Error::InvalidArgument`] when the item is over
    /// ZooKeeper's 1 MiB limit (nothing written); connection errors.
    pub async fn put(&self, item: &T) -> Result<()> {
        self.core
            .put(QUEUE_PREFIX.to_owned(), std::slice::from_ref(item))
            .await
    }

    /// Adds several items in one node (consumed in order, by one consumer).
    ///
    /// # Errors
    /// As [`put`](Self::put); the items together must fit in 1 MiB.
    pub async fn put_multi(&self, items: &[T]) -> Result<()> {
        self.core.put(QUEUE_PREFIX.to_owned(), items).await
    }
}

/// Curator's priority code: `1` + 8 hex digits for priorities ≥ 0, `0` + the 32-bit two's
/// complement in hex for negatives, so names sort by priority.
fn priority_code(priority: i32) -> String {
    if priority >= 0 {
        format!("1{priority:08X}")
    } else {
        format!("0{:08X}", priority as u32)
    }
}

impl<T: Send + 'static, C: Codec<T>> DistributedPriorityQueue<T, C> {
    /// Adds an item with `priority` (lower first).
    ///
    /// # Errors
    /// As [`DistributedQueue::put`].
    pub async fn put(&self, item: &T, priority: i32) -> Result<()> {
        self.core
            .put(
                format!("{QUEUE_PREFIX}{}", priority_code(priority)),
                std::slice::from_ref(item),
            )
            .await
    }
}

impl<T: Send + 'static, C: Codec<T>> DistributedDelayQueue<T, C> {
    /// Adds an item that becomes visible at `at`.
    ///
    /// # Errors
    /// As [`DistributedQueue::put`].
    pub async fn put_at(&self, item: &T, at: SystemTime) -> Result<()> {
        let epoch = at
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
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
    pub async fn put_after(&self, item: &T, delay: Duration) -> Result<()> {
        self.put_at(item, SystemTime::now() + delay).await
    }
}

fn id_code(id: &str) -> String {
    id.replace(['/', '|'], "_")
}

impl<T: Send + 'static, C: Codec<T>> DistributedIdQueue<T, C> {
    /// Adds an item with `id` (`/` and `|` in the id become `_`, as in Curator).
    ///
    /// # Errors
    /// As [`DistributedQueue::put`].
    pub async fn put(&self, item: &T, id: &str) -> Result<()> {
        self.core
            .put(
                format!("{QUEUE_PREFIX}|{}|", id_code(id)),
                std::slice::from_ref(item),
            )
            .await
    }

    /// Removes every item with `id` that no consumer is processing now; returns how many.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn remove(&self, id: &str) -> Result<usize> {
        let wanted = format!("|{}|", id_code(id));
        let (names, _) = self.core.item_names().await?;
        let mut removed = 0;
        for name in names.iter().filter(|n| n.contains(&wanted)) {
            if let Some(lock_path) = &self.core.lock_path {
                let locked = self
                    .core
                    .client
                    .check_exists()
                    .for_path(&paths::join(lock_path, name))
                    .await?;
                if locked.is_some() {
                    continue;
                }
            }
            match self
                .core
                .client
                .delete()
                .for_path(&paths::join(&self.core.path, name))
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

/// The sequence number at the end of an item name.
fn sequence(name: &str) -> &str {
    &name[name.len().saturating_sub(10)..]
}

/// The epoch (ms) of a delay-queue item name, between its last two `|`.
fn delay_epoch(name: &str) -> u64 {
    let mut parts = name.rsplitn(3, '|');
    let _sequence = parts.next();
    parts
        .next()
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .unwrap_or(0)
}

fn now_epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The item name without its sequence: the prefix a requeued item keeps.
fn name_prefix(name: &str) -> &str {
    &name[..name.len().saturating_sub(10)]
}

enum Processed {
    Done,
    /// Another consumer holds the item's lock: this watch fires when it lets go.
    Locked(Watcher),
}

impl<T, C> Core<T, C>
where
    T: Send + 'static,
    C: Codec<T>,
{
    async fn put(&self, prefix: String, items: &[T]) -> Result<()> {
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
        let node = self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(CreateMode::PersistentSequential)
            .for_path(&paths::join(&self.path, &prefix), &data)
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

    fn sort(&self, names: &mut [String]) {
        match self.kind {
            Kind::Standard | Kind::Priority => names.sort_unstable(),
            Kind::Delay => names.sort_by(|a, b| {
                delay_epoch(a)
                    .cmp(&delay_epoch(b))
                    .then_with(|| sequence(a).cmp(sequence(b)))
            }),
            Kind::Id => names.sort_by(|a, b| sequence(a).cmp(sequence(b))),
        }
    }

    /// The item names in consumption order.
    async fn item_names(&self) -> Result<(Vec<String>, Option<Watcher>)> {
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
        let mut names: Vec<String> = children
            .into_iter()
            .filter(|name| {
                let item = name.starts_with(QUEUE_PREFIX);
                if !item {
                    tracing::debug!(name, "not a queue item; skipped");
                }
                item
            })
            .collect();
        self.sort(&mut names);
        Ok((names, watcher))
    }
}

/// A running consumer; [`close`](Self::close) stops it (an item being processed is finished
/// first).
#[derive(Debug)]
pub struct QueueConsumer {
    cancel: CancellationToken,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl QueueConsumer {
    /// Stops taking items and waits for the item in hand to be finished.
    pub async fn close(&self) {
        self.cancel.cancel();
        let task = self.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

impl Drop for QueueConsumer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

type ConsumeFn<T> =
    Arc<dyn Fn(T) -> BoxFuture<'static, std::result::Result<(), String>> + Send + Sync>;

fn start_consumer<T, C, F, Fut, E>(core: Arc<Core<T, C>>, consumer: F) -> QueueConsumer
where
    T: Send + 'static,
    C: Codec<T>,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
    E: fmt::Display + Send + 'static,
{
    let consume: ConsumeFn<T> = Arc::new(move |item| {
        let fut = consumer(item);
        Box::pin(async move { fut.await.map_err(|e| e.to_string()) })
    });
    let cancel = CancellationToken::new();
    let task = tokio::spawn(consume_loop(core, consume, cancel.clone()));
    QueueConsumer {
        cancel,
        task: Mutex::new(Some(task)),
    }
}

async fn consume_loop<T, C>(core: Arc<Core<T, C>>, consume: ConsumeFn<T>, cancel: CancellationToken)
where
    T: Send + 'static,
    C: Codec<T>,
{
    // Items whose data cannot be decoded: reported once, left in place, skipped.
    let mut poisoned: Vec<String> = Vec::new();
    // This consumer's mark in the lock nodes it makes, to know its own lock from another's.
    let token = uuid::Uuid::new_v4().to_string();
    loop {
        if cancel.is_cancelled() {
            return;
        }
        let listed = tokio::select! {
            () = cancel.cancelled() => return,
            listed = core.item_names() => listed,
        };
        let (names, watcher) = match listed {
            Ok(found) => found,
            Err(error) => {
                tracing::warn!(%error, path = %core.path, "queue consumer cannot list; retrying");
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_millis(200)) => continue,
                }
            }
        };
        let mut wakers: Vec<Watcher> = watcher.into_iter().collect();
        let mut next_due: Option<Instant> = None;
        let mut failed = false;
        for name in names {
            if cancel.is_cancelled() {
                return;
            }
            if poisoned.contains(&name) {
                continue;
            }
            if core.kind == Kind::Delay {
                let due = delay_epoch(&name);
                let now = now_epoch_ms();
                if due > now {
                    next_due = Some(Instant::now() + Duration::from_millis(due - now));
                    break;
                }
            }
            match core.process(&name, &consume, &token).await {
                Ok(Processed::Done) => {}
                Ok(Processed::Locked(watcher)) => wakers.push(watcher),
                Err(Error::Decode { reason, .. }) => {
                    tracing::error!(item = %name, %reason, "undecodable queue item left in place");
                    poisoned.push(name);
                }
                Err(error) => {
                    tracing::warn!(%error, item = %name, "queue consumer failed; listing again");
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(Duration::from_millis(100)) => continue,
            }
        }
        let wake: BoxFuture<'static, ()> = if wakers.is_empty() {
            Box::pin(std::future::pending())
        } else {
            Box::pin(async move {
                select_all(wakers.into_iter().map(|w| Box::pin(w.changed()))).await;
            })
        };
        let due: BoxFuture<'static, ()> = match next_due {
            Some(at) => Box::pin(tokio::time::sleep_until(at)),
            None => Box::pin(std::future::pending()),
        };
        tokio::select! {
            () = cancel.cancelled() => return,
            () = wake => {}
            () = due => {}
        }
    }
}

impl<T, C> Core<T, C>
where
    T: Send + 'static,
    C: Codec<T>,
{
    async fn process(&self, name: &str, consume: &ConsumeFn<T>, token: &str) -> Result<Processed> {
        let item_path = paths::join(&self.path, name);
        match &self.lock_path {
            None => {
                let (data, stat) = match self.client.get_data().for_path(&item_path).await {
                    Ok(found) => found,
                    Err(Error::NoNode) => return Ok(Processed::Done),
                    Err(error) => return Err(error),
                };
                let transitions = self.client.metrics().state_transitions;
                match self
                    .client
                    .delete()
                    .with_version(stat.version)
                    .for_path(&item_path)
                    .await
                {
                    Ok(()) => {}
                    Err(Error::NoNode)
                        if self.client.metrics().state_transitions != transitions =>
                    {
                        tracing::warn!(
                            item = name,
                            "queue item taken across a connection loss; it may be delivered twice"
                        );
                    }
                    Err(Error::NoNode | Error::BadVersion) => return Ok(Processed::Done),
                    Err(error) => return Err(error),
                }
                let items = envelope::decode(&item_path, &data)?;
                for bytes in items {
                    match self.codec.decode(&bytes) {
                        Ok(item) => {
                            if let Err(error) = consume(item).await {
                                tracing::warn!(item = name, %error, "queue consumer failed; the item is gone (not lock-safe)");
                            }
                        }
                        Err(error) => {
                            tracing::error!(item = name, %error, "undecodable queue item dropped")
                        }
                    }
                }
                Ok(Processed::Done)
            }
            Some(lock_path) => {
                self.process_locked(name, &item_path, lock_path, consume, token)
                    .await
            }
        }
    }

    async fn process_locked(
        &self,
        name: &str,
        item_path: &str,
        lock_path: &str,
        consume: &ConsumeFn<T>,
        token: &str,
    ) -> Result<Processed> {
        let lock = paths::join(lock_path, name);
        // The session that owns the lock node.
        let owner = loop {
            match self
                .client
                .create()
                .creating_parent_containers_if_needed()
                .with_mode(CreateMode::Ephemeral)
                .for_path(&lock, token.as_bytes())
                .with_stat()
                .await
            {
                Ok((_, stat)) => break stat.ephemeral_owner,
                Err(Error::NodeExists) => {
                    match self.client.get_data().watched().for_path(&lock).await {
                        // Our own lock, on our live session: a create retried after its reply
                        // was lost, or a delete of ours that failed. Waiting for it to go would
                        // wait for our own session to end.
                        Ok((data, stat, _))
                            if data == token.as_bytes()
                                && Some(stat.ephemeral_owner) == self.client.session_id() =>
                        {
                            break stat.ephemeral_owner;
                        }
                        Ok((_, _, watcher)) => return Ok(Processed::Locked(watcher)),
                        Err(Error::NoNode) => {}
                        Err(error) => return Err(error),
                    }
                }
                Err(error) => return Err(error),
            }
        };
        let result = self.consume_locked(name, item_path, consume).await;
        // The lock is an ephemeral node of the session that made it: if the session changed
        // meanwhile, the lock went with it and the node there now is another consumer's.
        if self.client.session_id() == Some(owner) {
            if let Err(error) = self.client.delete().quietly().for_path(&lock).await {
                tracing::debug!(%error, lock, "queue lock not deleted; it goes with the session");
            }
        }
        result.map(|()| Processed::Done)
    }

    async fn consume_locked(
        &self,
        name: &str,
        item_path: &str,
        consume: &ConsumeFn<T>,
    ) -> Result<()> {
        let data = match self.client.get_data().for_path(item_path).await {
            Ok((data, _)) => data,
            Err(Error::NoNode) => return Ok(()),
            Err(error) => return Err(error),
        };
        let items = envelope::decode(item_path, &data)?;
        let mut decoded = Vec::with_capacity(items.len());
        for bytes in &items {
            decoded.push(
                self.codec
                    .decode(bytes)
                    .map_err(|e| codec::with_path(e, item_path))?,
            );
        }
        for (index, item) in decoded.into_iter().enumerate() {
            if let Err(error) = consume(item).await {
                tracing::warn!(item = name, %error, mode = ?self.error_mode, "queue consumer failed");
                return match self.error_mode {
                    ErrorMode::Delete => self.delete_item(item_path).await,
                    ErrorMode::Requeue => {
                        let requeued = envelope::encode(&items[index..]);
                        let result = self
                            .client
                            .transaction()
                            .delete(item_path)
                            .op(TransactionOp::create(
                                &paths::join(&self.path, name_prefix(name)),
                                requeued,
                            )
                            .with_mode(CreateMode::PersistentSequential))
                            .commit()
                            .await;
                        match result {
                            Ok(_) => Ok(()),
                            Err(Error::Transaction { index: 0, cause })
                                if *cause == Error::NoNode =>
                            {
                                Ok(())
                            }
                            Err(error) => Err(error),
                        }
                    }
                };
            }
        }
        self.delete_item(item_path).await
    }

    async fn delete_item(&self, item_path: &str) -> Result<()> {
        match self.client.delete().for_path(item_path).await {
            Ok(()) | Err(Error::NoNode) => Ok(()),
            Err(error) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curator_names() {
        assert_eq!(priority_code(0), "100000000");
        assert_eq!(priority_code(10), "10000000A");
        assert_eq!(priority_code(-1), "0FFFFFFFF");
        assert_eq!(priority_code(i32::MIN), "080000000");
        assert_eq!(priority_code(i32::MAX), "17FFFFFFF");
        assert_eq!(format!("{:08X}", 1_700_000_000_000u64), "18BCFE56800");
        assert_eq!(
            delay_epoch("queue-|18BCFE56800|0000000003"),
            1_700_000_000_000
        );
        assert_eq!(id_code("a/b|c"), "a_b_c");
        assert_eq!(sequence("queue-|x|0000000042"), "0000000042");
        assert_eq!(name_prefix("queue-10000000A0000000042"), "queue-10000000A");
        let mut sorted = vec![priority_code(5), priority_code(-3), priority_code(0)];
        sorted.sort();
        assert_eq!(
            sorted,
            [priority_code(-3), priority_code(0), priority_code(5)]
        );
    }
}
