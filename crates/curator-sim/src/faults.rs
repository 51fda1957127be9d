//! The faults a simulation injects, drawn from its seed.

use std::fmt;
use std::time::Duration;

use rand::Rng;
use rand::rngs::StdRng;

/// Which faults a simulation injects, and how often: one fault at a time, the next one a random
/// pause (up to `every`) after the last one ended, until `quiet_after` (then the network heals
/// and the server runs, so the clients can finish).
///
/// ```
/// use std::time::Duration;
/// use curator_sim::FaultPlan;
/// let plan = FaultPlan::all()
///     .every(Duration::from_secs(2))
///     .quiet_after(Duration::from_secs(30));
/// let none = FaultPlan::none();
/// # let _ = (plan, none);
/// ```
#[derive(Debug, Clone)]
pub struct FaultPlan {
    pub(crate) partitions: bool,
    pub(crate) delays: bool,
    pub(crate) restarts: bool,
    pub(crate) outages: bool,
    pub(crate) expiries: bool,
    pub(crate) cuts: bool,
    pub(crate) lost_replies: bool,
    pub(crate) every: Duration,
    pub(crate) longest: Duration,
    pub(crate) quiet_after: Duration,
}

impl FaultPlan {
    /// No faults (latency only).
    pub fn none() -> Self {
        Self {
            partitions: false,
            delays: false,
            restarts: false,
            outages: false,
            expiries: false,
            cuts: false,
            lost_replies: false,
            every: Duration::from_secs(3),
            longest: Duration::from_secs(6),
            quiet_after: Duration::from_secs(20),
        }
    }

    /// Every kind of fault: partitions of one client from the server, held (delayed) links,
    /// server restarts, server outages, session expiries, cut connections, lost replies.
    pub fn all() -> Self {
        Self {
            partitions: true,
            delays: true,
            restarts: true,
            outages: true,
            expiries: true,
            cuts: true,
            lost_replies: true,
            ..Self::none()
        }
    }

    /// Partitions one client from the server, for up to [`longest`](Self::longest).
    pub fn partitions(mut self, on: bool) -> Self {
        self.partitions = on;
        self
    }

    /// Holds every message between one client and the server (then delivers them all).
    pub fn delays(mut self, on: bool) -> Self {
        self.delays = on;
        self
    }

    /// Restarts the server's software (it keeps its data, as a real restart does).
    pub fn restarts(mut self, on: bool) -> Self {
        self.restarts = on;
        self
    }

    /// Stops the server for a while, then starts it again (data kept).
    pub fn outages(mut self, on: bool) -> Self {
        self.outages = on;
        self
    }

    /// Expires one client session on the server (its ephemeral nodes go, its watches end).
    pub fn expiries(mut self, on: bool) -> Self {
        self.expiries = on;
        self
    }

    /// Breaks one client's connections (its session lives on; it reconnects).
    pub fn cuts(mut self, on: bool) -> Self {
        self.cuts = on;
        self
    }

    /// Loses what the server sends one client for a while (its requests still apply): replies
    /// lost after their requests took effect.
    pub fn lost_replies(mut self, on: bool) -> Self {
        self.lost_replies = on;
        self
    }

    /// The longest pause between two faults (default 3 s).
    pub fn every(mut self, pause: Duration) -> Self {
        self.every = pause;
        self
    }

    /// The longest partition, hold or outage (default 6 s).
    pub fn longest(mut self, duration: Duration) -> Self {
        self.longest = duration;
        self
    }

    /// No fault starts after this much simulated time (default 20 s).
    pub fn quiet_after(mut self, at: Duration) -> Self {
        self.quiet_after = at;
        self
    }

