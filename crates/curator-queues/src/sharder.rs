//! `QueueSharder`: one logical queue spread over several shard queues, added as they fill up.

use std::sync::Arc;
use std::time::Duration;

use curator_election::{CloseMode, LeaderLatch};
use curator_framework::recipe::{HandleGuard, Recipe, RecipeCore, RecipeOptions};
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};
use parking_lot::Mutex;

use crate::queue::QUEUE_PREFIX;

/// Spreads one logical queue over shard queues `<path>/queue-<uuid>` (Curator's
/// `QueueSharder` layout): a [`LeaderLatch`] at `leader_path` elects the process that adds a
/// shard when one holds [`threshold`](QueueSharderBuilder::threshold) items or more (up to
/// [`max_shards`](QueueSharderBuilder::max_shards)); every process
/// sees the shard list. Producers put into [`pick`](Self::pick)'s shard; consumers consume
/// every shard in [`shards`](Self::shards). This keeps each shard's child list small, which is
/// what limits a ZooKeeper queue (a child listing must fit in one 1 MiB response).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_queues::{DistributedQueue, QueueSharder};
/// let sharder = QueueSharder::builder(client.clone(), "/queues/events", "/queues/events-leader")
///     .threshold(5_000)
///     .build()?;
/// sharder.start().await?;
/// let shard = DistributedQueue::<String>::builder(client, &sharder.pick()).build()?;
/// shard.start().await?;
/// shard.put(&"e1".to_owned()).await?;
/// sharder.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct QueueSharder {
    inner: Arc<Inner>,
    /// Cancels the recipe's tasks when the last handle is dropped.
    _guard: HandleGuard,
}

#[derive(Debug)]
struct Inner {
    client: CuratorFramework,
    path: String,
    threshold: usize,
    check_interval: Duration,
    max_shards: usize,
    latch: LeaderLatch,
    shards: Mutex<Vec<String>>,
    /// The sharder's name, lifecycle and watching task.
    core: RecipeCore,
}

/// Settings of a [`QueueSharder`].
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_queues::QueueSharder;
/// let sharder = QueueSharder::builder(client, "/queues/events", "/queues/events-leader")
///     .threshold(5_000)
///     .check_interval(Duration::from_secs(10))
///     .max_shards(20)
///     .build()?;
/// # let _ = sharder;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until built"]
pub struct QueueSharderBuilder {
    client: CuratorFramework,
    path: String,
    leader_path: String,
    threshold: usize,
    check_interval: Duration,
    max_shards: usize,
    options: RecipeOptions,
}

impl QueueSharderBuilder {
    /// The sharder's name (default: its queue's path): what its logs and unhandled errors
    /// say.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let sharder = curator_queues::QueueSharder::builder(client, "/queues/t17", "/queues/t17-leader")
    ///     .metrics_name("tenant-queues")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// A shard with this many item nodes or more calls for a new shard (default 10,000).
    pub fn threshold(mut self, threshold: usize) -> Self {
        self.threshold = threshold;
        self
    }

    /// How often the leader looks (default 30 s).
    pub fn check_interval(mut self, interval: Duration) -> Self {
        self.check_interval = interval;
        self
    }

    /// At most this many shards (default 10).
    pub fn max_shards(mut self, max_shards: usize) -> Self {
        self.max_shards = max_shards;
        self
    }

    /// The sharder (not started).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for bad paths; [`Error::InvalidArgument`] for a zero threshold or
    /// shard limit.
    pub fn build(self) -> Result<QueueSharder> {
        paths::validate(&self.path)?;
        if self.threshold == 0 || self.max_shards == 0 {
            return Err(Error::InvalidArgument(
                "a queue sharder needs a positive threshold and shard limit".into(),
            ));
        }
        let latch = LeaderLatch::builder(self.client.clone(), &self.leader_path, "")
            .close_mode(CloseMode::Silent)
            .build()?;
        let core = RecipeCore::new(&self.client, "QueueSharder", &self.path, &self.options);
        let inner = Arc::new(Inner {
            client: self.client,
            path: self.path,
            threshold: self.threshold,
            check_interval: self.check_interval,
            max_shards: self.max_shards,
            latch,
            shards: Mutex::new(Vec::new()),
            core,
        });
        Ok(QueueSharder {
            _guard: inner.core.handle_guard(),
            inner,
        })
    }
}

