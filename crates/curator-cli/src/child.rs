//! CMD as a child process in its own process group, so stopping it stops everything it started;
//! watched over by a sentinel process, and stopped and continued with `curator` itself.
//!
//! CMD's own group keeps the terminal's signals from reaching it directly: `curator` passes
//! Ctrl-C on itself, and handles Ctrl-Z (SIGTSTP) by stopping CMD's group and then itself. When
//! continued, the wrapper first checks that it still holds what it held (the lock, the
//! leadership) and only then continues CMD; see [`Child::next`]. A stop that cannot be caught
//! (SIGSTOP) and the wrapper's death are the [`sentinel`](crate::cmd::sentinel)'s part.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg, raise};
use nix::unistd::Pid;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{ChildStderr, ChildStdout};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::duration::human;
use crate::encoding::Encoding;
use crate::exit::{CliError, CliResult, codes};
use crate::report::Reporter;

/// The CMD running now, for the SIGTSTP handler: its group, and where to say that it was
/// stopped with `curator` and waits for the wrapper's check.
static RUNNING: Mutex<Option<(Pid, mpsc::UnboundedSender<()>)>> = Mutex::new(None);

/// From now on, SIGTSTP (Ctrl-Z) stops CMD's group (when one runs), then `curator` itself; once
/// continued, the running [`Child`] reports a pause (see [`Child::next`]).
///
/// # Errors
/// Exit code 1 when the handler cannot be installed.
pub(crate) fn handle_terminal_stops() -> CliResult<()> {
    let mut stops = signal(SignalKind::from_raw(Signal::SIGTSTP as i32)).map_err(|error| {
        CliError::new(
            codes::OTHER,
            format!("installing a signal handler: {error}"),
        )
    })?;
    tokio::spawn(async move {
        while stops.recv().await.is_some() {
            let running = RUNNING
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some((group, _)) = &running {
                let _ = killpg(*group, Signal::SIGSTOP);
            }
            // What SIGTSTP would have done without a handler. This returns once continued.
            let _ = raise(Signal::SIGSTOP);
            if let Some((_, paused)) = running {
                let _ = paused.send(());
            }
        }
    });
    Ok(())
}

/// What [`Child::next`] saw.
#[derive(Debug)]
pub(crate) enum ChildEvent {
    /// CMD exited.
    Exited(ExitStatus),
    /// CMD was stopped with `curator`, which runs again: check, then resume or stop it.
    Paused,
}

/// A running CMD.
#[derive(Debug)]
pub(crate) struct Child {
    process: tokio::process::Child,
    group: Pid,
    name: String,
    /// Set once `wait` has seen CMD exit.
    reaped: bool,
    /// The task that passes CMD's stderr on as JSON events (with --json).
    relay: Option<JoinHandle<()>>,
    pauses: mpsc::UnboundedReceiver<()>,
    sentinel: Sentinel,
    report: Reporter,
}

