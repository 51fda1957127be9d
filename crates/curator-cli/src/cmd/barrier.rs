//! `curator barrier PATH --members N [-- CMD...]`: enter, run CMD (or wait for Enter), leave.

use std::time::Duration;

use curator_barriers::DistributedDoubleBarrier;
use curator_framework::CuratorFramework;
use serde_json::json;

use crate::child::{Child, exit_code};
use crate::duration::human;
use crate::exit::{CliError, CliResult, codes};
use crate::report::Reporter;
use crate::signals::{self, Signals};
use crate::spinner::Spinner;

pub(crate) async fn run(
    client: &CuratorFramework,
    report: Reporter,
    path: &str,
    members: u32,
    timeout: Option<Duration>,
    grace: Duration,
    command: &[String],
) -> CliResult {
    let mut signals = Signals::install()?;
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
                report.status("interrupted", json!({ "signal": signal.as_str() }), format!("{signal} while entering barrier {path}"));
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
    report.status(
        "entered",
        json!({ "path": path, "members": members }),
        format!("all {members} members entered {path}"),
    );

    let code = if command.is_empty() {
        if !report.json {
            eprintln!("curator: press Enter (or end the input) to leave");
        }
        let line = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
        });
        tokio::select! {
            _ = line => codes::OK,
            signal = signals.recv() => signals::exit_code(signal),
        }
    } else {
        let mut child = Child::spawn(command)?;
        tokio::select! {
            status = child.wait() => exit_code(status),
            signal = signals.recv() => exit_code(child.stop(signal, grace).await),
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
                report.status("interrupted", json!({ "signal": signal.as_str() }), format!("{signal} while leaving barrier {path}"));
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
    report.status(
        "left",
        json!({ "path": path, "code": code }),
        format!("all members left {path}"),
    );
    Ok(code)
}
