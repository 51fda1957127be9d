//! `InterProcessReadWriteLock`: Curator's shared/exclusive lock.

use std::time::Duration;

use curator_framework::recipe::RecipeOptions;
use curator_framework::{CuratorFramework, Result};

use crate::mutex::InterProcessMutex;

/// A distributed read/write lock (Curator's `InterProcessReadWriteLock` layout: `__READ__` and
/// `__WRIT__` sequential nodes under one path, sharing one sequence).
///
/// Any number of readers hold the read lock together; a writer holds the write lock alone. A
/// reader waits only for writers that queued before it; a writer waits for everyone before it.
/// Both sides are reentrant per handle. A handle holding the write lock may also take the read
/// lock and then release the write lock: a **downgrade**, with no moment unlocked. (Upgrading a
/// read lock to a write lock deadlocks, as in Curator: release the read lock first.)
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_locks::InterProcessReadWriteLock;
/// let lock = InterProcessReadWriteLock::builder(client, "/locks/catalog").build()?;
/// let write = lock.write_lock().acquire().await?;
/// let read = lock.read_lock().acquire().await?; // downgrade: keep reading...
/// write.release().await?;                          // ...while letting other readers in
/// read.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessReadWriteLock {
    read: InterProcessMutex,
    write: InterProcessMutex,
}

/// Options of an [`InterProcessReadWriteLock`], from [`InterProcessReadWriteLock::builder`].
///
/// ```no_run
/// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// let lock = curator_locks::InterProcessReadWriteLock::builder(client, "/locks/catalog")
///     .lock_delay(Duration::from_secs(15))
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until .build()"]
pub struct InterProcessReadWriteLockBuilder {
    client: CuratorFramework,
    path: String,
    lock_delay: Option<Duration>,
    options: RecipeOptions,
}

impl InterProcessReadWriteLockBuilder {
    /// Lock-delay for both sides, as [`InterProcessMutexBuilder::lock_delay`](crate::InterProcessMutexBuilder::lock_delay):
    /// a failed writer keeps everyone out for `delay`; a failed reader keeps writers out (other
    /// readers hold beside it anyway).
    pub fn lock_delay(mut self, delay: Duration) -> Self {
        self.lock_delay = Some(delay);
        self
    }

    /// The `name` label of both sides' metrics (default: the lock's path), as
    /// [`InterProcessMutexBuilder::metrics_name`](crate::InterProcessMutexBuilder::metrics_name).
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// The read/write lock.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](curator_framework::Error::InvalidPath) for a path ZooKeeper would
    /// reject; [`Error::InvalidArgument`](curator_framework::Error::InvalidArgument) for a
    /// lock-delay of zero or over a day.
    pub fn build(self) -> Result<InterProcessReadWriteLock> {
        let write =
            InterProcessMutex::write_side(self.client, &self.path, self.lock_delay, &self.options)?;
        let read = InterProcessMutex::read_side(&write, &self.options)?;
        Ok(InterProcessReadWriteLock { read, write })
    }
}

impl InterProcessReadWriteLock {
    /// Options of a read/write lock on `path` (created on first use, as container nodes).
    pub fn builder(client: CuratorFramework, path: &str) -> InterProcessReadWriteLockBuilder {
        InterProcessReadWriteLockBuilder {
            client,
            path: path.to_owned(),
            lock_delay: None,
            options: RecipeOptions::new(),
        }
    }

    /// The read (shared) side.
    pub fn read_lock(&self) -> &InterProcessMutex {
        &self.read
    }

    /// The write (exclusive) side.
    pub fn write_lock(&self) -> &InterProcessMutex {
        &self.write
    }
}
