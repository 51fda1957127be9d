//! Ensemble tracking and reconfiguration against real ensembles: the client learns the members
//! from `/zookeeper/config`, uses them (with its chroot) for later sessions, and keeps the
//! string it was given when tracking is off; reconfiguration input is checked before anything is
//! sent, and servers without dynamic reconfiguration refuse with a typed error.

use std::time::Duration;

use curator_framework::ensemble::{EnsembleConfig, MemberRole};
use curator_framework::{ConnectionState, CuratorFramework, Error};
use curator_test::{TestingCluster, Timing, unique_root};
use futures::StreamExt;

async fn client(connect: &str, tracking: bool) -> CuratorFramework {
    let builder = curator_testkit::builder(connect, Duration::from_secs(4));
    curator_testkit::started(builder.ensemble_tracking(tracking)).await
}

/// A 3-member ensemble with dynamic reconfiguration, and a client of all its members that
/// authenticates as its super user (the one allowed to reconfigure), following the ensemble or
/// not.
async fn dynamic_ensemble(tracking: bool) -> (TestingCluster, CuratorFramework) {
    let cluster = TestingCluster::builder(3)
        .dynamic_reconfig()
        .start()
        .await
        .unwrap();
    let credentials = cluster.super_credentials().unwrap().digest_auth();
    let admin = curator_testkit::started(
        curator_testkit::builder(&cluster.connect_string(), Duration::from_secs(4))
            .authorization("digest", credentials)
            .ensemble_tracking(tracking),
    )
    .await;
    (cluster, admin)
}

/// Waits until the client's followed configuration satisfies `test`.
async fn learned(
    client: &CuratorFramework,
    test: impl Fn(&EnsembleConfig) -> bool,
) -> EnsembleConfig {
    let mut changes = client.ensemble_stream();
    if let Some(config) = client.ensemble().filter(|c| test(c)) {
        return config;
    }
    tokio::time::timeout(Timing::new().wait(), async {
        loop {
            let config = changes.next().await.expect("the client is open");
            if test(&config) {
                return config;
            }
        }
    })
    .await
    .expect("the configuration arrives")
}

/// Which member the client's session is connected to now (the client has tracked the members,
/// and may have moved among them: the list a client is given grows, and a fair share moves).
async fn connected_member(cluster: &TestingCluster, client: &CuratorFramework) -> usize {
    // (None while the session moves.)
    curator_test::eventually("a connected server", || {
        let connected = client.connected_server().is_some();
        async move { connected }
    })
    .await;
    let server = client.connected_server().expect("connected");
    (0..cluster.len())
        .find(|&i| cluster.member_connect_string(i) == server)
        .unwrap_or_else(|| panic!("{server} is no member"))
}

