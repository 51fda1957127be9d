//! Distributed atomic values: optimistic compare-and-set on one node, optionally promoted to a
//! lock, with exactly-once outcomes across connection loss.

//!
//! Rooms: `update` runs one update (the optimistic attempts, then the promotion to a lock);
//! `markers` is the outcome-marker protocol that makes an update exactly once; `number` holds the
//! numeric forms.

mod markers;
mod number;
mod update;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::recipe::RecipeOptions;
use curator_framework::retry::{RetryPolicy, SharedRetryPolicy};
use curator_framework::{CuratorFramework, Error, Result, paths};

pub use number::{
    AtomicNumber, DistributedAtomicInteger, DistributedAtomicLong, DistributedAtomicNumber,
    DistributedAtomicNumberBuilder,
};
use update::{Attempts, Core};

/// The name prefix of the outcome markers an update leaves under the value's node.
pub const MARKER_PREFIX: &str = "_atomic-";

/// How an atomic operation went: whether it succeeded, the values before and after, and what it
/// took (Curator's `AtomicValue`).
///
/// When `succeeded` is `false`, `post_value` equals `pre_value`: nothing was written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AtomicValue<T> {
    /// Whether the operation was applied (for `get`, always `true`).
    pub succeeded: bool,
    /// The value before the operation (the last value read, when it did not succeed).
    pub pre_value: T,
    /// The value after the operation.
    pub post_value: T,
    /// What the operation took.
    pub stats: AtomicStats,
}

impl<T> AtomicValue<T> {
    pub(crate) fn map<U>(self, mut f: impl FnMut(T) -> U) -> AtomicValue<U> {
        AtomicValue {
            succeeded: self.succeeded,
            pre_value: f(self.pre_value),
            post_value: f(self.post_value),
            stats: self.stats,
        }
    }
}

/// Attempts and time spent by one atomic operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AtomicStats {
    /// Optimistic read-and-write attempts.
    pub optimistic_tries: u32,
    /// Attempts made while holding the promotion lock.
    pub promoted_lock_tries: u32,
    /// Time spent in optimistic attempts.
    pub optimistic_time: Duration,
    /// Time spent acquiring and holding the promotion lock.
    pub promoted_time: Duration,
}

/// What to do when optimistic attempts give up: take an [`InterProcessMutex`](curator_locks::InterProcessMutex) at `lock_path`
/// and try again under it, with its own retry policy (Curator's `PromotedToLock`).
///
/// ```
/// use std::time::Duration;
/// use curator_counters::PromotedToLock;
/// use curator_framework::retry::RetryNTimes;
/// let promoted = PromotedToLock::new("/counters/hits-lock", RetryNTimes::new(10, Duration::from_millis(10)))
///     .with_timeout(Duration::from_secs(5));
/// # let _ = promoted;
/// ```
#[derive(Debug, Clone)]
pub struct PromotedToLock {
    lock_path: String,
    timeout: Option<Duration>,
    retry_policy: SharedRetryPolicy,
}

impl PromotedToLock {
    /// Promotion to the mutex at `lock_path`, retrying under `retry_policy` while holding it.
    pub fn new(lock_path: &str, retry_policy: impl RetryPolicy + 'static) -> Self {
        Self {
            lock_path: lock_path.to_owned(),
            timeout: None,
            retry_policy: SharedRetryPolicy::new(retry_policy),
        }
    }

    /// Gives up (the operation does not succeed) when the lock is not acquired within `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// A value in one node, updated atomically by optimistic compare-and-set (Curator's
/// `DistributedAtomicValue`, on bytes; [`DistributedAtomicLong`] and
/// [`DistributedAtomicInteger`] are the numeric forms).
///
/// An update reads the node and writes the new value at the version it read; when another
/// writer got there first it retries under the retry policy, then optionally under a lock
/// ([`PromotedToLock`]). Results say whether the update was applied and give the values before
/// and after.
///
/// **Exactly once.** A write whose reply is lost with the connection may or may not have been
/// applied, and re-reading the node cannot tell (another client's identical update looks the
/// same). So each instance owns an empty *outcome marker*, `<path>/_atomic-<uuid>`, and each
/// write goes in one transaction with a step of the marker: its creation (the instance's first
/// write), then a `setData` at the version the instance knows (the instance's updates go one
/// at a time). After a connection loss or session expiry the update checks the marker (after a
/// `sync`) to learn what happened. Hence: `Ok` with `succeeded` means applied exactly once;
/// `Ok` without `succeeded` and any `Err` mean not applied, except [`Error::Closed`] (the
/// client closed in the middle of a write: unknown). The marker is deleted by
/// [`flush_markers`](Self::flush_markers), or in the background (a task of the client's) when
/// the last clone of the instance is dropped; a process that crashes leaves one empty marker
/// per instance. Java Curator reads and writes the same node (8 or 4 bytes) and ignores
/// the markers; its own updates do not have this guarantee.
/// [`without_markers`](DistributedAtomicValueBuilder::without_markers) gives Curator's exact
/// behaviour (a plain versioned `setData`; an update whose reply was lost may be applied twice
/// or reported failed although applied).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_counters::DistributedAtomicValue;
/// use curator_framework::retry::RetryNTimes;
/// let value = DistributedAtomicValue::builder(client, "/state/phase", RetryNTimes::new(5, Duration::from_millis(10)))
///     .build()?;
/// let result = value.compare_and_set(b"init", b"running").await?;
/// println!("switched: {}, was {:?}", result.succeeded, result.pre_value);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct DistributedAtomicValue {
    core: Arc<Core>,
}

