//! `curator fence` and `curator lease` against a real server.

mod support;

use curator_test::{TestingServer, unique_root};
use nix::sys::signal::Signal;
use support::{Running, await_gone, curator, run, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fence_exit_codes_say_admitted_or_refused() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let gate = format!("{}/gate", unique_root("cli-fence"));

    let admitted = run(curator(&connect, &["fence", &gate, "10"]));
    assert_eq!(
        admitted.status.code(),
        Some(0),
        "{}",
        text(&admitted.stderr)
    );
    assert_eq!(text(&admitted.stdout).trim(), "admitted 10");
    // The same token again is admitted; an older one is refused with code 6 and the highest.
    let again = run(curator(&connect, &["fence", &gate, "10"]));
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    let refused = run(curator(&connect, &["fence", &gate, "7"]));
    assert_eq!(refused.status.code(), Some(6), "{}", text(&refused.stderr));
    assert_eq!(text(&refused.stdout).trim(), "refused 7: 10 was admitted");
    let json = run(curator(&connect, &["fence", &gate, "9", "--json"]));
    assert_eq!(json.status.code(), Some(6));
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["admitted"], false);
    assert_eq!(value["highest"], 10);
    // The node holds the highest token, as decimal text.
    let stored = run(curator(&connect, &["get", &gate]));
    assert_eq!(text(&stored.stdout).trim(), "10");

    // A lock holder hands its token on: it is newer than anything before, so it passes, and a
    // token from before it is then refused.
    let lock = unique_root("cli-fence-lock");
    let curator_bin = env!("CARGO_BIN_EXE_curator");
    let guarded = run(curator(
        &connect,
        &[
            "lock",
            &lock,
            "--",
            "sh",
            "-c",
            "\"$1\" --connect \"$2\" fence \"$3\" \"$CURATOR_FENCING_TOKEN\"",
            "sh",
            curator_bin,
            &connect,
            &gate,
        ],
    ));
    assert_eq!(guarded.status.code(), Some(0), "{}", text(&guarded.stderr));
    let stale = run(curator(&connect, &["fence", &gate, "11"]));
    assert_eq!(stale.status.code(), Some(6), "{}", text(&stale.stdout));

    // Bad input is a usage error, a bad gate node another failure: neither is "refused".
    let usage = run(curator(&connect, &["fence", &gate, "ten"]));
    assert_eq!(usage.status.code(), Some(2));
    let junk = format!("{}/junk", unique_root("cli-fence-junk"));
    let created = run(curator(&connect, &["create", "-p", &junk, "not a token"]));
    assert_eq!(created.status.code(), Some(0), "{}", text(&created.stderr));
    let bad = run(curator(&connect, &["fence", &junk, "1"]));
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));
}

/// One `curator lease` wins and runs CMD; a second one for the same path, while the first runs,
/// and a third after the first ended (the interval still runs) do not run theirs (code 7).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_runs_cmd_once_per_interval() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = format!("{}/lease", unique_root("cli-lease"));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let log_arg = log.to_str().unwrap().to_owned();
    let script = "echo \"$CURATOR_LEASE_TOKEN $CURATOR_LEASE_UNTIL\" >> \"$1\"; exec sleep 60";
    let mut first = Running::spawn(curator(
        &connect,
        &[
            "lease",
            &path,
            "--for",
            "10m",
            "--id",
            "first-run",
            "--json",
            "--",
            "sh",
            "-c",
            script,
            "sh",
            &log_arg,
        ],
    ));
    let acquired = first.wait_event("acquired");
    let started = first.wait_event("started");
    let second = run(curator(
        &connect,
        &[
            "lease",
            &path,
            "--for",
            "10m",
            "--",
            "sh",
            "-c",
            "echo second >> \"$1\"",
            "sh",
            &log_arg,
        ],
    ));
    assert_eq!(second.status.code(), Some(7), "{}", text(&second.stderr));
    // It says who holds the lease, and until when (the interval's end on the server's clock).
    let refusal = text(&second.stderr);
    assert!(refusal.contains("is held by first-run until "), "{refusal}");
    assert!(
        refusal.contains(&utc(acquired["until_ms"].as_i64().unwrap())),
        "{refusal}"
    );

    first.signal(Signal::SIGTERM);
    let status = first.wait_exit();
    assert_eq!(status.code(), Some(143), "{:#?}", first.drain_stderr());
    await_gone(started["pid"].as_i64().unwrap() as i32);
    // The run is over but its interval is not: still no second run.
    let third = run(curator(
        &connect,
        &[
            "lease",
            &path,
            "--for",
            "10m",
            "--",
            "sh",
            "-c",
            "echo third >> \"$1\"",
            "sh",
            &log_arg,
        ],
    ));
    assert_eq!(third.status.code(), Some(7), "{}", text(&third.stderr));

    let lines = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        lines,
        format!("{} {}\n", acquired["fencing_token"], acquired["until_ms"]),
        "exactly one CMD ran, with the lease's token and end"
    );
}

/// CMD that outlives the lease is stopped by the interval's end; curator exits with code 5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_stops_cmd_when_the_interval_ends() {
    let server = TestingServer::start().await.unwrap();
    let path = format!("{}/lease", unique_root("cli-lease-end"));
    let mut holder = Running::spawn(curator(
        &server.connect_string(),
        &[
            "lease", &path, "--for", "1s", "--grace", "200ms", "--json", "--", "sleep", "60",
        ],
    ));
    let pid = holder.wait_event("started")["pid"].as_i64().unwrap() as i32;
    let status = holder.wait_exit();
    let stderr = holder.drain_stderr();
    assert_eq!(status.code(), Some(5), "{stderr:#?}");
    assert!(
        stderr.iter().any(|line| line.contains("ends")),
        "{stderr:#?}"
    );
    await_gone(pid);
}

/// `ms` since the epoch as `curator` prints a time: UTC, to the second (`2024-05-01T12:00:00Z`),
/// from the `date` command, so the test does not share curator's arithmetic.
fn utc(ms: i64) -> String {
    let output = std::process::Command::new("date")
        .args([
            "-u",
            "-d",
            &format!("@{}", ms.div_euclid(1000)),
            "+%Y-%m-%dT%H:%M:%SZ",
        ])
        .output()
        .expect("running date");
    text(&output.stdout).trim().to_owned()
}

/// A negative token is a usage error (tokens are zxids): nothing is admitted, no gate is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fence_refuses_a_negative_token_as_a_usage_error() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let gate = format!("{}/gate", unique_root("cli-fence-negative"));
    let negative = run(curator(&connect, &["fence", &gate, "-5"]));
    let stderr = text(&negative.stderr);
    assert_eq!(negative.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("not negative"), "{stderr}");
    let nothing = run(curator(&connect, &["get", &gate]));
    assert_eq!(
        nothing.status.code(),
        Some(1),
        "a gate was made: {}",
        text(&nothing.stdout)
    );
    // Zero is a token like any other.
    let zero = run(curator(&connect, &["fence", &gate, "0"]));
    assert_eq!(zero.status.code(), Some(0), "{}", text(&zero.stderr));
}
