//! [`TreeCache`]: a subtree kept with one-shot watches, with a depth limit and a selector.

use std::sync::Arc;

use curator_framework::listen::{Listenable, ListenerHandle};
use curator_framework::{CuratorFramework, Result, paths};

use crate::core::{Core, DEFAULT_MAX_CHILDREN, DEFAULT_MAX_IN_FLIGHT};
use crate::engine::{Config, WatchMode};
use crate::event::{CacheEvent, ChildData};
use crate::listener::CuratorCacheListener;
use crate::selector::TreeCacheSelector;
use crate::typed::{Codec, JsonCodec, TypedCache};

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
            path: path.to_owned(),
            max_depth: usize::MAX,
            selector: None,
            cache_data: true,
            max_children: DEFAULT_MAX_CHILDREN,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        }
    }

    /// Starts loading and following the tree, in the background.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](curator_framework::Error::InvalidArgument) when already
    /// started or closed.
    pub fn start(&self) -> Result<()> {
        self.core.start()
    }

    /// Waits until the initial load is done: `true` then, `false` when the cache stopped first
    /// (closed, or its client closed).
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn initialized(&self) -> bool {
        self.core.shared.wait_initialized().await
    }

    /// Whether the initial load is done.
    pub fn is_initialized(&self) -> bool {
        self.core.is_initialized()
    }

    /// Stops following the tree and removes the cache's watches. Idempotent.
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the cache stopping in the background.
    pub async fn close(&self) {
        self.core.close().await;
    }

    /// Where to add listeners of [`CacheEvent`]s.
    pub fn listenable(&self) -> Listenable<CacheEvent> {
        self.core.listenable()
    }

    /// Adds a [`CuratorCacheListener`]; dropping the handle removes it.
    pub fn add_listener(&self, listener: CuratorCacheListener) -> ListenerHandle {
        self.core.add_listener(listener)
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

    /// A view that decodes node data as `T` with JSON.
    pub fn typed<T: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
    ) -> TypedCache<T, JsonCodec> {
        TypedCache::new(Arc::clone(&self.core), JsonCodec)
    }

    /// A view that decodes node data as `T` with `codec`.
    pub fn typed_with<T, C: Codec<T>>(&self, codec: C) -> TypedCache<T, C> {
        TypedCache::new(Arc::clone(&self.core), codec)
    }
}

/// Options of a [`TreeCache`].
#[must_use = "a builder does nothing until build()"]
pub struct TreeCacheBuilder {
    client: CuratorFramework,
    path: String,
    max_depth: usize,
    selector: Option<Arc<dyn TreeCacheSelector>>,
    cache_data: bool,
    max_children: usize,
    max_in_flight: usize,
}

impl std::fmt::Debug for TreeCacheBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeCacheBuilder")
            .field("path", &self.path)
            .field("max_depth", &self.max_depth)
            .field("selector", &self.selector.is_some())
            .field("cache_data", &self.cache_data)
            .finish_non_exhaustive()
    }
}

impl TreeCacheBuilder {
    /// Caches nodes at most `depth` levels below the root (0: the root only). Unlimited by
    /// default.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// Decides which nodes are descended into and which are cached.
    pub fn selector(mut self, selector: impl TreeCacheSelector) -> Self {
        self.selector = Some(Arc::new(selector));
        self
    }

    /// Keeps stats only, not data.
    pub fn without_data(mut self) -> Self {
        self.cache_data = false;
        self
    }

    /// Nodes with more children than this are not listed (default 100,000); see
    /// [`CacheError::TooManyChildren`](crate::CacheError::TooManyChildren).
    pub fn max_children(mut self, limit: usize) -> Self {
        self.max_children = limit;
        self
    }

    /// How many reads a load keeps in flight at once (default 256, at least 1).
    pub fn max_in_flight(mut self, reads: usize) -> Self {
        self.max_in_flight = reads.max(1);
        self
    }

    /// The cache, not started.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](curator_framework::Error::InvalidPath) for a bad path.
    pub fn build(self) -> Result<TreeCache> {
        paths::validate(&self.path)?;
        let config = Config {
            name: "TreeCache",
            root: Arc::from(self.path),
            mode: WatchMode::OneShot,
            max_depth: self.max_depth,
            selector: self.selector,
            cache_data: self.cache_data,
            max_children: self.max_children,
            max_in_flight: self.max_in_flight,
        };
        Ok(TreeCache {
            core: Arc::new(Core::new(self.client, config)),
        })
    }
}
