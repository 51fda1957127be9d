//! [`NodeCache`]: one node's data and stat, kept up to date.

use std::sync::Arc;

use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};

use crate::core::{Core, event_methods};
use crate::engine::{Config, WatchMode};
use crate::event::ChildData;

/// A local copy of one node (Curator's `NodeCache`): its data and stat while it exists, with a
/// [`CacheEvent`](crate::CacheEvent) when it is created, changed or deleted. The node need not
/// exist.
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
        let mut config = Config::new("NodeCache", path, WatchMode::OneShot, 0);
        config.max_in_flight = 4;
        Ok(Self {
            core: Core::build(client, config)?,
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

    event_methods!();

    /// The node as last read; `None` while it does not exist (or before the first read).
    pub fn current_data(&self) -> Option<ChildData> {
        self.core.get(&self.core.root)
    }
}
