//! Reading a path and recognizing its layout.

use curator_caches::{PersistentWatcher, PersistentWatcherEvent};
use curator_framework::identity::Identity;
use curator_framework::listen::ListenerStream;
use curator_framework::{CuratorFramework, Error, Result, Stat, paths};
use curator_locks::{LockDelayEntry, LockDelayRecord};
use futures::StreamExt;
use futures::future::{BoxFuture, join_all};

use crate::names::{
    QueueItem, is_ip_text, is_printable_ascii, is_session_owner, is_uuid, preview, sequence_after,
};
use crate::report::{DelayLine, Layout, Participant, QueueStats, Report, Who, now_ms};

/// At most this many children are inspected as sections (several locks, services).
const MAX_SECTIONS: usize = 64;

/// Children of an unrecognized node are read (to tell a group or a service) only up to this
/// many; past it the report stays generic (counts from the node's stat and
/// `getAllChildrenNumber`).
const MAX_GUESS_READS: usize = 10_000;

/// The revocation marker Curator writes into a lock node: not a participant id.
const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

/// The first word of a `NonBlockingLease` node's data (curator-locks).
const LEASE_FORMAT: &str = "lease-v1";
/// The child a `NonBlockingLease` writes to learn the server's time.
const LEASE_CLOCK: &str = "clock";
/// The prefix of a `DistributedAtomicLong`'s outcome markers (curator-counters).
const ATOMIC_MARKER: &str = "_atomic-";
/// ZooKeeper's `ephemeralOwner` of a container node.
const CONTAINER_OWNER: i64 = i64::MIN;

/// Reads `path` and reports what recipe lives there, who holds it and who waits.
///
/// A layout is recognized only when every child fits it; one told from the node's data or stat
/// alone is marked [`Report::guess`]. Never fails on an unknown layout (that is
/// [`Layout::Generic`]), a missing node ([`Layout::Missing`]) or a node this session may not
/// read ([`Report::no_read_permission`] at the path, [`Report::unreadable`] below it); nodes
/// that vanish while being read are left out.
///
/// # Errors
/// Connection and session errors from the reads, after the client's retry policy gave up.
///
/// # Cancellation safety
/// Safe: it only reads.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let report = curator_inspect::inspect(&client, "/locks/orders").await?;
/// if let Some(holder) = report.holders.first() {
///     println!("held by {} (session 0x{:x})", holder.who, holder.session_id);
/// }
/// # Ok(()) }
/// ```
pub async fn inspect(client: &CuratorFramework, path: &str) -> Result<Report> {
    inspect_at(client.clone(), path.to_owned(), 0).await
}

/// Reports on `path` now and after every change under it: a persistent recursive watch
/// (ZooKeeper 3.6+) set before the first read, so no change is missed.
///
/// # Errors
/// As [`inspect`], and an invalid path.
///
/// # Cancellation safety
/// Safe: dropping the future removes nothing it has not made; dropping the [`Watch`] stops
/// the watch.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let (first, mut watch) = curator_inspect::watch(&client, "/locks/orders").await?;
/// println!("{first}");
/// while let Some(report) = watch.next().await {
///     println!("{}", report?);
/// }
/// # Ok(()) }
/// ```
pub async fn watch(client: &CuratorFramework, path: &str) -> Result<(Report, Watch)> {
    // The recipe sets the watch again after every reconnect and on every new session, so the
    // reports go on through connection losses and session expiries.
    let watcher = PersistentWatcher::builder(client.clone(), path).build()?;
    let mut events = watcher.stream();
    watcher.start().await?;
    // The watch is set before the first read, so no change falls between the two.
    loop {
        match events.next().await {
            Some(PersistentWatcherEvent::Reset) => break,
            Some(_) => {}
            None => return Err(Error::Closed),
        }
    }
    let report = inspect(client, path).await?;
    Ok((
        report,
        Watch {
            client: client.clone(),
            path: path.to_owned(),
            _watcher: watcher,
            events,
        },
    ))
}

