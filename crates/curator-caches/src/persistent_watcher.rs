//! [`PersistentWatcher`]: a persistent watch that outlives connection losses and sessions
//! (Curator's `PersistentWatcher` recipe).

use std::sync::Arc;
use std::time::Duration;

use curator_framework::listen::{Listenable, ListenerContainer, ListenerStream};
use curator_framework::recipe::{
    Backoff, Cancelled, Recipe, RecipeCore, RecipeEvents, RecipeOptions, TaskHandle,
};
use curator_framework::types::{EventType, WatchedEvent};
use curator_framework::watcher::PersistentWatcher as SessionWatch;
use curator_framework::{CuratorFramework, Error, Result, paths};
use futures::StreamExt;
use parking_lot::Mutex;

/// What a [`PersistentWatcher`] publishes.
///
/// ```
/// use curator_caches::PersistentWatcherEvent;
/// fn describe(event: &PersistentWatcherEvent) -> String {
///     match event {
///         PersistentWatcherEvent::Watched(event) => format!("{:?} {}", event.event_type, event.path),
///         PersistentWatcherEvent::Reset => "watch (re)set: re-read what you follow".to_owned(),
///         _ => "something new".to_owned(),
///     }
/// }
/// assert_eq!(describe(&PersistentWatcherEvent::Reset), "watch (re)set: re-read what you follow");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PersistentWatcherEvent {
    /// A node event the server sent for the watch: its `path` (namespace removed) and
    /// `event_type` (`NodeCreated`, `NodeDataChanged`, `NodeDeleted`, and without `recursive`
    /// also `NodeChildrenChanged`). Session events are not passed on; they show as `Reset`.
    Watched(WatchedEvent),
    /// The watch was set at the server: after `start()`, and again after every reconnect and
    /// on every new session (Curator's reset listeners). Changes made while the watch was not
    /// set are not reported, so re-read what you follow.
    Reset,
}

/// A persistent (ZooKeeper 3.6+) watch on a path that stays set through connection losses,
/// server restarts and session expiries, with its events and a [`Reset`] each time it is set
/// again (Curator's `PersistentWatcher` recipe).
///
/// It differs from [`curator_framework::watcher::PersistentWatcher`] (from
/// `client.add_watch()`), which lives in one session: that one ends when its session expires,
/// and its user must add the watch again. This recipe adds it again on every `Connected` or
/// `Reconnected` transition of its client, and publishes [`Reset`] once it is set, so users
/// know they may have missed events and should re-read.
///
/// Recursive or not: [`builder`](Self::builder) watches the whole subtree by default
/// (`PERSISTENT_RECURSIVE`, what watching a subtree usually needs); `recursive(false)` watches
/// the node alone (`PERSISTENT`: its data, its creation and deletion, and its children list).
/// Curator's constructor takes it as an argument, with no default. The path need not exist.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_caches::{PersistentWatcher, PersistentWatcherEvent};
/// use futures::StreamExt;
/// let watcher = PersistentWatcher::builder(client, "/config").build()?;
/// let mut events = watcher.stream();
/// watcher.start().await?;
/// while let Some(event) = events.next().await {
///     match event {
///         PersistentWatcherEvent::Reset => println!("(re)watching: re-read /config"),
///         PersistentWatcherEvent::Watched(event) => println!("{:?} {}", event.event_type, event.path),
///         _ => {}
///     }
/// }
/// # Ok(()) }
/// ```
///
/// [`Reset`]: PersistentWatcherEvent::Reset
#[derive(Debug, Clone)]
pub struct PersistentWatcher {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: CuratorFramework,
    path: Arc<str>,
    recursive: bool,
    core: RecipeCore,
    events: ListenerContainer<PersistentWatcherEvent>,
    /// The watching task; dropping the last handle of the watcher (and so this) stops it.
    task: Mutex<Option<TaskHandle>>,
}

/// How long the task waits for the server to remove the watch when it is closed.
const REMOVE_WAIT: Duration = Duration::from_secs(2);

impl PersistentWatcher {
    /// Options for a watcher on `path` (recursive unless told otherwise).
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let watcher = curator_caches::PersistentWatcher::builder(client, "/config")
    ///     .recursive(false)
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn builder(client: CuratorFramework, path: &str) -> PersistentWatcherBuilder {
        PersistentWatcherBuilder {
            client,
            path: path.to_owned(),
            recursive: true,
            options: RecipeOptions::new(),
        }
    }

