//! Keeps the annotated tree current: one persistent recursive watch on the root, and a new
//! snapshot after each burst of changes, published on a `watch` channel (the latest snapshot
//! only, so a slow page never makes the process hold a backlog).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use curator_framework::watcher::PersistentWatcher;
use curator_framework::{ConnectionState, CuratorFramework, Result, WatchedEvent};
use futures::{FutureExt, StreamExt};
use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::tree::{self, Node};

/// What `/api/tree` and each `tree` event carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct Snapshot {
    /// The path shown.
    root: String,
    /// Bumped on every snapshot published.
    version: u64,
    /// When it was read (milliseconds since the Unix epoch, this host's clock).
    read_ms: u64,
    /// `connected`, `suspended`, `lost`, … (the tree may be stale when not connected).
    connection: &'static str,
    /// Nodes read.
    nodes: usize,
    /// More nodes than [`tree::MAX_NODES`]: some were left out.
    truncated: bool,
    /// The last read's failure, if it failed (the tree is then the one before).
    error: Option<String>,
    /// `None`: no node at `root`.
    tree: Option<Node>,
}

impl Snapshot {
    /// Equal but for the version and the time read.
    fn same_content(&self, other: &Snapshot) -> bool {
        (
            self.connection,
            self.nodes,
            self.truncated,
            &self.error,
            &self.tree,
        ) == (
            other.connection,
            other.nodes,
            other.truncated,
            &other.error,
            &other.tree,
        )
    }
}

/// The published snapshots, as JSON text.
pub(crate) type Snapshots = watch::Receiver<Arc<str>>;

/// Reads the tree under `root` once and keeps it current until `stop` is cancelled (or the
/// client closes); the channel closes when the task ends.
///
/// # Errors
/// When the watch cannot be set or the first read fails.
pub(crate) async fn start(
    client: CuratorFramework,
    root: String,
    stop: CancellationToken,
) -> Result<(Snapshots, JoinHandle<()>)> {
    // Before the first read, so no change falls between the two.
    let watcher = client.add_watch().recursive().for_path(&root).await?;
    let tree = tree::read(&client, &root).await?;
    let mut snapshot = Snapshot {
        root: root.clone(),
        version: 1,
        read_ms: now_ms(),
        connection: state_name(client.connection_state()),
        nodes: tree.nodes,
        truncated: tree.truncated,
        error: None,
        tree: tree.root,
    };
    let (publish, snapshots) = watch::channel(json(&snapshot));
    let task = tokio::spawn(async move {
        let mut watcher = Some(watcher);
        let mut published = snapshot.clone();
        let mut states = client.connection_state_stream();
        loop {
            let mut reread = false;
            tokio::select! {
                () = stop.cancelled() => break,
                event = next_event(&mut watcher) => match event {
                    Some(_) => reread = true,
                    // The watch ended with its session: set again on reconnection.
                    None => watcher = None,
                },
                state = states.next() => {
                    let Some(state) = state else { break };
                    snapshot.connection = state_name(Some(state));
                    if matches!(state, ConnectionState::Reconnected | ConnectionState::Connected) {
                        // A new session has none of the old one's watches; a blip keeps it,
                        // and setting it again is harmless either way.
                        match client.add_watch().recursive().for_path(&root).await {
                            Ok(again) => watcher = Some(again),
                            Err(error) => snapshot.error = Some(error.to_string()),
                        }
                        reread = true;
                    }
                }
            }
            if reread {
                // A burst of changes (a lock handed over is a delete and a watch firing): the
                // events already here are covered by one read.
                while let Some(Some(_)) = next_event(&mut watcher).now_or_never() {}
                let read = tokio::select! {
                    () = stop.cancelled() => break,
                    read = tree::read(&client, &root) => read,
                };
                match read {
                    Ok(tree) => {
                        snapshot.nodes = tree.nodes;
                        snapshot.truncated = tree.truncated;
                        snapshot.tree = tree.root;
                        snapshot.error = None;
                    }
                    Err(error) => snapshot.error = Some(error.to_string()),
                }
                snapshot.read_ms = now_ms();
            }
            // Several events may describe one change (and a state may come back): publish only
            // what differs.
            if !snapshot.same_content(&published) {
                snapshot.version += 1;
                publish.send_replace(json(&snapshot));
                published = snapshot.clone();
            }
        }
    });
    Ok((snapshots, task))
}

/// The watcher's next event; never, without a watcher.
async fn next_event(watcher: &mut Option<PersistentWatcher>) -> Option<WatchedEvent> {
    match watcher {
        Some(watcher) => watcher.next().await,
        None => std::future::pending().await,
    }
}

fn json(snapshot: &Snapshot) -> Arc<str> {
    serde_json::to_string(snapshot)
        .unwrap_or_else(|error| format!("{{\"error\":\"cannot serialize: {error}\"}}"))
        .into()
}

fn state_name(state: Option<ConnectionState>) -> &'static str {
    match state {
        Some(ConnectionState::Connected) => "connected",
        Some(ConnectionState::Suspended) => "suspended",
        Some(ConnectionState::Reconnected) => "reconnected",
        Some(ConnectionState::Lost) => "lost",
        Some(ConnectionState::ReadOnly) => "read_only",
        _ => "unknown",
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}
