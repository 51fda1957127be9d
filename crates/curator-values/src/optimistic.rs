//! Optimistic multi-node transactions (etcd's STM idea): read nodes, compute, and commit the
//! writes together with checks that nothing read has changed, in one ZooKeeper transaction;
//! on a conflict, run again under a retry policy. Exactly once across lost replies.
//!
//! ```no_run
//! # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
//! use curator_values::optimistic::Optimistic;
//!
//! let bank = Optimistic::builder(client, "/bank/txn").build()?;
//! // Move 10 from a to b, if a has it; runs again if a or b changed meanwhile.
//! let moved = bank
//!     .run(|txn| async move {
//!         let balance = |data: Option<Vec<u8>>| -> i64 {
//!             data.and_then(|d| String::from_utf8(d).ok()?.parse().ok()).unwrap_or(0)
//!         };
//!         let a = balance(txn.get("/bank/a").await?);
//!         let b = balance(txn.get("/bank/b").await?);
//!         if a < 10 {
//!             return Ok(false);
//!         }
//!         txn.set("/bank/a", (a - 10).to_string());
//!         txn.set("/bank/b", (b + 10).to_string());
//!         Ok(true)
//!     })
//!     .await?;
//! # let _ = moved;
//! # Ok(()) }
//! ```
//!
//! **Isolation.** Every node the function read that existed is checked at its read version in
//! the commit (a write to it carries the version itself), so a committed transaction saw, for
//! those nodes, exactly the state it committed against: serializable with respect to them,
//! read-only transactions included (their commit is the checks alone). Reads are repeatable and
//! see the transaction's own writes. **Absent nodes are not re-checked** (ZooKeeper has no
//! "check absent" step): a node read as absent and created by the transaction is safe (the
//! create fails if it appeared), one read as absent and not written may have appeared by the
//! commit (a phantom). `set` of a node not read writes whatever version it has; `delete` of one
//! not read deletes any version. Children lists are not part of the read set.
//!
//! **Exactly once.** A commit whose reply is lost with the connection may or may not have been
//! applied, and re-running the function would apply a transfer twice. So every commit creates
//! an empty *outcome marker* `<path>/_txn-<uuid>` as its first step; after a lost reply (or a
//! retry of the commit by the client's retry policy) the marker says what happened: the
//! framework asks for it after a `sync`. A marker is deleted in the same transaction as the
//! instance's next commit, by [`Optimistic::flush_markers`], or stays (one per instance at
//! most) if the process ends first. `Ok` means applied exactly once; `Err` means not applied,
//! except when asking for the marker itself failed (a connection error after the commit was
//! sent: the outcome is unknown and its marker is kept as pending, see
//! [`Optimistic::pending_markers`]).
//!
//! **Cost.** One read per node read (the reads of one run are sequential, as the function
//! issues them), and one transaction per commit: the checks, the writes, the marker and the
//! previous marker's delete. A conflict costs a run.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use curator_framework::CuratorFramework;
use curator_framework::ops::transaction::TransactionOp;
use curator_framework::paths;
use curator_framework::retry::{ExponentialBackoffRetry, RetryPolicy, SharedRetryPolicy};
use curator_framework::{Error, Result};

/// The name prefix of outcome markers under an [`Optimistic`]'s path.
pub const MARKER_PREFIX: &str = "_txn-";

/// Runs optimistic transactions; see the [module docs](self). Cheap to clone (clones share the
/// pending markers).
#[derive(Clone)]
pub struct Optimistic {
    client: CuratorFramework,
    path: Arc<str>,
    retry: SharedRetryPolicy,
    /// Markers of applied commits, deleted with the next commit.
    pending: Arc<Mutex<Vec<String>>>,
}

impl fmt::Debug for Optimistic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Optimistic")
            .field("path", &self.path)
            .field("retry", &self.retry)
            .field("pending_markers", &self.pending.lock().len())
            .finish()
    }
}

