//! A hold's deadline (`Hold::valid_until`) and jeopardy (`Hold::jeopardy`), against a real
//! server with a black-holed link.

use curator_framework::recipe::Hold;
use curator_framework::state::ConnectionStateErrorPolicy;
use curator_locks::InterProcessMutex;
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use curator_testkit as testkit;
use tokio::time::Instant;

/// A holder whose link is black-holed (the session policy keeps its hold through `Suspended`):
/// jeopardy comes at once, the deadline stops moving, and it passes before any other client
/// acquires the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_holders_deadline_passes_before_anyone_else_acquires() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = format!("{}/lock", unique_root("hold-deadline"));
    let wait = Timing::new().wait();
    let holder_client = testkit::started(
        testkit::builder(&proxy.connect_string(), Timing::new().session_timeout())
            .ensemble_tracking(false)
            .connection_state_error_policy(ConnectionStateErrorPolicy::Session),
    )
    .await;
    let holder = InterProcessMutex::builder(holder_client.clone(), &path)
        .build()
        .unwrap();
    let guard = holder.acquire().await.unwrap();

    // The deadline moves forward with the session's renewals (the pings' answers, at least).
    let first = guard
        .valid_until()
        .expect("a hold on a live session has a deadline");
    assert!(first > Instant::now(), "the deadline is ahead");
    testkit::eventually("the deadline moves forward", || async {
        guard.valid_until().is_some_and(|until| until > first)
    })
    .await;
    assert!(!guard.in_jeopardy());

    proxy.pause();
    tokio::time::timeout(wait, guard.jeopardy())
        .await
        .expect("jeopardy once the connection is suspended");
    assert!(guard.in_jeopardy());
    let deadline = guard
        .valid_until()
        .expect("the session policy keeps the hold through Suspended");

    let other_client = testkit::client(&server.connect_string()).await;
    let other = InterProcessMutex::builder(other_client.clone(), &path)
        .build()
        .unwrap();
    let other_guard = tokio::time::timeout(wait * 2, other.acquire())
        .await
        .expect("the cut-off holder's session expires and the lock passes on")
        .unwrap();
    let acquired_at = Instant::now();
    assert!(
        acquired_at >= deadline,
        "acquired {:?} before the holder's deadline",
        deadline - acquired_at
    );
    // The holder's guarantee is over: past, or the hold is lost.
    assert!(guard.valid_until().is_none_or(|until| until <= acquired_at));

    other_guard.release().await.unwrap();
    proxy.resume();
    drop(guard);
    holder_client.close().await.unwrap();
    other_client.close().await.unwrap();
}

/// With the standard policy a suspension loses the hold: it is in jeopardy and has no deadline.
/// A hold bound to time has its deadline as its guarantee.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_hold_has_no_deadline_and_a_timed_one_has_its_own() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = format!("{}/lock", unique_root("hold-deadline-standard"));
    let client =
        testkit::client_through_proxies(&proxy.connect_string(), Timing::new().session_timeout())
            .await;
    let mutex = InterProcessMutex::builder(client.clone(), &path)
        .build()
        .unwrap();
    let guard = mutex.acquire().await.unwrap();
    assert!(guard.valid_until().is_some());

    let timed_deadline = Instant::now() + Timing::new().wait();
    let timed = Hold::until(&client, format!("{path}-lease"), 7, timed_deadline);
    assert_eq!(timed.valid_until(), Some(timed_deadline));

    proxy.drop_connections();
    proxy.pause();
    tokio::time::timeout(Timing::new().wait(), guard.lost())
        .await
        .expect("lost at Suspended");
    assert!(guard.in_jeopardy());
    assert_eq!(guard.valid_until(), None);
    // A hold bound to time keeps its deadline through connection trouble, and is in jeopardy.
    assert_eq!(timed.valid_until(), Some(timed_deadline));
    assert!(timed.in_jeopardy());
    proxy.resume();
    drop(guard);
    client.close().await.unwrap();
}

/// `contended()`: pending while nobody waits, resolved when a waiter queues behind the hold (in
/// a namespace), at once when one is there already; a hold lost first is `LockLost`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contended_resolves_when_a_waiter_queues() {
    let server = TestingServer::start().await.unwrap();
    let namespace = unique_root("contended")
        .trim_start_matches('/')
        .replace('/', "-");
    let holder_client = testkit::client(&server.connect_string())
        .await
        .using_namespace(&namespace)
        .unwrap();
    let waiter_client = testkit::client(&server.connect_string())
        .await
        .using_namespace(&namespace)
        .unwrap();
    let wait = Timing::new().wait();
    let holder = InterProcessMutex::builder(holder_client.clone(), "/lock")
        .build()
        .unwrap();
    let guard = holder.acquire().await.unwrap();
    let waiting = {
        let contended = guard.contended();
        tokio::pin!(contended);
        // Its listing goes out and finds nobody behind: it waits.
        for _ in 0..3 {
            assert!(futures::poll!(&mut contended).is_pending());
            tokio::task::yield_now().await;
        }
        let waiter = InterProcessMutex::builder(waiter_client.clone(), "/lock")
            .build()
            .unwrap();
        let waiting = tokio::spawn(async move { waiter.acquire().await.map(drop) });
        tokio::time::timeout(wait, contended)
            .await
            .expect("contended once the waiter queues")
            .unwrap();
        waiting
    };
    // Already contended: at once.
    tokio::time::timeout(wait, guard.contended())
        .await
        .unwrap()
        .unwrap();
    guard.release().await.unwrap();
    tokio::time::timeout(wait, waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();

    // A hold lost before anyone waits: LockLost.
    let guard = holder
        .acquire_timeout(wait)
        .await
        .unwrap()
        .expect("free again");
    let contended = tokio::spawn({
        let node = guard.node_path().to_owned();
        async move { (node, guard.contended().await) }
    });
    holder_client.inject_session_expiration().await.unwrap();
    let (node, outcome) = tokio::time::timeout(wait, contended)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome, Err(curator_framework::Error::LockLost { node }));
    holder_client.close().await.unwrap();
    waiter_client.close().await.unwrap();
}

