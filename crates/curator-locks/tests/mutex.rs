//! `InterProcessMutex` against a real ZooKeeper server, with faults.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use curator_framework::{ConnectionState, paths};
use curator_locks::InterProcessMutex;
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit as testkit;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_clients_never_hold_the_lock_together() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("mutex-exclusion");
    let holders = Arc::new(AtomicUsize::new(0));
    let acquisitions = Arc::new(AtomicUsize::new(0));
    let tokens = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let client = testkit::client(&server.connect_string()).await;
        let (path, holders, acquisitions, tokens) = (
            path.clone(),
            Arc::clone(&holders),
            Arc::clone(&acquisitions),
            Arc::clone(&tokens),
        );
        tasks.push(tokio::spawn(async move {
            let mutex = InterProcessMutex::builder(client.clone(), &path)
                .build()
                .unwrap();
            for _ in 0..10 {
                let guard = mutex.acquire().await.unwrap();
                assert_eq!(
                    holders.fetch_add(1, Ordering::SeqCst),
                    0,
                    "two holders at once"
                );
                tokens.lock().push(guard.fencing_token());
                tokio::task::yield_now().await;
                assert_eq!(holders.fetch_sub(1, Ordering::SeqCst), 1);
                acquisitions.fetch_add(1, Ordering::SeqCst);
                guard.release().await.unwrap();
            }
            client.close().await.unwrap();
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(acquisitions.load(Ordering::SeqCst), 80);
    // Fencing tokens grow with every acquisition, in acquisition order.
    let tokens = tokens.lock().clone();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

#[tokio::test]
async fn the_node_layout_is_curators() {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let path = unique_root("mutex-layout");
    let mutex = InterProcessMutex::builder(client.clone(), &path)
        .build()
        .unwrap();
    let guard = mutex.acquire().await.unwrap();
    let name = paths::node_name(guard.node_path()).to_owned();
    assert!(paths::is_protected(&name), "{name}");
    let rest = paths::strip_protection(&name);
    assert!(
        rest.starts_with("lock-") && rest.len() == "lock-".len() + 10,
        "{name}"
    );
    assert_eq!(
        mutex.participant_nodes().await.unwrap(),
        vec![guard.node_path().to_owned()]
    );
    let stat = client
        .check_exists()
        .for_path(guard.node_path())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(Some(stat.ephemeral_owner), client.session_id());
    assert_eq!(guard.fencing_token(), stat.czxid);
}

#[tokio::test]
async fn a_handle_is_reentrant_and_releases_as_often_as_it_acquired() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("mutex-reentrant");
    let mine = InterProcessMutex::builder(testkit::client(&server.connect_string()).await, &path)
        .build()
        .unwrap();
    let other = InterProcessMutex::builder(testkit::client(&server.connect_string()).await, &path)
        .build()
        .unwrap();

    let first = mine.acquire().await.unwrap();
    let second = mine.acquire().await.unwrap();
    assert_eq!(first.node_path(), second.node_path());
    assert_eq!(
        mine.participant_nodes().await.unwrap().len(),
        1,
        "reentry creates no node"
    );

    first.release().await.unwrap();
    assert!(mine.is_acquired_in_this_process());
    assert!(
        other
            .acquire_timeout(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
    second.release().await.unwrap();
    assert!(!mine.is_acquired_in_this_process());
    let theirs = other
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap()
        .expect("free now");
    drop(theirs);
}

#[tokio::test]
async fn a_timed_out_waiter_leaves_no_node() {
    let server = TestingServer::start().await.unwrap();
    let observer = testkit::client(&server.connect_string()).await;
    let path = unique_root("mutex-timeout");
    let holder = InterProcessMutex::builder(testkit::client(&server.connect_string()).await, &path)
        .build()
        .unwrap();
    let waiter = InterProcessMutex::builder(testkit::client(&server.connect_string()).await, &path)
        .build()
        .unwrap();
    let guard = holder.acquire().await.unwrap();
    assert!(
        waiter
            .acquire_timeout(Duration::from_millis(200))
            .await
            .unwrap()
            .is_none()
    );
    curator_test::eventually("the waiter's node is deleted", || async {
        testkit::children(&observer, &path).await.len() == 1
    })
    .await;
    drop(guard);
    curator_test::eventually("the holder's node is deleted", || async {
        testkit::children(&observer, &path).await.is_empty()
    })
    .await;
}

#[tokio::test]
async fn dropping_acquisitions_at_random_points_leaves_no_node() {
    let server = TestingServer::start().await.unwrap();
    let observer = testkit::client(&server.connect_string()).await;
    let path = unique_root("mutex-cancel");
    let holder = InterProcessMutex::builder(testkit::client(&server.connect_string()).await, &path)
        .build()
        .unwrap();
    let guard = holder.acquire().await.unwrap();
    let contender = testkit::client(&server.connect_string()).await;
    for delay_us in [0u64, 50, 200, 500, 1000, 2000, 5000, 20000] {
        let mutex = InterProcessMutex::builder(contender.clone(), &path)
            .build()
            .unwrap();
        let acquisition = mutex.acquire();
        // Cut the acquisition off after a varying time: before, during or after its create.
        let _ = tokio::time::timeout(Duration::from_micros(delay_us), acquisition).await;
    }
    curator_test::eventually("only the holder's node remains", || async {
        testkit::children(&observer, &path).await.len() == 1
    })
    .await;
    curator_test::eventually("the background cleanups finish", || async {
        contender.metrics().pending_guaranteed_deletes == 0
    })
    .await;
    drop(guard);
}

#[tokio::test]
async fn a_holder_whose_session_expires_is_told_and_the_next_waiter_gets_the_lock() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("mutex-expiry");
    let holder_client = testkit::client(&server.connect_string()).await;
    let holder = InterProcessMutex::builder(holder_client.clone(), &path)
        .build()
        .unwrap();
    let waiter = InterProcessMutex::builder(testkit::client(&server.connect_string()).await, &path)
        .build()
        .unwrap();
    let guard = holder.acquire().await.unwrap();
    assert!(!guard.is_lost());
    let waiting = tokio::spawn(async move {
        waiter
            .acquire()
            .await
            .map(|g| (g.node_path().to_owned(), g))
    });

    let mut states = holder_client.connection_state_stream();
    holder_client.inject_session_expiration().await.unwrap();
    tokio::time::timeout(Timing::new().wait(), guard.lost())
        .await
        .expect("the holder is told");
    assert!(guard.is_lost());
    let (node, _guard) = tokio::time::timeout(Timing::new().wait(), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_ne!(node, guard.node_path());
    use futures::StreamExt;
    assert_eq!(states.next().await, Some(ConnectionState::Suspended));
}

#[tokio::test]
async fn a_waiter_still_acquires_after_a_server_restart() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let path = unique_root("mutex-restart");
    let holder = InterProcessMutex::builder(testkit::client(&server.connect_string()).await, &path)
        .build()
        .unwrap();
    let waiter = InterProcessMutex::builder(testkit::client(&server.connect_string()).await, &path)
        .build()
        .unwrap();
    let guard = holder.acquire().await.unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.map(drop) });
    curator_test::eventually("the waiter queues", || async {
        holder
            .participant_nodes()
            .await
            .map(|p| p.len() == 2)
            .unwrap_or(false)
    })
    .await;

    server.restart().await.unwrap();
    guard.release().await.unwrap();
    tokio::time::timeout(Timing::new().wait(), waiting)
        .await
        .expect("the waiter's watch survived")
        .unwrap()
        .unwrap();
}

/// A waiter second in line takes the lock on its blocker's deletion alone (no listing), but
/// only with a node of its current session: one whose session ended while it waited makes a
/// new node and waits again, and then holds the lock with that node.
#[tokio::test]
async fn a_waiter_whose_session_expires_while_waiting_holds_only_with_a_new_node() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("mutex-waiter-expiry");
    let admin = testkit::client(&server.connect_string()).await;
    let holder = InterProcessMutex::builder(admin.clone(), &path)
        .build()
        .unwrap();
    let waiter_client = testkit::client(&server.connect_string()).await;
    let waiter = InterProcessMutex::builder(waiter_client.clone(), &path)
        .build()
        .unwrap();
    let guard = holder.acquire().await.unwrap();
    let waiting = tokio::spawn({
        let waiter = waiter.clone();
        async move { waiter.acquire().await }
    });
    curator_test::eventually("the waiter is in line", || async {
        waiter.participant_nodes().await.unwrap().len() == 2
    })
    .await;
    let first_node = waiter.participant_nodes().await.unwrap()[1].clone();
    waiter_client.inject_session_expiration().await.unwrap();
    curator_test::eventually("the waiter is back in line on its new session", || async {
        let nodes = waiter.participant_nodes().await.unwrap();
        nodes.len() == 2 && nodes[1] != first_node
    })
    .await;
    guard.release().await.unwrap();
    let held = tokio::time::timeout(Timing::new().wait(), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_ne!(held.node_path(), first_node);
    let stat = admin
        .check_exists()
        .for_path(held.node_path())
        .await
        .unwrap()
        .expect("the holder's node exists");
    assert_eq!(Some(stat.ephemeral_owner), waiter_client.session_id());
    held.release().await.unwrap();
}

/// A waiter queued behind a holder of the same client fails with `Closed` as soon as the client
/// closes, also while the link is black-holed (before, it waited until the wire client gave the
/// session up: about 1.4 session timeouts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_waiter_fails_with_closed_when_the_client_closes_with_the_link_down() {
    let server = TestingServer::start().await.unwrap();
    let proxy = curator_test::FaultProxy::start(&server.connect_string())
        .await
        .unwrap();
    let path = format!("{}/lock", unique_root("mutex-close-link-down"));
    let builder = testkit::builder(&proxy.connect_string(), Duration::from_secs(60))
        .max_close_wait(Duration::from_millis(500));
    let client = testkit::started(builder).await;
    let holder = InterProcessMutex::builder(client.clone(), &path)
        .build()
        .unwrap();
    let _guard = holder.acquire().await.unwrap();
    let waiter = InterProcessMutex::builder(client.clone(), &path)
        .build()
        .unwrap();
    let queued = tokio::spawn(async move { waiter.acquire().await.map(drop) });
    // Queued: its node is the second one, and it waits on a watch of the first.
    let observer = testkit::client(&server.connect_string()).await;
    testkit::eventually("the waiter's node", || async {
        testkit::children(&observer, &path).await.len() == 2
    })
    .await;

    proxy.pause();
    client.close().await.unwrap();
    let outcome = tokio::time::timeout(Timing::new().wait(), queued)
        .await
        .expect("the waiter must end with the client, not with the session")
        .unwrap();
    assert_eq!(outcome.unwrap_err(), curator_framework::Error::Closed);
    proxy.resume();
    observer.close().await.unwrap();
}
