//! Registrations through session expiry and server restarts: an instance whose session ends
//! leaves the caches; a kept registration comes back, exactly once, with its latest data,
//! owned by the new session.

use curator_discovery::{ServiceCacheEvent, ServiceDiscovery, ServiceInstance};
use curator_framework::{CreateMode, CuratorFramework};
use curator_test::{Expiry, FaultProxy, TestingServer, Timing, expire_session, unique_root};
use curator_testkit::{client, eventually};
use futures::StreamExt;

async fn next<S: futures::Stream + Unpin>(events: &mut S) -> S::Item {
    tokio::time::timeout(Timing::new().wait(), events.next())
        .await
        .expect("a cache event in time")
        .expect("the stream goes on")
}

/// The children of `parent`, and the data and owner of `path`.
async fn look(c: &CuratorFramework, parent: &str, path: &str) -> (usize, Option<(Vec<u8>, i64)>) {
    let count = c
        .get_children()
        .for_path(parent)
        .await
        .map(|(names, _)| names.len())
        .unwrap_or(0);
    let node = c
        .get_data()
        .for_path(path)
        .await
        .ok()
        .map(|(data, stat)| (data, stat.ephemeral_owner));
    (count, node)
}

/// Exactly one node under `parent`: `path`, holding `instance`, owned by `owner`'s live session
/// (and not by `old_session`).
/// A discovery on `owner` under `base` that registered `api/a` on port 1 and then updated it to
/// port 2; the updated instance.
async fn registered_and_updated(
    owner: &CuratorFramework,
    base: &str,
) -> (ServiceDiscovery, ServiceInstance) {
    let discovery = ServiceDiscovery::builder(owner.clone(), base)
        .build()
        .unwrap();
    let v1 = ServiceInstance::builder("api")
        .id("a")
        .port(1)
        .build()
        .unwrap();
    discovery.register_service(&v1).await.unwrap();
    let v2 = v1.to_builder().port(2).build().unwrap();
    discovery.update_service(&v2).await.unwrap();
    (discovery, v2)
}

