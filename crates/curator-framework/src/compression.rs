//! Compression of node data, compatible with Apache Curator's `CompressionProvider`.
//!
//! A client compresses what `create()`, `set_data()` and transaction writes send when asked to
//! (`.compressed()` on the operation, or for every write with the builder's
//! [`enable_compression`](crate::CuratorFrameworkBuilder::enable_compression)), and decompresses
//! what `get_data()` reads (`.decompressed()`, or every read once compression is enabled). The
//! size limit of 1 MiB applies to the compressed data: that is what the server stores.
//!
//! The default provider, [`GzipCompressionProvider`], writes and reads the gzip format (RFC 1952)
//! that Curator's `GzipCompressionProvider` does (Java's `GZIPOutputStream` layout: one member,
//! no file name, modification time 0), so data compressed by Java Curator reads here and the
//! other way round. It is built on the [`flate2`](https://docs.rs/flate2) crate, with its
//! pure-Rust backend: a widely used, fuzzed and maintained implementation of deflate is a better
//! bet for data other services write than a hand-written one.
//!
//! ```
//! use curator_framework::compression::{CompressionProvider, GzipCompressionProvider};
//! let gzip = GzipCompressionProvider::new();
//! let packed = gzip.compress("/config", b"a value, a value, a value")?;
//! assert_eq!(&packed[..2], &[0x1f, 0x8b]); // the gzip magic number
//! assert_eq!(gzip.decompress("/config", &packed)?, b"a value, a value, a value");
//! assert!(gzip.decompress("/config", b"plain text").is_err());
//! # Ok::<(), curator_framework::Error>(())
//! ```

use std::fmt;
use std::io::{Read, Write};
use std::sync::Arc;

use crate::error::{Error, Result};

/// Compresses node data before it is written and decompresses it after it is read: Curator's
/// `CompressionProvider`.
///
/// `path` is the node's path as the caller gave it (without the client's namespace); providers
/// may use it to compress some nodes differently, or only for error messages. Both methods run
/// on the caller's task, before the request is sent and after the reply came, so they should be
/// quick and must not block on I/O.
///
/// ```
/// use curator_framework::compression::CompressionProvider;
/// use curator_framework::{CuratorFramework, Error, Result};
/// use std::sync::Arc;
///
/// /// Stores data as it is (a provider for tests).
/// #[derive(Debug)]
/// struct Identity;
///
/// impl CompressionProvider for Identity {
///     fn compress(&self, _path: &str, data: &[u8]) -> Result<Vec<u8>> {
///         Ok(data.to_vec())
///     }
///     fn decompress(&self, _path: &str, data: &[u8]) -> Result<Vec<u8>> {
///         Ok(data.to_vec())
///     }
/// }
///
/// let client = CuratorFramework::builder()
///     .connect_string("127.0.0.1:2181")
///     .compression_provider(Arc::new(Identity))
///     .build()?;
/// # drop(client);
/// # Ok::<(), Error>(())
/// ```
pub trait CompressionProvider: Send + Sync + fmt::Debug {
    /// `data` compressed, for the node at `path`.
    ///
    /// # Errors
    /// Whatever the provider cannot compress; the operation fails with it and sends nothing.
    fn compress(&self, path: &str, data: &[u8]) -> Result<Vec<u8>>;

    /// The data that [`compress`](Self::compress) turned into `compressed`.
    ///
    /// # Errors
    /// [`Error::Decompression`] naming `path` when `compressed` is not in the provider's
    /// format (for example data written uncompressed); never a panic.
    fn decompress(&self, path: &str, compressed: &[u8]) -> Result<Vec<u8>>;
}

/// The default [`CompressionProvider`]: gzip, as Curator's `GzipCompressionProvider` writes it
/// (deflate at the default level 6, no file name, modification time 0).
///
/// Decompression accepts any single gzip member (with or without the optional header fields)
/// and checks its CRC and length; anything else, including empty data, trailing bytes after the
/// member and a truncated member, is [`Error::Decompression`].
///
/// ```
/// use curator_framework::compression::{CompressionProvider, GzipCompressionProvider};
/// use curator_framework::Error;
/// let gzip = GzipCompressionProvider::new();
/// let empty = gzip.compress("/a", b"")?;
/// assert_eq!(gzip.decompress("/a", &empty)?, b"");
/// let error = gzip.decompress("/a", b"").unwrap_err();
/// assert!(matches!(error, Error::Decompression { ref path, .. } if path == "/a"));
/// # Ok::<(), Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct GzipCompressionProvider;

impl GzipCompressionProvider {
    /// The provider (it has no settings).
    pub fn new() -> Self {
        Self
    }
}

/// gzip's magic number, the first two bytes of every member.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

