//! `curator lock PATH [--timeout D] -- CMD...`: CMD runs while the distributed lock is held.

use std::time::Duration;

use clap::Args;
use curator_framework::CuratorFramework;
use curator_locks::{InterProcessMutex, LockGuard};
use serde_json::{Value, json};

use super::{Ctx, Run};
use crate::args::{RunArgs, Session, Takes};
use crate::child::Child;
use crate::duration::{human, parse_duration};
use crate::exit::{CliError, CliResult, codes};
use crate::spinner::Spinner;
use crate::supervise::{Ended, Held, prepare, output_closed, report_exit, still_owned, supervise};

/// Run CMD while holding the distributed lock at PATH (Curator's InterProcessMutex)
///
/// CMD gets the lock's fencing token in $CURATOR_FENCING_TOKEN (and the lock node in
/// $CURATOR_LOCK_NODE, and the hold's sequencer in $CURATOR_SEQUENCER). It can hand the token
/// to what it changes, or pass a fencing gate first: `curator fence /gates/db
/// "$CURATOR_FENCING_TOKEN" && write-to-db` refuses a holder whose lock was lost and taken by
/// someone newer; `curator validate "$CURATOR_SEQUENCER"` tells whether the hold is still there.
#[derive(Debug, Args)]
pub(crate) struct Lock {
    /// The lock's path
    path: String,
    /// Give up (exit code 4) when the lock is not had within D
    #[arg(long, value_parser = parse_duration, value_name = "D")]
    timeout: Option<Duration>,
    /// Lock-delay: when a holder fails (its session ends before it releases), the lock stays
    /// unavailable for its delay on ZooKeeper's clock, so what it sent drains first; this run
    /// promises D when it holds. Only holders with a lock-delay honour it (`curator inspect`
    /// shows the record)
    #[arg(long, value_parser = parse_duration, value_name = "D")]
    lock_delay: Option<Duration>,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    session: Session,
}

impl Run for Lock {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let Lock {
            path,
            timeout,
            lock_delay,
            run,
            ..
        } = self;
        let (client, mut signals) = prepare(ctx, &path).await?;
        let report = ctx.report;
        // How long the check, after curator was stopped, that the lock is still ours may take.
        let check = ctx.settings.connection_timeout;
        let mut mutex = InterProcessMutex::builder(client.clone(), &path);
        if let Some(delay) = lock_delay {
            mutex = mutex.lock_delay(delay);
        }
        let mutex = mutex
            .build()
            .map_err(|error| CliError::zk(&format!("lock {path}"), error))?;

        let guard = {
            let _spinner = Spinner::start(format!("waiting for lock {path}"), report.json);
            let acquire = async {
                match timeout {
                    Some(timeout) => mutex.acquire_timeout(timeout).await,
                    None => mutex.acquire().await.map(Some),
                }
            };
            // Dropping the acquisition leaves no lock node behind.
            let waiting = format!("waiting for lock {path}");
            match signals.unless_interrupted(report, &waiting, acquire).await {
                Ok(acquired) => acquired
                    .map_err(|error| CliError::zk(&format!("acquiring lock {path}"), error))?,
                Err(code) => return Ok(code),
            }
        };
        let Some(guard) = guard else {
            let timeout = timeout.unwrap_or_default();
            let holder = held_by(client, &path, check).await;
            return Err(CliError::timeout(format!(
                "lock {path} not acquired within {}{holder}",
                human(timeout)
            )));
        };
        if let Err(error) = report.status(
            "acquired",
            json!({ "path": path, "node": guard.node_path(), "fencing_token": guard.fencing_token() }),
            format!("acquired lock {path}"),
        ) {
            // Nobody would hear what CMD does: do not start it.
            let _ = guard.release().await;
            return Err(error.into());
        }

