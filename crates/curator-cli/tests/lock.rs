//! `curator lock` against a real server.

mod support;

use curator_test::{Expiry, FaultProxy, TestingServer, Timing, expire_session, unique_root};
use nix::sys::signal::Signal;
use support::{Running, await_gone, curator, run, text};

/// Three `curator lock` runs on one path, started together; their commands append start and end
/// lines with timestamps to one file. No start may come between another run's start and end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_on_one_path_never_overlap() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("cli-lock-overlap");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let log_arg = log.to_str().unwrap().to_owned();
    let runs: Vec<_> = (0..3)
        .map(|n| {
            let script = format!(
                "echo \"start {n} $(date +%s%N)\" >> \"$1\"; sleep 0.2; echo \"end {n} $(date +%s%N)\" >> \"$1\""
            );
            Running::spawn(curator(
                &server.connect_string(),
                &["lock", &path, "--", "sh", "-c", &script, "sh", &log_arg],
            ))
        })
        .collect();
    for mut running in runs {
        let status = running.wait_exit();
        assert_eq!(status.code(), Some(0), "{:#?}", running.drain_stderr());
    }
    let lines = std::fs::read_to_string(&log).unwrap();
    let entries: Vec<(String, String, u128)> = lines
        .lines()
        .map(|line| {
            let parts: Vec<_> = line.split(' ').collect();
            (
                parts[0].to_owned(),
                parts[1].to_owned(),
                parts[2].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(entries.len(), 6, "{lines}");
    for pair in entries.chunks(2) {
        assert_eq!(pair[0].0, "start", "{lines}");
        assert_eq!(pair[1].0, "end", "{lines}");
        assert_eq!(pair[0].1, pair[1].1, "two runs overlapped:\n{lines}");
    }
    assert!(entries.windows(2).all(|w| w[0].2 <= w[1].2), "{lines}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passes_the_exit_code_through_and_releases() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("cli-lock-code");
    let output = run(curator(
        &server.connect_string(),
        &["lock", &path, "--", "sh", "-c", "exit 7"],
    ));
    assert_eq!(output.status.code(), Some(7), "{}", text(&output.stderr));
    let listing = run(curator(&server.connect_string(), &["ls", &path]));
    // The lock's directory is a container: once empty, the server may already have removed it.
    if listing.status.code() == Some(1) {
        assert!(
            text(&listing.stderr).contains("no such node"),
            "{}",
            text(&listing.stderr)
        );
    } else {
        assert_eq!(listing.status.code(), Some(0));
        assert_eq!(
            text(&listing.stdout).trim(),
            "",
            "the lock node is left behind"
        );
    }

    let missing = run(curator(
        &server.connect_string(),
        &["lock", &path, "--", "/nonexistent/program"],
    ));
    assert_eq!(missing.status.code(), Some(127));
}

/// CMD finds the fencing token of its hold (as in the `acquired` event) in its environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cmd_gets_the_fencing_token() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("cli-lock-token");
    let mut holder = Running::spawn(curator(
        &server.connect_string(),
        &[
            "lock",
            &path,
            "--json",
            "--",
            "sh",
            "-c",
            "echo \"$CURATOR_FENCING_TOKEN $CURATOR_LOCK_NODE\"",
        ],
    ));
    let acquired = holder.wait_event("acquired");
    let line = holder.wait_stdout(|_| true);
    assert_eq!(
        line,
        format!(
            "{} {}",
            acquired["fencing_token"],
            acquired["node"].as_str().unwrap()
        )
    );
    assert_eq!(holder.wait_exit().code(), Some(0));
}

/// While one run holds the lock, another with `--timeout` gives up with code 4; SIGTERM stops the
/// holder's command and releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn times_out_while_held_and_releases_on_sigterm() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-lock-timeout");
    let mut holder = Running::spawn(curator(
        &connect,
        &["lock", &path, "--json", "--", "sleep", "60"],
    ));
    let started = holder.wait_event("started");
    let child_pid = started["pid"].as_i64().unwrap() as i32;

    let waiter = run(curator(
        &connect,
        &["lock", &path, "--timeout", "300ms", "--", "true"],
    ));
    assert_eq!(waiter.status.code(), Some(4), "{}", text(&waiter.stderr));
    let message = text(&waiter.stderr);
    assert!(message.contains("not acquired within 300ms"), "{message}");
    assert_eq!(message.trim().lines().count(), 1, "{message}");

    holder.signal(Signal::SIGTERM);
    let status = holder.wait_exit();
    assert_eq!(status.code(), Some(143), "{:#?}", holder.drain_stderr());
    await_gone(child_pid);
    let after = run(curator(
        &connect,
        &["lock", &path, "--timeout", "10s", "--", "true"],
    ));
    assert_eq!(after.status.code(), Some(0), "{}", text(&after.stderr));
}

/// The server dies while CMD runs: the lock is lost, CMD is stopped, the exit code is 5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lock_stops_the_command() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let path = unique_root("cli-lock-lost");
    let mut holder = Running::spawn(curator(
        &server.connect_string(),
        &[
            "lock", &path, "--json", "--grace", "2s", "--", "sleep", "60",
        ],
    ));
    let started = holder.wait_event("started");
    let child_pid = started["pid"].as_i64().unwrap() as i32;
    server.stop().unwrap();
    let status = holder.wait_exit();
    let stderr = holder.drain_stderr();
    assert_eq!(status.code(), Some(5), "{stderr:#?}");
    let last = stderr.last().unwrap();
    assert!(last.contains(&format!("lock {path} lost")), "{stderr:#?}");
    await_gone(child_pid);
}

