//! Requests and replies as one type each, read by opcode: a request's opcode is in its header;
//! a reply's is that of the request it answers (replies carry only the xid).

use bytes::BytesMut;

use super::{
    AddWatchRequest, AuthPacket, Create2Response, CreateRequest, CreateResponse, CreateTtlRequest,
    DeleteRequest, ErrorResponse, ExistsRequest, GetAclRequest, GetAclResponse,
    GetAllChildrenNumberRequest, GetAllChildrenNumberResponse, GetChildren2Response,
    GetChildrenRequest, GetChildrenResponse, GetDataRequest, GetDataResponse, GetEphemeralsRequest,
    GetEphemeralsResponse, GetSaslRequest, MultiReadRequest, MultiReadResponse, MultiRequest,
    MultiResponse, OpCode, ReconfigRequest, RemoveWatchesRequest, SetAclRequest, SetDataRequest,
    SetSaslResponse, SetWatches, SetWatches2, Stat, SyncRequest, SyncResponse, WhoAmIResponse,
};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::jute::{Jute, Reader, decode_exact};

/// The body of a request, one variant per opcode a client sends (its
/// [`op_code`](Request::op_code) goes in the header).
///
/// ```
/// use curator_wire::proto::{GetDataRequest, OpCode, Request};
///
/// let request = Request::GetData(GetDataRequest { path: "/a".into(), watch: true });
/// let mut body = bytes::BytesMut::new();
/// request.encode(&mut body);
/// assert_eq!(request.op_code(), OpCode::GetData);
/// assert_eq!(Request::decode(OpCode::GetData, &body).unwrap(), request);
/// ```
// Not `#[non_exhaustive]`: the protocol's surface is fixed, and a session engine or a server
// model should fail to compile, not fall through, if it ever grows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// create: the reply is [`Response::Create`].
    Create(CreateRequest),
    /// create2: the reply is [`Response::Create2`].
    Create2(CreateRequest),
    /// createContainer: the reply is [`Response::Create2`].
    CreateContainer(CreateRequest),
    /// createTTL: the reply is [`Response::Create2`].
    CreateTtl(CreateTtlRequest),
    /// delete: the reply is [`Response::Empty`].
    Delete(DeleteRequest),
    /// exists: the reply is [`Response::Stat`], or [`ErrorCode::NoNode`](super::ErrorCode::NoNode).
    Exists(ExistsRequest),
    /// getData (and getConfig, on `/zookeeper/config`): the reply is [`Response::GetData`].
    GetData(GetDataRequest),
    /// setData: the reply is [`Response::Stat`].
    SetData(SetDataRequest),
    /// getACL: the reply is [`Response::GetAcl`].
    GetAcl(GetAclRequest),
    /// setACL: the reply is [`Response::Stat`].
    SetAcl(SetAclRequest),
    /// getChildren: the reply is [`Response::GetChildren`].
    GetChildren(GetChildrenRequest),
    /// getChildren2: the reply is [`Response::GetChildren2`].
    GetChildren2(GetChildrenRequest),
    /// sync: the reply is [`Response::Sync`].
    Sync(SyncRequest),
    /// ping (no body; xid [`PING_XID`](super::PING_XID)): the reply is [`Response::Empty`].
    Ping,
    /// multi: the reply is [`Response::Multi`].
    Multi(MultiRequest),
    /// multiRead: the reply is [`Response::MultiRead`].
    MultiRead(MultiReadRequest),
    /// reconfig: the reply is [`Response::GetData`] (the new configuration).
    Reconfig(ReconfigRequest),
    /// checkWatches: the reply is [`Response::Empty`], or
    /// [`ErrorCode::NoWatcher`](super::ErrorCode::NoWatcher).
    CheckWatches(RemoveWatchesRequest),
    /// removeWatches: the reply is [`Response::Empty`], or
    /// [`ErrorCode::NoWatcher`](super::ErrorCode::NoWatcher).
    RemoveWatches(RemoveWatchesRequest),
    /// auth (xid [`AUTH_XID`](super::AUTH_XID)): the reply is [`Response::Empty`].
    Auth(AuthPacket),
    /// setWatches (xid [`SET_WATCHES_XID`](super::SET_WATCHES_XID)): the reply is
    /// [`Response::Empty`].
    SetWatches(SetWatches),
    /// setWatches2 (xid [`SET_WATCHES_XID`](super::SET_WATCHES_XID)): the reply is
    /// [`Response::Empty`].
    SetWatches2(SetWatches2),
    /// sasl: the reply is [`Response::Sasl`].
    Sasl(GetSaslRequest),
    /// getEphemerals: the reply is [`Response::GetEphemerals`].
    GetEphemerals(GetEphemeralsRequest),
    /// getAllChildrenNumber: the reply is [`Response::GetAllChildrenNumber`].
    GetAllChildrenNumber(GetAllChildrenNumberRequest),
    /// addWatch: the reply is [`Response::AddWatch`].
    AddWatch(AddWatchRequest),
    /// whoAmI (no body): the reply is [`Response::WhoAmI`].
    WhoAmI,
    /// closeSession (no body): the reply is [`Response::Empty`], then the server closes the
    /// connection.
    CloseSession,
}

