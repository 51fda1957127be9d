//! `curator leader PATH [--id ID] -- CMD...`: CMD runs only while this process leads.

use std::time::Duration;

use curator_election::{CloseMode, LeaderLatch};
use curator_framework::CuratorFramework;
use futures::StreamExt;
use nix::sys::signal::Signal;
use serde_json::json;

use crate::args::RunArgs;
use crate::child::{Child, exit_code};
use crate::duration::human;
use crate::exit::{CliError, CliResult, codes};
use crate::output;
use crate::report::Reporter;
use crate::signals::{self, Signals};
use crate::spinner::Spinner;

pub(crate) async fn run(
    client: &CuratorFramework,
    report: Reporter,
    path: &str,
    id: Option<String>,
    timeout: Option<Duration>,
    run: &RunArgs,
) -> CliResult {
    let mut signals = Signals::install()?;
    let id = id.unwrap_or_else(default_id);
    let latch = LeaderLatch::new(client.clone(), path, id.clone())
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
        let _ = latch.close(CloseMode::Silent).await;
        return Err(error.into());
    }

    let election = Election {
        client,
        latch: &latch,
        path,
        id: &id,
    };
    let code = lead(&election, report, timeout, run, &mut signals).await;
    let _ = latch.close(CloseMode::Silent).await;
    code
}

/// What `lead` works on.
struct Election<'a> {
    client: &'a CuratorFramework,
    latch: &'a LeaderLatch,
    path: &'a str,
    id: &'a str,
}

async fn lead(
    election: &Election<'_>,
    report: Reporter,
    mut timeout: Option<Duration>,
    run: &RunArgs,
    signals: &mut Signals,
) -> CliResult {
    let Election {
        client,
        latch,
        path,
        id,
    } = *election;
    // Subscribed before the first look at `has_leadership`, so no later loss goes unheard.
    let mut events = latch.listenable().stream();
    loop {
        // Wait to lead (the first time within --timeout, if given).
        if !latch.has_leadership() {
            let _spinner = Spinner::start(format!("waiting to lead {path}"), report.json);
            let wait = async {
                match timeout {
                    Some(timeout) => latch.await_leadership_timeout(timeout).await,
                    None => latch.await_leadership().await.map(|()| true),
                }
            };
            tokio::select! {
                result = wait => {
                    let led = result.map_err(|error| CliError::zk(&format!("election {path}"), error))?;
                    if !led {
                        return Err(CliError::timeout(format!(
                            "not leader of {path} within {}",
                            human(timeout.unwrap_or_default())
                        )));
                    }
                }
                signal = signals.recv() => {
                    let _ = report.status("interrupted", json!({ "signal": signal.as_str() }), format!("{signal} while waiting to lead {path}"));
                    return Ok(signals::exit_code(signal));
                }
            }
        }
        timeout = None;
        // The session tells a reader whether this is a new term on a new session.
        let session = format!("{:#x}", client.session_id().unwrap_or(0));
        // Nobody would hear what CMD does: do not start it (`run` leaves the election).
        report.status(
            "leading",
            json!({ "path": path, "id": id, "session": session }),
            format!("{id} leads {path}"),
        )?;
        let mut child = Child::spawn(&run.command)?;
        // A failed write marks stderr gone; the wait below then stops CMD.
        let _ = report.status(
            "started",
            json!({ "pid": child.pid(), "command": run.command }),
            format!("running {} (pid {})", child.name(), child.pid()),
        );
        output::watch_pipes();
        loop {
            tokio::select! {
                status = child.wait() => {
                    let code = exit_code(status);
                    let _ = report.status("exited", json!({ "code": code }), format!("{} exited with code {code}; leaving the election", child.name()));
                    return Ok(code);
                }
                event = events.next() => {
                    if event.is_none() {
                        child.stop(Signal::SIGTERM, run.grace).await;
                        return Err(CliError::new(codes::OTHER, format!("the election at {path} stopped")));
                    }
                    if latch.has_leadership() {
                        // A stale event, or leadership already regained on the same node.
                        continue;
                    }
                    let _ = report.status("lost", json!({ "path": path, "id": id }), format!("leadership of {path} lost; stopping {}", child.name()));
                    let code = exit_code(child.stop(Signal::SIGTERM, run.grace).await);
                    let _ = report.status("stopped", json!({ "code": code }), format!("{} stopped (code {code}); waiting to lead again", child.name()));
                    break;
                }
                signal = signals.recv() => {
                    let _ = report.status("interrupted", json!({ "signal": signal.as_str() }), format!("{signal}: stopping {}", child.name()));
                    let status = child.stop(signal, run.grace).await;
                    let code = exit_code(status);
                    let _ = report.status("exited", json!({ "code": code }), format!("{} exited with code {code}; leaving the election", child.name()));
                    return Ok(code);
                }
                stream = output::gone() => {
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
            }
        }
    }
}

/// `host-pid`, the default participant id.
fn default_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}-{}", std::process::id())
}
