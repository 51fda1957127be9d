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
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(Duration::from_secs(4))
        .connection_timeout(Timing::new().connection_timeout())
        .ensemble_tracking(tracking)
        .build()
        .unwrap();
    client.start().await.unwrap();
    client
        .block_until_connected(Timing::new().wait())
        .await
        .unwrap();
    client
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

    // Member 0 dies and both sessions are given up: the tracked client's next session goes to the
    // members it learned, under its chroot; the untracked one knows only member 0.
    let mut tracked_states = tracked.connection_state_stream();
    // (Suspended for the session timeout, the client gives the session up.)
    cluster.kill(0).unwrap();
    wait_for_state(&mut tracked_states, ConnectionState::Lost).await;
    wait_for_state(&mut tracked_states, ConnectionState::Reconnected).await;
    tracked
        .create()
        .for_path("/written-after", b"x")
        .await
        .unwrap();
    let under_chroot = admin
        .get_data()
        .for_path(&format!("{root}/written-after"))
        .await
        .unwrap();
    assert_eq!(under_chroot.0, b"x", "the chroot was kept");
    assert!(
        !untracked.is_connected(),
        "without tracking the client keeps the one server it was given"
    );
    for client in [tracked, untracked, admin] {
        client.close().await;
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
    client.close().await;
}
