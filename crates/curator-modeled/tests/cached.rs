//! The cached variant against a real server: reads wait for the initial load, typed events
//! for the template's nodes only, and the cache equals the server after a server restart and
//! a session expiry with writes it could not see.

use std::collections::BTreeSet;

use curator_framework::listen::ListenerStream;
use curator_framework::{CuratorFramework, Error};
use curator_modeled::{CachedModeled, ModelSpec, Modeled, ModeledEvent, Parents, ZNode, ZPath};
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use futures::StreamExt;
use futures::future::try_join_all;

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
struct User {
    name: String,
    logins: u32,
}

const ORGS: [&str; 3] = ["a", "b", "c"];

fn users(client: &CuratorFramework, root: &str) -> Modeled<User> {
    let template = ZPath::parse(&format!("{root}/orgs/{{org}}/users/{{id}}")).unwrap();
    let spec = ModelSpec::<User>::builder(template)
        .parents(Parents::Persistent)
        .set_data_if_exists()
        .build()
        .unwrap();
    Modeled::new(client.clone(), spec)
}

/// Writes `count` users per org, all requests in flight together.
async fn populate(users: &Modeled<User>, count: u32) {
    let writes = ORGS.iter().flat_map(|org| {
        (0..count).map(move |id| {
            let user = users.resolve((*org, id)).unwrap();
            async move {
                let model = User {
                    name: format!("{org}-{id}"),
                    logins: 0,
                };
                user.set(&model).await
            }
        })
    });
    try_join_all(writes).await.unwrap();
}

/// Every user on the server, org by org (uncached), sorted by path.
async fn on_the_server(users: &Modeled<User>) -> Vec<ZNode<User>> {
    let mut all = Vec::new();
    for org in ORGS {
        all.extend(users.resolve([org]).unwrap().list().await.unwrap());
    }
    all.sort_by_key(|node| node.path.to_string());
    all
}

