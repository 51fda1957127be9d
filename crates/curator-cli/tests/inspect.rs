//! `curator inspect PATH [--json] [--watch]` on a mutex with a holder and a waiter, a missing
//! node, a connection that goes away while watching, and nodes this session may not read; and
//! `curator tree` beside nodes it may not read.

mod support;

use std::time::Duration;

use curator_framework::acl::Acl;
use curator_framework::{CreateMode, CuratorFramework};
use curator_locks::InterProcessMutex;
use curator_test::{TestingServer, Timing, eventually, unique_root};
use serde_json::Value;
use support::{Reader, Running, curator, run, text};

async fn client(connect: &str, name: &str) -> CuratorFramework {
    curator_testkit::started(
        curator_testkit::builder(connect, Duration::from_secs(10)).identity(name),
    )
    .await
}

fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"))
}

/// A session id as `curator` writes it in JSON: hex text.
fn hex(session: i64) -> String {
    format!("0x{session:x}")
}

/// (name, session) of each holder or waiter of a JSON report.
fn names(report: &Value, list: &str) -> Vec<(String, i64)> {
    report[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let session = p["session_id"]
                .as_str()
                .unwrap_or_else(|| panic!("a session id is hex text: {p}"));
            (
                p["who"]["name"].as_str().unwrap().to_owned(),
                u64::from_str_radix(session.trim_start_matches("0x"), 16).unwrap() as i64,
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_prints_the_holder_and_the_waiter_and_watch_prints_the_next_holder() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-inspect");
    let (holder, waiter) = (
        client(&connect, "holder-a").await,
        client(&connect, "waiter-b").await,
    );
    let guard = InterProcessMutex::builder(holder.clone(), &path)
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let waiting = InterProcessMutex::builder(waiter.clone(), &path)
        .build()
        .unwrap();
    let task = tokio::spawn(async move {
        let guard = waiting.acquire().await.unwrap();
        std::future::pending::<()>().await;
        drop(guard);
    });
    eventually("the waiter queues", || async {
        holder
            .get_children()
            .for_path(&path)
            .await
            .is_ok_and(|(c, _)| c.len() == 2)
    })
    .await;
    let (a, b) = (holder.session_id().unwrap(), waiter.session_id().unwrap());

    let out = run(curator(&connect, &["inspect", &path]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("mutex"), "{stdout}");
    assert!(
        stdout.contains("holders (1)") && stdout.contains("holder-a on"),
        "{stdout}"
    );
    assert!(
        stdout.contains("waiters (1)") && stdout.contains("waiter-b on"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("session 0x{a:x}")), "{stdout}");

    let out = run(curator(&connect, &["inspect", &path, "--json"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = json(text(&out.stdout).trim());
    assert_eq!(report["layout"], "mutex");
    assert_eq!(names(&report, "holders"), vec![("holder-a".to_owned(), a)]);
    assert_eq!(names(&report, "waiters"), vec![("waiter-b".to_owned(), b)]);

    // --watch: the first report, then the next after the holder lets go; the reader goes after
    // two lines (`| head -2`): 141, without a panic.
    let mut watch = Running::spawn_reading(
        curator(&connect, &["inspect", &path, "--watch", "--json"]),
        Reader::CloseAfter(2),
        Reader::All,
    );
    let first = json(&watch.wait_stdout(|_| true));
    assert_eq!(names(&first, "holders"), vec![("holder-a".to_owned(), a)]);
    guard.release().await.unwrap();
    let second = json(
        &watch
            .wait_stdout(|line| names(&json(line), "holders") != vec![("holder-a".to_owned(), a)]),
    );
    assert_eq!(names(&second, "holders"), vec![("waiter-b".to_owned(), b)]);
    assert_eq!(names(&second, "waiters"), vec![]);
    // A change more, so curator writes into the closed pipe if it did not notice it closing.
    task.abort();
    let status = watch.wait_exit();
    let stderr = watch.drain_stderr();
    assert_eq!(status.code(), Some(141), "{stderr:#?}");
    assert!(stderr.is_empty(), "{stderr:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_ends_quietly_when_stdout_is_closed() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("cli-inspect-closed");
    let maker = client(&server.connect_string(), "maker").await;
    maker
        .create()
        .creating_parents_if_needed()
        .for_path(&path, b"")
        .await
        .unwrap();
    for args in [
        &["inspect", &path][..],
        &["inspect", &path, "--json"],
        &["inspect", &path, "--watch"],
    ] {
        let mut running = Running::spawn_reading(
            curator(&server.connect_string(), args),
            Reader::CloseAfter(0),
            Reader::All,
        );
        let status = running.wait_exit();
        let stderr = running.drain_stderr();
        assert_eq!(status.code(), Some(141), "{args:?}: {stderr:#?}");
        assert!(stderr.is_empty(), "{args:?}: {stderr:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_of_a_missing_node_is_a_not_found_error() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("cli-inspect-missing");
    let out = run(curator(&server.connect_string(), &["inspect", &path]));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert_eq!(
        text(&out.stderr).trim(),
        format!("curator: inspecting {path}: no such node")
    );
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let out = run(curator(
        &server.connect_string(),
        &["inspect", &path, "--json"],
    ));
    assert_eq!(out.status.code(), Some(1));
    let error = json(text(&out.stderr).trim());
    assert_eq!(
        (error["event"].as_str(), error["code"].as_u64()),
        (Some("error"), Some(1))
    );
}

/// Session ids above 2^53 would lose digits as JSON numbers: `inspect --json` and
/// `get --stat --json` write them as hex text, as `/api/tree` does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_ids_in_json_are_hex_text() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-inspect-hex");
    let holder = client(&connect, "holder-a").await;
    let guard = InterProcessMutex::builder(holder.clone(), &path)
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let session = holder.session_id().unwrap();

    let out = run(curator(&connect, &["inspect", &path, "--json"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = json(text(&out.stdout).trim());
    assert_eq!(report["holders"][0]["session_id"], hex(session), "{report}");

    let out = run(curator(
        &connect,
        &["get", guard.node_path(), "--stat", "--json"],
    ));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let got = json(text(&out.stdout).trim());
    assert_eq!(got["stat"]["ephemeral_owner"], hex(session), "{got}");
    guard.release().await.unwrap();
}

/// While the server is away, `inspect --watch` says so at once (its last report may no longer
/// be true), says when it is back, and reports on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_watch_says_when_the_connection_is_suspended_and_when_it_is_back() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-inspect-away");
    let holder = client(&connect, "holder-a").await;
    let guard = InterProcessMutex::builder(holder.clone(), &path)
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let mut watch = Running::spawn(curator(
        &connect,
        &[
            "inspect",
            &path,
            "--watch",
            "--json",
            "--session-timeout",
            "60s",
        ],
    ));
    let first = json(&watch.wait_stdout(|_| true));
    assert_eq!(first["layout"], "mutex");

    server.stop().unwrap();
    let event = watch.wait_event("connection");
    assert_eq!(event["state"], "Suspended", "{event}");
    server.restart().await.unwrap();
    // A reconnect attempt that meets the server while it starts may wait out its attempt
    // timeout (2/5 of this 60 s session) before the next one succeeds.
    let event = watch.wait_event_within("connection", Timing::new().forever());
    assert_eq!(event["state"], "Reconnected", "{event}");

    // And it reports on: the holder lets go.
    guard.release().await.unwrap();
    watch.wait_stdout(|line| json(line)["holders"].as_array().is_some_and(Vec::is_empty));
    drop(watch);
    holder.close().await.unwrap();

    // For people: a line on stderr.
    let mut watch = Running::spawn(curator(
        &connect,
        &["inspect", &path, "--watch", "--session-timeout", "60s"],
    ));
    watch.wait_stdout(|line| line.contains(&path));
    server.stop().unwrap();
    let line = watch.wait_stderr(|line| line.contains("suspended"));
    assert!(
        line.starts_with("curator: connection to ZooKeeper suspended"),
        "{line}"
    );
}

/// A client that can read what only alice may (`digest:alice`).
async fn alice(connect: &str) -> CuratorFramework {
    curator_testkit::started(
        curator_testkit::builder(connect, Duration::from_secs(10))
            .identity("alice")
            .authorization("digest", b"alice:secret".to_vec()),
    )
    .await
}

/// `{root}/open` and `{root}/secret` (only alice may read it, and it has a child); a mutex at
/// `{root}/lock` held through a node only alice may read.
async fn partly_secret(connect: &str, root: &str) -> CuratorFramework {
    let alice = alice(connect).await;
    alice
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/open"), b"x")
        .await
        .unwrap();
    alice
        .create()
        .with_acl(Acl::creator_all())
        .for_path(&format!("{root}/secret"), b"hidden")
        .await
        .unwrap();
    alice
        .create()
        .for_path(&format!("{root}/secret/inner"), b"")
        .await
        .unwrap();
    alice
        .create()
        .for_path(&format!("{root}/lock"), b"")
        .await
        .unwrap();
    alice
        .create()
        .with_mode(CreateMode::EphemeralSequential)
        .with_acl(Acl::creator_all())
        .for_path(&format!("{root}/lock/lock-"), b"")
        .await
        .unwrap();
    alice
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_and_inspect_show_the_rest_when_a_node_is_unreadable() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let root = unique_root("cli-unreadable");
    let alice = partly_secret(&connect, &root).await;

    let out = run(curator(&connect, &["tree", &root]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    assert!(lines.contains(&"  open".to_owned()), "{lines:#?}");
    assert!(
        lines.contains(&"  secret (no read permission)".to_owned()),
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|line| line.contains("inner")),
        "{lines:#?}"
    );
    let out = run(curator(&connect, &["tree", &root, "--json"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let tree = json(text(&out.stdout).trim());
    let secret = tree["children"]
        .as_array()
        .unwrap()
        .iter()
        .find(|child| child["path"] == format!("{root}/secret"))
        .unwrap();
    assert_eq!(secret["no_read_permission"], true, "{tree}");

    let out = run(curator(&connect, &["inspect", &root]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // ZOOKEEPER-2590 (3.8.4, 3.9.2): `exists` needs READ permission too, so such servers give
    // not even the stat of a node this session may not read; older ones do.
    let stat_refused = server
        .server_version()
        .await
        .unwrap()
        .exists_checks_read_permission();
    let out = run(curator(&connect, &["inspect", &format!("{root}/secret")]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = if stat_refused {
        "no read permission (size not known)"
    } else {
        "no read permission (1 children, 6 bytes of data"
    };
    assert!(text(&out.stdout).contains(shown), "{}", text(&out.stdout));
    let out = run(curator(
        &connect,
        &["inspect", &format!("{root}/lock"), "--json"],
    ));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = json(text(&out.stdout).trim());
    assert_eq!(report["layout"], "mutex", "{report}");
    assert_eq!(report["holders"][0]["no_read_permission"], true, "{report}");
    let session = if stat_refused {
        0
    } else {
        alice.session_id().unwrap()
    };
    assert_eq!(report["holders"][0]["session_id"], hex(session));
    alice
        .delete()
        .deleting_children_if_needed()
        .for_path(&root)
        .await
        .unwrap();
}
