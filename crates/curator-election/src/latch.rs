//! `LeaderLatch`: Curator's leader latch.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::listen::{Listenable, ListenerContainer};
use curator_framework::types::EventType;
use curator_framework::watcher::Watcher;
use curator_framework::{ConnectionState, CreateMode, CuratorFramework, Error, Result, paths};
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

const LATCH_NAME: &str = "latch-";

/// What a latch's leadership listeners hear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LatchEvent {
    /// This participant leads now.
    IsLeader,
    /// This participant stopped leading.
    NotLeader,
}

/// The steps of ZooKeeper's own election recipe, for users moving over from it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElectionEvent {
    /// This participant's node was created (its offer).
    OfferMade,
    /// It is finding out where it stands.
    Determining,
    /// It was elected leader.
    Elected,
    /// It follows, watching the participant just before it.
    Ready,
    /// A step failed (it retries once connected).
    Failed(String),
    /// The latch was closed.
    Stopped,
}

/// How [`LeaderLatch::close`] treats a leader's listeners.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CloseMode {
    /// Leadership ends without a `NotLeader` event (Curator's default).
    #[default]
    Silent,
    /// A leader's listeners hear `NotLeader`.
    NotifyLeader,
}

/// A participant of an election, as read from its node.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Participant {
    /// The id it gave (its node's data).
    pub id: String,
    /// Whether it leads (its node is first).
    pub is_leader: bool,
    /// Its node's full path (as [`LeaderLatch::participant_nodes`] lists it).
    pub node: String,
}

/// Reads the participants' ids from their `nodes` (full paths, in election order); nodes gone
/// meanwhile are left out.
pub(crate) async fn read_participants(
    client: &curator_framework::CuratorFramework,
    nodes: Vec<String>,
) -> Result<Vec<Participant>> {
    let reads: Vec<_> = nodes
        .iter()
        .map(|node| client.get_data().for_path(node).into_future())
        .collect();
    let mut participants = Vec::with_capacity(reads.len());
    for (node, read) in nodes.into_iter().zip(reads) {
        match read.await {
            Ok((data, _)) => participants.push(Participant {
                id: String::from_utf8_lossy(&data).into_owned(),
                is_leader: participants.is_empty(),
                node,
            }),
            Err(Error::NoNode) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(participants)
}

/// A leader latch: of all participants on a path, exactly one leads at a time (Curator's
/// `LeaderLatch` layout, so Java participants take part too).
///
/// Start it, then ask [`has_leadership`](Self::has_leadership), wait with
/// [`await_leadership`](Self::await_leadership), or listen for [`LatchEvent`]s. A leader loses
/// leadership when its connection state becomes an error under the client's connection-state
/// error policy, and regains it only after checking its node on the current session.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_election::{CloseMode, LatchEvent, LeaderLatch};
/// let latch = LeaderLatch::new(client, "/election/reports", "worker-1")?;
/// let _on_change = latch.listenable().add_listener(|event: LatchEvent| println!("{event:?}"));
/// latch.start().await?;
/// if latch.await_leadership_timeout(std::time::Duration::from_secs(10)).await? {
///     // lead
/// }
/// latch.close(CloseMode::NotifyLeader).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaderLatch {
    inner: Arc<Inner>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    Latent,
    Started,
    Closed,
}

struct Inner {
    client: CuratorFramework,
    path: String,
    id: String,
    leader: watch::Sender<bool>,
    lifecycle: Mutex<Lifecycle>,
    /// Our node and the session it was made in.
    node: Mutex<Option<(String, i64)>>,
    listeners: ListenerContainer<LatchEvent>,
    events: ListenerContainer<ElectionEvent>,
    cancel: CancellationToken,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl fmt::Debug for LeaderLatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderLatch")
            .field("path", &self.inner.path)
            .field("id", &self.inner.id)
            .field("leader", &*self.inner.leader.borrow())
            .field(
                "node",
                &self.inner.node.lock().as_ref().map(|(n, _)| n.clone()),
            )
            .finish()
    }
}

/// Where the participant stands after a look at the children.
enum Position {
    Leader(Watcher),
    Follower(Watcher),
    /// Our node is missing or not ours: make a new one.
    Reset,
}

