//! [`PathChildrenCache`]: the children of one node, with or without their data.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use curator_framework::listen::{Listenable, ListenerHandle, ListenerStream};
use curator_framework::recipe::{Recipe, RecipeCore, RecipeEvents};
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};

use crate::core::Core;
use crate::engine::{Config, Shared, WatchMode};
use crate::event::{CacheError, CacheEvent, ChildData};

/// How a [`PathChildrenCache`] treats the initial load (Curator's `StartMode`); set with
/// [`PathChildrenCacheBuilder::with_start_mode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum StartMode {
    /// Start in the background; the initial children arrive as `ChildAdded` events; no
    /// `Initialized` event.
    #[default]
    Normal,
    /// [`start`](PathChildrenCache::start) returns once the initial children are loaded; they
    /// produce no events (read them with [`PathChildrenCache::current_data`]); no
    /// `Initialized` event.
    BuildInitialCache,
    /// Start in the background; the initial children arrive as `ChildAdded` events, then one
    /// `Initialized` event carrying them.
    PostInitializedEvent,
}

/// A change among the children (Curator's `PathChildrenCacheEvent`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathChildrenCacheEvent {
    /// A child appeared.
    ChildAdded(ChildData),
    /// A child's data changed.
    ChildUpdated(ChildData),
    /// A child went away (its last cached value).
    ChildRemoved(ChildData),
    /// The initial load finished (only with [`StartMode::PostInitializedEvent`]); the children
    /// cached at that point.
    Initialized(Vec<ChildData>),
    /// A read the cache could not make.
    Error(CacheError),
}

/// A local copy of the children of one node (Curator's `PathChildrenCache`). It sets a
/// children watch on the node and a data watch on each child (one-shot watches, as Curator).
///
/// Like Curator, [`start`](Self::start) creates the node itself (and its parents) as containers
/// when missing.
///
/// Its events are the cache engine's, translated as each listener receives them (a
/// [`Listenable::filter_map`] view): one dispatch, whatever the number of listeners.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_caches::{PathChildrenCache, PathChildrenCacheEvent, StartMode};
/// let cache = PathChildrenCache::builder(client, "/workers")
///     .with_start_mode(StartMode::BuildInitialCache)
///     .build()?;
/// let _listening = cache.listenable().add_listener(|event| match event {
///     PathChildrenCacheEvent::ChildAdded(child) => println!("+ {}", child.name()),
///     PathChildrenCacheEvent::ChildRemoved(child) => println!("- {}", child.name()),
///     _ => {}
/// });
/// cache.start().await?;
/// println!("{} workers", cache.current_data().len());
/// cache.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PathChildrenCache {
    core: Arc<Core>,
    view: Arc<View>,
}

/// What the translation of the engine's events needs besides the event.
#[derive(Debug)]
struct View {
    mode: StartMode,
    /// Whether the engine's `Initialized` has been dispatched. Set on the dispatch task, when
    /// that event reaches the first listener (ours, below, or a user's view): every listener
    /// then reads, for each event, whether it came before or after `Initialized`.
    initialized: Arc<AtomicBool>,
    /// Sets `initialized` even while no user listens.
    _tracking: ListenerHandle,
}

impl PathChildrenCache {
    /// Options for a cache of the children of `path`.
    pub fn builder(client: CuratorFramework, path: &str) -> PathChildrenCacheBuilder {
        PathChildrenCacheBuilder {
            client,
            config: Config::new("PathChildrenCache", path, WatchMode::OneShot, 1),
            mode: StartMode::default(),
        }
    }

    /// Creates the node as a container if missing, then starts the cache as its
    /// [`StartMode`] says: in the background, or (with [`StartMode::BuildInitialCache`]) once
    /// the initial children are loaded.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started, [`Error::Closed`] when closed; the framework's
    /// error when the node cannot be created (the cache then stays unstarted: start it again);
    /// [`Error::Closed`] when the cache or its client closes before the initial load (with
    /// [`StartMode::BuildInitialCache`]).
    ///
    /// # Cancellation safety
    /// Dropping the future before the node is created leaves the cache unstarted; after that,
    /// the cache runs (with [`StartMode::BuildInitialCache`], its load goes on).
    pub async fn start(&self) -> Result<()> {
        self.core.recipe.lifecycle().ensure_startable()?;
        let created = self
            .core
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(CreateMode::Container)
            .for_path(&self.core.root, b"")
            .await;
        match created {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(error) => return Err(error),
        }
        self.core.start()?;
        if self.view.mode == StartMode::BuildInitialCache {
            self.core.initialized().await?;
        }
        Ok(())
    }

    /// Stops following the children and removes the cache's watches, and waits for its task
    /// to end. The content stays readable. Idempotent; a cache that never started closes too.
    ///
    /// # Errors
    /// None: the cache closes whatever its connection does.
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the cache stopping in the background.
    pub async fn close(&self) -> Result<()> {
        self.core.close().await
    }

    /// Waits until the initial children are loaded; bound the wait with
    /// `tokio::time::timeout`.
    ///
    /// # Errors
    /// [`Error::Closed`] when the cache stopped first (closed, or its client closed).
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn initialized(&self) -> Result<()> {
        self.core.initialized().await
    }

