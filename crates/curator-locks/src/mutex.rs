//! `InterProcessMutex`: Curator's reentrant distributed mutex.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::metrics::names;
use curator_framework::recipe::{Hold, RecipeCore, RecipeOptions, TaskHandle};
use curator_framework::types::EventType;
use curator_framework::watcher::Watcher;
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::holding::{Holding, delete_in_background, delete_node};
use crate::lock_delay::{Admitted, LockDelay, Rule};

/// The name Curator gives mutex nodes (after the protected prefix, before the sequence).
const LOCK_NAME: &str = "lock-";
/// Curator's read-lock node name in an `InterProcessReadWriteLock`.
pub(crate) const READ_LOCK_NAME: &str = "__READ__";
/// Curator's write-lock node name in an `InterProcessReadWriteLock`.
pub(crate) const WRITE_LOCK_NAME: &str = "__WRIT__";

/// The kind the sides of an `InterProcessReadWriteLock` report under.
const RW_KIND: &str = "InterProcessReadWriteLock";

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
/// process) contend like separate processes. Build one with [`builder`](Self::builder).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_locks::InterProcessMutex;
/// let mutex = InterProcessMutex::builder(client, "/locks/orders").build()?;
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
    pub(crate) client: CuratorFramework,
    /// The mutex's name (the `name` label of its wait and hold times) and its tasks: the
    /// revocation watches, and the releases of dropped guards.
    pub(crate) core: RecipeCore,
    path: String,
    lock_name: &'static str,
    kind: Kind,
    /// The data of this handle's lock nodes (Curator writes the participant id there for
    /// leader selection).
    data: Vec<u8>,
    /// One acquisition at a time per handle.
    acquiring: tokio::sync::Mutex<()>,
    /// Called when someone asks the holder to release (see
    /// [`InterProcessMutexBuilder::make_revocable`]).
    revocable: Option<RevocationListener>,
    /// The health check every hold is bound to, and how often it runs (see
    /// [`InterProcessMutexBuilder::health_check`]).
    health: Option<(HealthCheck, Duration)>,
    /// The lock-delay this handle's holders promise, and whether the lock's directory was
    /// made persistent for its record (see [`InterProcessMutexBuilder::lock_delay`]).
    lock_delay: Option<LockDelay>,
    delay_prepared: std::sync::atomic::AtomicBool,
    held: Mutex<Option<Held>>,
}

/// What a handle holds: one node, held `count` times.
struct Held {
    hold: Hold,
    count: u32,
    /// When the node came to hold the lock (its hold time ends with its last release).
    since: Instant,
    /// Revocation requests: only for a revocable mutex (none otherwise, and no channel).
    revoke: Option<watch::Receiver<bool>>,
    /// Stops the revocation watch when the hold ends.
    _revocation: Option<TaskHandle>,
    /// Stops the health check when the hold ends.
    _health: Option<TaskHandle>,
}

type RevocationListener = Arc<dyn Fn() + Send + Sync>;

/// A local health check: `true` while healthy.
type HealthCheck = Arc<dyn Fn() -> futures::future::BoxFuture<'static, bool> + Send + Sync>;

/// Options of an [`InterProcessMutex`], from [`InterProcessMutex::builder`].
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_locks::InterProcessMutex;
/// let mutex = InterProcessMutex::builder(client, "/locks/report")
///     .node_data("host-7")
///     .make_revocable(|| println!("asked to release"))
///     .build()?;
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until .build()"]
pub struct InterProcessMutexBuilder {
    client: CuratorFramework,
    path: String,
    data: Option<Vec<u8>>,
    revocable: Option<RevocationListener>,
    health: Option<(HealthCheck, Duration)>,
    lock_delay: Option<Duration>,
    options: RecipeOptions,
}