/// Options of an [`Optimistic`]: see [`Optimistic::builder`].
#[derive(Debug)]
pub struct OptimisticBuilder {
    client: CuratorFramework,
    path: String,
    retry: SharedRetryPolicy,
}

impl OptimisticBuilder {
    /// How often and after what pause a transaction that met a conflict runs again (default:
    /// exponential from 5 ms, at most 200 ms apart, 10 times).
    pub fn retry_policy(mut self, policy: impl RetryPolicy + 'static) -> Self {
        self.retry = SharedRetryPolicy::new(policy);
        self
    }

    /// The runner.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path.
    pub fn build(self) -> Result<Optimistic> {
        paths::validate(&self.path)?;
        Ok(Optimistic {
            client: self.client,
            path: Arc::from(self.path),
            retry: self.retry,
            pending: Arc::default(),
        })
    }
}

impl Optimistic {
    /// Options of a runner whose outcome markers live under `path` (made, as a container, when
    /// first needed).
    pub fn builder(client: CuratorFramework, path: &str) -> OptimisticBuilder {
        OptimisticBuilder {
            client,
            path: path.to_owned(),
            retry: SharedRetryPolicy::new(
                ExponentialBackoffRetry::new(Duration::from_millis(5), 10)
                    .with_max_sleep(Duration::from_millis(200)),
            ),
        }
    }

    /// Runs `transaction` and commits what it wrote with checks of what it read; runs it again
    /// on a conflict while the retry policy allows. Returns what the committed run returned.
    /// A run that returns `Err` commits nothing and ends the call with that error.
    ///
    /// # Errors
    /// The function's errors; [`Error::Transaction`] for the last conflict when the retry
    /// policy gave up, or for a write that cannot succeed (a `set` of a missing node that was
    /// not read, for example); the client's errors (see the module docs for the one case where
    /// the outcome is unknown).
    pub async fn run<R, F, Fut>(&self, mut transaction: F) -> Result<R>
    where
        F: FnMut(Txn) -> Fut,
        Fut: Future<Output = Result<R>>,
    {
        let started = tokio::time::Instant::now();
        let mut retries = 0;
        loop {
            let txn = Txn {
                client: self.client.clone(),
                state: Arc::default(),
            };
            let value = transaction(txn.clone()).await?;
            let ops = txn.state.lock().ops();
            let error = match self.commit(ops).await {
                Ok(()) => return Ok(value),
                Err(error) => error,
            };
            if !is_conflict(&error) {
                return Err(error);
            }
            match self.retry.allow_retry(retries, started.elapsed(), &error) {
                Some(pause) => {
                    retries += 1;
                    tokio::time::sleep(pause).await;
                }
                None => return Err(error),
            }
        }
    }

    /// Markers of applied (or unresolved) commits not deleted yet.
    pub fn pending_markers(&self) -> Vec<String> {
        self.pending.lock().clone()
    }

