//! Counters a client keeps about itself.

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of a client's counters, from
/// [`CuratorFramework::metrics`](crate::CuratorFramework::metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Metrics {
    /// Operations started (each awaited builder counts once, whatever its retries).
    pub operations: u64,
    /// Operations that ended in an error.
    pub failed_operations: u64,
    /// Retries made under the retry policy.
    pub retries: u64,
    /// Connection-state transitions published.
    pub state_transitions: u64,
    /// Sessions established (1 + the number of session losses recovered from).
    pub sessions: u64,
    /// Guaranteed deletes (and cleanups of protected creates) still being retried in the
    /// background.
    pub pending_guaranteed_deletes: u64,
    /// Background deletes that ended with the node gone.
    pub completed_guaranteed_deletes: u64,
    /// Background deletes given up: on an error retrying cannot fix (a changed version, no
    /// permission; also reported to the unhandled-error listeners), or because the client closed
    /// first. Their node may still exist.
    pub abandoned_guaranteed_deletes: u64,
    /// Recipe tasks running now ([`CuratorFramework::recipe_tasks`](crate::CuratorFramework::recipe_tasks)):
    /// 0 once the client is closed.
    pub recipe_tasks: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) operations: AtomicU64,
    pub(crate) failed_operations: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) state_transitions: AtomicU64,
    pub(crate) sessions: AtomicU64,
    pub(crate) pending_guaranteed_deletes: AtomicU64,
    pub(crate) completed_guaranteed_deletes: AtomicU64,
    pub(crate) abandoned_guaranteed_deletes: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> Metrics {
        Metrics {
            operations: self.operations.load(Ordering::Relaxed),
            failed_operations: self.failed_operations.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            state_transitions: self.state_transitions.load(Ordering::Relaxed),
            sessions: self.sessions.load(Ordering::Relaxed),
            pending_guaranteed_deletes: self.pending_guaranteed_deletes.load(Ordering::Relaxed),
            completed_guaranteed_deletes: self.completed_guaranteed_deletes.load(Ordering::Relaxed),
            abandoned_guaranteed_deletes: self.abandoned_guaranteed_deletes.load(Ordering::Relaxed),
            recipe_tasks: 0,
        }
    }
}
