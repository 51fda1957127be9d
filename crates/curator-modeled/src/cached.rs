//! [`CachedModeled`]: a [`Modeled`] whose reads come from a cache that can be waited on.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use curator_caches::{CacheError, CacheEvent, ChildData, CuratorCache};
use curator_framework::codec::Codec;
use curator_framework::listen::{Listenable, ListenerStream};
use curator_framework::recipe::{Recipe, RecipeCore, RecipeEvents, RecipeOptions, RecipeState};
use curator_framework::{Error, Result, Stat};

use crate::modeled::{Modeled, ZNode};
use crate::zpath::{NodeName, PathParams, ZPath};

/// What happened to a cached model node (the cache's events for the nodes of the model's
/// template, decoded).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ModeledEvent<T> {
    /// A model node entered the cache (during the initial load too).
    Created(ZNode<T>),
    /// A model node's data changed.
    Changed(ZNode<T>),
    /// A model node left the cache.
    Deleted {
        /// Its path.
        path: ZPath,
        /// Its last cached stat.
        stat: Stat,
    },
    /// A model node entered the cache or changed, but its data is not a model.
    Undecodable {
        /// Its path.
        path: ZPath,
        /// The codec's [`Error::Decode`] (or [`Error::Decompression`]).
        error: Error,
    },
    /// The initial load is done: reads see the whole tree from now on.
    Initialized,
    /// The cache could not follow part of the tree (it keeps running).
    Error(CacheError),
}

struct Shared {
    cache: CuratorCache,
    /// The template the cache was made for: events are about its nodes.
    template: ZPath,
    /// The cache's root: the template's longest resolved prefix.
    base: String,
    /// The view's name and lifecycle (its work is its cache's).
    core: RecipeCore,
}

/// A [`Modeled`] whose reads come from a [`CuratorCache`] of the model's nodes, as Curator's
/// `CachedModeledFramework`; writes go to the server as [`Modeled`]'s do.
///
/// The cache follows the subtree under the longest resolved prefix of the path
/// (`/orgs/{org}/users/{id}` caches `/orgs`), so every path this template matches can be read
/// from it; views at other paths of the same template ([`resolve`](Self::resolve),
/// [`at`](Self::at)) share it. Unlike Curator's, **reads wait for the initial load**
/// (Curator #1246): a read right after [`start`](Self::start) sees every node that existed
/// when the load began, never a false `NoNode`. [`current`](Self::current) reads without
/// waiting.
///
/// Reads are as fresh as the cache: a write (by anyone, this view included) is seen once
/// its watch event has arrived. To read a write through the cache, wait for it with
/// [`wait_for`](Self::wait_for) (its zxid: the stat [`update`](Self::update) returns, or the
/// writer's `last_zxid()`); or read through [`uncached`](Self::uncached). The cache re-reads
/// what changed after reconnects and session expiries, so it converges to the server.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_modeled::{Modeled, ModelSpec, ModeledEvent, ZPath};
///
/// #[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
/// struct Flag { on: bool }
///
/// let flags = Modeled::new(client, ModelSpec::<Flag>::builder(ZPath::parse("/flags/{name}")?).build()?);
/// let cached = flags.cached()?;
/// let _listening = cached.listenable().add_listener(|event| {
///     if let ModeledEvent::Changed(node) = event {
///         println!("{} is now {:?}", node.path, node.model);
///     }
/// });
/// cached.start().await?;
/// // Waits for the initial load, then answers from memory.
/// let dark_mode = cached.resolve(["dark-mode"])?.read().await?;
/// println!("{} flags", cached.list().await?.len());
/// cached.close().await?;
/// # let _ = dark_mode;
/// # Ok(()) }
/// ```
pub struct CachedModeled<T, C = curator_framework::codec::Json> {
    modeled: Modeled<T, C>,
    shared: Arc<Shared>,
}

