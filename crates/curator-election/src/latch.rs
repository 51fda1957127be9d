//! `LeaderLatch`: Curator's leader latch.

use std::fmt;
use std::sync::Arc;

use curator_framework::listen::{Listenable, ListenerContainer, ListenerStream};
use curator_framework::metrics::names;
use curator_framework::ops::delete::Delete;
use curator_framework::recipe::{
    Backoff, HandleGuard, Hold, Recipe, RecipeCore, RecipeEvents, RecipeOptions, RecipeState,
};
use curator_framework::types::EventType;
use curator_framework::watcher::Watcher;
use curator_framework::{ConnectionState, CreateMode, CuratorFramework, Error, Result, paths};
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::participant::{self, Participant};
use curator_locks::LockDelay;

const LATCH_NAME: &str = "latch-";

/// What a latch's listeners hear: its leadership changes, and the steps of ZooKeeper's own
/// election recipe (for users moving over from it).
///
/// Only [`IsLeader`](Self::IsLeader) and [`NotLeader`](Self::NotLeader) to follow leadership:
///
/// ```no_run
/// # fn demo(latch: curator_election::LeaderLatch) {
/// use curator_election::LatchEvent;
/// let leadership = latch.listenable().filter_map(|event| {
///     matches!(event, LatchEvent::IsLeader | LatchEvent::NotLeader).then_some(event)
/// });
/// leadership.add_listener(|event| println!("{event:?}")).detach();
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LatchEvent {
    /// This participant leads now (ZooKeeper's recipe: elected).
    IsLeader,
    /// This participant stopped leading.
    NotLeader,
    /// This participant's node was created (its offer).
    OfferMade,
    /// It is finding out where it stands.
    Determining,
    /// It follows, watching the participant just before it.
    Ready,
    /// A step failed; it tries again (once connected). Except after
    /// [`Error::ResponseTooLarge`] (the election lists more children than the client's
    /// `max_listing_bytes`): the latch then withdraws its offer and takes no further part until
    /// closed, and [`await_leadership`](LeaderLatch::await_leadership) returns that error.
    Failed(Error),
    /// The latch was closed.
    Stopped,
}

/// How [`LeaderLatch::close`] treats a leader's listeners (a builder option).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CloseMode {
    /// Leadership ends without a `NotLeader` event (Curator's default).
    #[default]
    Silent,
    /// A leader's listeners hear `NotLeader`.
    NotifyLeader,
}

/// A leader latch: of all participants on a path, exactly one leads at a time (Curator's
/// `LeaderLatch` layout, so Java participants take part too).
///
/// Build it with [`builder`](Self::builder), [`start`](Self::start) it, then ask
/// [`has_leadership`](Self::has_leadership), wait with
/// [`await_leadership`](Self::await_leadership), take the leader's [`hold`](Self::hold), or
/// listen for [`LatchEvent`]s. A leader loses leadership when its connection state becomes an
/// error under the client's connection-state error policy (its hold learns it as every hold of
/// the client does, at the same moment, whatever circuit breaker the client's listeners have),
/// and regains it only after checking its node on the current session.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_election::{CloseMode, LatchEvent, LeaderLatch};
/// let latch = LeaderLatch::builder(client, "/election/reports", "worker-1")
///     .close_mode(CloseMode::NotifyLeader)
///     .build()?;
/// let _on_change = latch.listenable().add_listener(|event: LatchEvent| println!("{event:?}"));
/// latch.start().await?;
/// if let Ok(led) = tokio::time::timeout(std::time::Duration::from_secs(10), latch.await_leadership()).await {
///     led?;
///     if let Some(hold) = latch.hold() {
///         // lead, handing hold.fencing_token() to what the leader writes, until hold.lost()
///     }
/// }
/// latch.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaderLatch {
    inner: Arc<Inner>,
    /// Cancels the recipe's tasks when the last handle is dropped.
    _guard: HandleGuard,
}

/// Options of a [`LeaderLatch`], from [`LeaderLatch::builder`].
#[derive(Debug)]
#[must_use = "a builder does nothing until .build()"]
pub struct LeaderLatchBuilder {
    client: CuratorFramework,
    path: String,
    id: String,
    close_mode: CloseMode,
    lock_delay: Option<std::time::Duration>,
    options: RecipeOptions,
}

