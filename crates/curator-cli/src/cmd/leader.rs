//! `curator leader PATH [--id ID] -- CMD...`: CMD runs only while this process leads, with the
//! leadership's epoch in `$CURATOR_LEADER_EPOCH` and the latch node in `$CURATOR_LEADER_NODE`.

use std::time::{Duration, Instant};

use clap::Args;
use curator_election::{CloseMode, LatchEvent, LeaderLatch};
use curator_framework::CuratorFramework;
use curator_framework::listen::ListenerStream;
use futures::StreamExt;
use serde_json::{Value, json};

use super::{Ctx, Run};
use crate::args::{RunArgs, Session, Takes, parse_id};
use crate::child::Child;
use crate::duration::{human, parse_duration};
use crate::exit::{CliError, CliResult, codes};
use crate::report::Reporter;
use crate::signals::Signals;
use crate::spinner::Spinner;
use crate::supervise::{Ended, Held, prepare, output_closed, report_exit, still_owned, supervise};

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
        let Leader {
            path,
            id,
            timeout,
            run,
            ..
        } = self;
        let (client, mut signals) = prepare(ctx, &path).await?;
        let report = ctx.report;
        let id = id.unwrap_or_else(super::default_id);
        let latch = LeaderLatch::builder(client.clone(), &path, id.clone())
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
            path: &path,
            id: &id,
            check: ctx.settings.connection_timeout,
            report,
        };
        let code = election.lead(timeout, &run, &mut signals).await;
        let _ = latch.close().await;
        code
    }
}

/// The election this process takes part in.
struct Election<'a> {
    client: &'a CuratorFramework,
    latch: &'a LeaderLatch,
    path: &'a str,
    id: &'a str,
    /// How long a check of our node may take (the connection timeout).
    check: Duration,
    report: Reporter,
}

/// How long to wait before looking at our node again when the latch says we lead but the server
/// does not show our node on our session (the latch hears of it shortly).
const RECHECK: Duration = Duration::from_millis(500);

impl Election<'_> {
    /// Runs CMD for each term this process leads, until CMD exits by itself, a signal comes, or
    /// the output is gone; between terms, waits to lead again.
    async fn lead(
        &self,
        timeout: Option<Duration>,
        run: &RunArgs,
        signals: &mut Signals,
    ) -> CliResult {
        let Election {
            client,
            latch,
            path,
            id,
            report,
            ..
        } = *self;
        // Subscribed before the first look at `has_leadership`, so no later loss goes unheard.
        let mut events = latch.listenable().stream();
        // Only the first wait is bounded by --timeout.
        let mut deadline = timeout.map(|timeout| Instant::now() + timeout);
        loop {
            if let Some(code) = self
                .wait_to_lead(&mut events, deadline, timeout, signals)
                .await?
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
            let mut leading = Leading {
                election: self,
                events: &mut events,
                stopped: false,
            };
            match supervise(&mut child, &mut leading, signals, report, run.grace).await {
                Ended::Exited(code) | Ended::Interrupted(code) => {
                    report_exit(report, &child, code, "; leaving the election");
                    return Ok(code);
                }
                Ended::Lost { .. } if leading.stopped => {
                    return Err(CliError::new(
                        codes::OTHER,
                        format!("the election at {path} stopped"),
                    ));
                }
                Ended::Lost { code, .. } => {
                    let _ = report.status(
                        "stopped",
                        json!({ "code": code }),
                        format!(
                            "{} stopped (code {code}); waiting to lead again",
                            child.name()
                        ),
                    );
                }
                Ended::OutputGone { stream, code } => {
                    // Nobody can hear about CMD any more: stop it and leave the election.
                    let after = format!(", leaving election {path}");
                    return Err(output_closed(&child, stream, code, &after));
                }
            }
        }
    }

    /// Waits until this participant leads, as the latch says and the server confirms (see
    /// [`still_leading`](Self::still_leading)); until `deadline` if given. `Some(code)` when a
    /// signal ended the wait.
    async fn wait_to_lead(
        &self,
        events: &mut ListenerStream<LatchEvent>,
        deadline: Option<Instant>,
        timeout: Option<Duration>,
        signals: &mut Signals,
    ) -> CliResult<Option<u8>> {
        let Election {
            latch,
            path,
            report,
            ..
        } = *self;
        let _spinner = Spinner::start(format!("waiting to lead {path}"), report.json);
        let waiting = format!("waiting to lead {path}");
        let timed_out = || {
            CliError::timeout(format!(
                "not leader of {path} within {}",
                human(timeout.unwrap_or_default())
            ))
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
                match signals.unless_interrupted(report, &waiting, wait).await {
                    Ok(waited) => waited
                        .map_err(|error| CliError::zk(&format!("election {path}"), error))?,
                    Err(code) => return Ok(Some(code)),
                }
                if !latch.has_leadership() {
                    return Err(timed_out());
                }
            }
            if self.still_leading().await.is_ok() {
                return Ok(None);
            }
            // The latch has not heard yet: wait for it, or look again shortly.
            let heard = async {
                tokio::select! {
                    _ = events.next() => {}
                    () = tokio::time::sleep(RECHECK) => {}
                }
            };
            if let Err(code) = signals.unless_interrupted(report, &waiting, heard).await {
                return Ok(Some(code));
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Err(timed_out());
            }
        }
    }

    /// Whether this participant leads, as the server sees it: the latch says so, and its node
    /// exists with our session as its owner.
    async fn still_leading(&self) -> Result<(), String> {
        let lost = || Err("leadership was lost".to_owned());
        if !self.latch.has_leadership() {
            return lost();
        }
        let Some(node) = self.latch.node_path() else {
            return Err("no election node".to_owned());
        };
        still_owned(self.client, &node, "election node", self.check).await?;
        if self.latch.has_leadership() {
            Ok(())
        } else {
            lost()
        }
    }
}

/// A term of leadership, as [`supervise`] watches over it.
struct Leading<'a> {
    election: &'a Election<'a>,
    /// The latch's events.
    events: &'a mut ListenerStream<LatchEvent>,
    /// Whether the latch's events ended (the election stopped).
    stopped: bool,
}

impl Held for Leading<'_> {
    async fn lost(&mut self) {
        loop {
            match self.events.next().await {
                None => {
                    self.stopped = true;
                    return;
                }
                // A stale event, or leadership already regained on the same node.
                Some(_) if self.election.latch.has_leadership() => {}
                Some(_) => return,
            }
        }
    }

    async fn recheck(&mut self) -> Result<(), String> {
        self.election.still_leading().await
    }

    fn continued(&self) -> (Value, Option<String>) {
        let Election { path, id, .. } = *self.election;
        (
            json!({ "path": path, "id": id }),
            Some(format!("{id} still leads {path}")),
        )
    }

    fn losing(&mut self, why: Option<&str>, cmd: &str) {
        if self.stopped {
            return;
        }
        let Election {
            path, id, report, ..
        } = *self.election;
        let why = why.map_or_else(String::new, |why| {
            format!(" while curator was stopped ({why})")
        });
        let _ = report.status(
            "lost",
            json!({ "path": path, "id": id }),
            format!("leadership of {path} lost{why}; stopping {cmd}"),
        );
    }
}