impl fmt::Debug for InterProcessMutexBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InterProcessMutexBuilder")
            .field("path", &self.path)
            .field("node_data_len", &self.data.as_ref().map(Vec::len))
            .field("revocable", &self.revocable.is_some())
            .field(
                "health_check_every",
                &self.health.as_ref().map(|(_, every)| every),
            )
            .field("lock_delay", &self.lock_delay)
            .field("options", &self.options)
            .finish()
    }
}

impl InterProcessMutexBuilder {
    /// The data of this mutex's lock nodes (default: the client's
    /// [`identity`](curator_framework::CuratorFramework::identity), `host=…;pid=…;name=…`, which
    /// `curator inspect` shows; Java Curator writes its local IP address and never reads it).
    /// Curator's leader selection stores the participant id there; other participants read it
    /// back. Data over ZooKeeper's limit makes every acquisition fail with
    /// [`Error::InvalidArgument`].
    pub fn node_data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.data = Some(data.into());
        self
    }

    /// Makes acquisitions revocable (Curator's `makeRevocable`): while the mutex holds the lock
    /// it watches its node, and when someone asks it to release
    /// ([`Revoker::attempt_revoke`](crate::Revoker)) it calls `listener` and resolves
    /// [`LockGuard::revocation_requested`]. Releasing is up to the holder.
    pub fn make_revocable(mut self, listener: impl Fn() + Send + Sync + 'static) -> Self {
        self.revocable = Some(Arc::new(listener));
        self
    }

    /// Binds every hold to a local health check (Consul's health-bound sessions): while the
    /// lock is held, `check` runs every `every` (first one `every` after the acquisition), and
    /// the first `false` ends the hold: its [`lost`](Hold::lost) resolves at once (every
    /// reentrant guard's), then the lock node is deleted, so the next waiter acquires. A check
    /// that hangs holds nothing back but itself: give it its own timeout.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// let mutex = curator_locks::InterProcessMutex::builder(client, "/locks/primary")
    ///     .health_check(Duration::from_secs(1), || async {
    ///         std::path::Path::new("/var/run/db.sock").exists()
    ///     })
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn health_check<F, Fut>(mut self, every: Duration, check: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = bool> + Send + 'static,
    {
        let check: HealthCheck = Arc::new(move || Box::pin(check()));
        self.health = Some((check, every));
        self
    }

    /// Lock-delay (Chubby's; Consul's default is 15 s): when a holder of this mutex *fails*
    /// (its session ends, or its [health check](Self::health_check) fails, before it
    /// releases), the lock stays unavailable for `delay` on ZooKeeper's clock, so that requests
    /// it sent before it died drain before the next holder acts. A release hands over at once.
    ///
    /// How it works: a holder writes `held <node> <delay>` into the data of the lock's
    /// directory as it acquires (one more write per acquisition), and its release deletes its
    /// node and removes that line in one transaction; a contender that finds the line of a
    /// node that is gone knows the holder failed, and waits until a write of its own is
    /// stamped at least `delay` after the write that saw the failure ([`LockDelayRecord`](crate::LockDelayRecord)
    /// has the format; `curator inspect` shows it). The directory is made persistent (not a
    /// container) so the record outlives the lock's nodes. Each holder's own delay applies
    /// to its failure.
    ///
    /// What it cannot promise: only contenders with a lock-delay honour it (Java Curator's
    /// `InterProcessMutex` on the same path acquires at once after a failure, and its own
    /// failures are not delayed); with nobody waiting, the delay runs from the next
    /// contender's arrival (ZooKeeper keeps no time of an expiry); an acquisition's timeout
    /// covers the delay.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// let mutex = curator_locks::InterProcessMutex::builder(client, "/locks/ledger")
    ///     .lock_delay(Duration::from_secs(15))
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn lock_delay(mut self, delay: Duration) -> Self {
        self.lock_delay = Some(delay);
        self
    }

    /// The `name` label of this mutex's metrics (`curator_lock_wait_seconds`,
    /// `curator_lock_hold_seconds`); default: the lock's path. Set it when paths are made per
    /// job or per tenant, so the metrics keep a bounded number of series: mutexes sharing a
    /// name share their series.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let job = 42;
    /// let mutex = curator_locks::InterProcessMutex::builder(client, &format!("/locks/jobs/{job}"))
    ///     .metrics_name("jobs")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// The mutex.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path ZooKeeper would reject; [`Error::InvalidArgument`]
    /// for a health check every zero seconds, or a lock-delay of zero or over a day.
    pub fn build(self) -> Result<InterProcessMutex> {
        let lock_delay = self.lock_delay.map(LockDelay::new).transpose()?;
        if self
            .health
            .as_ref()
            .is_some_and(|(_, every)| every.is_zero())
        {
            return Err(Error::InvalidArgument(
                "a health check must run at an interval above zero".into(),
            ));
        }
        let data = self
            .data
            .unwrap_or_else(|| self.client.identity().to_bytes());
        let core = RecipeCore::new(&self.client, "InterProcessMutex", &self.path, &self.options);
        InterProcessMutex::from_parts(
            self.client,
            &self.path,
            LOCK_NAME,
            Kind::Exclusive,
            data,
            Options {
                revocable: self.revocable,
                health: self.health,
                lock_delay,
            },
            core,
        )
    }
}

