//! `InterProcessMutex`: Curator's reentrant distributed mutex.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::listen::ListenerHandle;
use curator_framework::watcher::Watcher;
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;

/// The name Curator gives mutex nodes (after the protected prefix, before the sequence).
const LOCK_NAME: &str = "lock-";
/// Curator's read-lock node name in an `InterProcessReadWriteLock`.
pub(crate) const READ_LOCK_NAME: &str = "__READ__";
/// Curator's write-lock node name in an `InterProcessReadWriteLock`.
pub(crate) const WRITE_LOCK_NAME: &str = "__WRIT__";

/// Which rule decides who holds the lock.
enum Kind {
    /// The lowest node holds it (a mutex, or the write side of a read/write lock).
    Exclusive,
    /// A reader holds it when no writer's node comes before its own, or when the same
    /// read/write lock handle holds the write side.
    Read { write: Arc<Shared> },
}

/// A distributed mutex: at most one holder at a time across every process using the same path,
/// Rust or Java (Curator's `InterProcessMutex` layout).
///
/// It is reentrant per handle: a handle that holds the lock may acquire it again, and must
/// release it as often. Clones of a handle share that ownership; separate handles (even in one
/// process) contend like separate processes.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_locks::InterProcessMutex;
/// let mutex = InterProcessMutex::new(client, "/locks/orders")?;
/// if let Some(guard) = mutex.acquire_timeout(Duration::from_secs(5)).await? {
///     println!("holding with fencing token {}", guard.fencing_token());
///     guard.release().await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct InterProcessMutex {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    client: CuratorFramework,
    path: String,
    lock_name: &'static str,
    kind: Kind,
    /// The data of this handle's lock nodes (Curator writes the participant id there for
    /// leader selection).
    data: Vec<u8>,
    /// One acquisition at a time per handle.
    acquiring: tokio::sync::Mutex<()>,
    /// Set by `make_revocable`: called when someone asks the holder to release.
    revocable: Mutex<Option<RevocationListener>>,
    held: Mutex<Option<Held>>,
}

struct Held {
    node: String,
    count: u32,
    token: i64,
    lost: watch::Receiver<bool>,
    revoke: watch::Receiver<bool>,
    _listener: ListenerHandle,
    /// Stops the revocation watch when the hold ends.
    _revocation: Option<AbortOnDrop>,
}

type RevocationListener = Arc<dyn Fn() + Send + Sync>;

/// A flag that turns true when the client's connection state becomes an error state (per its
/// connection-state error policy), with the listener that sets it.
pub(crate) fn lost_signal(client: &CuratorFramework) -> (watch::Receiver<bool>, ListenerHandle) {
    let policy = client.connection_state_error_policy();
    let (lost_tx, lost) = watch::channel(false);
    let listener = client
        .connection_state_listenable()
        .add_listener(move |state| {
            if policy.is_error_state(state) {
                lost_tx.send_replace(true);
            }
        });
    (lost, listener)
}

/// The data Curator writes into a holder's node to ask it to release.
pub(crate) const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Watches the holder's own node for a revocation request, until the node goes.
async fn watch_for_revocation(
    client: CuratorFramework,
    node: String,
    listener: RevocationListener,
    flag: watch::Sender<bool>,
) {
    loop {
        let watcher = match client.get_data().watched().for_path(&node).await {
            Ok((data, _, _)) if data == REVOKE_MESSAGE => {
                flag.send_replace(true);
                listener();
                return;
            }
            Ok((_, _, watcher)) => watcher,
            Err(_) => return,
        };
        let event = watcher.changed().await;
        if event.event_type != curator_framework::types::EventType::NodeDataChanged {
            return;
        }
    }
}

impl fmt::Debug for InterProcessMutex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let held = self.shared.held.lock();
        f.debug_struct("InterProcessMutex")
            .field("path", &self.shared.path)
            .field("node", &held.as_ref().map(|h| h.node.as_str()))
            .field("count", &held.as_ref().map_or(0, |h| h.count))
            .finish()
    }
}

/// Deletes a lock node in the background unless disarmed: the acquisition that made it was
/// dropped, timed out or failed.
struct NodeCleanup<'a> {
    client: &'a CuratorFramework,
    node: Option<String>,
}

impl Drop for NodeCleanup<'_> {
    fn drop(&mut self) {
        if let Some(node) = self.node.take() {
            delete_in_background(self.client, &node);
        }
    }
}

