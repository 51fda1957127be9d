//! Reading a path and recognizing its layout.

use curator_caches::{PersistentWatcher, PersistentWatcherEvent};
use curator_framework::identity::Identity;
use curator_framework::listen::ListenerStream;
use curator_framework::{CuratorFramework, Error, Result, Stat, paths};
use futures::StreamExt;
use futures::future::{BoxFuture, join_all};

use crate::names::{QueueItem, is_ip_text, is_uuid, sequence_after};
use crate::report::{Layout, Participant, QueueStats, Report, Who};

/// At most this many children are inspected as sections (several locks, services).
const MAX_SECTIONS: usize = 64;

/// Children of an unrecognized node are read (to tell a group or a service) only up to this
/// many; past it the report stays generic (counts from the node's stat and
/// `getAllChildrenNumber`).
const MAX_GUESS_READS: usize = 10_000;

/// The revocation marker Curator writes into a lock node: not a participant id.
const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

/// Reads `path` and reports what recipe lives there, who holds it and who waits.
///
/// Never fails on an unknown layout (that is [`Layout::Generic`]) or a missing node
/// ([`Layout::Missing`]); nodes that vanish while being read are left out.
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
    let watcher = PersistentWatcher::new(client.clone(), path, true)?;
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
}

impl Node {
    fn participant(&self) -> Participant {
        Participant {
            node: self.name.clone(),
            who: Who::from_data(&self.data),
            session_id: self.stat.ephemeral_owner,
            since_ms: self.stat.ctime,
            role: None,
        }
    }
}

