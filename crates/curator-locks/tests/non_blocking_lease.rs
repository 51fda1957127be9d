//! `NonBlockingLease` against a real ZooKeeper server: one holder per interval, intervals timed
//! by the server's clock, not bound to sessions, kept across a server restart.

use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_locks::{LeaseGrant, NonBlockingLease};
use curator_test::{TestingServer, Timing, eventually, unique_root};
use curator_testkit as testkit;

/// The server's time now: the mtime of a write of a probe node of the test's own.
async fn server_now(client: &CuratorFramework, probe: &str) -> i64 {
    match client.set_data().for_path(probe, b"").await {
        Ok(stat) => stat.mtime,
        Err(_) => {
            let (_, stat) = client
                .create()
                .creating_parents_if_needed()
                .for_path(probe, b"")
                .with_stat()
                .await
                .unwrap();
            stat.mtime
        }
    }
}

/// Grants of different holders never share an interval: sorted by start, each starts at or after
/// the end of the one before (server time); their fencing tokens grow with them.
fn assert_disjoint(grants: &mut [(String, i64, i64, i64)]) {
    grants.sort_by_key(|g| g.1);
    for pair in grants.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert!(
            after.1 >= before.2,
            "{} won at {} inside {}'s interval ending {}",
            after.0,
            after.1,
            before.0,
            before.2
        );
        assert!(after.3 > before.3, "fencing tokens must grow: {grants:?}");
    }
}

fn record(grant: &LeaseGrant) -> (String, i64, i64, i64) {
    (
        grant.holder().to_owned(),
        grant.started_ms(),
        grant.until_ms(),
        grant.fencing_token(),
    )
}

