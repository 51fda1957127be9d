//! Read-your-writes through `CachedModeled::wait_for`: a write through one client's `Modeled`,
//! then `wait_for(zxid)` on another client's cached view, then the view reads exactly what was
//! written, every round; through a dropped connection and a session expiry, under a namespace.

use std::collections::BTreeMap;
use std::time::Duration;

use curator_framework::{CuratorFramework, Error};
use curator_modeled::{CachedModeled, ModelSpec, Modeled, Parents, ZPath};
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
struct User {
    name: String,
    logins: u32,
}

/// (org, id) → user: what the server holds.
type Model = BTreeMap<(String, u32), User>;

const NAMESPACE: &str = "modeled-wait-for";

async fn client(connect: &str, session_timeout: Duration) -> CuratorFramework {
    curator_testkit::started(
        curator_testkit::builder(connect, session_timeout).namespace(NAMESPACE),
    )
    .await
}

fn users(client: &CuratorFramework, root: &str) -> Modeled<User> {
    let template = ZPath::parse(&format!("{root}/orgs/{{org}}/users/{{id}}")).unwrap();
    let spec = ModelSpec::<User>::builder(template)
        .parents(Parents::Persistent)
        .set_data_if_exists()
        .build()
        .unwrap();
    Modeled::new(client.clone(), spec)
}

/// One write through `writer` (round by round: creates, updates, overwrites, deletes, in
/// three orgs), applied to `model`; returns the zxid to wait for.
async fn write(writer: &Modeled<User>, model: &mut Model, round: u32) -> i64 {
    let org = ["a", "b", "c"][(round % 3) as usize].to_owned();
    let id = (round / 3) % 5;
    let node = writer.resolve((org.as_str(), id)).unwrap();
    let key = (org, id);
    match (round % 4, model.get(&key).cloned()) {
        (0, Some(mut user)) => {
            user.logins += 1;
            let stat = node.update(&user).await.unwrap();
            model.insert(key, user);
            stat.mzxid
        }
        (1, Some(_)) => {
            node.delete().await.unwrap();
            model.remove(&key);
            writer.client().last_zxid()
        }
        _ => {
            let user = User {
                name: format!("{}-{id}-r{round}", key.0),
                logins: round,
            };
            node.set(&user).await.unwrap();
            model.insert(key, user);
            writer.client().last_zxid()
        }
    }
}

/// Waits on `cached` for `zxid`, then checks that it lists exactly `model` and reads each
/// user of it.
async fn wait_and_check(cached: &CachedModeled<User>, zxid: i64, model: &Model, context: &str) {
    cached
        .wait_for(zxid, Timing::new().wait())
        .await
        .unwrap_or_else(|error| panic!("{context}: wait_for({zxid:#x}): {error}"));
    let listed: Model = cached
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|node| {
            let path = node.path.to_string();
            let mut parts = path.rsplit('/');
            let id = parts.next().unwrap().parse().unwrap();
            let org = parts.nth(1).unwrap().to_owned();
            ((org, id), node.model)
        })
        .collect();
    assert_eq!(
        &listed, model,
        "{context}: the cache after wait_for({zxid:#x})"
    );
    for ((org, id), user) in model {
        let read = cached.resolve((org.as_str(), *id)).unwrap().read().await;
        assert_eq!(read.as_ref(), Ok(user), "{context}: {org}/{id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_view_reads_each_write_of_another_client_once_wait_for_returns() {
    let server = TestingServer::start().await.unwrap();
    let session = Timing::new().scale(Duration::from_secs(15));
    let root = unique_root("modeled-wait-for");
    let writer = users(&client(&server.connect_string(), session).await, &root);
    let reader_client = client(&server.connect_string(), session).await;
    let cached = users(&reader_client, &root).cached().unwrap();
    assert_eq!(
        cached.wait_for(0, Duration::from_secs(1)).await,
        Err(Error::NotStarted)
    );
    cached.start().await.unwrap();

    let mut model = Model::new();
    let mut stale = 0;
    for round in 0..200 {
        let zxid = write(&writer, &mut model, round).await;
        if cached.list().await.unwrap().len() != model.len() {
            stale += 1;
        }
        wait_and_check(&cached, zxid, &model, &format!("round {round}")).await;
    }
    println!("without waiting, the view's listing lagged in {stale} of 200 rounds");
    cached.close().await.unwrap();
    assert_eq!(
        cached.wait_for(0, Duration::from_secs(1)).await,
        Err(Error::Closed)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_view_waits_through_a_dropped_connection_and_a_session_expiry() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let session = Timing::new().scale(Duration::from_secs(15));
    let root = unique_root("modeled-wait-for-faults");
    let writer = users(&client(&server.connect_string(), session).await, &root);
    let reader_client = client(&proxy.connect_string(), Timing::new().session_timeout()).await;
    let cached = users(&reader_client, &root).cached().unwrap();
    cached.start().await.unwrap();
    let mut model = Model::new();
    let mut round = 0;
    for step in 0..8 {
        let session = reader_client.session_id();
        let expire = step % 4 == 3;
        if expire {
            curator_testkit::expire_behind(&reader_client, &proxy, &server.connect_string()).await;
        } else {
            proxy.pause();
        }
        let mut zxid = 0;
        for _ in 0..4 {
            zxid = write(&writer, &mut model, round).await;
            round += 1;
        }
        // While the link is black-holed the view cannot catch up: a typed timeout.
        if !expire {
            let waited = Duration::from_millis(300);
            assert_eq!(
                cached.wait_for(zxid, waited).await,
                Err(Error::Timeout { waited })
            );
        }
        proxy.drop_connections();
        proxy.resume();
        wait_and_check(&cached, zxid, &model, &format!("step {step}")).await;
        assert_eq!(reader_client.session_id() != session, expire);
    }
}
