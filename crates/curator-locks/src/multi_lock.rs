//! `InterProcessMultiLock`: several locks taken as one.

use std::time::Duration;

use curator_framework::Result;
use curator_framework::recipe::Hold;
use tokio::time::Instant;

use crate::mutex::{InterProcessMutex, LockGuard};

/// Several locks held together, all or nothing (Curator's `InterProcessMultiLock`): acquired in
/// the order given; if one cannot be had, those already taken are released in reverse order.
/// Release always goes in reverse order. Any [`InterProcessMutex`] works, including the sides of
/// an [`InterProcessReadWriteLock`](crate::InterProcessReadWriteLock).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_locks::{InterProcessMultiLock, InterProcessMutex};
/// let both = InterProcessMultiLock::new(vec![
///     InterProcessMutex::builder(client.clone(), "/locks/a").build()?,
///     InterProcessMutex::builder(client.clone(), "/locks/b").build()?,
/// ]);
/// let guard = both.acquire().await?;
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessMultiLock {
    locks: Vec<InterProcessMutex>,
}

/// The holds of an [`InterProcessMultiLock`], released in reverse order (on drop, or with
/// [`release`](Self::release)).
#[derive(Debug)]
#[must_use = "dropping the guard releases every lock at once"]
pub struct MultiLockGuard {
    guards: Vec<LockGuard>,
}

impl InterProcessMultiLock {
    /// Takes `locks` together, in this order.
    pub fn new(locks: Vec<InterProcessMutex>) -> Self {
        Self { locks }
    }

    /// Waits until every lock is held.
    ///
    /// # Errors
    /// The first lock's error; the locks already taken are released.
    ///
    /// # Cancellation safety
    /// Dropping the future releases what it took and leaves no lock node behind.
    pub async fn acquire(&self) -> Result<MultiLockGuard> {
        Ok(self.acquire_until(None).await?.expect("no deadline"))
    }

    /// Like [`acquire`](Self::acquire), giving up after `timeout` (with nothing held).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancellation safety
    /// As [`acquire`](Self::acquire).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<MultiLockGuard>> {
        self.acquire_until(Some(Instant::now() + timeout)).await
    }

    async fn acquire_until(&self, deadline: Option<Instant>) -> Result<Option<MultiLockGuard>> {
        let mut taken = MultiLockGuard {
            guards: Vec::with_capacity(self.locks.len()),
        };
        for lock in &self.locks {
            let guard = match deadline {
                Some(deadline) => {
                    lock.acquire_timeout(deadline.saturating_duration_since(Instant::now()))
                        .await?
                }
                None => Some(lock.acquire().await?),
            };
            match guard {
                Some(guard) => taken.guards.push(guard),
                None => {
                    taken.release().await?;
                    return Ok(None);
                }
            }
        }
        Ok(Some(taken))
    }
}

impl MultiLockGuard {
    /// The [`Hold`] of each lock, in acquisition order: the holder must stop when any is lost.
    ///
    /// ```no_run
    /// # async fn demo(multi: curator_locks::InterProcessMultiLock) -> curator_framework::Result<()> {
    /// use futures::future::select_all;
    /// let guard = multi.acquire().await?;
    /// tokio::select! {
    ///     _ = select_all(guard.holds().map(|hold| Box::pin(hold.lost()))) => println!("a lock may be lost"),
    ///     () = async { /* work under every lock */ } => {}
    /// }
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn holds(&self) -> impl ExactSizeIterator<Item = &Hold> {
        self.guards.iter().map(|guard| &**guard)
    }

    /// Releases every lock, last acquired first.
    ///
    /// # Errors
    /// The first release error (the others are still attempted).
    ///
    /// # Cancellation safety
    /// Safe: locks not released yet when the future is dropped are released in the background,
    /// as dropping the guard does.
    pub async fn release(mut self) -> Result<()> {
        let mut first_error = None;
        while let Some(guard) = self.guards.pop() {
            if let Err(error) = guard.release().await {
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for MultiLockGuard {
    fn drop(&mut self) {
        while let Some(guard) = self.guards.pop() {
            drop(guard);
        }
    }
}
