//! `InterProcessSemaphoreV2` and `InterProcessSemaphoreMutex`: Curator's counting semaphore.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::recipe::{Hold, RecipeCore, RecipeOptions};
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};
use tokio::time::Instant;

use crate::holding::Holding;
use crate::lock_delay::{Admitted, LockDelay, Rule};
use crate::mutex::InterProcessMutex;

const LEASE_NAME: &str = "lease-";

/// Where a semaphore's number of leases comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MaxLeases {
    /// A fixed number.
    Fixed(u32),
    /// The 4-byte big-endian integer in a node (Curator's `SharedCount` encoding), read anew each
    /// time a waiter checks; changing it wakes waiters.
    SharedCount(String),
}

/// A counting semaphore across processes (Curator's `InterProcessSemaphoreV2` layout: a guard
/// mutex under `P/locks`, one ephemeral-sequential lease node per holder under `P/leases`).
///
/// At most `max_leases` leases are out at once, whoever holds them (Rust or Java processes).
/// Leases are not tied to a handle: any number may be held by one handle, and a [`Lease`] returns
/// itself when dropped. Tasks sharing one handle (or its clones) wait for leases exactly as
/// separate handles and processes do.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_locks::{InterProcessSemaphoreV2, MaxLeases};
/// let semaphore = InterProcessSemaphoreV2::builder(client, "/semaphores/db", MaxLeases::Fixed(3))
///     .build()?;
/// let lease = semaphore.acquire().await?;
/// // ... at most three holders run this at once ...
/// lease.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct InterProcessSemaphoreV2 {
    inner: Arc<Inner>,
}

struct Inner {
    client: CuratorFramework,
    /// The semaphore's name and its tasks (where dropped leases are returned).
    core: RecipeCore,
    path: String,
    leases_path: String,
    max: MaxLeases,
    /// The guard mutex's path. Each acquisition takes the guard through a handle of its own:
    /// [`InterProcessMutex`] is reentrant per handle, so a guard shared by the clones of this
    /// handle would let every task of a clone walk in and add its lease while one waits for room.
    guard_path: String,
    /// The lock-delay each lease's holder promises (see
    /// [`InterProcessSemaphoreV2Builder::lock_delay`]), and whether the leases' directory was
    /// made persistent for its record.
    lock_delay: Option<LockDelay>,
    delay_prepared: std::sync::atomic::AtomicBool,
}

impl fmt::Debug for InterProcessSemaphoreV2 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InterProcessSemaphoreV2")
            .field("path", &self.inner.path)
            .field("max_leases", &self.inner.max)
            .finish()
    }
}

/// One lease of a semaphore: a [`Hold`] (its lease node, fencing token and `lost()` signal,
/// through `Deref`), as a [`LockGuard`](crate::LockGuard) is. Dropping it returns the lease (in
/// the background, retried); [`release`](Self::release) does it now and reports errors.
///
/// ```no_run
/// # async fn demo(semaphore: curator_locks::InterProcessSemaphoreV2) -> curator_framework::Result<()> {
/// let lease = semaphore.acquire().await?;
/// println!("lease {} (fencing token {})", lease.node_path(), lease.fencing_token());
/// lease.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the lease returns it at once"]
pub struct Lease {
    holding: Holding,
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Lease").field(self.holding.hold()).finish()
    }
}

impl Deref for Lease {
    type Target = Hold;

    fn deref(&self) -> &Hold {
        self.holding.hold()
    }
}

impl Lease {
    /// Returns the lease now.
    ///
    /// # Errors
    /// Connection errors (the delete goes on in the background).
    ///
    /// # Cancellation safety
    /// Safe: the lease is returned either way; dropping the future (polled or not) leaves the
    /// delete to the background, as dropping the lease does.
    pub async fn release(self) -> Result<()> {
        self.holding.release().await
    }
}

/// Options of an [`InterProcessSemaphoreV2`], from [`InterProcessSemaphoreV2::builder`].
///
/// ```no_run
/// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_locks::{InterProcessSemaphoreV2, MaxLeases};
/// let semaphore = InterProcessSemaphoreV2::builder(client, "/semaphores/db", MaxLeases::Fixed(3))
///     .metrics_name("db")
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until .build()"]
pub struct InterProcessSemaphoreV2Builder {
    client: CuratorFramework,
    path: String,
    max: MaxLeases,
    kind: &'static str,
    lock_delay: Option<Duration>,
    options: RecipeOptions,
}

