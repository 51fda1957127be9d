//! The soak run: a 3-member ensemble, several clients (each behind its own fault proxies) running
//! every workload at once, a seeded fault schedule, quiet points where the caches are compared
//! with the server, and the checkers over the whole history at the end.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use curator_caches::{CuratorCache, TreeCache};
use curator_counters::DistributedAtomicLong;
use curator_framework::retry::RetryNTimes;
use curator_framework::{ConnectionState, CuratorFramework, Error, paths};
use curator_queues::SimpleDistributedQueue;
use curator_test::{TestingCluster, Timing, unique_root};
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::checkers::{self, Delivery, QueueFindings};
use crate::faults::{FaultCounts, FaultKind, FaultPlan, Link, Target, inject};
use crate::history::{Clock, Episode, LogEntry, NodeState, Take, Tree, Violation};
use crate::linearizability::Budget;
use crate::workloads::{self, Ctx, Gate, Paths, REGISTER_INITIAL, Recorded};

/// How to run.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// The fault schedule's seed.
    pub seed: u64,
    /// How long faults are injected.
    pub duration: Duration,
    /// How many clients run the workloads (each its own session and proxies); at least 2.
    pub clients: usize,
    /// How often the caches are compared with the server (besides at the end).
    pub quiet_every: Duration,
    /// The clients' session timeout.
    pub session_timeout: Duration,
}

impl SoakConfig {
    /// A run of `duration` with the seed from `SOAK_SEED`, else `default_seed`, else a random
    /// one.
    pub fn new(duration: Duration, default_seed: Option<u64>) -> Self {
        let seed = std::env::var("SOAK_SEED")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .or(default_seed)
            .unwrap_or_else(rand::random);
        Self {
            seed,
            duration,
            clients: 4,
            quiet_every: Duration::from_secs(45),
            session_timeout: Timing::new().scale(Duration::from_secs(5)),
        }
    }
}

/// What a run did and found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The seed (`SOAK_SEED=<seed>` replays the schedule).
    pub seed: u64,
    /// How long faults were injected.
    pub duration: Duration,
    /// The whole run, set-up and checks included.
    pub elapsed: Duration,
    /// Clients.
    pub clients: usize,
    /// Operations by workload.
    pub operations: BTreeMap<&'static str, u64>,
    /// Faults.
    pub faults: FaultCounts,
    /// What the checkers noted that is allowed (documented duplicates).
    pub notes: Vec<String>,
    /// Broken invariants: must be none.
    pub violations: Vec<Violation>,
}

impl Report {
    /// Mutex hand-overs: holds whose predecessor (in lock order) was another client.
    pub fn hand_overs(&self) -> u64 {
        self.operations
            .get("mutex hand-overs")
            .copied()
            .unwrap_or(0)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "curator-rs soak report")?;
        writeln!(
            f,
            "seed: {} (replay with SOAK_SEED={})",
            self.seed, self.seed
        )?;
        writeln!(
            f,
            "faults injected for {:.0?}; whole run {:.0?}; {} clients behind proxies and one \
             following the ensemble from member 0, on a 3-member ensemble",
            self.duration, self.elapsed, self.clients
        )?;
        writeln!(f, "operations:")?;
        for (what, n) in &self.operations {
            writeln!(f, "  {what:<40} {n:>8}")?;
        }
        writeln!(f, "faults injected: {}", self.faults.total())?;
        for kind in FaultKind::ALL {
            let injected = self.faults.injected.get(&kind).copied().unwrap_or(0);
            let skipped = self.faults.skipped.get(&kind).copied().unwrap_or(0);
            writeln!(
                f,
                "  {:<40} {injected:>8}   (skipped: {skipped})",
                kind.to_string()
            )?;
        }
        if !self.notes.is_empty() {
            writeln!(f, "notes:")?;
            for note in &self.notes {
                writeln!(f, "  {note}")?;
            }
        }
        writeln!(f, "violations: {}", self.violations.len())?;
        for violation in &self.violations {
            writeln!(f, "  {violation}")?;
        }
        Ok(())
    }
}

