//! Leader epochs, `LeaderObserver` and `LeaderLatch::proclaim` against a real server, with a
//! server restart, a session expiry and a member partition.

use std::sync::Arc;

use curator_election::{LeaderLatch, LeaderObserver, LeaderSelector, Participant};
use curator_framework::{CuratorFramework, Error};
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit as testkit;
use futures::StreamExt;
use tokio::sync::{Semaphore, mpsc};

async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Timing::new().wait(), future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen in time"))
}

/// The next change the observer delivers.
async fn next_change(
    changes: &mut (impl futures::Stream<Item = Option<Participant>> + Unpin),
    what: &str,
) -> Option<Participant> {
    within(what, changes.next())
        .await
        .expect("the observer's stream goes on")
}

/// Epochs strictly increase over every delivered leader, whatever came in between.
fn assert_epochs_increase(delivered: &[Option<Participant>]) {
    let epochs: Vec<i64> = delivered.iter().flatten().map(|p| p.epoch).collect();
    assert!(
        epochs.windows(2).all(|pair| pair[0] < pair[1]),
        "epochs not strictly increasing: {epochs:?}"
    );
}

async fn latch(connect: &str, path: &str, id: &str) -> (LeaderLatch, CuratorFramework) {
    let client = testkit::client(connect).await;
    let latch = LeaderLatch::builder(client.clone(), path, id)
        .build()
        .unwrap();
    latch.start().await.unwrap();
    (latch, client)
}

async fn leads(latch: &LeaderLatch) -> i64 {
    within(&format!("{} leads", latch.id()), latch.await_leadership())
        .await
        .unwrap();
    let epoch = latch.leader_epoch().expect("a leader has an epoch");
    assert_eq!(Some(epoch), latch.hold().map(|h| h.fencing_token()));
    epoch
}

/// Leaders of a `LeaderLatch` close one by one, through a server restart and a leader's session
/// expiry: the observer delivers each leader once, in order, with the epoch the leader itself
/// has, each greater than the last; then that nobody leads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_sees_every_latch_leader_in_order_through_restart_and_expiry() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("epochs-observe");
    let (p0, _) = latch(&connect, &path, "p0").await;
    let (p1, p1_client) = latch(&connect, &path, "p1").await;
    let (p2, _) = latch(&connect, &path, "p2").await;

    let observer = LeaderObserver::new(testkit::client(&connect).await, &path).unwrap();
    let mut changes = observer.stream();
    observer.start().await.unwrap();
    let mut delivered = Vec::new();

    let e0 = leads(&p0).await;
    let seen = next_change(&mut changes, "the first leader").await;
    assert_eq!(
        seen.as_ref().map(|p| (p.id.as_str(), p.epoch)),
        Some(("p0", e0))
    );
    assert_eq!(observer.current(), seen);
    delivered.push(seen);

    // Same session, same nodes: the same leader, same epoch; nothing new to deliver.
    server.restart().await.unwrap();
    assert_eq!(leads(&p0).await, e0);

    p0.close().await.unwrap();
    let e1 = leads(&p1).await;
    assert!(e1 > e0);
    let seen = next_change(&mut changes, "p1 leads").await;
    assert_eq!(
        seen.as_ref().map(|p| (p.id.as_str(), p.epoch)),
        Some(("p1", e1))
    );
    delivered.push(seen);

    // p1's session expires: p2 leads; p1 rejoins behind it on a new node.
    p1_client.inject_session_expiration().await.unwrap();
    let e2 = leads(&p2).await;
    assert!(e2 > e1);
    let seen = next_change(&mut changes, "p2 leads").await;
    assert_eq!(
        seen.as_ref().map(|p| (p.id.as_str(), p.epoch)),
        Some(("p2", e2))
    );
    delivered.push(seen);
    curator_test::eventually("p1 rejoins", || async {
        p2.participant_nodes().await.unwrap().len() == 2
    })
    .await;

    p2.close().await.unwrap();
    let e3 = leads(&p1).await;
    assert!(e3 > e2, "p1's new node leads with a new epoch");
    let seen = next_change(&mut changes, "p1 leads again").await;
    assert_eq!(
        seen.as_ref().map(|p| (p.id.as_str(), p.epoch)),
        Some(("p1", e3))
    );
    delivered.push(seen);

    p1.close().await.unwrap();
    let seen = next_change(&mut changes, "nobody leads").await;
    assert_eq!(seen, None);
    assert_eq!(observer.current(), None);
    delivered.push(seen);

    assert_epochs_increase(&delivered);
    observer.close().await.unwrap();
    observer.close().await.unwrap();
}

