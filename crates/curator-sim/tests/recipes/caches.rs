//! curator-caches' single-server fault tests under the simulator: every kind of cache, and the
//! persistent watcher, through partitions, cut connections, server restarts and session
//! expiries (at the server), with the real tests' invariants: a cache ends equal to the
//! server's tree (read from the model itself) and its event log replays to it; a resync
//! yields exactly the missed changes; `wait_for` answers only once a cache shows the write.

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use curator_caches::{
    CacheEvent, ChildData, CuratorCache, NodeCache, PathChildrenCache, PathChildrenCacheEvent,
    PersistentWatcher, PersistentWatcherEvent, StartMode, TreeCache, WatchMode,
};
use curator_framework::listen::{Listenable, ListenerStream};
use curator_framework::types::EventType;
use curator_framework::{ConnectionState, CuratorFramework, Error as ZkError, paths};
use curator_sim::{SimClient, SimFaults, Simulation};
use futures::StreamExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::watch;

use curator_testkit::writers::{Control, mutate};

use crate::election::{Elsewhere, WAIT, within};
use crate::{SEEDS, run, session_of, sim, until};

type Res<T = ()> = Result<T, Box<dyn Error>>;

/// Every event a cache publishes, in order, recorded from a stream.
struct Recorder {
    stream: ListenerStream<CacheEvent>,
    log: Vec<CacheEvent>,
}

impl Recorder {
    fn new(listenable: &Listenable<CacheEvent>) -> Self {
        Self {
            stream: listenable.stream(),
            log: Vec::new(),
        }
    }

    /// The next event, within the wait deadline.
    async fn next(&mut self) -> Res<CacheEvent> {
        let event = within("a cache event", WAIT, self.stream.next())
            .await?
            .ok_or("the event stream ended")?;
        self.log.push(event.clone());
        Ok(event)
    }

    /// Records events until one matches `what`; returns it.
    async fn until(
        &mut self,
        what: &str,
        matches: impl Fn(&CacheEvent) -> bool,
    ) -> Res<CacheEvent> {
        let end = tokio::time::Instant::now() + WAIT;
        loop {
            let left = end.saturating_duration_since(tokio::time::Instant::now());
            let event = tokio::time::timeout(left, self.stream.next())
                .await
                .map_err(|_| format!("no {what} in time; saw {:#?}", self.log))?
                .ok_or("the event stream ended")?;
            self.log.push(event.clone());
            if matches(&event) {
                return Ok(event);
            }
        }
    }

    /// Records whatever arrives within `quiet` (for checking that nothing more comes).
    async fn drain(&mut self, quiet: Duration) -> Vec<CacheEvent> {
        let mut extra = Vec::new();
        while let Ok(Some(event)) = tokio::time::timeout(quiet, self.stream.next()).await {
            self.log.push(event.clone());
            extra.push(event);
        }
        extra
    }
}

fn initialized(event: &CacheEvent) -> bool {
    matches!(event, CacheEvent::Initialized)
}

/// A node as the tests compare it: data and data version.
type Tree = BTreeMap<String, (String, i32)>;

/// The server's tree under `root` (inclusive), read from the model at this instant.
fn server_tree(faults: &SimFaults, root: &str) -> Tree {
    faults.server().with_model(|model| {
        let mut tree = Tree::new();
        let mut pending = vec![root.to_owned()];
        while let Some(path) = pending.pop() {
            if let Some((data, stat)) = model.node(&path) {
                tree.insert(path.clone(), (text(&data), stat.version));
            }
            for child in model.children(&path).unwrap_or_default() {
                pending.push(paths::join(&path, &child));
            }
        }
        tree
    })
}

/// A cache's content in the tests' form.
fn cache_tree(nodes: &[ChildData]) -> Tree {
    nodes
        .iter()
        .map(|n| {
            (
                n.path().to_owned(),
                (text(n.data().unwrap_or_default()), n.stat().version),
            )
        })
        .collect()
}

/// The tree an event log describes: replays it onto an empty map, checking on the way that
/// each path's history is valid (no create of a present node, no change or delete of an
/// absent one, versions only moving forward within an incarnation).
fn replay(log: &[CacheEvent]) -> Tree {
    let mut tree: BTreeMap<String, (String, i32, i64, i64)> = BTreeMap::new();
    for event in log {
        match event {
            CacheEvent::Created { node } => {
                let previous = tree.insert(node.path().to_owned(), entry(node));
                assert!(previous.is_none(), "created twice: {node:?}");
            }
            CacheEvent::Changed { old, node } => {
                let previous = tree
                    .insert(node.path().to_owned(), entry(node))
                    .unwrap_or_else(|| panic!("changed while absent: {node:?}"));
                assert_eq!(previous.2, node.stat().czxid, "changed across incarnations");
                assert_eq!(previous.3, old.stat().mzxid, "old value is the cached one");
                assert!(
                    node.stat().mzxid > previous.3,
                    "changes move forward: {old:?} -> {node:?}"
                );
            }
            CacheEvent::Deleted { old } => {
                let previous = tree.remove(old.path());
                assert!(previous.is_some(), "deleted while absent: {old:?}");
            }
            _ => {}
        }
    }
    tree.into_iter()
        .map(|(path, (data, version, _, _))| (path, (data, version)))
        .collect()
}

fn entry(node: &ChildData) -> (String, i32, i64, i64) {
    (
        text(node.data().unwrap_or_default()),
        node.stat().version,
        node.stat().czxid,
        node.stat().mzxid,
    )
}

/// Node data as text, for readable failures.
fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// The differences between a cache's tree and the server's, one line each.
fn diff(cache: &Tree, server: &Tree) -> String {
    let mut lines = Vec::new();
    for (path, value) in server {
        match cache.get(path) {
            None => lines.push(format!("missing {path} {value:?}")),
            Some(cached) if cached != value => {
                lines.push(format!("stale {path} cached {cached:?} server {value:?}"));
            }
            Some(_) => {}
        }
    }
    for (path, value) in cache {
        if !server.contains_key(path) {
            lines.push(format!("extra {path} {value:?}"));
        }
    }
    lines.join("\n")
}

