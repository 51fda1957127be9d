//! `CuratorFramework`: the client handle, and the state its clones share.
//!
//! The rooms: `slot` (the current session, for waiters), `dispatch` (operations' requests in
//! creation order), `namespace` (namespace nodes made before the first request under them),
//! `background` (guaranteed deletes and protected-create cleanups).

mod background;
mod dispatch;
mod namespace;
mod slot;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub(crate) use dispatch::{Dispatch, Submitted};
pub(crate) use namespace::{Namespaces, creates as namespace_creates};
pub(crate) use slot::Slot;

use crate::builder::{CuratorFrameworkBuilder, Settings};
use crate::error::{Error, Result};
use crate::listen::{Listenable, ListenerContainer, ListenerStream, UnhandledError};
use crate::metrics::{Counters, Metrics};
use crate::paths;
use crate::recipe::RecipeTasks;
use crate::state::circuit_breaker::{CircuitBreaker, StateEvent};
use crate::state::{ConnectionState, ConnectionStateErrorPolicy, FrameworkState};
use crate::wire::{ConnectSettings, WireSession};

/// The shared state behind every clone of a client.
pub(crate) struct Inner {
    pub(crate) settings: Settings,
    pub(crate) connect_settings: ConnectSettings,
    lifecycle: Mutex<FrameworkState>,
    pub(crate) slot: Slot,
    pub(crate) dispatch: Dispatch,
    pub(crate) namespaces: Namespaces,
    /// Raw transitions, and the wake-ups of circuit breakers' periods.
    state_listeners: ListenerContainer<StateEvent>,
    /// How many connection states the error policy counts as errors were published: a
    /// [`Hold`](crate::recipe::Hold) made at count `n` is lost once it moves past `n` (one
    /// counter for every hold of the client, instead of a channel and a listener each).
    pub(crate) error_states: tokio::sync::watch::Sender<u64>,
    /// How many times the connection went into trouble (`Suspended`, `Lost`, `ReadOnly`),
    /// whatever the error policy: a hold made at count `n` is in jeopardy once it moves.
    pub(crate) troubles: tokio::sync::watch::Sender<u64>,
    errors: ListenerContainer<UnhandledError>,
    pub(crate) counters: Counters,
    /// Cancels everything the client runs: the session task, background deletes, listener
    /// dispatch and every recipe task (through child tokens).
    pub(crate) cancel: CancellationToken,
    /// The client's own tasks: the session holder, background deletes, listener dispatch.
    pub(crate) tasks: TaskTracker,
    /// Every task spawned through [`RecipeTasks`].
    recipe_tasks: TaskTracker,
    /// Asks the session task to end the current session (`inject_session_expiration`).
    pub(crate) inject_expiry: tokio::sync::Notify,
    /// The ensemble's configuration as followed through the sessions.
    pub(crate) ensemble: crate::ensemble::Tracker,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inner")
            .field("settings", &self.settings)
            .field("lifecycle", &*self.lifecycle.lock())
            .field("state", &self.slot.state())
            .field("dispatch", &self.dispatch)
            .finish_non_exhaustive()
    }
}

impl Inner {
    /// A new session is connected.
    pub(crate) fn install_session(&self, session: Arc<WireSession>) {
        self.slot.install(Arc::clone(&session));
        self.dispatch.connected(session);
    }

    /// A connection attempt failed in a way retrying cannot fix: waiters learn it now.
    pub(crate) fn connect_failed(&self, failure: Error) {
        tracing::warn!(%failure, "cannot connect");
        self.dispatch.failed(&failure);
        self.slot.set_failure(Some(failure));
    }

    /// The session is gone.
    pub(crate) fn remove_session(&self) {
        self.dispatch.disconnected();
        self.slot.remove();
    }

    /// The session's connection came or went.
    pub(crate) fn set_connected(&self, connected: bool) {
        match (connected, self.slot.session()) {
            (true, Some(session)) => {
                self.slot.set_connected(true);
                self.dispatch.connected(session);
            }
            _ => {
                self.dispatch.disconnected();
                self.slot.set_connected(false);
            }
        }
    }

    pub(crate) fn last_state(&self) -> Option<ConnectionState> {
        self.slot.state()
    }

