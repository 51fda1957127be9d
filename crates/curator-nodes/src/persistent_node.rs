//! `PersistentNode`: a node the recipe keeps existing, with its latest data, across connection
//! loss, session expiry and deletion by others.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::listen::ListenerStream;
use curator_framework::recipe::{Backoff, HandleGuard, Recipe, RecipeCore, RecipeOptions};
use curator_framework::{ConnectionState, CreateMode, CuratorFramework, Error, Result, paths};
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

/// The non-sequential mode a sequential node is re-created with, so it keeps its path.
fn recreate_mode(mode: CreateMode) -> CreateMode {
    match mode {
        CreateMode::EphemeralSequential => CreateMode::Ephemeral,
        CreateMode::PersistentSequential => CreateMode::Persistent,
        CreateMode::PersistentSequentialWithTtl => CreateMode::PersistentWithTtl,
        other => other,
    }
}

struct Inner {
    client: CuratorFramework,
    path: String,
    mode: CreateMode,
    protected: bool,
    ttl: Option<Duration>,
    data: Mutex<Vec<u8>>,
    /// The node's path once created (with its sequence and protection, if any).
    actual: watch::Sender<Option<String>>,
    /// Wakes the task when the data changes.
    poke: Notify,
    /// The recipe's name, lifecycle and keeper task.
    core: RecipeCore,
}

/// A node that the recipe keeps in place (Curator's `PersistentNode` /
/// `PersistentEphemeralNode`): created at [`start`](Self::start) (in the background), re-created
/// with its latest data when it is deleted, when the session is lost and a new one begins, and
/// after any reconnect where it turns out missing.
///
/// - Sequential modes get a path at the first create (protected when asked, so a lost reply
///   never makes two); later re-creations reuse that exact path with the non-sequential mode.
/// - A node found at the path that belongs to another (for example the previous) session is
///   deleted and created anew, so the node is always this session's; a node of this session
///   is adopted and given the latest data.
/// - [`close`](Self::close) stops the recipe and deletes the node.
///
/// The keeper is a task in the client's task tree: dropping the handles does not stop it;
/// [`close`](Self::close) and the client's `close()` do.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_framework::CreateMode;
/// use curator_nodes::PersistentNode;
/// let node = PersistentNode::builder(client, "/services/api/host-1", CreateMode::Ephemeral, b"10.0.0.5:8080")
///     .build()?;
/// node.start().await?;
/// tokio::time::timeout(Duration::from_secs(10), node.initialized()).await.ok();
/// node.set_data(b"10.0.0.5:8081").await?;
/// node.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PersistentNode {
    inner: Arc<Inner>,
    /// Cancels the recipe's tasks when the last handle is dropped.
    _guard: HandleGuard,
}

impl fmt::Debug for PersistentNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PersistentNode")
            .field("path", &self.inner.path)
            .field("mode", &self.inner.mode)
            .field("protected", &self.inner.protected)
            .field("actual", &*self.inner.actual.borrow())
            .finish_non_exhaustive()
    }
}

impl PersistentNode {
    /// Options of a node at `path` created with `mode` and holding `data` (Curator's
    /// `PersistentNode(client, mode, useProtection, basePath, initData)`).
    pub fn builder(
        client: CuratorFramework,
        path: &str,
        mode: CreateMode,
        data: impl AsRef<[u8]>,
    ) -> PersistentNodeBuilder {
        PersistentNodeBuilder {
            client,
            path: path.to_owned(),
            mode,
            data: data.as_ref().to_vec(),
            protected: false,
            ttl: None,
            options: RecipeOptions::new(),
        }
    }

    /// Starts keeping the node (in the background; returns at once).
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started; [`Error::Closed`] after `close`.
    ///
    /// # Cancellation safety
    /// Safe: it does not wait for anything.
    pub async fn start(&self) -> Result<()> {
        let core = &self.inner.core;
        core.lifecycle().start()?;
        core.tasks().spawn(keep(Arc::clone(&self.inner))).detach();
        Ok(())
    }

    /// Waits until the node was created the first time (Curator's `waitForInitialCreate`);
    /// bound the wait with `tokio::time::timeout`.
    ///
    /// ```no_run
    /// # async fn demo(node: curator_nodes::PersistentNode) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// match tokio::time::timeout(Duration::from_secs(10), node.initialized()).await {
    ///     Ok(created) => created?,
    ///     Err(_) => println!("not created yet"),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Closed`] when the node (or its client) was closed first.
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn initialized(&self) -> Result<()> {
        let mut actual = self.inner.actual.subscribe();
        tokio::select! {
            () = self.inner.core.tasks().cancelled() => Err(Error::Closed),
            created = actual.wait_for(Option::is_some) => created.map(drop).map_err(|_| Error::Closed),
        }
    }

    /// Whether the node was created once.
    pub fn is_initialized(&self) -> bool {
        self.inner.actual.borrow().is_some()
    }

