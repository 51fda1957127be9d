//! Where a cache keeps its nodes: a packed store, so that a cache of a big tree costs little
//! memory (under 40 bytes per node besides its name and data, where a map of paths to decoded
//! nodes costs several hundred).
//!
//! Four layers, one module each:
//! - `record`: a node is one **record** of bytes: its parent's id and its name relative to the
//!   parent, its first child's id (only once it has had children), its stat packed as
//!   variable-length integers (zxids and times as deltas from the node's own creation zxid and
//!   time, those two as deltas from the first node stored; fields that are zero or equal to
//!   another are left out and marked in a flags byte), then its data.
//! - `arena`: where records live, in chunks (growing from 256 bytes to 16 KiB, so a one-node
//!   cache stays small); records over 4 KiB get an allocation of their own. A rewritten record
//!   goes back where it was when it fits, otherwise to the end; once the bytes no longer used
//!   outnumber the bytes in use, the arena is compacted (amortised O(1) per write).
//! - `slots`: one fixed **slot** of three `u32`s per node: the record's address and the node's
//!   two siblings (children form a doubly linked list, so removing one is O(1)). A node's id is
//!   its slot's.
//! - `index`: a hash table of ids keyed by (parent, name) finds a node from its path one level
//!   at a time. Paths themselves are not stored: they are rebuilt when a node is read.
//!
//! This module puts them together as a tree of nodes by path.
//!
//! Reading a node decodes it: `get`, `children` and `snapshot` build new [`ChildData`] values
//! (one allocation for the path, one for the data) instead of sharing stored ones.
//!
//! Top-level nodes have no parent and are named by their full path: the cache's root, and a
//! node read while its parent was not cached (*detached*; it joins its parent when it is read
//! again, and is found by path meanwhile).

mod arena;
mod index;
mod record;
mod slots;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use curator_framework::{Stat, paths};

use crate::event::{CacheEvent, ChildData};
use arena::CHUNK;
use index::Index;
use record::{Record, decode, encode};
use slots::{Nodes, Slot};

/// "No node" in links.
const NONE: u32 = u32::MAX;

/// What [`Store::upsert`] did with a node read from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Upserted {
    /// The node is new to the cache: it was absent, or cached as another incarnation (deleted
    /// and created again since).
    pub(crate) fresh: bool,
    /// The cache held children for it (after the upsert).
    pub(crate) had_children: bool,
}

impl Upserted {
    const UNCHANGED_LEAF: Self = Self {
        fresh: false,
        had_children: false,
    };
}

/// The node store of one cache.
pub(crate) struct Store {
    root: Arc<str>,
    /// Node ids, keyed by (parent, name).
    index: Index,
    nodes: Nodes,
    /// The root's id (`NONE` while the root is not cached).
    root_id: u32,
    /// Top-level nodes other than the root.
    detached: usize,
    len: usize,
    /// The creation zxid and time every record's own are deltas from (the first node's).
    base: Option<(i64, i64)>,
    /// Where records are encoded before they are stored.
    scratch: Vec<u8>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("root", &self.root)
            .field("len", &self.len)
            .field("detached", &self.detached)
            .field("arena", &self.nodes.arena_usage())
            .finish()
    }
}

/// What [`Store::rewrite`] replaces in a record (`None`: kept).
#[derive(Default)]
struct Change<'a> {
    parent: Option<u32>,
    first_child: Option<u32>,
    name: Option<&'a str>,
    stat: Option<&'a Stat>,
    data: Option<Option<&'a [u8]>>,
}

impl<'a> Change<'a> {
    /// A new stat and data.
    fn values(stat: &'a Stat, data: Option<&'a [u8]>) -> Self {
        Self {
            stat: Some(stat),
            data: Some(data),
            ..Self::default()
        }
    }
}

impl Store {
    /// An empty store for a cache of `root`.
    pub(crate) fn new(root: Arc<str>) -> Self {
        Self {
            root,
            index: Index::default(),
            nodes: Nodes::default(),
            root_id: NONE,
            detached: 0,
            len: 0,
            base: None,
            scratch: Vec::new(),
        }
    }