    /// Starts watching, in the background; returns at once. A [`Reset`] event says when the
    /// watch is set. Add listeners first to hear that first `Reset`.
    ///
    /// ```no_run
    /// # async fn demo(watcher: curator_caches::PersistentWatcher) -> curator_framework::Result<()> {
    /// watcher.start().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started, [`Error::Closed`] when closed.
    ///
    /// # Cancellation safety
    /// Safe: it does not wait for anything.
    ///
    /// [`Reset`]: PersistentWatcherEvent::Reset
    pub async fn start(&self) -> Result<()> {
        let inner = &self.inner;
        inner.core.lifecycle().start()?;
        let (client, path, events) = (
            inner.client.clone(),
            Arc::clone(&inner.path),
            inner.events.clone(),
        );
        let recursive = inner.recursive;
        let span = tracing::debug_span!("persistent_watcher", path = %path, recursive);
        let task = inner.core.tasks().spawn_cooperative(move |cancelled| {
            tracing::Instrument::instrument(watch(client, path, recursive, events, cancelled), span)
        });
        *inner.task.lock() = Some(task);
        Ok(())
    }

    /// Stops watching: removes the watch at the server (when connected; otherwise it goes with
    /// the session) and waits for the task to end. No event is published afterwards.
    /// Idempotent; a watcher that never started closes too.
    ///
    /// ```no_run
    /// # async fn demo(watcher: curator_caches::PersistentWatcher) -> curator_framework::Result<()> {
    /// watcher.close().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// None: the watcher closes whatever its connection does (a watch it could not remove goes
    /// with the session).
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the watcher stopping in the background.
    pub async fn close(&self) -> Result<()> {
        if self.inner.core.close_tasks().await {
            self.inner.task.lock().take();
        }
        Ok(())
    }

    /// Where to add listeners of [`PersistentWatcherEvent`]s (closures, objects, senders).
    ///
    /// ```no_run
    /// # fn demo(watcher: curator_caches::PersistentWatcher) {
    /// let _listening = watcher.listenable().add_listener(|event| println!("{event:?}"));
    /// # }
    /// ```
    pub fn listenable(&self) -> Listenable<PersistentWatcherEvent> {
        self.inner.events.listenable()
    }

    /// Every [`PersistentWatcherEvent`] from now on, as a stream (`listenable().stream()`); it
    /// ends when the client closes.
    ///
    /// ```no_run
    /// # async fn demo(watcher: curator_caches::PersistentWatcher) {
    /// use futures::StreamExt;
    /// let mut events = watcher.stream();
    /// let first = events.next().await;
    /// # }
    /// ```
    pub fn stream(&self) -> ListenerStream<PersistentWatcherEvent> {
        self.listenable().stream()
    }

    /// The watched path.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let watcher = curator_caches::PersistentWatcher::builder(client, "/config").build()?;
    /// assert_eq!(watcher.path(), "/config");
    /// # Ok(()) }
    /// ```
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Whether the watch covers the whole subtree.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let watcher = curator_caches::PersistentWatcher::builder(client, "/config")
    ///     .recursive(false)
    ///     .build()?;
    /// assert!(!watcher.is_recursive());
    /// # Ok(()) }
    /// ```
    pub fn is_recursive(&self) -> bool {
        self.inner.recursive
    }
}

impl Recipe for PersistentWatcher {
    fn core(&self) -> &RecipeCore {
        &self.inner.core
    }

    async fn start(&self) -> Result<()> {
        PersistentWatcher::start(self).await
    }

    async fn close(&self) -> Result<()> {
        PersistentWatcher::close(self).await
    }
}

impl RecipeEvents for PersistentWatcher {
    type Event = PersistentWatcherEvent;

    fn listenable(&self) -> Listenable<PersistentWatcherEvent> {
        PersistentWatcher::listenable(self)
    }
}

/// Options of a [`PersistentWatcher`].
///
/// ```no_run
/// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let watcher = curator_caches::PersistentWatcher::builder(client, "/config")
///     .recursive(true)
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until build()"]
pub struct PersistentWatcherBuilder {
    client: CuratorFramework,
    path: String,
    recursive: bool,
    options: RecipeOptions,
}

