//! What can go wrong reading ZooKeeper's bytes, and on a framed stream.

use crate::proto::OpCode;

/// Bytes that are not a well-formed record: what was wrong, in which record and field, and
/// where.
///
/// The offset counts from the start of the bytes handed to the decoder; for a frame's header or
/// body it counts from the start of the frame's payload (just after its 4-byte length), so it
/// points into what was on the wire.
///
/// ```
/// use curator_wire::proto::{Record, Stat};
/// use curator_wire::DecodeErrorKind;
///
/// let error = Stat::decode(&[0; 10]).unwrap_err();
/// assert_eq!(error.record(), "Stat");
/// assert_eq!(error.field(), "mzxid");
/// assert_eq!(error.offset(), 8);
/// assert!(matches!(error.kind(), DecodeErrorKind::Truncated { needed: 8, remaining: 2 }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed {record}: field `{field}` at byte {offset}: {kind}")]
pub struct DecodeError {
    record: &'static str,
    field: &'static str,
    offset: usize,
    kind: DecodeErrorKind,
}

impl DecodeError {
    pub(crate) fn new(
        record: &'static str,
        field: &'static str,
        offset: usize,
        kind: DecodeErrorKind,
    ) -> Self {
        Self {
            record,
            field,
            offset,
            kind,
        }
    }

    /// The jute record being read (the innermost one: `Stat` inside a `GetDataResponse`), or
    /// `frame` for the length prefix.
    ///
    /// ```
    /// use curator_wire::proto::{Record, WatcherEvent};
    ///
    /// let error = WatcherEvent::decode(&[]).unwrap_err();
    /// assert_eq!(error.record(), "WatcherEvent");
    /// ```
    pub fn record(&self) -> &'static str {
        self.record
    }

    /// The field of [`record`](Self::record) being read, with jute's names (`ephemeralOwner`).
    ///
    /// ```
    /// use curator_wire::proto::{Record, WatcherEvent};
    ///
    /// let error = WatcherEvent::decode(&[]).unwrap_err();
    /// assert_eq!(error.field(), "type");
    /// ```
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// Where the offending field starts (see the type's docs for what the count starts from).
    ///
    /// ```
    /// use curator_wire::proto::{Record, RequestHeader};
    ///
    /// // A valid xid, then an opcode ZooKeeper does not have.
    /// let error = RequestHeader::decode(&[0, 0, 0, 1, 0, 0, 0, 99]).unwrap_err();
    /// assert_eq!(error.offset(), 4);
    /// ```
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// What was wrong.
    ///
    /// ```
    /// use curator_wire::proto::{Record, RequestHeader};
    /// use curator_wire::DecodeErrorKind;
    ///
    /// let error = RequestHeader::decode(&[0, 0, 0, 1, 0, 0, 0, 99]).unwrap_err();
    /// assert_eq!(error.kind(), &DecodeErrorKind::UnknownOpCode { code: 99 });
    /// ```
    pub fn kind(&self) -> &DecodeErrorKind {
        &self.kind
    }
}

