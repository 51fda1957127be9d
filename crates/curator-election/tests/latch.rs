//! `LeaderLatch` against a real ZooKeeper server, with faults.

use std::sync::Arc;
use std::time::Duration;

use curator_election::{CloseMode, LatchEvent, LeaderLatch};
use curator_framework::CuratorFramework;
use curator_framework::listen::ListenerStream;
use curator_framework::paths;
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use curator_testkit as testkit;
use parking_lot::Mutex;
use tokio::time::Instant;

/// Every leadership change of every latch, stamped by one clock.
type Log = Arc<Mutex<Vec<(Instant, String, LatchEvent)>>>;

fn record(latch: &LeaderLatch, log: &Log) {
    let (log, id) = (Arc::clone(log), latch.id().to_owned());
    latch
        .listenable()
        .add_listener(move |event| log.lock().push((Instant::now(), id.clone(), event)))
        .detach();
}

/// The latch's leadership changes (`IsLeader`, `NotLeader`), without the election's steps.
fn leadership(latch: &LeaderLatch) -> ListenerStream<LatchEvent> {
    latch
        .listenable()
        .filter_map(|event| {
            matches!(event, LatchEvent::IsLeader | LatchEvent::NotLeader).then_some(event)
        })
        .stream()
}

/// Waits until exactly one of `latches` leads, and returns its index.
async fn one_leader(latches: &[LeaderLatch]) -> usize {
    let end = Instant::now() + Timing::new().wait();
    loop {
        let leaders: Vec<usize> = (0..latches.len())
            .filter(|i| latches[*i].has_leadership())
            .collect();
        if leaders.len() == 1 {
            return leaders[0];
        }
        assert!(leaders.len() <= 1, "two leaders at once: {leaders:?}");
        assert!(Instant::now() < end, "no leader in time");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A started latch (default options) of `client` on `path` for participant `id`.
async fn started(client: CuratorFramework, path: &str, id: &str) -> LeaderLatch {
    let latch = LeaderLatch::builder(client, path, id).build().unwrap();
    latch.start().await.unwrap();
    latch
}

#[tokio::test]
async fn one_of_several_leads_and_the_others_know_who() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("latch-one");
    let mut latches = Vec::new();
    for i in 0..3 {
        let latch = LeaderLatch::builder(
            testkit::client(&server.connect_string()).await,
            &path,
            format!("p{i}"),
        )
        .close_mode(CloseMode::NotifyLeader)
        .build()
        .unwrap();
        latch.start().await.unwrap();
        latches.push(latch);
    }
    let leader = one_leader(&latches).await;
    for latch in &latches {
        let seen = latch.leader().await.unwrap().unwrap();
        assert_eq!(seen.id, latches[leader].id());
        assert!(seen.is_leader);
        assert_eq!(latch.participants().await.unwrap().len(), 3);
    }
    // Curator's layout: protected `latch-` nodes holding the id.
    let node = latches[leader].node_path().unwrap();
    let name = paths::node_name(&node);
    assert!(
        paths::is_protected(name) && paths::strip_protection(name).starts_with("latch-"),
        "{name}"
    );
    let ids: Vec<String> = latches[0]
        .participants()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(
        ids.contains(&"p0".to_owned()) && ids.contains(&"p2".to_owned()),
        "node data is the id: {ids:?}"
    );
    // participant_nodes() lists full paths in election order, the leader's first, like every
    // recipe's; each participant names its node.
    let nodes = latches[0].participant_nodes().await.unwrap();
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[0], node);
    let participants = latches[0].participants().await.unwrap();
    assert_eq!(
        participants
            .iter()
            .map(|p| p.node.clone())
            .collect::<Vec<_>>(),
        nodes
    );

    // The leader leaves: the next in line leads.
    latches[leader].close().await.unwrap();
    let rest: Vec<LeaderLatch> = latches
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != leader)
        .map(|(_, l)| l.clone())
        .collect();
    let next = one_leader(&rest).await;
    assert_eq!(
        rest[next].leader().await.unwrap().unwrap().id,
        rest[next].id()
    );
    assert_eq!(rest[0].participants().await.unwrap().len(), 2);
}