/// Sends a guaranteed delete of `node` now and lets it finish in the background.
pub(crate) fn delete_in_background(client: &CuratorFramework, node: &str) {
    if tokio::runtime::Handle::try_current().is_err() {
        tracing::error!(
            node,
            "lock node left to its session: dropped outside a Tokio runtime"
        );
        return;
    }
    // The request goes out when the future is made; dropping it hands the rest (retries across
    // connection loss) to the client's background work.
    drop(
        client
            .delete()
            .guaranteed()
            .quietly()
            .for_path(node)
            .into_future(),
    );
}

enum Attempt {
    Acquired {
        node: String,
        token: i64,
    },
    TimedOut,
    /// Our node vanished (the session ended while waiting): start over.
    NodeLost,
}

impl InterProcessMutex {
    /// A mutex on `path` (created on first use, as container nodes).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path ZooKeeper would reject.
    pub fn new(client: CuratorFramework, path: &str) -> Result<Self> {
        Self::with_kind(client, path, LOCK_NAME, Kind::Exclusive)
    }

    fn with_kind(
        client: CuratorFramework,
        path: &str,
        lock_name: &'static str,
        kind: Kind,
    ) -> Result<Self> {
        paths::validate(path)?;
        Ok(Self {
            shared: Arc::new(Shared {
                client,
                path: path.to_owned(),
                lock_name,
                kind,
                data: Vec::new(),
                acquiring: tokio::sync::Mutex::new(()),
                revocable: Mutex::new(None),
                held: Mutex::new(None),
            }),
        })
    }

    /// A mutex on `path` whose lock nodes hold `data` (Curator's leader selection stores the
    /// participant id there; other participants read it back).
    ///
    /// # Errors
    /// As [`new`](Self::new); [`Error::InvalidArgument`] for data over 1 MiB.
    pub fn with_node_data(
        client: CuratorFramework,
        path: &str,
        data: impl Into<Vec<u8>>,
    ) -> Result<Self> {
        let data = data.into();
        if data.len() > paths::MAX_DATA_LEN {
            return Err(Error::InvalidArgument(format!(
                "lock node data of {} bytes is too large",
                data.len()
            )));
        }
        let mut mutex = Self::with_kind(client, path, LOCK_NAME, Kind::Exclusive)?;
        Arc::get_mut(&mut mutex.shared).expect("just made").data = data;
        Ok(mutex)
    }

    /// The write side of a read/write lock on `path`.
    pub(crate) fn write_side(client: CuratorFramework, path: &str) -> Result<Self> {
        Self::with_kind(client, path, WRITE_LOCK_NAME, Kind::Exclusive)
    }

    /// The read side of a read/write lock whose write side is `write`.
    pub(crate) fn read_side(write: &InterProcessMutex) -> Result<Self> {
        let client = write.shared.client.clone();
        let kind = Kind::Read {
            write: Arc::clone(&write.shared),
        };
        Self::with_kind(client, &write.shared.path, READ_LOCK_NAME, kind)
    }

    /// Makes later acquisitions revocable: while this handle holds the lock it watches its node,
    /// and when someone asks it to release ([`Revoker::attempt_revoke`](crate::Revoker)) it calls
    /// `listener` and resolves [`LockGuard::revocation_requested`]. Releasing is up to the holder.
    pub fn make_revocable(&self, listener: impl Fn() + Send + Sync + 'static) {
        *self.shared.revocable.lock() = Some(Arc::new(listener));
    }

