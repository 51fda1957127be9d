//! `ls`, `get`, `set`, `create`, `rm`, `tree`, `watch`: plain node operations.

use std::io::Read;

use curator_framework::listen::ListenerStream;
use curator_framework::watcher::Watcher;
use curator_framework::{
    ConnectionState, CreateMode, CuratorFramework, Error, Stat, WatchedEvent, paths,
};
use futures::StreamExt;
use futures::future::{BoxFuture, FutureExt};
use serde_json::{Value, json};

use crate::args::Command;
use crate::exit::{CliError, CliResult, codes};
use crate::output;
use crate::report::Reporter;

pub(crate) async fn run(
    client: &CuratorFramework,
    report: Reporter,
    command: Command,
) -> CliResult {
    match command {
        Command::Ls { path, .. } => {
            let what = format!("listing {path}");
            let (mut children, _) = client
                .get_children()
                .for_path(&path)
                .await
                .map_err(|error| missing_namespace(client, &path, &what, error))?;
            children.sort();
            // No children, no lines (`--json` still prints `[]`).
            if report.json || !children.is_empty() {
                report.result(json!(children), children.join("\n"))?;
            }
        }
        Command::Get {
            path,
            stat,
            encoding,
            ..
        } => {
            let what = format!("reading {path}");
            let (data, node) = client
                .get_data()
                .for_path(&path)
                .await
                .map_err(|error| missing_namespace(client, &path, &what, error))?;
            let (text, lossy) = encoding.encode(&data);
            if report.json {
                let mut value = json!({ "path": path, "data": text, "encoding": encoding.name() });
                if lossy {
                    value["lossy"] = json!(true);
                }
                if stat {
                    value["stat"] = stat_json(&node);
                }
                report.result(value, "")?;
            } else {
                output::out(text)?;
                if stat {
                    output::out(stat_text(&node))?;
                }
            }
        }
        Command::Set {
            path,
            data,
            version,
            ..
        } => {
            let data = read_data(&data)?;
            let mut set = client.set_data();
            if let Some(version) = version {
                set = set.with_version(version);
            }
            let what = format!("setting {path}");
            let stat = match set.for_path(&path, data).await {
                Ok(stat) => stat,
                Err(Error::BadVersion) => {
                    return Err(bad_version(client, &what, &path, version).await);
                }
                Err(error) => return Err(CliError::zk(&what, error)),
            };
            report.result(
                json!({ "path": path, "version": stat.version }),
                format!("{path} version {}", stat.version),
            )?;
        }
        Command::Create {
            path,
            data,
            parents,
            sequential,
            ..
        } => {
            let data = match data {
                Some(data) => read_data(&data)?,
                None => Vec::new(),
            };
            let mode = if sequential {
                CreateMode::PersistentSequential
            } else {
                CreateMode::Persistent
            };
            let mut create = client.create().with_mode(mode);
            if parents {
                create = create.creating_parents_if_needed();
            }
            let created = create
                .for_path(&path, data)
                .await
                .map_err(|error| match error {
                    Error::NoNode if !parents => CliError::new(
                        codes::OTHER,
                        format!(
                            "creating {path}: its parent {} does not exist (-p creates it too)",
                            paths::parent(&path).unwrap_or("/")
                        ),
                    ),
                    error => CliError::zk(&format!("creating {path}"), error),
                })?;
            report.result(json!({ "path": created }), &created)?;
        }
        Command::Rm {
            path,
            recursive,
            version,
            ..
        } => {
            let mut delete = client.delete();
            if recursive {
                delete = delete.deleting_children_if_needed();
            }
            if let Some(version) = version {
                delete = delete.with_version(version);
            }
            let what = format!("deleting {path}");
            match delete.for_path(&path).await {
                Ok(()) => {}
                // The only delete the server refuses this way: /zookeeper and below.
                Err(Error::BadArguments) => {
                    return Err(CliError::new(
                        codes::OTHER,
                        format!(
                            "{what}: refused by the server: /zookeeper and the nodes under it belong to ZooKeeper itself"
                        ),
                    ));
                }
                Err(Error::BadVersion) => {
                    return Err(bad_version(client, &what, &path, version).await);
                }
                Err(Error::NotEmpty) => {
                    return Err(CliError::new(
                        codes::OTHER,
                        format!("{what}: node has children (-r deletes them too)"),
                    ));
                }
                Err(error) => return Err(CliError::zk(&what, error)),
            }
            if report.json {
                report.result(json!({ "deleted": path }), "")?;
            }
        }
        Command::Tree { path, .. } => {
            let tree = tree(client, path.clone())
                .await
                .map_err(|error| CliError::zk(&format!("reading the tree under {path}"), error))?;
            if report.json {
                report.result(tree, "")?;
            } else {
                let mut lines = Vec::new();
                print_tree(&tree, 0, &mut lines);
                output::out(lines.join("\n"))?;
            }
        }
        Command::Watch { path, count, .. } => watch(client, report, &path, count).await?,
        Command::Whoami { .. } => {
            let identities = client
                .who_am_i()
                .await
                .map_err(|error| CliError::zk("asking who this client is", error))?;
            let lines: Vec<String> = identities.iter().map(ToString::to_string).collect();
            let json: Vec<_> = identities
                .iter()
                .map(|identity| json!({ "scheme": identity.scheme, "id": identity.id }))
                .collect();
            report.result(json!(json), lines.join("\n"))?;
        }
        Command::Demo { .. }
        | Command::Server { .. }
        | Command::Lock { .. }
        | Command::Lease { .. }
        | Command::Fence { .. }
        | Command::Leader { .. }
        | Command::Barrier { .. }
        | Command::Counter { .. }
        | Command::Inspect { .. }
        | Command::Ui { .. }
        | Command::Ensemble { .. }
        | Command::Sentinel { .. } => unreachable!("not a node command"),
    }
    Ok(codes::OK)
}

