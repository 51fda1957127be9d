//! The bodies of replies and of watch notifications.

use bytes::{BufMut, BytesMut};

use super::{Acl, ClientInfo, ErrorCode, EventType, KeeperState, Stat};
use crate::error::DecodeError;
use crate::jute::{Jute, Reader, Redacted, impl_record, put_buffer, put_string, put_vec};

/// The reply to create: the created path (with its sequence number, for a sequential mode).
///
/// ```
/// use curator_wire::proto::{CreateResponse, Record};
///
/// let response = CreateResponse { path: "/lock-0000000007".into() };
/// assert_eq!(CreateResponse::decode(&response.to_bytes()).unwrap(), response);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct CreateResponse {
    /// The created path.
    pub path: String,
}

impl Jute for CreateResponse {
    const MIN_LEN: usize = 4;

    fn write(&self, buf: &mut BytesMut) {
        put_string(buf, &self.path);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("CreateResponse", |r| {
            Ok(CreateResponse {
                path: r.string("path")?,
            })
        })
    }
}

/// The reply to create2, createContainer and createTTL: the created path and its stat.
///
/// ```
/// use curator_wire::proto::{Create2Response, Record, Stat};
///
/// let response = Create2Response { path: "/a".into(), stat: Stat { czxid: 4, ..Stat::default() } };
/// assert_eq!(Create2Response::decode(&response.to_bytes()).unwrap(), response);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Create2Response {
    /// The created path.
    pub path: String,
    /// The new node's stat.
    pub stat: Stat,
}

impl Jute for Create2Response {
    const MIN_LEN: usize = 4 + Stat::MIN_LEN;

    fn write(&self, buf: &mut BytesMut) {
        put_string(buf, &self.path);
        self.stat.write(buf);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("Create2Response", |r| {
            Ok(Create2Response {
                path: r.string("path")?,
                stat: Stat::read(r)?,
            })
        })
    }
}

/// The reply to getData (and reconfig, whose reply is the new configuration), and a getData
/// result of multiRead.
///
/// ```
/// use curator_wire::proto::{GetDataResponse, Record, Stat};
///
/// let response = GetDataResponse { data: b"hello".to_vec(), stat: Stat::default() };
/// assert_eq!(GetDataResponse::decode(&response.to_bytes()).unwrap(), response);
/// assert!(format!("{response:?}").contains("<5 bytes>"), "payloads are not printed");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct GetDataResponse {
    /// The data (a null buffer reads as empty).
    pub data: Vec<u8>,
    /// The node's stat.
    pub stat: Stat,
}

impl std::fmt::Debug for GetDataResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GetDataResponse")
            .field("data", &Redacted(self.data.len()))
            .field("stat", &self.stat)
            .finish()
    }
}

impl Jute for GetDataResponse {
    const MIN_LEN: usize = 4 + Stat::MIN_LEN;

    fn write(&self, buf: &mut BytesMut) {
        put_buffer(buf, &self.data);
        self.stat.write(buf);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("GetDataResponse", |r| {
            Ok(GetDataResponse {
                data: r.buffer("data")?,
                stat: Stat::read(r)?,
            })
        })
    }
}

/// The reply to getACL.
///
/// ```
/// use curator_wire::proto::{Acl, GetAclResponse, Record, Stat};
///
/// let response = GetAclResponse { acl: Acl::open_unsafe(), stat: Stat::default() };
/// assert_eq!(GetAclResponse::decode(&response.to_bytes()).unwrap(), response);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct GetAclResponse {
    /// The node's ACL.
    pub acl: Vec<Acl>,
    /// The node's stat.
    pub stat: Stat,
}

impl Jute for GetAclResponse {
    const MIN_LEN: usize = 4 + Stat::MIN_LEN;

    fn write(&self, buf: &mut BytesMut) {
        put_vec(buf, &self.acl);
        self.stat.write(buf);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("GetACLResponse", |r| {
            Ok(GetAclResponse {
                acl: r.vec("acl")?,
                stat: Stat::read(r)?,
            })
        })
    }
}

