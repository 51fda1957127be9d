//! `curator demo`: a short show of the framework against a real server.
//!
//! Three workers, each with its own client (its own ZooKeeper session), elect a leader, take
//! turns on a lock while incrementing a shared counter, meet at a double barrier, and publish
//! what they do to nodes that a `CuratorCache` prints. Then the leader's session is
//! ended and another worker takes over. Every step checks what it claims and says so.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use curator_barriers::DistributedDoubleBarrier;
use curator_caches::{CacheEvent, CuratorCache};
use curator_counters::DistributedAtomicLong;
use curator_election::{CloseMode, LeaderLatch};
use curator_framework::retry::RetryNTimes;
use curator_framework::{ConnectionState, CreateMode, CuratorFramework, Error, paths};
use curator_locks::InterProcessMutex;
use futures::StreamExt;
use futures::future::{join_all, select_all};
use tokio::sync::watch;

use super::{Ctx, Run};
use crate::args::{Connection, Takes};
use crate::connect::connect;
use crate::exit::{CliError, CliResult, codes};
use crate::output::{self, Stream};

/// A short show of the framework against a real server (started here unless --connect)
#[derive(Debug, Args)]
pub(crate) struct Demo {
    /// Run against a model of ZooKeeper served in this process (curator-zkmodel: no Java
    /// needed) instead of a real server
    #[arg(long, conflicts_with = "connect")]
    in_process: bool,
    #[command(flatten)]
    connection: Connection,
}

impl Run for Demo {
    fn takes(&self) -> Takes<'_> {
        Takes::Connection(&self.connection)
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let settings = &ctx.settings;
        let started = Instant::now();
        let mut show = Show {
            step: 0,
            proofs: Vec::new(),
            title: String::new(),
        };

        // Keep the server (when we start one) until the end of the demo.
        let (connect_string, _server, _model) = match &settings.connect {
            Some(connect) => {
                output::out(format_args!("curator demo against ZooKeeper at {connect}"))?;
                (connect.clone(), None, None)
            }
            None if self.in_process => {
                let model = curator_zkmodel::InProcessServer::start()
                    .await
                    .map_err(|error| broken(format!("cannot start the in-process server: {error}")))?;
                output::out(format_args!(
                    "curator demo against a model of ZooKeeper served in this process at {} (curator-zkmodel: no Java; it stops when the demo ends)",
                    model.connect_string()
                ))?;
                (model.connect_string(), None, Some(model))
            }
            None => {
                output::out(
                    "curator demo: starting a real ZooKeeper server (a JVM, via curator-test) ...",
                )?;
                let server = curator_test::TestingServer::start_dedicated()
                    .await
                    .map_err(|error| broken(format!("cannot start ZooKeeper: {error}")))?;
                output::out(format_args!(
                    "ZooKeeper serves at {} (started in {:.1}s; it stops when the demo ends)",
                    server.connect_string(),
                    started.elapsed().as_secs_f64()
                ))?;
                (server.connect_string(), Some(server), None)
            }
        };
        let root = format!(
            "/curator-demo-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        output::out(format_args!(
            "everything happens under {root}; {WORKERS} workers, each with its own session"
        ))?;

        let mut workers = Vec::with_capacity(WORKERS);
        for n in 1..=WORKERS {
            let name = format!("worker-{n}");
            let client = connect(settings, &connect_string).await?;
            let latch =
                LeaderLatch::builder(client.clone(), &paths::join(&root, "leader"), name.clone())
                    .close_mode(CloseMode::Silent)
                    .build()
                    .map_err(failed("making a leader latch"))?;
            workers.push(Worker {
                name,
                client,
                latch,
            });
        }
        let result = tour(&mut show, &workers, &root).await;

        // Clean up whatever happened.
        for worker in &workers {
            let _ = worker.latch.close().await;
        }
        let _ = workers[0]
            .client
            .delete()
            .deleting_children_if_needed()
            .quietly()
            .for_path(&root)
            .await;
        for worker in &workers {
            let _ = worker.client.close().await;
        }
        if let Err(error) = result {
            // The reader went away (`curator demo | head -2`): whatever failed afterwards (the
            // cache's printer stopped, say) is a consequence; say nothing more.
            if output::is_gone(Stream::Stdout) {
                return Err(CliError::output_closed());
            }
            return Err(error);
        }

        output::out(format_args!(
            "\nWhat the demo proved ({:.1}s):",
            started.elapsed().as_secs_f64()
        ))?;
        for (step, claim) in &show.proofs {
            output::out(format_args!("  - {step}: {claim}"))?;
        }
        Ok(codes::OK)
    }
}

