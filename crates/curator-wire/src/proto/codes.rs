//! The numbers of the protocol: opcodes, error codes, event types and states, create modes,
//! watch modes, permissions and the reserved xids.

use crate::error::{DecodeError, DecodeErrorKind};
use crate::jute::Reader;

/// The xid of a reply header carrying a watch notification (sent by the server unasked).
///
/// ```
/// use curator_wire::proto::{ErrorCode, NOTIFICATION_XID, ReplyHeader};
///
/// assert!(ReplyHeader { xid: NOTIFICATION_XID, zxid: -1, err: ErrorCode::Ok }.is_notification());
/// ```
pub const NOTIFICATION_XID: i32 = -1;
/// The xid of a ping and of its reply (so at most one ping is worth having in flight).
///
/// ```
/// use curator_wire::codec::RequestFrame;
/// use curator_wire::proto::{PING_XID, Request};
///
/// let ping = RequestFrame::new(PING_XID, &Request::Ping);
/// # drop(ping);
/// ```
pub const PING_XID: i32 = -2;
/// The xid of an auth packet and of its reply.
///
/// ```
/// use curator_wire::codec::RequestFrame;
/// use curator_wire::proto::{AUTH_XID, AuthPacket, Request};
///
/// let auth = RequestFrame::new(AUTH_XID, &Request::Auth(AuthPacket::new("digest", b"u:p".to_vec())));
/// # drop(auth);
/// ```
pub const AUTH_XID: i32 = -4;
/// The xid of a setWatches (or setWatches2) request and of its reply.
///
/// ```
/// use curator_wire::codec::RequestFrame;
/// use curator_wire::proto::{Request, SET_WATCHES_XID, SetWatches2};
///
/// let again = RequestFrame::new(SET_WATCHES_XID, &Request::SetWatches2(SetWatches2::default()));
/// # drop(again);
/// ```
pub const SET_WATCHES_XID: i32 = -8;

/// Declares a fieldless enum of wire codes with `from_code` and `code`, and a crate-private
/// reader that fails with `$unknown`.
macro_rules! code_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($unknown:ident { $unknown_field:ident }, example $example:ident = $example_code:literal) {
            $( $(#[$variant_meta:meta])* $variant:ident = $value:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$variant_meta])* $variant, )*
        }

        impl $name {
            /// Every value, in the order ZooKeeper's sources list them.
            #[doc = concat!(
                "```\nuse curator_wire::proto::", stringify!($name), ";\n\n",
                "assert!(", stringify!($name), "::ALL.contains(&", stringify!($name), "::", stringify!($example), "));\n```"
            )]
            pub const ALL: &'static [$name] = &[$( $name::$variant, )*];

            /// The value for a code as sent, or `None` for a code ZooKeeper does not have.
            #[doc = concat!(
                "```\nuse curator_wire::proto::", stringify!($name), ";\n\n",
                "assert_eq!(", stringify!($name), "::from_code(", stringify!($example_code), "), Some(", stringify!($name), "::", stringify!($example), "));\n",
                "assert_eq!(", stringify!($name), "::from_code(1000), None);\n```"
            )]
            pub fn from_code(code: i32) -> Option<Self> {
                match code {
                    $( $value => Some($name::$variant), )*
                    _ => None,
                }
            }

            /// The code sent on the wire.
            #[doc = concat!(
                "```\nuse curator_wire::proto::", stringify!($name), ";\n\n",
                "assert_eq!(", stringify!($name), "::", stringify!($example), ".code(), ", stringify!($example_code), ");\n```"
            )]
            pub fn code(self) -> i32 {
                match self {
                    $( $name::$variant => $value, )*
                }
            }

            pub(crate) fn read(reader: &mut Reader<'_>, field: &'static str) -> Result<Self, DecodeError> {
                let at = reader.position();
                let code = reader.i32(field)?;
                Self::from_code(code).ok_or_else(|| {
                    reader.error_at(field, at, DecodeErrorKind::$unknown { $unknown_field: code })
                })
            }
        }
    };
}

