//! A reader that goes away (`curator ... | head -1`): read commands end quietly with 141, the
//! wrappers stop CMD and release, the demo removes its nodes; nothing panics.

mod support;

use curator_test::{TestingServer, unique_root};
use serde_json::Value;
use support::{
    Reader, Running, assert_no_children, await_dead, curator, curator_2_to_1, run, text,
};

fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"))
}

/// stdout closed before the first write: 141 and not a word on stderr (no panic message).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_commands_end_quietly_when_stdout_is_closed() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let root = unique_root("cli-closed-read");
    let created = run(curator(
        &connect,
        &["create", &format!("{root}/a"), "x", "-p"],
    ));
    assert_eq!(created.status.code(), Some(0), "{}", text(&created.stderr));
    for args in [
        &["tree", "/"][..],
        &["ls", &root],
        &["get", &format!("{root}/a")],
        &["counter", &format!("{root}/n"), "get"],
        &["watch", &root],
        &["tree", "/", "--json"],
    ] {
        let mut running =
            Running::spawn_reading(curator(&connect, args), Reader::CloseAfter(0), Reader::All);
        let status = running.wait_exit();
        let stderr = running.drain_stderr();
        assert_eq!(status.code(), Some(141), "{args:?}: {stderr:#?}");
        assert!(stderr.is_empty(), "{args:?}: {stderr:#?}");
    }
}

/// `curator watch PATH | head -1`: the reader goes away after the first line and no change ever
/// comes; watch notices the closed pipe itself and ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_ends_when_its_reader_goes_without_a_change() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("cli-closed-watch");
    let mut watch = Running::spawn_reading(
        curator(&server.connect_string(), &["watch", &path]),
        Reader::CloseAfter(1),
        Reader::All,
    );
    let status = watch.wait_exit();
    let stderr = watch.drain_stderr();
    assert_eq!(status.code(), Some(141), "{stderr:#?}");
    assert!(stderr.is_empty(), "{stderr:#?}");
}

/// `( curator lock P --json -- CMD 2>&1 | head -2 )` with a silent CMD: once the reader is gone
/// curator stops CMD and releases the lock instead of leaving CMD to run unreported (and the
/// lock to a dead session).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_stops_cmd_and_releases_when_its_output_closes() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-closed-lock");
    // The reader takes `acquired` and `started`, then goes: CMD writes nothing, so only the
    // closed pipe itself can tell curator.
    let mut holder = Running::spawn_reading(
        curator_2_to_1(&connect, &["lock", &path, "--json", "--", "sleep", "60"]),
        Reader::CloseAfter(2),
        Reader::All,
    );
    let acquired = json(&holder.wait_stdout(|_| true));
    assert_eq!(acquired["event"], "acquired");
    let started = json(&holder.wait_stdout(|_| true));
    assert_eq!(started["event"], "started");
    let child = started["pid"].as_i64().unwrap() as i32;
    assert_eq!(holder.wait_exit().code(), Some(141));
    await_dead(child);
    assert_no_children(&connect, &path);

    // The reader goes after `acquired`: the next status line fails, or the closed pipe is seen
    // first; either way CMD stops and the lock is free at once.
    let mut holder = Running::spawn_reading(
        curator_2_to_1(&connect, &["lock", &path, "--", "sleep", "60"]),
        Reader::CloseAfter(1),
        Reader::All,
    );
    assert!(holder.wait_stdout(|_| true).contains("acquired lock"));
    assert_eq!(holder.wait_exit().code(), Some(141));
    let after = run(curator(
        &connect,
        &["lock", &path, "--timeout", "10s", "--", "true"],
    ));
    assert_eq!(after.status.code(), Some(0), "{}", text(&after.stderr));
}

/// `curator lock P -- CMD | head -0`: stdout (CMD's) is closed while curator's stderr still
/// works; curator stops CMD, releases, and says why on stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_reports_a_closed_stdout_on_stderr() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-closed-lock-stdout");
    let mut holder = Running::spawn_reading(
        curator(&connect, &["lock", &path, "--", "sleep", "60"]),
        Reader::CloseAfter(0),
        Reader::All,
    );
    let started = holder.wait_stderr(|line| line.starts_with("curator: running sleep"));
    let child: i32 = started
        .trim_end_matches(')')
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let message = holder.wait_stderr(|line| line.contains("closed"));
    assert!(message.contains("standard output closed"), "{message}");
    assert!(message.contains("released"), "{message}");
    assert_eq!(holder.wait_exit().code(), Some(141));
    await_dead(child);
    assert_no_children(&connect, &path);
}

/// `curator leader` and `curator barrier` do the same: stop CMD, leave, exit 141.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_and_barrier_stop_cmd_when_their_output_closes() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let election = unique_root("cli-closed-leader");
    let mut leader = Running::spawn_reading(
        curator_2_to_1(
            &connect,
            &["leader", &election, "--json", "--", "sleep", "60"],
        ),
        // `joined`, `leading`, `started`
        Reader::CloseAfter(3),
        Reader::All,
    );
    let mut child = None;
    for _ in 0..3 {
        let event = json(&leader.wait_stdout(|_| true));
        if event["event"] == "started" {
            child = event["pid"].as_i64();
        }
    }
    assert_eq!(leader.wait_exit().code(), Some(141));
    await_dead(child.expect("a started event") as i32);
    assert_no_children(&connect, &election);

    let barrier = unique_root("cli-closed-barrier");
    let mut member = Running::spawn_reading(
        curator_2_to_1(
            &connect,
            &[
                "barrier",
                &barrier,
                "--members",
                "1",
                "--json",
                "--",
                "sh",
                "-c",
                "echo \"{\\\"pid\\\": $$}\"; exec sleep 60",
            ],
        ),
        // `entered`, then CMD's own line with its pid
        Reader::CloseAfter(2),
        Reader::All,
    );
    assert_eq!(json(&member.wait_stdout(|_| true))["event"], "entered");
    let child = json(&member.wait_stdout(|_| true))["pid"].as_i64().unwrap() as i32;
    assert_eq!(member.wait_exit().code(), Some(141));
    await_dead(child);
}

/// `curator demo | head -2`: the demo stops at its next line and removes its nodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_cleans_up_when_its_output_closes() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let mut demo = Running::spawn_reading(
        curator(&connect, &["demo"]),
        Reader::CloseAfter(2),
        Reader::All,
    );
    demo.wait_stdout(|line| line.starts_with("curator demo against"));
    let line = demo.wait_stdout(|line| line.starts_with("everything happens under"));
    let root = line
        .trim_start_matches("everything happens under ")
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let status = demo.wait_exit();
    let stderr = demo.drain_stderr();
    assert_eq!(status.code(), Some(141), "{stderr:#?}");
    assert!(stderr.is_empty(), "{stderr:#?}");
    let left = run(curator(&connect, &["ls", &root]));
    assert_eq!(left.status.code(), Some(1), "{root} is left behind");
    assert!(text(&left.stderr).contains("no such node"));
}
