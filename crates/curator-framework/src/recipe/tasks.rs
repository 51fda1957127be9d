//! [`RecipeTasks`]: a recipe's background work inside its client's task tree, with
//! [`TaskHandle`], [`HandleGuard`] and [`Cancelled`].

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::{Error, Result};
use crate::listen::{ListenerContainer, UnhandledError};

/// The background work of one recipe instance, spawned inside its client's task tree.
///
/// Every task runs until its future ends, its [`TaskHandle`] is dropped (unless detached), its
/// recipe calls [`cancel`](Self::cancel) or [`close`](Self::close), or the client closes. Clones
/// share the tasks. Get one with [`CuratorFramework::recipe_tasks`](crate::CuratorFramework::recipe_tasks).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let tasks = client.recipe_tasks("my-recipe");
/// let handle = tasks.spawn(async { /* watch something, forever */ });
/// assert_eq!(tasks.len(), 1);
/// drop(handle); // cancels that task
/// tasks.close().await?; // cancels the rest and waits for them
/// # Ok::<(), curator_framework::Error>(())
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
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
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
    /// tasks.close().await?; // returns once the loop has seen the cancellation
    /// # Ok::<(), curator_framework::Error>(())
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

    /// Cancels every task and waits for them to end, up to the client's `max_close_wait` (a
    /// task still running then is logged, and ends in the background).
    ///
    /// # Errors
    /// None: the tasks are cancelled whatever happens; the `Result` is the one shape of every
    /// `close()` (see [`Recipe::close`](crate::recipe::Recipe::close)).
    ///
    /// # Cancellation safety
    /// Safe: the tasks are cancelled at the first poll; dropping the future only stops the wait.
    pub async fn close(&self) -> Result<()> {
        self.token.cancel();
        self.tracker.close();
        if tokio::time::timeout(self.max_close_wait, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(recipe = %self.name, tasks = self.tracker.len(), "recipe tasks still running after max_close_wait");
        }
        Ok(())
    }

    /// The name the tasks report under (logs, and the context of
    /// [`report_unhandled`](Self::report_unhandled)).
    pub fn name(&self) -> &str {
        &self.name
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
