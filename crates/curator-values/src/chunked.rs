//! Values over ZooKeeper's 1 MiB limit: a small manifest node and immutable chunk nodes,
//! written so that a reader never sees a mix of two versions.
//!
//! ZooKeeper refuses node data (and a whole request, a multi too) over `jute.maxbuffer`,
//! 1 MiB by default, so one request cannot carry a big value. A [`ChunkedValue`] stores it in
//! pieces and makes the switch from one version to the next a single versioned write.
//!
//! # Layout
//! - The node at `path` (the **manifest**) stays a plain node holding a few dozen bytes: a magic
//!   number and format byte, the value's length and CRC-32, and either the value itself (when it
//!   is at most [`ChunkSettings::inline_limit`], 1 000 000 bytes by default: one node, one round
//!   trip, as without chunking) or the name of the **generation** that holds it. Watchers of
//!   `path` see one change per write.
//! - Chunks are immutable children `<path>-chunks/<generation>/<index>` (index from 0, each at
//!   most [`ChunkSettings::chunk_size`] bytes) of a *sibling* container `<path>-chunks`, so the
//!   value node has no children and its parent's listing gains one name per chunked value. A
//!   generation is a random UUID, never reused, so the chunks a manifest names are either the
//!   right ones or gone.
//! - A writer also keeps an ephemeral marker `<path>-chunks/w-<generation>` while it writes.
//!
//! # A write
//! Read the manifest's version, create the marker, create the generation's node and its chunks
//! (pipelined: one round trip for all of them), then flip the manifest in one transaction that
//! checks the marker is still there (the writer's session is alive) and sets the manifest at the
//! version read (a compare-and-set: two writers never interleave; the loser's generation is
//! deleted). After the flip, every generation made before it is garbage (a later flip only ever
//! names a generation made after reading a later version), so the writer deletes them and its
//! marker, best effort. A writer that dies before the flip leaves the old value readable; its
//! generation is deleted by the next write or by [`ChunkedValue::purge`].
//!
//! # A read
//! Read the manifest, then all of its generation's chunks (pipelined), and check the length
//! and CRC-32. A chunk that is gone means a newer write replaced the value meanwhile: read the
//! manifest again, up to [`ChunkSettings::read_attempts`] times, then fail with
//! [`Error::ChunkedRead`]. The result is always exactly one written value.
//!
//! # Limits and cost
//! - Values up to [`ChunkSettings::max_size`] (64 MiB by default); a bigger one is
//!   [`Error::ValueTooLarge`] before anything is sent.
//! - A chunked write costs 4 round trips before it is visible (manifest stat, marker, the
//!   generation with all its chunks, flip) and about 4 more to clean up (listing the container,
//!   a stat per generation, deleting the old generation's chunks, the marker); an inline write
//!   costs its write and a listing of the container. A chunked read costs 2 round trips
//!   (manifest, chunks), an inline one 1. The chunks of a write or read are pipelined, so time
//!   grows with the bytes, not with the number of chunks (see `docs/benchmarks.md`).
//! - Every server of the ensemble keeps every node in memory and writes it to its transaction
//!   log and snapshots: a 64 MiB value costs 64 MiB of heap on each server (twice that for a
//!   moment while a write replaces it), and every write of it 64 MiB of log. Watchers of the
//!   value are told once per write and must then read the whole value. Chunking makes big
//!   values possible, not cheap; keep them rare and rarely written. Measured: a standalone
//!   ZooKeeper 3.8 with a 384 MiB heap ran out of heap after about 100 MiB of chunk writes in
//!   quick succession (six 16 MiB writes), though it never held more than 32 MiB of values;
//!   with 1 GiB it did not. Size the servers' heap for the write rate, not only for what is
//!   stored.
//! - Compression ([`ChunkedValue::compressed`], or the client's
//!   [`enable_compression`](curator_framework::CuratorFrameworkBuilder::enable_compression)) applies to
//!   each node (the manifest and every chunk); the limits count the uncompressed bytes.
//!
//! ```no_run
//! # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
//! use curator_values::chunked::{ChunkSettings, ChunkedValue};
//! let blob = ChunkedValue::new(client, "/config/model", ChunkSettings::new())?
//!     .creating_parent_containers_if_needed();
//! let big = vec![7u8; 5 * 1024 * 1024];
//! blob.create_or_set(&big).await?;
//! let (data, stat) = blob.read().await?;
//! assert_eq!(data, big);
//! // Compare-and-set on the manifest's version.
//! blob.set_with_version(b"small now", stat.version).await?;
//! # Ok(()) }
//! ```

use std::collections::HashSet;
use std::fmt;
use std::future::IntoFuture;

use futures::future::{join_all, try_join_all};

use curator_framework::CuratorFramework;
use curator_framework::ops::transaction::{TransactionOp, TransactionResult};
use curator_framework::paths;
use curator_framework::types::{CreateMode, Stat};
use curator_framework::watcher::Watcher;
use curator_framework::{Error, Result};