    /// Deletes the pending markers now (otherwise the next commit does).
    ///
    /// # Errors
    /// The client's errors; the markers not deleted stay pending.
    pub async fn flush_markers(&self) -> Result<()> {
        let markers = std::mem::take(&mut *self.pending.lock());
        let mut first_error = None;
        for marker in markers {
            match self.client.delete().for_path(&marker).await {
                Ok(()) | Err(Error::NoNode) => {}
                Err(error) => {
                    self.pending.lock().push(marker);
                    first_error.get_or_insert(error);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Commits one run: the marker first, then the checks and writes, then the deletes of
    /// earlier markers.
    async fn commit(&self, ops: Vec<TransactionOp>) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        let marker = paths::join(
            &self.path,
            &format!("{MARKER_PREFIX}{}", curator_framework::random::uuid()),
        );
        let stale = std::mem::take(&mut *self.pending.lock());
        let steps = ops.len();
        let mut transaction = self
            .client
            .transaction()
            .op(TransactionOp::create(&marker, []));
        for op in ops.iter().cloned() {
            transaction = transaction.op(op);
        }
        for old in &stale {
            transaction = transaction.delete(old);
        }
        let mut result = transaction.commit().await;
        if matches!(&result, Err(Error::Transaction { index: 0, cause }) if **cause == Error::NoNode)
        {
            // The markers' parent is missing: make it, and commit again (nothing was applied).
            self.client
                .create()
                .creating_parent_containers_if_needed()
                .with_mode(curator_framework::CreateMode::Container)
                .for_path(&self.path, [])
                .await
                .or_else(|error| match error {
                    Error::NodeExists => Ok(String::new()),
                    other => Err(other),
                })?;
            let mut again = self
                .client
                .transaction()
                .op(TransactionOp::create(&marker, []));
            for op in ops {
                again = again.op(op);
            }
            for old in &stale {
                again = again.delete(old);
            }
            result = again.commit().await;
        }
        match result {
            Ok(_) => {
                self.pending.lock().push(marker);
                Ok(())
            }
            // Our own marker exists: a retry of a commit that was applied.
            Err(Error::Transaction { index: 0, cause }) if *cause == Error::NodeExists => {
                self.pending.lock().push(marker);
                Ok(())
            }
            Err(Error::Transaction { index, cause })
                if index > steps && *cause == Error::NoNode =>
            {
                // An earlier marker is gone already (cleaned up elsewhere): forget them all;
                // nothing was applied. A conflict: run again.
                Err(Error::Transaction { index, cause })
            }
            Err(Error::Transaction { index, cause }) => {
                self.pending.lock().extend(stale);
                Err(Error::Transaction {
                    // The caller's steps: the marker is not one of them.
                    index: index.saturating_sub(1),
                    cause,
                })
            }
            Err(error) if error.is_retried() || error == Error::OperationTimeout => {
                self.resolve(marker, stale, error).await
            }
            Err(error) => {
                self.pending.lock().extend(stale);
                Err(error)
            }
        }
    }

    /// A commit whose reply was lost: its marker says whether it was applied.
    async fn resolve(&self, marker: String, stale: Vec<String>, lost: Error) -> Result<()> {
        let asked = async {
            self.client.sync().for_path(&self.path).await?;
            self.client.check_exists().for_path(&marker).await
        };
        match asked.await {
            Ok(Some(_)) => {
                self.pending.lock().push(marker);
                Ok(())
            }
            Ok(None) => {
                self.pending.lock().extend(stale);
                // Not applied: a conflict in effect (run again under the policy).
                Err(Error::Transaction {
                    index: 0,
                    cause: Box::new(lost),
                })
            }
            Err(error) => {
                // Unknown: keep both, so the marker is deleted if it exists.
                let mut pending = self.pending.lock();
                pending.extend(stale);
                pending.push(marker);
                Err(error)
            }
        }
    }
}

/// Whether running again may succeed: a step met a changed version, a node that appeared or
/// vanished, or a commit that was not applied.
fn is_conflict(error: &Error) -> bool {
    match error {
        Error::Transaction { cause, .. } => {
            matches!(
                **cause,
                Error::BadVersion | Error::NodeExists | Error::NoNode
            ) || cause.is_retried()
                || **cause == Error::OperationTimeout
        }
        _ => false,
    }
}

/// What a run read of one node.
#[derive(Debug, Clone)]
enum Read {
    Present { data: Vec<u8>, version: i32 },
    Absent,
}

/// What a run writes to one node (the last intent per node).
#[derive(Debug, Clone)]
enum Write {
    Set(Vec<u8>),
    Create(Vec<u8>),
    Delete,
}

/// What one run read and wrote.
#[derive(Debug, Default)]
struct State {
    reads: BTreeMap<String, Read>,
    writes: BTreeMap<String, Write>,
}

/// One run of an optimistic transaction: reads go to the server (once per node), writes are
/// kept until the commit. A handle: clones share the run (so it can move into the future the
/// function returns). See [`Optimistic::run`].
#[derive(Clone)]
pub struct Txn {
    client: CuratorFramework,
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for Txn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("Txn")
            .field("reads", &state.reads.keys().collect::<Vec<_>>())
            .field("writes", &state.writes)
            .finish()
    }
}

impl Txn {
    /// The data of `path` (`None` when it does not exist): this run's own write if it made
    /// one, else what this run read before, else a read from the server, remembered with its
    /// version for the commit's check.
    ///
    /// # Errors
    /// The client's errors.
    pub async fn get(&self, path: &str) -> Result<Option<Vec<u8>>> {
        if let Some(known) = self.state.lock().known(path) {
            return Ok(known);
        }
        let read = match self.client.get_data().for_path(path).await {
            Ok((data, stat)) => Read::Present {
                data,
                version: stat.version,
            },
            Err(Error::NoNode) => Read::Absent,
            Err(error) => return Err(error),
        };
        let mut state = self.state.lock();
        // A concurrent get of the same path (the run's own) may have read it first: keep the
        // first read, so the run sees one version of each node.
        state.reads.entry(path.to_owned()).or_insert(read);
        Ok(state.known(path).flatten())
    }

    /// Sets the data of `path` at the commit (the node must exist then; at the version read,
    /// if this run read it). After a `create` in this run, the node is created with `data`.
    pub fn set(&self, path: &str, data: impl Into<Vec<u8>>) {
        let data = data.into();
        let mut state = self.state.lock();
        let write = match state.writes.get(path) {
            Some(Write::Create(_)) => Write::Create(data),
            _ => Write::Set(data),
        };
        state.writes.insert(path.to_owned(), write);
    }

    /// Creates `path` (persistent) with `data` at the commit; the commit fails with a conflict
    /// if it exists by then. After a `delete` in this run, the node's data is set instead.
    pub fn create(&self, path: &str, data: impl Into<Vec<u8>>) {
        let data = data.into();
        let mut state = self.state.lock();
        let write = match state.writes.get(path) {
            Some(Write::Delete) => Write::Set(data),
            _ => Write::Create(data),
        };
        state.writes.insert(path.to_owned(), write);
    }

    /// Deletes `path` at the commit (at the version read, if this run read it). After a
    /// `create` in this run, nothing is done with the node.
    pub fn delete(&self, path: &str) {
        let mut state = self.state.lock();
        match state.writes.get(path) {
            Some(Write::Create(_)) => {
                state.writes.remove(path);
            }
            _ => {
                state.writes.insert(path.to_owned(), Write::Delete);
            }
        }
    }
}

impl State {
    /// What the run knows of `path` without asking: `Some(data)` from its writes or reads.
    fn known(&self, path: &str) -> Option<Option<Vec<u8>>> {
        match self.writes.get(path) {
            Some(Write::Set(data) | Write::Create(data)) => return Some(Some(data.clone())),
            Some(Write::Delete) => return Some(None),
            None => {}
        }
        self.reads.get(path).map(|read| match read {
            Read::Present { data, .. } => Some(data.clone()),
            Read::Absent => None,
        })
    }

    /// The commit's steps: checks of the nodes read and not written, then the writes.
    fn ops(&self) -> Vec<TransactionOp> {
        let version = |path: &str| match self.reads.get(path) {
            Some(Read::Present { version, .. }) => Some(*version),
            _ => None,
        };
        let checks = self.reads.iter().filter_map(|(path, read)| match read {
            Read::Present { version, .. } if !self.writes.contains_key(path) => {
                Some(TransactionOp::check(path, *version))
            }
            _ => None,
        });
        let writes = self.writes.iter().map(|(path, write)| match write {
            Write::Set(data) => {
                let op = TransactionOp::set_data(path, data);
                match version(path) {
                    Some(version) => op.with_version(version),
                    None => op,
                }
            }
            Write::Create(data) => TransactionOp::create(path, data),
            Write::Delete => {
                let op = TransactionOp::delete(path);
                match version(path) {
                    Some(version) => op.with_version(version),
                    None => op,
                }
            }
        });
        checks.chain(writes).collect()
    }
}