type AnyError = Box<dyn std::error::Error + Send + Sync>;

/// A log of sequential children, read as it grows: new entries are kept in order and deleted
/// from the server, so the log's node stays small however long the run.
#[derive(Debug)]
pub(crate) struct LogReader {
    path: String,
    pub(crate) entries: Vec<LogEntry>,
    last_seq: i64,
}

impl LogReader {
    pub(crate) fn new(path: &str) -> Self {
        Self {
            path: path.to_owned(),
            entries: Vec::new(),
            last_seq: -1,
        }
    }

    /// Reads what is new. A listing is one snapshot and entries are created in sequence order,
    /// so every entry below the highest listed one is in it, unless this reader deleted it.
    pub(crate) async fn collect(&mut self, client: &CuratorFramework) -> Result<(), Error> {
        let children = match client.get_children().for_path(&self.path).await {
            Ok((children, _)) => children,
            Err(Error::NoNode) => Vec::new(),
            Err(error) => return Err(error),
        };
        let mut listed: Vec<(LogEntry, String)> = children
            .into_iter()
            .filter_map(|name| LogEntry::parse(&name).map(|e| (e, name)))
            .collect();
        listed.sort_by_key(|(e, _)| e.seq);
        let mut deletes = Vec::with_capacity(listed.len());
        for (entry, name) in listed {
            if entry.seq > self.last_seq {
                self.entries.push(entry);
                self.last_seq = entry.seq;
            }
            deletes.push(
                client
                    .delete()
                    .quietly()
                    .for_path(&paths::join(&self.path, &name))
                    .into_future(),
            );
        }
        // Failed deletes are retried at the next collection (the entry is listed again).
        futures::future::join_all(deletes).await;
        Ok(())
    }
}

use std::future::IntoFuture;

/// A subtree as a cache holds it.
pub fn cache_tree(snapshot: Vec<curator_caches::ChildData>) -> Tree {
    snapshot
        .into_iter()
        .map(|node| {
            (
                node.path().to_owned(),
                NodeState {
                    data: node.data().unwrap_or_default().to_vec(),
                    version: node.stat().version,
                },
            )
        })
        .collect()
}

