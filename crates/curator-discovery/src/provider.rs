//! [`ServiceProvider`]: one instance at a time, by strategy, skipping instances that are down.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use curator_framework::Result;
use curator_framework::recipe::{Recipe, RecipeCore};
use parking_lot::Mutex;

use crate::Payload;
use crate::cache::{ServiceCache, ServiceCacheBuilder};
use crate::discovery::ServiceDiscovery;
use crate::instance::ServiceInstance;
use crate::strategy::{ProviderStrategy, RoundRobinStrategy};

/// When an instance counts as down (Curator's `DownInstancePolicy`): once it was reported
/// [`error_threshold`](Self::error_threshold) times (by
/// [`ServiceProvider::note_error`]) within [`timeout`](Self::timeout) of the first report, it
/// is skipped until `timeout` has passed since that first report; then its count starts
/// again. Curator's defaults: 30 s and 2 errors.
///
/// ```
/// use std::time::Duration;
/// use curator_discovery::DownInstancePolicy;
/// let policy = DownInstancePolicy::new(Duration::from_secs(10), 3);
/// assert_eq!(policy.error_threshold(), 3);
/// assert_eq!(DownInstancePolicy::default().timeout(), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DownInstancePolicy {
    timeout: Duration,
    error_threshold: usize,
}

impl Default for DownInstancePolicy {
    fn default() -> Self {
        Self::new(Duration::from_secs(30), 2)
    }
}

impl DownInstancePolicy {
    /// `error_threshold` errors (at least 1) within `timeout` make an instance down for the
    /// rest of `timeout`.
    pub fn new(timeout: Duration, error_threshold: usize) -> Self {
        Self {
            timeout,
            error_threshold: error_threshold.max(1),
        }
    }

    /// How long errors count, and how long a down instance stays down.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How many errors make an instance down.
    pub fn error_threshold(&self) -> usize {
        self.error_threshold
    }
}

#[derive(Debug)]
struct Errors {
    since: Instant,
    count: usize,
}

/// Error counts per instance (name, id), forgotten `timeout` after the first error.
#[derive(Debug)]
struct DownInstances {
    policy: DownInstancePolicy,
    errors: Mutex<HashMap<(String, String), Errors>>,
}

impl DownInstances {
    fn note_error<P>(&self, instance: &ServiceInstance<P>, now: Instant) {
        let mut errors = self.errors.lock();
        self.purge(&mut errors, now);
        errors
            .entry((instance.name().to_owned(), instance.id().to_owned()))
            .or_insert(Errors {
                since: now,
                count: 0,
            })
            .count += 1;
    }

    /// Drops the counts whose time is up.
    fn purge(&self, errors: &mut HashMap<(String, String), Errors>, now: Instant) {
        let timeout = self.policy.timeout;
        errors.retain(|_, e| now.saturating_duration_since(e.since) < timeout);
    }

    /// A predicate that is `false` for instances that are down at `now`.
    fn up_filter(&self, now: Instant) -> impl Fn(&(String, String)) -> bool + use<> {
        let mut errors = self.errors.lock();
        self.purge(&mut errors, now);
        let down: Vec<(String, String)> = errors
            .iter()
            .filter(|(_, e)| e.count >= self.policy.error_threshold)
            .map(|(key, _)| key.clone())
            .collect();
        move |key| !down.contains(key)
    }
}

type Filter<P> = Arc<dyn Fn(&ServiceInstance<P>) -> bool + Send + Sync>;

