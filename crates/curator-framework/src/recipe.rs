//! The recipe runtime: the plumbing every recipe shares, ours and users' own.
//!
//! - [`RecipeTasks`]: background work spawned inside the client's task tree. A recipe's tasks
//!   end when the recipe closes them, and when the client closes: `client.close().await` cancels
//!   every recipe task started on the client and waits for them (up to the builder's
//!   `max_close_wait`).
//! - [`Lifecycle`]: the one `Latent → Started → Closed` machine, with
//!   [`Error::AlreadyStarted`] for a second `start()`.
//! - [`Backoff`]: the one doubling pause (with a reset) for loops that retry until they succeed.
//! - [`Hold`]: what a holder of anything (a lock, a lease, leadership) has: its node, a fencing
//!   token, and a [`lost`](Hold::lost) signal.
//!
//! The contract every recipe of this workspace keeps, and that these types make easy to keep:
//! `new(client, path, required…)` when it has no options, `builder(client, path)…build()`
//! otherwise; `async fn start(&self) -> Result<()>` and `async fn close(&self) -> Result<()>`;
//! `listenable()` and `stream()` as the only listener names.
//!
//! ```no_run
//! use std::time::Duration;
//! use curator_framework::recipe::{Backoff, Lifecycle, RecipeTasks};
//! use curator_framework::{CuratorFramework, Result};
//!
//! /// A recipe that keeps a node's data fresh, as users write their own.
//! struct Heartbeat {
//!     client: CuratorFramework,
//!     path: String,
//!     lifecycle: Lifecycle,
//!     tasks: RecipeTasks,
//! }
//!
//! impl Heartbeat {
//!     fn new(client: CuratorFramework, path: &str) -> Self {
//!         let tasks = client.recipe_tasks("heartbeat");
//!         Self { client, path: path.to_owned(), lifecycle: Lifecycle::new(), tasks }
//!     }
//!
//!     async fn start(&self) -> Result<()> {
//!         self.lifecycle.start()?;
//!         let (client, path) = (self.client.clone(), self.path.clone());
//!         self.tasks.spawn(async move {
//!             let mut backoff = Backoff::standard();
//!             loop {
//!                 match client.set_data().for_path(&path, b"alive").await {
//!                     Ok(_) => { backoff.reset(); tokio::time::sleep(Duration::from_secs(1)).await }
//!                     Err(_) => backoff.wait().await,
//!                 }
//!             }
//!         }).detach();
//!         Ok(())
//!     }
//!
//!     async fn close(&self) -> Result<()> {
//!         if self.lifecycle.close() {
//!             self.tasks.close().await;
//!         }
//!         Ok(())
//!     }
//! }
//! ```

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::client::CuratorFramework;
use crate::error::{Error, Result};
use crate::listen::{ListenerContainer, UnhandledError};

/// The background work of one recipe instance, spawned inside its client's task tree.
///
/// Every task runs until its future ends, its [`TaskHandle`] is dropped (unless detached), its
/// recipe calls [`cancel`](Self::cancel) or [`close`](Self::close), or the client closes. Clones
/// share the tasks. Get one with [`CuratorFramework::recipe_tasks`].
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) {
/// let tasks = client.recipe_tasks("my-recipe");
/// let handle = tasks.spawn(async { /* watch something, forever */ });
/// assert_eq!(tasks.len(), 1);
/// drop(handle); // cancels that task
/// tasks.close().await; // cancels the rest and waits for them
/// # }
/// ```
#[derive(Clone)]
pub struct RecipeTasks {
    name: Arc<str>,
    token: CancellationToken,
    /// This recipe's own tasks.
    tracker: TaskTracker,
    /// Every recipe task of the client (counted and awaited by `client.close()`).
    client_tracker: TaskTracker,
    max_close_wait: Duration,
    /// The client's unhandled-error listeners.
    errors: ListenerContainer<UnhandledError>,
}

impl fmt::Debug for RecipeTasks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecipeTasks")
            .field("name", &self.name)
            .field("tasks", &self.tracker.len())
            .field("cancelled", &self.token.is_cancelled())
            .finish()
    }
}

impl RecipeTasks {
    pub(crate) fn new(
        name: &str,
        parent: &CancellationToken,
        client_tracker: TaskTracker,
        max_close_wait: Duration,
        errors: ListenerContainer<UnhandledError>,
    ) -> Self {
        Self {
            name: Arc::from(name),
            token: parent.child_token(),
            tracker: TaskTracker::new(),
            client_tracker,
            max_close_wait,
            errors,
        }
    }