/// The suffix of the sibling node that holds a chunked value's generations:
/// `/config/model` keeps its chunks under `/config/model-chunks`.
pub const CHUNK_DIR_SUFFIX: &str = "-chunks";

/// The largest chunk (and inline value) allowed: 1 000 000 bytes, which leaves room under
/// ZooKeeper's default `jute.maxbuffer` (1 MiB less one byte) for the request's path and header
/// (and gzip's few bytes of overhead on incompressible data).
pub const MAX_CHUNK_SIZE: usize = 1_000_000;

/// The default [`ChunkSettings::max_size`]: 64 MiB.
pub const DEFAULT_MAX_SIZE: usize = 64 * 1024 * 1024;

/// The first bytes of every manifest.
const MAGIC: [u8; 4] = *b"\0ZCV";
const FORMAT: u8 = 1;
const KIND_INLINE: u8 = 0;
const KIND_CHUNKED: u8 = 1;
/// Magic, format, kind, CRC-32, length.
const HEADER_LEN: usize = 4 + 1 + 1 + 4 + 8;
const MARKER_PREFIX: &str = "w-";
/// How often a write starts over after its marker vanished (its session ended mid-write).
const MARKER_ATTEMPTS: u32 = 5;

/// How a [`ChunkedValue`] splits values: chunk size, inline limit, maximum size, read attempts.
///
/// ```
/// use curator_values::chunked::ChunkSettings;
/// let settings = ChunkSettings::new().with_max_size(16 << 20).with_chunk_size(256 * 1024);
/// assert_eq!(settings.max_size(), 16 << 20);
/// assert!(ChunkSettings::new().with_chunk_size(0).validate().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkSettings {
    chunk_size: usize,
    inline_limit: usize,
    max_size: usize,
    read_attempts: u32,
}

impl Default for ChunkSettings {
    fn default() -> Self {
        ChunkSettings {
            chunk_size: MAX_CHUNK_SIZE,
            inline_limit: MAX_CHUNK_SIZE,
            max_size: DEFAULT_MAX_SIZE,
            read_attempts: 5,
        }
    }
}

impl ChunkSettings {
    /// The defaults: chunks and inline values of up to [`MAX_CHUNK_SIZE`], values up to
    /// [`DEFAULT_MAX_SIZE`], 5 read attempts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes per chunk (1 to [`MAX_CHUNK_SIZE`]); lower it for servers with a smaller
    /// `jute.maxbuffer`.
    pub fn with_chunk_size(mut self, bytes: usize) -> Self {
        self.chunk_size = bytes;
        self
    }

    /// Values of at most this many bytes are kept in the manifest itself (0 to
    /// [`MAX_CHUNK_SIZE`]; 0 keeps only the empty value inline).
    pub fn with_inline_limit(mut self, bytes: usize) -> Self {
        self.inline_limit = bytes;
        self
    }

    /// The largest value accepted; bigger ones are [`Error::ValueTooLarge`].
    pub fn with_max_size(mut self, bytes: usize) -> Self {
        self.max_size = bytes;
        self
    }

    /// How many times a read starts over when newer writes keep replacing the value under it
    /// (at least 1).
    pub fn with_read_attempts(mut self, attempts: u32) -> Self {
        self.read_attempts = attempts;
        self
    }

    /// Bytes per chunk.
    pub fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    /// The largest value kept inline.
    pub fn inline_limit(&self) -> usize {
        self.inline_limit
    }

    /// The largest value accepted.
    pub fn max_size(&self) -> usize {
        self.max_size
    }

    /// Read attempts.
    pub fn read_attempts(&self) -> u32 {
        self.read_attempts
    }

    /// Checks the settings.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a chunk size of 0 or over [`MAX_CHUNK_SIZE`], an inline
    /// limit over it, more than `u32::MAX` chunks for the largest value, or no read attempts.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidArgument(format!("chunk settings: {what}")));
        if self.chunk_size == 0 || self.chunk_size > MAX_CHUNK_SIZE {
            return bad(format!(
                "a chunk size of {} bytes is not between 1 and {MAX_CHUNK_SIZE}",
                self.chunk_size
            ));
        }
        if self.inline_limit > MAX_CHUNK_SIZE {
            return bad(format!(
                "an inline limit of {} bytes is over {MAX_CHUNK_SIZE}",
                self.inline_limit
            ));
        }
        if self.max_size.div_ceil(self.chunk_size) > u32::MAX as usize {
            return bad(format!(
                "a maximum of {} bytes in chunks of {} makes too many chunks",
                self.max_size, self.chunk_size
            ));
        }
        if self.read_attempts == 0 {
            return bad("at least one read attempt is needed".into());
        }
        Ok(())
    }

    /// Checks that a value of `size` bytes for `path` may be written.
    ///
    /// # Errors
    /// [`Error::ValueTooLarge`] when it is over [`max_size`](Self::max_size).
    pub fn check_size(&self, path: &str, size: usize) -> Result<()> {
        if size > self.max_size {
            return Err(Error::ValueTooLarge {
                path: path.to_owned(),
                size,
                limit: self.max_size,
            });
        }
        Ok(())
    }
}

