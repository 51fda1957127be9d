//! Jute, ZooKeeper's binary encoding: big-endian ints (4 bytes) and longs (8), booleans as one
//! byte, and buffers, strings and vectors as a 4-byte length (or count) followed by their
//! bytes (or elements). A length of -1 is jute's null.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{DecodeError, DecodeErrorKind};

/// A jute record: it encodes to ZooKeeper's bytes and decodes from exactly them.
///
/// Decoding consumes the whole input: bytes left over are an error
/// ([`DecodeErrorKind::TrailingBytes`]), as is anything that is not a well-formed record. It
/// never panics and never allocates more than the input could hold.
///
/// Lengths over `i32::MAX` cannot be written (a length prefix is an `i32`): such a field is
/// written with the length `i32::MAX`, and the codecs refuse every frame over `i32::MAX`
/// bytes, which any record holding such a field is, so it never reaches a connection.
///
/// ```
/// use curator_wire::proto::{Record, Stat};
///
/// let stat = Stat { version: 3, num_children: 2, ..Stat::default() };
/// let bytes = stat.to_bytes();
/// assert_eq!(bytes.len(), 68);
/// assert_eq!(Stat::decode(&bytes).unwrap(), stat);
/// ```
pub trait Record: Sized {
    /// Appends the record's bytes to `buf`.
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use curator_wire::proto::{Record, SyncRequest};
    ///
    /// let mut buf = BytesMut::new();
    /// SyncRequest { path: "/a".into() }.encode(&mut buf);
    /// assert_eq!(&buf[..], &[0, 0, 0, 2, b'/', b'a']);
    /// ```
    fn encode(&self, buf: &mut BytesMut);

    /// Reads a record from exactly `bytes`.
    ///
    /// # Errors
    /// [`DecodeError`] when `bytes` is not one well-formed record.
    ///
    /// ```
    /// use curator_wire::proto::{Record, SyncRequest};
    ///
    /// let request = SyncRequest::decode(&[0, 0, 0, 2, b'/', b'a']).unwrap();
    /// assert_eq!(request.path, "/a");
    /// assert!(SyncRequest::decode(&[0, 0, 0, 2, b'/', b'a', 0]).is_err()); // a byte too many
    /// ```
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError>;

    /// The record's bytes.
    ///
    /// ```
    /// use curator_wire::proto::{Record, SyncRequest};
    ///
    /// let bytes = SyncRequest { path: "/".into() }.to_bytes();
    /// assert_eq!(&bytes[..], &[0, 0, 0, 1, b'/']);
    /// ```
    fn to_bytes(&self) -> Bytes {
        let mut buf = BytesMut::new();
        self.encode(&mut buf);
        buf.freeze()
    }
}

/// The encoding of one type, used to build records out of records.
pub(crate) trait Jute: Sized {
    /// The fewest bytes a value takes: bounds a vector's count before allocating.
    const MIN_LEN: usize;

    fn write(&self, buf: &mut BytesMut);

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError>;
}

/// Implements [`Record`] for types that implement [`Jute`].
macro_rules! impl_record {
    ($($ty:ty),* $(,)?) => {
        $(
            impl $crate::jute::Record for $ty {
                fn encode(&self, buf: &mut ::bytes::BytesMut) {
                    $crate::jute::Jute::write(self, buf);
                }

                fn decode(bytes: &[u8]) -> Result<Self, $crate::error::DecodeError> {
                    $crate::jute::decode_exact(
                        bytes,
                        0,
                        stringify!($ty),
                        <$ty as $crate::jute::Jute>::read,
                    )
                }
            }
        )*
    };
}
pub(crate) use impl_record;

