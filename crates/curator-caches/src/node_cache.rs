//! [`NodeCache`]: one node's data and stat, kept up to date.

use std::sync::Arc;

use curator_framework::listen::{Listenable, ListenerHandle};
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};

use crate::core::{Core, DEFAULT_MAX_CHILDREN};
use crate::engine::{Config, WatchMode};
use crate::event::{CacheEvent, ChildData};
use crate::listener::CuratorCacheListener;
use crate::typed::{Codec, JsonCodec, TypedCache};

/// A local copy of one node (Curator's `NodeCache`): its data and stat while it exists, with a
/// [`CacheEvent`] when it is created, changed or deleted. The node need not exist.
///
/// Like Curator, [`start`](Self::start) creates the node's *parents* as container nodes when
/// they are missing (never the node itself), so the watch has somewhere to live; the server
/// removes empty containers by itself.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_caches::{CuratorCacheListener, NodeCache};
/// let cache = NodeCache::new(client, "/config/limits")?;
/// let _listening = cache.add_listener(
///     CuratorCacheListener::builder().for_all(|event| println!("{event:?}")).build(),
/// );
/// cache.start().await?;
/// cache.initialized().await;
/// println!("{:?}", cache.current_data().map(|node| node.stat().version));
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
        paths::validate(path)?;
        let config = Config {
            name: "NodeCache",
            root: Arc::from(path),
            mode: WatchMode::OneShot,
            max_depth: 0,
            selector: None,
            cache_data: true,
            max_children: DEFAULT_MAX_CHILDREN,
            max_in_flight: 4,
        };
        Ok(Self {
            core: Arc::new(Core::new(client, config)),
        })
    }

    /// Creates the node's missing parents as containers, then starts following the node in the
    /// background.
    ///
    /// # Errors
    /// The framework's error when the parents cannot be created;
    /// [`Error::InvalidArgument`] when already started or closed.
    ///
    /// # Cancellation safety
    /// Dropping the future before it returns leaves the cache unstarted (parents may have been
    /// created).
    pub async fn start(&self) -> Result<()> {
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

    /// Waits until the first read of the node is applied: `true` then, `false` when the cache
    /// stopped first (closed, or its client closed).
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn initialized(&self) -> bool {
        self.core.shared.wait_initialized().await
    }

    /// Stops following the node and removes the cache's watch. Idempotent.
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the cache stopping in the background.
    pub async fn close(&self) {
        self.core.close().await;
    }

    /// The node as last read; `None` while it does not exist (or before the first read).
    pub fn current_data(&self) -> Option<ChildData> {
        self.core.get(&self.core.root)
    }

    /// Where to add listeners of [`CacheEvent`]s.
    pub fn listenable(&self) -> Listenable<CacheEvent> {
        self.core.listenable()
    }

    /// Adds a [`CuratorCacheListener`]; dropping the handle removes it.
    pub fn add_listener(&self, listener: CuratorCacheListener) -> ListenerHandle {
        self.core.add_listener(listener)
    }

    /// A view that decodes the node's data as `T` with JSON.
    pub fn typed<T: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
    ) -> TypedCache<T, JsonCodec> {
        TypedCache::new(Arc::clone(&self.core), JsonCodec)
    }

    /// A view that decodes the node's data as `T` with `codec`.
    pub fn typed_with<T, C: Codec<T>>(&self, codec: C) -> TypedCache<T, C> {
        TypedCache::new(Arc::clone(&self.core), codec)
    }
}
