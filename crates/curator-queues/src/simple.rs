//! `SimpleDistributedQueue`: the queue recipe of the ZooKeeper documentation, with the API of
//! ZooKeeper's own `DistributedQueue` and Curator's node layout.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use curator_framework::metrics::{RecipeName, names};
use curator_framework::recipe::RecipeOptions;
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};
use parking_lot::Mutex;
use tokio::time::Instant;

use crate::bucket::Buckets;
use crate::outcome::Outcomes;

/// Item nodes are `<path>/qn-<sequence>`.
pub const SIMPLE_PREFIX: &str = "qn-";

/// A FIFO queue of byte items (Curator's `SimpleDistributedQueue`): each item is a
/// persistent-sequential child `qn-<seq>` holding the raw bytes; consumers take the lowest.
///
/// Concurrent consumers never both get one item: an item is theirs only when their versioned
/// delete of it succeeds. A consumer keeps the child list it read and works through it before
/// listing again, so a queue of n items costs n reads and n deletes, not n listings.
///
/// Faults: by default (as in Curator), an `offer` whose reply is lost with the connection is
/// retried and may then store the item twice, and a take whose delete reply is lost returns the
/// item even though another consumer might have taken it in between: across connection loss the
/// queue is at least once (nothing is lost; duplicates are possible), otherwise exactly once.
/// [`SimpleDistributedQueueBuilder::exactly_once`] makes offers and takes exactly once across
/// lost replies too, with outcome markers (see the crate's README, "Exactly-once mode").
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_queues::SimpleDistributedQueue;
/// let queue = SimpleDistributedQueue::builder(client, "/queues/emails").build()?;
/// queue.offer(b"to:alice").await?;
/// let next = queue.take().await?; // waits while the queue is empty
/// assert_eq!(next, b"to:alice");
/// assert_eq!(queue.poll().await?, None);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct SimpleDistributedQueue {
    client: CuratorFramework,
    path: String,
    /// Item names read by the last listing and not yet tried, lowest first.
    known: Mutex<VecDeque<String>>,
    /// The outcome markers, in exactly-once mode.
    outcomes: Option<Outcomes>,
    /// The bucketed layout, when asked for.
    buckets: Option<Buckets>,
    /// The `name` label of the consumer's metrics.
    metrics: RecipeName,
}

/// Settings of a [`SimpleDistributedQueue`]; [`build`](Self::build) makes it.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_queues::SimpleDistributedQueue;
/// let queue = SimpleDistributedQueue::builder(client, "/queues/payments")
///     .exactly_once() // markers in /queues/payments-outcomes
///     .build()?;
/// queue.offer(b"pay 10").await?;        // stored once, even if the reply is lost
/// let item = queue.take().await?;       // delivered once, even if the reply is lost
/// # let _ = item;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until built"]
pub struct SimpleDistributedQueueBuilder {
    client: CuratorFramework,
    path: String,
    exactly_once: bool,
    bucket_capacity: Option<usize>,
    options: RecipeOptions,
}

impl SimpleDistributedQueueBuilder {
    /// The `name` label of this queue's consumer metrics (`curator_queue_depth`,
    /// `curator_queue_consumer_lag_seconds`); default: the queue's path. Queues sharing a name
    /// share their series.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let queue = curator_queues::SimpleDistributedQueue::builder(client, "/queues/user-17")
    ///     .metrics_name("user-queues")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// Exactly-once offers and takes across lost replies, connection loss and session expiry:
    /// each write goes in one transaction with a persistent outcome marker in the sibling node
    /// `<path>-outcomes`, which tells the writer what happened when the reply is lost. Costs one
    /// more round trip per offer and per take (the marker's delete). Item nodes and data stay
    /// Curator's, so Java consumers and producers share the queue (without the guarantee for
    /// their own writes).
    pub fn exactly_once(mut self) -> Self {
        self.exactly_once = true;
        self
    }

