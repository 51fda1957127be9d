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

/// `curator --connect <connect> ARGS...`, with no `ZK_CONNECT` from the environment.
pub fn curator(connect: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_curator"));
    command
        .env_remove("ZK_CONNECT")
        .arg("--connect")
        .arg(connect)
        .args(args);
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

fn lines(stream: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl Running {
    pub fn spawn(mut command: Command) -> Self {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("spawning curator");
        let stdout = lines(child.stdout.take().expect("stdout"));
        let stderr = lines(child.stderr.take().expect("stderr"));
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
        let deadline = Instant::now() + Timing::new().wait();
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

/// Waits until the process `pid` is gone.
pub fn await_gone(pid: i32) {
    let deadline = Instant::now() + Timing::new().wait();
    while alive(pid) {
        assert!(Instant::now() < deadline, "process {pid} still runs");
        std::thread::sleep(Duration::from_millis(20));
    }
}
