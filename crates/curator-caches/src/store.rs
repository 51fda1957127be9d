//! Where a cache keeps its nodes: a packed store, so that a cache of a big tree costs little
//! memory (under 40 bytes per node besides its name and data, where a map of paths to decoded
//! nodes costs several hundred).
//!
//! - A node is one **record** of bytes in an arena: its parent's id and its name relative to
//!   the parent, its first child's id (only once it has had children), its stat packed as
//!   variable-length integers (zxids and times as deltas from the node's own creation zxid and
//!   time, those two as deltas from the first node stored; fields that are zero or equal to
//!   another are left out and marked in a flags byte), then its data.
//! - And one fixed **slot** of three `u32`s: the record's address and the node's two siblings
//!   (children form a doubly linked list, so removing one is O(1)). A node's id is its slot's.
//! - A hash table of ids keyed by (parent, name) finds a node from its path one level at a
//!   time. Paths themselves are not stored: they are rebuilt when a node is read.
//!
//! The arena is a list of chunks (growing from 256 bytes to 16 KiB, so a one-node cache stays
//! small); records over 4 KiB get an allocation of their own. A rewritten record goes back where
//! it was when it fits, otherwise to the end; once the bytes no longer used outnumber the bytes
//! in use, the arena is compacted (amortised O(1) per write).
//!
//! Reading a node decodes it: `get`, `children` and `snapshot` build new [`ChildData`] values
//! (one allocation for the path, one for the data) instead of sharing stored ones.
//!
//! Top-level nodes have no parent and are named by their full path: the cache's root, and a
//! node read while its parent was not cached (*detached*; it joins its parent when it is read
//! again, and is found by path meanwhile).

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;

use curator_framework::{Stat, paths};
use hashbrown::HashTable;

use crate::event::{CacheEvent, ChildData};

/// "No node" in links.
const NONE: u32 = u32::MAX;

/// Slots per page (pages after the first are allocated whole).
const PAGE_BITS: u32 = 10;
const PAGE: usize = 1 << PAGE_BITS;

/// The largest arena chunk, and the bits of an address that locate a record inside its chunk.
const CHUNK_BITS: u32 = 14;
const CHUNK: usize = 1 << CHUNK_BITS;
/// The first chunk's size; each next one doubles up to `CHUNK`.
const FIRST_CHUNK: usize = 256;
/// Records longer than this get an allocation of their own.
const MAX_SMALL: usize = CHUNK / 4;
/// Marks the address of a record with its own allocation (the rest is its index in `big`).
const BIG: u32 = 1 << 31;
/// Chunks addressable below `BIG`.
const MAX_CHUNKS: usize = (BIG >> CHUNK_BITS) as usize;

// Record flags: which optional fields follow.
const HAS_DATA: u8 = 1;
const DATA_LENGTH: u8 = 1 << 1;
const EPHEMERAL: u8 = 1 << 2;
const MZXID: u8 = 1 << 3;
const PZXID: u8 = 1 << 4;
const MTIME: u8 = 1 << 5;
const VERSIONS: u8 = 1 << 6;
const NUM_CHILDREN: u8 = 1 << 7;

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The record's address (`NONE` for a free slot).
    rec: u32,
    /// The next sibling (for a free slot: the next free slot).
    next: u32,
    prev: u32,
}

/// The node store of one cache.
pub(crate) struct Store {
    root: Arc<str>,
    /// Node ids, keyed by (parent, name).
    index: HashTable<u32>,
    hasher: RandomState,
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
            .field("arena_live", &self.nodes.arena.live)
            .field("arena_dead", &self.nodes.arena.dead)
            .finish()
    }
}

/// Slots and records.
#[derive(Default)]
struct Nodes {
    pages: Vec<Vec<Slot>>,
    /// The first free slot.
    free: u32,
    arena: Arena,
}

#[derive(Default)]
struct Arena {
    chunks: Vec<Vec<u8>>,
    big: Vec<Box<[u8]>>,
    big_free: Vec<u32>,
    /// Bytes of chunk records in use.
    live: usize,
    /// Bytes of chunks no longer in use (old records, unused chunk tails).
    dead: usize,
}

/// The links and name at the start of a record.
struct Head<'a> {
    parent: u32,
    /// The first child's id and where it is written, once the node has had children.
    first_child: Option<(u32, usize)>,
    name: &'a [u8],
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

/// A decoded record, borrowing its name and data from the arena.
struct Record<'a> {
    head: Head<'a>,
    stat: Stat,
    data: Option<&'a [u8]>,
}

