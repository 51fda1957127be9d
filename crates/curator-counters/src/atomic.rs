//! Distributed atomic values: optimistic compare-and-set on one node, optionally promoted to a
//! lock, with exactly-once outcomes across connection loss.

use std::fmt;
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::ops::transaction::TransactionOp;
use curator_framework::retry::{RetryPolicy, SharedRetryPolicy};
use curator_framework::{CreateMode, CuratorFramework, Error, Result, Stat, paths};
use curator_locks::InterProcessMutex;
use futures::future::{OptionFuture, join_all};
use parking_lot::Mutex;
use tokio::time::Instant;

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
    fn map<U>(self, mut f: impl FnMut(T) -> U) -> AtomicValue<U> {
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

/// What to do when optimistic attempts give up: take an [`InterProcessMutex`] at `lock_path`
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
            retry_policy: Arc::new(retry_policy),
        }
    }

    /// Gives up (the operation does not succeed) when the lock is not acquired within `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// An update's outcome that a lost reply left unknown: `marker` exists if it was applied.
#[derive(Debug)]
struct Unresolved {
    marker: String,
    pre: Vec<u8>,
    post: Vec<u8>,
    /// Older markers the write deleted if it was applied.
    stale: Vec<String>,
}

enum Attempt {
    Applied { pre: Vec<u8>, post: Vec<u8> },
    Rejected { current: Vec<u8> },
    Conflict { current: Vec<u8> },
}

enum Phase {
    Done { pre: Vec<u8>, post: Vec<u8> },
    Rejected { current: Vec<u8> },
    GaveUp { current: Vec<u8> },
}

struct Core {
    client: CuratorFramework,
    path: String,
    retry_policy: SharedRetryPolicy,
    promoted: Option<PromotedToLock>,
    markers: bool,
    /// Markers of applied updates, deleted with the next request.
    pending: Mutex<Vec<String>>,
}

impl Drop for Core {
    fn drop(&mut self) {
        let pending = std::mem::take(&mut *self.pending.lock());
        if pending.is_empty() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let client = self.client.clone();
            runtime.spawn(async move {
                for marker in pending {
                    let _ = client.delete().quietly().for_path(&marker).await;
                }
            });
        }
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
/// same). So each write goes in one transaction with the creation of an empty *outcome marker*,
/// `<path>/_atomic-<uuid>`: after a connection loss or session expiry the update checks the
/// marker (after a `sync`) to learn what happened. Hence: `Ok` with `succeeded` means applied
/// exactly once; `Ok` without `succeeded` and any `Err` mean not applied, except
/// [`Error::Closed`] (the client closed in the middle of a write: unknown). A marker is deleted
/// in the same transaction as the instance's next write (an update stays one write), by
/// [`flush_markers`](Self::flush_markers), or in the background when the instance is dropped;
/// a process that crashes leaves at most one empty marker per instance. Java Curator
/// reads and writes the same node (8 or 4 bytes) and ignores the markers; its own updates do
/// not have this guarantee. [`without_markers`](Self::without_markers) gives Curator's exact
/// behaviour (a plain versioned `setData`; an update whose reply was lost may be applied twice
/// or reported failed although applied).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_counters::DistributedAtomicValue;
/// use curator_framework::retry::RetryNTimes;
/// let value = DistributedAtomicValue::new(client, "/state/phase", RetryNTimes::new(5, Duration::from_millis(10)))?;
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
    /// A value at `path`; conflicting updates are retried under `retry_policy` (its
    /// `allow_retry` is asked with [`Error::BadVersion`]).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path.
    pub fn new(
        client: CuratorFramework,
        path: &str,
        retry_policy: impl RetryPolicy + 'static,
    ) -> Result<Self> {
        paths::validate(path)?;
        Ok(Self {
            core: Arc::new(Core {
                client,
                path: path.to_owned(),
                retry_policy: Arc::new(retry_policy),
                promoted: None,
                markers: true,
                pending: Mutex::new(Vec::new()),
            }),
        })
    }

    /// Falls back to a lock after optimistic attempts give up.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad lock path.
    pub fn promoted_to_lock(self, promoted: PromotedToLock) -> Result<Self> {
        paths::validate(&promoted.lock_path)?;
        Ok(self.rebuild(|core| core.promoted = Some(promoted)))
    }