/// What a mutex's builder adds to its parts.
#[derive(Default)]
struct Options {
    revocable: Option<RevocationListener>,
    health: Option<(HealthCheck, Duration)>,
    lock_delay: Option<LockDelay>,
}

/// The data Curator writes into a holder's node to ask it to release.
pub(crate) const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

/// Runs a hold's health check every `every` until the hold ends; the first failure ends the
/// hold (`sick`) and deletes its node.
async fn watch_health(
    client: CuratorFramework,
    hold: Hold,
    check: HealthCheck,
    every: Duration,
    sick: watch::Sender<bool>,
) {
    loop {
        tokio::select! {
            () = hold.lost() => return,
            () = tokio::time::sleep(every) => {}
        }
        if check().await {
            continue;
        }
        if hold.is_lost() {
            return;
        }
        tracing::warn!(
            node = hold.node_path(),
            "health check failed: the lock is released"
        );
        sick.send_replace(true);
        let _ = delete_node(&client, hold.node_path()).await;
        return;
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
            .field("node", &held.as_ref().map(|h| h.hold.node_path()))
            .field("count", &held.as_ref().map_or(0, |h| h.count))
            .finish()
    }
}

/// Deletes a lock node in the background unless disarmed: the acquisition that made it was
/// dropped, timed out or failed.
struct NodeCleanup<'a> {
    shared: &'a Shared,
    node: Option<String>,
}

impl Drop for NodeCleanup<'_> {
    fn drop(&mut self) {
        if let Some(node) = self.node.take() {
            delete_in_background(&self.shared.client, self.shared.core.tasks(), &node);
        }
    }
}

/// How long an attempt waits for the nodes ahead of its own.
#[derive(Clone, Copy)]
enum Wait {
    Forever,
    Until(Instant),
    /// Not at all: `try_acquire`.
    No,
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
    /// Options of a mutex on `path` (created on first use, as container nodes).
    pub fn builder(client: CuratorFramework, path: &str) -> InterProcessMutexBuilder {
        InterProcessMutexBuilder {
            client,
            path: path.to_owned(),
            data: None,
            revocable: None,
            health: None,
            lock_delay: None,
            options: RecipeOptions::new(),
        }
    }

    fn from_parts(
        client: CuratorFramework,
        path: &str,
        lock_name: &'static str,
        kind: Kind,
        data: Vec<u8>,
        options: Options,
        core: RecipeCore,
    ) -> Result<Self> {
        paths::validate(path)?;
        Ok(Self {
            shared: Arc::new(Shared {
                core,
                client,
                path: path.to_owned(),
                lock_name,
                kind,
                data,
                acquiring: tokio::sync::Mutex::new(()),
                revocable: options.revocable,
                health: options.health,
                lock_delay: options.lock_delay,
                delay_prepared: std::sync::atomic::AtomicBool::new(false),
                held: Mutex::new(None),
            }),
        })
    }