impl Store {
    /// An empty store for a cache of `root`.
    pub(crate) fn new(root: Arc<str>) -> Self {
        Self {
            root,
            index: HashTable::new(),
            hasher: RandomState::new(),
            nodes: Nodes {
                free: NONE,
                ..Nodes::default()
            },
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
        let mut stack: Vec<(u32, Arc<str>)> = (0..self.nodes.slot_count())
            .filter(|&id| self.nodes.slot(id).rec != NONE && self.nodes.head(id).parent == NONE)
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
    /// with what was cached. Returns whether the node is new to the cache (absent, or a
    /// different incarnation), and whether the cache held children for it.
    pub(crate) fn upsert(
        &mut self,
        path: &Arc<str>,
        stat: Stat,
        data: Option<Arc<[u8]>>,
        events: &mut Vec<CacheEvent>,
    ) -> (bool, bool) {
        let Some(id) = self.find(path) else {
            self.insert(path, &stat, data.as_deref());
            events.push(CacheEvent::Created {
                node: ChildData::shared(Arc::clone(path), stat, data),
            });
            return (true, false);
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
            return (false, had_children);
        }
        if stat.czxid < cached.czxid {
            return (false, had_children); // an older incarnation: a stale read
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
        (true, self.nodes.first_child(id) != NONE)
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
        let slots: usize = self.nodes.pages.iter().map(|p| p.capacity()).sum();
        let chunks: usize = self.nodes.arena.chunks.iter().map(|c| c.capacity()).sum();
        let big: usize = self.nodes.arena.big.iter().map(|b| b.len()).sum();
        // hashbrown: one control byte per bucket, buckets a power of two at most 7/8 full.
        let buckets = (self.index.capacity() * 8 / 7).next_power_of_two();
        slots * size_of::<Slot>()
            + buckets * (size_of::<u32>() + 1)
            + chunks
            + big
            + self.nodes.pages.capacity() * size_of::<Vec<Slot>>()
            + self.nodes.arena.chunks.capacity() * size_of::<Vec<u8>>()
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
        let hash = self.hasher.hash_one((parent, name));
        self.index
            .find(hash, |&id| {
                let head = self.nodes.head(id);
                head.parent == parent && head.name == name
            })
            .copied()
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
        let rec = self.nodes.arena.alloc(&self.scratch);
        self.trim_scratch();
        let id = self.nodes.alloc_slot(Slot {
            rec,
            next: NONE,
            prev: NONE,
        });
        self.link(id);
        self.index_insert(id, parent, name.as_bytes());
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
        self.index_remove(id);
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
        self.index_insert(id, parent, name.as_bytes());
    }

    /// Points a node at its first child: in place once the record has room for it, otherwise
    /// by writing the record again with room.
    fn set_first_child(&mut self, id: u32, child: u32) {
        if let Some((_, at)) = self.nodes.head(id).first_child {
            let rec = self.nodes.slot(id).rec;
            self.nodes.arena.patch(rec, at, child);
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
        self.store_scratch(id);
    }

    /// Stores the record in `scratch` as `id`'s.
    fn store_scratch(&mut self, id: u32) {
        let old = self.nodes.slot(id).rec;
        let old_len = record_len(self.nodes.arena.bytes(old));
        let rec = self.nodes.arena.replace(old, old_len, &self.scratch);
        self.nodes.slot_mut(id).rec = rec;
        self.trim_scratch();
        self.compact_if_sparse();
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
        self.compact_if_sparse();
    }

    /// `id`'s children, the last name first.
    fn children_by_name(&self, id: u32) -> Vec<u32> {
        let mut children: Vec<u32> = self.nodes.children(id).collect();
        children.sort_by(|a, b| self.nodes.head(*b).name.cmp(self.nodes.head(*a).name));
        children
    }

    /// Frees a node whose children are freed already.
    fn free(&mut self, id: u32) {
        self.index_remove(id);
        let rec = self.nodes.slot(id).rec;
        let len = record_len(self.nodes.arena.bytes(rec));
        self.nodes.arena.free(rec, len);
        self.nodes.free_slot(id);
        self.len -= 1;
    }

    fn index_insert(&mut self, id: u32, parent: u32, name: &[u8]) {
        let hash = self.hasher.hash_one((parent, name));
        let (nodes, hasher) = (&self.nodes, &self.hasher);
        self.index.insert_unique(hash, id, |&other| {
            let head = nodes.head(other);
            hasher.hash_one((head.parent, head.name))
        });
    }

    fn index_remove(&mut self, id: u32) {
        let head = self.nodes.head(id);
        let hash = self.hasher.hash_one((head.parent, head.name));
        if let Ok(entry) = self.index.find_entry(hash, |&other| other == id) {
            entry.remove();
        }
    }

    /// Copies the records in use to new chunks once the unused bytes outnumber them.
    fn compact_if_sparse(&mut self) {
        let arena = &self.nodes.arena;
        if arena.dead <= arena.live || arena.dead < CHUNK {
            return;
        }
        let old = std::mem::take(&mut self.nodes.arena.chunks);
        self.nodes.arena.live = 0;
        self.nodes.arena.dead = 0;
        for id in 0..self.nodes.slot_count() {
            let rec = self.nodes.slot(id).rec;
            if rec == NONE || rec & BIG != 0 {
                continue;
            }
            let (chunk, at) = chunk_address(rec);
            let bytes = &old[chunk][at..];
            let len = record_len(bytes);
            let rec = self.nodes.arena.alloc(&bytes[..len]);
            self.nodes.slot_mut(id).rec = rec;
        }
    }
}

impl Nodes {
    fn slot_count(&self) -> u32 {
        match self.pages.last() {
            None => 0,
            Some(last) => ((self.pages.len() - 1) * PAGE + last.len()) as u32,
        }
    }

    fn slot(&self, id: u32) -> &Slot {
        &self.pages[(id >> PAGE_BITS) as usize][id as usize & (PAGE - 1)]
    }

    fn slot_mut(&mut self, id: u32) -> &mut Slot {
        &mut self.pages[(id >> PAGE_BITS) as usize][id as usize & (PAGE - 1)]
    }

    fn bytes(&self, id: u32) -> &[u8] {
        self.arena.bytes(self.slot(id).rec)
    }

    fn head(&self, id: u32) -> Head<'_> {
        decode_head(self.bytes(id)).0
    }

    fn first_child(&self, id: u32) -> u32 {
        self.head(id).first_child.map_or(NONE, |(child, _)| child)
    }

    fn children(&self, id: u32) -> impl Iterator<Item = u32> + '_ {
        let first = self.first_child(id);
        std::iter::successors((first != NONE).then_some(first), |&child| {
            let next = self.slot(child).next;
            (next != NONE).then_some(next)
        })
    }

    fn alloc_slot(&mut self, slot: Slot) -> u32 {
        if self.free != NONE {
            let id = self.free;
            self.free = self.slot(id).next;
            *self.slot_mut(id) = slot;
            return id;
        }
        match self.pages.last_mut() {
            // The first page grows from a few slots (doubling up to a page), so that a small
            // cache stays small; the others are allocated whole.
            Some(last) if last.len() < PAGE => {
                if last.len() == last.capacity() {
                    last.reserve_exact(last.len().max(4));
                }
            }
            _ => self
                .pages
                .push(Vec::with_capacity(if self.pages.is_empty() {
                    4
                } else {
                    PAGE
                })),
        }
        let id = self.slot_count();
        assert!(id < NONE, "a cache holds fewer than 2^32 - 1 nodes");
        self.pages.last_mut().expect("pushed").push(slot);
        id
    }

    fn free_slot(&mut self, id: u32) {
        *self.slot_mut(id) = Slot {
            rec: NONE,
            next: self.free,
            prev: NONE,
        };
        self.free = id;
    }
}

/// The chunk and the offset in it of a record stored in a chunk.
fn chunk_address(rec: u32) -> (usize, usize) {
    ((rec >> CHUNK_BITS) as usize, rec as usize & (CHUNK - 1))
}

impl Arena {
    /// The bytes from the record at `rec` on (its record first).
    fn bytes(&self, rec: u32) -> &[u8] {
        if rec & BIG != 0 {
            &self.big[(rec & !BIG) as usize]
        } else {
            let (chunk, at) = chunk_address(rec);
            &self.chunks[chunk][at..]
        }
    }

    /// Writes `value` at offset `at` of the record at `rec`.
    fn patch(&mut self, rec: u32, at: usize, value: u32) {
        let bytes = if rec & BIG != 0 {
            &mut self.big[(rec & !BIG) as usize][at..]
        } else {
            let (chunk, start) = chunk_address(rec);
            &mut self.chunks[chunk][start + at..]
        };
        bytes[..4].copy_from_slice(&value.to_le_bytes());
    }

    /// Stores a record; returns its address.
    fn alloc(&mut self, record: &[u8]) -> u32 {
        let len = record.len();
        if len > MAX_SMALL {
            return self.alloc_big(record);
        }
        let fits = self
            .chunks
            .last()
            .is_some_and(|chunk| chunk.capacity() - chunk.len() >= len);
        if !fits {
            if self.chunks.len() >= MAX_CHUNKS {
                return self.alloc_big(record);
            }
            if let Some(last) = self.chunks.last() {
                self.dead += last.capacity() - last.len();
            }
            let size = (FIRST_CHUNK << self.chunks.len().min(8)).min(CHUNK);
            self.chunks.push(Vec::with_capacity(size.max(len)));
        }
        let index = self.chunks.len() - 1;
        let chunk = &mut self.chunks[index];
        let at = chunk.len();
        chunk.extend_from_slice(record);
        self.live += len;
        ((index as u32) << CHUNK_BITS) | at as u32
    }

    fn alloc_big(&mut self, record: &[u8]) -> u32 {
        let boxed: Box<[u8]> = record.into();
        match self.big_free.pop() {
            Some(index) => {
                self.big[index as usize] = boxed;
                index | BIG
            }
            None => {
                self.big.push(boxed);
                (self.big.len() - 1) as u32 | BIG
            }
        }
    }

    /// Replaces the record at `old` (`old_len` bytes) with `record`: in place when it fits.
    fn replace(&mut self, old: u32, old_len: usize, record: &[u8]) -> u32 {
        let len = record.len();
        if old & BIG == 0 && len <= old_len {
            let (chunk, at) = chunk_address(old);
            let chunk = &mut self.chunks[chunk];
            chunk[at..at + len].copy_from_slice(record);
            self.live -= old_len - len;
            self.dead += old_len - len;
            return old;
        }
        self.free(old, old_len);
        self.alloc(record)
    }

    fn free(&mut self, rec: u32, len: usize) {
        if rec & BIG != 0 {
            let index = rec & !BIG;
            self.big[index as usize] = Box::default();
            self.big_free.push(index);
        } else {
            self.live -= len;
            self.dead += len;
        }
    }
}

// ---- the record encoding ----
//
// flags: u8
// varint: name length << 1 | 1 when the first child's id follows
// first child: u32, little-endian (patched in place)
// varint: parent id + 1 (0: none)
// name
// zigzag varints: czxid - base zxid, ctime - base time, then as the flags say: mzxid - czxid,
//   pzxid - czxid, mtime - ctime, version, cversion and aversion, numChildren, dataLength (when
//   it is not the data's length)
// ephemeralOwner: 8 bytes, little-endian, when not 0
// data: varint length, bytes, when kept

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_signed(out: &mut Vec<u8>, value: i64) {
    put_varint(out, ((value << 1) ^ (value >> 63)) as u64);
}

/// Encodes a record into `out` (cleared first). `base`: the store's creation zxid and time;
/// `head`: the parent, the first child (`None`: no room for one), the name.
fn encode(
    out: &mut Vec<u8>,
    base: (i64, i64),
    (parent, first_child, name): (u32, Option<u32>, &[u8]),
    stat: &Stat,
    data: Option<&[u8]>,
) {
    out.clear();
    let implied_length = data.map_or(0, |d| d.len() as i64);
    let mut flags = 0;
    let mut set = |flag: u8, on: bool| {
        if on {
            flags |= flag;
        }
    };
    set(HAS_DATA, data.is_some());
    set(DATA_LENGTH, i64::from(stat.data_length) != implied_length);
    set(EPHEMERAL, stat.ephemeral_owner != 0);
    set(MZXID, stat.mzxid != stat.czxid);
    set(PZXID, stat.pzxid != stat.czxid);
    set(MTIME, stat.mtime != stat.ctime);
    set(
        VERSIONS,
        stat.version != 0 || stat.cversion != 0 || stat.aversion != 0,
    );
    set(NUM_CHILDREN, stat.num_children != 0);
    out.push(flags);
    put_varint(
        out,
        (name.len() as u64) << 1 | u64::from(first_child.is_some()),
    );
    if let Some(child) = first_child {
        out.extend_from_slice(&child.to_le_bytes());
    }
    put_varint(out, u64::from(parent.wrapping_add(1)));
    out.extend_from_slice(name);
    put_signed(out, stat.czxid.wrapping_sub(base.0));
    put_signed(out, stat.ctime.wrapping_sub(base.1));
    if flags & MZXID != 0 {
        put_signed(out, stat.mzxid.wrapping_sub(stat.czxid));
    }
    if flags & PZXID != 0 {
        put_signed(out, stat.pzxid.wrapping_sub(stat.czxid));
    }
    if flags & MTIME != 0 {
        put_signed(out, stat.mtime.wrapping_sub(stat.ctime));
    }
    if flags & VERSIONS != 0 {
        put_signed(out, stat.version.into());
        put_signed(out, stat.cversion.into());
        put_signed(out, stat.aversion.into());
    }
    if flags & NUM_CHILDREN != 0 {
        put_signed(out, stat.num_children.into());
    }
    if flags & DATA_LENGTH != 0 {
        put_signed(out, stat.data_length.into());
    }
    if flags & EPHEMERAL != 0 {
        out.extend_from_slice(&stat.ephemeral_owner.to_le_bytes());
    }
    if let Some(data) = data {
        put_varint(out, data.len() as u64);
        out.extend_from_slice(data);
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> u64 {
        let mut value = 0u64;
        let mut shift = 0;
        loop {
            let byte = self.bytes[self.at];
            self.at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return value;
            }
            shift += 7;
        }
    }

    fn signed(&mut self) -> i64 {
        let value = self.varint();
        ((value >> 1) as i64) ^ -((value & 1) as i64)
    }

    /// A value written from an `i32`.
    fn small(&mut self) -> i32 {
        self.signed() as i32
    }

    fn take(&mut self, len: usize) -> &'a [u8] {
        let taken = &self.bytes[self.at..self.at + len];
        self.at += len;
        taken
    }
}

/// A record's links and name, and the reader positioned after them.
fn decode_head(bytes: &[u8]) -> (Head<'_>, Reader<'_>) {
    let mut reader = Reader { bytes, at: 1 };
    let name_len = reader.varint();
    let first_child = (name_len & 1 == 1).then(|| {
        let at = reader.at;
        let id = u32::from_le_bytes(reader.take(4).try_into().expect("four bytes"));
        (id, at)
    });
    let parent = (reader.varint() as u32).wrapping_sub(1);
    let name = reader.take((name_len >> 1) as usize);
    let head = Head {
        parent,
        first_child,
        name,
    };
    (head, reader)
}

/// Decodes the record at the start of `bytes`; returns it and its length.
fn decode(bytes: &[u8], base: (i64, i64)) -> (Record<'_>, usize) {
    let flags = bytes[0];
    let (head, mut reader) = decode_head(bytes);
    let czxid = reader.signed().wrapping_add(base.0);
    let ctime = reader.signed().wrapping_add(base.1);
    let mut stat = Stat {
        czxid,
        mzxid: czxid,
        pzxid: czxid,
        ctime,
        mtime: ctime,
        ..Stat::default()
    };
    if flags & MZXID != 0 {
        stat.mzxid = reader.signed().wrapping_add(czxid);
    }
    if flags & PZXID != 0 {
        stat.pzxid = reader.signed().wrapping_add(czxid);
    }
    if flags & MTIME != 0 {
        stat.mtime = reader.signed().wrapping_add(ctime);
    }
    if flags & VERSIONS != 0 {
        stat.version = reader.small();
        stat.cversion = reader.small();
        stat.aversion = reader.small();
    }
    if flags & NUM_CHILDREN != 0 {
        stat.num_children = reader.small();
    }
    let explicit_length = (flags & DATA_LENGTH != 0).then(|| reader.small());
    if flags & EPHEMERAL != 0 {
        let bytes: [u8; 8] = reader.take(8).try_into().expect("eight bytes");
        stat.ephemeral_owner = i64::from_le_bytes(bytes);
    }
    let data = (flags & HAS_DATA != 0).then(|| {
        let len = reader.varint() as usize;
        reader.take(len)
    });
    stat.data_length =
        explicit_length.unwrap_or_else(|| data.map_or(0, |d| d.len()).try_into().unwrap_or(0));
    (Record { head, stat, data }, reader.at)
}

/// The length of the record at the start of `bytes`.
fn record_len(bytes: &[u8]) -> usize {
    decode(bytes, (0, 0)).1
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap, HashSet};

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    fn stat(czxid: i64, mzxid: i64) -> Stat {
        Stat {
            czxid,
            mzxid,
            pzxid: czxid,
            ..Stat::default()
        }
    }

