//! `curator demo` runs every step and says what each proved.

mod support;

use curator_test::TestingServer;
use support::{curator, run, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_runs_every_step() {
    let server = TestingServer::start().await.unwrap();
    let output = run(curator(&server.connect_string(), &["demo"]));
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