impl Request {
    /// The opcode of this request.
    ///
    /// ```
    /// use curator_wire::proto::{OpCode, Request};
    ///
    /// assert_eq!(Request::CloseSession.op_code(), OpCode::CloseSession);
    /// ```
    pub fn op_code(&self) -> OpCode {
        match self {
            Request::Create(_) => OpCode::Create,
            Request::Create2(_) => OpCode::Create2,
            Request::CreateContainer(_) => OpCode::CreateContainer,
            Request::CreateTtl(_) => OpCode::CreateTtl,
            Request::Delete(_) => OpCode::Delete,
            Request::Exists(_) => OpCode::Exists,
            Request::GetData(_) => OpCode::GetData,
            Request::SetData(_) => OpCode::SetData,
            Request::GetAcl(_) => OpCode::GetAcl,
            Request::SetAcl(_) => OpCode::SetAcl,
            Request::GetChildren(_) => OpCode::GetChildren,
            Request::GetChildren2(_) => OpCode::GetChildren2,
            Request::Sync(_) => OpCode::Sync,
            Request::Ping => OpCode::Ping,
            Request::Multi(_) => OpCode::Multi,
            Request::MultiRead(_) => OpCode::MultiRead,
            Request::Reconfig(_) => OpCode::Reconfig,
            Request::CheckWatches(_) => OpCode::CheckWatches,
            Request::RemoveWatches(_) => OpCode::RemoveWatches,
            Request::Auth(_) => OpCode::Auth,
            Request::SetWatches(_) => OpCode::SetWatches,
            Request::SetWatches2(_) => OpCode::SetWatches2,
            Request::Sasl(_) => OpCode::Sasl,
            Request::GetEphemerals(_) => OpCode::GetEphemerals,
            Request::GetAllChildrenNumber(_) => OpCode::GetAllChildrenNumber,
            Request::AddWatch(_) => OpCode::AddWatch,
            Request::WhoAmI => OpCode::WhoAmI,
            Request::CloseSession => OpCode::CloseSession,
        }
    }