/// Reads one value from exactly `bytes`; `base` is where `bytes` start in the frame (for the
/// offsets of errors), `name` what errors outside any record (bytes left over) call it.
pub(crate) fn decode_exact<T>(
    bytes: &[u8],
    base: usize,
    name: &'static str,
    read: impl FnOnce(&mut Reader<'_>) -> Result<T, DecodeError>,
) -> Result<T, DecodeError> {
    let mut reader = Reader::new(bytes, base);
    reader.record = name;
    let value = read(&mut reader)?;
    reader.finish()?;
    Ok(value)
}

/// A cursor over the bytes of one frame (or part of one), naming the record being read for its
/// errors.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: usize,
    record: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], base: usize) -> Self {
        Self {
            bytes,
            pos: 0,
            base,
            record: "record",
        }
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// An error about `field`, which starts at `at`.
    pub(crate) fn error_at(
        &self,
        field: &'static str,
        at: usize,
        kind: DecodeErrorKind,
    ) -> DecodeError {
        DecodeError::new(self.record, field, self.base + at, kind)
    }

    /// The position of the next byte (for [`error_at`](Self::error_at)).
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// Reads a record called `name` (the name errors inside it carry).
    pub(crate) fn record<T>(
        &mut self,
        name: &'static str,
        read: impl FnOnce(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<T, DecodeError> {
        let outer = std::mem::replace(&mut self.record, name);
        let value = read(self);
        self.record = outer;
        value
    }

    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], DecodeError> {
        let remaining = self.remaining();
        if remaining < n {
            return Err(self.error_at(
                field,
                self.pos,
                DecodeErrorKind::Truncated {
                    needed: n,
                    remaining,
                },
            ));
        }
        let bytes = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(field, N)?);
        Ok(array)
    }

    pub(crate) fn i32(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        self.array(field).map(i32::from_be_bytes)
    }

    pub(crate) fn i64(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        self.array(field).map(i64::from_be_bytes)
    }

    pub(crate) fn bool(&mut self, field: &'static str) -> Result<bool, DecodeError> {
        let at = self.pos;
        match self.array::<1>(field)? {
            [0] => Ok(false),
            [1] => Ok(true),
            [value] => Err(self.error_at(field, at, DecodeErrorKind::InvalidBool { value })),
        }
    }

    /// Reads a length prefix: `None` for jute's null (-1). `unit` is the least one counted item
    /// takes; the length times it must fit in what is left.
    fn length(&mut self, field: &'static str, unit: usize) -> Result<Option<usize>, DecodeError> {
        let at = self.pos;
        let len = self.i32(field)?;
        if len == -1 {
            return Ok(None);
        }
        let Ok(count) = usize::try_from(len) else {
            return Err(self.error_at(field, at, DecodeErrorKind::NegativeLength { len }));
        };
        let remaining = self.remaining();
        let needed = count.saturating_mul(unit);
        if needed > remaining {
            return Err(self.error_at(
                field,
                at,
                DecodeErrorKind::LengthPastEnd {
                    len: needed,
                    remaining,
                },
            ));
        }
        Ok(Some(count))
    }

    /// A buffer; null reads as empty.
    pub(crate) fn buffer(&mut self, field: &'static str) -> Result<Vec<u8>, DecodeError> {
        let len = self.length(field, 1)?.unwrap_or(0);
        Ok(self.take(field, len)?.to_vec())
    }

    /// A string that may be null.
    pub(crate) fn opt_string(
        &mut self,
        field: &'static str,
    ) -> Result<Option<String>, DecodeError> {
        let at = self.pos;
        let Some(len) = self.length(field, 1)? else {
            return Ok(None);
        };
        let bytes = self.take(field, len)?;
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(Some(text.to_owned())),
            Err(error) => Err(self.error_at(
                field,
                at,
                DecodeErrorKind::InvalidUtf8 {
                    valid_up_to: error.valid_up_to(),
                },
            )),
        }
    }

    /// A string; null reads as empty.
    pub(crate) fn string(&mut self, field: &'static str) -> Result<String, DecodeError> {
        Ok(self.opt_string(field)?.unwrap_or_default())
    }

    /// A vector of `T`; null reads as empty.
    pub(crate) fn vec<T: Jute>(&mut self, field: &'static str) -> Result<Vec<T>, DecodeError> {
        let count = self.length(field, T::MIN_LEN.max(1))?.unwrap_or(0);
        // The count was checked against what is left, so this allocates no more than the input.
        let mut items = Vec::with_capacity(count);
        for _ in 0..count {
            items.push(T::read(self)?);
        }
        Ok(items)
    }

    /// Fails unless every byte was read.
    pub(crate) fn finish(&self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            extra => {
                Err(self.error_at("(end)", self.pos, DecodeErrorKind::TrailingBytes { extra }))
            }
        }
    }
}

/// Writes a length prefix (see [`Record`] for lengths over `i32::MAX`).
fn put_length(buf: &mut BytesMut, len: usize) {
    buf.put_i32(i32::try_from(len).unwrap_or(i32::MAX));
}

pub(crate) fn put_bool(buf: &mut BytesMut, value: bool) {
    buf.put_u8(u8::from(value));
}

pub(crate) fn put_buffer(buf: &mut BytesMut, bytes: &[u8]) {
    put_length(buf, bytes.len());
    buf.put_slice(bytes);
}

pub(crate) fn put_string(buf: &mut BytesMut, text: &str) {
    put_buffer(buf, text.as_bytes());
}

/// A string that may be null (-1).
pub(crate) fn put_opt_string(buf: &mut BytesMut, text: Option<&str>) {
    match text {
        Some(text) => put_string(buf, text),
        None => buf.put_i32(-1),
    }
}

