//! `InterProcessReadWriteLock`: Curator's shared/exclusive lock.

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
/// let lock = InterProcessReadWriteLock::new(client, "/locks/catalog")?;
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

impl InterProcessReadWriteLock {
    /// A read/write lock on `path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](curator_framework::Error::InvalidPath) for a path ZooKeeper would
    /// reject.
    pub fn new(client: CuratorFramework, path: &str) -> Result<Self> {
        let write = InterProcessMutex::write_side(client, path)?;
        let read = InterProcessMutex::read_side(&write)?;
        Ok(Self { read, write })
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
