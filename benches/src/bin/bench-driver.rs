//! Benchmark driver for the side-by-side harness, in Rust: `framework` (this workspace's
//! `CuratorFramework`) or `bare` (its session layer, `curator_session::Session`, with nothing
//! on top).
//!
//! Usage: `bench-driver framework|bare <connect-string> [--tls-ca <ca.pem>]` (`--help` says
//! more); with `--tls-ca`
//! every session connects over TLS, trusting the CA certificate in that PEM file (the connect
//! string names the servers' TLS ports). Prints `ready`, then answers each stdin line
//! `run <scenario> <ops> <path>` with `ok <elapsed-ns> <latency-ns,...>` (or `err <message>`);
//! `quit` ends it. The Java and Python drivers in `benches/drivers/` speak the same protocol and
//! do the same work.
//!
//! Each scenario runs in a task spawned on the runtime's worker threads, as a service's
//! handlers run, rather than on the main thread inside `block_on` (where every reply would
//! also have to wake the main thread).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use curator_caches::{CuratorCache, CuratorCacheListener};
use curator_counters::DistributedAtomicLong;
use curator_election::{CloseMode, LatchEvent, LeaderLatch};
use curator_framework::CuratorFramework;
use curator_framework::retry::RetryNTimes;
use curator_framework::security::TlsConfig;
use curator_locks::InterProcessMutex;
use curator_queues::SimpleDistributedQueue;
use curator_session::proto::{CreateMode, EventType};
use curator_session::{Session, SessionConfig, TlsConnector, open_acl};
use futures::future::join_all;

/// Counts live heap bytes, for `cache_memory`.
#[global_allocator]
static ALLOCATOR: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);

const PAYLOAD: &[u8] = b"x";
const IN_FLIGHT: usize = 1000;
const CONTENDERS: usize = 8;

/// Where the driver's sessions connect, and how.
struct Server {
    connect: String,
    /// Over TLS, trusting the CA certificate in this PEM file.
    tls_ca: Option<PathBuf>,
}

enum Driver {
    Framework(CuratorFramework, Server),
    Bare(Session, Server),
}

/// A task of a multi-session scenario: the `(slot, latency)` pairs it measured.
type SlotTask = tokio::task::JoinHandle<Result<Vec<(usize, u64)>, String>>;

/// Puts each task's `(slot, latency)` pairs into `latencies`.
async fn fill_slots(tasks: Vec<SlotTask>, latencies: &mut [u64]) -> Result<(), String> {
    for task in tasks {
        for (slot, latency) in task.await.map_err(|e| e.to_string())?? {
            if let Some(entry) = latencies.get_mut(slot) {
                *entry = latency;
            }
        }
    }
    Ok(())
}