impl LeaderLatchBuilder {
    /// Lock-delay for leadership, as curator-locks' `InterProcessMutexBuilder::lock_delay`:
    /// when a leader *fails* (its session ends before it leaves), the next participant leads
    /// only once `delay` has passed on ZooKeeper's clock since the failure was seen, so that
    /// what the failed leader sent drains first; a leader that closes its latch hands over at
    /// once. The record is the data of the latch's path (made persistent, not a container).
    /// Java Curator's `LeaderLatch` on the same path neither honours nor causes a delay.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// let latch = curator_election::LeaderLatch::builder(client, "/election/billing", "node-1")
    ///     .lock_delay(Duration::from_secs(15))
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn lock_delay(mut self, delay: std::time::Duration) -> Self {
        self.lock_delay = Some(delay);
        self
    }

    /// The latch's name (default: its path): the `name` label of its metrics
    /// (`curator_leader_tenure_seconds`, `curator_leader_is_leader`), and what its logs and
    /// unhandled errors say. Latches sharing a name share their series (and the gauge shows the
    /// last change of any of them), so give each election of a bounded set its own name.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let latch = curator_election::LeaderLatch::builder(client, "/election/shard-7", "node-1")
    ///     .metrics_name("shards")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// Whether [`LeaderLatch::close`] tells a leader's listeners (default: [`CloseMode::Silent`],
    /// as Curator).
    pub fn close_mode(mut self, mode: CloseMode) -> Self {
        self.close_mode = mode;
        self
    }

    /// The latch (not started).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path ZooKeeper would reject; [`Error::InvalidArgument`]
    /// for a lock-delay of zero or over a day.
    pub fn build(self) -> Result<LeaderLatch> {
        paths::validate(&self.path)?;
        let lock_delay = self.lock_delay.map(LockDelay::new).transpose()?;
        let client = self.client;
        // Curator's default id is empty; an empty id here is the client's identity instead, so
        // the node says who made it (Java reads it as the participant's id).
        let id = if self.id.is_empty() {
            client.identity().to_string()
        } else {
            self.id
        };
        let core = RecipeCore::new(&client, "LeaderLatch", &self.path, &self.options);
        let inner = Arc::new(Inner {
            events: core.listener_container(&client),
            core,
            client,
            path: self.path,
            id: Mutex::new(id),
            close_mode: self.close_mode,
            leader: watch::Sender::new(false),
            gave_up: watch::Sender::new(None),
            leadership: Mutex::new(None),
            node: Mutex::new(None),
            proclaiming: tokio::sync::Mutex::new(()),
            lock_delay,
            delay_prepared: std::sync::atomic::AtomicBool::new(false),
        });
        Ok(LeaderLatch {
            _guard: inner.core.handle_guard(),
            inner,
        })
    }
}

struct Inner {
    client: CuratorFramework,
    path: String,
    /// The id this participant advertises (its node's data): the builder's, then the last
    /// proclaimed.
    id: Mutex<String>,
    close_mode: CloseMode,
    /// The latch's name (the `name` label of its metrics), lifecycle and task.
    core: RecipeCore,
    leader: watch::Sender<bool>,
    /// Why the latch stopped taking part, when it gave up (see [`gives_up`]).
    gave_up: watch::Sender<Option<Error>>,
    /// While leading: the leader's hold, what ends it, and the node's data version.
    leadership: Mutex<Option<Leadership>>,
    /// Our node and the session it was made in.
    node: Mutex<Option<(String, i64)>>,
    events: ListenerContainer<LatchEvent>,
    /// One `proclaim` at a time, so each writes on the version the last one left.
    proclaiming: tokio::sync::Mutex<()>,
    /// The lock-delay a leader promises, and whether the latch's path was made persistent for
    /// its record.
    lock_delay: Option<LockDelay>,
    delay_prepared: std::sync::atomic::AtomicBool,
}

/// One leadership of the latch.
struct Leadership {
    hold: Hold,
    /// The same hold without the step-down's end: what the latch's task waits on. A step-down
    /// is the task's own doing, or `close()`'s (which stops the task), so it need not wake the
    /// task: on a hand-over, a wake-up there delays the delete that `close()` sends next.
    task_hold: Hold,
    end: watch::Sender<bool>,
    /// The data version of the leader's node, as last read or written by this participant.
    version: i32,
    /// When it began (its tenure is recorded when it ends).
    since: tokio::time::Instant,
}

impl fmt::Debug for LeaderLatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderLatch")
            .field("path", &self.inner.path)
            .field("id", &*self.inner.id.lock())
            .field("state", &self.inner.core.state())
            .field("leader", &*self.inner.leader.borrow())
            .field("node", &self.node_path())
            .finish()
    }
}