impl Recipe for QueueSharder {
    fn core(&self) -> &RecipeCore {
        &self.inner.core
    }

    async fn start(&self) -> Result<()> {
        QueueSharder::start(self).await
    }

    async fn close(&self) -> Result<()> {
        QueueSharder::close(self).await
    }
}

impl QueueSharder {
    /// Settings for a sharder of the queue at `path`, electing its shard-adder at
    /// `leader_path`.
    pub fn builder(client: CuratorFramework, path: &str, leader_path: &str) -> QueueSharderBuilder {
        QueueSharderBuilder {
            client,
            path: path.to_owned(),
            leader_path: leader_path.to_owned(),
            threshold: 10_000,
            check_interval: Duration::from_secs(30),
            max_shards: 10,
            options: RecipeOptions::new(),
        }
    }

    /// Makes sure one shard exists, joins the election, and starts watching the shards.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`], [`Error::Closed`]; connection errors (the sharder is then not
    /// started and `start` may be called again).
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the sharder not started.
    pub async fn start(&self) -> Result<()> {
        self.inner.core.lifecycle().ensure_startable()?;
        self.inner.refresh().await?;
        if self.inner.shards.lock().is_empty() {
            self.inner.add_shard().await?;
            self.inner.refresh().await?;
        }
        self.inner.core.lifecycle().start()?;
        self.inner.latch.start().await?;
        let inner = Arc::clone(&self.inner);
        self.inner.core.tasks().spawn(run(inner)).detach();
        Ok(())
    }

    /// Stops the background work and leaves the election. Idempotent.
    ///
    /// # Errors
    /// Connection errors from leaving the election (its node then goes with the session).
    ///
    /// # Cancellation safety
    /// Safe: the background work stops at the first poll.
    pub async fn close(&self) -> Result<()> {
        if self.inner.core.close_tasks().await {
            self.inner.latch.close().await?;
        }
        Ok(())
    }

    /// The shard queue paths, as last seen.
    pub fn shards(&self) -> Vec<String> {
        self.inner.shards.lock().clone()
    }

    /// A shard for a producer, at random.
    pub fn pick(&self) -> String {
        let shards = self.inner.shards.lock();
        if shards.is_empty() {
            return paths::join(&self.inner.path, QUEUE_PREFIX);
        }
        shards[curator_framework::random::below(shards.len())].clone()
    }

    /// Checks the shards now (what the leader does every `check_interval`); returns the shard
    /// count.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn check_now(&self) -> Result<usize> {
        self.inner.check().await
    }
}

impl Inner {
    async fn refresh(&self) -> Result<Vec<String>> {
        let children = match self.client.get_children().for_path(&self.path).await {
            Ok((children, _)) => children,
            Err(Error::NoNode) => Vec::new(),
            Err(error) => return Err(error),
        };
        let mut shards: Vec<String> = children
            .into_iter()
            .filter(|c| c.starts_with(QUEUE_PREFIX))
            .map(|c| paths::join(&self.path, &c))
            .collect();
        shards.sort_unstable();
        *self.shards.lock() = shards.clone();
        Ok(shards)
    }

    async fn add_shard(&self) -> Result<()> {
        let shard = paths::join(
            &self.path,
            &format!("{QUEUE_PREFIX}{}", curator_framework::random::uuid()),
        );
        match self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(CreateMode::Persistent)
            .for_path(&shard, [])
            .await
        {
            Ok(_) | Err(Error::NodeExists) => Ok(()),
            Err(error) => Err(error),
        }
    }

    async fn check(&self) -> Result<usize> {
        let shards = self.refresh().await?;
        if !self.latch.has_leadership() || shards.len() >= self.max_shards {
            return Ok(shards.len());
        }
        let mut full = false;
        for shard in &shards {
            if let Some(stat) = self.client.check_exists().for_path(shard).await? {
                if usize::try_from(stat.num_children).unwrap_or(0) >= self.threshold {
                    full = true;
                    break;
                }
            }
        }
        if full {
            self.add_shard().await?;
            return Ok(self.refresh().await?.len());
        }
        Ok(shards.len())
    }
}

async fn run(inner: Arc<Inner>) {
    loop {
        tokio::time::sleep(inner.check_interval).await;
        if let Err(error) = inner.check().await {
            tracing::debug!(%error, "queue sharder check failed; trying at the next interval");
        }
    }
}
