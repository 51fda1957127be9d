//! The report: what a path holds, serializable (serde) and printable (`Display`).

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use curator_framework::identity::Identity;
use serde::{Deserialize, Serialize};

/// The recipe layout recognized at a path.
///
/// ```
/// use curator_inspect::Layout;
/// assert_eq!(serde_json::to_string(&Layout::Mutex).unwrap(), "\"mutex\"");
/// assert_eq!(Layout::ReadWriteLock.to_string(), "read/write lock");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Layout {
    /// No node at the path.
    Missing,
    /// `InterProcessMutex`: `[_c_<uuid>-]lock-<seq>` nodes holding identities (or Java's IP text).
    Mutex,
    /// `InterProcessReadWriteLock`: `__READ__` / `__WRIT__` nodes.
    ReadWriteLock,
    /// `InterProcessSemaphoreV2`: `leases/` and `locks/`.
    SemaphoreV2,
    /// Several locks under one path (`InterProcessMultiLock`'s paths as children): see
    /// [`Report::sections`].
    MultiLock,
    /// `LeaderLatch`: `latch-<seq>` nodes holding participant ids.
    LeaderLatch,
    /// `LeaderSelector`: lock nodes holding participant ids.
    LeaderSelector,
    /// `DistributedBarrier`: a childless node, up while it exists.
    Barrier,
    /// `DistributedDoubleBarrier`: member nodes (UUID names) and `ready`.
    DoubleBarrier,
    /// `SimpleDistributedQueue`: `qn-<seq>` items.
    SimpleQueue,
    /// `DistributedQueue`: `queue-<seq>` items in Curator's envelope.
    DistributedQueue,
    /// `DistributedPriorityQueue`: `queue-<priority><seq>`.
    PriorityQueue,
    /// `DistributedDelayQueue`: `queue-|<due, hex ms>|<seq>`.
    DelayQueue,
    /// `DistributedIdQueue`: `queue-|<id>|<seq>`.
    IdQueue,
    /// `SharedCount`: a 4-byte big-endian value.
    SharedCount,
    /// `DistributedAtomicLong`: an 8-byte big-endian value (and `_atomic-` outcome markers).
    AtomicLong,
    /// `GroupMember`: ephemeral children named by member id.
    GroupMember,
    /// `SetPartitioner`: `members/` and `locks/<item>`.
    SetPartitioner,
    /// Service discovery base path `<base>/<service>/<id>`: one section per service.
    ServiceDiscovery,
    /// One service's instances (JSON).
    Service,
    /// `NonBlockingLease` (curator-locks, `curator lease`): data `lease-v1 <ms> <holder>` and
    /// a `clock` child; see [`Report::until_ms`] and [`Report::token`].
    Lease,
    /// `FencingGate` (curator-locks, `curator fence`): a childless node holding the highest
    /// admitted token as decimal text (always a guess: see [`Report::guess`]).
    FencingGate,
    /// Not a layout this crate knows: children count and data size only.
    Generic,
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::Missing => "no node",
            Layout::Mutex => "mutex",
            Layout::ReadWriteLock => "read/write lock",
            Layout::SemaphoreV2 => "semaphore (v2)",
            Layout::MultiLock => "several locks",
            Layout::LeaderLatch => "leader latch",
            Layout::LeaderSelector => "leader selector",
            Layout::Barrier => "barrier",
            Layout::DoubleBarrier => "double barrier",
            Layout::SimpleQueue => "simple queue",
            Layout::DistributedQueue => "distributed queue",
            Layout::PriorityQueue => "priority queue",
            Layout::DelayQueue => "delay queue",
            Layout::IdQueue => "id queue",
            Layout::SharedCount => "shared count",
            Layout::AtomicLong => "atomic long",
            Layout::GroupMember => "group",
            Layout::SetPartitioner => "set partitioner",
            Layout::ServiceDiscovery => "service discovery",
            Layout::Service => "service",
            Layout::Lease => "lease",
            Layout::FencingGate => "fencing gate",
            Layout::Generic => "unrecognized",
        })
    }
}

