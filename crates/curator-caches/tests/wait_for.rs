//! Read-your-writes through caches: after a write through one client, `wait_for(zxid)` on a
//! cache of another client returns once the cache shows the write. Checked against the whole
//! tree after every write (the test is the only writer, so the cache must equal its model),
//! through dropped connections and session expiries, under a namespace.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use curator_caches::{CuratorCache, NodeCache, PathChildrenCache, TreeCache, WatchMode};
use curator_framework::{CuratorFramework, Error, paths};
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The namespace of every client here: the caches and the writer see the same paths.
const NAMESPACE: &str = "wait-for";

/// What the server holds under the root: path → data.
type Model = BTreeMap<String, Vec<u8>>;

fn client_builder(connect: &str) -> curator_framework::CuratorFrameworkBuilder {
    curator_testkit::builder(connect, Timing::new().scale(Duration::from_secs(15)))
        .namespace(NAMESPACE)
}

async fn client(connect: &str) -> CuratorFramework {
    curator_testkit::started(client_builder(connect)).await
}

/// Every kind of cache, on one client, over one root.
struct Caches {
    persistent: CuratorCache,
    one_shot: CuratorCache,
    tree: TreeCache,
    children: PathChildrenCache,
    node: NodeCache,
}

impl Caches {
    async fn start(client: &CuratorFramework, root: &str) -> Caches {
        Caches::start_on(client, client, root).await
    }

    /// The persistent-mode cache on `persistent`, the others on `one_shot`.
    async fn start_on(
        persistent: &CuratorFramework,
        client: &CuratorFramework,
        root: &str,
    ) -> Caches {
        let caches = Caches {
            persistent: CuratorCache::builder(persistent.clone(), root)
                .with_mode(WatchMode::Persistent)
                .build()
                .unwrap(),
            one_shot: CuratorCache::builder(client.clone(), root)
                .with_mode(WatchMode::OneShot)
                .build()
                .unwrap(),
            tree: TreeCache::builder(client.clone(), root).build().unwrap(),
            children: PathChildrenCache::builder(client.clone(), root)
                .build()
                .unwrap(),
            node: NodeCache::builder(client.clone(), root).build().unwrap(),
        };
        caches.persistent.start().await.unwrap();
        caches.one_shot.start().await.unwrap();
        caches.tree.start().await.unwrap();
        caches.children.start().await.unwrap();
        caches.node.start().await.unwrap();
        caches
    }