    /// The lock's path.
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// Waits until this handle holds the lock.
    ///
    /// # Errors
    /// Connection and session errors after the client's retry policy gave up.
    ///
    /// # Cancellation safety
    /// Dropping the future at any point leaves no lock node behind (a node it made is deleted in
    /// the background) and does not change what this handle holds.
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.acquire_until(None)
            .await
            .map(|guard| guard.expect("no deadline"))
    }

    /// Like [`acquire`](Self::acquire), giving up after `timeout` (`None` then).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancellation safety
    /// As [`acquire`](Self::acquire).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>> {
        self.acquire_until(Some(Instant::now() + timeout)).await
    }

    /// Whether this handle holds the lock now.
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.shared.held.lock().is_some()
    }

    /// The contenders' nodes, in lock order (the first holds the lock), as full paths.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn participant_nodes(&self) -> Result<Vec<String>> {
        let children = match self
            .shared
            .client
            .get_children()
            .for_path(&self.shared.path)
            .await
        {
            Ok((children, _)) => children,
            Err(Error::NoNode) => Vec::new(),
            Err(error) => return Err(error),
        };
        // Each side of a read/write lock lists only its own nodes, as Curator does.
        let lock_name = self.shared.lock_name;
        let mine = |name: &String| lock_name == LOCK_NAME || name.contains(lock_name);
        Ok(sorted(children)
            .into_iter()
            .filter(mine)
            .map(|name| paths::join(&self.shared.path, &name))
            .collect())
    }

    async fn acquire_until(&self, deadline: Option<Instant>) -> Result<Option<LockGuard>> {
        let _one_at_a_time = match deadline {
            Some(deadline) => {
                match tokio::time::timeout_at(deadline, self.shared.acquiring.lock()).await {
                    Ok(permit) => permit,
                    Err(_) => return Ok(None),
                }
            }
            None => self.shared.acquiring.lock().await,
        };
        if let Some(guard) = self.reenter() {
            return Ok(Some(guard));
        }
        loop {
            match self.attempt(deadline).await? {
                Attempt::Acquired { node, token } => return Ok(Some(self.hold(node, token))),
                Attempt::TimedOut => return Ok(None),
                Attempt::NodeLost => {
                    tracing::debug!(path = %self.shared.path, "lock node lost while waiting; trying again")
                }
            }
        }
    }

    fn reenter(&self) -> Option<LockGuard> {
        let mut held = self.shared.held.lock();
        let held = held.as_mut()?;
        held.count += 1;
        Some(LockGuard {
            shared: Arc::clone(&self.shared),
            node: held.node.clone(),
            token: held.token,
            lost: held.lost.clone(),
            revoke: held.revoke.clone(),
            released: false,
        })
    }

    fn hold(&self, node: String, token: i64) -> LockGuard {
        let client = &self.shared.client;
        let (lost, listener) = lost_signal(client);
        let (revoke_tx, revoke) = watch::channel(false);
        let revocation = self.shared.revocable.lock().clone().map(|on_revoke| {
            AbortOnDrop(tokio::spawn(watch_for_revocation(
                client.clone(),
                node.clone(),
                on_revoke,
                revoke_tx,
            )))
        });
        *self.shared.held.lock() = Some(Held {
            node: node.clone(),
            count: 1,
            token,
            lost: lost.clone(),
            revoke: revoke.clone(),
            _listener: listener,
            _revocation: revocation,
        });
        LockGuard {
            shared: Arc::clone(&self.shared),
            node,
            token,
            lost,
            revoke,
            released: false,
        }
    }

    /// One try: make a node, then wait until it is the lowest.
    async fn attempt(&self, deadline: Option<Instant>) -> Result<Attempt> {
        let client = &self.shared.client;
        let path = &self.shared.path;
        // A reader whose handle holds the write side takes the read lock at the writer's place in
        // line (Curator's downgrade): a plain ephemeral node with the writer's sequence.
        let (name, mode) = match self.writer_sequence() {
            Some(sequence) => (
                format!("{}{sequence}", self.shared.lock_name),
                CreateMode::Ephemeral,
            ),
            None => (
                self.shared.lock_name.to_owned(),
                CreateMode::EphemeralSequential,
            ),
        };
        // The create and the listing go out together; ZooKeeper answers them in order, so the
        // listing normally already contains our node.
        let create = client
            .create()
            .creating_parent_containers_if_needed()
            .with_protection()
            .with_mode(mode)
            .for_path(&paths::join(path, &name), &self.shared.data)
            .with_stat()
            .into_future();
        let listing = client.get_children().for_path(path).into_future();
        let (node, stat) = create.await?;
        let mut cleanup = NodeCleanup {
            client,
            node: Some(node.clone()),
        };
        let ours = paths::node_name(&node).to_owned();
        let mut first = match listing.await {
            Ok((children, _)) if children.contains(&ours) => Some(children),
            Ok(_) | Err(Error::NoNode) => None,
            Err(error) => return Err(error),
        };
        loop {
            let children = match first.take() {
                Some(children) => children,
                None => client.get_children().for_path(path).await?.0,
            };
            let children = sorted(children);
            let Some(index) = children.iter().position(|c| *c == ours) else {
                cleanup.node = None;
                return Ok(Attempt::NodeLost);
            };
            let Some(blocker) = self.blocker(&children, index) else {
                cleanup.node = None;
                return Ok(Attempt::Acquired {
                    node,
                    token: stat.czxid,
                });
            };
            // Watch only the node that blocks ours: its deletion wakes this waiter alone.
            let previous = paths::join(path, &blocker);
            let watcher: Watcher = match client.get_data().watched().for_path(&previous).await {
                Ok((_, _, watcher)) => watcher,
                Err(Error::NoNode) => continue,
                Err(error) => return Err(error),
            };
            match deadline {
                Some(deadline) => {
                    if tokio::time::timeout_at(deadline, watcher.changed())
                        .await
                        .is_err()
                    {
                        // Gone before this returns (a failure here leaves it to the background).
                        if let Some(node) = cleanup.node.take() {
                            let _ = client.delete().guaranteed().quietly().for_path(&node).await;
                        }
                        return Ok(Attempt::TimedOut);
                    }
                }
                None => {
                    watcher.changed().await;
                }
            }
        }
    }

    /// For the read side: the sequence of the write node this handle's write side holds.
    fn writer_sequence(&self) -> Option<String> {
        let Kind::Read { write } = &self.shared.kind else {
            return None;
        };
        let held = write.held.lock();
        let node = &held.as_ref()?.node;
        let name = paths::node_name(node);
        Some(paths::sort_key(name, WRITE_LOCK_NAME).to_owned())
    }

    /// The node that keeps ours (at `index` of the sorted `children`) from holding the lock.
    fn blocker(&self, children: &[String], index: usize) -> Option<String> {
        match &self.shared.kind {
            Kind::Exclusive => (index > 0).then(|| children[index - 1].clone()),
            Kind::Read { write } => {
                if write.held.lock().is_some() {
                    return None;
                }
                children[..index]
                    .iter()
                    .find(|name| name.contains(WRITE_LOCK_NAME))
                    .cloned()
            }
        }
    }

    /// Releases one hold; returns the node to delete when it was the last.
    fn release_one(shared: &Shared) -> Option<String> {
        let mut held = shared.held.lock();
        let current = held.as_mut()?;
        current.count -= 1;
        if current.count > 0 {
            return None;
        }
        held.take().map(|h| h.node)
    }
}