code_enum! {
    /// The type of a request (`ZooDefs.OpCode`). Every opcode of ZooKeeper 3.5 to 3.9 (none
    /// has been added since whoAmI in 3.7), including those only servers use among themselves
    /// (`createSession`, `deleteContainer`) and the two that are not requests (`notification`,
    /// `error`, which marks a failed step in multi results).
    pub enum OpCode (UnknownOpCode { code }, example GetData = 4) {
        /// A watch notification (not a request).
        Notification = 0,
        /// create: the reply is the created path.
        Create = 1,
        /// delete.
        Delete = 2,
        /// exists.
        Exists = 3,
        /// getData.
        GetData = 4,
        /// setData.
        SetData = 5,
        /// getACL.
        GetAcl = 6,
        /// setACL.
        SetAcl = 7,
        /// getChildren (names only).
        GetChildren = 8,
        /// sync.
        Sync = 9,
        /// ping.
        Ping = 11,
        /// getChildren2 (names and the parent's stat).
        GetChildren2 = 12,
        /// check (a version check, inside a multi).
        Check = 13,
        /// multi (a transaction).
        Multi = 14,
        /// create2: the reply is the created path and its stat.
        Create2 = 15,
        /// reconfig.
        Reconfig = 16,
        /// checkWatches.
        CheckWatches = 17,
        /// removeWatches.
        RemoveWatches = 18,
        /// createContainer.
        CreateContainer = 19,
        /// deleteContainer (the server's own).
        DeleteContainer = 20,
        /// createTTL.
        CreateTtl = 21,
        /// multiRead (reads seen at one point in time).
        MultiRead = 22,
        /// auth (an `AuthPacket`).
        Auth = 100,
        /// setWatches (3.5 servers).
        SetWatches = 101,
        /// sasl.
        Sasl = 102,
        /// getEphemerals.
        GetEphemerals = 103,
        /// getAllChildrenNumber.
        GetAllChildrenNumber = 104,
        /// setWatches2 (3.6+: persistent watches too).
        SetWatches2 = 105,
        /// addWatch (persistent watches).
        AddWatch = 106,
        /// whoAmI.
        WhoAmI = 107,
        /// createSession (the server's own).
        CreateSession = -10,
        /// closeSession.
        CloseSession = -11,
        /// A failed step in multi results (not a request).
        Error = -1,
    }
}

code_enum! {
    /// The type of a watch event (`Watcher.Event.EventType`).
    pub enum EventType (UnknownEventType { code }, example NodeDataChanged = 3) {
        /// A change of session state (the server does not send these).
        None = -1,
        /// A node was created.
        NodeCreated = 1,
        /// A node was deleted.
        NodeDeleted = 2,
        /// A node's data changed.
        NodeDataChanged = 3,
        /// A node's children changed.
        NodeChildrenChanged = 4,
        /// A data watch was removed.
        DataWatchRemoved = 5,
        /// A child watch was removed.
        ChildWatchRemoved = 6,
        /// A persistent watch was removed.
        PersistentWatchRemoved = 7,
    }
}

code_enum! {
    /// A session state as carried in watch events (`Watcher.Event.KeeperState`); servers
    /// send `SyncConnected` in every notification.
    pub enum KeeperState (UnknownKeeperState { code }, example SyncConnected = 3) {
        /// Unknown (deprecated in the Java client).
        Unknown = -1,
        /// Disconnected.
        Disconnected = 0,
        /// NoSyncConnected (deprecated in the Java client).
        NoSyncConnected = 1,
        /// Connected.
        SyncConnected = 3,
        /// Authentication failed.
        AuthFailed = 4,
        /// Connected to a read-only server.
        ConnectedReadOnly = 5,
        /// SASL authentication succeeded.
        SaslAuthenticated = 6,
        /// The session expired.
        Expired = -112,
        /// The client closed.
        Closed = 7,
    }
}