impl InterProcessSemaphoreV2Builder {
    /// Lock-delay per lease, as [`InterProcessMutexBuilder::lock_delay`](crate::InterProcessMutexBuilder::lock_delay):
    /// a lease whose holder *fails* (its session ends before it returns the lease) keeps its
    /// slot taken for `delay` on ZooKeeper's clock; a returned lease frees its slot at once.
    /// The record is the data of the semaphore's `leases` directory. Java Curator's
    /// semaphores on the same path neither honour nor cause a delay.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// use curator_locks::{InterProcessSemaphoreV2, MaxLeases};
    /// let semaphore = InterProcessSemaphoreV2::builder(client, "/semaphores/db", MaxLeases::Fixed(3))
    ///     .lock_delay(Duration::from_secs(15))
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn lock_delay(mut self, delay: Duration) -> Self {
        self.lock_delay = Some(delay);
        self
    }

    /// The semaphore's name (default: its path): what its logs say, and the `name` label of
    /// the lock metrics of its guard mutex (`curator_lock_wait_seconds`,
    /// `curator_lock_hold_seconds`), so semaphores made per job or tenant keep a bounded number
    /// of series.
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// The semaphore.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path (of the semaphore or of the count node);
    /// [`Error::InvalidArgument`] for zero leases, or a lock-delay of zero or over a day.
    pub fn build(self) -> Result<InterProcessSemaphoreV2> {
        let lock_delay = self.lock_delay.map(LockDelay::new).transpose()?;
        let (client, path, max) = (self.client, self.path, self.max);
        paths::validate(&path)?;
        match &max {
            MaxLeases::Fixed(0) => {
                return Err(Error::InvalidArgument(
                    "a semaphore needs at least one lease".into(),
                ));
            }
            MaxLeases::SharedCount(count) => paths::validate(count)?,
            MaxLeases::Fixed(_) => {}
        }
        Ok(InterProcessSemaphoreV2 {
            inner: Arc::new(Inner {
                core: RecipeCore::new(&client, self.kind, &path, &self.options),
                leases_path: paths::join(&path, "leases"),
                guard_path: paths::join(&path, "locks"),
                path,
                client,
                max,
                lock_delay,
                delay_prepared: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }
}

impl InterProcessSemaphoreV2 {
    /// Options of a semaphore on `path` with `max` leases.
    pub fn builder(
        client: CuratorFramework,
        path: &str,
        max: MaxLeases,
    ) -> InterProcessSemaphoreV2Builder {
        InterProcessSemaphoreV2Builder {
            client,
            path: path.to_owned(),
            max,
            kind: "InterProcessSemaphoreV2",
            lock_delay: None,
            options: RecipeOptions::new(),
        }
    }

    /// Waits for one lease.
    ///
    /// # Errors
    /// Connection errors; [`Error::InvalidArgument`] when the shared count is not a positive
    /// 4-byte integer.
    ///
    /// # Cancellation safety
    /// Dropping the future leaves no lease node behind.
    pub async fn acquire(&self) -> Result<Lease> {
        Ok(self
            .acquire_until(1, None)
            .await?
            .and_then(|mut leases| leases.pop())
            .expect("no deadline"))
    }

    /// Waits for `n` leases (all or none).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire); [`Error::InvalidArgument`] for `n == 0`.
    ///
    /// # Cancellation safety
    /// As [`acquire`](Self::acquire).
    pub async fn acquire_many(&self, n: u32) -> Result<Vec<Lease>> {
        if n == 0 {
            return Err(Error::InvalidArgument("acquire at least one lease".into()));
        }
        Ok(self.acquire_until(n, None).await?.expect("no deadline"))
    }

    /// Like [`acquire`](Self::acquire), giving up after `timeout`.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancellation safety
    /// As [`acquire`](Self::acquire).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Lease>> {
        Ok(self
            .acquire_until(1, Some(Instant::now() + timeout))
            .await?
            .and_then(|mut l| l.pop()))
    }

    /// Takes one lease only if that needs no waiting: `None` at once when all leases are taken,
    /// or when another contender is taking one at this moment (it holds the semaphore's guard
    /// lock; Curator's `acquire(0, ms)` behaves alike). A lease node made for nothing is deleted
    /// before this returns.
    ///
    /// ```no_run
    /// # async fn demo(semaphore: curator_locks::InterProcessSemaphoreV2) -> curator_framework::Result<()> {
    /// match semaphore.try_acquire().await? {
    ///     Some(lease) => lease.release().await?,
    ///     None => println!("no lease free right now"),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancellation safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire(&self) -> Result<Option<Lease>> {
        self.acquire_one(Wait::No).await
    }

    /// Like [`acquire_many`](Self::acquire_many), giving up after `timeout`.
    ///
    /// # Errors
    /// As [`acquire_many`](Self::acquire_many).
    ///
    /// # Cancellation safety
    /// As [`acquire`](Self::acquire).
    pub async fn acquire_many_timeout(
        &self,
        n: u32,
        timeout: Duration,
    ) -> Result<Option<Vec<Lease>>> {
        if n == 0 {
            return Err(Error::InvalidArgument("acquire at least one lease".into()));
        }
        self.acquire_until(n, Some(Instant::now() + timeout)).await
    }

    /// The lease nodes, holders and waiters, in the order they were made, as full paths (as
    /// [`InterProcessMutex::participant_nodes`] lists its contenders; Curator's
    /// `getParticipantNodes` returns bare names).
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// Safe (a read).
    pub async fn participant_nodes(&self) -> Result<Vec<String>> {
        let leases = &self.inner.leases_path;
        match self.inner.client.get_children().for_path(leases).await {
            Ok((mut children, _)) => {
                children.sort_by(|a, b| {
                    paths::sort_key(a, LEASE_NAME).cmp(paths::sort_key(b, LEASE_NAME))
                });
                Ok(children
                    .iter()
                    .map(|name| paths::join(leases, name))
                    .collect())
            }
            Err(Error::NoNode) => Ok(Vec::new()),
            Err(error) => Err(error),
        }
    }

    async fn acquire_until(&self, n: u32, deadline: Option<Instant>) -> Result<Option<Vec<Lease>>> {
        let mut leases = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let wait = deadline.map_or(Wait::Forever, Wait::Until);
            match self.acquire_one(wait).await? {
                Some(lease) => leases.push(lease),
                // Dropping the leases already taken returns them.
                None => return Ok(None),
            }
        }
        Ok(Some(leases))
    }

    async fn acquire_one(&self, wait: Wait) -> Result<Option<Lease>> {
        let inner = &self.inner;
        // The guard mutex lets one contender at a time add its lease and wait for room, whichever
        // handle or task it comes from.
        let guard_mutex = InterProcessMutex::builder(inner.client.clone(), &inner.guard_path)
            .metrics_name(inner.core.name().as_str())
            .build()?;
        let guard = match wait {
            Wait::No => match guard_mutex.try_acquire().await? {
                Some(guard) => guard,
                None => return Ok(None),
            },
            Wait::Until(deadline) => match guard_mutex
                .acquire_timeout(deadline.saturating_duration_since(Instant::now()))
                .await?
            {
                Some(guard) => guard,
                None => return Ok(None),
            },
            Wait::Forever => guard_mutex.acquire().await?,
        };
        if inner.lock_delay.is_some()
            && !inner
                .delay_prepared
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            LockDelay::prepare(&inner.client, &inner.leases_path).await?;
            inner
                .delay_prepared
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let (node, stat) = inner
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_protection()
            .with_mode(CreateMode::EphemeralSequential)
            // Who holds the lease, for operators (`curator inspect`); Java never reads it.
            .for_path(
                &paths::join(&inner.leases_path, LEASE_NAME),
                inner.client.identity().to_bytes(),
            )
            .with_stat()
            .await?;
        let lease = Lease {
            holding: Holding::lease(
                Hold::new(&inner.client, node, stat.czxid),
                inner.client.clone(),
                inner.core.tasks().clone(),
                inner.lock_delay.map(|_| inner.leases_path.clone()),
            ),
        };
        let ours = paths::node_name(lease.node_path()).to_owned();
        loop {
            let (children, _, children_changed) = inner
                .client
                .get_children()
                .watched()
                .for_path(&inner.leases_path)
                .await?;
            if !children.contains(&ours) {
                // The session ended under us; the caller sees the error and may try again.
                return Err(Error::NoNode);
            }
            let (max, count_changed) = self.max_leases().await?;
            if children.len() <= max as usize {
                let Some(lock_delay) = inner.lock_delay else {
                    break;
                };
                let deadline = match wait {
                    Wait::Forever => None,
                    Wait::Until(deadline) => Some(deadline),
                    Wait::No => Some(Instant::now()),
                };
                let rule = Rule::Slots {
                    live: &children,
                    max: max as usize,
                };
                match lock_delay
                    .admit(&inner.client, &inner.leases_path, &ours, &rule, deadline)
                    .await?
                {
                    Admitted::Yes => break,
                    Admitted::NodeLost => return Err(Error::NoNode),
                    Admitted::TimedOut => {
                        // Gone before this returns (a failure here leaves it to the
                        // background).
                        let _ = lease.release().await;
                        return Ok(None);
                    }
                }
            }
            let changed = async {
                match count_changed {
                    Some(count_changed) => {
                        tokio::select! {
                            _ = children_changed.changed() => {}
                            _ = count_changed.changed() => {}
                        }
                    }
                    None => {
                        children_changed.changed().await;
                    }
                }
            };
            match wait {
                Wait::No => {
                    // Full: gone before this returns (a failure here leaves it to the
                    // background).
                    let _ = lease.release().await;
                    return Ok(None);
                }
                Wait::Until(deadline) => {
                    if tokio::time::timeout_at(deadline, changed).await.is_err() {
                        // Gone before this returns (a failure here leaves it to the background).
                        let _ = lease.release().await;
                        return Ok(None);
                    }
                }
                Wait::Forever => changed.await,
            }
        }
        guard.release().await?;
        Ok(Some(lease))
    }

    /// The current number of leases, and a watch on it when it comes from a node.
    async fn max_leases(&self) -> Result<(u32, Option<curator_framework::watcher::Watcher>)> {
        match &self.inner.max {
            MaxLeases::Fixed(n) => Ok((*n, None)),
            MaxLeases::SharedCount(path) => {
                let (data, _, watcher) = self
                    .inner
                    .client
                    .get_data()
                    .watched()
                    .for_path(path)
                    .await?;
                let bytes: [u8; 4] = data.as_slice().try_into().map_err(|_| {
                    Error::InvalidArgument(format!(
                        "{path} holds {} bytes, not a 4-byte count",
                        data.len()
                    ))
                })?;
                let count = i32::from_be_bytes(bytes);
                let count = u32::try_from(count)
                    .ok()
                    .filter(|c| *c > 0)
                    .ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "{path} holds {count}, not a positive count"
                        ))
                    })?;
                Ok((count, Some(watcher)))
            }
        }
    }
}