/// Reads `names` under `path` (all requests sent at once); vanished nodes are skipped.
async fn read_nodes(
    client: &CuratorFramework,
    path: &str,
    prefix: &str,
    names: &[String],
) -> Result<Vec<Node>> {
    let reads = names.iter().map(|name| {
        let full = paths::join(path, name);
        async move { (name, client.get_data().for_path(&full).await) }
    });
    let mut nodes = Vec::with_capacity(names.len());
    for (name, result) in join_all(reads).await {
        match result {
            Ok((data, stat)) => nodes.push(Node {
                name: format!("{prefix}{name}"),
                data,
                stat,
            }),
            Err(Error::NoNode) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(nodes)
}

/// Children of `path`; none when it does not exist.
async fn children(client: &CuratorFramework, path: &str) -> Result<Vec<String>> {
    match client.get_children().for_path(path).await {
        Ok((children, _)) => Ok(children),
        Err(Error::NoNode) => Ok(Vec::new()),
        Err(error) => Err(error),
    }
}

fn inspect_at(
    client: CuratorFramework,
    path: String,
    depth: u32,
) -> BoxFuture<'static, Result<Report>> {
    Box::pin(async move {
        let (data, _) = match client.get_data().for_path(&path).await {
            Ok(read) => read,
            Err(Error::NoNode) => return Ok(Report::new(&path, Layout::Missing)),
            Err(error) => return Err(error),
        };
        let names = match client.get_children().for_path(&path).await {
            Ok((names, _)) => names,
            Err(Error::NoNode) => return Ok(Report::new(&path, Layout::Missing)),
            Err(error) => return Err(error),
        };
        let mut report = Report::new(&path, Layout::Generic);
        report.data_len = data.len();
        report.children = names.len();
        report.descendants = client.get_all_children_number().for_path(&path).await.ok();
        recognize(&client, &path, &data, &names, depth, &mut report).await?;
        Ok(report)
    })
}

async fn recognize(
    client: &CuratorFramework,
    path: &str,
    data: &[u8],
    names: &[String],
    depth: u32,
    report: &mut Report,
) -> Result<()> {
    let has = |name: &str| names.iter().any(|n| n == name);
    let all = |f: &dyn Fn(&str) -> bool| !names.is_empty() && names.iter().all(|n| f(n));

    if names
        .iter()
        .any(|n| sequence_after(n, "__READ__").is_some() || sequence_after(n, "__WRIT__").is_some())
    {
        return read_write_lock(client, path, names, report).await;
    }
    if has("leases") {
        return semaphore(client, path, report).await;
    }
    if has("members") && has("locks") {
        return partitioner(client, path, depth, report).await;
    }
    if all(&|n| sequence_after(n, "lock-").is_some()) {
        return lock(client, path, names, report).await;
    }
    if all(&|n| sequence_after(n, "latch-").is_some()) {
        return latch(client, path, names, report).await;
    }
    if names.iter().any(|n| sequence_after(n, "qn-").is_some()) {
        return simple_queue(client, path, names, report).await;
    }
    if names.iter().any(|n| QueueItem::parse(n).is_some()) {
        return queue(client, path, names, report).await;
    }
    if all(&|n| n == "ready" || is_uuid(n)) && names.iter().any(|n| n != "ready") {
        report.layout = Layout::DoubleBarrier;
        report.ready = Some(has("ready"));
        let members: Vec<String> = names.iter().filter(|n| *n != "ready").cloned().collect();
        let mut nodes = read_nodes(client, path, "", &members).await?;
        nodes.sort_by(|a, b| (a.stat.czxid, &a.name).cmp(&(b.stat.czxid, &b.name)));
        report.members = nodes.iter().map(Node::participant).collect();
        return Ok(());
    }
    if names.iter().all(|n| n.starts_with("_atomic-")) {
        if Identity::parse(data).is_some() || is_ip_text(data) {
            if names.is_empty() {
                report.layout = Layout::Barrier;
                report.who = Some(Who::from_data(data));
            }
            return Ok(());
        }
        if let Ok(bytes) = <[u8; 8]>::try_from(data) {
            report.layout = Layout::AtomicLong;
            report.value = Some(i64::from_be_bytes(bytes));
            return Ok(());
        }
        if let Ok(bytes) = <[u8; 4]>::try_from(data) {
            report.layout = Layout::SharedCount;
            report.value = Some(i64::from(i32::from_be_bytes(bytes)));
            return Ok(());
        }
    }
    // Nothing to recognize, or too many children to read one by one for a guess.
    if names.is_empty() || names.len() > MAX_GUESS_READS {
        return Ok(());
    }
    let nodes = read_nodes(client, path, "", names).await?;
    if !nodes.is_empty() && nodes.iter().all(|n| service_instance(&n.data).is_some()) {
        report.layout = Layout::Service;
        report.members = instances(nodes);
        return Ok(());
    }
    if !nodes.is_empty()
        && nodes
            .iter()
            .all(|n| n.stat.ephemeral_owner != 0 && n.stat.num_children == 0)
    {
        report.layout = Layout::GroupMember;
        let mut members: Vec<Participant> = nodes.iter().map(Node::participant).collect();
        members.sort_by(|a, b| a.node.cmp(&b.node));
        report.members = members;
        return Ok(());
    }
    if depth == 0 && names.len() <= MAX_SECTIONS {
        let mut sorted = names.to_vec();
        sorted.sort();
        let sections: Vec<Report> = join_all(
            sorted
                .iter()
                .map(|n| inspect_at(client.clone(), paths::join(path, n), depth + 1)),
        )
        .await
        .into_iter()
        .collect::<Result<_>>()?;
        let locks = sections.iter().all(|s| {
            matches!(
                s.layout,
                Layout::Mutex | Layout::ReadWriteLock | Layout::SemaphoreV2 | Layout::Missing
            )
        });
        let services = sections
            .iter()
            .all(|s| matches!(s.layout, Layout::Service | Layout::Missing));
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
    }
    Ok(())
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

async fn lock(
    client: &CuratorFramework,
    path: &str,
    names: &[String],
    report: &mut Report,
) -> Result<()> {
    let nodes = in_lock_order(read_nodes(client, path, "", names).await?, "lock-");
    // A selector's nodes hold participant ids; a mutex's an identity, Java's IP text or nothing.
    let ids = nodes.iter().any(|n| {
        !n.data.is_empty()
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
    Ok(())
}

async fn latch(
    client: &CuratorFramework,
    path: &str,
    names: &[String],
    report: &mut Report,
) -> Result<()> {
    report.layout = Layout::LeaderLatch;
    let nodes = in_lock_order(read_nodes(client, path, "", names).await?, "latch-");
    let mut participants = nodes.iter().map(Node::participant);
    report.holders.extend(participants.next());
    report.waiters.extend(participants);
    report.leader = report.holders.first().cloned();
    Ok(())
}

async fn read_write_lock(
    client: &CuratorFramework,
    path: &str,
    names: &[String],
    report: &mut Report,
) -> Result<()> {
    report.layout = Layout::ReadWriteLock;
    let mut nodes: Vec<(u64, bool, Node)> = read_nodes(client, path, "", names)
        .await?
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
    Ok(())
}

async fn semaphore(client: &CuratorFramework, path: &str, report: &mut Report) -> Result<()> {
    report.layout = Layout::SemaphoreV2;
    let leases_path = paths::join(path, "leases");
    let locks_path = paths::join(path, "locks");
    let lease_names = children(client, &leases_path).await?;
    let lock_names = children(client, &locks_path).await?;
    let leases = in_lock_order(
        read_nodes(client, &leases_path, "leases/", &lease_names).await?,
        "lease-",
    );
    let locks = in_lock_order(
        read_nodes(client, &locks_path, "locks/", &lock_names).await?,
        "lock-",
    );
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
    Ok(())
}

async fn partitioner(
    client: &CuratorFramework,
    path: &str,
    depth: u32,
    report: &mut Report,
) -> Result<()> {
    report.layout = Layout::SetPartitioner;
    let members_path = paths::join(path, "members");
    let names = children(client, &members_path).await?;
    let mut members: Vec<Participant> = read_nodes(client, &members_path, "members/", &names)
        .await?
        .iter()
        .map(Node::participant)
        .collect();
    members.sort_by(|a, b| a.node.cmp(&b.node));
    report.members = members;
    if depth == 0 {
        let locks_path = paths::join(path, "locks");
        let mut items = children(client, &locks_path).await?;
        items.sort();
        items.truncate(MAX_SECTIONS);
        for item in items {
            let section =
                inspect_at(client.clone(), paths::join(&locks_path, &item), depth + 1).await?;
            if section.layout != Layout::Missing {
                report.sections.push(section);
            }
        }
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
    path: &str,
    names: &[String],
    report: &mut Report,
) -> Result<()> {
    report.layout = Layout::SimpleQueue;
    let mut items: Vec<(u64, &String)> = names
        .iter()
        .filter_map(|n| sequence_after(n, "qn-").map(|seq| (seq, n)))
        .collect();
    items.sort();
    let items: Vec<String> = items.into_iter().map(|(_, n)| n.clone()).collect();
    report.queue = Some(queue_stats(client, path, &items).await?);
    Ok(())
}

async fn queue(
    client: &CuratorFramework,
    path: &str,
    names: &[String],
    report: &mut Report,
) -> Result<()> {
    let mut items: Vec<(QueueItem, &String)> = names
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
    report.queue = Some(queue_stats(client, path, &items).await?);
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