/// The session expires while CMD runs: the lock is lost, CMD is stopped, the exit code is 5, and
/// the lock is free for others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_stops_the_command() {
    let server = TestingServer::start().await.unwrap();
    // Through a proxy, which learns the session's id and password.
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = unique_root("cli-lock-expired");
    let mut holder = Running::spawn(curator(
        &proxy.connect_string(),
        &[
            "lock", &path, "--json", "--grace", "2s", "--", "sleep", "60",
        ],
    ));
    let child_pid = holder.wait_event("started")["pid"].as_i64().unwrap() as i32;
    let session = proxy.sessions().last().cloned().unwrap();
    let expiry = expire_session(&server.connect_string(), &session, Timing::new().wait())
        .await
        .unwrap();
    assert_eq!(expiry, Expiry::Expired);
    let status = holder.wait_exit();
    let stderr = holder.drain_stderr();
    assert_eq!(status.code(), Some(5), "{stderr:#?}");
    assert!(
        stderr
            .last()
            .unwrap()
            .contains(&format!("lock {path} lost")),
        "{stderr:#?}"
    );
    await_gone(child_pid);
    let after = run(curator(
        &server.connect_string(),
        &["lock", &path, "--timeout", "10s", "--", "true"],
    ));
    assert_eq!(after.status.code(), Some(0), "{}", text(&after.stderr));
}

/// A `--timeout` that runs out says who holds the lock: the holder's identity (from its lock
/// node), its session and since when.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_lock_says_who_holds_it() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-lock-holder");
    let holder = curator_testkit::started(
        curator_testkit::builder(&connect, std::time::Duration::from_secs(10))
            .identity("report-job"),
    )
    .await;
    let mutex = curator_locks::InterProcessMutex::builder(holder.clone(), &path)
        .build()
        .unwrap();
    let guard = mutex.acquire().await.unwrap();
    let session = format!("0x{:x}", holder.session_id().unwrap());

    let waiter = run(curator(
        &connect,
        &["lock", &path, "--timeout", "300ms", "--", "true"],
    ));
    let message = text(&waiter.stderr);
    assert_eq!(waiter.status.code(), Some(4), "{message}");
    assert_eq!(message.trim().lines().count(), 1, "{message}");
    assert!(message.contains("not acquired within 300ms"), "{message}");
    assert!(message.contains("held by report-job on "), "{message}");
    assert!(message.contains(&session), "{session} not in {message}");
    assert!(message.contains(" since "), "{message}");

    guard.release().await.unwrap();
    holder.close().await.unwrap();
}