impl fmt::Debug for DistributedAtomicValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DistributedAtomicValue")
            .field("path", &self.core.path)
            .field("promoted", &self.core.promoted)
            .field("markers", &self.core.markers)
            .finish_non_exhaustive()
    }
}

impl DistributedAtomicValue {
    /// Settings for a value at `path` whose conflicting updates are retried under
    /// `retry_policy` (its `allow_retry` is asked with [`Error::BadVersion`]).
    pub fn builder(
        client: CuratorFramework,
        path: &str,
        retry_policy: impl RetryPolicy + 'static,
    ) -> DistributedAtomicValueBuilder {
        DistributedAtomicValueBuilder {
            client,
            path: path.to_owned(),
            retry_policy: SharedRetryPolicy::new(retry_policy),
            promoted: None,
            markers: true,
            options: RecipeOptions::new(),
        }
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.core.path
    }

    /// The current value (empty when the node does not exist); always `succeeded`.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn get(&self) -> Result<AtomicValue<Vec<u8>>> {
        let bytes = match self.core.client.get_data().for_path(&self.core.path).await {
            Ok((bytes, _)) => bytes,
            Err(Error::NoNode) => Vec::new(),
            Err(error) => return Err(error),
        };
        Ok(AtomicValue {
            succeeded: true,
            pre_value: bytes.clone(),
            post_value: bytes,
            stats: AtomicStats::default(),
        })
    }

    /// Sets `new` if the current value equals `expected`; one attempt, no retry.
    ///
    /// # Errors
    /// Connection errors (nothing applied; see the type's docs for [`Error::Closed`]).
    pub async fn compare_and_set(
        &self,
        expected: &[u8],
        new: &[u8],
    ) -> Result<AtomicValue<Vec<u8>>> {
        let new = new.to_vec();
        self.core
            .update(
                |current| Ok((current == expected).then(|| new.clone())),
                Attempts::Once,
            )
            .await
    }

    /// Sets `new` whatever the value is, by optimistic attempts under the retry policy (and the
    /// lock, if promoted); `succeeded` is `false` when they all gave up.
    ///
    /// # Errors
    /// As [`compare_and_set`](Self::compare_and_set).
    pub async fn try_set(&self, new: &[u8]) -> Result<AtomicValue<Vec<u8>>> {
        let new = new.to_vec();
        self.core
            .update(|_| Ok(Some(new.clone())), Attempts::UnderPolicy)
            .await
    }

    /// Writes `new` unconditionally (creating the node if needed), without the version check.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn force_set(&self, new: &[u8]) -> Result<()> {
        self.core.force_set(new).await
    }

    /// Creates the node with `initial` if it does not exist; `false` when it did.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn initialize(&self, initial: &[u8]) -> Result<bool> {
        self.core.initialize(initial).await
    }

    /// Applies `f` to the current value (empty when the node is missing) atomically; `f`
    /// returning `None` leaves the value alone (`succeeded` is then `false`). `f` may run once
    /// per attempt.
    ///
    /// # Errors
    /// Connection errors, and `f`'s own errors (nothing applied).
    pub async fn update(
        &self,
        f: impl FnMut(&[u8]) -> Result<Option<Vec<u8>>>,
    ) -> Result<AtomicValue<Vec<u8>>> {
        self.core.update(f, Attempts::UnderPolicy).await
    }

    /// Deletes this instance's outcome marker, if any (also done in the background
    /// when the last clone is dropped, unless the client is closed first: a short-lived process
    /// calls this before closing its client).
    ///
    /// # Errors
    /// Connection errors (the marker is kept for the next try).
    pub async fn flush_markers(&self) -> Result<()> {
        self.core.flush().await
    }
}

/// Settings of a [`DistributedAtomicValue`] (and, through
/// [`DistributedAtomicNumberBuilder`], of the numeric forms).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_counters::{DistributedAtomicValue, PromotedToLock};
/// use curator_framework::retry::RetryNTimes;
/// let value = DistributedAtomicValue::builder(client, "/state/phase", RetryNTimes::new(5, Duration::from_millis(10)))
///     .promoted_to_lock(PromotedToLock::new("/state/phase-lock", RetryNTimes::new(3, Duration::ZERO)))
///     .build()?;
/// # let _ = value;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until built"]
pub struct DistributedAtomicValueBuilder {
    client: CuratorFramework,
    path: String,
    retry_policy: SharedRetryPolicy,
    promoted: Option<PromotedToLock>,
    markers: bool,
    options: RecipeOptions,
}

impl DistributedAtomicValueBuilder {
    /// The value's name (default: its path): what its logs and unhandled errors say.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// use curator_framework::retry::RetryNTimes;
    /// let hits = curator_counters::DistributedAtomicValue::builder(client, "/hits/page-17", RetryNTimes::new(5, Duration::ZERO))
    ///     .metrics_name("page-hits")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// Falls back to a lock after the optimistic attempts give up.
    pub fn promoted_to_lock(mut self, promoted: PromotedToLock) -> Self {
        self.promoted = Some(promoted);
        self
    }

    /// Writes like Java Curator: no outcome markers, so no exactly-once guarantee across
    /// connection loss (see [`DistributedAtomicValue`]).
    pub fn without_markers(mut self) -> Self {
        self.markers = false;
        self
    }

    /// The value.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path of the value or of the promotion lock.
    pub fn build(self) -> Result<DistributedAtomicValue> {
        paths::validate(&self.path)?;
        if let Some(promoted) = &self.promoted {
            paths::validate(&promoted.lock_path)?;
        }
        Ok(DistributedAtomicValue {
            core: Arc::new(Core::new(
                self.client,
                self.path,
                self.retry_policy,
                self.promoted,
                self.markers,
                &self.options,
            )),
        })
    }
}
