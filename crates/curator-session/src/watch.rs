//! Watches: the session's registry of who waits for what, and the handles callers hold.
//!
//! ZooKeeper keeps one watch per path and kind for a connection; a client may have several
//! local watchers behind it. A notification is handed to every local watcher it concerns (the
//! Java client's rules, 3.9 semantics):
//! - `NodeCreated`, `NodeDataChanged`: one-shot data and exists watchers of the path;
//! - `NodeDeleted`: one-shot data, exists and child watchers of the path;
//! - `NodeChildrenChanged`: one-shot child watchers of the path;
//! - and always the persistent watchers of the path, and the persistent recursive watchers of
//!   the path and of every ancestor, except for `NodeChildrenChanged`, which recursive watchers
//!   never get (older servers send it to them; it is dropped).
//!
//! One-shot watchers are removed when they fire. Session events: persistent watchers hear
//! `Disconnected` and the `SyncConnected` (or `ConnectedReadOnly`) that follows, since changes
//! made while disconnected are not replayed to them; one-shot watchers survive reconnects (the
//! session sets them again with setWatches) and hear only the end of the session (`Expired`,
//! `AuthFailed`, `Closed`).

use std::collections::BTreeMap;
use std::sync::Weak;

use curator_wire::proto::{EventType, KeeperState, WatcherType};
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};
use crate::session::Shared;

/// A watch event.
///
/// ```
/// use curator_session::WatchedEvent;
/// use curator_wire::proto::{EventType, KeeperState};
///
/// let event = WatchedEvent::session(KeeperState::Expired);
/// assert_eq!(event.event_type, EventType::None);
/// assert!(event.path.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedEvent {
    /// What happened to the node; [`EventType::None`] for a change of session state.
    pub event_type: EventType,
    /// The session's state (`SyncConnected` for node events).
    pub state: KeeperState,
    /// The node (chroot removed); empty for session events.
    pub path: String,
    /// The zxid of the change, when the server sends it (ZooKeeper 3.9+, ZOOKEEPER-4655).
    pub zxid: Option<i64>,
}

impl WatchedEvent {
    /// A change of session state.
    pub fn session(state: KeeperState) -> Self {
        Self {
            event_type: EventType::None,
            state,
            path: String::new(),
            zxid: None,
        }
    }
}

/// What kind of local watcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// getData, or exists on a node that exists.
    Data,
    /// exists on a node that does not exist.
    Exist,
    /// getChildren.
    Child,
    /// addWatch persistent.
    Persistent,
    /// addWatch persistent recursive.
    Recursive,
}

/// What a request that sets a watch asks for; where it goes depends on the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Intent {
    /// exists: a data watch if the node exists, an exists watch if not.
    Exists,
    Data,
    Child,
    Persistent,
    Recursive,
}

impl Intent {
    /// The watch the reply with `code` establishes, if any.
    pub(crate) fn settle(self, code: curator_wire::proto::ErrorCode) -> Option<Kind> {
        use curator_wire::proto::ErrorCode;
        match (self, code) {
            (Intent::Exists, ErrorCode::Ok) | (Intent::Data, ErrorCode::Ok) => Some(Kind::Data),
            (Intent::Exists, ErrorCode::NoNode) => Some(Kind::Exist),
            (Intent::Child, ErrorCode::Ok) => Some(Kind::Child),
            (Intent::Persistent, ErrorCode::Ok) => Some(Kind::Persistent),
            (Intent::Recursive, ErrorCode::Ok) => Some(Kind::Recursive),
            _ => None,
        }
    }
}

pub(crate) enum Sender {
    Once(oneshot::Sender<WatchedEvent>),
    Stream(mpsc::UnboundedSender<WatchedEvent>),
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Sender::Once(_) => "Once",
            Sender::Stream(_) => "Stream",
        })
    }
}

impl Sender {
    pub(crate) fn send(self, event: WatchedEvent) {
        match self {
            Sender::Once(sender) => {
                let _ = sender.send(event);
            }
            Sender::Stream(sender) => {
                let _ = sender.send(event);
            }
        }
    }
}

