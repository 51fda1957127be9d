//! The recipe contract (`curator_testkit::contract`), for every cache kind and the
//! `PersistentWatcher`; and their handles and builders are `Send + Sync`.

use curator_caches::{
    CacheEvent, CuratorCache, CuratorCacheBuilder, NodeCache, NodeCacheBuilder, PathChildrenCache,
    PathChildrenCacheBuilder, PathChildrenCacheEvent, PersistentWatcher, PersistentWatcherBuilder,
    PersistentWatcherEvent, StartMode, TreeCache, TreeCacheBuilder, TypedCache, TypedEvent,
};
use curator_framework::codec::{Json, Utf8};
use curator_test::{TestingServer, unique_root};
use curator_testkit::contract::{self, Heard};
use curator_testkit::{client, create};

fn created(name: &str) -> impl Fn(&CacheEvent) -> bool {
    move |event| matches!(event, CacheEvent::Created { node } if node.name() == name)
}

fn initialized(event: &CacheEvent) -> bool {
    matches!(event, CacheEvent::Initialized)
}

#[test]
fn handles_and_builders_are_send_and_sync() {
    contract::send_sync::<CuratorCache>();
    contract::send_sync::<CuratorCacheBuilder>();
    contract::send_sync::<TreeCache>();
    contract::send_sync::<TreeCacheBuilder>();
    contract::send_sync::<NodeCache>();
    contract::send_sync::<NodeCacheBuilder>();
    contract::send_sync::<PathChildrenCache>();
    contract::send_sync::<PathChildrenCacheBuilder>();
    contract::send_sync::<PersistentWatcher>();
    contract::send_sync::<PersistentWatcherBuilder>();
    contract::send_sync::<TypedCache<String, Json>>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_cache_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let root = unique_root("contract-curator-cache");
    let cache = CuratorCache::builder(client.clone(), &root)
        .build()
        .unwrap();
    // A derived view hears through the same dispatch.
    let mut decoded = Heard::on(&cache.typed::<String>().codec(Utf8).listenable());
    let a = format!("{root}/a");
    contract::check_events(
        &client,
        &cache,
        async || {
            create(&client, &a).await;
            decoded
                .both("a's decoded creation", |event| {
                    matches!(event, TypedEvent::Created { node, value } if node.name() == "a" && value.is_empty())
                })
                .await;
        },
        created("a"),
    )
    .await;

    let client = curator_testkit::client(&server.connect_string()).await;
    let writer = curator_testkit::client(&server.connect_string()).await;
    let cache = CuratorCache::builder(client.clone(), &root)
        .build()
        .unwrap();
    let b = format!("{root}/b");
    contract::ends_with_its_client(
        &client,
        &cache,
        async || {},
        initialized,
        async || create(&writer, &b).await,
        created("b"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_cache_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let root = unique_root("contract-tree-cache");
    let cache = TreeCache::builder(client.clone(), &root).build().unwrap();
    let a = format!("{root}/a");
    contract::check_events(
        &client,
        &cache,
        async || create(&client, &a).await,
        created("a"),
    )
    .await;

    let client = curator_testkit::client(&server.connect_string()).await;
    let writer = curator_testkit::client(&server.connect_string()).await;
    let cache = TreeCache::builder(client.clone(), &root).build().unwrap();
    let b = format!("{root}/b");
    contract::ends_with_its_client(
        &client,
        &cache,
        async || {},
        initialized,
        async || create(&writer, &b).await,
        created("b"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cache_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let root = unique_root("contract-node-cache");
    let path = format!("{root}/node");
    let cache = NodeCache::builder(client.clone(), &path).build().unwrap();
    contract::check_events(
        &client,
        &cache,
        async || {
            cache.initialized().await.unwrap();
            create(&client, &path).await;
        },
        created("node"),
    )
    .await;

    let client = curator_testkit::client(&server.connect_string()).await;
    let writer = curator_testkit::client(&server.connect_string()).await;
    let path = format!("{root}/other");
    let cache = NodeCache::builder(client.clone(), &path).build().unwrap();
    contract::ends_with_its_client(
        &client,
        &cache,
        async || {},
        initialized,
        async || create(&writer, &path).await,
        created("other"),
    )
    .await;
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
    let a = format!("{root}/a");
    let added = |name: &'static str| move |event: &PathChildrenCacheEvent| matches!(event, PathChildrenCacheEvent::ChildAdded(child) if child.name() == name);
    contract::check_events(
        &client,
        &cache,
        async || create(&client, &a).await,
        added("a"),
    )
    .await;

    let client = curator_testkit::client(&server.connect_string()).await;
    let writer = curator_testkit::client(&server.connect_string()).await;
    let cache = PathChildrenCache::builder(client.clone(), &root)
        .with_start_mode(StartMode::PostInitializedEvent)
        .build()
        .unwrap();
    let b = format!("{root}/b");
    contract::ends_with_its_client(
        &client,
        &cache,
        async || {},
        |event| matches!(event, PathChildrenCacheEvent::Initialized(_)),
        async || create(&writer, &b).await,
        added("b"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_watcher_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let root = unique_root("contract-persistent-watcher");
    let watcher = PersistentWatcher::builder(client.clone(), &root)
        .build()
        .unwrap();
    let reset = |event: &PersistentWatcherEvent| matches!(event, PersistentWatcherEvent::Reset);
    let watched = |path: String| move |event: &PersistentWatcherEvent| matches!(event, PersistentWatcherEvent::Watched(event) if event.path == path);
    let mut set = Heard::on(&watcher.listenable());
    let a = format!("{root}/a");
    contract::check_events(
        &client,
        &watcher,
        async || {
            set.both("the watch set", reset).await;
            create(&client, &a).await;
        },
        watched(a.clone()),
    )
    .await;

    let client = curator_testkit::client(&server.connect_string()).await;
    let writer = curator_testkit::client(&server.connect_string()).await;
    let watcher = PersistentWatcher::builder(client.clone(), &root)
        .build()
        .unwrap();
    let b = format!("{root}/b");
    contract::ends_with_its_client(
        &client,
        &watcher,
        async || {},
        reset,
        async || create(&writer, &b).await,
        watched(b.clone()),
    )
    .await;
}