    /// Tells the client's
    /// [`unhandled_error_listenable`](crate::CuratorFramework::unhandled_error_listenable) (and
    /// the log) that a background task of this recipe gave up on `error`: for failures that no
    /// caller and no event of the recipe can carry. The context is the recipe's name.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) {
    /// use curator_framework::Error;
    /// let tasks = client.recipe_tasks("my-recipe");
    /// let _errors = client
    ///     .unhandled_error_listenable()
    ///     .add_listener(|error| eprintln!("{error}"));
    /// tasks.report_unhandled(&Error::NoAuth); // heard as "my-recipe: not authorized"
    /// # }
    /// ```
    pub fn report_unhandled(&self, error: &Error) {
        tracing::error!(context = %self.name, %error, "a recipe's background task gave up");
        self.errors.publish(UnhandledError {
            context: self.name.to_string(),
            message: error.to_string(),
        });
    }

    /// Runs `future` in the background until it ends or is cancelled (see the type's docs).
    /// Outside a Tokio runtime nothing runs and the error is logged.
    pub fn spawn<F>(&self, future: F) -> TaskHandle
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let token = self.token.child_token();
        if token.is_cancelled() {
            // Closed already (by the recipe or the client): nothing to run.
            return TaskHandle {
                token,
                detached: true,
            };
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::error!(recipe = %self.name, "no Tokio runtime to run recipe work on");
            token.cancel();
            return TaskHandle {
                token,
                detached: true,
            };
        };
        let cancelled = token.clone();
        let name = Arc::clone(&self.name);
        let task = async move {
            tokio::select! {
                biased;
                () = cancelled.cancelled() => tracing::trace!(recipe = %name, "recipe task cancelled"),
                () = future => {}
            }
        };
        self.spawn_tracked(task, &runtime);
        TaskHandle {
            token,
            detached: false,
        }
    }

    /// Runs `task` in the background like [`spawn`](Self::spawn), except that cancellation does
    /// not drop it: the task is told through the [`Cancelled`] it is given and ends by itself, so
    /// it can finish what it has in hand (a queue consumer finishes its item). `close()` waits
    /// for it like for any task (bounded).
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) {
    /// let tasks = client.recipe_tasks("consumer");
    /// tasks.spawn_cooperative(|cancelled| async move {
    ///     while !cancelled.is_cancelled() {
    ///         // take one item and finish it, whatever happens meanwhile
    ///         tokio::select! {
    ///             () = cancelled.cancelled() => break,
    ///             () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
    ///         }
    ///     }
    /// }).detach();
    /// tasks.close().await; // returns once the loop has seen the cancellation
    /// # }
    /// ```
    pub fn spawn_cooperative<F, Fut>(&self, task: F) -> TaskHandle
    where
        F: FnOnce(Cancelled) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let token = self.token.child_token();
        if token.is_cancelled() {
            return TaskHandle {
                token,
                detached: true,
            };
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::error!(recipe = %self.name, "no Tokio runtime to run recipe work on");
            token.cancel();
            return TaskHandle {
                token,
                detached: true,
            };
        };
        let future = task(Cancelled(token.clone()));
        self.spawn_tracked(future, &runtime);
        TaskHandle {
            token,
            detached: false,
        }
    }

    /// Spawns `future` counted by both trackers. The client's count is released first, so once
    /// `close()` (which waits on this recipe's tracker) returns, the client no longer counts the
    /// task either.
    fn spawn_tracked(
        &self,
        future: impl Future<Output = ()> + Send + 'static,
        runtime: &tokio::runtime::Handle,
    ) {
        self.tracker
            .spawn_on(self.client_tracker.track_future(future), runtime);
    }

    /// A child set of tasks (for a part of the recipe with a shorter life): cancelled with this
    /// one, and counted by the client.
    pub fn child(&self, name: &str) -> RecipeTasks {
        RecipeTasks {
            name: Arc::from(format!("{}/{name}", self.name)),
            token: self.token.child_token(),
            tracker: TaskTracker::new(),
            client_tracker: self.client_tracker.clone(),
            max_close_wait: self.max_close_wait,
            errors: self.errors.clone(),
        }
    }

    /// A guard for the recipe's handles: when its last clone is dropped, these tasks are
    /// cancelled. A recipe keeps it in its user-facing handle (never in what its tasks hold), so
    /// dropping every handle of a recipe stops its background work, which in turn releases the
    /// client clones the tasks held.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) {
    /// use curator_framework::recipe::{HandleGuard, RecipeTasks};
    /// #[derive(Clone)]
    /// struct Watchdog { tasks: RecipeTasks, _guard: HandleGuard }
    /// let tasks = client.recipe_tasks("watchdog");
    /// let watchdog = Watchdog { _guard: tasks.handle_guard(), tasks };
    /// watchdog.tasks.spawn(std::future::pending()).detach();
    /// drop(watchdog); // the last handle: the task is cancelled
    /// # }
    /// ```
    pub fn handle_guard(&self) -> HandleGuard {
        HandleGuard {
            _cancel_on_drop: Arc::new(self.token.clone().drop_guard()),
        }
    }

    /// Cancels every task, now and to come (tasks spawned later end at once).
    pub fn cancel(&self) {
        self.token.cancel();
    }

    /// Cancels every task and waits for them to end, up to the client's `max_close_wait`.
    ///
    /// # Cancellation safety
    /// Safe: the tasks are cancelled at the first poll; dropping the future only stops the wait.
    pub async fn close(&self) {
        self.token.cancel();
        self.tracker.close();
        if tokio::time::timeout(self.max_close_wait, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(recipe = %self.name, tasks = self.tracker.len(), "recipe tasks still running after max_close_wait");
        }
    }

    /// Whether the tasks were cancelled (by the recipe or by the client's close).
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Resolves once the tasks are cancelled.
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn cancelled(&self) {
        self.token.cancelled().await;
    }

    /// The number of tasks still running.
    pub fn len(&self) -> usize {
        self.tracker.len()
    }

    /// Whether no task is running.
    pub fn is_empty(&self) -> bool {
        self.tracker.is_empty()
    }
}