    /// Writes like Java Curator: no outcome markers, so no exactly-once guarantee across
    /// connection loss (see the type's docs).
    pub fn without_markers(self) -> Self {
        self.rebuild(|core| core.markers = false)
    }

    fn rebuild(self, change: impl FnOnce(&mut Core)) -> Self {
        let old = &self.core;
        let mut core = Core {
            client: old.client.clone(),
            path: old.path.clone(),
            retry_policy: Arc::clone(&old.retry_policy),
            promoted: old.promoted.clone(),
            markers: old.markers,
            pending: Mutex::new(std::mem::take(&mut *old.pending.lock())),
        };
        change(&mut core);
        Self {
            core: Arc::new(core),
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
                true,
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
        self.core.update(|_| Ok(Some(new.clone())), false).await
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
        self.core.update(f, false).await
    }

    /// Deletes this instance's outstanding outcome marker, if any (also done in the background
    /// when the last clone is dropped).
    ///
    /// # Errors
    /// Connection errors (the marker is kept for the next try).
    pub async fn flush_markers(&self) -> Result<()> {
        self.core.flush().await
    }
}

impl Core {
    async fn update(
        &self,
        mut compute: impl FnMut(&[u8]) -> Result<Option<Vec<u8>>>,
        single_attempt: bool,
    ) -> Result<AtomicValue<Vec<u8>>> {
        let mut stats = AtomicStats::default();
        let started = Instant::now();
        let mut unresolved = None;
        let mut phase = self
            .phase(
                &mut compute,
                &*self.retry_policy,
                single_attempt,
                &mut stats.optimistic_tries,
                &mut unresolved,
            )
            .await?;
        stats.optimistic_time = started.elapsed();
        if let (Phase::GaveUp { .. }, Some(promoted), false) =
            (&phase, &self.promoted, single_attempt)
        {
            let promoted_start = Instant::now();
            let mutex = InterProcessMutex::new(self.client.clone(), &promoted.lock_path)?;
            let guard = match promoted.timeout {
                Some(timeout) => mutex.acquire_timeout(timeout).await?,
                None => Some(mutex.acquire().await?),
            };
            if let Some(guard) = guard {
                let result = self
                    .phase(
                        &mut compute,
                        &*promoted.retry_policy,
                        false,
                        &mut stats.promoted_lock_tries,
                        &mut unresolved,
                    )
                    .await;
                if let Err(error) = guard.release().await {
                    tracing::debug!(%error, "releasing the promotion lock failed; it is released in the background");
                }
                phase = result?;
            }
            stats.promoted_time = promoted_start.elapsed();
        }
        Ok(match phase {
            Phase::Done { pre, post } => AtomicValue {
                succeeded: true,
                pre_value: pre,
                post_value: post,
                stats,
            },
            Phase::Rejected { current } | Phase::GaveUp { current } => AtomicValue {
                succeeded: false,
                pre_value: current.clone(),
                post_value: current,
                stats,
            },
        })
    }

    async fn phase(
        &self,
        compute: &mut impl FnMut(&[u8]) -> Result<Option<Vec<u8>>>,
        policy: &dyn RetryPolicy,
        single_attempt: bool,
        tries: &mut u32,
        unresolved: &mut Option<Unresolved>,
    ) -> Result<Phase> {
        let started = Instant::now();
        let mut retry_count = 0;
        loop {
            *tries += 1;
            match self.attempt(compute, unresolved).await? {
                Attempt::Applied { pre, post } => return Ok(Phase::Done { pre, post }),
                // (An earlier unresolved write was checked before this attempt's read.)
                Attempt::Rejected { current } => return Ok(Phase::Rejected { current }),
                Attempt::Conflict { current } => {
                    let sleep = if single_attempt {
                        None
                    } else {
                        policy.allow_retry(retry_count, started.elapsed(), &Error::BadVersion)
                    };
                    let Some(sleep) = sleep else {
                        return Ok(match self.settle(unresolved).await? {
                            Some(done) => done,
                            None => Phase::GaveUp { current },
                        });
                    };
                    retry_count += 1;
                    if !sleep.is_zero() {
                        tokio::time::sleep(sleep).await;
                    }
                }
            }
        }
    }