impl LeaderLatch {
    /// A latch on `path` for the participant `id` (stored as its node's data, UTF-8).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path ZooKeeper would reject.
    pub fn new(client: CuratorFramework, path: &str, id: impl Into<String>) -> Result<Self> {
        paths::validate(path)?;
        let listeners = client.listener_container("leader latch");
        let events = client.listener_container("leader latch events");
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                path: path.to_owned(),
                id: id.into(),
                leader: watch::Sender::new(false),
                lifecycle: Mutex::new(Lifecycle::Latent),
                node: Mutex::new(None),
                listeners,
                events,
                cancel: CancellationToken::new(),
                task: Mutex::new(None),
            }),
        })
    }

    /// Joins the election (in the background; returns at once).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when already started, [`Error::Closed`] when closed.
    pub async fn start(&self) -> Result<()> {
        {
            let mut lifecycle = self.inner.lifecycle.lock();
            match *lifecycle {
                Lifecycle::Latent => *lifecycle = Lifecycle::Started,
                Lifecycle::Started => {
                    return Err(Error::InvalidArgument(
                        "the latch is already started".into(),
                    ));
                }
                Lifecycle::Closed => return Err(Error::Closed),
            }
        }
        let inner = Arc::clone(&self.inner);
        *self.inner.task.lock() = Some(tokio::spawn(run(inner)));
        Ok(())
    }

    /// Leaves the election: stops the background work and deletes this participant's node.
    ///
    /// # Errors
    /// Connection errors deleting the node (the delete goes on in the background).
    pub async fn close(&self, mode: CloseMode) -> Result<()> {
        {
            let mut lifecycle = self.inner.lifecycle.lock();
            if *lifecycle == Lifecycle::Closed {
                return Ok(());
            }
            *lifecycle = Lifecycle::Closed;
        }
        self.inner.cancel.cancel();
        let task = self.inner.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
        match mode {
            CloseMode::NotifyLeader => self.inner.set_leader(false),
            CloseMode::Silent => {
                self.inner.leader.send_replace(false);
            }
        }
        let node = self.inner.node.lock().take();
        let result = match node {
            Some((node, _)) => {
                self.inner
                    .client
                    .delete()
                    .guaranteed()
                    .quietly()
                    .for_path(&node)
                    .await
            }
            None => Ok(()),
        };
        self.inner.events.publish(ElectionEvent::Stopped);
        result
    }

    /// Whether this participant leads now.
    pub fn has_leadership(&self) -> bool {
        *self.inner.leader.borrow()
    }

    /// Waits until this participant leads.
    ///
    /// # Errors
    /// [`Error::Closed`] when the latch is closed first.
    pub async fn await_leadership(&self) -> Result<()> {
        let mut leader = self.inner.leader.subscribe();
        tokio::select! {
            result = leader.wait_for(|l| *l) => result.map(drop).map_err(|_| Error::Closed),
            () = self.inner.cancel.cancelled() => Err(Error::Closed),
        }
    }

    /// Waits up to `timeout` to lead; `false` when it did not.
    ///
    /// # Errors
    /// [`Error::Closed`] when the latch is closed first.
    pub async fn await_leadership_timeout(&self, timeout: Duration) -> Result<bool> {
        match tokio::time::timeout(timeout, self.await_leadership()).await {
            Ok(result) => result.map(|()| true),
            Err(_) => Ok(false),
        }
    }

    /// This participant's id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// Where to hear `IsLeader` / `NotLeader`.
    pub fn listenable(&self) -> Listenable<LatchEvent> {
        self.inner.listeners.listenable()
    }

    /// Where to hear the election's steps ([`ElectionEvent`]).
    pub fn events(&self) -> Listenable<ElectionEvent> {
        self.inner.events.listenable()
    }

    /// Every participant, in election order (the first leads), with the id read from its node.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        let nodes = self.participant_nodes().await?;
        read_participants(&self.inner.client, nodes).await
    }

    /// The participants' nodes in election order (the first leads), as full paths: the same
    /// shape as every recipe's `participant_nodes()`.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn participant_nodes(&self) -> Result<Vec<String>> {
        let path = &self.inner.path;
        match self.inner.client.get_children().for_path(path).await {
            Ok((children, _)) => Ok(sorted(children)
                .iter()
                .map(|name| paths::join(path, name))
                .collect()),
            Err(Error::NoNode) => Ok(Vec::new()),
            Err(error) => Err(error),
        }
    }

    /// The current leader, if any participant exists.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn leader(&self) -> Result<Option<Participant>> {
        Ok(self.participants().await?.into_iter().next())
    }

    /// This participant's node, while it has one.
    pub fn node_path(&self) -> Option<String> {
        self.inner
            .node
            .lock()
            .as_ref()
            .map(|(node, _)| node.clone())
    }
}

fn sorted(mut children: Vec<String>) -> Vec<String> {
    children.sort_by(|a, b| paths::sort_key(a, LATCH_NAME).cmp(paths::sort_key(b, LATCH_NAME)));
    children
}

impl Inner {
    fn set_leader(&self, leader: bool) {
        if self.leader.send_replace(leader) != leader {
            tracing::info!(path = %self.path, id = %self.id, leader, "leadership changed");
            self.listeners.publish(if leader {
                LatchEvent::IsLeader
            } else {
                LatchEvent::NotLeader
            });
        }
    }

