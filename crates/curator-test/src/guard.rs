//! Child processes (ZooKeeper JVMs, a Kerberos KDC) that cannot outlive the test process.

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};

use crate::error::{Error, Result};
use crate::java::log_tail;

/// A process started under a small shell guard.
///
/// The guard holds the read end of a pipe whose write end only this process owns. When this
/// process drops the pipe, or dies for any reason (a panic, `SIGKILL` from a test runner's
/// timeout), the guard reads end-of-file and kills the child. So no test can leave a ZooKeeper
/// server or a KDC behind, and no `unsafe` `pre_exec` hook is needed.
#[derive(Debug)]
pub(crate) struct GuardedProcess {
    child: Child,
    lifeline: Option<ChildStdin>,
    log_path: PathBuf,
}

/// Runs `"$@"` in the background, kills it when standard input closes, and exits with its status.
const GUARD_SCRIPT: &str = r#"exec 3<&0
"$@" </dev/null &
pid=$!
( read -r _ <&3; kill -9 "$pid" 2>/dev/null ) &
wait "$pid"
"#;

impl GuardedProcess {
    /// Starts `program <args>` with `envs` added to this process's environment and its output
    /// appended to `log_path`.
    pub(crate) fn spawn(
        program: &Path,
        args: &[OsString],
        envs: &[(&str, &Path)],
        log_path: &Path,
    ) -> Result<Self> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(log_path)
            .map_err(Error::io(format!("opening {}", log_path.display())))?;
        let log_err = log
            .try_clone()
            .map_err(Error::io("duplicating the log file"))?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(GUARD_SCRIPT)
            .arg("curator-test-guard")
            .arg(program)
            .args(args)
            .envs(envs.iter().copied())
            .stdin(Stdio::piped())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(Error::io(format!("starting {}", program.display())))?;
        let lifeline = child.stdin.take();
        Ok(Self {
            child,
            lifeline,
            log_path: log_path.to_owned(),
        })
    }

    /// The exit status if the process has already exited.
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last lines of the process's log, for error messages.
    pub(crate) fn log_tail(&self) -> String {
        log_tail(&self.log_path, 30)
    }

    /// Kills the process (`SIGKILL`, as a crash would) and waits until it is gone, so its ports
    /// are free when this returns.
    pub(crate) fn kill(&mut self) {
        // Closing the lifeline makes the guard kill the child; the guard exits once it is reaped.
        drop(self.lifeline.take());
        let _ = self.child.wait();
    }
}

impl Drop for GuardedProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