/// The leader's session ends: it steps down, the next participant leads, and the first rejoins
/// behind it on its new session. (Which of the two processes acts first is not asserted:
/// ZooKeeper removes the node when the session closes, and the first hears of the end through
/// its own connection events, concurrently. That a leader steps down *before its session can
/// time out* is what `a_partitioned_leader_steps_down_before_its_session_times_out` checks.)
#[tokio::test]
async fn an_expired_leader_steps_down_and_the_next_takes_over() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("latch-expiry");
    let log: Log = Arc::default();
    let first_client = testkit::client(&server.connect_string()).await;
    let first = LeaderLatch::builder(first_client.clone(), &path, "first")
        .build()
        .unwrap();
    record(&first, &log);
    first.start().await.unwrap();
    tokio::time::timeout(Timing::new().wait(), first.await_leadership())
        .await
        .expect("leads in time")
        .unwrap();
    let second = LeaderLatch::builder(
        testkit::client(&server.connect_string()).await,
        &path,
        "second",
    )
    .build()
    .unwrap();
    record(&second, &log);
    second.start().await.unwrap();

    first_client.inject_session_expiration().await.unwrap();
    // From the moment the session is gone, whatever the latch's task is doing: a reader must
    // never see a leader whose hold is lost (its task may still wait for the new session).
    assert!(!first.has_leadership());
    assert!(first.hold().is_none_or(|hold| hold.is_lost()));
    tokio::time::timeout(Timing::new().wait(), second.await_leadership())
        .await
        .expect("leads in time")
        .unwrap();
    curator_test::eventually("the first stepped down", || async {
        log.lock()
            .iter()
            .any(|(_, id, e)| id == "first" && *e == LatchEvent::NotLeader)
    })
    .await;
    // The first participant rejoins on its new session, behind the second.
    curator_test::eventually("the first participant rejoins", || async {
        first.participants().await.unwrap().len() == 2
    })
    .await;
    assert!(!first.has_leadership());
    assert!(second.has_leadership());
}

#[tokio::test]
async fn a_partitioned_leader_steps_down_before_its_session_times_out() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = unique_root("latch-partition");
    let session_timeout = Timing::new().scale(Duration::from_secs(4));
    let leader = started(
        testkit::client_with(&proxy.connect_string(), session_timeout).await,
        &path,
        "cut-off",
    )
    .await;
    tokio::time::timeout(Timing::new().wait(), leader.await_leadership())
        .await
        .expect("leads in time")
        .unwrap();
    let other = started(
        testkit::client(&server.connect_string()).await,
        &path,
        "other",
    )
    .await;

    let mut events = leadership(&leader);
    let cut_at = Instant::now();
    proxy.pause();
    use futures::StreamExt;
    let event = tokio::time::timeout(Timing::new().wait(), events.next())
        .await
        .unwrap();
    assert_eq!(event, Some(LatchEvent::NotLeader));
    assert!(
        cut_at.elapsed() < session_timeout,
        "stepped down only after {:?}",
        cut_at.elapsed()
    );
    assert!(!leader.has_leadership());
    // Once the server expires the cut-off session, the other participant leads.
    tokio::time::timeout(Timing::new().wait(), other.await_leadership())
        .await
        .expect("leads in time")
        .unwrap();
    assert!(!leader.has_leadership());
    proxy.resume();
}

#[tokio::test]
async fn leadership_survives_a_server_restart_without_two_leaders() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let path = unique_root("latch-restart");
    let mut latches = Vec::new();
    for i in 0..2 {
        let latch = LeaderLatch::builder(
            testkit::client(&server.connect_string()).await,
            &path,
            format!("p{i}"),
        )
        .build()
        .unwrap();
        latch.start().await.unwrap();
        latches.push(latch);
    }
    let before = one_leader(&latches).await;
    server.restart().await.unwrap();
    // Same sessions, same nodes: the same participant leads again, alone.
    let after = one_leader(&latches).await;
    assert_eq!(before, after);
    assert_eq!(
        latches[0].participants().await.unwrap().len(),
        2,
        "no node was lost or duplicated"
    );
}