    /// Our node on the current session: kept if it is, made anew (the old one deleted) if not.
    async fn ensure_node(&self) -> Result<String> {
        let session = self.client.session_id();
        let existing = self.node.lock().clone();
        if let Some((node, made_in)) = &existing {
            if Some(*made_in) == session {
                return Ok(node.clone());
            }
            // From an older session: gone, or about to go; never ours to lead with.
            let _ = self
                .client
                .delete()
                .guaranteed()
                .quietly()
                .for_path(node)
                .await;
        }
        let (node, stat) = self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_protection()
            .with_mode(CreateMode::EphemeralSequential)
            .for_path(&paths::join(&self.path, LATCH_NAME), self.id.as_bytes())
            .with_stat()
            .await?;
        *self.node.lock() = Some((node.clone(), stat.ephemeral_owner));
        self.events.publish(ElectionEvent::OfferMade);
        Ok(node)
    }

    async fn position(&self, node: &str) -> Result<Position> {
        let ours = paths::node_name(node).to_owned();
        loop {
            // The listing and the read of our own node go out together: a participant that turns
            // out first already has what it needs to lead (one round trip after a hand-over).
            let listing = self
                .client
                .get_children()
                .for_path(&self.path)
                .into_future();
            let own = self
                .client
                .get_data()
                .watched()
                .for_path(node)
                .into_future();
            let children = sorted(listing.await?.0);
            let own = own.await;
            let Some(index) = children.iter().position(|c| *c == ours) else {
                return Ok(Position::Reset);
            };
            if index == 0 {
                // Lead only with a node of the current session.
                return match own {
                    Ok((_, stat, watcher))
                        if Some(stat.ephemeral_owner) == self.client.session_id() =>
                    {
                        Ok(Position::Leader(watcher))
                    }
                    Ok(_) | Err(Error::NoNode) => Ok(Position::Reset),
                    Err(error) => Err(error),
                };
            }
            let previous = paths::join(&self.path, &children[index - 1]);
            match self.client.get_data().watched().for_path(&previous).await {
                Ok((_, _, watcher)) => return Ok(Position::Follower(watcher)),
                Err(Error::NoNode) => continue,
                Err(error) => return Err(error),
            }
        }
    }
}

/// The latch's state machine: make an offer, determine the position, lead or follow, and start
/// over on any change. Connection trouble ends leadership at once.
async fn run(inner: Arc<Inner>) {
    let mut states = inner.client.connection_state_stream();
    let policy = inner.client.connection_state_error_policy();
    let cancel = inner.cancel.clone();
    loop {
        if cancel.is_cancelled() {
            return;
        }
        let step = async {
            let node = inner.ensure_node().await?;
            inner.events.publish(ElectionEvent::Determining);
            let position = inner.position(&node).await?;
            Ok::<_, Error>((node, position))
        };
        let (node, position) = tokio::select! {
            () = cancel.cancelled() => return,
            result = step => match result {
                Ok(found) => found,
                Err(error) => {
                    inner.events.publish(ElectionEvent::Failed(error.to_string()));
                    inner.set_leader(false);
                    if !wait_until_connected(&inner, &mut states, &cancel).await {
                        return;
                    }
                    continue;
                }
            },
        };
        let watcher = match position {
            Position::Reset => {
                inner.set_leader(false);
                let stale = inner.node.lock().take();
                if let Some((stale, _)) = stale {
                    let _ = inner
                        .client
                        .delete()
                        .guaranteed()
                        .quietly()
                        .for_path(&stale)
                        .await;
                }
                continue;
            }
            Position::Leader(_)
                if inner
                    .client
                    .connection_state()
                    .is_some_and(|s| policy.is_error_state(s)) =>
            {
                // The connection went bad while we looked: lead only once it is back.
                if !wait_until_connected(&inner, &mut states, &cancel).await {
                    return;
                }
                continue;
            }
            Position::Leader(watcher) => {
                inner.set_leader(true);
                inner.events.publish(ElectionEvent::Elected);
                watcher
            }
            Position::Follower(watcher) => {
                inner.set_leader(false);
                inner.events.publish(ElectionEvent::Ready);
                watcher
            }
        };
        // Wait for a change: the watched node, or the connection.
        let changed = watcher.changed();
        tokio::pin!(changed);
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                event = &mut changed => {
                    if event.event_type == EventType::NodeDeleted && event.path == node {
                        inner.node.lock().take();
                    }
                    break;
                }
                state = states.next() => {
                    let Some(state) = state else { return };
                    if policy.is_error_state(state) {
                        inner.set_leader(false);
                        if !wait_until_connected(&inner, &mut states, &cancel).await {
                            return;
                        }
                        // Re-read everything after any reconnect.
                        break;
                    }
                }
            }
        }
    }
}

/// Waits for `Connected`, `Reconnected` or `ReadOnly`; `false` when the latch closes first.
async fn wait_until_connected(
    inner: &Inner,
    states: &mut curator_framework::listen::ListenerStream<ConnectionState>,
    cancel: &CancellationToken,
) -> bool {
    if inner.client.is_connected() {
        return true;
    }
    loop {
        tokio::select! {
            () = cancel.cancelled() => return false,
            state = states.next() => match state {
                Some(state) if state.is_connected() => return true,
                Some(_) => {}
                None => return false,
            },
        }
    }
}