/// How long an acquisition waits for room.
#[derive(Clone, Copy)]
enum Wait {
    Forever,
    Until(Instant),
    /// Not at all: `try_acquire`.
    No,
}

/// A non-reentrant mutex across processes: a semaphore with one lease (Curator's
/// `InterProcessSemaphoreMutex`). Unlike [`InterProcessMutex`], acquiring it twice from one
/// handle waits for the first lease to be returned.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let mutex = curator_locks::InterProcessSemaphoreMutex::builder(client, "/locks/job").build()?;
/// let lease = mutex.acquire().await?;
/// lease.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessSemaphoreMutex {
    semaphore: InterProcessSemaphoreV2,
}

/// Options of an [`InterProcessSemaphoreMutex`], from [`InterProcessSemaphoreMutex::builder`].
///
/// ```no_run
/// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let mutex = curator_locks::InterProcessSemaphoreMutex::builder(client, "/locks/jobs/42")
///     .metrics_name("jobs")
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until .build()"]
pub struct InterProcessSemaphoreMutexBuilder {
    semaphore: InterProcessSemaphoreV2Builder,
}

impl InterProcessSemaphoreMutexBuilder {
    /// Lock-delay, as [`InterProcessSemaphoreV2Builder::lock_delay`] with its one lease.
    pub fn lock_delay(mut self, delay: Duration) -> Self {
        self.semaphore = self.semaphore.lock_delay(delay);
        self
    }

