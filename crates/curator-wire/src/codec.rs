//! The framed stream: [`tokio_util::codec`] encoders and decoders for each side of a
//! connection.
//!
//! Every frame is a 4-byte big-endian length, then that many bytes. A client sends a
//! [`ConnectRequest`], then requests (a [`RequestHeader`] and a body); a server sends a
//! [`ConnectResponse`], then replies and notifications (a [`ReplyHeader`] and a body). The
//! decoders know which frame comes first.
//!
//! A client's [`ClientCodec`] hands replies out as a header and the raw body
//! ([`ReplyFrame`]): a reply does not say which request it answers beyond its xid, so the
//! session reads the body with the opcode of its oldest pending request
//! ([`ReplyFrame::decode`]), or as a notification ([`ReplyFrame::decode_event`]). A server's
//! [`ServerCodec`] hands requests out the same way ([`RequestFrame`]), so that a server model
//! can answer a body it cannot read with an error code instead of dropping the connection.
//!
//! # Limits
//! Each decoder refuses a frame longer than its `max_frame` as soon as the length prefix has
//! arrived, before buffering any of it ([`FrameTooLarge`](crate::DecodeErrorKind::FrameTooLarge)),
//! and a frame under the limit grows the read buffer only as its bytes arrive (at most
//! 1 MiB ahead), so a peer that announces a long frame and sends nothing costs nothing.
//!
//! - [`ServerCodec`]: [`JUTE_MAX_BUFFER`] (`0xfffff`), what ZooKeeper servers accept by default
//!   (`jute.maxbuffer`).
//! - [`ClientCodec`]: [`DEFAULT_CLIENT_MAX_FRAME`] (128 MiB). ZooKeeper servers do not bound
//!   what they send: a listing of a large directory, or a multiRead of many nodes, can be
//!   longer than 1 MiB, and curator-rs reads such listings by default (the framework's
//!   `max_listing_bytes` is unlimited unless set). The Java client's default
//!   (`jute.maxbuffer`, `0xfffff`) drops the connection on such a reply and retries the same
//!   read forever. 128 MiB is about 2.4 million names of 50 bytes, well past what a server can
//!   list in reasonable time, and still a bound on what one reply can take. Set
//!   [`ClientCodec::with_max_frame`] to [`JUTE_MAX_BUFFER`] to refuse what a Java client would.
//!
//! Frames to send are not limited beyond what a length prefix can say (`i32::MAX`); a server
//! drops the connection on a request over its `jute.maxbuffer`.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::error::{CodecError, DecodeError, DecodeErrorKind};
use crate::jute::{Jute, Reader, decode_exact};
use crate::proto::{
    ConnectRequest, ConnectResponse, ErrorCode, NOTIFICATION_XID, OpCode, ReplyHeader, Request,
    RequestHeader, Response, WatcherEvent,
};

/// ZooKeeper's default `jute.maxbuffer`: the longest frame a server accepts (and a Java
/// client, by default): one byte short of 1 MiB. The default limit of [`ServerCodec`].
///
/// ```
/// use curator_wire::codec::{ClientCodec, JUTE_MAX_BUFFER};
///
/// // A client that refuses what a Java client with default settings refuses.
/// let codec = ClientCodec::new().with_max_frame(JUTE_MAX_BUFFER);
/// # drop(codec);
/// ```
pub const JUTE_MAX_BUFFER: usize = 0xfffff;

/// The default limit of [`ClientCodec`]: 128 MiB (see [the module docs](self) for why).
///
/// ```
/// use curator_wire::codec::{ClientCodec, DEFAULT_CLIENT_MAX_FRAME};
///
/// assert_eq!(ClientCodec::default().max_frame(), DEFAULT_CLIENT_MAX_FRAME);
/// ```
pub const DEFAULT_CLIENT_MAX_FRAME: usize = 128 * 1024 * 1024;

