//! `TestingCluster` with dynamic reconfiguration: members added, removed and moved at run time
//! by a super user's `reconfig`, against real ZooKeeper 3.8 processes.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use curator_session::proto::{CreateMode, ErrorCode};
use curator_session::{Sasl, Session, open_acl};
use curator_test::{
    Error, ServerSasl, TestCertificates, TestingCluster, Timing, four_letter_word, unique_root,
};

/// A session as the ensemble's super user.
async fn super_client(cluster: &TestingCluster, connect: &str) -> Session {
    let credentials = cluster.super_credentials().expect("a dynamic ensemble");
    let config = common::config(connect, Timing::new().scale(Duration::from_secs(20)))
        .auth("digest", credentials.digest_auth());
    common::try_connect(config)
        .await
        .unwrap_or_else(|e| panic!("connecting to {connect} as super: {e}"))
}

/// An incremental reconfiguration, once, if the configuration's version is `version` (any
/// version when `None`).
async fn reconfig_once(
    client: &Session,
    joining: &[&str],
    leaving: &[&str],
    version: Option<i64>,
) -> Result<String, curator_session::Error> {
    let list = |specs: &[&str]| (!specs.is_empty()).then(|| specs.join(","));
    let (data, _) = client
        .reconfig(list(joining), list(leaving), None, version.unwrap_or(-1))
        .await?;
    Ok(String::from_utf8(data).unwrap())
}