    /// Waits on every cache at once, each for `zxid`.
    async fn wait_for(
        &self,
        zxid: i64,
        timeout: Duration,
    ) -> [(&'static str, Result<(), Error>); 6] {
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
        for (name, result) in self.wait_for(zxid, Timing::new().wait()).await {
            result.unwrap_or_else(|error| panic!("{context}: {name}.wait_for({zxid:#x}): {error}"));
        }
        if let Err(stale) = self.check(root, model) {
            panic!("{context}: after wait_for({zxid:#x}), {stale}");
        }
    }

    /// `Ok` when every cache shows `model` (its part of it); else which cache differs, and how.
    fn check(&self, root: &str, model: &Model) -> Result<(), String> {
        let whole = |name: &str, nodes: Vec<curator_caches::ChildData>| -> Result<(), String> {
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

fn to_model(nodes: Vec<curator_caches::ChildData>) -> Model {
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
/// changes at any depth), applied to `model` too; returns the zxid to wait for and what it did.
async fn random_write(
    writer: &CuratorFramework,
    root: &str,
    model: &mut Model,
    rng: &mut StdRng,
    round: usize,
) -> (i64, String) {
    let data = format!("v{round}").into_bytes();
    let leaves: Vec<String> = model
        .keys()
        .filter(|path| *path != root && !model.keys().any(|p| paths::parent(p) == Some(path)))
        .cloned()
        .collect();
    match rng.random_range(0..5) {
        0 | 1 if !model.is_empty() => {
            // Any node's data, the root's included; the stat says the write's zxid.
            let nodes: Vec<&String> = model.keys().collect();
            let path = nodes[rng.random_range(0..nodes.len())].clone();
            let stat = writer.set_data().for_path(&path, &data).await.unwrap();
            model.insert(path.clone(), data);
            (stat.mzxid, format!("set {path}"))
        }
        2 if !leaves.is_empty() => {
            let path = &leaves[rng.random_range(0..leaves.len())];
            writer.delete().for_path(path).await.unwrap();
            model.remove(path);
            // A delete returns no stat: the writer's last zxid covers it.
            (writer.last_zxid(), format!("delete {path}"))
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
                .await
                .unwrap();
            model.insert(path.clone(), data);
            (stat.czxid, format!("create {path}"))
        }
        _ => {
            let path = paths::join(root, &format!("c{round}"));
            let (_, stat) = writer
                .create()
                .for_path(&path, &data)
                .with_stat()
                .await
                .unwrap();
            model.insert(path.clone(), data);
            (stat.czxid, format!("create {path}"))
        }
    }
}

fn seed() -> u64 {
    let seed = std::env::var("CACHE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    println!("CACHE_TEST_SEED={seed}");
    seed
}

/// A root made by the writer (a persistent node, so that no container of a cache's making is
/// reaped under the test), in the model.
async fn make_root(writer: &CuratorFramework, name: &str) -> (String, Model) {
    let root = unique_root(name);
    writer
        .create()
        .creating_parents_if_needed()
        .for_path(&root, b"root")
        .await
        .unwrap();
    let model = Model::from([(root.clone(), b"root".to_vec())]);
    (root, model)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cache_shows_each_write_of_another_client_once_wait_for_returns() {
    support::init_logging();
    let mut rng = StdRng::seed_from_u64(seed());
    let server = TestingServer::start().await.unwrap();
    let writer = client(&server.connect_string()).await;
    let reader = client(&server.connect_string()).await;
    let (root, mut model) = make_root(&writer, "wait-for").await;
    let caches = Caches::start(&reader, &root).await;

    let mut stale_before = 0;
    for round in 0..200 {
        let (zxid, what) = random_write(&writer, &root, &mut model, &mut rng, round).await;
        if caches.check(&root, &model).is_err() {
            stale_before += 1;
        }
        caches
            .wait_and_check(zxid, &root, &model, &format!("round {round}, {what}"))
            .await;
    }
    println!(
        "right after the write (before wait_for), the caches lagged in {stale_before} of 200 rounds"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_wait_for_a_cache_can_lag_behind_a_write_it_is_told_of() {
    support::init_logging();
    let server = TestingServer::start().await.unwrap();
    let writer = client(&server.connect_string()).await;
    let reader = client(&server.connect_string()).await;
    let (root, _) = make_root(&writer, "wait-for-race").await;
    let cache = CuratorCache::builder(reader, &root).build().unwrap();
    cache.start().await.unwrap();
    cache.initialized().await.unwrap();

    // The race the wait closes: the write has returned to its client, but the other client's
    // cache has not heard of it yet (the notification, then the read it starts, are on their
    // way).
    let rounds = 100;
    let mut stale = 0;
    for round in 0..rounds {
        let path = format!("{root}/n{round}");
        let (_, stat) = writer
            .create()
            .for_path(&path, b"x")
            .with_stat()
            .await
            .unwrap();
        if cache.get(&path).is_none() {
            stale += 1;
        }
        cache
            .wait_for(stat.czxid, Timing::new().wait())
            .await
            .unwrap();
        let node = cache
            .get(&path)
            .expect("the write is cached once wait_for returns");
        assert_eq!(node.stat().czxid, stat.czxid);
    }
    println!("the cache lacked the write just made in {stale} of {rounds} rounds");
    assert!(
        stale > 0,
        "a cache never lagged its writer: the race wait_for closes did not show"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_sees_writes_made_while_the_connection_was_down() {
    support::init_logging();
    let mut rng = StdRng::seed_from_u64(seed());
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let writer = client(&server.connect_string()).await;
    let reader = client(&proxy.connect_string()).await;
    let (root, mut model) = make_root(&writer, "wait-for-partition").await;
    let caches = Caches::start(&reader, &root).await;

    for round in 0..12 {
        let session = reader.session_id();
        proxy.pause();
        let mut zxid = 0;
        for step in 0..3 {
            (zxid, _) = random_write(&writer, &root, &mut model, &mut rng, round * 3 + step).await;
        }
        // The waits start while the link is black-holed, and the link comes back under them.
        let (results, ()) = tokio::join!(caches.wait_for(zxid, Timing::new().wait()), async {
            proxy.drop_connections();
            proxy.resume();
        });
        for (name, result) in results {
            result.unwrap_or_else(|error| panic!("round {round}: {name}: {error}"));
        }
        if let Err(stale) = caches.check(&root, &model) {
            panic!("round {round}: after a reconnect, {stale}");
        }
        assert_eq!(reader.session_id(), session, "the same session throughout");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_times_out_while_the_cache_cannot_reach_the_server() {
    support::init_logging();
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let writer = client(&server.connect_string()).await;
    let reader = client(&proxy.connect_string()).await;
    let (root, mut model) = make_root(&writer, "wait-for-timeout").await;
    let caches = Caches::start(&reader, &root).await;
    caches
        .wait_and_check(writer.last_zxid(), &root, &model, "loaded")
        .await;

    proxy.pause();
    let stat = writer.set_data().for_path(&root, b"unseen").await.unwrap();
    model.insert(root.clone(), b"unseen".to_vec());
    let waited = Duration::from_millis(700);
    for (name, result) in caches.wait_for(stat.mzxid, waited).await {
        assert_eq!(
            result,
            Err(Error::Timeout { waited }),
            "{name}: a black-holed link cannot catch up"
        );
    }
    assert!(
        caches.check(&root, &model).is_err(),
        "nothing could reach the caches"
    );

    proxy.drop_connections();
    proxy.resume();
    caches
        .wait_and_check(stat.mzxid, &root, &model, "after the link healed")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_does_not_answer_from_the_tree_of_an_expired_session() {
    support::init_logging();
    let mut rng = StdRng::seed_from_u64(seed());
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let writer = client(&server.connect_string()).await;
    let reader = curator_testkit::started(
        curator_testkit::builder(&proxy.connect_string(), Timing::new().session_timeout())
            .namespace(NAMESPACE),
    )
    .await;
    let (root, mut model) = make_root(&writer, "wait-for-expiry").await;
    for round in 0..6 {
        random_write(&writer, &root, &mut model, &mut rng, round).await;
    }
    let caches = Caches::start(&reader, &root).await;
    caches
        .wait_and_check(writer.last_zxid(), &root, &model, "loaded")
        .await;

    for round in 0..3 {
        let session = reader.session_id();
        if round == 1 {
            // From the client's side: it ends its session itself and makes a new one.
            reader.inject_session_expiration().await.unwrap();
        } else {
            // From the server's side, behind a black-holed link.
            curator_testkit::expire_behind(&reader, &proxy, &server.connect_string()).await;
        }
        // Writes the old session's watches never hear of: every kind, the root's children
        // deleted and created again.
        let mut zxid = 0;
        for step in 0..6 {
            (zxid, _) = random_write(
                &writer,
                &root,
                &mut model,
                &mut rng,
                100 + round * 10 + step,
            )
            .await;
        }
        proxy.resume();
        caches
            .wait_and_check(zxid, &root, &model, &format!("expiry {round}"))
            .await;
        assert_ne!(reader.session_id(), session, "a new session");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_waits_for_the_start_and_the_initial_load_and_ends_with_the_cache() {
    support::init_logging();
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let writer = client(&server.connect_string()).await;
    let reader = client(&proxy.connect_string()).await;
    let (root, _) = make_root(&writer, "wait-for-lifecycle").await;
    let stat = writer
        .set_data()
        .for_path(&root, b"before start")
        .await
        .unwrap();

    // Asked before start: answered once the cache has started and loaded.
    let cache = CuratorCache::builder(reader.clone(), &root)
        .build()
        .unwrap();
    let (waited, started) = tokio::join!(cache.wait_for(stat.mzxid, Timing::new().wait()), async {
        tokio::task::yield_now().await;
        assert!(!cache.is_initialized());
        cache.start().await
    });
    started.unwrap();
    waited.unwrap();
    assert!(cache.is_initialized());
    assert_eq!(cache.get(&root).unwrap().data(), Some(&b"before start"[..]));

    // A wait that cannot be answered ends with the cache's close.
    proxy.pause();
    let stat = writer.set_data().for_path(&root, b"unseen").await.unwrap();
    let (waited, closed) = tokio::join!(cache.wait_for(stat.mzxid, Timing::new().wait()), async {
        tokio::task::yield_now().await;
        cache.close().await
    });
    closed.unwrap();
    assert_eq!(waited, Err(Error::Closed));
    assert_eq!(
        cache.wait_for(stat.mzxid, Timing::new().wait()).await,
        Err(Error::Closed),
        "a closed cache answers at once"
    );

    // And with the client's close.
    let other = CuratorCache::builder(reader.clone(), &root)
        .build()
        .unwrap();
    other.start().await.unwrap();
    let (waited, closed) = tokio::join!(other.wait_for(stat.mzxid, Timing::new().wait()), async {
        tokio::task::yield_now().await;
        reader.close().await
    });
    closed.unwrap();
    assert_eq!(waited, Err(Error::Closed));
    proxy.resume();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_is_right_before_the_caches_hear_of_the_reconnect() {
    support::init_logging();
    let mut rng = StdRng::seed_from_u64(seed());
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let writer = client(&server.connect_string()).await;
    let reader = || async {
        curator_testkit::started(
            curator_testkit::builder(&proxy.connect_string(), Timing::new().session_timeout())
                .namespace(NAMESPACE),
        )
        .await
    };
    // The persistent-mode cache on a client of its own: a one-shot watch of a session that
    // also watches the path persistently rides on the persistent watch (ZOOKEEPER-4466), and
    // then misses what it missed while disconnected, until the cache walks again on
    // `Reconnected`, which this test holds back.
    let readers = [reader().await, reader().await];
    let (root, mut model) = make_root(&writer, "wait-for-slow-listener").await;

    // A slow connection-state listener, added before the caches: it holds `Reconnected` up on
    // its way to every later listener, the caches' own, until the test lets it go. The caches'
    // watches are blind while the link is down (a persistent watch is not told afterwards what
    // it missed) and gone with an expired session, and only a walk of the tree repairs that.
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = std::sync::Arc::new(std::sync::Mutex::new(gate));
    let held = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let _slow: Vec<_> = readers
        .iter()
        .map(|reader| {
            let (held, gate) = (std::sync::Arc::clone(&held), std::sync::Arc::clone(&gate));
            reader
                .connection_state_listenable()
                .add_listener(move |state| {
                    if state == curator_framework::ConnectionState::Reconnected {
                        held.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let _ = tokio::task::block_in_place(|| gate.lock().unwrap().recv());
                        held.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    }
                })
        })
        .collect();
    let caches = Caches::start_on(&readers[0], &readers[1], &root).await;
    caches
        .wait_and_check(writer.last_zxid(), &root, &model, "loaded")
        .await;

    let mut while_held = 0;
    for round in 0..8 {
        let expire = round % 4 == 3;
        if expire {
            for reader in &readers {
                proxy.resume();
                curator_testkit::expire_behind(reader, &proxy, &server.connect_string()).await;
            }
        } else {
            proxy.pause();
        }
        let mut zxid = 0;
        for step in 0..3 {
            (zxid, _) = random_write(&writer, &root, &mut model, &mut rng, round * 3 + step).await;
        }
        proxy.drop_connections();
        proxy.resume();
        caches
            .wait_and_check(zxid, &root, &model, &format!("round {round}"))
            .await;
        if held.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            while_held += 1;
        }
        release.send(()).unwrap();
        release.send(()).unwrap();
    }
    drop(release);
    println!("wait_for answered before the caches heard `Reconnected` in {while_held} of 8 rounds");
}
