//! Job control: CMD stops and continues with `curator` (Ctrl-Z, SIGSTOP), continues only while
//! the lock or leadership is still held, and does not outlive a killed `curator`.

mod support;

use curator_framework::CuratorFramework;
use curator_test::{TestingServer, Timing, eventually, unique_root};
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use support::{
    Running, assert_no_children, await_dead, await_lines, await_running, await_stopped, curator,
};
use tempfile::TempDir;

/// A CMD that appends a counter line to a file every 50 ms until another file exists.
struct Counting {
    dir: TempDir,
}

impl Counting {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("log")
    }

    fn stop_file(&self) -> PathBuf {
        self.dir.path().join("stop")
    }

    /// `bash -c LOOP bash STOP LOG`, to put after `--`. (bash, not dash: dash starts `sleep` with
    /// vfork(2), and a shell stopped in vfork shows `D`, not `T`, while its child is stopped.)
    fn command(&self) -> Vec<String> {
        vec![
            "bash".into(),
            "-c".into(),
            "i=0; while [ ! -e \"$1\" ]; do echo $i >> \"$2\"; i=$((i+1)); sleep 0.05; done".into(),
            "bash".into(),
            path_arg(&self.stop_file()),
            path_arg(&self.log()),
        ]
    }

    fn lines(&self) -> usize {
        std::fs::read_to_string(self.log())
            .unwrap_or_default()
            .lines()
            .count()
    }

    /// Lets the loop end by itself.
    fn finish(&self) {
        std::fs::write(self.stop_file(), b"").unwrap();
    }
}

fn path_arg(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

fn wrapper(connect: &str, args: &[&str], cmd: &[String]) -> Running {
    let mut all: Vec<&str> = args.to_vec();
    all.push("--");
    all.extend(cmd.iter().map(String::as_str));
    Running::spawn(curator(connect, &all))
}

/// Ctrl-Z reaches `curator` (the terminal signals its process group, not CMD's): CMD stops with
/// it, and continues with it, and the run ends normally with the lock released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigtstp_stops_and_continues_cmd_with_curator() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-jobs-tstp");
    let cmd = Counting::new();
    let mut holder = wrapper(&connect, &["lock", &path, "--json"], &cmd.command());
    let child = holder.wait_event("started")["pid"].as_i64().unwrap() as i32;
    await_lines(&cmd.log(), 3);

    holder.signal(Signal::SIGTSTP);
    await_stopped(child);
    await_stopped(holder.pid());
    // CMD (a shell, stopped with its `sleep`) writes no line until continued.
    let stopped_at = cmd.lines();

    holder.signal(Signal::SIGCONT);
    let continued = holder.wait_event("continued");
    assert_eq!(continued["pid"], child);
    await_running(child);
    await_lines(&cmd.log(), stopped_at + 3);
    cmd.finish();
    assert_eq!(holder.wait_exit().code(), Some(0));
    assert!(
        holder
            .drain_stderr()
            .iter()
            .any(|l| l.contains("\"exited\""))
    );
    assert_no_children(&connect, &path);
}

/// SIGSTOP cannot be caught: the sentinel sees curator stopped and stops CMD; after SIGCONT
/// curator checks its lock and continues CMD.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigstop_stops_cmd_through_the_sentinel() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-jobs-stop");
    let cmd = Counting::new();
    let mut holder = wrapper(&connect, &["lock", &path, "--json"], &cmd.command());
    let child = holder.wait_event("started")["pid"].as_i64().unwrap() as i32;
    await_lines(&cmd.log(), 3);

    holder.signal(Signal::SIGSTOP);
    await_stopped(child);
    let stopped_at = cmd.lines();

    holder.signal(Signal::SIGCONT);
    holder.wait_event("continued");
    await_lines(&cmd.log(), stopped_at + 3);
    cmd.finish();
    assert_eq!(holder.wait_exit().code(), Some(0));
    assert_no_children(&connect, &path);
}

/// A client of the test's own, to see the server's side.
async fn client(connect: &str) -> CuratorFramework {
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .build()
        .unwrap();
    client.start().await.unwrap();
    client
        .block_until_connected(Timing::new().wait())
        .await
        .unwrap();
    client
}

/// curator stays stopped until its session expires and the lock node is gone: once continued, it
/// does not continue CMD but ends it (exit code 5), and CMD never runs another step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_lost_while_stopped_is_not_continued() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-jobs-expired");
    let session = format!("{}ms", Timing::new().session_timeout().as_millis());
    let cmd = Counting::new();
    let mut holder = wrapper(
        &connect,
        &[
            "lock",
            &path,
            "--json",
            "--session-timeout",
            &session,
            "--grace",
            "2s",
        ],
        &cmd.command(),
    );
    let acquired = holder.wait_event("acquired");
    let node = acquired["node"].as_str().unwrap().to_owned();
    let child = holder.wait_event("started")["pid"].as_i64().unwrap() as i32;
    await_lines(&cmd.log(), 3);

    holder.signal(Signal::SIGSTOP);
    await_stopped(child);
    let stopped_at = cmd.lines();
    // Nothing tells another client of an expired session: look until the lock node is gone.
    let observer = client(&connect).await;
    eventually("the stopped holder's session to expire", || {
        let observer = observer.clone();
        let node = node.clone();
        async move { matches!(observer.check_exists().for_path(&node).await, Ok(None)) }
    })
    .await;
    observer.close().await.unwrap();

    holder.signal(Signal::SIGCONT);
    assert_eq!(holder.wait_exit().code(), Some(5));
    let stderr = holder.drain_stderr();
    assert!(
        stderr
            .last()
            .unwrap()
            .contains(&format!("lock {path} lost")),
        "{stderr:#?}"
    );
    await_dead(child);
    assert_eq!(
        cmd.lines(),
        stopped_at,
        "CMD ran on after the lock was lost"
    );
}

