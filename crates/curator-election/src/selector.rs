//! `LeaderSelector`: run a task while leader (Curator's `LeaderSelector`, on a mutex).

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::metrics::names;
use curator_framework::recipe::{
    Backoff, HandleGuard, Hold, Recipe, RecipeCore, RecipeOptions, RecipeState,
};
use curator_framework::{CuratorFramework, Error, Result};
use curator_locks::{InterProcessMutex, LockGuard};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

use crate::participant::{self, Participant};

type LeadershipTask = Arc<dyn Fn(LeadershipContext) -> BoxFuture<'static, ()> + Send + Sync>;

/// Handed to the leadership task: this leadership's [`Hold`] (through `Deref`): the lock node,
/// its creation zxid as the fencing token, and a [`lost`](Hold::lost) signal that resolves when
/// this leadership ends, whatever ends it (connection trouble, interruption, `close()`, the
/// client's close, or the task's own return). Connection trouble reaches it as it reaches the
/// lock's own hold, by the route every hold of the client shares.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_election::LeaderSelector;
/// let selector = LeaderSelector::builder(client, "/election/jobs", "worker-1", |context| async move {
///     let token = context.fencing_token(); // hand it to what the leader writes
///     tokio::select! {
///         () = context.lost() => {} // the leadership ended: stop
///         () = async { println!("leading; my writes carry {token}") } => {}
///     }
/// })
/// .build()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LeadershipContext {
    hold: Hold,
}

impl LeadershipContext {
    /// The epoch of this leadership: the lock node's creation zxid, the same number as
    /// [`fencing_token()`](Hold::fencing_token) and as the [`epoch`](Participant::epoch) that
    /// [`LeaderSelector::leader`] and a [`LeaderObserver`](crate::LeaderObserver) report. Every
    /// later leadership on the path has a greater epoch.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// use curator_election::LeaderSelector;
    /// let selector = LeaderSelector::builder(client, "/election/jobs", "worker-1", |context| async move {
    ///     assert_eq!(context.epoch(), context.fencing_token());
    ///     println!("leading in epoch {:#x}", context.epoch());
    /// })
    /// .build()?;
    /// # Ok(()) }
    /// ```
    pub fn epoch(&self) -> i64 {
        self.hold.fencing_token()
    }
}

impl Deref for LeadershipContext {
    type Target = Hold;

    fn deref(&self) -> &Hold {
        &self.hold
    }
}

/// Runs an async task while this participant leads (Curator's `LeaderSelector`: an
/// [`InterProcessMutex`] whose nodes hold the participant id).
///
/// The task is one leadership: when it returns, leadership passes on. With
/// [`auto_requeue`](LeaderSelectorBuilder::auto_requeue) the participant queues again. When the
/// connection state becomes an error under the client's policy, the task is cancelled (its future
/// dropped) at once: with the default, standard policy that happens at `Suspended`, while the lock
/// node still exists, so nobody else can have been elected yet.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_election::LeaderSelector;
/// let selector = LeaderSelector::builder(client, "/election/jobs", "worker-1", |context| async move {
///     // lead: do the work, then return to let someone else lead
///     tokio::select! {
///         () = context.lost() => {}
///         () = tokio::time::sleep(std::time::Duration::from_secs(5)) => {}
///     }
/// })
/// .auto_requeue()
/// .build()?;
/// selector.start().await?;
/// // ...
/// selector.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaderSelector {
    inner: Arc<Inner>,
    /// Cancels the recipe's tasks when the last handle is dropped.
    _guard: HandleGuard,
}

/// Options of a [`LeaderSelector`], from [`LeaderSelector::builder`].
#[must_use = "a builder does nothing until .build()"]
pub struct LeaderSelectorBuilder {
    client: CuratorFramework,
    path: String,
    id: String,
    task: LeadershipTask,
    auto_requeue: bool,
    lock_delay: Option<std::time::Duration>,
    options: RecipeOptions,
}