    /// Appends the body (not the header) to `buf`.
    ///
    /// ```
    /// use curator_wire::proto::{Request, SyncRequest};
    ///
    /// let mut body = bytes::BytesMut::new();
    /// Request::Sync(SyncRequest { path: "/".into() }).encode(&mut body);
    /// assert_eq!(&body[..], &[0, 0, 0, 1, b'/']);
    /// Request::Ping.encode(&mut body);
    /// assert_eq!(body.len(), 5, "a ping has no body");
    /// ```
    pub fn encode(&self, buf: &mut BytesMut) {
        match self {
            Request::Create(request)
            | Request::Create2(request)
            | Request::CreateContainer(request) => request.write(buf),
            Request::CreateTtl(request) => request.write(buf),
            Request::Delete(request) => request.write(buf),
            Request::Exists(request) => request.write(buf),
            Request::GetData(request) => request.write(buf),
            Request::SetData(request) => request.write(buf),
            Request::GetAcl(request) => request.write(buf),
            Request::SetAcl(request) => request.write(buf),
            Request::GetChildren(request) | Request::GetChildren2(request) => request.write(buf),
            Request::Sync(request) => request.write(buf),
            Request::Multi(request) => request.write(buf),
            Request::MultiRead(request) => request.write(buf),
            Request::Reconfig(request) => request.write(buf),
            Request::CheckWatches(request) | Request::RemoveWatches(request) => request.write(buf),
            Request::Auth(request) => request.write(buf),
            Request::SetWatches(request) => request.write(buf),
            Request::SetWatches2(request) => request.write(buf),
            Request::Sasl(request) => request.write(buf),
            Request::GetEphemerals(request) => request.write(buf),
            Request::GetAllChildrenNumber(request) => request.write(buf),
            Request::AddWatch(request) => request.write(buf),
            Request::Ping | Request::WhoAmI | Request::CloseSession => {}
        }
    }

    /// Reads the body of a request with opcode `op` from exactly `body`.
    ///
    /// # Errors
    /// [`DecodeError`] when `body` is not that request's body, or `op` has no client request
    /// ([`DecodeErrorKind::UnexpectedOpCode`]: notification, error, check, createSession,
    /// deleteContainer).
    ///
    /// ```
    /// use curator_wire::proto::{OpCode, Request};
    /// use curator_wire::DecodeErrorKind;
    ///
    /// assert_eq!(Request::decode(OpCode::WhoAmI, &[]).unwrap(), Request::WhoAmI);
    /// let error = Request::decode(OpCode::Notification, &[]).unwrap_err();
    /// assert!(matches!(error.kind(), DecodeErrorKind::UnexpectedOpCode { .. }));
    /// ```
    pub fn decode(op: OpCode, body: &[u8]) -> Result<Request, DecodeError> {
        Self::decode_at(op, body, 0)
    }

    /// As [`decode`](Self::decode); offsets in errors start at `base`.
    pub(crate) fn decode_at(op: OpCode, body: &[u8], base: usize) -> Result<Request, DecodeError> {
        decode_exact(body, base, "request body", |r| {
            Ok(match op {
                OpCode::Create => Request::Create(CreateRequest::read(r)?),
                OpCode::Create2 => Request::Create2(CreateRequest::read(r)?),
                OpCode::CreateContainer => Request::CreateContainer(CreateRequest::read(r)?),
                OpCode::CreateTtl => Request::CreateTtl(CreateTtlRequest::read(r)?),
                OpCode::Delete => Request::Delete(DeleteRequest::read(r)?),
                OpCode::Exists => Request::Exists(ExistsRequest::read(r)?),
                OpCode::GetData => Request::GetData(GetDataRequest::read(r)?),
                OpCode::SetData => Request::SetData(SetDataRequest::read(r)?),
                OpCode::GetAcl => Request::GetAcl(GetAclRequest::read(r)?),
                OpCode::SetAcl => Request::SetAcl(SetAclRequest::read(r)?),
                OpCode::GetChildren => Request::GetChildren(GetChildrenRequest::read(r)?),
                OpCode::GetChildren2 => Request::GetChildren2(GetChildrenRequest::read(r)?),
                OpCode::Sync => Request::Sync(SyncRequest::read(r)?),
                OpCode::Ping => Request::Ping,
                OpCode::Multi => Request::Multi(MultiRequest::read(r)?),
                OpCode::MultiRead => Request::MultiRead(MultiReadRequest::read(r)?),
                OpCode::Reconfig => Request::Reconfig(ReconfigRequest::read(r)?),
                OpCode::CheckWatches => Request::CheckWatches(RemoveWatchesRequest::read(r)?),
                OpCode::RemoveWatches => Request::RemoveWatches(RemoveWatchesRequest::read(r)?),
                OpCode::Auth => Request::Auth(AuthPacket::read(r)?),
                OpCode::SetWatches => Request::SetWatches(SetWatches::read(r)?),
                OpCode::SetWatches2 => Request::SetWatches2(SetWatches2::read(r)?),
                OpCode::Sasl => Request::Sasl(GetSaslRequest::read(r)?),
                OpCode::GetEphemerals => Request::GetEphemerals(GetEphemeralsRequest::read(r)?),
                OpCode::GetAllChildrenNumber => {
                    Request::GetAllChildrenNumber(GetAllChildrenNumberRequest::read(r)?)
                }
                OpCode::AddWatch => Request::AddWatch(AddWatchRequest::read(r)?),
                OpCode::WhoAmI => Request::WhoAmI,
                OpCode::CloseSession => Request::CloseSession,
                OpCode::Notification
                | OpCode::Error
                | OpCode::Check
                | OpCode::CreateSession
                | OpCode::DeleteContainer => return Err(not_here(r, op)),
            })
        })
    }
}