/// Whether `bytes` is a chunked value's manifest (the node data a [`ChunkedValue`] keeps at
/// its path): for schemas and tools that look at such nodes without reading the chunks.
///
/// ```
/// use curator_values::chunked::is_manifest;
/// assert!(!is_manifest(b"{\"plain\": true}"));
/// ```
pub fn is_manifest(bytes: &[u8]) -> bool {
    Manifest::decode("", bytes).is_ok()
}

/// What the manifest says.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Manifest {
    len: u64,
    crc: u32,
    layout: Layout,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Layout {
    Inline(Vec<u8>),
    Chunked {
        generation: String,
        chunk_size: u32,
        count: u32,
    },
}

fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

impl Manifest {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + 64);
        out.extend_from_slice(&MAGIC);
        out.push(FORMAT);
        match &self.layout {
            Layout::Inline(_) => out.push(KIND_INLINE),
            Layout::Chunked { .. } => out.push(KIND_CHUNKED),
        }
        out.extend_from_slice(&self.crc.to_be_bytes());
        out.extend_from_slice(&self.len.to_be_bytes());
        match &self.layout {
            Layout::Inline(data) => out.extend_from_slice(data),
            Layout::Chunked {
                generation,
                chunk_size,
                count,
            } => {
                out.extend_from_slice(&chunk_size.to_be_bytes());
                out.extend_from_slice(&count.to_be_bytes());
                out.extend_from_slice(generation.as_bytes());
            }
        }
        out
    }

    fn decode(path: &str, bytes: &[u8]) -> Result<Manifest> {
        let bad = |why: &str| Error::decode(path, format!("not a chunked value's manifest: {why}"));
        if bytes.len() < HEADER_LEN || bytes[..4] != MAGIC {
            return Err(bad(&format!(
                "{} bytes without the manifest's magic number",
                bytes.len()
            )));
        }
        if bytes[4] != FORMAT {
            return Err(bad(&format!("unknown format {}", bytes[4])));
        }
        let crc = u32::from_be_bytes(bytes[6..10].try_into().map_err(|_| bad("short"))?);
        let len = u64::from_be_bytes(bytes[10..18].try_into().map_err(|_| bad("short"))?);
        let rest = &bytes[HEADER_LEN..];
        let layout = match bytes[5] {
            KIND_INLINE => Layout::Inline(rest.to_vec()),
            KIND_CHUNKED => {
                if rest.len() < 9 {
                    return Err(bad("a chunked manifest without its generation"));
                }
                let chunk_size =
                    u32::from_be_bytes(rest[0..4].try_into().map_err(|_| bad("short"))?);
                let count = u32::from_be_bytes(rest[4..8].try_into().map_err(|_| bad("short"))?);
                let generation = std::str::from_utf8(&rest[8..])
                    .map_err(|_| bad("a generation name that is not UTF-8"))?;
                if generation.contains('/') || chunk_size == 0 {
                    return Err(bad("a bad generation name or chunk size"));
                }
                if u64::from(count) != len.div_ceil(u64::from(chunk_size)) {
                    return Err(bad("a chunk count that does not match the length"));
                }
                Layout::Chunked {
                    generation: generation.to_owned(),
                    chunk_size,
                    count,
                }
            }
            other => return Err(bad(&format!("unknown kind {other}"))),
        };
        Ok(Manifest { len, crc, layout })
    }
}

/// Whether a [`ChunkedValue`] makes the missing parents of its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parents {
    Required,
    Persistent,
    Containers,
}

/// Why assembling a value failed.
enum Assembly {
    /// A newer write got in the way: read the manifest again.
    Retry(String),
    /// Nothing a new attempt can fix.
    Fail(Error),
}

/// What a write expects of the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// It does not exist.
    Absent,
    /// It is at this version.
    Version(i32),
    /// It exists, whatever its version.
    Exists,
    /// Anything: created when missing.
    Anything,
}

/// A value of up to [`ChunkSettings::max_size`] bytes at `path`, stored as a manifest node and
/// immutable chunks (see the [module docs](self) for the layout, the guarantees and the cost).
///
/// Cheap to clone; holds no state of its own beyond its settings. Every method is a few
/// requests through the client (its retry policy, namespace and compression apply).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_values::chunked::{ChunkSettings, ChunkedValue};
/// use curator_framework::Error;
/// let value = ChunkedValue::new(client, "/blobs/a", ChunkSettings::new())?;
/// match value.create(&vec![0u8; 3_000_000]).await {
///     Ok(_) | Err(Error::NodeExists) => {}
///     Err(error) => return Err(error),
/// }
/// let (data, _stat, watcher) = value.read_watched().await?;
/// # let _ = (data, watcher);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ChunkedValue {
    client: CuratorFramework,
    path: String,
    dir: String,
    settings: ChunkSettings,
    parents: Parents,
    compressed: Option<bool>,
}

