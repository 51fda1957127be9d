//! Node operations, counters, barriers, usage errors and connection errors.

mod support;

use std::time::Instant;

use curator_test::{TestingServer, Timing, unique_root};
use serde_json::Value;
use support::{Running, curator, curator_env, run, text};

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

/// Nobody listens: curator says so at once (not after --connection-timeout) and points to
/// `curator server`.
#[test]
fn a_refused_connection_fails_at_once() {
    let connect = free_port_address();
    for args in [&["ls", "/"][..], &["lock", "/a", "--", "true"]] {
        let mut all = vec!["--connection-timeout", "10m"];
        all.extend_from_slice(args);
        let started = Instant::now();
        let output = run(curator(&connect, &all));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(3), "{stderr}");
        assert!(started.elapsed() < Timing::new().wait(), "{stderr}");
        assert_eq!(
            stderr.trim(),
            format!(
                "curator: cannot connect to ZooKeeper at {connect}: connection refused (no server runs there; `curator server` starts one)"
            )
        );
    }
    let no_server = run(curator_env(None, &["ls", "/", "--connect", &connect]));
    assert_eq!(no_server.status.code(), Some(3));
}

/// Something listens but never answers: curator waits --connection-timeout, then exits 3.
#[test]
fn a_silent_server_exits_with_code_3_after_the_timeout() {
    // A bound socket that is never accepted from: connections complete (the kernel queues
    // them) and then hear nothing.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let connect = listener.local_addr().unwrap().to_string();
    let output = run(curator(
        &connect,
        &["--connection-timeout", "1s", "ls", "/"],
    ));
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert_eq!(
        stderr.trim(),
        format!("curator: cannot connect to ZooKeeper at {connect} within 1s")
    );
    drop(listener);
}

fn one_json_line(stderr: &[u8]) -> Value {
    let stderr = text(stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    serde_json::from_str(stderr.trim())
        .unwrap_or_else(|error| panic!("not JSON ({error}): {stderr}"))
}

/// With --json, a failure is a JSON object on stderr too, with the exit code in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_json_with_json() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let root = unique_root("cli-json-errors");

    let missing = run(curator(&connect, &["get", &format!("{root}/x"), "--json"]));
    assert_eq!(missing.status.code(), Some(1));
    let error = one_json_line(&missing.stderr);
    assert_eq!(error["event"], "error");
    assert_eq!(error["code"], 1);
    assert_eq!(error["message"], format!("reading {root}/x: no such node"));

    // Before the subcommand's own flags parse, and before --json could be seen by them.
    let usage = run(curator(&connect, &["--json", "lock", "/a"]));
    assert_eq!(usage.status.code(), Some(2));
    assert_eq!(one_json_line(&usage.stderr)["code"], 2);

    let timeout = run(curator(
        &connect,
        &[
            "barrier",
            &root,
            "--members",
            "2",
            "--timeout",
            "300ms",
            "--json",
        ],
    ));
    assert_eq!(timeout.status.code(), Some(4));
    let error = one_json_line(&timeout.stderr);
    assert_eq!(error["code"], 4);
    assert!(error["message"].as_str().unwrap().contains("within 300ms"));

    let refused = run(curator(&free_port_address(), &["ls", "/", "--json"]));
    assert_eq!(refused.status.code(), Some(3));
    assert_eq!(one_json_line(&refused.stderr)["code"], 3);
}

/// With --json, CMD's stderr joins the JSON stream line by line (non-UTF-8 lines in base64),
/// before the `exited` event; CMD's stdout is its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cmd_stderr_becomes_json_events() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("cli-json-stderr");
    let output = run(curator(
        &server.connect_string(),
        &[
            "lock",
            &path,
            "--json",
            "--",
            "sh",
            "-c",
            "echo out; echo 'err {1}' >&2; printf '\\377\\376\\n' >&2; printf 'last' >&2",
        ],
    ));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).trim(), "out");
    let events: Vec<Value> = text(&output.stderr)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "acquired", "started", "stderr", "stderr", "stderr", "exited"
        ],
        "{events:#?}"
    );
    assert_eq!(events[2]["line"], "err {1}");
    assert_eq!(events[2]["encoding"], "utf8");
    assert_eq!(events[3]["line"], "//4=");
    assert_eq!(events[3]["encoding"], "base64");
    assert_eq!(events[4]["line"], "last");
}

