//! The recipe contract (`curator_testkit::contract`), for every cache kind and the
//! `PersistentWatcher`; a typed view hears through its cache's dispatch; and their handles and
//! builders are `Send + Sync`.

use std::fmt::Debug;

use curator_caches::{
    CacheEvent, CuratorCache, CuratorCacheBuilder, NodeCache, NodeCacheBuilder, PathChildrenCache,
    PathChildrenCacheBuilder, PathChildrenCacheEvent, PersistentWatcher, PersistentWatcherBuilder,
    PersistentWatcherEvent, StartMode, TreeCache, TreeCacheBuilder, TypedCache, TypedEvent,
};
use curator_framework::CuratorFramework;
use curator_framework::codec::{Json, Utf8};
use curator_framework::recipe::RecipeEvents;
use curator_test::{TestingServer, unique_root};
use curator_testkit::contract::{self, Heard};
use curator_testkit::{client, create};

/// The contract of a recipe `make` builds on a client for a test root: once `ready` is heard,
/// the node `<root>/a` the client creates is heard as `created` says (`check`); and a recipe
/// built on another client for another root ends with that client's close, its `<root>/a`
/// created afterwards heard by nobody (`ends_with_its_client`).
async fn keeps_the_contract<R, F>(
    name: &str,
    make: impl Fn(CuratorFramework, &str) -> R,
    ready: impl Fn(&R::Event) -> bool + Copy,
    created: impl Fn(String) -> F,
) where
    R: RecipeEvents,
    R::Event: Debug,
    F: Fn(&R::Event) -> bool,
{
    let server = TestingServer::start().await.unwrap();
    let root = unique_root(name);
    let client = client(&server.connect_string()).await;
    let recipe = make(client.clone(), &root);
    let mut events = Heard::on(&recipe.listenable());
    let a = format!("{root}/a");
    contract::check(&client, &recipe, async || {
        events.both("the recipe at work", ready).await;
        create(&client, &a).await;
        events.both("a's creation", created(a.clone())).await;
    })
    .await;

    let client = curator_testkit::client(&server.connect_string()).await;
    let writer = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root(name);
    let recipe = make(client.clone(), &root);
    let a = format!("{root}/a");
    contract::ends_with_its_client(
        &client,
        &recipe,
        async || {},
        ready,
        async || create(&writer, &a).await,
        created(a.clone()),
    )
    .await;
}

fn loaded(event: &CacheEvent) -> bool {
    matches!(event, CacheEvent::Initialized)
}

fn cached(path: String) -> impl Fn(&CacheEvent) -> bool {
    move |event| matches!(event, CacheEvent::Created { node } if node.path() == path)
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
    let make = |client, root: &str| CuratorCache::builder(client, root).build().unwrap();
    keeps_the_contract("contract-curator-cache", make, loaded, cached).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_cache_keeps_the_contract() {
    let make = |client, root: &str| TreeCache::builder(client, root).build().unwrap();
    keeps_the_contract("contract-tree-cache", make, loaded, cached).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cache_keeps_the_contract() {
    // A cache of the root's child `a`: its creation is what the cache reports.
    let make = |client, root: &str| {
        NodeCache::builder(client, &format!("{root}/a"))
            .build()
            .unwrap()
    };
    keeps_the_contract("contract-node-cache", make, loaded, cached).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_children_cache_keeps_the_contract() {
    let make = |client, root: &str| {
        PathChildrenCache::builder(client, root)
            .with_start_mode(StartMode::PostInitializedEvent)
            .build()
            .unwrap()
    };
    let ready =
        |event: &PathChildrenCacheEvent| matches!(event, PathChildrenCacheEvent::Initialized(_));
    let added = |path: String| move |event: &PathChildrenCacheEvent| matches!(event, PathChildrenCacheEvent::ChildAdded(child) if child.path() == path);
    keeps_the_contract("contract-children-cache", make, ready, added).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_watcher_keeps_the_contract() {
    let make = |client, root: &str| PersistentWatcher::builder(client, root).build().unwrap();
    let reset = |event: &PersistentWatcherEvent| matches!(event, PersistentWatcherEvent::Reset);
    let watched = |path: String| move |event: &PersistentWatcherEvent| matches!(event, PersistentWatcherEvent::Watched(event) if event.path == path);
    keeps_the_contract("contract-persistent-watcher", make, reset, watched).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_view_hears_through_its_caches_dispatch() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let root = unique_root("contract-typed-view");
    let cache = CuratorCache::builder(client.clone(), &root)
        .build()
        .unwrap();
    let mut decoded = Heard::on(&cache.typed::<String>().codec(Utf8).listenable());
    cache.start().await.unwrap();
    create(&client, &format!("{root}/a")).await;
    decoded
        .both("a's decoded creation", |event| {
            matches!(event, TypedEvent::Created { node, value } if node.name() == "a" && value.is_empty())
        })
        .await;
    cache.close().await.unwrap();
    client.close().await.unwrap();
}