impl fmt::Debug for ChunkedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChunkedValue")
            .field("path", &self.path)
            .field("settings", &self.settings)
            .field("parents", &self.parents)
            .field("compressed", &self.compressed)
            .finish_non_exhaustive()
    }
}

impl ChunkedValue {
    /// A chunked value at `path` (parents must exist unless a `creating_…` option says
    /// otherwise).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or the root; [`Error::InvalidArgument`] for bad
    /// settings (see [`ChunkSettings::validate`]).
    pub fn new(client: CuratorFramework, path: &str, settings: ChunkSettings) -> Result<Self> {
        paths::validate(path)?;
        if path == "/" {
            return Err(Error::InvalidPath {
                path: path.to_owned(),
                reason: "the root cannot hold a chunked value".to_owned(),
            });
        }
        settings.validate()?;
        Ok(ChunkedValue {
            client,
            path: path.to_owned(),
            dir: format!("{path}{CHUNK_DIR_SUFFIX}"),
            settings,
            parents: Parents::Required,
            compressed: None,
        })
    }

    /// Creates missing parents of the node as persistent nodes.
    pub fn creating_parents_if_needed(mut self) -> Self {
        self.parents = Parents::Persistent;
        self
    }

    /// Creates missing parents of the node as containers.
    pub fn creating_parent_containers_if_needed(mut self) -> Self {
        self.parents = Parents::Containers;
        self
    }

    /// Compresses the manifest and every chunk with the client's compression provider (and
    /// decompresses them when read), whatever the client's default.
    pub fn compressed(mut self) -> Self {
        self.compressed = Some(true);
        self
    }

    /// The value's node (the manifest).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The node under which the generations are kept (`<path>-chunks`).
    pub fn chunk_dir(&self) -> &str {
        &self.dir
    }

    /// The settings.
    pub fn settings(&self) -> &ChunkSettings {
        &self.settings
    }

    /// Reads the whole value, with the manifest's stat (its `version` is what
    /// [`set_with_version`](Self::set_with_version) expects; `mzxid` orders values).
    ///
    /// # Errors
    /// [`Error::NoNode`] when there is no value; [`Error::Decode`] when the node is not a
    /// manifest; [`Error::ChunkedRead`] when newer writes kept replacing the value for every
    /// attempt (or its chunks were removed by hand); the client's errors.
    ///
    /// # Cancellation safety
    /// Safe: reads only.
    pub async fn read(&self) -> Result<(Vec<u8>, Stat)> {
        let (data, stat, _) = self.read_with(false).await?;
        Ok((data, stat))
    }

    /// [`read`](Self::read), leaving a data watch on the manifest (set by the read that found
    /// the returned value), which fires at the next write or delete.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    ///
    /// # Cancellation safety
    /// Safe: reads only.
    pub async fn read_watched(&self) -> Result<(Vec<u8>, Stat, Watcher)> {
        let (data, stat, watcher) = self.read_with(true).await?;
        let watcher = watcher
            .ok_or_else(|| Error::UnexpectedReply("a watched read returned no watcher".into()))?;
        Ok((data, stat, watcher))
    }

    async fn read_with(&self, watched: bool) -> Result<(Vec<u8>, Stat, Option<Watcher>)> {
        let mut reason = String::new();
        for _ in 0..self.settings.read_attempts {
            let (bytes, stat, watcher) = if watched {
                let (bytes, stat, watcher) = self.get_data_watched(&self.path).await?;
                (bytes, stat, Some(watcher))
            } else {
                let (bytes, stat) = self.get_data(&self.path).await?;
                (bytes, stat, None)
            };
            let manifest = Manifest::decode(&self.path, &bytes)?;
            match self.assemble(manifest).await {
                Ok(data) => return Ok((data, stat, watcher)),
                Err(Assembly::Fail(error)) => return Err(error),
                Err(Assembly::Retry(why)) => {
                    tracing::debug!(path = %self.path, %why, "chunked read starts over");
                    reason = why;
                }
            }
        }
        Err(Error::ChunkedRead {
            path: self.path.clone(),
            reason: format!(
                "no consistent value in {} attempts; last: {reason}",
                self.settings.read_attempts
            ),
        })
    }

