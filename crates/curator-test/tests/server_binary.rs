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

/// With `--until-stdin-closes`, a signal still stops it (and the server): the thread that waits
/// for standard input to close must not keep the process alive after SIGTERM.
#[test]
fn sigterm_stops_it_while_stdin_stays_open() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::time::Instant;

    let mut child = Command::new(env!("CARGO_BIN_EXE_curator-test-server"))
        .arg("--until-stdin-closes")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("curator-test-server runs");
    // Open until the end of the test: only the signal may stop the server.
    let _stdin = child.stdin.take().expect("stdin");
    let mut connect = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut connect)
        .expect("reading the connect string");
    assert!(connect.trim().contains(':'), "{connect:?}");

    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let deadline = Instant::now() + curator_test::Timing::new().wait();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("curator-test-server still runs after SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}
