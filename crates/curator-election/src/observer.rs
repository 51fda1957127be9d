//! `LeaderObserver`: who leads an election, with its epoch, for processes that do not take part.

use std::fmt;
use std::sync::Arc;

use curator_framework::listen::{Listenable, ListenerContainer, ListenerStream};
use curator_framework::recipe::{
    Backoff, HandleGuard, Recipe, RecipeCore, RecipeEvents, RecipeOptions,
};
use curator_framework::watcher::Watcher;
use curator_framework::{CuratorFramework, Error, Result, paths};
use futures::StreamExt;
use parking_lot::Mutex;

use crate::participant::{self, Participant};

/// The markers after which election node names carry their sequence: Curator's `LeaderLatch`
/// (`latch-`) and `LeaderSelector` (its mutex's `lock-`). A protected prefix (`_c_<uuid>-`) is
/// hexadecimal and contains neither.
const MARKERS: [&str; 2] = ["latch-", "lock-"];

/// What orders an election node: what follows its recipe's marker (Curator's `fixForSorting`),
/// so the order is the one the participants themselves use.
fn order_key(name: &str) -> &str {
    MARKERS
        .iter()
        .fold(name, |name, marker| paths::sort_key(name, marker))
}

/// Follows who leads an election without taking part: the participant whose node is first, with
/// its id (the node's data) and its epoch (the node's creation zxid), for paths of a
/// [`LeaderLatch`](crate::LeaderLatch) or a [`LeaderSelector`](crate::LeaderSelector), Rust or
/// Java.
///
/// Changes come as `Option<Participant>` through [`listenable()`](Self::listenable) or
/// [`stream()`](Self::stream) (`None`: nobody leads), in order: a new leader always has a greater
/// epoch than every leader delivered before it; the same epoch comes again only with a new id
/// (the leader [`proclaim`](crate::LeaderLatch::proclaim)ed). [`current()`](Self::current) is the
/// last delivered. The observer keeps one watch on the election's children and one on the
/// leader's node (for its data); after a reconnect or a new session it reads the election again
/// and delivers what changed meanwhile.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use futures::StreamExt;
/// use curator_election::LeaderObserver;
/// let observer = LeaderObserver::new(client, "/election/reports")?;
/// let mut changes = observer.stream(); // before start(), to hear the first look too
/// observer.start().await?;
/// while let Some(leader) = changes.next().await {
///     match leader {
///         Some(leader) => println!("{} leads in epoch {:#x}", leader.id, leader.epoch),
///         None => println!("nobody leads"),
///     }
/// }
/// observer.close().await?;
/// # Ok(()) }
/// ```
///
/// What it reports is the election as the server holds it: a leader that stepped down at
/// `Suspended` keeps its (first) node, and stays the one reported, until its session ends.
#[derive(Clone)]
pub struct LeaderObserver {
    inner: Arc<Inner>,
    /// Cancels the recipe's tasks when the last handle is dropped.
    _guard: HandleGuard,
}

struct Inner {
    client: CuratorFramework,
    path: String,
    core: RecipeCore,
    events: ListenerContainer<Option<Participant>>,
    delivered: Mutex<Delivered>,
}

/// What the observer has delivered.
#[derive(Default)]
struct Delivered {
    current: Option<Participant>,
    /// The greatest epoch delivered (kept while nobody leads).
    highest: Option<i64>,
}

impl fmt::Debug for LeaderObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderObserver")
            .field("path", &self.inner.path)
            .field("state", &self.inner.core.state())
            .field("current", &self.inner.delivered.lock().current)
            .finish()
    }
}

/// The watches after a look: on the children (or on the path's creation), and on the leader's
/// node when there is one.
struct Watches {
    children: Watcher,
    leader: Option<Watcher>,
}

