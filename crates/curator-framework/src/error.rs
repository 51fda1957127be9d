//! The framework's one error type.

use std::fmt;

mod tls;
#[cfg(feature = "schema")]
mod violation;

pub use tls::TlsFailure;
#[cfg(feature = "schema")]
pub use violation::Violation;

/// Everything an operation of this framework can fail with: the ZooKeeper error codes callers act
/// on, and the framework's own failures (a closed client, a deadline, bad input).
///
/// Errors are `Clone + Eq`, so recipes can store and compare them. Classify them with
/// [`is_retryable`](Error::is_retryable) and [`is_session_terminal`](Error::is_session_terminal)
/// instead of matching long lists of variants.
///
/// ```
/// use curator_framework::Error;
/// assert!(Error::ConnectionLoss.is_retryable());
/// assert!(Error::NotConnected { waited: std::time::Duration::from_secs(1) }.is_retryable());
/// assert!(!Error::NoNode.is_retryable());
/// assert!(Error::SessionExpired.is_session_terminal());
/// assert_eq!(Error::NoNode.code(), Some(-101));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The node does not exist (ZooKeeper `NONODE`, -101).
    #[error("no node")]
    NoNode,
    /// The node already exists (`NODEEXISTS`, -110).
    #[error("node exists")]
    NodeExists,
    /// The expected version does not match the node's (`BADVERSION`, -103).
    #[error("bad version")]
    BadVersion,
    /// The node has children (`NOTEMPTY`, -111).
    #[error("node has children")]
    NotEmpty,
    /// Ephemeral nodes may not have children (`NOCHILDRENFOREPHEMERALS`, -108).
    #[error("ephemeral nodes may not have children")]
    NoChildrenForEphemerals,
    /// The session lacks permission (`NOAUTH`, -102).
    #[error("not authorized")]
    NoAuth,
    /// The ACL is invalid (`INVALIDACL`, -114).
    #[error("invalid ACL")]
    InvalidAcl,
    /// Authentication failed (`AUTHFAILED`, -115).
    #[error("authentication failed")]
    AuthFailed,
    /// The connection to the server was lost; the request may or may not have been applied
    /// (`CONNECTIONLOSS`, -4).
    #[error("connection lost")]
    ConnectionLoss,
    /// The server did not answer in time (`OPERATIONTIMEOUT`, -7).
    #[error("operation timed out at the server")]
    OperationTimeout,
    /// The session expired: its ephemeral nodes and watches are gone (`SESSIONEXPIRED`, -112).
    #[error("session expired")]
    SessionExpired,
    /// The session moved to another server (`SESSIONMOVED`, -118).
    #[error("session moved to another server")]
    SessionMoved,
    /// A write reached a read-only server (`NOTREADONLY`, -119).
    #[error("write to a read-only server")]
    NotReadOnly,
    /// No such watcher to remove (`NOWATCHER`, -121).
    #[error("no such watcher")]
    NoWatcher,
    /// A quota was exceeded (`QUOTAEXCEEDED`, -125).
    #[error("quota exceeded")]
    QuotaExceeded,
    /// The server throttled the request (`THROTTLEDOP`, -127).
    #[error("request throttled by the server")]
    Throttled,
    /// Dynamic reconfiguration is disabled (`RECONFIGDISABLED`, -123): the servers run with
    /// `reconfigEnabled=false`.
    #[error("reconfiguration disabled")]
    ReconfigDisabled,
    /// A reconfiguration would leave no quorum of the new configuration connected to the leader
    /// (`NEWCONFIGNOQUORUM`, -13); the ensemble is unchanged.
    #[error("the new configuration has no quorum connected to the leader")]
    NewConfigNoQuorum,
    /// Another reconfiguration is in progress (`RECONFIGINPROGRESS`, -14); the ensemble is
    /// unchanged by this one. Retry once it is done.
    #[error("another reconfiguration is in progress")]
    ReconfigInProgress,
    /// The server does not implement the request (`UNIMPLEMENTED`, -6).
    #[error("not implemented by the server")]
    Unimplemented,
    /// A transaction step failed; nothing of the transaction was applied.
    #[error("transaction step {index} failed: {cause}")]
    Transaction {
        /// The index of the failing step.
        index: usize,
        /// Why it failed.
        cause: Box<Error>,
    },
    /// Any other ZooKeeper error code.
    #[error("ZooKeeper error {code}: {message}")]
    Other {
        /// ZooKeeper's numeric code.
        code: i32,
        /// What the wire client said.
        message: String,
    },
    /// The server (or the wire client) answered something this framework does not know how to
    /// read: a bug or a version mismatch, never a normal outcome.
    #[error("unexpected reply: {0}")]
    UnexpectedReply(String),
    /// The server refused the request's arguments (`BADARGUMENTS`, -8): for example a delete
    /// of `/zookeeper`, which belongs to the server.
    #[error("the server refused the request's arguments")]
    BadArguments,
    /// A TLS connection failed on its certificates or settings (see
    /// [`TlsFailure`](TlsFailure)); retrying the same settings will not help.
    #[error("{0}")]
    Tls(TlsFailure),
    /// This client cannot start its SASL login (for Kerberos: no credentials in the process's
    /// Kerberos environment, a server principal the KDC does not know, no KDC reachable); the
    /// server was never asked. Not retried: the environment must change first.
    #[error("the SASL {mechanism} login cannot start: {reason}")]
    SaslLogin {
        /// The mechanism (`GSSAPI`).
        mechanism: String,
        /// What the mechanism's library said.
        reason: String,
    },
    /// The server made a session without the identity this client asked for: SASL was
    /// configured, but `whoAmI` lists no matching `sasl:` identity (the server does not require
    /// or offer SASL, so the wire client's login never happened and the session is anonymous).
    /// The session is closed at once and the client keeps trying, as for a refused login; not
    /// retried: the server's configuration must change first.
    ///
    /// ```
    /// use curator_framework::Error;
    /// let error = Error::IdentityNotGranted {
    ///     requested: "sasl:bob".into(),
    ///     granted: vec!["ip:127.0.0.1".into()],
    /// };
    /// assert_eq!(
    ///     error.to_string(),
    ///     "the server did not grant the identity sasl:bob (the session had ip:127.0.0.1): is SASL enabled on the server?"
    /// );
    /// ```
    #[error(
        "the server did not grant the identity {requested} (the session had {}): is SASL enabled on the server?",
        if granted.is_empty() { "no identity".to_owned() } else { granted.join(", ") }
    )]
    IdentityNotGranted {
        /// The identity asked for (`sasl:<user>`, or `sasl:` for a Kerberos login whose
        /// principal the server names).
        requested: String,
        /// What the server's `whoAmI` listed (`scheme:id`).
        granted: Vec<String>,
    },
    /// A listing of children is longer than the client's
    /// [`max_listing_bytes`](crate::CuratorFrameworkBuilder::max_listing_bytes): the directory
    /// holds more children than this client is configured to take in one reply. Not retryable:
    /// the same listing would fail again until children are removed or the limit raised.
    ///
    /// ```
    /// use curator_framework::Error;
    /// let error = Error::ResponseTooLarge {
    ///     path: "/locks/a".into(),
    ///     children: 30_000,
    ///     bytes: 1_500_004,
    ///     limit: curator_framework::JAVA_MAX_BUFFER,
    /// };
    /// assert!(!error.is_retryable() && !error.is_retried());
    /// assert_eq!(
    ///     error.to_string(),
    ///     "listing the 30000 children of \"/locks/a\" takes 1500004 bytes, over this client's limit of 1048575 bytes (max_listing_bytes)"
    /// );
    /// ```
    #[error(
        "listing the {children} children of {path:?} takes {bytes} bytes, over this client's limit of {limit} bytes (max_listing_bytes)"
    )]
    ResponseTooLarge {
        /// The listed node, as the server names it (the namespace included).
        path: String,
        /// How many children it has.
        children: usize,
        /// What their names take in ZooKeeper's encoding (four bytes per name plus the name).
        bytes: usize,
        /// The client's limit.
        limit: usize,
    },
    /// The client is closed.
    #[error("the client is closed")]
    Closed,
    /// The client (or the recipe) has not been started: call `start()` first.
    #[error("not started; call start() first")]
    NotStarted,
    /// `start()` was called on a client or recipe that is already started.
    #[error("already started")]
    AlreadyStarted,
    /// No connection to ZooKeeper came within `waited` (the builder's connection timeout for an
    /// operation, the caller's timeout for
    /// [`block_until_connected`](crate::CuratorFramework::block_until_connected)). The attempt
    /// that met it was never sent; an earlier attempt of the same operation may have been.
    /// Retryable, like [`ConnectionLoss`](Error::ConnectionLoss), whose code it reports (Java
    /// Curator throws `ConnectionLossException` here).
    #[error("no connection to ZooKeeper within {waited:?}")]
    NotConnected {
        /// How long the client waited.
        waited: std::time::Duration,
    },
    /// A wait bounded by the caller's deadline ended first, after `waited` (a cache's
    /// `wait_for`). Nothing was undone or sent because of it; waiting again may succeed. Not
    /// retryable by the framework's retry loop: the caller chose the deadline.
    ///
    /// ```
    /// use curator_framework::Error;
    /// let error = Error::Timeout { waited: std::time::Duration::from_secs(2) };
    /// assert!(!error.is_retryable() && error.code().is_none());
    /// assert_eq!(error.to_string(), "timed out after 2s");
    /// ```
    #[error("timed out after {waited:?}")]
    Timeout {
        /// How long the caller waited.
        waited: std::time::Duration,
    },
    /// A path that ZooKeeper would reject.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The offending path.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Any other bad input or setting.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A node's data could not be decoded (or a value encoded) by a recipe's
    /// [`Codec`](crate::codec::Codec).
    #[error("cannot decode the data of {path:?}: {reason}")]
    Decode {
        /// The node whose data is bad (empty when the codec was used without one).
        path: String,
        /// What is wrong with the data.
        reason: String,
    },
    /// A node's data could not be decompressed by the client's
    /// [`CompressionProvider`](crate::compression::CompressionProvider): a `get_data()` that
    /// decompresses met data that was not written compressed, or is corrupt. Not retryable:
    /// read it again without decompressing (`undecompressed()`) to see what it holds.
    #[error("cannot decompress the data of {path:?}: {reason}")]
    Decompression {
        /// The node whose data is not compressed data (as the caller named it).
        path: String,
        /// What the provider said.
        reason: String,
    },
    #[cfg(feature = "schema")]
    /// The client's [`SchemaSet`](crate::schema::SchemaSet) refused the operation before it was
    /// sent: the node at `path` (as the caller named it) may not be created, written, deleted or
    /// watched that way. Not retryable: the request, or the schema, must change.
    ///
    /// ```
    /// use curator_framework::Error;
    /// use curator_framework::schema::Violation;
    /// let error = Error::SchemaViolation {
    ///     schema: Some("config".into()),
    ///     path: "/config".into(),
    ///     violation: Violation::CannotBeDeleted,
    /// };
    /// assert!(!error.is_retryable());
    /// assert_eq!(error.to_string(), r#"schema "config" refuses "/config": Cannot be deleted"#);
    /// ```
    #[error("schema {} refuses {path:?}: {violation}", schema.as_deref().map_or_else(|| "set".to_owned(), |name| format!("{name:?}")))]
    SchemaViolation {
        /// The schema's name; `None` when a strict set has no schema for the path
        /// ([`Violation::NoSchema`](Violation::NoSchema)).
        schema: Option<String>,
        /// The path, as the caller named it (without the namespace).
        path: String,
        /// The rule broken.
        violation: Violation,
    },
    /// A write guarded by a lock or semaphore lease ([`Hold`](crate::recipe::Hold), see
    /// [`TransactionBuilder::guarded_by`](crate::ops::transaction::TransactionBuilder::guarded_by)
    /// and curator-values' `Guarded`) was refused because the
    /// hold is lost: its node is gone, its session ended, or the hold was signalled lost. Nothing
    /// was written. Not retryable: acquire again.
    ///
    /// ```
    /// use curator_framework::Error;
    /// let error = Error::LockLost { node: "/locks/a/_c_1-lock-0000000003".into() };
    /// assert!(!error.is_retryable());
    /// assert_eq!(error.to_string(), "the lock held through /locks/a/_c_1-lock-0000000003 is lost; nothing was written");
    /// ```
    #[error("the lock held through {node} is lost; nothing was written")]
    LockLost {
        /// The hold's node (as the caller names paths).
        node: String,
    },
    /// An action reserved for the leader was refused: this participant does not lead (any
    /// more). From a write guarded by a leadership's [`Hold`](crate::recipe::Hold), or a
    /// leader-only call of an election recipe. Nothing was written. Not retryable.
    ///
    /// ```
    /// use curator_framework::Error;
    /// let error = Error::NotLeader { node: "/election/_c_1-latch-0000000007".into() };
    /// assert_eq!(error.to_string(), "not the leader (leadership through /election/_c_1-latch-0000000007); nothing was written");
    /// ```
    #[error("not the leader (leadership through {node}); nothing was written")]
    NotLeader {
        /// The node the leadership rested on (empty when there was none).
        node: String,
    },

    /// A value is larger than a chunked value's settings allow (curator-values'
    /// `ChunkSettings::max_size`; the variant is here so recipes that store chunked values
    /// report it as the framework's error). Nothing was written. Not retryable.
    ///
    /// ```
    /// use curator_framework::Error;
    /// let error = Error::ValueTooLarge { path: "/blob".into(), size: 70, limit: 64 };
    /// assert!(!error.is_retryable());
    /// assert_eq!(error.to_string(), r#"a value of 70 bytes for "/blob" is over the limit of 64 bytes; nothing was written"#);
    /// ```
    #[error(
        "a value of {size} bytes for {path:?} is over the limit of {limit} bytes; nothing was written"
    )]
    ValueTooLarge {
        /// The value's node (as the caller named it).
        path: String,
        /// The value's size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// A chunked value (curator-values' `ChunkedValue`) could not be read as one whole value:
    /// newer writes replaced it under every attempt, or its chunks are missing or corrupt
    /// (removed or changed by hand). Reading again may succeed once the writes calm down.
    #[error("cannot read the chunked value at {path:?}: {reason}")]
    ChunkedRead {
        /// The value's node (as the caller named it).
        path: String,
        /// What went wrong on the last attempt.
        reason: String,
    },
}

