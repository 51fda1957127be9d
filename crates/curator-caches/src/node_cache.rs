//! [`NodeCache`]: one node's data and stat, kept up to date.

use std::sync::Arc;
use std::time::Duration;

use curator_framework::codec::Json;
use curator_framework::listen::{Listenable, ListenerStream};
use curator_framework::recipe::{Recipe, RecipeCore, RecipeEvents};
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};

use crate::core::Core;
use crate::engine::{Config, WatchMode};
use crate::event::{CacheEvent, ChildData};
use crate::typed::TypedCache;

/// A local copy of one node (Curator's `NodeCache`): its data and stat while it exists, with a
/// [`CacheEvent`] when it is created, changed or deleted. The node need not exist.
///
/// Like Curator, [`start`](Self::start) creates the node's *parents* as container nodes when
/// they are missing (never the node itself), so the watch has somewhere to live; the server
/// removes empty containers by itself.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_caches::NodeCache;
/// let cache = NodeCache::builder(client, "/config/limits").build()?;
/// let _listening = cache.listenable().add_listener(|event| println!("{event:?}"));
/// cache.start().await?;
/// cache.initialized().await?;
/// println!("{:?}", cache.current_data().map(|node| node.stat().version));
/// cache.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct NodeCache {
    core: Arc<Core>,
}

/// Options of a [`NodeCache`].
///
/// ```no_run
/// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let cache = curator_caches::NodeCache::builder(client, "/tenants/17/limits")
///     .metrics_name("tenant-limits")
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until build()"]
pub struct NodeCacheBuilder {
    client: CuratorFramework,
    config: Config,
}

impl NodeCacheBuilder {
    /// The cache's name (default: its path): the `name` label of its
    /// `curator_cache_event_lag_seconds`, and what its logs say. Caches sharing a name share
    /// their series.
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.config.options = self.config.options.metrics_name(name);
        self
    }

    /// The cache, not started.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path.
    pub fn build(self) -> Result<NodeCache> {
        Ok(NodeCache {
            core: Core::build(self.client, self.config)?,
        })
    }
}

impl NodeCache {
    /// Options for a cache of the node at `path`.
    pub fn builder(client: CuratorFramework, path: &str) -> NodeCacheBuilder {
        let mut config = Config::new("NodeCache", path, WatchMode::OneShot, 0);
        config.max_in_flight = 4;
        NodeCacheBuilder { client, config }
    }

    /// Creates the node's missing parents as containers, then starts following the node in the
    /// background (wait for the first read with [`initialized`](Self::initialized)).
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started, [`Error::Closed`] when closed; the framework's
    /// error when the parents cannot be created (the cache then stays unstarted: start it
    /// again).
    ///
    /// # Cancellation safety
    /// Dropping the future before it returns leaves the cache unstarted (parents may have been
    /// created).
    pub async fn start(&self) -> Result<()> {
        self.core.recipe.lifecycle().ensure_startable()?;
        if let Some(parent) = paths::parent(&self.core.root).filter(|p| *p != "/") {
            let created = self
                .core
                .client
                .create()
                .creating_parent_containers_if_needed()
                .with_mode(CreateMode::Container)
                .for_path(parent, b"")
                .await;
            match created {
                Ok(_) | Err(Error::NodeExists) => {}
                Err(error) => return Err(error),
            }
        }
        self.core.start()
    }

    /// Stops following the node and removes the cache's watches, and waits for its task to
    /// end. The content stays readable. Idempotent; a cache that never started closes too.
    ///
    /// # Errors
    /// None: the cache closes whatever its connection does.
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the cache stopping in the background.
    pub async fn close(&self) -> Result<()> {
        self.core.close().await
    }

    /// Where to add listeners of [`CacheEvent`]s: closures, [`CuratorCacheListener`]s (as
    /// objects: `add_listener_object(Arc::new(listener))`), senders.
    ///
    /// [`CuratorCacheListener`]: crate::CuratorCacheListener
    pub fn listenable(&self) -> Listenable<CacheEvent> {
        self.core.listenable()
    }

    /// Every [`CacheEvent`] from now on, as a stream (`listenable().stream()`).
    pub fn stream(&self) -> ListenerStream<CacheEvent> {
        self.listenable().stream()
    }

    /// Waits until the node was read once (when `Initialized` is published); bound the wait
    /// with `tokio::time::timeout`.
    ///
    /// # Errors
    /// [`Error::Closed`] when the cache stopped first (closed, or its client closed).
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn initialized(&self) -> Result<()> {
        self.core.initialized().await
    }

    /// Whether the node was read once.
    pub fn is_initialized(&self) -> bool {
        self.core.shared.is_initialized()
    }

    /// Waits until the cache reflects every change up to `zxid` (read-your-writes, as etcd's
    /// `WaitForRevision`): once it returns `Ok`, a read of the cache sees every write up to
    /// `zxid`, by any client, or a newer state of the node it wrote. Take `zxid` from the
    /// write (`set_data`'s `stat.mzxid`, `create().for_path(..).with_stat()`'s `czxid`) or,
    /// after any write (a delete, a transaction), from the writer's
    /// [`last_zxid()`](curator_framework::CuratorFramework::last_zxid).
    ///
    /// It waits for the initial load (also when called before [`start`](Self::start)), makes
    /// the cache's session reach `zxid` (a `sync` of the cache's path, unless the session is
    /// known to be there), then waits until every watch event up to `zxid` and every read those
    /// events started are applied; after a reconnect or a new session, until the tree is read
    /// again. It promises nothing more: the cache may already show later changes, listeners
    /// may hear the events of these changes after it returns (they run on their own task), and
    /// it covers only what the cache keeps (its one node).
    ///
    /// ```no_run
    /// # async fn demo(writer: curator_framework::CuratorFramework, cache: curator_caches::NodeCache) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// let stat = writer.set_data().for_path("/config/limits", b"42").await?;
    /// cache.wait_for(stat.mzxid, Duration::from_secs(5)).await?;
    /// assert!(cache.current_data().is_some_and(|node| node.stat().mzxid >= stat.mzxid));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Timeout`](curator_framework::Error::Timeout) when `timeout` passes first (no
    /// connection, a server that does not answer, a zxid the ensemble has not reached);
    /// [`Error::Closed`](curator_framework::Error::Closed) when the cache or its client closes
    /// first; the error of a `sync` that retrying cannot fix.
    ///
    /// # Cancellation safety
    /// Safe: dropping the future drops the wait and nothing else.
    pub async fn wait_for(&self, zxid: i64, timeout: Duration) -> Result<()> {
        self.core.wait_for(zxid, timeout).await
    }

    /// The node as last read; `None` while it does not exist (or before the first read).
    pub fn current_data(&self) -> Option<ChildData> {
        self.core.get(&self.core.root)
    }

    /// A view that decodes the node's data as `T`, with JSON unless given another codec
    /// ([`TypedCache::codec`]).
    pub fn typed<T>(&self) -> TypedCache<T, Json> {
        TypedCache::new(Arc::clone(&self.core), Json)
    }
}

impl Recipe for NodeCache {
    fn core(&self) -> &RecipeCore {
        &self.core.recipe
    }

    async fn start(&self) -> Result<()> {
        NodeCache::start(self).await
    }

    async fn close(&self) -> Result<()> {
        NodeCache::close(self).await
    }
}

impl RecipeEvents for NodeCache {
    type Event = CacheEvent;

    fn listenable(&self) -> Listenable<CacheEvent> {
        NodeCache::listenable(self)
    }
}