pub(crate) fn put_vec<T: Jute>(buf: &mut BytesMut, items: &[T]) {
    put_length(buf, items.len());
    for item in items {
        item.write(buf);
    }
}

impl Jute for String {
    const MIN_LEN: usize = 4;

    fn write(&self, buf: &mut BytesMut) {
        put_string(buf, self);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.string("string")
    }
}

/// Writes a record's Debug without its payload bytes: their length only.
pub(crate) struct Redacted(pub(crate) usize);

impl std::fmt::Debug for Redacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} bytes>", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_null_string_reads_as_none_or_empty() {
        let null = (-1i32).to_be_bytes();
        let mut reader = Reader::new(&null, 0);
        assert_eq!(reader.opt_string("s").unwrap(), None);
        let mut reader = Reader::new(&null, 0);
        assert_eq!(reader.string("s").unwrap(), "");
        let mut reader = Reader::new(&null, 0);
        assert!(reader.buffer("b").unwrap().is_empty());
        let mut reader = Reader::new(&null, 0);
        assert!(reader.vec::<String>("v").unwrap().is_empty());
    }

    #[test]
    fn a_length_below_minus_one_is_refused() {
        let bytes = (-2i32).to_be_bytes();
        let error = Reader::new(&bytes, 0).buffer("data").unwrap_err();
        assert_eq!(error.kind(), &DecodeErrorKind::NegativeLength { len: -2 });
        assert_eq!(error.field(), "data");
        assert_eq!(error.offset(), 0);
    }

    #[test]
    fn a_length_past_the_end_is_refused_before_allocating() {
        let mut bytes = i32::MAX.to_be_bytes().to_vec();
        bytes.extend_from_slice(b"abc");
        let error = Reader::new(&bytes, 10).string("path").unwrap_err();
        assert_eq!(
            error.kind(),
            &DecodeErrorKind::LengthPastEnd {
                len: i32::MAX as usize,
                remaining: 3
            }
        );
        assert_eq!(error.offset(), 10, "offsets count from the base");
    }

    #[test]
    fn a_vector_count_is_bounded_by_its_elements_least_size() {
        // 3 strings need at least 12 bytes; 11 are left.
        let mut bytes = 3i32.to_be_bytes().to_vec();
        bytes.extend_from_slice(&[0; 11]);
        let error = Reader::new(&bytes, 0)
            .vec::<String>("children")
            .unwrap_err();
        assert_eq!(
            error.kind(),
            &DecodeErrorKind::LengthPastEnd {
                len: 12,
                remaining: 11
            }
        );
    }

    #[test]
    fn booleans_are_zero_or_one() {
        assert!(!Reader::new(&[0], 0).bool("watch").unwrap());
        assert!(Reader::new(&[1], 0).bool("watch").unwrap());
        let error = Reader::new(&[2], 0).bool("watch").unwrap_err();
        assert_eq!(error.kind(), &DecodeErrorKind::InvalidBool { value: 2 });
    }

    #[test]
    fn strings_are_utf8() {
        let mut bytes = 2i32.to_be_bytes().to_vec();
        bytes.extend_from_slice(&[b'a', 0xff]);
        let error = Reader::new(&bytes, 0).string("path").unwrap_err();
        assert_eq!(
            error.kind(),
            &DecodeErrorKind::InvalidUtf8 { valid_up_to: 1 }
        );
    }

    #[test]
    fn fixed_fields_past_the_end_are_truncated() {
        let error = Reader::new(&[0, 0, 0], 0).i32("xid").unwrap_err();
        assert_eq!(
            error.kind(),
            &DecodeErrorKind::Truncated {
                needed: 4,
                remaining: 3
            }
        );
        let error = Reader::new(&[0; 7], 0).i64("zxid").unwrap_err();
        assert_eq!(
            error.kind(),
            &DecodeErrorKind::Truncated {
                needed: 8,
                remaining: 7
            }
        );
    }

    #[test]
    fn records_name_themselves_in_errors() {
        let mut reader = Reader::new(&[], 0);
        let error = reader
            .record("Outer", |r| r.record("Inner", |r| r.i32("x")))
            .unwrap_err();
        assert_eq!(error.record(), "Inner");
        let error = reader.record("Outer", |r| r.i32("y")).unwrap_err();
        assert_eq!(error.record(), "Outer", "the inner name does not stick");
    }

    #[test]
    fn leftover_bytes_are_refused() {
        let error = decode_exact(&[0, 0, 0, 1, 9], 0, "X", |r| r.i32("x")).unwrap_err();
        assert_eq!(error.record(), "X");
        assert_eq!(error.kind(), &DecodeErrorKind::TrailingBytes { extra: 1 });
        assert_eq!(error.offset(), 4);
    }
}