code_enum! {
    /// What kind of watches checkWatches and removeWatches mean (`Watcher.WatcherType`).
    /// `Persistent` and `PersistentRecursive` are understood by 3.9 servers.
    pub enum WatcherType (UnknownWatcherType { code }, example Data = 2) {
        /// Child watches.
        Children = 1,
        /// Data (and exists) watches.
        Data = 2,
        /// Every kind.
        Any = 3,
        /// Persistent watches (3.9).
        Persistent = 4,
        /// Persistent recursive watches (3.9).
        PersistentRecursive = 5,
    }
}

code_enum! {
    /// The mode of an addWatch (`ZooDefs.AddWatchModes`).
    pub enum AddWatchMode (UnknownAddWatchMode { code }, example PersistentRecursive = 1) {
        /// Data, child and exists events of one node, until removed.
        Persistent = 0,
        /// Data, create and delete events of a node and every node below it, until removed.
        PersistentRecursive = 1,
    }
}

/// How a node is created: the `flags` of create requests (`CreateMode`).
///
/// ```
/// use curator_wire::proto::CreateMode;
///
/// assert_eq!(CreateMode::from_flags(3), Some(CreateMode::EphemeralSequential));
/// assert!(CreateMode::EphemeralSequential.is_sequential());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum CreateMode {
    /// Persistent.
    #[default]
    Persistent,
    /// Ephemeral: deleted when the session ends.
    Ephemeral,
    /// Persistent, with a sequence number appended to the name.
    PersistentSequential,
    /// Ephemeral, with a sequence number appended to the name.
    EphemeralSequential,
    /// A container: deleted by the server some time after its last child is.
    Container,
    /// Persistent, deleted by the server when unchanged and childless for its TTL.
    PersistentWithTtl,
    /// As `PersistentWithTtl`, with a sequence number.
    PersistentSequentialWithTtl,
}

impl CreateMode {
    /// Every mode.
    ///
    /// ```
    /// use curator_wire::proto::CreateMode;
    ///
    /// assert_eq!(CreateMode::ALL.len(), 7);
    /// ```
    pub const ALL: &'static [CreateMode] = &[
        CreateMode::Persistent,
        CreateMode::Ephemeral,
        CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential,
        CreateMode::Container,
        CreateMode::PersistentWithTtl,
        CreateMode::PersistentSequentialWithTtl,
    ];

    /// The mode for flags as sent, or `None` for flags ZooKeeper does not have.
    ///
    /// ```
    /// use curator_wire::proto::CreateMode;
    ///
    /// assert_eq!(CreateMode::from_flags(4), Some(CreateMode::Container));
    /// assert_eq!(CreateMode::from_flags(7), None);
    /// ```
    pub fn from_flags(flags: i32) -> Option<Self> {
        Some(match flags {
            0 => CreateMode::Persistent,
            1 => CreateMode::Ephemeral,
            2 => CreateMode::PersistentSequential,
            3 => CreateMode::EphemeralSequential,
            4 => CreateMode::Container,
            5 => CreateMode::PersistentWithTtl,
            6 => CreateMode::PersistentSequentialWithTtl,
            _ => return None,
        })
    }

    /// The flags sent on the wire.
    ///
    /// ```
    /// use curator_wire::proto::CreateMode;
    ///
    /// assert_eq!(CreateMode::PersistentWithTtl.flags(), 5);
    /// ```
    pub fn flags(self) -> i32 {
        match self {
            CreateMode::Persistent => 0,
            CreateMode::Ephemeral => 1,
            CreateMode::PersistentSequential => 2,
            CreateMode::EphemeralSequential => 3,
            CreateMode::Container => 4,
            CreateMode::PersistentWithTtl => 5,
            CreateMode::PersistentSequentialWithTtl => 6,
        }
    }

    /// Whether the server appends a sequence number.
    ///
    /// ```
    /// use curator_wire::proto::CreateMode;
    ///
    /// assert!(CreateMode::PersistentSequentialWithTtl.is_sequential());
    /// assert!(!CreateMode::Container.is_sequential());
    /// ```
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl
        )
    }

    pub(crate) fn read(reader: &mut Reader<'_>, field: &'static str) -> Result<Self, DecodeError> {
        let at = reader.position();
        let flags = reader.i32(field)?;
        Self::from_flags(flags)
            .ok_or_else(|| reader.error_at(field, at, DecodeErrorKind::UnknownCreateMode { flags }))
    }
}

