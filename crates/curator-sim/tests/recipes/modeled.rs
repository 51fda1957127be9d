//! curator-modeled's single-server fault tests under the simulator: a cached view of typed
//! nodes through a partition, a server restart and session expiries at the server; it comes
//! to equal the server, and `wait_for` answers only once it shows the write.

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;
use std::time::Duration;

use curator_framework::listen::ListenerStream;
use curator_framework::{CuratorFramework, Error as ZkError};
use curator_modeled::{CachedModeled, ModelSpec, Modeled, ModeledEvent, Parents, ZNode, ZPath};
use curator_sim::{SimClient, Simulation};
use futures::StreamExt;
use futures::future::try_join_all;

use crate::election::{Elsewhere, WAIT};
use crate::{SEEDS, run, session_of, sim};

type Res<T = ()> = Result<T, Box<dyn Error>>;

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
struct User {
    name: String,
    logins: u32,
}

const ORGS: [&str; 3] = ["a", "b", "c"];

fn users(client: &CuratorFramework, root: &str) -> Res<Modeled<User>> {
    let template = ZPath::parse(&format!("{root}/orgs/{{org}}/users/{{id}}"))?;
    let spec = ModelSpec::<User>::builder(template)
        .parents(Parents::Persistent)
        .set_data_if_exists()
        .build()?;
    Ok(Modeled::new(client.clone(), spec))
}

/// Writes `count` users per org, all requests in flight together.
async fn populate(users: &Modeled<User>, count: u32) -> Res {
    let mut writes = Vec::new();
    for org in ORGS {
        for id in 0..count {
            let user = users.resolve((org, id))?;
            writes.push(async move {
                let model = User {
                    name: format!("{org}-{id}"),
                    logins: 0,
                };
                user.set(&model).await
            });
        }
    }
    try_join_all(writes).await?;
    Ok(())
}

/// Every user on the server, org by org (uncached), sorted by path.
async fn on_the_server(users: &Modeled<User>) -> Res<Vec<ZNode<User>>> {
    let mut all = Vec::new();
    for org in ORGS {
        all.extend(users.resolve([org])?.list().await?);
    }
    all.sort_by_key(|node| node.path.to_string());
    Ok(all)
}

/// Waits (on the cache's events) until the cache lists exactly `expected`.
async fn until_equal(
    what: &str,
    cached: &CachedModeled<User>,
    events: &mut ListenerStream<ModeledEvent<User>>,
    expected: &[ZNode<User>],
) -> Res {
    let converged = tokio::time::timeout(WAIT, async {
        loop {
            if cached.list().await? == expected {
                return Ok::<(), ZkError>(());
            }
            if events.next().await.is_none() {
                return Err(ZkError::Closed);
            }
        }
    })
    .await;
    if !matches!(converged, Ok(Ok(()))) {
        let listed = cached.list().await?;
        let have: BTreeSet<_> = listed.iter().map(|n| format!("{n:?}")).collect();
        let want: BTreeSet<_> = expected.iter().map(|n| format!("{n:?}")).collect();
        return Err(format!(
            "{what}: the cache did not come to equal the server ({converged:?})\nonly cached: {:#?}\nonly on the server: {:#?}",
            have.difference(&want).collect::<Vec<_>>(),
            want.difference(&have).collect::<Vec<_>>()
        )
        .into());
    }
    Ok(())
}

/// Expires `zk`'s session at the server while `host` is partitioned (its client hears of it
/// once repaired).
async fn expire_behind(client: &SimClient, zk: &CuratorFramework, host: &str) -> Res {
    let session = session_of(zk).await?;
    client.faults().partition(host);
    assert!(
        client.faults().expire_session(session),
        "the session was alive"
    );
    Ok(())
}

#[test]
fn the_cache_equals_the_server_after_a_restart_and_an_expiry() {
    const ROOT: &str = "/modeled-cached-faults";
    for seed in SEEDS {
        let mut sim = sim(seed);
        // The cache's client on a host of its own: while it is cut off, a writer changes
        // users.
        let mut away = Elsewhere::host(&mut sim, "cache", |client| async move {
            let zk = client.connect().await?;
            Ok((zk.clone(), vec![zk]))
        });
        sim.client("writer", move |client| async move {
            let zk = away.handed().await?;
            let writer = client.connect().await?;
            let written = users(&writer, ROOT)?;
            populate(&written, 20).await?;

            let cached = users(&zk, ROOT)?.cached()?;
            let mut events = cached.stream();
            cached.start().await?;
            let expected = on_the_server(&written).await?;
            until_equal("the load", &cached, &mut events, &expected).await?;

            // Unseen changes, then a restart.
            client.faults().partition("cache");
            for id in 0..10 {
                let user = written.resolve(("a", id))?;
                let mut model = user.read().await?;
                model.logins += 1;
                user.update(&model).await?;
                written.resolve(("b", id))?.delete().await?;
                written
                    .resolve(("c", 100 + id))?
                    .set(&User {
                        name: format!("new-{id}"),
                        logins: 0,
                    })
                    .await?;
            }
            client.faults().restart_server();
            client.faults().repair("cache");
            let expected = on_the_server(&written).await?;
            until_equal("after the restart", &cached, &mut events, &expected).await?;

            // Unseen changes while the cache's session expires at the server.
            let old = session_of(&zk).await?;
            expire_behind(&client, &zk, "cache").await?;
            for id in 10..20 {
                written.resolve(("a", id))?.delete().await?;
                let user = written.resolve(("b", id))?;
                let mut model = user.read().await?;
                model.name.push_str("-renamed");
                user.update(&model).await?;
            }
            client.faults().repair("cache");
            let expected = on_the_server(&written).await?;
            until_equal("after the expiry", &cached, &mut events, &expected).await?;
            assert_ne!(zk.session_id(), Some(old), "a new session");

            cached.close().await?;
            writer.close().await?;
            drop(away);
            Ok(())
        });
        run(&mut sim);
    }
}