/// A subtree as the server has it (after a `sync`).
pub async fn server_tree(client: &CuratorFramework, root: &str) -> Result<Tree, Error> {
    client.sync().for_path(root).await?;
    let mut tree = Tree::new();
    let mut pending = vec![root.to_owned()];
    while let Some(path) = pending.pop() {
        let (data, stat) = match client.get_data().for_path(&path).await {
            Ok(found) => found,
            Err(Error::NoNode) => continue,
            Err(error) => return Err(error),
        };
        tree.insert(
            path.clone(),
            NodeState {
                data,
                version: stat.version,
            },
        );
        match client.get_children().for_path(&path).await {
            Ok((children, _)) => pending.extend(children.iter().map(|c| paths::join(&path, c))),
            Err(Error::NoNode) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(tree)
}

/// Reads the tree under `root` from every running member, each after a `sync` on a client of its
/// own, until they agree (writes still settling are waited out) or the wait ends: then a
/// violation naming the members that differ and some of the paths where they do.
async fn members_agree(
    cluster: &TestingCluster,
    members: &[usize],
    root: &str,
    timing: Timing,
) -> Vec<Violation> {
    let mut readers = Vec::new();
    for &member in members {
        if !cluster.is_running(member) {
            continue;
        }
        let client = curator_testkit::builder(
            &cluster.member_connect_string(member),
            timing.scale(Duration::from_secs(15)),
        )
        .ensemble_tracking(false)
        .build();
        let Ok(client) = client else { continue };
        if client.start().await.is_err()
            || client.block_until_connected(timing.wait()).await.is_err()
        {
            return vec![Violation::new(
                "ensemble",
                format!(
                    "member {} could not be read at the end",
                    cluster.member_id(member)
                ),
            )];
        }
        readers.push((cluster.member_id(member), client));
    }
    // The trees of the last look, by member id.
    let last = Mutex::new(Vec::new());
    let agreed = wait_until(timing.wait(), || async {
        let mut trees = Vec::new();
        for (id, client) in &readers {
            if let Ok(tree) = server_tree(client, root).await {
                trees.push((*id, tree));
            }
        }
        let same =
            trees.len() == readers.len() && trees.windows(2).all(|pair| pair[0].1 == pair[1].1);
        *last.lock() = trees;
        same
    })
    .await;
    let last = last.into_inner();
    let expected = readers.len();
    for (_, client) in readers {
        let _ = client.close().await;
    }
    if agreed {
        return Vec::new();
    }
    let Some((first_id, first)) = last.first() else {
        return vec![Violation::new(
            "ensemble",
            "no member's tree could be read at the end",
        )];
    };
    let mut findings = Vec::new();
    for (id, tree) in &last[1..] {
        let differing: Vec<&String> = first
            .keys()
            .chain(tree.keys())
            .filter(|path| first.get(*path) != tree.get(*path))
            .take(5)
            .collect();
        if !differing.is_empty() {
            findings.push(format!(
                "member {id} differs from member {first_id} at {differing:?}"
            ));
        }
    }
    if findings.is_empty() {
        findings.push(format!(
            "only {} of {} members could be read",
            last.len(),
            expected
        ));
    }
    vec![Violation::new(
        "ensemble",
        format!(
            "the members hold different trees after a sync, with nothing writing (ZooKeeper \
             lost or forked committed writes): {}",
            findings.join("; ")
        ),
    )]
}

/// Polls `condition` every 50 ms until it holds; `false` after `timeout`.
pub(crate) async fn wait_until<F, Fut>(timeout: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let end = Instant::now() + timeout;
    loop {
        if condition().await {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The number of children of `path` (0 when it does not exist); `None` on connection errors.
pub(crate) async fn child_count(client: &CuratorFramework, path: &str) -> Option<usize> {
    match client.get_children().for_path(path).await {
        Ok((children, _)) => Some(children.len()),
        Err(Error::NoNode) => Some(0),
        Err(_) => None,
    }
}

/// The children of `path` with their owner sessions, for a report.
async fn describe_children(client: &CuratorFramework, path: &str) -> String {
    let Ok((children, _)) = client.get_children().for_path(path).await else {
        return "(cannot list)".into();
    };
    let mut described = Vec::new();
    for child in children {
        let owner = match client
            .check_exists()
            .for_path(&paths::join(path, &child))
            .await
        {
            Ok(Some(stat)) if stat.ephemeral_owner != 0 => {
                format!(" (ephemeral of session {:#x})", stat.ephemeral_owner)
            }
            _ => String::new(),
        };
        described.push(format!("{child}{owner}"));
    }
    format!("{described:?}")
}

struct Caches {
    curator: CuratorCache,
    tree: TreeCache,
}

/// Writers parked, the caches must come to equal the server's tree.
async fn quiet_point(
    admin: &CuratorFramework,
    caches: &Caches,
    ctx: &Ctx,
    writers: usize,
    timing: Timing,
) -> Vec<Violation> {
    ctx.gate.close();
    if !ctx.gate.all_parked(writers, timing.forever()).await {
        tracing::warn!("cache writers did not park in time; comparing anyway");
    }
    let root = &ctx.paths.cache;
    let mut last = None;
    let end = Instant::now() + timing.wait();
    let converged = loop {
        if let Ok(server) = server_tree(admin, root).await {
            let curator = cache_tree(caches.curator.snapshot());
            let tree = cache_tree(caches.tree.snapshot());
            let equal = curator == server && tree == server;
            last = Some((server, curator, tree));
            if equal {
                break true;
            }
        }
        if Instant::now() >= end {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    ctx.gate.open();
    tracing::info!(converged, "quiet point");
    if converged {
        return Vec::new();
    }
    match last {
        Some((server, curator, tree)) => {
            let mut violations = checkers::check_cache("CuratorCache", &curator, &server);
            violations.extend(checkers::check_cache("TreeCache", &tree, &server));
            violations
        }
        None => vec![Violation::new(
            "cache",
            "the server's tree could not be read at a quiet point",
        )],
    }
}

/// Hand-overs in lock order: holds whose predecessor was another client.
fn hand_overs(episodes: &[Episode]) -> u64 {
    let mut by_token: Vec<&Episode> = episodes.iter().collect();
    by_token.sort_by_key(|e| e.token);
    by_token
        .windows(2)
        .filter(|pair| pair[0].client != pair[1].client)
        .count() as u64
}

fn confirmed_actions(episodes: &[Episode]) -> u64 {
    episodes
        .iter()
        .map(|e| e.actions.iter().filter(|a| a.ok).count() as u64)
        .sum()
}

fn queue_note(name: &str, findings: QueueFindings) -> String {
    format!(
        "{name}: {} items delivered; {} duplicate deliveries allowed by the recipe's contract; {} \
         failed puts were stored and delivered",
        findings.delivered, findings.allowed_duplicates, findings.failed_puts_delivered
    )
}

/// Runs the soak and returns its report (also printed as it starts and ends).
///
/// # Errors
/// When the ensemble cannot be started or brought back after a fault, or a client cannot
/// connect: the run is void, not failed.
pub async fn run(config: SoakConfig) -> Result<Report, AnyError> {
    let timing = Timing::new();
    let started = Instant::now();
    println!(
        "soak: SOAK_SEED={} for {:?} with {} clients",
        config.seed, config.duration, config.clients
    );
    let clients_n = config.clients.max(2);
    let mut cluster = TestingCluster::builder(3)
        .dynamic_reconfig()
        .partitionable()
        .start()
        .await?;
    // Which cluster index each member slot (as the links number them) is now.
    let mut members: Vec<usize> = (0..cluster.len()).collect();
    tracing::info!(after = ?started.elapsed(), "ensemble up");
    let mut links = Vec::with_capacity(clients_n);
    let mut clients = Vec::with_capacity(clients_n);
    for _ in 0..clients_n {
        let link = Link::start(&cluster).await?;
        clients.push(
            curator_testkit::client_through_proxies(&link.connect_string(), config.session_timeout)
                .await,
        );
        links.push(link);
    }
    // One more client, given member 0 only and following the ensemble: it learns the members,
    // and must move (in its session) when its member is replaced. Client faults do not target
    // it (it has no proxies); member faults do.
    let tracked = curator_testkit::started(curator_testkit::builder(
        &cluster.member_connect_string(0),
        config.session_timeout,
    ))
    .await;
    // The checks' client, also the one that reconfigures the ensemble (the super user); it
    // follows the ensemble's changes.
    let super_user = cluster
        .super_credentials()
        .map(curator_test::SuperCredentials::digest_auth)
        .unwrap_or_default();
    let admin = curator_testkit::started(
        curator_testkit::builder(
            &cluster.connect_string(),
            timing.scale(Duration::from_secs(15)),
        )
        .authorization("digest", super_user),
    )
    .await;
    let paths = Paths::new(&unique_root("soak"));
    for path in [
        &paths.mutex_log,
        &paths.leader_log,
        &paths.cache,
        &paths.simple_queue,
        &paths.safe_queue,
    ] {
        admin
            .create()
            .creating_parents_if_needed()
            .for_path(path, [])
            .await?;
    }
    admin.create().for_path(&paths.term, b"0").await?;
    workloads::create_registers(&admin, &paths).await?;
    let counter = DistributedAtomicLong::builder(
        admin.clone(),
        &paths.counter,
        RetryNTimes::new(10, Duration::from_millis(10)),
    )
    .build()?;
    counter.initialize(0).await?;

    let clock = Clock::new();
    let ctx = Ctx {
        clock,
        stop: CancellationToken::new(),
        stop_producers: CancellationToken::new(),
        record: Arc::new(Mutex::new(Recorded {
            counter: crate::history::CounterHistory {
                initial: counter.get().await?.post_value,
                ..Default::default()
            },
            ..Default::default()
        })),
        gate: Arc::new(Gate::default()),
        paths: Arc::new(paths.clone()),
    };

    // The caches live on clients 0 and 1 (so their faults hit them), each on its own: before
    // ZooKeeper 3.9 (ZOOKEEPER-4466) one session cannot hold a recursive watch and one-shot
    // watches on the same path (see the curator-caches README). Clients 1.. write the subtree.
    let caches = Caches {
        curator: CuratorCache::builder(clients[0].clone(), &paths.cache).build()?,
        tree: TreeCache::builder(clients[1].clone(), &paths.cache).build()?,
    };
    caches.curator.start().await?;
    caches.tree.start().await?;
    caches.curator.initialized().await?;
    caches.tree.initialized().await?;

    let mut workers = JoinSet::new();
    let writers = clients_n - 1;
    for (index, client) in clients.iter().enumerate() {
        let seed = config.seed ^ ((index as u64 + 1) << 32);
        workloads::spawn_mix(&mut workers, &ctx, client, index, seed);
        if index > 0 {
            workers.spawn(workloads::cache_writer(
                ctx.clone(),
                client.clone(),
                seed + 6,
            ));
        }
    }

    // The tracked client holds the mutex and leads like the others (same checkers).
    let tracked_index = clients_n;
    let seed = config.seed ^ ((tracked_index as u64 + 1) << 32);
    workers.spawn(workloads::mutex_worker(
        ctx.clone(),
        tracked.clone(),
        tracked_index,
        seed + 1,
    ));
    workers.spawn(workloads::leader_worker(
        ctx.clone(),
        tracked.clone(),
        tracked_index,
        seed + 2,
    ));

    // What happened to the tracked client's session: kept through moves and reconnects, or lost.
    {
        let (ctx, tracked) = (ctx.clone(), tracked.clone());
        let first = tracked.session_id();
        let mut states = tracked.connection_state_stream();
        workers.spawn(async move {
            loop {
                let state = tokio::select! {
                    () = ctx.stop.cancelled() => return,
                    state = states.next() => state,
                };
                tracing::info!(?state, session = ?tracked.session_id(), "tracked client");
                match state {
                    Some(ConnectionState::Reconnected) if tracked.session_id() == first => {
                        ctx.count("tracked client: reconnects in its first session");
                    }
                    Some(ConnectionState::Lost) => ctx.count("tracked client: sessions lost"),
                    Some(_) => {}
                    None => return,
                }
            }
        });
    }

    // The logs in ZooKeeper are read (and trimmed) as they grow.
    let readers = Arc::new(tokio::sync::Mutex::new((
        LogReader::new(&paths.mutex_log),
        LogReader::new(&paths.leader_log),
    )));
    let collector = {
        let readers = Arc::clone(&readers);
        let admin = admin.clone();
        let stop = ctx.stop.clone();
        tokio::spawn(async move {
            while !stop.is_cancelled() {
                {
                    let mut readers = readers.lock().await;
                    let (mutex_log, leader_log) = &mut *readers;
                    let _ = mutex_log.collect(&admin).await;
                    let _ = leader_log.collect(&admin).await;
                }
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        })
    };

    // The fault schedule.
    let mut violations = Vec::new();
    let mut faults = FaultCounts::default();
    let mut quiet_points = 0u64;
    let mut plan = FaultPlan::new(
        config.seed,
        clients_n,
        cluster.len(),
        config.session_timeout,
    );
    let end = Instant::now() + config.duration;
    let mut next_quiet = Instant::now() + config.quiet_every;
    {
        let mut target = Target {
            cluster: &mut cluster,
            members: &mut members,
            admin: &admin,
            links: &links,
            clients: &clients,
            timing,
        };
        loop {
            let (gap, fault) = plan.next_fault();
            tokio::time::sleep_until((Instant::now() + gap).min(end)).await;
            if Instant::now() >= end {
                break;
            }
            tracing::info!(?fault, "injecting");
            let counts = if inject(fault, &mut target).await? {
                &mut faults.injected
            } else {
                &mut faults.skipped
            };
            *counts.entry(fault.kind()).or_default() += 1;
            if Instant::now() >= next_quiet {
                violations.extend(quiet_point(&admin, &caches, &ctx, writers, timing).await);
                quiet_points += 1;
                next_quiet = Instant::now() + config.quiet_every;
            }
        }
    }

    // Heal, then stop: producers first, so the consumers empty the queues.
    tracing::info!(after = ?started.elapsed(), "faults over; healing and stopping");
    links.iter().for_each(Link::resume);
    for &member in &members {
        if !cluster.is_running(member) {
            cluster.restart(member).await?;
        }
    }
    cluster.await_leader().await?;
    ctx.stop_producers.cancel();
    let drained = wait_until(timing.wait(), || async {
        child_count(&admin, &paths.simple_queue).await == Some(0)
            && child_count(&admin, &paths.safe_queue).await == Some(0)
    })
    .await;
    if !drained {
        tracing::warn!("the consumers did not empty the queues in time; draining them");
    }
    ctx.stop.cancel();
    let stopped = tokio::time::timeout(timing.forever(), async {
        while workers.join_next().await.is_some() {}
    })
    .await;
    if stopped.is_err() {
        violations.push(Violation::new(
            "liveness",
            "workloads did not stop within the long deadline after faults ended",
        ));
        workers.abort_all();
    }
    let _ = collector.await;

    // Whatever the consumers left is taken here, and counted.
    let leftovers = SimpleDistributedQueue::builder(admin.clone(), &paths.simple_queue).build()?;
    loop {
        let invoked = ctx.clock.now();
        let Some(item) = leftovers.poll().await? else {
            break;
        };
        ctx.record.lock().simple_takes.push(Take {
            item: String::from_utf8_lossy(&item).into_owned(),
            by: "drain".into(),
            across_fault: false,
            invoked,
            completed: ctx.clock.now(),
        });
    }
    if child_count(&admin, &paths.safe_queue).await != Some(0) {
        let drain = workloads::safe_consumer(&ctx, admin.clone(), "drain".into()).await;
        let emptied = wait_until(timing.wait(), || async {
            child_count(&admin, &paths.safe_queue).await == Some(0)
        })
        .await;
        if let Some(drain) = drain {
            let _ = drain.close().await;
        }
        if !emptied {
            let sessions: Vec<String> = clients
                .iter()
                .filter_map(CuratorFramework::session_id)
                .map(|id| format!("{id:#x}"))
                .collect();
            violations.push(Violation::new(
                "lock-safe queue",
                format!(
                    "items left in the queue that no consumer could take: {}; their locks: {}; \
                     the clients' sessions now: {sessions:?}",
                    describe_children(&admin, &paths.safe_queue).await,
                    describe_children(&admin, &paths.safe_queue_locks).await,
                ),
            ));
        }
    }

    // The last quiet point, the logs, the counter.
    violations.extend(quiet_point(&admin, &caches, &ctx, writers, timing).await);
    quiet_points += 1;
    let (mutex_log, leader_log) = {
        let mut readers = readers.lock().await;
        let (mutex_log, leader_log) = &mut *readers;
        mutex_log.collect(&admin).await?;
        leader_log.collect(&admin).await?;
        (mutex_log.entries.clone(), leader_log.entries.clone())
    };
    // Read after a sync: the admin's member may be a write or two behind the leader.
    admin.sync().for_path(&paths.counter).await?;
    let final_value = counter.get().await?.post_value;
    // Every member must hold the same tree now that nothing writes: a difference is the
    // ensemble's (ZooKeeper lost or forked committed writes), and says which side to look at
    // when a client-side checker fails at the same time.
    violations.extend(members_agree(&cluster, &members, &paths.root, timing).await);

    let (operations, notes) = {
        let mut record = ctx.record.lock();
        record.counter.final_value = Some(final_value);
        violations.extend(checkers::check_mutex(&record.mutex, &mutex_log));
        violations.extend(checkers::check_leader(&record.leader, &leader_log));
        violations.extend(checkers::check_counter(&record.counter));
        violations.extend(checkers::check_counter_linearizable(&record.counter.ops));
        // The soak's histories are long: a larger budget than the simulation's.
        let budget = Budget {
            max_steps: 50_000_000,
        };
        let (counter, counter_findings) = checkers::check_counter_generic(&record.counter, budget);
        violations.extend(counter);
        let (register, register_findings) =
            checkers::check_register(&record.register, REGISTER_INITIAL, budget);
        violations.extend(register);
        let (simple, simple_findings) = checkers::check_queue(
            "simple queue",
            &record.simple_puts,
            &record.simple_takes,
            Delivery::Strict,
        );
        violations.extend(simple);
        violations.extend(checkers::check_queue_order(
            "simple queue",
            &record.simple_puts,
            &record.simple_takes,
        ));
        let (safe, safe_findings) = checkers::check_queue(
            "lock-safe queue",
            &record.safe_puts,
            &record.safe_takes,
            Delivery::AtLeastOnce,
        );
        violations.extend(safe);
        let safe_skipped = checkers::queue_reorderings(&record.safe_puts, &record.safe_takes);

        let mut operations = BTreeMap::new();
        operations.insert("mutex acquisitions", record.mutex.len() as u64);
        operations.insert("mutex hand-overs", hand_overs(&record.mutex));
        operations.insert("mutex actions confirmed", confirmed_actions(&record.mutex));
        operations.insert("mutex log entries (server)", mutex_log.len() as u64);
        operations.insert("leader terms", record.leader.len() as u64);
        operations.insert(
            "leader actions confirmed",
            confirmed_actions(&record.leader),
        );
        operations.insert("leader log entries (server)", leader_log.len() as u64);
        operations.insert("counter increments applied", record.counter.succeeded);
        operations.insert("counter increments not applied", record.counter.not_applied);
        operations.insert("counter final value", final_value as u64);
        operations.insert("simple queue puts", record.simple_puts.len() as u64);
        operations.insert("simple queue takes", record.simple_takes.len() as u64);
        operations.insert("lock-safe queue puts", record.safe_puts.len() as u64);
        operations.insert("lock-safe queue deliveries", record.safe_takes.len() as u64);
        operations.insert("cache quiet-point checks", quiet_points);
        for (what, n) in &record.counts {
            operations.insert(what, *n);
        }
        operations.insert("register operations", register_findings.operations as u64);
        operations.insert(
            "register operations of unknown outcome",
            register_findings.unknown as u64,
        );
        let mut notes = vec![
            queue_note("simple queue", simple_findings),
            queue_note("lock-safe queue", safe_findings),
            format!(
                "lock-safe queue: {} item(s) taken after an item put later (allowed: a consumer \
                 skips an item another consumer holds locked){}",
                safe_skipped.len(),
                if safe_skipped.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; e.g. {:?}",
                        safe_skipped.iter().take(3).collect::<Vec<_>>()
                    )
                }
            ),
            format!(
                "linearizability: {} register histories ({} operations, {} of unknown \
                 outcome) and the counter's {} increments checked",
                register_findings.histories,
                register_findings.operations,
                register_findings.unknown,
                counter_findings.operations
            ),
        ];
        for undecided in register_findings
            .undecided
            .iter()
            .chain(&counter_findings.undecided)
        {
            notes.push(format!(
                "linearizability undecided (not a violation): {undecided}"
            ));
        }
        (operations, notes)
    };

    let _ = caches.curator.close().await;
    let _ = caches.tree.close().await;
    futures::future::join_all(
        clients
            .iter()
            .chain([&tracked, &admin])
            .map(CuratorFramework::close),
    )
    .await;
    drop(cluster);

    Ok(Report {
        seed: config.seed,
        duration: config.duration,
        elapsed: started.elapsed(),
        clients: clients_n,
        operations,
        faults,
        notes,
        violations,
    })
}

/// Writes `report` to `<target dir>/soak-report.txt` (the Cargo target directory:
/// `CARGO_TARGET_DIR`, else the workspace's `target/`) and returns the path.
///
/// # Errors
/// When the file cannot be written.
pub fn write_report(report: &Report) -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("target")
        });
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("soak-report.txt");
    std::fs::write(&path, report.to_string())?;
    Ok(path)
}