/// An error code of a reply (`KeeperException.Code`): in reply headers, in the error results
/// of multi and multiRead, and in the body of an addWatch reply.
///
/// Codes this crate does not know (a newer server's) are kept as
/// [`Unknown`](ErrorCode::Unknown), for the caller to report; positive values are not error
/// codes at all and fail decoding.
///
/// ```
/// use curator_wire::proto::ErrorCode;
///
/// assert_eq!(ErrorCode::from_code(-101), Some(ErrorCode::NoNode));
/// let newer = ErrorCode::from_code(-200).unwrap();
/// assert_eq!(newer.code(), -200);
/// assert!(matches!(newer, ErrorCode::Unknown(_)));
/// assert_eq!(ErrorCode::from_code(5), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// Success.
    Ok,
    /// A system error (-1).
    SystemError,
    /// A runtime inconsistency (-2): also the code of the steps after the failed one in a
    /// failed multi.
    RuntimeInconsistency,
    /// A data inconsistency (-3).
    DataInconsistency,
    /// The connection was lost (-4).
    ConnectionLoss,
    /// The server could not read or write a record (-5).
    MarshallingError,
    /// The operation is not implemented (-6).
    Unimplemented,
    /// The operation timed out (-7).
    OperationTimeout,
    /// Invalid arguments (-8).
    BadArguments,
    /// Unknown session (-12, between servers).
    UnknownSession,
    /// A new configuration has no quorum (-13).
    NewConfigNoQuorum,
    /// Another reconfiguration is in progress (-14).
    ReconfigInProgress,
    /// The marker between system and API errors (-100, never sent).
    ApiError,
    /// The node does not exist (-101).
    NoNode,
    /// Not authenticated (-102).
    NoAuth,
    /// A version check failed (-103).
    BadVersion,
    /// Ephemeral nodes may not have children (-108).
    NoChildrenForEphemerals,
    /// The node already exists (-110).
    NodeExists,
    /// The node has children (-111).
    NotEmpty,
    /// The session expired (-112).
    SessionExpired,
    /// An invalid callback (-113).
    InvalidCallback,
    /// An invalid ACL (-114).
    InvalidAcl,
    /// Authentication failed (-115).
    AuthFailed,
    /// The session moved to another server (-118).
    SessionMoved,
    /// A write to a read-only server (-119).
    NotReadOnly,
    /// An ephemeral node on a local session (-120).
    EphemeralOnLocalSession,
    /// No such watch to remove (-121).
    NoWatcher,
    /// The request did not complete in time (-122).
    RequestTimeout,
    /// Reconfiguration is disabled (-123).
    ReconfigDisabled,
    /// The server requires SASL authentication (-124).
    SessionClosedRequireSaslAuth,
    /// A quota was exceeded (-125).
    QuotaExceeded,
    /// The server is throttling requests (-127).
    Throttled,
    /// A negative code this crate does not know.
    Unknown(UnknownErrorCode),
}

/// A negative error code [`ErrorCode`] has no name for. Made only by
/// [`ErrorCode::from_code`], so it never holds a known or a positive code.
///
/// ```
/// use curator_wire::proto::ErrorCode;
///
/// let Some(ErrorCode::Unknown(code)) = ErrorCode::from_code(-126) else { unreachable!() };
/// assert_eq!(code.code(), -126);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UnknownErrorCode(i32);

impl UnknownErrorCode {
    /// The code as sent.
    ///
    /// ```
    /// use curator_wire::proto::ErrorCode;
    ///
    /// let Some(ErrorCode::Unknown(code)) = ErrorCode::from_code(-9) else { unreachable!() };
    /// assert_eq!(code.code(), -9);
    /// ```
    pub fn code(self) -> i32 {
        self.0
    }
}