/// Eight sessions contend at once, round after round: exactly one wins each round (the winner
/// then ends its interval early so the next round need not wait).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_contenders_exactly_one_winner_per_interval() {
    let server = TestingServer::start().await.unwrap();
    let path = format!("{}/lease", unique_root("lease-contenders"));
    let mut leases = Vec::new();
    for n in 0..8 {
        let client = testkit::client(&server.connect_string()).await;
        leases.push(NonBlockingLease::new(client, &path, &format!("contender-{n}")).unwrap());
    }
    let mut tokens = Vec::new();
    for round in 0..5 {
        let attempts = leases.iter().cloned().map(|lease| {
            tokio::spawn(async move { lease.try_acquire(Duration::from_secs(600)).await })
        });
        let mut winners = Vec::new();
        for attempt in futures::future::join_all(attempts).await {
            if let Some(grant) = attempt.unwrap().unwrap() {
                winners.push(grant);
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        let grant = winners.pop().unwrap();
        assert_eq!(grant.until_ms() - grant.started_ms(), 600_000);
        tokens.push(grant.fencing_token());
        // Everyone else still finds it taken.
        let winner: usize = grant.holder()["contender-".len()..].parse().unwrap();
        let other = &leases[(winner + 1) % leases.len()];
        assert!(
            other
                .try_acquire(Duration::from_secs(1))
                .await
                .unwrap()
                .is_none()
        );
        assert!(grant.release().await.unwrap(), "still ours, so released");
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

/// A short lease ends on the server's clock: other holders wait for it (polled against the
/// server), and win only at or after its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interval_ends_on_the_servers_clock() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("lease-interval");
    let path = format!("{root}/lease");
    let probe = format!("{root}/probe");
    let client = testkit::client(&server.connect_string()).await;
    let first = NonBlockingLease::new(client.clone(), &path, "first").unwrap();
    let second = NonBlockingLease::new(client.clone(), &path, "second").unwrap();
    let a = first
        .try_acquire(Duration::from_millis(300))
        .await
        .unwrap()
        .expect("a free lease is won");
    assert_eq!(a.holder(), "first");
    assert_eq!(a.until_ms(), a.started_ms() + 300);
    assert_eq!(
        String::from_utf8(testkit::raw(&client, &path).await).unwrap(),
        "lease-v1 300 first"
    );
    let mut grants = vec![record(&a)];
    // Poll until the second contender wins; every refusal must come while the first interval
    // still runs on the server's clock, every win after it.
    let won = std::sync::Arc::new(parking_lot::Mutex::new(None));
    eventually("the second contender wins after the interval", || {
        let (second, client, probe, won) =
            (second.clone(), client.clone(), probe.clone(), won.clone());
        let until = a.until_ms();
        async move {
            let before = server_now(&client, &probe).await;
            match second
                .try_acquire(Duration::from_millis(300))
                .await
                .unwrap()
            {
                Some(grant) => {
                    *won.lock() = Some(grant);
                    true
                }
                None => {
                    assert!(before < until, "refused at {before}, after the end {until}");
                    false
                }
            }
        }
    })
    .await;
    let b = won.lock().take().unwrap();
    grants.push(record(&b));
    assert_disjoint(&mut grants);
    // The first holder now finds the second's interval, or wins after it.
    if let Some(again) = first.try_acquire(Duration::from_millis(300)).await.unwrap() {
        grants.push(record(&again));
        assert_disjoint(&mut grants);
    }
    client.close().await.unwrap();
}

/// The lease is not bound to the holder's session: when it expires, the lease stays taken; the
/// holder (in a new session) can still end it early.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_outlives_its_holders_session() {
    let server = TestingServer::start().await.unwrap();
    let path = format!("{}/lease", unique_root("lease-session"));
    let holder = testkit::client(&server.connect_string()).await;
    let other = testkit::client(&server.connect_string()).await;
    let lease = NonBlockingLease::new(holder.clone(), &path, "cron-run-1").unwrap();
    let rival = NonBlockingLease::new(other.clone(), &path, "cron-run-2").unwrap();
    let grant = lease
        .try_acquire(Duration::from_secs(600))
        .await
        .unwrap()
        .unwrap();
    let session = holder.session_id();
    holder.inject_session_expiration().await.unwrap();
    eventually("the holder's session is replaced", || {
        let holder = holder.clone();
        async move { holder.session_id().is_some_and(|id| Some(id) != session) }
    })
    .await;
    assert!(
        rival
            .try_acquire(Duration::from_secs(600))
            .await
            .unwrap()
            .is_none(),
        "the lease went with the session"
    );
    // A stale release (the rival's, from a grant it never had) cannot exist; the holder's works.
    assert!(grant.release().await.unwrap());
    let taken = rival
        .try_acquire(Duration::from_secs(600))
        .await
        .unwrap()
        .expect("free once released");
    assert_eq!(taken.holder(), "cron-run-2");
    holder.close().await.unwrap();
    other.close().await.unwrap();
}

/// Contenders keep trying, each until it won once, with short intervals, while the server
/// restarts: no two holders ever share an interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_never_gives_one_interval_to_two_holders() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let path = format!("{}/lease", unique_root("lease-restart"));
    let grants = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    let mut clients = Vec::new();
    for n in 0..4 {
        let client = testkit::client(&server.connect_string()).await;
        clients.push(client.clone());
        let lease = NonBlockingLease::new(client, &path, &format!("job-{n}")).unwrap();
        let grants = std::sync::Arc::clone(&grants);
        tasks.push(tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + Timing::new().wait();
            loop {
                assert!(tokio::time::Instant::now() < deadline, "job-{n} never won");
                match lease.try_acquire(Duration::from_millis(300)).await {
                    Ok(Some(grant)) => {
                        grants.lock().push(record(&grant));
                        return;
                    }
                    // Refused, or the server is away: try again.
                    Ok(None) => tokio::time::sleep(Duration::from_millis(20)).await,
                    Err(error) if error.is_retryable() => {}
                    Err(error) => panic!("{error}"),
                }
            }
        }));
    }
    eventually("a first grant", || {
        let grants = std::sync::Arc::clone(&grants);
        async move { !grants.lock().is_empty() }
    })
    .await;
    server.restart().await.unwrap();
    for task in tasks {
        task.await.unwrap();
    }
    let mut grants = grants.lock().clone();
    assert_eq!(grants.len(), 4);
    assert_disjoint(&mut grants);
    for client in clients {
        client.close().await.unwrap();
    }
}

/// A release whose write applied but whose reply was lost still reports `true`: the retry meets
/// `BadVersion` from its own first attempt, and the node holds exactly the release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_whose_reply_was_lost_reports_that_it_applied() {
    let server = TestingServer::start().await.unwrap();
    let proxy = curator_test::FaultProxy::start(&server.connect_string())
        .await
        .unwrap();
    let path = format!("{}/lease", unique_root("lease-lost-release-reply"));
    let client = testkit::client(&proxy.connect_string()).await;
    let observer = testkit::client(&server.connect_string()).await;
    let lease = NonBlockingLease::new(client.clone(), &path, "cron@host-1").unwrap();
    let grant = lease
        .try_acquire(Duration::from_secs(600))
        .await
        .unwrap()
        .expect("a free lease is won");

    proxy.pause_replies();
    let release = tokio::spawn(grant.release());
    eventually("the release reaches the server", || async {
        testkit::raw(&observer, &path).await == b"lease-v1 0 cron@host-1"
    })
    .await;
    proxy.drop_connections();
    proxy.resume();
    let released = tokio::time::timeout(Timing::new().wait(), release)
        .await
        .unwrap()
        .unwrap();
    assert!(
        released.unwrap(),
        "the release applied: nobody else wrote the lease"
    );
    // And the lease is free for the next contender at once.
    let other = NonBlockingLease::new(observer.clone(), &path, "cron@host-2").unwrap();
    assert!(
        other
            .try_acquire(Duration::from_secs(1))
            .await
            .unwrap()
            .is_some()
    );
    client.close().await.unwrap();
    observer.close().await.unwrap();
}