async fn registered_once(
    observer: &CuratorFramework,
    owner: &CuratorFramework,
    parent: &str,
    path: &str,
    instance: &ServiceInstance,
    old_session: i64,
) -> bool {
    let (count, node) = look(observer, parent, path).await;
    count == 1
        && node.is_some_and(|(data, session)| {
            data == instance.to_json().unwrap()
                && session != old_session
                && Some(session) == owner.session_id()
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_leaves_the_cache_when_its_session_expires_and_comes_back_once() {
    let server = TestingServer::start().await.unwrap();
    let base = unique_root("expiry-cache");
    let (parent, path) = (format!("{base}/api"), format!("{base}/api/a"));
    // The owner talks through a proxy, so the test can both read its session's credentials
    // and keep it away from the server while the server expires its session.
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let owner = client(&proxy.connect_string()).await;
    let observer = client(&server.connect_string()).await;
    let (registrar, v2) = registered_and_updated(&owner, &base).await;

    let discovery = ServiceDiscovery::builder(observer.clone(), &base)
        .build()
        .unwrap();
    let cache = discovery.service_cache_builder("api").build().unwrap();
    let mut events = cache.listenable().stream();
    cache.start().await.unwrap();
    assert_eq!(next(&mut events).await, ServiceCacheEvent::Initialized);
    assert_eq!(cache.instances(), std::slice::from_ref(&v2));

    let old_session = owner.session_id().unwrap();
    let credentials = proxy
        .sessions()
        .into_iter()
        .find(|s| s.id == old_session)
        .unwrap();
    proxy.pause();
    let expiry = expire_session(&server.connect_string(), &credentials, Timing::new().wait())
        .await
        .unwrap();
    assert_eq!(expiry, Expiry::Expired);
    assert_eq!(
        next(&mut events).await,
        ServiceCacheEvent::Removed(v2.clone())
    );
    assert_eq!(cache.instances(), []);

    // The owner gets through again, learns its session is gone, makes a new one and
    // registers the instance again: once, with the latest data.
    proxy.resume();
    assert_eq!(
        next(&mut events).await,
        ServiceCacheEvent::Added(v2.clone())
    );
    eventually("registered once in the new session", || {
        registered_once(&observer, &owner, &parent, &path, &v2, old_session)
    })
    .await;
    assert_eq!(cache.instances(), std::slice::from_ref(&v2));

    registrar.close().await.unwrap();
    assert_eq!(
        next(&mut events).await,
        ServiceCacheEvent::Removed(v2.clone())
    );
    discovery.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_comes_back_once_with_its_latest_data_after_its_session_ends() {
    let server = TestingServer::start().await.unwrap();
    let base = unique_root("expiry-own");
    let (parent, path) = (format!("{base}/api"), format!("{base}/api/a"));
    let owner = client(&server.connect_string()).await;
    let observer = client(&server.connect_string()).await;
    let (discovery, v2) = registered_and_updated(&owner, &base).await;

    for round in 0..3 {
        let old_session = owner.session_id().unwrap();
        owner.inject_session_expiration().await.unwrap();
        eventually(&format!("registered once after expiry {round}"), || {
            registered_once(&observer, &owner, &parent, &path, &v2, old_session)
        })
        .await;
    }
    // Deleted by someone else: it comes back too.
    observer.delete().for_path(&path).await.unwrap();
    let session = owner.session_id().unwrap();
    eventually("re-created after a deletion", || async {
        let (count, node) = look(&observer, &parent, &path).await;
        count == 1 && node.is_some_and(|(_, owner)| owner == session)
    })
    .await;

    // Unregistered: gone for good, also through another expiry.
    discovery.unregister_service(&v2).await.unwrap();
    owner.inject_session_expiration().await.unwrap();
    owner
        .block_until_connected(Timing::new().wait())
        .await
        .unwrap();
    // A write through the owner's new session orders our read after anything the old keeper
    // could still have sent.
    owner
        .create()
        .creating_parents_if_needed()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&format!("{base}/marker"), b"")
        .await
        .unwrap();
    assert_eq!(look(&observer, &parent, &path).await, (0, None));
    discovery.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_left_by_an_earlier_session_is_replaced() {
    let server = TestingServer::start().await.unwrap();
    let base = unique_root("expiry-stale");
    let (parent, path) = (format!("{base}/api"), format!("{base}/api/a"));
    // A previous incarnation's node, its session still alive.
    let previous = client(&server.connect_string()).await;
    let stale = ServiceInstance::builder("api")
        .id("a")
        .port(1)
        .build()
        .unwrap();
    previous
        .create()
        .creating_parents_if_needed()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&path, stale.to_json().unwrap())
        .await
        .unwrap();
    let owner = client(&server.connect_string()).await;
    let discovery = ServiceDiscovery::builder(owner.clone(), &base)
        .build()
        .unwrap();
    let fresh = stale.to_builder().port(2).build().unwrap();
    discovery.register_service(&fresh).await.unwrap();
    // Replaced at once (register returns with the node in place).
    assert!(
        registered_once(
            &owner,
            &owner,
            &parent,
            &path,
            &fresh,
            previous.session_id().unwrap()
        )
        .await
    );
    // The previous session ending changes nothing.
    previous.close().await.unwrap();
    assert!(registered_once(&owner, &owner, &parent, &path, &fresh, 0).await);
    discovery.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_survive_a_server_restart_then_an_expiry() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let base = unique_root("expiry-restart");
    let (parent, path) = (format!("{base}/api"), format!("{base}/api/a"));
    let owner = client(&server.connect_string()).await;
    let discovery = ServiceDiscovery::builder(owner.clone(), &base)
        .build()
        .unwrap();
    let v1 = ServiceInstance::builder("api")
        .id("a")
        .port(1)
        .build()
        .unwrap();
    discovery.register_service(&v1).await.unwrap();

    server.restart().await.unwrap();
    let v2 = v1.to_builder().port(2).build().unwrap();
    // The update may meet the reconnection; either way the keeper writes it.
    let _ = discovery.update_service(&v2).await;
    let observer = client(&server.connect_string()).await;
    eventually("one node with the update after the restart", || async {
        let (count, node) = look(&observer, &parent, &path).await;
        count == 1
            && node.is_some_and(|(data, session)| {
                data == v2.to_json().unwrap() && Some(session) == owner.session_id()
            })
    })
    .await;

    let old_session = owner.session_id().unwrap();
    owner.inject_session_expiration().await.unwrap();
    eventually("registered once in the new session", || {
        registered_once(&observer, &owner, &parent, &path, &v2, old_session)
    })
    .await;
    discovery.close().await.unwrap();
}
