//! The recipe contract, for every cache kind and the `PersistentWatcher`: built by
//! `new`/`builder`, `start()` once (`AlreadyStarted` the second time, `Closed` after close),
//! events heard through `listenable()` and through `stream()`, `close()` twice, and no recipe
//! task left once the recipes are closed, or once their client is closed with them still
//! started (and then no listener hears anything more).

use std::time::Duration;

use curator_caches::{
    CacheEvent, CuratorCache, NodeCache, PathChildrenCache, PathChildrenCacheEvent,
    PersistentWatcher, PersistentWatcherEvent, StartMode, TreeCache, TypedEvent,
};
use curator_framework::codec::Utf8;
use curator_framework::listen::{Listenable, ListenerHandle, ListenerStream};
use curator_framework::{CuratorFramework, Error};
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::{client, eventually};
use futures::StreamExt;
use tokio::sync::mpsc;

/// A closure listener on `listenable`, forwarding what it hears.
fn listen<E: Clone + Send + 'static>(
    listenable: &Listenable<E>,
) -> (ListenerHandle, mpsc::UnboundedReceiver<E>) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let handle = listenable.add_listener(move |event| {
        let _ = sender.send(event);
    });
    (handle, receiver)
}

/// Waits (within the test deadline) for an event `matches` accepts, skipping others.
async fn hear<E: std::fmt::Debug>(
    what: &str,
    next: impl AsyncFnMut() -> Option<E>,
    matches: impl Fn(&E) -> bool,
) {
    let mut next = next;
    let found = tokio::time::timeout(Timing::new().wait(), async {
        while let Some(event) = next().await {
            if matches(&event) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "{what} was not heard");
}

async fn from_listener<E: std::fmt::Debug>(
    what: &str,
    receiver: &mut mpsc::UnboundedReceiver<E>,
    matches: impl Fn(&E) -> bool,
) {
    hear(what, async || receiver.recv().await, matches).await;
}

async fn from_stream<E: std::fmt::Debug>(
    what: &str,
    stream: &mut ListenerStream<E>,
    matches: impl Fn(&E) -> bool,
) {
    hear(what, async || stream.next().await, matches).await;
}

fn created(name: &str) -> impl Fn(&CacheEvent) -> bool {
    move |event| matches!(event, CacheEvent::Created { node } if node.name() == name)
}

async fn create(client: &CuratorFramework, path: &str) {
    client
        .create()
        .creating_parents_if_needed()
        .for_path(path, b"{}")
        .await
        .unwrap();
}

/// `tasks.close()` returns once the recipe's tasks ended; the client's count of them drops a
/// moment later (on the task's own thread), so it is polled.
async fn no_recipe_tasks(client: &CuratorFramework) {
    eventually("the recipe tasks to end", || {
        std::future::ready(client.metrics().recipe_tasks == 0)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_cache_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let root = unique_root("contract-curator-cache");
    let cache = CuratorCache::builder(client.clone(), &root)
        .build()
        .unwrap();
    let (_listening, mut heard) = listen(&cache.listenable());
    let mut stream = cache.stream();
    // A derived view hears through the same dispatch.
    let typed = cache.typed_with::<String, _>(Utf8);
    let (_typed_listening, mut typed_heard) = listen(&typed.listenable());
    let mut typed_stream = typed.stream();

    cache.start().await.unwrap();
    assert_eq!(cache.start().await, Err(Error::AlreadyStarted));
    assert!(client.metrics().recipe_tasks >= 1);
    create(&client, &format!("{root}/a")).await;
    from_listener("a's creation", &mut heard, created("a")).await;
    from_stream("a's creation", &mut stream, created("a")).await;
    let decoded = |event: &TypedEvent<String>| matches!(event, TypedEvent::Created { node, value } if node.name() == "a" && value == "{}");
    from_listener("a's decoded creation", &mut typed_heard, decoded).await;
    from_stream("a's decoded creation", &mut typed_stream, decoded).await;

    cache.close().await.unwrap();
    cache.close().await.unwrap();
    assert_eq!(cache.start().await, Err(Error::Closed));
    no_recipe_tasks(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_cache_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let root = unique_root("contract-tree-cache");
    let cache = TreeCache::builder(client.clone(), &root).build().unwrap();
    let (_listening, mut heard) = listen(&cache.listenable());
    let mut stream = cache.stream();

    cache.start().await.unwrap();
    assert_eq!(cache.start().await, Err(Error::AlreadyStarted));
    create(&client, &format!("{root}/a")).await;
    from_listener("a's creation", &mut heard, created("a")).await;
    from_stream("a's creation", &mut stream, created("a")).await;

    cache.close().await.unwrap();
    cache.close().await.unwrap();
    assert_eq!(cache.start().await, Err(Error::Closed));
    no_recipe_tasks(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cache_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let path = format!("{}/node", unique_root("contract-node-cache"));
    let cache = NodeCache::new(client.clone(), &path).unwrap();
    let (_listening, mut heard) = listen(&cache.listenable());
    let mut stream = cache.stream();

    cache.start().await.unwrap();
    assert_eq!(cache.start().await, Err(Error::AlreadyStarted));
    assert!(cache.initialized().await);
    create(&client, &path).await;
    from_listener("the node's creation", &mut heard, created("node")).await;
    from_stream("the node's creation", &mut stream, created("node")).await;

    cache.close().await.unwrap();
    cache.close().await.unwrap();
    assert_eq!(cache.start().await, Err(Error::Closed));
    no_recipe_tasks(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_children_cache_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let root = unique_root("contract-children-cache");
    let cache = PathChildrenCache::builder(client.clone(), &root)
        .with_start_mode(StartMode::BuildInitialCache)
        .build()
        .unwrap();
    let (_listening, mut heard) = listen(&cache.listenable());
    let mut stream = cache.stream();

    cache.start().await.unwrap();
    assert_eq!(cache.start().await, Err(Error::AlreadyStarted));
    create(&client, &format!("{root}/a")).await;
    let added = |event: &PathChildrenCacheEvent| matches!(event, PathChildrenCacheEvent::ChildAdded(child) if child.name() == "a");
    from_listener("a's addition", &mut heard, added).await;
    from_stream("a's addition", &mut stream, added).await;

    cache.close().await.unwrap();
    cache.close().await.unwrap();
    assert_eq!(cache.start().await, Err(Error::Closed));
    no_recipe_tasks(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_watcher_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let root = unique_root("contract-persistent-watcher");
    let watcher = PersistentWatcher::builder(client.clone(), &root)
        .build()
        .unwrap();
    let (_listening, mut heard) = listen(&watcher.listenable());
    let mut stream = watcher.stream();
    watcher.start().await.unwrap();
    assert_eq!(watcher.start().await, Err(Error::AlreadyStarted));
    assert!(client.metrics().recipe_tasks >= 1);
    let reset = |event: &PersistentWatcherEvent| matches!(event, PersistentWatcherEvent::Reset);
    from_listener("the watch set", &mut heard, reset).await;
    from_stream("the watch set", &mut stream, reset).await;
    create(&client, &format!("{root}/a")).await;
    let a = format!("{root}/a");
    let created = |event: &PersistentWatcherEvent| matches!(event, PersistentWatcherEvent::Watched(event) if event.path == a);
    from_listener("a's creation", &mut heard, created).await;
    from_stream("a's creation", &mut stream, created).await;

    watcher.close().await.unwrap();
    watcher.close().await.unwrap();
    assert_eq!(watcher.start().await, Err(Error::Closed));
    no_recipe_tasks(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_ends_every_started_cache() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let writer = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("contract-client-close");
    create(&writer, &format!("{root}/children/x")).await;

    let curator = CuratorCache::builder(client.clone(), &root)
        .build()
        .unwrap();
    let tree = TreeCache::builder(client.clone(), &root).build().unwrap();
    let node = NodeCache::new(client.clone(), &format!("{root}/node")).unwrap();
    let children = PathChildrenCache::builder(client.clone(), &format!("{root}/children"))
        .with_start_mode(StartMode::PostInitializedEvent)
        .build()
        .unwrap();
    let (_a, mut curator_heard) = listen(&curator.listenable());
    let (_b, mut tree_heard) = listen(&tree.listenable());
    let (_c, mut node_heard) = listen(&node.listenable());
    let (_d, mut children_heard) = listen(&children.listenable());
    let mut curator_stream = curator.stream();
    let mut children_stream = children.stream();
    let watcher = PersistentWatcher::new(client.clone(), &root, true).unwrap();
    let (_e, mut watcher_heard) = listen(&watcher.listenable());
    let mut watcher_stream = watcher.stream();
    watcher.start().await.unwrap();
    curator.start().await.unwrap();
    tree.start().await.unwrap();
    node.start().await.unwrap();
    children.start().await.unwrap();
    let initialized = |event: &CacheEvent| matches!(event, CacheEvent::Initialized);
    from_listener("CuratorCache's load", &mut curator_heard, initialized).await;
    from_listener("TreeCache's load", &mut tree_heard, initialized).await;
    from_listener("NodeCache's load", &mut node_heard, initialized).await;
    from_listener("PathChildrenCache's load", &mut children_heard, |event| {
        matches!(event, PathChildrenCacheEvent::Initialized(_))
    })
    .await;
    from_stream("CuratorCache's load", &mut curator_stream, initialized).await;
    from_stream("PathChildrenCache's load", &mut children_stream, |event| {
        matches!(event, PathChildrenCacheEvent::Initialized(_))
    })
    .await;
    from_listener("PersistentWatcher's set", &mut watcher_heard, |event| {
        matches!(event, PersistentWatcherEvent::Reset)
    })
    .await;
    assert!(client.metrics().recipe_tasks >= 5);

    client.close().await;
    assert_eq!(client.metrics().recipe_tasks, 0, "every cache task ended");

    // Changes the caches would have reported: nobody hears them.
    create(&writer, &format!("{root}/node")).await;
    create(&writer, &format!("{root}/children/y")).await;
    writer
        .set_data()
        .for_path(&format!("{root}/children/x"), b"2")
        .await
        .unwrap();
    let quiet = Timing::new().scale(Duration::from_millis(500));
    tokio::time::sleep(quiet).await;
    assert!(curator_heard.try_recv().is_err(), "CuratorCache listener");
    assert!(tree_heard.try_recv().is_err(), "TreeCache listener");
    assert!(node_heard.try_recv().is_err(), "NodeCache listener");
    assert!(
        children_heard.try_recv().is_err(),
        "PathChildrenCache listener"
    );
    assert!(
        watcher_heard.try_recv().is_err(),
        "PersistentWatcher listener"
    );
    // A stream of a closed client's container ends (after what it had been handed before).
    let ends = Timing::new().wait();
    assert_eq!(
        tokio::time::timeout(ends, curator_stream.next()).await,
        Ok(None),
        "CuratorCache stream"
    );
    assert_eq!(
        tokio::time::timeout(ends, children_stream.next()).await,
        Ok(None),
        "PathChildrenCache stream"
    );
    // Whatever the watcher had published before the close, then the end.
    let watcher_ended = tokio::time::timeout(ends, async {
        while watcher_stream.next().await.is_some() {}
    })
    .await;
    assert_eq!(watcher_ended, Ok(()), "PersistentWatcher stream");

    // The caches still close, and say they are closed.
    for closed in [
        curator.close().await,
        tree.close().await,
        node.close().await,
        children.close().await,
        watcher.close().await,
    ] {
        assert_eq!(closed, Ok(()));
    }
    assert_eq!(curator.start().await, Err(Error::Closed));
}
