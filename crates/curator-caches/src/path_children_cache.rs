//! [`PathChildrenCache`]: the children of one node, with or without their data.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use curator_framework::listen::{Listenable, ListenerContainer, ListenerHandle};
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};

use crate::core::Core;
use crate::engine::{Config, Shared, WatchMode};
use crate::event::{CacheError, CacheEvent, ChildData};

/// How [`PathChildrenCache::start`] treats the initial load (Curator's `StartMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum StartMode {
    /// Start in the background; the initial children arrive as `ChildAdded` events; no
    /// `Initialized` event.
    #[default]
    Normal,
    /// `start` returns once the initial children are loaded; they produce no events (read them
    /// with [`PathChildrenCache::current_data`]); no `Initialized` event.
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
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_caches::{PathChildrenCache, PathChildrenCacheEvent, StartMode};
/// let cache = PathChildrenCache::builder(client, "/workers").build()?;
/// let _listening = cache.listenable().add_listener(|event| match event {
///     PathChildrenCacheEvent::ChildAdded(child) => println!("+ {}", child.name()),
///     PathChildrenCacheEvent::ChildRemoved(child) => println!("- {}", child.name()),
///     _ => {}
/// });
/// cache.start(StartMode::BuildInitialCache).await?;
/// println!("{} workers", cache.current_data().len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PathChildrenCache {
    core: Arc<Core>,
    events: ListenerContainer<PathChildrenCacheEvent>,
    /// The listener translating the engine's events, added by the first `start`.
    bridge: Arc<OnceLock<ListenerHandle>>,
}

impl PathChildrenCache {
    /// Options for a cache of the children of `path`.
    pub fn builder(client: CuratorFramework, path: &str) -> PathChildrenCacheBuilder {
        PathChildrenCacheBuilder {
            client,
            config: Config::new("PathChildrenCache", path, WatchMode::OneShot, 1),
        }
    }

    /// Creates the node as a container if missing, then starts the cache as `mode` says.
    ///
    /// # Errors
    /// The framework's error when the node cannot be created;
    /// [`Error::InvalidArgument`] when already started or closed; [`Error::Closed`] when the
    /// cache or its client closes before the initial load (with
    /// [`StartMode::BuildInitialCache`]).
    ///
    /// # Cancellation safety
    /// With [`StartMode::BuildInitialCache`], dropping the future after the cache started
    /// leaves it running.
    pub async fn start(&self, mode: StartMode) -> Result<()> {
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
        // Only once: a second start fails below, and must not replace the translator (whose
        // state says whether `Initialized` went by).
        self.bridge.get_or_init(|| {
            self.core.listenable().add_listener(translator(
                Arc::clone(&self.core.root),
                mode,
                Arc::clone(&self.core.shared),
                self.events.clone(),
            ))
        });
        self.core.start()?;
        if mode == StartMode::BuildInitialCache && !self.core.shared.wait_initialized().await {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Stops following the children and removes the cache's watches. Idempotent.
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the cache stopping in the background.
    pub async fn close(&self) {
        self.core.close().await;
    }

    /// Where to add listeners of [`PathChildrenCacheEvent`]s.
    pub fn listenable(&self) -> Listenable<PathChildrenCacheEvent> {
        self.events.listenable()
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

fn translator(
    root: Arc<str>,
    mode: StartMode,
    shared: Arc<Shared>,
    events: ListenerContainer<PathChildrenCacheEvent>,
) -> impl Fn(CacheEvent) + Send + Sync + 'static {
    let initialized = AtomicBool::new(false);
    move |event| {
        let before_initialized = !initialized.load(Ordering::SeqCst);
        let is_child = |node: &ChildData| paths::parent(node.path()) == Some(&*root);
        let translated = match event {
            CacheEvent::Initialized => {
                initialized.store(true, Ordering::SeqCst);
                if mode != StartMode::PostInitializedEvent {
                    return;
                }
                PathChildrenCacheEvent::Initialized(shared.children(&root))
            }
            _ if before_initialized && mode == StartMode::BuildInitialCache => return,
            CacheEvent::Created { node } if is_child(&node) => {
                PathChildrenCacheEvent::ChildAdded(node)
            }
            CacheEvent::Changed { node, .. } if is_child(&node) => {
                PathChildrenCacheEvent::ChildUpdated(node)
            }
            CacheEvent::Deleted { old } if is_child(&old) => {
                PathChildrenCacheEvent::ChildRemoved(old)
            }
            CacheEvent::Error(error) => PathChildrenCacheEvent::Error(error),
            _ => return,
        };
        events.publish(translated);
    }
}

/// Options of a [`PathChildrenCache`].
#[derive(Debug)]
#[must_use = "a builder does nothing until build()"]
pub struct PathChildrenCacheBuilder {
    client: CuratorFramework,
    config: Config,
}

impl PathChildrenCacheBuilder {
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
        let events = self
            .client
            .listener_container::<PathChildrenCacheEvent>("PathChildrenCache");
        Ok(PathChildrenCache {
            core: Core::build(self.client, self.config)?,
            events,
            bridge: Arc::new(OnceLock::new()),
        })
    }
}
