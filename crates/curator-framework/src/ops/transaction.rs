//! `transaction()`: several writes applied all together or not at all (ZooKeeper's multi).

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use crate::acl::Acl;
use crate::client::CuratorFramework;
use crate::error::{Error, Result};
use crate::ops::{self, OpFuture};
use crate::recipe::Hold;
use crate::types::{CreateMode, validate_ttl};

pub(crate) use crate::types::multi::Step;
pub use crate::types::multi::TransactionResult;

/// One step of a transaction.
///
/// ```
/// use curator_framework::CreateMode;
/// use curator_framework::ops::transaction::TransactionOp;
/// let step = TransactionOp::create("/jobs/job-", b"x").with_mode(CreateMode::PersistentSequential);
/// let guard = TransactionOp::check("/jobs", 3);
/// # let _ = (step, guard);
/// ```
#[derive(Debug, Clone)]
pub struct TransactionOp {
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Create {
        path: String,
        data: Vec<u8>,
        mode: CreateMode,
        acl: Option<Vec<Acl>>,
        ttl: Option<Duration>,
        compress: Option<bool>,
    },
    SetData {
        path: String,
        data: Vec<u8>,
        version: Option<i32>,
        compress: Option<bool>,
    },
    Delete {
        path: String,
        version: Option<i32>,
    },
    Check {
        path: String,
        version: i32,
    },
}

impl TransactionOp {
    /// Creates `path` (persistent unless [`with_mode`](Self::with_mode) says otherwise).
    pub fn create(path: &str, data: impl AsRef<[u8]>) -> Self {
        Self {
            kind: Kind::Create {
                path: path.to_owned(),
                data: data.as_ref().to_vec(),
                mode: CreateMode::Persistent,
                acl: None,
                ttl: None,
                compress: None,
            },
        }
    }

    /// Writes `data` to `path`.
    pub fn set_data(path: &str, data: impl AsRef<[u8]>) -> Self {
        Self {
            kind: Kind::SetData {
                path: path.to_owned(),
                data: data.as_ref().to_vec(),
                version: None,
                compress: None,
            },
        }
    }

    /// Deletes `path`.
    pub fn delete(path: &str) -> Self {
        Self {
            kind: Kind::Delete {
                path: path.to_owned(),
                version: None,
            },
        }
    }

    /// Fails the transaction unless `path` is at data version `version`.
    pub fn check(path: &str, version: i32) -> Self {
        Self {
            kind: Kind::Check {
                path: path.to_owned(),
                version,
            },
        }
    }

    /// The create mode of a create step (ignored by other steps).
    pub fn with_mode(mut self, new_mode: CreateMode) -> Self {
        if let Kind::Create { mode, .. } = &mut self.kind {
            *mode = new_mode;
        }
        self
    }

    /// The ACL of a create step (ignored by other steps).
    pub fn with_acl(mut self, new_acl: Vec<Acl>) -> Self {
        if let Kind::Create { acl, .. } = &mut self.kind {
            *acl = Some(new_acl);
        }
        self
    }

    /// The TTL of a TTL-mode create step (ignored by other steps).
    pub fn with_ttl(mut self, new_ttl: Duration) -> Self {
        if let Kind::Create { ttl, .. } = &mut self.kind {
            *ttl = Some(new_ttl);
        }
        self
    }

    /// The expected version of a set-data or delete step (ignored by other steps).
    pub fn with_version(mut self, new_version: i32) -> Self {
        match &mut self.kind {
            Kind::SetData { version, .. } | Kind::Delete { version, .. } => {
                *version = Some(new_version)
            }
            _ => {}
        }
        self
    }

