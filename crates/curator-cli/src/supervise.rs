//! CMD run while something is held: `lock`'s lock, `leader`'s leadership, `lease`'s interval,
//! `barrier`'s membership. [`supervise`] watches CMD, the hold, the signals and the output
//! together, and stops CMD when one of them ends it; what is held says how it is lost and
//! checked ([`Held`]), and the command says the rest.

use std::time::Duration;

use curator_framework::CuratorFramework;
use nix::sys::signal::Signal;
use serde_json::{Value, json};

use crate::child::{self, Child, ChildEvent, exit_code};
use crate::cmd::Ctx;
use crate::duration::human;
use crate::exit::{CliError, CliResult, codes};
use crate::output::{self, Stream};
use crate::report::Reporter;
use crate::signals::Signals;

/// What a wrapper sets up before it takes anything: the client, connected once `path` is
/// checked, and from then on SIGINT, SIGTERM and SIGHUP ([`Signals`]) and SIGTSTP
/// ([`child::handle_terminal_stops`]) handled by the wrapper rather than ending it.
///
/// # Errors
/// A bad path or bad settings (exit code 2), no connection (3), or a handler that cannot be
/// installed (1).
pub(crate) async fn prepare<'a>(
    ctx: &'a Ctx,
    path: &str,
) -> CliResult<(&'a CuratorFramework, Signals)> {
    let client = ctx.client_for(path).await?;
    let signals = Signals::install()?;
    child::handle_terminal_stops()?;
    Ok((client, signals))
}

/// What a wrapper holds while CMD runs, as [`supervise`] sees it.
pub(crate) trait Held {
    /// Resolves once it is lost (a lease: once its interval is about to end). Called anew on
    /// every turn of [`supervise`], so dropping it loses nothing.
    async fn lost(&mut self);

    /// Whether it is still held, checked once `curator` runs again after it was stopped (and
    /// CMD with it): `Ok` lets CMD go on; otherwise why not, and CMD is stopped as for a loss.
    async fn recheck(&mut self) -> Result<(), String>;

    /// The `continued` event, once CMD goes on after a stop: its fields besides `pid`, and what
    /// it says between `continued; ` and `, CMD resumed` (`None`: nothing).
    fn continued(&self) -> (Value, Option<String>);

    /// Called when it is lost (`why`: as [`recheck`](Self::recheck) found), before CMD is
    /// stopped.
    fn losing(&mut self, _why: Option<&str>, _cmd: &str) {}

    /// How long CMD gets between SIGTERM and SIGKILL, given `--grace`.
    fn grace(&self, grace: Duration) -> Duration {
        grace
    }

    /// Whether a signal is reported (`interrupted`) before it is passed on to CMD.
    fn reports_signals(&self) -> bool {
        true
    }
}

/// How CMD's run under [`supervise`] ended; CMD has exited in every case.
#[derive(Debug)]
pub(crate) enum Ended {
    /// CMD exited by itself, with this code (the shell's: 128 + N for signal N).
    Exited(u8),
    /// A signal (SIGINT, SIGTERM, SIGHUP) came and was passed on to CMD, which then exited
    /// with this code.
    Interrupted(u8),
    /// What was held was lost (`why`: found so once `curator` ran again after a stop); CMD was
    /// stopped and exited with `code`.
    Lost { why: Option<String>, code: u8 },
    /// The reader of stdout or stderr went away; CMD was stopped and exited with `code`.
    OutputGone { stream: Stream, code: u8 },
}

/// What ended a wait while CMD runs.
enum Next {
    Child(ChildEvent),
    Lost,
    Signal(Signal),
    OutputGone(Stream),
}

/// Runs until CMD is over: it exits, a signal comes (passed on to CMD), what is held is lost,
/// or the output is gone (then CMD is stopped: SIGTERM, and SIGKILL after `held.grace(grace)`).
/// When `curator` was stopped (and CMD with it) and runs again, CMD goes on only once
/// `held.recheck()` says that it still holds.
pub(crate) async fn supervise(
    child: &mut Child,
    held: &mut impl Held,
    signals: &mut Signals,
    report: Reporter,
    grace: Duration,
) -> Ended {
    output::watch_pipes();
    loop {
        let next = tokio::select! {
            event = child.next() => Next::Child(event),
            () = held.lost() => Next::Lost,
            signal = signals.recv() => Next::Signal(signal),
            stream = output::gone() => Next::OutputGone(stream),
        };
        let why = match next {
            Next::Child(ChildEvent::Exited(status)) => return Ended::Exited(exit_code(status)),
            Next::Child(ChildEvent::Paused) => match held.recheck().await {
                Ok(()) => {
                    child.resume();
                    let (mut fields, still) = held.continued();
                    fields["pid"] = json!(child.pid());
                    let still = still.map(|still| format!("{still}, ")).unwrap_or_default();
                    let _ = report.status(
                        "continued",
                        fields,
                        format!("continued; {still}{} resumed", child.name()),
                    );
                    continue;
                }
                Err(why) => Some(why),
            },
            Next::Lost => None,
            Next::Signal(signal) => {
                if held.reports_signals() {
                    let _ = report.status(
                        "interrupted",
                        json!({ "signal": signal.as_str() }),
                        format!("{signal}: stopping {}", child.name()),
                    );
                }
                let status = child.stop(signal, held.grace(grace)).await;
                return Ended::Interrupted(exit_code(status));
            }
            Next::OutputGone(stream) => {
                let status = child.stop(Signal::SIGTERM, held.grace(grace)).await;
                let code = exit_code(status);
                return Ended::OutputGone { stream, code };
            }
        };
        held.losing(why.as_deref(), child.name());
        let code = exit_code(child.stop(Signal::SIGTERM, held.grace(grace)).await);
        return Ended::Lost { why, code };
    }
}

/// Says that CMD exited with `code`: the `exited` event, `CMD exited with code N{after}`.
pub(crate) fn report_exit(report: Reporter, child: &Child, code: u8, after: &str) {
    let _ = report.status(
        "exited",
        json!({ "code": code }),
        format!("{} exited with code {code}{after}", child.name()),
    );
}

/// The error for a reader gone while CMD ran: `STREAM closed: CMD stopped (code N){after}`,
/// exit code 141.
pub(crate) fn output_closed(child: &Child, stream: Stream, code: u8, after: &str) -> CliError {
    CliError::new(
        codes::OUTPUT_CLOSED,
        format!(
            "{} closed: {} stopped (code {code}){after}",
            stream.name(),
            child.name()
        ),
    )
}

/// Whether the ephemeral `node` (a lock's or an election's; `what`, for messages: "lock node")
/// is still this session's, as the server sees it: it exists and its owner is our session, by
/// an `exists` answered within `within`.
///
/// # Errors
/// Why not: the node is gone, it belongs to another session, or the server did not say.
pub(crate) async fn still_owned(
    client: &CuratorFramework,
    node: &str,
    what: &str,
    within: Duration,
) -> Result<(), String> {
    let session = client.session_id();
    let exists = client.check_exists().for_path(node);
    let stat = match tokio::time::timeout(within, exists).await {
        Ok(Ok(stat)) => stat,
        Ok(Err(error)) => return Err(format!("checking the {what}: {error}")),
        Err(_) => return Err(format!("no answer from ZooKeeper within {}", human(within))),
    };
    match stat {
        None => Err(format!("the {what} is gone")),
        Some(stat) if Some(stat.ephemeral_owner) != session => {
            Err(format!("the {what} belongs to another session"))
        }
        Some(_) => Ok(()),
    }
}