    /// The bucketed layout, for queues beyond one listing: items go into child directories
    /// `<path>/bucket-<n>` of about `capacity` items each, so a consumer lists one bucket, never
    /// the whole backlog. FIFO by (bucket, sequence); exactly once between competing consumers
    /// as in the flat layout, and [`exactly_once`](Self::exactly_once) works with it. The
    /// layout is not Curator's: every handle of the queue (no Java process) must use it, with
    /// any capacity. See the crate's README, "Bucketed layout".
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let queue = curator_queues::SimpleDistributedQueue::builder(client, "/queues/backlog")
    ///     .bucketed(10_000) // a listing holds at most ~10,000 names
    ///     .build()?;
    /// queue.offer(b"job").await?;
    /// assert_eq!(queue.take().await?, b"job");
    /// # Ok(()) }
    /// ```
    pub fn bucketed(mut self, capacity: usize) -> Self {
        self.bucket_capacity = Some(capacity);
        self
    }

    /// The queue.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path; [`Error::InvalidArgument`] for exactly-once mode
    /// at `/` (the markers' sibling directory would have no place) and for a bucket capacity
    /// of 0 (or over `i32::MAX`).
    pub fn build(self) -> Result<SimpleDistributedQueue> {
        paths::validate(&self.path)?;
        let buckets = match self.bucket_capacity {
            Some(capacity) => Some(Buckets::new(
                self.client.clone(),
                &self.path,
                capacity,
                CreateMode::Container,
            )?),
            None => None,
        };
        let outcomes = if self.exactly_once {
            Some(Outcomes::new(
                self.client.clone(),
                &self.path,
                CreateMode::Container,
            )?)
        } else {
            None
        };
        Ok(SimpleDistributedQueue {
            metrics: self.options.name_for(&self.path),
            client: self.client,
            path: self.path,
            known: Mutex::new(VecDeque::new()),
            outcomes,
            buckets,
        })
    }
}

impl SimpleDistributedQueue {
    /// Settings for a queue at `path`
    /// ([`exactly_once`](SimpleDistributedQueueBuilder::exactly_once),
    /// [`bucketed`](SimpleDistributedQueueBuilder::bucketed),
    /// [`metrics_name`](SimpleDistributedQueueBuilder::metrics_name)).
    pub fn builder(client: CuratorFramework, path: &str) -> SimpleDistributedQueueBuilder {
        SimpleDistributedQueueBuilder {
            client,
            path: path.to_owned(),
            exactly_once: false,
            bucket_capacity: None,
            options: RecipeOptions::new(),
        }
    }