/// A watcher waiting for its request's reply.
#[derive(Debug)]
pub(crate) struct PendingWatch {
    pub(crate) path: String,
    pub(crate) intent: Intent,
    pub(crate) id: u64,
    pub(crate) sender: Sender,
    /// See [`Entry::local`].
    pub(crate) local: bool,
}

#[derive(Debug)]
struct Entry {
    id: u64,
    sender: Sender,
    /// Registered without a watch at the server: a persistent watch on the same path (this
    /// session's) already brings its events. Setting a one-shot watch there would, on
    /// ZooKeeper 3.8, turn the persistent watch into a one-shot one (ZOOKEEPER-4466).
    local: bool,
}

#[derive(Debug, Default)]
struct PathWatches {
    data: Vec<Entry>,
    exist: Vec<Entry>,
    child: Vec<Entry>,
    persistent: Vec<Entry>,
    recursive: Vec<Entry>,
    /// A persistent watch kept at the server with no local persistent watcher left, because
    /// local one-shot watchers of the path depend on it; removed when they are gone.
    kept: Option<Kind>,
}

impl PathWatches {
    fn list(&mut self, kind: Kind) -> &mut Vec<Entry> {
        match kind {
            Kind::Data => &mut self.data,
            Kind::Exist => &mut self.exist,
            Kind::Child => &mut self.child,
            Kind::Persistent => &mut self.persistent,
            Kind::Recursive => &mut self.recursive,
        }
    }

    fn is_empty(&self) -> bool {
        self.data.is_empty()
            && self.exist.is_empty()
            && self.child.is_empty()
            && self.persistent.is_empty()
            && self.recursive.is_empty()
            && self.kept.is_none()
    }

    fn has_local(&self) -> bool {
        self.data
            .iter()
            .chain(&self.exist)
            .chain(&self.child)
            .any(|entry| entry.local)
    }

    /// Whether a one-shot watch of `intent` here can go without a watch at the server.
    fn covers(&self, intent: Intent) -> bool {
        let persistent = !self.persistent.is_empty() || self.kept == Some(Kind::Persistent);
        let recursive = !self.recursive.is_empty() || self.kept == Some(Kind::Recursive);
        match intent {
            Intent::Exists | Intent::Data => persistent || recursive,
            // Recursive watches get no NodeChildrenChanged.
            Intent::Child => persistent,
            Intent::Persistent | Intent::Recursive => false,
        }
    }

    /// The server's watch for which no local watcher is left after `kind` went away, as the
    /// removal to send.
    fn removal(&mut self, kind: Kind, local: bool) -> Option<WatcherType> {
        if local {
            // The one-shot had no server watch of its own; a kept persistent watch goes once
            // nothing depends on it.
            if self.has_local() {
                return None;
            }
            let kept = self.kept.take()?;
            return Some(self.persistent_removal(kept));
        }
        let data_table = !self.data.is_empty()
            || !self.exist.is_empty()
            || !self.persistent.is_empty()
            || !self.recursive.is_empty()
            || self.kept.is_some();
        let child_table =
            !self.child.is_empty() || !self.persistent.is_empty() || self.kept.is_some();
        match kind {
            // ZooKeeper 3.8 keeps one watch per path in each table whatever its mode, so a
            // removal of data watches would also end a persistent watch on the same path.
            Kind::Data | Kind::Exist => (!data_table).then_some(WatcherType::Data),
            Kind::Child => (!child_table).then_some(WatcherType::Children),
            Kind::Persistent | Kind::Recursive => {
                if !self.list(kind).is_empty() {
                    None
                } else if self.has_local() {
                    self.kept = Some(kind);
                    None
                } else {
                    Some(self.persistent_removal(kind))
                }
            }
        }
    }