fn elapsed_ns(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

impl Driver {
    async fn get(&self, path: &str) -> Result<(), String> {
        match self {
            Driver::Framework(c, _) => c
                .get_data()
                .for_path(path)
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
            Driver::Bare(s, _) => s.get_data(path).await.map(drop).map_err(|e| e.to_string()),
        }
    }

    async fn create_delete(&self, node: &str) -> Result<(), String> {
        match self {
            Driver::Framework(c, _) => {
                c.create()
                    .for_path(node, PAYLOAD)
                    .await
                    .map_err(|e| e.to_string())?;
                c.delete().for_path(node).await.map_err(|e| e.to_string())
            }
            Driver::Bare(s, _) => {
                s.create(node, PAYLOAD, open_acl(), CreateMode::Persistent, None)
                    .await
                    .map_err(|e| e.to_string())?;
                s.delete(node, -1).await.map_err(|e| e.to_string())
            }
        }
    }

    /// `n` reads sent back to back, then awaited; each latency runs from its own send.
    async fn pipelined(&self, path: &str, latencies: &mut [u64]) -> Result<(), String> {
        match self {
            Driver::Framework(c, _) => {
                let futures: Vec<_> = latencies
                    .iter()
                    .map(|_| {
                        let issued = Instant::now();
                        let future = c.get_data().for_path(path).into_future();
                        async move { future.await.map(|_| elapsed_ns(issued)) }
                    })
                    .collect();
                for (slot, result) in latencies.iter_mut().zip(join_all(futures).await) {
                    *slot = result.map_err(|e| e.to_string())?;
                }
            }
            Driver::Bare(s, _) => {
                let futures: Vec<_> = latencies
                    .iter()
                    .map(|_| {
                        let issued = Instant::now();
                        let future = s.get_data(path);
                        async move { future.await.map(|_| elapsed_ns(issued)) }
                    })
                    .collect();
                for (slot, result) in latencies.iter_mut().zip(join_all(futures).await) {
                    *slot = result.map_err(|e| e.to_string())?;
                }
            }
        }
        Ok(())
    }

    async fn run(&self, scenario: &str, path: &str, latencies: &mut [u64]) -> Result<(), String> {
        match scenario {
            "get_data" => {
                for slot in latencies.iter_mut() {
                    let t = Instant::now();
                    self.get(path).await?;
                    *slot = elapsed_ns(t);
                }
            }
            "create_delete" => {
                for (i, slot) in latencies.iter_mut().enumerate() {
                    let t = Instant::now();
                    self.create_delete(&format!("{path}/n{i}")).await?;
                    *slot = elapsed_ns(t);
                }
            }
            "pipelined_get_data" => {
                for chunk in latencies.chunks_mut(IN_FLIGHT) {
                    self.pipelined(path, chunk).await?;
                }
            }
            "mutex_uncontended" => self.mutex_uncontended(path, latencies).await?,
            "mutex_contended" => self.mutex_contended(path, latencies).await?,
            "leader_handover" => self.leader_handover(path, latencies).await?,
            "crash_join" => self.crash_join(path).await?,
            "counter_8way" => self.counter_8way(path, latencies, true).await?,
            "counter_8way_plain" => self.counter_8way(path, latencies, false).await?,
            "queue_1x1" => self.queue(path, latencies, 1, false).await?,
            "queue_4x4" => self.queue(path, latencies, 4, false).await?,
            "queue_4x4_exactly_once" => self.queue(path, latencies, 4, true).await?,
            "cache_initial_load" => self.cache_initial_load(path, latencies).await?,
            "cache_memory" => self.cache_memory(path, latencies).await?,
            "cache_update_latency" => self.cache_update_latency(path, latencies).await?,
            scale if scale.starts_with("scale_") => self.scale(scale, path, latencies).await?,
            other => return Err(format!("unknown scenario {other}")),
        }
        Ok(())
    }

    /// Acquire + release cycles on a free lock. The bare session does the same round trips by
    /// hand: an ephemeral-sequential create sent together with the listing, then the delete.
    async fn mutex_uncontended(&self, path: &str, latencies: &mut [u64]) -> Result<(), String> {
        match self {
            Driver::Framework(c, _) => {
                let mutex = InterProcessMutex::builder(c.clone(), path)
                    .build()
                    .map_err(|e| e.to_string())?;
                for slot in latencies.iter_mut() {
                    let t = Instant::now();
                    let guard = mutex.acquire().await.map_err(|e| e.to_string())?;
                    guard.release().await.map_err(|e| e.to_string())?;
                    *slot = elapsed_ns(t);
                }
            }
            Driver::Bare(s, _) => {
                let prefix = format!("{path}/lock-");
                create_parent(s, path).await?;
                for slot in latencies.iter_mut() {
                    let t = Instant::now();
                    // Both sent now, in this order (a session queues a request at the call).
                    let create = s.create(
                        &prefix,
                        b"",
                        open_acl(),
                        CreateMode::EphemeralSequential,
                        None,
                    );
                    let list = s.get_children(path);
                    let (create, list) = futures::join!(create, list);
                    let (node, _) = create.map_err(|e| e.to_string())?;
                    list.map_err(|e| e.to_string())?;
                    s.delete(&node, -1).await.map_err(|e| e.to_string())?;
                    *slot = elapsed_ns(t);
                }
            }
        }
        Ok(())
    }

    /// `CONTENDERS` sessions loop on one lock until the hand-overs add up to the count.
    async fn mutex_contended(&self, path: &str, latencies: &mut [u64]) -> Result<(), String> {
        let Driver::Framework(_, connect) = self else {
            return Err("unsupported".into());
        };
        let mut clients = Vec::new();
        for _ in 0..CONTENDERS {
            clients.push(connect_framework(connect).await);
        }
        let result = contend(&clients, path, latencies).await;
        join_all(clients.iter().map(CuratorFramework::close)).await;
        result
    }
}

/// Each of `clients` loops acquire → release on the mutex at `path` until the acquisitions add
/// up to the slots; each slot gets one acquisition's wait.
async fn contend(
    clients: &[CuratorFramework],
    path: &str,
    latencies: &mut [u64],
) -> Result<(), String> {
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let total = latencies.len();
    let mut tasks = Vec::new();
    for client in clients {
        let (next, path, client) = (
            std::sync::Arc::clone(&next),
            path.to_owned(),
            client.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mutex = InterProcessMutex::builder(client, &path)
                .build()
                .map_err(|e| e.to_string())?;
            let mut mine = Vec::new();
            loop {
                let t = Instant::now();
                let guard = mutex.acquire().await.map_err(|e| e.to_string())?;
                let slot = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                mine.push((slot, elapsed_ns(t)));
                guard.release().await.map_err(|e| e.to_string())?;
                if slot + 1 >= total {
                    break;
                }
            }
            Ok::<_, String>(mine)
        }));
    }
    fill_slots(tasks, latencies).await
}