#[tokio::test]
async fn close_modes() {
    let server = TestingServer::start().await.unwrap();
    use futures::StreamExt;
    for (mode, expect_event) in [(CloseMode::Silent, false), (CloseMode::NotifyLeader, true)] {
        let path = unique_root("latch-close");
        let latch =
            LeaderLatch::builder(testkit::client(&server.connect_string()).await, &path, "x")
                .close_mode(mode)
                .build()
                .unwrap();
        let mut events = leadership(&latch);
        latch.start().await.unwrap();
        assert_eq!(events.next().await, Some(LatchEvent::IsLeader));
        latch.close().await.unwrap();
        assert!(!latch.has_leadership());
        let next = tokio::time::timeout(Duration::from_millis(300), events.next()).await;
        assert_eq!(next.is_ok(), expect_event, "{mode:?}");
        assert!(
            latch.participants().await.unwrap().is_empty(),
            "close deletes the node"
        );
        assert!(
            latch.await_leadership().await.is_err(),
            "a closed latch never leads"
        );
    }
}

/// A leader's close ends its leadership before its node goes, and leaves nothing behind: the
/// latch's task stops by itself once closed (it hears of its own node's deletion before the
/// delete's reply) and makes no new offer, and the next in line leads. A close dropped after
/// its first poll stops the latch all the same (the delete goes on in the background).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_leader_leaves_nothing_behind() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("latch-closed");
    let clients = [
        testkit::client(&server.connect_string()).await,
        testkit::client(&server.connect_string()).await,
    ];
    let join = |i: usize| {
        let latch = LeaderLatch::builder(clients[i].clone(), &path, format!("p{i}"))
            .build()
            .unwrap();
        async move {
            latch.start().await.unwrap();
            latch
        }
    };
    // What the session of `client` sees under the election: any request the closed latch's
    // task sent before `close()` returned was sent on that session before this listing.
    let nodes_seen_by = |i: usize| {
        let client = clients[i].clone();
        let path = path.clone();
        async move {
            let (mut children, _) = client.get_children().for_path(&path).await.unwrap();
            children.sort();
            children
        }
    };
    let wait = Timing::new().wait();
    let mut leader = join(0).await;
    tokio::time::timeout(wait, leader.await_leadership())
        .await
        .expect("leads in time")
        .unwrap();
    let (mut leader_index, mut follower) = (0, join(1).await);
    for round in 0..10 {
        let hold = leader.hold().expect("the leader's hold");
        if round % 2 == 0 {
            leader.close().await.unwrap();
        } else {
            let closing = leader.close();
            futures::pin_mut!(closing);
            assert!(futures::poll!(closing.as_mut()).is_pending());
        }
        assert!(
            hold.is_lost(),
            "leadership ends before close returns (round {round})"
        );
        assert!(!leader.has_leadership());
        tokio::time::timeout(wait, follower.await_leadership())
            .await
            .expect("leads in time")
            .unwrap();
        let next = paths::node_name(&follower.node_path().unwrap()).to_owned();
        assert_eq!(
            nodes_seen_by(leader_index).await,
            vec![next],
            "round {round}"
        );
        assert!(
            leader.await_leadership().await.is_err(),
            "a closed latch never leads"
        );
        leader_index = 1 - leader_index;
        leader = std::mem::replace(&mut follower, join(1 - leader_index).await);
    }
    leader.close().await.unwrap();
    follower.close().await.unwrap();
    assert!(nodes_seen_by(0).await.is_empty());
}

/// A leader closed while its connection is down steps down at once; its delete goes through
/// once the client is back (on the same session), and its task, which sees the reconnection
/// while the close is still waiting for the delete, makes no new offer: the other leads, and
/// the closed one's node is the only thing gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_closed_while_disconnected_leaves_once_back_and_offers_nothing() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = unique_root("latch-close-cut");
    let leader_client = testkit::client(&proxy.connect_string()).await;
    let leader = started(leader_client.clone(), &path, "cut-off").await;
    let wait = Timing::new().wait();
    tokio::time::timeout(wait, leader.await_leadership())
        .await
        .expect("leads in time")
        .unwrap();
    let other = started(
        testkit::client(&server.connect_string()).await,
        &path,
        "other",
    )
    .await;
    let hold = leader.hold().expect("the leader's hold");

    proxy.pause();
    let closing = leader.close();
    futures::pin_mut!(closing);
    assert!(futures::poll!(closing.as_mut()).is_pending());
    assert!(hold.is_lost() && !leader.has_leadership());
    // The link breaks; the client reconnects through the proxy on the same session.
    proxy.drop_connections();
    proxy.resume();
    tokio::time::timeout(wait, closing)
        .await
        .expect("close returns once the delete went through")
        .unwrap();
    tokio::time::timeout(wait, other.await_leadership())
        .await
        .expect("leads in time")
        .unwrap();
    let (children, _) = leader_client.get_children().for_path(&path).await.unwrap();
    assert_eq!(
        children,
        vec![paths::node_name(&other.node_path().unwrap()).to_owned()]
    );
    assert!(leader.await_leadership().await.is_err());
    other.close().await.unwrap();
}

