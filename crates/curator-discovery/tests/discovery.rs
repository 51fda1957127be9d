//! ServiceDiscovery against a real ZooKeeper: registering, querying, updating, unregistering,
//! closing, and Curator's layout on the server.

use curator_discovery::{ServiceCacheEvent, ServiceDiscovery, ServiceInstance, ServiceType};
use curator_framework::{CreateMode, CuratorFramework, Error};
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::{client, eventually, raw};
use futures::StreamExt;
use serde_json::json;

fn instance(name: &str, id: &str, port: u16) -> ServiceInstance {
    ServiceInstance::builder(name)
        .id(id)
        .address("127.0.0.1")
        .port(port)
        .payload(json!({"port": port}))
        .build()
        .unwrap()
}

async fn children(c: &CuratorFramework, path: &str) -> Vec<String> {
    let mut names = c
        .get_children()
        .for_path(path)
        .await
        .map(|(names, _)| names)
        .unwrap_or_default();
    names.sort();
    names
}

async fn next<S: futures::Stream + Unpin>(events: &mut S) -> S::Item {
    tokio::time::timeout(Timing::new().wait(), events.next())
        .await
        .expect("a cache event in time")
        .expect("the stream goes on")
}

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn handles_are_send_and_sync() {
    assert_send_sync::<ServiceDiscovery>();
    assert_send_sync::<curator_discovery::ServiceCache>();
    assert_send_sync::<curator_discovery::ServiceProvider>();
    assert_send_sync::<ServiceInstance>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registers_queries_updates_and_unregisters() {
    let server = TestingServer::start().await.unwrap();
    let base = unique_root("discovery");
    let c = client(&server.connect_string()).await;
    let discovery = ServiceDiscovery::builder(c.clone(), &base).build().unwrap();
    assert_eq!(
        discovery.query_for_names().await.unwrap(),
        Vec::<String>::new()
    );
    discovery.start().await.unwrap();
    assert_eq!(discovery.start().await, Err(Error::AlreadyStarted));

    let api: Vec<_> = (0..3)
        .map(|i| instance("api", &format!("a{i}"), 8080 + i))
        .collect();
    for i in &api {
        discovery.register_service(i).await.unwrap();
    }
    let db = instance("db", "d0", 5432);
    discovery.register_service(&db).await.unwrap();

    assert_eq!(discovery.query_for_names().await.unwrap(), ["api", "db"]);
    assert_eq!(discovery.query_for_instances("api").await.unwrap(), api);
    assert_eq!(discovery.query_for_instances("none").await.unwrap(), []);
    assert_eq!(
        discovery.query_for_instance("db", "d0").await.unwrap(),
        Some(db.clone())
    );
    assert_eq!(
        discovery.query_for_instance("db", "zz").await.unwrap(),
        None
    );

    // Curator's layout: the instance's JSON at <base>/<name>/<id>, ephemeral.
    let path = format!("{base}/api/a0");
    assert_eq!(raw(&c, &path).await, api[0].to_json().unwrap());
    let (_, stat) = c.get_data().for_path(&path).await.unwrap();
    assert_eq!(Some(stat.ephemeral_owner), c.session_id());

    // Update: visible at once; registering a known id again updates too.
    let updated = api[0]
        .to_builder()
        .port(9000)
        .enabled(false)
        .build()
        .unwrap();
    discovery.update_service(&updated).await.unwrap();
    assert_eq!(
        discovery.query_for_instance("api", "a0").await.unwrap(),
        Some(updated.clone())
    );
    let again = updated.to_builder().port(9001).build().unwrap();
    discovery.register_service(&again).await.unwrap();
    assert_eq!(
        discovery.query_for_instance("api", "a0").await.unwrap(),
        Some(again.clone())
    );
    assert_eq!(
        children(&c, &format!("{base}/api")).await,
        ["a0", "a1", "a2"]
    );
    assert!(matches!(
        discovery
            .update_service(&instance("api", "unknown", 1))
            .await,
        Err(Error::InvalidArgument(_))
    ));

    // Unregister: gone, and not coming back.
    discovery.unregister_service(&api[1]).await.unwrap();
    assert_eq!(
        discovery.query_for_instance("api", "a1").await.unwrap(),
        None
    );
    assert_eq!(children(&c, &format!("{base}/api")).await, ["a0", "a2"]);

    // Bad input is a typed error.
    assert!(matches!(
        discovery.query_for_instances("a/b").await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        discovery.query_for_instance("api", "").await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        ServiceDiscovery::builder(c.clone(), "no-slash").build(),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        ServiceDiscovery::builder(c.clone(), "/trailing/").build(),
        Err(Error::InvalidPath { .. })
    ));
    // A node that is not an instance is skipped by queries and an error for one read.
    c.create()
        .for_path(&format!("{base}/api/junk"), b"not json")
        .await
        .unwrap();
    assert_eq!(discovery.query_for_instances("api").await.unwrap().len(), 2);
    assert!(matches!(
        discovery.query_for_instance("api", "junk").await,
        Err(Error::Decode { .. })
    ));
    c.delete()
        .for_path(&format!("{base}/api/junk"))
        .await
        .unwrap();

    // Close unregisters everything this discovery registered.
    discovery.close().await.unwrap();
    discovery.close().await.unwrap();
    assert_eq!(
        children(&c, &format!("{base}/api")).await,
        Vec::<String>::new()
    );
    assert!(matches!(
        discovery.register_service(&api[0]).await,
        Err(Error::Closed)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_types_choose_the_node_mode_and_close_keeps_permanent_ones() {
    let server = TestingServer::start().await.unwrap();
    let base = unique_root("discovery-types");
    let c = client(&server.connect_string()).await;
    let discovery = ServiceDiscovery::builder(c.clone(), &base)
        .payload_type::<String>()
        .build()
        .unwrap();
    let of_type = |id: &str, service_type| {
        ServiceInstance::builder("svc")
            .id(id)
            .service_type(service_type)
            .payload(format!("payload of {id}"))
            .build()
            .unwrap()
    };
    let permanent = of_type("permanent", ServiceType::Permanent);
    let fixed = of_type("static", ServiceType::Static);
    let sequential = of_type("seq-", ServiceType::DynamicSequential);
    for i in [&permanent, &fixed, &sequential] {
        discovery.register_service(i).await.unwrap();
    }
    let owner = |path: String| {
        let c = c.clone();
        async move {
            c.get_data()
                .for_path(&path)
                .await
                .unwrap()
                .1
                .ephemeral_owner
        }
    };
    assert_eq!(owner(format!("{base}/svc/permanent")).await, 0);
    assert_eq!(owner(format!("{base}/svc/static")).await, 0);
    let seq_path = discovery.registered_path("seq-").await.unwrap();
    let seq_name = seq_path.rsplit('/').next().unwrap();
    assert!(
        seq_name.starts_with("seq-") && seq_name.len() == "seq-".len() + 10,
        "{seq_name}"
    );
    assert_eq!(Some(owner(seq_path.clone()).await), c.session_id());
    // The JSON keeps the plain id.
    let read = discovery.query_for_instances("svc").await.unwrap();
    assert!(read.iter().any(|i| i.id() == "seq-"));

    discovery.close().await.unwrap();
    assert_eq!(children(&c, &format!("{base}/svc")).await, ["permanent"]);
    // Another discovery can remove the permanent instance explicitly.
    let other = ServiceDiscovery::builder(c.clone(), &base)
        .payload_type::<String>()
        .build()
        .unwrap();
    other.unregister_service(&permanent).await.unwrap();
    assert_eq!(
        children(&c, &format!("{base}/svc")).await,
        Vec::<String>::new()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builder_instance_is_registered_at_start_and_watched_when_asked() {
    let server = TestingServer::start().await.unwrap();
    let base = unique_root("discovery-this");
    let c = client(&server.connect_string()).await;
    let admin = client(&server.connect_string()).await;
    let me = instance("api", "me", 1);
    let discovery = ServiceDiscovery::builder(c.clone(), &base)
        .this_instance(me.clone())
        .watch_instances(true)
        .build()
        .unwrap();
    assert_eq!(
        discovery.query_for_instance("api", "me").await.unwrap(),
        None
    );
    discovery.start().await.unwrap();
    assert_eq!(
        discovery.query_for_instance("api", "me").await.unwrap(),
        Some(me.clone())
    );
    // Someone else disables it; with watch_instances the discovery adopts that.
    let disabled = me.to_builder().enabled(false).build().unwrap();
    admin
        .set_data()
        .for_path(&format!("{base}/api/me"), disabled.to_json().unwrap())
        .await
        .unwrap();
    eventually("the change is adopted", || async {
        discovery.registered_instances().await == [disabled.clone()]
    })
    .await;
    // So it comes back disabled after its session ends.
    c.inject_session_expiration().await.unwrap();
    eventually("re-registered, still disabled", || async {
        let found = admin.get_data().for_path(&format!("{base}/api/me")).await;
        found.is_ok_and(|(data, stat)| {
            Some(stat.ephemeral_owner) == c.session_id() && data == disabled.to_json().unwrap()
        })
    })
    .await;
    discovery.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_follows_instances_and_sees_them_go_with_their_client() {
    let server = TestingServer::start().await.unwrap();
    let base = unique_root("discovery-cache");
    let watcher = client(&server.connect_string()).await;
    let discovery = ServiceDiscovery::builder(watcher.clone(), &base)
        .build()
        .unwrap();
    // One instance before the cache starts, registered from another client.
    let owner = client(&server.connect_string()).await;
    let registrar = ServiceDiscovery::builder(owner.clone(), &base)
        .build()
        .unwrap();
    let first = instance("api", "first", 1);
    registrar.register_service(&first).await.unwrap();

    let cache = discovery.service_cache_builder("api").build().unwrap();
    let mut events = cache.listenable().stream();
    cache.start().await.unwrap();
    assert_eq!(cache.instances(), std::slice::from_ref(&first));
    assert_eq!(next(&mut events).await, ServiceCacheEvent::Initialized);

    let second = instance("api", "second", 2);
    discovery.register_service(&second).await.unwrap();
    assert_eq!(
        next(&mut events).await,
        ServiceCacheEvent::Added(second.clone())
    );
    let changed = second.to_builder().port(3).build().unwrap();
    discovery.update_service(&changed).await.unwrap();
    assert_eq!(
        next(&mut events).await,
        ServiceCacheEvent::Updated(changed.clone())
    );
    assert_eq!(cache.instances(), [first.clone(), changed.clone()]);

    // The registering client closes: its instance goes.
    owner.close().await.unwrap();
    assert_eq!(
        next(&mut events).await,
        ServiceCacheEvent::Removed(first.clone())
    );
    assert_eq!(cache.instances(), std::slice::from_ref(&changed));

    // A node that is not an instance is reported, and left out.
    watcher
        .create()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&format!("{base}/api/junk"), b"{{")
        .await
        .unwrap();
    assert!(matches!(
        next(&mut events).await,
        ServiceCacheEvent::Undecodable { path, error: Error::Decode { .. } } if path.ends_with("/junk")
    ));
    assert_eq!(cache.instances(), std::slice::from_ref(&changed));

    // Closing the discovery closes its caches and unregisters.
    discovery.close().await.unwrap();
    assert_eq!(cache.instances(), [changed]);
    assert!(matches!(
        discovery.service_cache_builder("api").build(),
        Err(Error::Closed)
    ));
}
