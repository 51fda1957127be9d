//! `curator barrier PATH --members N [-- CMD...]`: enter, run CMD (or wait for Enter), leave.

use std::time::Duration;

use clap::Args;

use curator_barriers::DistributedDoubleBarrier;
use curator_framework::CuratorFramework;
use nix::sys::signal::Signal;
use serde_json::json;

use super::{Ctx, Run};
use crate::child::{self, Child, ChildEvent, exit_code};
use crate::duration::{human, parse_duration};
use crate::args::{Session, Takes};
use crate::exit::{CliError, CliResult, codes};
use crate::output;
use crate::report::Reporter;
use crate::signals::{self, Signals};
use crate::spinner::Spinner;

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
        let client = ctx.client_for(&self.path).await?;
        let Barrier { path, members, timeout, grace, command, .. } = self;
        meet(client, ctx.report, &path, members, timeout, grace, &command).await
    }
}

async fn meet(
    client: &CuratorFramework,
    report: Reporter,
    path: &str,
    members: u32,
    timeout: Option<Duration>,
    grace: Duration,
    command: &[String],
) -> CliResult {
    let mut signals = Signals::install()?;
    child::handle_terminal_stops()?;
    let barrier = DistributedDoubleBarrier::new(client.clone(), path, members as usize)
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
        tokio::select! {
            result = enter => result.map_err(|error| CliError::zk(&format!("entering barrier {path}"), error))?,
            signal = signals.recv() => {
                let _ = report.status("interrupted", json!({ "signal": signal.as_str() }), format!("{signal} while entering barrier {path}"));
                return Ok(signals::exit_code(signal));
            }
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
        let mut child = Child::spawn(command, &[], grace, report).await?;
        loop {
            tokio::select! {
                event = child.next() => match event {
                    ChildEvent::Exited(status) => break exit_code(status),
                    ChildEvent::Paused => {
                        // A barrier holds nothing exclusive: CMD goes on with curator.
                        child.resume();
                        let _ = report.status(
                            "continued",
                            json!({ "pid": child.pid(), "path": path }),
                            format!("continued; {} resumed", child.name()),
                        );
                    }
                },
                signal = signals.recv() => break exit_code(child.stop(signal, grace).await),
                stream = output::gone() => {
                    // Nobody can hear about CMD any more: stop it and go (without waiting for
                    // the others to leave; the member node goes with the session).
                    let status = child.stop(Signal::SIGTERM, grace).await;
                    return Err(CliError::new(
                        codes::OUTPUT_CLOSED,
                        format!(
                            "{} closed: {} stopped (code {}), leaving barrier {path}",
                            stream.name(),
                            child.name(),
                            exit_code(status)
                        ),
                    ));
                }
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
        tokio::select! {
            result = leave => result.map_err(|error| CliError::zk(&format!("leaving barrier {path}"), error))?,
            signal = signals.recv() => {
                let _ = report.status("interrupted", json!({ "signal": signal.as_str() }), format!("{signal} while leaving barrier {path}"));
                return Ok(signals::exit_code(signal));
            }
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