/// Who made a node, read from its data.
///
/// Rust recipes write an [`Identity`] (`host=…;pid=…;name=…`); Java Curator writes the local IP
/// address as text (kept in `text`), a leader latch or selector its participant id (also
/// `text`). Empty data leaves every field `None`.
///
/// ```
/// use curator_inspect::Who;
/// let who = Who::from_data(b"host=h;pid=7;name=api");
/// assert_eq!((who.host.as_deref(), who.pid, who.name.as_deref()), (Some("h"), Some(7), Some("api")));
/// assert_eq!(Who::from_data(b"10.0.0.5").text.as_deref(), Some("10.0.0.5"));
/// assert_eq!(Who::from_data(b""), Who::default());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Who {
    /// Host name, from an identity.
    pub host: Option<String>,
    /// Process id, from an identity.
    pub pid: Option<u32>,
    /// Application-chosen name, from an identity.
    pub name: Option<String>,
    /// The data as text when it is not an identity (Java's IP address, a participant id, a
    /// payload), or `<N bytes>` when it is not UTF-8.
    pub text: Option<String>,
}

impl Who {
    /// Reads node data (see the type's docs).
    ///
    /// ```
    /// let who = curator_inspect::Who::from_data(&[0xff, 0x00]);
    /// assert_eq!(who.text.as_deref(), Some("<2 bytes>"));
    /// ```
    pub fn from_data(data: &[u8]) -> Self {
        if let Some(id) = Identity::parse(data) {
            return Self {
                host: Some(id.host().to_owned()),
                pid: Some(id.pid()),
                name: Some(id.name().to_owned()),
                text: None,
            };
        }
        if data.is_empty() {
            return Self::default();
        }
        let text = match std::str::from_utf8(data) {
            Ok(text) => text.to_owned(),
            Err(_) => format!("<{} bytes>", data.len()),
        };
        Self {
            text: Some(text),
            ..Self::default()
        }
    }

    /// Whether the data said nothing (it was empty).
    ///
    /// ```
    /// use curator_framework::identity::Identity;
    /// assert!(curator_inspect::Who::from_data(b"").is_empty());
    /// let id = Identity::new("h", 1, "n");
    /// assert!(!curator_inspect::Who::from(&id).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

impl From<&Identity> for Who {
    fn from(id: &Identity) -> Self {
        Self::from_data(&id.to_bytes())
    }
}

impl fmt::Display for Who {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.host, self.pid, &self.name, &self.text) {
            (Some(host), Some(pid), Some(name), _) => write!(f, "{name} on {host} (pid {pid})"),
            (_, _, _, Some(text)) => write!(f, "{text:?}"),
            _ => f.write_str("(no data)"),
        }
    }
}

/// One node of a recipe: a holder, a waiter, a leader, a member, a lease.
///
/// In JSON the session id is hex text (`"0x100000a1b2c0003"`), as everywhere in `curator`'s
/// output: session ids pass 2^53, past which a JSON number loses digits in JavaScript and `jq`.
///
/// ```
/// let p: curator_inspect::Participant = serde_json::from_value(serde_json::json!({
///     "node": "lock-0000000001",
///     "who": { "host": "h", "pid": 1, "name": "n", "text": null },
///     "session_id": "0x100000a1b2c0003",
///     "since_ms": 1_700_000_000_000_i64,
///     "role": null,
/// })).unwrap();
/// assert_eq!(p.session_id, 0x0100_000a_1b2c_0003);
/// assert!(p.to_string().starts_with("n on h (pid 1) session 0x100000a1b2c0003 since"));
/// assert_eq!(serde_json::to_value(&p).unwrap()["session_id"], "0x100000a1b2c0003");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Participant {
    /// The node's name (its path relative to the inspected path, e.g. `leases/lease-…`).
    pub node: String,
    /// Who made it, from its data.
    pub who: Who,
    /// The session that owns it (`ephemeralOwner`; 0 for a persistent node, or when the server
    /// refused the stat of a node this session may not read); hex text in JSON.
    #[serde(with = "session_hex")]
    pub session_id: i64,
    /// When it was created (`ctime`, ms since the epoch; 0 when not known).
    pub since_ms: i64,
    /// `read` or `write` in a read/write lock.
    pub role: Option<String>,
    /// This session may not read the node: `who` is unknown (so are its session and creation
    /// time on servers where `exists` needs READ permission, from ZooKeeper 3.8.4 and 3.9.2).
    #[serde(default)]
    pub no_read_permission: bool,
}