    /// How to remove a persistent watch of `kind`: every watch of the path when nothing else
    /// is watched there (understood by every version), otherwise that mode alone (3.9; older
    /// servers refuse it and keep the watch, whose events then reach nobody).
    fn persistent_removal(&self, kind: Kind) -> WatcherType {
        let others = !self.data.is_empty()
            || !self.exist.is_empty()
            || !self.child.is_empty()
            || !self.persistent.is_empty()
            || !self.recursive.is_empty();
        match kind {
            _ if !others => WatcherType::Any,
            Kind::Recursive => WatcherType::PersistentRecursive,
            _ => WatcherType::Persistent,
        }
    }
}

/// The registry (inside the session's lock).
#[derive(Debug, Default)]
pub(crate) struct Watches {
    /// Ordered maps: what is sent or fired in a walk of them goes in the same order every run
    /// (a simulation's seed replays it).
    paths: BTreeMap<String, PathWatches>,
    ids: BTreeMap<u64, (String, Kind)>,
    recursive: usize,
    next_id: u64,
    /// Watch-setting requests sent and not answered, per path: a removal must not overtake
    /// them at the server.
    inflight: BTreeMap<String, usize>,
    /// `addWatch` requests sent and not answered, per path and mode: the server sets the
    /// persistent watch before it reads a one-shot request sent later, so that request can
    /// ride on it as on an answered one.
    adding: BTreeMap<(String, Kind), usize>,
}

/// The paths to set again on a new connection, by kind.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct WatchLists {
    pub(crate) data: Vec<String>,
    pub(crate) exist: Vec<String>,
    pub(crate) child: Vec<String>,
    pub(crate) persistent: Vec<String>,
    pub(crate) recursive: Vec<String>,
}

impl WatchLists {
    pub(crate) fn is_empty(&self) -> bool {
        self.data.is_empty()
            && self.exist.is_empty()
            && self.child.is_empty()
            && self.persistent.is_empty()
            && self.recursive.is_empty()
    }
}

