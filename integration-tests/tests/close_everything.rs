//! The client's close ends everything recipes started on it: every recipe kind runs at once, then
//! the client is closed (or its last handle dropped). Afterwards no recipe task runs, the
//! session's ephemeral nodes are gone, the server holds no watch for the session, and no
//! listener hears anything, though the recipes' nodes keep changing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use curator_caches::{CuratorCache, NodeCache, PathChildrenCache, TreeCache};
use curator_counters::SharedValue;
use curator_discovery::{ServiceDiscovery, ServiceInstance};
use curator_election::{LeaderLatch, LeaderSelector};
use curator_framework::listen::Listenable;
use curator_framework::{CreateMode, CuratorFramework, paths};
use curator_locks::InterProcessMutex;
use curator_nodes::{GroupMember, PersistentNode, PersistentTtlNode, SetPartitioner};
use curator_queues::DistributedQueue;
use curator_test::{TestingServer, Timing, four_letter_word, unique_root};
use curator_testkit::{client, eventually};

/// Counts what a listener hears.
#[derive(Clone, Default)]
struct Heard(Arc<AtomicUsize>);

impl Heard {
    fn on<E: Clone + Send + 'static>(&self, listenable: &Listenable<E>) {
        let count = Arc::clone(&self.0);
        listenable
            .add_listener(move |_| {
                count.fetch_add(1, Ordering::SeqCst);
            })
            .detach();
    }

    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Every recipe kind, started on `client` under `root`, with a listener on each that has events.
struct Everything {
    latch: LeaderLatch,
    selector: LeaderSelector,
    curator_cache: CuratorCache,
    tree_cache: TreeCache,
    node_cache: NodeCache,
    children_cache: PathChildrenCache,
    persistent: PersistentNode,
    ttl: PersistentTtlNode,
    member: GroupMember,
    partitioner: SetPartitioner,
    queue: DistributedQueue<String>,
    value: SharedValue<String>,
    discovery: ServiceDiscovery,
    guard: curator_locks::LockGuard,
}

async fn start_everything(client: &CuratorFramework, root: &str, heard: &Heard) -> Everything {
    let at = |name: &str| paths::join(root, name);
    let c = client.clone();

    let latch = LeaderLatch::builder(c.clone(), &at("latch"), "me")
        .build()
        .unwrap();
    heard.on(&latch.listenable());
    latch.start().await.unwrap();
    let selector =
        LeaderSelector::builder(c.clone(), &at("selector"), "me", |leadership| async move {
            // Leads until its leadership ends.
            leadership.lost().await;
        })
        .auto_requeue()
        .build()
        .unwrap();
    selector.start().await.unwrap();

    let curator_cache = CuratorCache::builder(c.clone(), &at("tree"))
        .build()
        .unwrap();
    heard.on(&curator_cache.listenable());
    curator_cache.start().await.unwrap();
    // ZooKeeper 3.8 keeps one watch mode per path and session (see the caches README): the
    // one-shot caches watch another subtree than the recursive one.
    let tree_cache = TreeCache::builder(c.clone(), &at("other")).build().unwrap();
    heard.on(&tree_cache.listenable());
    tree_cache.start().await.unwrap();
    let node_cache = NodeCache::builder(c.clone(), &at("other/value"))
        .build()
        .unwrap();
    heard.on(&node_cache.listenable());
    node_cache.start().await.unwrap();
    let children_cache = PathChildrenCache::builder(c.clone(), &at("other"))
        .build()
        .unwrap();
    heard.on(&children_cache.listenable());
    children_cache.start().await.unwrap();

    let persistent =
        PersistentNode::builder(c.clone(), &at("ephemeral"), CreateMode::Ephemeral, b"x")
            .build()
            .unwrap();
    persistent.start().await.unwrap();
    let ttl = PersistentTtlNode::new(c.clone(), &at("ttl"), Duration::from_secs(60), b"t").unwrap();
    ttl.start().await.unwrap();
    let member = GroupMember::new(c.clone(), &at("group"), "me", b"m").unwrap();
    heard.on(&member.listenable());
    member.start().await.unwrap();
    let partitioner = SetPartitioner::builder(c.clone(), &at("partitioner"), ["a", "b"])
        .settle(Duration::from_millis(50))
        .build()
        .unwrap();
    heard.on(&partitioner.listenable());
    partitioner.start().await.unwrap();

    let consumed = heard.clone();
    let queue = DistributedQueue::<String>::builder(c.clone(), &at("queue"))
        .lock_path(&at("queue-locks"))
        .consumer(move |_: String| {
            consumed.0.fetch_add(1, Ordering::SeqCst);
            futures::future::ready(Ok::<_, String>(()))
        })
        .build()
        .unwrap();
    heard.on(&queue.listenable());
    queue.start().await.unwrap();
    let value = SharedValue::builder(c.clone(), &at("value"), "v0".to_owned())
        .build()
        .unwrap();
    heard.on(&value.listenable());
    value.start().await.unwrap();
    let instance = ServiceInstance::builder("api")
        .id("me")
        .port(80)
        .build()
        .unwrap();
    let discovery = ServiceDiscovery::builder(c.clone(), &at("services"))
        .this_instance(instance)
        .build()
        .unwrap();
    discovery.start().await.unwrap();

    let guard = InterProcessMutex::builder(c.clone(), &at("lock"))
        .make_revocable(|| {})
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();

    latch.await_leadership().await.unwrap();
    Everything {
        latch,
        selector,
        curator_cache,
        tree_cache,
        node_cache,
        children_cache,
        persistent,
        ttl,
        member,
        partitioner,
        queue,
        value,
        discovery,
        guard,
    }
}