/// The reply to getChildren, and a getChildren result of multiRead: the children's names.
///
/// ```
/// use curator_wire::proto::{GetChildrenResponse, Record};
///
/// let response = GetChildrenResponse { children: vec!["a".into(), "b".into()] };
/// assert_eq!(GetChildrenResponse::decode(&response.to_bytes()).unwrap(), response);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct GetChildrenResponse {
    /// The names (not paths), in no particular order.
    pub children: Vec<String>,
}

impl Jute for GetChildrenResponse {
    const MIN_LEN: usize = 4;

    fn write(&self, buf: &mut BytesMut) {
        put_vec(buf, &self.children);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("GetChildrenResponse", |r| {
            Ok(GetChildrenResponse {
                children: r.vec("children")?,
            })
        })
    }
}

/// The reply to getChildren2: the children's names and the parent's stat.
///
/// ```
/// use curator_wire::proto::{GetChildren2Response, Record, Stat};
///
/// let response = GetChildren2Response { children: vec!["a".into()], stat: Stat::default() };
/// assert_eq!(GetChildren2Response::decode(&response.to_bytes()).unwrap(), response);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct GetChildren2Response {
    /// The names (not paths), in no particular order.
    pub children: Vec<String>,
    /// The parent's stat.
    pub stat: Stat,
}

impl Jute for GetChildren2Response {
    const MIN_LEN: usize = 4 + Stat::MIN_LEN;

    fn write(&self, buf: &mut BytesMut) {
        put_vec(buf, &self.children);
        self.stat.write(buf);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("GetChildren2Response", |r| {
            Ok(GetChildren2Response {
                children: r.vec("children")?,
                stat: Stat::read(r)?,
            })
        })
    }
}

/// The reply to sync: the path synced.
///
/// ```
/// use curator_wire::proto::{Record, SyncResponse};
///
/// let response = SyncResponse { path: "/a".into() };
/// assert_eq!(SyncResponse::decode(&response.to_bytes()).unwrap(), response);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct SyncResponse {
    /// The path.
    pub path: String,
}

impl Jute for SyncResponse {
    const MIN_LEN: usize = 4;

    fn write(&self, buf: &mut BytesMut) {
        put_string(buf, &self.path);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("SyncResponse", |r| {
            Ok(SyncResponse {
                path: r.string("path")?,
            })
        })
    }
}

/// An error code as a body: the reply to addWatch (which servers fill with
/// [`ErrorCode::Ok`]) and the body of a failed step in multi results.
///
/// ```
/// use curator_wire::proto::{ErrorCode, ErrorResponse, Record};
///
/// let response = ErrorResponse { err: ErrorCode::Ok };
/// assert_eq!(&response.to_bytes()[..], &[0, 0, 0, 0]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorResponse {
    /// The code.
    pub err: ErrorCode,
}

impl Jute for ErrorResponse {
    const MIN_LEN: usize = 4;

    fn write(&self, buf: &mut BytesMut) {
        buf.put_i32(self.err.code());
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("ErrorResponse", |r| {
            Ok(ErrorResponse {
                err: ErrorCode::read(r, "err")?,
            })
        })
    }
}

/// The reply to a sasl request: the server's next SASL token.
///
/// ```
/// use curator_wire::proto::{Record, SetSaslResponse};
///
/// let response = SetSaslResponse { token: vec![9; 4] };
/// assert_eq!(SetSaslResponse::decode(&response.to_bytes()).unwrap(), response);
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct SetSaslResponse {
    /// The token (never printed).
    pub token: Vec<u8>,
}

impl std::fmt::Debug for SetSaslResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetSaslResponse")
            .field("token", &Redacted(self.token.len()))
            .finish()
    }
}

impl Jute for SetSaslResponse {
    const MIN_LEN: usize = 4;

    fn write(&self, buf: &mut BytesMut) {
        put_buffer(buf, &self.token);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("SetSASLResponse", |r| {
            Ok(SetSaslResponse {
                token: r.buffer("token")?,
            })
        })
    }
}

