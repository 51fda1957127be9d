//! The bodies of requests (`org.apache.zookeeper.proto`), one record per layout.

use bytes::{BufMut, BytesMut};

use super::{Acl, AddWatchMode, CreateMode, WatcherType};
use crate::error::DecodeError;
use crate::jute::{
    Jute, Reader, Redacted, impl_record, put_bool, put_buffer, put_opt_string, put_string, put_vec,
};

/// The node that holds the ensemble's configuration: getConfig is a getData of it (and a
/// reconfig answers with its new data).
///
/// ```
/// use curator_wire::proto::{CONFIG_NODE, GetDataRequest, Request};
///
/// let get_config = Request::GetData(GetDataRequest { path: CONFIG_NODE.into(), watch: true });
/// # drop(get_config);
/// ```
pub const CONFIG_NODE: &str = "/zookeeper/config";

/// The body of create, create2 and createContainer (the opcode says which reply comes back;
/// a container is created with [`CreateMode::Container`] and opcode createContainer).
///
/// ```
/// use curator_wire::proto::{Acl, CreateMode, CreateRequest, Record};
///
/// let request = CreateRequest {
///     path: "/app/lock-".into(),
///     data: b"id".to_vec(),
///     acl: Acl::open_unsafe(),
///     mode: CreateMode::EphemeralSequential,
/// };
/// assert_eq!(CreateRequest::decode(&request.to_bytes()).unwrap(), request);
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct CreateRequest {
    /// The node's path (with a sequential mode: the prefix of its name).
    pub path: String,
    /// The node's data.
    pub data: Vec<u8>,
    /// The node's ACL.
    pub acl: Vec<Acl>,
    /// How the node is created (its `flags`).
    pub mode: CreateMode,
}

impl std::fmt::Debug for CreateRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateRequest")
            .field("path", &self.path)
            .field("data", &Redacted(self.data.len()))
            .field("acl", &self.acl)
            .field("mode", &self.mode)
            .finish()
    }
}

impl Jute for CreateRequest {
    const MIN_LEN: usize = 16;

    fn write(&self, buf: &mut BytesMut) {
        put_string(buf, &self.path);
        put_buffer(buf, &self.data);
        put_vec(buf, &self.acl);
        buf.put_i32(self.mode.flags());
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("CreateRequest", |r| {
            Ok(CreateRequest {
                path: r.string("path")?,
                data: r.buffer("data")?,
                acl: r.vec("acl")?,
                mode: CreateMode::read(r, "flags")?,
            })
        })
    }
}

/// The body of createTTL: a persistent node the server deletes once it has been unchanged and
/// childless for `ttl` milliseconds (servers need `extendedTypesEnabled`).
///
/// ```
/// use curator_wire::proto::{Acl, CreateMode, CreateTtlRequest, Record};
///
/// let request = CreateTtlRequest {
///     path: "/cache/entry".into(),
///     data: vec![],
///     acl: Acl::open_unsafe(),
///     mode: CreateMode::PersistentWithTtl,
///     ttl: 60_000,
/// };
/// assert_eq!(CreateTtlRequest::decode(&request.to_bytes()).unwrap(), request);
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct CreateTtlRequest {
    /// The node's path.
    pub path: String,
    /// The node's data.
    pub data: Vec<u8>,
    /// The node's ACL.
    pub acl: Vec<Acl>,
    /// How the node is created: a TTL mode.
    pub mode: CreateMode,
    /// The time to live, in milliseconds.
    pub ttl: i64,
}

impl std::fmt::Debug for CreateTtlRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateTtlRequest")
            .field("path", &self.path)
            .field("data", &Redacted(self.data.len()))
            .field("acl", &self.acl)
            .field("mode", &self.mode)
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl Jute for CreateTtlRequest {
    const MIN_LEN: usize = 24;

    fn write(&self, buf: &mut BytesMut) {
        put_string(buf, &self.path);
        put_buffer(buf, &self.data);
        put_vec(buf, &self.acl);
        buf.put_i32(self.mode.flags());
        buf.put_i64(self.ttl);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("CreateTTLRequest", |r| {
            Ok(CreateTtlRequest {
                path: r.string("path")?,
                data: r.buffer("data")?,
                acl: r.vec("acl")?,
                mode: CreateMode::read(r, "flags")?,
                ttl: r.i64("ttl")?,
            })
        })
    }
}

