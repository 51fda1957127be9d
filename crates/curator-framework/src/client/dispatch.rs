//! Ordered submission: every operation's request reaches the wire client in the order the
//! operations were created, whether a session is connected at that moment or not.
//!
//! The wire client sends a request when one of its methods is called, so the order of those
//! calls is the order on the wire. An attempt is handed to [`Dispatch::submit`] when its
//! operation's future is created. With a connected session and nothing waiting before it, the
//! attempt starts at once under the dispatch lock: [`Sent::now`] polls it once, which runs it to
//! its first wire call. Otherwise it waits in the backlog, and [`Dispatch::connected`] starts the
//! whole backlog, oldest first, before any later submission. An attempt whose caller gave up
//! while it waited (its future dropped, or the connection timeout passed) is never sent.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::ops::future::Sent;
use crate::wire::WireSession;

/// Where an attempt went.
pub(crate) enum Submitted<T> {
    /// Sent to the connected session.
    Sent(Sent<T>),
    /// Waiting for a session.
    Waiting(Waiting<T>),
    /// Refused (the client is not started, or closed).
    Refused(Error),
}

/// How far the client is in its life, as the dispatcher needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Latent,
    Open,
    Closed,
}

/// A waiting attempt: started with the session, or told why none will come.
type Parked = Box<dyn FnOnce(std::result::Result<&Arc<WireSession>, &Error>) + Send>;

/// A waiting attempt's fate, decided once: taken (and sent) by the dispatcher, or abandoned by
/// its caller. Whichever comes first wins, so an abandoned attempt is never sent and a sent one
/// is never reported as not sent.
#[derive(Debug, Default)]
struct Ticket(AtomicU8);

const WAITING: u8 = 0;
const TAKEN: u8 = 1;
const ABANDONED: u8 = 2;

impl Ticket {
    fn decide(&self, fate: u8) -> bool {
        self.0
            .compare_exchange(WAITING, fate, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

/// An attempt waiting for a session. Dropping it abandons the attempt (unless already sent).
pub(crate) struct Waiting<T> {
    receiver: oneshot::Receiver<Result<Sent<T>>>,
    ticket: Arc<Ticket>,
}

impl<T> Drop for Waiting<T> {
    fn drop(&mut self) {
        self.ticket.decide(ABANDONED);
    }
}

struct State {
    /// The connected session, if any.
    session: Option<Arc<WireSession>>,
    /// Attempts waiting for a connected session, oldest first.
    backlog: VecDeque<Parked>,
    phase: Phase,
    /// Why connecting fails, when retrying cannot fix it: submissions fail with it at once.
    failure: Option<Error>,
}

/// The dispatcher (see the module docs).
pub(crate) struct Dispatch {
    state: Mutex<State>,
}

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.lock();
        f.debug_struct("Dispatch")
            .field("connected", &state.session.is_some())
            .field("backlog", &state.backlog.len())
            .field("phase", &state.phase)
            .finish()
    }
}

impl Dispatch {
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(State {
                session: None,
                backlog: VecDeque::new(),
                phase: Phase::Latent,
                failure: None,
            }),
        }
    }

    /// Starts `attempt` on the connected session now, or queues it behind the attempts already
    /// waiting. `attempt` must not submit anything itself (the dispatch lock is held).
    pub(crate) fn submit<T, F>(&self, attempt: F) -> Submitted<T>
    where
        T: Send + 'static,
        F: FnOnce(&Arc<WireSession>) -> Sent<T> + Send + 'static,
    {
        let mut state = self.state.lock();
        match state.phase {
            Phase::Latent => return Submitted::Refused(Error::NotStarted),
            Phase::Closed => return Submitted::Refused(Error::Closed),
            Phase::Open => {}
        }
        if state.backlog.is_empty() {
            if let Some(session) = &state.session {
                return Submitted::Sent(attempt(session));
            }
        }
        if let Some(failure) = &state.failure {
            return Submitted::Refused(failure.clone());
        }
        let (sender, receiver) = oneshot::channel();
        let ticket = Arc::new(Ticket::default());
        let taken = Arc::clone(&ticket);
        state.backlog.push_back(Box::new(move |session| {
            if taken.decide(TAKEN) {
                let _ = sender.send(session.map(attempt).map_err(Error::clone));
            }
        }));
        Submitted::Waiting(Waiting { receiver, ticket })
    }

    /// The client started: submissions are accepted (and wait for a session).
    pub(crate) fn open(&self) {
        let mut state = self.state.lock();
        if state.phase == Phase::Latent {
            state.phase = Phase::Open;
        }
    }

    /// A session is connected: starts the backlog in order, then lets submissions through.
    pub(crate) fn connected(&self, session: Arc<WireSession>) {
        let mut state = self.state.lock();
        if state.phase == Phase::Closed {
            return;
        }
        state.failure = None;
        while let Some(parked) = state.backlog.pop_front() {
            parked(Ok(&session));
        }
        state.session = Some(session);
    }

    /// Connecting fails in a way retrying cannot fix: waiting attempts fail with `failure` now,
    /// and so do new ones until a session connects.
    pub(crate) fn failed(&self, failure: &Error) {
        let mut state = self.state.lock();
        state.failure = Some(failure.clone());
        while let Some(parked) = state.backlog.pop_front() {
            parked(Err(failure));
        }
    }

    /// No session is connected: submissions wait.
    pub(crate) fn disconnected(&self) {
        self.state.lock().session = None;
    }

    /// The client closed: waiting attempts fail with [`Error::Closed`] (their senders drop) and
    /// new ones are refused.
    pub(crate) fn close(&self) {
        let backlog = {
            let mut state = self.state.lock();
            state.phase = Phase::Closed;
            state.session = None;
            std::mem::take(&mut state.backlog)
        };
        drop(backlog);
    }

    /// Waits for a submitted attempt's result; a waiting attempt is given up after `timeout`
    /// ([`Error::NotConnected`]) and then never sent.
    pub(crate) async fn outcome<T>(
        submitted: Submitted<T>,
        timeout: std::time::Duration,
    ) -> Result<T> {
        match submitted {
            Submitted::Sent(sent) => sent.await,
            Submitted::Waiting(mut waiting) => {
                let received = tokio::select! {
                    received = &mut waiting.receiver => received,
                    () = tokio::time::sleep(timeout) => {
                        if waiting.ticket.decide(ABANDONED) {
                            return Err(Error::NotConnected { waited: timeout });
                        }
                        // Taken just now: the attempt was sent, so its answer counts.
                        (&mut waiting.receiver).await
                    }
                };
                match received {
                    Ok(Ok(sent)) => sent.await,
                    Ok(Err(failure)) => Err(failure),
                    Err(_) => Err(Error::Closed),
                }
            }
            Submitted::Refused(error) => Err(error),
        }
    }
}
