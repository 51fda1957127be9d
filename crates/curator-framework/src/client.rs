//! `CuratorFramework`: the client handle.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::builder::{CuratorFrameworkBuilder, Settings};
use crate::error::{Error, Result};
use crate::listen::{Listenable, ListenerContainer, ListenerStream, UnhandledError};
use crate::metrics::{Counters, Metrics};
use crate::ops::delete::PendingDelete;
use crate::paths;
use crate::retry;
use crate::state::{ConnectionState, ConnectionStateErrorPolicy, FrameworkState};
use crate::types::CreateMode;
use crate::wire::{ConnectSettings, WireSession};

/// What operations see of the session holder.
#[derive(Debug, Clone, Default)]
struct Slot {
    session: Option<Arc<WireSession>>,
    connected: bool,
    state: Option<ConnectionState>,
    closed: bool,
}

/// The shared state behind every clone of a client.
pub(crate) struct Inner {
    pub(crate) settings: Settings,
    pub(crate) connect_settings: ConnectSettings,
    lifecycle: Mutex<FrameworkState>,
    slot: watch::Sender<Slot>,
    state_listeners: ListenerContainer<ConnectionState>,
    errors: ListenerContainer<UnhandledError>,
    pub(crate) counters: Counters,
    pub(crate) cancel: CancellationToken,
    pub(crate) tasks: TaskTracker,
    ensured_namespaces: Mutex<HashSet<String>>,
    /// Asks the session task to end the current session (`inject_session_expiration`).
    pub(crate) inject_expiry: tokio::sync::Notify,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inner")
            .field("settings", &self.settings)
            .field("lifecycle", &*self.lifecycle.lock())
            .field("state", &self.slot.borrow().state)
            .finish_non_exhaustive()
    }
}

impl Inner {
    pub(crate) fn install_session(&self, session: Arc<WireSession>) {
        self.slot.send_modify(|slot| {
            slot.session = Some(session);
            slot.connected = true;
        });
    }

    pub(crate) fn remove_session(&self) {
        self.slot.send_modify(|slot| {
            slot.session = None;
            slot.connected = false;
        });
    }

    pub(crate) fn set_connected(&self, connected: bool) {
        self.slot.send_modify(|slot| slot.connected = connected);
    }

    pub(crate) fn last_state(&self) -> Option<ConnectionState> {
        self.slot.borrow().state
    }

    pub(crate) fn publish_state(&self, state: ConnectionState) {
        self.slot.send_modify(|slot| slot.state = Some(state));
        Counters::bump(&self.counters.state_transitions);
        tracing::info!(%state, "connection state");
        self.state_listeners.publish(state);
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
        {
            // Fast path, with no suspension point: an operation created while connected sends
            // its request at once.
            let slot = self.slot.borrow();
            if slot.closed {
                return Err(Error::Closed);
            }
            if slot.connected {
                if let Some(session) = &slot.session {
                    return Ok(Arc::clone(session));
                }
            }
        }
        let mut receiver = self.slot.subscribe();
        if *self.lifecycle.lock() == FrameworkState::Latent {
            return Err(Error::NotStarted);
        }
        let ready = async {
            let slot = receiver
                .wait_for(|slot| slot.closed || (slot.connected && slot.session.is_some()))
                .await
                .map_err(|_| Error::Closed)?;
            if slot.closed {
                return Err(Error::Closed);
            }
            slot.session.clone().ok_or(Error::ConnectionLoss)
        };
        match timeout {
            Some(timeout) => tokio::time::timeout(timeout, ready)
                .await
                .unwrap_or(Err(Error::NotConnected { waited: timeout })),
            None => ready.await,
        }
    }

    /// The current session if it is connected now (no waiting).
    fn session_now(&self) -> Result<Option<Arc<WireSession>>> {
        let slot = self.slot.borrow();
        if slot.closed {
            return Err(Error::Closed);
        }
        Ok(if slot.connected {
            slot.session.clone()
        } else {
            None
        })
    }