/// `get` prints binary data losslessly on request, and says which encoding it used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_prints_data_in_the_chosen_encoding() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let node = format!("{}/bin", unique_root("cli-encoding"));
    let client = curator_framework::CuratorFramework::builder()
        .connect_string(&connect)
        .build()
        .unwrap();
    client.start().await.unwrap();
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&node, b"\x00\xffhi")
        .await
        .unwrap();
    client.close().await.unwrap();

    let text_json = json(&run(curator(&connect, &["get", &node, "--json"])));
    assert_eq!(text_json["encoding"], "utf8");
    assert_eq!(text_json["data"], "\u{0}\u{fffd}hi");
    assert_eq!(text_json["lossy"], true);
    let base64 = json(&run(curator(
        &connect,
        &["get", &node, "--json", "--encoding", "base64"],
    )));
    assert_eq!(base64["encoding"], "base64");
    assert_eq!(base64["data"], "AP9oaQ==");
    assert!(base64.get("lossy").is_none());
    let hex = run(curator(&connect, &["get", &node, "--encoding", "hex"]));
    assert_eq!(text(&hex.stdout).trim(), "00ff6869");
    let bad = run(curator(&connect, &["get", &node, "--encoding", "rot13"]));
    assert_eq!(bad.status.code(), Some(2));
}

/// Each subcommand's help lists what it takes; connection flags go before or after the
/// subcommand, and are refused by `server`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_lists_only_what_applies() {
    let help = |args: &[&str]| {
        let output = run(curator_env(None, args));
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        text(&output.stdout)
    };
    let server_help = help(&["server", "--help"]);
    for absent in [
        "--connect",
        "--namespace",
        "--session-timeout",
        "--connection-timeout",
    ] {
        assert!(
            !server_help.contains(absent),
            "server --help shows {absent}:\n{server_help}"
        );
    }
    for present in ["--cluster", "--port", "--json"] {
        assert!(server_help.contains(present), "{present}:\n{server_help}");
    }
    let demo_help = help(&["demo", "--help"]);
    assert!(!demo_help.contains("--json"), "{demo_help}");
    assert!(demo_help.contains("--connect"), "{demo_help}");
    let ls_help = help(&["ls", "--help"]);
    for present in ["--connect", "--namespace", "--json"] {
        assert!(ls_help.contains(present), "{present}:\n{ls_help}");
    }

    for args in [&["--connect", "h:1", "server"][..], &["--json", "demo"]] {
        let output = run(curator_env(None, args));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("does not apply"), "{stderr}");
    }

    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    for args in [
        &["--connect", connect.as_str(), "ls", "/"][..],
        &["ls", "/", "--connect", connect.as_str()],
        // The subcommand's flag wins.
        &[
            "--connect",
            "127.0.0.1:1",
            "ls",
            "/",
            "--connect",
            connect.as_str(),
        ],
    ] {
        let output = run(curator_env(None, args));
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&output.stderr)
        );
        assert!(text(&output.stdout).contains("zookeeper"));
    }
}

/// The server refuses to delete /zookeeper; a create without its parent suggests -p; a CMD
/// without `--` gets the tip.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_say_what_to_do() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();

    let rm = run(curator(&connect, &["rm", "/zookeeper"]));
    let stderr = text(&rm.stderr);
    assert_eq!(rm.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("belong to ZooKeeper itself"), "{stderr}");

    let orphan = format!("{}/a/b", unique_root("cli-no-parent"));
    let create = run(curator(&connect, &["create", &orphan]));
    let stderr = text(&create.stderr);
    assert_eq!(create.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("does not exist (-p creates it too)"),
        "{stderr}"
    );

    for (args, tip) in [
        (&["lock", "/a", "echo", "hi"][..], "go after `--`"),
        (&["lock", "/a", "-x"], "after `--` is CMD"),
    ] {
        let output = run(curator(&connect, args));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("tip:") && stderr.contains(tip), "{stderr}");
    }
}