    async fn assemble(&self, manifest: Manifest) -> Result<Vec<u8>, Assembly> {
        let data = match manifest.layout {
            Layout::Inline(data) => data,
            Layout::Chunked {
                ref generation,
                chunk_size,
                count,
            } => {
                let base = paths::join(&self.dir, generation);
                // Every request is queued before the first reply is awaited: one round trip.
                let reads: Vec<_> = (0..count)
                    .map(|index| self.get_data_future(&paths::join(&base, &index.to_string())))
                    .collect();
                let chunks = match try_join_all(reads).await {
                    Ok(chunks) => chunks,
                    Err(Error::NoNode) => {
                        return Err(Assembly::Retry(format!(
                            "a chunk of generation {generation} is gone (a newer write replaced it)"
                        )));
                    }
                    Err(error) => return Err(Assembly::Fail(error)),
                };
                let len = usize::try_from(manifest.len).map_err(|_| {
                    Assembly::Fail(Error::decode(&self.path, "a length over the address space"))
                })?;
                let mut data = Vec::with_capacity(len);
                for (index, (chunk, _)) in chunks.into_iter().enumerate() {
                    let last = index + 1 == count as usize;
                    let expected = if last {
                        len - (count as usize - 1) * chunk_size as usize
                    } else {
                        chunk_size as usize
                    };
                    if chunk.len() != expected {
                        return Err(Assembly::Retry(format!(
                            "chunk {index} of generation {generation} has {} bytes, not {expected}",
                            chunk.len()
                        )));
                    }
                    data.extend_from_slice(&chunk);
                }
                data
            }
        };
        if data.len() as u64 != manifest.len || crc32(&data) != manifest.crc {
            return Err(Assembly::Retry(format!(
                "the value's length or checksum does not match its manifest ({} bytes read, {} expected)",
                data.len(),
                manifest.len
            )));
        }
        Ok(data)
    }

    /// Creates the value; [`Error::NodeExists`] when there is one.
    ///
    /// # Errors
    /// [`Error::ValueTooLarge`] (nothing sent), [`Error::NodeExists`], [`Error::NoNode`] when a
    /// parent is missing and no `creating_…` option is set; the client's errors.
    ///
    /// # Cancellation safety
    /// The value may or may not be created when the future is dropped; chunks written for it
    /// are deleted by the next write or [`purge`](Self::purge).
    pub async fn create(&self, data: &[u8]) -> Result<Stat> {
        self.write(data, Target::Absent).await
    }

    /// Replaces the value, whatever its version; [`Error::NoNode`] when there is none.
    ///
    /// # Errors
    /// [`Error::ValueTooLarge`] (nothing sent), [`Error::NoNode`]; the client's errors.
    ///
    /// # Cancellation safety
    /// As [`create`](Self::create).
    pub async fn set(&self, data: &[u8]) -> Result<Stat> {
        self.write(data, Target::Exists).await
    }

    /// Replaces the value if the manifest is still at `version` (compare-and-set).
    ///
    /// # Errors
    /// [`Error::BadVersion`] when it is not (nothing is left behind), [`Error::ValueTooLarge`]
    /// (nothing sent), [`Error::NoNode`]; the client's errors.
    ///
    /// # Cancellation safety
    /// As [`create`](Self::create).
    pub async fn set_with_version(&self, data: &[u8], version: i32) -> Result<Stat> {
        self.write(data, Target::Version(version)).await
    }

    /// Creates the value, or replaces it when it exists.
    ///
    /// # Errors
    /// [`Error::ValueTooLarge`] (nothing sent), [`Error::NoNode`] for a missing parent; the
    /// client's errors.
    ///
    /// # Cancellation safety
    /// As [`create`](Self::create).
    pub async fn create_or_set(&self, data: &[u8]) -> Result<Stat> {
        self.write(data, Target::Anything).await
    }

