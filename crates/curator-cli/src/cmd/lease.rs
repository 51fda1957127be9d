//! `curator lease PATH --for D [--id NAME] -- CMD...`: CMD runs only if the time-boxed lease is
//! won, and never past the lease's interval.

use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_locks::NonBlockingLease;
use nix::sys::signal::Signal;
use serde_json::json;
use tokio::time::Instant;

use crate::args::RunArgs;
use crate::child::{self, Child, ChildEvent, exit_code};
use crate::duration::human;
use crate::exit::{CliError, CliResult, codes};
use crate::output::{self, Stream};
use crate::report::Reporter;
use crate::signals::{self, Signals};

/// Tries the lease at `path` for `duration` as `id`; runs CMD when won.
///
/// The lease is not released when CMD ends: it is "at most one run per interval", so it stays
/// taken until the interval ends. CMD gets SIGTERM `--grace` before the interval's end (at once
/// when the interval is shorter than that) and SIGKILL at its end, as this process sees it (see
/// [`curator_locks::LeaseGrant::deadline`]).
pub(crate) async fn run(
    client: &CuratorFramework,
    report: Reporter,
    path: &str,
    duration: Duration,
    id: Option<String>,
    run: &RunArgs,
) -> CliResult {
    let mut signals = Signals::install()?;
    child::handle_terminal_stops()?;
    let id = id.unwrap_or_else(super::default_id);
    let lease = NonBlockingLease::new(client.clone(), path, &id)
        .map_err(|error| CliError::zk(&format!("lease {path}"), error))?;
    let grant = tokio::select! {
        result = lease.try_acquire(duration) => result.map_err(|error| CliError::zk(&format!("taking lease {path}"), error))?,
        signal = signals.recv() => {
            let _ = report.status("interrupted", json!({ "signal": signal.as_str() }), format!("{signal} while taking lease {path}"));
            return Ok(signals::exit_code(signal));
        }
    };
    let Some(grant) = grant else {
        return Err(CliError::new(
            codes::NOT_WON,
            format!("lease {path} is held by someone else; not running the command"),
        ));
    };
    let deadline = grant.deadline();
    // SIGTERM this long before the end, SIGKILL at the end: CMD is gone when the interval is.
    let term_at = deadline
        .checked_sub(run.grace)
        .unwrap_or(deadline)
        .max(Instant::now());
    if let Err(error) = report.status(
        "acquired",
        json!({
            "path": path,
            "holder": grant.holder(),
            "fencing_token": grant.fencing_token(),
            "until_ms": grant.until_ms(),
        }),
        format!(
            "won lease {path} for {} as {}",
            human(duration),
            grant.holder()
        ),
    ) {
        // Nobody would hear what CMD does: do not start it.
        return Err(error.into());
    }

    let env = [
        ("CURATOR_LEASE_TOKEN", grant.fencing_token().to_string()),
        ("CURATOR_LEASE_UNTIL", grant.until_ms().to_string()),
        ("CURATOR_LEASE_HOLDER", grant.holder().to_owned()),
    ];
    let mut child = Child::spawn(&run.command, &env, run.grace, report).await?;
    output::watch_pipes();
    let until_end = || deadline.saturating_duration_since(Instant::now());
    loop {
        let next = tokio::select! {
            event = child.next() => Next::Child(event),
            () = tokio::time::sleep_until(term_at) => Next::Ending,
            signal = signals.recv() => Next::Signal(signal),
            stream = output::gone() => Next::OutputGone(stream),
        };
        match next {
            Next::Child(ChildEvent::Exited(status)) => {
                let code = exit_code(status);
                let _ = report.status(
                    "exited",
                    json!({ "code": code }),
                    format!(
                        "{} exited with code {code}; lease {path} stays taken until its interval ends",
                        child.name()
                    ),
                );
                return Ok(code);
            }
            Next::Child(ChildEvent::Paused) => {
                // curator was stopped, and CMD with it: CMD goes on only while the interval runs.
                if Instant::now() < term_at {
                    child.resume();
                    let _ = report.status(
                        "continued",
                        json!({ "pid": child.pid(), "path": path }),
                        format!(
                            "continued; lease {path} still runs, {} resumed",
                            child.name()
                        ),
                    );
                }
                // Otherwise the next turn of the loop ends CMD.
            }
            Next::Ending => {
                let status = child.stop(Signal::SIGTERM, until_end()).await;
                return Err(CliError::new(
                    codes::LOST,
                    format!(
                        "lease {path} ends; {} stopped (code {})",
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
                let status = child.stop(signal, run.grace.min(until_end())).await;
                let code = exit_code(status);
                let _ = report.status(
                    "exited",
                    json!({ "code": code }),
                    format!("{} exited with code {code}", child.name()),
                );
                return Ok(code);
            }
            Next::OutputGone(stream) => {
                let status = child
                    .stop(Signal::SIGTERM, run.grace.min(until_end()))
                    .await;
                return Err(CliError::new(
                    codes::OUTPUT_CLOSED,
                    format!(
                        "{} closed: {} stopped (code {})",
                        stream.name(),
                        child.name(),
                        exit_code(status)
                    ),
                ));
            }
        }
    }
}

/// What ended a wait while CMD runs.
enum Next {
    Child(ChildEvent),
    /// The interval is about to end.
    Ending,
    Signal(Signal),
    OutputGone(Stream),
}
