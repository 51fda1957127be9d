//! `curator lock PATH [--timeout D] -- CMD...`: CMD runs while the distributed lock is held.

use std::time::Duration;

use clap::Args;

use curator_framework::CuratorFramework;
use curator_locks::{InterProcessMutex, LockGuard};
use nix::sys::signal::Signal;
use serde_json::json;

use super::{Ctx, Run};
use crate::args::{RunArgs, Session, Takes};
use crate::child::{self, Child, ChildEvent, exit_code};
use crate::duration::{human, parse_duration};
use crate::exit::{CliError, CliResult, codes};
use crate::output::{self, Stream};
use crate::report::Reporter;
use crate::signals::{self, Signals};
use crate::spinner::Spinner;

/// Run CMD while holding the distributed lock at PATH (Curator's InterProcessMutex)
///
/// CMD gets the lock's fencing token in $CURATOR_FENCING_TOKEN (and the lock node in
/// $CURATOR_LOCK_NODE). It can hand the token to what it changes, or pass a fencing gate
/// first: `curator fence /gates/db "$CURATOR_FENCING_TOKEN" && write-to-db` refuses a holder
/// whose lock was lost and taken by someone newer.
#[derive(Debug, Args)]
pub(crate) struct Lock {
    /// The lock's path
    path: String,
    /// Give up (exit code 4) when the lock is not had within D
    #[arg(long, value_parser = parse_duration, value_name = "D")]
    timeout: Option<Duration>,
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
        let client = ctx.client_for(&self.path).await?;
        // How long the check, after curator was stopped, that the lock is still ours may take.
        let check = ctx.settings.connection_timeout;
        hold(client, ctx.report, &self.path, self.timeout, &self.run, check).await
    }
}

/// Runs CMD under the lock at `path`; `check` bounds the check, after curator was stopped, that
/// the lock is still ours (see [`still_held`]).
async fn hold(
    client: &CuratorFramework,
    report: Reporter,
    path: &str,
    timeout: Option<Duration>,
    run: &RunArgs,
    check: Duration,
) -> CliResult {
    let mut signals = Signals::install()?;
    child::handle_terminal_stops()?;
    let mutex = InterProcessMutex::builder(client.clone(), path)
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
        tokio::select! {
            result = acquire => result.map_err(|error| CliError::zk(&format!("acquiring lock {path}"), error))?,
            signal = signals.recv() => {
                // Dropping the acquisition leaves no lock node behind.
                let _ = report.status("interrupted", json!({ "signal": signal.as_str() }), format!("{signal} while waiting for lock {path}"));
                return Ok(signals::exit_code(signal));
            }
        }
    };
    let Some(guard) = guard else {
        let timeout = timeout.unwrap_or_default();
        let holder = held_by(client, path, check).await;
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
    ];
    let mut child = match Child::spawn(&run.command, &env, run.grace, report).await {
        Ok(child) => child,
        Err(error) => {
            let _ = guard.release().await;
            return Err(error);
        }
    };
    output::watch_pipes();
    loop {
        let next = tokio::select! {
            event = child.next() => Next::Child(event),
            () = guard.lost() => Next::Lost,
            signal = signals.recv() => Next::Signal(signal),
            stream = output::gone() => Next::OutputGone(stream),
        };
        match next {
            Next::Child(ChildEvent::Exited(status)) => {
                let code = exit_code(status);
                let released = guard.release().await;
                let _ = report.status(
                    "exited",
                    json!({ "code": code }),
                    format!("{} exited with code {code}; lock released", child.name()),
                );
                if let Err(error) = released {
                    let _ = report.status(
                        "release_failed",
                        json!({ "error": error.to_string() }),
                        format!("releasing lock {path}: {error} (it goes with the session)"),
                    );
                }
                return Ok(code);
            }
            Next::Child(ChildEvent::Paused) => {
                // curator was stopped, and CMD with it; while both stood still the session may
                // have expired and another process taken the lock. CMD goes on only if the
                // server still shows our lock node, owned by our session.
                match still_held(client, &guard, check).await {
                    Ok(()) => {
                        child.resume();
                        let _ = report.status(
                            "continued",
                            json!({ "pid": child.pid(), "path": path }),
                            format!(
                                "continued; lock {path} still held, {} resumed",
                                child.name()
                            ),
                        );
                    }
                    Err(why) => {
                        let status = child.stop(Signal::SIGTERM, run.grace).await;
                        return Err(CliError::new(
                            codes::LOST,
                            format!(
                                "lock {path} lost while curator was stopped ({why}); {} stopped (code {})",
                                child.name(),
                                exit_code(status)
                            ),
                        ));
                    }
                }
            }
            Next::Lost => {
                let status = child.stop(Signal::SIGTERM, run.grace).await;
                return Err(CliError::new(
                    codes::LOST,
                    format!(
                        "lock {path} lost (connection suspended or session expired); {} stopped (code {})",
                        child.name(),
                        exit_code(status)
                    ),
                ));
            }
            Next::Signal(signal) => {
                let _ = report.status(
                    "interrupted",
                    json!({ "signal": signal.as_str() }),
                    format!("{signal}: stopping {}", child.name()),
                );
                let status = child.stop(signal, run.grace).await;
                let _ = guard.release().await;
                let code = exit_code(status);
                let _ = report.status(
                    "exited",
                    json!({ "code": code }),
                    format!("{} exited with code {code}; lock released", child.name()),
                );
                return Ok(code);
            }
            Next::OutputGone(stream) => {
                // Nobody can hear about CMD any more (`... 2>&1 | head -1`): a lock that nobody
                // watches over must not outlive its reader.
                let status = child.stop(Signal::SIGTERM, run.grace).await;
                let _ = guard.release().await;
                return Err(CliError::new(
                    codes::OUTPUT_CLOSED,
                    format!(
                        "{} closed: {} stopped (code {}), lock {path} released",
                        stream.name(),
                        child.name(),
                        exit_code(status)
                    ),
                ));
            }
        }
    }
}