    async fn write(&self, data: &[u8], target: Target) -> Result<Stat> {
        self.settings.check_size(&self.path, data.len())?;
        let len = data.len() as u64;
        let crc = crc32(data);
        if data.len() <= self.settings.inline_limit {
            let manifest = Manifest {
                len,
                crc,
                layout: Layout::Inline(data.to_vec()),
            }
            .encode();
            let stat = self.write_inline(&manifest, target).await?;
            self.clean(stat.mzxid, None).await;
            return Ok(stat);
        }
        let mut marker_attempts = 0;
        loop {
            // The manifest is read before the generation is made: what makes cleaning safe.
            let current = self.check_manifest().await?;
            let flip_as = match (target, current) {
                (Target::Absent, Some(_)) => return Err(Error::NodeExists),
                (Target::Absent, None) | (Target::Anything, None) => None,
                (Target::Version(_) | Target::Exists, None) => return Err(Error::NoNode),
                (Target::Version(version), Some(stat)) if stat.version != version => {
                    return Err(Error::BadVersion);
                }
                (_, Some(stat)) => Some(stat.version),
            };
            let generation = curator_framework::random::uuid().simple().to_string();
            let marker = paths::join(&self.dir, &format!("{MARKER_PREFIX}{generation}"));
            self.make_marker(&marker).await?;
            let base = paths::join(&self.dir, &generation);
            let written = self.write_chunks(&base, data).await;
            let chunk_size = self.settings.chunk_size;
            let manifest = Manifest {
                len,
                crc,
                layout: Layout::Chunked {
                    generation: generation.clone(),
                    chunk_size: chunk_size as u32,
                    count: data.len().div_ceil(chunk_size) as u32,
                },
            };
            let flipped = match written {
                Ok(()) => self.flip(&marker, &manifest.encode(), flip_as).await,
                // The generation vanished: a newer write's cleanup took it, so that write
                // flipped after the version this one read.
                Err(Error::NoNode) => Err(Flip::Lost(Error::BadVersion)),
                Err(error) => Err(Flip::Lost(error)),
            };
            match flipped {
                Ok(stat) => {
                    self.clean(stat.mzxid, Some(&generation)).await;
                    self.delete_quietly(&marker, false).await;
                    return Ok(stat);
                }
                Err(error) => {
                    self.delete_quietly(&base, true).await;
                    self.delete_quietly(&marker, false).await;
                    match error {
                        Flip::MarkerLost if marker_attempts + 1 < MARKER_ATTEMPTS => {
                            marker_attempts += 1;
                        }
                        Flip::MarkerLost => {
                            return Err(Error::SessionExpired);
                        }
                        Flip::Lost(Error::BadVersion)
                            if matches!(target, Target::Exists | Target::Anything) => {}
                        Flip::Lost(Error::NodeExists) if target == Target::Anything => {}
                        Flip::Lost(Error::NoNode) if target == Target::Anything => {}
                        Flip::Lost(error) => return Err(error),
                    }
                }
            }
        }
    }

    async fn write_inline(&self, manifest: &[u8], target: Target) -> Result<Stat> {
        match target {
            Target::Absent => self.create_manifest(manifest).await,
            Target::Version(version) => {
                self.set_builder()
                    .with_version(version)
                    .idempotent()
                    .for_path(&self.path, manifest)
                    .await
            }
            Target::Exists => self.set_builder().for_path(&self.path, manifest).await,
            Target::Anything => loop {
                match self.set_builder().for_path(&self.path, manifest).await {
                    Err(Error::NoNode) => {}
                    other => return other,
                }
                match self.create_manifest(manifest).await {
                    Err(Error::NodeExists) => {}
                    other => return other,
                }
            },
        }
    }

    async fn create_manifest(&self, manifest: &[u8]) -> Result<Stat> {
        let mut create = self.client.create().idempotent();
        create = match self.parents {
            Parents::Required => create,
            Parents::Persistent => create.creating_parents_if_needed(),
            Parents::Containers => create.creating_parent_containers_if_needed(),
        };
        if let Some(compressed) = self.compressed {
            create = if compressed {
                create.compressed()
            } else {
                create
            };
        }
        Ok(create.for_path(&self.path, manifest).with_stat().await?.1)
    }

    fn set_builder(&self) -> curator_framework::ops::set_data::SetDataBuilder {
        let set = self.client.set_data();
        if self.compressed == Some(true) {
            set.compressed()
        } else {
            set
        }
    }

    async fn check_manifest(&self) -> Result<Option<Stat>> {
        self.client.check_exists().for_path(&self.path).await
    }

    /// Creates the writer's marker, and the chunk container (with the node's parents, as the
    /// settings say) when it is missing.
    async fn make_marker(&self, marker: &str) -> Result<()> {
        for _ in 0..3 {
            match self
                .client
                .create()
                .with_mode(CreateMode::Ephemeral)
                .idempotent()
                .for_path(marker, b"")
                .await
            {
                Ok(_) => return Ok(()),
                Err(Error::NoNode) => {}
                Err(error) => return Err(error),
            }
            let mut dir = self.client.create().with_mode(CreateMode::Container);
            dir = match self.parents {
                Parents::Required => dir,
                Parents::Persistent => dir.creating_parents_if_needed(),
                Parents::Containers => dir.creating_parent_containers_if_needed(),
            };
            match dir.for_path(&self.dir, b"").await {
                Ok(_) | Err(Error::NodeExists) => {}
                Err(error) => return Err(error),
            }
        }
        Err(Error::NoNode)
    }

    /// Creates the generation's node and its chunks, all requests queued before any reply is
    /// awaited.
    async fn write_chunks(&self, base: &str, data: &[u8]) -> Result<()> {
        let mut creates = Vec::with_capacity(data.len() / self.settings.chunk_size + 2);
        creates.push(self.create_future(base, &[]));
        for (index, chunk) in data.chunks(self.settings.chunk_size).enumerate() {
            creates.push(self.create_future(&paths::join(base, &index.to_string()), chunk));
        }
        try_join_all(creates).await.map(drop)
    }