async fn wait_for_state(
    states: &mut curator_framework::listen::ListenerStream<ConnectionState>,
    wanted: ConnectionState,
) {
    tokio::time::timeout(Timing::new().forever(), async {
        while let Some(state) = states.next().await {
            if state == wanted {
                return;
            }
        }
        panic!("the client closed");
    })
    .await
    .unwrap_or_else(|_| panic!("no {wanted:?}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_given_one_member_learns_the_others_and_uses_them_with_its_chroot() {
    let mut cluster = TestingCluster::start(3).await.unwrap();
    let root = unique_root("ensemble-chroot");
    let admin = client(&cluster.connect_string(), false).await;
    admin
        .create()
        .creating_parents_if_needed()
        .for_path(&root, b"")
        .await
        .unwrap();

    // Given member 0 only, with a chroot.
    let tracked = client(&format!("{}{root}", cluster.member_connect_string(0)), true).await;
    let untracked = client(
        &format!("{}{root}", cluster.member_connect_string(0)),
        false,
    )
    .await;
    let config = learned(&tracked, |c| c.members.len() == 3).await;
    assert!(
        config
            .members
            .iter()
            .all(|m| m.role == MemberRole::Participant)
    );
    let mut addresses: Vec<String> = config
        .members
        .iter()
        .map(|m| m.client_address().unwrap())
        .collect();
    addresses.sort();
    let mut expected: Vec<String> = (0..3).map(|i| cluster.member_connect_string(i)).collect();
    expected.sort();
    assert_eq!(addresses, expected, "the members' client addresses");
    assert_eq!(untracked.ensemble(), None, "tracking off reads nothing");

    // The tracked client's member dies: its session fails over to the other members it
    // learned, under its chroot, keeping the session; an untracked client given that member
    // alone knows no other.
    let on = connected_member(&cluster, &tracked).await;
    let stranded = client(
        &format!("{}{root}", cluster.member_connect_string(on)),
        false,
    )
    .await;
    let mut tracked_states = tracked.connection_state_stream();
    let session = tracked.session_id();
    cluster.kill(on).unwrap();
    wait_for_state(&mut tracked_states, ConnectionState::Suspended).await;
    wait_for_state(&mut tracked_states, ConnectionState::Reconnected).await;
    assert_eq!(tracked.session_id(), session, "the same session");
    tracked
        .create()
        .for_path("/written-after", b"x")
        .await
        .unwrap();
    // (The admin may be on another server than the writer: catch up first.)
    admin.sync().for_path(&root).await.unwrap();
    let under_chroot = admin
        .get_data()
        .for_path(&format!("{root}/written-after"))
        .await
        .unwrap();
    assert_eq!(under_chroot.0, b"x", "the chroot was kept");
    assert!(
        !stranded.is_connected(),
        "without tracking the client keeps the one server it was given"
    );
    assert_ne!(
        tracked.connected_server(),
        Some(cluster.member_connect_string(on))
    );
    for client in [tracked, untracked, stranded, admin] {
        client.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconfig_input_is_checked_first_and_a_static_ensemble_refuses_it() {
    let cluster = TestingCluster::start(3).await.unwrap();
    let client = client(&cluster.connect_string(), true).await;
    let before = client.ensemble_config().await.unwrap();
    assert_eq!(before.members.len(), 3);

    for (what, builder) in [
        ("nothing", client.reconfig()),
        (
            "both kinds",
            client
                .reconfig()
                .leaving([1])
                .with_members(["server.1=127.0.0.1:1:2;3"]),
        ),
        ("a bad spec", client.reconfig().joining(["server.x=oops"])),
        (
            "an empty list",
            client.reconfig().with_members(Vec::<String>::new()),
        ),
    ] {
        assert!(
            matches!(builder.await, Err(Error::InvalidArgument(_))),
            "{what} is refused before anything is sent"
        );
    }
    assert_eq!(
        client.reconfig().leaving([3]).await,
        Err(Error::ReconfigDisabled),
        "servers without reconfigEnabled say so"
    );
    assert_eq!(client.ensemble_config().await.unwrap(), before, "unchanged");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_whose_only_member_is_reconfigured_out_moves_in_the_same_session_keeping_lock_leadership_and_cache()
 {
    use curator_caches::CuratorCache;
    use curator_election::{LatchEvent, LeaderLatch};
    use curator_locks::InterProcessMutex;
    use integration_tests::checkers::check_cache;
    use integration_tests::soak::{cache_tree, server_tree};

    let (mut cluster, admin) = dynamic_ensemble(false).await;
    let root = unique_root("ensemble-move");
    let (lock_path, latch_path, cache_path) = (
        format!("{root}/lock"),
        format!("{root}/latch"),
        format!("{root}/cache"),
    );
    admin
        .create()
        .creating_parents_if_needed()
        .for_path(&cache_path, b"")
        .await
        .unwrap();

    // Given member 0 (id 1) only, the client holds a mutex, leads an election and caches a
    // subtree; the admin client waits on both.
    let only = cluster.member_connect_string(0);
    let client = client(&only, true).await;
    learned(&client, |c| c.members.len() == 3).await;
    let session = client.session_id();
    let mutex = InterProcessMutex::builder(client.clone(), &lock_path)
        .build()
        .unwrap();
    let guard = mutex.acquire().await.unwrap();
    let latch = LeaderLatch::builder(client.clone(), &latch_path, "moving")
        .build()
        .unwrap();
    let mut latch_events = latch.stream();
    latch.start().await.unwrap();
    latch.await_leadership().await.unwrap();
    let rival = LeaderLatch::builder(admin.clone(), &latch_path, "rival")
        .build()
        .unwrap();
    rival.start().await.unwrap();
    let cache = CuratorCache::builder(client.clone(), &cache_path)
        .build()
        .unwrap();
    let mut cache_events = cache.stream();
    cache.start().await.unwrap();
    cache.initialized().await.unwrap();
    let mut states = client.connection_state_stream();

    // The subtree changes all through the move, and a little after the removed member stopped.
    let done = tokio_util::sync::CancellationToken::new();
    let writer = {
        let (admin, cache_path, done) = (admin.clone(), cache_path.clone(), done.clone());
        tokio::spawn(async move {
            let (mut i, mut after) = (0u32, 0);
            while after < 6 {
                if done.is_cancelled() {
                    after += 1;
                }
                let node = format!("{cache_path}/n{}", i % 6);
                let written = admin
                    .create()
                    .or_set_data()
                    .for_path(&node, i.to_string().as_bytes())
                    .await;
                assert!(written.is_ok(), "write {i}: {written:?}");
                i += 1;
            }
            i
        })
    };

    // Member id 1 leaves the ensemble (it keeps serving its clients as a non-voting follower,
    // so nothing breaks the connection): the client moves to the members by itself, without a
    // disconnection (requests made meanwhile wait, none fails).
    let config = admin
        .reconfig()
        .leaving([cluster.member_id(0)])
        .await
        .unwrap();
    assert!(config.member(cluster.member_id(0)).is_none());
    curator_test::eventually("the session moves off the removed member", || {
        let moved = client
            .connected_server()
            .is_some_and(|server| server != only);
        async move { moved }
    })
    .await;
    assert_eq!(client.session_id(), session, "the same session");
    cluster.stop_member(0).unwrap();
    done.cancel();
    let writes = writer.await.unwrap();
    println!("{writes} writes through the move");

    // The session goes on without the removed member: writes work, the lock is still held by
    // it alone, it still leads, and its cache equals the server's subtree.
    client
        .create()
        .for_path(&format!("{root}/written-after"), b"x")
        .await
        .unwrap();
    assert!(!guard.is_lost(), "the holder keeps its lock");
    let other = InterProcessMutex::builder(admin.clone(), &lock_path)
        .build()
        .unwrap();
    assert!(
        other
            .acquire_timeout(Duration::from_millis(200))
            .await
            .unwrap()
            .is_none(),
        "no second holder"
    );
    assert!(latch.has_leadership(), "the leader keeps leading");
    assert!(!rival.has_leadership(), "no second leader");
    assert_eq!(
        rival.leader().await.unwrap().map(|p| p.id),
        Some("moving".to_owned())
    );
    let server = server_tree(&admin, &cache_path).await.unwrap();
    // Checked again on each cache event until it matches.
    let equal = tokio::time::timeout(Timing::new().wait(), async {
        while !check_cache("cache", &cache_tree(cache.snapshot()), &server).is_empty() {
            if cache_events.next().await.is_none() {
                break;
            }
        }
    })
    .await;
    assert!(
        equal.is_ok(),
        "{:?}",
        check_cache("cache", &cache_tree(cache.snapshot()), &server)
    );
    assert_eq!(server.len(), 7, "the subtree's root and its six nodes");
    let mut seen = Vec::new();
    while let Ok(Some(state)) =
        tokio::time::timeout(Duration::from_millis(100), states.next()).await
    {
        seen.push(state);
    }
    assert!(seen.is_empty(), "no state change: {seen:?}");
    let mut events = Vec::new();
    while let Ok(Some(event)) =
        tokio::time::timeout(Duration::from_millis(100), latch_events.next()).await
    {
        events.push(event);
    }
    assert!(
        !events.iter().any(|e| matches!(e, LatchEvent::NotLeader)),
        "leadership never lapsed: {events:?}"
    );
    assert_eq!(client.session_id(), session);
    drop(guard);
    for recipe in [
        cache.close().await,
        latch.close().await,
        rival.close().await,
    ] {
        recipe.unwrap();
    }
    client.close().await.unwrap();
    admin.close().await.unwrap();
}

/// An unused loopback port: nothing listens there while the test runs.
fn dead_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_reconfigurations_of_a_dynamic_ensemble_are_typed_errors_and_change_nothing() {
    let (cluster, admin) = dynamic_ensemble(true).await;
    let before = admin.ensemble_config().await.unwrap();
    assert_eq!(before.members.len(), 3);

    // Not the super user: refused.
    let plain = client(&cluster.connect_string(), true).await;
    assert_eq!(plain.reconfig().leaving([3]).await, Err(Error::NoAuth));
    plain.close().await.unwrap();

    // A member id the ensemble does not have.
    // (ZooKeeper itself accepts it as a change that removes nothing, with a new version.)
    let unknown = admin.reconfig().leaving([9]).await;
    assert!(
        matches!(&unknown, Err(Error::InvalidArgument(why)) if why.contains("no member 9")),
        "{unknown:?}"
    );

    // A membership whose quorum is not there: member 1 and two servers nobody runs.
    let dead = |id: u64| {
        let (q, e, c) = (dead_port(), dead_port(), dead_port());
        format!("server.{id}=127.0.0.1:{q}:{e}:participant;127.0.0.1:{c}")
    };
    let no_quorum = admin
        .reconfig()
        .with_members([cluster.member_spec(0), dead(7), dead(8)])
        .await;
    assert_eq!(no_quorum, Err(Error::NewConfigNoQuorum));
    // Three joining members nobody runs: six members, a quorum of four, three of them synced.
    let joining = admin.reconfig().joining([dead(7), dead(8), dead(9)]).await;
    assert_eq!(joining, Err(Error::NewConfigNoQuorum));

    // A stale version.
    let stale = admin
        .reconfig()
        .leaving([cluster.member_id(2)])
        .from_config(before.version - 1)
        .await;
    assert_eq!(stale, Err(Error::BadVersion));

    assert_eq!(admin.ensemble_config().await.unwrap(), before, "unchanged");
    admin.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_learns_an_added_member_and_follows_its_member_to_a_new_port_with_chroot_and_namespace()
 {
    let (mut cluster, admin) = dynamic_ensemble(false).await;
    let root = unique_root("ensemble-port");
    admin
        .create()
        .creating_parents_if_needed()
        .for_path(&root, b"")
        .await
        .unwrap();

    // Given member 0 only, with a chroot and a namespace. Its session must outlast member 0's
    // restart on a new port (a JVM start, slow on a loaded machine) and the reconfiguration.
    let client = curator_testkit::started(
        curator_testkit::builder(
            &format!("{}{root}", cluster.member_connect_string(0)),
            Duration::from_secs(15),
        )
        .namespace("app"),
    )
    .await;
    learned(&client, |c| c.members.len() == 3).await;
    client.create().for_path("/before", b"1").await.unwrap();

    // A fourth member joins: the client's members include it.
    let added = cluster.start_new_member().await.unwrap();
    let added_id = cluster.member_id(added);
    admin
        .reconfig()
        .joining([cluster.member_spec(added)])
        .await
        .unwrap();
    let config = learned(&client, |c| c.member(added_id).is_some()).await;
    assert_eq!(config.members.len(), 4);
    assert_eq!(
        config.member(added_id).unwrap().client_address(),
        Some(cluster.member_connect_string(added)),
    );
    assert!(
        config
            .connect_string()
            .unwrap()
            .contains(&cluster.member_connect_string(added)),
        "the next connection's servers include the new member"
    );

    // The client's member moves to a new port: its old address dies with the client's
    // connection, which fails over to another member it learned, in the same session; there
    // the client reads the configuration naming the new address and takes it.
    let session = client.session_id();
    let mut states = client.connection_state_stream();
    let on = connected_member(&cluster, &client).await;
    let moved_id = cluster.member_id(on);
    let spec = cluster.move_member_to_new_port(on).await.unwrap();
    wait_for_state(&mut states, ConnectionState::Suspended).await;
    wait_for_state(&mut states, ConnectionState::Reconnected).await;
    admin.reconfig().joining([spec]).await.unwrap();
    assert_eq!(client.session_id(), session, "the same session");
    let config = learned(&client, |c| {
        c.member(moved_id).and_then(|m| m.client_address())
            == Some(cluster.member_connect_string(on))
    })
    .await;
    assert_eq!(config.members.len(), 4);

    // Writes still land under the chroot and the namespace.
    client.create().for_path("/after", b"2").await.unwrap();
    admin.sync().for_path(&root).await.unwrap();
    for (name, data) in [("before", b"1"), ("after", b"2")] {
        let (found, _) = admin
            .get_data()
            .for_path(&format!("{root}/app/{name}"))
            .await
            .unwrap();
        assert_eq!(found, data, "{name} under the chroot and namespace");
    }
    let mut seen = Vec::new();
    while let Ok(Some(state)) =
        tokio::time::timeout(Duration::from_millis(100), states.next()).await
    {
        seen.push(state);
    }
    assert!(seen.is_empty(), "no state change: {seen:?}");
    client.close().await.unwrap();
    admin.close().await.unwrap();
}

/// What a client given one member of three gets from following the ensemble: when its member
/// stops, or is cut off from the others (and so stops serving), for longer than the session
/// timeout while the other two keep a quorum, the session fails over to them and keeps its lock:
/// nobody else acquires it meanwhile, and its holder releases it after.
async fn a_lock_outlives_the_loss_of_its_member(cut_off: bool) {
    use curator_locks::InterProcessMutex;
    let mut cluster = if cut_off {
        TestingCluster::builder(3)
            .partitionable()
            .start()
            .await
            .unwrap()
    } else {
        TestingCluster::start(3).await.unwrap()
    };
    let root = unique_root("ensemble-failover");
    let lock_path = format!("{root}/lock");
    // Three times the usual session (12 s): when the member cut off is the leader (the session
    // may have moved to it), the other two refuse the session until they have elected a new
    // leader, since they have not applied everything it has seen (its last zxid is ahead of
    // theirs). The session must outlast that election on a loaded machine.
    let session_timeout = Timing::new().session_timeout() * 3;
    let holder = curator_testkit::started(
        curator_testkit::builder(&cluster.member_connect_string(0), session_timeout)
            .ensemble_tracking(true),
    )
    .await;
    learned(&holder, |c| c.members.len() == 3).await;
    let session = holder.session_id();
    let mutex = InterProcessMutex::builder(holder.clone(), &lock_path)
        .build()
        .unwrap();
    let guard = mutex.acquire().await.unwrap();
    let mut states = holder.connection_state_stream();

    // (The list grew from one member to three: the session may have moved already.)
    let on = connected_member(&cluster, &holder).await;
    if cut_off {
        cluster.isolate(on).unwrap();
    } else {
        cluster.kill(on).unwrap();
    }
    wait_for_state(&mut states, ConnectionState::Suspended).await;
    wait_for_state(&mut states, ConnectionState::Reconnected).await;
    assert_eq!(holder.session_id(), session, "the same session");
    // A contender on the other members waits longer than the session timeout, in vain.
    let others: Vec<String> = (0..3)
        .filter(|&i| i != on)
        .map(|i| cluster.member_connect_string(i))
        .collect();
    let contender = curator_testkit::started(
        curator_testkit::builder(&others.join(","), session_timeout).ensemble_tracking(false),
    )
    .await;
    let rival = InterProcessMutex::builder(contender.clone(), &lock_path)
        .build()
        .unwrap();
    assert!(
        rival
            .acquire_timeout(session_timeout * 3 / 2)
            .await
            .unwrap()
            .is_none(),
        "the lock stays held past the session timeout"
    );
    assert_eq!(holder.session_id(), session, "still the same session");
    let mut seen = Vec::new();
    while let Ok(Some(state)) = tokio::time::timeout(Duration::from_millis(50), states.next()).await
    {
        seen.push(state);
    }
    assert!(!seen.contains(&ConnectionState::Lost), "no Lost: {seen:?}");
    // The holder still owns its node and releases it; then the rival gets it.
    guard.release().await.unwrap();
    let taken = rival.acquire_timeout(Timing::new().wait()).await.unwrap();
    assert!(taken.is_some(), "the lock passes on once released");
    drop(taken);
    if cut_off {
        cluster.heal().unwrap();
    }
    contender.close().await.unwrap();
    holder.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_given_one_member_keeps_its_session_and_lock_when_that_member_stops() {
    a_lock_outlives_the_loss_of_its_member(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_given_one_member_keeps_its_session_and_lock_when_that_member_is_cut_off() {
    a_lock_outlives_the_loss_of_its_member(true).await;
}