    /// The write side of a read/write lock on `path`.
    pub(crate) fn write_side(
        client: CuratorFramework,
        path: &str,
        lock_delay: Option<Duration>,
        options: &RecipeOptions,
    ) -> Result<Self> {
        let data = client.identity().to_bytes();
        let core = RecipeCore::new(&client, RW_KIND, path, options);
        let lock_delay = lock_delay.map(LockDelay::new).transpose()?;
        Self::from_parts(
            client,
            path,
            WRITE_LOCK_NAME,
            Kind::Exclusive,
            data,
            Options {
                lock_delay,
                ..Options::default()
            },
            core,
        )
    }

    /// The read side of a read/write lock whose write side is `write`.
    pub(crate) fn read_side(write: &InterProcessMutex, options: &RecipeOptions) -> Result<Self> {
        let client = write.shared.client.clone();
        let kind = Kind::Read {
            write: Arc::clone(&write.shared),
        };
        let data = client.identity().to_bytes();
        let core = RecipeCore::new(&client, RW_KIND, &write.shared.path, options);
        Self::from_parts(
            client,
            &write.shared.path,
            READ_LOCK_NAME,
            kind,
            data,
            Options {
                lock_delay: write.shared.lock_delay,
                ..Options::default()
            },
            core,
        )
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

    /// Takes the lock only if that needs no waiting: `None` at once when another handle (or
    /// process) holds it, or is ahead in line. A handle that holds the lock already takes it
    /// again (reentrant), as [`acquire`](Self::acquire) does.
    ///
    /// Unlike `acquire_timeout(Duration::ZERO)` it never watches the node ahead, and the lock
    /// node it made is deleted before it returns `None` (a failed delete goes on in the
    /// background), so a contender that gives up leaves nothing behind.
    ///
    /// ```no_run
    /// # async fn demo(mutex: curator_locks::InterProcessMutex) -> curator_framework::Result<()> {
    /// match mutex.try_acquire().await? {
    ///     Some(guard) => guard.release().await?,
    ///     None => println!("busy: someone else holds {}", mutex.path()),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancellation safety
    /// As [`acquire`](Self::acquire).
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        // Another acquisition of this handle is waiting in line: the lock is not ours to take.
        let Ok(_one_at_a_time) = self.shared.acquiring.try_lock() else {
            return Ok(None);
        };
        if let Some(guard) = self.reenter() {
            return Ok(Some(guard));
        }
        let started = Instant::now();
        let outcome = async {
            loop {
                match self.attempt(Wait::No).await? {
                    Attempt::Acquired { node, token } => return Ok(Some(self.hold(node, token))),
                    Attempt::TimedOut => return Ok(None),
                    Attempt::NodeLost => {
                        tracing::debug!(path = %self.shared.path, "lock node lost while trying; trying again")
                    }
                }
            }
        }
        .await;
        self.waited(started);
        outcome
    }

