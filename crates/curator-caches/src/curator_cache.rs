//! [`CuratorCache`]: a whole subtree, kept with one persistent recursive watch.

use std::sync::Arc;

use curator_framework::{CuratorFramework, Result};

use crate::core::{Core, builder_options, subtree_methods};
use crate::engine::{Config, WatchMode};

/// A local copy of the subtree at a path (the node itself and everything below it), kept up to
/// date, with an event for every change (Curator's `CuratorCache`).
///
/// On ZooKeeper 3.6+ it holds one persistent recursive watch on its root; on older servers (the
/// server answers `addWatch` with `UNIMPLEMENTED`) it falls back to one-shot watches on every
/// node, as [`TreeCache`](crate::TreeCache) does. It creates no nodes.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_caches::{CuratorCache, CuratorCacheListener};
/// let cache = CuratorCache::builder(client, "/config").build()?;
/// let _listening = cache.add_listener(
///     CuratorCacheListener::builder()
///         .for_creates_and_changes(|_old, node| println!("{} = {:?}", node.path(), node.data()))
///         .for_deletes(|old| println!("{} deleted", old.path()))
///         .build(),
/// );
/// cache.start()?;
/// cache.initialized().await;
/// if let Some(node) = cache.get("/config/feature-x") {
///     println!("feature-x: {:?}", node.data());
/// }
/// cache.close().await;
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

    subtree_methods!();

    /// The cache's root path.
    pub fn path(&self) -> &str {
        &self.core.root
    }

    /// The watch mode in use: [`WatchMode::Persistent`] or [`WatchMode::OneShot`] (`None`
    /// before the first load chose one).
    pub fn active_mode(&self) -> Option<WatchMode> {
        self.core.active_mode()
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
    /// How to watch: [`WatchMode::Auto`] (the default) uses a persistent recursive watch and
    /// falls back to one-shot watches on servers without them.
    pub fn with_mode(mut self, mode: WatchMode) -> Self {
        self.config.mode = mode;
        self
    }

    builder_options!();

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
