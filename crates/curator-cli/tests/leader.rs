//! `curator leader` against a real server.

mod support;

use curator_test::{Expiry, FaultProxy, TestingServer, Timing, expire_session, unique_root};
use nix::sys::signal::Signal;
use support::{Running, await_dead, await_gone, curator, run, text};

fn participant(connect: &str, path: &str, id: &str) -> Running {
    Running::spawn(curator(
        connect,
        &[
            "leader",
            path,
            "--id",
            id,
            "--json",
            "--session-timeout",
            "4s",
            "--grace",
            "2s",
            "--",
            "sleep",
            "60",
        ],
    ))
}

/// The leader process is killed (SIGKILL: no goodbye): its sentinel ends its command at once; once
/// its session expires, the other participant leads and starts its command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hands_over_when_the_leader_process_is_killed() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-leader-kill");
    let mut first = participant(&connect, &path, "first");
    first.wait_event("leading");
    let first_child = first.wait_event("started")["pid"].as_i64().unwrap() as i32;
    let mut second = participant(&connect, &path, "second");
    second.wait_event("joined");

    first.signal(Signal::SIGKILL);
    assert_eq!(first.wait_exit().code(), None);
    await_dead(first_child);

    let leading = second.wait_event("leading");
    assert_eq!(leading["id"], "second");
    let second_child = second.wait_event("started")["pid"].as_i64().unwrap() as i32;

    second.signal(Signal::SIGTERM);
    assert_eq!(second.wait_exit().code(), Some(143));
    await_gone(second_child);
}

/// SIGTERM to the leader: it stops its command and leaves, and the follower leads at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hands_over_when_the_leader_is_terminated() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-leader-term");
    let mut first = participant(&connect, &path, "first");
    first.wait_event("leading");
    let first_child = first.wait_event("started")["pid"].as_i64().unwrap() as i32;
    let mut second = participant(&connect, &path, "second");
    second.wait_event("joined");

    first.signal(Signal::SIGTERM);
    assert_eq!(first.wait_exit().code(), Some(143));
    await_gone(first_child);
    assert_eq!(second.wait_event("leading")["id"], "second");
    second.wait_event("started");
    second.signal(Signal::SIGINT);
    assert_eq!(second.wait_exit().code(), Some(130));
}

/// The server goes away: the leader stops its command and waits; when the server is back (the
/// session survived), it leads again and starts the command anew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stops_on_lost_leadership_and_leads_again() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let path = unique_root("cli-leader-lost");
    let mut leader = Running::spawn(curator(
        &server.connect_string(),
        &[
            "leader",
            &path,
            "--id",
            "only",
            "--json",
            "--session-timeout",
            "20s",
            "--grace",
            "2s",
            "--",
            "sleep",
            "60",
        ],
    ));
    leader.wait_event("leading");
    let child = leader.wait_event("started")["pid"].as_i64().unwrap() as i32;
    server.stop().unwrap();
    leader.wait_event("lost");
    leader.wait_event("stopped");
    await_gone(child);
    server.restart().await.unwrap();
    leader.wait_event("leading");
    let again = leader.wait_event("started")["pid"].as_i64().unwrap() as i32;
    assert_ne!(again, child);
    leader.signal(Signal::SIGTERM);
    assert_eq!(leader.wait_exit().code(), Some(143));
    await_gone(again);
}

/// The leader's session expires: it stops its command, joins again on its new session, leads
/// again (it is the only participant) and starts the command anew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stops_when_its_session_expires_and_leads_again() {
    let server = TestingServer::start().await.unwrap();
    // Through a proxy, which learns the session's id and password.
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = unique_root("cli-leader-expired");
    let mut leader = participant(&proxy.connect_string(), &path, "only");
    leader.wait_event("leading");
    let child = leader.wait_event("started")["pid"].as_i64().unwrap() as i32;
    let session = proxy.sessions().last().cloned().unwrap();
    let expiry = expire_session(&server.connect_string(), &session, Timing::new().wait())
        .await
        .unwrap();
    assert_eq!(expiry, Expiry::Expired);
    leader.wait_event("lost");
    leader.wait_event("stopped");
    await_gone(child);
    // The client may first get back onto the old session (its reconnect can reach the server
    // before the session is closed) and lead there briefly; what matters is that it leads on
    // a new session in the end.
    let old = format!("{:#x}", session.id);
    while leader.wait_event("leading")["session"] == old.as_str() {}
    let again = leader.wait_event("started")["pid"].as_i64().unwrap() as i32;
    assert_ne!(again, child);
    leader.signal(Signal::SIGTERM);
    assert_eq!(leader.wait_exit().code(), Some(143));
    await_gone(again);
}

/// CMD finds its leadership's epoch (the latch node's creation zxid, as in the `leading` event)
/// and the latch node in its environment; the next leadership's epoch is greater.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cmd_gets_the_leader_epoch() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-leader-epoch");
    let client = curator_framework::CuratorFramework::builder()
        .connect_string(&connect)
        .build()
        .unwrap();
    client.start().await.unwrap();
    let mut epochs = Vec::new();
    for id in ["first", "second"] {
        let mut leader = Running::spawn(curator(
            &connect,
            &[
                "leader",
                &path,
                "--id",
                id,
                "--json",
                "--",
                "sh",
                "-c",
                "echo \"$CURATOR_LEADER_EPOCH $CURATOR_LEADER_NODE\"; exec sleep 60",
            ],
        ));
        let leading = leader.wait_event("leading");
        let line = leader.wait_stdout(|_| true);
        let node = leading["node"].as_str().unwrap();
        assert_eq!(line, format!("{} {node}", leading["epoch"]));
        // The epoch is the node's creation zxid, as the server has it.
        let stat = client.check_exists().for_path(node).await.unwrap().unwrap();
        assert_eq!(leading["epoch"].as_i64(), Some(stat.czxid));
        epochs.push(stat.czxid);
        leader.signal(Signal::SIGTERM);
        assert_eq!(leader.wait_exit().code(), Some(143));
    }
    assert!(epochs[0] < epochs[1], "{epochs:?}");
    client.close().await.unwrap();
}

/// An empty `--id` is a usage error: nobody joins the election.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_id_is_refused() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-leader-empty-id");
    for command in ["leader", "lease"] {
        let mut args = vec![command, path.as_str(), "--id", ""];
        if command == "lease" {
            args.extend(["--for", "1m"]);
        }
        args.extend(["--", "true"]);
        let output = run(curator(&connect, &args));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{command}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("'--id <ID>'"), "{command}: {stderr}");
        assert!(stderr.contains("empty"), "{command}: {stderr}");
    }
    let nothing = run(curator(&connect, &["get", &path]));
    assert_eq!(nothing.status.code(), Some(1), "an election node was made");
}