/// A mutex bound to a health check: the first failed check ends the hold (its `lost()` resolves)
/// and deletes the node, so a waiter on another client acquires; while the check passes, the
/// hold stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_health_check_releases_the_lock() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Duration;

    let server = TestingServer::start().await.unwrap();
    let path = format!("{}/lock", unique_root("health-bound"));
    let wait = Timing::new().wait();
    let healthy = Arc::new(AtomicBool::new(true));
    let checks = Arc::new(AtomicUsize::new(0));
    let holder_client = testkit::client(&server.connect_string()).await;
    let holder = InterProcessMutex::builder(holder_client.clone(), &path)
        .health_check(Duration::from_millis(20), {
            let (healthy, checks) = (Arc::clone(&healthy), Arc::clone(&checks));
            move || {
                checks.fetch_add(1, Ordering::SeqCst);
                let healthy = healthy.load(Ordering::SeqCst);
                async move { healthy }
            }
        })
        .build()
        .unwrap();
    let guard = holder.acquire().await.unwrap();
    let node = guard.node_path().to_owned();
    // Several passing checks: still held.
    testkit::eventually("the check runs", || async {
        checks.load(Ordering::SeqCst) >= 3
    })
    .await;
    assert!(!guard.is_lost());

    let other_client = testkit::client(&server.connect_string()).await;
    let other = InterProcessMutex::builder(other_client.clone(), &path)
        .build()
        .unwrap();
    let waiting = tokio::spawn(async move { other.acquire().await });
    healthy.store(false, Ordering::SeqCst);
    tokio::time::timeout(wait, guard.lost())
        .await
        .expect("a failed check ends the hold");
    let other_guard = tokio::time::timeout(wait, waiting)
        .await
        .expect("the waiter acquires once the node is gone")
        .unwrap()
        .unwrap();
    assert!(
        holder_client
            .check_exists()
            .for_path(&node)
            .await
            .unwrap()
            .is_none()
    );
    assert!(guard.is_lost());
    guard.release().await.unwrap();
    other_guard.release().await.unwrap();

    // An interval of zero is refused.
    let refused = InterProcessMutex::builder(holder_client.clone(), &path)
        .health_check(Duration::ZERO, || async { true })
        .build();
    assert!(matches!(
        refused,
        Err(curator_framework::Error::InvalidArgument(_))
    ));
    holder_client.close().await.unwrap();
    other_client.close().await.unwrap();
}

/// `contended()` across a dropped connection (the session policy keeps the hold through it):
/// the watch is set again, and a waiter queuing after the reconnect still resolves it. The
/// hold's sequencer is current meanwhile, and stale once the session has expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contention_is_heard_across_a_reconnect_and_an_expired_sequencer_is_stale() {
    use curator_framework::ConnectionState;
    use futures::StreamExt;

    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = format!("{}/lock", unique_root("contended-reconnect"));
    let wait = Timing::new().wait();
    let holder_client = testkit::started(
        testkit::builder(&proxy.connect_string(), Timing::new().session_timeout())
            .ensemble_tracking(false)
            .connection_state_error_policy(ConnectionStateErrorPolicy::Session),
    )
    .await;
    let checker = testkit::client(&server.connect_string()).await;
    let holder = InterProcessMutex::builder(holder_client.clone(), &path)
        .build()
        .unwrap();
    let guard = holder.acquire().await.unwrap();
    let sequencer = guard.sequencer().unwrap();
    let mut states = holder_client.connection_state_stream();
    {
        let contended = guard.contended();
        tokio::pin!(contended);
        assert!(futures::poll!(&mut contended).is_pending());
        proxy.drop_connections();
        loop {
            tokio::select! {
                outcome = &mut contended => panic!("contended before anyone waits: {outcome:?}"),
                state = states.next() => if state == Some(ConnectionState::Reconnected) { break },
            }
        }
        assert!(!guard.is_lost(), "the session policy keeps the hold");
        assert!(sequencer.check(&checker).await.unwrap());
        let waiter_client = testkit::client(&server.connect_string()).await;
        let waiter = InterProcessMutex::builder(waiter_client.clone(), &path)
            .build()
            .unwrap();
        let _waiting = tokio::spawn(async move { waiter.acquire_timeout(wait).await.map(drop) });
        tokio::time::timeout(wait, contended)
            .await
            .expect("contended after the reconnect")
            .unwrap();
    }

    // The holder's session ends: its sequencer is stale, whatever the holder still thinks.
    holder_client.inject_session_expiration().await.unwrap();
    curator_test::eventually("the expired holder's node goes", || async {
        !sequencer.check(&checker).await.unwrap()
    })
    .await;
    drop(guard);
    holder_client.close().await.unwrap();
    checker.close().await.unwrap();
}