    /// A fault for one of `clients` (names), or `None` when the plan has none.
    pub(crate) fn draw(&self, rng: &mut StdRng, clients: &[String]) -> Option<(Fault, Duration)> {
        let mut kinds = Vec::new();
        if self.partitions && !clients.is_empty() {
            kinds.push(0);
        }
        if self.delays && !clients.is_empty() {
            kinds.push(1);
        }
        if self.restarts {
            kinds.push(2);
        }
        if self.outages {
            kinds.push(3);
        }
        if self.expiries {
            kinds.push(4);
        }
        if self.cuts && !clients.is_empty() {
            kinds.push(5);
        }
        if self.lost_replies && !clients.is_empty() {
            kinds.push(6);
        }
        if kinds.is_empty() {
            return None;
        }
        let kind = kinds[rng.random_range(0..kinds.len())];
        let longest = u64::try_from(self.longest.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let lasting = Duration::from_millis(rng.random_range(1..=longest));
        let client = |rng: &mut StdRng| clients[rng.random_range(0..clients.len())].clone();
        let fault = match kind {
            0 => Fault::Partition {
                client: client(rng),
            },
            1 => Fault::Hold {
                client: client(rng),
            },
            2 => Fault::Restart,
            3 => Fault::Outage,
            4 => Fault::Expiry {
                pick: rng.random(),
                session: None,
            },
            5 => Fault::Cut {
                client: client(rng),
            },
            _ => Fault::LostReplies {
                client: client(rng),
            },
        };
        Some((fault, lasting))
    }

    /// The pause before the next fault.
    pub(crate) fn pause(&self, rng: &mut StdRng) -> Duration {
        let every = u64::try_from(self.every.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        Duration::from_millis(rng.random_range(1..=every))
    }
}

/// One fault.
///
/// ```
/// let fault = curator_sim::Fault::Partition { client: "c1".into() };
/// assert_eq!(fault.to_string(), "partition zk|c1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The client's host and the server's cannot reach each other.
    Partition {
        /// The client host's name.
        client: String,
    },
    /// Messages between the client's host and the server's are held, then delivered at once.
    Hold {
        /// The client host's name.
        client: String,
    },
    /// The server's software restarts (its data kept).
    Restart,
    /// The server is down for a while (its data kept).
    Outage,
    /// What the server sends the client is lost (its requests still reach the server).
    LostReplies {
        /// The client host's name.
        client: String,
    },
    /// The client's connections break (its session lives on).
    Cut {
        /// The client host's name.
        client: String,
    },
    /// A session expires on the server.
    Expiry {
        /// Which of the sessions (index into the sorted ids, modulo their number).
        pick: u64,
        /// The session that expired (none when there was none).
        session: Option<i64>,
    },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Partition { client } => write!(f, "partition {}|{client}", crate::ZK_HOST),
            Fault::Hold { client } => write!(f, "hold {}|{client}", crate::ZK_HOST),
            Fault::Restart => f.write_str("restart"),
            Fault::Outage => f.write_str("outage"),
            Fault::Cut { client } => write!(f, "cut {client}'s connections"),
            Fault::LostReplies { client } => write!(f, "lose replies {}->{client}", crate::ZK_HOST),
            Fault::Expiry {
                session: Some(id), ..
            } => write!(f, "expire session {id:#x}"),
            Fault::Expiry { session: None, .. } => f.write_str("expire (no session)"),
        }
    }
}

/// A fault as it happened: when it started and ended (simulated time).
///
/// ```
/// use std::time::Duration;
/// use curator_sim::{Fault, FaultRecord};
/// let record = FaultRecord { fault: Fault::Restart, at: Duration::from_millis(1500), until: Duration::from_millis(1500) };
/// assert_eq!(record.to_string(), "1.500s restart");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultRecord {
    /// The fault.
    pub fault: Fault,
    /// When it started.
    pub at: Duration,
    /// When it ended (the same as `at` for an instant one).
    pub until: Duration,
}

impl fmt::Display for FaultRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3}s {}", self.at.as_secs_f64(), self.fault)?;
        if self.until > self.at {
            write!(f, " until {:.3}s", self.until.as_secs_f64())?;
        }
        Ok(())
    }
}