    pub(crate) fn publish_state(&self, state: ConnectionState) {
        self.slot.set_state(state);
        if matches!(
            state,
            ConnectionState::Suspended | ConnectionState::Lost | ConnectionState::ReadOnly
        ) {
            // Before the listeners hear it, and before holds are lost: every hold of the client
            // is in jeopardy from now on.
            self.troubles.send_modify(|count| *count += 1);
        }
        if self.settings.error_policy.is_error_state(state) {
            // Before the listeners hear it: every hold of the client is lost from now on.
            self.error_states.send_modify(|count| *count += 1);
        }
        Counters::bump(&self.counters.state_transitions);
        crate::metrics::state_published(state);
        tracing::info!(%state, "connection state");
        self.state_listeners.publish(StateEvent::State(state));
    }

    /// Wakes the circuit breakers of connection-state listeners at `deadline`.
    fn tick_at(&self, deadline: tokio::time::Instant) {
        let (cancel, events) = (self.cancel.clone(), self.state_listeners.clone());
        self.tasks.spawn(async move {
            tokio::select! {
                () = cancel.cancelled() => {}
                () = tokio::time::sleep_until(deadline) => events.publish(StateEvent::Tick),
            }
        });
    }

    pub(crate) fn report_error(&self, context: &str, message: String) {
        tracing::error!(context, %message, "unhandled error");
        self.errors.publish(UnhandledError {
            context: context.to_owned(),
            message,
        });
    }

    /// The current session once it is connected, waiting up to the connection timeout.
    pub(crate) async fn connected_session(&self) -> Result<Arc<WireSession>> {
        self.wait_connected(Some(self.settings.connection_timeout))
            .await
    }

    /// The current session once connected; `None` waits without a deadline.
    pub(crate) async fn wait_connected(
        &self,
        timeout: Option<Duration>,
    ) -> Result<Arc<WireSession>> {
        if *self.lifecycle.lock() == FrameworkState::Latent {
            return Err(Error::NotStarted);
        }
        self.slot.wait_connected(timeout).await
    }

    fn begin_close(&self) -> bool {
        {
            let mut lifecycle = self.lifecycle.lock();
            if *lifecycle == FrameworkState::Stopped {
                return false;
            }
            *lifecycle = FrameworkState::Stopped;
        }
        // Recipe work is cancelled before anything it watches changes, so no recipe reacts to
        // the client's own close (a partitioner reporting a lost share, a cache an outage).
        self.cancel.cancel();
        self.dispatch.close();
        self.slot.close();
        self.tasks.close();
        self.recipe_tasks.close();
        true
    }
}

/// Closes the client when the last user handle is dropped.
#[derive(Debug)]
struct Owner(Arc<Inner>);

impl Drop for Owner {
    fn drop(&mut self) {
        // Starts the same close as `close()`, without waiting; the session task closes the
        // session when it sees the cancellation, and recipe tasks end at their cancellation.
        self.0.begin_close();
    }
}

/// A ZooKeeper client in the style of Apache Curator: it owns one session at a time, retries
/// operations under a [`RetryPolicy`](crate::retry::RetryPolicy), reports
/// [`ConnectionState`]s, and makes a new session after a loss.
///
/// It is a cheap handle: clone it freely (clones share the session); never wrap it in an `Arc`.
/// Dropping the last clone closes the client in the background; `close().await` closes it and
/// waits. Build one with [`CuratorFramework::builder`]; it needs a Tokio runtime from `start()` on.
///
/// ```no_run
/// # async fn demo() -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_framework::{CreateMode, CuratorFramework};
/// use curator_framework::retry::ExponentialBackoffRetry;
///
/// let client = CuratorFramework::builder()
///     .connect_string("127.0.0.1:2181")
///     .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
///     .build()?;
/// client.start().await?;
/// let path = client.create().creating_parents_if_needed().with_protection()
///     .with_mode(CreateMode::EphemeralSequential).for_path("/jobs/job-", b"x").await?;
/// let (data, _stat) = client.get_data().for_path(&path).await?;
/// assert_eq!(data, b"x");
/// client.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CuratorFramework {
    pub(crate) inner: Arc<Inner>,
    pub(crate) namespace: Option<Arc<str>>,
    _owner: Arc<Owner>,
}

impl fmt::Debug for CuratorFramework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CuratorFramework")
            .field("namespace", &self.namespace)
            .field("state", &self.state())
            .field("connection_state", &self.connection_state())
            .field(
                "session_id",
                &self.session_id().map(|id| format!("{id:#x}")),
            )
            .finish()
    }
}

impl CuratorFramework {
    /// Starts building a client.
    pub fn builder() -> CuratorFrameworkBuilder {
        CuratorFrameworkBuilder::default()
    }