    /// How many nodes are cached.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether `path` is cached.
    #[cfg(test)]
    pub(crate) fn contains(&self, path: &str) -> bool {
        self.find(path).is_some()
    }

    /// The cached node at `path`.
    pub(crate) fn get(&self, path: &str) -> Option<ChildData> {
        let id = self.find(path)?;
        Some(self.child_data(id, Arc::from(path)))
    }

    /// The cached children of `path`, sorted by path.
    pub(crate) fn children(&self, path: &str) -> Vec<ChildData> {
        let Some(id) = self.find(path) else {
            return Vec::new();
        };
        let mut out: Vec<ChildData> = self
            .nodes
            .children(id)
            .map(|child| self.child_data(child, self.child_path(path, child)))
            .collect();
        out.sort_by(|a, b| a.path().cmp(b.path()));
        out
    }

    /// The full paths of the cached children of `path`; `None` when `path` is not cached.
    pub(crate) fn child_paths(&self, path: &str) -> Option<Vec<Arc<str>>> {
        let id = self.find(path)?;
        Some(
            self.nodes
                .children(id)
                .map(|child| self.child_path(path, child))
                .collect(),
        )
    }

    /// Every cached node, sorted by path.
    pub(crate) fn snapshot(&self) -> Vec<ChildData> {
        let mut out = Vec::with_capacity(self.len);
        let mut stack: Vec<(u32, Arc<str>)> = self
            .nodes
            .ids()
            .filter(|&id| self.nodes.head(id).parent == NONE)
            .map(|id| (id, Arc::from(self.name(id))))
            .collect();
        while let Some((id, path)) = stack.pop() {
            stack.extend(
                self.nodes
                    .children(id)
                    .map(|child| (child, self.child_path(&path, child))),
            );
            out.push(self.child_data(id, path));
        }
        out.sort_by(|a, b| a.path().cmp(b.path()));
        out
    }

    /// Stores a node read from the server and pushes the events that describe the difference
    /// with what was cached.
    pub(crate) fn upsert(
        &mut self,
        path: &Arc<str>,
        stat: Stat,
        data: Option<Arc<[u8]>>,
        events: &mut Vec<CacheEvent>,
    ) -> Upserted {
        let Some(id) = self.find(path) else {
            self.insert(path, &stat, data.as_deref());
            events.push(CacheEvent::Created {
                node: ChildData::shared(Arc::clone(path), stat, data),
            });
            return Upserted {
                fresh: true,
                had_children: false,
            };
        };
        // A node cached while its parent was missing joins the parent when read again.
        self.attach(id, path);
        let had_children = self.nodes.first_child(id) != NONE;
        let cached = self.record(id).stat;
        if cached.czxid == stat.czxid {
            if stat.mzxid > cached.mzxid {
                let old = self.child_data(id, Arc::clone(path));
                self.rewrite(id, Change::values(&stat, data.as_deref()));
                events.push(CacheEvent::Changed {
                    old,
                    node: ChildData::shared(Arc::clone(path), stat, data),
                });
            } else if stat.mzxid == cached.mzxid && stat.pzxid >= cached.pzxid && stat != cached {
                // Same data; keep the newer children counters.
                let change = Change {
                    stat: Some(&stat),
                    ..Change::default()
                };
                self.rewrite(id, change);
            }
            return Upserted {
                had_children,
                ..Upserted::UNCHANGED_LEAF
            };
        }
        if stat.czxid < cached.czxid {
            // An older incarnation: a stale read.
            return Upserted {
                had_children,
                ..Upserted::UNCHANGED_LEAF
            };
        }
        // Deleted and created again since: children of the old incarnation are gone; children
        // created after the new one stay.
        let mut older = self.children_by_name(id);
        older.retain(|&child| self.record(child).stat.czxid < stat.czxid);
        for child in older.into_iter().rev() {
            let child_path = self.child_path(path, child);
            self.unlink(child);
            self.remove_below(child, child_path, events);
        }
        let old = self.child_data(id, Arc::clone(path));
        self.rewrite(id, Change::values(&stat, data.as_deref()));
        events.push(CacheEvent::Deleted { old });
        events.push(CacheEvent::Created {
            node: ChildData::shared(Arc::clone(path), stat, data),
        });
        Upserted {
            fresh: true,
            had_children: self.nodes.first_child(id) != NONE,
        }
    }

