//! Keeps the annotated tree current: one persistent recursive watch on the root says which
//! nodes changed, and a new snapshot reads only those again, after each burst of changes and
//! at a bounded rate; it is published on a `watch` channel (the latest snapshot only, so a slow
//! page never makes the process hold a backlog).
//!
//! The connection's state is published apart from the reads: a read waits on the connection
//! (and on the client's retry policy), so it runs beside the loop that hears the state, which
//! marks the snapshot stale at once on `Suspended` or `Lost`.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use curator_framework::types::EventType;
use curator_framework::watcher::PersistentWatcher;
use curator_framework::{ConnectionState, CuratorFramework, Error, Result, WatchedEvent};
use futures::StreamExt;
use futures::future::BoxFuture;
use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::tree::{Cache, Changes, Node, Tree};

/// Changes that come within this long of the first one are read together.
const COALESCE: Duration = Duration::from_millis(50);
/// At most one read per this long, however fast the changes come.
const MIN_INTERVAL: Duration = Duration::from_millis(250);
/// After a failed read the next waits this long, doubled after each failure up to
/// [`MAX_RETRY_DELAY`].
const RETRY_DELAY: Duration = Duration::from_secs(1);
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

/// What `/api/tree` and each `tree` event carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct Snapshot {
    /// The path shown.
    root: String,
    /// Bumped on every snapshot published.
    version: u64,
    /// When the tree was last read (milliseconds since the Unix epoch, this host's clock).
    read_ms: u64,
    /// `connected`, `suspended`, `lost`, … as the client says now.
    connection: &'static str,
    /// Since when (milliseconds since the Unix epoch, this host's clock).
    connection_since_ms: u64,
    /// Not connected: the tree is as last read, and may no longer be true.
    stale: bool,
    /// Nodes shown.
    nodes: usize,
    /// More nodes than [`super::tree::MAX_NODES`]: some were left out.
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
            self.connection_since_ms,
            self.nodes,
            self.truncated,
            &self.error,
            &self.tree,
        ) == (
            other.connection,
            other.connection_since_ms,
            other.nodes,
            other.truncated,
            &other.error,
            &other.tree,
        )
    }

    fn set_state(&mut self, state: Option<ConnectionState>) {
        self.connection = state_name(state);
        self.connection_since_ms = now_ms();
        self.stale = !state.is_some_and(ConnectionState::is_connected);
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
    // Heard from before the first read, so no transition falls between the two.
    let states = client.connection_state_stream();
    // Before the first read, so no change falls between the two.
    let watcher = client.add_watch().recursive().for_path(&root).await?;
    let mut cache = Cache::default();
    let tree = cache.read(&client, &root, &Changes::everything()).await?;
    let mut snapshot = Snapshot {
        root: root.clone(),
        version: 1,
        read_ms: now_ms(),
        connection: "unknown",
        connection_since_ms: 0,
        stale: false,
        nodes: 0,
        truncated: false,
        error: None,
        tree: None,
    };
    snapshot.set_state(client.connection_state());
    snapshot.set_tree(tree);
    let (publish, snapshots) = watch::channel(json(&snapshot));
    let updater = Updater {
        connected: !snapshot.stale,
        published: snapshot.clone(),
        snapshot,
        client,
        root,
        publish,
        cache: Some(cache),
        watcher: Some(watcher),
        pending: Changes::default(),
        pending_since: None,
        rewatch: false,
        last_start: Instant::now(),
        last_end: Instant::now(),
        retry_delay: None,
    };
    Ok((snapshots, tokio::spawn(updater.run(states, stop))))
}

impl Snapshot {
    fn set_tree(&mut self, tree: Tree) {
        self.nodes = tree.nodes;
        self.truncated = tree.truncated;
        self.tree = tree.root;
        self.error = None;
        self.read_ms = now_ms();
    }
}

/// What a read running beside the loop hands back.
struct Done {
    cache: Cache,
    /// The watch set again (when asked).
    watcher: Option<PersistentWatcher>,
    watch_error: Option<Error>,
    read: Result<Tree>,
    /// What it was to read (again, if it failed).
    changes: Changes,
}

struct Updater {
    client: CuratorFramework,
    root: String,
    snapshot: Snapshot,
    published: Snapshot,
    publish: watch::Sender<Arc<str>>,
    /// The connection's state, as last heard.
    connected: bool,
    /// What the last read found; `None` while a read has it (or after a read was dropped).
    cache: Option<Cache>,
    watcher: Option<PersistentWatcher>,
    /// Changes heard and not read yet, and since when.
    pending: Changes,
    pending_since: Option<Instant>,
    /// Set the watch again with the next read.
    rewatch: bool,
    /// When the last read started and ended.
    last_start: Instant,
    last_end: Instant,
    /// Set after a failed read.
    retry_delay: Option<Duration>,
}