/// Declares a request record of a path and one more field.
macro_rules! path_record {
    (
        $(#[$meta:meta])*
        $name:ident ($jute:literal) { $field:ident : $ty:ty = $jute_field:literal, $write:expr, $read:expr }
        example $example:expr
    ) => {
        $(#[$meta])*
        #[doc = concat!(
            "\n```\nuse curator_wire::proto::*;\n\n",
            "let record = ", $example, ";\n",
            "assert_eq!(", stringify!($name), "::decode(&record.to_bytes()).unwrap(), record);\n```"
        )]
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
        pub struct $name {
            /// The node's path.
            pub path: String,
            #[doc = concat!("The `", $jute_field, "` field.")]
            pub $field: $ty,
        }

        impl Jute for $name {
            const MIN_LEN: usize = 5;

            fn write(&self, buf: &mut BytesMut) {
                put_string(buf, &self.path);
                #[allow(clippy::redundant_closure_call)]
                ($write)(buf, &self.$field);
            }

            fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
                reader.record($jute, |r| {
                    let path = r.string("path")?;
                    #[allow(clippy::redundant_closure_call)]
                    let $field = ($read)(r, $jute_field)?;
                    Ok($name { path, $field })
                })
            }
        }
    };
}

fn write_bool(buf: &mut BytesMut, value: &bool) {
    put_bool(buf, *value);
}

fn write_i32(buf: &mut BytesMut, value: &i32) {
    buf.put_i32(*value);
}

fn read_bool(reader: &mut Reader<'_>, field: &'static str) -> Result<bool, DecodeError> {
    reader.bool(field)
}

fn read_i32(reader: &mut Reader<'_>, field: &'static str) -> Result<i32, DecodeError> {
    reader.i32(field)
}

path_record! {
    /// The body of delete: `version` -1 deletes whatever the version.
    DeleteRequest ("DeleteRequest") { version: i32 = "version", write_i32, read_i32 }
    example "DeleteRequest { path: \"/a\".into(), version: -1 }"
}

path_record! {
    /// The body of exists; `watch` leaves a data watch (or an exists watch on a missing node).
    ExistsRequest ("ExistsRequest") { watch: bool = "watch", write_bool, read_bool }
    example "ExistsRequest { path: \"/a\".into(), watch: true }"
}

path_record! {
    /// The body of getData (and of a getData step of multiRead, with `watch` false); `watch`
    /// leaves a data watch. getConfig is a getData of [`CONFIG_NODE`].
    GetDataRequest ("GetDataRequest") { watch: bool = "watch", write_bool, read_bool }
    example "GetDataRequest { path: \"/zookeeper/config\".into(), watch: false }"
}

path_record! {
    /// The body of getChildren and getChildren2 (the two have the same layout), and of a
    /// getChildren step of multiRead; `watch` leaves a child watch.
    GetChildrenRequest ("GetChildrenRequest") { watch: bool = "watch", write_bool, read_bool }
    example "GetChildrenRequest { path: \"/locks\".into(), watch: true }"
}

path_record! {
    /// A version check: the check step of a multi.
    CheckVersionRequest ("CheckVersionRequest") { version: i32 = "version", write_i32, read_i32 }
    example "CheckVersionRequest { path: \"/a\".into(), version: 3 }"
}

/// The body of setData: `version` -1 sets whatever the version.
///
/// ```
/// use curator_wire::proto::{Record, SetDataRequest};
///
/// let request = SetDataRequest { path: "/a".into(), data: b"v2".to_vec(), version: 1 };
/// assert_eq!(SetDataRequest::decode(&request.to_bytes()).unwrap(), request);
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct SetDataRequest {
    /// The node's path.
    pub path: String,
    /// The new data.
    pub data: Vec<u8>,
    /// The expected version, or -1.
    pub version: i32,
}

impl std::fmt::Debug for SetDataRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetDataRequest")
            .field("path", &self.path)
            .field("data", &Redacted(self.data.len()))
            .field("version", &self.version)
            .finish()
    }
}

impl Jute for SetDataRequest {
    const MIN_LEN: usize = 12;

    fn write(&self, buf: &mut BytesMut) {
        put_string(buf, &self.path);
        put_buffer(buf, &self.data);
        buf.put_i32(self.version);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("SetDataRequest", |r| {
            Ok(SetDataRequest {
                path: r.string("path")?,
                data: r.buffer("data")?,
                version: r.i32("version")?,
            })
        })
    }
}

