//! Every example runs, against the test run's server (`CURATOR_TEST_ZK` under `just test`, or a
//! server of this test's own) given as `ZK_CONNECT`, each under a path of its own; and each
//! answers `--help` and refuses a flag it does not know.

use std::process::Output;

use curator_test::{TestingServer, Timing, unique_root};
use tokio::process::Command;

/// Each example's binary, and a line its run prints.
const EXAMPLES: &[(&str, &str, &str)] = &[
    (
        "lock",
        env!("CARGO_BIN_EXE_lock"),
        "every worker held the lock once",
    ),
    (
        "leader_latch",
        env!("CARGO_BIN_EXE_leader_latch"),
        "participant-2 left",
    ),
    (
        "leader_selector",
        env!("CARGO_BIN_EXE_leader_selector"),
        "6 leaderships, one at a time",
    ),
    (
        "cache",
        env!("CARGO_BIN_EXE_cache"),
        "limits now: 20 connections",
    ),
    (
        "queue",
        env!("CARGO_BIN_EXE_queue"),
        "every job consumed once",
    ),
    (
        "transaction",
        env!("CARGO_BIN_EXE_transaction"),
        "guarded write committed",
    ),
    (
        "discovery",
        env!("CARGO_BIN_EXE_discovery"),
        "reported down",
    ),
    ("modeled", env!("CARGO_BIN_EXE_modeled"), "ada: User"),
];

async fn run(binary: &str, args: &[&str], connect: Option<&str>) -> Output {
    let mut command = Command::new(binary);
    command.args(args).kill_on_drop(true);
    match connect {
        Some(connect) => command.env("ZK_CONNECT", connect),
        None => command.env_remove("ZK_CONNECT"),
    };
    tokio::time::timeout(Timing::new().forever(), command.output())
        .await
        .unwrap_or_else(|_| panic!("{binary} {args:?} did not finish in time"))
        .unwrap_or_else(|error| panic!("{binary} cannot run: {error}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_runs_against_a_server() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    for (name, binary, says) in EXAMPLES {
        let path = unique_root(&format!("example-{name}"));
        let mut args = vec!["--path", path.as_str()];
        if *name == "queue" {
            args.push("--lock-safe");
        }
        let output = run(binary, &args, Some(&connect)).await;
        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        assert!(
            output.status.success(),
            "{name} failed: {}\n{stdout}\n{stderr}",
            output.status
        );
        assert!(
            stdout.contains(says),
            "{name} did not say {says:?}:\n{stdout}"
        );
    }
}

#[tokio::test]
async fn every_example_answers_help_and_refuses_unknown_flags() {
    for (name, binary, _) in EXAMPLES {
        let help = run(binary, &["--help"], None).await;
        let usage = text(&help.stdout);
        assert!(help.status.success(), "{name} --help: {}", help.status);
        assert!(
            usage.contains("--connect") && usage.contains("ZK_CONNECT"),
            "{name} --help:\n{usage}"
        );
        let unknown = run(binary, &["--no-such-flag"], None).await;
        assert_eq!(
            unknown.status.code(),
            Some(2),
            "{name} took an unknown flag"
        );
        assert!(
            text(&unknown.stderr).contains("--no-such-flag"),
            "{name}: {}",
            text(&unknown.stderr)
        );
    }
}