/// An empty participant id (Curator's default) is the client's identity, in the latch's node
/// and in the selector's: the nodes say who made them, and that is the id others read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_id_is_the_clients_identity() {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::started(
        testkit::builder(&server.connect_string(), Duration::from_secs(10)).identity("reporter"),
    )
    .await;
    let identity = client.identity().to_string();
    let path = unique_root("latch-identity");
    let latch = LeaderLatch::builder(client.clone(), &path, "")
        .build()
        .unwrap();
    latch.start().await.unwrap();
    latch.await_leadership().await.unwrap();
    assert_eq!(latch.id(), identity);
    let node = latch.node_path().unwrap();
    let (data, _) = client.get_data().for_path(&node).await.unwrap();
    let parsed = curator_framework::identity::Identity::parse(&data).unwrap();
    assert_eq!(parsed.to_string(), identity);
    assert!(identity.contains("name=reporter"), "{identity}");
    assert_eq!(latch.leader().await.unwrap().unwrap().id, identity);
    latch.close().await.unwrap();

    let selector_path = unique_root("selector-identity");
    let (sender, mut led) = tokio::sync::mpsc::unbounded_channel();
    let selector = curator_election::LeaderSelector::builder(
        client.clone(),
        &selector_path,
        "",
        move |_context| {
            let sender = sender.clone();
            async move {
                let _ = sender.send(());
                std::future::pending::<()>().await;
            }
        },
    )
    .build()
    .unwrap();
    selector.start().await.unwrap();
    tokio::time::timeout(Timing::new().wait(), led.recv())
        .await
        .expect("the selector leads");
    assert_eq!(selector.leader().await.unwrap().unwrap().id, identity);
    selector.close().await.unwrap();
    client.close().await.unwrap();
}

