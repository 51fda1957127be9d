//! The handshake (`ConnectRequest`, `ConnectResponse`) and the headers of every later frame
//! (`RequestHeader`, `ReplyHeader`).

use bytes::{BufMut, BytesMut};

use super::{ErrorCode, NOTIFICATION_XID, OpCode};
use crate::error::DecodeError;
use crate::jute::{Jute, Reader, Redacted, impl_record, put_bool, put_buffer};

/// The length of the password of a new session: 16 zero bytes (servers such as ClickHouse
/// Keeper refuse an empty one).
pub const NEW_SESSION_PASSWORD_LEN: usize = 16;

/// The first frame a client sends: open a new session, or take an existing one over.
///
/// `read_only` is the last field, which clients before ZooKeeper 3.4 did not send; `None`
/// means it was absent (decoding accepts both forms, and encoding writes what is there, so a
/// server model can answer an old client in kind).
///
/// ```
/// use curator_wire::proto::{ConnectRequest, Record};
///
/// let request = ConnectRequest::new_session(30_000, false);
/// assert_eq!(request.passwd, vec![0; 16]);
/// assert_eq!(ConnectRequest::decode(&request.to_bytes()).unwrap(), request);
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ConnectRequest {
    /// Always 0.
    pub protocol_version: i32,
    /// The last zxid the client saw (0 for a new session): a server whose data is older
    /// refuses the session.
    pub last_zxid_seen: i64,
    /// The session timeout the client asks for, in milliseconds.
    pub timeout: i32,
    /// The session to take over; 0 for a new one.
    pub session_id: i64,
    /// The session's password; 16 zero bytes for a new one.
    pub passwd: Vec<u8>,
    /// Whether the client accepts a read-only server; `None` if not sent.
    pub read_only: Option<bool>,
}

impl ConnectRequest {
    /// The request for a new session, as the Java client sends it.
    ///
    /// ```
    /// use curator_wire::proto::ConnectRequest;
    ///
    /// let request = ConnectRequest::new_session(10_000, true);
    /// assert_eq!((request.session_id, request.read_only), (0, Some(true)));
    /// ```
    pub fn new_session(timeout_ms: i32, can_be_read_only: bool) -> Self {
        Self {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout: timeout_ms,
            session_id: 0,
            passwd: vec![0; NEW_SESSION_PASSWORD_LEN],
            read_only: Some(can_be_read_only),
        }
    }
}

impl std::fmt::Debug for ConnectRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectRequest")
            .field("protocol_version", &self.protocol_version)
            .field("last_zxid_seen", &self.last_zxid_seen)
            .field("timeout", &self.timeout)
            .field("session_id", &format_args!("{:#x}", self.session_id))
            .field("passwd", &Redacted(self.passwd.len()))
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl Jute for ConnectRequest {
    const MIN_LEN: usize = 28;

    fn write(&self, buf: &mut BytesMut) {
        buf.put_i32(self.protocol_version);
        buf.put_i64(self.last_zxid_seen);
        buf.put_i32(self.timeout);
        buf.put_i64(self.session_id);
        put_buffer(buf, &self.passwd);
        if let Some(read_only) = self.read_only {
            put_bool(buf, read_only);
        }
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("ConnectRequest", |r| {
            Ok(ConnectRequest {
                protocol_version: r.i32("protocolVersion")?,
                last_zxid_seen: r.i64("lastZxidSeen")?,
                timeout: r.i32("timeOut")?,
                session_id: r.i64("sessionId")?,
                passwd: r.buffer("passwd")?,
                read_only: if r.is_empty() {
                    None
                } else {
                    Some(r.bool("readOnly")?)
                },
            })
        })
    }
}

/// The server's answer to a [`ConnectRequest`]: the first frame a server sends.
///
/// A refused session (expired, or a server behind the client's last zxid) comes back with
/// `timeout` 0 and `session_id` 0, then the server closes the connection. `read_only` is as in
/// [`ConnectRequest`]: `None` if the server did not send it.
///
/// ```
/// use curator_wire::proto::{ConnectResponse, Record};
///
/// let response = ConnectResponse {
///     protocol_version: 0,
///     timeout: 4000,
///     session_id: 0x1234,
///     passwd: vec![7; 16],
///     read_only: Some(false),
/// };
/// assert_eq!(ConnectResponse::decode(&response.to_bytes()).unwrap(), response);
/// assert!(!format!("{response:?}").contains("7, 7"), "the password is not printed");
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ConnectResponse {
    /// Always 0.
    pub protocol_version: i32,
    /// The negotiated session timeout in milliseconds; 0 for a refused session.
    pub timeout: i32,
    /// The session id; 0 for a refused session.
    pub session_id: i64,
    /// The session's password, to take the session over on another connection.
    pub passwd: Vec<u8>,
    /// Whether the server is read-only; `None` if not sent.
    pub read_only: Option<bool>,
}

