//! [`EnsembleConfig`] and [`EnsembleMember`]: the ensemble's dynamic configuration, parsed from
//! and written back to `/zookeeper/config`'s text.

use std::fmt;

/// A member's role in the ensemble.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemberRole {
    /// Votes, and may lead.
    Participant,
    /// Serves clients and follows the leader without voting.
    Observer,
}

/// One member of the ensemble as its dynamic configuration names it:
/// `server.<id>=<host>:<quorum port>:<election port>[:<role>][;[<client host>:]<client port>]`.
///
/// `Display` writes it back in that form, the form [`reconfig`](crate::CuratorFramework::reconfig)
/// takes for a joining member.
///
/// ```
/// use curator_framework::ensemble::{EnsembleMember, MemberRole};
/// let member: EnsembleMember = "server.2=10.0.0.2:2888:3888:observer;0.0.0.0:2181".parse()?;
/// assert_eq!(member.id, 2);
/// assert_eq!(member.role, MemberRole::Observer);
/// // A wildcard client address means "the member's own host".
/// assert_eq!(member.client_address().as_deref(), Some("10.0.0.2:2181"));
/// assert_eq!(member.to_string(), "server.2=10.0.0.2:2888:3888:observer;0.0.0.0:2181");
/// # Ok::<(), curator_framework::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EnsembleMember {
    /// The member's id (its `myid`).
    pub id: u64,
    /// The host the members reach it on (quorum and election).
    pub host: String,
    /// The port followers reach the leader on.
    pub quorum_port: u16,
    /// The leader election port.
    pub election_port: u16,
    /// Participant or observer.
    pub role: MemberRole,
    /// The client address as configured: `(host, port)`; the host is `None` when only a port is
    /// given. `None` when the member serves no clients.
    pub client: Option<(Option<String>, u16)>,
}

impl EnsembleMember {
    /// The `host:port` clients connect to: the configured client host, or the member's own host
    /// when none (or a wildcard such as `0.0.0.0`) is configured. `None` without a client port.
    pub fn client_address(&self) -> Option<String> {
        let (host, port) = self.client.as_ref()?;
        let host = match host.as_deref() {
            None | Some("0.0.0.0" | "::" | "[::]" | "0:0:0:0:0:0:0:0") => self.host.as_str(),
            Some(host) => host,
        };
        Some(join_host_port(host, *port))
    }
}

fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl fmt::Display for EnsembleMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let role = match self.role {
            MemberRole::Participant => "participant",
            MemberRole::Observer => "observer",
        };
        write!(
            f,
            "server.{}={}:{}:{role}",
            self.id,
            join_host_port(&self.host, self.quorum_port),
            self.election_port
        )?;
        match &self.client {
            Some((Some(host), port)) => write!(f, ";{}", join_host_port(host, *port)),
            Some((None, port)) => write!(f, ";{port}"),
            None => Ok(()),
        }
    }
}

/// Splits `host:port` where the host may be a bracketed IPv6 address.
fn split_host_port(text: &str) -> Option<(&str, &str)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        Some((host, after.strip_prefix(':')?))
    } else {
        text.split_once(':')
    }
}

impl std::str::FromStr for EnsembleMember {
    type Err = crate::error::Error;

    fn from_str(line: &str) -> Result<Self, crate::error::Error> {
        let bad = |why: &str| {
            crate::error::Error::InvalidArgument(format!("ensemble member {line:?}: {why}"))
        };
        let (key, value) = line
            .trim()
            .split_once('=')
            .ok_or_else(|| bad("expected server.<id>=<host>:<port>:<port>[:role][;client]"))?;
        let id = key
            .strip_prefix("server.")
            .and_then(|id| id.parse::<u64>().ok())
            .ok_or_else(|| bad("the key must be server.<id> with a numeric id"))?;
        let (server, client) = match value.split_once(';') {
            Some((server, client)) => (server, Some(client)),
            None => (value, None),
        };
        let (host, ports) = split_host_port(server).ok_or_else(|| bad("no quorum port"))?;
        let mut parts = ports.split(':');
        let port = |part: Option<&str>, what: &str| {
            part.and_then(|p| p.parse::<u16>().ok())
                .ok_or_else(|| bad(&format!("bad {what} port")))
        };
        let quorum_port = port(parts.next(), "quorum")?;
        let election_port = port(parts.next(), "election")?;
        let role = match parts.next() {
            None | Some("participant") => MemberRole::Participant,
            Some("observer") => MemberRole::Observer,
            Some(other) => return Err(bad(&format!("unknown role {other:?}"))),
        };
        if parts.next().is_some() {
            return Err(bad("too many ':' parts"));
        }
        let client = match client.map(str::trim) {
            None | Some("") => None,
            Some(client) => match split_host_port(client) {
                Some((host, port)) => Some((
                    Some(host.to_owned()),
                    port.parse().map_err(|_| bad("bad client port"))?,
                )),
                None => Some((None, client.parse().map_err(|_| bad("bad client port"))?)),
            },
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        Ok(EnsembleMember {
            id,
            host: host.to_owned(),
            quorum_port,
            election_port,
            role,
            client,
        })
    }
}

/// The ensemble's dynamic configuration, as `/zookeeper/config` holds it: its members and its
/// version (the zxid of the reconfiguration that made it).
///
/// ```
/// use curator_framework::ensemble::EnsembleConfig;
/// let config = EnsembleConfig::parse(
///     "server.1=10.0.0.1:2888:3888:participant;10.0.0.1:2181\n\
///      server.2=10.0.0.2:2888:3888:participant;10.0.0.2:2181\n\
///      version=100000003",
/// )?;
/// assert_eq!(config.version, 0x1_0000_0003);
/// assert_eq!(config.connect_string().as_deref(), Some("10.0.0.1:2181,10.0.0.2:2181"));
/// # Ok::<(), curator_framework::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EnsembleConfig {
    /// The members, ordered by id.
    pub members: Vec<EnsembleMember>,
    /// The configuration's version (hexadecimal in the text); 0 when the text names none.
    pub version: i64,
}

impl EnsembleConfig {
    /// Reads the text of `/zookeeper/config`. Lines other than `server.N=` and `version=` are
    /// ignored (ZooKeeper may add some).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the line that cannot be
    /// read.
    pub fn parse(text: &str) -> Result<Self, crate::error::Error> {
        let mut config = EnsembleConfig::default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if line.starts_with("server.") {
                config.members.push(line.parse()?);
            } else if let Some(version) = line.strip_prefix("version=") {
                config.version = i64::from_str_radix(version.trim(), 16).map_err(|_| {
                    crate::error::Error::InvalidArgument(format!(
                        "ensemble config version {version:?}"
                    ))
                })?;
            }
        }
        config.members.sort_by_key(|m| m.id);
        Ok(config)
    }

    /// The member with this id.
    pub fn member(&self, id: u64) -> Option<&EnsembleMember> {
        self.members.iter().find(|m| m.id == id)
    }

    /// The client addresses of every member that serves clients (participants and observers),
    /// as a connect string without a chroot; `None` when no member names a client port (a
    /// configuration without client addresses cannot be followed).
    pub fn connect_string(&self) -> Option<String> {
        let addresses: Vec<String> = self
            .members
            .iter()
            .filter_map(EnsembleMember::client_address)
            .collect();
        (!addresses.is_empty()).then(|| addresses.join(","))
    }
}