/// The named codes and their values.
const NAMED_ERRORS: [(ErrorCode, i32); 32] = [
    (ErrorCode::Ok, 0),
    (ErrorCode::SystemError, -1),
    (ErrorCode::RuntimeInconsistency, -2),
    (ErrorCode::DataInconsistency, -3),
    (ErrorCode::ConnectionLoss, -4),
    (ErrorCode::MarshallingError, -5),
    (ErrorCode::Unimplemented, -6),
    (ErrorCode::OperationTimeout, -7),
    (ErrorCode::BadArguments, -8),
    (ErrorCode::UnknownSession, -12),
    (ErrorCode::NewConfigNoQuorum, -13),
    (ErrorCode::ReconfigInProgress, -14),
    (ErrorCode::ApiError, -100),
    (ErrorCode::NoNode, -101),
    (ErrorCode::NoAuth, -102),
    (ErrorCode::BadVersion, -103),
    (ErrorCode::NoChildrenForEphemerals, -108),
    (ErrorCode::NodeExists, -110),
    (ErrorCode::NotEmpty, -111),
    (ErrorCode::SessionExpired, -112),
    (ErrorCode::InvalidCallback, -113),
    (ErrorCode::InvalidAcl, -114),
    (ErrorCode::AuthFailed, -115),
    (ErrorCode::SessionMoved, -118),
    (ErrorCode::NotReadOnly, -119),
    (ErrorCode::EphemeralOnLocalSession, -120),
    (ErrorCode::NoWatcher, -121),
    (ErrorCode::RequestTimeout, -122),
    (ErrorCode::ReconfigDisabled, -123),
    (ErrorCode::SessionClosedRequireSaslAuth, -124),
    (ErrorCode::QuotaExceeded, -125),
    (ErrorCode::Throttled, -127),
];

impl ErrorCode {
    /// The named codes (every value but [`Unknown`](ErrorCode::Unknown)).
    ///
    /// ```
    /// use curator_wire::proto::ErrorCode;
    ///
    /// assert!(ErrorCode::NAMED.contains(&ErrorCode::BadVersion));
    /// ```
    pub const NAMED: &'static [ErrorCode] = &{
        let mut named = [ErrorCode::Ok; NAMED_ERRORS.len()];
        let mut i = 0;
        while i < named.len() {
            named[i] = NAMED_ERRORS[i].0;
            i += 1;
        }
        named
    };

    /// The error code for a code as sent: `None` for a positive value (no error code is).
    ///
    /// ```
    /// use curator_wire::proto::ErrorCode;
    ///
    /// assert_eq!(ErrorCode::from_code(0), Some(ErrorCode::Ok));
    /// assert_eq!(ErrorCode::from_code(-110), Some(ErrorCode::NodeExists));
    /// ```
    pub fn from_code(code: i32) -> Option<Self> {
        if code > 0 {
            return None;
        }
        Some(
            NAMED_ERRORS
                .iter()
                .find(|(_, value)| *value == code)
                .map_or(ErrorCode::Unknown(UnknownErrorCode(code)), |(named, _)| {
                    *named
                }),
        )
    }

    /// The code sent on the wire.
    ///
    /// ```
    /// use curator_wire::proto::ErrorCode;
    ///
    /// assert_eq!(ErrorCode::BadVersion.code(), -103);
    /// ```
    pub fn code(self) -> i32 {
        match self {
            ErrorCode::Unknown(unknown) => unknown.0,
            named => NAMED_ERRORS
                .iter()
                .find(|(value, _)| *value == named)
                .map_or(0, |(_, code)| *code),
        }
    }

    /// Whether this is [`Ok`](ErrorCode::Ok).
    ///
    /// ```
    /// use curator_wire::proto::ErrorCode;
    ///
    /// assert!(ErrorCode::Ok.is_ok());
    /// assert!(!ErrorCode::NoNode.is_ok());
    /// ```
    pub fn is_ok(self) -> bool {
        self == ErrorCode::Ok
    }

    pub(crate) fn read(reader: &mut Reader<'_>, field: &'static str) -> Result<Self, DecodeError> {
        let at = reader.position();
        let code = reader.i32(field)?;
        Self::from_code(code)
            .ok_or_else(|| reader.error_at(field, at, DecodeErrorKind::UnknownErrorCode { code }))
    }
}

