//! `curator-test-server`'s arguments: `--help` answers (exit 0) without starting a server, and
//! unknown flags and bad counts are refused with exit code 2 and a message. Runs here find no
//! ZooKeeper jar, so a server started by mistake fails (exit 1) instead of running.

use std::process::{Command, Output};

fn server(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_curator-test-server"))
        .args(args)
        .env("ZOOKEEPER_CLASSPATH", "/nonexistent/zookeeper.jar")
        .output()
        .expect("curator-test-server runs")
}

#[test]
fn help_answers_without_starting_a_server() {
    for help in ["--help", "-h"] {
        let output = server(&[help]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains("Usage: curator-test-server"), "{stdout}");
        assert!(stdout.contains("--until-stdin-closes"), "{stdout}");
    }
}

#[test]
fn unknown_flags_and_bad_counts_are_refused() {
    for (args, mentions) in [
        (&["--clutser", "3"][..], "--clutser"),
        (&["--cluster", "three"], "three"),
        (&["--cluster", "0"], "--cluster"),
        (&["--cluster"], "--cluster"),
        (&["--connect-file"], "--connect-file"),
        (&["extra"], "extra"),
    ] {
        let output = server(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(mentions), "{args:?}: {stderr}");
        assert!(stderr.contains("--help"), "{args:?}: {stderr}");
    }
}
