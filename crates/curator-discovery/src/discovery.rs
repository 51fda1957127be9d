//! [`ServiceDiscovery`]: registering instances and querying them.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use curator_framework::recipe::{HandleGuard, Recipe, RecipeCore, RecipeOptions, RecipeState};
use curator_framework::{CuratorFramework, Error, Result, codec, paths};
use parking_lot::Mutex;

use crate::Payload;
use crate::cache::{ServiceCache, ServiceCacheBuilder};
use crate::instance::{ServiceInstance, ServiceType, validate_node_name};
use crate::provider::ServiceProviderBuilder;
use crate::registration::Registration;
use crate::serializer::JsonInstanceSerializer;

pub(crate) struct Inner<P> {
    pub(crate) client: CuratorFramework,
    pub(crate) base_path: String,
    pub(crate) serializer: JsonInstanceSerializer,
    watch_instances: bool,
    this_instance: Option<ServiceInstance<P>>,
    /// The discovery's name, lifecycle, and the registrations' keepers (one child task each).
    core: RecipeCore,
    /// Locally registered instances, by id (as Curator).
    registrations: tokio::sync::Mutex<HashMap<String, Arc<Registration<P>>>>,
    /// Caches made from this discovery (and its providers), closed with it.
    caches: Mutex<Vec<ServiceCache<P>>>,
}

impl<P> Inner<P> {
    pub(crate) fn path_for_name(&self, name: &str) -> String {
        paths::join(&self.base_path, name)
    }

    pub(crate) fn path_for_instance(&self, name: &str, id: &str) -> String {
        paths::join(&self.path_for_name(name), id)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.core.state() == RecipeState::Closed
    }

    pub(crate) fn track_cache(&self, cache: &ServiceCache<P>) {
        self.caches.lock().push(cache.clone());
    }
}

/// Registers service instances and finds them (Curator's `ServiceDiscovery`), with Curator's
/// layout: instance `id` of service `name` is the node `<base path>/<name>/<id>`, holding the
/// instance's JSON.
///
/// - [`register_service`](Self::register_service) creates the node (ephemeral for
///   [`ServiceType::Dynamic`] and [`DynamicSequential`](ServiceType::DynamicSequential),
///   persistent for [`Static`](ServiceType::Static) and [`Permanent`](ServiceType::Permanent);
///   parents are containers) and keeps it: when it is deleted, after a reconnection and after
///   the session expires it is created again with the **latest** data, exactly once, owned by
///   the live session (a node left by an earlier session is replaced).
/// - [`update_service`](Self::update_service) changes a registered instance, now and for every
///   re-creation; [`unregister_service`](Self::unregister_service) stops keeping it, then
///   deletes it, so it never comes back.
/// - [`close`](Self::close) closes the caches and providers made from this discovery and
///   unregisters its instances, except [`Permanent`](ServiceType::Permanent) ones.
///
/// The handle is a cheap `Clone`; clones share the registrations.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_discovery::{ServiceDiscovery, ServiceInstance};
/// let me = ServiceInstance::builder("api").address("10.0.0.5").port(8080).build()?;
/// let discovery = ServiceDiscovery::builder(client, "/services")
///     .this_instance(me.clone())
///     .build()?;
/// discovery.start().await?; // registers `me`
/// for name in discovery.query_for_names().await? {
///     println!("{name}: {} instances", discovery.query_for_instances(&name).await?.len());
/// }
/// discovery.update_service(&me.to_builder().enabled(false).build()?).await?;
/// discovery.close().await?; // unregisters `me`
/// # Ok(()) }
/// ```
pub struct ServiceDiscovery<P = serde_json::Value> {
    pub(crate) inner: Arc<Inner<P>>,
    /// Cancels the recipe's tasks when the last handle is dropped.
    _guard: HandleGuard,
}

impl<P> Clone for ServiceDiscovery<P> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            _guard: self._guard.clone(),
        }
    }
}

impl<P> fmt::Debug for ServiceDiscovery<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceDiscovery")
            .field("base_path", &self.inner.base_path)
            .field("watch_instances", &self.inner.watch_instances)
            .field("lifecycle", &self.inner.core.state())
            .finish_non_exhaustive()
    }
}

