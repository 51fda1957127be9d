//! [`Error`]: why a request, a connection or a session failed.

use curator_wire::proto::ErrorCode;

/// Why a request, a connection attempt or the session failed.
///
/// A request that was sent and whose connection broke before its reply came fails with
/// [`ConnectionLoss`](Error::ConnectionLoss): it may or may not have been applied. A request that
/// could not be sent (no connection at that moment) fails with the same error and was not
/// applied. The session stays usable after either; it reconnects by itself.
///
/// ```
/// use curator_session::Error;
/// use curator_wire::proto::ErrorCode;
///
/// let error = Error::from_code(ErrorCode::NoNode);
/// assert_eq!(error, Error::Server(ErrorCode::NoNode));
/// assert!(!error.is_connection_error());
/// assert!(Error::ConnectionLoss.is_connection_error());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with this error code.
    #[error("the server answered {0}")]
    Server(ErrorCode),
    /// The connection broke (or there was none) before the reply came.
    #[error("connection lost")]
    ConnectionLoss,
    /// The session expired at the server: a new one is needed.
    #[error("session expired")]
    SessionExpired,
    /// The server refused the session's credentials (an `auth` packet or SASL).
    #[error("authentication failed: {0}")]
    AuthFailed(String),
    /// A SASL login was asked for and the server does not offer SASL (it would have made an
    /// anonymous session).
    #[error("SASL is not available: {0}")]
    SaslUnavailable(String),
    /// The session was closed by its owner.
    #[error("session closed")]
    Closed,
    /// No server of the list accepted a connection within the connection timeout.
    #[error("no ZooKeeper server could be reached: {0}")]
    NoServer(String),
    /// The server sent something that is not ZooKeeper's protocol (the connection was dropped).
    #[error("unexpected reply: {0}")]
    UnexpectedReply(String),
    /// A TLS setting that cannot be used.
    #[error("TLS: {0}")]
    Tls(String),
    /// A request or setting that cannot be sent as given.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl Error {
    /// The error for a reply's error code ([`Error::Server`], except for the codes that mean
    /// the session or the connection: `SessionExpired`, `ConnectionLoss`, `AuthFailed`).
    ///
    /// ```
    /// use curator_session::Error;
    /// use curator_wire::proto::ErrorCode;
    ///
    /// assert_eq!(Error::from_code(ErrorCode::SessionExpired), Error::SessionExpired);
    /// ```
    pub fn from_code(code: ErrorCode) -> Self {
        match code {
            ErrorCode::SessionExpired => Error::SessionExpired,
            ErrorCode::ConnectionLoss => Error::ConnectionLoss,
            ErrorCode::AuthFailed => Error::AuthFailed("the server refused the credentials".into()),
            ErrorCode::SessionClosedRequireSaslAuth => {
                Error::AuthFailed("the server requires a SASL login and closed the session".into())
            }
            code => Error::Server(code),
        }
    }

    /// True for errors of the connection rather than of the request: retrying on the same
    /// session may succeed.
    ///
    /// ```
    /// assert!(curator_session::Error::ConnectionLoss.is_connection_error());
    /// ```
    pub fn is_connection_error(&self) -> bool {
        matches!(self, Error::ConnectionLoss)
    }

    /// The server's error code, when the server answered with one.
    ///
    /// ```
    /// use curator_session::Error;
    /// use curator_wire::proto::ErrorCode;
    ///
    /// assert_eq!(Error::Server(ErrorCode::BadVersion).code(), Some(ErrorCode::BadVersion));
    /// assert_eq!(Error::Closed.code(), None);
    /// ```
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Server(code) => Some(*code),
            _ => None,
        }
    }
}

/// The result of the session's operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