/// What was wrong with the bytes of a [`DecodeError`].
///
/// ```
/// use curator_wire::DecodeErrorKind;
///
/// let kind = DecodeErrorKind::LengthPastEnd { len: 100, remaining: 3 };
/// assert_eq!(kind.to_string(), "a length of 100 runs past the end (3 bytes left)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// A fixed-size field (an int, a long, a bool) runs past the end of the bytes.
    #[error("needs {needed} bytes, {remaining} left")]
    Truncated {
        /// The field's size.
        needed: usize,
        /// What was left.
        remaining: usize,
    },
    /// A length or count below -1 (jute's -1 is null: read as empty).
    #[error("negative length {len}")]
    NegativeLength {
        /// The length as sent.
        len: i32,
    },
    /// A buffer, string or vector whose length prefix claims more than is left.
    #[error("a length of {len} runs past the end ({remaining} bytes left)")]
    LengthPastEnd {
        /// The claimed length (for a vector: its count times the least an element takes).
        len: usize,
        /// What was left after the prefix.
        remaining: usize,
    },
    /// A record ended before its bytes did: a decode must consume the whole frame.
    #[error("{extra} bytes left over after the record")]
    TrailingBytes {
        /// How many bytes were not read.
        extra: usize,
    },
    /// A string that is not UTF-8 (ZooKeeper servers only send UTF-8).
    #[error("not UTF-8 (valid up to byte {valid_up_to} of the string)")]
    InvalidUtf8 {
        /// The length of the valid prefix.
        valid_up_to: usize,
    },
    /// A boolean byte other than 0 or 1.
    #[error("boolean byte {value} (only 0 and 1 are written)")]
    InvalidBool {
        /// The byte.
        value: u8,
    },
    /// A frame longer than the codec's limit (checked before any of it is buffered).
    #[error("a frame of {len} bytes is over the limit of {max} bytes")]
    FrameTooLarge {
        /// The frame's length prefix.
        len: usize,
        /// The codec's limit.
        max: usize,
    },
    /// An opcode ZooKeeper does not have.
    #[error("unknown opcode {code}")]
    UnknownOpCode {
        /// The value as sent.
        code: i32,
    },
    /// A known opcode where it has no meaning: an opcode without a client request or reply, a
    /// read inside a multi, a write inside a multiRead.
    #[error("opcode {op:?} is not valid here")]
    UnexpectedOpCode {
        /// The opcode.
        op: OpCode,
    },
    /// An error code that cannot be one: every ZooKeeper error code is zero or negative
    /// (unknown negative codes are kept, see [`ErrorCode::Unknown`](crate::proto::ErrorCode::Unknown)).
    #[error("error code {code} (error codes are zero or negative)")]
    UnknownErrorCode {
        /// The value as sent.
        code: i32,
    },
    /// A watch event type ZooKeeper does not have.
    #[error("unknown event type {code}")]
    UnknownEventType {
        /// The value as sent.
        code: i32,
    },
    /// A session state ZooKeeper does not have.
    #[error("unknown keeper state {code}")]
    UnknownKeeperState {
        /// The value as sent.
        code: i32,
    },
    /// Create flags that name no create mode.
    #[error("unknown create flags {flags}")]
    UnknownCreateMode {
        /// The value as sent.
        flags: i32,
    },
    /// An addWatch mode ZooKeeper does not have.
    #[error("unknown addWatch mode {code}")]
    UnknownAddWatchMode {
        /// The value as sent.
        code: i32,
    },
    /// A watcher type (of checkWatches and removeWatches) ZooKeeper does not have.
    #[error("unknown watcher type {code}")]
    UnknownWatcherType {
        /// The value as sent.
        code: i32,
    },
}

/// A failure of a [`ClientCodec`](crate::codec::ClientCodec) or
/// [`ServerCodec`](crate::codec::ServerCodec): the connection's I/O, bytes that are not the
/// protocol, or a frame too long to send.
///
/// After an error the stream is out of step (a frame's end is no longer known): close the
/// connection.
///
/// ```
/// use curator_wire::{CodecError, DecodeErrorKind};
/// use curator_wire::codec::ClientCodec;
/// use bytes::BytesMut;
/// use tokio_util::codec::Decoder;
///
/// let mut codec = ClientCodec::new().with_max_frame(64);
/// let mut input = BytesMut::from(&[0u8, 0, 1, 0][..]); // a 256-byte frame is announced
/// match codec.decode(&mut input) {
///     Err(CodecError::Decode(error)) => {
///         assert_eq!(error.kind(), &DecodeErrorKind::FrameTooLarge { len: 256, max: 64 });
///     }
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// Reading or writing the connection failed.
    #[error("the connection failed: {0}")]
    Io(#[from] std::io::Error),
    /// The peer sent bytes that are not the protocol.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// A frame to send is longer than a length prefix can say (over `i32::MAX` bytes).
    #[error("a frame of {len} bytes cannot be sent (over {max} bytes)")]
    FrameTooLong {
        /// The frame's length.
        len: usize,
        /// The longest frame a length prefix can say.
        max: usize,
    },
}
