//! A driver process's stderr (a JVM's warnings, Kazoo's tracebacks) goes to its log file under
//! `target/bench/logs`, not to the terminal of whoever runs the benchmark, and a failure names
//! that file.

use std::process::Command;

use curator_benches::harness::{Driver, driver_log_dir, driver_log_path};

/// Set in the copy of this test binary that plays the harness.
const HARNESS: &str = "CURATOR_BENCHES_HARNESS_CHILD";

/// A driver speaking the line protocol that writes a traceback to stderr first, then answers
/// one request.
fn noisy_driver() -> Command {
    let mut command = Command::new("sh");
    command.args([
        "-c",
        "echo 'Traceback (most recent call last): kazoo noise' >&2; echo ready; \
         read request; echo 'ok 5 1'; read quit",
    ]);
    command
}

#[test]
fn a_drivers_stderr_goes_to_its_log_and_not_to_the_terminal() {
    let name = "stderr test driver";
    if std::env::var_os(HARNESS).is_some() {
        // The harness: its stderr is what the person running the benchmark sees.
        let mut driver = Driver::start(name, noisy_driver()).expect("the driver starts");
        let sample = driver.run("get_data", 1, "/x").expect("an answer");
        assert!(sample.is_some());
        return;
    }
    let harness = Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "--exact",
            "a_drivers_stderr_goes_to_its_log_and_not_to_the_terminal",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HARNESS, "1")
        .output()
        .expect("the harness runs");
    let stderr = String::from_utf8_lossy(&harness.stderr);
    assert!(
        harness.status.success(),
        "{stderr}\n{}",
        String::from_utf8_lossy(&harness.stdout)
    );
    assert!(
        !stderr.contains("kazoo noise"),
        "the driver's stderr reached the terminal: {stderr}"
    );
    let log = driver_log_path(name);
    assert!(log.starts_with(driver_log_dir()), "{}", log.display());
    assert!(log.ends_with("target/bench/logs/stderr-test-driver.log"));
    let logged = std::fs::read_to_string(&log).expect("the driver's log");
    assert!(logged.contains("kazoo noise"), "{logged}");
}

#[test]
fn a_failed_request_names_the_drivers_log() {
    let name = "failing test driver";
    let mut command = Command::new("sh");
    command.args([
        "-c",
        "echo ready; read request; echo 'java.lang.OutOfMemoryError: boom' >&2; exit 3",
    ]);
    let mut driver = Driver::start(name, command).expect("the driver starts");
    let log = driver.log_path().to_owned();
    assert_eq!(log, driver_log_path(name));
    let error = driver
        .run("get_data", 1, "/x")
        .expect_err("the driver died");
    assert!(error.contains(&log.display().to_string()), "{error}");
    assert!(error.contains(name), "{error}");
    let logged = std::fs::read_to_string(&log).expect("the driver's log");
    assert!(logged.contains("OutOfMemoryError: boom"), "{logged}");
}

#[test]
fn a_driver_that_does_not_start_names_its_log() {
    let name = "silent test driver";
    let mut command = Command::new("sh");
    command.args(["-c", "echo 'no such scenario set' >&2; echo nope"]);
    let error = Driver::start(name, command).expect_err("no `ready`");
    let log = driver_log_path(name);
    assert!(error.contains(&log.display().to_string()), "{error}");
}