/// The part of a lock node's name that orders it: what follows the lock name (Curator's
/// `fixForSorting`, applied for every lock name so read and write nodes interleave by sequence).
fn order_key(name: &str) -> &str {
    [LOCK_NAME, READ_LOCK_NAME, WRITE_LOCK_NAME]
        .iter()
        .fold(name, |name, marker| paths::sort_key(name, marker))
}

/// Sorts lock children by their sequence, ignoring protected prefixes, as Curator does.
fn sorted(mut children: Vec<String>) -> Vec<String> {
    children.sort_by(|a, b| order_key(a).cmp(order_key(b)));
    children
}

/// One hold of an [`InterProcessMutex`]. Dropping it releases the hold (in the background, with
/// retries); [`release`](Self::release) does it now and reports errors.
#[must_use = "dropping the guard releases the lock at once"]
pub struct LockGuard {
    shared: Arc<Shared>,
    node: String,
    token: i64,
    lost: watch::Receiver<bool>,
    revoke: watch::Receiver<bool>,
    released: bool,
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockGuard")
            .field("node", &self.node)
            .field("fencing_token", &self.token)
            .field("lost", &*self.lost.borrow())
            .finish()
    }
}

impl LockGuard {
    /// The lock node this hold rests on.
    pub fn node_path(&self) -> &str {
        &self.node
    }

    /// A number that grows with every acquisition of any lock on this ensemble (the lock node's
    /// creation zxid): hand it to a resource so it can refuse requests from an older holder.
    pub fn fencing_token(&self) -> i64 {
        self.token
    }

    /// Whether the connection was suspended or lost since the lock was acquired (per the client's
    /// connection-state error policy): the lock may be someone else's now.
    pub fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// Resolves when the lock may have been lost (see [`is_lost`](Self::is_lost)).
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn lost(&self) {
        let mut lost = self.lost.clone();
        let _ = lost.wait_for(|lost| *lost).await;
    }

    /// Resolves when someone asked this holder to release (only for a mutex made revocable with
    /// [`InterProcessMutex::make_revocable`]; otherwise it never resolves).
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn revocation_requested(&self) {
        let mut revoke = self.revoke.clone();
        if revoke.wait_for(|r| *r).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Releases this hold; the last hold of a handle deletes the lock node.
    ///
    /// # Errors
    /// Connection errors (the delete goes on in the background).
    pub async fn release(mut self) -> Result<()> {
        self.released = true;
        match InterProcessMutex::release_one(&self.shared) {
            Some(node) => {
                self.shared
                    .client
                    .delete()
                    .guaranteed()
                    .quietly()
                    .for_path(&node)
                    .await
            }
            None => Ok(()),
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        if let Some(node) = InterProcessMutex::release_one(&self.shared) {
            delete_in_background(&self.shared.client, &node);
        }
    }
}