    /// Before giving up: an update whose outcome is still unknown may have been applied.
    async fn settle(&self, unresolved: &mut Option<Unresolved>) -> Result<Option<Phase>> {
        let Some(open) = unresolved.take() else {
            return Ok(None);
        };
        Ok(self.resolve(&open.marker).await?.then(|| {
            self.applied(open.marker, &open.stale);
            Phase::Done {
                pre: open.pre,
                post: open.post,
            }
        }))
    }

    /// One read-and-write. The check of an unresolved marker and the read go out together
    /// (ZooKeeper answers a session's requests in order).
    async fn attempt(
        &self,
        compute: &mut impl FnMut(&[u8]) -> Result<Option<Vec<u8>>>,
        unresolved: &mut Option<Unresolved>,
    ) -> Result<Attempt> {
        let check: OptionFuture<_> = unresolved
            .as_ref()
            .map(|open| {
                self.client
                    .check_exists()
                    .for_path(&open.marker)
                    .into_future()
            })
            .into();
        let read = self.client.get_data().for_path(&self.path).into_future();
        let (checked, read) = futures::join!(check, read);
        if let Some(checked) = checked {
            let open = unresolved
                .take()
                .expect("a check is sent only for an open outcome");
            let applied = match checked {
                Ok(stat) => stat.is_some(),
                Err(_) => self.resolve(&open.marker).await?,
            };
            if applied {
                self.applied(open.marker, &open.stale);
                return Ok(Attempt::Applied {
                    pre: open.pre,
                    post: open.post,
                });
            }
        }
        let (current, stat) = match read {
            Ok((bytes, stat)) => (bytes, Some(stat)),
            Err(Error::NoNode) => (Vec::new(), None),
            Err(error) => return Err(error),
        };
        let Some(new) = compute(&current)? else {
            return Ok(Attempt::Rejected { current });
        };
        if self.markers {
            self.write_with_marker(current, stat, new, unresolved).await
        } else {
            self.write_plain(current, stat, new).await
        }
    }

    async fn write_with_marker(
        &self,
        current: Vec<u8>,
        stat: Option<Stat>,
        new: Vec<u8>,
        unresolved: &mut Option<Unresolved>,
    ) -> Result<Attempt> {
        let marker = paths::join(
            &self.path,
            &format!("{MARKER_PREFIX}{}", uuid::Uuid::new_v4()),
        );
        let write = match stat {
            Some(stat) => TransactionOp::set_data(&self.path, &new).with_version(stat.version),
            None => {
                self.ensure_parent().await?;
                TransactionOp::create(&self.path, &new)
            }
        };
        // The markers of earlier applied updates go in the same transaction: one write per
        // update, as without markers.
        let stale: Vec<String> = self.pending.lock().clone();
        let mut transaction = self
            .client
            .transaction()
            .op(write)
            .op(TransactionOp::create(&marker, []));
        for old in &stale {
            transaction = transaction.delete(old);
        }
        let committed = transaction.commit().await;
        match committed {
            Ok(_) => {
                self.applied(marker, &stale);
                Ok(Attempt::Applied {
                    pre: current,
                    post: new,
                })
            }
            Err(Error::Transaction { index, cause }) if index >= 2 && *cause == Error::NoNode => {
                // An old marker is already gone (someone cleaned up): forget them and go again;
                // nothing was applied, our own marker included.
                self.pending.lock().retain(|m| !stale.contains(m));
                Ok(Attempt::Conflict { current })
            }
            Err(Error::Transaction { cause, .. })
                if matches!(
                    *cause,
                    Error::BadVersion | Error::NodeExists | Error::NoNode
                ) =>
            {
                // Someone else wrote first, or a retry of ours met our own applied write: the
                // next attempt checks the marker together with its read.
                *unresolved = Some(Unresolved {
                    marker,
                    pre: current.clone(),
                    post: new,
                    stale,
                });
                Ok(Attempt::Conflict { current })
            }
            Err(error) if error.is_retried() => {
                if self.resolve(&marker).await? {
                    self.applied(marker, &stale);
                    Ok(Attempt::Applied {
                        pre: current,
                        post: new,
                    })
                } else {
                    Err(error)
                }
            }
            Err(error) => Err(error),
        }
    }

