//! Drives the `curator` binary as a user would: spawn it, read its status lines, signal it, wait.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use curator_test::Timing;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

/// The variables `curator` reads its security settings from (`--tls-ca`, `--auth-user` and the
/// others), and those of MIT Kerberos: a test sets the ones it means, never inherits one.
pub const SECURITY_VARIABLES: &[&str] = &[
    "ZK_TLS_CA",
    "ZK_TLS_CERT",
    "ZK_TLS_KEY",
    "ZK_SASL_USER",
    "ZK_SASL_PASSWORD_FILE",
    "ZK_AUTH_USER",
    "ZK_AUTH_PASSWORD_FILE",
    "ZK_KERBEROS",
    "ZK_KERBEROS_SERVICE",
    "ZK_KERBEROS_KEYTAB",
    "ZK_KERBEROS_CCACHE",
    "ZK_KERBEROS_CONFIG",
    "ZK_KERBEROS_PRINCIPAL",
    "KRB5_CONFIG",
    "KRB5CCNAME",
    "KRB5_CLIENT_KTNAME",
];

/// A `curator` (or `sh`) command with none of [`SECURITY_VARIABLES`] and no `ZK_CONNECT` from
/// the environment.
fn bare(program: &str) -> Command {
    let mut command = Command::new(program);
    command.env_remove("ZK_CONNECT");
    for variable in SECURITY_VARIABLES {
        command.env_remove(variable);
    }
    command
}

/// `curator --connect <connect> ARGS...`, with no `ZK_CONNECT` (nor security settings) from the
/// environment.
pub fn curator(connect: &str, args: &[&str]) -> Command {
    let mut command = bare(env!("CARGO_BIN_EXE_curator"));
    command.arg("--connect").arg(connect).args(args);
    command
}

/// `curator ARGS...` without `--connect`, with `ZK_CONNECT` set to `zk_connect` (or unset).
pub fn curator_env(zk_connect: Option<&str>, args: &[&str]) -> Command {
    let mut command = bare(env!("CARGO_BIN_EXE_curator"));
    command.args(args);
    if let Some(zk_connect) = zk_connect {
        command.env("ZK_CONNECT", zk_connect);
    }
    command
}

/// Runs to the end (at most [`Timing::forever`]) and returns what it printed.
pub fn run(command: Command) -> Output {
    let mut running = Running::spawn(command);
    let status = running.wait_exit();
    Output {
        status,
        stdout: running.drain_stdout().join("\n").into_bytes(),
        stderr: running.drain_stderr().join("\n").into_bytes(),
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A running `curator`, its output read line by line on threads.
pub struct Running {
    child: Child,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    stdout_seen: Vec<String>,
    stderr_seen: Vec<String>,
}

/// How a test reads one of curator's output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// Reads every line until the end.
    All,
    /// Reads this many lines, then closes its end of the pipe, as `| head -N` does (0: closed
    /// before curator writes anything).
    CloseAfter(usize),
}

fn lines(stream: impl std::io::Read + Send + 'static, reader: Reader) -> Receiver<String> {
    let (tx, rx) = channel();
    let limit = match reader {
        Reader::All => usize::MAX,
        Reader::CloseAfter(n) => n,
    };
    if limit == 0 {
        // Closed here, before the process can write anything.
        drop(stream);
        return rx;
    }
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().take(limit) {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
        // Returning drops the pipe's read end: the writer's next write fails with EPIPE.
    });
    rx
}

/// `sh -c 'exec curator --connect <connect> ARGS... 2>&1'`: curator with its stderr on the same
/// pipe as its stdout, as in `curator ... 2>&1 | head -1`.
pub fn curator_2_to_1(connect: &str, args: &[&str]) -> Command {
    let mut command = bare("sh");
    command
        .arg("-c")
        .arg("exec \"$0\" \"$@\" 2>&1")
        .arg(env!("CARGO_BIN_EXE_curator"))
        .arg("--connect")
        .arg(connect)
        .args(args);
    command
}

impl Running {
    pub fn spawn(command: Command) -> Self {
        Self::spawn_reading(command, Reader::All, Reader::All)
    }

    /// Spawns with stdout and stderr read as `stdout` and `stderr` say.
    pub fn spawn_reading(mut command: Command, stdout: Reader, stderr: Reader) -> Self {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("spawning curator");
        let stdout = lines(child.stdout.take().expect("stdout"), stdout);
        let stderr = lines(child.stderr.take().expect("stderr"), stderr);
        Self {
            child,
            stdout,
            stderr,
            stdout_seen: Vec::new(),
            stderr_seen: Vec::new(),
        }
    }

    /// Waits for the JSON status event `event` on stderr (the process runs with `--json`).
    pub fn wait_event(&mut self, event: &str) -> Value {
        self.wait_event_within(event, Timing::new().wait())
    }

