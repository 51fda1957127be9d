//! One module per subcommand; `run` picks one.

mod barrier;
mod counter;
mod ensemble;
mod fence;
mod inspect;
mod leader;
mod lease;
mod lock;
mod nodes;
mod server;
mod ui;

use curator_framework::CuratorFramework;

use crate::args::{Command, Settings};
use crate::connect::connect;
use crate::exit::{CliError, CliResult};
use crate::report::Reporter;

/// Runs `command` with `settings`; returns the exit code.
pub(crate) async fn run(command: Command, settings: Settings) -> CliResult {
    let report = Reporter {
        json: settings.json,
    };
    match command {
        Command::Demo { .. } => crate::demo::run(&settings).await,
        Command::Server { cluster, port, .. } => server::run(report, cluster, port).await,
        // Binds and installs its metrics recorder before it connects.
        Command::Ui {
            path,
            listen,
            allow_remote,
            ..
        } => ui::run(report, &settings, &path, listen, allow_remote).await,
        // Run by `main` before the runtime starts.
        Command::Sentinel { .. } => Err(CliError::usage("__sentinel is internal")),
        command => {
            if let Some(path) = command.path() {
                // Bad paths are usage errors, reported before any connection is tried.
                curator_framework::paths::validate(path)
                    .map_err(|error| CliError::usage(error.to_string()))?;
            }
            let client = connect(&settings, &settings.connect_string()).await?;
            // How long the wrappers may take to check, after a stop, that they still hold what
            // they held.
            let check = settings.connection_timeout;
            let result = match command {
                Command::Lock {
                    path, timeout, run, ..
                } => lock::run(&client, report, &path, timeout, &run, check).await,
                Command::Lease {
                    path,
                    duration,
                    id,
                    run,
                    ..
                } => lease::run(&client, report, &path, duration, id, &run).await,
                Command::Fence { path, token, .. } => {
                    fence::run(&client, report, &path, token).await
                }
                Command::Leader {
                    path,
                    id,
                    timeout,
                    run,
                    ..
                } => leader::run(&client, report, &path, id, timeout, &run, check).await,
                Command::Barrier {
                    path,
                    members,
                    timeout,
                    grace,
                    command,
                    ..
                } => barrier::run(&client, report, &path, members, timeout, grace, &command).await,
                Command::Counter { path, op, .. } => counter::run(&client, report, &path, op).await,
                Command::Inspect { path, watch, .. } => {
                    inspect::run(&client, report, &path, watch).await
                }
                Command::Ensemble {
                    op, probe_timeout, ..
                } => ensemble::run(&client, report, op, probe_timeout, &settings).await,
                other => nodes::run(&client, report, other).await,
            };
            let result = match result {
                Err(error) if error.not_authorized => {
                    Err(refused_whom(&client, &settings, error).await)
                }
                other => other,
            };
            client.close().await;
            result
        }
    }
}

/// A refusal by a node's ACL, with the identities the server gives this session (ZooKeeper's
/// whoAmI, asked within the connection timeout); as it was when the server cannot say.
async fn refused_whom(
    client: &CuratorFramework,
    settings: &Settings,
    mut error: CliError,
) -> CliError {
    let asked = tokio::time::timeout(settings.connection_timeout, client.who_am_i()).await;
    let Ok(Ok(identities)) = asked else {
        return error;
    };
    if identities.is_empty() {
        return error;
    }
    let who: Vec<String> = identities.iter().map(ToString::to_string).collect();
    let hint = if settings.security.digest.is_none() {
        "; --auth-user adds a digest identity"
    } else {
        ""
    };
    if let Some(message) = &mut error.message {
        message.push_str(&format!(" (this session is {}{hint})", who.join(", ")));
    }
    error
}

/// This process's default participant id: `<host>-<pid>` (`localhost` when the host name is
/// unknown), for `leader` and `lease`.
fn default_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}-{}", std::process::id())
}
