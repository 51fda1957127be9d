//! The (parent, name) index: a hash table of node ids keyed by their parent's id and their name
//! relative to it, which finds a node from its path one level at a time. The keys are not
//! stored: they are read from the nodes' records.

use std::hash::{BuildHasher, RandomState};

use hashbrown::HashTable;

use super::slots::Nodes;

/// Node ids by (parent, name).
pub(super) struct Index {
    table: HashTable<u32>,
    hasher: RandomState,
}

impl Default for Index {
    fn default() -> Self {
        Self {
            table: HashTable::new(),
            hasher: RandomState::new(),
        }
    }
}

impl Index {
    /// The id of `parent`'s child `name`.
    pub(super) fn find(&self, nodes: &Nodes, parent: u32, name: &[u8]) -> Option<u32> {
        let hash = self.hasher.hash_one((parent, name));
        self.table
            .find(hash, |&id| {
                let head = nodes.head(id);
                head.parent == parent && head.name == name
            })
            .copied()
    }

    /// Adds `id`, stored as `parent`'s child `name` (not in the index yet).
    pub(super) fn insert(&mut self, nodes: &Nodes, id: u32, parent: u32, name: &[u8]) {
        let hash = self.hasher.hash_one((parent, name));
        let hasher = &self.hasher;
        self.table.insert_unique(hash, id, |&other| {
            let head = nodes.head(other);
            hasher.hash_one((head.parent, head.name))
        });
    }

    /// Removes `id`, under the parent and name its record holds now.
    pub(super) fn remove(&mut self, nodes: &Nodes, id: u32) {
        let head = nodes.head(id);
        let hash = self.hasher.hash_one((head.parent, head.name));
        if let Ok(entry) = self.table.find_entry(hash, |&other| other == id) {
            entry.remove();
        }
    }

    /// The bytes the table holds on the heap.
    #[cfg(test)]
    pub(super) fn heap_bytes(&self) -> usize {
        // hashbrown: one control byte per bucket, buckets a power of two at most 7/8 full.
        let buckets = (self.table.capacity() * 8 / 7).next_power_of_two();
        buckets * (size_of::<u32>() + 1)
    }
}
