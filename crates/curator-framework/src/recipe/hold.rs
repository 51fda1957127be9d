//! [`Hold`]: what a holder of anything (a lock, a lease, leadership) has.

use std::fmt;
use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::client::CuratorFramework;
use crate::error::Error;

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
/// one hold of every recipe: a lock's [`LockGuard`], a semaphore's `Lease` and a leader's hold
/// all give one.
///
/// The fencing token is the node's creation zxid: it grows with every node created on the
/// ensemble, so a resource that remembers the highest token it admitted can refuse an older
/// holder.
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
    lost: LostSignal,
    /// The client's close, which ends a hold made with [`Hold::new`].
    client_closed: Option<CancellationToken>,
}

/// What tells a [`Hold`] it is lost.
#[derive(Clone)]
enum LostSignal {
    /// `true`, or its sender gone ([`Hold::with_signal`]).
    Flag(watch::Receiver<bool>),
    /// The client's count of error states moving past `at` ([`Hold::new`]), or the client gone.
    ErrorStates {
        count: watch::Receiver<u64>,
        at: u64,
    },
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
    /// A hold on `node` with fencing `token`, lost when the client's connection state becomes
    /// an error state under its connection-state error policy (with the standard policy: at
    /// `Suspended`), or when the client closes. A lock's hold ([`HoldKind::Lock`]) on the
    /// client's current session (the one that made `node`).
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
            lost: LostSignal::ErrorStates { count, at },
            client_closed: Some(client.inner.cancel.clone()),
        }
    }

    /// A hold whose loss is signalled by `lost` turning `true` (or its sender going away),
    /// for holds that end by other rules (leadership ends when the leader steps down). A
    /// [`HoldKind::Lock`] with no session known; see [`for_leadership`](Self::for_leadership)
    /// and [`on_session`](Self::on_session).
    pub fn with_signal(node: String, token: i64, lost: watch::Receiver<bool>) -> Self {
        Self {
            node: Arc::from(node),
            token,
            kind: HoldKind::Lock,
            session: None,
            lost: LostSignal::Flag(lost),
            client_closed: None,
        }
    }

    /// This hold as a leadership ([`HoldKind::Leadership`]): guarded writes refused because it
    /// is lost fail with [`Error::NotLeader`].
    pub fn for_leadership(mut self) -> Self {
        self.kind = HoldKind::Leadership;
        self
    }

    /// The session that made the hold's node (its ephemeral owner): writes guarded by this hold
    /// are sent on that session only, so a write can never pass the hold's check on a later
    /// session of the same client.
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

    /// The fencing token: the node's creation zxid.
    pub fn fencing_token(&self) -> i64 {
        self.token
    }

    /// Whether the hold may be lost already (see [`lost`](Self::lost)).
    pub fn is_lost(&self) -> bool {
        let signalled = match &self.lost {
            LostSignal::Flag(lost) => *lost.borrow() || lost.has_changed().is_err(),
            LostSignal::ErrorStates { count, at } => {
                *count.borrow() != *at || count.has_changed().is_err()
            }
        };
        signalled
            || self
                .client_closed
                .as_ref()
                .is_some_and(CancellationToken::is_cancelled)
    }

    /// Resolves when the hold may have been lost: the holder must stop acting on it.
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn lost(&self) {
        let signalled = async {
            match self.lost.clone() {
                LostSignal::Flag(mut lost) => {
                    let _ = lost.wait_for(|lost| *lost).await;
                }
                LostSignal::ErrorStates { mut count, at } => {
                    let _ = count.wait_for(|count| *count != at).await;
                }
            }
        };
        match &self.client_closed {
            Some(closed) => {
                tokio::select! {
                    () = signalled => {}
                    () = closed.cancelled() => {}
                }
            }
            None => signalled.await,
        }
    }
}