/// The reply to getEphemerals: the session's ephemeral nodes (full paths).
///
/// ```
/// use curator_wire::proto::{GetEphemeralsResponse, Record};
///
/// let response = GetEphemeralsResponse { ephemerals: vec!["/app/lock-0000000001".into()] };
/// assert_eq!(GetEphemeralsResponse::decode(&response.to_bytes()).unwrap(), response);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct GetEphemeralsResponse {
    /// The paths.
    pub ephemerals: Vec<String>,
}

impl Jute for GetEphemeralsResponse {
    const MIN_LEN: usize = 4;

    fn write(&self, buf: &mut BytesMut) {
        put_vec(buf, &self.ephemerals);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("GetEphemeralsResponse", |r| {
            Ok(GetEphemeralsResponse {
                ephemerals: r.vec("ephemerals")?,
            })
        })
    }
}

/// The reply to getAllChildrenNumber.
///
/// ```
/// use curator_wire::proto::{GetAllChildrenNumberResponse, Record};
///
/// let response = GetAllChildrenNumberResponse { total_number: 12 };
/// assert_eq!(&response.to_bytes()[..], &[0, 0, 0, 12]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GetAllChildrenNumberResponse {
    /// The number of nodes below the path, at any depth.
    pub total_number: i32,
}

impl Jute for GetAllChildrenNumberResponse {
    const MIN_LEN: usize = 4;

    fn write(&self, buf: &mut BytesMut) {
        buf.put_i32(self.total_number);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("GetAllChildrenNumberResponse", |r| {
            Ok(GetAllChildrenNumberResponse {
                total_number: r.i32("totalNumber")?,
            })
        })
    }
}

/// The reply to whoAmI: the identities the server gives the session.
///
/// ```
/// use curator_wire::proto::{ClientInfo, Record, WhoAmIResponse};
///
/// let response = WhoAmIResponse {
///     client_info: vec![ClientInfo { auth_scheme: "ip".into(), user: "127.0.0.1".into() }],
/// };
/// assert_eq!(WhoAmIResponse::decode(&response.to_bytes()).unwrap(), response);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct WhoAmIResponse {
    /// The identities.
    pub client_info: Vec<ClientInfo>,
}

impl Jute for WhoAmIResponse {
    const MIN_LEN: usize = 4;

    fn write(&self, buf: &mut BytesMut) {
        put_vec(buf, &self.client_info);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("WhoAmIResponse", |r| {
            Ok(WhoAmIResponse {
                client_info: r.vec("clientInfo")?,
            })
        })
    }
}

/// A watch notification: the body of a frame whose header has xid
/// [`NOTIFICATION_XID`](super::NOTIFICATION_XID).
///
/// The zxid of the change is not in this record: servers from 3.9 on put it in the reply
/// header (see [`ReplyHeader::notification_zxid`](super::ReplyHeader::notification_zxid));
/// older servers send -1 there.
///
/// ```
/// use curator_wire::proto::{EventType, KeeperState, Record, WatcherEvent};
///
/// let event = WatcherEvent {
///     event_type: EventType::NodeDataChanged,
///     state: KeeperState::SyncConnected,
///     path: "/a".into(),
/// };
/// assert_eq!(WatcherEvent::decode(&event.to_bytes()).unwrap(), event);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WatcherEvent {
    /// What happened.
    pub event_type: EventType,
    /// The session's state (servers send `SyncConnected`).
    pub state: KeeperState,
    /// The node's path.
    pub path: String,
}

impl Jute for WatcherEvent {
    const MIN_LEN: usize = 12;

    fn write(&self, buf: &mut BytesMut) {
        buf.put_i32(self.event_type.code());
        buf.put_i32(self.state.code());
        put_string(buf, &self.path);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("WatcherEvent", |r| {
            Ok(WatcherEvent {
                event_type: EventType::read(r, "type")?,
                state: KeeperState::read(r, "state")?,
                path: r.string("path")?,
            })
        })
    }
}

impl_record!(
    CreateResponse,
    Create2Response,
    GetDataResponse,
    GetAclResponse,
    GetChildrenResponse,
    GetChildren2Response,
    SyncResponse,
    ErrorResponse,
    SetSaslResponse,
    GetEphemeralsResponse,
    GetAllChildrenNumberResponse,
    WhoAmIResponse,
    WatcherEvent,
);