    fn create_future(&self, path: &str, data: &[u8]) -> curator_framework::ops::OpFuture<String> {
        let create = self.client.create().idempotent();
        let create = if self.compressed == Some(true) {
            create.compressed()
        } else {
            create
        };
        create.for_path(path, data).into_future()
    }

    /// Points the manifest at the new generation, if the marker is still there (the writer's
    /// session is alive) and the manifest is at `version` (`None`: absent).
    async fn flip(
        &self,
        marker: &str,
        manifest: &[u8],
        version: Option<i32>,
    ) -> Result<Stat, Flip> {
        let write = match version {
            Some(version) => TransactionOp::set_data(&self.path, manifest).with_version(version),
            None => TransactionOp::create(&self.path, manifest),
        };
        let write = if self.compressed == Some(true) {
            write.compressed()
        } else {
            write
        };
        // A transaction cannot make parents; making the marker's container made them.
        let committed = self
            .client
            .transaction()
            .op(TransactionOp::check(marker, -1))
            .op(write)
            .commit()
            .await;
        match committed {
            Ok(results) => match results.get(1) {
                Some(TransactionResult::SetData { stat }) => Ok(*stat),
                Some(TransactionResult::Create {
                    stat: Some(stat), ..
                }) => Ok(*stat),
                _ => match self.check_manifest().await {
                    Ok(Some(stat)) => Ok(stat),
                    Ok(None) => Err(Flip::Lost(Error::NoNode)),
                    Err(error) => Err(Flip::Lost(error)),
                },
            },
            Err(error) => {
                // A lost reply may hide a commit that did apply: the manifest then names us.
                if let Ok((bytes, stat)) = self.get_data(&self.path).await {
                    if bytes == manifest {
                        return Ok(stat);
                    }
                }
                match error {
                    Error::Transaction { index: 0, .. } => Err(Flip::MarkerLost),
                    Error::Transaction { cause, .. } => Err(Flip::Lost(*cause)),
                    error => Err(Flip::Lost(error)),
                }
            }
        }
    }

    /// Deletes every generation made before the manifest write at `flipped` (but `keep`): no
    /// later write can name them. Best effort.
    async fn clean(&self, flipped: i64, keep: Option<&str>) {
        let names = match self.client.get_children().for_path(&self.dir).await {
            Ok((names, _)) => names,
            Err(Error::NoNode) => return,
            Err(error) => {
                tracing::debug!(%error, dir = %self.dir, "chunk cleanup skipped");
                return;
            }
        };
        let generations: Vec<String> = names
            .into_iter()
            .filter(|name| !name.starts_with(MARKER_PREFIX) && Some(name.as_str()) != keep)
            .map(|name| paths::join(&self.dir, &name))
            .collect();
        let stats = join_all(
            generations
                .iter()
                .map(|path| self.client.check_exists().for_path(path).into_future()),
        )
        .await;
        let old = generations
            .iter()
            .zip(stats)
            .filter(|(_, stat)| matches!(stat, Ok(Some(stat)) if stat.czxid < flipped))
            .map(|(path, _)| self.delete_quietly(path, true));
        join_all(old).await;
    }

    async fn delete_quietly(&self, path: &str, children: bool) -> bool {
        let delete = self.client.delete().quietly();
        let delete = if children {
            delete.deleting_children_if_needed()
        } else {
            delete
        };
        match delete.for_path(path).await {
            Ok(()) => true,
            Err(error) => {
                tracing::debug!(%error, %path, "chunk cleanup: delete failed");
                false
            }
        }
    }

    /// Deletes the generations no reader can need: those made before the manifest's last
    /// write (but the one it names) and those whose writer is gone (its session ended before it
    /// could flip the manifest; its marker vanished with the session). Generations of writers
    /// still at work are kept. Returns how many were deleted.
    ///
    /// ```no_run
    /// # async fn demo(value: curator_values::chunked::ChunkedValue) -> curator_framework::Result<()> {
    /// let removed = value.purge().await?;
    /// println!("{removed} abandoned generations removed");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Decode`] when the node is not a manifest; the client's errors.
    ///
    /// # Cancellation safety
    /// Safe: deletes only what no reader or writer can use.
    pub async fn purge(&self) -> Result<usize> {
        // Listed before the manifest is read: a marker missing from this listing means its
        // writer flipped before the read (then the manifest's mzxid says so) or cannot flip.
        let names = match self.client.get_children().for_path(&self.dir).await {
            Ok((names, _)) => names,
            Err(Error::NoNode) => return Ok(0),
            Err(error) => return Err(error),
        };
        let (current, flipped) = match self.get_data(&self.path).await {
            Ok((bytes, stat)) => match Manifest::decode(&self.path, &bytes)?.layout {
                Layout::Chunked { generation, .. } => (Some(generation), stat.mzxid),
                Layout::Inline(_) => (None, stat.mzxid),
            },
            Err(Error::NoNode) => (None, 0),
            Err(error) => return Err(error),
        };
        let markers: HashSet<&str> = names
            .iter()
            .filter_map(|name| name.strip_prefix(MARKER_PREFIX))
            .collect();
        let generations: Vec<&String> = names
            .iter()
            .filter(|name| !name.starts_with(MARKER_PREFIX) && Some(*name) != current.as_ref())
            .collect();
        let stats = join_all(generations.iter().map(|name| {
            self.client
                .check_exists()
                .for_path(&paths::join(&self.dir, name))
                .into_future()
        }))
        .await;
        let mut doomed = Vec::new();
        for (name, stat) in generations.into_iter().zip(stats) {
            let Some(stat) = stat? else { continue };
            if stat.czxid < flipped || !markers.contains(name.as_str()) {
                doomed.push(paths::join(&self.dir, name));
            }
        }
        let deleted = join_all(doomed.iter().map(|path| self.delete_quietly(path, true))).await;
        Ok(deleted.into_iter().filter(|done| *done).count())
    }