impl PersistentWatcherBuilder {
    /// `true` (the default): the whole subtree (`PERSISTENT_RECURSIVE`); `false`: the node
    /// alone (`PERSISTENT`).
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let node_only = curator_caches::PersistentWatcher::builder(client, "/config/flag")
    ///     .recursive(false)
    ///     .build()?;
    /// assert!(!node_only.is_recursive());
    /// # Ok(()) }
    /// ```
    pub fn recursive(mut self, recursive: bool) -> Self {
        self.recursive = recursive;
        self
    }

    /// The watcher's name (default: its path): what its logs and unhandled errors say.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let watcher = curator_caches::PersistentWatcher::builder(client, "/tenants/17/config")
    ///     .metrics_name("tenant-config")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// The watcher, not started.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) {
    /// let bad = curator_caches::PersistentWatcher::builder(client, "no-slash").build();
    /// assert!(bad.is_err());
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path.
    pub fn build(self) -> Result<PersistentWatcher> {
        paths::validate(&self.path)?;
        let client = self.client;
        let core = RecipeCore::new(&client, "PersistentWatcher", &self.path, &self.options);
        Ok(PersistentWatcher {
            inner: Arc::new(Inner {
                path: Arc::from(self.path),
                recursive: self.recursive,
                events: core.listener_container(&client),
                core,
                task: Mutex::new(None),
                client,
            }),
        })
    }
}

/// The watching task: sets the watch, then again on every `Connected`/`Reconnected`, passing
/// on its node events, until cancelled (then it removes the watch) or the client closes.
async fn watch(
    client: CuratorFramework,
    path: Arc<str>,
    recursive: bool,
    events: ListenerContainer<PersistentWatcherEvent>,
    cancelled: Cancelled,
) {
    // Subscribed before the first set, so no transition after it is missed.
    let mut states = client.connection_state_stream();
    let mut backoff = Backoff::standard();
    let mut watch: Option<SessionWatch> = None;
    let mut set_needed = true;
    // The session the watch was set on, and whether the connection was lost since: a
    // `Connected` that only reports the connection the watch was set on (the state stream is
    // delivered a little behind) needs no second set.
    let mut set_on: Option<i64> = None;
    let mut interrupted = false;
    loop {
        if set_needed {
            let mut builder = client.add_watch();
            if recursive {
                builder = builder.recursive();
            }
            let added = tokio::select! {
                biased;
                () = cancelled.cancelled() => break,
                added = builder.for_path(&path) => added,
            };
            match added {
                Ok(added) => {
                    // The old watch (if any) is dropped after the new one exists: within a
                    // session the wire client then removes nothing at the server.
                    watch = Some(added);
                    set_needed = false;
                    set_on = client.session_id();
                    interrupted = false;
                    backoff.reset();
                    tracing::debug!("persistent watch set");
                    events.publish(PersistentWatcherEvent::Reset);
                }
                Err(Error::Closed) => return,
                Err(error) => {
                    // Curator tries again at once; a pause keeps a refusing server from
                    // being flooded. A reconnect also tries again.
                    tracing::warn!(%error, "could not set the persistent watch; trying again");
                }
            }
        }
        tokio::select! {
            biased;
            () = cancelled.cancelled() => break,
            state = states.next() => match state {
                None => return, // the client closed
                Some(state) if state.is_connected() => {
                    set_needed |= watch.is_none() || interrupted || client.session_id() != set_on;
                }
                Some(_) => interrupted = true,
            },
            event = next_event(&mut watch) => match event {
                // The session ended; the coming `Reconnected` sets the watch on the new one.
                None => watch = None,
                Some(event) if event.event_type == EventType::Session => {}
                Some(event) => events.publish(PersistentWatcherEvent::Watched(event)),
            },
            () = backoff.wait(), if set_needed => {}
        }
    }
    if let Some(watch) = watch {
        match tokio::time::timeout(REMOVE_WAIT, watch.remove()).await {
            Ok(Ok(())) => tracing::debug!("persistent watch removed"),
            Ok(Err(error)) => tracing::debug!(%error, "could not remove the persistent watch"),
            Err(_) => tracing::debug!("removing the persistent watch timed out"),
        }
    }
}

async fn next_event(watch: &mut Option<SessionWatch>) -> Option<WatchedEvent> {
    match watch {
        Some(watch) => watch.next().await,
        None => std::future::pending().await,
    }
}
