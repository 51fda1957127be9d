//! The recipe contract, for every long-lived recipe of the crate: built by a builder, `start()`
//! once (`AlreadyStarted` the second time, `Closed` after close), events heard through
//! `listenable()` and through `stream()` where there are events, `close()` twice, and no recipe
//! task left once the recipes are closed, or once their client is closed with the recipes still
//! started (and then no listener hears anything more).

use std::time::Duration;

use curator_discovery::{ServiceCacheEvent, ServiceDiscovery, ServiceInstance};
use curator_framework::listen::{Listenable, ListenerHandle, ListenerStream};
use curator_framework::{CuratorFramework, Error};
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::{client, eventually};
use futures::StreamExt;
use tokio::sync::mpsc;

fn instance(id: &str) -> ServiceInstance {
    ServiceInstance::builder("api")
        .id(id)
        .address("10.0.0.1")
        .port(8080)
        .build()
        .unwrap()
}

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

async fn from_listener<E>(
    what: &str,
    receiver: &mut mpsc::UnboundedReceiver<E>,
    matches: impl Fn(&E) -> bool,
) {
    let found = tokio::time::timeout(Timing::new().wait(), async {
        while let Some(event) = receiver.recv().await {
            if matches(&event) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "{what} was not heard by the listener");
}

async fn from_stream<E>(what: &str, stream: &mut ListenerStream<E>, matches: impl Fn(&E) -> bool) {
    let found = tokio::time::timeout(Timing::new().wait(), async {
        while let Some(event) = stream.next().await {
            if matches(&event) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "{what} was not heard by the stream");
}

fn added(id: &'static str) -> impl Fn(&ServiceCacheEvent) -> bool {
    move |event| matches!(event, ServiceCacheEvent::Added(instance) if instance.id() == id)
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
async fn a_service_discovery_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let base = unique_root("contract-discovery");
    let discovery = ServiceDiscovery::builder(client.clone(), &base)
        .this_instance(instance("me"))
        .build()
        .unwrap();
    discovery.start().await.unwrap();
    assert_eq!(discovery.start().await, Err(Error::AlreadyStarted));
    assert!(
        discovery
            .query_for_instance("api", "me")
            .await
            .unwrap()
            .is_some()
    );
    assert!(client.metrics().recipe_tasks >= 1, "the instance's keeper");
    discovery.close().await.unwrap();
    discovery.close().await.unwrap();
    assert_eq!(discovery.start().await, Err(Error::Closed));
    assert!(
        discovery
            .query_for_instance("api", "me")
            .await
            .unwrap()
            .is_none(),
        "close unregisters"
    );
    no_recipe_tasks(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_cache_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let base = unique_root("contract-service-cache");
    let discovery = ServiceDiscovery::builder(client.clone(), &base)
        .build()
        .unwrap();
    let cache = discovery.service_cache_builder("api").build().unwrap();
    let (_listening, mut heard) = listen(&cache.listenable());
    let mut stream = cache.stream();
    cache.start().await.unwrap();
    assert_eq!(cache.start().await, Err(Error::AlreadyStarted));
    discovery.register_service(&instance("a")).await.unwrap();
    from_listener("a's registration", &mut heard, added("a")).await;
    from_stream("a's registration", &mut stream, added("a")).await;
    cache.close().await.unwrap();
    cache.close().await.unwrap();
    assert_eq!(cache.start().await, Err(Error::Closed));
    discovery.close().await.unwrap();
    no_recipe_tasks(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_provider_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let base = unique_root("contract-provider");
    let discovery = ServiceDiscovery::builder(client.clone(), &base)
        .build()
        .unwrap();
    discovery.register_service(&instance("a")).await.unwrap();
    let provider = discovery.service_provider_builder("api").build().unwrap();
    provider.start().await.unwrap();
    assert_eq!(provider.start().await, Err(Error::AlreadyStarted));
    assert_eq!(provider.get_instance().unwrap().id(), "a");
    provider.close().await.unwrap();
    provider.close().await.unwrap();
    assert_eq!(provider.start().await, Err(Error::Closed));
    discovery.close().await.unwrap();
    no_recipe_tasks(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_ends_every_started_recipe() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let other = curator_testkit::client(&server.connect_string()).await;
    let base = unique_root("contract-client-close");
    let discovery = ServiceDiscovery::builder(client.clone(), &base)
        .this_instance(instance("me"))
        .build()
        .unwrap();
    let cache = discovery.service_cache_builder("api").build().unwrap();
    let provider = discovery.service_provider_builder("api").build().unwrap();
    let (_listening, mut heard) = listen(&cache.listenable());
    let mut stream = cache.stream();
    discovery.start().await.unwrap();
    cache.start().await.unwrap();
    provider.start().await.unwrap();
    from_listener("the initial load", &mut heard, |event| {
        *event == ServiceCacheEvent::Initialized
    })
    .await;
    from_stream("the initial load", &mut stream, |event| {
        *event == ServiceCacheEvent::Initialized
    })
    .await;
    assert!(client.metrics().recipe_tasks >= 3);

    client.close().await;
    assert_eq!(client.metrics().recipe_tasks, 0, "every recipe task ended");

    // An instance registered elsewhere, as the cache would have heard: nobody hears it.
    let elsewhere = ServiceDiscovery::builder(other.clone(), &base)
        .build()
        .unwrap();
    elsewhere.register_service(&instance("b")).await.unwrap();
    tokio::time::sleep(Timing::new().scale(Duration::from_millis(500))).await;
    while let Ok(event) = heard.try_recv() {
        assert!(!added("b")(&event), "the cache's listener heard {event:?}");
    }
    while let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(50), stream.next()).await
    {
        assert!(!added("b")(&event), "the cache's stream heard {event:?}");
    }
    elsewhere.close().await.unwrap();
}