    /// Whether this handle holds the lock now.
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.shared.held.lock().is_some()
    }

    /// The contenders' nodes, in lock order (the first holds the lock), as full paths.
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// Safe (a read).
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
        let started = Instant::now();
        let outcome = async {
            loop {
                let wait = deadline.map_or(Wait::Forever, Wait::Until);
                match self.attempt(wait).await? {
                    Attempt::Acquired { node, token } => return Ok(Some(self.hold(node, token))),
                    Attempt::TimedOut => return Ok(None),
                    Attempt::NodeLost => {
                        tracing::debug!(path = %self.shared.path, "lock node lost while waiting; trying again")
                    }
                }
            }
        }
        .await;
        self.waited(started);
        outcome
    }

    /// Records the wait of an acquisition that needed a node (whatever its outcome; a reentrant
    /// one waits for nothing and records nothing).
    fn waited(&self, started: Instant) {
        self.shared
            .core
            .name()
            .record(names::LOCK_WAIT_SECONDS, started.elapsed());
    }

    fn reenter(&self) -> Option<LockGuard> {
        let mut held = self.shared.held.lock();
        let held = held.as_mut()?;
        held.count += 1;
        Some(LockGuard {
            holding: Holding::reentrant(held.hold.clone(), Arc::clone(&self.shared)),
            revoke: held.revoke.clone(),
        })
    }

    fn hold(&self, node: String, token: i64) -> LockGuard {
        let shared = &self.shared;
        let mut hold = Hold::new(&shared.client, node, token);
        let mut health = None;
        if let Some((check, every)) = shared.health.clone() {
            let (sick, ended) = watch::channel(false);
            hold = hold.ended_by(ended);
            let task = watch_health(shared.client.clone(), hold.clone(), check, every, sick);
            health = Some(shared.core.tasks().spawn(task));
        }
        let (revoke, revocation) = match shared.revocable.clone() {
            Some(on_revoke) => {
                let (revoke_tx, revoke) = watch::channel(false);
                let task = shared.core.tasks().spawn(watch_for_revocation(
                    shared.client.clone(),
                    hold.node_path().to_owned(),
                    on_revoke,
                    revoke_tx,
                ));
                (Some(revoke), Some(task))
            }
            None => (None, None),
        };
        *shared.held.lock() = Some(Held {
            hold: hold.clone(),
            count: 1,
            since: Instant::now(),
            revoke: revoke.clone(),
            _revocation: revocation,
            _health: health,
        });
        LockGuard {
            holding: Holding::reentrant(hold, Arc::clone(shared)),
            revoke,
        }
    }

    /// One try: make a node, then wait until it is the lowest.
    async fn attempt(&self, wait: Wait) -> Result<Attempt> {
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
        if self.shared.lock_delay.is_some()
            && !self
                .shared
                .delay_prepared
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            LockDelay::prepare(client, path).await?;
            self.shared
                .delay_prepared
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
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
            shared: &self.shared,
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
                return self.admit(cleanup, node, stat.czxid, wait).await;
            };
            // The planted bug: a waiter that skips its watch and takes the lock at once.
            #[cfg(feature = "planted-bugs")]
            if crate::planted::planted() && !matches!(wait, Wait::No) {
                return self.admit(cleanup, node, stat.czxid, wait).await;
            }
            if let Wait::No = wait {
                // Gone before this returns (a failure here leaves it to the background).
                if let Some(node) = cleanup.node.take() {
                    let _ = delete_node(client, &node).await;
                }
                return Ok(Attempt::TimedOut);
            }
            // Watch only the node that blocks ours: its deletion wakes this waiter alone.
            let previous = paths::join(path, &blocker);
            let watcher: Watcher = match client.get_data().watched().for_path(&previous).await {
                Ok((_, _, watcher)) => watcher,
                Err(Error::NoNode) => continue,
                Err(error) => return Err(error),
            };
            // A watch set on a later session than our node's (the read was retried after the
            // session expired) hears nothing of that session's end: our node went with it, and
            // waiting for the blocker would leave us out of line until it goes. List again.
            if client.session_id() != Some(stat.ephemeral_owner) {
                continue;
            }
            let event = match wait {
                Wait::Until(deadline) => {
                    match tokio::time::timeout_at(deadline, watcher.changed()).await {
                        Ok(event) => event,
                        Err(_) => {
                            // Gone before this returns (a failure here leaves it to the
                            // background).
                            if let Some(node) = cleanup.node.take() {
                                let _ = delete_node(client, &node).await;
                            }
                            return Ok(Attempt::TimedOut);
                        }
                    }
                }
                Wait::Forever | Wait::No => watcher.changed().await,
            };
            // The blocker was the only node in our way and it went, on the session that made
            // ours: nothing can come before our node later (sequence numbers only grow), so the
            // lock is ours without another listing (one round trip less per hand-over).
            if event.event_type == EventType::NodeDeleted
                && self.blockers(&children, index) == 1
                && client.session_id() == Some(stat.ephemeral_owner)
            {
                return self.admit(cleanup, node, stat.czxid, wait).await;
            }
        }
    }

    /// Our node `node` (with fencing token `token`) is first in line by the lock's own rule:
    /// under a lock-delay, it holds once the delays of failed holders that keep it out ran out.
    async fn admit(
        &self,
        mut cleanup: NodeCleanup<'_>,
        node: String,
        token: i64,
        wait: Wait,
    ) -> Result<Attempt> {
        if let Some(lock_delay) = self.shared.lock_delay {
            let rule = match &self.shared.kind {
                Kind::Exclusive => Rule::Exclusive,
                Kind::Read { write } => Rule::Reader {
                    writer: WRITE_LOCK_NAME,
                    own_writer: write
                        .held
                        .lock()
                        .as_ref()
                        .map(|held| paths::node_name(held.hold.node_path()).to_owned()),
                },
            };
            let deadline = match wait {
                Wait::Forever => None,
                Wait::Until(deadline) => Some(deadline),
                Wait::No => Some(Instant::now()),
            };
            let ours = paths::node_name(&node);
            match lock_delay
                .admit(
                    &self.shared.client,
                    &self.shared.path,
                    ours,
                    &rule,
                    deadline,
                )
                .await?
            {
                Admitted::Yes => {}
                Admitted::NodeLost => {
                    cleanup.node = None;
                    return Ok(Attempt::NodeLost);
                }
                Admitted::TimedOut => {
                    // Gone before this returns (a failure here leaves it to the background).
                    if let Some(node) = cleanup.node.take() {
                        let _ = delete_node(&self.shared.client, &node).await;
                    }
                    return Ok(Attempt::TimedOut);
                }
            }
        }
        cleanup.node = None;
        Ok(Attempt::Acquired { node, token })
    }

    /// For the read side: the sequence of the write node this handle's write side holds.
    fn writer_sequence(&self) -> Option<String> {
        let Kind::Read { write } = &self.shared.kind else {
            return None;
        };
        let held = write.held.lock();
        let name = paths::node_name(held.as_ref()?.hold.node_path());
        Some(paths::sort_key(name, WRITE_LOCK_NAME).to_owned())
    }

    /// How many nodes before ours (at `index` of the sorted `children`) keep it from holding
    /// the lock.
    fn blockers(&self, children: &[String], index: usize) -> usize {
        match &self.shared.kind {
            Kind::Exclusive => index,
            Kind::Read { .. } => children[..index]
                .iter()
                .filter(|name| name.contains(WRITE_LOCK_NAME))
                .count(),
        }
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
}