/// Re-reports a path on every change under it, from [`watch`].
///
/// ```no_run
/// # async fn demo(mut watch: curator_inspect::Watch) -> curator_framework::Result<()> {
/// let next = watch.next().await.expect("the client is open")?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Watch {
    client: CuratorFramework,
    path: String,
    /// Held for its events: dropping the watch ends the recipe.
    _watcher: PersistentWatcher,
    events: ListenerStream<PersistentWatcherEvent>,
}

impl Watch {
    /// Waits for the next change under the path (or the watch set again after a reconnect or on
    /// a new session, when changes may have been missed) and reports again; `None` once the
    /// client has closed.
    ///
    /// # Errors
    /// As [`inspect`].
    ///
    /// # Cancellation safety
    /// Safe: a change seen by a dropped call is not lost (the next report reads the tree anew),
    /// though the call that sees the next change reports it.
    ///
    /// ```no_run
    /// # async fn demo(mut watch: curator_inspect::Watch) {
    /// while let Some(Ok(report)) = watch.next().await {
    ///     println!("{report}");
    /// }
    /// # }
    /// ```
    pub async fn next(&mut self) -> Option<Result<Report>> {
        self.events.next().await?;
        Some(inspect(&self.client, &self.path).await)
    }

    /// The inspected path.
    ///
    /// ```no_run
    /// # fn demo(watch: curator_inspect::Watch) { println!("{}", watch.path()); }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// A child read with its data and stat.
struct Node {
    /// Relative to the inspected path (`leases/lease-…` for a grandchild).
    name: String,
    data: Vec<u8>,
    stat: Stat,
    /// This session may not read it: `data` is empty and `stat` comes from `exists`.
    denied: bool,
    /// `stat` is the server's; `false` when even `exists` was refused (ZooKeeper 3.8.4 and
    /// 3.9.2 on, ZOOKEEPER-2590), and `stat` is all zeros.
    stat_known: bool,
}

impl Node {
    fn participant(&self) -> Participant {
        Participant {
            node: self.name.clone(),
            who: if self.denied {
                Who::default()
            } else {
                Who::from_data(&self.data)
            },
            session_id: self.stat.ephemeral_owner,
            since_ms: self.stat.ctime,
            role: None,
            no_read_permission: self.denied,
        }
    }