/// The body of a successful reply, by the layout its opcode gives it.
///
/// A client reads it with [`decode`](Response::decode), naming the opcode of the request it
/// answers; a server writes it with [`encode`](Response::encode).
///
/// ```
/// use curator_wire::proto::{OpCode, Response, Stat};
///
/// let reply = Response::Stat(Stat { version: 4, ..Stat::default() });
/// let mut body = bytes::BytesMut::new();
/// reply.encode(&mut body);
/// assert_eq!(Response::decode(OpCode::SetData, &body).unwrap(), reply);
/// ```
// Not `#[non_exhaustive]`: the protocol's surface is fixed, and a session engine or a server
// model should fail to compile, not fall through, if it ever grows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// No body: delete, ping, auth, setWatches, setWatches2, checkWatches, removeWatches,
    /// closeSession.
    Empty,
    /// create.
    Create(CreateResponse),
    /// create2, createContainer, createTTL.
    Create2(Create2Response),
    /// exists, setData, setACL: the node's stat (`ExistsResponse`, `SetDataResponse`,
    /// `SetACLResponse` are each a stat).
    Stat(Stat),
    /// getData; reconfig (the new configuration and the stat of `/zookeeper/config`).
    GetData(GetDataResponse),
    /// getACL.
    GetAcl(GetAclResponse),
    /// getChildren.
    GetChildren(GetChildrenResponse),
    /// getChildren2.
    GetChildren2(GetChildren2Response),
    /// sync.
    Sync(SyncResponse),
    /// multi.
    Multi(MultiResponse),
    /// multiRead.
    MultiRead(MultiReadResponse),
    /// addWatch: an error code the server sets to [`ErrorCode::Ok`](super::ErrorCode::Ok)
    /// (a failure is in the reply header).
    AddWatch(ErrorResponse),
    /// sasl: the server's token.
    Sasl(SetSaslResponse),
    /// getEphemerals.
    GetEphemerals(GetEphemeralsResponse),
    /// getAllChildrenNumber.
    GetAllChildrenNumber(GetAllChildrenNumberResponse),
    /// whoAmI.
    WhoAmI(WhoAmIResponse),
}

impl Response {
    /// Appends the body to `buf` (nothing for [`Empty`](Response::Empty)).
    ///
    /// ```
    /// use curator_wire::proto::{GetAllChildrenNumberResponse, Response};
    ///
    /// let mut body = bytes::BytesMut::new();
    /// Response::GetAllChildrenNumber(GetAllChildrenNumberResponse { total_number: 3 }).encode(&mut body);
    /// assert_eq!(&body[..], &[0, 0, 0, 3]);
    /// ```
    pub fn encode(&self, buf: &mut BytesMut) {
        match self {
            Response::Empty => {}
            Response::Create(response) => response.write(buf),
            Response::Create2(response) => response.write(buf),
            Response::Stat(stat) => stat.write(buf),
            Response::GetData(response) => response.write(buf),
            Response::GetAcl(response) => response.write(buf),
            Response::GetChildren(response) => response.write(buf),
            Response::GetChildren2(response) => response.write(buf),
            Response::Sync(response) => response.write(buf),
            Response::Multi(response) => response.write(buf),
            Response::MultiRead(response) => response.write(buf),
            Response::AddWatch(response) => response.write(buf),
            Response::Sasl(response) => response.write(buf),
            Response::GetEphemerals(response) => response.write(buf),
            Response::GetAllChildrenNumber(response) => response.write(buf),
            Response::WhoAmI(response) => response.write(buf),
        }
    }

