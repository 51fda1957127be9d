//! What caches hold ([`ChildData`]) and what they report ([`CacheEvent`], [`CacheError`]).

use std::fmt;
use std::sync::Arc;

use curator_framework::{Stat, paths};

/// One cached node: its path, its stat and (unless the cache was built without data) its data.
///
/// Cloning is cheap: the path and the data are shared, not copied.
///
/// ```
/// use curator_caches::ChildData;
/// use curator_framework::{Stat, paths};
/// let node = ChildData::new("/config/a", Stat::default(), Some(b"v1".to_vec()));
/// assert_eq!(node.path(), "/config/a");
/// assert_eq!(node.name(), "a");
/// assert_eq!(node.data(), Some(&b"v1"[..]));
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ChildData {
    path: Arc<str>,
    stat: Stat,
    data: Option<Arc<[u8]>>,
}

impl ChildData {
    /// A node value (mostly for tests and for callers building their own views).
    pub fn new(path: impl Into<Arc<str>>, stat: Stat, data: Option<Vec<u8>>) -> Self {
        Self {
            path: path.into(),
            stat,
            data: data.map(Arc::from),
        }
    }

    pub(crate) fn shared(path: Arc<str>, stat: Stat, data: Option<Arc<[u8]>>) -> Self {
        Self { path, stat, data }
    }

    /// The node's full path (without the client's namespace).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The last component of the path (`"/"` for the root).
    pub fn name(&self) -> &str {
        match &*self.path {
            "/" => "/",
            path => paths::node_name(path),
        }
    }

    /// The node's stat as of the read that produced this value.
    pub fn stat(&self) -> &Stat {
        &self.stat
    }

    /// The node's data; `None` when the cache keeps no data.
    pub fn data(&self) -> Option<&[u8]> {
        self.data.as_deref()
    }
}

// Payloads are never printed: only their length.
impl fmt::Debug for ChildData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildData")
            .field("path", &self.path)
            .field("version", &self.stat.version)
            .field("mzxid", &self.stat.mzxid)
            .field("data_len", &self.data.as_ref().map(|d| d.len()))
            .finish()
    }
}

/// A change a cache saw, in the order the server applied it.
///
/// For each path the events form a valid history: `Created`, then `Changed`s with increasing
/// `mzxid`, then `Deleted`, then possibly `Created` again. Replaying every node event onto an
/// empty map (insert on `Created`/`Changed`, remove on `Deleted`) gives the cache's content.
///
/// Curator's names: `Created` is `NODE_CREATED` (`NODE_ADDED`, `CHILD_ADDED`), `Changed` is
/// `NODE_CHANGED` (`NODE_UPDATED`, `CHILD_UPDATED`), `Deleted` is `NODE_DELETED`
/// (`NODE_REMOVED`, `CHILD_REMOVED`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheEvent {
    /// A node entered the cache.
    Created {
        /// The node as read.
        node: ChildData,
    },
    /// A node's data changed (its `mzxid` moved on).
    Changed {
        /// The node as it was cached.
        old: ChildData,
        /// The node as read now.
        node: ChildData,
    },
    /// A node left the cache (deleted at the server, or found gone after a reconnect).
    Deleted {
        /// The node as it was cached.
        old: ChildData,
    },
    /// The initial load finished; sent exactly once per cache, after the `Created` events of
    /// the nodes found by the initial load.
    Initialized,
    /// Something the cache could not do (a read it could not make, a children list over the
    /// limit). The cache keeps running.
    Error(CacheError),
}

impl CacheEvent {
    /// The path a node event is about (`None` for `Initialized` and errors without a path).
    pub fn path(&self) -> Option<&str> {
        match self {
            CacheEvent::Created { node } | CacheEvent::Changed { node, .. } => Some(node.path()),
            CacheEvent::Deleted { old } => Some(old.path()),
            CacheEvent::Initialized => None,
            CacheEvent::Error(error) => error.path(),
        }
    }
}

/// Why a cache could not follow part of its tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// A read failed with an error the cache cannot recover from by re-reading (no permission,
    /// for example). The node (or its children) stays as last known.
    #[error("reading {path} failed: {error}")]
    Read {
        /// The node.
        path: String,
        /// The framework's error.
        error: curator_framework::Error,
    },
    /// A node has more children than the cache's limit (see `max_children` on the builders);
    /// they are not listed, so the cache does not follow them. ZooKeeper sends a children list
    /// in one reply; Java clients refuse replies past their `jute.maxbuffer` (1 MiB by
    /// default), this framework's client only past its
    /// [`max_listing_bytes`](curator_framework::CuratorFrameworkBuilder::max_listing_bytes)
    /// (reported as a [`Read`](CacheError::Read) error with
    /// [`Error::ResponseTooLarge`](curator_framework::Error::ResponseTooLarge)).
    #[error("{path} has {children} children, more than the limit of {limit}")]
    TooManyChildren {
        /// The node.
        path: String,
        /// How many children it has.
        children: usize,
        /// The cache's limit.
        limit: usize,
    },
}

impl CacheError {
    /// The node the error is about.
    pub fn path(&self) -> Option<&str> {
        match self {
            CacheError::Read { path, .. } | CacheError::TooManyChildren { path, .. } => Some(path),
        }
    }
}