impl Driver {
    /// `n` producer sessions offer and `n` consumer sessions take items of one
    /// `SimpleDistributedQueue`; one op = one item taken, its latency the take's. `exactly_once`
    /// chooses the exactly-once mode (outcome markers) over the default at-least-once one.
    async fn queue(
        &self,
        path: &str,
        latencies: &mut [u64],
        n: usize,
        exactly_once: bool,
    ) -> Result<(), String> {
        let Driver::Framework(_, connect) = self else {
            return Err("unsupported".into());
        };
        let total = latencies.len();
        let taken = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut producers = Vec::new();
        for p in 0..n {
            let client = connect_framework(connect).await;
            let queue = simple_queue(&client, path, exactly_once)?;
            let count = total / n + usize::from(p < total % n);
            producers.push(tokio::spawn(async move {
                for _ in 0..count {
                    queue.offer(PAYLOAD).await.map_err(|e| e.to_string())?;
                }
                client.close().await.map_err(|e| e.to_string())?;
                Ok::<_, String>(())
            }));
        }
        let mut consumers = Vec::new();
        for _ in 0..n {
            let client = connect_framework(connect).await;
            let queue = simple_queue(&client, path, exactly_once)?;
            let taken = std::sync::Arc::clone(&taken);
            consumers.push(tokio::spawn(async move {
                let mut mine = Vec::new();
                while taken.load(std::sync::atomic::Ordering::SeqCst) < total {
                    let t = Instant::now();
                    if queue
                        .poll_timeout(Duration::from_millis(50))
                        .await
                        .map_err(|e| e.to_string())?
                        .is_some()
                    {
                        let slot = taken.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        mine.push((slot, elapsed_ns(t)));
                    }
                }
                client.close().await.map_err(|e| e.to_string())?;
                Ok::<_, String>(mine)
            }));
        }
        for producer in producers {
            producer.await.map_err(|e| e.to_string())??;
        }
        fill_slots(consumers, latencies).await
    }

    /// `CONTENDERS` sessions increment one `DistributedAtomicLong` until the successful
    /// increments add up to the count; `markers` chooses exactly-once writes (the default) or
    /// Curator's plain versioned writes.
    async fn counter_8way(
        &self,
        path: &str,
        latencies: &mut [u64],
        markers: bool,
    ) -> Result<(), String> {
        let Driver::Framework(_, connect) = self else {
            return Err("unsupported".into());
        };
        let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let total = latencies.len();
        let mut tasks = Vec::new();
        for _ in 0..CONTENDERS {
            let client = connect_framework(connect).await;
            let (next, path) = (std::sync::Arc::clone(&next), path.to_owned());
            tasks.push(tokio::spawn(async move {
                let builder = DistributedAtomicLong::builder(
                    client.clone(),
                    &path,
                    RetryNTimes::new(100_000, Duration::ZERO),
                );
                let counter = if markers {
                    builder
                } else {
                    builder.without_markers()
                }
                .build()
                .map_err(|e| e.to_string())?;
                let mut mine = Vec::new();
                loop {
                    let t = Instant::now();
                    let result = counter.increment().await.map_err(|e| e.to_string())?;
                    if !result.succeeded {
                        return Err("an increment gave up".to_owned());
                    }
                    let slot = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    mine.push((slot, elapsed_ns(t)));
                    if slot + 1 >= total {
                        break;
                    }
                }
                counter.flush_markers().await.map_err(|e| e.to_string())?;
                client.close().await.map_err(|e| e.to_string())?;
                Ok::<_, String>(mine)
            }));
        }
        fill_slots(tasks, latencies).await
    }