    /// Deletes the value: the manifest (at `version` when given), then every generation.
    ///
    /// # Errors
    /// [`Error::NoNode`], [`Error::BadVersion`]; the client's errors. The generations are
    /// deleted best effort (what is left is removed by [`purge`](Self::purge)).
    ///
    /// # Cancellation safety
    /// The value may or may not be deleted when the future is dropped.
    pub async fn delete(&self, version: Option<i32>) -> Result<()> {
        let delete = self.client.delete();
        let delete = match version {
            Some(version) => delete.with_version(version),
            None => delete,
        };
        delete.for_path(&self.path).await?;
        self.delete_chunks().await;
        Ok(())
    }

    /// Deletes every generation (and the chunk container), best effort: for after the
    /// manifest was deleted some other way (a transaction). Never call it while the value
    /// exists: readers would fail.
    pub async fn delete_chunks(&self) {
        self.delete_quietly(&self.dir, true).await;
    }

    async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        self.get_data_future(path).await
    }

    fn get_data_future(&self, path: &str) -> curator_framework::ops::OpFuture<(Vec<u8>, Stat)> {
        let get = self.client.get_data();
        let get = if self.compressed == Some(true) {
            get.decompressed()
        } else {
            get
        };
        get.for_path(path).into_future()
    }

    async fn get_data_watched(&self, path: &str) -> Result<(Vec<u8>, Stat, Watcher)> {
        let get = self.client.get_data();
        let get = if self.compressed == Some(true) {
            get.decompressed()
        } else {
            get
        };
        get.watched().for_path(path).await
    }
}

/// Why a flip failed.
enum Flip {
    /// The writer's marker is gone: its session ended.
    MarkerLost,
    /// The manifest write failed.
    Lost(Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_round_trip() {
        let inline = Manifest {
            len: 3,
            crc: crc32(b"abc"),
            layout: Layout::Inline(b"abc".to_vec()),
        };
        assert_eq!(Manifest::decode("/a", &inline.encode()).unwrap(), inline);
        let chunked = Manifest {
            len: 2_500_000,
            crc: 7,
            layout: Layout::Chunked {
                generation: "0123abcd".into(),
                chunk_size: 1_000_000,
                count: 3,
            },
        };
        assert_eq!(Manifest::decode("/a", &chunked.encode()).unwrap(), chunked);
    }

    #[test]
    fn bad_manifests_are_decode_errors() {
        let good = Manifest {
            len: 2_500_000,
            crc: 7,
            layout: Layout::Chunked {
                generation: "g".into(),
                chunk_size: 1_000_000,
                count: 3,
            },
        }
        .encode();
        let mut wrong_count = good.clone();
        wrong_count[HEADER_LEN + 7] = 4;
        let mut wrong_kind = good.clone();
        wrong_kind[5] = 9;
        for bytes in [
            b"".to_vec(),
            b"plain data".to_vec(),
            wrong_count,
            wrong_kind,
        ] {
            assert!(matches!(
                Manifest::decode("/a", &bytes),
                Err(Error::Decode { .. })
            ));
        }
    }

    #[test]
    fn settings_are_checked() {
        assert!(ChunkSettings::new().validate().is_ok());
        assert!(
            ChunkSettings::new()
                .with_chunk_size(MAX_CHUNK_SIZE + 1)
                .validate()
                .is_err()
        );
        assert!(
            ChunkSettings::new()
                .with_inline_limit(MAX_CHUNK_SIZE + 1)
                .validate()
                .is_err()
        );
        assert!(
            ChunkSettings::new()
                .with_read_attempts(0)
                .validate()
                .is_err()
        );
        let error = ChunkSettings::new()
            .with_max_size(10)
            .check_size("/a", 11)
            .unwrap_err();
        assert_eq!(
            error,
            Error::ValueTooLarge {
                path: "/a".into(),
                size: 11,
                limit: 10
            }
        );
    }
}