/// Where the participant stands after a look at the children.
enum Position {
    /// First in line, with a watch on its own node and the node's creation zxid.
    Leader {
        watcher: Watcher,
        token: i64,
        version: i32,
    },
    /// Behind another participant, watching it (`previous`). Second in line, it also holds a
    /// watch on its own node and the node's stat, so it leads the moment the first goes: no
    /// node can come before it later (sequence numbers only grow), so no listing is needed.
    Follower {
        previous: Watcher,
        succession: Option<Succession>,
    },
    /// Our node is missing or not ours: make a new one.
    Reset,
}

/// What a participant second in line needs to lead: a watch on its own node (of the current
/// session), the node's creation zxid and data version.
struct Succession {
    watcher: Watcher,
    token: i64,
    version: i32,
}

impl LeaderLatch {
    /// Options of a latch on `path` for the participant `id` (stored as its node's data, UTF-8).
    /// An empty `id` (Curator's default) stands for the client's
    /// [`identity`](curator_framework::CuratorFramework::identity) (`host=…;pid=…;name=…`), so
    /// the node says who made it.
    pub fn builder(
        client: CuratorFramework,
        path: &str,
        id: impl Into<String>,
    ) -> LeaderLatchBuilder {
        LeaderLatchBuilder {
            client,
            path: path.to_owned(),
            id: id.into(),
            close_mode: CloseMode::default(),
            lock_delay: None,
            options: RecipeOptions::new(),
        }
    }

    /// Joins the election: makes this participant's offer (its node) and returns once it is in
    /// line; from then on a background task leads or follows, and makes a new offer after a
    /// session ends.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started, [`Error::Closed`] when closed; connection errors
    /// making the offer (the latch is then not started, and `start` may be called again).
    ///
    /// # Cancellation safety
    /// Dropping the future before it returns leaves the latch not started (an offer it made is
    /// deleted in the background).
    pub async fn start(&self) -> Result<()> {
        let inner = &self.inner;
        inner.core.lifecycle().ensure_startable()?;
        let (node, session) = inner.make_offer().await?;
        // Under the node's lock, so that a `close()` coming now finds the node to delete.
        let started = {
            let mut ours = inner.node.lock();
            let started = inner.core.lifecycle().start();
            if started.is_ok() {
                *ours = Some((node.clone(), session));
            }
            started
        };
        if let Err(error) = started {
            // Another `start()` came first, or `close()` did: this offer is not needed.
            let _ = inner.delete_node(&node).await;
            return Err(error);
        }
        inner.events.publish(LatchEvent::OfferMade);
        inner.core.tasks().spawn(run(Arc::clone(inner))).detach();
        Ok(())
    }

    /// Leaves the election: stops the background task, ends leadership (telling listeners as the
    /// builder's [`CloseMode`] says), deletes this participant's node and publishes
    /// [`LatchEvent::Stopped`]. Later calls return `Ok(())`.
    ///
    /// # Errors
    /// Connection errors deleting the node (the delete goes on in the background).
    ///
    /// # Cancellation safety
    /// The latch is closed (for good) at the first poll. Dropping the future before it finished
    /// may leave the node to the session (it goes when the session ends), or its delete to the
    /// background.
    pub async fn close(&self) -> Result<()> {
        let inner = &self.inner;
        if !inner.core.lifecycle().close() {
            return Ok(());
        }
        let notify = inner.close_mode == CloseMode::NotifyLeader;
        // Leadership ends before the delete goes out, and the delete is the first thing sent:
        // the task is cancelled only once the delete has its reply. By then the watch on our own
        // node has fired (a session hears a write's notifications before its reply), so a
        // leader's task has ended by itself (it stops once the latch is closed) and no removal
        // of that watch goes to the server; the next participant's hand-over starts at once.
        inner.step_down(notify);
        let node = inner.node.lock().take();
        // Cancels the task however this future ends, dropped half-way included.
        let _cancel_if_dropped = inner.core.handle_guard();
        let deleted = inner.delete_own(node).await;
        let _ = inner.core.tasks().close().await;
        // A look that was under way on another thread may have made an offer meanwhile.
        let late = inner.node.lock().take();
        inner.step_down(notify);
        let result = deleted.and(inner.delete_own(late).await);
        inner.events.publish(LatchEvent::Stopped);
        result
    }

    /// Whether this participant leads now: `false` from the moment its leadership's
    /// [`hold`](Self::hold) is lost (a connection in trouble, a session gone), even before the
    /// latch's task has stepped down and told its listeners.
    pub fn has_leadership(&self) -> bool {
        *self.inner.leader.borrow()
            && self
                .inner
                .leadership
                .lock()
                .as_ref()
                .is_some_and(|leadership| !leadership.hold.is_lost())
    }