impl<T, C> Clone for CachedModeled<T, C> {
    fn clone(&self) -> Self {
        CachedModeled {
            modeled: self.modeled.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T, C: fmt::Debug> fmt::Debug for CachedModeled<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedModeled")
            .field("template", &self.shared.template)
            .field("cache", &self.shared.base)
            .field("state", &self.shared.core.state())
            .finish()
    }
}

impl<T, C: Codec<T>> CachedModeled<T, C> {
    pub(crate) fn new(modeled: Modeled<T, C>) -> Result<Self> {
        if modeled.spec().chunked().is_some() {
            return Err(Error::InvalidArgument(format!(
                "the model {} is chunked; a cache of it would hold every chunk in memory and \
                 could not tell a whole value from a mix: read it through Modeled instead",
                modeled.path()
            )));
        }
        let template = modeled.path().clone();
        let base = template.resolved_prefix().full_path()?;
        let cache = CuratorCache::builder(modeled.client().clone(), &base).build()?;
        let core = RecipeCore::new(
            modeled.client(),
            "CachedModeled",
            &base,
            &RecipeOptions::new(),
        );
        Ok(CachedModeled {
            modeled,
            shared: Arc::new(Shared {
                cache,
                template,
                base,
                core,
            }),
        })
    }

    /// Starts loading and following the model's nodes; returns at once (reads wait for the
    /// load). Add listeners first to hear the initial load's `Created` events.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started, [`Error::Closed`] when closed.
    pub async fn start(&self) -> Result<()> {
        self.shared.core.lifecycle().start()?;
        self.shared.cache.start().await
    }

    /// Stops following the server; waiting reads end with [`Error::Closed`]. Idempotent.
    ///
    /// # Errors
    /// None: the view closes whatever its connection does.
    pub async fn close(&self) -> Result<()> {
        self.shared.core.close_tasks().await;
        self.shared.cache.close().await
    }

    /// Waits for the initial load (reads wait for it too); bound the wait with
    /// `tokio::time::timeout`.
    ///
    /// # Errors
    /// [`Error::NotStarted`] before [`start`](Self::start), [`Error::Closed`] when closed (or
    /// its client closed) before the load finished.
    pub async fn initialized(&self) -> Result<()> {
        match self.shared.core.state() {
            RecipeState::Latent => return Err(Error::NotStarted),
            RecipeState::Closed => return Err(Error::Closed),
            _ => {}
        }
        self.shared.cache.initialized().await
    }

    /// Waits until the cache reflects every change up to `zxid`, by any client: once it
    /// returns `Ok`, reads of this view (and of every view of the same cache) see each write up
    /// to `zxid`, or a newer state of the node it wrote. Take `zxid` from the write
    /// ([`update`](Self::update)'s `stat.mzxid`) or, after any write ([`set`](Self::set), a
    /// delete, a transaction), from the writing client's
    /// [`last_zxid()`](curator_framework::CuratorFramework::last_zxid).
    ///
    /// It waits for the initial load, brings the cache's session up to `zxid` (a `sync` unless
    /// it is known to be there), then waits until every watch event up to `zxid` and the reads
    /// they started are applied (after a reconnect or a new session: until the tree was read
    /// again). The cache may show later changes too; listeners may hear these changes' events
    /// after it returns.
    ///
    /// ```no_run
    /// # async fn demo(writer: curator_modeled::Modeled<u32>, cached: curator_modeled::CachedModeled<u32>) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// writer.set(&7).await?; // another client, say
    /// cached.wait_for(writer.client().last_zxid(), Duration::from_secs(5)).await?;
    /// assert_eq!(cached.read().await?, 7);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Timeout`] when `timeout` passes first; [`Error::NotStarted`] before
    /// [`start`](Self::start); [`Error::Closed`] when the view (or its client) closes first.
    ///
    /// # Cancellation safety
    /// Safe: dropping the future drops the wait and nothing else.
    pub async fn wait_for(&self, zxid: i64, timeout: Duration) -> Result<()> {
        match self.shared.core.state() {
            RecipeState::Latent => return Err(Error::NotStarted),
            RecipeState::Closed => return Err(Error::Closed),
            _ => {}
        }
        self.shared.cache.wait_for(zxid, timeout).await
    }

    /// The uncached model at this view's path (for reads that must see the server now, and
    /// for transactions).
    pub fn uncached(&self) -> &Modeled<T, C> {
        &self.modeled
    }

    /// The path this view reads and writes.
    pub fn path(&self) -> &ZPath {
        self.modeled.path()
    }

    /// The same cache, viewed at `path`.
    pub fn with_path(&self, path: ZPath) -> Self {
        CachedModeled {
            modeled: self.modeled.with_path(path),
            shared: Arc::clone(&self.shared),
        }
    }

    /// The same cache, at this path with its leading parameters filled.
    ///
    /// # Errors
    /// As [`ZPath::resolve`].
    pub fn resolve(&self, values: impl PathParams) -> Result<Self> {
        Ok(self.with_path(self.path().resolve(values)?))
    }

