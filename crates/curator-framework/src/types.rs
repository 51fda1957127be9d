//! The framework's own ZooKeeper data types: node metadata, create modes, watch events.

use std::time::Duration;

pub(crate) mod multi;

/// A node's metadata, as ZooKeeper reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Stat {
    /// The zxid of the change that created the node.
    pub czxid: i64,
    /// The zxid of the change that last modified the node's data.
    pub mzxid: i64,
    /// The zxid of the change that last modified the node's children.
    pub pzxid: i64,
    /// Creation time, in milliseconds since the epoch.
    pub ctime: i64,
    /// Last modification time, in milliseconds since the epoch.
    pub mtime: i64,
    /// The number of changes to the data.
    pub version: i32,
    /// The number of changes to the children.
    pub cversion: i32,
    /// The number of changes to the ACL.
    pub aversion: i32,
    /// The session that owns the node if it is ephemeral, otherwise 0.
    pub ephemeral_owner: i64,
    /// The length of the data.
    pub data_length: i32,
    /// The number of children.
    pub num_children: i32,
}

/// How a node is created (ZooKeeper's create modes, Curator's names).
///
/// ```
/// use curator_framework::CreateMode;
/// assert!(CreateMode::EphemeralSequential.is_sequential());
/// assert!(CreateMode::EphemeralSequential.is_ephemeral());
/// assert!(CreateMode::PersistentWithTtl.is_ttl());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum CreateMode {
    /// Lives until deleted.
    #[default]
    Persistent,
    /// Persistent, with a server-assigned sequence number appended to the name.
    PersistentSequential,
    /// Deleted when the creating session ends.
    Ephemeral,
    /// Ephemeral, with a sequence number appended.
    EphemeralSequential,
    /// Deleted by the server some time after its last child is deleted (ZooKeeper 3.5.3+).
    Container,
    /// Deleted when it has had no children and no change for its TTL (set with `with_ttl`;
    /// the server needs `extendedTypesEnabled=true`).
    PersistentWithTtl,
    /// [`CreateMode::PersistentWithTtl`] with a sequence number appended.
    PersistentSequentialWithTtl,
}

impl CreateMode {
    /// Whether the server appends a sequence number.
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl
        )
    }

    /// Whether the node goes with its session.
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }

    /// Whether the node is a container.
    pub fn is_container(self) -> bool {
        self == CreateMode::Container
    }

    /// Whether the node needs a TTL.
    pub fn is_ttl(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
        )
    }

    /// ZooKeeper's numeric mode (0 persistent … 6 persistent sequential with TTL).
    pub fn code(self) -> i32 {
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
}

/// What a watch event reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventType {
    /// The watched node was created.
    NodeCreated,
    /// The watched node was deleted.
    NodeDeleted,
    /// The watched node's data changed.
    NodeDataChanged,
    /// The watched node's children changed.
    NodeChildrenChanged,
    /// Not a node event: the session's state changed (see [`WatchedEvent::session_state`]).
    Session,
}

/// The session's state when a watch event was delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeeperState {
    /// Connected.
    SyncConnected,
    /// Connected to a read-only server.
    ConnectedReadOnly,
    /// Disconnected; the session may still be alive.
    Disconnected,
    /// The session expired: one-shot watches of that session will never fire.
    Expired,
    /// The session was closed by the client.
    Closed,
    /// Authentication failed.
    AuthFailed,
}

/// A watch notification.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WatchedEvent {
    /// What happened.
    pub event_type: EventType,
    /// The session's state.
    pub session_state: KeeperState,
    /// The node the event is about (namespace removed); empty for session events.
    pub path: String,
    /// The zxid of the change, for node events when the server reports it (ZooKeeper 3.9+).
    pub zxid: Option<i64>,
}

/// A TTL in the range ZooKeeper accepts (1 ms to 2^40 − 1 ms).
pub(crate) fn validate_ttl(ttl: Duration) -> Result<(), crate::error::Error> {
    const MAX_TTL_MS: u128 = (1 << 40) - 1;
    let ms = ttl.as_millis();
    if ms == 0 || ms > MAX_TTL_MS {
        return Err(crate::error::Error::InvalidArgument(format!(
            "TTL {ttl:?} is outside ZooKeeper's range (1 ms to {MAX_TTL_MS} ms)"
        )));
    }
    Ok(())
}
