//! Optimistic transactions against a real server: conflicts run the function again, reads are
//! repeatable and see the run's writes, a commit whose reply is lost (with the connection, or
//! with the session) is applied exactly once, and eight clients moving money between ten
//! accounts for a minute under faults conserve the total and never apply a transfer twice.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use curator_framework::{CuratorFramework, Error};
use curator_test::{FaultProxy, TestingServer, Timing, expire_session, unique_root};
use curator_testkit as testkit;
use curator_values::optimistic::{MARKER_PREFIX, Optimistic};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn number(data: Option<Vec<u8>>) -> i64 {
    data.map(|d| String::from_utf8(d).unwrap().parse().unwrap())
        .unwrap_or(0)
}

async fn read(client: &CuratorFramework, path: &str) -> i64 {
    number(Some(client.get_data().for_path(path).await.unwrap().0))
}

async fn make(client: &CuratorFramework, path: &str, value: &str) {
    client
        .create()
        .creating_parents_if_needed()
        .for_path(path, value)
        .await
        .unwrap();
}

async fn markers(client: &CuratorFramework, dir: &str) -> Vec<String> {
    match client.get_children().for_path(dir).await {
        Ok((children, _)) => children,
        Err(Error::NoNode) => Vec::new(),
        Err(error) => panic!("{error}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicts_run_again_and_commit_once() {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let other = testkit::client(&server.connect_string()).await;
    let root = unique_root("optimistic");
    let (a, b, txns) = (
        format!("{root}/a"),
        format!("{root}/b"),
        format!("{root}/txn"),
    );
    make(&client, &a, "100").await;
    make(&client, &b, "0").await;
    let runner = Optimistic::builder(client.clone(), &txns).build().unwrap();
    let (a, b, other) = (&a, &b, &other);

    // The first run is overtaken by another writer between its reads and its commit.
    let runs = &AtomicU32::new(0);
    let moved = runner
        .run(|txn| async move {
            let run = runs.fetch_add(1, Ordering::SeqCst);
            let from = number(txn.get(a).await?);
            let to = number(txn.get(b).await?);
            if run == 0 {
                other.set_data().for_path(a, "50").await?;
            }
            // Reads are repeatable.
            assert_eq!(number(txn.get(a).await?), from);
            txn.set(a, (from - 10).to_string());
            txn.set(b, (to + 10).to_string());
            // And see the run's own writes.
            assert_eq!(number(txn.get(a).await?), from - 10);
            Ok(from)
        })
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(moved, 50, "the committed run read the other writer's value");
    assert_eq!((read(&client, a).await, read(&client, b).await), (40, 10));
    assert_eq!(runner.pending_markers().len(), 1);
    let left = markers(&client, &txns).await;
    assert_eq!(left.len(), 1);
    assert!(left[0].starts_with(MARKER_PREFIX), "{left:?}");

    // A node read as absent and created conflicts if it appeared meanwhile.
    let c = &format!("{root}/c");
    let runs = &AtomicU32::new(0);
    runner
        .run(|txn| async move {
            let run = runs.fetch_add(1, Ordering::SeqCst);
            if txn.get(c).await?.is_none() {
                if run == 0 {
                    other.create().for_path(c, "7").await?;
                }
                txn.create(c, "1");
            } else {
                txn.delete(c);
            }
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(client.check_exists().for_path(c).await.unwrap(), None);
    // The earlier marker went with this commit.
    assert_eq!(markers(&client, &txns).await.len(), 1);

    // A read-only run commits its checks; a function's error commits nothing.
    let total = runner
        .run(|txn| async move { Ok(number(txn.get(a).await?) + number(txn.get(b).await?)) })
        .await
        .unwrap();
    assert_eq!(total, 50);
    let error = runner
        .run(|txn| async move {
            txn.set(a, "0");
            Err::<(), _>(Error::InvalidArgument("changed my mind".into()))
        })
        .await
        .unwrap_err();
    assert_eq!(error, Error::InvalidArgument("changed my mind".into()));
    assert_eq!(read(&client, a).await, 40);

    // A write that cannot succeed is not retried forever.
    let missing = &format!("{root}/missing");
    let error = runner
        .run(|txn| async move {
            txn.set(missing, "x");
            Ok(())
        })
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Transaction { .. }), "{error:?}");

    runner.flush_markers().await.unwrap();
    assert!(runner.pending_markers().is_empty());
    assert!(markers(&client, &txns).await.is_empty());
    client.close().await.unwrap();
    other.close().await.unwrap();
}

/// The commit reaches the server but its reply is held back; the connection is then cut (or the
/// session expired at the server). The transfer is applied once, and `run` says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_reply_is_lost_applies_once() {
    let server = TestingServer::start().await.unwrap();
    let observer = testkit::client(&server.connect_string()).await;
    let root = unique_root("optimistic-lost");
    let a = format!("{root}/a");
    make(&observer, &a, "100").await;
    // The markers' directory exists already (the first commit of a runner makes it otherwise,
    // after a NoNode: a reply the paused proxy would hold back).
    make(&observer, &format!("{root}/txn"), "").await;
    for expire in [false, true] {
        let proxy = Arc::new(FaultProxy::start(&server.connect_string()).await.unwrap());
        let client = testkit::client(&proxy.connect_string()).await;
        let runner = Optimistic::builder(client.clone(), &format!("{root}/txn"))
            .build()
            .unwrap();
        let before = read(&observer, &a).await;
        let (_, _, changed) = observer.get_data().watched().for_path(&a).await.unwrap();
        let session = client.session_id().unwrap();
        let credentials = proxy.session(session).unwrap();
        let (connect, unblock) = (server.connect_string(), Arc::clone(&proxy));
        let fault = tokio::spawn(async move {
            // Once the server applied the commit, lose its reply with the connection.
            changed.changed().await;
            if expire {
                unblock.pause();
                expire_session(&connect, &credentials, Timing::new().wait())
                    .await
                    .unwrap();
            }
            unblock.drop_connections();
            unblock.resume();
        });
        let runs = &AtomicU32::new(0);
        let (a, proxy) = (&a, &proxy);
        runner
            .run(|txn| async move {
                let run = runs.fetch_add(1, Ordering::SeqCst);
                let value = number(txn.get(a).await?);
                txn.set(a, (value - 10).to_string());
                if run == 0 {
                    proxy.pause_replies();
                }
                Ok(())
            })
            .await
            .unwrap();
        fault.await.unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1, "expire: {expire}");
        assert_eq!(read(&observer, a).await, before - 10, "expire: {expire}");
        client.close().await.unwrap();
    }
    observer.close().await.unwrap();
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct Account {
    balance: i64,
    /// The transfers taken out of this account, by id, in order.
    applied: Vec<String>,
}

enum Outcome {
    Applied,
    NotApplied,
    Unknown,
}

/// Eight clients, each through a proxy of its own, move amounts between ten accounts for a
/// minute while connections are cut, replies lost, sessions expired and the server restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_under_faults_conserve_the_total_and_apply_once() {
    const ACCOUNTS: usize = 10;
    const CLIENTS: usize = 8;
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let root = unique_root("optimistic-bank");
    let setup = testkit::client(&server.connect_string()).await;
    let root = Arc::new(root);
    let account = {
        let root = Arc::clone(&root);
        move |i: usize| format!("{root}/acct-{i}")
    };
    for i in 0..ACCOUNTS {
        let data = serde_json::to_vec(&Account {
            balance: 1000,
            applied: Vec::new(),
        })
        .unwrap();
        make(&setup, &account(i), std::str::from_utf8(&data).unwrap()).await;
    }
    setup.close().await.unwrap();

    let mut proxies = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let proxy = Arc::new(FaultProxy::start(&server.connect_string()).await.unwrap());
        clients.push(testkit::client(&proxy.connect_string()).await);
        proxies.push(proxy);
    }
    let (stop_sender, stop) = tokio::sync::watch::channel(false);
    let workers = clients.iter().enumerate().map(|(k, client)| {
        let runner = Optimistic::builder(client.clone(), &format!("{root}/txn"))
            .build()
            .unwrap();
        let (stop, account) = (stop.clone(), account.clone());
        async move {
            let mut rng = StdRng::seed_from_u64(k as u64);
            let mut outcomes = BTreeMap::new();
            let mut n = 0;
            while !*stop.borrow() {
                n += 1;
                let id = format!("w{k}-{n}");
                let from = rng.random_range(0..ACCOUNTS);
                let to = (from + rng.random_range(1..ACCOUNTS)) % ACCOUNTS;
                let amount = rng.random_range(1..=50);
                let (id_ref, account) = (&id, &account);
                let result = runner
                    .run(|txn| async move {
                        let load = |data: Option<Vec<u8>>| -> Account {
                            serde_json::from_slice(&data.unwrap_or_default()).unwrap()
                        };
                        let mut source = load(txn.get(&account(from)).await?);
                        let mut target = load(txn.get(&account(to)).await?);
                        if source.balance < amount {
                            return Ok(false);
                        }
                        source.balance -= amount;
                        source.applied.push(id_ref.clone());
                        target.balance += amount;
                        txn.set(&account(from), serde_json::to_vec(&source).unwrap());
                        txn.set(&account(to), serde_json::to_vec(&target).unwrap());
                        Ok(true)
                    })
                    .await;
                let outcome = match result {
                    Ok(true) => Outcome::Applied,
                    Ok(false) | Err(Error::Transaction { .. }) => Outcome::NotApplied,
                    Err(Error::Closed) => break,
                    Err(_) => Outcome::Unknown,
                };
                outcomes.insert(id, outcome);
            }
            outcomes
        }
    });
    let workers = tokio::spawn(futures::future::join_all(workers));

    // Faults, one after another, for a minute.
    let mut rng = StdRng::seed_from_u64(20_261_124);
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut restarts = 0;
    while tokio::time::Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(rng.random_range(500..2500))).await;
        let k = rng.random_range(0..CLIENTS);
        match rng.random_range(0..10) {
            0..=3 => proxies[k].drop_connections(),
            4..=5 => {
                proxies[k].pause_replies();
                tokio::time::sleep(Duration::from_millis(rng.random_range(10..300))).await;
                proxies[k].drop_connections();
                proxies[k].resume();
            }
            6..=8 => {
                if let Some(session) = clients[k].session_id() {
                    let credentials = proxies[k].session(session);
                    if let Some(credentials) = credentials {
                        proxies[k].pause();
                        let _ = expire_session(
                            &server.connect_string(),
                            &credentials,
                            Timing::new().wait(),
                        )
                        .await;
                        proxies[k].resume();
                    }
                }
            }
            _ => {
                server.restart().await.unwrap();
                restarts += 1;
            }
        }
    }
    stop_sender.send_replace(true);
    let outcomes: Vec<BTreeMap<String, Outcome>> = workers.await.unwrap();

    let checker = testkit::client(&server.connect_string()).await;
    let mut total = 0;
    let mut taken = Vec::new();
    for i in 0..ACCOUNTS {
        let (data, _) = checker.get_data().for_path(&account(i)).await.unwrap();
        let state: Account = serde_json::from_slice(&data).unwrap();
        total += state.balance;
        taken.extend(state.applied);
    }
    assert_eq!(total, 1000 * ACCOUNTS as i64, "the total is conserved");
    let distinct: BTreeSet<&String> = taken.iter().collect();
    assert_eq!(distinct.len(), taken.len(), "a transfer applied twice");
    let (mut applied, mut unknown) = (0, 0);
    for (id, outcome) in outcomes.iter().flatten() {
        match outcome {
            Outcome::Applied => {
                applied += 1;
                assert!(distinct.contains(id), "{id} said applied but is not");
            }
            Outcome::NotApplied => assert!(!distinct.contains(id), "{id} said not applied but is"),
            Outcome::Unknown => unknown += 1,
        }
    }
    assert!(applied > 100, "only {applied} transfers applied");
    eprintln!(
        "{applied} transfers applied, {} in all, {unknown} unknown, {restarts} restarts",
        taken.len()
    );
    checker.close().await.unwrap();
    for client in clients {
        client.close().await.unwrap();
    }
}
