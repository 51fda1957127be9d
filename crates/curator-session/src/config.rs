//! [`SessionConfig`]: where the servers are and how to open and keep a session.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::sasl::Sasl;
use crate::transport::{Connector, TcpConnector};

/// ZooKeeper's client port when a connect string names none.
pub const DEFAULT_PORT: u16 = 2181;

/// One server of a connect string: a host name (resolved anew at every connection attempt) or
/// an IP address, and a port.
///
/// ```
/// use curator_session::ServerAddress;
///
/// let server: ServerAddress = "[::1]:2182".parse()?;
/// assert_eq!((server.host.as_str(), server.port), ("::1", 2182));
/// assert_eq!(server.to_string(), "[::1]:2182");
/// assert_eq!("zk1".parse::<ServerAddress>()?.port, 2181);
/// # Ok::<(), curator_session::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerAddress {
    /// A host name or an IP address (IPv6 without brackets).
    pub host: String,
    /// The client port.
    pub port: u16,
}

impl ServerAddress {
    /// A server at `host:port`.
    ///
    /// ```
    /// let server = curator_session::ServerAddress::new("127.0.0.1", 2181);
    /// assert_eq!(server.to_string(), "127.0.0.1:2181");
    /// ```
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Self {
            host: host.into(),
            port,
        }
    }

    /// The same server for comparing lists: `localhost` is `127.0.0.1`, case is ignored.
    pub(crate) fn key(&self) -> (String, u16) {
        let host = if self.host.eq_ignore_ascii_case("localhost") {
            "127.0.0.1".to_owned()
        } else {
            self.host.to_ascii_lowercase()
        };
        (host, self.port)
    }
}

impl fmt::Display for ServerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl std::str::FromStr for ServerAddress {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let bad = |why: &str| Error::InvalidArgument(format!("server address {text:?}: {why}"));
        let text = text.trim();
        let text = text
            .strip_prefix("tcp+tls://")
            .or_else(|| text.strip_prefix("tcp://"))
            .unwrap_or(text);
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (host, after) = rest.split_once(']').ok_or_else(|| bad("no closing ']'"))?;
            match after {
                "" => (host, None),
                _ => (
                    host,
                    Some(
                        after
                            .strip_prefix(':')
                            .ok_or_else(|| bad("expected ':port'"))?,
                    ),
                ),
            }
        } else {
            match text.rsplit_once(':') {
                Some((host, _)) if host.contains(':') => (text, None),
                Some((host, port)) => (host, Some(port)),
                None => (text, None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = match port {
            None => DEFAULT_PORT,
            Some(port) => port
                .parse::<u16>()
                .ok()
                .filter(|port| *port != 0)
                .ok_or_else(|| bad("the port must be a number from 1 to 65535"))?,
        };
        Ok(ServerAddress::new(host, port))
    }
}

/// A connect string read: its servers and its chroot.
///
/// `host[:port],...[/chroot]`, each server optionally prefixed with `tcp://` or `tcp+tls://`
/// (whether TLS is used is the [`Connector`]'s choice, not the prefix's).
///
/// ```
/// use curator_session::ConnectString;
///
/// let parsed: ConnectString = "zk1:2181,zk2,[::1]:2183/app/x".parse()?;
/// assert_eq!(parsed.servers.len(), 3);
/// assert_eq!(parsed.chroot.as_deref(), Some("/app/x"));
/// # Ok::<(), curator_session::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectString {
    /// The servers, in the order given.
    pub servers: Vec<ServerAddress>,
    /// The chroot (`/app`), when the string ends with one other than `/`.
    pub chroot: Option<String>,
}

impl std::str::FromStr for ConnectString {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let text = text.trim();
        // The chroot follows the last server; a '/' inside a server part can only be the
        // "tcp://" prefix's.
        let (hosts, chroot) = match text.rsplit_once(',') {
            Some((before, last)) => {
                let (last, chroot) = split_chroot(last);
                (format!("{before},{last}"), chroot)
            }
            None => {
                let (last, chroot) = split_chroot(text);
                (last.to_owned(), chroot)
            }
        };
        let servers = hosts
            .split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(str::parse)
            .collect::<Result<Vec<ServerAddress>>>()?;
        if servers.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "connect string {text:?} names no server"
            )));
        }
        let chroot = match chroot {
            None | Some("/") => None,
            Some(chroot) => {
                validate_chroot(chroot)?;
                Some(chroot.trim_end_matches('/').to_owned())
            }
        };
        Ok(ConnectString { servers, chroot })
    }
}