const WORKERS: usize = 3;
const TURNS_PER_WORKER: usize = 2;
/// The longest any single wait of the demo may take before it counts as a failure.
const WAIT: Duration = Duration::from_secs(20);

/// One worker: a name, its own client and its place in the election.
struct Worker {
    name: String,
    client: CuratorFramework,
    latch: LeaderLatch,
}

/// Prints steps and keeps what each proved for the summary.
struct Show {
    step: usize,
    proofs: Vec<(String, String)>,
    title: String,
}

impl Show {
    fn step(&mut self, title: &str) -> CliResult<()> {
        self.step += 1;
        self.title = title.to_owned();
        Ok(output::out(format_args!("\n[{}/6] {title}", self.step))?)
    }

    fn say(&self, line: impl AsRef<str>) -> CliResult<()> {
        Ok(output::out(format_args!("      {}", line.as_ref()))?)
    }

    fn proved(&mut self, claim: impl Into<String>) -> CliResult<()> {
        let claim = claim.into();
        output::out(format_args!("  ✔ proved: {claim}"))?;
        self.proofs.push((self.title.clone(), claim));
        Ok(())
    }
}

fn failed(what: &str) -> impl Fn(Error) -> CliError + '_ {
    move |error| CliError::zk(&format!("demo: {what}"), error)
}

fn broken(message: impl Into<String>) -> CliError {
    CliError::new(codes::OTHER, format!("demo: {}", message.into()))
}

/// Waits at most [`WAIT`] for `future`.
async fn within<T>(what: &str, future: impl Future<Output = T>) -> CliResult<T> {
    tokio::time::timeout(WAIT, future)
        .await
        .map_err(|_| CliError::timeout(format!("demo: {what} took longer than {WAIT:?}")))
}


