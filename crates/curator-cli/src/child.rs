//! CMD as a child process in its own process group, so stopping it stops everything it started.

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::exit::{CliError, CliResult, codes};

/// A running CMD.
#[derive(Debug)]
pub(crate) struct Child {
    process: tokio::process::Child,
    group: Pid,
    name: String,
}

impl Child {
    /// Starts `command` (program and arguments) with our stdin, stdout and stderr.
    ///
    /// # Errors
    /// Exit code 127 when the program is not found, 126 when it cannot be run.
    pub(crate) fn spawn(command: &[String]) -> CliResult<Self> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| CliError::usage("no command given after `--`"))?;
        let mut process = tokio::process::Command::new(program);
        process
            .args(args)
            .stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            // Its own group: a stop reaches the shell's children too (a terminal's Ctrl-C reaches
            // us, and we pass it on).
            .process_group(0);
        let process = process.spawn().map_err(|error| {
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
        Ok(Self {
            process,
            group: Pid::from_raw(pid as i32),
            name: program.clone(),
        })
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
    pub(crate) async fn wait(&mut self) -> ExitStatus {
        match self.process.wait().await {
            Ok(status) => status,
            // Waiting only fails when the process was already reaped; treat it as a failure.
            Err(_) => ExitStatus::from_raw(1 << 8),
        }
    }

    /// Sends `signal` to CMD's process group, waits up to `grace`, then kills the group.
    pub(crate) async fn stop(&mut self, signal: Signal, grace: Duration) -> ExitStatus {
        let _ = killpg(self.group, signal);
        let status = tokio::time::timeout(grace, self.wait()).await;
        // Whether or not the group's leader is gone, make sure nothing it started lingers.
        let _ = killpg(self.group, Signal::SIGKILL);
        match status {
            Ok(status) => status,
            Err(_) => self.wait().await,
        }
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
