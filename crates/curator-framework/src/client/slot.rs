//! The session slot: the current session and connection state, for whoever waits on them.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::state::ConnectionState;
use crate::wire::WireSession;

/// What waiters see of the session holder.
#[derive(Debug, Clone, Default)]
pub(crate) struct SlotState {
    pub(crate) session: Option<Arc<WireSession>>,
    pub(crate) connected: bool,
    pub(crate) state: Option<ConnectionState>,
    pub(crate) closed: bool,
    /// Why the last connection attempt failed, when retrying cannot fix it (a TLS certificate,
    /// a refused login): waiters get it at once instead of waiting out their timeout.
    pub(crate) failure: Option<Error>,
}

/// The session slot: one `watch` channel, written by the session task.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    sender: watch::Sender<SlotState>,
    /// The zxids of the sessions that left the slot (see [`Slot::last_zxid`]).
    zxids: Mutex<PastZxids>,
}

/// What the sessions that left the slot had seen.
#[derive(Debug, Default)]
struct PastZxids {
    /// The highest reply zxid of every session before `retired`.
    floor: i64,
    /// The session removed last, until the next one is installed: the holder closes it in
    /// between, and a reply it reads while closing still counts.
    retired: Option<Arc<WireSession>>,
}

impl PastZxids {
    fn highest(&self) -> i64 {
        self.retired
            .as_ref()
            .map_or(self.floor, |session| session.last_zxid().max(self.floor))
    }

    fn retire(&mut self, session: Option<Arc<WireSession>>) {
        self.floor = self.highest();
        self.retired = session;
    }
}

impl Slot {
    /// The highest zxid of a reply header any session of this slot has seen (0 before the
    /// first reply). Never decreases: a session's zxid is folded into the past ones before the
    /// session leaves the slot, and the current session is read before the past ones.
    pub(crate) fn last_zxid(&self) -> i64 {
        let current = self.session().map_or(0, |session| session.last_zxid());
        current.max(self.zxids.lock().highest())
    }

    pub(crate) fn install(&self, session: Arc<WireSession>) {
        // The removed session is closed by now: nothing more can reach it.
        self.zxids.lock().retire(None);
        self.sender.send_modify(|slot| {
            slot.session = Some(session);
            slot.connected = true;
            slot.failure = None;
        });
    }

    pub(crate) fn set_failure(&self, failure: Option<Error>) {
        self.sender.send_modify(|slot| slot.failure = failure);
    }

    pub(crate) fn remove(&self) {
        self.zxids.lock().retire(self.session());
        self.sender.send_modify(|slot| {
            slot.session = None;
            slot.connected = false;
        });
    }

    pub(crate) fn set_connected(&self, connected: bool) {
        self.sender.send_modify(|slot| slot.connected = connected);
    }

    pub(crate) fn set_state(&self, state: ConnectionState) {
        self.sender.send_modify(|slot| slot.state = Some(state));
    }

    pub(crate) fn close(&self) {
        self.sender.send_modify(|slot| slot.closed = true);
    }

    pub(crate) fn state(&self) -> Option<ConnectionState> {
        self.sender.borrow().state
    }

    /// The connected session, if there is one now.
    pub(crate) fn connected_session(&self) -> Option<Arc<WireSession>> {
        let slot = self.sender.borrow();
        if slot.connected {
            slot.session.clone()
        } else {
            None
        }
    }

    /// The current session, connected or not.
    pub(crate) fn session(&self) -> Option<Arc<WireSession>> {
        self.sender.borrow().session.clone()
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<SlotState> {
        self.sender.subscribe()
    }

    /// The session once it is connected, waiting up to `timeout` (`None`: without a deadline).
    ///
    /// # Errors
    /// [`Error::Closed`]; [`Error::NotConnected`] when `timeout` passes first; the failure of
    /// the last connection attempt when retrying cannot fix it ([`Error::Tls`],
    /// [`Error::AuthFailed`]).
    pub(crate) async fn wait_connected(
        &self,
        timeout: Option<Duration>,
    ) -> Result<Arc<WireSession>> {
        let mut receiver = self.sender.subscribe();
        let ready = async {
            let slot = receiver
                .wait_for(|slot| {
                    slot.closed
                        || (slot.connected && slot.session.is_some())
                        || slot.failure.is_some()
                })
                .await
                .map_err(|_| Error::Closed)?;
            if slot.closed {
                return Err(Error::Closed);
            }
            if let (Some(failure), false) = (&slot.failure, slot.connected) {
                return Err(failure.clone());
            }
            slot.session.clone().ok_or(Error::ConnectionLoss)
        };
        match timeout {
            Some(timeout) => tokio::time::timeout(timeout, ready)
                .await
                .unwrap_or(Err(Error::NotConnected { waited: timeout })),
            None => ready.await,
        }
    }
}
