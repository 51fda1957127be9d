//! `curator barrier PATH --members N [-- CMD...]`: enter, run CMD (or wait for Enter), leave.

use std::time::Duration;

use clap::Args;
use curator_barriers::DistributedDoubleBarrier;
use serde_json::{Value, json};

use super::{Ctx, Run};
use crate::args::{Session, Takes};
use crate::child::Child;
use crate::duration::{human, parse_duration};
use crate::exit::{CliError, CliResult, codes};
use crate::output;
use crate::signals;
use crate::spinner::Spinner;
use crate::supervise::{Ended, Held, prepare, output_closed, supervise};

/// Enter the double barrier at PATH with N members, run CMD (or wait for Enter), then leave
#[derive(Debug, Args)]
pub(crate) struct Barrier {
    /// The barrier's path
    path: String,
    /// How many members the barrier waits for
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    members: u32,
    /// Give up (exit code 4) when the barrier does not open (or close) within D
    #[arg(long, value_parser = parse_duration, value_name = "D")]
    timeout: Option<Duration>,
    /// After SIGTERM, how long CMD gets before SIGKILL
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "D")]
    grace: Duration,
    /// The command to run inside the barrier (without one: wait for Enter or end of input)
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
    #[command(flatten)]
    session: Session,
}

impl Run for Barrier {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let Barrier {
            path,
            members,
            timeout,
            grace,
            command,
            ..
        } = self;
        let (client, mut signals) = prepare(ctx, &path).await?;
        let report = ctx.report;
        let barrier = DistributedDoubleBarrier::new(client.clone(), &path, members as usize)
            .map_err(|error| CliError::zk(&format!("barrier {path}"), error))?;

        let entered = {
            let _spinner = Spinner::start(
                format!("waiting for {members} members at {path}"),
                report.json,
            );
            let enter = async {
                match timeout {
                    Some(timeout) => barrier.enter_timeout(timeout).await,
                    None => barrier.enter().await.map(|()| true),
                }
            };
            let entering = format!("entering barrier {path}");
            match signals.unless_interrupted(report, &entering, enter).await {
                Ok(entered) => entered.map_err(|error| CliError::zk(&entering, error))?,
                Err(code) => return Ok(code),
            }
        };
        if !entered {
            return Err(CliError::timeout(format!(
                "barrier {path}: {members} members did not arrive within {}",
                human(timeout.unwrap_or_default())
            )));
        }
        // Nobody would hear what happens inside: do not start CMD. (The member node goes with the
        // session, which `curator` closes on its way out.)
        report.status(
            "entered",
            json!({ "path": path, "members": members }),
            format!("all {members} members entered {path}"),
        )?;

        output::watch_pipes();
        let code = if command.is_empty() {
            if !report.json {
                output::err("curator: press Enter (or end the input) to leave")?;
            }
            let line = tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                let _ = std::io::stdin().read_line(&mut line);
            });
            tokio::select! {
                _ = line => codes::OK,
                signal = signals.recv() => signals::exit_code(signal),
                _ = output::gone() => return Err(CliError::output_closed()),
            }
        } else {
            let mut child = Child::spawn(&command, &[], grace, report).await?;
            let mut membership = Membership { path: &path };
            match supervise(&mut child, &mut membership, &mut signals, report, grace).await {
                // `Lost` does not come: see `Membership`.
                Ended::Exited(code) | Ended::Interrupted(code) | Ended::Lost { code, .. } => code,
                Ended::OutputGone { stream, code } => {
                    // Nobody can hear about CMD any more: stop it and go (without waiting for
                    // the others to leave; the member node goes with the session).
                    let after = format!(", leaving barrier {path}");
                    return Err(output_closed(&child, stream, code, &after));
                }
            }
        };

        let left = {
            let _spinner = Spinner::start(
                format!("waiting for all members to leave {path}"),
                report.json,
            );
            let leave = async {
                match timeout {
                    Some(timeout) => barrier.leave_timeout(timeout).await,
                    None => barrier.leave().await.map(|()| true),
                }
            };
            let leaving = format!("leaving barrier {path}");
            match signals.unless_interrupted(report, &leaving, leave).await {
                Ok(left) => left.map_err(|error| CliError::zk(&leaving, error))?,
                Err(code) => return Ok(code),
            }
        };
        if !left {
            return Err(CliError::timeout(format!(
                "barrier {path}: the other members did not leave within {}",
                human(timeout.unwrap_or_default())
            )));
        }
        let _ = report.status(
            "left",
            json!({ "path": path, "code": code }),
            format!("all members left {path}"),
        );
        Ok(code)
    }
}

/// This process's place in the barrier, as [`supervise`] watches over it: a member holds
/// nothing exclusive (a member whose session expires leaves the barrier by itself, and the
/// others are not held up by it), so CMD goes on with `curator` after a stop.
struct Membership<'a> {
    path: &'a str,
}

impl Held for Membership<'_> {
    /// Never.
    async fn lost(&mut self) {
        std::future::pending().await
    }

    async fn recheck(&mut self) -> Result<(), String> {
        Ok(())
    }

    fn continued(&self) -> (Value, Option<String>) {
        (json!({ "path": self.path }), None)
    }

    /// A signal goes on to CMD unannounced; `curator` then leaves the barrier.
    fn reports_signals(&self) -> bool {
        false
    }
}