impl LeaderObserver {
    /// An observer of the election at `path` (not started).
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let observer = curator_election::LeaderObserver::new(client, "/election/reports")?;
    /// assert_eq!(observer.path(), "/election/reports");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path ZooKeeper would reject.
    pub fn new(client: CuratorFramework, path: &str) -> Result<Self> {
        paths::validate(path)?;
        let core = RecipeCore::new(&client, "LeaderObserver", path, &RecipeOptions::new());
        let inner = Arc::new(Inner {
            events: core.listener_container(&client),
            core,
            client,
            path: path.to_owned(),
            delivered: Mutex::new(Delivered::default()),
        });
        Ok(Self {
            _guard: inner.core.handle_guard(),
            inner,
        })
    }

    /// Reads who leads (delivering a leader to listeners; `current()` starts as `None`, so
    /// "nobody leads" is not delivered at start) and returns; from then on a background task
    /// follows the election.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let observer = curator_election::LeaderObserver::new(client, "/election/reports")?;
    /// observer.start().await?;
    /// println!("{:?}", observer.current());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started, [`Error::Closed`] when closed; connection errors
    /// on the first read (the observer is then not started, and `start` may be called again).
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the observer not started.
    pub async fn start(&self) -> Result<()> {
        let inner = &self.inner;
        inner.core.lifecycle().ensure_startable()?;
        let (leader, watches) = inner.look().await?;
        inner.core.lifecycle().start()?;
        inner.deliver(leader);
        inner
            .core
            .tasks()
            .spawn(run(Arc::clone(inner), watches))
            .detach();
        Ok(())
    }

    /// Stops following the election. Later calls return `Ok(())`.
    ///
    /// ```no_run
    /// # async fn demo(observer: curator_election::LeaderObserver) -> curator_framework::Result<()> {
    /// observer.close().await?;
    /// observer.close().await?; // nothing more to do
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// None: the observer closes whatever its connection does (its watches go with the
    /// session).
    ///
    /// # Cancellation safety
    /// Safe: the task is cancelled at the first poll.
    pub async fn close(&self) -> Result<()> {
        self.inner.core.close_tasks().await;
        Ok(())
    }

    /// The leader last delivered (`None` before `start()`, and while nobody leads).
    ///
    /// ```no_run
    /// # fn demo(observer: curator_election::LeaderObserver) {
    /// if let Some(leader) = observer.current() {
    ///     println!("{} (epoch {:#x})", leader.id, leader.epoch);
    /// }
    /// # }
    /// ```
    pub fn current(&self) -> Option<Participant> {
        self.inner.delivered.lock().current.clone()
    }

    /// Where to hear the leader's changes (`None`: nobody leads).
    ///
    /// ```no_run
    /// # fn demo(observer: curator_election::LeaderObserver) {
    /// observer
    ///     .listenable()
    ///     .add_listener(|leader| println!("now: {:?}", leader.map(|l| (l.id, l.epoch))))
    ///     .detach();
    /// # }
    /// ```
    pub fn listenable(&self) -> Listenable<Option<Participant>> {
        self.inner.events.listenable()
    }

    /// The leader's changes from now on, as a stream (`self.listenable().stream()`).
    ///
    /// ```no_run
    /// # async fn demo(observer: curator_election::LeaderObserver) {
    /// use futures::StreamExt;
    /// let mut changes = observer.stream();
    /// let next = changes.next().await;
    /// # }
    /// ```
    pub fn stream(&self) -> ListenerStream<Option<Participant>> {
        self.listenable().stream()
    }

    /// The election's path.
    ///
    /// ```no_run
    /// # fn demo(observer: curator_election::LeaderObserver) {
    /// println!("observing {}", observer.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.inner.path
    }
}

impl Recipe for LeaderObserver {
    fn core(&self) -> &RecipeCore {
        &self.inner.core
    }

    async fn start(&self) -> Result<()> {
        LeaderObserver::start(self).await
    }

    async fn close(&self) -> Result<()> {
        LeaderObserver::close(self).await
    }
}

impl RecipeEvents for LeaderObserver {
    type Event = Option<Participant>;

