//! [`CuratorCache`]: a whole subtree, kept with one persistent recursive watch.

use std::sync::Arc;
use std::time::Duration;

use curator_framework::codec::Json;
use curator_framework::listen::{Listenable, ListenerStream};
use curator_framework::recipe::{Recipe, RecipeCore, RecipeEvents};
use curator_framework::{CuratorFramework, Result};

use crate::core::Core;
use crate::engine::{Config, WatchMode};
use crate::event::{CacheEvent, ChildData};
use crate::typed::TypedCache;

/// A local copy of the subtree at a path (the node itself and everything below it), kept up to
/// date, with an event for every change (Curator's `CuratorCache`).
///
/// On ZooKeeper 3.6+ it holds one persistent recursive watch on its root; on older servers (the
/// server answers `addWatch` with `UNIMPLEMENTED`) it falls back to one-shot watches on every
/// node, as [`TreeCache`](crate::TreeCache) does. It creates no nodes.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::sync::Arc;
/// use curator_caches::{CuratorCache, CuratorCacheListener};
/// let cache = CuratorCache::builder(client, "/config").build()?;
/// let _listening = cache.listenable().add_listener_object(Arc::new(
///     CuratorCacheListener::builder()
///         .for_creates_and_changes(|_old, node| println!("{} = {:?}", node.path(), node.data()))
///         .for_deletes(|old| println!("{} deleted", old.path()))
///         .build(),
/// ));
/// cache.start().await?;
/// cache.initialized().await?;
/// if let Some(node) = cache.get("/config/feature-x") {
///     println!("feature-x: {:?}", node.data());
/// }
/// cache.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CuratorCache {
    core: Arc<Core>,
}

impl CuratorCache {
    /// Options for a cache of the subtree at `path`.
    pub fn builder(client: CuratorFramework, path: &str) -> CuratorCacheBuilder {
        CuratorCacheBuilder {
            client,
            config: Config::new("CuratorCache", path, WatchMode::Auto, usize::MAX),
        }
    }

    /// Starts loading and following the tree, in the background; returns at once (wait for
    /// the load with [`initialized`](Self::initialized)). Add listeners first to hear the
    /// initial load's `Created` events.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`](curator_framework::Error::AlreadyStarted) when started,
    /// [`Error::Closed`](curator_framework::Error::Closed) when closed.
    ///
    /// # Cancellation safety
    /// Safe: it does not wait for anything.
    pub async fn start(&self) -> Result<()> {
        self.core.start()
    }

    /// Stops following the server and removes the cache's watches, and waits for its task to
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

    /// Waits until the initial load is done (when `Initialized` is published); bound the wait
    /// with `tokio::time::timeout`.
    ///
    /// ```no_run
    /// # async fn demo(cache: curator_caches::CuratorCache) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// match tokio::time::timeout(Duration::from_secs(5), cache.initialized()).await {
    ///     Ok(loaded) => loaded?,
    ///     Err(_) => println!("still loading"),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Closed`](curator_framework::Error::Closed) when the cache stopped first (closed,
    /// or its client closed).
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn initialized(&self) -> Result<()> {
        self.core.initialized().await
    }

    /// Whether the initial load is done.
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
    /// it covers only what the cache keeps.
    ///
    /// ```no_run
    /// # async fn demo(writer: curator_framework::CuratorFramework, cache: curator_caches::CuratorCache) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// let stat = writer.set_data().for_path("/config/feature-x", b"on").await?;
    /// cache.wait_for(stat.mzxid, Duration::from_secs(5)).await?;
    /// assert!(cache.get("/config/feature-x").is_some_and(|node| node.stat().mzxid >= stat.mzxid));
    /// writer.delete().for_path("/config/old").await?;
    /// cache.wait_for(writer.last_zxid(), Duration::from_secs(5)).await?;
    /// assert!(cache.get("/config/old").is_none());
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

    /// The cached node at `path` (Curator's `getCurrentData`).
    pub fn get(&self, path: &str) -> Option<ChildData> {
        self.core.get(path)
    }

    /// The cached children of `path`, sorted by path (Curator's `getCurrentChildren`).
    pub fn children(&self, path: &str) -> Vec<ChildData> {
        self.core.shared.children(path)
    }

    /// Every cached node, sorted by path.
    pub fn snapshot(&self) -> Vec<ChildData> {
        self.core.shared.snapshot()
    }

    /// How many nodes are cached.
    pub fn len(&self) -> usize {
        self.core.shared.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The cache's root path.
    pub fn path(&self) -> &str {
        &self.core.root
    }

    /// The watch mode in use: [`WatchMode::Persistent`] or [`WatchMode::OneShot`] (`None`
    /// before the first load chose one).
    pub fn active_mode(&self) -> Option<WatchMode> {
        self.core.active_mode()
    }

    /// A view that decodes node data as `T`, with JSON unless given another codec
    /// ([`TypedCache::codec`]).
    pub fn typed<T>(&self) -> TypedCache<T, Json> {
        TypedCache::new(Arc::clone(&self.core), Json)
    }
}

impl Recipe for CuratorCache {
    fn core(&self) -> &RecipeCore {
        &self.core.recipe
    }

    async fn start(&self) -> Result<()> {
        CuratorCache::start(self).await
    }

    async fn close(&self) -> Result<()> {
        CuratorCache::close(self).await
    }
}

impl RecipeEvents for CuratorCache {
    type Event = CacheEvent;

    fn listenable(&self) -> Listenable<CacheEvent> {
        CuratorCache::listenable(self)
    }
}

/// Options of a [`CuratorCache`].
#[derive(Debug)]
#[must_use = "a builder does nothing until build()"]
pub struct CuratorCacheBuilder {
    client: CuratorFramework,
    config: Config,
}

impl CuratorCacheBuilder {
    /// The cache's name (default: its path): the `name` label of its
    /// `curator_cache_event_lag_seconds`, and what its logs say. Caches sharing a name share
    /// their series.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let cache = curator_caches::CuratorCache::builder(client, "/tenants/17/config")
    ///     .metrics_name("tenant-config")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.config.options = self.config.options.metrics_name(name);
        self
    }

    /// How to watch: [`WatchMode::Auto`] (the default) uses a persistent recursive watch and
    /// falls back to one-shot watches on servers without them.
    pub fn with_mode(mut self, mode: WatchMode) -> Self {
        self.config.mode = mode;
        self
    }

    /// Keeps stats only, not data (Curator's `DO_NOT_CACHE_DATA`): events and reads carry
    /// `data() == None`.
    pub fn without_data(mut self) -> Self {
        self.config.cache_data = false;
        self
    }

    /// Nodes with more children than this are not listed; the cache reports
    /// [`CacheError::TooManyChildren`](crate::CacheError::TooManyChildren) instead
    /// (default 100,000).
    pub fn max_children(mut self, limit: usize) -> Self {
        self.config.max_children = limit;
        self
    }

    /// How many reads a load keeps in flight at once (default 256, at least 1).
    pub fn max_in_flight(mut self, reads: usize) -> Self {
        self.config.max_in_flight = reads.max(1);
        self
    }

    /// The cache, not started.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](curator_framework::Error::InvalidPath) for a bad path.
    pub fn build(self) -> Result<CuratorCache> {
        Ok(CuratorCache {
            core: Core::build(self.client, self.config)?,
        })
    }
}