    /// Owned by a session (an ephemeral node), as every recipe's participant node is; a node
    /// whose stat the server refused may be.
    fn is_ephemeral(&self) -> bool {
        !self.stat_known || is_session_owner(self.stat.ephemeral_owner)
    }
}

/// Notes the nodes of `nodes` this session may not read.
fn note_denied(report: &mut Report, nodes: &[Node]) {
    for node in nodes.iter().filter(|n| n.denied) {
        if !report.unreadable.contains(&node.name) {
            report.unreadable.push(node.name.clone());
        }
    }
}

/// Reads `names` under `path` (all requests sent at once); vanished nodes are skipped, nodes
/// this session may not read come with their stat only.
async fn read_nodes(
    client: &CuratorFramework,
    path: &str,
    prefix: &str,
    names: &[String],
) -> Result<Vec<Node>> {
    let reads = names.iter().map(|name| {
        let full = paths::join(path, name);
        async move { (name, read_node(client, &full).await) }
    });
    let mut nodes = Vec::with_capacity(names.len());
    for (name, result) in join_all(reads).await {
        if let Some(read) = result? {
            nodes.push(Node {
                name: format!("{prefix}{name}"),
                data: read.data,
                stat: read.stat.unwrap_or_default(),
                denied: read.denied,
                stat_known: read.stat.is_some(),
            });
        }
    }
    Ok(nodes)
}

/// What [`read_node`] read of one node.
struct Read {
    data: Vec<u8>,
    /// `None` when the server refused even the stat.
    stat: Option<Stat>,
    denied: bool,
}

/// A node's data and stat; `None` when it does not exist; denied and without data when this
/// session may not read it. The stat then comes from `exists`, which needs no permission before
/// ZooKeeper 3.8.4 and 3.9.2; from those on it needs READ too (ZOOKEEPER-2590), and its
/// `NoAuth` (a missing node is `NoNode`) says only that the node exists.
async fn read_node(client: &CuratorFramework, path: &str) -> Result<Option<Read>> {
    let denied = |stat| Read {
        data: Vec::new(),
        stat,
        denied: true,
    };
    match client.get_data().for_path(path).await {
        Ok((data, stat)) => Ok(Some(Read {
            data,
            stat: Some(stat),
            denied: false,
        })),
        Err(Error::NoNode) => Ok(None),
        Err(Error::NoAuth) => match client.check_exists().for_path(path).await {
            Ok(stat) => Ok(stat.map(|stat| denied(Some(stat)))),
            Err(Error::NoAuth) => Ok(Some(denied(None))),
            Err(error) => Err(error),
        },
        Err(error) => Err(error),
    }
}

/// Children of `path`, sorted; none when it does not exist; `None` when this session may not
/// list them.
async fn children(client: &CuratorFramework, path: &str) -> Result<Option<Vec<String>>> {
    match client.get_children().for_path(path).await {
        Ok((mut children, _)) => {
            children.sort();
            Ok(Some(children))
        }
        Err(Error::NoNode) => Ok(Some(Vec::new())),
        Err(Error::NoAuth) => Ok(None),
        Err(error) => Err(error),
    }
}

/// The report of a node this session may not read: its stat only, when the server gives it
/// (see [`read_node`]).
async fn unreadable(client: &CuratorFramework, path: &str) -> Result<Report> {
    let mut report = Report::new(path, Layout::Generic);
    report.no_read_permission = true;
    match client.check_exists().for_path(path).await {
        Ok(None) => return Ok(Report::new(path, Layout::Missing)),
        Ok(Some(stat)) => {
            report.data_len = usize::try_from(stat.data_length).unwrap_or(0);
            report.children = usize::try_from(stat.num_children).unwrap_or(0);
        }
        Err(Error::NoAuth) => report.stat_unknown = true,
        Err(error) => return Err(error),
    }
    Ok(report)
}

fn inspect_at(
    client: CuratorFramework,
    path: String,
    depth: u32,
) -> BoxFuture<'static, Result<Report>> {
    Box::pin(async move {
        let (data, stat) = match client.get_data().for_path(&path).await {
            Ok(read) => read,
            Err(Error::NoNode) => return Ok(Report::new(&path, Layout::Missing)),
            Err(Error::NoAuth) => return unreadable(&client, &path).await,
            Err(error) => return Err(error),
        };
        let names = match children(&client, &path).await? {
            Some(names) => names,
            None => return unreadable(&client, &path).await,
        };
        let mut report = Report::new(&path, Layout::Generic);
        report.data_len = data.len();
        report.data = preview(&data);
        report.children = names.len();
        report.descendants = client.get_all_children_number().for_path(&path).await.ok();
        let here = Here {
            path: &path,
            data: &data,
            stat: &stat,
            names: &names,
            depth,
        };
        recognize(&client, &here, &mut report).await?;
        if report.lock_delay.is_none() {
            report.lock_delay = delay_lines(&data, stat.mtime);
        }
        Ok(report)
    })
}

/// The lines of a lock-delay record in `data` (a directory's, last written at `mtime`).
fn delay_lines(data: &[u8], mtime: i64) -> Option<Vec<DelayLine>> {
    let record = LockDelayRecord::parse(data).ok()??;
    Some(
        record
            .entries()
            .iter()
            .map(|entry| DelayLine {
                node: entry.node().to_owned(),
                failed: matches!(entry, LockDelayEntry::Failed { .. }),
                delay_ms: match entry {
                    LockDelayEntry::Held { delay_ms, .. }
                    | LockDelayEntry::Failed { delay_ms, .. } => *delay_ms,
                },
                until_ms: entry.available_at(mtime),
            })
            .collect(),
    )
}

/// What was read at the inspected node.
struct Here<'a> {
    path: &'a str,
    data: &'a [u8],
    stat: &'a Stat,
    /// Its children, sorted.
    names: &'a [String],
    depth: u32,
}

impl Here<'_> {
    fn all(&self, fits: impl Fn(&str) -> bool) -> bool {
        self.names.iter().all(|n| fits(n))
    }

    fn has(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }
}

