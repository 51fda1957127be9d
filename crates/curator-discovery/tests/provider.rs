//! ServiceProvider against a real ZooKeeper: strategies, the down-instance policy, disabled
//! instances and filters.

use std::collections::HashSet;
use std::time::Duration;

use curator_discovery::{
    DownInstancePolicy, RandomStrategy, RoundRobinStrategy, ServiceDiscovery, ServiceInstance,
    ServiceProvider, StickyStrategy,
};
use curator_test::{TestingServer, unique_root};
use curator_testkit::{client, eventually};

/// A discovery with `n` instances `i0..` of "api" registered, and its client.
async fn registered(
    server: &TestingServer,
    name: &str,
    n: u16,
) -> (ServiceDiscovery, Vec<ServiceInstance>) {
    let c = client(&server.connect_string()).await;
    let discovery = ServiceDiscovery::builder(c, &unique_root(name))
        .build()
        .unwrap();
    let mut instances = Vec::new();
    for i in 0..n {
        let instance = ServiceInstance::builder("api")
            .id(format!("i{i}"))
            .port(8000 + i)
            .build()
            .unwrap();
        discovery.register_service(&instance).await.unwrap();
        instances.push(instance);
    }
    (discovery, instances)
}

async fn sees(provider: &ServiceProvider, n: usize) {
    eventually("the provider sees the instances", || async {
        provider.get_all_instances().len() == n
    })
    .await;
}

fn ids(picks: impl IntoIterator<Item = Option<ServiceInstance>>) -> Vec<String> {
    picks
        .into_iter()
        .map(|i| i.map(|i| i.id().to_owned()).unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_cycles_through_all() {
    let server = TestingServer::start().await.unwrap();
    let (discovery, instances) = registered(&server, "provider-rr", 3).await;
    let provider = discovery.service_provider_builder("api").build().unwrap();
    provider.start().await.unwrap();
    sees(&provider, 3).await;
    assert_eq!(provider.get_all_instances(), instances);
    let picks = ids((0..6).map(|_| provider.get_instance()));
    assert_eq!(picks, ["i0", "i1", "i2", "i0", "i1", "i2"]);

    // A provider of a service without instances has none to give.
    let empty = discovery.service_provider_builder("none").build().unwrap();
    empty.start().await.unwrap();
    assert_eq!(empty.get_instance(), None);
    discovery.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sticky_stays_until_its_instance_goes_and_random_covers_all() {
    let server = TestingServer::start().await.unwrap();
    let (discovery, instances) = registered(&server, "provider-sticky", 3).await;
    let sticky = discovery
        .service_provider_builder("api")
        .provider_strategy(StickyStrategy::new(RoundRobinStrategy::new()))
        .build()
        .unwrap();
    sticky.start().await.unwrap();
    sees(&sticky, 3).await;
    let first = sticky.get_instance().unwrap();
    for _ in 0..10 {
        assert_eq!(sticky.get_instance().unwrap().id(), first.id());
    }
    // It follows the instance's latest data, and leaves it once it is unregistered.
    let moved = first.to_builder().port(9999).build().unwrap();
    discovery.update_service(&moved).await.unwrap();
    eventually("the sticky instance's new data", || async {
        sticky.get_instance().unwrap().port() == Some(9999)
    })
    .await;
    discovery.unregister_service(&moved).await.unwrap();
    sees(&sticky, 2).await;
    let second = sticky.get_instance().unwrap();
    assert_ne!(second.id(), first.id());
    for _ in 0..10 {
        assert_eq!(sticky.get_instance().unwrap().id(), second.id());
    }

    let random = discovery
        .service_provider_builder("api")
        .provider_strategy(RandomStrategy::new())
        .build()
        .unwrap();
    random.start().await.unwrap();
    sees(&random, 2).await;
    let mut seen = HashSet::new();
    // The chance that 1000 picks miss one of two instances is 2^-999.
    for _ in 0..1000 {
        seen.insert(random.get_instance().unwrap().id().to_owned());
        if seen.len() == 2 {
            break;
        }
    }
    let expected: HashSet<String> = instances[..]
        .iter()
        .filter(|i| i.id() != first.id())
        .map(|i| i.id().to_owned())
        .collect();
    assert_eq!(seen, expected);
    discovery.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn down_instances_are_skipped_until_the_timeout_passes() {
    let server = TestingServer::start().await.unwrap();
    let (discovery, instances) = registered(&server, "provider-down", 2).await;
    let provider = discovery
        .service_provider_builder("api")
        .down_instance_policy(DownInstancePolicy::new(Duration::from_secs(1), 2))
        .build()
        .unwrap();
    provider.start().await.unwrap();
    sees(&provider, 2).await;
    let bad = &instances[0];
    provider.note_error(bad);
    provider.note_error(bad);
    // Down now (unless this machine took the whole second between the lines above; the
    // strict provider below shows the exclusion for certain).
    let now = provider.get_all_instances();
    if now.len() == 1 {
        assert_eq!(now, [instances[1].clone()]);
    }
    eventually("readmitted after the timeout", || async {
        provider.get_all_instances().len() == 2
    })
    .await;

    // With a long timeout the exclusion is certain.
    let strict = discovery
        .service_provider_builder("api")
        .down_instance_policy(DownInstancePolicy::new(Duration::from_secs(3600), 2))
        .build()
        .unwrap();
    strict.start().await.unwrap();
    sees(&strict, 2).await;
    strict.note_error(bad);
    assert_eq!(
        strict.get_all_instances().len(),
        2,
        "one error is not enough"
    );
    strict.note_error(bad);
    assert_eq!(strict.get_all_instances(), [instances[1].clone()]);
    assert!(
        ids((0..4).map(|_| strict.get_instance()))
            .iter()
            .all(|id| id == "i1")
    );
    discovery.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_and_filtered_instances_are_not_handed_out() {
    let server = TestingServer::start().await.unwrap();
    let (discovery, instances) = registered(&server, "provider-filter", 3).await;
    let provider = discovery
        .service_provider_builder("api")
        .additional_filter(|i| i.port() != Some(8002))
        .build()
        .unwrap();
    provider.start().await.unwrap();
    sees(&provider, 2).await;
    discovery
        .update_service(&instances[0].to_builder().enabled(false).build().unwrap())
        .await
        .unwrap();
    sees(&provider, 1).await;
    assert_eq!(provider.get_all_instances(), [instances[1].clone()]);
    assert_eq!(
        provider.cache().instances().len(),
        3,
        "the cache keeps them all"
    );
    discovery.close().await.unwrap();
}