    /// The same cache, at the child `child` of this path.
    ///
    /// # Errors
    /// As [`ZPath::at`].
    pub fn at(&self, child: impl NodeName) -> Result<Self> {
        Ok(self.with_path(self.path().at(child)?))
    }

    /// Creates or overwrites the node at this path, as [`Modeled::set`].
    ///
    /// # Errors
    /// As [`Modeled::set`].
    pub async fn set(&self, model: &T) -> Result<String> {
        self.modeled.set(model).await
    }

    /// As [`Modeled::update`].
    ///
    /// # Errors
    /// As [`Modeled::update`].
    pub async fn update(&self, model: &T) -> Result<Stat> {
        self.modeled.update(model).await
    }

    /// As [`Modeled::update_with_version`].
    ///
    /// # Errors
    /// As [`Modeled::update_with_version`].
    pub async fn update_with_version(&self, model: &T, version: i32) -> Result<Stat> {
        self.modeled.update_with_version(model, version).await
    }

    /// As [`Modeled::delete`].
    ///
    /// # Errors
    /// As [`Modeled::delete`].
    pub async fn delete(&self) -> Result<()> {
        self.modeled.delete().await
    }

    /// As [`Modeled::delete_with_version`].
    ///
    /// # Errors
    /// As [`Modeled::delete_with_version`].
    pub async fn delete_with_version(&self, version: i32) -> Result<()> {
        self.modeled.delete_with_version(version).await
    }

    /// The cached node at this path, decoded, after the initial load.
    ///
    /// # Errors
    /// `NoNode` when it is not cached, [`Error::Decode`], and as
    /// [`initialized`](Self::initialized); [`Error::InvalidArgument`] for an unresolved path
    /// or one outside the cache.
    pub async fn read(&self) -> Result<T> {
        Ok(self.read_as_znode().await?.model)
    }

    /// As [`read`](Self::read), with the node's stat.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub async fn read_as_znode(&self) -> Result<ZNode<T>> {
        let path = self.cached_path()?;
        self.initialized().await?;
        let node = self.shared.cache.get(&path).ok_or(Error::NoNode)?;
        self.decode(self.path().clone(), &node)
    }

    /// The cached node at this path without waiting: `None` when it is not cached (or not
    /// loaded yet).
    pub fn current(&self) -> Option<Result<ZNode<T>>> {
        let path = self.cached_path().ok()?;
        let node = self.shared.cache.get(&path)?;
        Some(self.decode(self.path().clone(), &node))
    }

    /// The node's stat, `None` when it is not cached, after the initial load.
    ///
    /// # Errors
    /// As [`read`](Self::read), never `NoNode`.
    pub async fn check_exists(&self) -> Result<Option<Stat>> {
        let path = self.cached_path()?;
        self.initialized().await?;
        Ok(self.shared.cache.get(&path).map(|node| *node.stat()))
    }

    /// The paths of the node's cached children, sorted, after the initial load.
    ///
    /// # Errors
    /// `NoNode` when the node is not cached, and as [`read`](Self::read).
    pub async fn children(&self) -> Result<Vec<ZPath>> {
        self.cached_children()
            .await?
            .iter()
            .map(|child| self.path().at(child.name()))
            .collect()
    }

    /// The node's cached children, decoded, sorted by path, after the initial load.
    ///
    /// # Errors
    /// [`Error::Decode`] naming the first child that is not a model, and as
    /// [`children`](Self::children).
    pub async fn children_as_znodes(&self) -> Result<Vec<ZNode<T>>> {
        self.cached_children()
            .await?
            .iter()
            .map(|child| self.decode(self.path().at(child.name())?, child))
            .collect()
    }

    async fn cached_children(&self) -> Result<Vec<ChildData>> {
        let path = self.cached_path()?;
        self.initialized().await?;
        if self.shared.cache.get(&path).is_none() {
            return Err(Error::NoNode);
        }
        Ok(self.shared.cache.children(&path))
    }

    /// Every cached node this view's path matches (any parameters left match any node name:
    /// at `/orgs/{org}/users/{id}` every user of every org), decoded, sorted by path, after
    /// the initial load.
    ///
    /// # Errors
    /// [`Error::Decode`] naming the first node that is not a model, and as
    /// [`initialized`](Self::initialized); [`Error::InvalidArgument`] when the path is
    /// outside the cache.
    pub async fn list(&self) -> Result<Vec<ZNode<T>>> {
        let prefix = self.path().resolved_prefix().full_path()?;
        self.check_inside(&prefix)?;
        self.initialized().await?;
        let template = self.path();
        let nodes = match template.parent().filter(ZPath::is_resolved) {
            // One parameter left, the last: the children of one node.
            Some(parent) if !template.is_resolved() => {
                self.shared.cache.children(&parent.full_path()?)
            }
            _ => self.shared.cache.snapshot(),
        };
        nodes
            .iter()
            .filter(|node| template.matches(node.path()))
            .map(|node| self.decode(ZPath::parse(node.path())?, node))
            .collect()
    }