/// Recognizes a layout only when every child fits it; tells the rest from the data or the
/// stat, as a guess. Leaves the report generic when nothing fits.
async fn recognize(client: &CuratorFramework, here: &Here<'_>, report: &mut Report) -> Result<()> {
    if here.names.is_empty() {
        childless(here, report);
        return Ok(());
    }
    if let Some(lease) = Lease::parse(here.data) {
        if here.all(|n| n == LEASE_CLOCK) {
            lease.report(here, report);
            return Ok(());
        }
    }
    if here.all(|n| n.starts_with(ATOMIC_MARKER)) {
        counter_with_markers(here, report);
        return Ok(());
    }
    let fits = if here
        .all(|n| sequence_after(n, "__READ__").is_some() || sequence_after(n, "__WRIT__").is_some())
    {
        read_write_lock(client, here, report).await?
    } else if here.has("leases") && here.all(|n| n == "leases" || n == "locks") {
        semaphore(client, here, report).await?
    } else if here.has("members") && here.all(|n| n == "members" || n == "locks") {
        partitioner(client, here, report).await?
    } else if here.all(|n| sequence_after(n, "lock-").is_some()) {
        lock(client, here, report).await?
    } else if here.all(|n| sequence_after(n, "latch-").is_some()) {
        latch(client, here, report).await?
    } else if here.all(|n| sequence_after(n, "qn-").is_some()) {
        simple_queue(client, here, report).await?;
        true
    } else if here.all(|n| QueueItem::parse(n).is_some()) {
        queue(client, here, report).await?;
        true
    } else if here.all(|n| n == "ready" || is_uuid(n)) && here.names.iter().any(|n| n != "ready") {
        double_barrier(client, here, report).await?
    } else {
        false
    };
    if fits {
        return Ok(());
    }
    if guess_from_children(client, here, report).await? {
        return Ok(());
    }
    sections(client, here, report).await
}

/// A childless node: our lease, or a guess from its data (a fencing gate, a barrier, a
/// counter).
fn childless(here: &Here<'_>, report: &mut Report) {
    let data = here.data;
    let persistent = here.stat.ephemeral_owner == 0;
    if let Some(lease) = Lease::parse(data) {
        lease.report(here, report);
    } else if persistent && matches!(LockDelayRecord::parse(data), Ok(Some(_))) {
        // A lock's directory with a lock-delay record and no contender now (a latch's looks the
        // same): a guess.
        report.layout = Layout::Mutex;
        report.guess = true;
    } else if let Some(token) = gate_token(data, here.stat) {
        report.layout = Layout::FencingGate;
        report.guess = true;
        report.token = Some(token);
    } else if persistent && (Identity::parse(data).is_some() || is_ip_text(data)) {
        // Java Curator writes its IP address into any node made without data: a guess.
        report.layout = Layout::Barrier;
        report.guess = true;
        report.who = Some(Who::from_data(data));
    } else if persistent && !is_printable_ascii(data) {
        // Text of 4 or 8 characters (`true`, `12345678`) is text, not a counter.
        if let Ok(bytes) = <[u8; 8]>::try_from(data) {
            report.layout = Layout::AtomicLong;
            report.guess = true;
            report.value = Some(i64::from_be_bytes(bytes));
        } else if let Ok(bytes) = <[u8; 4]>::try_from(data) {
            report.layout = Layout::SharedCount;
            report.guess = true;
            report.value = Some(i64::from(i32::from_be_bytes(bytes)));
        }
    }
}

/// A `DistributedAtomicLong` with its outcome markers (`_atomic-<uuid>`): 8 bytes (0 bytes
/// read as 0), or 4 for the integer variant.
fn counter_with_markers(here: &Here<'_>, report: &mut Report) {
    if here.data.is_empty() {
        report.layout = Layout::AtomicLong;
        report.value = Some(0);
    } else if let Ok(bytes) = <[u8; 8]>::try_from(here.data) {
        report.layout = Layout::AtomicLong;
        report.value = Some(i64::from_be_bytes(bytes));
    } else if let Ok(bytes) = <[u8; 4]>::try_from(here.data) {
        report.layout = Layout::SharedCount;
        report.value = Some(i64::from(i32::from_be_bytes(bytes)));
    }
}