/// The length prefix.
const PREFIX_LEN: usize = 4;
/// A request header: xid, type.
const REQUEST_HEADER_LEN: usize = 8;
/// A reply header: xid, zxid, err.
const REPLY_HEADER_LEN: usize = 16;
/// How far ahead of the bytes received a partial frame reserves buffer.
const RESERVE_AHEAD: usize = 1 << 20;

/// What a client sends: the handshake, then requests.
///
/// ```
/// use curator_wire::codec::{ClientFrame, RequestFrame};
/// use curator_wire::proto::{ConnectRequest, Request};
///
/// let frames = [
///     ClientFrame::Connect(ConnectRequest::new_session(30_000, false)),
///     ClientFrame::Request(RequestFrame::new(1, &Request::WhoAmI)),
/// ];
/// # drop(frames);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientFrame {
    /// The first frame.
    Connect(ConnectRequest),
    /// Every later frame.
    Request(RequestFrame),
}

/// What a server sends: the handshake's answer, then replies and notifications.
///
/// ```
/// use curator_wire::codec::{ReplyFrame, ServerFrame};
/// use curator_wire::proto::{ErrorCode, PING_XID, Response};
///
/// let pong = ServerFrame::Reply(ReplyFrame::ok(PING_XID, 0x10, &Response::Empty));
/// # drop(pong);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerFrame {
    /// The first frame.
    Connected(ConnectResponse),
    /// Every later frame.
    Reply(ReplyFrame),
}

/// A request: its header and its body's bytes.
///
/// ```
/// use curator_wire::codec::RequestFrame;
/// use curator_wire::proto::{ExistsRequest, OpCode, Request};
///
/// let request = Request::Exists(ExistsRequest { path: "/a".into(), watch: true });
/// let frame = RequestFrame::new(5, &request);
/// assert_eq!((frame.header.xid, frame.header.op_code), (5, OpCode::Exists));
/// assert_eq!(frame.decode().unwrap(), request);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFrame {
    /// The xid and opcode.
    pub header: RequestHeader,
    /// The body, as [`Request::encode`] writes it.
    pub body: Bytes,
}

impl RequestFrame {
    /// The frame of `request` with `xid` (for ping, auth and setWatches, the reserved xids
    /// [`PING_XID`](crate::proto::PING_XID), [`AUTH_XID`](crate::proto::AUTH_XID),
    /// [`SET_WATCHES_XID`](crate::proto::SET_WATCHES_XID)).
    ///
    /// ```
    /// use curator_wire::codec::RequestFrame;
    /// use curator_wire::proto::{PING_XID, Request};
    ///
    /// let ping = RequestFrame::new(PING_XID, &Request::Ping);
    /// assert!(ping.body.is_empty());
    /// ```
    pub fn new(xid: i32, request: &Request) -> Self {
        let mut body = BytesMut::new();
        request.encode(&mut body);
        Self {
            header: RequestHeader {
                xid,
                op_code: request.op_code(),
            },
            body: body.freeze(),
        }
    }

    /// Reads the body by the header's opcode.
    ///
    /// # Errors
    /// [`DecodeError`] as [`Request::decode`]; offsets count from the start of the frame's
    /// payload.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use curator_wire::codec::RequestFrame;
    /// use curator_wire::proto::{OpCode, RequestHeader};
    ///
    /// let frame = RequestFrame {
    ///     header: RequestHeader { xid: 1, op_code: OpCode::Delete },
    ///     body: Bytes::from_static(&[0, 0, 0, 9, b'/']), // a path of 9 bytes, 1 sent
    /// };
    /// let error = frame.decode().unwrap_err();
    /// assert_eq!((error.field(), error.offset()), ("path", 8));
    /// ```
    pub fn decode(&self) -> Result<Request, DecodeError> {
        Request::decode_at(self.header.op_code, &self.body, REQUEST_HEADER_LEN)
    }