/// Cancels a recipe's tasks when its last clone is dropped; see
/// [`RecipeTasks::handle_guard`].
#[derive(Debug, Clone)]
pub struct HandleGuard {
    _cancel_on_drop: Arc<tokio_util::sync::DropGuard>,
}

/// One task of a [`RecipeTasks`]. Dropping it cancels the task, unless it was
/// [`detach`](Self::detach)ed, in which case it runs until its recipe's tasks or the client
/// close.
#[must_use = "dropping the handle cancels the task; call .detach() to let it run"]
#[derive(Debug)]
pub struct TaskHandle {
    token: CancellationToken,
    detached: bool,
}

impl TaskHandle {
    /// Cancels the task now.
    pub fn cancel(&self) {
        self.token.cancel();
    }

    /// Whether the task was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Lets the task run without this handle.
    pub fn detach(mut self) {
        self.detached = true;
    }
}

impl Drop for TaskHandle {
    fn drop(&mut self) {
        if !self.detached {
            self.token.cancel();
        }
    }
}

/// What a cooperative task ([`RecipeTasks::spawn_cooperative`]) is told its cancellation
/// through.
#[derive(Debug, Clone)]
pub struct Cancelled(CancellationToken);

impl Cancelled {
    /// Whether the task was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Resolves once the task is cancelled.
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn cancelled(&self) {
        self.0.cancelled().await;
    }
}

/// Where a recipe is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecipeState {
    /// Built, not started.
    Latent,
    /// Started, not closed.
    Started,
    /// Closed (for good: a recipe does not start again).
    Closed,
}

/// The one `Latent → Started → Closed` machine of every recipe.
///
/// ```
/// use curator_framework::Error;
/// use curator_framework::recipe::{Lifecycle, RecipeState};
/// let lifecycle = Lifecycle::new();
/// assert_eq!(lifecycle.ensure_started(), Err(Error::NotStarted));
/// lifecycle.start().unwrap();
/// assert_eq!(lifecycle.start(), Err(Error::AlreadyStarted));
/// assert!(lifecycle.close()); // the first close does the work
/// assert!(!lifecycle.close());
/// assert_eq!(lifecycle.state(), RecipeState::Closed);
/// assert_eq!(lifecycle.start(), Err(Error::Closed));
/// ```
#[derive(Debug)]
pub struct Lifecycle {
    state: Mutex<RecipeState>,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Self::new()
    }
}

impl Lifecycle {
    /// A lifecycle in [`RecipeState::Latent`].
    pub fn new() -> Self {
        Self {
            state: Mutex::new(RecipeState::Latent),
        }
    }

    /// `Latent → Started`.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started, [`Error::Closed`] when closed.
    pub fn start(&self) -> Result<()> {
        let mut state = self.state.lock();
        match *state {
            RecipeState::Latent => {
                *state = RecipeState::Started;
                Ok(())
            }
            RecipeState::Started => Err(Error::AlreadyStarted),
            RecipeState::Closed => Err(Error::Closed),
        }
    }