fn split_chroot(part: &str) -> (&str, Option<&str>) {
    let start = if part.starts_with("tcp+tls://") {
        "tcp+tls://".len()
    } else if part.starts_with("tcp://") {
        "tcp://".len()
    } else {
        0
    };
    match part[start..].find('/') {
        Some(at) => (&part[..start + at], Some(&part[start + at..])),
        None => (part, None),
    }
}

fn validate_chroot(chroot: &str) -> Result<()> {
    let bad = chroot.contains("//")
        || chroot
            .split('/')
            .skip(1)
            .any(|part| part == "." || part == "..")
        || chroot.chars().any(|c| c == '\0');
    if bad {
        return Err(Error::InvalidArgument(format!(
            "chroot {chroot:?} is not a valid ZooKeeper path"
        )));
    }
    Ok(())
}

/// How to open and keep a session.
///
/// ```
/// use std::time::Duration;
/// use curator_session::SessionConfig;
///
/// let config = SessionConfig::new("127.0.0.1:2181,127.0.0.1:2182/app")?
///     .session_timeout(Duration::from_secs(10))
///     .connection_timeout(Duration::from_secs(5))
///     .auth("digest", b"alice:secret".to_vec());
/// assert_eq!(config.servers().len(), 2);
/// assert_eq!(config.chroot(), Some("/app"));
/// # Ok::<(), curator_session::Error>(())
/// ```
#[derive(Clone)]
pub struct SessionConfig {
    pub(crate) servers: Vec<ServerAddress>,
    pub(crate) chroot: Option<String>,
    pub(crate) session_timeout: Duration,
    pub(crate) connection_timeout: Duration,
    pub(crate) can_be_read_only: bool,
    pub(crate) auth: Vec<(String, Vec<u8>)>,
    pub(crate) sasl: Option<Sasl>,
    pub(crate) connector: Arc<dyn Connector>,
    pub(crate) max_frame: usize,
    pub(crate) resume: Option<(i64, Vec<u8>)>,
    pub(crate) one_connect_round: bool,
}

impl fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionConfig")
            .field("servers", &self.servers)
            .field("chroot", &self.chroot)
            .field("session_timeout", &self.session_timeout)
            .field("connection_timeout", &self.connection_timeout)
            .field("can_be_read_only", &self.can_be_read_only)
            .field(
                "auth_schemes",
                &self
                    .auth
                    .iter()
                    .map(|(s, _)| s.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("sasl", &self.sasl)
            .field("connector", &self.connector)
            .field("max_frame", &self.max_frame)
            .field("one_connect_round", &self.one_connect_round)
            .field(
                "resume",
                &self.resume.as_ref().map(|(id, _)| format!("{id:#x}")),
            )
            .finish()
    }
}

impl SessionConfig {
    /// A configuration for the servers of `connect_string` (see [`ConnectString`]), with a
    /// 30 s session timeout, a 15 s connection timeout and plain TCP.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the string names no server, a port is not a number or
    /// the chroot is not a valid path.
    ///
    /// ```
    /// assert!(curator_session::SessionConfig::new("zk1:99999").is_err());
    /// ```
    pub fn new(connect_string: &str) -> Result<Self> {
        let ConnectString { servers, chroot } = connect_string.parse()?;
        Ok(Self::with_servers(servers).chroot_path(chroot))
    }

    /// A configuration for `servers` (no chroot).
    ///
    /// ```
    /// use curator_session::{ServerAddress, SessionConfig};
    /// let config = SessionConfig::with_servers(vec![ServerAddress::new("zk1", 2181)]);
    /// assert_eq!(config.chroot(), None);
    /// ```
    pub fn with_servers(servers: Vec<ServerAddress>) -> Self {
        Self {
            servers,
            chroot: None,
            session_timeout: Duration::from_secs(30),
            connection_timeout: Duration::from_secs(15),
            can_be_read_only: false,
            auth: Vec::new(),
            sasl: None,
            connector: Arc::new(TcpConnector::new()),
            max_frame: curator_wire::codec::DEFAULT_CLIENT_MAX_FRAME,
            resume: None,
            one_connect_round: false,
        }
    }