impl std::fmt::Debug for ConnectResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectResponse")
            .field("protocol_version", &self.protocol_version)
            .field("timeout", &self.timeout)
            .field("session_id", &format_args!("{:#x}", self.session_id))
            .field("passwd", &Redacted(self.passwd.len()))
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl Jute for ConnectResponse {
    const MIN_LEN: usize = 20;

    fn write(&self, buf: &mut BytesMut) {
        buf.put_i32(self.protocol_version);
        buf.put_i32(self.timeout);
        buf.put_i64(self.session_id);
        put_buffer(buf, &self.passwd);
        if let Some(read_only) = self.read_only {
            put_bool(buf, read_only);
        }
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("ConnectResponse", |r| {
            Ok(ConnectResponse {
                protocol_version: r.i32("protocolVersion")?,
                timeout: r.i32("timeOut")?,
                session_id: r.i64("sessionId")?,
                passwd: r.buffer("passwd")?,
                read_only: if r.is_empty() {
                    None
                } else {
                    Some(r.bool("readOnly")?)
                },
            })
        })
    }
}

/// The header of every request after the handshake: the request's xid and type. The body
/// that follows depends on the type.
///
/// ```
/// use curator_wire::proto::{OpCode, Record, RequestHeader};
///
/// let header = RequestHeader { xid: 7, op_code: OpCode::GetData };
/// assert_eq!(&header.to_bytes()[..], &[0, 0, 0, 7, 0, 0, 0, 4]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestHeader {
    /// The request's number: increasing per request on a session; negative ones are reserved
    /// ([`PING_XID`](super::PING_XID), [`AUTH_XID`](super::AUTH_XID),
    /// [`SET_WATCHES_XID`](super::SET_WATCHES_XID)).
    pub xid: i32,
    /// The request's type.
    pub op_code: OpCode,
}

impl Jute for RequestHeader {
    const MIN_LEN: usize = 8;

    fn write(&self, buf: &mut BytesMut) {
        buf.put_i32(self.xid);
        buf.put_i32(self.op_code.code());
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("RequestHeader", |r| {
            Ok(RequestHeader {
                xid: r.i32("xid")?,
                op_code: OpCode::read(r, "type")?,
            })
        })
    }
}

/// The header of every frame a server sends after the handshake (16 bytes).
///
/// `xid` is the request's (replies come back in the order requests were sent), or a reserved
/// one: [`NOTIFICATION_XID`] for a watch notification,
/// [`PING_XID`](super::PING_XID), [`AUTH_XID`](super::AUTH_XID),
/// [`SET_WATCHES_XID`](super::SET_WATCHES_XID) for those replies.
///
/// `zxid` is the server's last processed zxid for a reply. For a notification it is -1 from
/// servers before 3.9, and from 3.9 on the zxid of the change that fired the watch
/// (ZOOKEEPER-4655): see [`notification_zxid`](Self::notification_zxid).
///
/// When `err` is not [`ErrorCode::Ok`] the body is to be ignored (it is usually empty; the
/// Java client never reads it).
///
/// ```
/// use curator_wire::proto::{ErrorCode, Record, ReplyHeader};
///
/// let header = ReplyHeader { xid: 3, zxid: 0x10, err: ErrorCode::NoNode };
/// assert_eq!(header.to_bytes().len(), 16);
/// assert_eq!(ReplyHeader::decode(&header.to_bytes()).unwrap(), header);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplyHeader {
    /// The xid of the request answered, or a reserved one.
    pub xid: i32,
    /// The server's last zxid (see the type's docs for notifications).
    pub zxid: i64,
    /// The outcome.
    pub err: ErrorCode,
}

