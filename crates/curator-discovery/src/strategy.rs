//! Provider strategies: which of the available instances a provider hands out.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::instance::ServiceInstance;

/// Picks one instance from those available (Curator's `ProviderStrategy`). The list a
/// [`ServiceProvider`](crate::ServiceProvider) passes is filtered (enabled, not down, the
/// provider's filters) and sorted by node name. Called often: keep it cheap and free of I/O.
///
/// ```
/// use curator_discovery::{ProviderStrategy, ServiceInstance};
/// /// Always the first instance.
/// #[derive(Debug)]
/// struct First;
/// impl<P: Clone> ProviderStrategy<P> for First {
///     fn get_instance(&self, instances: &[ServiceInstance<P>]) -> Option<ServiceInstance<P>> {
///         instances.first().cloned()
///     }
/// }
/// ```
pub trait ProviderStrategy<P>: Send + Sync + fmt::Debug + 'static {
    /// The instance to use, `None` when `instances` is empty (or none suits).
    fn get_instance(&self, instances: &[ServiceInstance<P>]) -> Option<ServiceInstance<P>>;
}

/// Each call the next instance, cycling through all (Curator's `RoundRobinStrategy`, the
/// default).
///
/// ```
/// use curator_discovery::{ProviderStrategy, RoundRobinStrategy, ServiceInstance};
/// let instances: Vec<ServiceInstance> = (0..3)
///     .map(|i| ServiceInstance::builder("api").id(format!("i{i}")).build().unwrap())
///     .collect();
/// let strategy = RoundRobinStrategy::new();
/// let ids: Vec<String> = (0..4)
///     .map(|_| strategy.get_instance(&instances).unwrap().id().to_owned())
///     .collect();
/// assert_eq!(ids, ["i0", "i1", "i2", "i0"]);
/// ```
#[derive(Debug, Default)]
pub struct RoundRobinStrategy {
    next: AtomicUsize,
}

impl RoundRobinStrategy {
    /// Starts with the first instance.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<P: Clone> ProviderStrategy<P> for RoundRobinStrategy {
    fn get_instance(&self, instances: &[ServiceInstance<P>]) -> Option<ServiceInstance<P>> {
        if instances.is_empty() {
            return None;
        }
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        instances.get(index % instances.len()).cloned()
    }
}

/// A random instance each call (Curator's `RandomStrategy`).
///
/// ```
/// use curator_discovery::{ProviderStrategy, RandomStrategy, ServiceInstance};
/// let instances: Vec<ServiceInstance> =
///     vec![ServiceInstance::builder("api").id("only").build().unwrap()];
/// assert_eq!(RandomStrategy::new().get_instance(&instances).unwrap().id(), "only");
/// ```
#[derive(Debug, Default)]
pub struct RandomStrategy {
    _private: (),
}

impl RandomStrategy {
    /// A random strategy.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<P: Clone> ProviderStrategy<P> for RandomStrategy {
    fn get_instance(&self, instances: &[ServiceInstance<P>]) -> Option<ServiceInstance<P>> {
        if instances.is_empty() {
            return None;
        }
        instances
            .get(curator_framework::random::below(instances.len()))
            .cloned()
    }
}

/// Keeps handing out the same instance (by name and id, with its latest data) while it is
/// available; when it goes (or is down, disabled or filtered out), asks the wrapped strategy
/// for another (Curator's `StickyStrategy`).
///
/// ```
/// use curator_discovery::{ProviderStrategy, RoundRobinStrategy, ServiceInstance, StickyStrategy};
/// let instances: Vec<ServiceInstance> = (0..3)
///     .map(|i| ServiceInstance::builder("api").id(format!("i{i}")).build().unwrap())
///     .collect();
/// let sticky = StickyStrategy::new(RoundRobinStrategy::new());
/// assert_eq!(sticky.get_instance(&instances).unwrap().id(), "i0");
/// assert_eq!(sticky.get_instance(&instances).unwrap().id(), "i0");
/// // "i0" goes: the wrapped round robin picks the next.
/// let next = sticky.get_instance(&instances[1..]).unwrap();
/// assert_eq!(next.id(), "i2");
/// assert_eq!(sticky.get_instance(&instances[1..]).unwrap().id(), "i2");
/// assert_eq!(sticky.instance_number(), 2);
/// ```
#[derive(Debug)]
pub struct StickyStrategy<S> {
    inner: S,
    /// The (name, id) stuck to.
    current: Mutex<Option<(String, String)>>,
    instance_number: AtomicUsize,
}

impl<S> StickyStrategy<S> {
    /// Sticks to what `inner` picks.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            current: Mutex::new(None),
            instance_number: AtomicUsize::new(0),
        }
    }

    /// How many times a new instance was picked (Curator's `getInstanceNumber`).
    pub fn instance_number(&self) -> usize {
        self.instance_number.load(Ordering::Relaxed)
    }
}

impl<P: Clone, S: ProviderStrategy<P>> ProviderStrategy<P> for StickyStrategy<S> {
    fn get_instance(&self, instances: &[ServiceInstance<P>]) -> Option<ServiceInstance<P>> {
        let mut current = self.current.lock();
        if let Some((name, id)) = &*current {
            if let Some(instance) = instances.iter().find(|i| i.name() == name && i.id() == id) {
                return Some(instance.clone());
            }
        }
        let picked = self.inner.get_instance(instances);
        *current = picked
            .as_ref()
            .map(|i| (i.name().to_owned(), i.id().to_owned()));
        if picked.is_some() {
            self.instance_number.fetch_add(1, Ordering::Relaxed);
        }
        picked
    }
}