    /// Removes `path` and everything cached below it, pushing deletions deepest first (siblings
    /// in path order).
    pub(crate) fn remove_subtree(&mut self, path: &str, events: &mut Vec<CacheEvent>) {
        if let Some(id) = self.find(path) {
            self.unlink(id);
            self.remove_below(id, Arc::from(path), events);
        }
    }

    /// The bytes the store holds on the heap (slots, index, arena), for tests.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.nodes.heap_bytes() + self.index.heap_bytes()
    }

    // ---- finding nodes ----

    /// The id of the cached node at `path`.
    fn find(&self, path: &str) -> Option<u32> {
        let root = &*self.root;
        if path == root {
            return (self.root_id != NONE).then_some(self.root_id);
        }
        let below = if root == "/" {
            path.strip_prefix('/')
        } else {
            path.strip_prefix(root)
                .and_then(|rest| rest.strip_prefix('/'))
        };
        let Some(below) = below else {
            // Not below the root (the engine stores none): only ever a top-level node.
            return self.find_child(NONE, path.as_bytes());
        };
        let (mut id, rest) = match self.find_detached(path) {
            Some(found) => found,
            None => (self.root_id, below),
        };
        for name in rest.split('/').filter(|name| !name.is_empty()) {
            if id == NONE {
                return None;
            }
            id = self.find_child(id, name.as_bytes())?;
        }
        (id != NONE).then_some(id)
    }

    /// The deepest detached node that is `path` or one of its ancestors below the root, with
    /// the rest of `path` below it.
    fn find_detached<'p>(&self, path: &'p str) -> Option<(u32, &'p str)> {
        if self.detached == 0 {
            return None;
        }
        let mut end = path.len();
        while end > self.root.len() {
            if let Some(id) = self.find_child(NONE, &path.as_bytes()[..end]) {
                return Some((id, &path[end..]));
            }
            end = path[..end].rfind('/')?;
        }
        None
    }

    fn find_child(&self, parent: u32, name: &[u8]) -> Option<u32> {
        self.index.find(&self.nodes, parent, name)
    }

    // ---- reading nodes ----

    fn record(&self, id: u32) -> Record<'_> {
        decode(self.nodes.bytes(id), self.base.unwrap_or_default()).0
    }

    fn name(&self, id: u32) -> &str {
        std::str::from_utf8(self.nodes.head(id).name).expect("names are stored from strings")
    }

    fn child_path(&self, parent_path: &str, child: u32) -> Arc<str> {
        Arc::from(paths::join(parent_path, self.name(child)))
    }

    fn child_data(&self, id: u32, path: Arc<str>) -> ChildData {
        let record = self.record(id);
        ChildData::shared(path, record.stat, record.data.map(Arc::from))
    }

    // ---- changing nodes ----

    /// Stores a node that is not cached yet, under its parent when that is cached.
    fn insert(&mut self, path: &str, stat: &Stat, data: Option<&[u8]>) {
        let parent = if path == &*self.root {
            None
        } else {
            paths::parent(path).and_then(|parent| self.find(parent))
        };
        let (parent, name) = match parent {
            Some(parent) => (parent, paths::node_name(path)),
            None => (NONE, path),
        };
        let base = *self.base.get_or_insert((stat.czxid, stat.ctime));
        let head = (parent, None, name.as_bytes());
        encode(&mut self.scratch, base, head, stat, data);
        let id = self.nodes.insert(&self.scratch);
        self.trim_scratch();
        self.link(id);
        self.index.insert(&self.nodes, id, parent, name.as_bytes());
        self.len += 1;
    }

    /// Moves a detached node under its parent, when that is cached now.
    fn attach(&mut self, id: u32, path: &str) {
        if id == self.root_id || self.nodes.head(id).parent != NONE {
            return;
        }
        let Some(parent) = paths::parent(path).and_then(|parent| self.find(parent)) else {
            return;
        };
        self.unlink(id);
        self.index.remove(&self.nodes, id);
        let name = paths::node_name(path);
        self.rewrite(
            id,
            Change {
                parent: Some(parent),
                name: Some(name),
                ..Change::default()
            },
        );
        self.link(id);
        self.index.insert(&self.nodes, id, parent, name.as_bytes());
    }

    /// Points a node at its first child: in place once the record has room for it, otherwise
    /// by writing the record again with room.
    fn set_first_child(&mut self, id: u32, child: u32) {
        if let Some((_, at)) = self.nodes.head(id).first_child {
            self.nodes.patch_first_child(id, at, child);
        } else if child != NONE {
            let change = Change {
                first_child: Some(child),
                ..Change::default()
            };
            self.rewrite(id, change);
        }
    }

    /// Writes `id`'s record again with the parts `change` gives replaced.
    fn rewrite(&mut self, id: u32, change: Change<'_>) {
        let base = self.base.unwrap_or_default();
        let (record, _) = decode(self.nodes.bytes(id), base);
        let head = (
            change.parent.unwrap_or(record.head.parent),
            change
                .first_child
                .or(record.head.first_child.map(|(child, _)| child)),
            change.name.map_or(record.head.name, str::as_bytes),
        );
        let stat = change.stat.unwrap_or(&record.stat);
        let data = change.data.unwrap_or(record.data);
        encode(&mut self.scratch, base, head, stat, data);
        self.nodes.rewrite(id, &self.scratch);
        self.trim_scratch();
    }

    /// Does not keep a big buffer after a big record.
    fn trim_scratch(&mut self) {
        if self.scratch.capacity() > CHUNK {
            self.scratch = Vec::new();
        }
    }

    /// Puts `id` at the head of its parent's children (or counts it as top-level).
    fn link(&mut self, id: u32) {
        let parent = self.nodes.head(id).parent;
        if parent == NONE {
            if self.name(id) == &*self.root {
                self.root_id = id;
            } else {
                self.detached += 1;
            }
            return;
        }
        let first = self.nodes.first_child(parent);
        let slot = self.nodes.slot_mut(id);
        slot.next = first;
        slot.prev = NONE;
        if first != NONE {
            self.nodes.slot_mut(first).prev = id;
        }
        self.set_first_child(parent, id);
    }

    /// Takes `id` out of its parent's children (or off the top level). Its own children stay.
    fn unlink(&mut self, id: u32) {
        let parent = self.nodes.head(id).parent;
        if parent == NONE {
            if id == self.root_id {
                self.root_id = NONE;
            } else {
                self.detached -= 1;
            }
            return;
        }
        let Slot { next, prev, .. } = *self.nodes.slot(id);
        if prev == NONE {
            self.set_first_child(parent, next);
        } else {
            self.nodes.slot_mut(prev).next = next;
        }
        if next != NONE {
            self.nodes.slot_mut(next).prev = prev;
        }
        let slot = self.nodes.slot_mut(id);
        slot.next = NONE;
        slot.prev = NONE;
    }

    /// Frees an unlinked node and everything below it, pushing their deletions deepest first.
    fn remove_below(&mut self, id: u32, path: Arc<str>, events: &mut Vec<CacheEvent>) {
        // (node, its path, its children not visited yet, last in path order first)
        let mut stack = vec![(id, path, self.children_by_name(id))];
        while let Some((_, path, pending)) = stack.last_mut() {
            if let Some(child) = pending.pop() {
                let child_path = self.child_path(path, child);
                let grandchildren = self.children_by_name(child);
                stack.push((child, child_path, grandchildren));
                continue;
            }
            let (id, path, _) = stack.pop().expect("not empty");
            events.push(CacheEvent::Deleted {
                old: self.child_data(id, path),
            });
            self.free(id);
        }
        self.nodes.compact_if_sparse();
    }

    /// `id`'s children, the last name first.
    fn children_by_name(&self, id: u32) -> Vec<u32> {
        let mut children: Vec<u32> = self.nodes.children(id).collect();
        children.sort_by(|a, b| self.nodes.head(*b).name.cmp(self.nodes.head(*a).name));
        children
    }

    /// Frees a node whose children are freed already.
    fn free(&mut self, id: u32) {
        self.index.remove(&self.nodes, id);
        self.nodes.remove(id);
        self.len -= 1;
    }
}
