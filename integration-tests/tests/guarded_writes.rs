//! Writes guarded by the holds of every recipe that gives one (mutex, read/write lock,
//! semaphore lease, leader latch, leader selector): they land while held and are refused with
//! nothing written once let go; a holder paused through its session's expiry cannot write after
//! the next holder has; and under repeated hand-overs with expiries the guarded writes land in
//! token order.

use std::time::Duration;

use curator_election::{LeaderLatch, LeaderSelector};
use curator_framework::recipe::Hold;
use curator_framework::{CuratorFramework, Error};
use curator_locks::{
    InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, MaxLeases,
};
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use curator_values::Guarded;
use tokio::sync::mpsc;

async fn data(client: &CuratorFramework, path: &str) -> Vec<u8> {
    client.get_data().for_path(path).await.unwrap().0
}

/// Writes `value` guarded by `hold`, then checks it is there.
async fn write_while_held(client: &CuratorFramework, hold: &Hold, target: &str, value: &str) {
    Guarded::new(client.clone(), hold)
        .set_data(target, value)
        .await
        .unwrap_or_else(|error| panic!("{value}: {error}"));
    assert_eq!(data(client, target).await, value.as_bytes());
}

/// A write guarded by a hold that was let go: refused with `expected`, the target unchanged.
async fn refused_after(client: &CuratorFramework, hold: &Hold, target: &str, expected: Error) {
    let before = data(client, target).await;
    assert_eq!(
        Guarded::new(client.clone(), hold)
            .set_data(target, "late")
            .await,
        Err(expected)
    );
    assert_eq!(data(client, target).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hold_guards_writes() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("guarded-recipes");
    let target = format!("{root}/target");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&target, b"")
        .await
        .unwrap();
    let lost = |hold: &Hold| Error::LockLost {
        node: hold.node_path().to_owned(),
    };
    let not_leader = |hold: &Hold| Error::NotLeader {
        node: hold.node_path().to_owned(),
    };

    let mutex = InterProcessMutex::builder(client.clone(), &format!("{root}/mutex"))
        .build()
        .unwrap();
    let guard = mutex.acquire().await.unwrap();
    let hold = (*guard).clone();
    write_while_held(&client, &hold, &target, "mutex").await;
    guard.release().await.unwrap();
    refused_after(&client, &hold, &target, lost(&hold)).await;

    let rwlock = InterProcessReadWriteLock::builder(client.clone(), &format!("{root}/rw"))
        .build()
        .unwrap();
    for lock in [rwlock.write_lock(), rwlock.read_lock()] {
        let guard = lock.acquire().await.unwrap();
        let hold = (*guard).clone();
        write_while_held(&client, &hold, &target, "rwlock").await;
        guard.release().await.unwrap();
        refused_after(&client, &hold, &target, lost(&hold)).await;
    }

    let semaphore = InterProcessSemaphoreV2::builder(
        client.clone(),
        &format!("{root}/semaphore"),
        MaxLeases::Fixed(2),
    )
    .build()
    .unwrap();
    let lease = semaphore.acquire().await.unwrap();
    let hold = (*lease).clone();
    write_while_held(&client, &hold, &target, "lease").await;
    lease.release().await.unwrap();
    refused_after(&client, &hold, &target, lost(&hold)).await;

    let latch = LeaderLatch::builder(client.clone(), &format!("{root}/latch"), "p0")
        .build()
        .unwrap();
    latch.start().await.unwrap();
    latch.await_leadership().await.unwrap();
    let hold = latch.hold().unwrap();
    write_while_held(&client, &hold, &target, "latch").await;
    latch.close().await.unwrap();
    refused_after(&client, &hold, &target, not_leader(&hold)).await;

    // The selector's task writes while it leads, hands its hold out and returns (letting go).
    let (holds, mut handed) = mpsc::unbounded_channel();
    let (client_in_task, target_in_task) = (client.clone(), target.clone());
    let selector = LeaderSelector::builder(
        client.clone(),
        &format!("{root}/selector"),
        "p0",
        move |context| {
            let (client, target, holds) = (
                client_in_task.clone(),
                target_in_task.clone(),
                holds.clone(),
            );
            async move {
                let hold = (*context).clone();
                write_while_held(&client, &hold, &target, "selector").await;
                let _ = holds.send(hold);
            }
        },
    )
    .build()
    .unwrap();
    selector.start().await.unwrap();
    let hold = tokio::time::timeout(Timing::new().wait(), handed.recv())
        .await
        .expect("the selector leads")
        .unwrap();
    tokio::time::timeout(Timing::new().wait(), async {
        while !hold.is_lost() {
            hold.lost().await;
        }
    })
    .await
    .expect("the leadership ends with the task");
    refused_after(&client, &hold, &target, not_leader(&hold)).await;
    selector.close().await.unwrap();
    client.close().await.unwrap();
}