impl fmt::Display for Participant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.no_read_permission {
            f.write_str(NO_READ_PERMISSION)?;
        } else {
            write!(f, "{}", self.who)?;
        }
        if let Some(role) = &self.role {
            write!(f, " [{role}]")?;
        }
        if self.session_id != 0 {
            write!(f, " session 0x{:x}", self.session_id)?;
        }
        if self.since_ms != 0 {
            write!(f, " since {}", age(self.since_ms))?;
        }
        write!(f, " ({})", self.node)
    }
}

/// How a node this session may not read is marked.
const NO_READ_PERMISSION: &str = "(no read permission)";

/// Session ids as hex text (`"0x…"`) in JSON; a number is read too.
mod session_hex {
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};
    use std::fmt;

    pub(super) fn serialize<S: Serializer>(id: &i64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("0x{id:x}"))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
        struct Id;
        impl Visitor<'_> for Id {
            type Value = i64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a session id: hex text (\"0x…\") or a number")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<i64, E> {
                let digits = text
                    .strip_prefix("0x")
                    .or_else(|| text.strip_prefix("0X"))
                    .ok_or_else(|| {
                        E::custom(format!("a session id starts with 0x, not {text:?}"))
                    })?;
                u64::from_str_radix(digits, 16)
                    // The id's 64 bits, as the server's `long` holds them.
                    .map(|id| id as i64)
                    .map_err(|_| E::custom(format!("not a hex session id: {text:?}")))
            }
            fn visit_i64<E: de::Error>(self, id: i64) -> Result<i64, E> {
                Ok(id)
            }
            fn visit_u64<E: de::Error>(self, id: u64) -> Result<i64, E> {
                Ok(id as i64)
            }
        }
        deserializer.deserialize_any(Id)
    }
}

/// A queue's depth and oldest item.
///
/// ```
/// let q: curator_inspect::QueueStats = serde_json::from_value(serde_json::json!({
///     "depth": 2, "oldest_since_ms": 0, "oldest": "qn-0000000000",
/// })).unwrap();
/// assert!(q.to_string().starts_with("2 items, oldest put"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct QueueStats {
    /// Items waiting.
    pub depth: usize,
    /// When the oldest item (the next to be taken) was put, ms since the epoch.
    pub oldest_since_ms: Option<i64>,
    /// The oldest item's node name.
    pub oldest: Option<String>,
}

impl fmt::Display for QueueStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} items", self.depth)?;
        if let (Some(since), Some(node)) = (self.oldest_since_ms, &self.oldest) {
            write!(f, ", oldest put {} ({node})", age(since))?;
        }
        Ok(())
    }
}

