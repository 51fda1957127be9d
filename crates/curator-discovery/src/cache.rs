//! [`ServiceCache`]: the instances of one service, kept up to date.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use curator_caches::{ChildData, PathChildrenCache, PathChildrenCacheEvent, StartMode};
use curator_framework::listen::{Listenable, ListenerContainer, ListenerHandle};
use curator_framework::{Error, Result, codec};
use parking_lot::RwLock;
use tokio::sync::watch;

use crate::Payload;
use crate::discovery::ServiceDiscovery;
use crate::instance::{ServiceInstance, validate_node_name};
use crate::serializer::JsonInstanceSerializer;

/// A change of a [`ServiceCache`], delivered in order.
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
    /// A node under the service whose data is not an instance (the cache leaves it out).
    Undecodable {
        /// The node.
        path: String,
        /// The serializer's [`Error::Decode`].
        error: Error,
    },
}

type Instances<P> = Arc<RwLock<BTreeMap<String, ServiceInstance<P>>>>;

/// The instances of one service, kept by a cache of the children of `<base path>/<name>`
/// (Curator's `ServiceCache`). Made by
/// [`ServiceDiscovery::service_cache_builder`]; closed with the discovery.
///
/// [`instances`](Self::instances) returns every instance, enabled or not; a
/// [`ServiceProvider`](crate::ServiceProvider) skips disabled ones. Listeners get a
/// [`ServiceCacheEvent`] per change, in order.
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
/// cache.close().await;
/// # Ok(()) }
/// ```
pub struct ServiceCache<P = serde_json::Value> {
    name: Arc<str>,
    children: PathChildrenCache,
    instances: Instances<P>,
    events: ListenerContainer<ServiceCacheEvent<P>>,
    initialized: watch::Sender<bool>,
    /// The translation from the children cache's events, added by `build`.
    _bridge: Arc<ListenerHandle>,
}

impl<P> Clone for ServiceCache<P> {
    fn clone(&self) -> Self {
        Self {
            name: Arc::clone(&self.name),
            children: self.children.clone(),
            instances: Arc::clone(&self.instances),
            events: self.events.clone(),
            initialized: self.initialized.clone(),
            _bridge: Arc::clone(&self._bridge),
        }
    }
}

impl<P> fmt::Debug for ServiceCache<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceCache")
            .field("name", &self.name)
            .field("instances", &self.instances.read().len())
            .field("initialized", &*self.initialized.borrow())
            .finish_non_exhaustive()
    }
}

impl<P: Payload> ServiceCache<P> {
    /// Starts following the service and waits for the initial load.
    ///
    /// # Errors
    /// The framework's errors creating the service node; [`Error::InvalidArgument`] when
    /// already started or closed; [`Error::Closed`] when the cache or its client closes first.
    ///
    /// # Cancellation safety
    /// Dropping the future after the cache started leaves it running.
    pub async fn start(&self) -> Result<()> {
        self.children.start(StartMode::PostInitializedEvent).await?;
        let mut initialized = self.initialized.subscribe();
        initialized
            .wait_for(|done| *done)
            .await
            .map(|_| ())
            .map_err(|_| Error::Closed)
    }

    /// The cached instances (enabled or not), sorted by node name.
    pub fn instances(&self) -> Vec<ServiceInstance<P>> {
        self.instances.read().values().cloned().collect()
    }

    /// The service's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the initial load is done.
    pub fn is_initialized(&self) -> bool {
        *self.initialized.borrow()
    }

    /// Where to add listeners of [`ServiceCacheEvent`]s (closures, objects, senders or a
    /// stream); they run on a dispatch task of their own.
    pub fn listenable(&self) -> Listenable<ServiceCacheEvent<P>> {
        self.events.listenable()
    }

    /// Stops following the service. The last instances stay readable. Idempotent.
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the cache stopping in the background.
    pub async fn close(&self) {
        self.children.close().await;
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
}

impl<P> fmt::Debug for ServiceCacheBuilder<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceCacheBuilder")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<P: Payload> ServiceCacheBuilder<P> {
    pub(crate) fn new(discovery: ServiceDiscovery<P>, name: &str) -> Self {
        Self {
            discovery,
            name: name.to_owned(),
        }
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
        let children = PathChildrenCache::builder(inner.client.clone(), &path).build()?;
        let instances: Instances<P> = Arc::default();
        let events = inner
            .client
            .listener_container::<ServiceCacheEvent<P>>("ServiceCache");
        let initialized = watch::Sender::new(false);
        let bridge = children.listenable().add_listener(translator(
            inner.serializer.clone(),
            Arc::clone(&instances),
            events.clone(),
            initialized.clone(),
        ));
        Ok(ServiceCache {
            name: Arc::from(self.name.as_str()),
            children,
            instances,
            events,
            initialized,
            _bridge: Arc::new(bridge),
        })
    }
}

/// Applies the children cache's events to the decoded map, in order, and publishes ours.
fn translator<P: Payload>(
    serializer: JsonInstanceSerializer,
    instances: Instances<P>,
    events: ListenerContainer<ServiceCacheEvent<P>>,
    initialized: watch::Sender<bool>,
) -> impl Fn(PathChildrenCacheEvent) + Send + Sync + 'static {
    let decode = move |child: &ChildData| -> std::result::Result<ServiceInstance<P>, Error> {
        serializer
            .deserialize(child.data().unwrap_or_default())
            .map_err(|error| codec::with_path(error, child.path()))
    };
    move |event| match event {
        PathChildrenCacheEvent::Initialized(children) => {
            let mut map = instances.write();
            map.clear();
            for child in &children {
                match decode(child) {
                    Ok(instance) => {
                        map.insert(child.name().to_owned(), instance);
                    }
                    Err(error) => events.publish(undecodable(child, error)),
                }
            }
            drop(map);
            initialized.send_replace(true);
            events.publish(ServiceCacheEvent::Initialized);
        }
        PathChildrenCacheEvent::ChildAdded(child) | PathChildrenCacheEvent::ChildUpdated(child) => {
            match decode(&child) {
                Ok(instance) => {
                    let old = instances
                        .write()
                        .insert(child.name().to_owned(), instance.clone());
                    if *initialized.borrow() {
                        events.publish(match old {
                            Some(_) => ServiceCacheEvent::Updated(instance),
                            None => ServiceCacheEvent::Added(instance),
                        });
                    }
                }
                Err(error) => {
                    let old = instances.write().remove(child.name());
                    if *initialized.borrow() {
                        if let Some(old) = old {
                            events.publish(ServiceCacheEvent::Removed(old));
                        }
                        events.publish(undecodable(&child, error));
                    }
                }
            }
        }
        PathChildrenCacheEvent::ChildRemoved(child) => {
            let old = instances.write().remove(child.name());
            if let (Some(old), true) = (old, *initialized.borrow()) {
                events.publish(ServiceCacheEvent::Removed(old));
            }
        }
        PathChildrenCacheEvent::Error(error) => {
            tracing::warn!(%error, "service cache");
        }
        _ => {}
    }
}

fn undecodable<P>(child: &ChildData, error: Error) -> ServiceCacheEvent<P> {
    ServiceCacheEvent::Undecodable {
        path: child.path().to_owned(),
        error,
    }
}
