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

struct Shared {
    client: CuratorFramework,
    path: String,
    /// One acquisition at a time per handle.
    acquiring: tokio::sync::Mutex<()>,
    held: Mutex<Option<Held>>,
}

struct Held {
    node: String,
    count: u32,
    token: i64,
    lost: watch::Receiver<bool>,
    _listener: ListenerHandle,
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
fn delete_in_background(client: &CuratorFramework, node: &str) {
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
        paths::validate(path)?;
        Ok(Self {
            shared: Arc::new(Shared {
                client,
                path: path.to_owned(),
                acquiring: tokio::sync::Mutex::new(()),
                held: Mutex::new(None),
            }),
        })
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
        Ok(sorted(children)
            .into_iter()
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
            released: false,
        })
    }

    fn hold(&self, node: String, token: i64) -> LockGuard {
        let client = &self.shared.client;
        let policy = client.connection_state_error_policy();
        let (lost_tx, lost) = watch::channel(false);
        let listener = client
            .connection_state_listenable()
            .add_listener(move |state| {
                if policy.is_error_state(state) {
                    lost_tx.send_replace(true);
                }
            });
        *self.shared.held.lock() = Some(Held {
            node: node.clone(),
            count: 1,
            token,
            lost: lost.clone(),
            _listener: listener,
        });
        LockGuard {
            shared: Arc::clone(&self.shared),
            node,
            token,
            lost,
            released: false,
        }
    }

    /// One try: make a node, then wait until it is the lowest.
    async fn attempt(&self, deadline: Option<Instant>) -> Result<Attempt> {
        let client = &self.shared.client;
        let path = &self.shared.path;
        // The create and the listing go out together; ZooKeeper answers them in order, so the
        // listing normally already contains our node.
        let create = client
            .create()
            .creating_parent_containers_if_needed()
            .with_protection()
            .with_mode(CreateMode::EphemeralSequential)
            .for_path(&paths::join(path, LOCK_NAME), b"")
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
            if index == 0 {
                cleanup.node = None;
                return Ok(Attempt::Acquired {
                    node,
                    token: stat.czxid,
                });
            }
            // Watch only the node just before ours: its deletion wakes this waiter alone.
            let previous = paths::join(path, &children[index - 1]);
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
                        return Ok(Attempt::TimedOut);
                    }
                }
                None => {
                    watcher.changed().await;
                }
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

/// Sorts lock children by their sequence (ignoring protected prefixes), as Curator does.
fn sorted(mut children: Vec<String>) -> Vec<String> {
    children.sort_by(|a, b| paths::sort_key(a, LOCK_NAME).cmp(paths::sort_key(b, LOCK_NAME)));
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