/// A refused `--version`, with the version the node is at (read after the refusal: it may have
/// moved on again by the time the message is read, but it is what the server had).
async fn bad_version(
    client: &CuratorFramework,
    what: &str,
    path: &str,
    asked: Option<i32>,
) -> CliError {
    let asked = asked.map(|v| format!(", not {v}")).unwrap_or_default();
    let now = match client.check_exists().for_path(path).await {
        Ok(Some(stat)) => format!(": it is at version {}{asked}", stat.version),
        Ok(None) => ": it no longer exists".to_owned(),
        Err(_) => String::new(),
    };
    CliError::new(codes::OTHER, format!("{what}: bad version{now}"))
}

/// A read of the namespace's root that found nothing because the namespace does not exist yet
/// (reads do not create it) says so.
fn missing_namespace(client: &CuratorFramework, path: &str, what: &str, error: Error) -> CliError {
    match (client.namespace(), &error) {
        (Some(namespace), Error::NoNode) if path == "/" => CliError::new(
            codes::OTHER,
            format!(
                "{what}: no such node (the namespace /{namespace} does not exist yet: the first write under it makes it)"
            ),
        ),
        _ => CliError::zk(what, error),
    }
}

/// `-` means standard input; anything else is the data itself.
fn read_data(data: &str) -> CliResult<Vec<u8>> {
    if data != "-" {
        return Ok(data.as_bytes().to_vec());
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|error| CliError::new(codes::OTHER, format!("reading standard input: {error}")))?;
    Ok(bytes)
}

fn stat_json(stat: &Stat) -> Value {
    json!({
        "version": stat.version,
        "cversion": stat.cversion,
        "data_length": stat.data_length,
        "num_children": stat.num_children,
        // A session id, as hex text like every session id in `curator`'s JSON: as a number it
        // would pass 2^53 and lose digits in `jq` and browsers.
        "ephemeral_owner": format!("0x{:x}", stat.ephemeral_owner),
        "czxid": stat.czxid,
        "mzxid": stat.mzxid,
        "ctime": stat.ctime,
        "mtime": stat.mtime,
    })
}

fn stat_text(stat: &Stat) -> String {
    format!(
        "version={} cversion={} data_length={} num_children={} ephemeral_owner={:#x} czxid={:#x} mzxid={:#x}",
        stat.version,
        stat.cversion,
        stat.data_length,
        stat.num_children,
        stat.ephemeral_owner,
        stat.czxid,
        stat.mzxid
    )
}

/// `{"path", "children": [...]}`, depth first; nodes deleted meanwhile are left out, and a node
/// below `path` that this session may not list is `{"path", "no_read_permission": true}`
/// (its children unknown) rather than a failure of the whole tree.
fn tree(client: &CuratorFramework, path: String) -> BoxFuture<'_, Result<Value, Error>> {
    async move {
        let (mut names, _) = client.get_children().for_path(&path).await?;
        names.sort();
        let mut children = Vec::with_capacity(names.len());
        for name in names {
            let child = paths::join(&path, &name);
            match tree(client, child.clone()).await {
                Ok(node) => children.push(node),
                Err(Error::NoNode) => {}
                Err(Error::NoAuth) => {
                    children.push(json!({ "path": child, "no_read_permission": true }));
                }
                Err(error) => return Err(error),
            }
        }
        Ok(json!({ "path": path, "children": children }))
    }
    .boxed()
}

fn print_tree(node: &Value, depth: usize, lines: &mut Vec<String>) {
    let path = node["path"].as_str().unwrap_or_default();
    let label = if depth == 0 {
        path
    } else {
        paths::node_name(path)
    };
    let mark = if node["no_read_permission"] == true {
        " (no read permission)"
    } else {
        ""
    };
    lines.push(format!("{}{label}{mark}", "  ".repeat(depth)));
    for child in node["children"].as_array().into_iter().flatten() {
        print_tree(child, depth + 1, lines);
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