/// Every node under `root` with its ephemeral owner (0 for persistent nodes).
async fn owners(observer: &CuratorFramework, root: &str) -> Vec<(String, i64)> {
    let mut found = Vec::new();
    let mut todo = vec![root.to_owned()];
    while let Some(path) = todo.pop() {
        let Ok(Some(stat)) = observer.check_exists().for_path(&path).await else {
            continue;
        };
        found.push((path.clone(), stat.ephemeral_owner));
        if let Ok((children, _)) = observer.get_children().for_path(&path).await {
            todo.extend(children.iter().map(|child| paths::join(&path, child)));
        }
    }
    found
}

/// The session's watches at the server, as `wchc` lists them (empty when it has none).
async fn watches_of(server: &TestingServer, session: i64) -> Vec<String> {
    let report = four_letter_word(&server.connect_string(), "wchc", Timing::new().wait())
        .await
        .expect("wchc answers");
    let mut mine = Vec::new();
    let mut in_session = false;
    for line in report.lines() {
        if line.starts_with("0x") {
            in_session = i64::from_str_radix(line.trim_start_matches("0x").trim(), 16)
                .is_ok_and(|id| id == session);
        } else if in_session && !line.trim().is_empty() {
            mine.push(line.trim().to_owned());
        }
    }
    mine
}