/// `curator watch` reports a lost connection at once (and the reconnection), and watches on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_reports_connection_changes() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-watch-connection");
    assert_eq!(
        run(curator(&connect, &["create", &path, "v1", "-p"]))
            .status
            .code(),
        Some(0)
    );
    let mut watch = Running::spawn(curator(&connect, &["watch", &path, "--json"]));
    let initial: Value = serde_json::from_str(&watch.wait_stdout(|_| true)).unwrap();
    assert_eq!(initial["data"], "v1");

    server.stop().unwrap();
    assert_eq!(watch.wait_event("connection")["state"], "Suspended");
    server.restart().await.unwrap();
    assert_eq!(watch.wait_event("connection")["state"], "Reconnected");
    assert_eq!(
        run(curator(&connect, &["set", &path, "v2"])).status.code(),
        Some(0)
    );
    let changed: Value = serde_json::from_str(&watch.wait_stdout(|_| true)).unwrap();
    assert_eq!(changed["event"], "NodeDataChanged");
    assert_eq!(changed["data"], "v2");
}

/// `--connect garbage` (or such a $ZK_CONNECT) is a usage error, before any connection.
#[test]
fn bad_connect_strings_are_usage_errors() {
    for (flag, env) in [
        (Some("garbage"), None),
        (Some("h:99999"), None),
        (None, Some("garbage")),
    ] {
        let mut args = Vec::new();
        if let Some(flag) = flag {
            args.extend(["--connect", flag]);
        }
        args.extend(["ls", "/"]);
        let output = run(curator_env(env, &args));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?} {env:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
}

/// `127.0.0.1:<a port nobody listens on>`: bound, then released.
fn free_port_address() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whoami_prints_the_sessions_identities() {
    let server = TestingServer::start().await.unwrap();
    let output = run(curator(&server.connect_string(), &["whoami"]));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout)
            .lines()
            .any(|line| line == "ip:127.0.0.1"),
        "{}",
        text(&output.stdout)
    );
    let output = run(curator(&server.connect_string(), &["whoami", "--json"]));
    let identities = json(&output);
    assert!(
        identities
            .as_array()
            .unwrap()
            .iter()
            .any(|identity| identity["scheme"] == "ip"),
        "{identities}"
    );
}

/// `ls` of a node without children prints nothing at all (no empty line); `--json` prints `[]`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ls_of_a_childless_node_prints_nothing() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let node = format!("{}/leaf", unique_root("cli-ls-empty"));
    let created = run(curator(&connect, &["create", "-p", &node]));
    assert_eq!(created.status.code(), Some(0), "{}", text(&created.stderr));

    let mut ls = Running::spawn(curator(&connect, &["ls", &node]));
    assert_eq!(ls.wait_exit().code(), Some(0), "{:#?}", ls.drain_stderr());
    assert_eq!(
        ls.drain_stdout(),
        Vec::<String>::new(),
        "not even an empty line"
    );
    assert_eq!(
        json(&run(curator(&connect, &["ls", &node, "--json"]))),
        serde_json::json!([])
    );
}