    /// Deletes exactly-once outcome markers older than `max_age`: those of offers and takes
    /// whose process died after the server applied them and before it learned so (a live
    /// handle deletes its own at once). Pick `max_age` far above any partition a live
    /// consumer could sit out: a taker that asks after its marker was purged concludes the take
    /// did not apply, and the item is then lost (never duplicated). Returns how many; `0`
    /// outside exactly-once mode.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn purge_outcomes(&self, max_age: Duration) -> Result<usize> {
        match &self.outcomes {
            Some(outcomes) => outcomes.purge(max_age).await,
            None => Ok(0),
        }
    }

    /// The queue's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Adds an item at the tail.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an item over ZooKeeper's 1 MiB limit (nothing written);
    /// connection errors. In exactly-once mode an error means the item was not stored, except
    /// [`Error::Closed`] (the client closed while the outcome was unknown).
    pub async fn offer(&self, item: &[u8]) -> Result<()> {
        let prefix = paths::join(&self.path, SIMPLE_PREFIX);
        if (self.outcomes.is_some() || self.buckets.is_some()) && item.len() > paths::MAX_DATA_LEN {
            return Err(Error::InvalidArgument(format!(
                "a queue item of {} bytes is over ZooKeeper's limit of {} bytes",
                item.len(),
                paths::MAX_DATA_LEN
            )));
        }
        if let Some(buckets) = &self.buckets {
            let client = &self.client;
            let outcomes = self.outcomes.as_ref();
            return buckets
                .put(SIMPLE_PREFIX, |prefix_path| async move {
                    match outcomes {
                        Some(outcomes) => outcomes.put(&prefix_path, item, false).await,
                        // No parents made: a bucket a consumer deleted answers `NoNode`.
                        None => client
                            .create()
                            .with_mode(CreateMode::PersistentSequential)
                            .for_path(&prefix_path, item)
                            .await
                            .map(Some),
                    }
                })
                .await
                .map(drop);
        }
        if let Some(outcomes) = &self.outcomes {
            return outcomes.put(&prefix, item, true).await.map(drop);
        }
        self.client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(CreateMode::PersistentSequential)
            .for_path(&prefix, item)
            .await
            .map(drop)
    }

    /// The head item without removing it; `None` when the queue is empty.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn peek(&self) -> Result<Option<Vec<u8>>> {
        loop {
            let Some(name) = self.head().await? else {
                return Ok(None);
            };
            match self
                .client
                .get_data()
                .for_path(&paths::join(&self.path, &name))
                .await
            {
                Ok((data, _)) => return Ok(Some(data)),
                Err(Error::NoNode) => {
                    self.forget(&name);
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// The head item without removing it.
    ///
    /// # Errors
    /// [`Error::NoNode`] when the queue is empty; connection errors.
    pub async fn element(&self) -> Result<Vec<u8>> {
        self.peek().await?.ok_or(Error::NoNode)
    }

    /// Removes and returns the head item; `None` when the queue is empty.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn poll(&self) -> Result<Option<Vec<u8>>> {
        loop {
            let Some(name) = self.head().await? else {
                return Ok(None);
            };
            if let Some(item) = self.try_take(&name).await? {
                return Ok(Some(item));
            }
        }
    }

    /// Removes and returns the head item.
    ///
    /// # Errors
    /// [`Error::NoNode`] when the queue is empty; connection errors.
    pub async fn remove(&self) -> Result<Vec<u8>> {
        self.poll().await?.ok_or(Error::NoNode)
    }

    /// Removes and returns the head item, waiting while the queue is empty.
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// Dropping the future while it waits loses nothing; dropping it after the item's delete
    /// was sent may lose that item (in exactly-once mode its marker then stays, for
    /// [`purge_outcomes`](Self::purge_outcomes)).
    pub async fn take(&self) -> Result<Vec<u8>> {
        self.take_until(None)
            .await
            .map(|item| item.expect("no deadline"))
    }

    /// Like [`take`](Self::take), giving up after `timeout` (`None`).
    ///
    /// # Errors
    /// Connection errors.
    pub async fn poll_timeout(&self, timeout: Duration) -> Result<Option<Vec<u8>>> {
        self.take_until(Some(Instant::now() + timeout)).await
    }

    async fn take_until(&self, deadline: Option<Instant>) -> Result<Option<Vec<u8>>> {
        loop {
            if let Some(item) = self.poll().await? {
                return Ok(Some(item));
            }
            if let Some(buckets) = &self.buckets {
                // Empty: scan again with watches on the bucket directory and on every bucket
                // left (an item in any of them, or a new bucket, wakes us).
                let scan = buckets.scan(SIMPLE_PREFIX, true, &HashSet::new()).await?;
                if self.remember_scanned(scan.items) {
                    continue;
                }
                if scan.watchers.is_empty() {
                    // Not expected: a watched scan always holds the directory's watch.
                    tokio::task::yield_now().await;
                    continue;
                }
                let woken = futures::future::select_all(
                    scan.watchers.into_iter().map(|w| Box::pin(w.changed())),
                );
                if scan_wait(woken, deadline).await {
                    continue;
                }
                return self.poll().await;
            }
            // Empty: list again with a watch, and wait for a child to appear.
            let listed = self
                .client
                .get_children()
                .watched()
                .for_path(&self.path)
                .await;
            let watcher = match listed {
                Ok((children, _, watcher)) => {
                    if self.remember(children) {
                        continue;
                    }
                    watcher
                }
                Err(Error::NoNode) => {
                    let (stat, watcher) = self
                        .client
                        .check_exists()
                        .watched()
                        .for_path(&self.path)
                        .await?;
                    if stat.is_some() {
                        continue;
                    }
                    watcher
                }
                Err(error) => return Err(error),
            };
            match deadline {
                None => {
                    watcher.changed().await;
                }
                Some(deadline) => {
                    if tokio::time::timeout_at(deadline, watcher.changed())
                        .await
                        .is_err()
                    {
                        return self.poll().await;
                    }
                }
            }
        }
    }

    /// The lowest known item name, listing the children when nothing is known.
    async fn head(&self) -> Result<Option<String>> {
        if let Some(name) = self.known.lock().front().cloned() {
            return Ok(Some(name));
        }
        if let Some(buckets) = &self.buckets {
            let scan = buckets.scan(SIMPLE_PREFIX, false, &HashSet::new()).await?;
            self.remember_scanned(scan.items);
            return Ok(self.known.lock().front().cloned());
        }
        let children = match self.client.get_children().for_path(&self.path).await {
            Ok((children, _)) => children,
            Err(Error::NoNode) => Vec::new(),
            Err(error) => return Err(error),
        };
        self.remember(children);
        Ok(self.known.lock().front().cloned())
    }

    /// Replaces the known list with `children` (items only, lowest first); whether any.
    fn remember(&self, children: Vec<String>) -> bool {
        let mut items: Vec<String> = children
            .into_iter()
            .filter(|name| name.starts_with(SIMPLE_PREFIX))
            .collect();
        items.sort_unstable();
        #[allow(clippy::cast_precision_loss)] // a count of children
        self.metrics.set(names::QUEUE_DEPTH, items.len() as f64);
        let mut known = self.known.lock();
        *known = items.into();
        !known.is_empty()
    }

    /// Replaces the known list with the items of a bucket scan (already in order); whether
    /// any. The depth metric then counts the lowest bucket's items only.
    fn remember_scanned(&self, items: Vec<String>) -> bool {
        #[allow(clippy::cast_precision_loss)] // a count of children
        self.metrics.set(names::QUEUE_DEPTH, items.len() as f64);
        let mut known = self.known.lock();
        *known = items.into();
        !known.is_empty()
    }

    fn forget(&self, name: &str) {
        self.known.lock().retain(|n| n != name);
    }

    /// Records the consumer lag of an item taken now whose node was created at `ctime` (server
    /// clock, ms since the epoch; the item's data carries no put time): clock skew between the
    /// server and this process shifts it, and negative readings count as 0.
    fn taken(&self, ctime: i64) {
        let lag = curator_framework::metrics::seconds_since_epoch_millis(ctime);
        self.metrics
            .record_seconds(names::QUEUE_CONSUMER_LAG_SECONDS, lag);
    }

    /// Reads and deletes `name`; `None` when another consumer got it first. An error leaves
    /// the item's fate unknown: the next take lists the items again instead of passing over it.
    async fn try_take(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let taken = self.take_named(name).await;
        match &taken {
            Ok(_) => self.forget(name),
            Err(_) => self.known.lock().clear(),
        }
        taken
    }

    async fn take_named(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let path = paths::join(&self.path, name);
        // The planted bug: the item is deleted before it is read (and so lost).
        #[cfg(feature = "planted-bugs")]
        if crate::planted::planted() {
            let _ = self.client.delete().quietly().for_path(&path).await;
        }
        let (data, stat) = match self.client.get_data().for_path(&path).await {
            Ok(found) => found,
            Err(Error::NoNode) => return Ok(None),
            Err(error) => return Err(error),
        };
        if let Some(outcomes) = &self.outcomes {
            let taken = outcomes.take(name, stat.version).await?;
            if taken {
                self.taken(stat.ctime);
            }
            return Ok(taken.then_some(data));
        }
        // The item is ours when our versioned delete applies. `idempotent`: a retry after a
        // lost reply that finds the item gone counts as ours, delivering rather than losing it
        // (at least once across faults: another consumer may have taken it meanwhile).
        match self
            .client
            .delete()
            .with_version(stat.version)
            .idempotent()
            .for_path(&path)
            .await
        {
            Ok(()) => {
                self.taken(stat.ctime);
                Ok(Some(data))
            }
            // Another consumer took it (or changed it) first.
            Err(Error::NoNode | Error::BadVersion) => Ok(None),
            Err(error) => Err(error),
        }
    }
}

/// Waits for one of a scan's watches (`woken`; none at all only when the client is gone) until
/// `deadline`; whether one fired in time.
async fn scan_wait<F: std::future::Future>(woken: F, deadline: Option<Instant>) -> bool {
    match deadline {
        None => {
            woken.await;
            true
        }
        Some(deadline) => tokio::time::timeout_at(deadline, woken).await.is_ok(),
    }
}
