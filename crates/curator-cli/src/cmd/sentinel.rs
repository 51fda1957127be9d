//! `curator __sentinel`: the helper process that holds CMD to what its wrapper can vouch for.
//!
//! `lock`, `leader` and `barrier` start one (the same executable, a hidden subcommand) before
//! CMD, in its own process group so that neither the terminal's signals nor the wrapper's
//! signals to CMD's group reach it. It covers what the wrapper cannot do itself:
//!
//! - **The wrapper is stopped** (SIGSTOP, which cannot be caught, or a stop that arrived while
//!   it could not act): the sentinel reads the wrapper's state from `/proc/<pid>/stat` every
//!   [`POLL`], stops CMD's process group (SIGSTOP) as soon as it sees the wrapper stopped, and
//!   then writes `stopped` to the wrapper. The wrapper reads that line once it runs again and
//!   continues CMD only after checking that it still holds what it held. Because the line is
//!   written after CMD was stopped, the wrapper's continue always comes after the sentinel's stop.
//! - **The wrapper dies** (SIGKILL, a crash): the sentinel's standard input, a pipe from the
//!   wrapper, reaches its end without the `done` that a wrapper sends when it is finished. The
//!   sentinel then ends CMD's group: SIGTERM (and SIGCONT, in case it was stopped), SIGKILL
//!   after the grace period.
//!
//! Protocol, one line each: the wrapper writes `group <PGID>` once CMD runs, `continued` just
//! before it continues CMD after a stop, and `done` when CMD is over; the sentinel writes
//! `stopped`. The sentinel acts once per stop of the wrapper: again only after it saw the
//! wrapper run, or heard `continued` (a wrapper continued and stopped again between two looks
//! may have continued CMD in between).

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use clap::Args;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::{Ctx, Run};
use crate::args::Takes;
use crate::duration::parse_duration;
use crate::exit::{CliError, CliResult};

/// Internal: the helper process of `lock`, `leader` and `barrier` (see the sentinel module)
#[derive(Debug, Args)]
pub(crate) struct Sentinel {
    /// The wrapper's process id
    #[arg(long)]
    wrapper: i32,
    /// After SIGTERM, how long CMD gets before SIGKILL
    #[arg(long, value_parser = parse_duration)]
    grace: Duration,
}

impl Run for Sentinel {
    fn takes(&self) -> Takes<'_> {
        Takes::Nothing
    }

    /// Never called: `main` runs the sentinel ([`Sentinel::exec`]) before a runtime starts.
    async fn run(self, _: &Ctx) -> CliResult {
        Err(CliError::usage("__sentinel is internal"))
    }
}

/// How often the sentinel looks at the wrapper's state.
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// What the wrapper said.
enum Message {
    /// `group <PGID>`: CMD's process group.
    Group(Pid),
    /// `continued`: the wrapper is about to continue CMD after a stop.
    Continued,
    /// `done`: CMD is over (or the wrapper stops it itself); nothing left to guard.
    Done,
    /// The pipe reached its end (or failed): the wrapper is gone.
    End,
}

impl Sentinel {
    /// Runs the sentinel for its wrapper; returns when the wrapper says `done` or dies. A
    /// small helper process: no runtime, no connection.
    pub(crate) fn exec(self) -> ExitCode {
        let Sentinel { wrapper, grace } = self;
        watch_over(wrapper, grace)
    }
}

/// Guards CMD's group for the wrapper `wrapper` (see the module's documentation).
fn watch_over(wrapper: i32, grace: Duration) -> ExitCode {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            let message = match line.split_once(' ') {
                Some(("group", group)) => match group.trim().parse() {
                    Ok(group) => Message::Group(Pid::from_raw(group)),
                    Err(_) => continue,
                },
                _ if line.trim() == "done" => Message::Done,
                _ if line.trim() == "continued" => Message::Continued,
                _ => continue,
            };
            if tx.send(message).is_err() {
                return;
            }
        }
        let _ = tx.send(Message::End);
    });

    let mut group = None;
    // Whether CMD was stopped for the wrapper's current stop.
    let mut acted = false;
    loop {
        match rx.recv_timeout(POLL) {
            Ok(Message::Group(pgid)) => group = Some(pgid),
            Ok(Message::Continued) => acted = false,
            Ok(Message::Done) => return ExitCode::SUCCESS,
            Ok(Message::End) | Err(RecvTimeoutError::Disconnected) => {
                if let Some(group) = group {
                    end_group(group, grace);
                }
                return ExitCode::SUCCESS;
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        let Some(group) = group else { continue };
        match process_state(wrapper) {
            Some('T' | 't') if !acted => {
                let _ = killpg(group, Signal::SIGSTOP);
                acted = true;
                let mut stdout = std::io::stdout().lock();
                // A wrapper that cannot read it is gone: its pipe's end follows.
                let _ = writeln!(stdout, "stopped").and_then(|()| stdout.flush());
            }
            Some('T' | 't') => {}
            Some(_) => acted = false,
            // Gone: standard input reaches its end next.
            None => {}
        }
    }
}

/// Ends what is left of CMD's group: SIGTERM and SIGCONT (a stopped process handles the TERM
/// only once continued), then SIGKILL once `grace` has passed.
fn end_group(group: Pid, grace: Duration) {
    if killpg(group, Signal::SIGTERM).is_err() {
        // No such group: nothing left.
        return;
    }
    let _ = killpg(group, Signal::SIGCONT);
    let deadline = Instant::now() + grace;
    // Nothing notifies the end of processes that are not our children: poll.
    while Instant::now() < deadline && group_runs(group) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = killpg(group, Signal::SIGKILL);
}

/// Whether a process of `group` still runs: not only exists (a zombie that nobody has reaped yet
/// still counts for kill(2)), but has not exited.
fn group_runs(group: Pid) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // Without /proc, kill(2) is the best there is.
        return killpg(group, None).is_ok();
    };
    entries.flatten().any(|entry| {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            return false;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // After `(comm)`: state, ppid, pgrp.
        let mut fields = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace())
            .into_iter()
            .flatten();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|pgrp| pgrp.parse::<i32>().ok());
        pgrp == Some(group.as_raw()) && state != Some("Z")
    })
}

/// The state letter of process `pid` (`R`, `S`, `T` stopped, `t` traced, `Z` zombie, ...), from
/// `/proc/<pid>/stat`; `None` when there is no such process.
pub(crate) fn process_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) S ...`: the command name may itself hold spaces and parentheses.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;

    use super::*;

    #[test]
    fn reads_its_own_state() {
        // This test runs, so its state is R (or S for a moment, if it was scheduled out).
        let state = process_state(std::process::id() as i32);
        assert!(matches!(state, Some('R' | 'S')), "{state:?}");
        assert_eq!(process_state(-1), None);
    }

    #[test]
    fn sees_a_running_group_and_not_a_reaped_one() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let group = Pid::from_raw(child.id() as i32);
        assert!(group_runs(group));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!group_runs(group));
    }
}
