//! One table of watches as ZooKeeper's `WatchManager` keeps it. The server keeps two tables,
//! data and child; a persistent watch is in both.
//!
//! - 3.9: per path and connection, a set of modes (one-shot, persistent, persistent
//!   recursive) that coexist (ZOOKEEPER-4466); a recursive watch is only in the data table (so
//!   it never sees `NodeChildrenChanged`, ZOOKEEPER-4475).
//! - 3.8.0: per path and connection, one mode, the last one set (a one-shot watch set on a
//!   path replaces a persistent one there, and the other way round); a recursive watch is in
//!   both tables, and a recursive watcher is not told of `NodeChildrenChanged`.

use std::collections::{BTreeMap, BTreeSet};

use crate::ConnectionId;
use crate::path;

/// A watch mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One-shot (getData, exists, getChildren).
    Standard,
    /// addWatch PERSISTENT.
    Persistent,
    /// addWatch PERSISTENT_RECURSIVE.
    Recursive,
}

/// The modes a connection has on a path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Modes {
    standard: bool,
    persistent: bool,
    recursive: bool,
}

impl Modes {
    fn flag(&mut self, mode: Mode) -> &mut bool {
        match mode {
            Mode::Standard => &mut self.standard,
            Mode::Persistent => &mut self.persistent,
            Mode::Recursive => &mut self.recursive,
        }
    }

    fn has(self, mode: Mode) -> bool {
        match mode {
            Mode::Standard => self.standard,
            Mode::Persistent => self.persistent,
            Mode::Recursive => self.recursive,
        }
    }

    fn is_empty(self) -> bool {
        self == Modes::default()
    }
}

/// A watch table.
#[derive(Debug, Default)]
pub(crate) struct Watches {
    by_path: BTreeMap<String, BTreeMap<ConnectionId, Modes>>,
    recursive: usize,
    /// One mode per path and connection, the last set (ZooKeeper 3.8.0).
    single_mode: bool,
}

impl Watches {
    /// A table whose watches keep one mode per path and connection, the last one set, as
    /// ZooKeeper 3.8.0's do (`true`), or coexisting modes as 3.9's (`false`).
    pub(crate) fn new(single_mode: bool) -> Watches {
        Watches {
            single_mode,
            ..Watches::default()
        }
    }

    /// Adds a watch (again, if already there: nothing changes; with one mode per path, it
    /// replaces the mode there).
    pub(crate) fn add(&mut self, path: &str, connection: ConnectionId, mode: Mode) {
        let modes = self
            .by_path
            .entry(path.to_owned())
            .or_default()
            .entry(connection)
            .or_default();
        if self.single_mode && !modes.has(mode) {
            if modes.recursive {
                self.recursive -= 1;
            }
            *modes = Modes::default();
        }
        let flag = modes.flag(mode);
        if !*flag {
            *flag = true;
            if mode == Mode::Recursive {
                self.recursive += 1;
            }
        }
    }

    /// Whether any connection watches `path` (ZooKeeper 3.8.0's `containsWatcher` answers
    /// this whoever asks).
    pub(crate) fn watched(&self, path: &str) -> bool {
        self.by_path.contains_key(path)
    }

    /// Whether the connection watches `path` in `mode` (any mode: `None`).
    pub(crate) fn contains(
        &self,
        path: &str,
        connection: ConnectionId,
        mode: Option<Mode>,
    ) -> bool {
        self.by_path
            .get(path)
            .and_then(|watchers| watchers.get(&connection))
            .is_some_and(|modes| mode.is_none_or(|mode| modes.has(mode)))
    }

    /// Removes the connection's watch of `path` in `mode` (every mode: `None`); whether one was
    /// there.
    pub(crate) fn remove(
        &mut self,
        path: &str,
        connection: ConnectionId,
        mode: Option<Mode>,
    ) -> bool {
        let Some(watchers) = self.by_path.get_mut(path) else {
            return false;
        };
        let Some(modes) = watchers.get_mut(&connection) else {
            return false;
        };
        let before = *modes;
        match mode {
            Some(mode) => *modes.flag(mode) = false,
            None => *modes = Modes::default(),
        }
        let after = *modes;
        if before.recursive && !after.recursive {
            self.recursive -= 1;
        }
        if after.is_empty() {
            watchers.remove(&connection);
            if watchers.is_empty() {
                self.by_path.remove(path);
            }
        }
        before != after
    }

