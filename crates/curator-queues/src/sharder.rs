//! `QueueSharder`: one logical queue spread over several shard queues, added as they fill up.

use std::sync::Arc;
use std::time::Duration;

use curator_election::{CloseMode, LeaderLatch};
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};
use parking_lot::Mutex;
use rand::Rng;
use tokio_util::sync::CancellationToken;

use crate::queue::QUEUE_PREFIX;

/// When a [`QueueSharder`] adds shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SharderSettings {
    /// A shard with this many item nodes or more calls for a new shard (default 10,000).
    pub new_shard_threshold: usize,
    /// How often the leader looks (default 30 s).
    pub check_interval: Duration,
    /// At most this many shards (default 10).
    pub max_shards: usize,
}

impl Default for SharderSettings {
    fn default() -> Self {
        Self {
            new_shard_threshold: 10_000,
            check_interval: Duration::from_secs(30),
            max_shards: 10,
        }
    }
}

impl SharderSettings {
    /// The default settings with another threshold.
    pub fn with_threshold(mut self, threshold: usize) -> Self {
        self.new_shard_threshold = threshold;
        self
    }

    /// The default settings with another check interval.
    pub fn with_check_interval(mut self, interval: Duration) -> Self {
        self.check_interval = interval;
        self
    }

    /// The default settings with another shard limit.
    pub fn with_max_shards(mut self, max_shards: usize) -> Self {
        self.max_shards = max_shards;
        self
    }
}

/// Spreads one logical queue over shard queues `<path>/queue-<uuid>` (Curator's
/// `QueueSharder` layout): a [`LeaderLatch`] at `leader_path` elects the process that adds a
/// shard when one holds `new_shard_threshold` items or more (up to `max_shards`); every process
/// sees the shard list. Producers put into [`pick`](Self::pick)'s shard; consumers consume
/// every shard in [`shards`](Self::shards). This keeps each shard's child list small, which is
/// what limits a ZooKeeper queue (a child listing must fit in one 1 MiB response).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_queues::{DistributedQueue, QueueSharder, SharderSettings};
/// let sharder = QueueSharder::new(client.clone(), "/queues/events", "/queues/events-leader",
///     SharderSettings::default().with_threshold(5_000))?;
/// sharder.start().await?;
/// let shard = sharder.pick();
/// DistributedQueue::<String>::builder(client, &shard).build()?.put(&"e1".to_owned()).await?;
/// sharder.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct QueueSharder {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: CuratorFramework,
    path: String,
    settings: SharderSettings,
    latch: LeaderLatch,
    shards: Mutex<Vec<String>>,
    cancel: CancellationToken,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl QueueSharder {
    /// A sharder for the queue at `path`, electing its shard-adder at `leader_path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for bad paths; [`Error::InvalidArgument`] for a zero threshold or
    /// shard limit.
    pub fn new(
        client: CuratorFramework,
        path: &str,
        leader_path: &str,
        settings: SharderSettings,
    ) -> Result<Self> {
        paths::validate(path)?;
        if settings.new_shard_threshold == 0 || settings.max_shards == 0 {
            return Err(Error::InvalidArgument(
                "a queue sharder needs a positive threshold and shard limit".into(),
            ));
        }
        let latch = LeaderLatch::new(client.clone(), leader_path, "")?;
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                path: path.to_owned(),
                settings,
                latch,
                shards: Mutex::new(Vec::new()),
                cancel: CancellationToken::new(),
                task: Mutex::new(None),
            }),
        })
    }

    /// Joins the election, makes sure one shard exists, and starts watching the shards.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn start(&self) -> Result<()> {
        self.inner.latch.start().await?;
        self.inner.refresh().await?;
        if self.inner.shards.lock().is_empty() {
            self.inner.add_shard().await?;
            self.inner.refresh().await?;
        }
        let inner = Arc::clone(&self.inner);
        *self.inner.task.lock() = Some(tokio::spawn(run(inner)));
        Ok(())
    }

    /// Stops the background work and leaves the election.
    pub async fn close(&self) {
        self.inner.cancel.cancel();
        let task = self.inner.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
        let _ = self.inner.latch.close(CloseMode::Silent).await;
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
        shards[rand::rng().random_range(0..shards.len())].clone()
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
            &format!("{QUEUE_PREFIX}{}", uuid::Uuid::new_v4()),
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
        if !self.latch.has_leadership() || shards.len() >= self.settings.max_shards {
            return Ok(shards.len());
        }
        let mut full = false;
        for shard in &shards {
            if let Some(stat) = self.client.check_exists().for_path(shard).await? {
                if usize::try_from(stat.num_children).unwrap_or(0)
                    >= self.settings.new_shard_threshold
                {
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
        tokio::select! {
            () = inner.cancel.cancelled() => return,
            () = tokio::time::sleep(inner.settings.check_interval) => {}
        }
        if let Err(error) = inner.check().await {
            tracing::debug!(%error, "queue sharder check failed; trying at the next interval");
        }
    }
}
