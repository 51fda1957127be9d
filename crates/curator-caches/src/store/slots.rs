//! The nodes' slots: one fixed slot of three `u32`s per node (its record's address and its two
//! siblings: children form a doubly linked list, so removing one is O(1)), in pages, with a free
//! list. A node's id is its slot's. The records themselves live in the [`Arena`].

use super::NONE;
use super::arena::Arena;
use super::record::{Head, decode_head};

/// Slots per page (pages after the first are allocated whole).
const PAGE_BITS: u32 = 10;
const PAGE: usize = 1 << PAGE_BITS;

/// One node's slot.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    /// The record's address (`NONE` for a free slot).
    pub(super) rec: u32,
    /// The next sibling (for a free slot: the next free slot).
    pub(super) next: u32,
    /// The previous sibling.
    pub(super) prev: u32,
}

/// Slots and their records.
pub(super) struct Nodes {
    pages: Vec<Vec<Slot>>,
    /// The first free slot.
    free: u32,
    arena: Arena,
}

impl Default for Nodes {
    fn default() -> Self {
        Self {
            pages: Vec::new(),
            free: NONE,
            arena: Arena::default(),
        }
    }
}

impl Nodes {
    /// The slots ever used (live or free): ids are below this.
    pub(super) fn slot_count(&self) -> u32 {
        match self.pages.last() {
            None => 0,
            Some(last) => ((self.pages.len() - 1) * PAGE + last.len()) as u32,
        }
    }

    /// The ids of the stored nodes, in id order.
    pub(super) fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.slot_count()).filter(|&id| self.slot(id).rec != NONE)
    }

    pub(super) fn slot(&self, id: u32) -> &Slot {
        &self.pages[(id >> PAGE_BITS) as usize][id as usize & (PAGE - 1)]
    }

    pub(super) fn slot_mut(&mut self, id: u32) -> &mut Slot {
        &mut self.pages[(id >> PAGE_BITS) as usize][id as usize & (PAGE - 1)]
    }

    /// The bytes from `id`'s record on (its record first).
    pub(super) fn bytes(&self, id: u32) -> &[u8] {
        self.arena.bytes(self.slot(id).rec)
    }

    /// `id`'s links and name.
    pub(super) fn head(&self, id: u32) -> Head<'_> {
        decode_head(self.bytes(id)).0
    }

    /// `id`'s first child (`NONE` without children).
    pub(super) fn first_child(&self, id: u32) -> u32 {
        self.head(id).first_child.map_or(NONE, |(child, _)| child)
    }

    /// `id`'s children, in link order.
    pub(super) fn children(&self, id: u32) -> impl Iterator<Item = u32> + '_ {
        let first = self.first_child(id);
        std::iter::successors((first != NONE).then_some(first), |&child| {
            let next = self.slot(child).next;
            (next != NONE).then_some(next)
        })
    }

    /// Stores a new node's `record`, unlinked; returns its id.
    pub(super) fn insert(&mut self, record: &[u8]) -> u32 {
        let rec = self.arena.alloc(record);
        self.alloc_slot(Slot {
            rec,
            next: NONE,
            prev: NONE,
        })
    }

    /// Replaces `id`'s record with `record`.
    pub(super) fn rewrite(&mut self, id: u32, record: &[u8]) {
        let old = self.slot(id).rec;
        let rec = self.arena.replace(old, record);
        self.slot_mut(id).rec = rec;
        self.compact_if_sparse();
    }

    /// Writes the first child's id in place, at offset `at` of `id`'s record (where the head
    /// said it is).
    pub(super) fn patch_first_child(&mut self, id: u32, at: usize, child: u32) {
        let rec = self.slot(id).rec;
        self.arena.patch(rec, at, child);
    }

    /// Frees `id`'s record and slot (the node is unlinked already).
    pub(super) fn remove(&mut self, id: u32) {
        let rec = self.slot(id).rec;
        self.arena.free(rec);
        *self.slot_mut(id) = Slot {
            rec: NONE,
            next: self.free,
            prev: NONE,
        };
        self.free = id;
    }

    /// Copies the records in use to new chunks once the unused bytes outnumber them.
    pub(super) fn compact_if_sparse(&mut self) {
        if !self.arena.is_sparse() {
            return;
        }
        let records = self
            .pages
            .iter_mut()
            .flatten()
            .map(|slot| &mut slot.rec)
            .filter(|rec| **rec != NONE);
        self.arena.compact(records);
    }

    /// The arena's bytes in use and no longer in use.
    pub(super) fn arena_usage(&self) -> (usize, usize) {
        self.arena.usage()
    }

    /// The bytes the slots and records hold on the heap.
    #[cfg(test)]
    pub(super) fn heap_bytes(&self) -> usize {
        let slots: usize = self.pages.iter().map(Vec::capacity).sum();
        slots * size_of::<Slot>()
            + self.pages.capacity() * size_of::<Vec<Slot>>()
            + self.arena.heap_bytes()
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
}