impl Watches {
    pub(crate) fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Whether a one-shot watch of `intent` on `path` needs a watch at the server (see
    /// [`Entry::local`]): not when a persistent watch of this session on the path brings its
    /// events, set or being set.
    pub(crate) fn needs_server_watch(&self, path: &str, intent: Intent) -> bool {
        let adding = |kind: Kind| self.adding.contains_key(&(path.to_owned(), kind));
        let being_added = match intent {
            Intent::Exists | Intent::Data => adding(Kind::Persistent) || adding(Kind::Recursive),
            Intent::Child => adding(Kind::Persistent),
            Intent::Persistent | Intent::Recursive => false,
        };
        !being_added && !self.paths.get(path).is_some_and(|w| w.covers(intent))
    }

    /// A request that sets a watch of `intent` on `path` (at the server, or locally) was sent.
    pub(crate) fn sent(&mut self, path: &str, intent: Intent) {
        *self.inflight.entry(path.to_owned()).or_default() += 1;
        if let Some(kind) = persistent_kind(intent) {
            *self.adding.entry((path.to_owned(), kind)).or_default() += 1;
        }
    }

    /// The reply to a watch-setting request came: the watcher is registered if `kind` says so.
    /// Returns the watcher with the event to give it at once when it was to ride on a
    /// persistent watch that is not there (refused, or removed before this reply): it has no
    /// watch at the server, so its owner must read again rather than wait for an event nobody
    /// sends.
    pub(crate) fn answered(
        &mut self,
        watch: PendingWatch,
        kind: Option<Kind>,
    ) -> Option<(Sender, WatchedEvent)> {
        self.unanswered(&watch.path, watch.intent);
        let kind = kind?;
        if watch.local
            && !self
                .paths
                .get(&watch.path)
                .is_some_and(|w| w.covers(watch.intent))
        {
            let event_type = match kind {
                Kind::Child => EventType::NodeChildrenChanged,
                _ => EventType::NodeDataChanged,
            };
            let event = WatchedEvent {
                event_type,
                state: KeeperState::SyncConnected,
                path: watch.path,
                zxid: None,
            };
            return Some((watch.sender, event));
        }
        if kind == Kind::Recursive {
            self.recursive += 1;
        }
        self.ids.insert(watch.id, (watch.path.clone(), kind));
        let watches = self.paths.entry(watch.path).or_default();
        if matches!(kind, Kind::Persistent | Kind::Recursive) && watches.kept == Some(kind) {
            // The kept server watch has a local owner again.
            watches.kept = None;
        }
        watches.list(kind).push(Entry {
            id: watch.id,
            sender: watch.sender,
            local: watch.local,
        });
        None
    }

    /// A request that set a watch of `intent` on `path` was answered, or never will be (its
    /// connection broke).
    pub(crate) fn unanswered(&mut self, path: &str, intent: Intent) {
        if let Some(count) = self.inflight.get_mut(path) {
            *count -= 1;
            if *count == 0 {
                self.inflight.remove(path);
            }
        }
        if let Some(kind) = persistent_kind(intent) {
            let key = (path.to_owned(), kind);
            if let Some(count) = self.adding.get_mut(&key) {
                *count -= 1;
                if *count == 0 {
                    self.adding.remove(&key);
                }
            }
        }
    }

    /// Removes the watcher `id`; returns the removal to send to the server, if no other local
    /// watcher needs the server's watch (and no request in flight is about to set it again).
    pub(crate) fn remove(&mut self, id: u64) -> Option<(String, WatcherType)> {
        let (path, kind) = self.ids.remove(&id)?;
        let watches = self.paths.get_mut(&path)?;
        let list = watches.list(kind);
        let at = list.iter().position(|entry| entry.id == id)?;
        let entry = list.remove(at);
        if kind == Kind::Recursive {
            self.recursive -= 1;
        }
        let removal = watches.removal(kind, entry.local);
        let removal = removal.filter(|_| !self.inflight.contains_key(&path));
        if watches.is_empty() {
            self.paths.remove(&path);
        }
        removal.map(|kind| (path, kind))
    }

    /// The local watchers a notification reaches (one-shot ones leave the registry), and a
    /// removal to send when a kept persistent watch lost its last dependent.
    pub(crate) fn materialize(&mut self, event_type: EventType, path: &str) -> Materialized {
        let mut out = Materialized::default();
        if let Some(watches) = self.paths.get_mut(path) {
            let had_local = watches.has_local();
            let mut take = |list: &mut Vec<Entry>, ids: &mut BTreeMap<u64, (String, Kind)>| {
                for entry in list.drain(..) {
                    ids.remove(&entry.id);
                    out.once.push(entry.sender);
                }
            };
            match event_type {
                EventType::NodeCreated | EventType::NodeDataChanged => {
                    take(&mut watches.data, &mut self.ids);
                    take(&mut watches.exist, &mut self.ids);
                }
                EventType::NodeDeleted => {
                    take(&mut watches.data, &mut self.ids);
                    take(&mut watches.exist, &mut self.ids);
                    take(&mut watches.child, &mut self.ids);
                }
                EventType::NodeChildrenChanged => take(&mut watches.child, &mut self.ids),
                _ => {}
            }
            for entry in &watches.persistent {
                if let Sender::Stream(sender) = &entry.sender {
                    out.streams.push(sender.clone());
                }
            }
            if had_local && !watches.has_local() && !self.inflight.contains_key(path) {
                if let Some(kept) = watches.kept.take() {
                    out.removal = Some((path.to_owned(), watches.persistent_removal(kept)));
                }
            }
            if watches.is_empty() {
                self.paths.remove(path);
            }
        }
        if self.recursive > 0 && event_type != EventType::NodeChildrenChanged {
            for ancestor in ancestors(path) {
                if let Some(watches) = self.paths.get(ancestor) {
                    for entry in &watches.recursive {
                        if let Sender::Stream(sender) = &entry.sender {
                            out.streams.push(sender.clone());
                        }
                    }
                }
            }
        }
        out
    }

    /// The persistent watchers (for session events that do not end them).
    pub(crate) fn streams(&self) -> Vec<mpsc::UnboundedSender<WatchedEvent>> {
        self.paths
            .values()
            .flat_map(|w| w.persistent.iter().chain(&w.recursive))
            .filter_map(|entry| match &entry.sender {
                Sender::Stream(sender) => Some(sender.clone()),
                Sender::Once(_) => None,
            })
            .collect()
    }

    /// Every watcher, leaving the registry empty (the session ended).
    pub(crate) fn drain(&mut self) -> Vec<Sender> {
        self.ids.clear();
        self.recursive = 0;
        self.inflight.clear();
        std::mem::take(&mut self.paths)
            .into_values()
            .flat_map(|w| {
                w.data
                    .into_iter()
                    .chain(w.exist)
                    .chain(w.child)
                    .chain(w.persistent)
                    .chain(w.recursive)
            })
            .map(|entry| entry.sender)
            .collect()
    }

    /// What to set again on a new connection (local-only one-shots ride on their path's
    /// persistent watch, kept ones included).
    pub(crate) fn lists(&self) -> WatchLists {
        let mut lists = WatchLists::default();
        for (path, w) in &self.paths {
            let server = |list: &Vec<Entry>| list.iter().any(|entry| !entry.local);
            for (list, present) in [
                (&mut lists.data, server(&w.data)),
                (&mut lists.exist, server(&w.exist)),
                (&mut lists.child, server(&w.child)),
                (
                    &mut lists.persistent,
                    !w.persistent.is_empty() || w.kept == Some(Kind::Persistent),
                ),
                (
                    &mut lists.recursive,
                    !w.recursive.is_empty() || w.kept == Some(Kind::Recursive),
                ),
            ] {
                if present {
                    list.push(path.clone());
                }
            }
        }
        for list in [
            &mut lists.data,
            &mut lists.exist,
            &mut lists.child,
            &mut lists.persistent,
            &mut lists.recursive,
        ] {
            list.sort_unstable();
        }
        lists
    }

    /// The number of local watchers.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }
}

/// What a notification reaches.
#[derive(Debug, Default)]
pub(crate) struct Materialized {
    pub(crate) once: Vec<Sender>,
    pub(crate) streams: Vec<mpsc::UnboundedSender<WatchedEvent>>,
    pub(crate) removal: Option<(String, WatcherType)>,
}

/// `path` and its ancestors, up to `/`.
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(path);
    std::iter::from_fn(move || {
        let current = next?;
        next = match current.rfind('/') {
            Some(0) if current.len() > 1 => Some("/"),
            Some(0) | None => None,
            Some(at) => Some(&current[..at]),
        };
        Some(current)
    })
}

