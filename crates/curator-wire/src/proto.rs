//! ZooKeeper's jute records as plain Rust values, each of which encodes and decodes
//! ([`Record`]), and the two sums a session and a server model work with: [`Request`] (read
//! by the opcode in its header) and [`Response`] (read by the opcode of the request it
//! answers).
//!
//! The layouts are those of `zookeeper.jute` (the same from 3.5 to 3.9, apart from `readOnly`
//! being written into the connect records formally in 3.9; the bytes were always sent) and of
//! the multi records (`MultiOperationRecord`, `MultiResponse`).
//!
//! Jute's null (a length of -1) reads as empty for buffers, strings and vectors, and is never
//! written, except in [`ReconfigRequest`], whose unused fields are null. Booleans must be 0 or
//! 1, strings UTF-8; codes ZooKeeper does not have fail decoding, except negative error codes,
//! which are kept ([`ErrorCode::Unknown`]).
//!
//! ```
//! use curator_wire::proto::{ErrorCode, OpCode, Request, Response, SetDataRequest, Stat};
//!
//! // A client writes a request body...
//! let request = Request::SetData(SetDataRequest { path: "/a".into(), data: b"1".to_vec(), version: 0 });
//! let mut body = bytes::BytesMut::new();
//! request.encode(&mut body);
//! // ...a server reads it by the opcode in the header and answers...
//! assert_eq!(Request::decode(request.op_code(), &body).unwrap(), request);
//! let mut reply = bytes::BytesMut::new();
//! Response::Stat(Stat { version: 1, ..Stat::default() }).encode(&mut reply);
//! // ...and the client reads the reply by the opcode of its request.
//! let Response::Stat(stat) = Response::decode(OpCode::SetData, &reply).unwrap() else { panic!() };
//! assert_eq!(stat.version, 1);
//! ```

mod codes;
mod connect;
mod data;
mod message;
mod multi;
mod requests;
mod responses;

pub use crate::jute::Record;
pub use codes::{
    AUTH_XID, AddWatchMode, CreateMode, ErrorCode, EventType, KeeperState, NOTIFICATION_XID,
    OpCode, PING_XID, Perms, SET_WATCHES_XID, UnknownErrorCode, WatcherType,
};
pub use connect::{
    ConnectRequest, ConnectResponse, NEW_SESSION_PASSWORD_LEN, ReplyHeader, RequestHeader,
};
pub use data::{Acl, ClientInfo, Id, Stat};
pub use message::{Request, Response};
pub use multi::{
    MultiOp, MultiReadOp, MultiReadRequest, MultiReadResponse, MultiReadResult, MultiRequest,
    MultiResponse, MultiResult,
};
pub use requests::{
    AddWatchRequest, AuthPacket, CONFIG_NODE, CheckVersionRequest, CreateRequest, CreateTtlRequest,
    DeleteRequest, ExistsRequest, GetAclRequest, GetAllChildrenNumberRequest, GetChildrenRequest,
    GetDataRequest, GetEphemeralsRequest, GetSaslRequest, ReconfigRequest, RemoveWatchesRequest,
    SetAclRequest, SetDataRequest, SetWatches, SetWatches2, SyncRequest,
};
pub use responses::{
    Create2Response, CreateResponse, ErrorResponse, GetAclResponse, GetAllChildrenNumberResponse,
    GetChildren2Response, GetChildrenResponse, GetDataResponse, GetEphemeralsResponse,
    SetSaslResponse, SyncResponse, WatcherEvent, WhoAmIResponse,
};