    fn parse(frame: Bytes) -> Result<Self, DecodeError> {
        let mut reader = Reader::new(&frame, 0);
        let header = RequestHeader::read(&mut reader)?;
        let body = frame.slice(reader.position()..);
        Ok(Self { header, body })
    }
}

/// A reply or a notification: its header and its body's bytes.
///
/// ```
/// use curator_wire::codec::ReplyFrame;
/// use curator_wire::proto::{ErrorCode, OpCode, Response, Stat};
///
/// let reply = ReplyFrame::ok(3, 0x20, &Response::Stat(Stat::default()));
/// assert_eq!(reply.decode(OpCode::Exists).unwrap(), Ok(Response::Stat(Stat::default())));
///
/// let missing = ReplyFrame::error(4, 0x20, ErrorCode::NoNode);
/// assert_eq!(missing.decode(OpCode::Exists).unwrap(), Err(ErrorCode::NoNode));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyFrame {
    /// The xid, zxid and error code.
    pub header: ReplyHeader,
    /// The body: a [`Response`], a [`WatcherEvent`] for a notification, or nothing for an
    /// error.
    pub body: Bytes,
}

impl ReplyFrame {
    /// A successful reply to the request with `xid`.
    ///
    /// ```
    /// use curator_wire::codec::ReplyFrame;
    /// use curator_wire::proto::{ErrorCode, Response};
    ///
    /// let reply = ReplyFrame::ok(7, 0x30, &Response::Empty);
    /// assert_eq!(reply.header.err, ErrorCode::Ok);
    /// ```
    pub fn ok(xid: i32, zxid: i64, response: &Response) -> Self {
        let mut body = BytesMut::new();
        response.encode(&mut body);
        Self {
            header: ReplyHeader {
                xid,
                zxid,
                err: ErrorCode::Ok,
            },
            body: body.freeze(),
        }
    }

    /// A failed reply to the request with `xid`: the code in the header, no body.
    ///
    /// ```
    /// use curator_wire::codec::ReplyFrame;
    /// use curator_wire::proto::ErrorCode;
    ///
    /// assert!(ReplyFrame::error(7, 0x30, ErrorCode::BadVersion).body.is_empty());
    /// ```
    pub fn error(xid: i32, zxid: i64, err: ErrorCode) -> Self {
        Self {
            header: ReplyHeader { xid, zxid, err },
            body: Bytes::new(),
        }
    }

    /// A watch notification. `zxid` is the change's zxid as 3.9 servers send it, or -1 as
    /// older servers do.
    ///
    /// ```
    /// use curator_wire::codec::ReplyFrame;
    /// use curator_wire::proto::{EventType, KeeperState, WatcherEvent};
    ///
    /// let event = WatcherEvent {
    ///     event_type: EventType::NodeDeleted,
    ///     state: KeeperState::SyncConnected,
    ///     path: "/a".into(),
    /// };
    /// let frame = ReplyFrame::notification(-1, &event);
    /// assert!(frame.header.is_notification());
    /// assert_eq!(frame.decode_event().unwrap(), event);
    /// ```
    pub fn notification(zxid: i64, event: &WatcherEvent) -> Self {
        let mut body = BytesMut::new();
        event.write(&mut body);
        Self {
            header: ReplyHeader {
                xid: NOTIFICATION_XID,
                zxid,
                err: ErrorCode::Ok,
            },
            body: body.freeze(),
        }
    }