    async fn write_plain(
        &self,
        current: Vec<u8>,
        stat: Option<Stat>,
        new: Vec<u8>,
    ) -> Result<Attempt> {
        let written = match stat {
            Some(stat) => self
                .client
                .set_data()
                .with_version(stat.version)
                .for_path(&self.path, &new)
                .await
                .map(drop),
            None => self
                .client
                .create()
                .creating_parent_containers_if_needed()
                .for_path(&self.path, &new)
                .await
                .map(drop),
        };
        match written {
            Ok(()) => Ok(Attempt::Applied {
                pre: current,
                post: new,
            }),
            Err(Error::BadVersion | Error::NodeExists | Error::NoNode) => {
                Ok(Attempt::Conflict { current })
            }
            Err(error) => Err(error),
        }
    }

    /// Whether `marker` exists, asked after a `sync` and retried through connection trouble and
    /// session expiry until the server answers (or the client closes).
    async fn resolve(&self, marker: &str) -> Result<bool> {
        let mut backoff = Duration::from_millis(20);
        loop {
            let sync = self.client.sync().for_path(&self.path).into_future();
            let exists = self.client.check_exists().for_path(marker).into_future();
            let (synced, exists) = futures::join!(sync, exists);
            match (synced, exists) {
                (Ok(_), Ok(stat)) => return Ok(stat.is_some()),
                (_, Err(Error::Closed)) | (Err(Error::Closed), _) => return Err(Error::Closed),
                (Err(error), _) | (_, Err(error)) if !error.is_retried() => return Err(error),
                _ => {}
            }
            tracing::debug!(marker, "outcome of an atomic update unknown; asking again");
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
    }

    /// Bookkeeping after an applied write: its marker is now pending, the ones it deleted not.
    fn applied(&self, marker: String, deleted: &[String]) {
        let mut pending = self.pending.lock();
        pending.retain(|m| !deleted.contains(m));
        pending.push(marker);
    }

    fn forget_deleted(&self, sent: &[String], results: Vec<Result<()>>) {
        let done: Vec<&String> = sent
            .iter()
            .zip(results)
            .filter(|(_, result)| matches!(result, Ok(()) | Err(Error::NoNode)))
            .map(|(marker, _)| marker)
            .collect();
        if !done.is_empty() {
            self.pending.lock().retain(|marker| !done.contains(&marker));
        }
    }

    async fn flush(&self) -> Result<()> {
        let to_delete: Vec<String> = self.pending.lock().clone();
        let results = join_all(
            to_delete
                .iter()
                .map(|marker| self.client.delete().for_path(marker).into_future())
                .collect::<Vec<_>>(),
        )
        .await;
        let failure = results.iter().find_map(|r| match r {
            Err(error) if *error != Error::NoNode => Some(error.clone()),
            _ => None,
        });
        self.forget_deleted(&to_delete, results);
        failure.map_or(Ok(()), Err)
    }

    async fn ensure_parent(&self) -> Result<()> {
        let Some(parent) = paths::parent(&self.path).filter(|p| *p != "/") else {
            return Ok(());
        };
        match self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(CreateMode::Container)
            .for_path(parent, [])
            .await
        {
            Ok(_) | Err(Error::NodeExists) => Ok(()),
            Err(error) => Err(error),
        }
    }

    async fn force_set(&self, new: &[u8]) -> Result<()> {
        match self.client.set_data().for_path(&self.path, new).await {
            Ok(_) => Ok(()),
            Err(Error::NoNode) => self
                .client
                .create()
                .creating_parent_containers_if_needed()
                .or_set_data()
                .for_path(&self.path, new)
                .await
                .map(drop),
            Err(error) => Err(error),
        }
    }

    async fn initialize(&self, initial: &[u8]) -> Result<bool> {
        match self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .idempotent()
            .for_path(&self.path, initial)
            .await
        {
            Ok(_) => Ok(true),
            Err(Error::NodeExists) => Ok(false),
            Err(error) => Err(error),
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

/// The numbers a [`DistributedAtomicNumber`] can hold: `i64` (8 bytes, Curator's
/// `DistributedAtomicLong`) and `i32` (4 bytes, `DistributedAtomicInteger`), big-endian. Empty
/// data and a missing node read as 0; arithmetic wraps on overflow, as in Java.
pub trait AtomicNumber:
    sealed::Sealed + Copy + Eq + fmt::Debug + fmt::Display + Send + Sync + 'static
{
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// `self + other`, wrapping.
    fn wrapping_add(self, other: Self) -> Self;
    /// `-self`, wrapping.
    fn wrapping_neg(self) -> Self;
    /// The big-endian bytes.
    fn to_bytes(self) -> Vec<u8>;
    /// The number in node data.
    ///
    /// # Errors
    /// [`Error::Decode`] for data of the wrong length.
    fn from_bytes(bytes: &[u8]) -> Result<Self>;
}

macro_rules! atomic_number {
    ($t:ty, $codec:ident) => {
        impl AtomicNumber for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            fn wrapping_add(self, other: Self) -> Self {
                <$t>::wrapping_add(self, other)
            }
            fn wrapping_neg(self) -> Self {
                <$t>::wrapping_neg(self)
            }
            fn to_bytes(self) -> Vec<u8> {
                self.to_be_bytes().to_vec()
            }
            fn from_bytes(bytes: &[u8]) -> Result<Self> {
                use curator_framework::codec::Codec;
                curator_framework::codec::$codec.decode(bytes)
            }
        }
    };
}

atomic_number!(i64, BigEndianI64);
atomic_number!(i32, BigEndianI32);

/// A distributed atomic number: [`DistributedAtomicLong`] or [`DistributedAtomicInteger`].
/// Everything [`DistributedAtomicValue`] says (exactly-once outcomes, promotion to a lock)
/// holds here.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_counters::{DistributedAtomicLong, PromotedToLock};
/// use curator_framework::retry::RetryNTimes;
/// let hits = DistributedAtomicLong::new(client, "/counters/hits", RetryNTimes::new(10, Duration::from_millis(5)))?
///     .promoted_to_lock(PromotedToLock::new("/counters/hits-lock", RetryNTimes::new(3, Duration::ZERO)))?;
/// let result = hits.increment().await?;
/// if result.succeeded {
///     println!("{} -> {}", result.pre_value, result.post_value);
/// }
/// # Ok(()) }
/// ```
pub struct DistributedAtomicNumber<N> {
    value: DistributedAtomicValue,
    _number: std::marker::PhantomData<fn() -> N>,
}

/// A distributed `i64` in 8 big-endian bytes (Curator's `DistributedAtomicLong`).
pub type DistributedAtomicLong = DistributedAtomicNumber<i64>;

/// A distributed `i32` in 4 big-endian bytes (Curator's `DistributedAtomicInteger`).
pub type DistributedAtomicInteger = DistributedAtomicNumber<i32>;

impl<N> Clone for DistributedAtomicNumber<N> {
    fn clone(&self) -> Self {
        Self {
            value: self.value.clone(),
            _number: std::marker::PhantomData,
        }
    }
}

impl<N> fmt::Debug for DistributedAtomicNumber<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DistributedAtomicNumber")
            .field("number", &std::any::type_name::<N>())
            .field("value", &self.value)
            .finish()
    }
}

impl<N: AtomicNumber> DistributedAtomicNumber<N> {
    /// A number at `path`; see [`DistributedAtomicValue::new`].
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path.
    pub fn new(
        client: CuratorFramework,
        path: &str,
        retry_policy: impl RetryPolicy + 'static,
    ) -> Result<Self> {
        Ok(Self::wrap(DistributedAtomicValue::new(
            client,
            path,
            retry_policy,
        )?))
    }

