//! Expiring a ZooKeeper session on demand, the classic way.

use std::fmt;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{Error, Result};

/// ZooKeeper's operation code for closing a session.
const OP_CLOSE_SESSION: i32 = -11;
/// The request id of our closeSession.
const CLOSE_XID: i32 = 1;
/// The largest frame we accept in answer to a connect or close.
const MAX_FRAME: usize = 4096;

/// A session's id and password: what a second connection needs to attach to it.
///
/// `Debug` prints the id in hex and never the password.
///
/// ```
/// let creds = curator_test::SessionCredentials::new(0x1234, vec![0; 16]);
/// assert_eq!(format!("{creds:?}"), "SessionCredentials { id: 0x1234, password: <16 bytes> }");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct SessionCredentials {
    /// The session id the server assigned.
    pub id: i64,
    /// The session password the server assigned.
    pub password: Vec<u8>,
}

impl SessionCredentials {
    /// Credentials from an id and password.
    pub fn new(id: i64, password: Vec<u8>) -> Self {
        Self { id, password }
    }
}

impl fmt::Debug for SessionCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SessionCredentials {{ id: {:#x}, password: <{} bytes> }}",
            self.id,
            self.password.len()
        )
    }
}

/// What [`expire_session`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expiry {
    /// The session was alive and is now closed: its ephemeral nodes are gone.
    Expired,
    /// The server no longer knew the session (it had expired or been closed already).
    AlreadyGone,
}