    /// Reads the reply to a request with opcode `op`: `Ok(Ok(response))` when the header says
    /// [`ErrorCode::Ok`], `Ok(Err(code))` when the server reports an error (the body, if any,
    /// is not read, as the Java client does not read it).
    ///
    /// # Errors
    /// [`DecodeError`] when a successful reply's body is not that opcode's reply (see
    /// [`Response::decode`]); offsets count from the start of the frame's payload.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use curator_wire::codec::ReplyFrame;
    /// use curator_wire::proto::{ErrorCode, OpCode, ReplyHeader};
    ///
    /// let frame = ReplyFrame {
    ///     header: ReplyHeader { xid: 1, zxid: 2, err: ErrorCode::Ok },
    ///     body: Bytes::from_static(&[0, 0]), // not a Stat
    /// };
    /// let error = frame.decode(OpCode::SetData).unwrap_err();
    /// assert_eq!((error.record(), error.field(), error.offset()), ("Stat", "czxid", 16));
    /// ```
    pub fn decode(&self, op: OpCode) -> Result<Result<Response, ErrorCode>, DecodeError> {
        if !self.header.err.is_ok() {
            return Ok(Err(self.header.err));
        }
        Response::decode_at(op, &self.body, REPLY_HEADER_LEN).map(Ok)
    }

    /// Reads the body as a watch notification (for a header with xid
    /// [`NOTIFICATION_XID`]).
    ///
    /// # Errors
    /// [`DecodeError`] when the body is not a [`WatcherEvent`].
    ///
    /// ```
    /// use bytes::Bytes;
    /// use curator_wire::codec::ReplyFrame;
    /// use curator_wire::proto::{ErrorCode, ReplyHeader};
    /// use curator_wire::DecodeErrorKind;
    ///
    /// let frame = ReplyFrame {
    ///     header: ReplyHeader { xid: -1, zxid: -1, err: ErrorCode::Ok },
    ///     body: Bytes::from_static(&[0, 0, 0, 9, 0, 0, 0, 3, 0, 0, 0, 0]),
    /// };
    /// let error = frame.decode_event().unwrap_err();
    /// assert_eq!(error.kind(), &DecodeErrorKind::UnknownEventType { code: 9 });
    /// ```
    pub fn decode_event(&self) -> Result<WatcherEvent, DecodeError> {
        decode_exact(
            &self.body,
            REPLY_HEADER_LEN,
            "WatcherEvent",
            WatcherEvent::read,
        )
    }

    fn parse(frame: Bytes) -> Result<Self, DecodeError> {
        let mut reader = Reader::new(&frame, 0);
        let header = ReplyHeader::read(&mut reader)?;
        let body = frame.slice(reader.position()..);
        Ok(Self { header, body })
    }
}

/// The client side of a connection: encodes [`ClientFrame`]s, decodes [`ServerFrame`]s (the
/// first a [`ServerFrame::Connected`], every later one a [`ServerFrame::Reply`]).
///
/// One codec per connection: it remembers whether the handshake's answer has arrived.
///
/// ```
/// use bytes::BytesMut;
/// use curator_wire::codec::{ClientCodec, ClientFrame, ServerFrame};
/// use curator_wire::proto::{ConnectRequest, ConnectResponse, Record};
/// use tokio_util::codec::{Decoder, Encoder};
///
/// let mut codec = ClientCodec::new();
/// let mut out = BytesMut::new();
/// codec.encode(ClientFrame::Connect(ConnectRequest::new_session(30_000, false)), &mut out).unwrap();
/// assert_eq!(&out[..4], &[0, 0, 0, 45]); // the length, then the record
///
/// let answer = ConnectResponse { timeout: 30_000, session_id: 1, passwd: vec![1; 16], read_only: Some(false), ..Default::default() };
/// let mut input = BytesMut::new();
/// input.extend_from_slice(&(answer.to_bytes().len() as i32).to_be_bytes());
/// input.extend_from_slice(&answer.to_bytes());
/// assert_eq!(codec.decode(&mut input).unwrap(), Some(ServerFrame::Connected(answer)));
/// ```
#[derive(Debug, Clone)]
pub struct ClientCodec {
    max_frame: usize,
    connected: bool,
}