impl Updater {
    async fn run(
        mut self,
        mut states: curator_framework::listen::ListenerStream<ConnectionState>,
        stop: CancellationToken,
    ) {
        let mut read: Option<BoxFuture<'static, Done>> = None;
        loop {
            let due = if read.is_none() { self.due() } else { None };
            tokio::select! {
                () = stop.cancelled() => break,
                state = states.next() => {
                    let Some(state) = state else { break };
                    self.state(state, &mut read);
                }
                event = next_event(&mut self.watcher) => self.event(event),
                done = async { read.as_mut().expect("guarded").await }, if read.is_some() => {
                    read = None;
                    self.done(done);
                }
                () = tokio::time::sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => {
                    read = Some(self.start_read());
                }
            }
            // Several events may describe one change (and a state may come back): publish only
            // what differs.
            if !self.snapshot.same_content(&self.published) {
                self.snapshot.version += 1;
                self.publish.send_replace(json(&self.snapshot));
                self.published = self.snapshot.clone();
            }
        }
    }

    /// When the next read may start: a burst's first change plus [`COALESCE`], no sooner than
    /// [`MIN_INTERVAL`] after the last read started (and the retry delay after a failure);
    /// `None` while there is nothing to read or no connection to read on.
    fn due(&self) -> Option<Instant> {
        if !self.connected || (self.pending.is_empty() && !self.rewatch) {
            return None;
        }
        let mut due = self.pending_since.unwrap_or_else(Instant::now) + COALESCE;
        due = due.max(self.last_start + MIN_INTERVAL);
        if let Some(delay) = self.retry_delay {
            due = due.max(self.last_end + delay);
        }
        Some(due)
    }

    fn state(&mut self, state: ConnectionState, read: &mut Option<BoxFuture<'static, Done>>) {
        self.snapshot.set_state(Some(state));
        let was_connected = std::mem::replace(&mut self.connected, state.is_connected());
        // (A `Connected` heard while connected is the start's own, published before the first
        // read: nothing was missed.)
        if self.connected && !was_connected {
            // Events are not replayed after a disconnection, and a new session has none of the
            // old one's watches: set the watch again and read everything.
            self.rewatch = true;
            self.pending = Changes::everything();
            self.pending_since = Some(Instant::now());
            self.retry_delay = None;
        } else if !self.connected && read.take().is_some() {
            // The read under way waits on the connection: drop it (a read is safe to drop).
            // What it had read goes with it; everything is read again once connected.
            self.cache = None;
            self.pending = Changes::everything();
        }
    }

    fn event(&mut self, event: Option<WatchedEvent>) {
        match event {
            Some(event) => {
                let structural = match event.event_type {
                    EventType::NodeCreated | EventType::NodeDeleted => true,
                    EventType::NodeDataChanged | EventType::NodeChildrenChanged => false,
                    // The connection's state comes from the client's transitions.
                    _ => return,
                };
                self.pending.note(&self.root, &event.path, structural);
                self.pending_since.get_or_insert_with(Instant::now);
            }
            None => {
                // The watch ended with its session: set it again, and read everything (what
                // changed meanwhile went unheard).
                self.watcher = None;
                self.rewatch = true;
                self.pending = Changes::everything();
                self.pending_since.get_or_insert_with(Instant::now);
            }
        }
    }

    fn start_read(&mut self) -> BoxFuture<'static, Done> {
        let mut changes = std::mem::take(&mut self.pending);
        self.pending_since = None;
        let mut cache = match self.cache.take() {
            Some(cache) => cache,
            None => {
                changes = Changes::everything();
                Cache::default()
            }
        };
        let rewatch = std::mem::take(&mut self.rewatch);
        let (client, root) = (self.client.clone(), self.root.clone());
        self.last_start = Instant::now();
        Box::pin(async move {
            let (mut watcher, mut watch_error) = (None, None);
            if rewatch {
                match client.add_watch().recursive().for_path(&root).await {
                    Ok(again) => watcher = Some(again),
                    Err(error) => watch_error = Some(error),
                }
            }
            let read = cache.read(&client, &root, &changes).await;
            Done {
                cache,
                watcher,
                watch_error,
                read,
                changes,
            }
        })
    }

    fn done(&mut self, done: Done) {
        self.last_end = Instant::now();
        self.cache = Some(done.cache);
        if let Some(watcher) = done.watcher {
            // Set again before this read: no change fell between the two. (The wire client
            // keeps one registration per path, so dropping the old watcher removes nothing.)
            self.watcher = Some(watcher);
        }
        let failure = match (done.watch_error, done.read) {
            (None, Ok(tree)) => {
                self.snapshot.set_tree(tree);
                self.retry_delay = None;
                return;
            }
            (Some(error), read) => {
                // Without the watch, changes go unheard: set it and read everything again.
                if let Ok(tree) = read {
                    self.snapshot.set_tree(tree);
                }
                self.rewatch = true;
                self.pending = Changes::everything();
                error
            }
            (None, Err(error)) => {
                self.pending.merge(done.changes);
                error
            }
        };
        // Try again after a while.
        self.snapshot.error = Some(failure.to_string());
        self.pending_since.get_or_insert_with(Instant::now);
        self.retry_delay = Some(
            self.retry_delay
                .map_or(RETRY_DELAY, |delay| (delay * 2).min(MAX_RETRY_DELAY)),
        );
    }
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