    /// Drops every watch of a connection (it closed).
    pub(crate) fn remove_connection(&mut self, connection: ConnectionId) {
        let mut emptied = Vec::new();
        for (path, watchers) in &mut self.by_path {
            if let Some(modes) = watchers.remove(&connection) {
                if modes.recursive {
                    self.recursive -= 1;
                }
            }
            if watchers.is_empty() {
                emptied.push(path.clone());
            }
        }
        for path in emptied {
            self.by_path.remove(&path);
        }
    }

    /// The connections a change at `path` fires: every watcher of `path` (one-shot watches
    /// are used up) and the recursive watchers of its ancestors. Each connection once. A
    /// watcher whose only mode there is recursive is not told of `children_changed` (which
    /// only a 3.8.0 child table, where recursive watches are too, is triggered with).
    pub(crate) fn trigger(&mut self, path: &str, children_changed: bool) -> BTreeSet<ConnectionId> {
        let recursive_only = Modes {
            recursive: true,
            ..Modes::default()
        };
        let mut fired = BTreeSet::new();
        if let Some(watchers) = self.by_path.get_mut(path) {
            for (connection, modes) in watchers.iter_mut() {
                if children_changed && *modes == recursive_only {
                    continue;
                }
                fired.insert(*connection);
                modes.standard = false;
            }
            watchers.retain(|_, modes| !modes.is_empty());
            if watchers.is_empty() {
                self.by_path.remove(path);
            }
        }
        if self.recursive > 0 && !children_changed {
            for ancestor in path::ancestors(path) {
                if let Some(watchers) = self.by_path.get(ancestor) {
                    fired.extend(
                        watchers
                            .iter()
                            .filter(|(_, modes)| modes.recursive)
                            .map(|(connection, _)| *connection),
                    );
                }
            }
        }
        fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_shot_watches_are_used_up_and_others_stay() {
        let (a, b) = (ConnectionId(1), ConnectionId(2));
        let mut watches = Watches::default();
        watches.add("/x", a, Mode::Standard);
        watches.add("/x", a, Mode::Persistent);
        watches.add("/", b, Mode::Recursive);
        assert_eq!(watches.trigger("/x", false), BTreeSet::from([a, b]));
        assert!(!watches.contains("/x", a, Some(Mode::Standard)));
        assert!(watches.contains("/x", a, Some(Mode::Persistent)));
        assert_eq!(watches.trigger("/x/y", false), BTreeSet::from([b]));
        assert!(watches.remove("/", b, Some(Mode::Recursive)));
        assert!(!watches.remove("/", b, Some(Mode::Recursive)));
        assert_eq!(watches.trigger("/x/y", false), BTreeSet::new());
        watches.remove_connection(a);
        assert_eq!(watches.trigger("/x", false), BTreeSet::new());
    }

    #[test]
    fn with_one_mode_per_path_the_last_one_set_wins() {
        // ZooKeeper 3.8.0: a one-shot watch replaces a persistent one on the same path.
        let (a, b) = (ConnectionId(1), ConnectionId(2));
        let mut watches = Watches::new(true);
        watches.add("/x", a, Mode::Persistent);
        watches.add("/x", a, Mode::Standard);
        assert_eq!(watches.trigger("/x", false), BTreeSet::from([a]));
        assert_eq!(watches.trigger("/x", false), BTreeSet::new());
        // A recursive watch replaced by a one-shot one no longer sees the subtree.
        watches.add("/x", a, Mode::Recursive);
        assert_eq!(watches.trigger("/x/y", false), BTreeSet::from([a]));
        watches.add("/x", a, Mode::Standard);
        assert_eq!(watches.trigger("/x/y", false), BTreeSet::new());
        // A recursive watcher is not told of a change of children, at its path or below.
        watches.add("/x", b, Mode::Recursive);
        assert_eq!(watches.trigger("/x", true), BTreeSet::from([a]));
        assert_eq!(watches.trigger("/x/y", true), BTreeSet::new());
        assert!(watches.watched("/x"));
    }
}
