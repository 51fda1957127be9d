//! The arena records live in: a list of chunks (growing from 256 bytes to 16 KiB, so a
//! one-node cache stays small), and an allocation of their own for records over 4 KiB.
//!
//! A record's address is a `u32`: the chunk's index and the offset in it, or `BIG` and the
//! index of its own allocation. A rewritten record goes back where it was when it fits,
//! otherwise to the end; once the bytes no longer used outnumber the bytes in use, the arena is
//! compacted (amortised O(1) per write).

use super::record::record_len;

/// The largest arena chunk, and the bits of an address that locate a record inside its chunk.
const CHUNK_BITS: u32 = 14;
pub(super) const CHUNK: usize = 1 << CHUNK_BITS;
/// The first chunk's size; each next one doubles up to `CHUNK`.
const FIRST_CHUNK: usize = 256;
/// Records longer than this get an allocation of their own.
const MAX_SMALL: usize = CHUNK / 4;
/// Marks the address of a record with its own allocation (the rest is its index in `big`).
const BIG: u32 = 1 << 31;
/// Chunks addressable below `BIG`.
const MAX_CHUNKS: usize = (BIG >> CHUNK_BITS) as usize;

/// The records of one store.
#[derive(Default)]
pub(super) struct Arena {
    chunks: Vec<Vec<u8>>,
    big: Vec<Box<[u8]>>,
    big_free: Vec<u32>,
    /// Bytes of chunk records in use.
    live: usize,
    /// Bytes of chunks no longer in use (old records, unused chunk tails).
    dead: usize,
}

/// The chunk and the offset in it of a record stored in a chunk.
fn chunk_address(rec: u32) -> (usize, usize) {
    ((rec >> CHUNK_BITS) as usize, rec as usize & (CHUNK - 1))
}

impl Arena {
    /// The bytes from the record at `rec` on (its record first).
    pub(super) fn bytes(&self, rec: u32) -> &[u8] {
        if rec & BIG != 0 {
            &self.big[(rec & !BIG) as usize]
        } else {
            let (chunk, at) = chunk_address(rec);
            &self.chunks[chunk][at..]
        }
    }

    /// Writes `value` at offset `at` of the record at `rec`.
    pub(super) fn patch(&mut self, rec: u32, at: usize, value: u32) {
        let bytes = if rec & BIG != 0 {
            &mut self.big[(rec & !BIG) as usize][at..]
        } else {
            let (chunk, start) = chunk_address(rec);
            &mut self.chunks[chunk][start + at..]
        };
        bytes[..4].copy_from_slice(&value.to_le_bytes());
    }

    /// Stores a record; returns its address.
    pub(super) fn alloc(&mut self, record: &[u8]) -> u32 {
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

    /// Replaces the record at `old` with `record`: in place when it fits.
    pub(super) fn replace(&mut self, old: u32, record: &[u8]) -> u32 {
        let old_len = record_len(self.bytes(old));
        let len = record.len();
        if old & BIG == 0 && len <= old_len {
            let (chunk, at) = chunk_address(old);
            let chunk = &mut self.chunks[chunk];
            chunk[at..at + len].copy_from_slice(record);
            self.live -= old_len - len;
            self.dead += old_len - len;
            return old;
        }
        self.free(old);
        self.alloc(record)
    }

    /// Frees the record at `rec`.
    pub(super) fn free(&mut self, rec: u32) {
        if rec & BIG != 0 {
            let index = rec & !BIG;
            self.big[index as usize] = Box::default();
            self.big_free.push(index);
        } else {
            let len = record_len(self.bytes(rec));
            self.live -= len;
            self.dead += len;
        }
    }

    /// Whether the bytes no longer used outnumber the bytes in use (and fill a chunk at least):
    /// time to `compact`.
    pub(super) fn is_sparse(&self) -> bool {
        self.dead > self.live && self.dead >= CHUNK
    }

    /// Copies the chunk records in use to new chunks, updating each address in `records`
    /// (every record in use must be listed, in any order; records of their own stay).
    pub(super) fn compact<'a>(&mut self, records: impl Iterator<Item = &'a mut u32>) {
        let old = std::mem::take(&mut self.chunks);
        self.live = 0;
        self.dead = 0;
        for rec in records {
            if *rec & BIG != 0 {
                continue;
            }
            let (chunk, at) = chunk_address(*rec);
            let bytes = &old[chunk][at..];
            let len = record_len(bytes);
            *rec = self.alloc(&bytes[..len]);
        }
    }

    /// Bytes of chunk records in use, and bytes of chunks no longer in use.
    pub(super) fn usage(&self) -> (usize, usize) {
        (self.live, self.dead)
    }

    /// The bytes the arena holds on the heap.
    #[cfg(test)]
    pub(super) fn heap_bytes(&self) -> usize {
        let chunks: usize = self.chunks.iter().map(Vec::capacity).sum();
        let big: usize = self.big.iter().map(|b| b.len()).sum();
        chunks + big + self.chunks.capacity() * size_of::<Vec<u8>>()
    }
}