/// The line moves one place per departure, whatever the cause: a session's expiry (the
/// participant rejoins at the back), a node deleted by someone else, a close. The second in
/// line leads the moment the first goes without listing the children again (sequence numbers
/// only grow, so nothing can come before it); a participant further back that loses the one
/// it watched looks again first. Each hand-over gives leadership to exactly the next in line.
#[tokio::test]
async fn the_line_moves_one_place_per_departure() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("latch-line");
    let log: Log = Arc::default();
    let mut latches = Vec::new();
    let mut clients = Vec::new();
    for i in 0..4 {
        let client = testkit::client(&server.connect_string()).await;
        let latch = LeaderLatch::builder(client.clone(), &path, format!("p{i}"))
            .close_mode(CloseMode::NotifyLeader)
            .build()
            .unwrap();
        record(&latch, &log);
        // Started one after the other: their nodes are in this order.
        latch.start().await.unwrap();
        latches.push(latch);
        clients.push(client);
    }
    let wait = Timing::new().wait();
    tokio::time::timeout(wait, latches[0].await_leadership())
        .await
        .expect("leads in time")
        .unwrap();
    let ready = |id: &'static str| {
        let log = Arc::clone(&log);
        move || {
            let log = Arc::clone(&log);
            async move {
                log.lock()
                    .iter()
                    .any(|(_, who, e)| who == id && *e == LatchEvent::Ready)
            }
        }
    };
    for id in ["p1", "p2", "p3"] {
        curator_test::eventually("every follower in line", ready(id)).await;
    }

    // The second in line's session ends: it rejoins at the back; the leader stays.
    clients[1].inject_session_expiration().await.unwrap();
    curator_test::eventually("p1 rejoined at the back", || async {
        let nodes = latches[0].participant_nodes().await.unwrap();
        nodes.len() == 4 && Some(nodes[3].clone()) == latches[1].node_path()
    })
    .await;
    assert_eq!(one_leader(&latches).await, 0);

    // Someone else deletes the leader's node: the new second (p2) leads, p0 rejoins behind.
    let admin = testkit::client(&server.connect_string()).await;
    admin
        .delete()
        .for_path(&latches[0].node_path().unwrap())
        .await
        .unwrap();
    tokio::time::timeout(wait, latches[2].await_leadership())
        .await
        .expect("leads in time")
        .unwrap();
    curator_test::eventually("p0 stepped down and rejoined", || async {
        !latches[0].has_leadership() && latches[0].participants().await.unwrap().len() == 4
    })
    .await;
    assert_eq!(one_leader(&latches).await, 2);

    // Closes: p2 → p3 → p1 → p0, each to the next in line and only to it.
    for (leaving, next) in [(2, 3), (3, 1), (1, 0)] {
        latches[leaving].close().await.unwrap();
        tokio::time::timeout(wait, latches[next].await_leadership())
            .await
            .expect("leads in time")
            .unwrap();
        let open: Vec<LeaderLatch> = latches
            .iter()
            .filter(|l| l.node_path().is_some())
            .cloned()
            .collect();
        assert_eq!(open[one_leader(&open).await].id(), format!("p{next}"));
    }
    // p2 was second when p0's node went: it led on the watch alone, with no look between
    // (no `Determining`); p3 was third when p2 left, so it looked again first.
    let events = log.lock().clone();
    let before_leading = |id: &str| {
        let mine: Vec<LatchEvent> = events
            .iter()
            .filter(|(_, who, _)| who == id)
            .map(|(_, _, e)| e.clone())
            .collect();
        let at = mine
            .iter()
            .position(|e| *e == LatchEvent::IsLeader)
            .unwrap();
        mine[at - 1].clone()
    };
    assert_eq!(before_leading("p2"), LatchEvent::Ready);
    assert_eq!(before_leading("p3"), LatchEvent::Determining);
    // Closed hand-overs never overlapped: each leader's term ended before the next began.
    let mut leading: Option<String> = None;
    let mut p0_terms = 0;
    for (_, id, event) in events {
        match event {
            LatchEvent::IsLeader => {
                if id == "p0" {
                    p0_terms += 1;
                }
                // p0's first term ended by someone else's delete: p2 may hear first.
                if let Some(current) = &leading {
                    assert!(
                        current == "p0" && id == "p2",
                        "{id} led while {current} did"
                    );
                }
                leading = Some(id);
            }
            LatchEvent::NotLeader if leading.as_deref() == Some(id.as_str()) => leading = None,
            _ => {}
        }
    }
    assert_eq!(p0_terms, 2);
}

/// A leader that leaves while the next participant is still looking (its listing shows the
/// leader, whose node is gone before its watch is set): the follower leads, once, and the old
/// leader does not. Many rounds, so the departure falls at every point of the look.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_leaving_during_the_next_ones_look_hands_over() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("latch-race");
    let clients = [
        testkit::client(&server.connect_string()).await,
        testkit::client(&server.connect_string()).await,
    ];
    let wait = Timing::new().wait();
    let mut leader = started(clients[0].clone(), &path, "p0").await;
    tokio::time::timeout(wait, leader.await_leadership())
        .await
        .expect("leads in time")
        .unwrap();
    for round in 0..40 {
        let next = &clients[(round + 1) % 2];
        let follower = LeaderLatch::builder(next.clone(), &path, format!("r{round}"))
            .close_mode(CloseMode::Silent)
            .build()
            .unwrap();
        // The follower's start makes its node; the leader leaves at once, during the look.
        follower.start().await.unwrap();
        leader.close().await.unwrap();
        tokio::time::timeout(wait, follower.await_leadership())
            .await
            .expect("the follower leads in time")
            .unwrap();
        assert!(
            !leader.has_leadership(),
            "round {round}: the old leader still leads"
        );
        let nodes = follower.participant_nodes().await.unwrap();
        assert_eq!(
            nodes.len(),
            1,
            "round {round}: only the new leader's node: {nodes:?}"
        );
        leader = follower;
    }
    leader.close().await.unwrap();
}