    /// `Ok` when [`start`](Self::start) would succeed now: for recipes whose start does its
    /// I/O first and calls `start()` only once that succeeded (so a failed start can be tried
    /// again).
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn ensure_startable(&self) -> Result<()> {
        match self.state() {
            RecipeState::Latent => Ok(()),
            RecipeState::Started => Err(Error::AlreadyStarted),
            RecipeState::Closed => Err(Error::Closed),
        }
    }

    /// `→ Closed`; `true` the first time (whether or not it was started), so the caller does
    /// its cleanup once.
    pub fn close(&self) -> bool {
        std::mem::replace(&mut *self.state.lock(), RecipeState::Closed) != RecipeState::Closed
    }

    /// The current state.
    pub fn state(&self) -> RecipeState {
        *self.state.lock()
    }

    /// Whether started and not closed.
    pub fn is_started(&self) -> bool {
        self.state() == RecipeState::Started
    }

    /// `Ok` when started and not closed.
    ///
    /// # Errors
    /// [`Error::NotStarted`] before `start()`, [`Error::Closed`] after `close()`.
    pub fn ensure_started(&self) -> Result<()> {
        match self.state() {
            RecipeState::Started => Ok(()),
            RecipeState::Latent => Err(Error::NotStarted),
            RecipeState::Closed => Err(Error::Closed),
        }
    }
}

/// A doubling pause for loops that retry until they succeed: `min`, `2·min`, … up to `max`;
/// [`reset`](Self::reset) after a success. Sleeps with `tokio::time` (so paused-time tests
/// work).
///
/// ```
/// use std::time::Duration;
/// use curator_framework::recipe::Backoff;
/// let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_millis(150));
/// let pauses: Vec<_> = (0..4).map(|_| backoff.next_pause()).collect();
/// assert_eq!(pauses, [50, 100, 150, 150].map(Duration::from_millis));
/// backoff.reset();
/// assert_eq!(backoff.next_pause(), Duration::from_millis(50));
/// ```
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Pauses from `min`, doubling, up to `max` (at least `min`).
    pub fn new(min: Duration, max: Duration) -> Self {
        Self {
            min,
            max: max.max(min),
            next: min,
        }
    }

    /// The workspace's pause for background retries: 50 ms doubling up to 2 s.
    pub fn standard() -> Self {
        Self::new(Duration::from_millis(50), Duration::from_secs(2))
    }

    /// The next pause (and doubles the one after).
    pub fn next_pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        pause
    }

    /// Sleeps the next pause.
    ///
    /// # Cancellation safety
    /// Safe (the pause is used up either way).
    pub async fn wait(&mut self) {
        tokio::time::sleep(self.next_pause()).await;
    }

    /// Starts again from the shortest pause.
    pub fn reset(&mut self) {
        self.next = self.min;
    }
}

/// What a [`Hold`] holds, which names the error of a refused guarded write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HoldKind {
    /// A lock, a read or write lock, a semaphore lease: [`Error::LockLost`].
    Lock,
    /// A leadership (latch, selector): [`Error::NotLeader`].
    Leadership,
}

