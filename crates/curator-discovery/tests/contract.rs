//! The recipe contract (`curator_testkit::contract`) for every long-lived recipe of the crate,
//! the discovery's and its factory-made ones (`service_cache_builder`,
//! `service_provider_builder`); and what a discovery's close undoes.

use curator_discovery::{
    ServiceCache, ServiceCacheEvent, ServiceDiscovery, ServiceDiscoveryBuilder, ServiceInstance,
    ServiceProvider,
};
use curator_test::{TestingServer, unique_root};
use curator_testkit::{client, contract};

fn instance(id: &str) -> ServiceInstance {
    ServiceInstance::builder("api")
        .id(id)
        .address("10.0.0.1")
        .port(8080)
        .build()
        .unwrap()
}

fn added(id: &'static str) -> impl Fn(&ServiceCacheEvent) -> bool {
    move |event| matches!(event, ServiceCacheEvent::Added(instance) if instance.id() == id)
}

#[test]
fn handles_and_builders_are_send_and_sync() {
    contract::send_sync::<ServiceDiscovery>();
    contract::send_sync::<ServiceDiscoveryBuilder>();
    contract::send_sync::<ServiceCache>();
    contract::send_sync::<ServiceProvider>();
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
    contract::check(&client, &discovery, async || {
        let me = discovery.query_for_instance("api", "me").await.unwrap();
        assert!(me.is_some(), "start registers");
        assert!(client.metrics().recipe_tasks >= 1, "the instance's keeper");
    })
    .await;
    assert!(
        discovery
            .query_for_instance("api", "me")
            .await
            .unwrap()
            .is_none(),
        "close unregisters"
    );

    let client = curator_testkit::client(&server.connect_string()).await;
    let discovery = ServiceDiscovery::builder(client.clone(), &base)
        .this_instance(instance("me"))
        .build()
        .unwrap();
    contract::ends_with_its_client_quietly(&client, &discovery).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_cache_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let other = curator_testkit::client(&server.connect_string()).await;
    let base = unique_root("contract-service-cache");
    let discovery = ServiceDiscovery::builder(client.clone(), &base)
        .build()
        .unwrap();
    // Instances registered by another process.
    let elsewhere = ServiceDiscovery::builder(other.clone(), &base)
        .build()
        .unwrap();
    let cache = discovery.service_cache_builder("api").build().unwrap();
    contract::check_events(
        &client,
        &cache,
        async || elsewhere.register_service(&instance("a")).await.unwrap(),
        added("a"),
    )
    .await;
    discovery.close().await.unwrap();

    let client = curator_testkit::client(&server.connect_string()).await;
    let discovery = ServiceDiscovery::builder(client.clone(), &base)
        .build()
        .unwrap();
    let cache = discovery.service_cache_builder("api").build().unwrap();
    contract::ends_with_its_client(
        &client,
        &cache,
        async || {},
        |event| *event == ServiceCacheEvent::Initialized,
        async || elsewhere.register_service(&instance("b")).await.unwrap(),
        added("b"),
    )
    .await;
    assert_eq!(discovery.close().await, Ok(()));
    elsewhere.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_provider_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let other = curator_testkit::client(&server.connect_string()).await;
    let base = unique_root("contract-provider");
    let discovery = ServiceDiscovery::builder(client.clone(), &base)
        .build()
        .unwrap();
    let elsewhere = ServiceDiscovery::builder(other.clone(), &base)
        .build()
        .unwrap();
    elsewhere.register_service(&instance("a")).await.unwrap();
    let provider = discovery.service_provider_builder("api").build().unwrap();
    contract::check(&client, &provider, async || {
        assert_eq!(provider.get_instance().unwrap().id(), "a");
    })
    .await;
    discovery.close().await.unwrap();

    let client = curator_testkit::client(&server.connect_string()).await;
    let discovery = ServiceDiscovery::builder(client.clone(), &base)
        .build()
        .unwrap();
    let provider = discovery.service_provider_builder("api").build().unwrap();
    contract::ends_with_its_client_quietly(&client, &provider).await;
    assert_eq!(discovery.close().await, Ok(()));
    elsewhere.close().await.unwrap();
}
