//! Outcome markers: what makes puts and takes exactly once across lost replies (the queues'
//! opt-in exactly-once mode).
//!
//! Each write goes in one transaction with the creation of a persistent marker in the queue's
//! outcome directory, `<path>-outcomes` (a sibling, so Curator's consumers, which warn about
//! and skip foreign children of the queue node, never see it):
//! - a put creates the sequential item and `put-<uuid>` (empty);
//! - a take deletes the item at the version it read and creates `<item name>`, holding the
//!   taker's token. Only one transaction can delete the item, so only one such marker is made.
//!
//! When the reply is lost (connection loss, session expiry), the writer asks after a `sync`
//! whether its marker exists (and, for a take, holds its token): that is the outcome. A
//! framework retry that met our own applied write shows up as the marker's `NodeExists` (put) or
//! the item's `NoNode` (take), and is resolved the same way. Once the outcome is known the
//! writer deletes its marker (guaranteed delete: retried in the background after a failure).

use std::future::IntoFuture;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use curator_framework::ops::transaction::{TransactionOp, TransactionResult};
use curator_framework::recipe::Backoff;
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};

/// The name prefix of a put's marker.
const PUT_MARKER_PREFIX: &str = "put-";

/// The outcome directory of the queue at `path`.
pub(crate) fn outcome_path(path: &str) -> Result<String> {
    if path == "/" {
        return Err(Error::InvalidArgument(
            "an exactly-once queue needs a path other than `/` (its outcome markers live in \
             the sibling `<path>-outcomes`)"
                .into(),
        ));
    }
    let outcomes = format!("{path}-outcomes");
    paths::validate(&outcomes)?;
    Ok(outcomes)
}

/// The outcome markers of one queue handle.
#[derive(Debug)]
pub(crate) struct Outcomes {
    client: CuratorFramework,
    /// The queue's node.
    queue: String,
    /// `<queue>-outcomes`.
    dir: String,
    /// What this handle writes into its take markers.
    token: String,
    /// How the queue node is made again when it is missing (a container for the simple queue,
    /// persistent for the others, as in Curator).
    queue_mode: CreateMode,
}

impl Outcomes {
    pub(crate) fn new(
        client: CuratorFramework,
        queue: &str,
        queue_mode: CreateMode,
    ) -> Result<Self> {
        Ok(Self {
            queue_mode,
            dir: outcome_path(queue)?,
            queue: queue.to_owned(),
            client,
            token: curator_framework::random::uuid().to_string(),
        })
    }