    fn chroot_path(mut self, chroot: Option<String>) -> Self {
        self.chroot = chroot;
        self
    }

    /// The session timeout asked for (the server bounds it by its `minSessionTimeout` and
    /// `maxSessionTimeout`; [`Session::negotiated_timeout`](crate::Session::negotiated_timeout)
    /// says what it granted).
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long [`Session::connect`](crate::Session::connect) tries the servers before it
    /// gives up.
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// Accept read-only servers (members cut off from the quorum that run with
    /// `readonlymode.enabled`), and keep looking for a read-write one while connected to one.
    pub fn can_be_read_only(mut self, allowed: bool) -> Self {
        self.can_be_read_only = allowed;
        self
    }

    /// Adds credentials sent with every new connection (ZooKeeper's `addAuthInfo`: `digest`
    /// with `user:password`, `x509`, ...). A server that refuses them ends the session with
    /// [`SessionState::AuthFailed`](crate::SessionState::AuthFailed).
    pub fn auth(mut self, scheme: impl Into<String>, auth: Vec<u8>) -> Self {
        self.auth.push((scheme.into(), auth));
        self
    }

    /// Logs in with SASL on every new connection, before any other request.
    pub fn sasl(mut self, sasl: Sasl) -> Self {
        self.sasl = Some(sasl);
        self
    }

    /// How connections are made: [`TcpConnector`] by default, a
    /// [`TlsConnector`](crate::TlsConnector) for TLS, or any [`Connector`] (an in-memory pipe,
    /// a simulated network).
    pub fn connector(mut self, connector: Arc<dyn Connector>) -> Self {
        self.connector = connector;
        self
    }

    /// Refuses replies longer than `bytes` (the connection is dropped): ZooKeeper's
    /// `jute.maxbuffer` on the client side. The default is
    /// [`DEFAULT_CLIENT_MAX_FRAME`](curator_wire::codec::DEFAULT_CLIENT_MAX_FRAME) (128 MiB).
    pub fn max_frame(mut self, bytes: usize) -> Self {
        self.max_frame = bytes;
        self
    }

    /// [`Session::connect`](crate::Session::connect) tries each server once and reports, instead
    /// of going round the list again (with a short pause between rounds) until the connection
    /// timeout: for an owner with a retry loop of its own, which wants to hear at once that no
    /// server took the session (to say why, or to try other servers).
    pub fn one_connect_round(mut self, one: bool) -> Self {
        self.one_connect_round = one;
        self
    }

    /// Takes over an existing session (its id and password) instead of making a new one.
    pub fn resume(mut self, session_id: i64, password: Vec<u8>) -> Self {
        self.resume = Some((session_id, password));
        self
    }

    /// The servers.
    pub fn servers(&self) -> &[ServerAddress] {
        &self.servers
    }

    /// The chroot, if any.
    pub fn chroot(&self) -> Option<&str> {
        self.chroot.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_strings() {
        let parsed: ConnectString = "tcp+tls://zk1:2281,zk2,tcp://10.0.0.3:2182/app"
            .parse()
            .unwrap();
        assert_eq!(
            parsed.servers,
            [
                ServerAddress::new("zk1", 2281),
                ServerAddress::new("zk2", 2181),
                ServerAddress::new("10.0.0.3", 2182)
            ]
        );
        assert_eq!(parsed.chroot.as_deref(), Some("/app"));
        let parsed: ConnectString = "::1,[fe80::1]:3000/".parse().unwrap();
        assert_eq!(
            parsed.servers,
            [
                ServerAddress::new("::1", 2181),
                ServerAddress::new("fe80::1", 3000)
            ]
        );
        assert_eq!(parsed.chroot, None);
        for bad in [
            "",
            ",",
            "zk1:x",
            "zk1:0",
            "zk1:70000",
            "[::1",
            "zk1/a//b",
            "zk1/a/../b",
            ":2181",
        ] {
            assert!(bad.parse::<ConnectString>().is_err(), "{bad:?}");
        }
    }
}
