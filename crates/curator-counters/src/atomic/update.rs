//! One update: optimistic read-and-write attempts under the retry policy, then (if configured)
//! the same under the promotion lock.

use curator_framework::recipe::{RecipeCore, RecipeOptions};
use curator_framework::retry::{RetryPolicy, SharedRetryPolicy};
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};
use curator_locks::InterProcessMutex;
use futures::future::OptionFuture;
use parking_lot::Mutex;
use std::future::IntoFuture;
use tokio::time::Instant;

use super::markers::Unresolved;
use super::{AtomicStats, AtomicValue, MARKER_PREFIX, PromotedToLock};

/// How many optimistic attempts an update makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Attempts {
    /// One (compare-and-set): a conflict is an answer, not a reason to retry or promote.
    Once,
    /// As many as the retry policy allows, then under the promotion lock if there is one.
    UnderPolicy,
}

/// What one attempt did.
pub(super) enum Attempt {
    Applied { pre: Vec<u8>, post: Vec<u8> },
    Rejected { current: Vec<u8> },
    Conflict { current: Vec<u8> },
}

/// How a series of attempts ended.
enum Outcome {
    Done { pre: Vec<u8>, post: Vec<u8> },
    Rejected { current: Vec<u8> },
    GaveUp { current: Vec<u8> },
}

/// The shared state of an atomic value's clones.
pub(crate) struct Core {
    pub(super) client: CuratorFramework,
    pub(super) path: String,
    pub(super) retry_policy: SharedRetryPolicy,
    pub(super) promoted: Option<PromotedToLock>,
    pub(super) markers: bool,
    /// This instance's outcome marker (see `markers`).
    pub(super) marker: String,
    /// The marker's version as this instance left it; `None` before it exists.
    pub(super) marker_version: Mutex<Option<i32>>,
    /// With markers, the instance's updates go one at a time: only one moves the marker.
    pub(super) serial: tokio::sync::Mutex<()>,
    /// The value's name, and its tasks: where the markers left at drop are deleted.
    pub(super) recipe: RecipeCore,
}

/// One update in progress: the computation, the attempts' statistics, and the write whose
/// outcome a lost reply left unknown.
struct UpdateRun<'a, F> {
    core: &'a Core,
    compute: F,
    stats: AtomicStats,
    unresolved: Option<Unresolved>,
}

impl Core {
    pub(super) fn new(
        client: CuratorFramework,
        path: String,
        retry_policy: SharedRetryPolicy,
        promoted: Option<PromotedToLock>,
        markers: bool,
        options: &RecipeOptions,
    ) -> Self {
        let recipe = RecipeCore::new(&client, "DistributedAtomicValue", &path, options);
        Self {
            client,
            retry_policy,
            promoted,
            marker: paths::join(
                &path,
                &format!("{MARKER_PREFIX}{}", curator_framework::random::uuid()),
            ),
            path,
            markers,
            marker_version: Mutex::new(None),
            serial: tokio::sync::Mutex::new(()),
            recipe,
        }
    }

    /// Applies `compute` to the current value atomically.
    pub(super) async fn update(
        &self,
        compute: impl FnMut(&[u8]) -> Result<Option<Vec<u8>>>,
        attempts: Attempts,
    ) -> Result<AtomicValue<Vec<u8>>> {
        let _serial = if self.markers {
            Some(self.serial.lock().await)
        } else {
            None
        };
        let mut run = UpdateRun {
            core: self,
            compute,
            stats: AtomicStats::default(),
            unresolved: None,
        };
        let started = Instant::now();
        let mut outcome = run
            .attempts(&self.retry_policy, attempts, Tries::Optimistic)
            .await?;
        run.stats.optimistic_time = started.elapsed();
        if let (Outcome::GaveUp { .. }, Some(promoted), Attempts::UnderPolicy) =
            (&outcome, &self.promoted, attempts)
        {
            let promoted_start = Instant::now();
            let mutex =
                InterProcessMutex::builder(self.client.clone(), &promoted.lock_path).build()?;
            let guard = match promoted.timeout {
                Some(timeout) => mutex.acquire_timeout(timeout).await?,
                None => Some(mutex.acquire().await?),
            };
            if let Some(guard) = guard {
                let result = run
                    .attempts(&promoted.retry_policy, attempts, Tries::Promoted)
                    .await;
                if let Err(error) = guard.release().await {
                    tracing::debug!(%error, "releasing the promotion lock failed; it is released in the background");
                }
                outcome = result?;
            }
            run.stats.promoted_time = promoted_start.elapsed();
        }
        let stats = run.stats;
        Ok(match outcome {
            Outcome::Done { pre, post } => AtomicValue {
                succeeded: true,
                pre_value: pre,
                post_value: post,
                stats,
            },
            Outcome::Rejected { current } | Outcome::GaveUp { current } => AtomicValue {
                succeeded: false,
                pre_value: current.clone(),
                post_value: current,
                stats,
            },
        })
    }