    fn paths_of(events: &[CacheEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| e.path().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn records_round_trip() {
        let base = (0x1_0000_0100, 1_700_000_000_000);
        let stats = [
            Stat::default(),
            stat(0x1_0000_0105, 0x1_0000_0105),
            Stat {
                czxid: 0x1_0000_0105,
                mzxid: 0x2_0000_0001,
                pzxid: 0x1_0000_0107,
                ctime: 1_700_000_000_123,
                mtime: 1_700_000_009_999,
                version: 7,
                cversion: -1,
                aversion: i32::MAX,
                ephemeral_owner: 0x1234_5678_9abc_def0,
                data_length: 3,
                num_children: 12,
            },
            Stat {
                czxid: 5,
                ctime: 1,
                data_length: 1 << 20,
                version: i32::MIN,
                ..Stat::default()
            },
        ];
        let mut out = Vec::new();
        for stat in stats {
            for data in [None, Some(&b""[..]), Some(&b"abc"[..])] {
                for (parent, first_child, name) in [
                    (NONE, None, &b"/a/b"[..]),
                    (0, Some(NONE), b""),
                    (7, Some(1 << 20), b"n042"),
                    (1 << 30, None, "é/x".as_bytes()),
                ] {
                    encode(&mut out, base, (parent, first_child, name), &stat, data);
                    out.extend_from_slice(b"trailing");
                    let (record, len) = decode(&out, base);
                    assert_eq!(len, out.len() - 8);
                    assert_eq!(record.head.name, name);
                    assert_eq!(record.head.parent, parent);
                    assert_eq!(record.head.first_child.map(|(id, _)| id), first_child);
                    assert_eq!(record.data, data);
                    assert_eq!(record.stat, stat, "{stat:?} {data:?}");
                }
            }
        }
    }

    #[test]
    fn a_leaf_costs_a_few_bytes_besides_its_name_and_data() {
        let base = (0x1_0000_0100, 1_700_000_000_000);
        let leaf = Stat {
            czxid: 0x1_0000_2000,
            mzxid: 0x1_0000_2000,
            pzxid: 0x1_0000_2000,
            ctime: 1_700_000_000_900,
            mtime: 1_700_000_000_900,
            data_length: 32,
            ..Stat::default()
        };
        let mut out = Vec::new();
        encode(&mut out, base, (57, None, b"n042"), &leaf, Some(&[7; 32]));
        // flags, name (1 + 4), parent (1), czxid and ctime (2 each: deltas of 7,936 and 900),
        // data (1 + 32)
        assert_eq!(out.len(), 1 + 5 + 1 + 2 + 2 + 33);
    }

    #[test]
    fn upsert_emits_only_differences() {
        let mut store = Store::new(Arc::from("/a"));
        let mut events = Vec::new();
        let a: Arc<str> = Arc::from("/a");
        let b: Arc<str> = Arc::from("/a/b");
        store.upsert(&a, stat(1, 1), None, &mut events);
        store.upsert(&b, stat(2, 2), None, &mut events);
        assert_eq!(store.child_paths("/a").unwrap(), vec![Arc::clone(&b)]);
        // The same state again, and an older one: nothing.
        store.upsert(&a, stat(1, 1), None, &mut events);
        store.upsert(&b, stat(2, 2), None, &mut events);
        assert_eq!(events.len(), 2);
        store.upsert(&a, stat(1, 3), None, &mut events);
        assert!(matches!(events[2], CacheEvent::Changed { .. }));
        store.upsert(&a, stat(1, 2), None, &mut events);
        assert_eq!(events.len(), 3, "a stale read changes nothing");
        // /a recreated at zxid 5: its old child goes, deepest first.
        store.upsert(&a, stat(5, 5), None, &mut events);
        assert_eq!(paths_of(&events[3..]), ["/a/b", "/a", "/a"]);
        assert!(matches!(events[3], CacheEvent::Deleted { .. }));
        assert!(matches!(events[4], CacheEvent::Deleted { .. }));
        assert!(matches!(events[5], CacheEvent::Created { .. }));
        assert!(!store.contains("/a/b"));
        assert_eq!(store.len(), 1);
        // A path outside the root (the engine stores none) is still one node.
        let outside: Arc<str> = Arc::from("/ab");
        store.upsert(&outside, stat(9, 9), None, &mut events);
        store.upsert(&outside, stat(9, 9), None, &mut events);
        assert_eq!(store.len(), 2);
        assert_eq!(store.get("/ab").unwrap().stat().czxid, 9);
    }

    #[test]
    fn remove_subtree_goes_deepest_first() {
        let mut store = Store::new(Arc::from("/r"));
        let mut events = Vec::new();
        for (i, p) in ["/r", "/r/a", "/r/a/x", "/r/b", "/r/a/w"]
            .iter()
            .enumerate()
        {
            let z = i as i64 + 1;
            store.upsert(&Arc::from(*p), stat(z, z), None, &mut events);
        }
        events.clear();
        store.remove_subtree("/r", &mut events);
        assert_eq!(
            paths_of(&events),
            ["/r/a/w", "/r/a/x", "/r/a", "/r/b", "/r"]
        );
        assert_eq!(store.len(), 0);
        assert!(store.snapshot().is_empty());
    }

    #[test]
    fn a_node_read_before_its_parent_joins_it_when_read_again() {
        let mut store = Store::new(Arc::from("/"));
        let mut events = Vec::new();
        let deep: Arc<str> = Arc::from("/a/b/c");
        store.upsert(&deep, stat(3, 3), Some(Arc::from(&b"c"[..])), &mut events);
        store.upsert(&Arc::from("/a/b/c/d"), stat(4, 4), None, &mut events);
        assert_eq!(store.get("/a/b/c/d").unwrap().path(), "/a/b/c/d");
        assert_eq!(store.get("/a/b/c").unwrap().data(), Some(&b"c"[..]));
        assert!(store.children("/a/b").is_empty());
        store.upsert(&Arc::from("/"), stat(0, 0), None, &mut events);
        store.upsert(&Arc::from("/a"), stat(1, 1), None, &mut events);
        store.upsert(&Arc::from("/a/b"), stat(2, 2), None, &mut events);
        assert!(
            store.children("/a/b").is_empty(),
            "not before it is read again"
        );
        store.upsert(&deep, stat(3, 3), Some(Arc::from(&b"c"[..])), &mut events);
        let children = store.children("/a/b");
        assert_eq!(children.len(), 1);
        assert_eq!(children[0].data(), Some(&b"c"[..]));
        assert_eq!(store.detached, 0);
        events.clear();
        store.remove_subtree("/a", &mut events);
        assert_eq!(paths_of(&events), ["/a/b/c/d", "/a/b/c", "/a/b", "/a"]);
        let left: Vec<String> = store.snapshot().iter().map(|n| n.path().into()).collect();
        assert_eq!(left, ["/"]);
    }

    #[test]
    fn big_records_rewrites_and_compaction_keep_every_node() {
        let mut store = Store::new(Arc::from("/big"));
        let mut events = Vec::new();
        store.upsert(&Arc::from("/big"), stat(1, 1), None, &mut events);
        let mut expected = BTreeMap::new();
        for round in 0..40i64 {
            for n in 0..50i64 {
                let path: Arc<str> = Arc::from(format!("/big/n{n}"));
                // Sizes from empty to 20 KiB: small and big records, growing and shrinking.
                let len = ((n * 977 + round * 131) % 20_000) as usize;
                let data: Arc<[u8]> = vec![(n + round) as u8; len].into();
                let mut st = stat(10 + n, 100 + round);
                st.data_length = len as i32;
                store.upsert(&path, st, Some(Arc::clone(&data)), &mut events);
                expected.insert(path.to_string(), data);
            }
        }
        for (path, data) in &expected {
            assert_eq!(store.get(path).unwrap().data(), Some(&data[..]), "{path}");
        }
        let arena = &store.nodes.arena;
        assert!(arena.dead <= arena.live.max(CHUNK), "compacted: {store:?}");
    }

    /// The store against a plain map of paths (the cache's previous representation), through
    /// random reads: same events, same content.
    #[test]
    fn the_store_behaves_as_a_map_of_paths() {
        for seed in 0..20 {
            let mut rng = StdRng::seed_from_u64(seed);
            let root = if seed % 2 == 0 { "/" } else { "/r" };
            let mut store = Store::new(Arc::from(root));
            let mut model = model::Model::default();
            let names = ["a", "b", "c"];
            let mut zxid = 1;
            for step in 0..2000 {
                let depth = rng.random_range(0..4);
                let mut path = root.to_owned();
                for _ in 0..depth {
                    path = paths::join(&path, names[rng.random_range(0..names.len())]);
                }
                let path: Arc<str> = Arc::from(path);
                let (mut ours, mut theirs) = (Vec::new(), Vec::new());
                if rng.random_bool(0.2) {
                    store.remove_subtree(&path, &mut ours);
                    model.remove_subtree(&path, &mut theirs);
                } else {
                    zxid += 1;
                    let czxid = if rng.random_bool(0.7) {
                        model.czxid(&path).unwrap_or(zxid)
                    } else {
                        zxid - rng.random_range(0..3)
                    };
                    let mzxid = czxid.max(zxid - rng.random_range(0..3));
                    let mut st = stat(czxid, mzxid);
                    st.pzxid = mzxid + rng.random_range(0..2);
                    // Small records, rewrites that compact the arena, records of their own.
                    let len = rng.random_range(0..[40, 600, 6000][seed as usize % 3]);
                    st.data_length = len as i32;
                    let data: Option<Arc<[u8]>> =
                        rng.random_bool(0.9).then(|| vec![step as u8; len].into());
                    let a = store.upsert(&path, st, data.clone(), &mut ours);
                    let b = model.upsert(&path, st, data, &mut theirs);
                    assert_eq!(a, b, "seed {seed} step {step} {path}");
                }
                assert_eq!(ours, theirs, "seed {seed} step {step} {path}");
                assert_eq!(store.len(), model.nodes.len());
            }
            assert_eq!(store.snapshot(), model.snapshot(), "seed {seed}");
            for path in model.nodes.keys() {
                assert_eq!(store.children(path), model.children(path), "{path}");
                let mut ours = store.child_paths(path).unwrap();
                ours.sort();
                let mut theirs = model.child_paths(path);
                theirs.sort();
                assert_eq!(ours, theirs);
            }
        }
    }

    #[test]
    fn a_big_tree_costs_under_fifty_bytes_a_node_besides_its_data() {
        // The benchmark's tree: a root, 100 directories, 99 leaves of 32 bytes in each.
        let mut store = Store::new(Arc::from("/bench/tree"));
        let mut events = Vec::new();
        let mut zxid = 0x5_0000_0000;
        let mut time = 1_700_000_000_000;
        let mut add = |store: &mut Store, path: String, data: Option<Vec<u8>>| {
            zxid += 1;
            time += 1;
            let mut st = stat(zxid, zxid);
            st.ctime = time;
            st.mtime = time;
            st.data_length = data.as_ref().map_or(0, |d| d.len() as i32);
            store.upsert(&Arc::from(path), st, data.map(Arc::from), &mut events);
            events.clear();
        };
        add(&mut store, "/bench/tree".into(), None);
        for d in 0..100 {
            add(&mut store, format!("/bench/tree/d{d:02}"), None);
        }
        for n in 0..99 {
            for d in 0..100 {
                add(
                    &mut store,
                    format!("/bench/tree/d{d:02}/n{n:03}"),
                    Some(vec![7; 32]),
                );
            }
        }
        assert_eq!(store.len(), 10_001);
        let per_node = (store.heap_bytes() - 10_001 * 32) / 10_001;
        assert!(per_node < 50, "{per_node} bytes a node besides the data");
    }

    /// The cache's previous node map, kept as the reference the store is checked against.
    mod model {
        use super::*;

        #[derive(Default)]
        pub(super) struct Model {
            pub(super) nodes: HashMap<Arc<str>, Node>,
        }

        pub(super) struct Node {
            stat: Stat,
            data: Option<Arc<[u8]>>,
            children: HashSet<Arc<str>>,
        }

        impl Model {
            pub(super) fn czxid(&self, path: &str) -> Option<i64> {
                self.nodes.get(path).map(|n| n.stat.czxid)
            }

            pub(super) fn snapshot(&self) -> Vec<ChildData> {
                let mut out: Vec<ChildData> = self
                    .nodes
                    .iter()
                    .map(|(k, n)| ChildData::shared(Arc::clone(k), n.stat, n.data.clone()))
                    .collect();
                out.sort_by(|a, b| a.path().cmp(b.path()));
                out
            }

            pub(super) fn children(&self, path: &str) -> Vec<ChildData> {
                let mut out: Vec<ChildData> = self.nodes[path]
                    .children
                    .iter()
                    .map(|c| {
                        let n = &self.nodes[c];
                        ChildData::shared(Arc::clone(c), n.stat, n.data.clone())
                    })
                    .collect();
                out.sort_by(|a, b| a.path().cmp(b.path()));
                out
            }

            pub(super) fn child_paths(&self, path: &str) -> Vec<Arc<str>> {
                self.nodes[path].children.iter().cloned().collect()
            }

            pub(super) fn upsert(
                &mut self,
                path: &Arc<str>,
                stat: Stat,
                data: Option<Arc<[u8]>>,
                events: &mut Vec<CacheEvent>,
            ) -> (bool, bool) {
                if !self.nodes.contains_key(path) {
                    self.link(path);
                    self.nodes.insert(
                        Arc::clone(path),
                        Node {
                            stat,
                            data: data.clone(),
                            children: HashSet::new(),
                        },
                    );
                    events.push(CacheEvent::Created {
                        node: ChildData::shared(Arc::clone(path), stat, data),
                    });
                    return (true, false);
                }
                // (The previous map linked a node read before its parent only when the read
                // found the same incarnation; the store links it whatever the read found.)
                self.link(path);
                let node = self.nodes.get_mut(path).unwrap();
                let had_children = !node.children.is_empty();
                if node.stat.czxid == stat.czxid {
                    if stat.mzxid > node.stat.mzxid {
                        let old = ChildData::shared(Arc::clone(path), node.stat, node.data.take());
                        node.stat = stat;
                        node.data = data.clone();
                        events.push(CacheEvent::Changed {
                            old,
                            node: ChildData::shared(Arc::clone(path), stat, data),
                        });
                    } else if stat.mzxid == node.stat.mzxid && stat.pzxid >= node.stat.pzxid {
                        node.stat = stat;
                    }
                    return (false, had_children);
                }
                if stat.czxid < node.stat.czxid {
                    return (false, had_children);
                }
                let old_children: Vec<Arc<str>> = node.children.iter().cloned().collect();
                let mut old_children: Vec<Arc<str>> = old_children
                    .into_iter()
                    .filter(|c| self.nodes.get(c).is_none_or(|n| n.stat.czxid < stat.czxid))
                    .collect();
                old_children.sort();
                for child in old_children {
                    self.remove_subtree(&child, events);
                }
                let node = self.nodes.get_mut(path).unwrap();
                let old = ChildData::shared(Arc::clone(path), node.stat, node.data.take());
                node.stat = stat;
                node.data = data.clone();
                events.push(CacheEvent::Deleted { old });
                events.push(CacheEvent::Created {
                    node: ChildData::shared(Arc::clone(path), stat, data),
                });
                (true, !node.children.is_empty())
            }

            fn link(&mut self, path: &Arc<str>) {
                if let Some(parent) = paths::parent(path).and_then(|p| self.nodes.get_mut(p)) {
                    parent.children.insert(Arc::clone(path));
                }
            }

            pub(super) fn remove_subtree(&mut self, path: &str, events: &mut Vec<CacheEvent>) {
                let Some((key, node)) = self.nodes.remove_entry(path) else {
                    return;
                };
                if let Some(parent) = paths::parent(path).and_then(|p| self.nodes.get_mut(p)) {
                    parent.children.remove(path);
                }
                let mut children: Vec<Arc<str>> = node.children.into_iter().collect();
                children.sort();
                for child in children {
                    if self.nodes.contains_key(&child) {
                        self.remove_subtree(&child, events);
                    }
                }
                events.push(CacheEvent::Deleted {
                    old: ChildData::shared(key, node.stat, node.data),
                });
            }
        }
    }
}