/// An incremental reconfiguration; returns the new configuration's text. It is retried while
/// the ensemble is busy with another one (`RECONFIGINPROGRESS`) or has no quorum of the new
/// configuration in sync yet (`NEWCONFIGNOQUORUM`). A lost reply is checked against the
/// configuration: removing the leader makes the others' clients lose their connection during
/// the hand-off, although the change committed.
async fn reconfig(client: &Session, joining: &[&str], leaving: &[&str]) -> String {
    let deadline = tokio::time::Instant::now() + Timing::new().wait();
    loop {
        match reconfig_once(client, joining, leaving, None).await {
            Ok(config) => return config,
            Err(curator_session::Error::ConnectionLoss) => {
                let config = synced_config(client).await;
                if applied(&config, joining, leaving) {
                    return config;
                }
            }
            Err(
                e @ curator_session::Error::Server(
                    ErrorCode::NewConfigNoQuorum | ErrorCode::ReconfigInProgress,
                ),
            ) if tokio::time::Instant::now() < deadline => {
                tracing::debug!("reconfig retried after {e}");
            }
            Err(e) => panic!("reconfig +{joining:?} -{leaving:?}: {e}"),
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "reconfig +{joining:?} -{leaving:?} never applied"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether `config` names every joining spec as it is and none of the leaving ids.
fn applied(config: &str, joining: &[&str], leaving: &[&str]) -> bool {
    let servers = servers(config);
    joining.iter().all(|spec| {
        let (key, value) = spec.split_once('=').unwrap();
        let id: u64 = key.strip_prefix("server.").unwrap().parse().unwrap();
        servers.get(&id).map(String::as_str) == Some(value)
    }) && leaving
        .iter()
        .all(|id| !servers.contains_key(&id.parse::<u64>().unwrap()))
}

/// The `server.<id>=` values of a configuration's text (`/zookeeper/config`).
fn servers(config: &str) -> BTreeMap<u64, String> {
    config
        .lines()
        .filter_map(|line| line.strip_prefix("server."))
        .map(|rest| {
            let (id, value) = rest.split_once('=').unwrap();
            (id.parse().unwrap(), value.to_owned())
        })
        .collect()
}

/// `/zookeeper/config` as the member `client` is connected to has it after a `sync`.
async fn synced_config(client: &Session) -> String {
    common::retry(|| client.sync("/zookeeper/config")).await;
    let (data, _) = common::retry(|| client.get_config()).await;
    String::from_utf8(data).unwrap()
}

/// The member's mode (`srvr`), polled until it is one of `modes`.
async fn await_mode(address: &str, modes: &[&str]) -> String {
    let deadline = tokio::time::Instant::now() + Timing::new().wait();
    loop {
        let answer = four_letter_word(address, "srvr", Timing::new().wait()).await;
        let mode = answer.ok().and_then(|answer| {
            answer
                .lines()
                .find_map(|line| line.strip_prefix("Mode: "))
                .map(str::to_owned)
        });
        if let Some(mode) = mode.filter(|mode| modes.contains(&mode.as_str())) {
            return mode;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{address} never reported one of {modes:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls the leader's `mntr` until it counts `followers` synced followers, `non_voting` of them
/// without a vote.
async fn await_followers(cluster: &TestingCluster, followers: u64, non_voting: u64) {
    let deadline = tokio::time::Instant::now() + Timing::new().wait();
    loop {
        let seen = (
            leader_metric(cluster, "synced_followers").await,
            leader_metric(cluster, "synced_non_voting_followers").await,
        );
        if seen == (Some(followers), Some(non_voting)) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the leader never counted {followers} followers, {non_voting} non-voting: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A number the leader reports in `mntr` (`zk_<key>`).
async fn leader_metric(cluster: &TestingCluster, key: &str) -> Option<u64> {
    let leader = cluster.leader().await?;
    let answer = four_letter_word(
        &cluster.member_connect_string(leader),
        "mntr",
        Timing::new().wait(),
    )
    .await
    .ok()?;
    answer.lines().find_map(|line| {
        let (name, value) = line.split_once('\t')?;
        (name == format!("zk_{key}")).then(|| value.trim().parse().ok())?
    })
}

/// Creates `path` under a fresh root and reads it back.
async fn write_and_read(client: &Session, what: &str) {
    let root = unique_root(what);
    common::retry(|| common::try_mkdirs(client, &root)).await;
    let path = format!("{root}/node");
    common::retry(|| async {
        match client
            .create(
                &path,
                what.as_bytes(),
                open_acl(),
                CreateMode::Persistent,
                None,
            )
            .await
        {
            // A create whose reply was lost to a fail-over may have been applied.
            Err(curator_session::Error::Server(ErrorCode::NodeExists)) => Ok(()),
            other => other.map(|_| ()),
        }
    })
    .await;
    let (data, _) = common::retry(|| client.get_data(&path)).await;
    assert_eq!(data, what.as_bytes());
}

#[tokio::test]
async fn a_dynamic_ensemble_names_its_members_and_only_super_reconfigures() {
    let certs = TestCertificates::generate().unwrap();
    let cluster = TestingCluster::builder(3)
        .dynamic_reconfig()
        .tls(certs.server_tls())
        .sasl(ServerSasl::digest_md5().with_user("alice", "alice-secret"))
        .read_only_capable()
        .timing(Timing::new())
        .start()
        .await
        .unwrap();
    for index in 0..3 {
        assert_eq!(cluster.member_id(index), index as u64 + 1);
        let dir = cluster.dir().join(format!("member-{}", index + 1));
        let cfg = std::fs::read_to_string(dir.join("zoo.cfg")).unwrap();
        assert!(cfg.contains("reconfigEnabled=true"), "{cfg}");
        assert!(cfg.contains("standaloneEnabled=false"), "{cfg}");
        assert!(cfg.contains("dynamicConfigFile="), "{cfg}");
        // The members and their client ports are only in the dynamic file.
        assert!(
            !cfg.lines()
                .any(|line| line.starts_with("server.") || line.starts_with("clientPort=")),
            "{cfg}"
        );
    }

    let admin = super_client(&cluster, &cluster.connect_string()).await;
    let config = synced_config(&admin).await;
    let listed = servers(&config);
    assert_eq!(listed.len(), 3, "{config}");
    for index in 0..3 {
        let spec = cluster.member_spec(index);
        let (key, value) = spec.split_once('=').unwrap();
        assert_eq!(key, format!("server.{}", index + 1));
        assert_eq!(listed[&cluster.member_id(index)], value, "{config}");
        assert!(spec.ends_with(&format!(";{}", cluster.member_connect_string(index))));
    }
    assert!(
        config.lines().any(|line| line.starts_with("version=")),
        "{config}"
    );

    // Anyone else is refused: the harness does not skip ACLs.
    let anonymous =
        common::connect(&cluster.connect_string(), Timing::new().session_timeout()).await;
    let leaving = cluster.member_id(2).to_string();
    let no_auth = Err(curator_session::Error::Server(ErrorCode::NoAuth));
    assert_eq!(
        reconfig_once(&anonymous, &[], &[leaving.as_str()], None).await,
        no_auth
    );
    let wrong = common::connect_with(
        common::config(&cluster.connect_string(), Timing::new().session_timeout())
            .auth("digest", b"super:not-the-password".to_vec()),
    )
    .await;
    assert_eq!(
        reconfig_once(&wrong, &[], &[leaving.as_str()], None).await,
        no_auth
    );
    // A conditional no-op reconfiguration at a stale version tells super is allowed in.
    let stale = reconfig_once(&admin, &[cluster.member_spec(2).as_str()], &[], Some(1)).await;
    assert_eq!(
        stale,
        Err(curator_session::Error::Server(ErrorCode::BadVersion))
    );

    // The other options still work: TLS on every member, SASL logins.
    let tls = common::connect_with(
        common::tls_config(
            &cluster.secure_connect_string().unwrap(),
            certs.ca().cert_pem(),
            None,
        )
        .sasl(Sasl::digest_md5("alice", "alice-secret")),
    )
    .await;
    assert!(
        tls.who_am_i()
            .await
            .unwrap()
            .contains(&common::identity("sasl", "alice"))
    );
    write_and_read(&tls, "reconfig-options").await;
    assert!(format!("{:?}", cluster.super_credentials()).contains("redacted"));
}

#[tokio::test]
async fn a_new_member_is_reconfigured_in_and_a_removed_one_stopped() {
    let mut cluster = TestingCluster::builder(3)
        .dynamic_reconfig()
        .start()
        .await
        .unwrap();
    let admin = super_client(&cluster, &cluster.connect_string()).await;

    let new = cluster.start_new_member().await.unwrap();
    assert_eq!(new, 3);
    assert_eq!(cluster.len(), 4);
    assert_eq!(cluster.member_id(new), 4);
    assert!(cluster.is_running(new));
    assert!(
        cluster
            .connect_string()
            .ends_with(&format!(",{}", cluster.member_connect_string(new)))
    );
    // Until the reconfiguration it follows without a vote.
    await_mode(&cluster.member_connect_string(new), &["follower"]).await;
    await_followers(&cluster, 3, 1).await;

    let spec = cluster.member_spec(new);
    let config = reconfig(&admin, &[spec.as_str()], &[]).await;
    let listed = servers(&config);
    assert_eq!(listed.keys().copied().collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(format!("server.4={}", listed[&4]), spec, "{config}");
    await_followers(&cluster, 3, 0).await;
    await_mode(&cluster.member_connect_string(new), &["follower", "leader"]).await;
    let on_new = common::connect(
        &cluster.member_connect_string(new),
        Timing::new().session_timeout(),
    )
    .await;
    assert_eq!(servers(&synced_config(&on_new).await).len(), 4);
    write_and_read(&on_new, "reconfig-on-new-member").await;

    // Member 0 (id 1) leaves. ZooKeeper keeps it running as a non-voting follower, with its
    // clients, until the test stops it.
    let on_removed = common::connect(
        &cluster.member_connect_string(0),
        Timing::new().session_timeout(),
    )
    .await;
    let leaving = cluster.member_id(0).to_string();
    let config = reconfig(&admin, &[], &[leaving.as_str()]).await;
    assert_eq!(
        servers(&config).keys().copied().collect::<Vec<_>>(),
        [2, 3, 4],
        "{config}"
    );
    await_mode(&cluster.member_connect_string(0), &["follower"]).await;
    write_and_read(&on_removed, "reconfig-through-removed-member").await;

    cluster.stop_member(0).unwrap();
    assert!(!cluster.is_running(0));
    assert_eq!(cluster.len(), 4, "indexes stay");
    let remaining = cluster.connect_string();
    assert_eq!(
        remaining,
        (1..4)
            .map(|index| cluster.member_connect_string(index))
            .collect::<Vec<_>>()
            .join(",")
    );
    let client = common::connect(&remaining, Timing::new().session_timeout()).await;
    write_and_read(&client, "reconfig-after-removal").await;
    assert_ne!(cluster.await_leader().await.unwrap(), 0);
    await_followers(&cluster, 2, 0).await;

    // ZooKeeper wrote the removed member's files without it: it cannot start again.
    match cluster.restart(0).await {
        Err(Error::Exited { log_tail, .. }) => {
            assert!(log_tail.contains("not in the peer list"), "{log_tail}")
        }
        other => panic!("a removed member restarted: {other:?}"),
    }
    assert!(!cluster.is_running(0));
    assert_eq!(cluster.connect_string(), remaining);
}

#[tokio::test]
async fn the_leader_leaves_and_hands_over() {
    let mut cluster = TestingCluster::builder(3)
        .dynamic_reconfig()
        .start()
        .await
        .unwrap();
    let leader = cluster.await_leader().await.unwrap();
    let others: Vec<String> = (0..3)
        .filter(|&other| other != leader)
        .map(|other| cluster.member_connect_string(other))
        .collect();
    let admin = super_client(&cluster, &others.join(",")).await;
    let on_leader = common::connect(
        &cluster.member_connect_string(leader),
        Timing::new().session_timeout(),
    )
    .await;

    // The reply may be lost to the hand-off (the helper checks the configuration then).
    let leaving = cluster.member_id(leader).to_string();
    let config = reconfig(&admin, &[], &[leaving.as_str()]).await;
    assert_eq!(servers(&config).len(), 2, "{config}");
    curator_test::eventually("a new leader", || async {
        cluster.leader().await.is_some_and(|now| now != leader)
    })
    .await;
    // The old leader follows without a vote, and its clients carry on through it.
    await_mode(&cluster.member_connect_string(leader), &["follower"]).await;
    write_and_read(&on_leader, "reconfig-through-old-leader").await;

    cluster.stop_member(leader).unwrap();
    assert_eq!(cluster.connect_string(), others.join(","));
    write_and_read(&admin, "reconfig-after-leader-left").await;
}

#[tokio::test]
async fn a_member_moves_to_a_new_client_port() {
    let mut cluster = TestingCluster::builder(3)
        .dynamic_reconfig()
        .start()
        .await
        .unwrap();
    // The leader moves: the others elect another while it restarts.
    let index = cluster.await_leader().await.unwrap();
    let others: Vec<String> = (0..3)
        .filter(|&other| other != index)
        .map(|other| cluster.member_connect_string(other))
        .collect();
    let admin = super_client(&cluster, &others.join(",")).await;
    let id = cluster.member_id(index);
    let old = cluster.member_connect_string(index);
    let old_spec = cluster.member_spec(index);

    // First the move (the member serves on the new port when it returns), then the
    // reconfiguration that names the new port.
    let spec = cluster.move_member_to_new_port(index).await.unwrap();
    assert!(cluster.is_running(index));
    assert_ne!(spec, old_spec);
    assert_eq!(spec, cluster.member_spec(index));
    assert_eq!(
        spec.split_once(';').unwrap().0,
        old_spec.split_once(';').unwrap().0,
        "only the client port changes"
    );
    let moved = cluster.member_connect_string(index);
    assert_ne!(moved, old);
    assert!(spec.ends_with(&format!(";{moved}")), "{spec}");
    assert!(cluster.connect_string().contains(&moved));
    assert!(!cluster.connect_string().contains(&old));
    assert!(matches!(
        four_letter_word(&old, "srvr", Timing::new().wait()).await,
        Err(Error::Io { .. })
    ));

    let config = reconfig(&admin, &[spec.as_str()], &[]).await;
    assert_eq!(format!("server.{id}={}", servers(&config)[&id]), spec);
    let on_moved = common::connect(&moved, Timing::new().session_timeout()).await;
    write_and_read(&on_moved, "reconfig-moved").await;
    let seen = synced_config(&on_moved).await;
    assert_eq!(
        format!("server.{id}={}", servers(&seen)[&id]),
        spec,
        "{seen}"
    );
    await_mode(&moved, &["follower", "leader"]).await;

    // Its files name the new port: a restart comes back on it.
    cluster.restart(index).await.unwrap();
    assert_eq!(cluster.member_connect_string(index), moved);
    let again = common::connect(&moved, Timing::new().session_timeout()).await;
    write_and_read(&again, "reconfig-moved-restart").await;
}

#[tokio::test]
async fn a_static_ensemble_is_unchanged() {
    let mut cluster = TestingCluster::start(1).await.unwrap();
    assert!(cluster.super_credentials().is_none());
    assert_eq!(cluster.member_id(0), 1);
    let cfg = std::fs::read_to_string(cluster.dir().join("member-1/zoo.cfg")).unwrap();
    assert!(cfg.contains("reconfigEnabled=false"), "{cfg}");
    assert!(cfg.contains("server.1=127.0.0.1:"), "{cfg}");
    assert!(cfg.contains("clientPort="), "{cfg}");
    assert!(!cfg.contains("dynamicConfigFile"), "{cfg}");
    assert!(matches!(
        cluster.start_new_member().await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        cluster.move_member_to_new_port(0).await,
        Err(Error::InvalidArgument(_))
    ));
    let client = common::connect(&cluster.connect_string(), Timing::new().session_timeout()).await;
    assert_eq!(
        reconfig_once(&client, &[], &["1"], None).await,
        Err(curator_session::Error::Server(ErrorCode::ReconfigDisabled))
    );
    assert_eq!(
        cluster.member_spec(0).split_once(';').unwrap().1,
        cluster.member_connect_string(0)
    );
    cluster.stop_member(0).unwrap();
    assert_eq!(cluster.connect_string(), "");
    cluster.restart(0).await.unwrap();
    assert_eq!(cluster.connect_string(), cluster.member_connect_string(0));
    assert_eq!(
        await_mode(&cluster.connect_string(), &["leader"]).await,
        "leader"
    );
}