/// Hands out instances of one service (Curator's `ServiceProvider`): from a
/// [`ServiceCache`] of the service, the enabled ones that are not down (see
/// [`DownInstancePolicy`]) and pass the provider's filters, one at a time as its
/// [`ProviderStrategy`] picks.
///
/// Made by [`ServiceDiscovery::service_provider_builder`]; closed with the discovery.
///
/// ```no_run
/// # async fn demo(discovery: curator_discovery::ServiceDiscovery) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_discovery::{DownInstancePolicy, RoundRobinStrategy, StickyStrategy};
/// let provider = discovery
///     .service_provider_builder("api")
///     .provider_strategy(StickyStrategy::new(RoundRobinStrategy::new()))
///     .down_instance_policy(DownInstancePolicy::new(Duration::from_secs(10), 2))
///     .additional_filter(|instance| instance.port().is_some())
///     .build()?;
/// provider.start().await?;
/// if let Some(instance) = provider.get_instance() {
///     // ... and when a call to it fails:
///     provider.note_error(&instance);
/// }
/// provider.close().await?;
/// # Ok(()) }
/// ```
pub struct ServiceProvider<P = serde_json::Value> {
    inner: Arc<ProviderInner<P>>,
}

struct ProviderInner<P> {
    cache: ServiceCache<P>,
    strategy: Box<dyn ProviderStrategy<P>>,
    down: DownInstances,
    filters: Vec<Filter<P>>,
}

impl<P> Clone for ServiceProvider<P> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<P> fmt::Debug for ServiceProvider<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceProvider")
            .field("cache", &self.inner.cache)
            .field("strategy", &self.inner.strategy)
            .field("down_instance_policy", &self.inner.down.policy)
            .field("filters", &self.inner.filters.len())
            .finish()
    }
}

impl<P: Payload> ServiceProvider<P> {
    /// Starts the provider's cache and waits for its initial load.
    ///
    /// # Errors
    /// As [`ServiceCache::start`] ([`Error::AlreadyStarted`](curator_framework::Error::AlreadyStarted)
    /// when started).
    ///
    /// # Cancellation safety
    /// Dropping the future after the cache started leaves it running.
    pub async fn start(&self) -> Result<()> {
        self.inner.cache.start().await
    }

    /// An instance picked by the strategy among [`get_all_instances`](Self::get_all_instances);
    /// `None` when there is none.
    pub fn get_instance(&self) -> Option<ServiceInstance<P>> {
        let instances = self.get_all_instances();
        self.inner.strategy.get_instance(&instances)
    }

    /// The instances the provider may hand out: enabled, not down, passing every filter;
    /// sorted by node name.
    pub fn get_all_instances(&self) -> Vec<ServiceInstance<P>> {
        let up = self.inner.down.up_filter(Instant::now());
        self.inner
            .cache
            .instances()
            .into_iter()
            .filter(|i| i.is_enabled())
            .filter(|i| up(&(i.name().to_owned(), i.id().to_owned())))
            .filter(|i| self.inner.filters.iter().all(|f| f(i)))
            .collect()
    }

    /// Reports that a call to `instance` failed; enough of these make it down (see
    /// [`DownInstancePolicy`]).
    pub fn note_error(&self, instance: &ServiceInstance<P>) {
        self.inner.down.note_error(instance, Instant::now());
    }

    /// The cache the provider reads.
    pub fn cache(&self) -> &ServiceCache<P> {
        &self.inner.cache
    }

    /// Closes the provider's cache. Idempotent: later calls return `Ok(())`; closing a
    /// provider that never started is fine.
    ///
    /// # Errors
    /// As [`ServiceCache::close`].
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the cache stopping in the background.
    pub async fn close(&self) -> Result<()> {
        self.inner.cache.close().await
    }
}

impl<P: Payload> Recipe for ServiceProvider<P> {
    fn core(&self) -> &RecipeCore {
        self.inner.cache.recipe_core()
    }

    async fn start(&self) -> Result<()> {
        ServiceProvider::start(self).await
    }

    async fn close(&self) -> Result<()> {
        ServiceProvider::close(self).await
    }
}