/// The token a `FencingGate` node holds: the decimal text it writes (`12884901890`) of a
/// zxid from an earlier write, so older than the node's last write, which stored it.
fn gate_token(data: &[u8], stat: &Stat) -> Option<i64> {
    let text = std::str::from_utf8(data).ok()?;
    let token: i64 = text.parse().ok()?;
    (stat.ephemeral_owner == 0 && token > 0 && token < stat.mzxid && token.to_string() == text)
        .then_some(token)
}

/// A `NonBlockingLease` node's data: `lease-v1 <duration ms> <holder>`.
struct Lease {
    duration_ms: i64,
    holder: String,
}

impl Lease {
    fn parse(data: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(data).ok()?;
        let mut words = text.splitn(3, ' ');
        if words.next()? != LEASE_FORMAT {
            return None;
        }
        let duration_ms = words.next()?.parse().ok().filter(|ms: &i64| *ms >= 0)?;
        let holder = words.next().filter(|h| !h.is_empty())?.to_owned();
        Some(Self {
            duration_ms,
            holder,
        })
    }

    /// Who took it, until when (the interval starts at the node's `mtime`), and its token; the
    /// holder is a holder only while the interval runs (by this host's clock).
    fn report(self, here: &Here<'_>, report: &mut Report) {
        let until = here.stat.mtime.saturating_add(self.duration_ms);
        let who = Who::from_data(self.holder.as_bytes());
        report.layout = Layout::Lease;
        report.who = Some(who.clone());
        report.until_ms = Some(until);
        report.token = Some(here.stat.mzxid);
        if until > now_ms() {
            report.holders.push(Participant {
                node: paths::node_name(here.path).to_owned(),
                who,
                session_id: 0,
                since_ms: here.stat.mtime,
                role: None,
                no_read_permission: false,
            });
        }
    }
}

/// Lock nodes in Curator's order (the sequence after `marker`).
fn in_lock_order(mut nodes: Vec<Node>, marker: &str) -> Vec<Node> {
    nodes.sort_by_key(|n| {
        let name = n.name.rsplit('/').next().unwrap_or(&n.name);
        (
            sequence_after(name, marker).unwrap_or(u64::MAX),
            n.name.clone(),
        )
    });
    nodes
}

async fn lock(client: &CuratorFramework, here: &Here<'_>, report: &mut Report) -> Result<bool> {
    let nodes = in_lock_order(
        read_nodes(client, here.path, "", here.names).await?,
        "lock-",
    );
    if !nodes.iter().all(Node::is_ephemeral) {
        return Ok(false);
    }
    note_denied(report, &nodes);
    // A selector's nodes hold participant ids; a mutex's an identity, Java's IP text or nothing.
    let ids = nodes.iter().any(|n| {
        !n.denied
            && !n.data.is_empty()
            && n.data != REVOKE_MESSAGE
            && Identity::parse(&n.data).is_none()
            && !is_ip_text(&n.data)
    });
    let mut participants = nodes.iter().map(Node::participant);
    report.holders.extend(participants.next());
    report.waiters.extend(participants);
    if ids {
        report.layout = Layout::LeaderSelector;
        report.leader = report.holders.first().cloned();
    } else {
        report.layout = Layout::Mutex;
    }
    Ok(true)
}

async fn latch(client: &CuratorFramework, here: &Here<'_>, report: &mut Report) -> Result<bool> {
    let nodes = in_lock_order(
        read_nodes(client, here.path, "", here.names).await?,
        "latch-",
    );
    if !nodes.iter().all(Node::is_ephemeral) {
        return Ok(false);
    }
    note_denied(report, &nodes);
    report.layout = Layout::LeaderLatch;
    let mut participants = nodes.iter().map(Node::participant);
    report.holders.extend(participants.next());
    report.waiters.extend(participants);
    report.leader = report.holders.first().cloned();
    Ok(true)
}