/// Waits (on the cache's events) until the cache lists exactly `expected`.
async fn until_equal(
    what: &str,
    cached: &CachedModeled<User>,
    events: &mut ListenerStream<ModeledEvent<User>>,
    expected: &[ZNode<User>],
) {
    let converged = tokio::time::timeout(Timing::new().wait(), async {
        loop {
            if cached.list().await.unwrap() == expected {
                return;
            }
            events.next().await.expect("the cache's events go on");
        }
    })
    .await;
    if converged.is_err() {
        let listed = cached.list().await.unwrap();
        let have: BTreeSet<_> = listed.iter().map(|n| format!("{n:?}")).collect();
        let want: BTreeSet<_> = expected.iter().map(|n| format!("{n:?}")).collect();
        panic!(
            "{what}: the cache did not come to equal the server\nonly cached: {:#?}\nonly on the server: {:#?}",
            have.difference(&want).collect::<Vec<_>>(),
            want.difference(&have).collect::<Vec<_>>()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_wait_for_the_initial_load() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let writer = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("modeled-cached");
    let users = users(&client, &root);
    populate(&users, 100).await;
    // Nodes beside and below the template's: cached, never reported or listed.
    for other in ["/orgs/a/settings", "/orgs/a/users/1/sessions"] {
        writer
            .create()
            .for_path(&format!("{root}{other}"), b"x")
            .await
            .unwrap();
    }

    let cached = users.cached().unwrap();
    let last = cached.resolve(("c", 99)).unwrap();
    assert_eq!(last.read().await, Err(Error::NotStarted));
    assert!(last.current().is_none());
    let mut events = cached.stream();
    cached.start().await.unwrap();
    // No wait for the load before the read: the read waits.
    assert_eq!(last.read().await.unwrap().name, "c-99");
    assert!(last.current().is_some());
    assert_eq!(cached.list().await.unwrap(), on_the_server(&users).await);
    assert_eq!(
        cached.resolve(["b"]).unwrap().list().await.unwrap().len(),
        100
    );
    let directory = cached
        .with_path(ZPath::parse(&format!("{root}/orgs/a/users")).unwrap())
        .children()
        .await
        .unwrap();
    assert_eq!(directory.len(), 100);

    // The initial load reported each user once, and nothing else, before `Initialized`.
    let mut created = BTreeSet::new();
    loop {
        match events.next().await.unwrap() {
            ModeledEvent::Created(node) => {
                assert!(created.insert(node.path.to_string()), "{:?}", node.path)
            }
            ModeledEvent::Initialized => break,
            other => panic!("unexpected during the load: {other:?}"),
        }
    }
    assert_eq!(created.len(), 300);

    // Later changes arrive typed; a node that is not a user is reported, not dropped.
    let changed = users.resolve(("a", 5)).unwrap();
    let model = User {
        name: "a-5".into(),
        logins: 1,
    };
    changed.update(&model).await.unwrap();
    users.resolve(("b", 7)).unwrap().delete().await.unwrap();
    let bad = format!("{root}/orgs/c/users/bad");
    writer.create().for_path(&bad, b"not json").await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        seen.push(events.next().await.unwrap());
    }
    assert!(matches!(&seen[0], ModeledEvent::Changed(node) if node.model == model));
    assert!(matches!(&seen[1], ModeledEvent::Deleted { path, .. }
        if path.to_string() == format!("{root}/orgs/b/users/7")));
    assert!(
        matches!(&seen[2], ModeledEvent::Undecodable { path, error: Error::Decode { .. } }
        if path.to_string() == bad)
    );
    assert_eq!(
        cached.resolve(("a", 5)).unwrap().read().await.unwrap(),
        model
    );
    assert_eq!(
        cached.resolve(("b", 7)).unwrap().read().await,
        Err(Error::NoNode)
    );
    match cached.resolve(["c"]).unwrap().list().await {
        Err(Error::Decode { path, .. }) => assert_eq!(path, bad),
        other => panic!("expected a decode error, got {other:?}"),
    }

    // Paths the cache does not hold are refused, not answered with a false NoNode.
    let outside = cached.with_path(ZPath::parse("/elsewhere/x").unwrap());
    assert!(matches!(
        outside.read().await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        cached.read().await,
        Err(Error::InvalidArgument(_))
    ));

    cached.close().await.unwrap();
    assert_eq!(last.read().await, Err(Error::Closed));
    assert_eq!(cached.start().await, Err(Error::Closed));
    client.close().await.unwrap();
    writer.close().await.unwrap();
}

/// The cache's client talks through a proxy: while it is cut off, a writer changes users; a
/// server restart and then an expiry of the cache's session (at the server) come in between.
/// Each time the cache comes to equal the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_equals_the_server_after_a_restart_and_an_expiry() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = curator_testkit::client(&proxy.connect_string()).await;
    let writer = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("modeled-cached-faults");
    let written = users(&writer, &root);
    populate(&written, 40).await;

    let cached = users(&client, &root).cached().unwrap();
    let mut events = cached.stream();
    cached.start().await.unwrap();
    until_equal(
        "the load",
        &cached,
        &mut events,
        &on_the_server(&written).await,
    )
    .await;

    // Unseen changes, then a restart.
    proxy.pause();
    for id in 0..10 {
        let user = written.resolve(("a", id)).unwrap();
        let mut model = user.read().await.unwrap();
        model.logins += 1;
        user.update(&model).await.unwrap();
        written.resolve(("b", id)).unwrap().delete().await.unwrap();
        written
            .resolve(("c", 100 + id))
            .unwrap()
            .set(&User {
                name: format!("new-{id}"),
                logins: 0,
            })
            .await
            .unwrap();
    }
    server.restart().await.unwrap();
    proxy.resume();
    until_equal(
        "after the restart",
        &cached,
        &mut events,
        &on_the_server(&written).await,
    )
    .await;

    // Unseen changes while the cache's session expires at the server.
    let old = client.session_id().unwrap();
    curator_testkit::expire_behind(&client, &proxy, &server.connect_string()).await;
    for id in 10..20 {
        written.resolve(("a", id)).unwrap().delete().await.unwrap();
        let user = written.resolve(("b", id)).unwrap();
        let mut model = user.read().await.unwrap();
        model.name.push_str("-renamed");
        user.update(&model).await.unwrap();
    }
    proxy.resume();
    until_equal(
        "after the expiry",
        &cached,
        &mut events,
        &on_the_server(&written).await,
    )
    .await;
    assert_ne!(client.session_id(), Some(old), "a new session");

    cached.close().await.unwrap();
    client.close().await.unwrap();
    writer.close().await.unwrap();
}