    fn wrap(value: DistributedAtomicValue) -> Self {
        Self {
            value,
            _number: std::marker::PhantomData,
        }
    }

    /// See [`DistributedAtomicValue::promoted_to_lock`].
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad lock path.
    pub fn promoted_to_lock(self, promoted: PromotedToLock) -> Result<Self> {
        Ok(Self::wrap(self.value.promoted_to_lock(promoted)?))
    }

    /// See [`DistributedAtomicValue::without_markers`].
    pub fn without_markers(self) -> Self {
        Self::wrap(self.value.without_markers())
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        self.value.path()
    }

    /// The bytes-level view of the same node.
    pub fn as_value(&self) -> &DistributedAtomicValue {
        &self.value
    }

    /// The current number (0 when the node is missing).
    ///
    /// # Errors
    /// Connection errors; [`Error::Decode`] when the node holds data of the wrong length.
    pub async fn get(&self) -> Result<AtomicValue<N>> {
        let raw = self.value.get().await?;
        let value = self.decode(&raw.post_value)?;
        Ok(raw.map(|_| value))
    }

    /// Adds 1.
    ///
    /// # Errors
    /// See [`add`](Self::add).
    pub async fn increment(&self) -> Result<AtomicValue<N>> {
        self.add(N::ONE).await
    }