/// `curator leader` stops and continues CMD with itself too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_stops_and_continues_cmd_with_curator() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-jobs-leader");
    let cmd = Counting::new();
    let mut leader = wrapper(
        &connect,
        &["leader", &path, "--id", "only", "--json"],
        &cmd.command(),
    );
    leader.wait_event("leading");
    let child = leader.wait_event("started")["pid"].as_i64().unwrap() as i32;
    await_lines(&cmd.log(), 3);

    leader.signal(Signal::SIGTSTP);
    await_stopped(child);
    let stopped_at = cmd.lines();
    leader.signal(Signal::SIGCONT);
    assert_eq!(leader.wait_event("continued")["id"], "only");
    await_lines(&cmd.log(), stopped_at + 3);
    cmd.finish();
    assert_eq!(leader.wait_exit().code(), Some(0));
    assert_no_children(&connect, &path);
}

/// A leader stopped until its session expired does not continue CMD: it ends it and leads again
/// on its new session with a new CMD.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leadership_lost_while_stopped_is_not_continued() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("cli-jobs-leader-expired");
    let session = format!("{}ms", Timing::new().session_timeout().as_millis());
    let cmd = Counting::new();
    let mut leader = wrapper(
        &connect,
        &[
            "leader",
            &path,
            "--id",
            "only",
            "--json",
            "--session-timeout",
            &session,
            "--grace",
            "2s",
        ],
        &cmd.command(),
    );
    let first_session = leader.wait_event("leading")["session"].clone();
    let child = leader.wait_event("started")["pid"].as_i64().unwrap() as i32;
    await_lines(&cmd.log(), 3);

    leader.signal(Signal::SIGSTOP);
    await_stopped(child);
    let stopped_at = cmd.lines();
    let observer = client(&connect).await;
    eventually("the stopped leader's session to expire", || {
        let observer = observer.clone();
        let path = path.clone();
        async move {
            // The election's node is a container: once empty, the server removes it too
            // (every 500 ms here), so "no such node" is as good as "no children".
            match observer.get_children().for_path(&path).await {
                Ok((children, _)) => children.is_empty(),
                Err(curator_framework::Error::NoNode) => true,
                Err(_) => false,
            }
        }
    })
    .await;
    observer.close().await.unwrap();

    leader.signal(Signal::SIGCONT);
    leader.wait_event("lost");
    leader.wait_event("stopped");
    await_dead(child);
    assert_eq!(
        cmd.lines(),
        stopped_at,
        "CMD ran on after leadership was lost"
    );
    // It leads again, on a new session, with a new CMD.
    loop {
        let leading = leader.wait_event("leading");
        if leading["session"] != first_session {
            break;
        }
    }
    let again = leader.wait_event("started")["pid"].as_i64().unwrap() as i32;
    assert_ne!(again, child);
    leader.signal(Signal::SIGTERM);
    assert_eq!(leader.wait_exit().code(), Some(143));
    await_dead(again);
}

/// SIGKILL cannot be handled: the sentinel sees curator's end (its pipe closes) and ends CMD,
/// for `lock` and `barrier` alike (`leader` in tests/leader.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_curator_takes_cmd_with_it() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let sleep = ["sleep".to_owned(), "60".to_owned()];

    let path = unique_root("cli-jobs-kill");
    let mut holder = wrapper(&connect, &["lock", &path, "--json"], &sleep);
    let child = holder.wait_event("started")["pid"].as_i64().unwrap() as i32;
    holder.signal(Signal::SIGKILL);
    assert_eq!(holder.wait_exit().code(), None);
    await_dead(child);

    // Also when curator is stopped at the time (CMD with it): CMD gets SIGCONT with its SIGTERM.
    // (Another path: the killed holder's lock node stays until its session expires.)
    let path = unique_root("cli-jobs-kill-stopped");
    let mut holder = wrapper(&connect, &["lock", &path, "--json"], &sleep);
    let child = holder.wait_event("started")["pid"].as_i64().unwrap() as i32;
    holder.signal(Signal::SIGSTOP);
    await_stopped(child);
    holder.signal(Signal::SIGKILL);
    assert_eq!(holder.wait_exit().code(), None);
    await_dead(child);

    let barrier = unique_root("cli-jobs-kill-barrier");
    let mut member = wrapper(
        &connect,
        &["barrier", &barrier, "--members", "1", "--json"],
        &sleep,
    );
    let child = member.wait_event("started")["pid"].as_i64().unwrap() as i32;
    member.signal(Signal::SIGKILL);
    assert_eq!(member.wait_exit().code(), None);
    await_dead(child);
}
