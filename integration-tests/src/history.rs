//! What the workloads record while they run: plain data, read afterwards by the
//! [`checkers`](crate::checkers).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A monotonic clock shared by every task of one run; times are durations since its start.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock {
    /// A clock starting now.
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
        }
    }

    /// Time since the start; in a simulation, the simulated time since it started (the same
    /// on every simulated host).
    pub fn now(&self) -> Duration {
        curator_sim::elapsed().unwrap_or_else(|| self.start.elapsed())
    }
}

/// One action of a lock holder or leader: a ZooKeeper transaction that checks the actor's own
/// lock (or latch) node exists and appends an entry to a log kept in ZooKeeper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    /// When the actor sent it.
    pub sent_at: Duration,
    /// Whether the server confirmed it (so the actor's node existed when it was applied).
    pub ok: bool,
}

/// One hold of the mutex, or one leadership, as its holder saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Episode {
    /// The client (0-based) that held.
    pub client: usize,
    /// What tells holds apart: the mutex's fencing token (its node's creation zxid), or the
    /// sequence number of the leader's latch node.
    pub token: i64,
    /// When `acquire` returned, or the latch first reported leadership.
    pub started_at: Duration,
    /// The actions, in the order they were sent.
    pub actions: Vec<Action>,
    /// When the holder was told (by the guard or the latch) that it may have lost its role, if
    /// it was.
    pub lost_at: Option<Duration>,
}

impl Episode {
    /// The time the last confirmed action was sent: up to here the holder provably held.
    pub fn confirmed_until(&self) -> Option<Duration> {
        self.actions
            .iter()
            .filter(|a| a.ok)
            .map(|a| a.sent_at)
            .max()
    }
}

/// One entry of a log kept in ZooKeeper as sequential children of one node, read back in the
/// server's order (the sequence number). Entries whose reply was lost appear here too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogEntry {
    /// The entry's sequence number: the server's order.
    pub seq: i64,
    /// The client that wrote it.
    pub client: usize,
    /// The writer's [`Episode::token`].
    pub token: i64,
    /// The leader's term (0 for the mutex).
    pub term: u64,
}

impl LogEntry {
    /// The name prefix of a log entry node (the server appends the sequence number).
    pub fn prefix(term: u64, token: i64, client: usize) -> String {
        format!("{term}_{token}_{client}_")
    }

    /// Parses a log entry's node name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        let mut parts = name.split('_');
        let term = parts.next()?.parse().ok()?;
        let token = parts.next()?.parse().ok()?;
        let client = parts.next()?.parse().ok()?;
        let seq = parts.next()?.parse().ok()?;
        parts.next().is_none().then_some(Self {
            seq,
            client,
            token,
            term,
        })
    }
}

/// One increment of the shared counter as its caller saw it: when it was invoked and when it
/// returned (the run's clock), and the values it reported when it applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterOp {
    /// When the increment was called.
    pub invoked: Duration,
    /// When it returned.
    pub completed: Duration,
    /// `(pre, post)` when it reported itself applied; `None` otherwise (not applied, or
    /// unknown).
    pub applied: Option<(i64, i64)>,
    /// Whether its outcome is unknown (`Err(Closed)`): it may or may not have applied.
    pub unknown: bool,
}

/// What the increments of the shared [`DistributedAtomicLong`](curator_counters) told their
/// callers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterHistory {
    /// The value before the run.
    pub initial: i64,
    /// Increments reported applied (`Ok` with `succeeded`).
    pub succeeded: u64,
    /// Increments reported not applied (`Ok` without `succeeded`, or an error other than
    /// `Closed`).
    pub not_applied: u64,
    /// Increments whose outcome the recipe reports unknown (`Err(Closed)`).
    pub unknown: u64,
    /// The value read at the end, after every increment returned.
    pub final_value: Option<i64>,
    /// Every increment, in the order they returned.
    pub ops: Vec<CounterOp>,
}

/// One put into a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Put {
    /// The item (unique per run).
    pub item: String,
    /// Whether the put reported success (a failed put may still have been stored).
    pub ok: bool,
    /// Whether the putting client's connection state changed while the put ran.
    pub across_fault: bool,
    /// When the put was called (the run's clock).
    pub invoked: Duration,
    /// When it returned.
    pub completed: Duration,
}

/// One item delivered by a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Take {
    /// The item.
    pub item: String,
    /// Who took it.
    pub by: String,
    /// Whether the taking client's connection state changed while the take ran.
    pub across_fault: bool,
    /// When the take was called (the run's clock); for a consumer that is handed items (the
    /// lock-safe queue's), when the item was handed over.
    pub invoked: Duration,
    /// When it returned the item.
    pub completed: Duration,
}

/// What an operation on a register node asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterInput {
    /// `sync`, then `get_data`, on one client.
    Read,
    /// A write of a value unique in the run (a `set_data` without a version, made
    /// apply-at-most-once: see [`crate::workloads::register_worker`]).
    Write(u64),
    /// `set_data().with_version(expected)` of a value unique in the run, after a read.
    Cas {
        /// The data version the write expects.
        expected: i32,
        /// The value it writes.
        value: u64,
    },
}

/// What an operation on a register node returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterOutput {
    /// A read's value and data version.
    Read {
        /// The value.
        value: u64,
        /// The node's data version.
        version: i32,
    },
    /// A write or compare-and-set applied, leaving the node at `version` (`None` when the
    /// writer learned that it applied but not the version: a retry met its own applied write).
    Written {
        /// The node's new data version, when known.
        version: Option<i32>,
    },
    /// A compare-and-set met another version (`BadVersion`, on its first and only attempt):
    /// nothing applied.
    CasFailed,
}

/// One operation on a register node, as its caller saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegisterOp {
    /// Which register node (0-based).
    pub key: usize,
    /// The client (0-based) that ran it.
    pub client: usize,
    /// What it asked.
    pub input: RegisterInput,
    /// When it was invoked (the run's clock).
    pub invoked: Duration,
    /// When it returned.
    pub completed: Duration,
    /// What it returned; `None` when its outcome is unknown (it may have applied once, at any
    /// point after its invocation, or not at all). Operations that definitely did nothing (a
    /// read that failed) are not recorded.
    pub output: Option<RegisterOutput>,
}

/// A node as a cache holds it or the server has it: data and data version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeState {
    /// The node's data.
    pub data: Vec<u8>,
    /// The node's data version.
    pub version: i32,
}

/// A subtree: absolute path → node.
pub type Tree = BTreeMap<String, NodeState>;

/// A broken invariant, found by a checker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which workload's invariant.
    pub workload: &'static str,
    /// What happened, with the history that shows it.
    pub detail: String,
}

impl Violation {
    pub(crate) fn new(workload: &'static str, detail: impl Into<String>) -> Self {
        Self {
            workload,
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.workload, self.detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_entry_names_round_trip() {
        let name = format!("{}{:010}", LogEntry::prefix(7, 4_294_967_301, 2), 42);
        assert_eq!(
            LogEntry::parse(&name),
            Some(LogEntry {
                seq: 42,
                client: 2,
                token: 4_294_967_301,
                term: 7
            })
        );
        assert_eq!(LogEntry::parse("lock-0000000001"), None);
        assert_eq!(LogEntry::parse("1_2_3_4_5"), None);
    }
}