/// Expires a session the classic way: attach a second connection with the session's id and
/// password, then close the session through it. Its ephemeral nodes are deleted at once; the
/// session's own client learns that its session expired when it next talks to the server.
///
/// Attaching takes the session's connection away from its client, which may re-attach at once and
/// take it back before the close is processed. The attach and the close are therefore sent
/// together, and the exchange is repeated until the server confirms the close (or reports the
/// session unknown).
///
/// `connect_string` may name several hosts; they are tried in order until one answers.
///
/// # Errors
/// [`Error::Io`] or [`Error::Timeout`] when no host confirms within `timeout`;
/// [`Error::Protocol`] for an answer that is not ZooKeeper's.
///
/// # Example
/// ```no_run
/// # async fn demo(creds: curator_test::SessionCredentials) -> curator_test::Result<()> {
/// use std::time::Duration;
/// let server = curator_test::TestingServer::start().await?;
/// let outcome = curator_test::expire_session(&server.connect_string(), &creds,
///     Duration::from_secs(10)).await?;
/// assert_eq!(outcome, curator_test::Expiry::Expired);
/// # Ok(()) }
/// ```
pub async fn expire_session(
    connect_string: &str,
    session: &SessionCredentials,
    timeout: Duration,
) -> Result<Expiry> {
    let hosts = connect_string.split('/').next().unwrap_or(connect_string);
    let hosts: Vec<&str> = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .collect();
    if hosts.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "no host in {connect_string:?}"
        )));
    }
    let attempts = async {
        // Whether an earlier exchange may have attached to the live session and closed it.
        let mut attached = false;
        loop {
            let mut last_error = None;
            let mut displaced = false;
            for host in &hosts {
                match expire_through(host, session).await {
                    Ok(Exchange::Done(Expiry::AlreadyGone)) if attached => {
                        return Ok(Expiry::Expired);
                    }
                    Ok(Exchange::Done(outcome)) => return Ok(outcome),
                    Ok(Exchange::Unconfirmed { attached: now }) => {
                        attached |= now;
                        displaced = true;
                    }
                    Err(error) => last_error = Some(error),
                }
            }
            match last_error {
                // No host could even be asked: report it rather than spin.
                Some(error) if !displaced => return Err(error),
                // Displaced by the session's own client re-attaching: go again, briefly apart.
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    };
    match tokio::time::timeout(timeout, attempts).await {
        Ok(outcome) => outcome,
        Err(_) => Err(Error::Timeout(
            timeout,
            format!("session {:#x} to close", session.id),
        )),
    }
}

/// How one attach-and-close exchange ended.
enum Exchange {
    Done(Expiry),
    /// The server dropped the connection before confirming. Either the session's own client took
    /// it back before the close was read, or the server closed this connection with the session
    /// before it sent the reply; the next exchange tells which.
    Unconfirmed {
        attached: bool,
    },
}

/// One attach-and-close exchange.
async fn expire_through(host: &str, session: &SessionCredentials) -> Result<Exchange> {
    let mut stream = TcpStream::connect(host)
        .await
        .map_err(Error::io(format!("connecting to {host}")))?;
    stream
        .set_nodelay(true)
        .map_err(Error::io("setting TCP_NODELAY"))?;

    // The server reads the close only after it has attached this connection to the session.
    let mut request = connect_request(session);
    request.extend_from_slice(&8i32.to_be_bytes());
    request.extend_from_slice(&CLOSE_XID.to_be_bytes());
    request.extend_from_slice(&OP_CLOSE_SESSION.to_be_bytes());
    if stream.write_all(&request).await.is_err() {
        return Ok(Exchange::Unconfirmed { attached: false });
    }
    let Some(response) = read_frame(&mut stream).await? else {
        // The server may have processed the attach and the close and then closed the connection
        // before it flushed its answers.
        return Ok(Exchange::Unconfirmed { attached: true });
    };
    let granted = parse_connect_response(&response)?;
    if granted.id == 0 {
        // The server answers an unknown session (or a wrong password) with session id 0.
        return Ok(Exchange::Done(Expiry::AlreadyGone));
    }
    let Some(reply) = read_frame(&mut stream).await? else {
        return Ok(Exchange::Unconfirmed { attached: true });
    };
    let xid = reply
        .get(0..4)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let err = reply
        .get(12..16)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    match (xid, err) {
        (Some(CLOSE_XID), Some(0)) => Ok(Exchange::Done(Expiry::Expired)),
        // SessionExpired (-112): it ended between the attach and the close.
        (Some(CLOSE_XID), Some(-112)) => Ok(Exchange::Done(Expiry::AlreadyGone)),
        _ => Err(Error::Protocol(format!(
            "unexpected reply to closeSession: {reply:?}"
        ))),
    }
}

/// The connect request of ZooKeeper's protocol, length-prefixed.
fn connect_request(session: &SessionCredentials) -> Vec<u8> {
    let mut body = Vec::with_capacity(64);
    body.extend_from_slice(&0i32.to_be_bytes()); // protocolVersion
    body.extend_from_slice(&0i64.to_be_bytes()); // lastZxidSeen
    body.extend_from_slice(&30_000i32.to_be_bytes()); // timeOut (ms)
    body.extend_from_slice(&session.id.to_be_bytes());
    let password_len = i32::try_from(session.password.len()).unwrap_or(i32::MAX);
    body.extend_from_slice(&password_len.to_be_bytes());
    body.extend_from_slice(&session.password);
    body.push(0); // readOnly = false
    let mut frame = Vec::with_capacity(body.len() + 4);
    let body_len = i32::try_from(body.len()).unwrap_or(i32::MAX);
    frame.extend_from_slice(&body_len.to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// Parses a connect response (protocolVersion, timeOut, sessionId, password, readOnly).
pub(crate) fn parse_connect_response(body: &[u8]) -> Result<SessionCredentials> {
    let bad = || Error::Protocol(format!("connect response of {} bytes", body.len()));
    let id = i64::from_be_bytes(
        body.get(8..16)
            .ok_or_else(bad)?
            .try_into()
            .map_err(|_| bad())?,
    );
    let len = i32::from_be_bytes(
        body.get(16..20)
            .ok_or_else(bad)?
            .try_into()
            .map_err(|_| bad())?,
    );
    let len = usize::try_from(len).map_err(|_| bad())?;
    let password = body.get(20..20 + len).ok_or_else(bad)?.to_vec();
    Ok(SessionCredentials { id, password })
}

/// Reads one length-prefixed frame; `None` on a clean end of stream before it.
async fn read_frame(stream: &mut TcpStream) -> Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match stream.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(None),
        Err(e) => return Err(Error::io("reading a frame length")(e)),
    }
    let len = usize::try_from(i32::from_be_bytes(len))
        .ok()
        .filter(|len| *len <= MAX_FRAME)
        .ok_or_else(|| Error::Protocol("frame length out of range".into()))?;
    let mut body = vec![0u8; len];
    stream
        .read_exact(&mut body)
        .await
        .map_err(Error::io("reading a frame"))?;
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_request_layout() {
        let frame = connect_request(&SessionCredentials::new(0x0102, vec![9, 8]));
        // 4 (len) + 4 + 8 + 4 + 8 + 4 + 2 + 1
        assert_eq!(frame.len(), 35);
        assert_eq!(&frame[0..4], &31i32.to_be_bytes());
        assert_eq!(&frame[20..28], &0x0102i64.to_be_bytes());
        assert_eq!(&frame[28..32], &2i32.to_be_bytes());
        assert_eq!(&frame[32..34], &[9, 8]);
        assert_eq!(frame[34], 0);
    }

    #[test]
    fn connect_response_parses_and_rejects_short_input() {
        let mut body = Vec::new();
        body.extend_from_slice(&0i32.to_be_bytes());
        body.extend_from_slice(&4000i32.to_be_bytes());
        body.extend_from_slice(&77i64.to_be_bytes());
        body.extend_from_slice(&3i32.to_be_bytes());
        body.extend_from_slice(&[1, 2, 3]);
        body.push(0);
        let creds = parse_connect_response(&body).unwrap();
        assert_eq!(creds, SessionCredentials::new(77, vec![1, 2, 3]));
        assert!(parse_connect_response(&body[..18]).is_err());
        assert!(parse_connect_response(&body[..21]).is_err());
    }
}