async fn read_write_lock(
    client: &CuratorFramework,
    here: &Here<'_>,
    report: &mut Report,
) -> Result<bool> {
    let read = read_nodes(client, here.path, "", here.names).await?;
    if !read.iter().all(Node::is_ephemeral) {
        return Ok(false);
    }
    note_denied(report, &read);
    report.layout = Layout::ReadWriteLock;
    let mut nodes: Vec<(u64, bool, Node)> = read
        .into_iter()
        .filter_map(|n| {
            if let Some(seq) = sequence_after(&n.name, "__WRIT__") {
                Some((seq, true, n))
            } else {
                sequence_after(&n.name, "__READ__").map(|seq| (seq, false, n))
            }
        })
        .collect();
    nodes.sort_by(|a, b| (a.0, &a.2.name).cmp(&(b.0, &b.2.name)));
    let mut writer_before = false;
    for (index, (_, write, node)) in nodes.iter().enumerate() {
        let mut p = node.participant();
        p.role = Some(if *write { "write" } else { "read" }.to_owned());
        let holds = if *write {
            index == 0
        } else {
            // A read node reusing its thread's write sequence (a downgrade) holds with it.
            !writer_before
                || nodes.iter().any(|(_, w, other)| {
                    *w && other.stat.ephemeral_owner == node.stat.ephemeral_owner
                        && report.holders.iter().any(|h| h.node == other.name)
                })
        };
        if *write {
            writer_before = true;
        }
        if holds {
            report.holders.push(p);
        } else {
            report.waiters.push(p);
        }
    }
    Ok(true)
}

/// `leases/` holding only `lease-<seq>` nodes and `locks/` only `lock-<seq>` nodes, all
/// ephemeral; an idle semaphore (both empty) only when they are containers, as recipes make
/// them.
async fn semaphore(
    client: &CuratorFramework,
    here: &Here<'_>,
    report: &mut Report,
) -> Result<bool> {
    let parents = read_nodes(client, here.path, "", here.names).await?;
    let leases_path = paths::join(here.path, "leases");
    let locks_path = paths::join(here.path, "locks");
    let (Some(lease_names), Some(lock_names)) = (
        children(client, &leases_path).await?,
        children(client, &locks_path).await?,
    ) else {
        return Ok(false);
    };
    if !lease_names
        .iter()
        .all(|n| sequence_after(n, "lease-").is_some())
        || !lock_names
            .iter()
            .all(|n| sequence_after(n, "lock-").is_some())
    {
        return Ok(false);
    }
    // A semaphore with a lock-delay keeps its record in its `leases` directory: idle, it is
    // recognized by that record.
    let leases_dir = parents.iter().find(|p| p.name == "leases");
    let record = leases_dir.and_then(|leases| delay_lines(&leases.data, leases.stat.mtime));
    if lease_names.is_empty()
        && lock_names.is_empty()
        && record.is_none()
        && !parents
            .iter()
            .all(|p| p.stat.ephemeral_owner == CONTAINER_OWNER)
    {
        return Ok(false);
    }
    let leases = in_lock_order(
        read_nodes(client, &leases_path, "leases/", &lease_names).await?,
        "lease-",
    );
    let locks = in_lock_order(
        read_nodes(client, &locks_path, "locks/", &lock_names).await?,
        "lock-",
    );
    if !leases.iter().chain(&locks).all(Node::is_ephemeral) {
        return Ok(false);
    }
    note_denied(report, &leases);
    note_denied(report, &locks);
    report.layout = Layout::SemaphoreV2;
    report.lock_delay = record;
    // The acquirer that holds the guard lock made its lease node and waits for the count to
    // allow it: its newest lease node is pending, not held.
    let pending = locks.first().and_then(|guard| {
        leases
            .iter()
            .rev()
            .find(|l| l.stat.ephemeral_owner == guard.stat.ephemeral_owner)
            .map(|l| l.name.clone())
    });
    report.holders = leases
        .iter()
        .filter(|l| Some(&l.name) != pending.as_ref())
        .map(Node::participant)
        .collect();
    report.waiters = locks.iter().map(Node::participant).collect();
    Ok(true)
}