    /// Runs `attempt` against a connected session under the client's retry policy.
    ///
    /// When a session is connected, attempt 0 runs directly, with no other layer around it: the
    /// common case costs no more than the wire client's own call.
    pub(crate) async fn with_retry<T, F, Fut>(&self, attempt: F) -> Result<T>
    where
        F: Fn(Arc<WireSession>, u32) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        Counters::bump(&self.counters.operations);
        let start = tokio::time::Instant::now();
        let first_failure = match self.session_now() {
            Ok(Some(session)) => match attempt(session, 0).await {
                Ok(value) => return Ok(value),
                Err(error) if retry::should_retry(&error) => Some(error),
                Err(error) => {
                    Counters::bump(&self.counters.failed_operations);
                    return Err(error);
                }
            },
            Ok(None) => None,
            Err(error) => {
                Counters::bump(&self.counters.failed_operations);
                return Err(error);
            }
        };
        let result = retry::run_from(
            &*self.settings.retry_policy,
            start,
            first_failure,
            |n| {
                let attempt = &attempt;
                async move {
                    let session = self.connected_session().await?;
                    attempt(session, n).await
                }
            },
            |_, _| Counters::bump(&self.counters.retries),
        )
        .await;
        if result.is_err() {
            Counters::bump(&self.counters.failed_operations);
        }
        result
    }

    /// Creates the namespace node (a container, with its parents) once per client.
    pub(crate) async fn ensure_namespace(&self, namespace: &str) -> Result<()> {
        if self.ensured_namespaces.lock().contains(namespace) {
            return Ok(());
        }
        let full = format!("/{namespace}");
        let mut targets: Vec<&str> = paths::ancestors(&full);
        targets.push(&full);
        for path in targets {
            let acl = self.settings.acl_provider.acl_for_path(path);
            let created = self
                .with_retry(|session, _| {
                    let acl = &acl;
                    async move {
                        session
                            .create(path, &[], CreateMode::Container, acl, None)
                            .await
                            .map(drop)
                    }
                })
                .await;
            match created {
                Ok(()) | Err(Error::NodeExists) => {}
                Err(error) => return Err(error),
            }
        }
        self.ensured_namespaces.lock().insert(namespace.to_owned());
        Ok(())
    }

    /// Deletes `pending.path` in the background until it is gone, retrying across connection
    /// loss.
    pub(crate) fn guaranteed_delete(self: &Arc<Self>, pending: PendingDelete) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::error!(
                path = pending.path,
                "no Tokio runtime to delete the node in the background"
            );
            Counters::bump(&self.counters.abandoned_guaranteed_deletes);
            return;
        };
        let inner = Arc::clone(self);
        Counters::bump(&inner.counters.pending_guaranteed_deletes);
        self.tasks.spawn_on(
            async move {
                let cancel = inner.cancel.clone();
                let done = tokio::select! {
                    () = cancel.cancelled() => false,
                    done = inner.delete_until_gone(&pending) => done,
                };
                inner.finish_background_delete(done);
            },
            &runtime,
        );
    }

    /// Counts a background delete as completed or abandoned, and no longer pending.
    fn finish_background_delete(&self, done: bool) {
        let counters = &self.counters;
        Counters::bump(if done {
            &counters.completed_guaranteed_deletes
        } else {
            &counters.abandoned_guaranteed_deletes
        });
        counters
            .pending_guaranteed_deletes
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the node is gone (`false`: abandoned on an error that retrying cannot fix).
    async fn delete_until_gone(&self, pending: &PendingDelete) -> bool {
        let PendingDelete {
            path,
            version,
            children,
        } = pending;
        let mut pause = Duration::from_millis(50);
        loop {
            let Ok(session) = self.wait_connected(None).await else {
                return false;
            };
            let result = match session.delete(path, *version).await {
                Err(Error::NotEmpty) if *children => {
                    match crate::ops::delete::delete_children(&session, path.clone()).await {
                        Ok(()) => session.delete(path, *version).await,
                        Err(error) => Err(error),
                    }
                }
                other => other,
            };
            match result {
                Ok(()) | Err(Error::NoNode) => {
                    tracing::debug!(path, "guaranteed delete done");
                    return true;
                }
                Err(error) if retry::should_retry(&error) => {
                    tracing::debug!(path, %error, "guaranteed delete will retry");
                }
                Err(error) => {
                    self.report_error("guaranteed delete", format!("{path}: {error}"));
                    return false;
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    }

    /// Finds and deletes, in the background, any node under `parent` whose name starts with
    /// `prefix`: the leftovers of a protected create that may have succeeded unseen.
    pub(crate) fn delete_protected_in_background(self: &Arc<Self>, parent: String, prefix: String) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::error!(
                parent,
                prefix,
                "no Tokio runtime to clean up in the background"
            );
            return;
        };
        let inner = Arc::clone(self);
        Counters::bump(&inner.counters.pending_guaranteed_deletes);
        self.tasks.spawn_on(
            async move {
                let cancel = inner.cancel.clone();
                let done = tokio::select! {
                    () = cancel.cancelled() => false,
                    done = inner.delete_protected(&parent, &prefix) => done,
                };
                inner.finish_background_delete(done);
            },
            &runtime,
        );
    }

    /// Whether the leftovers are gone (`false`: abandoned).
    async fn delete_protected(&self, parent: &str, prefix: &str) -> bool {
        let mut pause = Duration::from_millis(50);
        loop {
            let Ok(session) = self.wait_connected(None).await else {
                return false;
            };
            let outcome = async {
                let (children, _) = session.get_children(parent).await?;
                for child in children.iter().filter(|c| c.starts_with(prefix)) {
                    match session.delete(&paths::join(parent, child), None).await {
                        Ok(()) | Err(Error::NoNode) => {
                            tracing::debug!(parent, child, "deleted a protected leftover")
                        }
                        Err(error) => return Err(error),
                    }
                }
                Ok(())
            };
            match outcome.await {
                Ok(()) | Err(Error::NoNode) => return true,
                Err(error) if retry::should_retry(&error) => {}
                Err(error) => {
                    self.report_error(
                        "protected create cleanup",
                        format!("{parent}/{prefix}*: {error}"),
                    );
                    return false;
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    }

    fn begin_close(&self) -> bool {
        {
            let mut lifecycle = self.lifecycle.lock();
            if *lifecycle == FrameworkState::Stopped {
                return false;
            }
            *lifecycle = FrameworkState::Stopped;
        }
        self.slot.send_modify(|slot| slot.closed = true);
        self.cancel.cancel();
        self.tasks.close();
        true
    }
}

/// Closes the client when the last user handle is dropped.
#[derive(Debug)]
struct Owner(Arc<Inner>);

impl Drop for Owner {
    fn drop(&mut self) {
        // Starts the same close as `close()`, without waiting; the session task closes the
        // session when it sees the cancellation.
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
/// client.close().await;
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
        let connect_settings = ConnectSettings {
            session_timeout: settings.session_timeout,
            connection_timeout: settings.connection_timeout,
            can_be_read_only: settings.can_be_read_only,
            auth: settings.auth.clone(),
        };
        let errors = ListenerContainer::new("unhandled error");
        let namespace = settings.namespace.clone();
        let inner = Arc::new(Inner {
            connect_settings,
            lifecycle: Mutex::new(FrameworkState::Latent),
            slot: watch::Sender::new(Slot::default()),
            state_listeners: ListenerContainer::reporting_to("connection state", errors.clone()),
            errors,
            counters: Counters::default(),
            cancel: CancellationToken::new(),
            tasks: TaskTracker::new(),
            ensured_namespaces: Mutex::new(HashSet::new()),
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
    /// [`Error::Closed`] when the client was closed; [`Error::InvalidArgument`] when it was
    /// already started.
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    pub async fn start(&self) -> Result<()> {
        {
            let mut lifecycle = self.inner.lifecycle.lock();
            match *lifecycle {
                FrameworkState::Latent => *lifecycle = FrameworkState::Started,
                FrameworkState::Started => {
                    return Err(Error::InvalidArgument(
                        "the client is already started".into(),
                    ));
                }
                FrameworkState::Stopped => return Err(Error::Closed),
            }
        }
        let inner = Arc::clone(&self.inner);
        self.inner.tasks.spawn(crate::session::run(inner));
        Ok(())
    }

    /// Closes the client: new and waiting operations fail with [`Error::Closed`], background
    /// work stops, and the session is closed, so its ephemeral nodes disappear at once. Waits for
    /// all of that up to the builder's `max_close_wait`. Idempotent; any clone may call it.
    ///
    /// # Cancellation safety
    /// Dropping the future does not undo the close; the rest happens in the background.
    pub async fn close(&self) {
        self.inner.begin_close();
        let wait = self.inner.settings.max_close_wait;
        if tokio::time::timeout(wait, self.inner.tasks.wait())
            .await
            .is_err()
        {
            tracing::debug!(?wait, "background work still running after max_close_wait");
        }
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
        let slot = self.inner.slot.borrow();
        slot.connected && slot.session.is_some()
    }

    /// The current session's id (`None` while there is none). A different id after
    /// `Reconnected` means a new session: ephemeral nodes and watches of the old one are gone.
    pub fn session_id(&self) -> Option<i64> {
        self.inner
            .slot
            .borrow()
            .session
            .as_ref()
            .map(|s| s.session_id())
    }

    /// The session timeout the server granted to the current session.
    pub fn negotiated_session_timeout(&self) -> Option<Duration> {
        self.inner
            .slot
            .borrow()
            .session
            .as_ref()
            .map(|s| s.negotiated_timeout())
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
    pub fn connection_state_listenable(&self) -> Listenable<ConnectionState> {
        self.inner.state_listeners.listenable()
    }

    /// Connection-state transitions from now on, as a stream.
    pub fn connection_state_stream(&self) -> ListenerStream<ConnectionState> {
        self.inner.state_listeners.listenable().stream()
    }

    /// Where to hear about failures nobody could be told about: panicking listeners, background
    /// cleanups that gave up.
    pub fn unhandled_error_listenable(&self) -> Listenable<UnhandledError> {
        self.inner.errors.listenable()
    }

    /// A new listener container whose listeners' panics go to this client's unhandled-error
    /// listeners; recipes use it for their own events.
    pub fn listener_container<E: Clone + Send + 'static>(
        &self,
        name: impl Into<String>,
    ) -> ListenerContainer<E> {
        ListenerContainer::reporting_to(name, self.inner.errors.clone())
    }

    /// Which connection states recipes built on this client treat as errors.
    pub fn connection_state_error_policy(&self) -> ConnectionStateErrorPolicy {
        self.inner.settings.error_policy
    }

    /// The client's counters.
    pub fn metrics(&self) -> Metrics {
        self.inner.counters.snapshot()
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
    /// connection timeout) for a connection; connection loss, operation timeout, session moved
    /// and session expiry go to the policy; other errors end the loop. `attempt` gets the attempt
    /// number, from 0.
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
        self.inner.with_retry(|_session, n| attempt(n)).await
    }

    /// Ends this client's session on purpose, as an expiry would: the client reports
    /// `Suspended` and `Lost`, closes the session (so its ephemeral nodes and watches go at
    /// once), and makes a new one (`Reconnected`). For tests of recovery; the counterpart of
    /// ZooKeeper's `injectSessionExpiration`. Returns once the old session is closed. (To have
    /// the *server* expire a session, see `curator_test::expire_session`.)
    ///
    /// # Errors
    /// [`Error::ConnectionLoss`] without a connected session; [`Error::Closed`].
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

    /// Creates a node: `client.create().<options>.for_path(path, data).await`.
    pub fn create(&self) -> crate::ops::create::CreateBuilder<'_> {
        crate::ops::create::CreateBuilder::new(self)
    }

    /// Deletes a node: `client.delete().<options>.for_path(path).await`.
    pub fn delete(&self) -> crate::ops::delete::DeleteBuilder<'_> {
        crate::ops::delete::DeleteBuilder::new(self)
    }

    /// Reads a node's stat if it exists: `client.check_exists().for_path(path).await`.
    pub fn check_exists(&self) -> crate::ops::exists::ExistsBuilder<'_> {
        crate::ops::exists::ExistsBuilder::new(self)
    }

    /// Reads a node's data and stat: `client.get_data().for_path(path).await`.
    pub fn get_data(&self) -> crate::ops::get_data::GetDataBuilder<'_> {
        crate::ops::get_data::GetDataBuilder::new(self)
    }

    /// Writes a node's data: `client.set_data().for_path(path, data).await`.
    pub fn set_data(&self) -> crate::ops::set_data::SetDataBuilder<'_> {
        crate::ops::set_data::SetDataBuilder::new(self)
    }

    /// Lists a node's children: `client.get_children().for_path(path).await`.
    pub fn get_children(&self) -> crate::ops::get_children::GetChildrenBuilder<'_> {
        crate::ops::get_children::GetChildrenBuilder::new(self)
    }

    /// Reads a node's ACL: `client.get_acl().for_path(path).await`.
    pub fn get_acl(&self) -> crate::ops::get_acl::GetAclBuilder<'_> {
        crate::ops::get_acl::GetAclBuilder::new(self)
    }

    /// Replaces a node's ACL: `client.set_acl().with_acl(acl).for_path(path).await`.
    pub fn set_acl(&self) -> crate::ops::set_acl::SetAclBuilder<'_> {
        crate::ops::set_acl::SetAclBuilder::new(self)
    }

    /// Makes the connected server catch up with the leader: `client.sync().for_path(path).await`.
    pub fn sync(&self) -> crate::ops::sync::SyncBuilder<'_> {
        crate::ops::sync::SyncBuilder::new(self)
    }

    /// Starts a batch of reads sent as one request (ZooKeeper 3.6+):
    /// `client.multi_read().get_data(a).get_children(b).commit().await`.
    pub fn multi_read(&self) -> crate::ops::multi_read::MultiReadBuilder<'_> {
        crate::ops::multi_read::MultiReadBuilder::new(self)
    }

    /// Starts an all-or-nothing transaction: `client.transaction().create(..).commit().await`.
    pub fn transaction(&self) -> crate::ops::transaction::TransactionBuilder<'_> {
        crate::ops::transaction::TransactionBuilder::new(self)
    }

    /// Adds a persistent (optionally recursive) watch: `client.add_watch().for_path(path).await`.
    pub fn add_watch(&self) -> crate::ops::watch::AddWatchBuilder<'_> {
        crate::ops::watch::AddWatchBuilder::new(self)
    }

    /// Reads the ensemble configuration: `client.get_config().for_ensemble().await`.
    pub fn get_config(&self) -> crate::ops::get_config::GetConfigBuilder<'_> {
        crate::ops::get_config::GetConfigBuilder::new(self)
    }

    /// `path` validated, with this handle's namespace applied, in one shared allocation.
    pub(crate) fn target(&self, path: &str) -> Result<Arc<str>> {
        paths::validate(path)?;
        Ok(match self.namespace.as_deref() {
            None => Arc::from(path),
            Some(namespace) => Arc::from(paths::apply_namespace(Some(namespace), path)),
        })
    }

    /// `path` with this handle's namespace applied, validated.
    pub(crate) fn fix_path(&self, path: &str) -> Result<String> {
        paths::validate(path)?;
        Ok(paths::apply_namespace(self.namespace.as_deref(), path))
    }

    /// `path` of a sequential create with the namespace applied.
    pub(crate) fn fix_sequential_path(&self, path: &str) -> Result<String> {
        paths::validate_sequential(path)?;
        Ok(paths::apply_namespace(self.namespace.as_deref(), path))
    }

    /// A server path with this handle's namespace removed.
    pub(crate) fn unfix_path(&self, path: &str) -> String {
        paths::strip_namespace(self.namespace.as_deref(), path)
    }

    /// Makes sure this handle's namespace node exists (once per client and namespace).
    pub(crate) async fn ensure_namespace(&self) -> Result<()> {
        match &self.namespace {
            Some(namespace) => self.inner.ensure_namespace(namespace).await,
            None => Ok(()),
        }
    }

    /// Whether a namespace node still needs creating (so the fast path can skip the await).
    pub(crate) fn namespace_ready(&self) -> bool {
        match &self.namespace {
            Some(namespace) => self.inner.ensured_namespaces.lock().contains(&**namespace),
            None => true,
        }
    }
}
