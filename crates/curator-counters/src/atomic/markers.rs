//! Outcome markers: what makes an update exactly once across lost replies.
//!
//! Each write goes in one transaction with the creation of an empty child
//! `<path>/_atomic-<uuid>`. When the reply is lost, the update asks (after a `sync`) whether its
//! marker exists. A marker stays until the instance's next write deletes it in the same
//! transaction, until `flush_markers`, or until the instance is dropped.

use std::future::IntoFuture;
use std::time::Duration;

use curator_framework::ops::transaction::TransactionOp;
use curator_framework::recipe::Backoff;
use curator_framework::{Error, Result, Stat, paths};
use futures::future::join_all;

use super::MARKER_PREFIX;
use super::update::{Attempt, Core};

/// An update's outcome that a lost reply left unknown: `marker` exists if it was applied.
#[derive(Debug)]
pub(super) struct Unresolved {
    pub(super) marker: String,
    pub(super) pre: Vec<u8>,
    pub(super) post: Vec<u8>,
    /// Older markers the write deleted if it was applied.
    pub(super) stale: Vec<String>,
}

impl Core {
    pub(super) async fn write_with_marker(
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

    pub(super) async fn write_plain(
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
    pub(super) async fn resolve(&self, marker: &str) -> Result<bool> {
        let mut backoff = Backoff::new(Duration::from_millis(20), Duration::from_secs(1));
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
            backoff.wait().await;
        }
    }

    /// Bookkeeping after an applied write: its marker is now pending, the ones it deleted not.
    pub(super) fn applied(&self, marker: String, deleted: &[String]) {
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

    pub(super) async fn flush(&self) -> Result<()> {
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
}

impl Drop for Core {
    /// The markers of this instance's last writes are deleted in the background, as a task of
    /// the client's (so `client.close()` ends it; a process about to close its client calls
    /// `flush_markers` first).
    fn drop(&mut self) {
        let pending = std::mem::take(&mut *self.pending.lock());
        if pending.is_empty() {
            return;
        }
        let client = self.client.clone();
        self.tasks
            .spawn(async move {
                for marker in pending {
                    let _ = client.delete().quietly().for_path(&marker).await;
                }
            })
            .detach();
    }
}
