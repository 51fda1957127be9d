//! `LeaderSelector`: run a task while leader (Curator's `LeaderSelector`, on a mutex).

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use curator_framework::{CuratorFramework, Error, Result};
use curator_locks::InterProcessMutex;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::latch::Participant;

type LeadershipTask = Arc<dyn Fn(LeadershipContext) -> BoxFuture<'static, ()> + Send + Sync>;

/// Handed to the leadership task: tells it when leadership is being taken away.
#[derive(Debug, Clone)]
pub struct LeadershipContext {
    stop: CancellationToken,
}

impl LeadershipContext {
    /// Resolves when this leadership ends from outside (connection trouble, interruption, close).
    /// The task's future is dropped at that moment anyway; this lets it notice at an `await`
    /// point of its choosing, or hand the signal to work it spawned.
    pub async fn stopping(&self) {
        self.stop.cancelled().await;
    }

    /// Whether this leadership is ending.
    pub fn is_stopping(&self) -> bool {
        self.stop.is_cancelled()
    }
}

/// Runs an async task while this participant leads (Curator's `LeaderSelector`: an
/// [`InterProcessMutex`] whose nodes hold the participant id).
///
/// The task is one leadership: when it returns, leadership passes on. With
/// [`auto_requeue`](Self::auto_requeue) the participant queues again. When the connection state
/// becomes an error under the client's policy, the task is cancelled (its future dropped) at once:
/// with the default, standard policy that happens at `Suspended`, while the lock node still exists,
/// so nobody else can have been elected yet.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_election::LeaderSelector;
/// let selector = LeaderSelector::new(client, "/election/jobs", "worker-1", |context| async move {
///     // lead: do the work, then return to let someone else lead
///     tokio::select! {
///         () = context.stopping() => {}
///         () = tokio::time::sleep(std::time::Duration::from_secs(5)) => {}
///     }
/// })?;
/// selector.auto_requeue();
/// selector.start().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaderSelector {
    inner: Arc<Inner>,
}

struct Inner {
    client: CuratorFramework,
    mutex: InterProcessMutex,
    task: LeadershipTask,
    auto_requeue: AtomicBool,
    leader: watch::Sender<bool>,
    interrupt: Notify,
    cancel: CancellationToken,
    started: AtomicBool,
    runner: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl fmt::Debug for LeaderSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderSelector")
            .field("path", &self.inner.mutex.path())
            .field("leader", &*self.inner.leader.borrow())
            .field(
                "auto_requeue",
                &self.inner.auto_requeue.load(Ordering::Relaxed),
            )
            .finish()
    }
}

impl LeaderSelector {
    /// A selector on `path` for participant `id`, running `task` for each leadership.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path.
    pub fn new<F, Fut>(
        client: CuratorFramework,
        path: &str,
        id: impl Into<String>,
        task: F,
    ) -> Result<Self>
    where
        F: Fn(LeadershipContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let id: String = id.into();
        let mutex = InterProcessMutex::with_node_data(client.clone(), path, id.into_bytes())?;
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                mutex,
                task: Arc::new(move |context| Box::pin(task(context))),
                auto_requeue: AtomicBool::new(false),
                leader: watch::Sender::new(false),
                interrupt: Notify::new(),
                cancel: CancellationToken::new(),
                started: AtomicBool::new(false),
                runner: Mutex::new(None),
            }),
        })
    }

    /// Queue again after each leadership (default: lead once).
    pub fn auto_requeue(&self) {
        self.inner.auto_requeue.store(true, Ordering::Relaxed);
    }

    /// Joins the election (in the background).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when already started.
    pub async fn start(&self) -> Result<()> {
        if self.inner.started.swap(true, Ordering::SeqCst) {
            return Err(Error::InvalidArgument(
                "the selector is already started".into(),
            ));
        }
        let inner = Arc::clone(&self.inner);
        *self.inner.runner.lock() = Some(tokio::spawn(run(inner)));
        Ok(())
    }

    /// Ends the current leadership now (the task is cancelled); with auto-requeue the
    /// participant queues again.
    pub fn interrupt_leadership(&self) {
        if self.has_leadership() {
            self.inner.interrupt.notify_one();
        }
    }

    /// Leaves the election: cancels a running task and gives up the lock.
    pub async fn close(&self) {
        self.inner.cancel.cancel();
        let runner = self.inner.runner.lock().take();
        if let Some(runner) = runner {
            let _ = runner.await;
        }
    }

    /// Whether the task runs now as leader.
    pub fn has_leadership(&self) -> bool {
        *self.inner.leader.borrow()
    }

    /// Every participant in election order (ids read from the nodes).
    ///
    /// # Errors
    /// Connection errors.
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        let nodes = self.participant_nodes().await?;
        crate::latch::read_participants(&self.inner.client, nodes).await
    }

    /// The participants' nodes in election order (the first leads), as full paths.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn participant_nodes(&self) -> Result<Vec<String>> {
        self.inner.mutex.participant_nodes().await
    }

    /// The current leader.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn leader(&self) -> Result<Option<Participant>> {
        Ok(self.participants().await?.into_iter().next())
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        self.inner.mutex.path()
    }
}

async fn run(inner: Arc<Inner>) {
    let cancel = inner.cancel.clone();
    loop {
        let guard = tokio::select! {
            () = cancel.cancelled() => return,
            guard = inner.mutex.acquire() => guard,
        };
        let guard = match guard {
            Ok(guard) => guard,
            Err(error) => {
                tracing::warn!(path = %inner.mutex.path(), %error, "leader selection failed; retrying");
                // Wait for the client to reconnect (its operations wait up to the connection
                // timeout), then queue again.
                let _ = inner
                    .client
                    .block_until_connected(std::time::Duration::from_secs(3600))
                    .await;
                continue;
            }
        };
        let stop = cancel.child_token();
        let context = LeadershipContext { stop: stop.clone() };
        inner.leader.send_replace(true);
        let leadership = (inner.task)(context);
        tokio::select! {
            () = leadership => {}
            () = guard.lost() => tracing::info!(path = %inner.mutex.path(), "connection trouble: leadership cancelled"),
            () = inner.interrupt.notified() => tracing::info!(path = %inner.mutex.path(), "leadership interrupted"),
            () = cancel.cancelled() => {}
        }
        // The task is dropped (cancelled) here if it had not finished.
        stop.cancel();
        inner.leader.send_replace(false);
        let _ = guard.release().await;
        if cancel.is_cancelled() || !inner.auto_requeue.load(Ordering::Relaxed) {
            return;
        }
    }
}