/// `members/` holding only ephemeral childless members, and `locks/<item>` holding only lock
/// nodes.
async fn partitioner(
    client: &CuratorFramework,
    here: &Here<'_>,
    report: &mut Report,
) -> Result<bool> {
    let members_path = paths::join(here.path, "members");
    let locks_path = paths::join(here.path, "locks");
    let (Some(names), Some(mut items)) = (
        children(client, &members_path).await?,
        children(client, &locks_path).await?,
    ) else {
        return Ok(false);
    };
    let nodes = read_nodes(client, &members_path, "members/", &names).await?;
    if !nodes
        .iter()
        .all(|n| n.is_ephemeral() && n.stat.num_children == 0)
    {
        return Ok(false);
    }
    for item in &items {
        match children(client, &paths::join(&locks_path, item)).await? {
            Some(locks) if locks.iter().all(|n| sequence_after(n, "lock-").is_some()) => {}
            _ => return Ok(false),
        }
    }
    note_denied(report, &nodes);
    report.layout = Layout::SetPartitioner;
    let mut members: Vec<Participant> = nodes.iter().map(Node::participant).collect();
    members.sort_by(|a, b| a.node.cmp(&b.node));
    report.members = members;
    if here.depth == 0 {
        items.truncate(MAX_SECTIONS);
        for item in items {
            let section = inspect_at(
                client.clone(),
                paths::join(&locks_path, &item),
                here.depth + 1,
            )
            .await?;
            if section.layout != Layout::Missing {
                report.sections.push(section);
            }
        }
    }
    Ok(true)
}

/// UUID-named ephemeral members and a `ready` node.
async fn double_barrier(
    client: &CuratorFramework,
    here: &Here<'_>,
    report: &mut Report,
) -> Result<bool> {
    let members: Vec<String> = here
        .names
        .iter()
        .filter(|n| *n != "ready")
        .cloned()
        .collect();
    let mut nodes = read_nodes(client, here.path, "", &members).await?;
    if !nodes.iter().all(Node::is_ephemeral) {
        return Ok(false);
    }
    note_denied(report, &nodes);
    report.layout = Layout::DoubleBarrier;
    report.ready = Some(here.has("ready"));
    nodes.sort_by(|a, b| (a.stat.czxid, &a.name).cmp(&(b.stat.czxid, &b.name)));
    report.members = nodes.iter().map(Node::participant).collect();
    Ok(true)
}

/// Service instances (Curator's JSON), or a group (a guess: ephemeral childless children).
/// The first child is read alone: when it fits neither, no other child is read.
async fn guess_from_children(
    client: &CuratorFramework,
    here: &Here<'_>,
    report: &mut Report,
) -> Result<bool> {
    let Some((first, rest)) = here.names.split_first() else {
        return Ok(false);
    };
    if here.names.len() > MAX_GUESS_READS {
        return Ok(false);
    }
    let probe = read_nodes(client, here.path, "", std::slice::from_ref(first)).await?;
    note_denied(report, &probe);
    let member = |n: &Node| n.is_ephemeral() && n.stat.num_children == 0;
    let service = |n: &Node| !n.denied && service_instance(&n.data).is_some();
    if !probe.iter().all(|n| member(n) || service(n)) {
        return Ok(false);
    }
    let mut nodes = probe;
    nodes.extend(read_nodes(client, here.path, "", rest).await?);
    note_denied(report, &nodes);
    if nodes.is_empty() {
        return Ok(false);
    }
    if nodes.iter().all(service) {
        report.layout = Layout::Service;
        report.members = instances(nodes);
        return Ok(true);
    }
    if nodes.iter().all(member) {
        report.layout = Layout::GroupMember;
        report.guess = true;
        let mut members: Vec<Participant> = nodes.iter().map(Node::participant).collect();
        members.sort_by(|a, b| a.node.cmp(&b.node));
        report.members = members;
        return Ok(true);
    }
    Ok(false)
}