/// Options of a [`ServiceProvider`] (Curator's `ServiceProviderBuilder`): round robin and
/// Curator's [`DownInstancePolicy`] unless set.
///
/// ```no_run
/// # fn demo(discovery: curator_discovery::ServiceDiscovery) -> curator_framework::Result<()> {
/// let provider = discovery
///     .service_provider_builder("api")
///     .provider_strategy(curator_discovery::RandomStrategy::new())
///     .build()?;
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until build()"]
pub struct ServiceProviderBuilder<P = serde_json::Value> {
    cache: ServiceCacheBuilder<P>,
    strategy: Box<dyn ProviderStrategy<P>>,
    policy: DownInstancePolicy,
    filters: Vec<Filter<P>>,
}

impl<P> fmt::Debug for ServiceProviderBuilder<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceProviderBuilder")
            .field("cache", &self.cache)
            .field("strategy", &self.strategy)
            .field("policy", &self.policy)
            .field("filters", &self.filters.len())
            .finish()
    }
}

impl<P: Payload> ServiceProviderBuilder<P> {
    pub(crate) fn new(discovery: ServiceDiscovery<P>, name: &str) -> Self {
        let mut cache = ServiceCacheBuilder::new(discovery, name);
        cache.kind = "ServiceProvider";
        Self {
            cache,
            strategy: Box::new(RoundRobinStrategy::new()),
            policy: DownInstancePolicy::default(),
            filters: Vec::new(),
        }
    }

    /// The provider's name (default: its service's path); see
    /// [`ServiceCacheBuilder::metrics_name`].
    ///
    /// ```no_run
    /// # fn demo(discovery: curator_discovery::ServiceDiscovery) -> curator_framework::Result<()> {
    /// let provider = discovery.service_provider_builder("api").metrics_name("api").build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.cache = self.cache.metrics_name(name);
        self
    }

    /// How instances are picked (default [`RoundRobinStrategy`]).
    pub fn provider_strategy(mut self, strategy: impl ProviderStrategy<P>) -> Self {
        self.strategy = Box::new(strategy);
        self
    }

    /// When instances count as down (default 30 s, 2 errors).
    pub fn down_instance_policy(mut self, policy: DownInstancePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Only instances for which `filter` is `true` are handed out (Curator's
    /// `additionalFilter`); may be called more than once.
    pub fn additional_filter(
        mut self,
        filter: impl Fn(&ServiceInstance<P>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.filters.push(Arc::new(filter));
        self
    }

    /// The provider, not started; the discovery closes it when it closes.
    ///
    /// # Errors
    /// As [`ServiceCacheBuilder::build`].
    pub fn build(self) -> Result<ServiceProvider<P>> {
        let cache = self.cache.build()?;
        Ok(ServiceProvider {
            inner: Arc::new(ProviderInner {
                cache,
                strategy: self.strategy,
                down: DownInstances {
                    policy: self.policy,
                    errors: Mutex::new(HashMap::new()),
                },
                filters: self.filters,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServiceInstanceBuilder;

    #[test]
    fn errors_over_the_threshold_make_an_instance_down_until_the_timeout() {
        let down = DownInstances {
            policy: DownInstancePolicy::new(Duration::from_secs(10), 2),
            errors: Mutex::new(HashMap::new()),
        };
        let a: ServiceInstance<()> = ServiceInstanceBuilder::new("s").id("a").build().unwrap();
        let key = ("s".to_owned(), "a".to_owned());
        let t0 = Instant::now();
        let at = |secs| t0 + Duration::from_secs(secs);
        down.note_error(&a, at(0));
        assert!(
            down.up_filter(at(1))(&key),
            "one error is under the threshold"
        );
        down.note_error(&a, at(2));
        assert!(!down.up_filter(at(2))(&key), "two errors make it down");
        assert!(
            !down.up_filter(at(9))(&key),
            "down for the rest of the timeout"
        );
        assert!(down.up_filter(at(10))(&key), "up once the timeout passed");
        // The count started again: one more error is under the threshold.
        down.note_error(&a, at(11));
        assert!(down.up_filter(at(11))(&key));
        // Errors further apart than the timeout never add up.
        down.note_error(&a, at(22));
        assert!(down.up_filter(at(22))(&key));
    }
}