impl ReplyHeader {
    /// Whether this header carries a watch notification.
    ///
    /// ```
    /// use curator_wire::proto::{ErrorCode, ReplyHeader, NOTIFICATION_XID};
    ///
    /// let header = ReplyHeader { xid: NOTIFICATION_XID, zxid: -1, err: ErrorCode::Ok };
    /// assert!(header.is_notification());
    /// ```
    pub fn is_notification(&self) -> bool {
        self.xid == NOTIFICATION_XID
    }

    /// The zxid of the change that fired a notification: `Some` only for a notification from
    /// a server that sends it (3.9 and later); `None` for replies and for older servers, which
    /// send -1.
    ///
    /// ```
    /// use curator_wire::proto::{ErrorCode, ReplyHeader, NOTIFICATION_XID};
    ///
    /// let from_3_8 = ReplyHeader { xid: NOTIFICATION_XID, zxid: -1, err: ErrorCode::Ok };
    /// let from_3_9 = ReplyHeader { zxid: 0x2a, ..from_3_8 };
    /// assert_eq!(from_3_8.notification_zxid(), None);
    /// assert_eq!(from_3_9.notification_zxid(), Some(0x2a));
    /// ```
    pub fn notification_zxid(&self) -> Option<i64> {
        (self.is_notification() && self.zxid >= 0).then_some(self.zxid)
    }
}

impl Jute for ReplyHeader {
    const MIN_LEN: usize = 16;

    fn write(&self, buf: &mut BytesMut) {
        buf.put_i32(self.xid);
        buf.put_i64(self.zxid);
        buf.put_i32(self.err.code());
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("ReplyHeader", |r| {
            Ok(ReplyHeader {
                xid: r.i32("xid")?,
                zxid: r.i64("zxid")?,
                err: ErrorCode::read(r, "err")?,
            })
        })
    }
}

impl_record!(ConnectRequest, ConnectResponse, RequestHeader, ReplyHeader);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DecodeErrorKind;
    use crate::proto::Record;

    #[test]
    fn connect_records_without_read_only_decode_as_old_peers_send_them() {
        let mut request = ConnectRequest::new_session(5000, false);
        request.read_only = None;
        let bytes = request.to_bytes();
        assert_eq!(bytes.len(), 4 + 8 + 4 + 8 + 4 + 16);
        assert_eq!(ConnectRequest::decode(&bytes).unwrap().read_only, None);

        let response = ConnectResponse {
            passwd: vec![1; 16],
            ..ConnectResponse::default()
        };
        let bytes = response.to_bytes();
        assert_eq!(bytes.len(), 4 + 4 + 8 + 4 + 16);
        assert_eq!(ConnectResponse::decode(&bytes).unwrap(), response);
    }

    #[test]
    fn a_connect_response_with_a_bad_read_only_byte_or_more_is_refused() {
        let response = ConnectResponse {
            passwd: vec![0; 16],
            read_only: Some(true),
            ..ConnectResponse::default()
        };
        let mut bytes = response.to_bytes().to_vec();
        *bytes.last_mut().unwrap() = 2;
        let error = ConnectResponse::decode(&bytes).unwrap_err();
        assert_eq!(error.kind(), &DecodeErrorKind::InvalidBool { value: 2 });
        assert_eq!(error.field(), "readOnly");

        let mut bytes = response.to_bytes().to_vec();
        bytes.push(0);
        let error = ConnectResponse::decode(&bytes).unwrap_err();
        assert_eq!(error.kind(), &DecodeErrorKind::TrailingBytes { extra: 1 });
    }

    #[test]
    fn a_password_longer_than_the_frame_is_refused() {
        let mut bytes = ConnectResponse::default().to_bytes().to_vec();
        // The passwd length prefix sits at 16..20.
        bytes[16..20].copy_from_slice(&100i32.to_be_bytes());
        let error = ConnectResponse::decode(&bytes).unwrap_err();
        assert_eq!(error.field(), "passwd");
        assert_eq!(error.offset(), 16);
        assert!(matches!(
            error.kind(),
            DecodeErrorKind::LengthPastEnd { len: 100, .. }
        ));
    }

    #[test]
    fn passwords_are_not_printed() {
        let request = ConnectRequest {
            passwd: b"secret-password!".to_vec(),
            ..ConnectRequest::default()
        };
        let printed = format!("{request:?}");
        assert!(printed.contains("<16 bytes>"), "{printed}");
        assert!(!printed.contains("115"), "{printed}");
    }
}