impl std::fmt::Display for ErrorCode {
    /// The variant's name and the code: `NoNode (-101)`.
    ///
    /// ```
    /// use curator_wire::proto::ErrorCode;
    ///
    /// assert_eq!(ErrorCode::NoNode.to_string(), "NoNode (-101)");
    /// assert_eq!(ErrorCode::from_code(-200).unwrap().to_string(), "unknown error code (-200)");
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ErrorCode::Unknown(unknown) => write!(f, "unknown error code ({})", unknown.0),
            named => write!(f, "{named:?} ({})", named.code()),
        }
    }
}

/// The permissions of an ACL entry (`ZooDefs.Perms`): a bit set. Bits ZooKeeper does not
/// define are kept as sent.
///
/// ```
/// use curator_wire::proto::Perms;
///
/// let perms = Perms::READ | Perms::WRITE;
/// assert_eq!(perms.bits(), 3);
/// assert!(perms.contains(Perms::READ));
/// assert!(!perms.contains(Perms::ADMIN));
/// assert_eq!(format!("{perms:?}"), "Perms(READ | WRITE)");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Perms(i32);

impl Perms {
    /// No permission.
    pub const NONE: Perms = Perms(0);
    /// Read the data and list the children.
    pub const READ: Perms = Perms(1);
    /// Set the data.
    pub const WRITE: Perms = Perms(1 << 1);
    /// Create children.
    pub const CREATE: Perms = Perms(1 << 2);
    /// Delete children.
    pub const DELETE: Perms = Perms(1 << 3);
    /// Set the ACL.
    pub const ADMIN: Perms = Perms(1 << 4);
    /// Every permission.
    pub const ALL: Perms = Perms(0x1f);

    /// The permissions of bits as sent.
    ///
    /// ```
    /// use curator_wire::proto::Perms;
    ///
    /// assert_eq!(Perms::from_bits(31), Perms::ALL);
    /// ```
    pub fn from_bits(bits: i32) -> Self {
        Perms(bits)
    }

    /// The bits sent on the wire.
    ///
    /// ```
    /// use curator_wire::proto::Perms;
    ///
    /// assert_eq!(Perms::ADMIN.bits(), 16);
    /// ```
    pub fn bits(self) -> i32 {
        self.0
    }