/// What a holder holds: its node, a fencing token, and a signal that the hold may be lost. The
/// one hold of every recipe: a lock's [`LockGuard`], a semaphore's `Lease` and a leader's hold
/// all give one.
///
/// The fencing token is the node's creation zxid: it grows with every node created on the
/// ensemble, so a resource that remembers the highest token it admitted can refuse an older
/// holder.
///
/// [`LockGuard`]: https://docs.rs/curator-locks
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) {
/// use curator_framework::recipe::Hold;
/// let hold = Hold::new(&client, "/locks/l/_c_x-lock-0000000001".into(), 0x1_0000_0007);
/// tokio::select! {
///     () = hold.lost() => println!("stop: the hold may be someone else's now"),
///     () = async { /* protected work, passing hold.fencing_token() along */ } => {}
/// }
/// # }
/// ```
#[derive(Clone)]
pub struct Hold {
    node: Arc<str>,
    token: i64,
    kind: HoldKind,
    /// The session that made the node, when known: guarded writes go on it or not at all.
    session: Option<i64>,
    lost: LostSignal,
    /// The client's close, which ends a hold made with [`Hold::new`].
    client_closed: Option<CancellationToken>,
}

/// What tells a [`Hold`] it is lost.
#[derive(Clone)]
enum LostSignal {
    /// `true`, or its sender gone ([`Hold::with_signal`]).
    Flag(watch::Receiver<bool>),
    /// The client's count of error states moving past `at` ([`Hold::new`]), or the client gone.
    ErrorStates {
        count: watch::Receiver<u64>,
        at: u64,
    },
}

impl fmt::Debug for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hold")
            .field("node", &self.node)
            .field("fencing_token", &self.token)
            .field("kind", &self.kind)
            .field("session", &self.session.map(|id| format!("{id:#x}")))
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl Hold {
    /// A hold on `node` with fencing `token`, lost when the client's connection state becomes
    /// an error state under its connection-state error policy (with the standard policy: at
    /// `Suspended`), or when the client closes. A lock's hold ([`HoldKind::Lock`]) on the
    /// client's current session (the one that made `node`).
    pub fn new(client: &CuratorFramework, node: String, token: i64) -> Self {
        // Every hold of the client watches one counter, bumped as each error state is
        // published (before the client's listeners hear it): no channel or listener per hold.
        let count = client.inner.error_states.subscribe();
        let at = *count.borrow();
        Self {
            node: Arc::from(node),
            token,
            kind: HoldKind::Lock,
            session: client.session_id(),
            lost: LostSignal::ErrorStates { count, at },
            client_closed: Some(client.inner.cancel.clone()),
        }
    }

    /// A hold whose loss is signalled by `lost` turning `true` (or its sender going away),
    /// for holds that end by other rules (leadership ends when the leader steps down). A
    /// [`HoldKind::Lock`] with no session known; see [`for_leadership`](Self::for_leadership)
    /// and [`on_session`](Self::on_session).
    pub fn with_signal(node: String, token: i64, lost: watch::Receiver<bool>) -> Self {
        Self {
            node: Arc::from(node),
            token,
            kind: HoldKind::Lock,
            session: None,
            lost: LostSignal::Flag(lost),
            client_closed: None,
        }
    }

    /// This hold as a leadership ([`HoldKind::Leadership`]): guarded writes refused because it
    /// is lost fail with [`Error::NotLeader`].
    pub fn for_leadership(mut self) -> Self {
        self.kind = HoldKind::Leadership;
        self
    }

    /// The session that made the hold's node (its ephemeral owner): writes guarded by this hold
    /// are sent on that session only, so a write can never pass the hold's check on a later
    /// session of the same client.
    pub fn on_session(mut self, session: i64) -> Self {
        self.session = Some(session);
        self
    }

    /// What is held.
    pub fn kind(&self) -> HoldKind {
        self.kind
    }

    /// The session that made the hold's node, when known.
    pub fn session_id(&self) -> Option<i64> {
        self.session
    }

    /// The error of a write refused because this hold is lost: [`Error::LockLost`] or
    /// [`Error::NotLeader`], naming the node.
    pub fn lost_error(&self) -> crate::error::Error {
        let node = self.node.to_string();
        match self.kind {
            HoldKind::Lock => crate::error::Error::LockLost { node },
            HoldKind::Leadership => crate::error::Error::NotLeader { node },
        }
    }

    /// The node the hold rests on (full path).
    pub fn node_path(&self) -> &str {
        &self.node
    }

    /// The fencing token: the node's creation zxid.
    pub fn fencing_token(&self) -> i64 {
        self.token
    }

    /// Whether the hold may be lost already (see [`lost`](Self::lost)).
    pub fn is_lost(&self) -> bool {
        let signalled = match &self.lost {
            LostSignal::Flag(lost) => *lost.borrow() || lost.has_changed().is_err(),
            LostSignal::ErrorStates { count, at } => {
                *count.borrow() != *at || count.has_changed().is_err()
            }
        };
        signalled
            || self
                .client_closed
                .as_ref()
                .is_some_and(CancellationToken::is_cancelled)
    }

    /// Resolves when the hold may have been lost: the holder must stop acting on it.
    ///
    /// # Cancellation safety
    /// Safe.
    pub async fn lost(&self) {
        let signalled = async {
            match self.lost.clone() {
                LostSignal::Flag(mut lost) => {
                    let _ = lost.wait_for(|lost| *lost).await;
                }
                LostSignal::ErrorStates { mut count, at } => {
                    let _ = count.wait_for(|count| *count != at).await;
                }
            }
        };
        match &self.client_closed {
            Some(closed) => {
                tokio::select! {
                    () = signalled => {}
                    () = closed.cancelled() => {}
                }
            }
            None => signalled.await,
        }
    }
}
