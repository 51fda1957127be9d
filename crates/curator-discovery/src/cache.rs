//! [`ServiceCache`]: the instances of one service, kept up to date.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use curator_caches::{ChildData, PathChildrenCache, PathChildrenCacheEvent, StartMode};
use curator_framework::listen::{Listenable, ListenerHandle, ListenerStream};
use curator_framework::recipe::{HandleGuard, Recipe, RecipeCore, RecipeEvents, RecipeOptions};
use curator_framework::{Error, Result, codec};
use parking_lot::RwLock;
use tokio::sync::watch;

use crate::Payload;
use crate::discovery::ServiceDiscovery;
use crate::instance::{ServiceInstance, validate_node_name};
use crate::serializer::JsonInstanceSerializer;

/// A change of a [`ServiceCache`], delivered in order. To keep a view of the instances from
/// the events: `Added` and `Updated` put an instance in (`Updated` also for one whose data did
/// not decode before), `Removed` and `Undecodable` take it out.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServiceCacheEvent<P = serde_json::Value> {
    /// The initial load is done; sent once.
    Initialized,
    /// An instance appeared.
    Added(ServiceInstance<P>),
    /// An instance's data changed.
    Updated(ServiceInstance<P>),
    /// An instance went away (its last known value).
    Removed(ServiceInstance<P>),
    /// A node under the service whose data is not an instance (the cache leaves it out; when
    /// it held an instance there, that instance is gone from
    /// [`instances`](ServiceCache::instances)).
    Undecodable {
        /// The node.
        path: String,
        /// The serializer's [`Error::Decode`].
        error: Error,
    },
    /// The cache cannot follow the service: a read it cannot recover from by reading again (no
    /// permission; a listing longer than the client's `max_listing_bytes`, as
    /// [`Error::ResponseTooLarge`]), or more instances than the cache's limit.
    /// [`instances`](ServiceCache::instances) stays as last known (empty when the first load
    /// failed); nothing is read again until a watch fires or the client reconnects.
    Error(curator_caches::CacheError),
}

type Instances<P> = Arc<RwLock<BTreeMap<String, ServiceInstance<P>>>>;

/// The instances of one service, kept by a cache of the children of `<base path>/<name>`
/// (Curator's `ServiceCache`). Made by
/// [`ServiceDiscovery::service_cache_builder`]; closed with the discovery.
///
/// [`instances`](Self::instances) returns every instance, enabled or not; a
/// [`ServiceProvider`](crate::ServiceProvider) skips disabled ones. Listeners get a
/// [`ServiceCacheEvent`] per change, in order: the children cache's events, decoded as each
/// listener receives them (one dispatch task, whatever the number of views and listeners).
///
/// Like Curator, [`start`](Self::start) creates `<base path>/<name>` as a container node when it
/// is missing (the server removes it again once it is empty).
///
/// ```no_run
/// # async fn demo(discovery: curator_discovery::ServiceDiscovery) -> curator_framework::Result<()> {
/// use curator_discovery::ServiceCacheEvent;
/// let cache = discovery.service_cache_builder("api").build()?;
/// let _listening = cache.listenable().add_listener(|event| match event {
///     ServiceCacheEvent::Added(instance) => println!("+ {}", instance.id()),
///     ServiceCacheEvent::Removed(instance) => println!("- {}", instance.id()),
///     _ => {}
/// });
/// cache.start().await?;
/// for instance in cache.instances() {
///     println!("{:?}:{:?}", instance.address(), instance.port());
/// }
/// cache.close().await?;
/// # Ok(()) }
/// ```
pub struct ServiceCache<P = serde_json::Value> {
    inner: Arc<CacheInner<P>>,
    /// Cancels the recipe's tasks when the last handle is dropped.
    _guard: HandleGuard,
}

struct CacheInner<P> {
    name: Arc<str>,
    children: PathChildrenCache,
    serializer: JsonInstanceSerializer,
    /// The decoded instances, kept by `_keeper`.
    instances: Instances<P>,
    /// Whether `_keeper` has seen the initial load (set on the children cache's dispatch task).
    initialized: watch::Sender<bool>,
    /// The cache's name and lifecycle; its tasks are cancelled by `close` and by the client's
    /// close, which ends a `start` waiting for the load.
    core: RecipeCore,
    /// Applies the children cache's events to `instances`, in order. Added before any other
    /// listener, so it runs first for each event: a listener that hears an event reads
    /// `instances` with that event applied.
    _keeper: ListenerHandle,
}

impl<P> Clone for ServiceCache<P> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            _guard: self._guard.clone(),
        }
    }
}