    fn listenable(&self) -> Listenable<Option<Participant>> {
        LeaderObserver::listenable(self)
    }
}

impl Inner {
    /// Reads who leads: the first node (in the participants' own order) still there, with a
    /// watch on the children and one on that node.
    async fn look(&self) -> Result<(Option<Participant>, Watches)> {
        let client = &self.client;
        loop {
            let (mut children, _, children_watch) =
                match client.get_children().watched().for_path(&self.path).await {
                    Ok(found) => found,
                    Err(Error::NoNode) => {
                        // No election yet: wait for its node.
                        match client.check_exists().watched().for_path(&self.path).await? {
                            (None, watch) => {
                                let watches = Watches {
                                    children: watch,
                                    leader: None,
                                };
                                return Ok((None, watches));
                            }
                            (Some(_), _) => continue,
                        }
                    }
                    Err(error) => return Err(error),
                };
            children.sort_by(|a, b| order_key(a).cmp(order_key(b)));
            for name in children {
                let node = paths::join(&self.path, &name);
                match client.get_data().watched().for_path(&node).await {
                    Ok((data, stat, leader_watch)) => {
                        let leader = participant::participant(node, &data, &stat, true);
                        let watches = Watches {
                            children: children_watch,
                            leader: Some(leader_watch),
                        };
                        return Ok((Some(leader), watches));
                    }
                    // Gone since the listing (the children's watch has fired too).
                    Err(Error::NoNode) => {}
                    Err(error) => return Err(error),
                }
            }
            let watches = Watches {
                children: children_watch,
                leader: None,
            };
            return Ok((None, watches));
        }
    }

    /// Delivers `leader` if it is news: another epoch (only ever a greater one), another id, or
    /// a change between someone and nobody.
    fn deliver(&self, leader: Option<Participant>) {
        let mut delivered = self.delivered.lock();
        let news = match (&delivered.current, &leader) {
            (None, None) => false,
            (_, Some(new)) if delivered.highest.is_some_and(|highest| new.epoch < highest) => {
                // Only a server behind what we saw could show this: wait for newer news.
                tracing::warn!(path = %self.path, epoch = new.epoch, "older leader epoch ignored");
                false
            }
            (Some(old), Some(new)) => old.epoch != new.epoch || old.id != new.id,
            _ => true,
        };
        if !news {
            return;
        }
        if let Some(new) = &leader {
            delivered.highest = Some(new.epoch);
        }
        tracing::debug!(path = %self.path, leader = ?leader.as_ref().map(|l| l.epoch), "leader changed");
        delivered.current = leader.clone();
        // Under the lock, so deliveries keep their order.
        self.events.publish(leader);
    }
}

/// Waits for a change (a watch, or a reconnect), reads again, delivers; until cancelled.
async fn run(inner: Arc<Inner>, mut watches: Watches) {
    let mut states = inner.client.connection_state_stream();
    let mut backoff = Backoff::standard();
    loop {
        let Watches { children, leader } = watches;
        let children = children.changed();
        let leader = async {
            match leader {
                Some(leader) => drop(leader.changed().await),
                None => std::future::pending().await,
            }
        };
        tokio::pin!(children, leader);
        loop {
            tokio::select! {
                _ = &mut children => break,
                () = &mut leader => break,
                state = states.next() => match state {
                    None => return,
                    // After any (re)connection: what changed meanwhile, watches made anew.
                    Some(state) if state.is_connected() => break,
                    Some(_) => {}
                },
            }
        }
        watches = loop {
            match inner.look().await {
                Ok((found, watches)) => {
                    inner.deliver(found);
                    backoff.reset();
                    break watches;
                }
                Err(error @ Error::ResponseTooLarge { .. }) => {
                    // Every look would fail the same way: stop, and say so.
                    inner.core.tasks().report_unhandled(&error);
                    return;
                }
                Err(error) => {
                    tracing::debug!(path = %inner.path, %error, "reading the election failed; retrying");
                    backoff.wait().await;
                }
            }
        };
    }
}
