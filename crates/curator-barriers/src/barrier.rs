//! `DistributedBarrier`: wait while a node exists.

use std::time::Duration;

use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};
use tokio::time::Instant;

use crate::wait::changed_before;

/// A barrier that is up while its node exists (Curator's `DistributedBarrier`). It has no
/// options and nothing to start or close: each call does its work and returns.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_barriers::DistributedBarrier;
/// let barrier = DistributedBarrier::new(client, "/barriers/deploy")?;
/// barrier.set_barrier().await?;
/// // elsewhere: barrier.wait_on_barrier().await?;
/// barrier.remove_barrier().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DistributedBarrier {
    client: CuratorFramework,
    path: String,
}

impl DistributedBarrier {
    /// A barrier on `path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path.
    pub fn new(client: CuratorFramework, path: &str) -> Result<Self> {
        paths::validate(path)?;
        Ok(Self {
            client,
            path: path.to_owned(),
        })
    }

    /// Raises the barrier (creates its node; raising a raised barrier is fine).
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the barrier raised or not.
    pub async fn set_barrier(&self) -> Result<()> {
        let created = self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(CreateMode::Persistent)
            // Who raised it (the client's identity), for operators; Java never reads it.
            .for_path(&self.path, self.client.identity().to_bytes())
            .await;
        match created {
            Ok(_) | Err(Error::NodeExists) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Lowers the barrier (deletes its node), releasing every waiter.
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the barrier lowered or not.
    pub async fn remove_barrier(&self) -> Result<()> {
        self.client.delete().quietly().for_path(&self.path).await
    }

    /// Waits until the barrier is down.
    ///
    /// # Errors
    /// Connection errors; [`Error::Closed`] when the client closes first.
    ///
    /// # Cancellation safety
    /// Safe: it only reads and watches (the watch is removed with the future).
    pub async fn wait_on_barrier(&self) -> Result<()> {
        self.wait_until(None).await.map(drop)
    }

    /// Waits up to `timeout` for the barrier to be down; `false` when it was still up.
    ///
    /// # Errors
    /// As [`wait_on_barrier`](Self::wait_on_barrier).
    ///
    /// # Cancellation safety
    /// Safe, as [`wait_on_barrier`](Self::wait_on_barrier).
    pub async fn wait_on_barrier_timeout(&self, timeout: Duration) -> Result<bool> {
        self.wait_until(Some(Instant::now() + timeout)).await
    }

    async fn wait_until(&self, deadline: Option<Instant>) -> Result<bool> {
        loop {
            let (stat, watcher) = self
                .client
                .check_exists()
                .watched()
                .for_path(&self.path)
                .await?;
            if stat.is_none() {
                return Ok(true);
            }
            if !changed_before(watcher, deadline).await {
                return Ok(false);
            }
        }
    }
}
