//! [`NodeCache`]: one node's data and stat, kept up to date.

use std::sync::Arc;

use curator_framework::codec::{Codec, Json};
use curator_framework::listen::{Listenable, ListenerStream};
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
/// let cache = NodeCache::new(client, "/config/limits")?;
/// let _listening = cache.listenable().add_listener(|event| println!("{event:?}"));
/// cache.start().await?;
/// cache.initialized().await;
/// println!("{:?}", cache.current_data().map(|node| node.stat().version));
/// cache.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct NodeCache {
    core: Arc<Core>,
}

impl NodeCache {
    /// A cache of the node at `path`, not started.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path.
    pub fn new(client: CuratorFramework, path: &str) -> Result<Self> {
        let mut config = Config::new("NodeCache", path, WatchMode::OneShot, 0);
        config.max_in_flight = 4;
        Ok(Self {
            core: Core::build(client, config)?,
        })
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
        self.core.check_latent()?;
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
    /// None so far; the `Result` is the contract every recipe keeps.
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the cache stopping in the background.
    pub async fn close(&self) -> Result<()> {
        self.core.close().await;
        Ok(())
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

    /// Waits until the node was read once (when `Initialized` is published): `true` then,
    /// `false` when the cache stopped first (closed, or its client closed).
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn initialized(&self) -> bool {
        self.core.initialized().await
    }

    /// The node as last read; `None` while it does not exist (or before the first read).
    pub fn current_data(&self) -> Option<ChildData> {
        self.core.get(&self.core.root)
    }

    /// A view that decodes the node's data as `T` with JSON.
    pub fn typed<T: serde::Serialize + serde::de::DeserializeOwned>(&self) -> TypedCache<T, Json> {
        TypedCache::new(Arc::clone(&self.core), Json)
    }

    /// A view that decodes the node's data as `T` with `codec` (any of
    /// [`curator_framework::codec`], or your own).
    pub fn typed_with<T, C: Codec<T>>(&self, codec: C) -> TypedCache<T, C> {
        TypedCache::new(Arc::clone(&self.core), codec)
    }
}