    pub(crate) fn from_settings(settings: Settings) -> Self {
        let cancel = CancellationToken::new();
        let connect_settings = ConnectSettings {
            session_timeout: settings.session_timeout,
            connection_timeout: settings.connection_timeout,
            can_be_read_only: settings.can_be_read_only,
            max_listing_bytes: settings.max_listing_bytes,
            auth: settings.auth.clone(),
            tls: settings.tls.clone(),
            sasl: settings.sasl.clone(),
            connector: settings.connector.clone(),
            closed: cancel.clone(),
        };
        let tasks = TaskTracker::new();
        let errors = ListenerContainer::tracked("unhandled error", None, &cancel, &tasks);
        let namespace = settings.namespace.clone();
        let ensemble = crate::ensemble::Tracker::new(
            settings.ensemble_tracking,
            settings.fixed_ensemble && settings.tls.is_none(),
            crate::ensemble::chroot(&settings.ensemble.connect_string()).map(str::to_owned),
            ListenerContainer::tracked("ensemble", Some(errors.clone()), &cancel, &tasks),
        );
        let inner = Arc::new(Inner {
            ensemble,
            connect_settings,
            lifecycle: Mutex::new(FrameworkState::Latent),
            slot: Slot::default(),
            dispatch: Dispatch::new(),
            namespaces: Namespaces::default(),
            state_listeners: ListenerContainer::tracked(
                "connection state",
                Some(errors.clone()),
                &cancel,
                &tasks,
            ),
            error_states: tokio::sync::watch::Sender::new(0),
            troubles: tokio::sync::watch::Sender::new(0),
            errors,
            counters: Counters::default(),
            cancel,
            tasks,
            recipe_tasks: TaskTracker::new(),
            inject_expiry: tokio::sync::Notify::new(),
            settings,
        });
        Self {
            _owner: Arc::new(Owner(Arc::clone(&inner))),
            inner,
            namespace,
        }
    }

    /// Starts the client: from now on it makes and keeps a session in the background. Returns at
    /// once; use [`block_until_connected`](Self::block_until_connected) to wait for the session,
    /// or simply run operations (they wait up to the connection timeout).
    ///
    /// # Errors
    /// [`Error::Closed`] when the client was closed; [`Error::AlreadyStarted`] when it was
    /// already started.
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    pub async fn start(&self) -> Result<()> {
        {
            let mut lifecycle = self.inner.lifecycle.lock();
            match *lifecycle {
                FrameworkState::Latent => *lifecycle = FrameworkState::Started,
                FrameworkState::Started => return Err(Error::AlreadyStarted),
                FrameworkState::Stopped => return Err(Error::Closed),
            }
        }
        self.inner.dispatch.open();
        let inner = Arc::clone(&self.inner);
        self.inner.tasks.spawn(crate::session::run(inner));
        Ok(())
    }

    /// Closes the client: new and waiting operations fail with [`Error::Closed`], every recipe
    /// task started on it ([`recipe_tasks`](Self::recipe_tasks)) and the client's own background
    /// work are cancelled, listeners stop hearing events, and the session is closed, so its
    /// ephemeral nodes disappear at once. Waits for all of that up to the builder's
    /// `max_close_wait` (what still runs then is logged and ends in the background).
    /// Idempotent; any clone may call it.
    ///
    /// It returns a `Result`, as every `close()` of the workspace does (a recipe's close
    /// reports the delete of its node that failed), so that `x.close().await?` reads the same
    /// for the client and its recipes.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// client.close().await?;
    /// client.close().await?; // nothing more to do
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// None: a close always goes through (the client is closed when this returns, whatever its
    /// connection does).
    ///
    /// # Cancellation safety
    /// Dropping the future does not undo the close; the rest happens in the background.
    pub async fn close(&self) -> Result<()> {
        self.inner.begin_close();
        let wait = self.inner.settings.max_close_wait;
        let everything = async {
            self.inner.recipe_tasks.wait().await;
            self.inner.tasks.wait().await;
        };
        if tokio::time::timeout(wait, everything).await.is_err() {
            tracing::warn!(
                ?wait,
                recipe_tasks = self.inner.recipe_tasks.len(),
                client_tasks = self.inner.tasks.len(),
                "background work still running after max_close_wait"
            );
        }
        Ok(())
    }

    /// The client's lifecycle state.
    pub fn state(&self) -> FrameworkState {
        *self.inner.lifecycle.lock()
    }