    /// Whether every bit of `other` is set here.
    ///
    /// ```
    /// use curator_wire::proto::Perms;
    ///
    /// assert!(Perms::ALL.contains(Perms::CREATE | Perms::DELETE));
    /// ```
    pub fn contains(self, other: Perms) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Perms {
    type Output = Perms;

    fn bitor(self, rhs: Perms) -> Perms {
        Perms(self.0 | rhs.0)
    }
}

impl std::fmt::Debug for Perms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const NAMES: [(Perms, &str); 5] = [
            (Perms::READ, "READ"),
            (Perms::WRITE, "WRITE"),
            (Perms::CREATE, "CREATE"),
            (Perms::DELETE, "DELETE"),
            (Perms::ADMIN, "ADMIN"),
        ];
        let mut parts: Vec<String> = NAMES
            .iter()
            .filter(|(perm, _)| self.contains(*perm))
            .map(|(_, name)| (*name).to_owned())
            .collect();
        let rest = self.0 & !Perms::ALL.0;
        if rest != 0 {
            parts.push(format!("{rest:#x}"));
        }
        if parts.is_empty() {
            parts.push("NONE".to_owned());
        }
        write!(f, "Perms({})", parts.join(" | "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_maps_back_to_itself() {
        for op in OpCode::ALL {
            assert_eq!(OpCode::from_code(op.code()), Some(*op));
        }
        for event in EventType::ALL {
            assert_eq!(EventType::from_code(event.code()), Some(*event));
        }
        for state in KeeperState::ALL {
            assert_eq!(KeeperState::from_code(state.code()), Some(*state));
        }
        for kind in WatcherType::ALL {
            assert_eq!(WatcherType::from_code(kind.code()), Some(*kind));
        }
        for mode in AddWatchMode::ALL {
            assert_eq!(AddWatchMode::from_code(mode.code()), Some(*mode));
        }
        for mode in CreateMode::ALL {
            assert_eq!(CreateMode::from_flags(mode.flags()), Some(*mode));
        }
        for code in ErrorCode::NAMED {
            assert_eq!(ErrorCode::from_code(code.code()), Some(*code));
        }
    }

    #[test]
    fn the_opcodes_are_zookeepers() {
        let expected = [
            (OpCode::Notification, 0),
            (OpCode::Create, 1),
            (OpCode::Delete, 2),
            (OpCode::Exists, 3),
            (OpCode::GetData, 4),
            (OpCode::SetData, 5),
            (OpCode::GetAcl, 6),
            (OpCode::SetAcl, 7),
            (OpCode::GetChildren, 8),
            (OpCode::Sync, 9),
            (OpCode::Ping, 11),
            (OpCode::GetChildren2, 12),
            (OpCode::Check, 13),
            (OpCode::Multi, 14),
            (OpCode::Create2, 15),
            (OpCode::Reconfig, 16),
            (OpCode::CheckWatches, 17),
            (OpCode::RemoveWatches, 18),
            (OpCode::CreateContainer, 19),
            (OpCode::DeleteContainer, 20),
            (OpCode::CreateTtl, 21),
            (OpCode::MultiRead, 22),
            (OpCode::Auth, 100),
            (OpCode::SetWatches, 101),
            (OpCode::Sasl, 102),
            (OpCode::GetEphemerals, 103),
            (OpCode::GetAllChildrenNumber, 104),
            (OpCode::SetWatches2, 105),
            (OpCode::AddWatch, 106),
            (OpCode::WhoAmI, 107),
            (OpCode::CreateSession, -10),
            (OpCode::CloseSession, -11),
            (OpCode::Error, -1),
        ];
        assert_eq!(OpCode::ALL.len(), expected.len());
        for (op, code) in expected {
            assert_eq!(op.code(), code, "{op:?}");
        }
        for unknown in [10, 23, 99, 108, -2, -12, i32::MIN, i32::MAX] {
            assert_eq!(OpCode::from_code(unknown), None, "{unknown}");
        }
    }

    #[test]
    fn unknown_negative_error_codes_are_kept_and_positive_ones_refused() {
        for code in [-9, -126, -128, -1000, i32::MIN] {
            let error = ErrorCode::from_code(code).unwrap();
            assert!(matches!(error, ErrorCode::Unknown(_)), "{code}");
            assert_eq!(error.code(), code);
        }
        for code in [1, 101, i32::MAX] {
            assert_eq!(ErrorCode::from_code(code), None);
        }
    }

    #[test]
    fn reading_an_unknown_code_names_the_field() {
        let bytes = 42i32.to_be_bytes();
        let error = EventType::read(&mut Reader::new(&bytes, 0), "type").unwrap_err();
        assert_eq!(
            error.kind(),
            &DecodeErrorKind::UnknownEventType { code: 42 }
        );
        assert_eq!(error.field(), "type");
        let error = ErrorCode::read(&mut Reader::new(&bytes, 0), "err").unwrap_err();
        assert_eq!(
            error.kind(),
            &DecodeErrorKind::UnknownErrorCode { code: 42 }
        );
        let error = CreateMode::read(&mut Reader::new(&bytes, 0), "flags").unwrap_err();
        assert_eq!(
            error.kind(),
            &DecodeErrorKind::UnknownCreateMode { flags: 42 }
        );
    }

    #[test]
    fn perms_print_their_names_and_keep_unknown_bits() {
        assert_eq!(format!("{:?}", Perms::NONE), "Perms(NONE)");
        assert_eq!(
            format!("{:?}", Perms::from_bits(0x21)),
            "Perms(READ | 0x20)"
        );
        assert_eq!(Perms::from_bits(0x21).bits(), 0x21);
    }
}
