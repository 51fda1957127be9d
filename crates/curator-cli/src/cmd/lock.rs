//! `curator lock PATH [--timeout D] -- CMD...`: CMD runs while the distributed lock is held.

use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_locks::InterProcessMutex;
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
    timeout: Option<Duration>,
    run: &RunArgs,
) -> CliResult {
    let mut signals = Signals::install()?;
    let mutex = InterProcessMutex::new(client.clone(), path)
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
        return Err(CliError::timeout(format!(
            "lock {path} not acquired within {}",
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

    let mut child = match Child::spawn(&run.command) {
        Ok(child) => child,
        Err(error) => {
            let _ = guard.release().await;
            return Err(error);
        }
    };
    // A failed write marks stderr gone; the wait below then stops CMD.
    let _ = report.status(
        "started",
        json!({ "pid": child.pid(), "command": run.command }),
        format!("running {} (pid {})", child.name(), child.pid()),
    );
    output::watch_pipes();
    tokio::select! {
        status = child.wait() => {
            let code = exit_code(status);
            let released = guard.release().await;
            let _ = report.status("exited", json!({ "code": code }), format!("{} exited with code {code}; lock released", child.name()));
            if let Err(error) = released {
                let _ = report.status("release_failed", json!({ "error": error.to_string() }), format!("releasing lock {path}: {error} (it goes with the session)"));
            }
            Ok(code)
        }
        () = guard.lost() => {
            let status = child.stop(Signal::SIGTERM, run.grace).await;
            let message = format!(
                "lock {path} lost (connection suspended or session expired); {} stopped (code {})",
                child.name(),
                exit_code(status)
            );
            Err(CliError::new(codes::LOST, message))
        }
        signal = signals.recv() => {
            let _ = report.status("interrupted", json!({ "signal": signal.as_str() }), format!("{signal}: stopping {}", child.name()));
            let status = child.stop(signal, run.grace).await;
            let _ = guard.release().await;
            let code = exit_code(status);
            let _ = report.status("exited", json!({ "code": code }), format!("{} exited with code {code}; lock released", child.name()));
            Ok(code)
        }
        stream = output::gone() => {
            // Nobody can hear about CMD any more (`... 2>&1 | head -1`): a lock that nobody
            // watches over must not outlive its reader.
            let status = child.stop(Signal::SIGTERM, run.grace).await;
            let _ = guard.release().await;
            Err(CliError::new(
                codes::OUTPUT_CLOSED,
                format!(
                    "{} closed: {} stopped (code {}), lock {path} released",
                    stream.name(),
                    child.name(),
                    exit_code(status)
                ),
            ))
        }
    }
}