/// Declares a request record of a path only.
macro_rules! only_path_record {
    ($(#[$meta:meta])* $name:ident ($jute:literal, $jute_field:literal)) => {
        $(#[$meta])*
        #[doc = concat!(
            "\n```\nuse curator_wire::proto::{Record, ", stringify!($name), "};\n\n",
            "let record = ", stringify!($name), " { path: \"/a\".into() };\n",
            "assert_eq!(", stringify!($name), "::decode(&record.to_bytes()).unwrap(), record);\n```"
        )]
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
        pub struct $name {
            #[doc = concat!("The `", $jute_field, "` field.")]
            pub path: String,
        }

        impl Jute for $name {
            const MIN_LEN: usize = 4;

            fn write(&self, buf: &mut BytesMut) {
                put_string(buf, &self.path);
            }

            fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
                reader.record($jute, |r| Ok($name { path: r.string($jute_field)? }))
            }
        }
    };
}

only_path_record! {
    /// The body of getACL.
    GetAclRequest ("GetACLRequest", "path")
}

only_path_record! {
    /// The body of sync: the server catches up with the leader before answering.
    SyncRequest ("SyncRequest", "path")
}

only_path_record! {
    /// The body of getEphemerals: the session's ephemeral nodes whose paths start with `path`
    /// (`prefixPath`; `/` for all).
    GetEphemeralsRequest ("GetEphemeralsRequest", "prefixPath")
}

only_path_record! {
    /// The body of getAllChildrenNumber: how many nodes are below `path`, at any depth.
    GetAllChildrenNumberRequest ("GetAllChildrenNumberRequest", "path")
}

/// The body of setACL: `version` is the expected ACL version (`aversion`), or -1.
///
/// ```
/// use curator_wire::proto::{Acl, Record, SetAclRequest};
///
/// let request = SetAclRequest { path: "/a".into(), acl: Acl::open_unsafe(), version: -1 };
/// assert_eq!(SetAclRequest::decode(&request.to_bytes()).unwrap(), request);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct SetAclRequest {
    /// The node's path.
    pub path: String,
    /// The new ACL.
    pub acl: Vec<Acl>,
    /// The expected ACL version, or -1.
    pub version: i32,
}

impl Jute for SetAclRequest {
    const MIN_LEN: usize = 12;

    fn write(&self, buf: &mut BytesMut) {
        put_string(buf, &self.path);
        put_vec(buf, &self.acl);
        buf.put_i32(self.version);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("SetACLRequest", |r| {
            Ok(SetAclRequest {
                path: r.string("path")?,
                acl: r.vec("acl")?,
                version: r.i32("version")?,
            })
        })
    }
}

/// The body of reconfig. An incremental change names `joining_servers` and
/// `leaving_servers` (comma-separated server specs and ids); a whole new configuration is
/// `new_members`. Unused fields are null (`None`), as the Java client sends them.
/// `cur_config_id` is the configuration version the change applies to, or -1.
///
/// ```
/// use curator_wire::proto::{ReconfigRequest, Record};
///
/// let request = ReconfigRequest {
///     joining_servers: None,
///     leaving_servers: Some("3".into()),
///     new_members: None,
///     cur_config_id: -1,
/// };
/// assert_eq!(ReconfigRequest::decode(&request.to_bytes()).unwrap(), request);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ReconfigRequest {
    /// Servers to add (`server.4=host:2888:3888;2181,...`).
    pub joining_servers: Option<String>,
    /// Server ids to remove (`3,5`).
    pub leaving_servers: Option<String>,
    /// A whole new membership.
    pub new_members: Option<String>,
    /// The expected configuration version, or -1.
    pub cur_config_id: i64,
}

impl Jute for ReconfigRequest {
    const MIN_LEN: usize = 20;

    fn write(&self, buf: &mut BytesMut) {
        put_opt_string(buf, self.joining_servers.as_deref());
        put_opt_string(buf, self.leaving_servers.as_deref());
        put_opt_string(buf, self.new_members.as_deref());
        buf.put_i64(self.cur_config_id);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("ReconfigRequest", |r| {
            Ok(ReconfigRequest {
                joining_servers: r.opt_string("joiningServers")?,
                leaving_servers: r.opt_string("leavingServers")?,
                new_members: r.opt_string("newMembers")?,
                cur_config_id: r.i64("curConfigId")?,
            })
        })
    }
}