        // The fencing token for CMD to hand to what it changes (see the README).
        let env = [
            ("CURATOR_FENCING_TOKEN", guard.fencing_token().to_string()),
            ("CURATOR_LOCK_NODE", guard.node_path().to_owned()),
            (
                "CURATOR_SEQUENCER",
                guard
                    .sequencer()
                    .map(|sequencer| sequencer.to_string())
                    .unwrap_or_default(),
            ),
        ];
        let mut child = match Child::spawn(&run.command, &env, run.grace, report).await {
            Ok(child) => child,
            Err(error) => {
                let _ = guard.release().await;
                return Err(error);
            }
        };
        let mut held = HeldLock {
            client,
            guard: &guard,
            path: &path,
            check,
        };
        match supervise(&mut child, &mut held, &mut signals, report, run.grace).await {
            ended @ (Ended::Exited(code) | Ended::Interrupted(code)) => {
                let released = guard.release().await;
                report_exit(report, &child, code, "; lock released");
                if let (Ended::Exited(_), Err(error)) = (ended, released) {
                    let _ = report.status(
                        "release_failed",
                        json!({ "error": error.to_string() }),
                        format!("releasing lock {path}: {error} (it goes with the session)"),
                    );
                }
                Ok(code)
            }
            Ended::Lost { why, code } => {
                let how = match why {
                    Some(why) => format!("while curator was stopped ({why})"),
                    None => "(connection suspended or session expired)".to_owned(),
                };
                Err(CliError::new(
                    codes::LOST,
                    format!(
                        "lock {path} lost {how}; {} stopped (code {code})",
                        child.name()
                    ),
                ))
            }
            Ended::OutputGone { stream, code } => {
                // Nobody can hear about CMD any more (`... 2>&1 | head -1`): a lock that nobody
                // watches over must not outlive its reader.
                let _ = guard.release().await;
                let after = format!(", lock {path} released");
                Err(output_closed(&child, stream, code, &after))
            }
        }
    }
}

/// `: held by <who> session 0x… since …` for the lock's holder, as `curator inspect` reads it
/// (its lowest lock node: the identity in its data, its session, its creation time), or
/// `: lock-delay of a failed holder …` when nobody holds it but a failed holder's lock-delay
/// runs; nothing when it cannot be read within `within` or the lock is free.
async fn held_by(client: &CuratorFramework, path: &str, within: Duration) -> String {
    let Ok(Ok(report)) = tokio::time::timeout(within, curator_inspect::inspect(client, path)).await
    else {
        return String::new();
    };
    if let Some(holder) = report.holders.first() {
        return format!(": held by {holder}");
    }
    report
        .lock_delay
        .iter()
        .flatten()
        .find(|line| line.failed)
        .map(|line| format!(": lock-delay of a {line}"))
        .unwrap_or_default()
}

/// The lock, as [`supervise`] watches over it.
struct HeldLock<'a> {
    client: &'a CuratorFramework,
    guard: &'a LockGuard,
    path: &'a str,
    /// How long the check after a stop may take (the connection timeout).
    check: Duration,
}

impl Held for HeldLock<'_> {
    async fn lost(&mut self) {
        self.guard.lost().await;
    }

    /// Whether the lock is still ours, as the server sees it: the guard saw no suspension, and
    /// the lock node exists with our session as its owner.
    async fn recheck(&mut self) -> Result<(), String> {
        let suspended = || {
            if self.guard.is_lost() {
                Err("the connection was suspended".to_owned())
            } else {
                Ok(())
            }
        };
        suspended()?;
        still_owned(self.client, self.guard.node_path(), "lock node", self.check).await?;
        // A suspension during the check counts too.
        suspended()
    }

    fn continued(&self) -> (Value, Option<String>) {
        let path = self.path;
        (
            json!({ "path": path }),
            Some(format!("lock {path} still held")),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser;

    use crate::args::Cli;
    use crate::cmd::Command;

    #[test]
    fn lock_takes_a_command_after_the_separator() {
        let cli = Cli::try_parse_from([
            "curator",
            "lock",
            "/l",
            "--timeout",
            "2s",
            "--",
            "echo",
            "-n",
            "hi",
        ])
        .unwrap();
        let Command::Lock(lock) = cli.command else {
            panic!("not a lock command");
        };
        assert_eq!(lock.path, "/l");
        assert_eq!(lock.timeout, Some(Duration::from_secs(2)));
        assert_eq!(lock.lock_delay, None);
        assert_eq!(lock.run.command, ["echo", "-n", "hi"]);
        assert!(Cli::try_parse_from(["curator", "lock", "/l"]).is_err());
    }
}
