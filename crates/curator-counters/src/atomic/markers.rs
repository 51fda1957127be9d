//! Outcome markers: what makes an update exactly once across lost replies.
//!
//! Each instance owns one marker, an empty child `<path>/_atomic-<uuid>`. Its first write
//! creates the marker in the same transaction; every later write sets the marker's data at the
//! version the instance knows, in the same transaction (the instance's updates go one at a
//! time, so only it moves that version). When a reply is lost, the update asks (after a `sync`)
//! whether the marker is there (first write) or has reached the version the write gives it.
//! Two data writes per transaction cost the server less than a write, a create and a delete
//! (the marker of each write deleted with the next), the design before this one.
//! The marker stays until `flush_markers` or until the instance is dropped.

use std::future::IntoFuture;
use std::time::Duration;

use curator_framework::ops::transaction::TransactionOp;
use curator_framework::recipe::Backoff;
use curator_framework::{Error, Result, Stat};

use super::update::{Attempt, Core};

/// What the marker looks like once a write is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expect {
    /// The write created it.
    Created,
    /// The write set it to this version.
    Version(i32),
}

impl Expect {
    /// Whether the marker's stat (`None`: no marker) shows the write applied.
    pub(super) fn met(self, stat: Option<&Stat>) -> bool {
        match (self, stat) {
            (Expect::Created, Some(_)) => true,
            (Expect::Version(version), Some(stat)) => stat.version >= version,
            (_, None) => false,
        }
    }

    /// The marker's version after the write.
    fn version(self) -> i32 {
        match self {
            Expect::Created => 0,
            Expect::Version(version) => version,
        }
    }
}

/// An update's outcome that a lost reply left unknown: the marker shows `expect` if it applied.
#[derive(Debug)]
pub(super) struct Unresolved {
    pub(super) expect: Expect,
    pub(super) pre: Vec<u8>,
    pub(super) post: Vec<u8>,
}

impl Core {
    /// A write of `new` at the value's `stat`, with the marker's step in the same transaction.
    /// Called with the instance's update lock held.
    pub(super) async fn write_with_marker(
        &self,
        current: Vec<u8>,
        stat: Option<Stat>,
        new: Vec<u8>,
        unresolved: &mut Option<Unresolved>,
    ) -> Result<Attempt> {
        let write = match stat {
            Some(stat) => TransactionOp::set_data(&self.path, &new).with_version(stat.version),
            None => {
                self.ensure_parent().await?;
                TransactionOp::create(&self.path, &new)
            }
        };
        let known = *self.marker_version.lock();
        let (step, expect) = match known {
            None => (TransactionOp::create(&self.marker, []), Expect::Created),
            Some(version) => (
                TransactionOp::set_data(&self.marker, []).with_version(version),
                Expect::Version(version + 1),
            ),
        };
        let committed = self.client.transaction().op(write).op(step).commit().await;
        match committed {
            Ok(_) => {
                self.applied(expect);
                Ok(Attempt::Applied {
                    pre: current,
                    post: new,
                })
            }
            Err(Error::Transaction { index: 1, cause }) => {
                // The value's step would have applied, the marker's did not: the marker is not
                // as this instance knows it (flushed meanwhile, or deleted by someone). Nothing
                // was applied; learn the marker afresh and go again.
                tracing::debug!(marker = %self.marker, cause = %cause, "outcome marker not as known; reading it again");
                let stat = self.client.check_exists().for_path(&self.marker).await?;
                *self.marker_version.lock() = stat.map(|stat| stat.version);
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
                    expect,
                    pre: current.clone(),
                    post: new,
                });
                Ok(Attempt::Conflict { current })
            }
            Err(error) if error.is_retried() => {
                if self.resolve(expect).await? {
                    self.applied(expect);
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

    /// Whether the marker shows `expect`, asked after a `sync` and retried through connection
    /// trouble and session expiry until the server answers (or the client closes).
    pub(super) async fn resolve(&self, expect: Expect) -> Result<bool> {
        let mut backoff = Backoff::new(Duration::from_millis(20), Duration::from_secs(1));
        loop {
            let sync = self.client.sync().for_path(&self.path).into_future();
            let exists = self
                .client
                .check_exists()
                .for_path(&self.marker)
                .into_future();
            let (synced, exists) = futures::join!(sync, exists);
            match (synced, exists) {
                (Ok(_), Ok(stat)) => return Ok(expect.met(stat.as_ref())),
                (_, Err(Error::Closed)) | (Err(Error::Closed), _) => return Err(Error::Closed),
                (Err(error), _) | (_, Err(error)) if !error.is_retried() => return Err(error),
                _ => {}
            }
            tracing::debug!(marker = %self.marker, "outcome of an atomic update unknown; asking again");
            backoff.wait().await;
        }
    }

    /// Bookkeeping after an applied write: the marker's version it left.
    pub(super) fn applied(&self, expect: Expect) {
        *self.marker_version.lock() = Some(expect.version());
    }

    pub(super) async fn flush(&self) -> Result<()> {
        let _serial = self.serial.lock().await;
        if self.marker_version.lock().is_none() {
            return Ok(());
        }
        match self.client.delete().for_path(&self.marker).await {
            Ok(()) | Err(Error::NoNode) => {
                *self.marker_version.lock() = None;
                Ok(())
            }
            Err(error) => Err(error),
        }
    }
}

impl Drop for Core {
    /// The marker is deleted in the background, as a task of the client's (so
    /// `client.close()` ends it; a process about to close its client calls `flush_markers`
    /// first).
    fn drop(&mut self) {
        if self.marker_version.lock().is_none() {
            return;
        }
        let (client, marker) = (self.client.clone(), self.marker.clone());
        self.recipe
            .tasks()
            .spawn(async move {
                let _ = client.delete().quietly().for_path(&marker).await;
            })
            .detach();
    }
}