impl Shared {
    /// The directory whose lock-delay record a hold's release updates, under a lock-delay.
    pub(crate) fn delay_dir(&self) -> Option<String> {
        self.lock_delay.map(|_| self.path.clone())
    }

    /// Counts one hold of `node` out; `true` when it was the last (the node is to go).
    pub(crate) fn release_one(&self, node: &str) -> bool {
        let mut held = self.held.lock();
        let Some(current) = held.as_mut().filter(|h| h.hold.node_path() == node) else {
            return false;
        };
        current.count -= 1;
        if current.count > 0 {
            return false;
        }
        // Dropping the hold stops its revocation watch.
        if let Some(ended) = held.take() {
            self.core
                .name()
                .record(names::LOCK_HOLD_SECONDS, ended.since.elapsed());
        }
        true
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

/// One hold of an [`InterProcessMutex`]: a [`Hold`] (its lock node, fencing token and `lost()`
/// signal, through `Deref`). Dropping it releases the hold (in the background, retried);
/// [`release`](Self::release) does it now and reports errors. The last hold of a handle deletes
/// the lock node.
///
/// ```no_run
/// # async fn demo(mutex: curator_locks::InterProcessMutex) -> curator_framework::Result<()> {
/// let guard = mutex.acquire().await?;
/// tokio::select! {
///     () = guard.lost() => println!("connection trouble: stop, the lock may be someone else's"),
///     () = async { /* protected work, handing guard.fencing_token() to the resource */ } => {}
/// }
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping the guard releases the lock at once"]
pub struct LockGuard {
    holding: Holding,
    revoke: Option<watch::Receiver<bool>>,
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("LockGuard")
            .field(self.holding.hold())
            .finish()
    }
}

impl Deref for LockGuard {
    type Target = Hold;

