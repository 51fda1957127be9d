//! Helpers shared by this crate's tests: a bare `curator-session` session and event waits.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use curator_session::proto::{ClientInfo, CreateMode, ErrorCode};
use curator_session::{Error, Session, SessionConfig, SessionState, TlsConnector, open_acl};
use curator_test::{TestCertificate, Timing};

/// A session configuration for `connect_string` with the harness's connection timeout.
pub fn config(connect_string: &str, session_timeout: Duration) -> SessionConfig {
    SessionConfig::new(connect_string)
        .unwrap_or_else(|e| panic!("connect string {connect_string}: {e}"))
        .session_timeout(session_timeout)
        .connection_timeout(Timing::new().connection_timeout())
}

/// A session configuration for `connect_string` over TLS that trusts `ca_pem`, verifies the
/// host name and, if given, presents `identity`.
///
/// A JVM's first TLS handshake loads its key store and warms its TLS code: over half a second
/// on an idle machine, several seconds with other JVMs starting beside it. The session bounds
/// each connection attempt by a share of the session timeout and tries each server once within
/// the connection timeout, so both are long here (refusals still come at once).
pub fn tls_config(
    connect_string: &str,
    ca_pem: &str,
    identity: Option<&TestCertificate>,
) -> SessionConfig {
    let identity = identity.map(|identity| (identity.cert_pem(), identity.key_pem()));
    let tls = TlsConnector::config_from_pem(ca_pem, identity, true).unwrap();
    let timing = Timing::new();
    config(connect_string, timing.scale(Duration::from_secs(20)))
        .connection_timeout(timing.wait())
        .connector(std::sync::Arc::new(TlsConnector::new(tls)))
}

/// Opens a session with `config`, given the long deadline as its connection timeout:
/// `Session::connect` goes round the servers until then, since a JVM on a loaded machine may
/// answer later than one attempt waits. A refused login is returned at once.
///
/// # Errors
/// The last attempt's error.
pub async fn try_connect(config: SessionConfig) -> Result<Session, Error> {
    Session::connect(config.connection_timeout(Timing::new().forever())).await
}

/// Opens a session with `config` (see [`try_connect`]).
pub async fn connect_with(config: SessionConfig) -> Session {
    let servers = format!("{:?}", config.servers());
    try_connect(config)
        .await
        .unwrap_or_else(|e| panic!("connecting to {servers}: {e}"))
}

/// Connects a bare `curator-session` session.
pub async fn connect(connect_string: &str, session_timeout: Duration) -> Session {
    connect_with(config(connect_string, session_timeout)).await
}

/// An identity as `who_am_i` lists it (`sasl:alice`, `x509:CN=alice`).
pub fn identity(scheme: &str, user: &str) -> ClientInfo {
    ClientInfo {
        auth_scheme: scheme.to_owned(),
        user: user.to_owned(),
    }
}

/// Waits for the session to reach `wanted`, returning every state seen on the way.
pub async fn await_state(session: &Session, wanted: SessionState) -> Vec<SessionState> {
    // Subscribed before the current state is read, so no transition falls in between.
    let mut changes = session.state_changes();
    let mut seen = vec![session.state()];
    let wait = async {
        while *seen.last().unwrap() != wanted {
            match changes.next().await {
                Some(state) => seen.push(state),
                None => break, // the session ended in another state
            }
        }
    };
    let reached = tokio::time::timeout(Timing::new().wait(), wait).await;
    assert!(
        reached.is_ok() && seen.last() == Some(&wanted),
        "session never reached {wanted:?}; saw {seen:?}"
    );
    seen
}

/// Creates `path` and its missing parents as persistent nodes (`NodeExists` on the way is
/// fine).
///
/// # Errors
/// The first other error.
pub async fn try_mkdirs(session: &Session, path: &str) -> Result<(), Error> {
    let mut at = String::new();
    for part in path.split('/').filter(|part| !part.is_empty()) {
        at.push('/');
        at.push_str(part);
        match session
            .create(&at, b"", open_acl(), CreateMode::Persistent, None)
            .await
        {
            Ok(_) | Err(Error::Server(ErrorCode::NodeExists)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Creates `path` and its parents as persistent nodes.
pub async fn mkdirs(session: &Session, path: &str) {
    try_mkdirs(session, path)
        .await
        .unwrap_or_else(|e| panic!("mkdir {path}: {e}"));
}

/// Whether a reconnecting session may succeed with `error` on a retry: the connection broke
/// (or there was none while the session looked for a server), or the session moved.
pub fn is_retryable(error: &Error) -> bool {
    error.is_connection_error()
        || matches!(
            error,
            Error::Server(ErrorCode::SessionMoved | ErrorCode::OperationTimeout)
        )
}

/// Runs `op` until it succeeds, retrying the errors a reconnecting session sees (polled every
/// 100 ms), up to the long deadline.
pub async fn retry<T, F, Fut>(mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    let deadline = tokio::time::Instant::now() + Timing::new().forever();
    loop {
        match op().await {
            Ok(value) => return value,
            Err(e) if is_retryable(&e) && tokio::time::Instant::now() < deadline => {
                tracing::debug!("retrying after {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("operation failed: {e}"),
        }
    }
}