impl ServiceDiscovery {
    /// Options of a discovery under `base_path`, with [`serde_json::Value`] payloads (change
    /// the payload type with [`ServiceDiscoveryBuilder::payload_type`]).
    pub fn builder(client: CuratorFramework, base_path: &str) -> ServiceDiscoveryBuilder {
        ServiceDiscoveryBuilder {
            client,
            base_path: base_path.to_owned(),
            serializer: JsonInstanceSerializer::new(),
            watch_instances: false,
            this_instance: None,
            options: RecipeOptions::new(),
            _payload: PhantomData,
        }
    }
}

impl<P: Payload> ServiceDiscovery<P> {
    /// Registers the builder's instance, if any. (Registering, querying and caches work before
    /// `start` too.)
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started; [`Error::Closed`] after `close`; the errors of
    /// [`register_service`](Self::register_service).
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the instance registered (and kept).
    pub async fn start(&self) -> Result<()> {
        self.inner.core.lifecycle().start()?;
        if let Some(instance) = &self.inner.this_instance {
            self.register_service(instance).await?;
        }
        Ok(())
    }

    /// Registers `instance` and keeps it registered (see the type's docs). Registering an id
    /// that this discovery already registered updates it instead.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid name or id, or JSON over ZooKeeper's 1 MiB;
    /// [`Error::Closed`] after `close`; [`Error::Decode`] when the payload cannot be encoded;
    /// the framework's errors creating the node (the instance is then not kept).
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the node created but not kept.
    pub async fn register_service(&self, instance: &ServiceInstance<P>) -> Result<()> {
        validate_instance(instance)?;
        let mut registrations = self.inner.registrations.lock().await;
        if self.inner.is_closed() {
            return Err(Error::Closed);
        }
        if let Some(existing) = registrations.get(instance.id()) {
            return existing.update(instance.clone()).await;
        }
        let registration = Registration::new(
            self.inner.client.clone(),
            self.inner.core.tasks().child("registration"),
            self.inner.serializer.clone(),
            self.inner.path_for_instance(instance.name(), instance.id()),
            instance.clone(),
            self.inner.watch_instances,
        )?;
        registration.register().await?;
        registrations.insert(instance.id().to_owned(), registration);
        Ok(())
    }

    /// Changes a registered instance (same id): written now, and used for every re-creation
    /// of its node.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when this discovery did not register the id, or for invalid
    /// input; [`Error::Closed`] after `close`; the framework's errors writing the node (the
    /// new data is kept, and written in the background).
    ///
    /// # Cancellation safety
    /// Dropping the future keeps the new data locally; it is written by the next
    /// re-registration.
    pub async fn update_service(&self, instance: &ServiceInstance<P>) -> Result<()> {
        validate_instance(instance)?;
        let registration = {
            let registrations = self.inner.registrations.lock().await;
            if self.inner.is_closed() {
                return Err(Error::Closed);
            }
            registrations.get(instance.id()).cloned()
        };
        let Some(registration) = registration else {
            return Err(Error::InvalidArgument(format!(
                "instance {:?} of {:?} is not registered by this discovery",
                instance.id(),
                instance.name()
            )));
        };
        registration.update(instance.clone()).await
    }

    /// Stops keeping `instance` (by id) and deletes its node, guaranteed (retried in the
    /// background while the connection is down). An instance this discovery did not register
    /// is deleted at `<base path>/<name>/<id>` all the same (for permanent instances of earlier
    /// runs). A missing node is no error.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid name or id; the framework's errors of the
    /// delete (which goes on in the background).
    ///
    /// # Cancellation safety
    /// Dropping the future after it started may leave the node in place but no longer kept.
    pub async fn unregister_service(&self, instance: &ServiceInstance<P>) -> Result<()> {
        validate_instance(instance)?;
        let registration = self.inner.registrations.lock().await.remove(instance.id());
        match registration {
            Some(registration) => registration.unregister().await,
            None => {
                self.inner
                    .client
                    .delete()
                    .guaranteed()
                    .quietly()
                    .for_path(&self.inner.path_for_instance(instance.name(), instance.id()))
                    .await
            }
        }
    }

    /// The instances this discovery registered and keeps, as last registered, updated or
    /// (with `watch_instances`) changed by others.
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn registered_instances(&self) -> Vec<ServiceInstance<P>> {
        let registrations = self.inner.registrations.lock().await;
        let mut instances: Vec<_> = registrations.values().map(|r| r.instance()).collect();
        instances.sort_by(|a, b| (a.name(), a.id()).cmp(&(b.name(), b.id())));
        instances
    }