    pub(super) async fn force_set(&self, new: &[u8]) -> Result<()> {
        match self.client.set_data().for_path(&self.path, new).await {
            Ok(_) => Ok(()),
            Err(Error::NoNode) => self
                .client
                .create()
                .creating_parent_containers_if_needed()
                .or_set_data()
                .for_path(&self.path, new)
                .await
                .map(drop),
            Err(error) => Err(error),
        }
    }

    pub(super) async fn initialize(&self, initial: &[u8]) -> Result<bool> {
        match self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .idempotent()
            .for_path(&self.path, initial)
            .await
        {
            Ok(_) => Ok(true),
            Err(Error::NodeExists) => Ok(false),
            Err(error) => Err(error),
        }
    }

    pub(super) async fn ensure_parent(&self) -> Result<()> {
        let Some(parent) = paths::parent(&self.path).filter(|p| *p != "/") else {
            return Ok(());
        };
        match self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(CreateMode::Container)
            .for_path(parent, [])
            .await
        {
            Ok(_) | Err(Error::NodeExists) => Ok(()),
            Err(error) => Err(error),
        }
    }
}

/// Which counter of [`AtomicStats`] the attempts count in.
#[derive(Debug, Clone, Copy)]
enum Tries {
    Optimistic,
    Promoted,
}

impl<F> UpdateRun<'_, F>
where
    F: FnMut(&[u8]) -> Result<Option<Vec<u8>>>,
{
    /// Attempts until one applies or is rejected, or `policy` gives up on conflicts.
    async fn attempts(
        &mut self,
        policy: &dyn RetryPolicy,
        attempts: Attempts,
        tries: Tries,
    ) -> Result<Outcome> {
        let started = Instant::now();
        let mut retry_count = 0;
        loop {
            match tries {
                Tries::Optimistic => self.stats.optimistic_tries += 1,
                Tries::Promoted => self.stats.promoted_lock_tries += 1,
            }
            match self.attempt().await? {
                Attempt::Applied { pre, post } => return Ok(Outcome::Done { pre, post }),
                // (An earlier unresolved write was checked before this attempt's read.)
                Attempt::Rejected { current } => return Ok(Outcome::Rejected { current }),
                Attempt::Conflict { current } => {
                    let sleep = match attempts {
                        Attempts::Once => None,
                        Attempts::UnderPolicy => {
                            policy.allow_retry(retry_count, started.elapsed(), &Error::BadVersion)
                        }
                    };
                    let Some(sleep) = sleep else {
                        return Ok(match self.settle().await? {
                            Some(done) => done,
                            None => Outcome::GaveUp { current },
                        });
                    };
                    retry_count += 1;
                    if !sleep.is_zero() {
                        tokio::time::sleep(sleep).await;
                    }
                }
            }
        }
    }

    /// Before giving up: an update whose outcome is still unknown may have been applied.
    async fn settle(&mut self) -> Result<Option<Outcome>> {
        let Some(open) = self.unresolved.take() else {
            return Ok(None);
        };
        Ok(self.core.resolve(open.expect).await?.then(|| {
            self.core.applied(open.expect);
            Outcome::Done {
                pre: open.pre,
                post: open.post,
            }
        }))
    }

    /// One read-and-write. The check of an unresolved marker and the read go out together
    /// (ZooKeeper answers a session's requests in order).
    async fn attempt(&mut self) -> Result<Attempt> {
        let core = self.core;
        let check: OptionFuture<_> = self
            .unresolved
            .as_ref()
            .map(|_| {
                core.client
                    .check_exists()
                    .for_path(&core.marker)
                    .into_future()
            })
            .into();
        let read = core.client.get_data().for_path(&core.path).into_future();
        let (checked, read) = futures::join!(check, read);
        if let Some(checked) = checked {
            let open = self
                .unresolved
                .take()
                .expect("a check is sent only for an open outcome");
            let applied = match checked {
                Ok(stat) => open.expect.met(stat.as_ref()),
                Err(_) => core.resolve(open.expect).await?,
            };
            if applied {
                core.applied(open.expect);
                return Ok(Attempt::Applied {
                    pre: open.pre,
                    post: open.post,
                });
            }
        }
        let (current, stat) = match read {
            Ok((bytes, stat)) => (bytes, Some(stat)),
            Err(Error::NoNode) => (Vec::new(), None),
            Err(error) => return Err(error),
        };
        let Some(new) = (self.compute)(&current)? else {
            return Ok(Attempt::Rejected { current });
        };
        if core.markers {
            core.write_with_marker(current, stat, new, &mut self.unresolved)
                .await
        } else {
            core.write_plain(current, stat, new).await
        }
    }
}