/// The leader proclaims a new id: the observer and `leader()` see it with the same epoch. A
/// follower's proclaim is `NotLeader` and changes nothing on the server; so is a former
/// leader's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_proclaims_and_nobody_else_can() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("epochs-proclaim");
    let (leader, client) = latch(&connect, &path, "first").await;
    let epoch = leads(&leader).await;
    let (follower, _) = latch(&connect, &path, "second").await;

    let observer = LeaderObserver::new(testkit::client(&connect).await, &path).unwrap();
    let mut changes = observer.stream();
    observer.start().await.unwrap();
    let seen = next_change(&mut changes, "the leader").await.unwrap();
    assert_eq!((seen.id.as_str(), seen.epoch), ("first", epoch));

    leader.proclaim("first at 10.0.0.7:8080").await.unwrap();
    let seen = next_change(&mut changes, "the proclaimed id")
        .await
        .unwrap();
    assert_eq!(
        (seen.id.as_str(), seen.epoch),
        ("first at 10.0.0.7:8080", epoch)
    );
    let read = follower.leader().await.unwrap().unwrap();
    assert_eq!(
        (read.id.as_str(), read.epoch),
        ("first at 10.0.0.7:8080", epoch)
    );
    assert_eq!(leader.id(), "first at 10.0.0.7:8080");
    assert!(leader.has_leadership());
    assert_eq!(leader.leader_epoch(), Some(epoch));
    // A second proclaim writes on the version the first left.
    leader.proclaim("first, again").await.unwrap();
    let seen = next_change(&mut changes, "the second proclaim")
        .await
        .unwrap();
    assert_eq!((seen.id.as_str(), seen.epoch), ("first, again", epoch));

    let follower_node = follower.node_path().unwrap();
    assert_eq!(
        follower.proclaim("evil").await,
        Err(Error::NotLeader {
            node: follower_node.clone()
        })
    );
    assert_eq!(testkit::raw(&client, &follower_node).await, b"second");
    assert_eq!(
        testkit::raw(&client, &leader.node_path().unwrap()).await,
        b"first, again"
    );
    assert_eq!(follower.id(), "second");

    // A former leader cannot proclaim either.
    leader.close().await.unwrap();
    assert!(matches!(
        leader.proclaim("ghost").await,
        Err(Error::NotLeader { .. })
    ));
    let next_epoch = leads(&follower).await;
    assert!(next_epoch > epoch);
    let seen = next_change(&mut changes, "the next leader").await.unwrap();
    assert_eq!((seen.id.as_str(), seen.epoch), ("second", next_epoch));
    assert_eq!(testkit::raw(&client, &follower_node).await, b"second");
    observer.close().await.unwrap();
}