    /// The node path of a registered instance (for `DynamicSequential` instances, with the
    /// sequence suffix once created); `None` when this discovery did not register the id.
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn registered_path(&self, id: &str) -> Option<String> {
        let registrations = self.inner.registrations.lock().await;
        registrations.get(id).and_then(|r| r.actual_path())
    }

    /// The names of all services: the children of the base path (empty when it does not exist).
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn query_for_names(&self) -> Result<Vec<String>> {
        match self
            .inner
            .client
            .get_children()
            .for_path(&self.inner.base_path)
            .await
        {
            Ok((mut names, _)) => {
                names.sort();
                Ok(names)
            }
            Err(Error::NoNode) => Ok(Vec::new()),
            Err(error) => Err(error),
        }
    }

    /// Every instance of the service `name`, sorted by node name. Nodes that go away while
    /// being read are left out, and so are nodes whose data is not an instance (logged).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid name; the framework's errors.
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn query_for_instances(&self, name: &str) -> Result<Vec<ServiceInstance<P>>> {
        validate_node_name("service name", name)?;
        let parent = self.inner.path_for_name(name);
        let mut ids = match self.inner.client.get_children().for_path(&parent).await {
            Ok((ids, _)) => ids,
            Err(Error::NoNode) => return Ok(Vec::new()),
            Err(error) => return Err(error),
        };
        ids.sort();
        // The reads are queued at once, so they travel together.
        let reads = ids.iter().map(|id| {
            let path = paths::join(&parent, id);
            async move {
                let read = self.inner.client.get_data().for_path(&path).await;
                (path, read)
            }
        });
        let mut instances = Vec::with_capacity(ids.len());
        for (path, read) in futures::future::join_all(reads).await {
            match read {
                Ok((data, _)) => match self.inner.serializer.deserialize(&data) {
                    Ok(instance) => instances.push(instance),
                    Err(error) => {
                        let error = codec::with_path(error, &path);
                        tracing::warn!(%error, "skipping a node that is not a service instance");
                    }
                },
                Err(Error::NoNode) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(instances)
    }

    /// The instance `id` of the service `name`; `None` when there is no such node.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid name or id; [`Error::Decode`] when the node's
    /// data is not an instance; the framework's errors.
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn query_for_instance(
        &self,
        name: &str,
        id: &str,
    ) -> Result<Option<ServiceInstance<P>>> {
        validate_node_name("service name", name)?;
        validate_node_name("instance id", id)?;
        let path = self.inner.path_for_instance(name, id);
        match self.inner.client.get_data().for_path(&path).await {
            Ok((data, _)) => self
                .inner
                .serializer
                .deserialize(&data)
                .map(Some)
                .map_err(|error| codec::with_path(error, &path)),
            Err(Error::NoNode) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Options of a [`ServiceCache`] of the service `name`.
    pub fn service_cache_builder(&self, name: &str) -> ServiceCacheBuilder<P> {
        ServiceCacheBuilder::new(self.clone(), name)
    }

    /// Options of a [`ServiceProvider`](crate::ServiceProvider) of the service `name`
    /// (round robin, Curator's down-instance policy, by default).
    pub fn service_provider_builder(&self, name: &str) -> ServiceProviderBuilder<P> {
        ServiceProviderBuilder::new(self.clone(), name)
    }

    /// The client.
    pub fn client(&self) -> &CuratorFramework {
        &self.inner.client
    }

    /// The base path.
    pub fn base_path(&self) -> &str {
        &self.inner.base_path
    }

    /// Closes the caches and providers made from this discovery, then unregisters its
    /// instances (except [`ServiceType::Permanent`] ones, which stay, no longer kept), and
    /// waits for their keepers to end. Idempotent: later calls return `Ok(())`; closing a
    /// discovery that never started is fine. Afterwards registering fails with
    /// [`Error::Closed`].
    ///
    /// # Errors
    /// The first error closing a cache or deleting a node (every cache is still closed and
    /// every instance unregistered; the deletes go on in the background).
    ///
    /// # Cancellation safety
    /// Dropping the future may leave some instances registered but no longer kept.
    pub async fn close(&self) -> Result<()> {
        let mut registrations = self.inner.registrations.lock().await;
        if !self.inner.core.lifecycle().close() {
            return Ok(());
        }
        let mut result = Ok(());
        let caches = std::mem::take(&mut *self.inner.caches.lock());
        for cache in caches {
            if let Err(error) = cache.close().await {
                result = result.and(Err(error));
            }
        }
        for (_, registration) in registrations.drain() {
            if registration.instance().service_type() == ServiceType::Permanent {
                registration.stop().await;
                continue;
            }
            match registration.unregister().await {
                Ok(()) => {}
                // The client closed first: a dynamic instance's node went with its session.
                Err(Error::Closed) if registration.instance().service_type().is_dynamic() => {}
                Err(error) => result = result.and(Err(error)),
            }
        }
        let _ = self.inner.core.tasks().close().await;
        result
    }
}

impl<P: Payload> Recipe for ServiceDiscovery<P> {
    fn core(&self) -> &RecipeCore {
        &self.inner.core
    }

    async fn start(&self) -> Result<()> {
        ServiceDiscovery::start(self).await
    }

    async fn close(&self) -> Result<()> {
        ServiceDiscovery::close(self).await
    }
}

fn validate_instance<P>(instance: &ServiceInstance<P>) -> Result<()> {
    validate_node_name("service name", instance.name())?;
    validate_node_name("instance id", instance.id())
}

/// Options of a [`ServiceDiscovery`] (Curator's `ServiceDiscoveryBuilder`).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_discovery::{JsonInstanceSerializer, ServiceDiscovery};
/// #[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
/// struct Details { zone: String }
/// let discovery = ServiceDiscovery::builder(client, "/services")
///     .payload_type::<Details>()
///     .codec(JsonInstanceSerializer::new().payload_class("com.example.Details"))
///     .watch_instances(true)
///     .build()?;
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until build()"]
pub struct ServiceDiscoveryBuilder<P = serde_json::Value> {
    client: CuratorFramework,
    base_path: String,
    serializer: JsonInstanceSerializer,
    watch_instances: bool,
    this_instance: Option<ServiceInstance<P>>,
    options: RecipeOptions,
    _payload: PhantomData<fn() -> P>,
}

impl<P> fmt::Debug for ServiceDiscoveryBuilder<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceDiscoveryBuilder")
            .field("base_path", &self.base_path)
            .field("serializer", &self.serializer)
            .field("watch_instances", &self.watch_instances)
            .field("this_instance", &self.this_instance)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<P: Payload> ServiceDiscoveryBuilder<P> {
    /// Instances with payloads of type `T` (any serde type; `()` for none). Resets
    /// [`this_instance`](Self::this_instance).
    pub fn payload_type<T: Payload>(self) -> ServiceDiscoveryBuilder<T> {
        ServiceDiscoveryBuilder {
            client: self.client,
            base_path: self.base_path,
            serializer: self.serializer,
            watch_instances: self.watch_instances,
            this_instance: None,
            options: self.options,
            _payload: PhantomData,
        }
    }

    /// How instances are written and read: the codec of the instances' nodes (Curator's
    /// `serializer`; default: Curator 5.4's default layout).
    pub fn codec(mut self, codec: JsonInstanceSerializer) -> Self {
        self.serializer = codec;
        self
    }

    /// The discovery's name (default: its base path): what its logs and unhandled errors say.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let discovery = curator_discovery::ServiceDiscovery::builder(client, "/tenants/17/services")
    ///     .metrics_name("tenant-services")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// An instance to register at [`ServiceDiscovery::start`].
    pub fn this_instance(mut self, instance: ServiceInstance<P>) -> Self {
        self.this_instance = Some(instance);
        self
    }

    /// Follow changes that others make to the locally registered instances' nodes, and
    /// re-register those (Curator's `watchInstances`; default off: re-creation uses the data
    /// this process registered or updated last).
    pub fn watch_instances(mut self, watch: bool) -> Self {
        self.watch_instances = watch;
        self
    }

    /// The discovery, not started.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad base path (absolute, no trailing `/`; `/` itself is
    /// fine); [`Error::InvalidArgument`] for an invalid `this_instance`.
    pub fn build(self) -> Result<ServiceDiscovery<P>> {
        paths::validate(&self.base_path)?;
        if let Some(instance) = &self.this_instance {
            validate_instance(instance)?;
        }
        let core = RecipeCore::new(
            &self.client,
            "ServiceDiscovery",
            &self.base_path,
            &self.options,
        );
        let inner = Arc::new(Inner {
            core,
            client: self.client,
            base_path: self.base_path,
            serializer: self.serializer,
            watch_instances: self.watch_instances,
            this_instance: self.this_instance,
            registrations: tokio::sync::Mutex::new(HashMap::new()),
            caches: Mutex::new(Vec::new()),
        });
        Ok(ServiceDiscovery {
            _guard: inner.core.handle_guard(),
            inner,
        })
    }
}