/// A one-shot watch: the first event on its node, or the end of the session.
///
/// Dropping it before it fires removes it (and, when no other local watcher needs the server's
/// watch, removes that too).
#[derive(Debug)]
pub struct OneshotWatch {
    receiver: oneshot::Receiver<WatchedEvent>,
    id: u64,
    session: Weak<Shared>,
    done: bool,
}

impl OneshotWatch {
    pub(crate) fn new(
        receiver: oneshot::Receiver<WatchedEvent>,
        id: u64,
        session: Weak<Shared>,
    ) -> Self {
        Self {
            receiver,
            id,
            session,
            done: false,
        }
    }

    /// The event: a node event, or a session event whose state is `Expired`, `AuthFailed` or
    /// `Closed` when the session ends first.
    ///
    /// # Cancellation safety
    /// Dropping the future removes the watch, as dropping the watch does.
    pub async fn changed(mut self) -> WatchedEvent {
        let event = (&mut self.receiver)
            .await
            .unwrap_or_else(|_| WatchedEvent::session(KeeperState::Closed));
        self.done = true;
        event
    }

    /// Removes the watch, locally and at the server, and reports the server's answer.
    ///
    /// # Errors
    /// [`Error::Server`] with `NoWatcher` when the server had no such watch, a connection error,
    /// or [`Error::Closed`].
    pub async fn remove(mut self) -> Result<()> {
        self.done = true;
        let session = self.session.upgrade().ok_or(Error::Closed)?;
        session.remove_watch(self.id, true).await
    }
}