/// `LeaderSelector`s lead one after the other: each leadership's epoch (in its context and from
/// `leader_epoch()`) is greater than the last, and is what the observer reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_epochs_grow_and_match_the_observer() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("epochs-selector");
    let (elected_tx, mut elected) = mpsc::unbounded_channel();
    // A leader steps down when it gets a permit.
    let step_down = Arc::new(Semaphore::new(0));
    let mut selectors = Vec::new();
    for i in 0..3 {
        let (elected_tx, step_down) = (elected_tx.clone(), Arc::clone(&step_down));
        let id = format!("s{i}");
        let task_id = id.clone();
        let selector =
            LeaderSelector::builder(testkit::client(&connect).await, &path, id, move |context| {
                let (elected_tx, step_down, id) =
                    (elected_tx.clone(), Arc::clone(&step_down), task_id.clone());
                async move {
                    assert_eq!(context.epoch(), context.fencing_token());
                    let _ = elected_tx.send((id, context.epoch()));
                    step_down.acquire().await.unwrap().forget();
                }
            })
            .build()
            .unwrap();
        selectors.push(selector);
    }
    let observer = LeaderObserver::new(testkit::client(&connect).await, &path).unwrap();
    let mut changes = observer.stream();
    observer.start().await.unwrap();
    assert_eq!(observer.current(), None, "nobody leads yet");
    for selector in &selectors {
        selector.start().await.unwrap();
    }

    let mut delivered = Vec::new();
    for round in 0..3 {
        let (id, epoch) = within("a leader", elected.recv()).await.unwrap();
        let selector = selectors
            .iter()
            .find(|s| s.leader_epoch() == Some(epoch))
            .expect("the leader's selector knows its epoch");
        assert!(selector.has_leadership());
        // The observer may have seen the node lead before the task ran; it delivers it once.
        let seen = next_change(&mut changes, "the observer sees the leader").await;
        assert_eq!(
            seen.as_ref().map(|p| (p.id.clone(), p.epoch)),
            Some((id, epoch)),
            "round {round}"
        );
        delivered.push(seen);
        step_down.add_permits(1);
    }
    let seen = next_change(&mut changes, "nobody leads").await;
    assert_eq!(seen, None);
    delivered.push(seen);
    assert_epochs_increase(&delivered);
    for selector in &selectors {
        selector.close().await.unwrap();
    }
    observer.close().await.unwrap();
}

/// A leader whose member is cut off from the rest of the ensemble (its client knows only that
/// member) loses the quorum, then its session; the observer, on the majority, sees the next
/// leader with a greater epoch, and after the heal the first participant, back in a new
/// session, leads again with a greater one still.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_follows_leaders_through_a_member_partition() {
    let cluster = curator_test::TestingCluster::builder(3)
        .partitionable()
        .start()
        .await
        .unwrap();
    let path = unique_root("epochs-partition");
    let lonely = (cluster.await_leader().await.unwrap() + 1) % 3;
    let majority: Vec<String> = (0..3)
        .filter(|&member| member != lonely)
        .map(|member| cluster.member_connect_string(member))
        .collect();
    let majority = majority.join(",");
    let p0_client = testkit::started(
        testkit::builder(
            &cluster.member_connect_string(lonely),
            std::time::Duration::from_secs(4),
        )
        .ensemble_tracking(false),
    )
    .await;
    let p0 = LeaderLatch::builder(p0_client, &path, "p0")
        .build()
        .unwrap();
    p0.start().await.unwrap();
    let e0 = leads(&p0).await;
    let (p1, _) = latch(&majority, &path, "p1").await;
    let observer = LeaderObserver::new(testkit::client(&majority).await, &path).unwrap();
    let mut changes = observer.stream();
    observer.start().await.unwrap();
    let mut delivered = Vec::new();
    let seen = next_change(&mut changes, "the first leader").await;
    assert_eq!(
        seen.as_ref().map(|p| (p.id.as_str(), p.epoch)),
        Some(("p0", e0))
    );
    delivered.push(seen);

    cluster.isolate(lonely).unwrap();
    let e1 = leads(&p1).await;
    let seen = next_change(&mut changes, "the leader after the partition").await;
    assert_eq!(
        seen.as_ref().map(|p| (p.id.as_str(), p.epoch)),
        Some(("p1", e1))
    );
    delivered.push(seen);

    cluster.heal().unwrap();
    testkit::eventually("p0 stands again, behind p1", || async {
        p1.participant_nodes()
            .await
            .is_ok_and(|nodes| nodes.len() == 2)
    })
    .await;
    p1.close().await.unwrap();
    let e2 = leads(&p0).await;
    let seen = next_change(&mut changes, "p0 again").await;
    assert_eq!(
        seen.as_ref().map(|p| (p.id.as_str(), p.epoch)),
        Some(("p0", e2))
    );
    delivered.push(seen);
    assert_epochs_increase(&delivered);
    p0.close().await.unwrap();
    observer.close().await.unwrap();
}