    /// Reads the body of a successful reply to a request with opcode `op` from exactly
    /// `body`. Only for replies whose header says [`ErrorCode::Ok`](super::ErrorCode::Ok):
    /// [`ReplyFrame::decode`](crate::codec::ReplyFrame::decode) checks that first.
    ///
    /// # Errors
    /// [`DecodeError`] when `body` is not that reply's body, or `op` has no reply
    /// ([`DecodeErrorKind::UnexpectedOpCode`]: notification, error, check, createSession,
    /// deleteContainer).
    ///
    /// ```
    /// use curator_wire::proto::{OpCode, Response};
    ///
    /// assert_eq!(Response::decode(OpCode::Delete, &[]).unwrap(), Response::Empty);
    /// assert!(Response::decode(OpCode::Delete, &[0]).is_err(), "a delete reply has no body");
    /// ```
    pub fn decode(op: OpCode, body: &[u8]) -> Result<Response, DecodeError> {
        Self::decode_at(op, body, 0)
    }

    /// As [`decode`](Self::decode); offsets in errors start at `base`.
    pub(crate) fn decode_at(op: OpCode, body: &[u8], base: usize) -> Result<Response, DecodeError> {
        decode_exact(body, base, "reply body", |r| {
            Ok(match op {
                OpCode::Create => Response::Create(CreateResponse::read(r)?),
                OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => {
                    Response::Create2(Create2Response::read(r)?)
                }
                OpCode::Exists | OpCode::SetData | OpCode::SetAcl => Response::Stat(Stat::read(r)?),
                OpCode::GetData | OpCode::Reconfig => Response::GetData(GetDataResponse::read(r)?),
                OpCode::GetAcl => Response::GetAcl(GetAclResponse::read(r)?),
                OpCode::GetChildren => Response::GetChildren(GetChildrenResponse::read(r)?),
                OpCode::GetChildren2 => Response::GetChildren2(GetChildren2Response::read(r)?),
                OpCode::Sync => Response::Sync(SyncResponse::read(r)?),
                OpCode::Multi => Response::Multi(MultiResponse::read(r)?),
                OpCode::MultiRead => Response::MultiRead(MultiReadResponse::read(r)?),
                OpCode::AddWatch => Response::AddWatch(ErrorResponse::read(r)?),
                OpCode::Sasl => Response::Sasl(SetSaslResponse::read(r)?),
                OpCode::GetEphemerals => Response::GetEphemerals(GetEphemeralsResponse::read(r)?),
                OpCode::GetAllChildrenNumber => {
                    Response::GetAllChildrenNumber(GetAllChildrenNumberResponse::read(r)?)
                }
                OpCode::WhoAmI => Response::WhoAmI(WhoAmIResponse::read(r)?),
                OpCode::Delete
                | OpCode::Ping
                | OpCode::Auth
                | OpCode::SetWatches
                | OpCode::SetWatches2
                | OpCode::CheckWatches
                | OpCode::RemoveWatches
                | OpCode::CloseSession => Response::Empty,
                OpCode::Notification
                | OpCode::Error
                | OpCode::Check
                | OpCode::CreateSession
                | OpCode::DeleteContainer => return Err(not_here(r, op)),
            })
        })
    }
}

/// The error for an opcode without a request (or reply): at the start of the body.
fn not_here(reader: &Reader<'_>, op: OpCode) -> DecodeError {
    reader.error_at("(opcode)", 0, DecodeErrorKind::UnexpectedOpCode { op })
}