    /// Where to add listeners of [`ModeledEvent`]s for the nodes of the template this cache
    /// was made for.
    pub fn listenable(&self) -> Listenable<ModeledEvent<T>>
    where
        T: Clone + Send + 'static,
    {
        let view = self.clone();
        self.shared
            .cache
            .listenable()
            .filter_map(move |event| view.modeled_event(event))
    }

    /// Every [`ModeledEvent`] from now on, as a stream (`listenable().stream()`).
    pub fn stream(&self) -> ListenerStream<ModeledEvent<T>>
    where
        T: Clone + Send + 'static,
    {
        self.listenable().stream()
    }

    fn modeled_event(&self, event: CacheEvent) -> Option<ModeledEvent<T>> {
        let known = |node: &ChildData| self.shared.template.matches(node.path());
        let decoded = |node: &ChildData, made: fn(ZNode<T>) -> ModeledEvent<T>| {
            let path = match ZPath::parse(node.path()) {
                Ok(path) => path,
                Err(error) => return ModeledEvent::Error(read_error(node.path(), error)),
            };
            match self.decode(path.clone(), node) {
                Ok(node) => made(node),
                Err(error) => ModeledEvent::Undecodable { path, error },
            }
        };
        match event {
            CacheEvent::Created { node } if known(&node) => {
                Some(decoded(&node, ModeledEvent::Created))
            }
            CacheEvent::Changed { node, .. } if known(&node) => {
                Some(decoded(&node, ModeledEvent::Changed))
            }
            CacheEvent::Deleted { old } if known(&old) => match ZPath::parse(old.path()) {
                Ok(path) => Some(ModeledEvent::Deleted {
                    path,
                    stat: *old.stat(),
                }),
                Err(error) => Some(ModeledEvent::Error(read_error(old.path(), error))),
            },
            CacheEvent::Initialized => Some(ModeledEvent::Initialized),
            CacheEvent::Error(error) => Some(ModeledEvent::Error(error)),
            _ => None,
        }
    }

    fn decode(&self, path: ZPath, node: &ChildData) -> Result<ZNode<T>> {
        let data = node.data().unwrap_or_default();
        let client = self.modeled.client();
        let model = if self.modeled.spec().options.compressed && !client.compression_enabled() {
            // The cache decompresses only on clients that compress by default.
            let plain = client
                .compression_provider()
                .decompress(node.path(), data)?;
            self.modeled.decode(node.path(), &plain)?
        } else {
            self.modeled.decode(node.path(), data)?
        };
        Ok(ZNode::new(path, *node.stat(), model))
    }

    /// This view's resolved path, checked to be inside the cache.
    fn cached_path(&self) -> Result<String> {
        let path = self.path().full_path()?;
        self.check_inside(&path)?;
        Ok(path)
    }

    fn check_inside(&self, path: &str) -> Result<()> {
        let base = self.shared.base.as_str();
        let inside = base == "/"
            || path == base
            || (path.starts_with(base) && path.as_bytes().get(base.len()) == Some(&b'/'));
        if inside {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "{path} is outside the cache of {} (rooted at {base})",
                self.shared.template
            )))
        }
    }
}

fn read_error(path: &str, error: Error) -> CacheError {
    CacheError::Read {
        path: path.to_owned(),
        error,
    }
}

impl<T: Clone + Send + Sync + 'static, C: Codec<T>> Recipe for CachedModeled<T, C> {
    fn core(&self) -> &RecipeCore {
        &self.shared.core
    }

    async fn start(&self) -> Result<()> {
        CachedModeled::start(self).await
    }

    async fn close(&self) -> Result<()> {
        CachedModeled::close(self).await
    }
}

impl<T: Clone + Send + Sync + 'static, C: Codec<T>> RecipeEvents for CachedModeled<T, C> {
    type Event = ModeledEvent<T>;

    fn listenable(&self) -> Listenable<ModeledEvent<T>> {
        CachedModeled::listenable(self)
    }
}
