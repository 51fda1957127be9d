//! [`Hold`]: what a holder of anything (a lock, a lease, leadership) has.

use std::fmt;
use std::sync::{Arc, Weak};

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::client::{CuratorFramework, Inner};
use crate::error::Error;
use crate::recipe::Sequencer;

/// What a [`Hold`] holds, which names the error of a refused guarded write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HoldKind {
    /// A lock, a read or write lock, a semaphore lease: [`Error::LockLost`].
    Lock,
    /// A leadership (latch, selector): [`Error::NotLeader`].
    Leadership,
}

/// What a holder holds: its node, a fencing token, and a signal that the hold may be lost. The
/// one hold of every recipe: a lock's [`LockGuard`], a semaphore's `Lease`, a time-boxed
/// lease's grant and a leader's hold all give one.
///
/// A hold learns it is lost by one route, whatever holds it: the client's count of error
/// states (with the standard connection-state error policy, the first `Suspended`), bumped as
/// each one is published and before any listener hears it, so no circuit breaker holds it back
/// and every hold of a client is lost at the same moment; the client's close; and what the
/// holder itself ends ([`ended_by`](Self::ended_by): a release, a step-down) or the time it
/// ends at ([`Hold::until`]).
///
/// The fencing token is a zxid of the node: its creation (a lock's, a leader's node) or the
/// write that won it (a time-boxed lease). Zxids grow with every change on the ensemble, so a
/// resource that remembers the highest token it admitted can refuse an older holder.
///
/// [`LockGuard`]: https://docs.rs/curator-locks
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) {
/// use curator_framework::recipe::Hold;
/// let hold = Hold::new(&client, "/locks/l/_c_x-lock-0000000001".into(), 0x1_0000_0007);
/// tokio::select! {
///     () = hold.lost() => println!("stop: the hold may be someone else's now"),
///     () = async { /* protected work, passing hold.fencing_token() along */ } => {}
/// }
/// # }
/// ```
#[derive(Clone)]
pub struct Hold {
    node: Arc<str>,
    token: i64,
    kind: HoldKind,
    /// The session that made the node, when known: guarded writes go on it or not at all.
    session: Option<i64>,
    /// The client's count of error states, and the count when the hold was made: the hold is
    /// lost once it moves (or the client is gone). `None` for a hold bound to time, not to a
    /// session ([`Hold::until`]).
    error_states: Option<(watch::Receiver<u64>, u64)>,
    /// What the holder ends: `true`, or its sender gone ([`Hold::ended_by`]).
    ended: Option<watch::Receiver<bool>>,
    /// When the hold ends by itself ([`Hold::until`]).
    deadline: Option<Instant>,
    /// The client's close, which ends every hold.
    client_closed: CancellationToken,
    /// The client's count of connection troubles, and the count when the hold was made (see
    /// [`jeopardy`](Self::jeopardy)).
    troubles: (watch::Receiver<u64>, u64),
    /// The client, for the session's renewals ([`valid_until`](Self::valid_until)); `None` for
    /// a hold bound to time.
    client: Option<Weak<Inner>>,
    /// The namespace of the client that made the hold (its node's path is within it).
    namespace: Option<Arc<str>>,
}

impl fmt::Debug for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hold")
            .field("node", &self.node)
            .field("fencing_token", &self.token)
            .field("kind", &self.kind)
            .field("session", &self.session.map(|id| format!("{id:#x}")))
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl Hold {
    /// A hold on `node` with fencing `token`, made on the client's current session (the one
    /// that made `node`): lost when the client's connection state becomes an error state under
    /// its connection-state error policy (with the standard policy: at `Suspended`), or when
    /// the client closes. A lock's hold ([`HoldKind::Lock`]).
    pub fn new(client: &CuratorFramework, node: String, token: i64) -> Self {
        // Every hold of the client watches one counter, bumped as each error state is
        // published (before the client's listeners hear it): no channel or listener per hold.
        let count = client.inner.error_states.subscribe();
        let at = *count.borrow();
        Self {
            node: Arc::from(node),
            token,
            kind: HoldKind::Lock,
            session: client.session_id(),
            error_states: Some((count, at)),
            ended: None,
            deadline: None,
            client_closed: client.inner.cancel.clone(),
            troubles: troubles(client),
            client: Some(Arc::downgrade(&client.inner)),
            namespace: client.namespace.clone(),
        }
    }

    /// A hold bound to time, not to a session (a time-boxed lease): lost at `deadline` or when
    /// the client closes, whatever the connection does meanwhile. A [`HoldKind::Lock`] with no
    /// session.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) {
    /// use std::time::Duration;
    /// use curator_framework::recipe::Hold;
    /// let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    /// let hold = Hold::until(&client, "/leases/report".into(), 0x1_0000_0009, deadline);
    /// assert!(!hold.is_lost());
    /// # }
    /// ```
    pub fn until(client: &CuratorFramework, node: String, token: i64, deadline: Instant) -> Self {
        Self {
            node: Arc::from(node),
            token,
            kind: HoldKind::Lock,
            session: None,
            error_states: None,
            ended: None,
            deadline: Some(deadline),
            client_closed: client.inner.cancel.clone(),
            troubles: troubles(client),
            client: None,
            namespace: client.namespace.clone(),
        }
    }

    /// This hold, lost also when `end` turns `true` (or its sender goes away): for what the
    /// holder ends itself (leadership ends when the leader steps down).
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) {
    /// use curator_framework::recipe::Hold;
    /// let (end, ended) = tokio::sync::watch::channel(false);
    /// let hold = Hold::new(&client, "/election/latch-0000000004".into(), 7)
    ///     .ended_by(ended)
    ///     .for_leadership();
    /// end.send_replace(true); // the step-down
    /// assert!(hold.is_lost());
    /// # }
    /// ```
    pub fn ended_by(mut self, end: watch::Receiver<bool>) -> Self {
        self.ended = Some(end);
        self
    }

    /// This hold as a leadership ([`HoldKind::Leadership`]): guarded writes refused because it
    /// is lost fail with [`Error::NotLeader`].
    pub fn for_leadership(mut self) -> Self {
        self.kind = HoldKind::Leadership;
        self
    }

    /// The session that made the hold's node (its ephemeral owner), when it is not the
    /// client's current one: writes guarded by this hold are sent on that session only, so a
    /// write can never pass the hold's check on a later session of the same client.
    pub fn on_session(mut self, session: i64) -> Self {
        self.session = Some(session);
        self
    }

    /// What is held.
    pub fn kind(&self) -> HoldKind {
        self.kind
    }

    /// The session that made the hold's node, when known.
    pub fn session_id(&self) -> Option<i64> {
        self.session
    }

    /// The error of a write refused because this hold is lost: [`Error::LockLost`] or
    /// [`Error::NotLeader`], naming the node.
    pub fn lost_error(&self) -> Error {
        let node = self.node.to_string();
        match self.kind {
            HoldKind::Lock => Error::LockLost { node },
            HoldKind::Leadership => Error::NotLeader { node },
        }
    }

    /// The node the hold rests on (full path).
    pub fn node_path(&self) -> &str {
        &self.node
    }

    /// The fencing token: the node's creation zxid (for a time-boxed lease, the zxid of the
    /// write that won it).
    pub fn fencing_token(&self) -> i64 {
        self.token
    }

    /// When the hold ends by itself, for a hold bound to time ([`Hold::until`]).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The latest instant at which this hold is still guaranteed (Chubby's lease): for a hold
    /// on a session, the last renewal of the session a read-write server answered (the moment
    /// the request it answered was sent, see `curator_session::Session::last_renewed`) plus
    /// the negotiated session timeout less the client's
    /// [clock drift bound](crate::CuratorFrameworkBuilder::clock_drift_bound); for a hold bound
    /// to time, its deadline. The session cannot expire before it, so no other client can take
    /// what this one holds before it (unless someone deletes the hold's node by hand). It
    /// moves forward with every answer (pings included) and stops while the connection is
    /// down: an instant already past means the guarantee is over, whatever the connection
    /// does next. `None` once the hold is lost, or on another session than the hold's.
    ///
    /// ```no_run
    /// # async fn demo(hold: curator_framework::recipe::Hold) {
    /// match hold.valid_until() {
    ///     Some(until) if until > tokio::time::Instant::now() => { /* act, finishing before `until` */ }
    ///     _ => { /* not guaranteed: stop */ }
    /// }
    /// # }
    /// ```
    pub fn valid_until(&self) -> Option<Instant> {
        if self.is_lost() {
            return None;
        }
        let Some(client) = &self.client else {
            return self.deadline;
        };
        let inner = client.upgrade()?;
        let session = inner.slot.session()?;
        if self.session.is_some_and(|id| id != session.session_id()) {
            return None;
        }
        let renewed = session.last_renewed()?;
        let guaranteed = session
            .negotiated_timeout()
            .mul_f64(1.0 - inner.settings.clock_drift_bound);
        let until = renewed + guaranteed;
        Some(self.deadline.map_or(until, |deadline| deadline.min(until)))
    }

    /// This hold as a [`Sequencer`] for a resource server to check: its node's full path (the
    /// client's namespace applied), its fencing token and its session. `None` for a hold bound
    /// to time, or whose session is not known.
    ///
    /// ```no_run
    /// # fn demo(hold: curator_framework::recipe::Hold) {
    /// if let Some(sequencer) = hold.sequencer() {
    ///     println!("{sequencer}"); // zkseq1:<session>:<token>:<path>
    /// }
    /// # }
    /// ```
    pub fn sequencer(&self) -> Option<Sequencer> {
        // A hold bound to time has no session to check.
        self.client.as_ref()?;
        let path = crate::paths::apply_namespace(self.namespace.as_deref(), &self.node);
        Sequencer::new(self.session?, self.token, &path).ok()
    }

    /// Whether the hold is in jeopardy: its client's connection went into trouble
    /// (`Suspended`, `Lost` or `ReadOnly`) since the hold was made, whatever the client's
    /// connection-state error policy, or the hold is lost. With the standard policy a hold is
    /// lost at the first `Suspended` anyway; with
    /// [`ConnectionStateErrorPolicy::Session`](crate::state::ConnectionStateErrorPolicy::Session) a hold
    /// outlives a suspension, and jeopardy is the moment to stop starting new work (Chubby's
    /// jeopardy): [`valid_until`](Self::valid_until) says until when what was started is still
    /// covered.
    ///
    /// ```no_run
    /// # fn demo(hold: curator_framework::recipe::Hold) {
    /// if hold.in_jeopardy() {
    ///     // finish what is under way before hold.valid_until(); start nothing new
    /// }
    /// # }
    /// ```
    pub fn in_jeopardy(&self) -> bool {
        let (count, at) = &self.troubles;
        *count.borrow() != *at || count.has_changed().is_err() || self.is_lost()
    }

    /// Resolves when the hold is in jeopardy (see [`in_jeopardy`](Self::in_jeopardy)): at once
    /// if it is.
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn jeopardy(&self) {
        let (mut count, at) = self.troubles.clone();
        tokio::select! {
            _ = count.wait_for(|count| *count != at) => {}
            () = self.lost() => {}
        }
    }

    /// Whether the hold may be lost already (see [`lost`](Self::lost)).
    pub fn is_lost(&self) -> bool {
        let connection = self
            .error_states
            .as_ref()
            .is_some_and(|(count, at)| *count.borrow() != *at || count.has_changed().is_err());
        let ended = self
            .ended
            .as_ref()
            .is_some_and(|end| *end.borrow() || end.has_changed().is_err());
        let expired = self
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline);
        connection || ended || expired || self.client_closed.is_cancelled()
    }

    /// Resolves when the hold may have been lost: the holder must stop acting on it.
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn lost(&self) {
        let connection = async {
            match self.error_states.clone() {
                Some((mut count, at)) => {
                    let _ = count.wait_for(|count| *count != at).await;
                }
                None => std::future::pending().await,
            }
        };
        let ended = async {
            match self.ended.clone() {
                Some(mut end) => {
                    let _ = end.wait_for(|ended| *ended).await;
                }
                None => std::future::pending().await,
            }
        };
        let expired = async {
            match self.deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = connection => {}
            () = ended => {}
            () = expired => {}
            () = self.client_closed.cancelled() => {}
        }
    }
}

/// The client's count of connection troubles, and where it stands now.
fn troubles(client: &CuratorFramework) -> (watch::Receiver<u64>, u64) {
    let count = client.inner.troubles.subscribe();
    let at = *count.borrow();
    (count, at)
}