impl Error {
    /// Whether retrying the same request may succeed: connection loss, no connection yet,
    /// operation timeout, session moved. (Session expiry is
    /// [`is_session_terminal`](Self::is_session_terminal) instead.)
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::ConnectionLoss
                | Error::NotConnected { .. }
                | Error::OperationTimeout
                | Error::SessionMoved
        )
    }

    /// Whether the framework's retry loop hands this error to the retry policy: the
    /// [retryable](Self::is_retryable) errors, and session expiry (as Curator's `RetryLoop`
    /// does; wrap the policy in `SessionFailedRetryPolicy` to fail on expiry instead).
    pub fn is_retried(&self) -> bool {
        self.is_retryable() || *self == Error::SessionExpired
    }

    /// Whether the session is over: its ephemeral nodes and watches are gone.
    pub fn is_session_terminal(&self) -> bool {
        matches!(
            self,
            Error::SessionExpired | Error::AuthFailed | Error::Closed
        )
    }

    /// ZooKeeper's numeric error code, where the error is one of ZooKeeper's.
    pub fn code(&self) -> Option<i32> {
        Some(match self {
            Error::NoNode => -101,
            Error::NodeExists => -110,
            Error::BadVersion => -103,
            Error::NotEmpty => -111,
            Error::NoChildrenForEphemerals => -108,
            Error::NoAuth => -102,
            Error::InvalidAcl => -114,
            Error::AuthFailed => -115,
            Error::ConnectionLoss | Error::NotConnected { .. } => -4,
            Error::OperationTimeout => -7,
            Error::SessionExpired => -112,
            Error::SessionMoved => -118,
            Error::NotReadOnly => -119,
            Error::NoWatcher => -121,
            Error::QuotaExceeded => -125,
            Error::Throttled => -127,
            Error::ReconfigDisabled => -123,
            Error::NewConfigNoQuorum => -13,
            Error::ReconfigInProgress => -14,
            Error::Unimplemented => -6,
            Error::BadArguments => -8,
            Error::Transaction { cause, .. } => return cause.code(),
            Error::Other { code, .. } => *code,
            _ => return None,
        })
    }

    /// A [`Decode`](Error::Decode) error for `path`.
    pub fn decode(path: &str, reason: impl fmt::Display) -> Error {
        Error::Decode {
            path: path.to_owned(),
            reason: reason.to_string(),
        }
    }

    /// A [`Decompression`](Error::Decompression) error for `path`, for
    /// [`CompressionProvider`](crate::compression::CompressionProvider)s.
    ///
    /// ```
    /// use curator_framework::Error;
    /// let error = Error::decompression("/a", "not gzip data");
    /// assert!(!error.is_retryable());
    /// assert_eq!(error.code(), None);
    /// assert_eq!(error.to_string(), r#"cannot decompress the data of "/a": not gzip data"#);
    /// ```
    pub fn decompression(path: &str, reason: impl fmt::Display) -> Error {
        Error::Decompression {
            path: path.to_owned(),
            reason: reason.to_string(),
        }
    }

    pub(crate) fn invalid_path(path: &str, reason: impl Into<String>) -> Error {
        Error::InvalidPath {
            path: path.to_owned(),
            reason: reason.into(),
        }
    }
}

/// The Java client's default `jute.maxbuffer` (`0xfffff`, one byte short of 1 MiB): the
/// longest reply a Java ZooKeeper client (and so Java Curator) accepts unless configured
/// otherwise. A `getChildren` reply past it makes the Java client drop its connection ("Packet
/// len … is out of range") and retry the same listing forever. With names of 50 bytes that is
/// about 19,000 children. A value for
/// [`max_listing_bytes`](crate::CuratorFrameworkBuilder::max_listing_bytes).
pub const JAVA_MAX_BUFFER: usize = 0xfffff;

/// The result type of the framework.
pub type Result<T, E = Error> = std::result::Result<T, E>;
