//! Node operations, counters, barriers, usage errors and connection errors.

mod support;

use curator_test::{TestingServer, unique_root};
use serde_json::Value;
use support::{Running, curator, run, text};

fn json(output: &std::process::Output) -> Value {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        text(&output.stderr)
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("not JSON ({error}): {}", text(&output.stdout)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_commands_round_trip() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let root = unique_root("cli-nodes");
    let node = format!("{root}/a/b");
    let zk = |args: &[&str]| run(curator(&connect, args));

    let created = zk(&["create", &node, "hello", "--parents"]);
    assert_eq!(text(&created.stdout).trim(), node);
    assert_eq!(text(&zk(&["get", &node]).stdout).trim(), "hello");
    let set = json(&zk(&["set", &node, "world", "--version", "0", "--json"]));
    assert_eq!(set["version"], 1);
    let stale = zk(&["set", &node, "again", "--version", "0"]);
    assert_eq!(stale.status.code(), Some(1));
    assert!(
        text(&stale.stderr).contains("bad version"),
        "{}",
        text(&stale.stderr)
    );
    let got = json(&zk(&["get", &node, "--stat", "--json"]));
    assert_eq!(got["data"], "world");
    assert_eq!(got["stat"]["version"], 1);

    let seq = zk(&["create", &format!("{root}/a/job-"), "--sequential"]);
    let seq = text(&seq.stdout).trim().to_owned();
    assert!(seq.starts_with(&format!("{root}/a/job-00000000")), "{seq}");
    assert_eq!(
        json(&zk(&["ls", &format!("{root}/a"), "--json"])),
        serde_json::json!(["b", seq.rsplit('/').next().unwrap()])
    );
    let tree = text(&zk(&["tree", &root]).stdout);
    assert_eq!(
        tree.lines().collect::<Vec<_>>(),
        [
            root.as_str(),
            "  a",
            "    b",
            &format!("    {}", seq.rsplit('/').next().unwrap())
        ]
    );

    let not_empty = zk(&["rm", &format!("{root}/a")]);
    assert_eq!(not_empty.status.code(), Some(1));
    assert_eq!(zk(&["rm", "-r", &root]).status.code(), Some(0));
    let gone = zk(&["get", &node]);
    assert_eq!(gone.status.code(), Some(1));
    assert_eq!(
        text(&gone.stderr).trim(),
        format!("curator: reading {node}: no such node")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_prefixes_paths() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let namespace = unique_root("cli-ns").trim_start_matches('/').to_owned();
    let created = run(curator(
        &connect,
        &["--namespace", &namespace, "create", "/x", "1"],
    ));
    assert_eq!(created.status.code(), Some(0), "{}", text(&created.stderr));
    let outside = run(curator(&connect, &["get", &format!("/{namespace}/x")]));
    assert_eq!(text(&outside.stdout).trim(), "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counter_counts() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-counter");
    let counter = |args: &[&str]| {
        let mut all = vec!["counter", path.as_str()];
        all.extend_from_slice(args);
        run(curator(&connect, &all))
    };
    assert_eq!(text(&counter(&["get"]).stdout).trim(), "0");
    assert_eq!(text(&counter(&["incr"]).stdout).trim(), "1");
    assert_eq!(text(&counter(&["incr", "5"]).stdout).trim(), "6");
    let value = json(&counter(&["incr", "-2", "--json"]));
    assert_eq!(
        (value["previous"].clone(), value["value"].clone()),
        (6.into(), 4.into())
    );
    assert_eq!(counter(&["set", "-10"]).status.code(), Some(0));
    assert_eq!(text(&counter(&["get"]).stdout).trim(), "-10");
}

/// Every write of `DistributedAtomicLong` leaves an outcome marker until the instance's next write;
/// a `curator counter` process makes one write, so it must delete its marker before it exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counter_calls_leave_no_markers() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-counter-markers");
    let counter = |args: &[&str]| {
        let mut all = vec!["counter", path.as_str()];
        all.extend_from_slice(args);
        let output = run(curator(&connect, &all));
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        text(&output.stdout).trim().to_owned()
    };
    let mut expected = 0;
    for call in 0..20 {
        match call % 5 {
            // A set now and then, and reads, between the increments.
            3 => {
                expected = 100 * call;
                assert_eq!(
                    counter(&["set", &expected.to_string()]),
                    expected.to_string()
                );
            }
            4 => assert_eq!(counter(&["get"]), expected.to_string()),
            _ => {
                expected += 1;
                assert_eq!(counter(&["incr"]), expected.to_string());
            }
        }
    }
    assert_eq!(counter(&["get"]), expected.to_string());
    let children = run(curator(&connect, &["ls", &path]));
    assert_eq!(
        children.status.code(),
        Some(0),
        "{}",
        text(&children.stderr)
    );
    assert_eq!(text(&children.stdout).trim(), "", "markers left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn barrier_opens_when_all_members_arrive() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-barrier");
    let mut first = Running::spawn(curator(
        &connect,
        &[
            "barrier",
            &path,
            "--members",
            "2",
            "--json",
            "--",
            "sh",
            "-c",
            "exit 3",
        ],
    ));
    // The first member waits; a second one opens the barrier for both.
    let second = run(curator(
        &connect,
        &["barrier", &path, "--members", "2", "--", "true"],
    ));
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    first.wait_event("entered");
    first.wait_event("left");
    assert_eq!(first.wait_exit().code(), Some(3));

    let alone = run(curator(
        &connect,
        &[
            "barrier",
            &format!("{path}-alone"),
            "--members",
            "2",
            "--timeout",
            "300ms",
        ],
    ));
    assert_eq!(alone.status.code(), Some(4), "{}", text(&alone.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_prints_each_change() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-watch");
    let mut watch = Running::spawn(curator(
        &connect,
        &["watch", &path, "--count", "2", "--json"],
    ));
    let initial: Value = serde_json::from_str(&watch.wait_stdout(|_| true)).unwrap();
    assert_eq!(
        (initial["event"].clone(), initial["exists"].clone()),
        ("initial".into(), false.into())
    );
    assert_eq!(
        run(curator(&connect, &["create", &path, "v1", "--parents"]))
            .status
            .code(),
        Some(0)
    );
    let created: Value = serde_json::from_str(&watch.wait_stdout(|_| true)).unwrap();
    assert_eq!(created["event"], "NodeCreated");
    assert_eq!(created["data"], "v1");
    assert_eq!(
        run(curator(&connect, &["set", &path, "v2"])).status.code(),
        Some(0)
    );
    let changed: Value = serde_json::from_str(&watch.wait_stdout(|_| true)).unwrap();
    assert_eq!(changed["event"], "NodeDataChanged");
    assert_eq!(changed["data"], "v2");
    assert_eq!(watch.wait_exit().code(), Some(0));
}

#[test]
fn bad_arguments_exit_with_code_2_in_one_line() {
    for args in [
        &["bogus"][..],
        &["lock", "/a"],
        &["lock", "/a", "--timeout", "soon", "--", "true"],
        &["barrier", "/a", "--", "true"],
        &["counter", "/a", "add"],
        &["ls", "relative/path"],
    ] {
        let output = run(curator("127.0.0.1:1", args));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("curator: "), "{args:?}: {stderr}");
    }
    let help = run(curator("127.0.0.1:1", &["--help"]));
    assert_eq!(help.status.code(), Some(0));
    assert!(text(&help.stdout).contains("Exit codes:"));
}

#[test]
fn an_unreachable_server_exits_with_code_3() {
    // A port nobody listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let connect = format!("127.0.0.1:{port}");
    for args in [&["ls", "/"][..], &["lock", "/a", "--", "true"]] {
        let mut all = vec!["--connection-timeout", "1s"];
        all.extend_from_slice(args);
        let output = run(curator(&connect, &all));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(3), "{stderr}");
        assert_eq!(
            stderr.trim(),
            format!("curator: cannot connect to ZooKeeper at {connect} within 1s")
        );
    }
}
