//! [`TreeCacheSelector`]: which nodes a tree cache descends into and which it keeps.

use std::fmt;
use std::sync::Arc;

/// Decides, per path, what a [`TreeCache`](crate::TreeCache) follows (Curator's
/// `TreeCacheSelector`). Both methods are called on the cache's own task, often: keep them cheap
/// and free of I/O.
///
/// ```
/// use curator_caches::TreeCacheSelector;
/// struct SkipLocks;
/// impl TreeCacheSelector for SkipLocks {
///     fn trace_children(&self, _path: &str) -> bool { true }
///     fn accept_child(&self, path: &str) -> bool { !path.ends_with("/locks") }
/// }
/// assert!(!SkipLocks.accept_child("/app/locks"));
/// ```
pub trait TreeCacheSelector: Send + Sync + 'static {
    /// Whether to list (and watch) the children of the cached node at `path`.
    fn trace_children(&self, path: &str) -> bool;
    /// Whether to cache the node at `path` (a child of a traced node). A node not accepted is
    /// not read, and neither is anything below it.
    fn accept_child(&self, path: &str) -> bool;
}

/// A selector made of two closures.
///
/// ```
/// use curator_caches::FnSelector;
/// let selector = FnSelector::new(|_path| true, |path| !path.contains("/tmp"));
/// ```
#[derive(Clone)]
pub struct FnSelector {
    trace: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    accept: Arc<dyn Fn(&str) -> bool + Send + Sync>,
}

impl FnSelector {
    /// `trace` answers [`TreeCacheSelector::trace_children`], `accept` answers
    /// [`TreeCacheSelector::accept_child`].
    pub fn new(
        trace: impl Fn(&str) -> bool + Send + Sync + 'static,
        accept: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self {
            trace: Arc::new(trace),
            accept: Arc::new(accept),
        }
    }
}

impl fmt::Debug for FnSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnSelector").finish_non_exhaustive()
    }
}

impl TreeCacheSelector for FnSelector {
    fn trace_children(&self, path: &str) -> bool {
        (self.trace)(path)
    }

    fn accept_child(&self, path: &str) -> bool {
        (self.accept)(path)
    }
}