/// Changes every recipe's nodes from another client, and waits until a witness on that client
/// has seen all of it (so the closed client's listeners would have had the time to hear it).
async fn change_everything(observer: &CuratorFramework, root: &str) {
    let at = |name: &str| paths::join(root, name);
    let witness = CuratorCache::builder(observer.clone(), root)
        .build()
        .unwrap();
    let mut events = witness.stream();
    witness.start().await.unwrap();
    witness.initialized().await.unwrap();
    let marker = at("tree/after-close");
    observer
        .create()
        .creating_parents_if_needed()
        .for_path(&at("other/late"), b"")
        .await
        .unwrap();
    observer
        .create()
        .or_set_data()
        .for_path(&at("other/value"), b"late")
        .await
        .unwrap();
    observer
        .set_data()
        .for_path(&at("value"), b"\"late\"")
        .await
        .unwrap();
    // (The group's directory is a container the server may have removed once empty.)
    observer
        .create()
        .creating_parents_if_needed()
        .for_path(&at("group/someone-else"), b"")
        .await
        .unwrap();
    let producer = DistributedQueue::<String>::builder(observer.clone(), &at("queue"))
        .build()
        .unwrap();
    producer.start().await.unwrap();
    producer.put(&"late".to_owned()).await.unwrap();
    observer
        .create()
        .creating_parents_if_needed()
        .for_path(&marker, b"")
        .await
        .unwrap();
    // The marker is the last change: once the witness saw it, it saw everything before it.
    use futures::StreamExt;
    while let Some(event) = tokio::time::timeout(Timing::new().wait(), events.next())
        .await
        .expect("the witness hears the changes")
    {
        if let curator_caches::CacheEvent::Created { node } = event {
            if node.path() == marker {
                break;
            }
        }
    }
    let _ = producer.close().await;
    let _ = witness.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_close_ends_every_recipe_it_started() {
    let server = TestingServer::start().await.unwrap();
    let observer = client(&server.connect_string()).await;
    let c = client(&server.connect_string()).await;
    let root = unique_root("close-everything");
    let heard = Heard::default();
    let everything = start_everything(&c, &root, &heard).await;
    let session = c.session_id().unwrap();
    assert!(c.metrics().recipe_tasks > 0);
    assert!(
        owners(&observer, &root)
            .await
            .iter()
            .any(|(_, owner)| *owner == session),
        "the recipes made ephemeral nodes"
    );
    assert!(
        !watches_of(&server, session).await.is_empty(),
        "and watches"
    );

    tokio::time::timeout(Timing::new().forever(), c.close())
        .await
        .expect("the client's close returns")
        .unwrap();
    assert_eq!(c.metrics().recipe_tasks, 0, "every recipe task ended");
    let left: Vec<_> = owners(&observer, &root)
        .await
        .into_iter()
        .filter(|(_, owner)| *owner == session)
        .collect();
    assert!(
        left.is_empty(),
        "ephemerals of the closed session: {left:?}"
    );
    assert_eq!(watches_of(&server, session).await, Vec::<String>::new());
    let before = heard.count();
    change_everything(&observer, &root).await;
    assert_eq!(
        heard.count(),
        before,
        "a listener heard something after the close"
    );
    assert!(
        everything.guard.is_lost(),
        "a lock held across the close is lost"
    );
    // The recipes' own close still answers (nothing they made is left: their nodes were
    // ephemeral; a persistent node a recipe could no longer delete would give Err(Closed)).
    everything.latch.close().await.unwrap();
    everything.selector.close().await.unwrap();
    everything.curator_cache.close().await.unwrap();
    everything.tree_cache.close().await.unwrap();
    everything.node_cache.close().await.unwrap();
    everything.children_cache.close().await.unwrap();
    everything.persistent.close().await.unwrap();
    everything.ttl.close().await.unwrap();
    everything.member.close().await.unwrap();
    everything.partitioner.close().await.unwrap();
    everything.queue.close().await.unwrap();
    everything.value.close().await.unwrap();
    everything.discovery.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_every_handle_ends_every_recipe_too() {
    let server = TestingServer::start().await.unwrap();
    let observer = client(&server.connect_string()).await;
    let c = client(&server.connect_string()).await;
    let root = unique_root("drop-everything");
    let heard = Heard::default();
    let everything = start_everything(&c, &root, &heard).await;
    let session = c.session_id().unwrap();
    assert!(!watches_of(&server, session).await.is_empty());

    // No close: the recipes' handles and the client's go. The recipes' tasks are cancelled,
    // which lets go of the last clones of the client, whose drop closes the session.
    drop(everything);
    drop(c);
    eventually("the session's ephemeral nodes go", || async {
        !owners(&observer, &root)
            .await
            .iter()
            .any(|(_, owner)| *owner == session)
    })
    .await;
    eventually("the server holds no watch of the session", || async {
        watches_of(&server, session).await.is_empty()
    })
    .await;
    let before = heard.count();
    change_everything(&observer, &root).await;
    assert_eq!(
        heard.count(),
        before,
        "a listener heard something after the drop"
    );
}
