//! Codecs: how recipes that store values turn them into node data and back.
//!
//! A recipe that stores typed values (a shared value, a queue item, a cached node) takes a
//! [`Codec`]. [`Json`] handles any `serde` type; [`Raw`] passes bytes through; [`BigEndianI32`]
//! and [`BigEndianI64`] are the 4- and 8-byte big-endian integers Apache Curator's counters use.
//!
//! ```
//! use curator_framework::codec::{BigEndianI32, Codec, Json};
//!
//! assert_eq!(BigEndianI32.encode(&10).unwrap(), vec![0, 0, 0, 10]);
//! assert_eq!(BigEndianI32.decode(&[0xff, 0xff, 0xff, 0xff]).unwrap(), -1);
//!
//! #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
//! struct Config { replicas: u32 }
//! let bytes = Json.encode(&Config { replicas: 3 }).unwrap();
//! assert_eq!(bytes, br#"{"replicas":3}"#);
//! let back: Config = Json.decode(&bytes).unwrap();
//! assert_eq!(back, Config { replicas: 3 });
//! assert!(<Json as Codec<Config>>::decode(&Json, b"nonsense").is_err());
//! ```

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

/// Turns values of `T` into node data and back. Errors are [`Error::Decode`] (with an empty
/// path: the recipe that knows the node fills it in with [`with_path`]).
pub trait Codec<T>: Send + Sync + fmt::Debug + 'static {
    /// The bytes for `value`.
    ///
    /// # Errors
    /// [`Error::Decode`] when the value cannot be represented.
    fn encode(&self, value: &T) -> Result<Vec<u8>>;

    /// The value in `bytes`.
    ///
    /// # Errors
    /// [`Error::Decode`] when the bytes are not a value of `T`.
    fn decode(&self, bytes: &[u8]) -> Result<T>;
}

/// Fills in the node path of a [`Error::Decode`] returned by a codec.
pub fn with_path(error: Error, path: &str) -> Error {
    match error {
        Error::Decode { reason, .. } => Error::Decode {
            path: path.to_owned(),
            reason,
        },
        other => other,
    }
}

/// JSON through `serde_json` (compact, UTF-8): the default codec for typed values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Json;

impl<T: Serialize + DeserializeOwned> Codec<T> for Json {
    fn encode(&self, value: &T) -> Result<Vec<u8>> {
        serde_json::to_vec(value).map_err(|error| Error::decode("", error))
    }

    fn decode(&self, bytes: &[u8]) -> Result<T> {
        serde_json::from_slice(bytes).map_err(|error| Error::decode("", error))
    }
}

/// Bytes as they are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Raw;

impl Codec<Vec<u8>> for Raw {
    fn encode(&self, value: &Vec<u8>) -> Result<Vec<u8>> {
        Ok(value.clone())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>> {
        Ok(bytes.to_vec())
    }
}

/// UTF-8 text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Utf8;

impl Codec<String> for Utf8 {
    fn encode(&self, value: &String) -> Result<Vec<u8>> {
        Ok(value.as_bytes().to_vec())
    }

    fn decode(&self, bytes: &[u8]) -> Result<String> {
        String::from_utf8(bytes.to_vec()).map_err(|error| Error::decode("", error))
    }
}

/// A 4-byte big-endian two's-complement integer (Curator's `SharedCount` and
/// `DistributedAtomicInteger`). Empty data reads as 0, as in Curator's atomic numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BigEndianI32;

impl Codec<i32> for BigEndianI32 {
    fn encode(&self, value: &i32) -> Result<Vec<u8>> {
        Ok(value.to_be_bytes().to_vec())
    }

    fn decode(&self, bytes: &[u8]) -> Result<i32> {
        match bytes.len() {
            0 => Ok(0),
            4 => Ok(i32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
            n => Err(Error::decode(
                "",
                format!("expected a 4-byte big-endian integer, found {n} bytes"),
            )),
        }
    }
}

/// An 8-byte big-endian two's-complement integer (Curator's `DistributedAtomicLong`). Empty
/// data reads as 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BigEndianI64;

impl Codec<i64> for BigEndianI64 {
    fn encode(&self, value: &i64) -> Result<Vec<u8>> {
        Ok(value.to_be_bytes().to_vec())
    }

    fn decode(&self, bytes: &[u8]) -> Result<i64> {
        let array: [u8; 8] = match bytes.len() {
            0 => return Ok(0),
            _ => bytes.try_into().map_err(|_| {
                Error::decode(
                    "",
                    format!(
                        "expected an 8-byte big-endian integer, found {} bytes",
                        bytes.len()
                    ),
                )
            })?,
        };
        Ok(i64::from_be_bytes(array))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curator_encodings() {
        assert_eq!(BigEndianI32.encode(&10).unwrap(), [0, 0, 0, 0x0a]);
        assert_eq!(BigEndianI32.encode(&-1).unwrap(), [0xff; 4]);
        assert_eq!(
            BigEndianI64.encode(&-2).unwrap(),
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]
        );
        assert_eq!(BigEndianI64.decode(&[]).unwrap(), 0);
        assert_eq!(BigEndianI32.decode(&[]).unwrap(), 0);
        let Err(Error::Decode { reason, .. }) = BigEndianI64.decode(&[1, 2, 3]) else {
            panic!("three bytes decoded");
        };
        assert!(reason.contains("3 bytes"), "{reason}");
        assert_eq!(
            with_path(BigEndianI32.decode(&[1]).unwrap_err(), "/c"),
            Error::Decode {
                path: "/c".into(),
                reason: "expected a 4-byte big-endian integer, found 1 bytes".into()
            }
        );
    }

    #[test]
    fn text_and_bytes() {
        assert_eq!(Utf8.decode(b"abc").unwrap(), "abc");
        assert!(Utf8.decode(&[0xff]).is_err());
        assert_eq!(Raw.decode(&[1, 2]).unwrap(), vec![1, 2]);
    }
}
