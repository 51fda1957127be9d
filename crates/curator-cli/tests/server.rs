//! `curator server` starts a real server, prints where, and stops on SIGTERM; it serves where the
//! other commands look by default (127.0.0.1:2181) when it can.

mod support;

use std::net::TcpListener;

use nix::sys::signal::Signal;
use serde_json::Value;
use support::{Running, curator_env, run, text};

/// Starts `curator server --json`; its connect string and its `serving` event.
fn serve() -> (Running, String, Value) {
    let mut server = Running::spawn(curator_env(None, &["server", "--json"]));
    let result: Value = serde_json::from_str(&server.wait_stdout(|_| true)).unwrap();
    let connect = result["connect"].as_str().unwrap().to_owned();
    let serving = server.wait_event("serving");
    assert_eq!(serving["connect"], connect.as_str());
    (server, connect, serving)
}

fn stop(mut server: Running) {
    server.signal(Signal::SIGTERM);
    assert_eq!(server.wait_exit().code(), Some(0));
}

/// With 2181 taken, the server serves elsewhere and says how to reach it; with 2181 free, it
/// serves there and the next command finds it without --connect.
#[test]
fn serves_where_the_other_commands_look() {
    // Taken by this test (or by someone else already: the same for the server).
    let holder = TcpListener::bind("127.0.0.1:2181");
    let (server, connect, serving) = serve();
    assert_ne!(connect, "127.0.0.1:2181");
    assert_eq!(serving["default"], false);
    assert_eq!(serving["export"], format!("export ZK_CONNECT={connect}"));
    let listing = run(curator_env(Some(&connect), &["ls", "/"]));
    assert_eq!(listing.status.code(), Some(0), "{}", text(&listing.stderr));
    assert!(text(&listing.stdout).contains("zookeeper"));
    stop(server);

    drop(holder);
    if TcpListener::bind("127.0.0.1:2181").is_err() {
        eprintln!("127.0.0.1:2181 is in use on this machine: the default port is not tested");
        return;
    }
    let (server, connect, serving) = serve();
    assert_eq!(connect, "127.0.0.1:2181");
    assert_eq!(serving["default"], true);
    let listing = run(curator_env(None, &["ls", "/"]));
    assert_eq!(listing.status.code(), Some(0), "{}", text(&listing.stderr));
    assert!(text(&listing.stdout).contains("zookeeper"));
    stop(server);
}

/// `--port` names the port; a taken one is an error at once.
#[test]
fn serves_on_a_given_port_or_says_it_is_taken() {
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port().to_string();
    let taken = run(curator_env(None, &["server", "--port", &port]));
    assert_eq!(taken.status.code(), Some(1));
    assert_eq!(
        text(&taken.stderr).trim(),
        format!("curator: cannot start ZooKeeper: port {port} is taken")
    );
    drop(holder);
    let mut server = Running::spawn(curator_env(None, &["server", "--port", &port]));
    assert_eq!(server.wait_stdout(|_| true), format!("127.0.0.1:{port}"));
    assert!(
        server
            .wait_stderr(|line| line.contains("serving until interrupted"))
            .contains(&format!("export ZK_CONNECT=127.0.0.1:{port}"))
    );
    stop(server);
}

/// `--in-process` serves curator-zkmodel's model from the `curator` process: other commands
/// work against it (a lock and a listing), and SIGTERM stops it.
#[test]
fn serves_a_model_in_process() {
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port().to_string();
    drop(holder);
    let mut server = Running::spawn(curator_env(
        None,
        &["server", "--in-process", "--port", &port, "--json"],
    ));
    let result: Value = serde_json::from_str(&server.wait_stdout(|_| true)).unwrap();
    let connect = result["connect"].as_str().unwrap().to_owned();
    assert_eq!(connect, format!("127.0.0.1:{port}"));
    let serving = server.wait_event("serving");
    assert_eq!(serving["in_process"], true);
    let lock = run(curator_env(
        Some(&connect),
        &["lock", "/locks/model", "--", "true"],
    ));
    assert_eq!(lock.status.code(), Some(0), "{}", text(&lock.stderr));
    let listing = run(curator_env(Some(&connect), &["ls", "/"]));
    assert_eq!(listing.status.code(), Some(0), "{}", text(&listing.stderr));
    let listed = text(&listing.stdout);
    assert!(
        listed.contains("zookeeper") && listed.contains("locks"),
        "{listed}"
    );
    stop(server);
    let both = run(curator_env(
        None,
        &["server", "--in-process", "--cluster", "3"],
    ));
    assert_eq!(both.status.code(), Some(2), "{}", text(&both.stderr));
}
