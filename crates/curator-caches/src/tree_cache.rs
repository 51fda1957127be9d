//! [`TreeCache`]: a subtree kept with one-shot watches, with a depth limit and a selector.

use std::sync::Arc;

use curator_framework::{CuratorFramework, Result};

use crate::core::{Core, builder_options, subtree_methods};
use crate::engine::{Config, WatchMode};
use crate::selector::TreeCacheSelector;

/// A local copy of the subtree at a path, down to a maximum depth, of the nodes a
/// [`TreeCacheSelector`] accepts (Curator's `TreeCache`). It sets a data watch and a children
/// watch on every cached node (and an exists watch on a missing root), so it works on every
/// ZooKeeper version; on 3.6+ a [`CuratorCache`](crate::CuratorCache) costs the server less.
/// It creates no nodes.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_caches::{FnSelector, TreeCache};
/// let cache = TreeCache::builder(client, "/services")
///     .max_depth(2)
///     .selector(FnSelector::new(|_| true, |path| !path.ends_with("/tmp")))
///     .build()?;
/// cache.start()?;
/// cache.initialized().await;
/// for node in cache.children("/services") {
///     println!("{}", node.name());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TreeCache {
    core: Arc<Core>,
}

impl TreeCache {
    /// Options for a cache of the subtree at `path`.
    pub fn builder(client: CuratorFramework, path: &str) -> TreeCacheBuilder {
        TreeCacheBuilder {
            client,
            config: Config::new("TreeCache", path, WatchMode::OneShot, usize::MAX),
        }
    }

    subtree_methods!();
}

/// Options of a [`TreeCache`].
#[derive(Debug)]
#[must_use = "a builder does nothing until build()"]
pub struct TreeCacheBuilder {
    client: CuratorFramework,
    config: Config,
}

impl TreeCacheBuilder {
    /// Caches nodes at most `depth` levels below the root (0: the root only). Unlimited by
    /// default.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.config.max_depth = depth;
        self
    }

    /// Decides which nodes are descended into and which are cached.
    pub fn selector(mut self, selector: impl TreeCacheSelector) -> Self {
        self.config.selector = Some(Arc::new(selector));
        self
    }

    builder_options!();

    /// The cache, not started.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](curator_framework::Error::InvalidPath) for a bad path.
    pub fn build(self) -> Result<TreeCache> {
        Ok(TreeCache {
            core: Core::build(self.client, self.config)?,
        })
    }
}
