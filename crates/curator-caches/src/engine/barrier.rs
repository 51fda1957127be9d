//! Waits for a zxid (the caches' `wait_for`): read-your-writes through a cache.
//!
//! A wait for zxid `z` resolves once the cache reflects every change up to `z`: a read of the
//! cache afterwards sees each write up to `z`, or a newer state. It goes in three steps, all on
//! the engine's task.
//!
//! 1. **Caught up.** The client's current session `S` must have seen a reply at `z` or later.
//!    ZooKeeper sends a session every notification of a change up to a reply's zxid before that
//!    reply, and the session hands a notification to its watcher before it reads the next
//!    frame, so from then on every notification of `S`'s watches up to `z` has reached the
//!    engine's watchers. What the engine knows of `S` comes from a *catch-up*: a `sync` of the
//!    cache's root and then a read, with `S` the current session before and after (session ids
//!    never come back, so both ran on `S`). The read's reply carries at least everything
//!    committed when the sync was sent, which includes every zxid this client had seen by then
//!    (on any session) and every write that had returned to anyone; so `S` has reached
//!    `client.last_zxid()` as read after it. A zxid still above that is not committed yet (or
//!    not of this ensemble): catch-ups repeat, backing off, until it is or the caller gives up.
//! 2. **Armed.** The engine takes in every notification already delivered to its watchers, then
//!    records its tick `t`: every read queued so far, by a notification or a walk (and every
//!    read those reads' replies queue in turn: they inherit the cause), has a cause up to `t`.
//! 3. **Done** when no read caused up to `t` is queued or in flight, the cache is not stale (no
//!    read failed and no watch ended or missed events since the last complete walk), and the
//!    session is still `S`. A new generation (a reconnect, a new session) drops the reads the
//!    wait counted on: armed waits then wait for the new walk (`rearm`). Another session than
//!    `S` sends the wait back to step 1: a new session may have reached a server behind `z`.

use std::sync::Arc;
use std::time::Duration;

use curator_framework::recipe::Backoff;
use curator_framework::{CuratorFramework, Error, Result};
use futures::future::{BoxFuture, FutureExt};
use tokio::sync::oneshot;
use tokio::time::Instant;

/// A wait for a zxid, as a cache handle hands it to its engine.
#[derive(Debug)]
pub(crate) struct Barrier {
    /// The zxid the cache must reflect.
    pub(crate) zxid: i64,
    /// Where the engine says when it does (dropped: the engine ended).
    pub(crate) done: oneshot::Sender<Result<()>>,
}

/// A wait whose session has reached its zxid, counting the reads it waits for.
#[derive(Debug)]
struct Armed {
    barrier: Barrier,
    /// The session that reached the zxid.
    session: i64,
    /// The wait is over once no read caused up to this tick is left.
    tick: u64,
}

/// What a catch-up found.
pub(super) struct CatchUp {
    /// The session it ran on, when that was one session from start to end.
    session: Option<i64>,
    /// `client.last_zxid()` after it.
    zxid: i64,
    result: Result<()>,
}

/// The pause before another catch-up after one that failed or found the zxid not reached,
/// from this, doubling...
const MIN_BACKOFF: Duration = Duration::from_millis(50);
/// ... up to this.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// The engine's waits.
pub(super) struct Barriers {
    /// Waits whose session has not reached their zxid yet (or whose session went away).
    waiting: Vec<Barrier>,
    armed: Vec<Armed>,
    /// A session and the zxid it is known to have reached.
    caught: Option<(i64, i64)>,
    /// The catch-up running, if any.
    pub(super) catch_up: Option<BoxFuture<'static, CatchUp>>,
    /// When the next catch-up may start, after one that failed or fell short.
    pub(super) retry_at: Option<Instant>,
    backoff: Backoff,
}

impl std::fmt::Debug for Barriers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Barriers")
            .field("waiting", &self.waiting.len())
            .field("armed", &self.armed.len())
            .field("caught", &self.caught)
            .field("catching_up", &self.catch_up.is_some())
            .finish_non_exhaustive()
    }
}

impl Barriers {
    pub(super) fn new() -> Self {
        Self {
            waiting: Vec::new(),
            armed: Vec::new(),
            caught: None,
            catch_up: None,
            retry_at: None,
            backoff: Backoff::new(MIN_BACKOFF, MAX_BACKOFF),
        }
    }

    pub(super) fn push(&mut self, barrier: Barrier) {
        self.waiting.push(barrier);
    }