    /// Two participants on separate sessions hand leadership back and forth: each latency runs
    /// from the leader's close to the other's election; the one that left rejoins behind and,
    /// before the next hand-over, is in line: its watch on the leader's node is set (as every
    /// driver waits: Curator's and Kazoo's look at their client's watches).
    ///
    /// The bare session measures the floor of any hand-over: it deletes a node it watches, and
    /// the latency runs until the watch fires (one committed write and its notification, which
    /// any election needs before the next participant may lead).
    async fn leader_handover(&self, path: &str, latencies: &mut [u64]) -> Result<(), String> {
        let connect = match self {
            Driver::Framework(_, connect) => connect,
            Driver::Bare(s, server) => {
                return watched_delete_floor(s, server, path, latencies).await;
            }
        };
        let clients = [
            connect_framework(connect).await,
            connect_framework(connect).await,
        ];
        // A participant, and a permit once it is first in line (`LatchEvent::Ready`: its
        // watch on the leader's node is set).
        let join = |i: usize| {
            let latch = LeaderLatch::builder(clients[i].clone(), path, format!("p{i}"))
                .close_mode(CloseMode::Silent)
                .build()
                .map_err(|e| e.to_string());
            async move {
                let latch = latch?;
                let ready = Arc::new(tokio::sync::Semaphore::new(0));
                let signal = Arc::clone(&ready);
                // Removed once it has served (dropped with the handle, before the hand-over):
                // like Curator's and Kazoo's participants, the measured ones have no listener.
                let listening = latch.listenable().add_listener(move |event| {
                    if event == LatchEvent::Ready && signal.available_permits() == 0 {
                        signal.add_permits(1);
                    }
                });
                latch.start().await.map_err(|e| e.to_string())?;
                Ok::<_, String>((latch, (ready, listening)))
            }
        };
        let (mut leader, _) = join(0).await?;
        leader.await_leadership().await.map_err(|e| e.to_string())?;
        let mut leader_index = 0;
        let (mut follower, mut ready) = join(1).await?;
        for slot in latencies.iter_mut() {
            tokio::time::timeout(Duration::from_secs(30), ready.0.acquire())
                .await
                .map_err(|_| "the follower did not get in line".to_owned())?
                .map_err(|e| e.to_string())?
                .forget();
            drop(ready.1);
            // The hand-over starts from a task polled afresh, not at the end of the chain of
            // wake-ups that brought the follower's readiness (the reader's, the latch's, its
            // listeners'), where the scheduler sends the next wake-up to another thread.
            tokio::task::yield_now().await;
            // The hand-over ends when the follower leads, whether or not the leader's close has
            // had its delete's reply yet (Curator's close does not wait for it at all).
            let t = Instant::now();
            let led = async {
                follower.await_leadership().await?;
                Ok::<_, curator_framework::Error>(elapsed_ns(t))
            };
            let (closed, led) = futures::join!(leader.close(), led);
            closed.map_err(|e| e.to_string())?;
            *slot = led.map_err(|e| e.to_string())?;
            leader_index = 1 - leader_index;
            let (rejoined, rejoined_ready) = join(1 - leader_index).await?;
            leader = std::mem::replace(&mut follower, rejoined);
            ready = rejoined_ready;
        }
        leader.close().await.map_err(|e| e.to_string())?;
        follower.close().await.map_err(|e| e.to_string())?;
        for client in clients {
            client.close().await.map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

impl Driver {
    /// A `CuratorCache` loads the tree at `path` (at least as many nodes as there are
    /// operations); every latency is the whole load.
    async fn cache_initial_load(&self, path: &str, latencies: &mut [u64]) -> Result<(), String> {
        let Driver::Framework(client, _) = self else {
            return Err("unsupported".into());
        };
        let t = Instant::now();
        let cache = loaded_cache(client, path).await?;
        let took = elapsed_ns(t);
        let loaded = cache.len();
        let _ = cache.close().await;
        if loaded < latencies.len() {
            return Err(format!("loaded only {loaded} nodes"));
        }
        latencies.fill(took);
        Ok(())
    }

    /// The heap a loaded `CuratorCache` of the tree at `path` holds, per node (live bytes
    /// allocated by the load and still held once it is done), in every slot.
    async fn cache_memory(&self, path: &str, latencies: &mut [u64]) -> Result<(), String> {
        let Driver::Framework(client, _) = self else {
            return Err("unsupported".into());
        };
        let before = ALLOCATOR.allocated();
        let cache = loaded_cache(client, path).await?;
        // Let the event dispatcher drain the load's events (no listener keeps them).
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        let after = ALLOCATOR.allocated();
        let loaded = cache.len().max(1) as u64;
        let _ = cache.close().await;
        latencies.fill(after.saturating_sub(before) as u64 / loaded);
        Ok(())
    }

    /// A `CuratorCache` on `path`; each latency runs from a `set_data` of `path/n` to the
    /// cache's listener seeing the new value.
    async fn cache_update_latency(&self, path: &str, latencies: &mut [u64]) -> Result<(), String> {
        let Driver::Framework(client, _) = self else {
            return Err("unsupported".into());
        };
        let node = format!("{path}/n");
        match client
            .create()
            .creating_parents_if_needed()
            .for_path(&node, b"0")
            .await
        {
            Ok(_) | Err(curator_framework::Error::NodeExists) => {}
            Err(e) => return Err(e.to_string()),
        }
        let cache = CuratorCache::builder(client.clone(), path)
            .build()
            .map_err(|e| e.to_string())?;
        let (changes, mut seen) = tokio::sync::mpsc::unbounded_channel();
        let _listening = cache.listenable().add_listener_object(std::sync::Arc::new(
            CuratorCacheListener::builder()
                .for_changes(move |_, node| {
                    let _ = changes.send(node.data().map(<[u8]>::to_vec));
                })
                .build(),
        ));
        cache.start().await.map_err(|e| e.to_string())?;
        cache.initialized().await.map_err(|e| e.to_string())?;
        for (i, slot) in latencies.iter_mut().enumerate() {
            let value = i.to_string();
            let t = Instant::now();
            client
                .set_data()
                .for_path(&node, value.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            loop {
                match seen.recv().await {
                    Some(Some(data)) if data == value.as_bytes() => break,
                    Some(_) => {}
                    None => return Err("the cache stopped".into()),
                }
            }
            *slot = elapsed_ns(t);
        }
        let _ = cache.close().await;
        Ok(())
    }
}

/// A started `CuratorCache` of the tree at `path`, once its initial load is done.
async fn loaded_cache(client: &CuratorFramework, path: &str) -> Result<CuratorCache, String> {
    let cache = CuratorCache::builder(client.clone(), path)
        .build()
        .map_err(|e| e.to_string())?;
    cache.start().await.map_err(|e| e.to_string())?;
    cache.initialized().await.map_err(|e| e.to_string())?;
    Ok(cache)
}

/// Creates the persistent node `path` unless it exists.
async fn create_parent(s: &Session, path: &str) -> Result<(), String> {
    match s
        .create(path, b"", open_acl(), CreateMode::Persistent, None)
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code() == Some(curator_session::proto::ErrorCode::NodeExists) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// The bare floor of a hand-over (see `leader_handover`): one session deletes a node that
/// another watches (two participants of an election are two sessions), until the watch fires
/// on the watching session; the deleter's reply is not waited for, as the framework's
/// hand-over does not wait for the leader's.
async fn watched_delete_floor(
    s: &Session,
    server: &Server,
    path: &str,
    latencies: &mut [u64],
) -> Result<(), String> {
    create_parent(s, path).await?;
    let leader = connect_bare(server).await?;
    let node = format!("{path}/leader");
    let measured = async {
        for slot in latencies.iter_mut() {
            leader
                .create(&node, b"", open_acl(), CreateMode::Ephemeral, None)
                .await
                .map_err(|e| e.to_string())?;
            let (_, watch) = s.exists_watched(&node).await.map_err(|e| e.to_string())?;
            let t = Instant::now();
            let delete = leader.delete(&node, -1);
            let fired = async {
                let event = watch.changed().await;
                (event, elapsed_ns(t))
            };
            let ((event, took), deleted) = futures::join!(fired, delete);
            *slot = took;
            deleted.map_err(|e| e.to_string())?;
            if event.event_type != EventType::NodeDeleted {
                return Err(format!("unexpected event {event:?}"));
            }
        }
        Ok(())
    }
    .await;
    let _ = leader.close().await;
    measured
}

/// The session timeout of `crash_join`, the same in every driver.
const CRASH_SESSION: Duration = Duration::from_millis(2000);

impl Driver {
    /// A role of side-by-side's crash failover: join the election at `path` on a new session
    /// (timeout [`CRASH_SESSION`]) and return once leading. The session stays open until the
    /// process ends: the harness SIGKILLs the leader's process and times the next one's reply.
    async fn crash_join(&self, path: &str) -> Result<(), String> {
        let Driver::Framework(_, connect) = self else {
            return Err("unsupported".into());
        };
        let client = connect_framework_with(connect, CRASH_SESSION).await;
        let latch = LeaderLatch::builder(client.clone(), path, "crash")
            .build()
            .map_err(|e| e.to_string())?;
        latch.start().await.map_err(|e| e.to_string())?;
        latch.await_leadership().await.map_err(|e| e.to_string())?;
        // Kept for the rest of the process's life.
        std::mem::forget((latch, client));
        Ok(())
    }
}

async fn connect_framework(server: &Server) -> CuratorFramework {
    connect_framework_with(server, Duration::from_secs(30)).await
}

/// A connected framework client; a scenario's task panics (its request answers `err`) when the
/// server cannot be reached.
async fn connect_framework_with(server: &Server, session: Duration) -> CuratorFramework {
    match try_connect_framework(server, session).await {
        Ok(client) => client,
        Err(error) => panic!("{error}"),
    }
}

/// A connected framework client, or why there is none.
async fn try_connect_framework(
    server: &Server,
    session: Duration,
) -> Result<CuratorFramework, String> {
    let mut builder = CuratorFramework::builder()
        .connect_string(&server.connect)
        .retry_policy(RetryNTimes::new(3, Duration::from_millis(100)))
        .session_timeout(session);
    if let Some(ca) = &server.tls_ca {
        builder = builder.tls(TlsConfig::new().ca_file(ca));
    }
    let client = builder.build().map_err(|e| e.to_string())?;
    client.start().await.map_err(|e| e.to_string())?;
    client
        .block_until_connected(Duration::from_secs(30))
        .await
        .map_err(|e| format!("connecting to {}: {e}", server.connect))?;
    Ok(client)
}

/// A bare curator-session session (30 s, as the framework's), over TLS with a CA file
/// (checking that the server's certificate names its host, as the framework does by default).
async fn connect_bare(server: &Server) -> Result<Session, String> {
    let mut config = SessionConfig::new(&server.connect)
        .map_err(|e| format!("{}: {e}", server.connect))?
        .session_timeout(Duration::from_secs(30));
    if let Some(ca) = &server.tls_ca {
        let pem = std::fs::read_to_string(ca).map_err(|e| format!("{}: {e}", ca.display()))?;
        let tls = TlsConnector::config_from_pem(&pem, None, true)
            .map_err(|e| format!("{}: {e}", ca.display()))?;
        config = config.connector(Arc::new(TlsConnector::new(tls)));
    }
    Session::connect(config)
        .await
        .map_err(|e| format!("connecting to {}: {e}", server.connect))
}

/// A benchmark driver of the side-by-side and scale harnesses: prints `ready`, then answers
/// each line `run <scenario> <ops> <path>` on stdin with `ok <elapsed-ns> <values>` (or
/// `err <message>`); `quit` ends it.
#[derive(Debug, clap::Parser)]
#[command(name = "bench-driver")]
struct Args {
    /// Which client does the work.
    #[arg(value_enum)]
    kind: Kind,
    /// The servers to connect to (their TLS ports with --tls-ca).
    connect: String,
    /// Connect over TLS, trusting the CA certificate in this PEM file.
    #[arg(long, value_name = "CA.pem")]
    tls_ca: Option<PathBuf>,
}

/// The client a driver measures.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Kind {
    /// This workspace's `CuratorFramework`.
    Framework,
    /// curator-session's `Session` with nothing on top.
    Bare,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = <Args as clap::Parser>::parse();
    let server = Server {
        connect: args.connect,
        tls_ca: args.tls_ca,
    };
    let driver = match args.kind {
        Kind::Framework => try_connect_framework(&server, Duration::from_secs(30))
            .await
            .map(|client| Driver::Framework(client, server)),
        Kind::Bare => connect_bare(&server)
            .await
            .map(|session| Driver::Bare(session, server)),
    };
    let driver = match driver {
        Ok(driver) => Arc::new(driver),
        Err(error) => {
            eprintln!("bench-driver: {error}");
            std::process::exit(1);
        }
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ready");
    let _ = out.flush();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        let reply = match words.as_slice() {
            ["quit"] | [] => break,
            ["run", scenario, ops, path] => match ops.parse::<usize>() {
                Ok(ops) => {
                    let start = Instant::now();
                    let (driver, scenario, path) =
                        (Arc::clone(&driver), scenario.to_string(), path.to_string());
                    let run = tokio::spawn(async move {
                        let mut latencies = vec![0u64; ops];
                        driver
                            .run(&scenario, &path, &mut latencies)
                            .await
                            .map(|()| latencies)
                    });
                    match run.await.unwrap_or_else(|e| Err(e.to_string())) {
                        Ok(latencies) => {
                            let elapsed = elapsed_ns(start);
                            let list: Vec<String> = latencies.iter().map(u64::to_string).collect();
                            format!("ok {elapsed} {}", list.join(","))
                        }
                        Err(error) => format!("err {error}"),
                    }
                }
                Err(_) => format!("err bad op count {ops}"),
            },
            _ => format!("err unknown command {line:?}"),
        };
        let _ = writeln!(out, "{reply}");
        let _ = out.flush();
    }
    match &*driver {
        Driver::Framework(client, _) => {
            let _ = client.close().await;
        }
        Driver::Bare(session, _) => {
            let _ = session.close().await;
        }
    }
}

/// A simple queue at `path`, in exactly-once mode or not.
fn simple_queue(
    client: &CuratorFramework,
    path: &str,
    exactly_once: bool,
) -> Result<SimpleDistributedQueue, String> {
    let builder = SimpleDistributedQueue::builder(client.clone(), path);
    if exactly_once {
        builder.exactly_once()
    } else {
        builder
    }
    .build()
    .map_err(|e| e.to_string())
}

/// The queue kinds of the `scale_queue*` scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum QueueVariant {
    /// `SimpleDistributedQueue`: one flat directory of `qn-<seq>` items, filled by the harness.
    Flat,
    /// The bucketed layout of curator-queues (not merged yet): the driver fills its own backlog.
    Bucketed,
}

/// A queue the `scale_queue*` scenarios put to and take from.
enum ScaleQueue {
    Simple(SimpleDistributedQueue),
}

impl ScaleQueue {
    async fn offer(&self, item: &[u8]) -> Result<(), String> {
        match self {
            ScaleQueue::Simple(queue) => queue.offer(item).await.map_err(|e| e.to_string()),
        }
    }

    /// Takes one item; an empty queue is an error (the backlog never runs dry).
    async fn take_one(&self) -> Result<(), String> {
        match self {
            ScaleQueue::Simple(queue) => match queue.poll().await.map_err(|e| e.to_string())? {
                Some(_) => Ok(()),
                None => Err("the queue was empty".into()),
            },
        }
    }
}

/// The scale scenarios (`bench-scale`): `scale_<family>_<n>`. Several put measured quantities
/// other than latencies in the last slots; each function says which.
impl Driver {
    async fn scale(&self, scenario: &str, path: &str, latencies: &mut [u64]) -> Result<(), String> {
        let (family, n) = scenario
            .rsplit_once('_')
            .and_then(|(family, n)| Some((family, n.parse::<usize>().ok()?)))
            .ok_or_else(|| format!("unknown scenario {scenario}"))?;
        let Driver::Framework(client, server) = self else {
            return Err("unsupported".into());
        };
        match family {
            "scale_election" => scale_election(server, path, latencies, n).await,
            "scale_mutex" => scale_mutex(server, path, latencies, n).await,
            "scale_locks" => scale_locks(client, path, latencies).await,
            "scale_cache" => scale_cache(client, path, latencies, n).await,
            "scale_queue" => scale_queue(client, path, latencies, n, QueueVariant::Flat).await,
            "scale_queue_bucketed" => {
                scale_queue(client, path, latencies, n, QueueVariant::Bucketed).await
            }
            _ => Err(format!("unknown scenario {scenario}")),
        }
    }
}

/// ZooKeeper's `mntr` counters the election needs: watches set now (`zk_watch_count`), and
/// watches triggered so far (the sums of the four `zk_sum_node_*_watch_count` summaries: one
/// per notification the server sends).
async fn watch_counters(server: &Server) -> Result<(u64, u64), String> {
    let mntr = curator_test::four_letter_word(&server.connect, "mntr", Duration::from_secs(10))
        .await
        .map_err(|e| format!("mntr: {e}"))?;
    let value = |key: &str| {
        mntr.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('\t'))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map_or(0, |v| v as u64)
    };
    let fired = [
        "zk_sum_node_created_watch_count",
        "zk_sum_node_deleted_watch_count",
        "zk_sum_node_changed_watch_count",
        "zk_sum_node_children_watch_count",
    ]
    .iter()
    .map(|key| value(key))
    .sum();
    Ok((value("zk_watch_count"), fired))
}

/// `n` sessions, connected `50` at a time.
async fn connect_sessions(server: &Server, n: usize) -> Vec<CuratorFramework> {
    let mut clients = Vec::with_capacity(n);
    for chunk in 0..n.div_ceil(50) {
        let batch = (chunk * 50..n.min(chunk * 50 + 50)).map(|_| connect_framework(server));
        clients.extend(join_all(batch).await);
    }
    clients
}

/// `n` participants of one `LeaderLatch`, each on its own session, join in order; then the
/// leader leaves (its latch closes) `k` times and the next participant takes over. Slots
/// `0..k`: each hand-over's latency (the leader's close → the next one's `await_leadership`);
/// slot `k`: watches the server triggered during the `k` hand-overs; slot `k + 1`: watches set
/// once everyone had joined (above what was set before).
async fn scale_election(
    server: &Server,
    path: &str,
    latencies: &mut [u64],
    n: usize,
) -> Result<(), String> {
    let k = latencies
        .len()
        .checked_sub(2)
        .ok_or("needs at least 2 ops")?;
    if k == 0 || k >= n {
        return Err(format!("{k} hand-overs need more than {n} participants"));
    }
    let (watches_before, _) = watch_counters(server).await?;
    let clients = connect_sessions(server, n).await;
    let mut latches = Vec::with_capacity(n);
    // Followers that have set their watch (`LatchEvent::Ready`).
    let ready = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    for (i, client) in clients.iter().enumerate() {
        let latch = LeaderLatch::builder(client.clone(), path, format!("p{i}"))
            .close_mode(CloseMode::Silent)
            .build()
            .map_err(|e| e.to_string())?;
        let once = std::sync::atomic::AtomicBool::new(false);
        let ready = std::sync::Arc::clone(&ready);
        latch
            .listenable()
            .add_listener(move |event| {
                if event == LatchEvent::Ready
                    && !once.swap(true, std::sync::atomic::Ordering::SeqCst)
                {
                    ready.add_permits(1);
                }
            })
            .detach();
        // `start` returns once the participant's node exists, so the order is the index's.
        latch.start().await.map_err(|e| e.to_string())?;
        latches.push(latch);
    }
    latches[0]
        .await_leadership()
        .await
        .map_err(|e| e.to_string())?;
    // Every participant but the leader is in line, watching the one before it.
    let followers = u32::try_from(n - 1).map_err(|e| e.to_string())?;
    tokio::time::timeout(Duration::from_secs(120), ready.acquire_many(followers))
        .await
        .map_err(|_| "not every follower got ready".to_owned())?
        .map_err(|e| e.to_string())?
        .forget();
    let registered = settle_watches(server, watches_before, n - 1).await?;
    let (_, fired_before) = watch_counters(server).await?;
    for i in 0..k {
        // As in `leader_handover`: until the next one leads.
        let t = Instant::now();
        let led = async {
            latches[i + 1].await_leadership().await?;
            Ok::<_, curator_framework::Error>(elapsed_ns(t))
        };
        let (closed, led) = futures::join!(latches[i].close(), led);
        closed.map_err(|e| e.to_string())?;
        latencies[i] = led.map_err(|e| e.to_string())?;
    }
    let (_, fired_after) = watch_counters(server).await?;
    latencies[k] = fired_after.saturating_sub(fired_before);
    latencies[k + 1] = registered;
    for latch in &latches[k..] {
        let _ = latch.close().await;
    }
    join_all(clients.iter().map(CuratorFramework::close)).await;
    Ok(())
}

/// Waits (up to 30 s) until at least `expected` watches more than `before` are set; returns how
/// many there are then.
async fn settle_watches(server: &Server, before: u64, expected: usize) -> Result<u64, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (now, _) = watch_counters(server).await?;
        let set = now.saturating_sub(before);
        if set >= expected as u64 || Instant::now() > deadline {
            return Ok(set);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `n` sessions, all connected first, loop on one mutex until the hand-overs add up to
/// `h = ops - 1`. Slots `0..h`: each acquisition's wait; slot `h`: the contended window (the
/// first acquisition's start to the last session's finish), for hand-overs per second.
async fn scale_mutex(
    server: &Server,
    path: &str,
    latencies: &mut [u64],
    n: usize,
) -> Result<(), String> {
    let total = latencies
        .len()
        .checked_sub(1)
        .ok_or("needs at least 1 op")?;
    let clients = connect_sessions(server, n).await;
    let window = Instant::now();
    contend(&clients, path, &mut latencies[..total]).await?;
    latencies[total] = elapsed_ns(window);
    join_all(clients.iter().map(CuratorFramework::close)).await;
    Ok(())
}

/// One process acquires `n = ops - 1` independent mutexes (`path/l<i>`) one after another and
/// holds them all. Slots `0..n`: each acquisition's latency; slot `n`: live heap bytes held per
/// held lock (the mutexes and their guards). Then releases them.
async fn scale_locks(
    client: &CuratorFramework,
    path: &str,
    latencies: &mut [u64],
) -> Result<(), String> {
    let n = latencies
        .len()
        .checked_sub(1)
        .ok_or("needs at least 1 op")?;
    let before = ALLOCATOR.allocated();
    let mut held = Vec::with_capacity(n);
    for (i, slot) in latencies[..n].iter_mut().enumerate() {
        let mutex = InterProcessMutex::builder(client.clone(), &format!("{path}/l{i}"))
            .build()
            .map_err(|e| e.to_string())?;
        let t = Instant::now();
        let guard = mutex.acquire().await.map_err(|e| e.to_string())?;
        *slot = elapsed_ns(t);
        held.push((mutex, guard));
    }
    let after = ALLOCATOR.allocated();
    latencies[n] = after.saturating_sub(before) as u64 / n.max(1) as u64;
    for (_, guard) in held {
        guard.release().await.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A `CuratorCache` loads the tree at `path` (at least `n` nodes). Slot 0: the load's duration;
/// slot 1: live heap bytes the loaded cache holds per node. Run in a fresh process.
async fn scale_cache(
    client: &CuratorFramework,
    path: &str,
    latencies: &mut [u64],
    n: usize,
) -> Result<(), String> {
    if latencies.len() != 2 {
        return Err("scale_cache takes 2 ops".into());
    }
    let before = ALLOCATOR.allocated();
    let t = Instant::now();
    let cache = loaded_cache(client, path).await?;
    latencies[0] = elapsed_ns(t);
    // Let the event dispatcher drain the load's events (no listener keeps them).
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    let after = ALLOCATOR.allocated();
    let loaded = cache.len();
    latencies[1] = after.saturating_sub(before) as u64 / loaded.max(1) as u64;
    let _ = cache.close().await;
    if loaded < n {
        return Err(format!("loaded only {loaded} of {n} nodes"));
    }
    Ok(())
}

/// Put and take throughput at a backlog of `backlog` items: `k = ops / 2` offers, then `k`
/// takes (the backlog goes from `backlog` to `backlog + k` and back). Slots `0..k`: the offers'
/// latencies; slots `k..2k`: the takes'. The flat queue's backlog is put there by the harness
/// (pipelined creates of `qn-` items); a bucketed queue fills its own.
async fn scale_queue(
    client: &CuratorFramework,
    path: &str,
    latencies: &mut [u64],
    backlog: usize,
    variant: QueueVariant,
) -> Result<(), String> {
    let queue = match variant {
        QueueVariant::Flat => ScaleQueue::Simple(
            SimpleDistributedQueue::builder(client.clone(), path)
                .build()
                .map_err(|e| e.to_string())?,
        ),
        QueueVariant::Bucketed => {
            // Buckets of BUCKET_CAPACITY items; the backlog is filled here, untimed.
            let queue = ScaleQueue::Simple(
                SimpleDistributedQueue::builder(client.clone(), path)
                    .bucketed(BUCKET_CAPACITY)
                    .build()
                    .map_err(|e| e.to_string())?,
            );
            fill_own_backlog(&queue, backlog).await?;
            queue
        }
    };
    let k = latencies.len() / 2;
    let (puts, takes) = latencies.split_at_mut(k);
    for slot in puts.iter_mut() {
        let t = Instant::now();
        queue.offer(PAYLOAD).await?;
        *slot = elapsed_ns(t);
    }
    for slot in takes.iter_mut() {
        let t = Instant::now();
        queue.take_one().await?;
        *slot = elapsed_ns(t);
    }
    Ok(())
}

/// The capacity of the bucketed queue's buckets in `scale_queue`.
const BUCKET_CAPACITY: usize = 10_000;

/// Offers `backlog` items, `IN_FLIGHT` at a time (for a queue variant that fills its own
/// backlog).
async fn fill_own_backlog(queue: &ScaleQueue, backlog: usize) -> Result<(), String> {
    let mut left = backlog;
    while left > 0 {
        let batch = left.min(IN_FLIGHT);
        for result in join_all((0..batch).map(|_| queue.offer(PAYLOAD))).await {
            result?;
        }
        left -= batch;
    }
    Ok(())
}