impl Drop for OneshotWatch {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(session) = self.session.upgrade() {
            session.forget_watch(self.id);
        }
    }
}

/// A persistent watch (ZooKeeper 3.6+): every event on its node (or subtree, recursive) until
/// it is removed or the session ends. Session events (`Disconnected`, then `SyncConnected`)
/// come in order with node events; changes made while disconnected are not replayed.
#[derive(Debug)]
pub struct PersistentWatch {
    receiver: mpsc::UnboundedReceiver<WatchedEvent>,
    id: u64,
    session: Weak<Shared>,
    done: bool,
}

impl PersistentWatch {
    pub(crate) fn new(
        receiver: mpsc::UnboundedReceiver<WatchedEvent>,
        id: u64,
        session: Weak<Shared>,
    ) -> Self {
        Self {
            receiver,
            id,
            session,
            done: false,
        }
    }

    /// The next event; `None` after the session ended (its last event says how).
    ///
    /// # Cancellation safety
    /// Safe: an event is never lost by dropping the future.
    pub async fn next(&mut self) -> Option<WatchedEvent> {
        let event = self.receiver.recv().await;
        if event.is_none() {
            self.done = true;
        }
        event
    }

    /// Removes the watch, locally and at the server, and reports the server's answer.
    ///
    /// # Errors
    /// As [`OneshotWatch::remove`].
    pub async fn remove(mut self) -> Result<()> {
        self.done = true;
        let session = self.session.upgrade().ok_or(Error::Closed)?;
        session.remove_watch(self.id, true).await
    }
}

impl Drop for PersistentWatch {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(session) = self.session.upgrade() {
            session.forget_watch(self.id);
        }
    }
}