    pub(super) fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.armed.is_empty()
    }

    /// Forgets the waits whose callers went away (dropped, timed out).
    pub(super) fn prune(&mut self) {
        self.waiting.retain(|barrier| !barrier.done.is_closed());
        self.armed.retain(|armed| !armed.barrier.done.is_closed());
    }

    /// Sends the armed waits of another session than `session` back to waiting.
    pub(super) fn demote(&mut self, session: Option<i64>) {
        let (keep, gone): (Vec<Armed>, Vec<Armed>) = std::mem::take(&mut self.armed)
            .into_iter()
            .partition(|armed| Some(armed.session) == session);
        self.armed = keep;
        self.waiting
            .extend(gone.into_iter().map(|armed| armed.barrier));
    }

    /// Whether `session` has reached `zxid` as far as the engine knows.
    fn covered(&self, session: i64, zxid: i64) -> bool {
        zxid <= 0
            || matches!(self.caught, Some((caught, reached)) if caught == session && zxid <= reached)
    }

    /// Whether a waiting wait can be armed on `session`.
    pub(super) fn can_arm(&self, session: Option<i64>) -> bool {
        session.is_some_and(|session| {
            self.waiting
                .iter()
                .any(|barrier| self.covered(session, barrier.zxid))
        })
    }

    /// Arms the waits `session` has reached, at `tick` (after the engine took in every
    /// notification already delivered).
    pub(super) fn arm(&mut self, session: i64, tick: u64) {
        let (ready, waiting): (Vec<Barrier>, Vec<Barrier>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|barrier| self.covered(session, barrier.zxid));
        self.waiting = waiting;
        self.armed.extend(ready.into_iter().map(|barrier| Armed {
            barrier,
            session,
            tick,
        }));
    }

    /// The reads the armed waits counted on are gone: they wait for the reads of `tick` (a new
    /// walk) instead.
    pub(super) fn rearm(&mut self, tick: u64) {
        for armed in &mut self.armed {
            armed.tick = armed.tick.max(tick);
        }
    }

    /// Ends the armed waits whose reads are all applied: `oldest` is the oldest cause of a read
    /// still queued or in flight. Nothing ends while the cache is `stale`.
    pub(super) fn resolve(&mut self, oldest: Option<u64>, stale: bool) {
        if stale {
            return;
        }
        let (done, armed): (Vec<Armed>, Vec<Armed>) = std::mem::take(&mut self.armed)
            .into_iter()
            .partition(|armed| oldest.is_none_or(|oldest| oldest > armed.tick));
        self.armed = armed;
        for armed in done {
            let _ = armed.barrier.done.send(Ok(()));
        }
    }

    /// Whether a catch-up should start now: waits are left that no known session reached, and
    /// no catch-up runs or is backing off.
    pub(super) fn wants_catch_up(&self) -> bool {
        !self.waiting.is_empty() && self.catch_up.is_none() && self.retry_at.is_none()
    }

    /// Starts a catch-up on the client's current session (see the module's docs).
    pub(super) fn start_catch_up(&mut self, client: &CuratorFramework, root: &Arc<str>) {
        let (client, root) = (client.clone(), Arc::clone(root));
        self.catch_up = Some(
            async move {
                let before = client.session_id();
                let result = async {
                    client.sync().for_path(&root).await?;
                    client.check_exists().for_path(&root).await?;
                    Ok(())
                }
                .await;
                let zxid = client.last_zxid();
                let after = client.session_id();
                CatchUp {
                    session: before.filter(|_| before == after),
                    zxid,
                    result,
                }
            }
            .boxed(),
        );
    }

    /// A catch-up ended.
    pub(super) fn caught_up(&mut self, catch_up: CatchUp) {
        self.catch_up = None;
        match catch_up.result {
            Ok(()) => {
                let Some(session) = catch_up.session else {
                    // The session changed meanwhile: catch up on the new one, at once.
                    return;
                };
                let reached = match self.caught {
                    Some((caught, reached)) if caught == session => reached.max(catch_up.zxid),
                    _ => catch_up.zxid,
                };
                self.caught = Some((session, reached));
                if self.waiting.iter().any(|barrier| barrier.zxid > reached) {
                    // Not committed when the sync went out: later, then.
                    self.back_off();
                } else {
                    self.backoff.reset();
                }
            }
            Err(error) if error.is_retried() => {
                tracing::debug!(%error, "catching up with a zxid failed; again later");
                self.back_off();
            }
            Err(error) => {
                for barrier in self.waiting.drain(..) {
                    let _ = barrier.done.send(Err(error.clone()));
                }
            }
        }
    }

    fn back_off(&mut self) {
        self.retry_at = Some(Instant::now() + self.backoff.next_pause());
    }
}

/// The running catch-up's end (never, without one).
pub(super) async fn next_catch_up(catch_up: &mut Option<BoxFuture<'static, CatchUp>>) -> CatchUp {
    match catch_up {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}

/// Hands a wait for `zxid` to the engine behind `requests` and waits for its answer, at most
/// `timeout`; `Closed` when the engine ends first or `closed` resolves (the cache's close).
pub(crate) async fn wait_for(
    requests: &tokio::sync::mpsc::UnboundedSender<Barrier>,
    zxid: i64,
    timeout: Duration,
    closed: impl std::future::Future<Output = ()>,
) -> Result<()> {
    let (done, answer) = oneshot::channel();
    requests
        .send(Barrier { zxid, done })
        .map_err(|_| Error::Closed)?;
    let answered = async {
        tokio::select! {
            biased;
            answer = answer => answer.unwrap_or(Err(Error::Closed)),
            () = closed => Err(Error::Closed),
        }
    };
    tokio::time::timeout(timeout, answered)
        .await
        .unwrap_or(Err(Error::Timeout { waited: timeout }))
}