impl CompressionProvider for GzipCompressionProvider {
    fn compress(&self, path: &str, data: &[u8]) -> Result<Vec<u8>> {
        // Header 10 bytes, trailer 8; text usually shrinks to well under half.
        let output = Vec::with_capacity(data.len() / 2 + 32);
        let mut encoder = flate2::write::GzEncoder::new(output, flate2::Compression::default());
        encoder
            .write_all(data)
            .and_then(|()| encoder.finish())
            // Writing to a Vec does not fail; kept typed all the same.
            .map_err(|error| {
                Error::InvalidArgument(format!("cannot compress the data of {path:?}: {error}"))
            })
    }

    fn decompress(&self, path: &str, compressed: &[u8]) -> Result<Vec<u8>> {
        if !compressed.starts_with(&GZIP_MAGIC) {
            return Err(Error::decompression(
                path,
                format!(
                    "not gzip data ({} bytes without the gzip magic number)",
                    compressed.len()
                ),
            ));
        }
        let mut decoder = flate2::bufread::GzDecoder::new(compressed);
        let mut data = Vec::with_capacity(compressed.len().saturating_mul(3));
        decoder
            .read_to_end(&mut data)
            .map_err(|error| Error::decompression(path, error))?;
        let rest = decoder.into_inner();
        if !rest.is_empty() {
            return Err(Error::decompression(
                path,
                format!("{} bytes after the end of the gzip data", rest.len()),
            ));
        }
        Ok(data)
    }
}

/// A client's compression settings (the builder's `compression_provider` and
/// `enable_compression`), and what operations ask of them.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Compresses and decompresses node data (when asked, or always when `enabled`).
    pub(crate) provider: Arc<dyn CompressionProvider>,
    /// Every write compresses and every `get_data()` decompresses unless told otherwise.
    pub(crate) enabled: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            provider: Arc::new(GzipCompressionProvider::new()),
            enabled: false,
        }
    }
}

impl Settings {
    /// Whether writes compress and reads decompress unless told otherwise.
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// The data a write sends: compressed when `ask` says so or, when it says nothing, when the
    /// client compresses by default. `path` is the caller's.
    pub(crate) fn outgoing(&self, path: &str, data: Vec<u8>, ask: Option<bool>) -> Result<Vec<u8>> {
        if ask.unwrap_or(self.enabled) {
            self.provider.compress(path, &data)
        } else {
            Ok(data)
        }
    }

    /// How a read of `path` turns its data back, when `ask` (or the client's default) says to
    /// decompress.
    pub(crate) fn inflate(&self, path: &str, ask: Option<bool>) -> Option<Inflate> {
        ask.unwrap_or(self.enabled).then(|| Inflate {
            provider: Arc::clone(&self.provider),
            path: path.to_owned(),
        })
    }
}

/// The decompression of one read's data.
#[derive(Debug)]
pub(crate) struct Inflate {
    provider: Arc<dyn CompressionProvider>,
    path: String,
}

impl Inflate {
    pub(crate) fn apply(self, data: &[u8]) -> Result<Vec<u8>> {
        self.provider.decompress(&self.path, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gzip() -> GzipCompressionProvider {
        GzipCompressionProvider::new()
    }

    #[test]
    fn round_trips_and_shrinks_text() {
        let text = "ZooKeeper keeps small data; ".repeat(4000);
        let packed = gzip().compress("/t", text.as_bytes()).unwrap();
        assert!(packed.len() < text.len() / 10, "{} bytes", packed.len());
        assert_eq!(gzip().decompress("/t", &packed).unwrap(), text.as_bytes());
    }

    #[test]
    fn writes_the_header_java_writes() {
        // ID1 ID2, CM = deflate, no flags, MTIME 0 (XFL and OS are not compared by readers).
        let packed = gzip().compress("/t", b"").unwrap();
        assert_eq!(&packed[..8], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0]);
        // An empty input: header, an empty final block (03 00), CRC 0, length 0; what Curator
        // compares its empty data against.
        assert_eq!(&packed[10..], &[3, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn bad_data_is_a_typed_error() {
        let packed = gzip().compress("/t", b"hello hello hello").unwrap();
        let mut corrupt_crc = packed.clone();
        let at = corrupt_crc.len() - 8;
        corrupt_crc[at] ^= 0xff;
        let mut trailing = packed.clone();
        trailing.extend_from_slice(b"xyz");
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("empty", Vec::new()),
            ("plain", b"hello".to_vec()),
            ("magic only", GZIP_MAGIC.to_vec()),
            ("truncated", packed[..packed.len() - 3].to_vec()),
            ("bad crc", corrupt_crc),
            ("trailing bytes", trailing),
        ];
        for (case, data) in cases {
            match gzip().decompress("/t", &data) {
                Err(Error::Decompression { path, reason }) => {
                    assert_eq!(path, "/t", "{case}");
                    assert!(!reason.is_empty(), "{case}");
                }
                other => panic!("{case}: {other:?}"),
            }
        }
    }
}