    /// The last published connection state (`None` before the first session).
    pub fn connection_state(&self) -> Option<ConnectionState> {
        self.inner.last_state()
    }

    /// Whether a session is connected now.
    pub fn is_connected(&self) -> bool {
        self.inner.slot.connected_session().is_some()
    }

    /// The current session's id (`None` while there is none). A different id after
    /// `Reconnected` means a new session: ephemeral nodes and watches of the old one are gone.
    pub fn session_id(&self) -> Option<i64> {
        self.inner.slot.session().map(|s| s.session_id())
    }

    /// The highest zxid this client has seen in a reply header (0 before its first reply): the
    /// position in ZooKeeper's history of changes that this client has reached.
    ///
    /// A write's reply carries the write's own zxid, and a read's reply the zxid its server had
    /// reached, so once a write of this client returns (`create`, `set_data`, `delete`, a
    /// transaction, ...), `last_zxid()` is at least that write's zxid; with other operations of
    /// the client running at the same time it may be higher, which is still "at least". That is
    /// what read-your-writes needs: hand it to `wait_for` of a cache (curator-caches) on
    /// another client, and that cache shows the write (or something newer) when the wait
    /// returns. The exact zxid of a write is in the stat it returns where there is one
    /// (`set_data`'s `mzxid`, `create().for_path(..).with_stat()`'s `czxid`); a delete returns none, so
    /// read `last_zxid()` right after it.
    ///
    /// It belongs to the client (clones share it) and never decreases: it survives reconnects
    /// and new sessions. A new session does not start from it, though: as with every ZooKeeper
    /// client, a new session's handshake carries no zxid, so after a session expiry the server
    /// a new session reaches may be behind this value until it catches up (a `sync` makes it;
    /// a cache's `wait_for` does that by itself). Within one session, the server never goes
    /// back: a reconnect is refused by servers behind what the session has seen.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let stat = client.set_data().for_path("/config", b"v2").await?;
    /// assert!(client.last_zxid() >= stat.mzxid);
    /// client.delete().for_path("/config/old").await?;
    /// let deleted_by = client.last_zxid(); // at least the delete's zxid
    /// println!("wait for {deleted_by:#x} elsewhere");
    /// # Ok(()) }
    /// ```
    pub fn last_zxid(&self) -> i64 {
        self.inner.slot.last_zxid()
    }

    /// The session timeout the server granted to the current session.
    pub fn negotiated_session_timeout(&self) -> Option<Duration> {
        self.inner.slot.session().map(|s| s.negotiated_timeout())
    }