impl<P> fmt::Debug for ServiceCache<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceCache")
            .field("name", &self.inner.name)
            .field("instances", &self.inner.instances.read().len())
            .field("initialized", &*self.inner.initialized.borrow())
            .finish_non_exhaustive()
    }
}

impl<P: Payload> ServiceCache<P> {
    /// Starts following the service and waits for the initial load.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started; [`Error::Closed`] after `close`, and when the
    /// cache or its client closes before the initial load; the framework's errors creating the
    /// service node.
    ///
    /// # Cancellation safety
    /// Dropping the future after the cache started leaves it running.
    pub async fn start(&self) -> Result<()> {
        let lifecycle = self.inner.core.lifecycle();
        lifecycle.ensure_startable()?;
        self.inner.children.start().await?;
        lifecycle.start()?;
        self.initialized().await
    }

    /// Waits until the initial load is done ([`start`](Self::start) does); bound the wait
    /// with `tokio::time::timeout`.
    ///
    /// # Errors
    /// [`Error::Closed`] when the cache or its client closed first.
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn initialized(&self) -> Result<()> {
        let mut initialized = self.inner.initialized.subscribe();
        tokio::select! {
            biased;
            _ = initialized.wait_for(|done| *done) => Ok(()),
            () = self.inner.core.tasks().cancelled() => {
                if self.is_initialized() { Ok(()) } else { Err(Error::Closed) }
            }
        }
    }

    /// The cached instances (enabled or not), sorted by node name.
    pub fn instances(&self) -> Vec<ServiceInstance<P>> {
        self.inner.instances.read().values().cloned().collect()
    }

    /// The service's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Whether the initial load is done.
    pub fn is_initialized(&self) -> bool {
        *self.inner.initialized.borrow()
    }

    /// Where to add listeners of [`ServiceCacheEvent`]s (closures, objects, senders); they run
    /// on the children cache's dispatch task.
    pub fn listenable(&self) -> Listenable<ServiceCacheEvent<P>> {
        let serializer = self.inner.serializer.clone();
        let initialized = self.inner.initialized.subscribe();
        self.inner
            .children
            .listenable()
            .filter_map(move |event| service_event(&serializer, *initialized.borrow(), event))
    }

    /// Every [`ServiceCacheEvent`] from now on, as a stream (`listenable().stream()`).
    pub fn stream(&self) -> ListenerStream<ServiceCacheEvent<P>> {
        self.listenable().stream()
    }

    /// Stops following the service. The last instances stay readable. Idempotent: later calls
    /// return `Ok(())`; closing a cache that never started is fine.
    ///
    /// # Errors
    /// As [`PathChildrenCache::close`].
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the cache stopping in the background.
    pub async fn close(&self) -> Result<()> {
        self.inner.core.close_tasks().await;
        self.inner.children.close().await
    }

    /// The recipe's core (a `ServiceProvider` shares its cache's).
    pub(crate) fn recipe_core(&self) -> &RecipeCore {
        &self.inner.core
    }
}

impl<P: Payload> Recipe for ServiceCache<P> {
    fn core(&self) -> &RecipeCore {
        &self.inner.core
    }

    async fn start(&self) -> Result<()> {
        ServiceCache::start(self).await
    }

    async fn close(&self) -> Result<()> {
        ServiceCache::close(self).await
    }
}

impl<P: Payload> RecipeEvents for ServiceCache<P> {
    type Event = ServiceCacheEvent<P>;

    fn listenable(&self) -> Listenable<ServiceCacheEvent<P>> {
        ServiceCache::listenable(self)
    }
}

/// Options of a [`ServiceCache`] (Curator's `ServiceCacheBuilder`).
///
/// ```no_run
/// # fn demo(discovery: curator_discovery::ServiceDiscovery) -> curator_framework::Result<()> {
/// let cache = discovery.service_cache_builder("api").build()?;
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until build()"]
pub struct ServiceCacheBuilder<P = serde_json::Value> {
    discovery: ServiceDiscovery<P>,
    name: String,
    /// `ServiceCache`, or the recipe built on it (`ServiceProvider`).
    pub(crate) kind: &'static str,
    options: RecipeOptions,
}