impl ClientCodec {
    /// A codec for a new connection, with [`DEFAULT_CLIENT_MAX_FRAME`].
    ///
    /// ```
    /// use curator_wire::codec::{ClientCodec, DEFAULT_CLIENT_MAX_FRAME};
    ///
    /// assert_eq!(ClientCodec::new().max_frame(), DEFAULT_CLIENT_MAX_FRAME);
    /// ```
    pub fn new() -> Self {
        Self {
            max_frame: DEFAULT_CLIENT_MAX_FRAME,
            connected: false,
        }
    }

    /// Refuses frames longer than `max_frame` bytes (after the length prefix).
    ///
    /// ```
    /// use curator_wire::codec::{ClientCodec, JUTE_MAX_BUFFER};
    ///
    /// let like_java = ClientCodec::new().with_max_frame(JUTE_MAX_BUFFER);
    /// assert_eq!(like_java.max_frame(), 0xfffff);
    /// ```
    pub fn with_max_frame(mut self, max_frame: usize) -> Self {
        self.max_frame = max_frame;
        self
    }

    /// The longest frame accepted.
    ///
    /// ```
    /// use curator_wire::codec::ClientCodec;
    ///
    /// assert_eq!(ClientCodec::new().with_max_frame(100).max_frame(), 100);
    /// ```
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }
}

impl Default for ClientCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder for ClientCodec {
    type Item = ServerFrame;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<ServerFrame>, CodecError> {
        let Some(frame) = split_frame(src, self.max_frame)? else {
            return Ok(None);
        };
        if self.connected {
            return Ok(Some(ServerFrame::Reply(ReplyFrame::parse(frame)?)));
        }
        let response = decode_exact(&frame, 0, "ConnectResponse", ConnectResponse::read)?;
        self.connected = true;
        Ok(Some(ServerFrame::Connected(response)))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<ServerFrame>, CodecError> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None if src.is_empty() => Ok(None),
            None => Err(cut_frame(src).into()),
        }
    }
}

impl Encoder<ClientFrame> for ClientCodec {
    type Error = CodecError;

    fn encode(&mut self, frame: ClientFrame, dst: &mut BytesMut) -> Result<(), CodecError> {
        put_frame(dst, |dst| match &frame {
            ClientFrame::Connect(request) => request.write(dst),
            ClientFrame::Request(request) => {
                request.header.write(dst);
                dst.put_slice(&request.body);
            }
        })
    }
}

/// The server side of a connection: decodes [`ClientFrame`]s (the first a
/// [`ClientFrame::Connect`], every later one a [`ClientFrame::Request`]), encodes
/// [`ServerFrame`]s. For a server model, and for tests that play a server.
///
/// ```
/// use bytes::BytesMut;
/// use curator_wire::codec::{ClientCodec, ClientFrame, RequestFrame, ServerCodec};
/// use curator_wire::proto::{ConnectRequest, Request};
/// use tokio_util::codec::{Decoder, Encoder};
///
/// let (mut client, mut server) = (ClientCodec::new(), ServerCodec::new());
/// let mut wire = BytesMut::new();
/// let hello = ConnectRequest::new_session(30_000, false);
/// client.encode(ClientFrame::Connect(hello.clone()), &mut wire).unwrap();
/// client.encode(ClientFrame::Request(RequestFrame::new(1, &Request::WhoAmI)), &mut wire).unwrap();
///
/// assert_eq!(server.decode(&mut wire).unwrap(), Some(ClientFrame::Connect(hello)));
/// let Some(ClientFrame::Request(request)) = server.decode(&mut wire).unwrap() else { panic!() };
/// assert_eq!(request.decode().unwrap(), Request::WhoAmI);
/// ```
#[derive(Debug, Clone)]
pub struct ServerCodec {
    max_frame: usize,
    connected: bool,
}

impl ServerCodec {
    /// A codec for a new connection, with [`JUTE_MAX_BUFFER`].
    ///
    /// ```
    /// use curator_wire::codec::{JUTE_MAX_BUFFER, ServerCodec};
    ///
    /// assert_eq!(ServerCodec::new().max_frame(), JUTE_MAX_BUFFER);
    /// ```
    pub fn new() -> Self {
        Self {
            max_frame: JUTE_MAX_BUFFER,
            connected: false,
        }
    }

