//! `curator demo` runs every step and says what each proved.

mod support;

use curator_test::TestingServer;
use support::{curator, curator_env, run, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_runs_every_step() {
    let server = TestingServer::start().await.unwrap();
    every_step_proved(&run(curator(&server.connect_string(), &["demo"])));
}

/// `--in-process`: the same tour against curator-zkmodel's server in the `curator` process (no
/// Java, no `--connect`).
#[test]
fn demo_runs_every_step_in_process() {
    let output = run(curator_env(None, &["demo", "--in-process"]));
    every_step_proved(&output);
    assert!(
        text(&output.stdout).contains("a model of ZooKeeper served in this process"),
        "{}",
        text(&output.stdout)
    );
    let both = run(curator_env(
        None,
        &["demo", "--in-process", "--connect", "127.0.0.1:2181"],
    ));
    assert_eq!(both.status.code(), Some(2), "{}", text(&both.stderr));
}

fn every_step_proved(output: &std::process::Output) {
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    for step in [
        "[1/6] elect a leader",
        "[2/6] take turns on a lock and increment a shared counter",
        "[3/6] read the shared counter",
        "[4/6] meet at a double barrier",
        "[5/6] check the cache",
        "[6/6] end the leader's session and watch the hand-over",
        "What the demo proved",
    ] {
        assert!(stdout.contains(step), "missing {step:?} in:\n{stdout}");
    }
    assert_eq!(stdout.matches("proved:").count(), 6, "{stdout}");
}