/// The kind of persistent watch an `addWatch` of `intent` sets, if it is one.
fn persistent_kind(intent: Intent) -> Option<Kind> {
    match intent {
        Intent::Persistent => Some(Kind::Persistent),
        Intent::Recursive => Some(Kind::Recursive),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_of_paths() {
        assert_eq!(
            ancestors("/a/b/c").collect::<Vec<_>>(),
            ["/a/b/c", "/a/b", "/a", "/"]
        );
        assert_eq!(ancestors("/").collect::<Vec<_>>(), ["/"]);
        assert_eq!(ancestors("/a").collect::<Vec<_>>(), ["/a", "/"]);
    }

    fn watch(
        w: &mut Watches,
        path: &str,
        intent: Intent,
        code: curator_wire::proto::ErrorCode,
    ) -> (u64, Receiver) {
        let id = w.next_id();
        let (sender, receiver) = match intent {
            Intent::Persistent | Intent::Recursive => {
                let (tx, rx) = mpsc::unbounded_channel();
                (Sender::Stream(tx), Receiver::Stream(rx))
            }
            _ => {
                let (tx, rx) = oneshot::channel();
                (Sender::Once(tx), Receiver::Once(rx))
            }
        };
        let local = !matches!(intent, Intent::Persistent | Intent::Recursive)
            && !w.needs_server_watch(path, intent);
        w.sent(path, intent);
        let orphan = w.answered(
            PendingWatch {
                path: path.into(),
                intent,
                id,
                sender,
                local,
            },
            intent.settle(code),
        );
        assert!(
            orphan.is_none(),
            "a one-shot watch rides on a persistent watch that is there"
        );
        (id, receiver)
    }

    enum Receiver {
        Once(oneshot::Receiver<WatchedEvent>),
        Stream(mpsc::UnboundedReceiver<WatchedEvent>),
    }

    fn deliver(w: &mut Watches, event_type: EventType, path: &str) -> usize {
        let out = w.materialize(event_type, path);
        out.once.len() + out.streams.len()
    }

    #[test]
    fn notifications_reach_the_watchers_they_concern() {
        use curator_wire::proto::ErrorCode::{NoNode, Ok};
        let mut w = Watches::default();
        watch(&mut w, "/a", Intent::Data, Ok);
        watch(&mut w, "/a", Intent::Exists, NoNode);
        watch(&mut w, "/a", Intent::Child, Ok);
        watch(&mut w, "/a", Intent::Persistent, Ok);
        watch(&mut w, "/", Intent::Recursive, Ok);
        // A failed getData sets nothing.
        watch(&mut w, "/b", Intent::Data, NoNode);
        assert_eq!(w.len(), 5);
        assert_eq!(
            w.lists(),
            WatchLists {
                data: vec!["/a".into()],
                exist: vec!["/a".into()],
                child: vec!["/a".into()],
                persistent: vec!["/a".into()],
                recursive: vec!["/".into()],
            }
        );
        // Children changed: the child watch and the persistent watch, not the recursive one.
        assert_eq!(deliver(&mut w, EventType::NodeChildrenChanged, "/a"), 2);
        // Data changed: data + exist + persistent + recursive on the root.
        assert_eq!(deliver(&mut w, EventType::NodeDataChanged, "/a"), 4);
        // One-shots are gone; the two persistent ones stay.
        assert_eq!(deliver(&mut w, EventType::NodeDeleted, "/a"), 2);
        assert_eq!(deliver(&mut w, EventType::NodeCreated, "/a/b/c"), 1);
        assert_eq!(w.len(), 2);
    }

    #[test]
    fn removals_spare_watches_another_local_watcher_needs() {
        use curator_wire::proto::ErrorCode::Ok;
        let mut w = Watches::default();
        let (data, _r1) = watch(&mut w, "/a", Intent::Data, Ok);
        let (persistent, _r2) = watch(&mut w, "/a", Intent::Persistent, Ok);
        let (child, _r3) = watch(&mut w, "/a", Intent::Child, Ok);
        // The persistent watch still needs the server's data and child tables.
        assert_eq!(w.remove(data), None);
        assert_eq!(w.remove(child), None);
        assert_eq!(w.remove(persistent), Some(("/a".into(), WatcherType::Any)));
        let (recursive, _r4) = watch(&mut w, "/b", Intent::Recursive, Ok);
        let (_persistent, _r5) = watch(&mut w, "/b", Intent::Persistent, Ok);
        assert_eq!(
            w.remove(recursive),
            Some(("/b".into(), WatcherType::PersistentRecursive))
        );
        assert_eq!(w.remove(recursive), None, "removed once");
        // A watch request in flight for the path holds removals back.
        let (data, _r6) = watch(&mut w, "/c", Intent::Data, Ok);
        w.sent("/c", Intent::Data);
        assert_eq!(w.remove(data), None);
    }

    #[test]
    fn one_shots_under_a_persistent_watch_ride_on_it() {
        use curator_wire::proto::ErrorCode::Ok;
        let mut w = Watches::default();
        let (persistent, _r1) = watch(&mut w, "/k", Intent::Persistent, Ok);
        assert!(!w.needs_server_watch("/k", Intent::Data));
        assert!(!w.needs_server_watch("/k", Intent::Child));
        assert!(w.needs_server_watch("/other", Intent::Data));
        let (_data, _r2) = watch(&mut w, "/k", Intent::Data, Ok);
        assert!(w.lists().data.is_empty(), "no server watch of its own");
        // The persistent watcher goes; the server's watch stays for the one-shot.
        assert_eq!(w.remove(persistent), None);
        assert_eq!(w.lists().persistent, ["/k"]);
        let out = w.materialize(EventType::NodeDataChanged, "/k");
        assert_eq!(out.once.len(), 1);
        assert_eq!(out.removal, Some(("/k".into(), WatcherType::Any)));
        assert!(w.lists().is_empty());
        // Recursive watches bring no child events: a child watch needs its own.
        let (_recursive, _r3) = watch(&mut w, "/r", Intent::Recursive, Ok);
        assert!(w.needs_server_watch("/r", Intent::Child));
        assert!(!w.needs_server_watch("/r", Intent::Exists));
    }

    #[test]
    fn one_shots_ride_on_a_persistent_watch_being_added_and_fire_when_it_is_refused() {
        use curator_wire::proto::ErrorCode::{Ok, Unimplemented};
        let mut w = Watches::default();
        // An addWatch sent, not answered: a one-shot sent after it goes after it at the server.
        w.sent("/k", Intent::Recursive);
        assert!(!w.needs_server_watch("/k", Intent::Data));
        assert!(
            w.needs_server_watch("/k", Intent::Child),
            "no child events from it"
        );
        let one_shot = |w: &mut Watches, id| {
            let (sender, receiver) = oneshot::channel();
            w.sent("/k", Intent::Data);
            let pending = PendingWatch {
                path: "/k".into(),
                intent: Intent::Data,
                id,
                sender: Sender::Once(sender),
                local: true,
            };
            (pending, receiver)
        };
        let riding_id = w.next_id();
        let (riding, _r1) = one_shot(&mut w, riding_id);
        // The addWatch's reply comes first (replies come in order): the watch is set ...
        let id = w.next_id();
        let (tx, _stream) = mpsc::unbounded_channel();
        let added = PendingWatch {
            path: "/k".into(),
            intent: Intent::Recursive,
            id,
            sender: Sender::Stream(tx),
            local: false,
        };
        assert!(w.answered(added, Intent::Recursive.settle(Ok)).is_none());
        // ... and the one-shot rides on it.
        assert!(w.answered(riding, Intent::Data.settle(Ok)).is_none());
        assert!(w.lists().data.is_empty());
        assert!(w.adding.is_empty());

        // Refused this time: a one-shot that counted on it has no watch anywhere, and fires.
        w.sent("/j", Intent::Persistent);
        assert!(!w.needs_server_watch("/j", Intent::Exists));
        let (sender, mut receiver) = oneshot::channel();
        w.sent("/j", Intent::Exists);
        let stranded = PendingWatch {
            path: "/j".into(),
            intent: Intent::Exists,
            id: w.next_id(),
            sender: Sender::Once(sender),
            local: true,
        };
        let (tx, _stream) = mpsc::unbounded_channel();
        let refused = PendingWatch {
            path: "/j".into(),
            intent: Intent::Persistent,
            id: w.next_id(),
            sender: Sender::Stream(tx),
            local: false,
        };
        assert!(
            w.answered(refused, Intent::Persistent.settle(Unimplemented))
                .is_none()
        );
        let (watcher, event) = w
            .answered(stranded, Intent::Exists.settle(Ok))
            .expect("a stranded one-shot fires");
        watcher.send(event);
        let event = receiver.try_recv().unwrap();
        assert_eq!(
            (event.event_type, event.path.as_str()),
            (EventType::NodeDataChanged, "/j")
        );
        assert_eq!(
            w.len(),
            2,
            "on /k only: the recursive watch, the one-shot riding on it"
        );
        assert!(w.needs_server_watch("/j", Intent::Exists));
    }

    #[test]
    fn draining_ends_every_watcher() {
        use curator_wire::proto::ErrorCode::Ok;
        let mut w = Watches::default();
        let (_, r1) = watch(&mut w, "/a", Intent::Data, Ok);
        let (_, r2) = watch(&mut w, "/a", Intent::Recursive, Ok);
        assert_eq!(w.streams().len(), 1);
        let senders = w.drain();
        assert_eq!(senders.len(), 2);
        for sender in senders {
            sender.send(WatchedEvent::session(KeeperState::Expired));
        }
        let Receiver::Once(mut r1) = r1 else { panic!() };
        assert_eq!(r1.try_recv().unwrap().state, KeeperState::Expired);
        let Receiver::Stream(mut r2) = r2 else {
            panic!()
        };
        assert_eq!(r2.try_recv().unwrap().state, KeeperState::Expired);
        assert!(r2.try_recv().is_err(), "then the stream ends");
        assert_eq!(w.len(), 0);
    }
}