    /// The node's path (with sequence and protection, if any) once created.
    pub fn actual_path(&self) -> Option<String> {
        self.inner.actual.borrow().clone()
    }

    /// Sets new data: written to the node now if it exists, and used for every re-creation.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for data over 1 MiB; connection errors writing it (the data
    /// is kept and written by the next re-creation).
    ///
    /// # Cancellation safety
    /// Dropping the future keeps the new data locally; the next re-creation writes it.
    pub async fn set_data(&self, data: impl AsRef<[u8]>) -> Result<()> {
        let data = data.as_ref();
        check_data(data)?;
        *self.inner.data.lock() = data.to_vec();
        let actual = self.actual_path();
        let written = match actual {
            Some(actual) => match self.inner.client.set_data().for_path(&actual, data).await {
                Ok(_) => true,
                Err(Error::NoNode) => false,
                Err(error) => {
                    self.inner.poke.notify_one();
                    return Err(error);
                }
            },
            None => false,
        };
        if !written {
            // Not written: the keeper may be creating the node with the data it read before
            // (a create does not fail on other data); it looks again and writes this.
            self.inner.poke.notify_one();
        }
        Ok(())
    }

    /// The data the node is kept with.
    pub fn data(&self) -> Vec<u8> {
        self.inner.data.lock().clone()
    }

    /// Closes the recipe and waits for its keeper to end, without deleting the node; `false`
    /// when it was closed already.
    pub(crate) async fn stop_keeping(&self) -> bool {
        self.inner.core.close_tasks().await
    }

    /// Stops keeping the node and deletes it (guaranteed: retried in the background if the
    /// connection is down). Idempotent: later calls return `Ok(())`; closing a node that never
    /// started is fine.
    ///
    /// # Errors
    /// Connection errors of the delete (it goes on in the background).
    ///
    /// # Cancellation safety
    /// Dropping the future after the keeper stopped may leave the node in place, no longer
    /// kept (an ephemeral node goes with the session).
    pub async fn close(&self) -> Result<()> {
        if !self.stop_keeping().await {
            return Ok(());
        }
        let actual = self.actual_path();
        match actual {
            Some(actual) => {
                let deleted = self
                    .inner
                    .client
                    .delete()
                    .guaranteed()
                    .quietly()
                    .for_path(&actual)
                    .await;
                match deleted {
                    // The client closed first: an ephemeral node went with its session.
                    Err(Error::Closed) if self.inner.mode.is_ephemeral() => Ok(()),
                    other => other,
                }
            }
            None => Ok(()),
        }
    }
}

/// Options of a [`PersistentNode`]; see [`PersistentNode::builder`].
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_framework::CreateMode;
/// use curator_nodes::PersistentNode;
/// let member = PersistentNode::builder(client.clone(), "/members/m-", CreateMode::EphemeralSequential, b"host-1")
///     .with_protection()
///     .build()?;
/// let lease = PersistentNode::builder(client, "/leases/job-7", CreateMode::PersistentWithTtl, b"")
///     .with_ttl(Duration::from_secs(60))
///     .build()?;
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until build()"]
pub struct PersistentNodeBuilder {
    client: CuratorFramework,
    path: String,
    mode: CreateMode,
    data: Vec<u8>,
    protected: bool,
    ttl: Option<Duration>,
    options: RecipeOptions,
}

impl fmt::Debug for PersistentNodeBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PersistentNodeBuilder")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .field("data_len", &self.data.len())
            .field("protected", &self.protected)
            .field("ttl", &self.ttl)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl PersistentNodeBuilder {
    /// Protected names for the first create (Curator's `useProtection`): a create whose reply
    /// is lost is found again instead of made twice.
    pub fn with_protection(mut self) -> Self {
        self.protected = true;
        self
    }

    /// The TTL of a `PersistentWithTtl` or `PersistentSequentialWithTtl` node (needed by those
    /// modes, refused by the others).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The recipe's name (default: its path): what its logs and unhandled errors say.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// use curator_framework::CreateMode;
    /// let node = curator_nodes::PersistentNode::builder(client, "/members/host-7", CreateMode::Ephemeral, b"")
    ///     .metrics_name("members")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// The node's recipe, not started.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path; [`Error::InvalidArgument`] for data over 1 MiB, a
    /// TTL mode without a TTL, or a TTL with another mode.
    pub fn build(self) -> Result<PersistentNode> {
        let Self {
            client,
            path,
            mode,
            data,
            protected,
            ttl,
            options,
        } = self;
        if mode.is_sequential() {
            paths::validate_sequential(&path)?;
        } else {
            paths::validate(&path)?;
        }
        check_data(&data)?;
        let ttl_mode = matches!(
            mode,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
        );
        match (ttl_mode, ttl) {
            (true, None) => {
                return Err(Error::InvalidArgument(format!(
                    "{mode:?} needs a TTL (with_ttl)"
                )));
            }
            (false, Some(_)) => {
                return Err(Error::InvalidArgument(format!("{mode:?} takes no TTL")));
            }
            _ => {}
        }
        let core = RecipeCore::new(&client, "PersistentNode", &path, &options);
        let inner = Arc::new(Inner {
            client,
            path,
            mode,
            protected,
            ttl,
            data: Mutex::new(data),
            actual: watch::Sender::new(None),
            poke: Notify::new(),
            core,
        });
        Ok(PersistentNode {
            _guard: inner.core.handle_guard(),
            inner,
        })
    }
}