async fn tour(show: &mut Show, workers: &[Worker], root: &str) -> CliResult<()> {
    let client = &workers[0].client;

    // The cache: a CuratorCache printing what the workers publish.
    let published = paths::join(root, "published");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&published, b"")
        .await
        .map_err(failed("creating the published node"))?;
    let (seen_tx, seen) = watch::channel(HashSet::new());
    let cache = tokio::spawn(watch_published(client.clone(), published.clone(), seen_tx));
    let publish = |client: &CuratorFramework, message: String| {
        let client = client.clone();
        let published = published.clone();
        let mut seen = seen.clone();
        async move {
            let node = client
                .create()
                .with_mode(CreateMode::PersistentSequential)
                .for_path(&paths::join(&published, "item-"), message.as_bytes())
                .await
                .map_err(failed("publishing"))?;
            // Wait until the cache printed it, so the output reads in order.
            within(
                "the cache seeing a published node",
                seen.wait_for(|s| s.contains(&node)),
            )
            .await?
            .map_err(|_| broken("the cache stopped"))?;
            Ok::<_, CliError>(())
        }
    };

    // 1. Leader election.
    show.step("elect a leader")?;
    for worker in workers {
        worker
            .latch
            .start()
            .await
            .map_err(failed("joining the election"))?;
    }
    let waits = workers.iter().map(|w| Box::pin(w.latch.await_leadership()));
    let (result, leader_index, _) = within("electing a leader", select_all(waits)).await?;
    result.map_err(failed("electing a leader"))?;
    let leader = &workers[leader_index];
    let participants = workers[0]
        .latch
        .participants()
        .await
        .map_err(failed("reading the participants"))?;
    let leaders: Vec<_> = workers
        .iter()
        .filter(|w| w.latch.has_leadership())
        .collect();
    if leaders.len() != 1 || participants.first().map(|p| p.id.as_str()) != Some(&leader.name) {
        return Err(broken("the election did not produce exactly one leader"));
    }
    show.say(format!(
        "participants in node order: {}",
        participants
            .iter()
            .map(|p| format!("{}{}", p.id, if p.is_leader { " (leader)" } else { "" }))
            .collect::<Vec<_>>()
            .join(", ")
    ))?;
    publish(&leader.client, format!("{} is the leader", leader.name)).await?;
    show.proved(format!(
        "exactly one of {WORKERS} workers leads ({}), and every participant agrees who",
        leader.name
    ))?;

    // 2. A lock and a shared counter.
    show.step("take turns on a lock and increment a shared counter")?;
    let lock_path = paths::join(root, "lock");
    let counter_path = paths::join(root, "counter");
    let holders = Arc::new(AtomicUsize::new(0));
    let max_holders = Arc::new(AtomicUsize::new(0));
    let tokens = Arc::new(std::sync::Mutex::new(Vec::new()));
    let turns = workers.iter().map(|worker| {
        let holders = Arc::clone(&holders);
        let max_holders = Arc::clone(&max_holders);
        let tokens = Arc::clone(&tokens);
        let lock_path = lock_path.clone();
        let counter_path = counter_path.clone();
        let publish = &publish;
        async move {
            let mutex = InterProcessMutex::builder(worker.client.clone(), &lock_path)
                .build()
                .map_err(failed("making a lock"))?;
            let counter = DistributedAtomicLong::builder(
                worker.client.clone(),
                &counter_path,
                RetryNTimes::new(50, Duration::from_millis(10)),
            )
            .build()
            .map_err(failed("making a counter"))?;
            for _ in 0..TURNS_PER_WORKER {
                let guard = within("acquiring the lock", mutex.acquire())
                    .await?
                    .map_err(failed("acquiring the lock"))?;
                let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                max_holders.fetch_max(now, Ordering::SeqCst);
                tokens
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(guard.fencing_token());
                let value = counter.increment().await.map_err(failed("incrementing"))?;
                if !value.succeeded {
                    return Err(broken("an increment did not apply"));
                }
                publish(
                    &worker.client,
                    format!(
                        "{} holds the lock (fencing token {}) and counted {} -> {}",
                        worker.name,
                        guard.fencing_token(),
                        value.pre_value,
                        value.post_value
                    ),
                )
                .await?;
                holders.fetch_sub(1, Ordering::SeqCst);
                guard
                    .release()
                    .await
                    .map_err(failed("releasing the lock"))?;
            }
            Ok::<_, CliError>(())
        }
    });
    for result in join_all(turns).await {
        result?;
    }
    let tokens = tokens
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    if max_holders.load(Ordering::SeqCst) != 1 || !tokens.windows(2).all(|w| w[0] < w[1]) {
        return Err(broken("two workers held the lock at once"));
    }
    show.proved(format!(
        "{} turns, never two holders at once, fencing tokens strictly increasing",
        tokens.len()
    ))?;
    let total = DistributedAtomicLong::builder(
        client.clone(),
        &counter_path,
        RetryNTimes::new(3, Duration::ZERO),
    )
    .build()
    .map_err(failed("making a counter"))?
    .get()
    .await
    .map_err(failed("reading the counter"))?
    .post_value;
    if total != (WORKERS * TURNS_PER_WORKER) as i64 {
        return Err(broken(format!(
            "the counter is {total}, not {}",
            WORKERS * TURNS_PER_WORKER
        )));
    }

    // 3. The counter's total.
    show.step("read the shared counter")?;
    show.say(format!(
        "{counter_path} = {total} (Curator's DistributedAtomicLong layout: 8 bytes, big-endian)"
    ))?;
    show.proved(format!(
        "the counter is {total}: every one of the {} increments applied exactly once",
        WORKERS * TURNS_PER_WORKER
    ))?;

    // 4. A double barrier.
    show.step("meet at a double barrier")?;
    let barrier_path = paths::join(root, "barrier");
    let last_arrival = Arc::new(std::sync::Mutex::new(None::<Instant>));
    let meetings = workers.iter().enumerate().map(|(index, worker)| {
        let barrier_path = barrier_path.clone();
        let last_arrival = Arc::clone(&last_arrival);
        let publish = &publish;
        async move {
            let barrier =
                DistributedDoubleBarrier::new(worker.client.clone(), &barrier_path, WORKERS)
                    .map_err(failed("making a barrier"))?;
            if index == WORKERS - 1 {
                // The last worker is late on purpose: the others must wait for it.
                tokio::time::sleep(Duration::from_millis(500)).await;
                *last_arrival
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
                output::out(format_args!("      {} arrives last", worker.name))?;
            }
            within("entering the barrier", barrier.enter())
                .await?
                .map_err(failed("entering the barrier"))?;
            let entered = Instant::now();
            publish(
                &worker.client,
                format!("{} is through the barrier", worker.name),
            )
            .await?;
            within("leaving the barrier", barrier.leave())
                .await?
                .map_err(failed("leaving the barrier"))?;
            Ok::<_, CliError>(entered)
        }
    });
    let mut entries = Vec::new();
    for result in join_all(meetings).await {
        entries.push(result?);
    }
    let last = last_arrival
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .ok_or_else(|| broken("nobody arrived last"))?;
    if entries.iter().any(|entered| *entered < last) {
        return Err(broken("a worker passed the barrier before all had arrived"));
    }
    show.proved(format!(
        "no worker got through before all {WORKERS} had arrived, and all left together"
    ))?;

    // 5. The cache.
    show.step("check the cache")?;
    let count = seen.borrow().len();
    let (children, _) = client
        .get_children()
        .for_path(&published)
        .await
        .map_err(failed("listing the published nodes"))?;
    if children.len() != count {
        return Err(broken("the cache missed a published node"));
    }
    show.say(format!(
        "{count} nodes under {published}, and the cache printed each one"
    ))?;
    show.proved("a CuratorCache saw every publication, in order, without polling".to_owned())?;

    // 6. Hand-over.
    show.step("end the leader's session and watch the hand-over")?;
    let mut states = leader.client.connection_state_stream();
    let old_session = leader.client.session_id();
    show.say(format!(
        "ending {}'s session ({:#x}): its ephemeral nodes vanish",
        leader.name,
        old_session.unwrap_or_default()
    ))?;
    let ended = Instant::now();
    leader
        .client
        .inject_session_expiration()
        .await
        .map_err(failed("ending the leader's session"))?;
    let followers: Vec<_> = workers
        .iter()
        .enumerate()
        .filter(|(index, _)| *index != leader_index)
        .collect();
    let waits = followers
        .iter()
        .map(|(_, w)| Box::pin(w.latch.await_leadership()));
    let (result, position, _) = within("the hand-over", select_all(waits)).await?;
    result.map_err(failed("waiting for a new leader"))?;
    let new_leader = followers[position].1;
    let took = ended.elapsed();
    let mut seen_states = Vec::new();
    within("the old leader's new session", async {
        while let Some(state) = states.next().await {
            seen_states.push(state.to_string());
            if state == ConnectionState::Reconnected {
                break;
            }
        }
    })
    .await?;
    show.say(format!(
        "{}'s connection: {}",
        leader.name,
        seen_states.join(" -> ")
    ))?;
    publish(
        &new_leader.client,
        format!("{} is the leader now", new_leader.name),
    )
    .await?;
    let new_session = leader.client.session_id();
    if leader.latch.has_leadership() {
        return Err(broken("the old leader still leads"));
    }
    if new_session == old_session {
        return Err(broken(format!(
            "the old leader kept its session ({:#x})",
            new_session.unwrap_or_default()
        )));
    }
    show.proved(format!(
        "{} took over {} ms after {}'s session ended; {} is back on a new session and does not lead",
        new_leader.name,
        took.as_millis(),
        leader.name,
        leader.name
    ))?;
    cache.abort();
    Ok(())
}

/// Prints every node published under `dir`, followed by a `CuratorCache` (one persistent
/// recursive watch on the directory).
async fn watch_published(
    client: CuratorFramework,
    dir: String,
    seen: watch::Sender<HashSet<String>>,
) -> Result<(), Error> {
    let cache = CuratorCache::builder(client, &dir).build()?;
    let mut events = cache.listenable().stream();
    cache.start().await?;
    while let Some(event) = events.next().await {
        if let CacheEvent::Created { node } = event {
            if node.path() == dir {
                continue;
            }
            let printed = output::out(format_args!(
                "      cache: {}",
                String::from_utf8_lossy(node.data().unwrap_or_default())
            ));
            if printed.is_err() {
                // Nobody reads: stop, so the workers waiting for the cache give up too.
                break;
            }
            seen.send_modify(|seen| {
                seen.insert(node.path().to_owned());
            });
        }
    }
    cache.close().await?;
    Ok(())
}
