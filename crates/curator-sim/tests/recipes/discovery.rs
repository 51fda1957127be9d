//! curator-discovery's single-server fault tests under the simulator: registrations through
//! session expiry and a server restart (back exactly once, with the latest data, owned by the
//! new session), and a cache that sees an instance go with its session and come back.
//!
//! The server's state is read from the model directly (no observer client).

use std::sync::Arc;
use std::time::Duration;

use curator_discovery::{ServiceCacheEvent, ServiceDiscovery, ServiceInstance};
use curator_framework::{CreateMode, CuratorFramework};
use curator_sim::SimClient;
use futures::StreamExt;

use crate::{SEEDS, run, session_of, sim, until};

type BoxError = Box<dyn std::error::Error>;

/// How long a test waits for what the real test waits for "in time".
const WAIT: Duration = Duration::from_secs(30);

async fn next<S: futures::Stream + Unpin>(events: &mut S) -> Result<S::Item, BoxError> {
    tokio::time::timeout(WAIT, events.next())
        .await
        .map_err(|_| "a cache event in time")?
        .ok_or_else(|| "the stream goes on".into())
}

/// The number of children of `parent` on the server, and the data and owner of `path`.
fn look(client: &SimClient, parent: &str, path: &str) -> (usize, Option<(Vec<u8>, i64)>) {
    client.faults().server().with_model(|model| {
        (
            model.children(parent).map_or(0, |names| names.len()),
            model
                .node(path)
                .map(|(data, stat)| (data, stat.ephemeral_owner)),
        )
    })
}

/// A discovery on `owner` under `base` that registered `api/a` on port 1 and then updated it to
/// port 2; the updated instance.
async fn registered_and_updated(
    owner: &CuratorFramework,
    base: &str,
) -> Result<(ServiceDiscovery, ServiceInstance), BoxError> {
    let discovery = ServiceDiscovery::builder(owner.clone(), base).build()?;
    let v1 = ServiceInstance::builder("api").id("a").port(1).build()?;
    discovery.register_service(&v1).await?;
    let v2 = v1.to_builder().port(2).build()?;
    discovery.update_service(&v2).await?;
    Ok((discovery, v2))
}

/// Exactly one node under `parent`: `path`, holding `instance`, owned by `owner`'s live session
/// (and not by `old_session`).
fn registered_once(
    client: &SimClient,
    owner: &CuratorFramework,
    (parent, path): (&str, &str),
    instance: &ServiceInstance,
    old_session: i64,
) -> bool {
    let (count, node) = look(client, parent, path);
    count == 1
        && node.is_some_and(|(data, session)| {
            instance.to_json().is_ok_and(|json| data == json)
                && session != old_session
                && Some(session) == owner.session_id()
        })
}