/// (org, id) → user: what the server holds.
type Model = BTreeMap<(String, u32), User>;

const NAMESPACE: &str = "modeled-wait-for";

/// A started client under [`NAMESPACE`] with the session timeout `session`.
async fn namespaced(client: &SimClient, session: Duration) -> Res<CuratorFramework> {
    let zk = client
        .builder()
        .namespace(NAMESPACE)
        .session_timeout(session)
        .build()?;
    zk.start().await?;
    Ok(zk)
}

/// One write through `writer` (round by round: creates, updates, overwrites, deletes, in
/// three orgs), applied to `model`; returns the zxid to wait for.
async fn write(writer: &Modeled<User>, model: &mut Model, round: u32) -> Res<i64> {
    let org = ORGS[(round % 3) as usize].to_owned();
    let id = (round / 3) % 5;
    let node = writer.resolve((org.as_str(), id))?;
    let key = (org, id);
    Ok(match (round % 4, model.get(&key).cloned()) {
        (0, Some(mut user)) => {
            user.logins += 1;
            let stat = node.update(&user).await?;
            model.insert(key, user);
            stat.mzxid
        }
        (1, Some(_)) => {
            node.delete().await?;
            model.remove(&key);
            writer.client().last_zxid()
        }
        _ => {
            let user = User {
                name: format!("{}-{id}-r{round}", key.0),
                logins: round,
            };
            node.set(&user).await?;
            model.insert(key, user);
            writer.client().last_zxid()
        }
    })
}

/// Waits on `cached` for `zxid`, then checks that it lists exactly `model` and reads each
/// user of it.
async fn wait_and_check(
    cached: &CachedModeled<User>,
    zxid: i64,
    model: &Model,
    context: &str,
) -> Res {
    cached
        .wait_for(zxid, WAIT)
        .await
        .map_err(|error| format!("{context}: wait_for({zxid:#x}): {error}"))?;
    let mut listed = Model::new();
    for node in cached.list().await? {
        let path = node.path.to_string();
        let mut parts = path.rsplit('/');
        let id = parts.next().ok_or("an id")?.parse()?;
        let org = parts.nth(1).ok_or("an org")?.to_owned();
        listed.insert((org, id), node.model);
    }
    assert_eq!(
        &listed, model,
        "{context}: the cache after wait_for({zxid:#x})"
    );
    for ((org, id), user) in model {
        let read = cached.resolve((org.as_str(), *id))?.read().await;
        assert_eq!(read.as_ref(), Ok(user), "{context}: {org}/{id}");
    }
    Ok(())
}

#[test]
fn a_cached_view_waits_through_a_dropped_connection_and_a_session_expiry() {
    const ROOT: &str = "/modeled-wait-for-faults";
    for seed in SEEDS {
        let mut sim = Simulation::builder(seed)
            .session_timeout(Duration::from_secs(10))
            .build();
        // The reader on a host of its own, with a short session.
        let mut away = Elsewhere::host(&mut sim, "reader", |client| async move {
            let zk = namespaced(&client, Duration::from_secs(4)).await?;
            let cached = users(&zk, ROOT)?.cached()?;
            cached.start().await?;
            Ok(((zk.clone(), cached), vec![zk]))
        });
        sim.client("writer", move |client| async move {
            let (reader_client, cached) = away.handed().await?;
            let writer = users(&namespaced(&client, Duration::from_secs(10)).await?, ROOT)?;
            let mut model = Model::new();
            let mut round = 0;
            for step in 0..8 {
                let session = session_of(&reader_client).await?;
                let expire = step % 4 == 3;
                if expire {
                    expire_behind(&client, &reader_client, "reader").await?;
                } else {
                    client.faults().partition("reader");
                }
                let mut zxid = 0;
                for _ in 0..4 {
                    zxid = write(&writer, &mut model, round).await?;
                    round += 1;
                }
                // While the link is black-holed the view cannot catch up: a typed timeout.
                if !expire {
                    let waited = Duration::from_millis(300);
                    assert_eq!(
                        cached.wait_for(zxid, waited).await,
                        Err(ZkError::Timeout { waited })
                    );
                }
                client.faults().cut("reader");
                client.faults().repair("reader");
                wait_and_check(&cached, zxid, &model, &format!("step {step}")).await?;
                assert_eq!(reader_client.session_id() != Some(session), expire);
            }
            cached.close().await?;
            writer.client().close().await?;
            drop(away);
            Ok(())
        });
        run(&mut sim);
    }
}