/// Holder A (through a proxy) is cut off while its session expires at the server: a paused
/// process that has not noticed. B takes the lock and writes. A, back, writes with the hold it
/// still believes in: refused, and B's write stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_holder_cannot_write_after_the_next_holder() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let a = curator_testkit::client(&proxy.connect_string()).await;
    let b = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("guarded-pause");
    let lock = format!("{root}/lock");
    let target = format!("{root}/target");
    b.create()
        .creating_parents_if_needed()
        .for_path(&target, b"")
        .await
        .unwrap();

    let guard = InterProcessMutex::builder(a.clone(), &lock)
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    write_while_held(&a, &guard, &target, "a").await;
    // What A's paused process still believes: a hold never signalled lost (every hold learns
    // of connection trouble through its client, so this one watches B's, which sees none).
    let believed = Hold::new(&b, guard.node_path().to_owned(), guard.fencing_token())
        .on_session(guard.session_id().unwrap());

    curator_testkit::expire_behind(&a, &proxy, &server.connect_string()).await;
    let next = InterProcessMutex::builder(b.clone(), &lock)
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    assert!(next.fencing_token() > believed.fencing_token());
    write_while_held(&b, &next, &target, "b").await;
    proxy.resume();

    for hold in [&believed, &*guard] {
        assert_eq!(
            Guarded::new(a.clone(), hold)
                .set_data(&target, "a, late")
                .await,
            Err(Error::LockLost {
                node: believed.node_path().to_owned()
            })
        );
    }
    assert_eq!(data(&b, &target).await, b"b");
    next.release().await.unwrap();
    a.close().await.unwrap();
    b.close().await.unwrap();
}

/// Three clients take the lock in turn for many rounds; each holder writes its fencing token
/// (guarded, versioned) into the target, and now and then a holder's session is expired in
/// the middle of its hold. The tokens the target holds over time never go back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guarded_writes_land_in_token_order_across_hand_overs() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("guarded-order");
    let lock = format!("{root}/lock");
    let target = format!("{root}/target");
    let connect = server.connect_string();
    let clients =
        futures::future::join_all((0..3).map(|_| curator_testkit::client(&connect))).await;
    clients[0]
        .create()
        .creating_parents_if_needed()
        .for_path(&target, b"0")
        .await
        .unwrap();

    let workers = clients.iter().enumerate().map(|(index, client)| {
        let (client, lock, target) = (client.clone(), lock.clone(), target.clone());
        async move {
            let mutex = InterProcessMutex::builder(client.clone(), &lock)
                .build()
                .unwrap();
            let mut written = Vec::new();
            for round in 0..8 {
                let Ok(guard) = mutex.acquire().await else {
                    continue;
                };
                let hold = (*guard).clone();
                for step in 0..3 {
                    if index == round % 3 && step == 1 {
                        // This holder's session ends mid-hold; its later writes must fail,
                        // also once the next holder has written (waited for, within a bound:
                        // nobody may be waiting for the lock any more).
                        let (_, _, changed) =
                            client.get_data().watched().for_path(&target).await.unwrap();
                        let _ = client.inject_session_expiration().await;
                        let _ =
                            tokio::time::timeout(Duration::from_secs(2), changed.changed()).await;
                    }
                    let (bytes, stat) = client.get_data().for_path(&target).await.unwrap();
                    let current: i64 = String::from_utf8_lossy(&bytes).parse().unwrap();
                    let token = hold.fencing_token();
                    match Guarded::new(client.clone(), &hold)
                        .set_data_with_version(&target, token.to_string(), stat.version)
                        .await
                    {
                        Ok(_) => written.push((current, token)),
                        Err(Error::LockLost { .. } | Error::BadVersion) => {}
                        Err(error) => panic!("unexpected: {error}"),
                    }
                }
                let _ = guard.release().await;
            }
            written
        }
    });
    let written: Vec<(i64, i64)> = futures::future::join_all(workers)
        .await
        .into_iter()
        .flatten()
        .collect();
    assert!(written.len() >= 24, "few writes landed: {}", written.len());
    // Each landed write replaced the value it read (versioned): no write ever lowered it.
    for (before, token) in &written {
        assert!(
            token >= before,
            "token {token} overwrote the newer {before}"
        );
    }
    for client in clients {
        client.close().await.unwrap();
    }
}