    /// Refuses frames longer than `max_frame` bytes (a server's `jute.maxbuffer`).
    ///
    /// ```
    /// use curator_wire::codec::ServerCodec;
    ///
    /// assert_eq!(ServerCodec::new().with_max_frame(4 << 20).max_frame(), 4 << 20);
    /// ```
    pub fn with_max_frame(mut self, max_frame: usize) -> Self {
        self.max_frame = max_frame;
        self
    }

    /// The longest frame accepted.
    ///
    /// ```
    /// use curator_wire::codec::ServerCodec;
    ///
    /// assert_eq!(ServerCodec::default().max_frame(), 0xfffff);
    /// ```
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }
}

impl Default for ServerCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder for ServerCodec {
    type Item = ClientFrame;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<ClientFrame>, CodecError> {
        let Some(frame) = split_frame(src, self.max_frame)? else {
            return Ok(None);
        };
        if self.connected {
            return Ok(Some(ClientFrame::Request(RequestFrame::parse(frame)?)));
        }
        let request = decode_exact(&frame, 0, "ConnectRequest", ConnectRequest::read)?;
        self.connected = true;
        Ok(Some(ClientFrame::Connect(request)))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<ClientFrame>, CodecError> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None if src.is_empty() => Ok(None),
            None => Err(cut_frame(src).into()),
        }
    }
}

impl Encoder<ServerFrame> for ServerCodec {
    type Error = CodecError;

    fn encode(&mut self, frame: ServerFrame, dst: &mut BytesMut) -> Result<(), CodecError> {
        put_frame(dst, |dst| match &frame {
            ServerFrame::Connected(response) => response.write(dst),
            ServerFrame::Reply(reply) => {
                reply.header.write(dst);
                dst.put_slice(&reply.body);
            }
        })
    }
}

/// Takes one whole frame's payload off `src`, or `None` until it has arrived. The length is
/// checked before any buffer is reserved for the frame.
fn split_frame(src: &mut BytesMut, max_frame: usize) -> Result<Option<Bytes>, DecodeError> {
    let Some(prefix) = src.first_chunk::<PREFIX_LEN>() else {
        src.reserve(PREFIX_LEN - src.len());
        return Ok(None);
    };
    let len = i32::from_be_bytes(*prefix);
    let Ok(len) = usize::try_from(len) else {
        return Err(DecodeError::new(
            "frame",
            "length",
            0,
            DecodeErrorKind::NegativeLength { len },
        ));
    };
    if len > max_frame {
        return Err(DecodeError::new(
            "frame",
            "length",
            0,
            DecodeErrorKind::FrameTooLarge {
                len,
                max: max_frame,
            },
        ));
    }
    let missing = (PREFIX_LEN + len).saturating_sub(src.len());
    if missing > 0 {
        src.reserve(missing.min(RESERVE_AHEAD));
        return Ok(None);
    }
    src.advance(PREFIX_LEN);
    Ok(Some(src.split_to(len).freeze()))
}

/// The error for a stream that ended inside a frame.
fn cut_frame(src: &BytesMut) -> DecodeError {
    match src.first_chunk::<PREFIX_LEN>() {
        None => DecodeError::new(
            "frame",
            "length",
            0,
            DecodeErrorKind::Truncated {
                needed: PREFIX_LEN,
                remaining: src.len(),
            },
        ),
        Some(prefix) => DecodeError::new(
            "frame",
            "payload",
            PREFIX_LEN,
            DecodeErrorKind::Truncated {
                needed: usize::try_from(i32::from_be_bytes(*prefix)).unwrap_or(0),
                remaining: src.len() - PREFIX_LEN,
            },
        ),
    }
}