/// Waits until `states` reports `Reconnected`.
async fn reconnected(states: &mut ListenerStream<ConnectionState>) -> Res {
    within("a reconnect", WAIT, async {
        while let Some(state) = states.next().await {
            if state == ConnectionState::Reconnected {
                return Ok(());
            }
        }
        Err::<(), Box<dyn Error>>("the state stream ended".into())
    })
    .await?
}

/// Expires `zk`'s session at the server, then waits until its client has a new one.
async fn expire_and_renew(client: &SimClient, zk: &CuratorFramework) -> Res {
    let old = session_of(zk).await?;
    assert!(client.faults().expire_session(old), "the session was alive");
    until("a new session", WAIT, || async {
        zk.session_id().is_some_and(|id| id != old)
    })
    .await
}

/// Waits until the writers made `more` operations.
async fn ops_pass(done: &AtomicUsize, more: usize) -> Res {
    let target = done.load(Ordering::SeqCst) + more;
    until("the writers to make progress", WAIT, || async {
        done.load(Ordering::SeqCst) >= target
    })
    .await
}

/// The caches of the convergence test, on a host of their own.
struct Converging {
    persistent_client: CuratorFramework,
    one_shot_client: CuratorFramework,
    tree_client: CuratorFramework,
    children_client: CuratorFramework,
    persistent: CuratorCache,
    one_shot: CuratorCache,
    tree: TreeCache,
    children: PathChildrenCache,
    persistent_log: Recorder,
    one_shot_log: Recorder,
    tree_log: Recorder,
    children_log: ListenerStream<PathChildrenCacheEvent>,
}