/// The body of removeWatches and of checkWatches (the two have the same layout).
///
/// ```
/// use curator_wire::proto::{Record, RemoveWatchesRequest, WatcherType};
///
/// let request = RemoveWatchesRequest { path: "/a".into(), watcher_type: WatcherType::Any };
/// assert_eq!(RemoveWatchesRequest::decode(&request.to_bytes()).unwrap(), request);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RemoveWatchesRequest {
    /// The watched path.
    pub path: String,
    /// Which watches.
    pub watcher_type: WatcherType,
}

impl Jute for RemoveWatchesRequest {
    const MIN_LEN: usize = 8;

    fn write(&self, buf: &mut BytesMut) {
        put_string(buf, &self.path);
        buf.put_i32(self.watcher_type.code());
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("RemoveWatchesRequest", |r| {
            Ok(RemoveWatchesRequest {
                path: r.string("path")?,
                watcher_type: WatcherType::read(r, "type")?,
            })
        })
    }
}

/// The body of addWatch: a persistent (optionally recursive) watch.
///
/// ```
/// use curator_wire::proto::{AddWatchMode, AddWatchRequest, Record};
///
/// let request = AddWatchRequest { path: "/a".into(), mode: AddWatchMode::PersistentRecursive };
/// assert_eq!(&request.to_bytes()[..], &[0, 0, 0, 2, b'/', b'a', 0, 0, 0, 1]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AddWatchRequest {
    /// The watched path.
    pub path: String,
    /// The kind of watch.
    pub mode: AddWatchMode,
}

impl Jute for AddWatchRequest {
    const MIN_LEN: usize = 8;

    fn write(&self, buf: &mut BytesMut) {
        put_string(buf, &self.path);
        buf.put_i32(self.mode.code());
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("AddWatchRequest", |r| {
            Ok(AddWatchRequest {
                path: r.string("path")?,
                mode: AddWatchMode::read(r, "mode")?,
            })
        })
    }
}

/// The body of auth (sent with xid [`AUTH_XID`](super::AUTH_XID)): credentials in a scheme,
/// such as `digest` with `user:password`. The reply has no body; a failure is
/// [`ErrorCode::AuthFailed`](super::ErrorCode::AuthFailed) in its header, after which the
/// server closes the connection.
///
/// ```
/// use curator_wire::proto::{AuthPacket, Record};
///
/// let packet = AuthPacket::new("digest", b"user:secret".to_vec());
/// assert_eq!(AuthPacket::decode(&packet.to_bytes()).unwrap(), packet);
/// assert!(!format!("{packet:?}").contains("secret"));
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct AuthPacket {
    /// Always 0.
    pub auth_type: i32,
    /// The scheme.
    pub scheme: String,
    /// The credentials (never printed).
    pub auth: Vec<u8>,
}

impl AuthPacket {
    /// An auth packet as the Java client sends it.
    ///
    /// ```
    /// use curator_wire::proto::AuthPacket;
    ///
    /// assert_eq!(AuthPacket::new("digest", b"u:p".to_vec()).auth_type, 0);
    /// ```
    pub fn new(scheme: impl Into<String>, auth: Vec<u8>) -> Self {
        Self {
            auth_type: 0,
            scheme: scheme.into(),
            auth,
        }
    }
}

impl std::fmt::Debug for AuthPacket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthPacket")
            .field("auth_type", &self.auth_type)
            .field("scheme", &self.scheme)
            .field("auth", &Redacted(self.auth.len()))
            .finish()
    }
}

impl Jute for AuthPacket {
    const MIN_LEN: usize = 12;

    fn write(&self, buf: &mut BytesMut) {
        buf.put_i32(self.auth_type);
        put_string(buf, &self.scheme);
        put_buffer(buf, &self.auth);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("AuthPacket", |r| {
            Ok(AuthPacket {
                auth_type: r.i32("type")?,
                scheme: r.string("scheme")?,
                auth: r.buffer("auth")?,
            })
        })
    }
}

/// The body of a sasl request: the client's next SASL token. The server answers with a
/// [`SetSaslResponse`](super::SetSaslResponse).
///
/// ```
/// use curator_wire::proto::{GetSaslRequest, Record};
///
/// let request = GetSaslRequest { token: vec![1, 2, 3] };
/// assert_eq!(GetSaslRequest::decode(&request.to_bytes()).unwrap(), request);
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct GetSaslRequest {
    /// The token (never printed).
    pub token: Vec<u8>,
}

impl std::fmt::Debug for GetSaslRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GetSaslRequest")
            .field("token", &Redacted(self.token.len()))
            .finish()
    }
}

