//! `curator leader PATH [--id ID] -- CMD...`: CMD runs only while this process leads, with the
//! leadership's epoch in `$CURATOR_LEADER_EPOCH` and the latch node in `$CURATOR_LEADER_NODE`.

use std::time::{Duration, Instant};

use clap::Args;
use curator_election::{CloseMode, LatchEvent, LeaderLatch};
use curator_framework::CuratorFramework;
use curator_framework::listen::ListenerStream;
use futures::StreamExt;
use nix::sys::signal::Signal;
use serde_json::json;

use super::{Ctx, Run};
use crate::args::{RunArgs, Session, Takes, parse_id};
use crate::child::{self, Child, ChildEvent, exit_code};
use crate::duration::{human, parse_duration};
use crate::exit::{CliError, CliResult, codes};
use crate::output::{self, Stream};
use crate::report::Reporter;
use crate::signals::{self, Signals};
use crate::spinner::Spinner;

/// Run CMD only while this process leads the election at PATH (Curator's LeaderLatch)
#[derive(Debug, Args)]
pub(crate) struct Leader {
    /// The election's path
    path: String,
    /// This participant's id (default: host name and process id)
    #[arg(long, value_parser = parse_id)]
    id: Option<String>,
    /// Give up (exit code 4) when not leader within D the first time
    #[arg(long, value_parser = parse_duration, value_name = "D")]
    timeout: Option<Duration>,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    session: Session,
}

impl Run for Leader {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let client = ctx.client_for(&self.path).await?;
        let check = ctx.settings.connection_timeout;
        let Leader { path, id, timeout, run, .. } = self;
        join(client, ctx.report, &path, id, timeout, &run, check).await
    }
}

async fn join(
    client: &CuratorFramework,
    report: Reporter,
    path: &str,
    id: Option<String>,
    timeout: Option<Duration>,
    run: &RunArgs,
    check: Duration,
) -> CliResult {
    let mut signals = Signals::install()?;
    child::handle_terminal_stops()?;
    let id = id.unwrap_or_else(super::default_id);
    let latch = LeaderLatch::builder(client.clone(), path, id.clone())
        .close_mode(CloseMode::Silent)
        .build()
        .map_err(|error| CliError::zk(&format!("election {path}"), error))?;
    latch
        .start()
        .await
        .map_err(|error| CliError::zk(&format!("joining election {path}"), error))?;
    if let Err(error) = report.status(
        "joined",
        json!({ "path": path, "id": id }),
        format!("joined election {path} as {id}"),
    ) {
        let _ = latch.close().await;
        return Err(error.into());
    }

    let election = Election {
        client,
        latch: &latch,
        path,
        id: &id,
        check,
    };
    let code = lead(&election, report, timeout, run, &mut signals).await;
    let _ = latch.close().await;
    code
}

/// What `lead` works on.
struct Election<'a> {
    client: &'a CuratorFramework,
    latch: &'a LeaderLatch,
    path: &'a str,
    id: &'a str,
    /// How long a check of our node may take (the connection timeout).
    check: Duration,
}

/// How long to wait before looking at our node again when the latch says we lead but the server
/// does not show our node on our session (the latch hears of it shortly).
const RECHECK: Duration = Duration::from_millis(500);