impl fmt::Debug for LeaderSelectorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderSelectorBuilder")
            .field("path", &self.path)
            .field("id", &self.id)
            .field("auto_requeue", &self.auto_requeue)
            .field("lock_delay", &self.lock_delay)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl LeaderSelectorBuilder {
    /// The selector's name (default: its path): the `name` label of its metrics (its lock's
    /// `curator_lock_wait_seconds` and `curator_lock_hold_seconds`, and
    /// `curator_leader_tenure_seconds` and `curator_leader_is_leader`), and what its logs and
    /// unhandled errors say. Selectors sharing a name share their series.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// use curator_election::LeaderSelector;
    /// let selector = LeaderSelector::builder(client, "/election/shard-7", "node-1", |_| async {})
    ///     .metrics_name("shards")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// Lock-delay for leadership: the selector's lock takes
    /// [`InterProcessMutexBuilder::lock_delay`](curator_locks::InterProcessMutexBuilder::lock_delay),
    /// so a leader that *fails* (its session ends while it leads) keeps the next one out for
    /// `delay` on ZooKeeper's clock; a leadership that ends (its task returns, or it is
    /// interrupted) hands over at once. Java Curator's `LeaderSelector` on the same path
    /// neither honours nor causes a delay.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// use curator_election::LeaderSelector;
    /// let selector = LeaderSelector::builder(client, "/election/billing", "node-1", |_| async {})
    ///     .lock_delay(Duration::from_secs(15))
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn lock_delay(mut self, delay: std::time::Duration) -> Self {
        self.lock_delay = Some(delay);
        self
    }

    /// Queue again after each leadership (Curator's `autoRequeue`; default: lead once).
    pub fn auto_requeue(mut self) -> Self {
        self.auto_requeue = true;
        self
    }

    /// The selector (not started).
    ///
    /// # Errors
    /// [`Error::InvalidPath`](curator_framework::Error::InvalidPath) for a bad path;
    /// [`Error::InvalidArgument`](curator_framework::Error::InvalidArgument) for a lock-delay
    /// of zero or over a day.
    pub fn build(self) -> Result<LeaderSelector> {
        // An empty id (Curator's default) is the client's identity: the node says who made it.
        let id = if self.id.is_empty() {
            self.client.identity().to_string()
        } else {
            self.id
        };
        let core = RecipeCore::new(&self.client, "LeaderSelector", &self.path, &self.options);
        let mut mutex = InterProcessMutex::builder(self.client.clone(), &self.path)
            .node_data(id)
            .metrics_name(core.name().as_str());
        if let Some(delay) = self.lock_delay {
            mutex = mutex.lock_delay(delay);
        }
        let mutex = mutex.build()?;
        let inner = Arc::new(Inner {
            core,
            client: self.client,
            mutex,
            task: self.task,
            auto_requeue: self.auto_requeue,
            leadership: Mutex::new(None),
            interrupt: Notify::new(),
        });
        Ok(LeaderSelector {
            _guard: inner.core.handle_guard(),
            inner,
        })
    }
}

struct Inner {
    client: CuratorFramework,
    mutex: InterProcessMutex,
    task: LeadershipTask,
    auto_requeue: bool,
    /// The selector's name (the `name` label of its metrics), lifecycle and task.
    core: RecipeCore,
    /// While leading: the lock, what ends the task's hold, and when it began. Kept here, not in
    /// the task, so that `close()` releases the lock itself once the task is cancelled.
    leadership: Mutex<Option<Leadership>>,
    interrupt: Notify,
}

impl fmt::Debug for LeaderSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderSelector")
            .field("path", &self.inner.mutex.path())
            .field("state", &self.inner.core.state())
            .field("leader", &self.has_leadership())
            .field("auto_requeue", &self.inner.auto_requeue)
            .finish()
    }
}

impl LeaderSelector {
    /// Options of a selector on `path` for participant `id` (stored in its lock node), running
    /// `task` for each leadership. An empty `id` (Curator's default) stands for the client's
    /// [`identity`](curator_framework::CuratorFramework::identity), so the node says who made it.
    pub fn builder<F, Fut>(
        client: CuratorFramework,
        path: &str,
        id: impl Into<String>,
        task: F,
    ) -> LeaderSelectorBuilder
    where
        F: Fn(LeadershipContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        LeaderSelectorBuilder {
            client,
            path: path.to_owned(),
            id: id.into(),
            task: Arc::new(move |context| Box::pin(task(context))),
            auto_requeue: false,
            lock_delay: None,
            options: RecipeOptions::new(),
        }
    }

    /// Joins the election: a background task queues for the lock and runs the leadership task
    /// whenever it is held. Returns at once.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`](curator_framework::Error::AlreadyStarted) when started,
    /// [`Error::Closed`](curator_framework::Error::Closed) when closed.
    ///
    /// # Cancellation safety
    /// Safe: it does not wait.
    pub async fn start(&self) -> Result<()> {
        self.inner.core.lifecycle().start()?;
        let inner = Arc::clone(&self.inner);
        self.inner.core.tasks().spawn(run(inner)).detach();
        Ok(())
    }

    /// Ends the current leadership now (the task is cancelled); with auto-requeue the
    /// participant queues again.
    pub fn interrupt_leadership(&self) {
        if self.has_leadership() {
            self.inner.interrupt.notify_one();
        }
    }

    /// Leaves the election: cancels the background task (and a running leadership task, whose
    /// hold is lost at once) and gives up the lock. Later calls return `Ok(())`.
    ///
    /// # Errors
    /// Connection errors deleting the lock node (the delete goes on in the background).
    ///
    /// # Cancellation safety
    /// The selector is closed (for good) at the first poll. Dropping the future before it
    /// finished leaves a lock it held to the background: released when the last handle of the
    /// selector goes, or with the session.
    pub async fn close(&self) -> Result<()> {
        let inner = &self.inner;
        if !inner.core.close_tasks().await {
            return Ok(());
        }
        match inner.end_leadership() {
            // After the client's close, the lock node went with the session.
            Some(guard) => match guard.release().await {
                Err(Error::Closed) => Ok(()),
                other => other,
            },
            None => Ok(()),
        }
    }

