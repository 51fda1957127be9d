//! The `soak` binary's arguments: `--help` answers without a run, and durations, counts and
//! seeds that make no sense are refused with exit code 2 and a message, never a panic. A run
//! started by mistake finds no ZooKeeper jar and fails instead of soaking.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Instant;

use curator_test::Timing;

/// Runs `soak` with `args` (and `SOAK_SEED` set to `seed`, if any), waiting at most
/// [`Timing::wait`]: a run still going then is killed and fails the test. Returns the exit code,
/// stdout and stderr.
fn soak(args: &[&str], seed: Option<&str>) -> (Option<i32>, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_soak"));
    command
        .args(args)
        .env("ZOOKEEPER_CLASSPATH", "/nonexistent/zookeeper.jar")
        .env_remove("SOAK_SEED")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(seed) = seed {
        command.env("SOAK_SEED", seed);
    }
    let mut child = command.spawn().expect("soak starts");
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
            panic!("`soak {}` is still running", args.join(" "));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    (
        status.code(),
        out.join().expect("stdout reader"),
        err.join().expect("stderr reader"),
    )
}

#[test]
fn help_answers_without_a_run() {
    let (code, stdout, stderr) = soak(&["--help"], None);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("Usage: soak"), "{stdout}");
    assert!(stdout.contains("--minutes"), "{stdout}");
}

#[test]
fn nonsense_durations_are_refused_without_a_panic() {
    for minutes in ["-1", "nan", "inf", "-inf", "1e300", "ten", ""] {
        let arg = format!("--minutes={minutes}");
        let (code, _, stderr) = soak(&[&arg], None);
        assert_eq!(code, Some(2), "{arg}: {stderr}");
        assert!(stderr.contains("--minutes"), "{arg}: {stderr}");
        assert!(!stderr.contains("panicked"), "{arg}: {stderr}");
    }
}

#[test]
fn bad_counts_flags_and_seeds_are_refused() {
    for (args, mentions) in [
        (&["--clients", "1"][..], "--clients"),
        (&["--clients", "many"], "--clients"),
        (&["--quiet-seconds", "0"], "--quiet-seconds"),
        (&["--seed", "-3"], "-3"),
        (&["--minuets", "5"], "--minuets"),
    ] {
        let (code, _, stderr) = soak(args, None);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(mentions), "{args:?}: {stderr}");
    }
    // The seed's environment variable is checked as the flag is.
    let (code, _, stderr) = soak(&[], Some("not-a-seed"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("not-a-seed"), "{stderr}");
}