    /// The mutex's name (default: its path); see
    /// [`InterProcessSemaphoreV2Builder::metrics_name`].
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.semaphore = self.semaphore.metrics_name(name);
        self
    }

    /// The mutex.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path.
    pub fn build(self) -> Result<InterProcessSemaphoreMutex> {
        Ok(InterProcessSemaphoreMutex {
            semaphore: self.semaphore.build()?,
        })
    }
}

impl InterProcessSemaphoreMutex {
    /// Options of a semaphore mutex on `path`.
    pub fn builder(client: CuratorFramework, path: &str) -> InterProcessSemaphoreMutexBuilder {
        let mut semaphore = InterProcessSemaphoreV2::builder(client, path, MaxLeases::Fixed(1));
        semaphore.kind = "InterProcessSemaphoreMutex";
        InterProcessSemaphoreMutexBuilder { semaphore }
    }

    /// Waits for the lock.
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// Dropping the future leaves no node behind.
    pub async fn acquire(&self) -> Result<Lease> {
        self.semaphore.acquire().await
    }

    /// Like [`acquire`](Self::acquire), giving up after `timeout`.
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// As [`acquire`](Self::acquire).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Lease>> {
        self.semaphore.acquire_timeout(timeout).await
    }

    /// Takes the mutex only if that needs no waiting (see
    /// [`InterProcessSemaphoreV2::try_acquire`]).
    ///
    /// ```no_run
    /// # async fn demo(mutex: curator_locks::InterProcessSemaphoreMutex) -> curator_framework::Result<()> {
    /// if let Some(lease) = mutex.try_acquire().await? {
    ///     lease.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancellation safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire(&self) -> Result<Option<Lease>> {
        self.semaphore.try_acquire().await
    }
}
