//! The error type of the test harness.

use std::path::PathBuf;

/// A failure of the test harness: a server that could not start, a missing Java installation, a
/// fault tool used where it does not apply.
///
/// ```
/// let err = curator_test::Error::SharedServer {
///     operation: "restart",
///     connect_string: "127.0.0.1:2181".into(),
/// };
/// assert!(err.to_string().contains("CURATOR_TEST_ZK"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No `java` executable was found in `JAVA_HOME` or `PATH`.
    #[error("no `java` found in JAVA_HOME or PATH; run `just setup` to install ZooKeeper and Java")]
    JavaNotFound,
    /// A jar of the ZooKeeper classpath is missing.
    #[error(
        "ZooKeeper jar {path} is missing (classpath: {classpath}); run `just setup` (it installs \
         Debian 12's ZooKeeper 3.8 and fetches Debian 13's 3.9 into target/), or set \
         ZOOKEEPER_CLASSPATH"
    )]
    JarNotFound {
        /// The missing entry.
        path: PathBuf,
        /// The whole classpath that was searched.
        classpath: String,
    },
    /// The server process exited before it answered.
    #[error("ZooKeeper exited during start-up ({status}); last log lines:\n{log_tail}")]
    Exited {
        /// The process's exit status, as text.
        status: String,
        /// The end of the server's log.
        log_tail: String,
    },
    /// The server did not answer within the start-up deadline.
    #[error(
        "ZooKeeper did not answer on {address} within {seconds} s; last log lines:\n{log_tail}"
    )]
    StartTimeout {
        /// The client address polled.
        address: String,
        /// The deadline, in seconds.
        seconds: u64,
        /// The end of the server's log.
        log_tail: String,
    },
    /// The operation needs a server this process started, not one shared through
    /// `CURATOR_TEST_ZK`.
    #[error(
        "`{operation}` needs a dedicated server, but TestingServer::start() handed out the server \
         at {connect_string} shared through CURATOR_TEST_ZK; use TestingServer::start_dedicated() \
         for a server this test may stop and restart (or unset CURATOR_TEST_ZK)"
    )]
    SharedServer {
        /// The operation that was refused.
        operation: &'static str,
        /// The shared server's address.
        connect_string: String,
    },
    /// A member index outside the ensemble, or a member in the wrong state.
    #[error("{0}")]
    InvalidArgument(String),
    /// The ZooKeeper wire protocol answered something unexpected.
    #[error("ZooKeeper protocol: {0}")]
    Protocol(String),
    /// No answer within a deadline.
    #[error("timed out after {0:?} waiting for {1}")]
    Timeout(std::time::Duration, String),
    /// A test certificate could not be generated.
    #[error("{0}")]
    Certificate(String),
    /// A Kerberos tool (`kdb5_util`, `kadmin.local`, `kinit`) failed, or is not installed.
    #[error("{0}")]
    Kerberos(String),
    /// An I/O failure (spawning a process, a socket, a temporary directory).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let context = context.into();
        move |source| Error::Io { context, source }
    }
}

/// The result type of the test harness.
pub type Result<T, E = Error> = std::result::Result<T, E>;