    /// Whether the initial children are loaded.
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
    /// it covers only what the cache keeps (the children of its node, not their descendants).
    ///
    /// ```no_run
    /// # async fn demo(writer: curator_framework::CuratorFramework, cache: curator_caches::PathChildrenCache) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// writer.create().for_path("/workers/w-7", b"").await?;
    /// cache.wait_for(writer.last_zxid(), Duration::from_secs(5)).await?;
    /// assert!(cache.current_data_for("/workers/w-7").is_some());
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

    /// Where to add listeners of [`PathChildrenCacheEvent`]s.
    pub fn listenable(&self) -> Listenable<PathChildrenCacheEvent> {
        let root = Arc::clone(&self.core.root);
        let shared = Arc::clone(&self.core.shared);
        let mode = self.view.mode;
        let initialized = Arc::clone(&self.view.initialized);
        self.core
            .listenable()
            .filter_map(move |event| translate(&root, mode, &shared, &initialized, event))
    }

    /// Every [`PathChildrenCacheEvent`] from now on, as a stream (`listenable().stream()`).
    pub fn stream(&self) -> ListenerStream<PathChildrenCacheEvent> {
        self.listenable().stream()
    }

    /// The cached children, sorted by path.
    pub fn current_data(&self) -> Vec<ChildData> {
        self.core.shared.children(&self.core.root)
    }

    /// The cached child at `path` (a full path).
    pub fn current_data_for(&self, path: &str) -> Option<ChildData> {
        if paths::parent(path) != Some(&*self.core.root) {
            return None;
        }
        self.core.get(path)
    }
}

/// The children cache's event for one of the engine's events, if any.
fn translate(
    root: &str,
    mode: StartMode,
    shared: &Shared,
    initialized: &AtomicBool,
    event: CacheEvent,
) -> Option<PathChildrenCacheEvent> {
    let is_child = |node: &ChildData| paths::parent(node.path()) == Some(root);
    let translated = match event {
        CacheEvent::Initialized => {
            initialized.store(true, Ordering::SeqCst);
            if mode != StartMode::PostInitializedEvent {
                return None;
            }
            PathChildrenCacheEvent::Initialized(shared.children(root))
        }
        _ if mode == StartMode::BuildInitialCache && !initialized.load(Ordering::SeqCst) => {
            return None;
        }
        CacheEvent::Created { node } if is_child(&node) => PathChildrenCacheEvent::ChildAdded(node),
        CacheEvent::Changed { node, .. } if is_child(&node) => {
            PathChildrenCacheEvent::ChildUpdated(node)
        }
        CacheEvent::Deleted { old } if is_child(&old) => PathChildrenCacheEvent::ChildRemoved(old),
        CacheEvent::Error(error) => PathChildrenCacheEvent::Error(error),
        _ => return None,
    };
    Some(translated)
}

impl Recipe for PathChildrenCache {
    fn core(&self) -> &RecipeCore {
        &self.core.recipe
    }

    async fn start(&self) -> Result<()> {
        PathChildrenCache::start(self).await
    }

    async fn close(&self) -> Result<()> {
        PathChildrenCache::close(self).await
    }
}

impl RecipeEvents for PathChildrenCache {
    type Event = PathChildrenCacheEvent;

    fn listenable(&self) -> Listenable<PathChildrenCacheEvent> {
        PathChildrenCache::listenable(self)
    }
}

/// Options of a [`PathChildrenCache`].
#[derive(Debug)]
#[must_use = "a builder does nothing until build()"]
pub struct PathChildrenCacheBuilder {
    client: CuratorFramework,
    config: Config,
    mode: StartMode,
}

impl PathChildrenCacheBuilder {
    /// The cache's name (default: its path): the `name` label of its
    /// `curator_cache_event_lag_seconds`, and what its logs say. Caches sharing a name share
    /// their series.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let cache = curator_caches::PathChildrenCache::builder(client, "/tenants/17/config")
    ///     .metrics_name("tenant-config")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.config.options = self.config.options.metrics_name(name);
        self
    }

    /// How [`start`](PathChildrenCache::start) treats the initial load (default
    /// [`StartMode::Normal`]); Curator passes it to `start`.
    pub fn with_start_mode(mut self, mode: StartMode) -> Self {
        self.mode = mode;
        self
    }

    /// Keeps the children's stats only, not their data (Curator's `cacheData = false`).
    pub fn without_data(mut self) -> Self {
        self.config.cache_data = false;
        self
    }

    /// More children than this are not listed (default 100,000); see
    /// [`CacheError::TooManyChildren`].
    pub fn max_children(mut self, limit: usize) -> Self {
        self.config.max_children = limit;
        self
    }

    /// The cache, not started.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path.
    pub fn build(self) -> Result<PathChildrenCache> {
        let core = Core::build(self.client, self.config)?;
        let initialized = Arc::new(AtomicBool::new(false));
        let tracking = core.listenable().add_listener({
            let initialized = Arc::clone(&initialized);
            move |event| {
                if matches!(event, CacheEvent::Initialized) {
                    initialized.store(true, Ordering::SeqCst);
                }
            }
        });
        Ok(PathChildrenCache {
            core,
            view: Arc::new(View {
                mode: self.mode,
                initialized,
                _tracking: tracking,
            }),
        })
    }
}