    /// Subtracts 1.
    ///
    /// # Errors
    /// See [`add`](Self::add).
    pub async fn decrement(&self) -> Result<AtomicValue<N>> {
        self.add(N::ONE.wrapping_neg()).await
    }

    /// Subtracts `delta`.
    ///
    /// # Errors
    /// See [`add`](Self::add).
    pub async fn subtract(&self, delta: N) -> Result<AtomicValue<N>> {
        self.add(delta.wrapping_neg()).await
    }

    /// Adds `delta` (wrapping on overflow, as Java does); `succeeded` is `false` when every
    /// attempt met a concurrent write and the retry policy (and the lock, if promoted) gave up.
    ///
    /// # Errors
    /// Connection errors (nothing applied; see [`DistributedAtomicValue`] for
    /// [`Error::Closed`]); [`Error::Decode`] when the node holds data of the wrong length.
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the update applied or not.
    pub async fn add(&self, delta: N) -> Result<AtomicValue<N>> {
        let path = self.value.path().to_owned();
        let raw = self
            .value
            .core
            .update(
                |current| {
                    let current = decode::<N>(&path, current)?;
                    Ok(Some(current.wrapping_add(delta).to_bytes()))
                },
                false,
            )
            .await?;
        self.decode_result(raw)
    }

    /// Sets `new` if the number equals `expected`; one attempt.
    ///
    /// # Errors
    /// As [`add`](Self::add).
    pub async fn compare_and_set(&self, expected: N, new: N) -> Result<AtomicValue<N>> {
        let path = self.value.path().to_owned();
        let raw = self
            .value
            .core
            .update(
                |current| Ok((decode::<N>(&path, current)? == expected).then(|| new.to_bytes())),
                true,
            )
            .await?;
        self.decode_result(raw)
    }

    /// Sets `new` whatever the number is, by optimistic attempts.
    ///
    /// # Errors
    /// As [`add`](Self::add).
    pub async fn try_set(&self, new: N) -> Result<AtomicValue<N>> {
        let path = self.value.path().to_owned();
        let raw = self
            .value
            .core
            .update(
                |current| {
                    decode::<N>(&path, current)?;
                    Ok(Some(new.to_bytes()))
                },
                false,
            )
            .await?;
        self.decode_result(raw)
    }

    /// Writes `new` unconditionally.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn force_set(&self, new: N) -> Result<()> {
        self.value.force_set(&new.to_bytes()).await
    }

    /// Creates the node with `initial` if it does not exist; `false` when it did.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn initialize(&self, initial: N) -> Result<bool> {
        self.value.initialize(&initial.to_bytes()).await
    }

    /// See [`DistributedAtomicValue::flush_markers`].
    ///
    /// # Errors
    /// Connection errors.
    pub async fn flush_markers(&self) -> Result<()> {
        self.value.flush_markers().await
    }

    fn decode(&self, bytes: &[u8]) -> Result<N> {
        decode(self.value.path(), bytes)
    }

    fn decode_result(&self, raw: AtomicValue<Vec<u8>>) -> Result<AtomicValue<N>> {
        let pre = self.decode(&raw.pre_value)?;
        let post = self.decode(&raw.post_value)?;
        Ok(AtomicValue {
            succeeded: raw.succeeded,
            pre_value: pre,
            post_value: post,
            stats: raw.stats,
        })
    }
}

fn decode<N: AtomicNumber>(path: &str, bytes: &[u8]) -> Result<N> {
    N::from_bytes(bytes).map_err(|error| curator_framework::codec::with_path(error, path))
}