async fn lead(
    election: &Election<'_>,
    report: Reporter,
    timeout: Option<Duration>,
    run: &RunArgs,
    signals: &mut Signals,
) -> CliResult {
    let Election {
        client,
        latch,
        path,
        id,
        ..
    } = *election;
    // Subscribed before the first look at `has_leadership`, so no later loss goes unheard.
    let mut events = latch.listenable().stream();
    // Only the first wait is bounded by --timeout.
    let mut deadline = timeout.map(|timeout| Instant::now() + timeout);
    loop {
        if let Some(code) =
            wait_to_lead(election, report, &mut events, deadline, timeout, signals).await?
        {
            return Ok(code);
        }
        deadline = None;
        // The epoch of this leadership (the latch node's czxid, as `lock`'s fencing token):
        // greater than every earlier leadership's on the path.
        let (Some(epoch), Some(node)) = (latch.leader_epoch(), latch.hold()) else {
            // Lost since the check: wait to lead again.
            continue;
        };
        // The session tells a reader whether this is a new term on a new session.
        let session = format!("{:#x}", client.session_id().unwrap_or(0));
        // Nobody would hear what CMD does: do not start it (`run` leaves the election).
        report.status(
            "leading",
            json!({ "path": path, "id": id, "session": session, "epoch": epoch, "node": node.node_path() }),
            format!("{id} leads {path} (epoch {epoch})"),
        )?;
        // The epoch for CMD to hand to what it changes, as a fencing token (see the README).
        let env = [
            ("CURATOR_LEADER_EPOCH", epoch.to_string()),
            ("CURATOR_LEADER_NODE", node.node_path().to_owned()),
        ];
        let mut child = Child::spawn(&run.command, &env, run.grace, report).await?;
        output::watch_pipes();
        loop {
            let next = tokio::select! {
                event = child.next() => Next::Child(event),
                event = events.next() => Next::Latch(event.is_some()),
                signal = signals.recv() => Next::Signal(signal),
                stream = output::gone() => Next::OutputGone(stream),
            };
            // `Some(why)`: lost while curator was stopped.
            let why = match next {
                Next::Child(ChildEvent::Exited(status)) => {
                    let code = exit_code(status);
                    let _ = report.status(
                        "exited",
                        json!({ "code": code }),
                        format!(
                            "{} exited with code {code}; leaving the election",
                            child.name()
                        ),
                    );
                    return Ok(code);
                }
                Next::Child(ChildEvent::Paused) => {
                    // curator was stopped, and CMD with it; meanwhile the session may have
                    // expired and another participant taken over. CMD goes on only if we still
                    // lead on our node, as the server shows it.
                    match still_leading(election).await {
                        Ok(()) => {
                            child.resume();
                            let _ = report.status(
                                "continued",
                                json!({ "pid": child.pid(), "path": path, "id": id }),
                                format!(
                                    "continued; {id} still leads {path}, {} resumed",
                                    child.name()
                                ),
                            );
                            continue;
                        }
                        Err(why) => Some(why),
                    }
                }
                Next::Latch(false) => {
                    child.stop(Signal::SIGTERM, run.grace).await;
                    return Err(CliError::new(
                        codes::OTHER,
                        format!("the election at {path} stopped"),
                    ));
                }
                // A stale event, or leadership already regained on the same node.
                Next::Latch(true) if latch.has_leadership() => continue,
                Next::Latch(true) => None,
                Next::Signal(signal) => {
                    let _ = report.status(
                        "interrupted",
                        json!({ "signal": signal.as_str() }),
                        format!("{signal}: stopping {}", child.name()),
                    );
                    let status = child.stop(signal, run.grace).await;
                    let code = exit_code(status);
                    let _ = report.status(
                        "exited",
                        json!({ "code": code }),
                        format!(
                            "{} exited with code {code}; leaving the election",
                            child.name()
                        ),
                    );
                    return Ok(code);
                }
                Next::OutputGone(stream) => {
                    // Nobody can hear about CMD any more: stop it and leave the election.
                    let status = child.stop(Signal::SIGTERM, run.grace).await;
                    return Err(CliError::new(
                        codes::OUTPUT_CLOSED,
                        format!(
                            "{} closed: {} stopped (code {}), leaving election {path}",
                            stream.name(),
                            child.name(),
                            exit_code(status)
                        ),
                    ));
                }
            };
            let why = why.map_or_else(String::new, |why| {
                format!(" while curator was stopped ({why})")
            });
            let _ = report.status(
                "lost",
                json!({ "path": path, "id": id }),
                format!("leadership of {path} lost{why}; stopping {}", child.name()),
            );
            let code = exit_code(child.stop(Signal::SIGTERM, run.grace).await);
            let _ = report.status(
                "stopped",
                json!({ "code": code }),
                format!(
                    "{} stopped (code {code}); waiting to lead again",
                    child.name()
                ),
            );
            break;
        }
    }
}

/// What ended a wait while CMD runs.
enum Next {
    Child(ChildEvent),
    /// A latch event (`false`: the latch's events ended).
    Latch(bool),
    Signal(Signal),
    OutputGone(Stream),
}

/// Waits until this participant leads, as the latch says and the server confirms (see
/// [`still_leading`]); until `deadline` if given. `Some(code)` when a signal ended the wait.
async fn wait_to_lead(
    election: &Election<'_>,
    report: Reporter,
    events: &mut ListenerStream<LatchEvent>,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
    signals: &mut Signals,
) -> CliResult<Option<u8>> {
    let Election { latch, path, .. } = *election;
    let _spinner = Spinner::start(format!("waiting to lead {path}"), report.json);
    let timed_out = || {
        CliError::timeout(format!(
            "not leader of {path} within {}",
            human(timeout.unwrap_or_default())
        ))
    };
    let interrupted = |signal: Signal| {
        let _ = report.status(
            "interrupted",
            json!({ "signal": signal.as_str() }),
            format!("{signal} while waiting to lead {path}"),
        );
        Ok(Some(signals::exit_code(signal)))
    };
    loop {
        if !latch.has_leadership() {
            let wait = async {
                match deadline {
                    Some(deadline) => {
                        tokio::time::timeout_at(deadline.into(), latch.await_leadership())
                            .await
                            .unwrap_or(Ok(()))
                    }
                    None => latch.await_leadership().await,
                }
            };
            tokio::select! {
                result = wait => result.map_err(|error| CliError::zk(&format!("election {path}"), error))?,
                signal = signals.recv() => return interrupted(signal),
            }
            if !latch.has_leadership() {
                return Err(timed_out());
            }
        }
        if still_leading(election).await.is_ok() {
            return Ok(None);
        }
        // The latch has not heard yet: wait for it, or look again shortly.
        tokio::select! {
            _ = events.next() => {}
            () = tokio::time::sleep(RECHECK) => {}
            signal = signals.recv() => return interrupted(signal),
        }
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            return Err(timed_out());
        }
    }
}

/// Whether this participant leads, as the server sees it: the latch says so, and its node exists
/// with our session as its owner (an `exists` answered by the server within the check timeout).
async fn still_leading(election: &Election<'_>) -> Result<(), String> {
    let Election {
        client,
        latch,
        check,
        ..
    } = *election;
    if !latch.has_leadership() {
        return Err("leadership was lost".to_owned());
    }
    let Some(node) = latch.node_path() else {
        return Err("no election node".to_owned());
    };
    let session = client.session_id();
    let exists = client.check_exists().for_path(&node);
    let stat = match tokio::time::timeout(check, exists).await {
        Ok(Ok(stat)) => stat,
        Ok(Err(error)) => return Err(format!("checking the election node: {error}")),
        Err(_) => return Err(format!("no answer from ZooKeeper within {}", human(check))),
    };
    match stat {
        None => Err("the election node is gone".to_owned()),
        Some(stat) if Some(stat.ephemeral_owner) != session => {
            Err("the election node belongs to another session".to_owned())
        }
        Some(_) if !latch.has_leadership() => Err("leadership was lost".to_owned()),
        Some(_) => Ok(()),
    }
}
