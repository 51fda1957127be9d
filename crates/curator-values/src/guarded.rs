//! Guarded writes: writes that land only while a lock, lease or leadership is still held,
//! checked by ZooKeeper itself in the same transaction.
//!
//! A lock is only safe if the protected write is checked by the system that stores it: a
//! holder paused past its session timeout (a long GC, a frozen VM) wakes up still believing it
//! holds the lock, while another process already does. A [`Guarded`] view of the client sends
//! each write as a transaction whose first step checks that the hold's node still exists, on
//! the session that made it; a holder that lost its hold gets [`Error::LockLost`] (locks,
//! semaphore leases) or [`Error::NotLeader`] (leaderships) and nothing is written. A guarded
//! write costs what an unguarded one does: one request.
//!
//! ```no_run
//! # async fn demo(client: curator_framework::CuratorFramework, hold: curator_framework::recipe::Hold) -> curator_framework::Result<()> {
//! use curator_framework::Error;
//! // `hold`: from a lock guard (`&*guard`), a semaphore lease, a latch's `hold()`, a
//! // selector's leadership context.
//! use curator_values::guarded::Guarded;
//! let guarded = Guarded::new(client, &hold);
//! match guarded.set_data("/config/active", b"blue").await {
//!     Ok(stat) => println!("written as version {}", stat.version),
//!     Err(Error::LockLost { node }) => println!("{node} is gone: someone else may hold the lock"),
//!     Err(error) => return Err(error),
//! }
//! # Ok(()) }
//! ```
//!
//! **What the check proves.** The hold's node is ephemeral and its name sequential: it exists
//! only while the session that made it lives, and nobody else creates that name while it does.
//! The write is refused before it is sent when the hold is signalled lost (see
//! [`Hold::lost`]) or when the client's session is no longer the hold's (the session that made
//! the node; set by the recipes), and by the server when the node is gone. One case passes
//! the check wrongly: if someone deleted the node by hand while its session lived *and* the
//! lock's parent (a container) was then removed and made again so that a new node got the
//! very same sequence number. Combine with a [fencing token](Hold::fencing_token) where that
//! matters.

use std::fmt;

use curator_framework::CuratorFramework;
use curator_framework::ops::transaction::{TransactionBuilder, TransactionOp, TransactionResult};
use curator_framework::recipe::Hold;
use curator_framework::types::{CreateMode, Stat};
use curator_framework::{Error, Result};

/// A view of a client whose writes carry a check of a [`Hold`]; see the [module
/// docs](self).
#[derive(Clone)]
pub struct Guarded {
    client: CuratorFramework,
    hold: Hold,
}

impl fmt::Debug for Guarded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guarded")
            .field("hold", &self.hold)
            .finish_non_exhaustive()
    }
}

impl Guarded {
    /// A view of `client` whose writes are guarded by `hold` (from a lock guard: `&*guard`;
    /// a semaphore lease; a latch's `hold()`; a selector's leadership context).
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework, mutex: curator_locks::InterProcessMutex) -> curator_framework::Result<()> {
    /// let guard = mutex.acquire().await?;
    /// let guarded = curator_values::guarded::Guarded::new(client, &guard);
    /// guarded.set_data("/reports/latest", b"2026-11-24").await?;
    /// # Ok(()) }
    /// ```
    pub fn new(client: CuratorFramework, hold: &Hold) -> Self {
        Guarded {
            client,
            hold: hold.clone(),
        }
    }

    /// The hold that guards the writes.
    pub fn hold(&self) -> &Hold {
        &self.hold
    }

    /// A transaction guarded by the hold (see [`TransactionBuilder::guarded_by`]).
    pub fn transaction(&self) -> TransactionBuilder {
        self.client.transaction().guarded_by(&self.hold)
    }

    /// Creates a persistent node at `path` with `data`; returns the path created.
    ///
    /// # Errors
    /// [`Error::LockLost`] / [`Error::NotLeader`] when the hold is lost (nothing written);
    /// otherwise the create's own errors (`NodeExists`, `NoNode` for a missing parent).
    pub async fn create(&self, path: &str, data: impl AsRef<[u8]>) -> Result<String> {
        self.create_with_mode(path, data, CreateMode::Persistent)
            .await
    }

    /// Creates a node at `path` with `data` in `mode`; returns the path created (with its
    /// sequence number for sequential modes).
    ///
    /// # Errors
    /// As [`create`](Self::create).
    pub async fn create_with_mode(
        &self,
        path: &str,
        data: impl AsRef<[u8]>,
        mode: CreateMode,
    ) -> Result<String> {
        let op = TransactionOp::create(path, data).with_mode(mode);
        match self.one(op).await? {
            TransactionResult::Create { path, .. } => Ok(path),
            other => Err(unexpected(&other)),
        }
    }

    /// Writes `data` to `path`, whatever its version; returns the node's new stat.
    ///
    /// # Errors
    /// [`Error::LockLost`] / [`Error::NotLeader`] when the hold is lost (nothing written);
    /// `NoNode`.
    pub async fn set_data(&self, path: &str, data: impl AsRef<[u8]>) -> Result<Stat> {
        self.write(TransactionOp::set_data(path, data)).await
    }

    /// Writes `data` to `path` if its data version is still `version`.
    ///
    /// # Errors
    /// As [`set_data`](Self::set_data), and `BadVersion`.
    pub async fn set_data_with_version(
        &self,
        path: &str,
        data: impl AsRef<[u8]>,
        version: i32,
    ) -> Result<Stat> {
        self.write(TransactionOp::set_data(path, data).with_version(version))
            .await
    }

    /// Deletes `path` (whatever its version).
    ///
    /// # Errors
    /// [`Error::LockLost`] / [`Error::NotLeader`] when the hold is lost (nothing deleted);
    /// `NoNode`, `NotEmpty`.
    pub async fn delete(&self, path: &str) -> Result<()> {
        self.one(TransactionOp::delete(path)).await.map(drop)
    }

    /// Deletes `path` if its data version is still `version`.
    ///
    /// # Errors
    /// As [`delete`](Self::delete), and `BadVersion`.
    pub async fn delete_with_version(&self, path: &str, version: i32) -> Result<()> {
        self.one(TransactionOp::delete(path).with_version(version))
            .await
            .map(drop)
    }

    async fn write(&self, op: TransactionOp) -> Result<Stat> {
        match self.one(op).await? {
            TransactionResult::SetData { stat } => Ok(stat),
            other => Err(unexpected(&other)),
        }
    }

    /// Commits `op` guarded; a failure of the step itself is its bare error (not wrapped in
    /// [`Error::Transaction`]), as the unguarded operation would report it.
    async fn one(&self, op: TransactionOp) -> Result<TransactionResult> {
        match self.transaction().op(op).commit().await {
            Ok(mut results) if results.len() == 1 => Ok(results.remove(0)),
            Ok(results) => Err(Error::UnexpectedReply(format!(
                "a guarded write answered with {} results",
                results.len()
            ))),
            Err(Error::Transaction { cause, .. }) => Err(*cause),
            Err(error) => Err(error),
        }
    }
}

fn unexpected(result: &TransactionResult) -> Error {
    Error::UnexpectedReply(format!("a guarded write answered with {result:?}"))
}