    /// [`wait_event`](Self::wait_event), waiting at most `within`.
    pub fn wait_event_within(&mut self, event: &str, within: std::time::Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => {
                    self.stderr_seen.push(line.clone());
                    if let Ok(value) = serde_json::from_str::<Value>(&line) {
                        if value["event"] == event {
                            return value;
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no {event:?} event in time; stderr so far: {:#?}",
                        self.stderr_seen
                    )
                }
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "curator exited ({:?}) before a {event:?} event; stderr: {:#?}",
                    self.child.try_wait(),
                    self.stderr_seen
                ),
            }
        }
    }

    /// Waits for a stderr line for which `wanted` holds.
    pub fn wait_stderr(&mut self, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Timing::new().wait();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => {
                    self.stderr_seen.push(line.clone());
                    if wanted(&line) {
                        return line;
                    }
                }
                Err(error) => panic!(
                    "no wanted stderr line ({error:?}); stderr so far: {:#?}",
                    self.stderr_seen
                ),
            }
        }
    }

    /// Waits for a stdout line for which `wanted` holds.
    pub fn wait_stdout(&mut self, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Timing::new().wait();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stdout.recv_timeout(left) {
                Ok(line) => {
                    self.stdout_seen.push(line.clone());
                    if wanted(&line) {
                        return line;
                    }
                }
                Err(error) => panic!(
                    "no wanted stdout line ({error:?}); stdout so far: {:#?}",
                    self.stdout_seen
                ),
            }
        }
    }

    /// The process id of curator.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.child.id() as i32), signal).expect("signalling curator");
    }

    /// Waits for the process to exit (polling, up to [`Timing::forever`]).
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Timing::new().forever();
        loop {
            if let Some(status) = self.child.try_wait().expect("waiting for curator") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "curator did not exit in time; stderr: {:#?}",
                self.drain_stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything on stderr until now (all of it once the process has exited).
    pub fn drain_stderr(&mut self) -> Vec<String> {
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(5)) {
            self.stderr_seen.push(line);
        }
        self.stderr_seen.clone()
    }

    pub fn drain_stdout(&mut self) -> Vec<String> {
        while let Ok(line) = self.stdout.recv_timeout(Duration::from_secs(5)) {
            self.stdout_seen.push(line);
        }
        self.stdout_seen.clone()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Whether a process with this id still exists (zombies included).
fn alive(pid: i32) -> bool {
    kill(Pid::from_raw(pid), None).is_ok()
}

/// The state letter of process `pid` from `/proc/<pid>/stat` (`R`, `S`, `T` for stopped, `Z`
/// for a zombie, ...); `None` once it is gone.
pub fn process_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name, in parentheses, may itself hold spaces and parentheses.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Waits until process `pid` is in a state `wanted` accepts (`None`: gone).
pub fn await_state(pid: i32, what: &str, wanted: impl Fn(Option<char>) -> bool) {
    let deadline = Instant::now() + Timing::new().wait();
    loop {
        let state = process_state(pid);
        if wanted(state) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "process {pid} not {what} in time (state {state:?})"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until process `pid` is stopped (`T`).
pub fn await_stopped(pid: i32) {
    await_state(pid, "stopped", |state| state == Some('T'));
}

/// Waits until process `pid` runs again (any state but stopped, and not gone).
pub fn await_running(pid: i32) {
    await_state(
        pid,
        "running",
        |state| matches!(state, Some(state) if state != 'T' && state != 't'),
    );
}

/// Waits until process `pid` has ended: gone, or a zombie its new parent has not reaped yet
/// (a process orphaned by a killed `curator` is reaped by init, whenever init gets to it).
pub fn await_dead(pid: i32) {
    await_state(pid, "dead", |state| matches!(state, None | Some('Z')));
}

/// Waits until `path` holds at least `lines` lines; returns them.
pub fn await_lines(path: &std::path::Path, lines: usize) -> Vec<String> {
    let deadline = Instant::now() + Timing::new().wait();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let found: Vec<String> = text.lines().map(str::to_owned).collect();
        if found.len() >= lines {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "{} has {} lines, not {lines}, in time",
            path.display(),
            found.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts the lock (or election) directory at `path` has no child left: `ls` shows nothing, or
/// the container is already gone.
pub fn assert_no_children(connect: &str, path: &str) {
    let listing = run(curator(connect, &["ls", path]));
    if listing.status.code() == Some(1) {
        assert!(
            text(&listing.stderr).contains("no such node"),
            "{}",
            text(&listing.stderr)
        );
    } else {
        assert_eq!(listing.status.code(), Some(0), "{}", text(&listing.stderr));
        assert_eq!(text(&listing.stdout).trim(), "", "a node is left behind");
    }
}

/// Waits until the process `pid` is gone.
pub fn await_gone(pid: i32) {
    let deadline = Instant::now() + Timing::new().wait();
    while alive(pid) {
        assert!(Instant::now() < deadline, "process {pid} still runs");
        std::thread::sleep(Duration::from_millis(20));
    }
}
