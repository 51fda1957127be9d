//! The benchmark binaries' arguments: `--help` answers without running anything, unknown flags
//! and bad values are refused with exit code 2, and nothing in `docs/` changes unless a run is
//! asked to write it. Every run here points at a dead server (and a missing ZooKeeper jar), so
//! a binary that started a run by mistake fails instead of measuring.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use curator_test::Timing;

/// What a finished run printed.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `binary` with `args`, waiting at most [`Timing::wait`]; a run still going then is
/// killed and fails the test (it started measuring instead of answering).
fn run(binary: &str, args: &[&str]) -> Ran {
    let mut child = Command::new(binary)
        .args(args)
        .env("ZK_CONNECT", "127.0.0.1:1")
        .env("ZK_TLS_CONNECT", "127.0.0.1:1")
        .env("ZK_TLS_CA", "/nonexistent/ca.pem")
        .env("ZOOKEEPER_CLASSPATH", "/nonexistent/zookeeper.jar")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + Timing::new().wait();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`{binary} {}` is still running: it started a run",
                args.join(" ")
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Ran {
        code: status.code(),
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
    }
}

/// Every file in `docs/` with its bytes.
fn docs() -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("docs/")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.is_file())
        .map(|path| {
            let bytes = std::fs::read(&path).expect("readable");
            (path, bytes)
        })
        .collect();
    files.sort();
    files
}

/// Runs `binary` with `args` and checks that it exits with `code`, leaves docs/ alone and
/// prints no report.
fn check(binary: &str, args: &[&str], code: i32) -> Ran {
    let before = docs();
    let ran = run(binary, args);
    assert_eq!(
        ran.code,
        Some(code),
        "`{binary} {}`:\nstdout: {}\nstderr: {}",
        args.join(" "),
        ran.stdout,
        ran.stderr
    );
    assert!(
        docs() == before,
        "`{binary} {}` changed docs/",
        args.join(" ")
    );
    assert!(!ran.stdout.contains("Run of"), "a report: {}", ran.stdout);
    ran
}

/// Checks that `args` are refused with exit code 2 and a message naming `mentions`.
fn refused(binary: &str, args: &[&str], mentions: &str) {
    let ran = check(binary, args, 2);
    assert!(
        ran.stderr.contains(mentions),
        "`{}` should mention {mentions:?}: {}",
        args.join(" "),
        ran.stderr
    );
}

const SIDE_BY_SIDE: &str = env!("CARGO_BIN_EXE_side-by-side");
const BENCH_SCALE: &str = env!("CARGO_BIN_EXE_bench-scale");
const BENCH_DRIVER: &str = env!("CARGO_BIN_EXE_bench-driver");
const FLOOR_DRIVER: &str = env!("CARGO_BIN_EXE_floor-driver");

#[test]
fn side_by_side_answers_help_without_running() {
    for help in ["--help", "-h"] {
        let ran = check(SIDE_BY_SIDE, &[help], 0);
        assert!(ran.stdout.contains("Usage: side-by-side"), "{}", ran.stdout);
        assert!(ran.stdout.contains("--write-docs"), "{}", ran.stdout);
    }
}

#[test]
fn side_by_side_refuses_unknown_flags_and_bad_values() {
    refused(SIDE_BY_SIDE, &["--qiuck"], "--qiuck");
    refused(SIDE_BY_SIDE, &["--rounds", "abc"], "abc");
    refused(SIDE_BY_SIDE, &["--rounds", "0"], "--rounds");
    refused(SIDE_BY_SIDE, &["--rounds"], "--rounds");
    refused(SIDE_BY_SIDE, &["--only", "get_dta"], "get_dta");
    refused(
        SIDE_BY_SIDE,
        &["--redraw-chart", "in.json"],
        "--redraw-chart",
    );
    refused(SIDE_BY_SIDE, &["extra"], "extra");
    // Partial runs are never published.
    refused(SIDE_BY_SIDE, &["--quick", "--write-docs"], "--write-docs");
    refused(
        SIDE_BY_SIDE,
        &["--only", "get_data", "--write-docs"],
        "--write-docs",
    );
    refused(
        SIDE_BY_SIDE,
        &["--no-tls", "--only", "get_data_tls"],
        "--no-tls",
    );
}

#[test]
fn bench_scale_answers_help_without_running() {
    let ran = check(BENCH_SCALE, &["--help"], 0);
    assert!(ran.stdout.contains("Usage: bench-scale"), "{}", ran.stdout);
    assert!(ran.stdout.contains("--write-docs"), "{}", ran.stdout);
}

#[test]
fn bench_scale_refuses_unknown_flags_and_bad_values() {
    refused(BENCH_SCALE, &["--qiuck"], "--qiuck");
    refused(BENCH_SCALE, &["--rounds", "abc"], "abc");
    refused(BENCH_SCALE, &["--budget-secs", "-5"], "-5");
    refused(BENCH_SCALE, &["--max-n", "0"], "--max-n");
    refused(BENCH_SCALE, &["--max-n", "lots"], "lots");
    refused(BENCH_SCALE, &["--only", "elections"], "elections");
    refused(BENCH_SCALE, &["--libs", "java"], "java");
    refused(BENCH_SCALE, &["--redraw", "x.json", "--quick"], "--quick");
}

#[test]
fn bench_driver_answers_help_and_refuses_bad_arguments() {
    let ran = check(BENCH_DRIVER, &["--help"], 0);
    assert!(ran.stdout.contains("Usage: bench-driver"), "{}", ran.stdout);
    refused(BENCH_DRIVER, &["frame", "127.0.0.1:1"], "frame");
    refused(BENCH_DRIVER, &["bare"], "CONNECT");
    refused(BENCH_DRIVER, &["bare", "127.0.0.1:1", "--tls"], "--tls");
}

#[test]
fn floor_driver_answers_help_and_refuses_bad_arguments() {
    let ran = check(FLOOR_DRIVER, &["--help"], 0);
    assert!(ran.stdout.contains("Usage: floor-driver"), "{}", ran.stdout);
    assert!(ran.stdout.contains("blocking"), "{}", ran.stdout);
    refused(FLOOR_DRIVER, &["async", "127.0.0.1:1"], "async");
    refused(FLOOR_DRIVER, &["tokio"], "CONNECT");
    refused(
        FLOOR_DRIVER,
        &["blocking", "127.0.0.1:1", "--tls-ca", "ca.pem"],
        "--tls-ca",
    );
}

#[test]
fn bench_driver_reports_an_unreadable_ca_without_panicking() {
    let ran = check(
        BENCH_DRIVER,
        &["bare", "127.0.0.1:1", "--tls-ca", "/nonexistent/ca.pem"],
        1,
    );
    assert!(ran.stderr.contains("/nonexistent/ca.pem"), "{}", ran.stderr);
    assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
}