/// Reads under a namespace that does not exist leave no node behind: they find nothing (and
/// say the namespace does not exist yet); the first write makes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_under_a_missing_namespace_create_nothing() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let top = unique_root("cli-ns-read");
    let namespace = format!("{}/b", top.trim_start_matches('/'));
    let under = |args: &[&str]| {
        let mut all = vec!["--namespace", namespace.as_str()];
        all.extend_from_slice(args);
        run(curator(&connect, &all))
    };
    let absent = |path: &str| {
        let get = run(curator(&connect, &["get", path]));
        assert_eq!(get.status.code(), Some(1), "{path} exists");
        assert!(
            text(&get.stderr).contains("no such node"),
            "{}",
            text(&get.stderr)
        );
    };

    let ls = under(&["ls", "/"]);
    let stderr = text(&ls.stderr);
    assert_eq!(ls.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no such node"), "{stderr}");
    assert!(
        stderr.contains(&format!("namespace /{namespace} does not exist")),
        "{stderr}"
    );
    assert_eq!(under(&["get", "/x"]).status.code(), Some(1));
    assert_eq!(under(&["whoami"]).status.code(), Some(0));
    let counter = under(&["counter", "/c", "get"]);
    assert_eq!(
        text(&counter.stdout).trim(),
        "0",
        "{}",
        text(&counter.stderr)
    );
    absent(&top);

    // A write makes the namespace.
    let created = under(&["create", "/x", "1"]);
    assert_eq!(created.status.code(), Some(0), "{}", text(&created.stderr));
    let got = run(curator(&connect, &["get", &format!("/{namespace}/x")]));
    assert_eq!(text(&got.stdout).trim(), "1");
}

/// Arguments that start with '-': clap's tip (`-- -5`) would make them CMD where `--` starts
/// CMD, or a positional after an option. The message says what is true instead, or, for a
/// value an option refuses, why; nothing is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hyphen_values_get_a_true_tip() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-hyphen");
    for (args, says) in [
        // A value the option refuses: why.
        (
            &["lock", &path, "--grace", "-5", "--", "true"][..],
            &["invalid value '-5' for '--grace <D>'", "negative"][..],
        ),
        (
            &["lease", &path, "--for", "-5m", "--", "true"],
            &["invalid value '-5m' for '--for <D>'", "negative"],
        ),
        (
            &["barrier", &path, "--members", "-1", "--", "true"],
            &["invalid value '-1' for '--members <N>'"],
        ),
        (
            &["watch", &path, "--count", "-1"],
            &["invalid value '-1' for '--count <N>'"],
        ),
        // A value the option takes: written with '='.
        (&["leader", &path, "--id", "-x", "--", "true"], &["--id=-x"]),
        // Not an option's value: what follows `--` is CMD.
        (
            &["lock", &path, "-5", "--", "true"],
            &["'-5'", "after `--` is CMD"],
        ),
    ] {
        let output = run(curator(&connect, args));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        for says in says {
            assert!(stderr.contains(says), "{args:?}: {says:?} not in {stderr}");
        }
        assert!(!stderr.contains("use '-- -"), "{args:?}: {stderr}");
    }
    let nothing = run(curator(&connect, &["get", &path]));
    assert_eq!(nothing.status.code(), Some(1), "{}", text(&nothing.stdout));
    // Where a positional may start with '-', clap's tip is right and stays.
    let set = run(curator(&connect, &["set", &path, "-1"]));
    assert!(
        text(&set.stderr).contains("use '-- -1'"),
        "{}",
        text(&set.stderr)
    );
}

/// An option no command has: clap's tip `use '-- --x'` would make it CMD where `--` starts
/// CMD, and is refused again where every positional is already given; it is left out there (a
/// similar option's name stays), and kept where it is right.
#[test]
fn unknown_options_get_no_tip_that_fails() {
    for (args, says, never) in [
        (
            &["lock", "/a", "--timout", "5s", "--", "true"][..],
            "a similar argument exists: '--timeout'",
            "use '-- --timout'",
        ),
        (
            &["lock", "/a", "--id", "x", "--", "true"],
            "after `--` is CMD",
            "use '-- --id'",
        ),
        (
            &["ui", "/a", "--port", "8080"],
            "no option is named '--port': curator ui",
            "use '-- --port'",
        ),
        (
            &["create", "/a", "x", "--acl", "auth::cdrwa"],
            "no option is named '--acl': curator create",
            "use '-- --acl'",
        ),
        (
            &["ui", "/a", "-5"],
            "no option is named '-5': curator ui",
            "use '-- -5'",
        ),
    ] {
        let output = run(curator("127.0.0.1:1", args));
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {says:?} not in {stderr}");
        assert!(!stderr.contains(never), "{args:?}: {stderr}");
    }
    // Where the value can be a positional, clap's tip is right and stays.
    let set = run(curator("127.0.0.1:1", &["set", "/a", "--x"]));
    assert!(
        text(&set.stderr).contains("use '-- --x'"),
        "{}",
        text(&set.stderr)
    );
}

