//! `curator server` starts a real server, prints where, and stops on SIGTERM.

mod support;

use nix::sys::signal::Signal;
use support::{Running, curator, run, text};

#[test]
fn serves_until_terminated() {
    let mut server = Running::spawn(curator("unused:1", &["server"]));
    let connect = server.wait_stdout(|line| line.starts_with("127.0.0.1:"));
    let listing = run(curator(&connect, &["ls", "/"]));
    assert_eq!(listing.status.code(), Some(0), "{}", text(&listing.stderr));
    assert!(text(&listing.stdout).contains("zookeeper"));
    server.signal(Signal::SIGTERM);
    assert_eq!(server.wait_exit().code(), Some(0));
}