    #[cfg(feature = "compression")]
    /// Compresses the data of a create or set-data step with the client's
    /// [`CompressionProvider`](crate::compression::CompressionProvider) (ignored by other
    /// steps), as Curator's `compressed()` on a transaction's create and setData. The 1 MiB
    /// limit applies to the compressed data.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// use curator_framework::ops::transaction::TransactionOp;
    /// client.transaction()
    ///     .op(TransactionOp::create("/a", b"1").compressed())
    ///     .op(TransactionOp::set_data("/b", b"2").compressed())
    ///     .commit()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn compressed(self) -> Self {
        self.with_compression(true)
    }

    /// Sends the data of a create or set-data step as it is, also when the client compresses by
    /// default (ignored by other steps).
    pub fn uncompressed(self) -> Self {
        self.with_compression(false)
    }

    fn with_compression(mut self, on: bool) -> Self {
        match &mut self.kind {
            Kind::Create { compress, .. } | Kind::SetData { compress, .. } => *compress = Some(on),
            _ => {}
        }
        self
    }

    /// This step validated, with the namespace applied.
    fn into_step(self, client: &CuratorFramework) -> Result<Step> {
        Ok(match self.kind {
            Kind::Create {
                path,
                data,
                mode,
                acl,
                ttl,
                compress,
            } => {
                let fixed = if mode.is_sequential() {
                    client.sequential_target(&path)?
                } else {
                    client.target(&path)?
                }
                .to_string();
                if let Some(set) = client.schemas() {
                    set.check_create(&path, mode, &data)?;
                }
                let data = ops::outgoing_data(client, &path, data, compress)?;
                match (mode.is_ttl(), ttl) {
                    (true, Some(ttl)) => validate_ttl(ttl)?,
                    (true, None) => {
                        return Err(Error::InvalidArgument(format!(
                            "create mode {mode:?} needs a TTL"
                        )));
                    }
                    (false, Some(_)) => {
                        return Err(Error::InvalidArgument(format!(
                            "create mode {mode:?} takes no TTL"
                        )));
                    }
                    (false, None) => {}
                }
                let acl =
                    acl.unwrap_or_else(|| client.inner.settings.acl_provider.acl_for_path(&fixed));
                if let Some(set) = client.schemas() {
                    set.check_acl(&path, &acl)?;
                }
                Step::Create {
                    path: fixed,
                    data,
                    mode,
                    acl,
                    ttl,
                }
            }
            Kind::SetData {
                path,
                data,
                version,
                compress,
            } => {
                if let Some(set) = client.schemas() {
                    set.check_set_data(&path, &data)?;
                }
                let data = ops::outgoing_data(client, &path, data, compress)?;
                Step::SetData {
                    path: client.target(&path)?.to_string(),
                    data,
                    version,
                }
            }
            Kind::Delete { path, version } => {
                let fixed = client.target(&path)?.to_string();
                if let Some(set) = client.schemas() {
                    set.check_delete(&path)?;
                }
                Step::Delete {
                    path: fixed,
                    version,
                }
            }
            Kind::Check { path, version } => Step::Check {
                path: client.target(&path)?.to_string(),
                version,
            },
        })
    }
}

/// Builds a transaction; [`commit`](Self::commit) applies it.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let results = client.transaction()
///     .create("/a", b"1")
///     .set_data("/b", b"2")
///     .check("/c", 3)
///     .commit()
///     .await?;
/// // If any step fails (Error::Transaction { index, cause }), none is applied.
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a transaction does nothing until commit() is awaited"]
pub struct TransactionBuilder {
    client: CuratorFramework,
    ops: Vec<TransactionOp>,
    guard: Option<Hold>,
}