    /// Whether the task runs now as leader.
    pub fn has_leadership(&self) -> bool {
        self.inner.leadership.lock().is_some()
    }

    /// While this participant leads, the epoch of its leadership (see
    /// [`LeadershipContext::epoch`]).
    ///
    /// ```no_run
    /// # fn demo(selector: curator_election::LeaderSelector) {
    /// if let Some(epoch) = selector.leader_epoch() {
    ///     println!("leading in epoch {epoch:#x}");
    /// }
    /// # }
    /// ```
    pub fn leader_epoch(&self) -> Option<i64> {
        self.inner
            .leadership
            .lock()
            .as_ref()
            .map(|leadership| leadership.guard.fencing_token())
    }

    /// Every participant in election order (ids read from the nodes).
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// Safe (reads).
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        participant::read_all(&self.inner.client, self.participant_nodes().await?).await
    }

    /// The participants' nodes in election order (the first leads), as full paths.
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// Safe (a read).
    pub async fn participant_nodes(&self) -> Result<Vec<String>> {
        self.inner.mutex.participant_nodes().await
    }

    /// The current leader.
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// Safe (reads).
    pub async fn leader(&self) -> Result<Option<Participant>> {
        participant::read_leader(&self.inner.client, self.participant_nodes().await?).await
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        self.inner.mutex.path()
    }
}

/// One leadership of the selector.
struct Leadership {
    guard: LockGuard,
    end: watch::Sender<bool>,
    /// When it began (its tenure is recorded when it ends).
    since: tokio::time::Instant,
}

impl Inner {
    /// Leads with `guard`; returns the context to hand to the task.
    fn lead(&self, guard: LockGuard) -> LeadershipContext {
        let (end, ended) = watch::channel(false);
        // The lock's own hold (lost with every hold of the client), ended also when this
        // leadership ends.
        let hold = Hold::clone(&guard).ended_by(ended).for_leadership();
        self.core.name().set(names::LEADER_IS_LEADER, 1.0);
        *self.leadership.lock() = Some(Leadership {
            guard,
            end,
            since: tokio::time::Instant::now(),
        });
        LeadershipContext { hold }
    }

    /// Ends the leadership, if any: the task's hold is lost, and the lock is handed back to be
    /// released.
    fn end_leadership(&self) -> Option<LockGuard> {
        let leadership = self.leadership.lock().take()?;
        leadership.end.send_replace(true);
        let name = self.core.name();
        name.record(names::LEADER_TENURE_SECONDS, leadership.since.elapsed());
        name.set(names::LEADER_IS_LEADER, 0.0);
        Some(leadership.guard)
    }
}

impl Recipe for LeaderSelector {
    fn core(&self) -> &RecipeCore {
        &self.inner.core
    }

    async fn start(&self) -> Result<()> {
        LeaderSelector::start(self).await
    }

    async fn close(&self) -> Result<()> {
        LeaderSelector::close(self).await
    }
}

/// Ends the leadership when the selector's task ends other than by the selector's `close()`
/// (which releases the lock itself): the client closed, and the lock went with its session.
struct EndOnExit(Arc<Inner>);

impl Drop for EndOnExit {
    fn drop(&mut self) {
        if self.0.core.state() != RecipeState::Closed {
            drop(self.0.end_leadership());
        }
    }
}

/// Queues for the lock and leads while it is held, again and again with auto-requeue. Runs
/// until the selector's tasks are cancelled (by `close()` or the client's close).
async fn run(inner: Arc<Inner>) {
    let _exit = EndOnExit(Arc::clone(&inner));
    let mut backoff = Backoff::standard();
    loop {
        let guard = match inner.mutex.acquire().await {
            Ok(guard) => guard,
            Err(error @ Error::ResponseTooLarge { .. }) => {
                // The lock's listing is longer than the client takes: every try would fail
                // the same way (after making and deleting a node). Stop, and say so.
                inner.core.tasks().report_unhandled(&error);
                return;
            }
            Err(error) => {
                tracing::warn!(path = %inner.mutex.path(), %error, "leader selection failed; retrying");
                backoff.wait().await;
                // Wait for the client to reconnect (its operations wait up to the connection
                // timeout), then queue again.
                let _ = inner
                    .client
                    .block_until_connected(Duration::from_secs(3600))
                    .await;
                continue;
            }
        };
        backoff.reset();
        // The lock's own hold: lost at connection trouble.
        let lock = Hold::clone(&guard);
        let context = inner.lead(guard);
        let leadership = (inner.task)(context);
        tokio::select! {
            () = leadership => {}
            () = lock.lost() => tracing::info!(path = %inner.mutex.path(), "connection trouble: leadership cancelled"),
            () = inner.interrupt.notified() => tracing::info!(path = %inner.mutex.path(), "leadership interrupted"),
        }
        // The task is dropped (cancelled) here if it had not finished.
        if let Some(guard) = inner.end_leadership() {
            let _ = guard.release().await;
        }
        if !inner.auto_requeue {
            return;
        }
    }
}