/// Children that are each a lock (several locks) or each a service (a discovery base path),
/// inspected as sections of the report at the top level only. The first child is inspected
/// alone: when it is neither, no other child is.
async fn sections(client: &CuratorFramework, here: &Here<'_>, report: &mut Report) -> Result<()> {
    if here.depth != 0 || here.names.len() > MAX_SECTIONS {
        return Ok(());
    }
    let lock = |s: &Report| {
        !s.guess
            && matches!(
                s.layout,
                Layout::Mutex | Layout::ReadWriteLock | Layout::SemaphoreV2 | Layout::Missing
            )
    };
    let service = |s: &Report| matches!(s.layout, Layout::Service | Layout::Missing);
    let Some((first, rest)) = here.names.split_first() else {
        return Ok(());
    };
    let probe = inspect_at(
        client.clone(),
        paths::join(here.path, first),
        here.depth + 1,
    )
    .await?;
    if !lock(&probe) && !service(&probe) {
        return Ok(());
    }
    let mut sections = vec![probe];
    sections.extend(
        join_all(
            rest.iter()
                .map(|n| inspect_at(client.clone(), paths::join(here.path, n), here.depth + 1)),
        )
        .await
        .into_iter()
        .collect::<Result<Vec<_>>>()?,
    );
    let locks = sections.iter().all(lock);
    let services = sections.iter().all(service);
    let present = sections.iter().any(|s| s.layout != Layout::Missing);
    if present && (locks || services) {
        report.layout = if locks {
            Layout::MultiLock
        } else {
            Layout::ServiceDiscovery
        };
        report.sections = sections
            .into_iter()
            .filter(|s| s.layout != Layout::Missing)
            .collect();
    }
    Ok(())
}

/// Depth and oldest item of a queue whose items are `items` (already in consumer order).
async fn queue_stats(
    client: &CuratorFramework,
    path: &str,
    items: &[String],
) -> Result<QueueStats> {
    let mut stats = QueueStats {
        depth: items.len(),
        oldest_since_ms: None,
        oldest: None,
    };
    for item in items {
        match client
            .check_exists()
            .for_path(&paths::join(path, item))
            .await?
        {
            Some(stat) => {
                stats.oldest_since_ms = Some(stat.ctime);
                stats.oldest = Some(item.clone());
                break;
            }
            None => stats.depth = stats.depth.saturating_sub(1),
        }
    }
    Ok(stats)
}

async fn simple_queue(
    client: &CuratorFramework,
    here: &Here<'_>,
    report: &mut Report,
) -> Result<()> {
    report.layout = Layout::SimpleQueue;
    let mut items: Vec<(u64, &String)> = here
        .names
        .iter()
        .filter_map(|n| sequence_after(n, "qn-").map(|seq| (seq, n)))
        .collect();
    items.sort();
    let items: Vec<String> = items.into_iter().map(|(_, n)| n.clone()).collect();
    report.queue = Some(queue_stats(client, here.path, &items).await?);
    Ok(())
}

async fn queue(client: &CuratorFramework, here: &Here<'_>, report: &mut Report) -> Result<()> {
    let mut items: Vec<(QueueItem, &String)> = here
        .names
        .iter()
        .filter_map(|n| QueueItem::parse(n).map(|item| (item, n)))
        .collect();
    items.sort_by(|a, b| (a.0.sort_key(), a.1).cmp(&(b.0.sort_key(), b.1)));
    report.layout = match items.first().map(|(item, _)| item) {
        Some(QueueItem::Priority(..)) => Layout::PriorityQueue,
        Some(QueueItem::Delay(..)) => Layout::DelayQueue,
        Some(QueueItem::Id(..)) => Layout::IdQueue,
        _ => Layout::DistributedQueue,
    };
    let items: Vec<String> = items.into_iter().map(|(_, n)| n.clone()).collect();
    report.queue = Some(queue_stats(client, here.path, &items).await?);
    Ok(())
}
/// `(id, address:port)` of a service discovery instance (Curator's JSON).
fn service_instance(data: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(data).ok()?;
    let object = value.as_object()?;
    let id = object.get("id")?.as_str()?;
    object.get("name")?;
    object.get("serviceType")?;
    let address = object
        .get("address")
        .and_then(|a| a.as_str())
        .unwrap_or("-");
    let port = object
        .get("port")
        .and_then(serde_json::Value::as_u64)
        .or_else(|| object.get("sslPort").and_then(serde_json::Value::as_u64));
    Some(match port {
        Some(port) => format!("{id} at {address}:{port}"),
        None => format!("{id} at {address}"),
    })
}

fn instances(nodes: Vec<Node>) -> Vec<Participant> {
    let mut members: Vec<Participant> = nodes
        .iter()
        .map(|n| {
            let mut p = n.participant();
            p.who = Who {
                text: service_instance(&n.data),
                ..Who::default()
            };
            p
        })
        .collect();
    members.sort_by(|a, b| a.node.cmp(&b.node));
    members
}