    /// The server (`host:port`) the session is connected to now, `None` while it is not. It
    /// changes within a session when the connection fails over to another server or the
    /// session moves (a new ensemble membership, a read-write server found).
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) {
    /// if let Some(server) = client.connected_server() {
    ///     println!("talking to {server}");
    /// }
    /// # }
    /// ```
    pub fn connected_server(&self) -> Option<String> {
        self.inner.slot.connected_session()?.server()
    }

    /// Waits until a session is connected.
    ///
    /// # Errors
    /// [`Error::NotConnected`] when `timeout` passes first; [`Error::Closed`] or
    /// [`Error::NotStarted`].
    ///
    /// # Cancellation safety
    /// Safe to drop at any point.
    pub async fn block_until_connected(&self, timeout: Duration) -> Result<()> {
        self.inner.wait_connected(Some(timeout)).await.map(drop)
    }

    /// Where to add connection-state listeners. Transitions arrive in order, and none is skipped
    /// (`Suspended` and `Lost` in particular).
    ///
    /// With [`connection_state_circuit_breaker`](CuratorFrameworkBuilder::connection_state_circuit_breaker),
    /// each listener added here hears the transitions through a circuit breaker of its own:
    /// flapping is absorbed while its circuit is open (`Lost` still gets through; see the
    /// builder option).
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) {
    /// let handle = client
    ///     .connection_state_listenable()
    ///     .add_listener(|state| println!("connection: {state}"));
    /// # drop(handle);
    /// # }
    /// ```
    pub fn connection_state_listenable(&self) -> Listenable<ConnectionState> {
        let raw = self.inner.state_listeners.listenable();
        let Some(policy) = self.inner.settings.circuit_breaker.clone() else {
            return raw.filter_map(|event| match event {
                StateEvent::State(state) => Some(state),
                StateEvent::Tick => None,
            });
        };
        let inner = Arc::downgrade(&self.inner);
        raw.per_listener(move || {
            let mut breaker = CircuitBreaker::new(policy.clone());
            let inner = inner.clone();
            Box::new(move |event| {
                let before = breaker.deadline();
                let passed = breaker.on_event(event, tokio::time::Instant::now());
                if let Some(deadline) = breaker.deadline().filter(|d| Some(*d) != before) {
                    if let Some(inner) = inner.upgrade() {
                        inner.tick_at(deadline);
                    }
                }
                passed
            })
        })
    }

    /// Connection-state transitions from now on, as a stream (through a circuit breaker of its
    /// own with
    /// [`connection_state_circuit_breaker`](CuratorFrameworkBuilder::connection_state_circuit_breaker)).
    pub fn connection_state_stream(&self) -> ListenerStream<ConnectionState> {
        self.connection_state_listenable().stream()
    }

    /// The ensemble's configuration as last read from the servers (members, roles, version),
    /// when [`ensemble_tracking`](crate::CuratorFrameworkBuilder::ensemble_tracking) is on and
    /// the servers offer one; `None` before the first read, for a standalone server, or with
    /// tracking off.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) {
    /// if let Some(config) = client.ensemble() {
    ///     for member in &config.members {
    ///         println!("{} {:?} {:?}", member.id, member.role, member.client_address());
    ///     }
    /// }
    /// # }
    /// ```
    pub fn ensemble(&self) -> Option<crate::ensemble::EnsembleConfig> {
        self.inner.ensemble.current()
    }

    /// Where to hear each new ensemble configuration the client learns (in version order).
    pub fn ensemble_listenable(&self) -> Listenable<crate::ensemble::EnsembleConfig> {
        self.inner.ensemble.changes.listenable()
    }

    /// New ensemble configurations from now on, as a stream.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) {
    /// use futures::StreamExt;
    /// let mut changes = client.ensemble_stream();
    /// while let Some(config) = changes.next().await {
    ///     println!("ensemble version {:#x}: {} members", config.version, config.members.len());
    /// }
    /// # }
    /// ```
    pub fn ensemble_stream(&self) -> ListenerStream<crate::ensemble::EnsembleConfig> {
        self.inner.ensemble.changes.listenable().stream()
    }

    /// Reads the ensemble's configuration from the server now (parsed `get_config()`), after a
    /// `sync`: the server this client is connected to may lag the leader, and a
    /// reconfiguration made a moment ago through another server must show.
    ///
    /// # Errors
    /// Connection errors; [`Error::InvalidArgument`] when the text cannot be read.
    pub async fn ensemble_config(&self) -> Result<crate::ensemble::EnsembleConfig> {
        self.without_namespace()
            .sync()
            .for_path("/zookeeper/config")
            .await?;
        let (data, _stat) = self.get_config().for_ensemble().await?;
        crate::ensemble::EnsembleConfig::parse(&String::from_utf8_lossy(&data))
    }

    /// Changes the ensemble's membership (dynamic reconfiguration):
    /// `client.reconfig().joining([..]).leaving([..]).from_config(version).await`. See
    /// [`ReconfigBuilder`](crate::ops::reconfig::ReconfigBuilder) for permissions and errors.
    pub fn reconfig(&self) -> crate::ops::reconfig::ReconfigBuilder {
        crate::ops::reconfig::ReconfigBuilder::new(self.clone())
    }

    /// Where to hear about failures nobody could be told about: panicking listeners, background
    /// cleanups that gave up.
    pub fn unhandled_error_listenable(&self) -> Listenable<UnhandledError> {
        self.inner.errors.listenable()
    }

    /// A new listener container for a recipe's own events: its listeners' panics go to this
    /// client's unhandled-error listeners, and its delivery task is part of the client's task
    /// tree (after `close()`, no listener of it hears anything).
    pub fn listener_container<E: Clone + Send + 'static>(
        &self,
        name: impl Into<String>,
    ) -> ListenerContainer<E> {
        ListenerContainer::tracked(
            name,
            Some(self.inner.errors.clone()),
            &self.inner.cancel,
            &self.inner.tasks,
        )
    }

    /// A new set of background tasks for a recipe instance named `name` (for logs): spawned
    /// inside this client's task tree, so `close()` cancels and awaits them. See
    /// [`recipe`](crate::recipe).
    pub fn recipe_tasks(&self, name: &str) -> RecipeTasks {
        RecipeTasks::new(
            name,
            &self.inner.cancel,
            self.inner.recipe_tasks.clone(),
            self.inner.settings.max_close_wait,
            self.inner.errors.clone(),
        )
    }

    /// Which connection states recipes built on this client treat as errors.
    pub fn connection_state_error_policy(&self) -> ConnectionStateErrorPolicy {
        self.inner.settings.error_policy
    }

    /// The client's counters.
    pub fn metrics(&self) -> Metrics {
        let mut metrics = self.inner.counters.snapshot();
        metrics.recipe_tasks = self.inner.recipe_tasks.len() as u64;
        metrics
    }

    /// The provider that compresses and decompresses node data (Curator's
    /// `getCompressionProvider()`); recipes that read data themselves use it to honour
    /// [`compression_enabled`](Self::compression_enabled).
    ///
    /// ```
    /// use curator_framework::CuratorFramework;
    /// let client = CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// let gzip = client.compression_provider();
    /// let packed = gzip.compress("/a", b"x")?;
    /// assert_eq!(gzip.decompress("/a", &packed)?, b"x");
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    #[cfg(feature = "compression")]
    pub fn compression_provider(&self) -> &Arc<dyn crate::compression::CompressionProvider> {
        &self.inner.settings.compression.provider
    }

    /// The schema set operations are checked against, if the builder was given one
    /// ([`schema_set`](CuratorFrameworkBuilder::schema_set); Curator's `getSchemaSet`).
    ///
    /// ```
    /// use curator_framework::CuratorFramework;
    /// let client = CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert!(client.schema_set().is_none());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    #[cfg(feature = "schema")]
    pub fn schema_set(&self) -> Option<&crate::schema::SchemaSet> {
        self.schemas()
    }

    /// The schema set operations are checked against (none without the `schema` feature).
    pub(crate) fn schemas(&self) -> Option<&crate::schema::SchemaSet> {
        self.inner.settings.schema_set.as_deref()
    }

    /// `data` as stored at `path` turned into what `get_data()` returns: decompressed with the
    /// client's provider when the client decompresses by default
    /// ([`enable_compression`](CuratorFrameworkBuilder::enable_compression)), as it is
    /// otherwise, and always as it is without the `compression` feature. For recipes that read
    /// through their own paths (multi-reads, caches) and must hand out what `get_data()` would.
    ///
    /// ```
    /// use curator_framework::CuratorFramework;
    /// let client = CuratorFramework::builder().connect_string("127.0.0.1:2181").build()?;
    /// assert_eq!(client.data_as_read("/a", b"plain".to_vec())?, b"plain");
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Decompression`] when the client decompresses and `data` does not decompress.
    pub fn data_as_read(&self, path: &str, data: Vec<u8>) -> Result<Vec<u8>> {
        match self.inner.settings.compression.inflate(path, None) {
            Some(inflate) => inflate.apply(&data),
            None => Ok(data),
        }
    }

    /// Whether writes compress and `get_data()` decompresses unless told otherwise (the
    /// builder's [`enable_compression`](CuratorFrameworkBuilder::enable_compression); Curator's
    /// `compressionEnabled()`); always `false` without the `compression` feature.
    pub fn compression_enabled(&self) -> bool {
        self.inner.settings.compression.enabled()
    }

    /// Who this client is, as recipes write it into the nodes they make (see
    /// [`identity`](crate::identity) and the builder's
    /// [`identity`](crate::CuratorFrameworkBuilder::identity)).
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) {
    /// println!("{}", client.identity()); // host=…;pid=…;name=…
    /// # }
    /// ```
    pub fn identity(&self) -> &crate::identity::Identity {
        &self.inner.settings.identity
    }

    /// This handle's namespace.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// A view of the same client (same session, same listeners) whose paths live under
    /// `/<namespace>`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] or [`Error::InvalidPath`] for a bad namespace.
    pub fn using_namespace(&self, namespace: &str) -> Result<CuratorFramework> {
        paths::validate_namespace(namespace)?;
        Ok(CuratorFramework {
            namespace: Some(Arc::from(namespace)),
            ..self.clone()
        })
    }

    /// A view of the same client without a namespace.
    pub fn without_namespace(&self) -> CuratorFramework {
        CuratorFramework {
            namespace: None,
            ..self.clone()
        }
    }

    /// Runs `attempt` under the client's retry policy: before each attempt it waits (up to the
    /// connection timeout) for a connection; connection loss, no connection, operation timeout,
    /// session moved and session expiry go to the policy; other errors end the loop. `attempt`
    /// gets the attempt number, from 0.
    ///
    /// # Errors
    /// The last attempt's error.
    ///
    /// # Example
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// // Read two nodes, retrying the pair together.
    /// let (a, b) = client.call_with_retry(|_attempt| async {
    ///     let (a, _) = client.get_data().for_path("/a").await?;
    ///     let (b, _) = client.get_data().for_path("/b").await?;
    ///     Ok((a, b))
    /// }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn call_with_retry<T, F, Fut>(&self, attempt: F) -> Result<T>
    where
        F: Fn(u32) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let inner = &self.inner;
        Counters::bump(&inner.counters.operations);
        let start = tokio::time::Instant::now();
        let result = crate::retry::run(
            &inner.settings.retry_policy,
            |n| {
                let attempt = &attempt;
                async move {
                    inner.connected_session().await?;
                    attempt(n).await
                }
            },
            |_, _| {
                Counters::bump(&inner.counters.retries);
                crate::metrics::operation_retried(crate::metrics::CALL_WITH_RETRY);
            },
        )
        .await;
        if result.is_err() {
            Counters::bump(&inner.counters.failed_operations);
        }
        crate::metrics::operation_finished(
            crate::metrics::CALL_WITH_RETRY,
            start.elapsed(),
            result.as_ref().err(),
        );
        result
    }

    /// Ends this client's session on purpose, as an expiry would: the client reports
    /// `Suspended` and `Lost`, closes the session (so its ephemeral nodes and watches go at
    /// once), and makes a new one (`Reconnected`). For tests of recovery; the counterpart of
    /// ZooKeeper's `injectSessionExpiration`. Returns once the old session is closed. (To have
    /// the *server* expire a session, see `curator_test::expire_session`.)
    ///
    /// # Errors
    /// [`Error::NotConnected`] without a connected session; [`Error::Closed`].
    pub async fn inject_session_expiration(&self) -> Result<()> {
        let session = self.inner.connected_session().await?;
        let old = session.session_id();
        drop(session);
        self.inner.inject_expiry.notify_one();
        let mut receiver = self.inner.slot.subscribe();
        let replaced = receiver
            .wait_for(|slot| {
                slot.closed
                    || match &slot.session {
                        Some(session) => session.session_id() != old,
                        None => slot.state == Some(ConnectionState::Lost),
                    }
            })
            .await
            .map_err(|_| Error::Closed)?;
        if replaced.closed {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// The identities the server gives this client's session (ZooKeeper's `whoAmI`, 3.7+):
    /// `ip:<address>` always, and `sasl:<user>`, `x509:<subject>`, `digest:<user>` as the client
    /// logged in. An ACL names these.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let identities = client.who_am_i().await?;
    /// assert!(identities.iter().any(|identity| identity.scheme == "ip"));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Connection errors; [`Error::Unimplemented`] from a server older than 3.7.
    ///
    /// # Cancellation safety
    /// Safe (a read).
    pub async fn who_am_i(&self) -> Result<Vec<crate::security::AuthIdentity>> {
        let span = crate::ops::OpSpan {
            op: "zk.who_am_i",
            span: tracing::debug_span!("zk.who_am_i", session_id = ?self.session_id()),
        };
        crate::ops::run_read(
            self,
            span,
            |session, _| async move { session.who_am_i().await },
            |result| result,
        )
        .await
    }

    /// Reads the TLS settings' files again (a renewed certificate, a rotated CA): the next
    /// connection uses them; the current one keeps its handshake. A no-op without TLS.
    ///
    /// # Errors
    /// [`Error::Tls`] with [`TlsFailure::Config`](crate::security::TlsFailure::Config) when a
    /// file cannot be read or holds no certificate or key; the certificates in use stay.
    pub fn reload_tls(&self) -> Result<()> {
        match &self.inner.connect_settings.tls {
            Some(tls) => tls.reload(),
            None => Ok(()),
        }
    }

    /// Creates a node: `client.create().<options>.for_path(path, data).await`.
    pub fn create(&self) -> crate::ops::create::CreateBuilder {
        crate::ops::create::CreateBuilder::new(self.clone())
    }

    /// Deletes a node: `client.delete().<options>.for_path(path).await`.
    pub fn delete(&self) -> crate::ops::delete::DeleteBuilder {
        crate::ops::delete::DeleteBuilder::new(self.clone())
    }

    /// Reads a node's stat if it exists: `client.check_exists().for_path(path).await`.
    pub fn check_exists(&self) -> crate::ops::exists::ExistsBuilder {
        crate::ops::exists::ExistsBuilder::new(self.clone())
    }

    /// Reads a node's data and stat: `client.get_data().for_path(path).await`.
    pub fn get_data(&self) -> crate::ops::get_data::GetDataBuilder {
        crate::ops::get_data::GetDataBuilder::new(self.clone())
    }

    /// Writes a node's data: `client.set_data().for_path(path, data).await`.
    pub fn set_data(&self) -> crate::ops::set_data::SetDataBuilder {
        crate::ops::set_data::SetDataBuilder::new(self.clone())
    }

    /// Lists a node's children: `client.get_children().for_path(path).await`.
    pub fn get_children(&self) -> crate::ops::get_children::GetChildrenBuilder {
        crate::ops::get_children::GetChildrenBuilder::new(self.clone())
    }

    /// Reads a node's ACL: `client.get_acl().for_path(path).await`.
    pub fn get_acl(&self) -> crate::ops::get_acl::GetAclBuilder {
        crate::ops::get_acl::GetAclBuilder::new(self.clone())
    }

    /// Lists this session's ephemeral nodes under a path prefix (ZooKeeper 3.6+
    /// `getEphemerals`): `client.get_ephemerals().for_path(prefix).await`.
    pub fn get_ephemerals(&self) -> crate::ops::get_ephemerals::GetEphemeralsBuilder {
        crate::ops::get_ephemerals::GetEphemeralsBuilder::new(self.clone())
    }

    /// Counts a node's descendants (ZooKeeper 3.6+ `getAllChildrenNumber`):
    /// `client.get_all_children_number().for_path(path).await`.
    pub fn get_all_children_number(
        &self,
    ) -> crate::ops::get_all_children_number::GetAllChildrenNumberBuilder {
        crate::ops::get_all_children_number::GetAllChildrenNumberBuilder::new(self.clone())
    }

    /// Replaces a node's ACL: `client.set_acl().with_acl(acl).for_path(path).await`.
    pub fn set_acl(&self) -> crate::ops::set_acl::SetAclBuilder {
        crate::ops::set_acl::SetAclBuilder::new(self.clone())
    }

    /// Makes the connected server catch up with the leader: `client.sync().for_path(path).await`.
    pub fn sync(&self) -> crate::ops::sync::SyncBuilder {
        crate::ops::sync::SyncBuilder::new(self.clone())
    }

    /// Starts a batch of reads sent as one request (ZooKeeper 3.6+):
    /// `client.multi_read().get_data(a).get_children(b).commit().await`.
    pub fn multi_read(&self) -> crate::ops::multi_read::MultiReadBuilder {
        crate::ops::multi_read::MultiReadBuilder::new(self.clone())
    }

    /// Starts an all-or-nothing transaction: `client.transaction().create(..).commit().await`.
    pub fn transaction(&self) -> crate::ops::transaction::TransactionBuilder {
        crate::ops::transaction::TransactionBuilder::new(self.clone())
    }

    /// Adds a persistent (optionally recursive) watch: `client.add_watch().for_path(path).await`.
    pub fn add_watch(&self) -> crate::ops::watch::AddWatchBuilder {
        crate::ops::watch::AddWatchBuilder::new(self.clone())
    }

    /// Reads the ensemble configuration: `client.get_config().for_ensemble().await`.
    pub fn get_config(&self) -> crate::ops::get_config::GetConfigBuilder {
        crate::ops::get_config::GetConfigBuilder::new(self.clone())
    }

    /// `path` validated, with this handle's namespace applied, in one shared allocation.
    pub(crate) fn target(&self, path: &str) -> Result<Arc<str>> {
        paths::validate(path)?;
        Ok(match self.namespace.as_deref() {
            None => Arc::from(path),
            Some(namespace) => Arc::from(paths::apply_namespace(Some(namespace), path)),
        })
    }

    /// `path` of a sequential create, validated, with this handle's namespace applied.
    pub(crate) fn sequential_target(&self, path: &str) -> Result<Arc<str>> {
        paths::validate_sequential(path)?;
        Ok(Arc::from(paths::apply_namespace(
            self.namespace.as_deref(),
            path,
        )))
    }

    /// A server path with this handle's namespace removed.
    pub(crate) fn unfix_path(&self, path: &str) -> String {
        paths::strip_namespace(self.namespace.as_deref(), path)
    }
}