impl Child {
    /// Starts the sentinel, then `command` (program and arguments) with our stdin, stdout and
    /// stderr, and `env` added to our environment, in a process group of its own; reports
    /// `started` (its pid and command).
    ///
    /// # Errors
    /// Exit code 127 when the program is not found, 126 when it cannot be run, 1 when the
    /// sentinel cannot be started.
    pub(crate) async fn spawn(
        command: &[String],
        env: &[(&str, String)],
        grace: Duration,
        report: Reporter,
    ) -> CliResult<Self> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| CliError::usage("no command given after `--`"))?;
        // First the sentinel: CMD never runs unguarded.
        let sentinel = Sentinel::start(grace).map_err(|error| {
            CliError::new(
                codes::OTHER,
                format!("cannot start the sentinel process: {error}"),
            )
        })?;
        // Held from CMD's start until the SIGTSTP handler and the sentinel know its group: a
        // Ctrl-Z meanwhile waits for that (the handler takes this lock first). A SIGSTOP of
        // curator in these few instructions still finds the sentinel without the group.
        let mut running = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
        let mut process = tokio::process::Command::new(program);
        process
            .args(args)
            .envs(env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            // With --json, stderr is a stream of JSON objects: CMD's lines join it as events.
            .stderr(if report.json {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            // Its own group: a stop reaches the shell's children too (a terminal's Ctrl-C reaches
            // us, and we pass it on).
            .process_group(0);
        let mut process = process.spawn().map_err(|error| {
            let code = if error.kind() == std::io::ErrorKind::NotFound {
                codes::NOT_FOUND
            } else {
                codes::CANNOT_EXECUTE
            };
            CliError::new(code, format!("cannot run `{program}`: {error}"))
        })?;
        let pid = process
            .id()
            .ok_or_else(|| CliError::new(codes::OTHER, "the command exited before it started"))?;
        let group = Pid::from_raw(pid as i32);
        let stderr = process.stderr.take();
        let (paused, pauses) = mpsc::unbounded_channel();
        *running = Some((group, paused));
        let mut sentinel = sentinel;
        let guarded = sentinel.guard(group);
        drop(running);
        // Said before the relay of CMD's stderr starts, so `started` precedes CMD's lines in
        // the JSON stream. A failed write marks stderr gone; the caller's wait then stops CMD.
        let _ = report.status(
            "started",
            json!({ "pid": group.as_raw(), "command": command }),
            format!("running {program} (pid {})", group.as_raw()),
        );
        let relay = stderr.map(|stderr| tokio::spawn(relay_stderr(stderr, report)));
        let mut child = Self {
            process,
            group,
            name: program.clone(),
            reaped: false,
            relay,
            pauses,
            sentinel,
            report,
        };
        if let Err(error) = guarded {
            child.sentinel_lost(&error.to_string());
        }
        Ok(child)
    }

    /// The program's name, for messages.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The process id.
    pub(crate) fn pid(&self) -> i32 {
        self.group.as_raw()
    }

    /// Waits for CMD to exit.
    ///
    /// # Cancellation safety
    /// Safe: the process keeps running and can be waited on again.
    async fn wait(&mut self) -> ExitStatus {
        let status = match self.process.wait().await {
            Ok(status) => status,
            // Waiting only fails when the process was already reaped; treat it as a failure.
            Err(_) => ExitStatus::from_raw(1 << 8),
        };
        self.reaped = true;
        self.drain_stderr().await;
        status
    }

    /// Lets CMD's last stderr lines out before anything is said about its end. Bounded: a
    /// process CMD left behind may hold its stderr open.
    async fn drain_stderr(&mut self) {
        if let Some(relay) = self.relay.take() {
            let _ = tokio::time::timeout(RELAY_DRAIN, relay).await;
        }
    }

    /// Sends `signal` to CMD's process group (and SIGCONT, in case it is stopped), waits up to
    /// `grace`, then kills the group.
    pub(crate) async fn stop(&mut self, signal: Signal, grace: Duration) -> ExitStatus {
        let _ = killpg(self.group, signal);
        let _ = killpg(self.group, Signal::SIGCONT);
        let status = tokio::time::timeout(grace, self.wait()).await;
        // Whether or not the group's leader is gone, make sure nothing it started lingers.
        let _ = killpg(self.group, Signal::SIGKILL);
        match status {
            Ok(status) => status,
            Err(_) => self.wait().await,
        }
    }

    /// The next thing that happens to CMD: it exits, or it was stopped because `curator` was
    /// (Ctrl-Z, or SIGSTOP seen by the sentinel) and `curator` runs again. After a pause CMD stays
    /// stopped until [`resume`](Self::resume) (once the caller checked that it may go on) or
    /// [`stop`](Self::stop).
    ///
    /// # Cancellation safety
    /// Safe: nothing is lost; a pause not yet taken stays queued.
    pub(crate) async fn next(&mut self) -> ChildEvent {
        loop {
            tokio::select! {
                status = self.process.wait() => {
                    self.reaped = true;
                    self.drain_stderr().await;
                    // Waiting only fails when the process was already reaped; a failure then.
                    return ChildEvent::Exited(status.unwrap_or(ExitStatus::from_raw(1 << 8)));
                }
                Some(()) = self.pauses.recv() => return ChildEvent::Paused,
                line = self.sentinel.next_line() => match line {
                    Some(line) if line == "stopped" => return ChildEvent::Paused,
                    Some(_) => {}
                    None => self.sentinel_lost("it exited"),
                },
            }
        }
    }

    /// Continues CMD's group after a pause.
    pub(crate) fn resume(&mut self) {
        // Told first: should curator be stopped right after the line, CMD is still stopped, and
        // the sentinel stops it again anyway once it sees curator stopped.
        if let Err(error) = self.sentinel.tell("continued") {
            self.sentinel_lost(&error.to_string());
        }
        let _ = killpg(self.group, Signal::SIGCONT);
    }

    fn sentinel_lost(&mut self, why: &str) {
        self.sentinel.forget();
        let _ = self.report.status(
            "warning",
            json!({ "message": format!("the sentinel process is gone ({why})") }),
            format!(
                "warning: the sentinel process is gone ({why}); {} is no longer stopped with curator nor ended if curator is killed",
                self.name
            ),
        );
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        *RUNNING.lock().unwrap_or_else(PoisonError::into_inner) = None;
        if !self.reaped {
            // Left behind by an early return: CMD must not outlive its supervision.
            let _ = killpg(self.group, Signal::SIGKILL);
        }
        // Dropping the sentinel tells it `done`.
    }
}

/// How long CMD's stderr may stay open after CMD exited before `curator` goes on without the
/// rest.
const RELAY_DRAIN: Duration = Duration::from_secs(1);

/// The longest stderr line passed on in one event; a longer one comes in pieces.
const MAX_LINE: usize = 64 * 1024;

/// Passes CMD's stderr on, one `{"event":"stderr","line":...,"encoding":...}` per line: the line
/// as it is when it is UTF-8, else in base64 (`"encoding":"base64"`), without its newline. Ends
/// at the end of CMD's stderr, or when our stderr is gone (the failed write marks it, and the
/// wrapper stops CMD).
async fn relay_stderr(stderr: ChildStderr, report: Reporter) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut reader, &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let (text, encoding) = Encoding::lossless(&line);
        let event = json!({ "line": text, "encoding": encoding.name() });
        if report.status("stderr", event, "").is_err() {
            return;
        }
    }
}