/// `: held by <who> session 0x… since …` for the lock's holder, as `curator inspect` reads it
/// (its lowest lock node: the identity in its data, its session, its creation time); nothing
/// when it cannot be read within `within` or nobody holds the lock any more.
async fn held_by(client: &CuratorFramework, path: &str, within: Duration) -> String {
    match tokio::time::timeout(within, curator_inspect::inspect(client, path)).await {
        Ok(Ok(report)) => report
            .holders
            .first()
            .map(|holder| format!(": held by {holder}"))
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// What ended a wait while CMD runs.
enum Next {
    Child(ChildEvent),
    Lost,
    Signal(Signal),
    OutputGone(Stream),
}

/// Whether the lock is still ours, as the server sees it: the guard saw no suspension, and the
/// lock node exists with our session as its owner (an `exists` answered by the server within
/// `within`).
async fn still_held(
    client: &CuratorFramework,
    guard: &LockGuard,
    within: Duration,
) -> Result<(), String> {
    if guard.is_lost() {
        return Err("the connection was suspended".to_owned());
    }
    let session = client.session_id();
    let exists = client.check_exists().for_path(guard.node_path());
    let stat = match tokio::time::timeout(within, exists).await {
        Ok(Ok(stat)) => stat,
        Ok(Err(error)) => return Err(format!("checking the lock node: {error}")),
        Err(_) => return Err(format!("no answer from ZooKeeper within {}", human(within))),
    };
    match stat {
        None => Err("the lock node is gone".to_owned()),
        Some(stat) if Some(stat.ephemeral_owner) != session => {
            Err("the lock node belongs to another session".to_owned())
        }
        // A suspension during the check counts too.
        Some(_) if guard.is_lost() => Err("the connection was suspended".to_owned()),
        Some(_) => Ok(()),
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
        assert_eq!(lock.run.command, ["echo", "-n", "hi"]);
        assert!(Cli::try_parse_from(["curator", "lock", "/l"]).is_err());
    }
}