/// Holds the writers, then waits until every cache equals the server's tree; lets the writers
/// go on afterwards.
async fn checkpoint(
    what: &str,
    faults: &SimFaults,
    root: &str,
    control: (&watch::Sender<bool>, &AtomicUsize),
    caches: &[(&str, &dyn Fn() -> Tree)],
) -> Res {
    let (running, parked) = control;
    running.send_replace(false);
    until("the writers to stop", WAIT, || async {
        parked.load(Ordering::SeqCst) == 2
    })
    .await?;
    let expected = server_tree(faults, root);
    for (name, content) in caches {
        let end = tokio::time::Instant::now() + WAIT;
        loop {
            let seen = content();
            if seen == expected {
                break;
            }
            assert!(
                tokio::time::Instant::now() < end,
                "{what}: {name} does not converge\n{}",
                diff(&seen, &expected)
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
    running.send_replace(true);
    Ok(())
}

/// Pulls events until their replay equals `expected`; `Initialized` came exactly once.
async fn replay_converges(name: &str, recorder: &mut Recorder, expected: &Tree) -> Res {
    let end = tokio::time::Instant::now() + WAIT;
    while replay(&recorder.log) != *expected {
        assert!(
            tokio::time::Instant::now() < end,
            "{name}: the event log does not replay to the server's tree\n{}",
            diff(&replay(&recorder.log), expected)
        );
        let _ = tokio::time::timeout(Duration::from_millis(200), recorder.next()).await;
    }
    let initialized = recorder.log.iter().filter(|e| initialized(e)).count();
    assert_eq!(initialized, 1, "{name}: Initialized exactly once");
    Ok(())
}

fn children_only(tree: &Tree, root: &str) -> Tree {
    tree.iter()
        .filter(|(path, _)| paths::parent(path) == Some(root))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn value(node: &ChildData) -> (String, i32) {
    (text(node.data().unwrap_or_default()), node.stat().version)
}

#[test]
fn caches_converge_through_reconnects_restarts_and_expiries() {
    const ROOT: &str = "/convergence";
    for seed in SEEDS {
        // Sessions that outlast the partitions (the model's tick bounds them to 10 s).
        let mut sim = Simulation::builder(seed)
            .session_timeout(Duration::from_secs(10))
            .build();
        // The caches' clients on a host of their own, so they can be partitioned from the
        // server while the writers go on, and their sessions expired at the server.
        let mut caches = Elsewhere::host(&mut sim, "caches", |client| async move {
            let seeded = client.connect().await?;
            seeded
                .create()
                .creating_parents_if_needed()
                .for_path(&format!("{ROOT}/a/b"), b"seed")
                .await?;
            seeded.close().await?;
            let clients = [
                client.connect().await?,
                client.connect().await?,
                client.connect().await?,
                client.connect().await?,
            ];
            let persistent = CuratorCache::builder(clients[0].clone(), ROOT)
                .with_mode(WatchMode::Persistent)
                .build()?;
            let one_shot = CuratorCache::builder(clients[1].clone(), ROOT)
                .with_mode(WatchMode::OneShot)
                .build()?;
            let tree = TreeCache::builder(clients[2].clone(), ROOT).build()?;
            let children = PathChildrenCache::builder(clients[3].clone(), ROOT)
                .with_start_mode(StartMode::PostInitializedEvent)
                .build()?;
            let converging = Converging {
                persistent_log: Recorder::new(&persistent.listenable()),
                one_shot_log: Recorder::new(&one_shot.listenable()),
                tree_log: Recorder::new(&tree.listenable()),
                children_log: children.listenable().stream(),
                persistent_client: clients[0].clone(),
                one_shot_client: clients[1].clone(),
                tree_client: clients[2].clone(),
                children_client: clients[3].clone(),
                persistent,
                one_shot,
                tree,
                children,
            };
            converging.persistent.start().await?;
            converging.one_shot.start().await?;
            converging.tree.start().await?;
            converging.children.start().await?;
            Ok((converging, clients.to_vec()))
        });
        sim.client("writers", move |client| async move {
            let mut c = caches.handed().await?;
            let faults = client.faults();
            for (cache, log) in [
                ("persistent", &mut c.persistent_log),
                ("one-shot", &mut c.one_shot_log),
                ("tree", &mut c.tree_log),
            ] {
                log.until(&format!("{cache} Initialized"), initialized)
                    .await?;
            }
            assert_eq!(c.persistent.active_mode(), Some(WatchMode::Persistent));
            assert_eq!(c.one_shot.active_mode(), Some(WatchMode::OneShot));

            let writers = [client.connect().await?, client.connect().await?];
            let stop = Arc::new(AtomicBool::new(false));
            let done = Arc::new(AtomicUsize::new(0));
            let phase = Arc::new(AtomicUsize::new(0));
            let (running, running_rx) = watch::channel(true);
            let parked = Arc::new(AtomicUsize::new(0));
            let control = Control {
                phase: phase.clone(),
                stop: stop.clone(),
                done: done.clone(),
                running: running_rx,
                parked: parked.clone(),
            };
            let mutators = [
                tokio::spawn(mutate(
                    writers[0].clone(),
                    ROOT.to_owned(),
                    seed,
                    control.clone(),
                )),
                tokio::spawn(mutate(
                    writers[1].clone(),
                    ROOT.to_owned(),
                    seed.wrapping_add(1),
                    control,
                )),
            ];
            ops_pass(&done, 15).await?;

            // A partition while the writers go on, then the same sessions come back: whatever
            // the watches carried during the partition is lost.
            faults.partition("caches");
            phase.store(1, Ordering::SeqCst);
            ops_pass(&done, 25).await?;
            phase.store(2, Ordering::SeqCst);
            faults.cut("caches");
            faults.repair("caches");
            ops_pass(&done, 15).await?;
            let whole = |cache: &CuratorCache| cache_tree(&cache.snapshot());
            let views: [(&str, &dyn Fn() -> Tree); 3] = [
                ("the persistent-watch CuratorCache", &|| {
                    whole(&c.persistent)
                }),
                ("the one-shot CuratorCache", &|| whole(&c.one_shot)),
                ("the TreeCache", &|| cache_tree(&c.tree.snapshot())),
            ];
            let hold = (&running, &*parked);
            checkpoint("after a partition", faults, ROOT, hold, &views).await?;

            // A server restart: every client reconnects to its session.
            faults.restart_server();
            ops_pass(&done, 15).await?;
            checkpoint("after a server restart", faults, ROOT, hold, &views).await?;

            // A partition during which the server expires two sessions.
            faults.partition("caches");
            phase.store(3, Ordering::SeqCst);
            let mut expired = Vec::new();
            for zk in [&c.persistent_client, &c.tree_client] {
                let id = zk.session_id().ok_or("a session")?;
                assert!(faults.expire_session(id), "the session was alive");
                expired.push(id);
            }
            ops_pass(&done, 25).await?;
            phase.store(4, Ordering::SeqCst);
            faults.cut("caches");
            faults.repair("caches");
            ops_pass(&done, 10).await?;

            // Expiries of connected sessions, while the writers go on.
            phase.store(5, Ordering::SeqCst);
            faults.expire_session(session_of(&c.one_shot_client).await?);
            ops_pass(&done, 10).await?;
            faults.expire_session(session_of(&c.children_client).await?);
            ops_pass(&done, 15).await?;
            phase.store(6, Ordering::SeqCst);
            ops_pass(&done, 5).await?;

            stop.store(true, Ordering::SeqCst);
            for mutator in mutators {
                mutator.await?;
            }
            let expected = server_tree(faults, ROOT);
            until("the persistent-watch cache to converge", WAIT, || async {
                cache_tree(&c.persistent.snapshot()) == expected
            })
            .await?;
            until("the one-shot CuratorCache to converge", WAIT, || async {
                cache_tree(&c.one_shot.snapshot()) == expected
            })
            .await?;
            until("the TreeCache to converge", WAIT, || async {
                cache_tree(&c.tree.snapshot()) == expected
            })
            .await?;
            let expected_children = children_only(&expected, ROOT);
            until("the PathChildrenCache to converge", WAIT, || async {
                cache_tree(&c.children.current_data()) == expected_children
            })
            .await?;
            assert_ne!(c.persistent_client.session_id(), Some(expired[0]));
            assert_ne!(c.tree_client.session_id(), Some(expired[1]));

            replay_converges("persistent", &mut c.persistent_log, &expected).await?;
            replay_converges("one-shot", &mut c.one_shot_log, &expected).await?;
            replay_converges("tree", &mut c.tree_log, &expected).await?;

            // PathChildrenCache: its own events replay to the children.
            let mut replayed = Tree::new();
            let mut initialized = 0;
            let end = tokio::time::Instant::now() + WAIT;
            while replayed != expected_children {
                assert!(
                    tokio::time::Instant::now() < end,
                    "children events do not replay: {}",
                    diff(&replayed, &expected_children)
                );
                let Ok(Some(event)) =
                    tokio::time::timeout(Duration::from_millis(200), c.children_log.next()).await
                else {
                    continue;
                };
                match event {
                    PathChildrenCacheEvent::ChildAdded(node) => {
                        let added = replayed.insert(node.path().to_owned(), value(&node));
                        assert!(added.is_none(), "added twice: {node:?}");
                    }
                    PathChildrenCacheEvent::ChildUpdated(node) => {
                        let updated = replayed.insert(node.path().to_owned(), value(&node));
                        assert!(updated.is_some(), "updated while absent: {node:?}");
                    }
                    PathChildrenCacheEvent::ChildRemoved(node) => {
                        let removed = replayed.remove(node.path());
                        assert!(removed.is_some(), "removed while absent: {node:?}");
                    }
                    PathChildrenCacheEvent::Initialized(_) => initialized += 1,
                    other => panic!("unexpected {other:?}"),
                }
            }
            assert!(initialized <= 1);

            c.persistent.close().await?;
            c.one_shot.close().await?;
            c.tree.close().await?;
            c.children.close().await?;
            for zk in writers {
                zk.close().await?;
            }
            drop(caches);
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn a_node_cache_catches_up_after_a_partition_and_a_new_session() {
    const PATH: &str = "/nc-faults/node";
    for seed in SEEDS {
        let mut sim = sim(seed);
        let mut away = Elsewhere::host(&mut sim, "cache", |client| async move {
            let seeded = client.connect().await?;
            seeded
                .create()
                .creating_parents_if_needed()
                .for_path(PATH, b"one")
                .await?;
            seeded.close().await?;
            let zk = client.connect().await?;
            let cache = NodeCache::builder(zk.clone(), PATH).build()?;
            let events = Recorder::new(&cache.listenable());
            cache.start().await?;
            Ok(((cache, events, zk.clone()), vec![zk]))
        });
        sim.client("writer", move |client| async move {
            let (cache, mut events, zk) = away.handed().await?;
            let writer = client.connect().await?;
            events.until("Initialized", initialized).await?;

            // A change the watch cannot carry: made while the cache's connection is cut.
            client.faults().partition("cache");
            writer.set_data().for_path(PATH, b"two").await?;
            client.faults().cut("cache");
            client.faults().repair("cache");
            match events.next().await? {
                CacheEvent::Changed { old, node } => {
                    assert_eq!(old.data(), Some(&b"one"[..]));
                    assert_eq!(node.data(), Some(&b"two"[..]));
                }
                other => panic!("expected the missed change, got {other:?}"),
            }

            // A new session: the watch is gone with the old one, and the cache sets it again.
            client.faults().expire_session(session_of(&zk).await?);
            writer.delete().for_path(PATH).await?;
            match events.next().await? {
                CacheEvent::Deleted { old } => assert_eq!(old.data(), Some(&b"two"[..])),
                other => panic!("expected the deletion, got {other:?}"),
            }
            assert!(cache.current_data().is_none());
            cache.close().await?;
            writer.close().await?;
            drop(away);
            Ok(())
        });
        run(&mut sim);
    }
}

/// Takes watcher events until one `matches`; returns what came before it.
async fn heard(
    what: &str,
    stream: &mut ListenerStream<PersistentWatcherEvent>,
    matches: impl Fn(&PersistentWatcherEvent) -> bool,
) -> Res<Vec<PersistentWatcherEvent>> {
    let mut seen = Vec::new();
    let found = tokio::time::timeout(WAIT, async {
        while let Some(event) = stream.next().await {
            if matches(&event) {
                return true;
            }
            seen.push(event);
        }
        false
    })
    .await;
    if found != Ok(true) {
        return Err(format!("{what} was not heard; saw {seen:#?}").into());
    }
    Ok(seen)
}

fn reset(event: &PersistentWatcherEvent) -> bool {
    matches!(event, PersistentWatcherEvent::Reset)
}

fn watched(path: &str, kind: EventType) -> impl Fn(&PersistentWatcherEvent) -> bool {
    let path = path.to_owned();
    move |event| {
        matches!(event, PersistentWatcherEvent::Watched(event)
            if event.path == path && event.event_type == kind)
    }
}

async fn create(client: &CuratorFramework, path: &str) -> Res {
    client
        .create()
        .creating_parents_if_needed()
        .for_path(path, b"")
        .await?;
    Ok(())
}

#[test]
fn the_watch_survives_three_session_expiries() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let zk = client.connect().await?;
            let root = "/pw-expiry";
            let node = format!("{root}/a");
            let watcher = PersistentWatcher::builder(zk.clone(), root).build()?;
            let mut events = watcher.stream();
            watcher.start().await?;
            heard("the first reset", &mut events, reset).await?;
            create(&zk, &node).await?;
            let creation = watched(&node, EventType::NodeCreated);
            heard("a's creation", &mut events, creation).await?;

            for round in 1..=3u8 {
                let old = session_of(&zk).await?;
                expire_and_renew(&client, &zk).await?;
                // Writes made before the `Reset` may be missed; after it they may not.
                heard("the reset on the new session", &mut events, reset).await?;
                assert_ne!(zk.session_id(), Some(old), "a new session");
                zk.set_data().for_path(&node, [round]).await?;
                let change = watched(&node, EventType::NodeDataChanged);
                heard("the change on the new session", &mut events, change).await?;
            }
            watcher.close().await?;
            zk.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn the_watch_survives_an_expiry_at_the_server() {
    const ROOT: &str = "/pw-server-expiry";
    for seed in SEEDS {
        let mut sim = sim(seed);
        // The watcher's client on a host of its own, kept away while the server expires its
        // session.
        let mut away = Elsewhere::host(&mut sim, "watcher", |client| async move {
            let zk = client.connect().await?;
            let watcher = PersistentWatcher::builder(zk.clone(), ROOT)
                .recursive(false)
                .build()?;
            let events = watcher.stream();
            watcher.start().await?;
            Ok(((watcher, events, zk.clone()), vec![zk]))
        });
        sim.client("writer", move |client| async move {
            let (watcher, mut events, zk) = away.handed().await?;
            let writer = client.connect().await?;
            heard("the first reset", &mut events, reset).await?;

            let old = session_of(&zk).await?;
            client.faults().partition("watcher");
            assert!(client.faults().expire_session(old), "the session was alive");
            client.faults().repair("watcher");
            heard("the reset on the new session", &mut events, reset).await?;
            assert_ne!(zk.session_id(), Some(old));
            create(&writer, ROOT).await?;
            let creation = watched(ROOT, EventType::NodeCreated);
            heard("the root's creation", &mut events, creation).await?;
            watcher.close().await?;
            writer.close().await?;
            drop(away);
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn the_watch_survives_a_server_restart() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let zk = client.connect().await?;
            let root = "/pw-restart";
            let watcher = PersistentWatcher::builder(zk.clone(), root).build()?;
            let mut events = watcher.stream();
            watcher.start().await?;
            heard("the first reset", &mut events, reset).await?;

            client.faults().restart_server();
            heard("the reset after the restart", &mut events, reset).await?;
            create(&zk, root).await?;
            let creation = watched(root, EventType::NodeCreated);
            heard("the root's creation", &mut events, creation).await?;
            watcher.close().await?;
            zk.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}

/// One cache of the resync tests: its name, its client, its events from the start (the
/// initial load consumed by the director), and the cache itself, kept alive.
struct UnderTest {
    name: &'static str,
    client: CuratorFramework,
    events: Recorder,
    _cache: Box<dyn std::any::Any>,
}

/// The resync tests' caches, each on its own session.
async fn resync_caches(client: &SimClient, root: &str) -> Res<Vec<UnderTest>> {
    let mut out = Vec::new();
    for (name, mode) in [
        ("persistent", Some(WatchMode::Persistent)),
        ("one-shot", Some(WatchMode::OneShot)),
        ("tree", None),
    ] {
        let zk = client.connect().await?;
        let (events, cache): (Recorder, Box<dyn std::any::Any>) = match mode {
            Some(mode) => {
                let cache = CuratorCache::builder(zk.clone(), root)
                    .with_mode(mode)
                    .build()?;
                let events = Recorder::new(&cache.listenable());
                cache.start().await?;
                (events, Box::new(cache))
            }
            None => {
                let cache = TreeCache::builder(zk.clone(), root).build()?;
                let events = Recorder::new(&cache.listenable());
                cache.start().await?;
                (events, Box::new(cache))
            }
        };
        out.push(UnderTest {
            name,
            client: zk,
            events,
            _cache: cache,
        });
    }
    Ok(out)
}

fn describe(event: &CacheEvent) -> String {
    match event {
        CacheEvent::Created { node } => format!("created {} {:?}", node.name(), node.data()),
        CacheEvent::Changed { old, node } => {
            format!(
                "changed {} {:?} -> {:?}",
                node.name(),
                old.data(),
                node.data()
            )
        }
        CacheEvent::Deleted { old } => format!("deleted {}", old.name()),
        other => format!("{other:?}"),
    }
}

/// The events `recorder` yields are exactly `expected` (in any order), and nothing follows.
async fn expect_exactly(name: &str, recorder: &mut Recorder, expected: &[String]) -> Res {
    let mut seen = BTreeSet::new();
    while seen.len() < expected.len() {
        seen.insert(describe(&recorder.next().await?));
    }
    let extra = recorder.drain(Duration::from_millis(500)).await;
    let expected: BTreeSet<String> = expected.iter().cloned().collect();
    assert_eq!(seen, expected, "{name}");
    assert!(
        extra.is_empty(),
        "{name}: more events than the difference: {extra:?}"
    );
    Ok(())
}

#[test]
fn a_partition_yields_exactly_the_missed_changes() {
    const ROOT: &str = "/resync-partition";
    for seed in SEEDS {
        let mut sim = sim(seed);
        let mut away = Elsewhere::host(&mut sim, "caches", |client| async move {
            let seeded = client.connect().await?;
            for (node, data) in [("keep", "k"), ("change", "c1"), ("gone", "g")] {
                seeded
                    .create()
                    .creating_parents_if_needed()
                    .for_path(&format!("{ROOT}/{node}"), data)
                    .await?;
            }
            seeded.close().await?;
            let caches = resync_caches(&client, ROOT).await?;
            let clients = caches.iter().map(|c| c.client.clone()).collect();
            Ok((caches, clients))
        });
        sim.client("writer", move |client| async move {
            let mut caches = away.handed().await?;
            for cache in &mut caches {
                cache.events.until("Initialized", initialized).await?;
            }
            let writer = client.connect().await?;
            let mut states: Vec<_> = caches
                .iter()
                .map(|c| c.client.connection_state_stream())
                .collect();

            client.faults().partition("caches");
            writer
                .set_data()
                .for_path(&format!("{ROOT}/change"), b"c2")
                .await?;
            writer.delete().for_path(&format!("{ROOT}/gone")).await?;
            writer
                .create()
                .for_path(&format!("{ROOT}/new"), b"n")
                .await?;
            client.faults().cut("caches");
            client.faults().repair("caches");
            for states in &mut states {
                reconnected(states).await?;
            }
            let expected = [
                r"changed change Some([99, 49]) -> Some([99, 50])".to_owned(),
                "deleted gone".to_owned(),
                r"created new Some([110])".to_owned(),
            ];
            for cache in &mut caches {
                expect_exactly(cache.name, &mut cache.events, &expected).await?;
            }
            writer.close().await?;
            drop(away);
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn a_new_session_with_nothing_changed_yields_no_events() {
    const ROOT: &str = "/resync-expiry";
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let writer = client.connect().await?;
            for node in ["a", "a/b", "c"] {
                writer
                    .create()
                    .creating_parents_if_needed()
                    .for_path(&format!("{ROOT}/{node}"), node)
                    .await?;
            }
            let mut caches = resync_caches(&client, ROOT).await?;
            for cache in &mut caches {
                cache.events.until("Initialized", initialized).await?;
            }
            for cache in &caches {
                expire_and_renew(&client, &cache.client).await?;
            }
            // A marker written after the new sessions: each cache reports it, and nothing
            // else.
            writer
                .create()
                .for_path(&format!("{ROOT}/marker"), b"m")
                .await?;
            for cache in &mut caches {
                let expected = [r"created marker Some([109])".to_owned()];
                expect_exactly(cache.name, &mut cache.events, &expected).await?;
            }
            for cache in caches {
                cache.client.close().await?;
            }
            writer.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}

/// The namespace of every client of the `wait_for` tests: the caches and the writer see the
/// same paths.
const NAMESPACE: &str = "wait-for";

/// What the server holds under the root: path → data.
type Model = BTreeMap<String, Vec<u8>>;

/// A started client under [`NAMESPACE`], with the session timeout `session`.
async fn namespaced(client: &SimClient, session: Duration) -> Res<CuratorFramework> {
    let zk = client
        .builder()
        .namespace(NAMESPACE)
        .session_timeout(session)
        .build()?;
    zk.start().await?;
    Ok(zk)
}

/// Every kind of cache, over one root.
struct Caches {
    persistent: CuratorCache,
    one_shot: CuratorCache,
    tree: TreeCache,
    children: PathChildrenCache,
    node: NodeCache,
}

impl Caches {
    /// The persistent-mode cache on `persistent`, the others on `client`.
    async fn start_on(
        persistent: &CuratorFramework,
        client: &CuratorFramework,
        root: &str,
    ) -> Res<Caches> {
        let caches = Caches {
            persistent: CuratorCache::builder(persistent.clone(), root)
                .with_mode(WatchMode::Persistent)
                .build()?,
            one_shot: CuratorCache::builder(client.clone(), root)
                .with_mode(WatchMode::OneShot)
                .build()?,
            tree: TreeCache::builder(client.clone(), root).build()?,
            children: PathChildrenCache::builder(client.clone(), root).build()?,
            node: NodeCache::builder(client.clone(), root).build()?,
        };
        caches.persistent.start().await?;
        caches.one_shot.start().await?;
        caches.tree.start().await?;
        caches.children.start().await?;
        caches.node.start().await?;
        Ok(caches)
    }

    /// Waits on every cache at once, each for `zxid`.
    async fn wait_for(
        &self,
        zxid: i64,
        timeout: Duration,
    ) -> [(&'static str, Result<(), ZkError>); 6] {
        let typed = self.persistent.typed::<String>();
        let (a, b, c, d, e, f) = tokio::join!(
            self.persistent.wait_for(zxid, timeout),
            self.one_shot.wait_for(zxid, timeout),
            self.tree.wait_for(zxid, timeout),
            self.children.wait_for(zxid, timeout),
            self.node.wait_for(zxid, timeout),
            typed.wait_for(zxid, timeout),
        );
        [
            ("persistent CuratorCache", a),
            ("one-shot CuratorCache", b),
            ("TreeCache", c),
            ("PathChildrenCache", d),
            ("NodeCache", e),
            ("TypedCache", f),
        ]
    }

    /// Waits on every cache for `zxid`, then asserts each equals `model` (in its scope).
    async fn wait_and_check(&self, zxid: i64, root: &str, model: &Model, context: &str) {
        for (name, result) in self.wait_for(zxid, WAIT).await {
            result.unwrap_or_else(|error| panic!("{context}: {name}.wait_for({zxid:#x}): {error}"));
        }
        if let Err(stale) = self.check(root, model) {
            panic!("{context}: after wait_for({zxid:#x}), {stale}");
        }
    }

    /// `Ok` when every cache shows `model` (its part of it); else which cache differs, and how.
    fn check(&self, root: &str, model: &Model) -> Result<(), String> {
        let whole = |name: &str, nodes: Vec<ChildData>| -> Result<(), String> {
            same(name, &to_model(nodes), model)
        };
        whole("persistent CuratorCache", self.persistent.snapshot())?;
        whole("one-shot CuratorCache", self.one_shot.snapshot())?;
        whole("TreeCache", self.tree.snapshot())?;
        let children: Model = model
            .iter()
            .filter(|(path, _)| paths::parent(path) == Some(root))
            .map(|(path, data)| (path.clone(), data.clone()))
            .collect();
        same(
            "PathChildrenCache",
            &to_model(self.children.current_data()),
            &children,
        )?;
        let node: Model = model
            .get_key_value(root)
            .map(|(path, data)| (path.clone(), data.clone()))
            .into_iter()
            .collect();
        same(
            "NodeCache",
            &to_model(self.node.current_data().into_iter().collect()),
            &node,
        )
    }
}

fn to_model(nodes: Vec<ChildData>) -> Model {
    nodes
        .into_iter()
        .map(|node| {
            let data = node.data().unwrap_or_default().to_vec();
            (node.path().to_owned(), data)
        })
        .collect()
}

fn same(name: &str, cached: &Model, expected: &Model) -> Result<(), String> {
    if cached == expected {
        return Ok(());
    }
    let mut differences = Vec::new();
    for (path, data) in expected {
        match cached.get(path) {
            None => differences.push(format!("{path} missing")),
            Some(held) if held != data => differences.push(format!(
                "{path} holds {:?}, not {:?}",
                String::from_utf8_lossy(held),
                String::from_utf8_lossy(data)
            )),
            Some(_) => {}
        }
    }
    for path in cached.keys().filter(|path| !expected.contains_key(*path)) {
        differences.push(format!("{path} still cached"));
    }
    Err(format!("{name} is stale: {}", differences.join(", ")))
}

/// One random write through `writer` (creates and deletes of children and of deep nodes, data
/// changes at any depth), applied to `model` too; returns the zxid to wait for.
async fn random_write(
    writer: &CuratorFramework,
    root: &str,
    model: &mut Model,
    rng: &mut StdRng,
    round: usize,
) -> Res<i64> {
    let data = format!("v{round}").into_bytes();
    let leaves: Vec<String> = model
        .keys()
        .filter(|path| *path != root && !model.keys().any(|p| paths::parent(p) == Some(path)))
        .cloned()
        .collect();
    Ok(match rng.random_range(0..5) {
        0 | 1 if !model.is_empty() => {
            // Any node's data, the root's included; the stat says the write's zxid.
            let nodes: Vec<&String> = model.keys().collect();
            let path = nodes[rng.random_range(0..nodes.len())].clone();
            let stat = writer.set_data().for_path(&path, &data).await?;
            model.insert(path, data);
            stat.mzxid
        }
        2 if !leaves.is_empty() => {
            let path = &leaves[rng.random_range(0..leaves.len())];
            writer.delete().for_path(path).await?;
            model.remove(path);
            // A delete returns no stat: the writer's last zxid covers it.
            writer.last_zxid()
        }
        3 => {
            // A deep node, with the parents it needs (made with empty data).
            let depth = rng.random_range(1..4);
            let mut path = root.to_owned();
            for level in 0..depth {
                let name = format!("d{}", rng.random_range(0..3) + level * 3);
                path = paths::join(&path, &name);
                model.entry(path.clone()).or_default();
            }
            path = paths::join(&path, &format!("n{round}"));
            let (_, stat) = writer
                .create()
                .creating_parents_if_needed()
                .for_path(&path, &data)
                .with_stat()
                .await?;
            model.insert(path, data);
            stat.czxid
        }
        _ => {
            let path = paths::join(root, &format!("c{round}"));
            let (_, stat) = writer.create().for_path(&path, &data).with_stat().await?;
            model.insert(path, data);
            stat.czxid
        }
    })
}

/// A root made by the writer (a persistent node, so that no container of a cache's making is
/// reaped under the test), in the model.
async fn make_root(writer: &CuratorFramework, root: &str) -> Res<Model> {
    writer
        .create()
        .creating_parents_if_needed()
        .for_path(root, b"root")
        .await?;
    Ok(Model::from([(root.to_owned(), b"root".to_vec())]))
}

/// A reader client (under [`NAMESPACE`]) on a host of its own, and, once the director made the
/// root and says so, caches of it: every kind, the persistent one on `persistent` (a client of
/// its own when `two_clients`).
fn reader_host(
    sim: &mut Simulation<'static>,
    root: &'static str,
    session: Duration,
    two_clients: bool,
    slow: Option<SlowListener>,
) -> (
    Elsewhere<(Caches, Vec<CuratorFramework>)>,
    tokio::sync::oneshot::Sender<()>,
) {
    let (made, root_made) = tokio::sync::oneshot::channel::<()>();
    let away = Elsewhere::host(sim, "reader", move |client| async move {
        let mut readers = vec![namespaced(&client, session).await?];
        if two_clients {
            readers.push(namespaced(&client, session).await?);
        }
        if let Some(slow) = slow {
            for reader in &readers {
                slow.add_to(reader);
            }
        }
        within("the root", WAIT, root_made).await??;
        let caches = Caches::start_on(&readers[0], &readers[readers.len() - 1], root).await?;
        Ok(((caches, readers.clone()), readers))
    });
    (away, made)
}

#[test]
fn wait_for_sees_writes_made_while_the_connection_was_down() {
    const ROOT: &str = "/wait-for-partition";
    for seed in SEEDS {
        let mut sim = Simulation::builder(seed)
            .session_timeout(Duration::from_secs(10))
            .build();
        let (mut away, root_made) =
            reader_host(&mut sim, ROOT, Duration::from_secs(10), false, None);
        sim.client("writer", move |client| async move {
            let mut rng = StdRng::seed_from_u64(seed);
            let writer = namespaced(&client, Duration::from_secs(10)).await?;
            let mut model = make_root(&writer, ROOT).await?;
            let _ = root_made.send(());
            let (caches, readers) = away.handed().await?;
            let reader = &readers[0];

            for round in 0..12 {
                let session = session_of(reader).await?;
                client.faults().partition("reader");
                let mut zxid = 0;
                for step in 0..3 {
                    zxid =
                        random_write(&writer, ROOT, &mut model, &mut rng, round * 3 + step).await?;
                }
                // The waits start while the link is black-holed, and the link comes back
                // under them.
                let (results, ()) = tokio::join!(caches.wait_for(zxid, WAIT), async {
                    client.faults().cut("reader");
                    client.faults().repair("reader");
                });
                for (name, result) in results {
                    result.unwrap_or_else(|error| panic!("round {round}: {name}: {error}"));
                }
                if let Err(stale) = caches.check(ROOT, &model) {
                    panic!("round {round}: after a reconnect, {stale}");
                }
                assert_eq!(
                    reader.session_id(),
                    Some(session),
                    "the same session throughout"
                );
            }
            writer.close().await?;
            drop(away);
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn wait_for_times_out_while_the_cache_cannot_reach_the_server() {
    const ROOT: &str = "/wait-for-timeout";
    for seed in SEEDS {
        let mut sim = Simulation::builder(seed)
            .session_timeout(Duration::from_secs(10))
            .build();
        let (mut away, root_made) =
            reader_host(&mut sim, ROOT, Duration::from_secs(10), false, None);
        sim.client("writer", move |client| async move {
            let writer = namespaced(&client, Duration::from_secs(10)).await?;
            let mut model = make_root(&writer, ROOT).await?;
            let _ = root_made.send(());
            let (caches, _) = away.handed().await?;
            caches
                .wait_and_check(writer.last_zxid(), ROOT, &model, "loaded")
                .await;

            client.faults().partition("reader");
            let stat = writer.set_data().for_path(ROOT, b"unseen").await?;
            model.insert(ROOT.to_owned(), b"unseen".to_vec());
            let waited = Duration::from_millis(700);
            for (name, result) in caches.wait_for(stat.mzxid, waited).await {
                assert_eq!(
                    result,
                    Err(ZkError::Timeout { waited }),
                    "{name}: a black-holed link cannot catch up"
                );
            }
            assert!(
                caches.check(ROOT, &model).is_err(),
                "nothing could reach the caches"
            );

            client.faults().cut("reader");
            client.faults().repair("reader");
            caches
                .wait_and_check(stat.mzxid, ROOT, &model, "after the link healed")
                .await;
            writer.close().await?;
            drop(away);
            Ok(())
        });
        run(&mut sim);
    }
}

/// Expires `zk`'s session at the server while its host is partitioned (it hears of it once
/// repaired).
async fn expire_behind(client: &SimClient, zks: &[CuratorFramework], host: &str) -> Res {
    let mut sessions = Vec::new();
    for zk in zks {
        sessions.push(session_of(zk).await?);
    }
    client.faults().partition(host);
    for session in sessions {
        assert!(
            client.faults().expire_session(session),
            "the session was alive"
        );
    }
    Ok(())
}

#[test]
fn wait_for_does_not_answer_from_the_tree_of_an_expired_session() {
    const ROOT: &str = "/wait-for-expiry";
    for seed in SEEDS {
        let mut sim = Simulation::builder(seed)
            .session_timeout(Duration::from_secs(10))
            .build();
        let (mut away, root_made) =
            reader_host(&mut sim, ROOT, Duration::from_secs(4), false, None);
        sim.client("writer", move |client| async move {
            let mut rng = StdRng::seed_from_u64(seed);
            let writer = namespaced(&client, Duration::from_secs(10)).await?;
            let mut model = make_root(&writer, ROOT).await?;
            for round in 0..6 {
                random_write(&writer, ROOT, &mut model, &mut rng, round).await?;
            }
            let _ = root_made.send(());
            let (caches, readers) = away.handed().await?;
            let reader = &readers[0];
            caches
                .wait_and_check(writer.last_zxid(), ROOT, &model, "loaded")
                .await;

            for round in 0..3 {
                let session = session_of(reader).await?;
                if round == 1 {
                    // An expiry the client hears of at once (its connection closes).
                    client.faults().expire_session(session);
                } else {
                    // An expiry behind a black-holed link.
                    expire_behind(&client, std::slice::from_ref(reader), "reader").await?;
                }
                // Writes the old session's watches never hear of: every kind, the root's
                // children deleted and created again.
                let mut zxid = 0;
                for step in 0..6 {
                    zxid =
                        random_write(&writer, ROOT, &mut model, &mut rng, 100 + round * 10 + step)
                            .await?;
                }
                client.faults().repair("reader");
                caches
                    .wait_and_check(zxid, ROOT, &model, &format!("expiry {round}"))
                    .await;
                assert_ne!(reader.session_id(), Some(session), "a new session");
            }
            writer.close().await?;
            drop(away);
            Ok(())
        });
        run(&mut sim);
    }
}

/// A slow connection-state listener, added before the caches': it holds `Reconnected` up on
/// its way to every later listener, the caches' own, until the director lets it go.
#[derive(Clone)]
struct SlowListener {
    gate: Arc<tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<()>>>,
    held: Arc<AtomicUsize>,
}

impl SlowListener {
    fn add_to(&self, zk: &CuratorFramework) {
        let slow = self.clone();
        zk.connection_state_listenable()
            .add_async_listener(move |state| {
                let slow = slow.clone();
                async move {
                    if state == ConnectionState::Reconnected {
                        slow.held.fetch_add(1, Ordering::SeqCst);
                        let _ = slow.gate.lock().await.recv().await;
                        slow.held.fetch_sub(1, Ordering::SeqCst);
                    }
                }
            })
            .detach();
    }
}

#[test]
fn wait_for_is_right_before_the_caches_hear_of_the_reconnect() {
    const ROOT: &str = "/wait-for-slow-listener";
    for seed in SEEDS {
        let mut sim = Simulation::builder(seed)
            .session_timeout(Duration::from_secs(10))
            .build();
        let (release, gate) = tokio::sync::mpsc::unbounded_channel::<()>();
        let slow = SlowListener {
            gate: Arc::new(tokio::sync::Mutex::new(gate)),
            held: Arc::default(),
        };
        let held = Arc::clone(&slow.held);
        // The persistent-mode cache on a client of its own: a one-shot watch of a session that
        // also watches the path persistently rides on the persistent watch (ZOOKEEPER-4466),
        // and then misses what it missed while disconnected, until the cache walks again on
        // `Reconnected`, which this test holds back.
        let (mut away, root_made) =
            reader_host(&mut sim, ROOT, Duration::from_secs(4), true, Some(slow));
        sim.client("writer", move |client| async move {
            let mut rng = StdRng::seed_from_u64(seed);
            let writer = namespaced(&client, Duration::from_secs(10)).await?;
            let mut model = make_root(&writer, ROOT).await?;
            let _ = root_made.send(());
            let (caches, readers) = away.handed().await?;
            caches
                .wait_and_check(writer.last_zxid(), ROOT, &model, "loaded")
                .await;

            let mut while_held = 0;
            for round in 0..8 {
                if round % 4 == 3 {
                    expire_behind(&client, &readers, "reader").await?;
                } else {
                    client.faults().partition("reader");
                }
                let mut zxid = 0;
                for step in 0..3 {
                    zxid =
                        random_write(&writer, ROOT, &mut model, &mut rng, round * 3 + step).await?;
                }
                client.faults().cut("reader");
                client.faults().repair("reader");
                caches
                    .wait_and_check(zxid, ROOT, &model, &format!("round {round}"))
                    .await;
                if held.load(Ordering::SeqCst) > 0 {
                    while_held += 1;
                }
                release.send(())?;
                release.send(())?;
            }
            println!(
                "wait_for answered before the caches heard `Reconnected` in {while_held} of 8 rounds"
            );
            writer.close().await?;
            drop(release);
            drop(away);
            Ok(())
        });
        run(&mut sim);
    }
}

/// A wait asked before the cache starts is answered once it has started and loaded; a wait
/// that cannot be answered (the reader cut off) ends with the cache's close, and with the
/// client's.
#[test]
fn wait_for_waits_for_the_start_and_the_initial_load_and_ends_with_the_cache() {
    const ROOT: &str = "/wait-for-lifecycle";
    for seed in SEEDS {
        let mut sim = sim(seed);
        let mut away = Elsewhere::host(&mut sim, "reader", |client| async move {
            let reader = client.connect().await?;
            Ok((reader.clone(), vec![reader]))
        });
        sim.client("writer", move |client| async move {
            let writer = client.connect().await?;
            writer.create().for_path(ROOT, b"").await?;
            let stat = writer.set_data().for_path(ROOT, b"before start").await?;
            let reader: CuratorFramework = away.handed().await?;

            // Asked before start: answered once the cache has started and loaded.
            let cache = CuratorCache::builder(reader.clone(), ROOT).build()?;
            let (waited, started) = tokio::join!(cache.wait_for(stat.mzxid, WAIT), async {
                tokio::task::yield_now().await;
                assert!(!cache.is_initialized());
                cache.start().await
            });
            started?;
            waited?;
            assert!(cache.is_initialized());
            assert_eq!(
                cache
                    .get(ROOT)
                    .and_then(|node| node.data().map(<[u8]>::to_vec)),
                Some(b"before start".to_vec())
            );

            // A wait that cannot be answered ends with the cache's close.
            client.faults().partition("reader");
            let stat = writer.set_data().for_path(ROOT, b"unseen").await?;
            let (waited, closed) = tokio::join!(cache.wait_for(stat.mzxid, WAIT), async {
                tokio::task::yield_now().await;
                cache.close().await
            });
            closed?;
            assert_eq!(waited, Err(ZkError::Closed));
            assert_eq!(
                cache.wait_for(stat.mzxid, WAIT).await,
                Err(ZkError::Closed),
                "a closed cache answers at once"
            );

            // And with the client's close, the link still down.
            let other = CuratorCache::builder(reader.clone(), ROOT).build()?;
            other.start().await?;
            let (waited, closed) = tokio::join!(other.wait_for(stat.mzxid, WAIT), async {
                tokio::task::yield_now().await;
                reader.close().await
            });
            closed?;
            assert_eq!(waited, Err(ZkError::Closed));
            client.faults().repair("reader");
            writer.close().await?;
            drop(away);
            Ok(())
        });
        run(&mut sim);
    }
}