/// A refused version says the node's version; a delete refused for children suggests `-r`; a
/// refusal by the ACL names the session's identities.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_say_what_the_server_has() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let root = unique_root("cli-refusals");
    let node = format!("{root}/n");
    let zk = |args: &[&str]| run(curator(&connect, args));
    assert_eq!(zk(&["create", "-p", &node, "v0"]).status.code(), Some(0));
    assert_eq!(zk(&["set", &node, "v1"]).status.code(), Some(0));

    for args in [
        &["set", &node, "v", "--version", "3"][..],
        &["rm", &node, "--version", "3"],
    ] {
        let stale = zk(args);
        let stderr = text(&stale.stderr);
        assert_eq!(stale.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("bad version: it is at version 1, not 3"),
            "{args:?}: {stderr}"
        );
    }

    let parent = zk(&["rm", &root]);
    let stderr = text(&parent.stderr);
    assert_eq!(parent.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("node has children (-r deletes them too)"),
        "{stderr}"
    );

    // World-readable only: writes are refused by the ACL.
    let client = curator_testkit::client(&connect).await;
    let locked = format!("{root}/read-only");
    client
        .create()
        .with_acl(curator_framework::acl::Acl::read_unsafe())
        .for_path(&locked, b"x")
        .await
        .unwrap();
    let refused = zk(&["set", &locked, "y"]);
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not authorized"), "{stderr}");
    assert!(stderr.contains("ip:127.0.0.1"), "{stderr}");
    client.close().await.unwrap();
}

/// Security settings from `ZK_*` variables: an error names the variable that was set, not the
/// flag that was not given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_from_variables_name_the_variables() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    for (variables, says, never) in [
        (
            &[
                ("ZK_TLS_CERT", "/no/cert.pem"),
                ("ZK_TLS_KEY", "/no/key.pem"),
            ][..],
            "$ZK_TLS_CERT and $ZK_TLS_KEY need --tls-ca",
            "--tls-cert",
        ),
        (
            &[("ZK_SASL_USER", "app")],
            "$ZK_SASL_USER and --sasl-password-file go together",
            "--sasl-user",
        ),
        (
            &[
                ("ZK_AUTH_USER", "app"),
                ("ZK_AUTH_PASSWORD_FILE", "/no/such/file"),
            ],
            "$ZK_AUTH_PASSWORD_FILE: cannot read",
            "--auth-password-file",
        ),
        (
            &[
                ("ZK_AUTH_USER", "a:b"),
                ("ZK_AUTH_PASSWORD_FILE", "/etc/hostname"),
            ],
            "$ZK_AUTH_USER: ",
            "--auth-user",
        ),
        (
            &[("ZK_KERBEROS_KEYTAB", "/no/keytab")],
            "$ZK_KERBEROS_KEYTAB needs --kerberos",
            "--kerberos-",
        ),
    ] {
        let mut command = curator(&connect, &["ls", "/"]);
        for (name, value) in variables {
            command.env(name, value);
        }
        let output = run(command);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{variables:?}: {stderr}");
        assert!(
            stderr.contains(says),
            "{variables:?}: {says:?} not in {stderr}"
        );
        assert!(
            !stderr.contains(never),
            "{variables:?}: {never:?} in {stderr}"
        );
    }
    // A flag given is still named as the flag.
    let flag = run(curator(&connect, &["ls", "/", "--sasl-user", "app"]));
    assert!(
        text(&flag.stderr).contains("--sasl-user and --sasl-password-file go together"),
        "{}",
        text(&flag.stderr)
    );
}