/// `$CURATOR_SEQUENCER` of `curator lock` checked with `curator validate` from the locked
/// command (valid: exit 0), then after the lock was released and taken by another run (stale:
/// exit code 6); a malformed one is a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sequencer_is_valid_while_held_and_stale_after() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-lock-sequencer");
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("sequencer");
    let script = "printf '%s' \"$CURATOR_SEQUENCER\" > \"$1\" && \"$2\" --connect \"$3\" validate \"$CURATOR_SEQUENCER\"";
    let held = run(curator(
        &connect,
        &[
            "lock",
            &path,
            "--",
            "sh",
            "-c",
            script,
            "sh",
            saved.to_str().unwrap(),
            env!("CARGO_BIN_EXE_curator"),
            &connect,
        ],
    ));
    assert_eq!(held.status.code(), Some(0), "{}", text(&held.stderr));
    let sequencer = std::fs::read_to_string(&saved).unwrap();
    assert!(sequencer.starts_with("zkseq1:"), "{sequencer}");
    assert!(sequencer.contains(&path), "{sequencer}");

    // Released, and the lock taken by another run meanwhile: stale.
    let next = run(curator(
        &connect,
        &["lock", &path, "--", "sh", "-c", "exit 0"],
    ));
    assert_eq!(next.status.code(), Some(0), "{}", text(&next.stderr));
    let stale = run(curator(&connect, &["validate", &sequencer]));
    assert_eq!(stale.status.code(), Some(6), "{}", text(&stale.stderr));
    assert!(
        text(&stale.stdout).contains("stale"),
        "{}",
        text(&stale.stdout)
    );

    let malformed = run(curator(&connect, &["validate", "zkseq1:12:34:/x"]));
    assert_eq!(
        malformed.status.code(),
        Some(2),
        "{}",
        text(&malformed.stderr)
    );
    assert!(
        text(&malformed.stderr).contains("16 hex digits"),
        "{}",
        text(&malformed.stderr)
    );
}

/// `--lock-delay`: a holder (with a lock-delay) whose session expires keeps the lock from a run
/// with `--lock-delay` (exit 4, the message names the failure); after a clean release a run
/// takes the lock at once, with a delay no test would wait for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_holders_lock_delay_keeps_a_run_out_and_a_release_does_not() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-lock-delay");
    let hour = std::time::Duration::from_secs(3600);
    let holder = curator_testkit::client(&connect).await;
    let mutex = curator_locks::InterProcessMutex::builder(holder.clone(), &path)
        .lock_delay(hour)
        .build()
        .unwrap();
    let released = mutex.acquire().await.unwrap();
    let mut waiter = Running::spawn(curator(
        &connect,
        &["lock", &path, "--lock-delay", "1h", "--", "true"],
    ));
    await_gone_or_queued(&holder, &path, 2).await;
    released.release().await.unwrap();
    let status = waiter.wait_exit();
    assert_eq!(status.code(), Some(0), "{:?}", waiter.drain_stderr());

    let _lost = mutex.acquire().await.unwrap();
    holder.inject_session_expiration().await.unwrap();
    await_gone_or_queued(&holder, &path, 0).await;
    let kept_out = run(curator(
        &connect,
        &[
            "lock",
            &path,
            "--lock-delay",
            "1h",
            "--timeout",
            "300ms",
            "--",
            "true",
        ],
    ));
    let message = text(&kept_out.stderr);
    assert_eq!(kept_out.status.code(), Some(4), "{message}");
    assert!(message.contains("lock-delay of a failed: "), "{message}");
    assert!(
        message.contains("(delay 1h0m): unavailable, ends in"),
        "{message}"
    );
    holder.close().await.unwrap();
}

/// Waits until the lock at `path` has `n` nodes.
async fn await_gone_or_queued(client: &curator_framework::CuratorFramework, path: &str, n: usize) {
    curator_test::eventually("the lock's nodes", || async {
        client
            .get_children()
            .for_path(path)
            .await
            .is_ok_and(|(children, _)| children.len() == n)
    })
    .await;
}