    /// While this participant leads, its hold: the latch node, its creation zxid as the fencing
    /// token (it grows with every new leadership's node), and a [`lost`](Hold::lost) signal that
    /// resolves when this leadership ends (for any reason: connection trouble, a lost node,
    /// `close()`, or the client's close). Connection trouble reaches it by the route every hold
    /// of the client shares (see [`Hold`]), at the same moment as a lock's.
    ///
    /// ```no_run
    /// # fn demo(latch: curator_election::LeaderLatch) {
    /// if let Some(hold) = latch.hold() {
    ///     assert_eq!(Some(hold.fencing_token()), latch.leader_epoch());
    /// }
    /// # }
    /// ```
    pub fn hold(&self) -> Option<Hold> {
        self.inner
            .leadership
            .lock()
            .as_ref()
            .map(|leadership| leadership.hold.clone())
    }

    /// While this participant leads, the epoch of its leadership: its node's creation zxid,
    /// the same number as [`hold()`](Self::hold)'s fencing token and as the
    /// [`epoch`](Participant::epoch) that [`leader()`](Self::leader) and a
    /// [`LeaderObserver`](crate::LeaderObserver) report. Every later leadership on the path has
    /// a greater epoch (see the crate's "Leader epochs").
    ///
    /// ```no_run
    /// # async fn demo(latch: curator_election::LeaderLatch) -> curator_framework::Result<()> {
    /// latch.await_leadership().await?;
    /// if let Some(epoch) = latch.leader_epoch() {
    ///     println!("leading in epoch {epoch:#x}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn leader_epoch(&self) -> Option<i64> {
        self.hold().map(|hold| hold.fencing_token())
    }

    /// Changes what this leader advertises, its id (its node's data, UTF-8), without a new
    /// election: observers and [`leader()`](Self::leader) read the new id with the same epoch.
    /// The write is conditional on the node's data version this participant knows, on the node
    /// its leadership rests on: a former leader's node is gone (or no longer its leadership),
    /// so it cannot overwrite anything. The new id is also the data of any later offer of this
    /// latch (after a session ends), and [`id()`](Self::id) returns it.
    ///
    /// Interop: Java Curator reads a participant's id from the same node data
    /// (`getLeader().getId()`), so Java participants see the proclaimed id too.
    ///
    /// ```no_run
    /// # async fn demo(latch: curator_election::LeaderLatch) -> curator_framework::Result<()> {
    /// use curator_framework::Error;
    /// match latch.proclaim("worker-1 at 10.0.0.7:8080").await {
    ///     Ok(()) => {}
    ///     Err(Error::NotLeader { .. }) => println!("only the leader proclaims"),
    ///     Err(error) => return Err(error),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::NotLeader`] when this participant does not lead, or its node is gone (nothing is
    /// written); `BadVersion` when someone else changed the node's data; a connection error
    /// (the write may or may not have happened).
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the write done without [`id()`](Self::id) knowing it
    /// (a later `proclaim` then fails with `BadVersion` until the node is read again).
    pub async fn proclaim(&self, id: impl Into<String>) -> Result<()> {
        let inner = &self.inner;
        let id = id.into();
        let _one_at_a_time = inner.proclaiming.lock().await;
        let (node, version) = match &*inner.leadership.lock() {
            Some(leadership) if !leadership.hold.is_lost() => {
                (leadership.hold.node_path().to_owned(), leadership.version)
            }
            _ => {
                return Err(Error::NotLeader {
                    node: self.node_path().unwrap_or_default(),
                });
            }
        };
        let written = inner
            .client
            .set_data()
            .with_version(version)
            .for_path(&node, id.as_bytes())
            .await;
        match written {
            Ok(stat) => {
                *inner.id.lock() = id;
                let mut leadership = inner.leadership.lock();
                if let Some(leadership) = leadership
                    .as_mut()
                    .filter(|leadership| leadership.hold.node_path() == node)
                {
                    leadership.version = leadership.version.max(stat.version);
                }
                Ok(())
            }
            Err(Error::NoNode) => Err(Error::NotLeader { node }),
            Err(error) => Err(error),
        }
    }

    /// Waits until this participant leads; bound the wait with `tokio::time::timeout`.
    ///
    /// ```no_run
    /// # async fn demo(latch: curator_election::LeaderLatch) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// match tokio::time::timeout(Duration::from_secs(10), latch.await_leadership()).await {
    ///     Ok(led) => led?,
    ///     Err(_) => println!("someone else leads"),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Closed`] when the latch (or the client) is closed first; the error the latch
    /// gave up on (such as [`Error::ResponseTooLarge`]) when it stopped taking part.
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn await_leadership(&self) -> Result<()> {
        let mut leader = self.inner.leader.subscribe();
        let mut gave_up = self.inner.gave_up.subscribe();
        tokio::select! {
            biased;
            () = self.inner.core.tasks().cancelled() => Err(Error::Closed),
            result = gave_up.wait_for(Option::is_some) => {
                Err(result.ok().and_then(|error| error.clone()).unwrap_or(Error::Closed))
            }
            result = leader.wait_for(|leader| *leader) => result.map(drop).map_err(|_| Error::Closed),
        }
    }

    /// This participant's id: the builder's, or the last one [`proclaim`](Self::proclaim)ed.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let latch = curator_election::LeaderLatch::builder(client, "/election/a", "worker-1").build()?;
    /// assert_eq!(latch.id(), "worker-1");
    /// # Ok(()) }
    /// ```
    pub fn id(&self) -> String {
        self.inner.id.lock().clone()
    }

    /// Where to hear [`LatchEvent`]s.
    pub fn listenable(&self) -> Listenable<LatchEvent> {
        self.inner.events.listenable()
    }

    /// Every [`LatchEvent`] from now on, as a stream (`self.listenable().stream()`).
    pub fn stream(&self) -> ListenerStream<LatchEvent> {
        self.listenable().stream()
    }

    /// Every participant, in election order (the first leads), with the id read from its node.
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// Safe (reads).
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        participant::read_all(&self.inner.client, self.participant_nodes().await?).await
    }

    /// The participants' nodes in election order (the first leads), as full paths: the same
    /// shape as every recipe's `participant_nodes()`.
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// Safe (a read).
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
    ///
    /// # Cancellation safety
    /// Safe (reads).
    pub async fn leader(&self) -> Result<Option<Participant>> {
        participant::read_leader(&self.inner.client, self.participant_nodes().await?).await
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

impl Recipe for LeaderLatch {
    fn core(&self) -> &RecipeCore {
        &self.inner.core
    }

    async fn start(&self) -> Result<()> {
        LeaderLatch::start(self).await
    }

    async fn close(&self) -> Result<()> {
        LeaderLatch::close(self).await
    }
}

impl RecipeEvents for LeaderLatch {
    type Event = LatchEvent;

    fn listenable(&self) -> Listenable<LatchEvent> {
        LeaderLatch::listenable(self)
    }
}

fn sorted(mut children: Vec<String>) -> Vec<String> {
    children.sort_by(|a, b| paths::sort_key(a, LATCH_NAME).cmp(paths::sort_key(b, LATCH_NAME)));
    children
}

impl Inner {
    /// Publishes a leadership change (only a change).
    ///
    /// The event is queued for the listeners before those awaiting leadership are woken, so the
    /// awaiting task is the one this thread runs next (the listeners' dispatcher goes behind it).
    fn set_leader(&self, leader: bool) {
        self.leader.send_if_modified(|current| {
            if *current == leader {
                return false;
            }
            *current = leader;
            tracing::info!(path = %self.path, id = %self.id.lock(), leader, "leadership changed");
            self.events.publish(if leader {
                LatchEvent::IsLeader
            } else {
                LatchEvent::NotLeader
            });
            true
        });
    }

    /// Leads with `node`, whose creation zxid is `token` and data version `version`; returns the
    /// leadership's hold for the task (lost with the connection or the client, not by a
    /// step-down), or `None` when it does not lead: the latch is closed, or the
    /// connection went bad (the hold is lost).
    fn lead(&self, node: &str, token: i64, version: i32) -> Option<Hold> {
        // The hold first: whoever sees `has_leadership()` finds it.
        let mut leadership = self.leadership.lock();
        // Under the lock `close()`'s step-down takes: a closed latch never leads again.
        if self.core.state() == RecipeState::Closed {
            return None;
        }
        let leadership = match &mut *leadership {
            Some(leadership) if leadership.hold.is_lost() => return None,
            Some(leadership) => leadership,
            None => {
                let (end, ended) = watch::channel(false);
                // Lost by the route of every hold of the client (an error state published from
                // now on), or by the step-down. Made before the state is looked at, so an error
                // state published before it shows here and one published after it loses it.
                let task_hold = Hold::new(&self.client, node.to_owned(), token).for_leadership();
                let hold = task_hold.clone().ended_by(ended);
                let policy = self.client.connection_state_error_policy();
                let connection_bad = self
                    .client
                    .connection_state()
                    .is_some_and(|state| policy.is_error_state(state));
                if connection_bad || hold.is_lost() {
                    return None;
                }
                self.core.name().set(names::LEADER_IS_LEADER, 1.0);
                leadership.insert(Leadership {
                    hold,
                    task_hold,
                    end,
                    version,
                    since: tokio::time::Instant::now(),
                })
            }
        };
        // Versions only grow: a read older than our own last proclaim must not undo it.
        leadership.version = leadership.version.max(version);
        let hold = leadership.task_hold.clone();
        self.set_leader(true);
        Some(hold)
    }

    /// Ends leadership, if any: the hold is lost at once; listeners hear `NotLeader` when
    /// `notify`.
    fn step_down(&self, notify: bool) {
        if let Some(leadership) = self.leadership.lock().take() {
            leadership.end.send_replace(true);
            let name = self.core.name();
            name.record(names::LEADER_TENURE_SECONDS, leadership.since.elapsed());
            name.set(names::LEADER_IS_LEADER, 0.0);
        }
        if notify {
            self.set_leader(false);
        } else {
            self.leader.send_replace(false);
        }
    }

    /// The delete of a node of ours: guaranteed, and quiet (gone already is fine).
    fn delete_node(&self, node: &str) -> Delete {
        self.client.delete().guaranteed().quietly().for_path(node)
    }

    /// Deletes our node on close, if there is one; a closed client took it with its session.
    async fn delete_own(&self, node: Option<(String, i64)>) -> Result<()> {
        match node {
            Some((node, _)) => match self.withdraw(&node).await {
                Err(Error::Closed) => Ok(()),
                other => other,
            },
            None => Ok(()),
        }
    }

    /// Deletes our node: under a lock-delay, with its line out of the record in the same
    /// transaction (a leader that leaves is no failure); a plain delete if that fails.
    async fn withdraw(&self, node: &str) -> Result<()> {
        // Disconnected: the plain delete (guaranteed, it goes on in the background) rather than
        // a read and a transaction that would wait for the connection.
        if self.lock_delay.is_some() && self.client.is_connected() {
            match LockDelay::release(&self.client, &self.path, paths::node_name(node)).await {
                Ok(()) => return Ok(()),
                Err(Error::Closed) => return Err(Error::Closed),
                Err(error) => {
                    tracing::warn!(node, %error, "a lock-delay release failed: the node is deleted alone (counted as a failure)");
                }
            }
        }
        self.delete_node(node).await
    }

    /// Creates an offer: a new node, with the session it belongs to.
    async fn make_offer(&self) -> Result<(String, i64)> {
        if self.lock_delay.is_some()
            && !self
                .delay_prepared
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            LockDelay::prepare(&self.client, &self.path).await?;
            self.delay_prepared
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let id = self.id.lock().clone();
        let (node, stat) = self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_protection()
            .with_mode(CreateMode::EphemeralSequential)
            .for_path(&paths::join(&self.path, LATCH_NAME), id.as_bytes())
            .with_stat()
            .await?;
        Ok((node, stat.ephemeral_owner))
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
            let _ = self.delete_node(node).await;
        }
        let offer = self.make_offer().await?;
        let node = offer.0.clone();
        *self.node.lock() = Some(offer);
        self.events.publish(LatchEvent::OfferMade);
        Ok(node)
    }

    async fn position(&self, node: &str) -> Result<Position> {
        let ours = paths::node_name(node).to_owned();
        loop {
            // The listing and the read of our own node go out together: a participant that turns
            // out first already has what it needs to lead (one round trip after a hand-over).
            //
            // Our own node is watched with a *child* watch (with its stat): on an ephemeral node
            // it fires only when the node goes, as a data watch would, but the server tells a
            // deleted node's data watchers before its child watchers. So when a leader deletes
            // its node, the next participant (a data watch on it, as Curator's participants
            // set) hears it before the leader's own watch is served, on every server (with a
            // data watch here, the server would write the leader's notification first in about
            // half the hand-overs, and the next participant would wait behind it).
            let listing = self
                .client
                .get_children()
                .for_path(&self.path)
                .into_future();
            let own = self
                .client
                .get_children()
                .watched()
                .for_path(node)
                .into_future();
            let children = sorted(listing.await?.0);
            let own = own.await;
            let Some(index) = children.iter().position(|c| *c == ours) else {
                return Ok(Position::Reset);
            };
            // The planted bug: leading as second in line too.
            #[cfg(feature = "planted-bugs")]
            let index = if crate::planted::planted() && index == 1 {
                0
            } else {
                index
            };
            if index == 0 {
                // Lead only with a node of the current session.
                return match own {
                    Ok((_, stat, watcher))
                        if Some(stat.ephemeral_owner) == self.client.session_id() =>
                    {
                        Ok(Position::Leader {
                            watcher,
                            token: stat.czxid,
                            version: stat.version,
                        })
                    }
                    Ok(_) | Err(Error::NoNode) => Ok(Position::Reset),
                    Err(error) => Err(error),
                };
            }
            let succession = match own {
                Ok((_, stat, watcher))
                    if index == 1 && Some(stat.ephemeral_owner) == self.client.session_id() =>
                {
                    Some(Succession {
                        watcher,
                        token: stat.czxid,
                        version: stat.version,
                    })
                }
                _ => None,
            };
            let previous = paths::join(&self.path, &children[index - 1]);
            match self.client.get_data().watched().for_path(&previous).await {
                Ok((_, _, watcher)) => {
                    return Ok(Position::Follower {
                        previous: watcher,
                        succession,
                    });
                }
                // The first in line went while we looked (a hand-over racing our look): we are
                // first now, as when its deletion fires our watch (no node can appear below
                // ours: sequence numbers only grow). A look again would cost a round trip.
                Err(Error::NoNode) => match succession {
                    Some(next) => {
                        return Ok(Position::Leader {
                            watcher: next.watcher,
                            token: next.token,
                            version: next.version,
                        });
                    }
                    None => continue,
                },
                Err(error) => return Err(error),
            }
        }
    }
}

