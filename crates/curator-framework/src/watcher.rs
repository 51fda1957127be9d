//! Watches: one-shot [`Watcher`]s returned by `watched()` reads, and [`PersistentWatcher`]s
//! from `add_watch()`. Dropping either removes its registration.

use std::future::IntoFuture;
use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use futures::future::BoxFuture;

use crate::error::Result;
use crate::paths;
use crate::types::WatchedEvent;
use crate::wire::{WirePersistentWatcher, WireWatcher};

fn unfix(namespace: Option<&str>, mut event: WatchedEvent) -> WatchedEvent {
    if !event.path.is_empty() {
        event.path = paths::strip_namespace(namespace, &event.path);
    }
    event
}

/// A one-shot watch: resolves with the first event on its node. If the session ends first, it
/// resolves with a [`EventType::Session`](crate::types::EventType::Session) event whose state is
/// `Expired` or `Closed`: the watch is gone with the session. The client's `close()` resolves it
/// at once with a `Closed` session event, also while the connection is down. A watch survives
/// reconnects within the session.
///
/// Await it directly, or call [`changed`](Self::changed); [`remove`](Self::remove) removes it at
/// the server and reports errors (dropping it removes it too).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let (_data, _stat, watcher) = client.get_data().watched().for_path("/config").await?;
/// let event = watcher.await;
/// println!("{:?} on {}", event.event_type, event.path);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Watcher {
    wire: WireWatcher,
    namespace: Option<Arc<str>>,
}

impl Watcher {
    pub(crate) fn new(wire: WireWatcher, namespace: Option<Arc<str>>) -> Self {
        Self { wire, namespace }
    }

    /// Waits for the event.
    pub async fn changed(self) -> WatchedEvent {
        let event = self.wire.changed().await;
        unfix(self.namespace.as_deref(), event)
    }

    /// Removes the watch at the server.
    ///
    /// # Errors
    /// [`Error::NoWatcher`](crate::Error::NoWatcher) when the server had no such watch, or a
    /// connection error.
    pub async fn remove(self) -> Result<()> {
        self.wire.remove().await
    }
}

impl IntoFuture for Watcher {
    type Output = WatchedEvent;
    type IntoFuture = BoxFuture<'static, WatchedEvent>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.changed())
    }
}

/// A persistent watch (ZooKeeper 3.6+): every change on its node, or with `recursive()` on its
/// whole subtree, until it is dropped or removed, or the session ends.
///
/// Events that happen while the client is disconnected are not replayed by ZooKeeper; after a
/// `Disconnected`/`SyncConnected` pair of session events, re-read what you follow. After an
/// `Expired` or `Closed` session event, [`next`](Self::next) returns `None`: add the watch again
/// on the new session.
///
/// After a reconnect *within* the session, the session sets the watch again at the server
/// (with every other watch, in the reconnect's `setWatches` exchange) before any request of the
/// new connection: changes made after the `SyncConnected` event are reported.
#[derive(Debug)]
pub struct PersistentWatcher {
    wire: WirePersistentWatcher,
    namespace: Option<Arc<str>>,
}

impl PersistentWatcher {
    pub(crate) fn new(wire: WirePersistentWatcher, namespace: Option<Arc<str>>) -> Self {
        Self { wire, namespace }
    }

    /// The next event; `None` once the session ended or the client closed (at once, also while
    /// the connection is down).
    ///
    /// # Cancellation safety
    /// Safe: an event is never lost by dropping this future.
    pub async fn next(&mut self) -> Option<WatchedEvent> {
        let event = self.wire.next().await?;
        Some(unfix(self.namespace.as_deref(), event))
    }

    /// The events as a stream.
    pub fn into_stream(self) -> impl Stream<Item = WatchedEvent> + Send {
        futures::stream::unfold(self, |mut watcher| async move {
            let event = watcher.next().await?;
            Some((event, watcher))
        })
    }

    /// Removes the watch at the server.
    ///
    /// # Errors
    /// A connection error, or [`Error::NoWatcher`](crate::Error::NoWatcher).
    pub async fn remove(self) -> Result<()> {
        self.wire.remove().await
    }
}

// A persistent watcher is also usable where a boxed stream is expected.
impl PersistentWatcher {
    /// The events as a boxed, pinned stream.
    pub fn boxed(self) -> Pin<Box<dyn Stream<Item = WatchedEvent> + Send>> {
        Box::pin(self.into_stream())
    }
}
