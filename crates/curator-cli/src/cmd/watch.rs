//! `curator watch PATH [--count N]`: a node's data and children, then every change.

use clap::Args;
use curator_framework::listen::ListenerStream;
use curator_framework::watcher::Watcher;
use curator_framework::{ConnectionState, CuratorFramework, Error, Stat, WatchedEvent};
use futures::StreamExt;
use futures::future::{BoxFuture, FutureExt};
use serde_json::json;

use super::{Ctx, Run};
use crate::args::{Session, Takes};
use crate::exit::{CliError, CliResult, codes};
use crate::output;
use crate::report::Reporter;

/// Print PATH's data and children, then every change, until interrupted
#[derive(Debug, Args)]
pub(crate) struct Watch {
    /// The node (it need not exist yet)
    path: String,
    /// Stop after N changes
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    #[command(flatten)]
    session: Session,
}

impl Run for Watch {
    fn takes(&self) -> Takes<'_> {
        self.session.takes()
    }

    async fn run(self, ctx: &Ctx) -> CliResult {
        let client = ctx.client_for(&self.path).await?;
        watch(client, ctx.report, &self.path, self.count).await?;
        Ok(codes::OK)
    }
}

/// Prints the node's state, then again after every change, until `count` changes were seen.
/// Connection changes are status events (`connection`, with the state) as they come: a
/// watcher should not look like a quiet node while the server is away.
async fn watch(
    client: &CuratorFramework,
    report: Reporter,
    path: &str,
    count: Option<u64>,
) -> CliResult<()> {
    let failed = |error| CliError::zk(&format!("watching {path}"), error);
    output::watch_pipes();
    let mut states = client.connection_state_stream();
    let mut event_name = "initial".to_owned();
    let mut seen = 0;
    loop {
        // One round: read data and children with watches (an exists watch while the node is
        // missing), print, and wait for the first watch to fire.
        let round = read_watched(client, path).await;
        let state = match round {
            Ok(state) => state,
            Err(error) if is_connection(&error) => {
                // Away from the server: say so, and read again once connected.
                await_connected(client, report, &mut states).await?;
                continue;
            }
            Err(error) => return Err(failed(error)),
        };
        let change: BoxFuture<'static, WatchedEvent> = match state {
            Watched::Node {
                data,
                stat,
                children,
                data_watch,
                children_watch,
            } => {
                let text = String::from_utf8_lossy(&data).into_owned();
                report.result(
                    json!({ "event": event_name, "path": path, "exists": true, "data": text, "version": stat.version, "children": children }),
                    format!("{event_name}: {path} = {text:?} (version {}), children [{}]", stat.version, children.join(", ")),
                )?;
                if done(&mut seen, &event_name, count) {
                    return Ok(());
                }
                match children_watch {
                    Some(children_watch) => async move {
                        tokio::select! {
                            event = data_watch.changed() => event,
                            event = children_watch.changed() => event,
                        }
                    }
                    .boxed(),
                    None => data_watch.changed().boxed(),
                }
            }
            Watched::Created => {
                // Created in between: read it in the next round.
                event_name = "NodeCreated".to_owned();
                continue;
            }
            Watched::Missing { exists_watch } => {
                report.result(
                    json!({ "event": event_name, "path": path, "exists": false }),
                    format!("{event_name}: {path} does not exist"),
                )?;
                if done(&mut seen, &event_name, count) {
                    return Ok(());
                }
                exists_watch.changed().boxed()
            }
        };
        let mut change = change;
        let event = loop {
            tokio::select! {
                event = &mut change => break event,
                state = states.next() => {
                    if let Some(state) = state {
                        connection_status(report, state)?;
                    }
                }
                // Nobody reads any more (`curator watch ... | head -1`): stop now rather than
                // at the next change, which may never come.
                _ = output::gone() => return Err(CliError::output_closed()),
            }
        };
        event_name = format!("{:?}", event.event_type);
    }
}

/// What a round of `watch` read.
enum Watched {
    Node {
        data: Vec<u8>,
        stat: Stat,
        children: Vec<String>,
        data_watch: Watcher,
        children_watch: Option<Watcher>,
    },
    /// The node did not exist for the data read, and did for the exists watch.
    Created,
    Missing {
        exists_watch: Watcher,
    },
}

async fn read_watched(client: &CuratorFramework, path: &str) -> Result<Watched, Error> {
    match client.get_data().watched().for_path(path).await {
        Ok((data, stat, data_watch)) => {
            let (children, children_watch) =
                match client.get_children().watched().for_path(path).await {
                    Ok((mut children, _, children_watch)) => {
                        children.sort();
                        (children, Some(children_watch))
                    }
                    // Deleted in between: the data watch reports it.
                    Err(Error::NoNode) => (Vec::new(), None),
                    Err(error) => return Err(error),
                };
            Ok(Watched::Node {
                data,
                stat,
                children,
                data_watch,
                children_watch,
            })
        }
        Err(Error::NoNode) => {
            let (stat, exists_watch) = client.check_exists().watched().for_path(path).await?;
            Ok(match stat {
                Some(_) => Watched::Created,
                None => Watched::Missing { exists_watch },
            })
        }
        Err(error) => Err(error),
    }
}

/// Whether `error` says the connection or the session is gone, not the request was wrong.
fn is_connection(error: &Error) -> bool {
    error.is_retryable() || error.is_session_terminal()
}

/// Reports connection changes until the client is connected again.
async fn await_connected(
    client: &CuratorFramework,
    report: Reporter,
    states: &mut ListenerStream<ConnectionState>,
) -> CliResult<()> {
    loop {
        if client.is_connected() {
            // Changes that came meanwhile, then go on.
            while let Some(Some(state)) = states.next().now_or_never() {
                connection_status(report, state)?;
            }
            return Ok(());
        }
        tokio::select! {
            state = states.next() => match state {
                Some(state) => {
                    connection_status(report, state)?;
                    if state.is_connected() {
                        return Ok(());
                    }
                }
                None => return Err(CliError::new(codes::CONNECTION, "the client closed")),
            },
            _ = output::gone() => return Err(CliError::output_closed()),
        }
    }
}

/// `{"event":"connection","state":"Suspended"}`, or a line for people (nothing for the first
/// `Connected`, which the client reports just after it started).
fn connection_status(report: Reporter, state: ConnectionState) -> CliResult<()> {
    let human = match state {
        ConnectionState::Connected => return Ok(()),
        ConnectionState::Suspended => {
            "connection to ZooKeeper suspended; watching on once it is back".to_owned()
        }
        ConnectionState::Lost => {
            "session lost (expired, or away too long); watching on with a new session once connected"
                .to_owned()
        }
        ConnectionState::Reconnected => "reconnected to ZooKeeper".to_owned(),
        other => format!("connection {other}"),
    };
    report.status(
        "connection",
        json!({ "state": format!("{state:?}") }),
        human,
    )?;
    Ok(())
}

/// Counts a printed change (not the initial state); whether `count` changes have been printed.
fn done(seen: &mut u64, event_name: &str, count: Option<u64>) -> bool {
    if event_name != "initial" {
        *seen += 1;
    }
    count.is_some_and(|count| *seen >= count)
}