impl Jute for GetSaslRequest {
    const MIN_LEN: usize = 4;

    fn write(&self, buf: &mut BytesMut) {
        put_buffer(buf, &self.token);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("GetSASLRequest", |r| {
            Ok(GetSaslRequest {
                token: r.buffer("token")?,
            })
        })
    }
}

/// The body of setWatches (servers before 3.6; sent with xid
/// [`SET_WATCHES_XID`](super::SET_WATCHES_XID)): watches to set again after a reconnect. The
/// server fires at once those whose node changed after `relative_zxid`.
///
/// ```
/// use curator_wire::proto::{Record, SetWatches};
///
/// let watches = SetWatches { relative_zxid: 9, data_watches: vec!["/a".into()], ..SetWatches::default() };
/// assert_eq!(SetWatches::decode(&watches.to_bytes()).unwrap(), watches);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct SetWatches {
    /// The last zxid the client saw.
    pub relative_zxid: i64,
    /// Paths with data watches.
    pub data_watches: Vec<String>,
    /// Paths with exists watches (on nodes that did not exist).
    pub exist_watches: Vec<String>,
    /// Paths with child watches.
    pub child_watches: Vec<String>,
}

impl Jute for SetWatches {
    const MIN_LEN: usize = 20;

    fn write(&self, buf: &mut BytesMut) {
        buf.put_i64(self.relative_zxid);
        put_vec(buf, &self.data_watches);
        put_vec(buf, &self.exist_watches);
        put_vec(buf, &self.child_watches);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("SetWatches", |r| {
            Ok(SetWatches {
                relative_zxid: r.i64("relativeZxid")?,
                data_watches: r.vec("dataWatches")?,
                exist_watches: r.vec("existWatches")?,
                child_watches: r.vec("childWatches")?,
            })
        })
    }
}

/// The body of setWatches2 (3.6+; xid [`SET_WATCHES_XID`](super::SET_WATCHES_XID)): as
/// [`SetWatches`], with persistent and persistent recursive watches. The Java client splits
/// the watches into requests under 128 KiB.
///
/// ```
/// use curator_wire::proto::{Record, SetWatches2};
///
/// let watches = SetWatches2 {
///     relative_zxid: 9,
///     persistent_recursive_watches: vec!["/app".into()],
///     ..SetWatches2::default()
/// };
/// assert_eq!(SetWatches2::decode(&watches.to_bytes()).unwrap(), watches);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct SetWatches2 {
    /// The last zxid the client saw.
    pub relative_zxid: i64,
    /// Paths with data watches.
    pub data_watches: Vec<String>,
    /// Paths with exists watches.
    pub exist_watches: Vec<String>,
    /// Paths with child watches.
    pub child_watches: Vec<String>,
    /// Paths with persistent watches.
    pub persistent_watches: Vec<String>,
    /// Paths with persistent recursive watches.
    pub persistent_recursive_watches: Vec<String>,
}

impl Jute for SetWatches2 {
    const MIN_LEN: usize = 28;

    fn write(&self, buf: &mut BytesMut) {
        buf.put_i64(self.relative_zxid);
        put_vec(buf, &self.data_watches);
        put_vec(buf, &self.exist_watches);
        put_vec(buf, &self.child_watches);
        put_vec(buf, &self.persistent_watches);
        put_vec(buf, &self.persistent_recursive_watches);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("SetWatches2", |r| {
            Ok(SetWatches2 {
                relative_zxid: r.i64("relativeZxid")?,
                data_watches: r.vec("dataWatches")?,
                exist_watches: r.vec("existWatches")?,
                child_watches: r.vec("childWatches")?,
                persistent_watches: r.vec("persistentWatches")?,
                persistent_recursive_watches: r.vec("persistentRecursiveWatches")?,
            })
        })
    }
}

impl_record!(
    CreateRequest,
    CreateTtlRequest,
    DeleteRequest,
    ExistsRequest,
    GetDataRequest,
    GetChildrenRequest,
    CheckVersionRequest,
    SetDataRequest,
    GetAclRequest,
    SyncRequest,
    GetEphemeralsRequest,
    GetAllChildrenNumberRequest,
    SetAclRequest,
    ReconfigRequest,
    RemoveWatchesRequest,
    AddWatchRequest,
    AuthPacket,
    GetSaslRequest,
    SetWatches,
    SetWatches2,
);
