//! `TestingCluster` member partitions: members cut off from each other while clients stay
//! attached to them.

mod common;

use std::time::Duration;

use curator_session::proto::{CreateMode, ErrorCode, Stat};
use curator_session::{Session, SessionConfig, SessionState, open_acl};
use curator_test::{Error, TestingCluster, Timing, four_letter_word, unique_root};

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

/// Creates `path` as a persistent node with `data`.
fn create(
    session: &Session,
    path: &str,
    data: &[u8],
) -> impl Future<Output = Result<(String, Stat), curator_session::Error>> + use<> {
    session.create(path, data, open_acl(), CreateMode::Persistent, None)
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
    create(&isolated, &format!("{root}/before"), b"1")
        .await
        .unwrap();

    cluster.isolate(old).unwrap();
    for &other in &majority {
        assert_eq!(cluster.can_reach(old, other), Some(false));
        assert_eq!(cluster.can_reach(other, old), Some(false));
    }
    assert_eq!(cluster.can_reach(majority[0], majority[1]), Some(true));

    // The member that lost its quorum drops its clients and serves no one: the client is
    // disconnected at once, and a write it sends is not answered (the session fails a request
    // it has no connection for with `ConnectionLoss`) and not applied.
    common::await_state(&isolated, SessionState::Disconnected).await;
    let attempt = tokio::time::timeout(
        Duration::from_secs(1),
        create(&isolated, &format!("{root}/isolated"), b"x"),
    )
    .await;
    assert!(
        matches!(
            attempt,
            Err(_) | Ok(Err(curator_session::Error::ConnectionLoss))
        ),
        "{attempt:?}"
    );

    // The majority elects another leader and takes writes.
    let new = await_new_leader(cluster, old).await;
    assert_ne!(new, old);
    let during = format!("{root}/during");
    let end = tokio::time::Instant::now() + Timing::new().forever();
    let mut writer = writer;
    loop {
        match create(&writer, &during, b"2").await {
            // A create whose reply was lost to the election may have been applied.
            Ok(_) | Err(curator_session::Error::Server(ErrorCode::NodeExists)) => break,
            // An election that outlasted the writer's session (a loaded machine): a new one.
            Err(curator_session::Error::SessionExpired) => {
                writer = common::connect(&majority_string, session_timeout).await;
            }
            Err(e) if common::is_retryable(&e) && tokio::time::Instant::now() < end => {
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
            SessionState::Disconnected | SessionState::Expired
        ),
        "{:?}",
        isolated.state()
    );
    let write = common::retry(|| writer.exists(&format!("{root}/isolated"))).await;
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
        SessionState::Connected => isolated,
        _ => common::connect(&cluster.member_connect_string(old), session_timeout).await,
    };
    common::retry(|| reader.sync(&during)).await;
    let (data, _) = common::retry(|| reader.get_data(&during)).await;
    assert_eq!(data, b"2");
}

/// Waits until `client`'s session is connected again or expired; returns which.
async fn await_connected_or_expired(client: &Session) -> SessionState {
    let mut states = client.state_watch();
    let end = tokio::time::Instant::now() + Timing::new().forever();
    let reached = tokio::time::timeout_at(
        end,
        states.wait_for(|state| matches!(state, SessionState::Connected | SessionState::Expired)),
    )
    .await
    .unwrap_or_else(|_| panic!("the isolated client neither reconnected nor expired"))
    .map(|state| *state);
    // The channel closes only after the session ended, in a state `state()` still reports.
    reached.unwrap_or_else(|_| client.state())
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
    let admin = common::connect_with(
        SessionConfig::new(&cluster.connect_string())
            .unwrap()
            .auth("digest", cluster.super_credentials().unwrap().digest_auth()),
    )
    .await;
    let new = cluster.start_new_member().await.unwrap();
    let spec = cluster.member_spec(new);
    common::retry(|| admin.reconfig(Some(spec.clone()), Some("1".to_owned()), None, -1)).await;
    cluster.stop_member(0).unwrap();
    assert_eq!(cluster.can_reach(new, 1), Some(true));
    isolate_the_leader_then_heal(&cluster).await;
}