impl Recipe for PersistentNode {
    fn core(&self) -> &RecipeCore {
        &self.inner.core
    }

    async fn start(&self) -> Result<()> {
        PersistentNode::start(self).await
    }

    async fn close(&self) -> Result<()> {
        PersistentNode::close(self).await
    }
}

fn check_data(data: &[u8]) -> Result<()> {
    if data.len() > paths::MAX_DATA_LEN {
        return Err(Error::InvalidArgument(format!(
            "node data of {} bytes exceeds ZooKeeper's limit of {} bytes",
            data.len(),
            paths::MAX_DATA_LEN
        )));
    }
    Ok(())
}

impl Inner {
    /// Makes sure the node exists with our data in this session; returns its path.
    async fn ensure(&self) -> Result<String> {
        let data = self.data.lock().clone();
        let actual = self.actual.borrow().clone();
        let Some(actual) = actual else {
            let mut create = self
                .client
                .create()
                .creating_parent_containers_if_needed()
                .with_mode(self.mode);
            if self.protected {
                create = create.with_protection();
            }
            if let Some(ttl) = self.ttl {
                create = create.with_ttl(ttl);
            }
            match create.for_path(&self.path, &data).await {
                Ok(path) => {
                    self.actual.send_replace(Some(path.clone()));
                    return Ok(path);
                }
                Err(Error::NodeExists) if !self.mode.is_sequential() && !self.protected => {
                    self.actual.send_replace(Some(self.path.clone()));
                    return self.adopt(&self.path).await.map(|()| self.path.clone());
                }
                Err(error) => return Err(error),
            }
        };
        let mut create = self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(recreate_mode(self.mode));
        if let Some(ttl) = self.ttl {
            create = create.with_ttl(ttl);
        }
        match create.for_path(&actual, &data).await {
            Ok(_) => Ok(actual),
            Err(Error::NodeExists) => self.adopt(&actual).await.map(|()| actual),
            Err(error) => Err(error),
        }
    }

    /// A node is at `path` already: keep it if it is ours (setting the latest data), replace it
    /// if it is another session's ephemeral node.
    async fn adopt(&self, path: &str) -> Result<()> {
        let Some(stat) = self.client.check_exists().for_path(path).await? else {
            return Err(Error::NoNode);
        };
        let ours =
            !self.mode.is_ephemeral() || self.client.session_id() == Some(stat.ephemeral_owner);
        if !ours {
            tracing::debug!(path, "replacing a node of another session");
            match self
                .client
                .delete()
                .with_version(stat.version)
                .for_path(path)
                .await
            {
                Ok(()) | Err(Error::NoNode) => {}
                Err(error) => return Err(error),
            }
            return Err(Error::NoNode);
        }
        loop {
            let (current, stat) = self.client.get_data().for_path(path).await?;
            // The latest data, read after the node's (a `set_data` since `ensure` began has
            // changed it), written over the version read only: a concurrent `set_data` is
            // never overwritten with older data.
            let data = self.data.lock().clone();
            if current == data {
                return Ok(());
            }
            match self
                .client
                .set_data()
                .with_version(stat.version)
                .for_path(path, &data)
                .await
            {
                Ok(_) => return Ok(()),
                // Changed meanwhile: look again.
                Err(Error::BadVersion) => {}
                Err(error) => return Err(error),
            }
        }
    }
}

/// Keeps the node: ensure it, watch it, and again on deletion, reconnection or new data. Runs
/// until its task is cancelled (the recipe's or the client's close) or the client is closed.
async fn keep(inner: Arc<Inner>) {
    let mut states: ListenerStream<ConnectionState> = inner.client.connection_state_stream();
    let mut backoff = Backoff::standard();
    loop {
        let step = async {
            let path = inner.ensure().await?;
            let (stat, watcher) = inner
                .client
                .check_exists()
                .watched()
                .for_path(&path)
                .await?;
            Ok::<_, Error>((stat, watcher))
        };
        match step.await {
            Ok((Some(_), watcher)) => {
                backoff.reset();
                tokio::select! {
                    _ = watcher.changed() => {}
                    connected = states.next_connected() => if connected.is_err() { return },
                    () = inner.poke.notified() => {}
                }
            }
            Ok((None, _)) | Err(Error::NoNode) => {}
            Err(Error::Closed) => return,
            Err(error) => {
                tracing::debug!(%error, path = %inner.path, "persistent node not ensured; trying again");
                backoff.wait().await;
            }
        }
    }
}