    fn deref(&self) -> &Hold {
        self.holding.hold()
    }
}

impl LockGuard {
    /// Resolves when someone asked this holder to release (only for a mutex built with
    /// [`InterProcessMutexBuilder::make_revocable`]; otherwise it never resolves).
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn revocation_requested(&self) {
        let Some(mut revoke) = self.revoke.clone() else {
            return std::future::pending().await;
        };
        if revoke.wait_for(|r| *r).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Resolves when someone waits behind this hold (Chubby's conflicting-lock event): a lock
    /// node ordered after this one appears in the lock's directory, a Java Curator waiter's
    /// too; at once if one is there already. For a read lock's hold only a writer counts (a
    /// later reader holds beside it). A long-held lock can then yield. One `getChildren`
    /// with a watch per change of the directory; the watch is set again after a reconnect.
    ///
    /// ```no_run
    /// # async fn demo(mutex: curator_locks::InterProcessMutex) -> curator_framework::Result<()> {
    /// let guard = mutex.acquire().await?;
    /// tokio::select! {
    ///     contended = guard.contended() => { contended?; /* finish the batch and release */ }
    ///     () = async { /* a long batch */ } => {}
    /// }
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The hold's [`lost_error`](Hold::lost_error) ([`Error::LockLost`](curator_framework::Error::LockLost))
    /// when the hold is lost first; errors no retry can fix.
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn contended(&self) -> Result<()> {
        let hold = self.holding.hold();
        let client = self.holding.client();
        let Some(parent) = paths::parent(hold.node_path()) else {
            return Err(hold.lost_error());
        };
        let ours = paths::node_name(hold.node_path());
        let reader = ours.contains(READ_LOCK_NAME);
        let behind = |name: &String| {
            name != ours
                && order_key(name) > order_key(ours)
                && (!reader || name.contains(WRITE_LOCK_NAME))
        };
        let mut backoff = curator_framework::recipe::Backoff::standard();
        loop {
            if hold.is_lost() {
                return Err(hold.lost_error());
            }
            let listed = tokio::select! {
                listed = client.get_children().watched().for_path(parent) => listed,
                () = hold.lost() => return Err(hold.lost_error()),
            };
            let watcher = match listed {
                Ok((children, _, watcher)) => {
                    if children.iter().any(behind) {
                        return Ok(());
                    }
                    backoff.reset();
                    watcher
                }
                Err(error) if error.is_retried() => {
                    tokio::select! {
                        () = backoff.wait() => continue,
                        () = hold.lost() => return Err(hold.lost_error()),
                    }
                }
                Err(error) => return Err(error),
            };
            tokio::select! {
                _ = watcher.changed() => {}
                () = hold.lost() => return Err(hold.lost_error()),
            }
        }
    }

    /// Releases this hold; the last hold of a handle deletes the lock node.
    ///
    /// # Errors
    /// Connection errors (the delete goes on in the background).
    ///
    /// # Cancellation safety
    /// Safe: the hold is given back either way; dropping the future (polled or not) leaves the
    /// delete to the background, as dropping the guard does.
    pub async fn release(self) -> Result<()> {
        self.holding.release().await
    }
}