/// What a path holds. Fields that do not apply to its layout are empty or `None`.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let report = curator_inspect::inspect(&client, "/locks/orders").await?;
/// println!("{report}");
/// println!("{}", serde_json::to_string_pretty(&report).unwrap());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Report {
    /// The inspected path.
    pub path: String,
    /// The layout recognized there.
    pub layout: Layout,
    /// The layout is a guess from the node's data or stat alone (a barrier, a counter, a group,
    /// a fencing gate): nothing in the names says so. [`data`](Self::data) shows what it was
    /// guessed from; a tree shown around it goes on below it.
    #[serde(default)]
    pub guess: bool,
    /// This session may not read the node: only its stat (data size, children) is known.
    #[serde(default)]
    pub no_read_permission: bool,
    /// Not even the node's stat is known: from ZooKeeper 3.8.4 and 3.9.2 on, `exists` needs
    /// READ permission too (ZOOKEEPER-2590). [`data_len`](Self::data_len) and
    /// [`children`](Self::children) are then 0.
    #[serde(default)]
    pub stat_unknown: bool,
    /// The node's data for people: quoted text (cut at 64 characters) or `0x` hex (cut at 32
    /// bytes) with its length; `None` for no data (or none readable).
    #[serde(default)]
    pub data: Option<String>,
    /// The node's own data size in bytes.
    pub data_len: usize,
    /// Its number of children.
    pub children: usize,
    /// Its number of descendants (`getAllChildrenNumber`; `None` on servers before 3.6).
    pub descendants: Option<usize>,
    /// Who made the node itself (a barrier's raiser).
    pub who: Option<Who>,
    /// Who holds it, in order: a lock's holder, readers, leases, a leader.
    pub holders: Vec<Participant>,
    /// Who waits, in the order they will get it.
    pub waiters: Vec<Participant>,
    /// The leader (latch, selector); `since_ms` is the start of its tenure.
    pub leader: Option<Participant>,
    /// Members (double barrier, group, set partitioner, service instances).
    pub members: Vec<Participant>,
    /// Queue depth and oldest item.
    pub queue: Option<QueueStats>,
    /// A counter's value.
    pub value: Option<i64>,
    /// A double barrier's `ready` node exists.
    pub ready: Option<bool>,
    /// When a lease's interval ends (ms since the epoch, the server's clock).
    #[serde(default)]
    pub until_ms: Option<i64>,
    /// A lease's fencing token (its node's `mzxid`), or the highest token a fencing gate
    /// admitted.
    #[serde(default)]
    pub token: Option<i64>,
    /// Nodes under the path that were read for this report and that this session may not read
    /// (relative to the path).
    #[serde(default)]
    pub unreadable: Vec<String>,
    /// The lock-delay record of a lock, a semaphore (its `leases` directory) or a latch whose
    /// holders promised one (curator-locks' `LockDelayRecord`): holders' lines and failures
    /// still running. `None` without a record.
    #[serde(default)]
    pub lock_delay: Option<Vec<DelayLine>>,
    /// Sub-reports: each lock of several, each item lock of a partitioner, each service.
    pub sections: Vec<Report>,
}

impl Report {
    pub(crate) fn new(path: &str, layout: Layout) -> Self {
        Self {
            path: path.to_owned(),
            layout,
            guess: false,
            no_read_permission: false,
            stat_unknown: false,
            data: None,
            data_len: 0,
            children: 0,
            descendants: None,
            who: None,
            holders: Vec::new(),
            waiters: Vec::new(),
            leader: None,
            members: Vec::new(),
            queue: None,
            value: None,
            ready: None,
            until_ms: None,
            token: None,
            unreadable: Vec::new(),
            lock_delay: None,
            sections: Vec::new(),
        }
    }

    /// The layout for people: `mutex`, `shared count (a guess)`, `no read permission`.
    ///
    /// ```
    /// let report: curator_inspect::Report = serde_json::from_value(serde_json::json!({
    ///     "path": "/a", "layout": "shared_count", "guess": true, "data_len": 4, "children": 0,
    ///     "descendants": null, "who": null, "holders": [], "waiters": [], "leader": null,
    ///     "members": [], "queue": null, "value": 7, "ready": null, "sections": [],
    /// })).unwrap();
    /// assert_eq!(report.label(), "shared count (a guess)");
    /// ```
    pub fn label(&self) -> String {
        if self.no_read_permission {
            NO_READ_PERMISSION.trim_matches(['(', ')']).to_owned()
        } else if self.guess {
            format!("{} (a guess)", self.layout)
        } else {
            self.layout.to_string()
        }
    }