impl TransactionBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self {
            client,
            ops: Vec::new(),
            guard: None,
        }
    }

    /// Guards the transaction with `hold` (a lock guard, semaphore lease or leadership, which
    /// all dereference to a [`Hold`]): it commits only while the hold's node exists, checked by
    /// the server in the same transaction, and only on the session that made the node. A hold
    /// that is lost fails the commit with [`Error::LockLost`] or [`Error::NotLeader`] and
    /// nothing is written. Step indices in errors and results are the caller's (the check is
    /// not counted). curator-values' `Guarded` offers single guarded writes on top of it.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework, hold: curator_framework::recipe::Hold) -> curator_framework::Result<()> {
    /// client.transaction()
    ///     .guarded_by(&hold)
    ///     .set_data("/jobs/current", b"batch-42")
    ///     .create("/jobs/done/batch-41", b"")
    ///     .commit()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn guarded_by(mut self, hold: &Hold) -> Self {
        self.guard = Some(hold.clone());
        self
    }

    /// Adds a step.
    pub fn op(mut self, op: TransactionOp) -> Self {
        self.ops.push(op);
        self
    }

    /// Adds the creation of a persistent node.
    pub fn create(self, path: &str, data: impl AsRef<[u8]>) -> Self {
        self.op(TransactionOp::create(path, data))
    }

    /// Adds an unconditional data write.
    pub fn set_data(self, path: &str, data: impl AsRef<[u8]>) -> Self {
        self.op(TransactionOp::set_data(path, data))
    }

    /// Adds an unconditional delete.
    pub fn delete(self, path: &str) -> Self {
        self.op(TransactionOp::delete(path))
    }

    /// Adds a version check.
    pub fn check(self, path: &str, version: i32) -> Self {
        self.op(TransactionOp::check(path, version))
    }

    /// Applies every step atomically.
    ///
    /// # Errors
    /// [`Error::Transaction`] with the failing step's index and cause (nothing was applied);
    /// [`Error::InvalidArgument`] for an empty transaction or bad input; connection errors.
    /// A connection loss may hide a commit that did apply; the retry then fails on its first
    /// step that cannot be repeated (a create meets `NodeExists`).
    pub fn commit(self) -> OpFuture<Vec<TransactionResult>> {
        if self.ops.is_empty() {
            return OpFuture::ready(Err(Error::InvalidArgument(
                "a transaction needs at least one step".into(),
            )));
        }
        let client = self.client;
        let guard = self.guard;
        if let Some(hold) = guard.as_ref().filter(|hold| hold.is_lost()) {
            return OpFuture::ready(Err(hold.lost_error()));
        }
        let ops = guard
            .iter()
            .map(|hold| TransactionOp::check(hold.node_path(), -1))
            .chain(self.ops);
        let steps = match ops
            .map(|op| op.into_step(&client))
            .collect::<Result<Vec<_>>>()
        {
            Ok(steps) => Arc::new(steps),
            Err(error) => return OpFuture::ready(Err(error)),
        };
        let span = crate::ops::OpSpan {
            op: "zk.transaction",
            span: tracing::debug_span!(
                "zk.transaction",
                steps = steps.len(),
                session_id = ?client.session_id()
            ),
        };
        let unfix = client.clone();
        let pinned = guard.as_ref().and_then(Hold::session_id);
        let refused = guard.as_ref().map(Hold::lost_error);
        ops::run(
            &client,
            span,
            move |session, _| {
                let steps = Arc::clone(&steps);
                let wrong_session = pinned
                    .filter(|&pinned| pinned != session.session_id())
                    .and(refused.clone());
                async move {
                    match wrong_session {
                        Some(refused) => Err(refused),
                        None => session.multi(&steps).await,
                    }
                }
            },
            move |result| {
                let result = match guard {
                    Some(hold) => unguard(&hold, result),
                    None => result,
                };
                Ok(result?
                    .into_iter()
                    .map(|result| match result {
                        TransactionResult::Create { path, stat } => TransactionResult::Create {
                            path: unfix.unfix_path(&path),
                            stat,
                        },
                        other => other,
                    })
                    .collect())
            },
        )
    }
}

/// The caller's view of a guarded transaction's outcome: the check's failure is the hold's
/// loss; the check's result and index are removed.
fn unguard(hold: &Hold, result: Result<Vec<TransactionResult>>) -> Result<Vec<TransactionResult>> {
    match result {
        Ok(mut results) => {
            if !results.is_empty() {
                results.remove(0);
            }
            Ok(results)
        }
        Err(Error::Transaction { index: 0, cause })
            if matches!(*cause, Error::NoNode | Error::BadVersion) =>
        {
            Err(hold.lost_error())
        }
        Err(Error::Transaction { index, cause }) if index > 0 => Err(Error::Transaction {
            index: index - 1,
            cause,
        }),
        other => other,
    }
}

impl IntoFuture for TransactionBuilder {
    type Output = Result<Vec<TransactionResult>>;
    type IntoFuture = OpFuture<Vec<TransactionResult>>;

    fn into_future(self) -> Self::IntoFuture {
        self.commit()
    }
}