#[test]
fn an_instance_leaves_the_cache_when_its_session_expires_and_comes_back_once() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        let base = "/expiry-cache";
        let (parent, path) = ("/expiry-cache/api", "/expiry-cache/api/a");
        let (registered_tx, registered_rx) = tokio::sync::oneshot::channel();
        let close = Arc::new(tokio::sync::Notify::new());
        // The owner, on a host of its own: the test keeps it away from the server while the
        // server expires its session.
        sim.client("owner", {
            let close = Arc::clone(&close);
            move |client| async move {
                let owner = client.connect().await?;
                let (registrar, v2) = registered_and_updated(&owner, base).await?;
                let _ = registered_tx.send((owner, v2));
                close.notified().await;
                registrar.close().await?;
                Ok(())
            }
        });
        sim.client("observer", move |client| async move {
            let (owner, v2) = tokio::time::timeout(WAIT, registered_rx).await??;
            let observer = client.connect().await?;
            let discovery = ServiceDiscovery::builder(observer.clone(), base).build()?;
            let cache = discovery.service_cache_builder("api").build()?;
            let mut events = cache.listenable().stream();
            cache.start().await?;
            assert_eq!(next(&mut events).await?, ServiceCacheEvent::Initialized);
            assert_eq!(cache.instances(), std::slice::from_ref(&v2));

            let old_session = session_of(&owner).await?;
            client.faults().partition("owner");
            assert!(client.faults().expire_session(old_session));
            assert_eq!(
                next(&mut events).await?,
                ServiceCacheEvent::Removed(v2.clone())
            );
            assert_eq!(cache.instances(), []);

            // The owner gets through again, learns its session is gone, makes a new one and
            // registers the instance again: once, with the latest data.
            client.faults().repair("owner");
            assert_eq!(
                next(&mut events).await?,
                ServiceCacheEvent::Added(v2.clone())
            );
            until("registered once in the new session", WAIT, || async {
                registered_once(&client, &owner, (parent, path), &v2, old_session)
            })
            .await?;
            assert_eq!(cache.instances(), std::slice::from_ref(&v2));

            close.notify_one();
            assert_eq!(
                next(&mut events).await?,
                ServiceCacheEvent::Removed(v2.clone())
            );
            discovery.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn a_registration_comes_back_once_with_its_latest_data_after_its_session_ends() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let base = "/expiry-own";
            let (parent, path) = ("/expiry-own/api", "/expiry-own/api/a");
            let owner = client.connect().await?;
            let observer = client.connect().await?;
            let (discovery, v2) = registered_and_updated(&owner, base).await?;

            for round in 0..3 {
                let old_session = session_of(&owner).await?;
                client.faults().expire_session(old_session);
                until(
                    &format!("registered once after expiry {round}"),
                    WAIT,
                    || async { registered_once(&client, &owner, (parent, path), &v2, old_session) },
                )
                .await?;
            }
            // Deleted by someone else: it comes back too.
            observer.delete().for_path(path).await?;
            let session = session_of(&owner).await?;
            until("re-created after a deletion", WAIT, || async {
                let (count, node) = look(&client, parent, path);
                count == 1 && node.is_some_and(|(_, owner)| owner == session)
            })
            .await?;

            // Unregistered: gone for good, also through another expiry.
            discovery.unregister_service(&v2).await?;
            client.faults().expire_session(session_of(&owner).await?);
            owner.block_until_connected(WAIT).await?;
            // A write through the owner's new session orders our read after anything the old
            // keeper could still have sent.
            owner
                .create()
                .creating_parents_if_needed()
                .with_mode(CreateMode::Ephemeral)
                .for_path(&format!("{base}/marker"), b"")
                .await?;
            assert_eq!(look(&client, parent, path), (0, None));
            discovery.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn registrations_survive_a_server_restart_then_an_expiry() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let base = "/expiry-restart";
            let (parent, path) = ("/expiry-restart/api", "/expiry-restart/api/a");
            let owner = client.connect().await?;
            let discovery = ServiceDiscovery::builder(owner.clone(), base).build()?;
            let v1 = ServiceInstance::builder("api").id("a").port(1).build()?;
            discovery.register_service(&v1).await?;

            client.faults().restart_server();
            let v2 = v1.to_builder().port(2).build()?;
            // The update may meet the reconnection; either way the keeper writes it.
            let _ = discovery.update_service(&v2).await;
            until(
                "one node with the update after the restart",
                WAIT,
                || async {
                    let (count, node) = look(&client, parent, path);
                    count == 1
                        && node.is_some_and(|(data, session)| {
                            v2.to_json().is_ok_and(|json| data == json)
                                && Some(session) == owner.session_id()
                        })
                },
            )
            .await?;

            let old_session = session_of(&owner).await?;
            client.faults().expire_session(old_session);
            until("registered once in the new session", WAIT, || async {
                registered_once(&client, &owner, (parent, path), &v2, old_session)
            })
            .await?;
            discovery.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn the_builder_instance_is_registered_at_start_and_watched_when_asked() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let base = "/discovery-this";
            let c = client.connect().await?;
            let admin = client.connect().await?;
            let me = ServiceInstance::builder("api")
                .id("me")
                .address("127.0.0.1")
                .port(1)
                .payload(serde_json::json!({"port": 1}))
                .build()?;
            let discovery = ServiceDiscovery::builder(c.clone(), base)
                .this_instance(me.clone())
                .watch_instances(true)
                .build()?;
            assert_eq!(discovery.query_for_instance("api", "me").await?, None);
            discovery.start().await?;
            assert_eq!(
                discovery.query_for_instance("api", "me").await?,
                Some(me.clone())
            );
            // Someone else disables it; with watch_instances the discovery adopts that.
            let disabled = me.to_builder().enabled(false).build()?;
            admin
                .set_data()
                .for_path(&format!("{base}/api/me"), disabled.to_json()?)
                .await?;
            until("the change is adopted", WAIT, || async {
                discovery.registered_instances().await == [disabled.clone()]
            })
            .await?;
            // So it comes back disabled after its session ends.
            client.faults().expire_session(session_of(&c).await?);
            let json = disabled.to_json()?;
            until("re-registered, still disabled", WAIT, || async {
                let (_, node) = look(&client, &format!("{base}/api"), &format!("{base}/api/me"));
                node.is_some_and(|(data, owner)| Some(owner) == c.session_id() && data == json)
            })
            .await?;
            discovery.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}