/// Appends one line (with its newline, if it has one) of at most [`MAX_LINE`] bytes to `line`;
/// the number of bytes read, 0 at the end.
async fn read_line(
    reader: &mut BufReader<ChildStderr>,
    line: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut read = 0;
    while read < MAX_LINE {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            break;
        }
        let room = MAX_LINE - read;
        let (take, done) = match buffer.iter().take(room).position(|&b| b == b'\n') {
            Some(newline) => (newline + 1, true),
            None => (buffer.len().min(room), false),
        };
        line.extend_from_slice(&buffer[..take]);
        reader.consume(take);
        read += take;
        if done {
            break;
        }
    }
    Ok(read)
}

/// The wrapper's end of the sentinel process (see [`crate::cmd::sentinel`]).
#[derive(Debug)]
struct Sentinel {
    process: Option<tokio::process::Child>,
    /// Its standard input; written synchronously (a few bytes into an empty pipe).
    to: Option<std::fs::File>,
    from: Option<Lines<BufReader<ChildStdout>>>,
}

impl Sentinel {
    /// Starts `curator __sentinel` for this process.
    fn start(grace: Duration) -> std::io::Result<Self> {
        // `/proc/self/exe` runs this very executable even if its file was replaced since.
        let exe = std::path::Path::new("/proc/self/exe");
        let exe = if exe.exists() {
            exe.to_path_buf()
        } else {
            std::env::current_exe()?
        };
        let mut process = tokio::process::Command::new(exe)
            .arg0("curator")
            .arg("__sentinel")
            .arg("--wrapper")
            .arg(std::process::id().to_string())
            .arg("--grace")
            .arg(human(grace))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // In the background (its own group), a write to the terminal could stop it.
            .stderr(Stdio::null())
            // Its own group: neither the terminal's signals nor ours to CMD's group reach it.
            .process_group(0)
            .spawn()?;
        let to = process
            .stdin
            .take()
            .map(|stdin| stdin.into_owned_fd().map(std::fs::File::from))
            .transpose()?;
        let from = process
            .stdout
            .take()
            .map(|stdout| BufReader::new(stdout).lines());
        Ok(Self {
            process: Some(process),
            to,
            from,
        })
    }

    /// Tells the sentinel which group to guard.
    fn guard(&mut self, group: Pid) -> std::io::Result<()> {
        self.tell(&format!("group {group}"))
    }

    /// Writes one line to the sentinel.
    fn tell(&mut self, line: &str) -> std::io::Result<()> {
        match &mut self.to {
            Some(to) => writeln!(to, "{line}"),
            None => Ok(()),
        }
    }

    /// The sentinel's next line; `None` once it has ended (then pending forever after).
    async fn next_line(&mut self) -> Option<String> {
        match &mut self.from {
            Some(from) => from.next_line().await.ok().flatten(),
            None => std::future::pending().await,
        }
    }

    /// Stops listening to a sentinel that is gone.
    fn forget(&mut self) {
        self.from = None;
        self.to = None;
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        if let Some(mut to) = self.to.take() {
            let _ = writeln!(to, "done");
        }
        // Not waited for: it exits at once, and Tokio reaps it in the background.
        drop(self.process.take());
    }
}

/// The shell's view of an exit status: the code, or 128 + the signal that killed it.
pub(crate) fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(codes::OTHER),
        (None, Some(signal)) => {
            codes::SIGNAL_BASE.saturating_add(u8::try_from(signal).unwrap_or(0))
        }
        (None, None) => codes::OTHER,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_shell() {
        assert_eq!(exit_code(ExitStatus::from_raw(7 << 8)), 7);
        assert_eq!(exit_code(ExitStatus::from_raw(15)), 143);
        assert_eq!(exit_code(ExitStatus::from_raw(9)), 137);
    }
}