    fn write_indented(&self, f: &mut fmt::Formatter<'_>, indent: usize) -> fmt::Result {
        let pad = "  ".repeat(indent);
        write!(f, "{pad}{} — {}", self.path, self.label())?;
        if self.stat_unknown {
            f.write_str(" (size not known)")?;
        } else if self.layout != Layout::Missing {
            write!(
                f,
                " ({} children, {} bytes of data",
                self.children, self.data_len
            )?;
            if let Some(n) = self.descendants {
                write!(f, ", {n} descendants")?;
            }
            f.write_str(")")?;
        }
        writeln!(f)?;
        if let Some(data) = &self.data {
            writeln!(f, "{pad}  data: {data}")?;
        }
        if self.layout == Layout::Lease {
            if let Some(who) = &self.who {
                writeln!(f, "{pad}  taken by: {who}")?;
            }
            if let Some(until) = self.until_ms {
                writeln!(f, "{pad}  interval: {}", until_text(until))?;
            }
        } else if let Some(who) = &self.who {
            writeln!(f, "{pad}  made by: {who}")?;
        }
        if let Some(token) = self.token {
            let title = if self.layout == Layout::FencingGate {
                "highest token admitted"
            } else {
                "fencing token"
            };
            writeln!(f, "{pad}  {title}: {token}")?;
        }
        if let Some(value) = self.value {
            writeln!(f, "{pad}  value: {value}")?;
        }
        if let Some(leader) = &self.leader {
            writeln!(f, "{pad}  leader: {leader}")?;
        }
        let lists = [
            ("holders", &self.holders),
            ("waiters", &self.waiters),
            ("members", &self.members),
        ];
        for (title, list) in lists {
            if list.is_empty() {
                continue;
            }
            writeln!(f, "{pad}  {title} ({}):", list.len())?;
            for (i, p) in list.iter().enumerate() {
                writeln!(f, "{pad}    {}. {p}", i + 1)?;
            }
        }
        if let Some(ready) = self.ready {
            writeln!(f, "{pad}  ready: {ready}")?;
        }
        if let Some(queue) = &self.queue {
            writeln!(f, "{pad}  queue: {queue}")?;
        }
        if let Some(lines) = &self.lock_delay {
            writeln!(f, "{pad}  lock-delay ({}):", lines.len())?;
            for line in lines {
                writeln!(f, "{pad}    {line}")?;
            }
        }
        if !self.unreadable.is_empty() {
            writeln!(
                f,
                "{pad}  no read permission: {}",
                self.unreadable.join(", ")
            )?;
        }
        for section in &self.sections {
            section.write_indented(f, indent + 1)?;
        }
        Ok(())
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_indented(f, 0)
    }
}

/// One line of a lock-delay record.
///
/// ```
/// use curator_inspect::DelayLine;
/// let line = DelayLine { node: "lock-0000000004".into(), failed: false, delay_ms: 15_000, until_ms: None };
/// assert_eq!(line.to_string(), "held by lock-0000000004 (delay 15s)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DelayLine {
    /// The lock node the line is about (relative to the record's directory).
    pub node: String,
    /// Its holder failed without releasing (otherwise: it holds, or its failure was not seen
    /// yet, when the node is gone).
    pub failed: bool,
    /// The delay its holder promised.
    pub delay_ms: u64,
    /// For a failure: when the lock (or the slot) is available again, ms since the epoch on
    /// ZooKeeper's clock.
    pub until_ms: Option<i64>,
}

impl fmt::Display for DelayLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let delay = span(i64::try_from(self.delay_ms / 1000).unwrap_or(i64::MAX));
        if self.failed {
            write!(f, "failed: {} (delay {delay})", self.node)?;
            if let Some(until) = self.until_ms {
                let text = until_text(until).replace("ends in", "unavailable, ends in");
                write!(f, ": {text}")?;
            }
            Ok(())
        } else {
            write!(f, "held by {} (delay {delay})", self.node)
        }
    }
}

/// Milliseconds since the epoch, now (this host's clock).
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `12s ago`-style text for a time in ms since the epoch.
fn age(since_ms: i64) -> String {
    span(now_ms().saturating_sub(since_ms).max(0) / 1000) + " ago"
}

/// When a lease ends or ended, by this host's clock: `ends in 5m0s` or `ended 12s ago`.
fn until_text(until_ms: i64) -> String {
    let left = until_ms.saturating_sub(now_ms());
    if left > 0 {
        format!("ends in {}", span((left + 999) / 1000))
    } else {
        format!("ended {} ago", span(-left / 1000))
    }
}

/// `12s`, `3m4s`, `2h5m`, `1d3h`.
fn span(secs: i64) -> String {
    match secs {
        ..60 => format!("{secs}s"),
        60..3600 => format!("{}m{}s", secs / 60, secs % 60),
        3600..86400 => format!("{}h{}m", secs / 3600, (secs % 3600) / 60),
        _ => format!("{}d{}h", secs / 86400, (secs % 86400) / 3600),
    }
}