impl<P> fmt::Debug for ServiceCacheBuilder<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceCacheBuilder")
            .field("name", &self.name)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<P: Payload> ServiceCacheBuilder<P> {
    pub(crate) fn new(discovery: ServiceDiscovery<P>, name: &str) -> Self {
        Self {
            discovery,
            name: name.to_owned(),
            kind: "ServiceCache",
            options: RecipeOptions::new(),
        }
    }

    /// The cache's name (default: its path, `<base path>/<name>`): the `name` label of its
    /// `curator_cache_event_lag_seconds`, and what its logs say.
    ///
    /// ```no_run
    /// # fn demo(discovery: curator_discovery::ServiceDiscovery) -> curator_framework::Result<()> {
    /// let cache = discovery.service_cache_builder("api").metrics_name("api-instances").build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// The cache, not started; the discovery closes it when it closes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid service name; [`Error::Closed`] when the
    /// discovery is closed.
    pub fn build(self) -> Result<ServiceCache<P>> {
        let cache = self.build_untracked()?;
        self.discovery.inner.track_cache(&cache);
        Ok(cache)
    }

    pub(crate) fn build_untracked(&self) -> Result<ServiceCache<P>> {
        validate_node_name("service name", &self.name)?;
        let inner = &self.discovery.inner;
        if inner.is_closed() {
            return Err(Error::Closed);
        }
        let path = inner.path_for_name(&self.name);
        let core = RecipeCore::new(&inner.client, self.kind, &path, &self.options);
        let children = PathChildrenCache::builder(inner.client.clone(), &path)
            .with_start_mode(StartMode::PostInitializedEvent)
            .metrics_name(core.name().as_str())
            .build()?;
        let instances: Instances<P> = Arc::default();
        let initialized = watch::Sender::new(false);
        let keeper = children.listenable().add_listener(keeper(
            inner.serializer.clone(),
            Arc::clone(&instances),
            initialized.clone(),
        ));
        let inner = Arc::new(CacheInner {
            name: Arc::from(self.name.as_str()),
            children,
            serializer: inner.serializer.clone(),
            instances,
            initialized,
            core,
            _keeper: keeper,
        });
        Ok(ServiceCache {
            _guard: inner.core.handle_guard(),
            inner,
        })
    }
}

fn decode<P: Payload>(
    serializer: &JsonInstanceSerializer,
    child: &ChildData,
) -> Result<ServiceInstance<P>> {
    serializer
        .deserialize(child.data().unwrap_or_default())
        .map_err(|error| codec::with_path(error, child.path()))
}

/// Applies the children cache's events to the decoded instances, in order.
fn keeper<P: Payload>(
    serializer: JsonInstanceSerializer,
    instances: Instances<P>,
    initialized: watch::Sender<bool>,
) -> impl Fn(PathChildrenCacheEvent) + Send + Sync + 'static {
    move |event| match event {
        PathChildrenCacheEvent::Initialized(children) => {
            let mut map = instances.write();
            map.clear();
            for child in &children {
                if let Ok(instance) = decode(&serializer, child) {
                    map.insert(child.name().to_owned(), instance);
                }
            }
            drop(map);
            initialized.send_replace(true);
        }
        PathChildrenCacheEvent::ChildAdded(child) | PathChildrenCacheEvent::ChildUpdated(child) => {
            match decode(&serializer, &child) {
                Ok(instance) => {
                    instances.write().insert(child.name().to_owned(), instance);
                }
                Err(_) => {
                    instances.write().remove(child.name());
                }
            }
        }
        PathChildrenCacheEvent::ChildRemoved(child) => {
            instances.write().remove(child.name());
        }
        PathChildrenCacheEvent::Error(error) => {
            tracing::warn!(%error, "service cache");
        }
        _ => {}
    }
}

/// The service event a children event means, if any: nothing for the instances of the initial
/// load (they are in `instances()` when `start` returns, then `Initialized` comes), and
/// `Undecodable` for a node whose data is not an instance, whenever it is seen.
fn service_event<P: Payload>(
    serializer: &JsonInstanceSerializer,
    initialized: bool,
    event: PathChildrenCacheEvent,
) -> Option<ServiceCacheEvent<P>> {
    match event {
        PathChildrenCacheEvent::Initialized(_) => Some(ServiceCacheEvent::Initialized),
        PathChildrenCacheEvent::ChildAdded(child) => match decode(serializer, &child) {
            Ok(instance) => initialized.then_some(ServiceCacheEvent::Added(instance)),
            Err(error) => Some(undecodable(&child, error)),
        },
        PathChildrenCacheEvent::ChildUpdated(child) => match decode(serializer, &child) {
            Ok(instance) => initialized.then_some(ServiceCacheEvent::Updated(instance)),
            Err(error) => Some(undecodable(&child, error)),
        },
        // A node that did not decode was no instance: its removal says nothing.
        PathChildrenCacheEvent::ChildRemoved(child) if initialized => decode(serializer, &child)
            .ok()
            .map(ServiceCacheEvent::Removed),
        PathChildrenCacheEvent::Error(error) => Some(ServiceCacheEvent::Error(error)),
        _ => None,
    }
}

fn undecodable<P>(child: &ChildData, error: Error) -> ServiceCacheEvent<P> {
    ServiceCacheEvent::Undecodable {
        path: child.path().to_owned(),
        error,
    }
}
