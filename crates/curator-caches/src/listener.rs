//! [`CuratorCacheListener`]: one listener object assembled from closures, per kind of event.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use curator_framework::listen::Listener;

use crate::event::{CacheError, CacheEvent, ChildData};

type NodeFn = Arc<dyn Fn(&ChildData) + Send + Sync>;
type ChangeFn = Arc<dyn Fn(&ChildData, &ChildData) + Send + Sync>;
type CreateOrChangeFn = Arc<dyn Fn(Option<&ChildData>, &ChildData) + Send + Sync>;
type PlainFn = Arc<dyn Fn() + Send + Sync>;
type AllFn = Arc<dyn Fn(&CacheEvent) + Send + Sync>;
type ErrorFn = Arc<dyn Fn(&CacheError) + Send + Sync>;

/// A cache listener built from closures, as Curator's `CuratorCacheListener.builder()`. It is a
/// [`Listener<CacheEvent>`] object: add it with
/// `cache.listenable().add_listener_object(Arc::new(listener))`, on every cache in this crate
/// that reports [`CacheEvent`]s.
///
/// ```
/// use std::sync::Arc;
/// use curator_caches::CuratorCacheListener;
/// let listener = CuratorCacheListener::builder()
///     .for_creates(|node| println!("created {}", node.path()))
///     .for_changes(|old, node| println!("{} v{} -> v{}", node.path(), old.stat().version, node.stat().version))
///     .for_deletes(|old| println!("deleted {}", old.path()))
///     .for_initialized(|| println!("initial load done"))
///     .build();
/// # async fn demo(cache: curator_caches::CuratorCache, listener: CuratorCacheListener) {
/// let _listening = cache.listenable().add_listener_object(Arc::new(listener));
/// # }
/// ```
#[derive(Clone)]
pub struct CuratorCacheListener {
    creates: Vec<NodeFn>,
    changes: Vec<ChangeFn>,
    creates_and_changes: Vec<CreateOrChangeFn>,
    deletes: Vec<NodeFn>,
    initialized: Vec<PlainFn>,
    all: Vec<AllFn>,
    errors: Vec<ErrorFn>,
    after_initialized: bool,
    seen_initialized: Arc<AtomicBool>,
}

impl fmt::Debug for CuratorCacheListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CuratorCacheListener")
            .field("creates", &self.creates.len())
            .field("changes", &self.changes.len())
            .field("creates_and_changes", &self.creates_and_changes.len())
            .field("deletes", &self.deletes.len())
            .field("initialized", &self.initialized.len())
            .field("all", &self.all.len())
            .field("errors", &self.errors.len())
            .field("after_initialized", &self.after_initialized)
            .finish()
    }
}

impl CuratorCacheListener {
    /// Starts a listener.
    pub fn builder() -> CuratorCacheListenerBuilder {
        CuratorCacheListenerBuilder {
            listener: CuratorCacheListener {
                creates: Vec::new(),
                changes: Vec::new(),
                creates_and_changes: Vec::new(),
                deletes: Vec::new(),
                initialized: Vec::new(),
                all: Vec::new(),
                errors: Vec::new(),
                after_initialized: false,
                seen_initialized: Arc::new(AtomicBool::new(false)),
            },
        }
    }

    /// Hands one event to the matching closures (what the cache's dispatch task calls).
    pub fn event(&self, event: &CacheEvent) {
        if matches!(event, CacheEvent::Initialized) {
            self.seen_initialized.store(true, Ordering::SeqCst);
            self.initialized.iter().for_each(|f| f());
            self.all.iter().for_each(|f| f(event));
            return;
        }
        let silenced = self.after_initialized && !self.seen_initialized.load(Ordering::SeqCst);
        if silenced && !matches!(event, CacheEvent::Error(_)) {
            return;
        }
        match event {
            CacheEvent::Created { node } => {
                self.creates.iter().for_each(|f| f(node));
                self.creates_and_changes.iter().for_each(|f| f(None, node));
            }
            CacheEvent::Changed { old, node } => {
                self.changes.iter().for_each(|f| f(old, node));
                self.creates_and_changes
                    .iter()
                    .for_each(|f| f(Some(old), node));
            }
            CacheEvent::Deleted { old } => self.deletes.iter().for_each(|f| f(old)),
            CacheEvent::Error(error) => self.errors.iter().for_each(|f| f(error)),
            CacheEvent::Initialized => {}
        }
        self.all.iter().for_each(|f| f(event));
    }
}

impl Listener<CacheEvent> for CuratorCacheListener {
    fn on_event(&self, event: CacheEvent) {
        self.event(&event);
    }
}

/// Builds a [`CuratorCacheListener`]; every `for_*` may be called more than once.
#[derive(Debug)]
#[must_use = "a listener builder does nothing until build()"]
pub struct CuratorCacheListenerBuilder {
    listener: CuratorCacheListener,
}

impl CuratorCacheListenerBuilder {
    /// Called with each node that enters the cache.
    pub fn for_creates(mut self, f: impl Fn(&ChildData) + Send + Sync + 'static) -> Self {
        self.listener.creates.push(Arc::new(f));
        self
    }

    /// Called with the old and the new value of each node whose data changes.
    pub fn for_changes(
        mut self,
        f: impl Fn(&ChildData, &ChildData) + Send + Sync + 'static,
    ) -> Self {
        self.listener.changes.push(Arc::new(f));
        self
    }

    /// Called for creates (old value `None`) and changes alike.
    pub fn for_creates_and_changes(
        mut self,
        f: impl Fn(Option<&ChildData>, &ChildData) + Send + Sync + 'static,
    ) -> Self {
        self.listener.creates_and_changes.push(Arc::new(f));
        self
    }

    /// Called with the last cached value of each node that leaves the cache.
    pub fn for_deletes(mut self, f: impl Fn(&ChildData) + Send + Sync + 'static) -> Self {
        self.listener.deletes.push(Arc::new(f));
        self
    }

    /// Called once, when the initial load is done.
    pub fn for_initialized(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.listener.initialized.push(Arc::new(f));
        self
    }

    /// Called with every event, errors and `Initialized` included.
    pub fn for_all(mut self, f: impl Fn(&CacheEvent) + Send + Sync + 'static) -> Self {
        self.listener.all.push(Arc::new(f));
        self
    }

    /// Called with each error the cache reports.
    pub fn for_errors(mut self, f: impl Fn(&CacheError) + Send + Sync + 'static) -> Self {
        self.listener.errors.push(Arc::new(f));
        self
    }

    /// Passes node events on only after `Initialized` (the initial load's `Created` events are
    /// skipped; read the cache when `for_initialized` runs instead). Errors always pass.
    pub fn after_initialized(mut self) -> Self {
        self.listener.after_initialized = true;
        self
    }

    /// The listener.
    pub fn build(self) -> CuratorCacheListener {
        self.listener
    }
}
