//! `TestingCluster` member partitions: members cut off from each other while clients stay
//! attached to them.

mod common;

use std::time::Duration;

use curator_test::{Error, TestingCluster, Timing, four_letter_word, unique_root};
use zookeeper_client as zk;

async fn mode(cluster: &TestingCluster, index: usize) -> Option<String> {
    let answer = four_letter_word(
        &cluster.member_connect_string(index),
        "srvr",
        Duration::from_secs(2),
    )
    .await
    .ok()?;
    answer
        .lines()
        .find_map(|line| line.strip_prefix("Mode: "))
        .map(str::to_owned)
}

/// Waits until a member other than `old` leads, and returns it: an election, which may take
/// long on a loaded machine (the deadline is `Timing::forever`, as for JVM starts).
async fn await_new_leader(cluster: &TestingCluster, old: usize) -> usize {
    let end = tokio::time::Instant::now() + Timing::new().forever();
    loop {
        for index in (0..cluster.len()).filter(|&i| i != old && cluster.is_running(i)) {
            if mode(cluster, index).await.as_deref() == Some("leader") {
                return index;
            }
        }
        assert!(
            tokio::time::Instant::now() < end,
            "a new leader on the majority side did not happen in time"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

/// Isolate the leader, see the majority elect another and take writes while the isolated
/// member serves no one, heal, and see the old leader catch up.
async fn isolate_the_leader_then_heal(cluster: &TestingCluster) {
    let session_timeout = Timing::new().scale(Duration::from_secs(30));
    let old = cluster.await_leader().await.unwrap();
    let majority: Vec<usize> = (0..cluster.len())
        .filter(|&i| i != old && cluster.is_running(i))
        .collect();
    let majority_string = majority
        .iter()
        .map(|&i| cluster.member_connect_string(i))
        .collect::<Vec<_>>()
        .join(",");

    // One client attached only to the leader, one only to the others.
    let isolated = common::connect(&cluster.member_connect_string(old), session_timeout).await;
    let writer = common::connect(&majority_string, session_timeout).await;
    let root = unique_root("partition");
    common::mkdirs(&writer, &root).await;
    isolated
        .create(&format!("{root}/before"), b"1", &persistent())
        .await
        .unwrap();

    cluster.isolate(old).unwrap();
    for &other in &majority {
        assert_eq!(cluster.can_reach(old, other), Some(false));
        assert_eq!(cluster.can_reach(other, old), Some(false));
    }
    assert_eq!(cluster.can_reach(majority[0], majority[1]), Some(true));

    // The member that lost its quorum drops its clients and serves no one: the client is
    // disconnected at once, and a write it sends is not answered (this client holds requests
    // while it reconnects, until its session timeout) and not applied.
    common::await_state(&isolated, zk::SessionState::Disconnected).await;
    let attempt = tokio::time::timeout(
        Duration::from_secs(1),
        isolated.create(&format!("{root}/isolated"), b"x", &persistent()),
    )
    .await;
    assert!(
        matches!(attempt, Err(_) | Ok(Err(zk::Error::ConnectionLoss))),
        "{attempt:?}"
    );

    // The majority elects another leader and takes writes.
    let new = await_new_leader(cluster, old).await;
    assert_ne!(new, old);
    let during = format!("{root}/during");
    let end = tokio::time::Instant::now() + Timing::new().forever();
    let mut writer = writer;
    loop {
        match writer.create(&during, b"2", &persistent()).await {
            // A create whose reply was lost to the election may have been applied.
            Ok(_) | Err(zk::Error::NodeExists) => break,
            // An election that outlasted the writer's session (a loaded machine): a new one.
            Err(zk::Error::SessionExpired) => {
                writer = common::connect(&majority_string, session_timeout).await;
            }
            Err(zk::Error::ConnectionLoss | zk::Error::Timeout | zk::Error::SessionMoved)
                if tokio::time::Instant::now() < end =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("the majority's write failed: {e}"),
        }
    }
    assert_ne!(mode(cluster, old).await.as_deref(), Some("leader"));
    // Still cut off (or, on a machine slow enough that the election outlasted the session
    // timeout, expired by the majority's new leader).
    assert!(
        matches!(
            isolated.state(),
            zk::SessionState::Disconnected | zk::SessionState::Expired
        ),
        "{:?}",
        isolated.state()
    );
    let write = common::retry(|| writer.check_stat(&format!("{root}/isolated"))).await;
    assert!(write.is_none(), "the isolated member applied a write");

    // Healed, the old leader rejoins as a follower, and a read on it after `sync` sees the
    // majority's write.
    cluster.heal().unwrap();
    assert_eq!(cluster.can_reach(old, majority[0]), Some(true));
    let end = tokio::time::Instant::now() + Timing::new().forever();
    while mode(cluster, old).await.as_deref() != Some("follower") {
        assert!(
            tokio::time::Instant::now() < end,
            "the isolated member following again did not happen in time"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Its client reconnects in its session, unless the partition outlasted the session timeout
    // (a loaded machine): then a new session on the same member stands in for it.
    let reader = match await_connected_or_expired(&isolated).await {
        zk::SessionState::SyncConnected => isolated,
        _ => common::connect(&cluster.member_connect_string(old), session_timeout).await,
    };
    common::retry(|| reader.sync(&during)).await;
    let (data, _) = common::retry(|| reader.get_data(&during)).await;
    assert_eq!(data, b"2");
}

/// Waits until `client`'s session is connected again or expired; returns which.
async fn await_connected_or_expired(client: &zk::Client) -> zk::SessionState {
    let mut watcher = client.state_watcher();
    let mut state = watcher.state();
    let end = tokio::time::Instant::now() + Timing::new().forever();
    while !matches!(
        state,
        zk::SessionState::SyncConnected | zk::SessionState::Expired
    ) {
        state = tokio::time::timeout_at(end, watcher.changed())
            .await
            .unwrap_or_else(|_| panic!("the isolated client neither reconnected nor expired"));
    }
    state
}

#[tokio::test]
async fn an_isolated_leader_is_replaced_and_catches_up_after_healing() {
    let cluster = TestingCluster::builder(3)
        .partitionable()
        .start()
        .await
        .unwrap();
    assert!(cluster.is_partitionable());
    isolate_the_leader_then_heal(&cluster).await;

    // Errors: a member in two groups, an index outside the ensemble.
    assert!(matches!(
        cluster.partition(&[&[0], &[0, 1]]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(cluster.isolate(3), Err(Error::InvalidArgument(_))));
}

#[tokio::test]
async fn a_dynamic_ensemble_is_partitionable_and_keeps_its_wiring_across_reconfigurations() {
    let mut cluster = TestingCluster::builder(3)
        .dynamic_reconfig()
        .partitionable()
        .start()
        .await
        .unwrap();
    // Members know each other by name; each JVM resolves the names to its own proxies.
    assert!(cluster.member_spec(1).starts_with("server.2=zk-2:"));
    let conf = four_letter_word(
        &cluster.member_connect_string(0),
        "conf",
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    assert!(conf.contains("server.3=zk-3:"), "{conf}");

    // A member added by reconfiguration is wired like the others.
    let admin = zk::Client::connector()
        .with_auth(
            "digest",
            &cluster.super_credentials().unwrap().digest_auth(),
        )
        .connect(&cluster.connect_string())
        .await
        .unwrap();
    let new = cluster.start_new_member().await.unwrap();
    let spec = cluster.member_spec(new);
    let joinings = [spec.as_str()];
    let leavings = ["1"];
    common::retry(|| {
        admin.update_ensemble(
            zk::EnsembleUpdate::Incremental {
                joinings: joinings.iter().copied(),
                leavings: leavings.iter().copied(),
            },
            None,
        )
    })
    .await;
    cluster.stop_member(0).unwrap();
    assert_eq!(cluster.can_reach(new, 1), Some(true));
    isolate_the_leader_then_heal(&cluster).await;
}