    /// Creates a persistent-sequential item at `prefix_path` (`<queue>/<prefix>`) holding `data`,
    /// exactly once. Returns the item's path, or `None` when the reply was lost (the item was
    /// then stored, once, under a name this handle did not learn).
    ///
    /// Errors other than [`Error::Closed`] mean nothing was stored; `Closed` (the client closed
    /// while the outcome was unknown) means unknown.
    ///
    /// With `make_parent` false (the bucketed layout) a missing parent is not made: the put
    /// answers [`Error::NoNode`] (nothing stored) and the caller picks another bucket.
    pub(crate) async fn put(
        &self,
        prefix_path: &str,
        data: &[u8],
        make_parent: bool,
    ) -> Result<Option<String>> {
        let marker = paths::join(
            &self.dir,
            &format!("{PUT_MARKER_PREFIX}{}", curator_framework::random::uuid()),
        );
        loop {
            let committed = self
                .client
                .transaction()
                .op(TransactionOp::create(prefix_path, data)
                    .with_mode(CreateMode::PersistentSequential))
                .op(TransactionOp::create(&marker, []))
                .commit()
                .await;
            match committed {
                Ok(results) => {
                    self.discard(&marker).await;
                    let node = results.into_iter().next().and_then(|r| match r {
                        TransactionResult::Create { path, .. } => Some(path),
                        _ => None,
                    });
                    return Ok(node);
                }
                // A framework retry after a lost reply met our own marker: the first attempt
                // was applied (the retry, failing as a whole, stored nothing).
                Err(Error::Transaction { index: 1, cause }) if *cause == Error::NodeExists => {
                    self.discard(&marker).await;
                    return Ok(None);
                }
                Err(Error::Transaction { index: 0, cause })
                    if *cause == Error::NoNode && !make_parent =>
                {
                    return Err(Error::NoNode);
                }
                Err(Error::Transaction { index, cause }) if *cause == Error::NoNode => {
                    self.create_parent(index == 0).await?;
                }
                Err(error) if error.is_retried() => {
                    if self.resolve(&marker).await?.is_some() {
                        self.discard(&marker).await;
                        return Ok(None);
                    }
                    tracing::debug!(queue = %self.queue, "exactly-once put not applied; again");
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Deletes the item `<queue>/<name>` at `version`, exactly once: `true` when this handle
    /// took it, `false` when another consumer did (or it changed). In the bucketed layout
    /// `name` is `bucket-<n>/<item>` and the marker `bucket-<n>.<item>`.
    ///
    /// Errors other than [`Error::Closed`] mean this handle did not take it; `Closed` means
    /// unknown.
    pub(crate) async fn take(&self, name: &str, version: i32) -> Result<bool> {
        let item = paths::join(&self.queue, name);
        let marker = paths::join(&self.dir, &crate::bucket::flat_name(name));
        loop {
            let committed = self
                .client
                .transaction()
                .op(TransactionOp::delete(&item).with_version(version))
                .op(TransactionOp::create(&marker, self.token.as_bytes()))
                .commit()
                .await;
            match committed {
                Ok(_) => {
                    self.discard(&marker).await;
                    return Ok(true);
                }
                // The item is gone or changed: another consumer took it, or a framework retry
                // met our own applied take. The marker tells.
                Err(Error::Transaction { index: 0, cause })
                    if matches!(*cause, Error::NoNode | Error::BadVersion) =>
                {
                    return self.settle(&marker).await;
                }
                Err(Error::Transaction { index: 1, cause }) if *cause == Error::NoNode => {
                    self.create_parent(false).await?;
                }
                Err(Error::Transaction { index: 1, cause }) if *cause == Error::NodeExists => {
                    // A marker for an item still in place: left by someone else's bug or hand.
                    tracing::warn!(marker, "stale take marker in the way; item skipped");
                    return Ok(false);
                }
                Err(error) if error.is_retried() => {
                    // `None`: not applied; the item may still be there, so try again.
                    if let Some(token) = self.resolve(&marker).await? {
                        let ours = token == self.token.as_bytes();
                        if ours {
                            self.discard(&marker).await;
                        }
                        return Ok(ours);
                    }
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// After the item was found gone: whether the take that removed it was ours.
    async fn settle(&self, marker: &str) -> Result<bool> {
        match self.client.get_data().for_path(marker).await {
            Ok((token, _)) if token == self.token.as_bytes() => {
                self.discard(marker).await;
                Ok(true)
            }
            Ok(_) | Err(Error::NoNode) => Ok(false),
            Err(error) if error.is_retried() => {
                Ok(self.resolve(marker).await?.as_deref() == Some(self.token.as_bytes()))
            }
            Err(error) => Err(error),
        }
    }

    /// The marker's data if it exists, asked after a `sync` and retried through connection
    /// trouble and session expiry until the server answers (or the client closes).
    async fn resolve(&self, marker: &str) -> Result<Option<Vec<u8>>> {
        let mut backoff = Backoff::new(Duration::from_millis(20), Duration::from_secs(1));
        loop {
            let sync = self.client.sync().for_path(&self.dir).into_future();
            let read = self.client.get_data().for_path(marker).into_future();
            let (synced, read) = futures::join!(sync, read);
            match (synced, read) {
                (Ok(_), Ok((data, _))) => return Ok(Some(data)),
                (Ok(_), Err(Error::NoNode)) => return Ok(None),
                (_, Err(Error::Closed)) | (Err(Error::Closed), _) => return Err(Error::Closed),
                (Err(error), _) | (_, Err(error))
                    if !error.is_retried() && error != Error::NoNode =>
                {
                    return Err(error);
                }
                _ => {}
            }
            tracing::debug!(marker, "outcome of a queue write unknown; asking again");
            backoff.wait().await;
        }
    }

    /// Deletes a marker whose outcome is known; after a connection failure the framework keeps
    /// deleting it in the background.
    async fn discard(&self, marker: &str) {
        if let Err(error) = self
            .client
            .delete()
            .guaranteed()
            .quietly()
            .for_path(marker)
            .await
        {
            tracing::debug!(%error, marker, "outcome marker left to the background delete");
        }
    }

    /// Creates the queue node (`queue`) or the outcome directory, with container parents. The
    /// directory is persistent: a container would be removed by the server whenever its last
    /// marker goes, and every write after that would pay a failed transaction to make it again.
    async fn create_parent(&self, queue: bool) -> Result<()> {
        let (path, mode) = if queue {
            (&self.queue, self.queue_mode)
        } else {
            (&self.dir, CreateMode::Persistent)
        };
        match self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(mode)
            .for_path(path, [])
            .await
        {
            Ok(_) | Err(Error::NodeExists) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Deletes the markers created more than `max_age` ago (by the server's clock as the
    /// markers' creation times record it, compared with this host's clock): those of takers and
    /// producers that died before they learned their outcome. Returns how many.
    pub(crate) async fn purge(&self, max_age: Duration) -> Result<usize> {
        let names = match self.client.get_children().for_path(&self.dir).await {
            Ok((names, _)) => names,
            Err(Error::NoNode) => return Ok(0),
            Err(error) => return Err(error),
        };
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let max_age_ms = i64::try_from(max_age.as_millis()).unwrap_or(i64::MAX);
        let mut purged = 0;
        for name in names {
            let marker = paths::join(&self.dir, &name);
            let Some(stat) = self.client.check_exists().for_path(&marker).await? else {
                continue;
            };
            if now_ms.saturating_sub(stat.ctime) < max_age_ms {
                continue;
            }
            match self
                .client
                .delete()
                .with_version(stat.version)
                .for_path(&marker)
                .await
            {
                Ok(()) => purged += 1,
                Err(Error::NoNode | Error::BadVersion) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(purged)
    }
}