/// Ends leadership when the latch's task ends other than by the latch's `close()` (which does
/// it itself, as its close mode says): the client closed, and leadership went with its session.
struct StepDownOnExit(Arc<Inner>);

impl Drop for StepDownOnExit {
    fn drop(&mut self) {
        if self.0.core.state() != RecipeState::Closed {
            // Listeners hear nothing after the client's close; the flag and the hold still tell.
            self.0.step_down(false);
        }
    }
}

/// Whether the latch stops at `error` instead of trying again: a listing of the election longer
/// than the client's `max_listing_bytes` would fail again on every try.
fn gives_up(error: &Error) -> bool {
    matches!(error, Error::ResponseTooLarge { .. })
}

/// The latch's state machine: determine the position, lead or follow, and start over on any
/// change (with a new offer when the node is gone). Connection trouble ends leadership at once.
/// It runs until the latch's tasks are cancelled (by `close()` or the client's close).
async fn run(inner: Arc<Inner>) {
    let _exit = StepDownOnExit(Arc::clone(&inner));
    let mut states = inner.client.connection_state_stream();
    let policy = inner.client.connection_state_error_policy();
    let mut backoff = Backoff::standard();
    // A position known without a look: the one before us went while we were second in line.
    let mut succeeded: Option<(String, Position)> = None;
    loop {
        // `close()` ends leadership and deletes the node itself; the task only stops.
        if inner.core.state() == RecipeState::Closed {
            return;
        }
        let step = async {
            if let Some(found) = succeeded.take() {
                return Ok(found);
            }
            let node = inner.ensure_node().await?;
            inner.events.publish(LatchEvent::Determining);
            let position = inner.position(&node).await?;
            Ok::<_, Error>((node, position))
        };
        let (node, position) = match step.await {
            Ok(found) => found,
            Err(error) if gives_up(&error) => {
                // Where it stands cannot be known: withdraw the offer (a first node nobody
                // acts on would leave the election without a leader) and stop.
                inner.step_down(true);
                let ours = inner.node.lock().take();
                if let Some((ours, _)) = ours {
                    let _ = inner.withdraw(&ours).await;
                }
                tracing::warn!(path = %inner.path, %error, "the latch gives up; it takes no further part until closed");
                inner.gave_up.send_replace(Some(error.clone()));
                inner.events.publish(LatchEvent::Failed(error));
                return;
            }
            Err(error) => {
                inner.events.publish(LatchEvent::Failed(error));
                inner.step_down(true);
                backoff.wait().await;
                if !wait_until_connected(&inner, &mut states).await {
                    return;
                }
                continue;
            }
        };
        let (watcher, succession, hold) = match position {
            Position::Reset => {
                inner.step_down(true);
                let stale = inner.node.lock().take();
                if let Some((stale, _)) = stale {
                    let _ = inner.delete_node(&stale).await;
                }
                continue;
            }
            Position::Leader {
                watcher,
                token,
                version,
            } => match admit(&inner, &node).await {
                Ok(true) => match inner.lead(&node, token, version) {
                    Some(hold) => (watcher, None, Some(hold)),
                    None => {
                        // The connection went bad while we looked: lead only once it is back
                        // (and not meanwhile, if this participant led before the look).
                        inner.step_down(true);
                        if !wait_until_connected(&inner, &mut states).await {
                            return;
                        }
                        continue;
                    }
                },
                // The latch's path is gone, and our node with it: look again.
                Ok(false) => continue,
                Err(error) => {
                    inner.events.publish(LatchEvent::Failed(error));
                    inner.step_down(true);
                    backoff.wait().await;
                    if !wait_until_connected(&inner, &mut states).await {
                        return;
                    }
                    continue;
                }
            },
            Position::Follower {
                previous,
                succession,
            } => {
                inner.step_down(true);
                inner.events.publish(LatchEvent::Ready);
                (previous, succession, None)
            }
        };
        backoff.reset();
        // Wait for a change: the watched node, the leader's hold, or the connection.
        let changed = watcher.changed();
        tokio::pin!(changed);
        // A leader learns of connection trouble through its hold, by the route every hold of
        // the client shares (no circuit breaker holds it back); `close()` ends the hold too.
        let lost = async {
            match &hold {
                Some(hold) => hold.lost().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(lost);
        let mut leading = hold.is_some();
        loop {
            tokio::select! {
                event = &mut changed => {
                    if event.event_type == EventType::NodeDeleted {
                        if event.path == node {
                            inner.node.lock().take();
                            // Our node is gone (the session ended, or someone deleted it):
                            // leadership ends now, not after the look that follows (which may
                            // wait for a new session), even when the deletion is heard before
                            // the connection trouble that ends the hold.
                            if leading && inner.core.state() != RecipeState::Closed {
                                inner.step_down(true);
                            }
                        } else if let Some(next) = succession {
                            // The first in line went: we are first now, on the session that
                            // made our node (`lead` checks the connection).
                            if inner.client.session_id() == inner.node.lock().as_ref().map(|n| n.1) {
                                succeeded = Some((
                                    node,
                                    Position::Leader {
                                        watcher: next.watcher,
                                        token: next.token,
                                        version: next.version,
                                    },
                                ));
                            }
                        }
                    }
                    break;
                }
                () = &mut lost, if leading => {
                    leading = false;
                    if inner.core.state() == RecipeState::Closed {
                        // `close()` stepped down; its delete ends the watch on our node.
                        continue;
                    }
                    inner.step_down(true);
                    if !wait_until_connected(&inner, &mut states).await {
                        return;
                    }
                    // Re-read everything after any reconnect.
                    break;
                }
                state = states.next() => {
                    let Some(state) = state else { return };
                    // A leader's hold says it first; a state heard through the listener's
                    // circuit breaker may be late (or absorbed).
                    if !leading && policy.is_error_state(state) {
                        inner.step_down(true);
                        if !wait_until_connected(&inner, &mut states).await {
                            return;
                        }
                        // Re-read everything after any reconnect.
                        break;
                    }
                }
            }
        }
        // A change that ended the wait while the hold was lost too (the session's end fires
        // the watch as it loses the hold): leadership ends now, not after the look that follows,
        // which may wait for a new session.
        if hold.as_ref().is_some_and(Hold::is_lost) && inner.core.state() != RecipeState::Closed {
            inner.step_down(true);
        }
    }
}

/// Under a lock-delay, before a participant first in line leads (and not again while it leads):
/// waits out the delays of failed leaders and writes its line. `false` when the latch's path is
/// gone.
async fn admit(inner: &Inner, node: &str) -> Result<bool> {
    match inner.lock_delay {
        Some(delay) if inner.leadership.lock().is_none() => {
            delay
                .admit_first(&inner.client, &inner.path, paths::node_name(node))
                .await
        }
        _ => Ok(true),
    }
}

/// Waits for `Connected`, `Reconnected` or `ReadOnly`; `false` when the states end first.
async fn wait_until_connected(inner: &Inner, states: &mut ListenerStream<ConnectionState>) -> bool {
    if inner.client.is_connected() {
        return true;
    }
    while let Some(state) = states.next().await {
        if state.is_connected() {
            return true;
        }
    }
    false
}
