//! `PersistentNode`: a node the recipe keeps existing, with its latest data, across connection
//! loss, session expiry and deletion by others.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::listen::ListenerStream;
use curator_framework::{ConnectionState, CreateMode, CuratorFramework, Error, Result, paths};
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

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
    cancel: CancellationToken,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
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
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_framework::CreateMode;
/// use curator_nodes::PersistentNode;
/// let node = PersistentNode::new(client, CreateMode::Ephemeral, false, "/services/api/host-1", b"10.0.0.5:8080")?;
/// node.start().await?;
/// assert!(node.wait_for_initial_create(Duration::from_secs(10)).await?);
/// node.set_data(b"10.0.0.5:8081").await?;
/// node.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PersistentNode {
    inner: Arc<Inner>,
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
    /// A node at `path` with `mode` (protected names when `protected`) holding `data`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path; [`Error::InvalidArgument`] for data over 1 MiB
    /// or a TTL mode (use [`with_ttl`](Self::with_ttl)).
    pub fn new(
        client: CuratorFramework,
        mode: CreateMode,
        protected: bool,
        path: &str,
        data: impl AsRef<[u8]>,
    ) -> Result<Self> {
        Self::build(client, mode, protected, path, data.as_ref(), None)
    }

    /// A persistent node with a TTL (`PersistentWithTtl` or `PersistentSequentialWithTtl`).
    ///
    /// # Errors
    /// As [`new`](Self::new); [`Error::InvalidArgument`] for a mode without a TTL.
    pub fn with_ttl(
        client: CuratorFramework,
        mode: CreateMode,
        path: &str,
        data: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<Self> {
        if !matches!(
            mode,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
        ) {
            return Err(Error::InvalidArgument(format!("{mode:?} takes no TTL")));
        }
        Self::build(client, mode, false, path, data.as_ref(), Some(ttl))
    }

    fn build(
        client: CuratorFramework,
        mode: CreateMode,
        protected: bool,
        path: &str,
        data: &[u8],
        ttl: Option<Duration>,
    ) -> Result<Self> {
        if mode.is_sequential() {
            paths::validate_sequential(path)?;
        } else {
            paths::validate(path)?;
        }
        check_data(data)?;
        if ttl.is_none()
            && matches!(
                mode,
                CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
            )
        {
            return Err(Error::InvalidArgument(
                "a TTL mode needs PersistentNode::with_ttl".into(),
            ));
        }
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                path: path.to_owned(),
                mode,
                protected,
                ttl,
                data: Mutex::new(data.to_vec()),
                actual: watch::Sender::new(None),
                poke: Notify::new(),
                cancel: CancellationToken::new(),
                task: Mutex::new(None),
            }),
        })
    }

    /// Starts keeping the node (in the background; returns at once).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when already started; [`Error::Closed`] after `close`.
    pub async fn start(&self) -> Result<()> {
        let mut task = self.inner.task.lock();
        if self.inner.cancel.is_cancelled() {
            return Err(Error::Closed);
        }
        if task.is_some() {
            return Err(Error::InvalidArgument(
                "the persistent node is already started".into(),
            ));
        }
        *task = Some(tokio::spawn(keep(Arc::clone(&self.inner))));
        Ok(())
    }

    /// Waits until the node was created the first time; `false` when `timeout` passed first.
    ///
    /// # Errors
    /// [`Error::Closed`] when the node was closed meanwhile.
    pub async fn wait_for_initial_create(&self, timeout: Duration) -> Result<bool> {
        let mut actual = self.inner.actual.subscribe();
        let wait = actual.wait_for(Option::is_some);
        tokio::select! {
            () = self.inner.cancel.cancelled() => Err(Error::Closed),
            result = tokio::time::timeout(timeout, wait) => Ok(result.is_ok()),
        }
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
    pub async fn set_data(&self, data: impl AsRef<[u8]>) -> Result<()> {
        let data = data.as_ref();
        check_data(data)?;
        *self.inner.data.lock() = data.to_vec();
        let actual = self.actual_path();
        if let Some(actual) = actual {
            match self.inner.client.set_data().for_path(&actual, data).await {
                Ok(_) | Err(Error::NoNode) => {}
                Err(error) => {
                    self.inner.poke.notify_one();
                    return Err(error);
                }
            }
        }
        Ok(())
    }

    /// The data the node is kept with.
    pub fn data(&self) -> Vec<u8> {
        self.inner.data.lock().clone()
    }

    /// Stops the background work without deleting the node.
    pub(crate) async fn stop_keeping(&self) {
        self.inner.cancel.cancel();
        let task = self.inner.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    /// Stops keeping the node and deletes it (guaranteed: retried in the background if the
    /// connection is down). Idempotent.
    ///
    /// # Errors
    /// Connection errors of the delete (it goes on in the background).
    pub async fn close(&self) -> Result<()> {
        self.stop_keeping().await;
        let actual = self.actual_path();
        match actual {
            Some(actual) => {
                self.inner
                    .client
                    .delete()
                    .guaranteed()
                    .quietly()
                    .for_path(&actual)
                    .await
            }
            None => Ok(()),
        }
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
                    return self
                        .adopt(&self.path, &data)
                        .await
                        .map(|()| self.path.clone());
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
            Err(Error::NodeExists) => self.adopt(&actual, &data).await.map(|()| actual),
            Err(error) => Err(error),
        }
    }

    /// A node is at `path` already: keep it if it is ours (setting the data), replace it if it
    /// is another session's ephemeral node.
    async fn adopt(&self, path: &str, data: &[u8]) -> Result<()> {
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
        let current = self.client.get_data().for_path(path).await?.0;
        if current != data {
            self.client.set_data().for_path(path, data).await?;
        }
        Ok(())
    }
}

/// Keeps the node: ensure it, watch it, and again on deletion, reconnection or new data.
async fn keep(inner: Arc<Inner>) {
    let mut states: ListenerStream<ConnectionState> = inner.client.connection_state_stream();
    let cancel = inner.cancel.clone();
    let mut backoff = Duration::from_millis(50);
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
        let result = tokio::select! {
            () = cancel.cancelled() => return,
            result = step => result,
        };
        match result {
            Ok((Some(_), watcher)) => {
                backoff = Duration::from_millis(50);
                tokio::select! {
                    () = cancel.cancelled() => return,
                    _ = watcher.changed() => {}
                    _ = states.next_connected() => {}
                    () = inner.poke.notified() => {}
                }
            }
            Ok((None, _)) | Err(Error::NoNode) => {}
            Err(Error::Closed) => return,
            Err(error) => {
                tracing::debug!(%error, path = %inner.path, "persistent node not ensured; trying again");
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
        }
    }
}