/// Appends a length-prefixed frame whose payload `write` writes.
fn put_frame(dst: &mut BytesMut, write: impl FnOnce(&mut BytesMut)) -> Result<(), CodecError> {
    let start = dst.len();
    dst.put_i32(0);
    write(dst);
    let len = dst.len() - start - PREFIX_LEN;
    match i32::try_from(len) {
        Ok(prefix) => {
            dst[start..start + PREFIX_LEN].copy_from_slice(&prefix.to_be_bytes());
            Ok(())
        }
        Err(_) => {
            dst.truncate(start);
            Err(CodecError::FrameTooLong {
                len,
                max: i32::MAX as usize,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{EventType, KeeperState, Record, Stat};

    fn framed(payload: &[u8]) -> BytesMut {
        let mut bytes = BytesMut::new();
        bytes.put_i32(i32::try_from(payload.len()).unwrap());
        bytes.put_slice(payload);
        bytes
    }

    fn connected_client() -> ClientCodec {
        let mut codec = ClientCodec::new();
        let mut input = framed(
            &ConnectResponse {
                passwd: vec![0; 16],
                read_only: Some(false),
                ..ConnectResponse::default()
            }
            .to_bytes(),
        );
        assert!(matches!(
            codec.decode(&mut input),
            Ok(Some(ServerFrame::Connected(_)))
        ));
        codec
    }

    #[test]
    fn partial_frames_wait_for_their_bytes() {
        let mut codec = connected_client();
        let reply = ReplyFrame::ok(1, 2, &Response::Stat(Stat::default()));
        let mut wire = BytesMut::new();
        ServerCodec::new()
            .encode(ServerFrame::Reply(reply.clone()), &mut wire)
            .unwrap();
        let mut input = BytesMut::new();
        for (i, byte) in wire.iter().enumerate() {
            input.put_u8(*byte);
            let decoded = codec.decode(&mut input).unwrap();
            if i + 1 < wire.len() {
                assert_eq!(decoded, None, "after {} bytes", i + 1);
            } else {
                assert_eq!(decoded, Some(ServerFrame::Reply(reply.clone())));
            }
        }
        assert!(input.is_empty());
    }

    #[test]
    fn an_oversized_frame_is_refused_before_its_bytes_are_buffered() {
        let mut codec = ClientCodec::new().with_max_frame(1000);
        let mut input = BytesMut::new();
        input.put_i32(1001);
        let capacity = input.capacity();
        let error = codec.decode(&mut input).unwrap_err();
        let CodecError::Decode(error) = error else {
            panic!("{error:?}")
        };
        assert_eq!(
            error.kind(),
            &DecodeErrorKind::FrameTooLarge {
                len: 1001,
                max: 1000
            }
        );
        assert_eq!(input.capacity(), capacity, "nothing was reserved");
    }

    #[test]
    fn a_frame_under_the_limit_reserves_only_a_step_ahead() {
        let mut codec = ClientCodec::new();
        let mut input = BytesMut::new();
        input.put_i32(100 << 20);
        assert_eq!(codec.decode(&mut input).unwrap(), None);
        assert!(
            input.capacity() <= 2 * RESERVE_AHEAD + PREFIX_LEN,
            "{} bytes reserved for a 100 MiB frame announced",
            input.capacity()
        );
    }

    #[test]
    fn a_negative_frame_length_is_refused() {
        let mut codec = ServerCodec::new();
        let mut input = BytesMut::new();
        input.put_i32(-5);
        let CodecError::Decode(error) = codec.decode(&mut input).unwrap_err() else {
            panic!()
        };
        assert_eq!(error.kind(), &DecodeErrorKind::NegativeLength { len: -5 });
        assert_eq!((error.record(), error.field()), ("frame", "length"));
    }

    #[test]
    fn a_stream_that_ends_inside_a_frame_is_an_error() {
        let mut codec = connected_client();
        let mut input = framed(&[0; 20]);
        input.truncate(10);
        let CodecError::Decode(error) = codec.decode_eof(&mut input).unwrap_err() else {
            panic!()
        };
        assert_eq!(
            error.kind(),
            &DecodeErrorKind::Truncated {
                needed: 20,
                remaining: 6
            }
        );
        let mut input = BytesMut::from(&[0u8, 0][..]);
        let CodecError::Decode(error) = codec.decode_eof(&mut input).unwrap_err() else {
            panic!()
        };
        assert_eq!(error.field(), "length");
        assert_eq!(codec.decode_eof(&mut BytesMut::new()).unwrap(), None);
    }

    #[test]
    fn a_reply_shorter_than_its_header_is_refused() {
        let mut codec = connected_client();
        let mut input = framed(&[0; 15]);
        let CodecError::Decode(error) = codec.decode(&mut input).unwrap_err() else {
            panic!()
        };
        assert_eq!((error.record(), error.field()), ("ReplyHeader", "err"));
    }

    #[test]
    fn a_connect_response_with_garbage_after_it_is_refused() {
        let mut codec = ClientCodec::new();
        let mut payload = ConnectResponse::default().to_bytes().to_vec();
        payload.extend_from_slice(&[0, 0]); // readOnly, then one byte too many
        let CodecError::Decode(error) = codec.decode(&mut framed(&payload)).unwrap_err() else {
            panic!()
        };
        assert_eq!(error.kind(), &DecodeErrorKind::TrailingBytes { extra: 1 });
        assert_eq!(error.record(), "ConnectResponse");
    }

    #[test]
    fn error_replies_are_not_read_and_garbage_after_a_body_is_refused() {
        let mut reply = ReplyFrame::error(3, 4, ErrorCode::NoNode);
        reply.body = Bytes::from_static(b"ignored");
        assert_eq!(
            reply.decode(OpCode::GetData).unwrap(),
            Err(ErrorCode::NoNode)
        );

        let mut body = BytesMut::new();
        Response::Stat(Stat::default()).encode(&mut body);
        body.put_u8(0);
        let reply = ReplyFrame {
            header: ReplyHeader {
                xid: 3,
                zxid: 4,
                err: ErrorCode::Ok,
            },
            body: body.freeze(),
        };
        let error = reply.decode(OpCode::Exists).unwrap_err();
        assert_eq!(error.kind(), &DecodeErrorKind::TrailingBytes { extra: 1 });
        assert_eq!(error.offset(), 16 + 68);
    }

    #[test]
    fn notifications_decode_with_unknown_types_refused() {
        let event = WatcherEvent {
            event_type: EventType::NodeChildrenChanged,
            state: KeeperState::SyncConnected,
            path: "/x".into(),
        };
        assert_eq!(
            ReplyFrame::notification(-1, &event).decode_event().unwrap(),
            event
        );
        let mut body = event.to_bytes().to_vec();
        body[4..8].copy_from_slice(&2i32.to_be_bytes()); // keeper state 2 does not exist
        let frame = ReplyFrame {
            body: body.into(),
            ..ReplyFrame::notification(-1, &event)
        };
        let error = frame.decode_event().unwrap_err();
        assert_eq!(
            error.kind(),
            &DecodeErrorKind::UnknownKeeperState { code: 2 }
        );
        assert_eq!(error.offset(), 20);
    }

    #[test]
    fn a_request_with_an_unknown_opcode_is_refused() {
        let mut codec = ServerCodec::new();
        let mut input = framed(&ConnectRequest::new_session(1, false).to_bytes());
        assert!(codec.decode(&mut input).unwrap().is_some());
        let mut input = framed(&[0, 0, 0, 1, 0, 0, 0, 50]);
        let CodecError::Decode(error) = codec.decode(&mut input).unwrap_err() else {
            panic!()
        };
        assert_eq!(error.kind(), &DecodeErrorKind::UnknownOpCode { code: 50 });
        assert_eq!(error.offset(), 4);
    }
}
