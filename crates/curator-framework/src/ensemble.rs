//! Where the ZooKeeper servers are: a fixed connect string, or one computed anew for every
//! session (a DNS name, a service registry, a file).

use std::fmt;

/// Supplies the connect string (`host:port[,host:port...][/chroot]`) each time a session is
/// made: at start and after every session loss. Host names are resolved again on every connect
/// attempt, so a changed DNS record is picked up.
pub trait EnsembleProvider: Send + Sync + fmt::Debug {
    /// The servers to connect to now.
    fn connect_string(&self) -> String;
}

/// Always the same servers.
///
/// ```
/// use curator_framework::ensemble::{EnsembleProvider, FixedEnsembleProvider};
/// let provider = FixedEnsembleProvider::new("zk1:2181,zk2:2181");
/// assert_eq!(provider.connect_string(), "zk1:2181,zk2:2181");
/// ```
#[derive(Debug, Clone)]
pub struct FixedEnsembleProvider(String);

impl FixedEnsembleProvider {
    /// Always `connect_string`.
    pub fn new(connect_string: impl Into<String>) -> Self {
        Self(connect_string.into())
    }
}

impl EnsembleProvider for FixedEnsembleProvider {
    fn connect_string(&self) -> String {
        self.0.clone()
    }
}

/// Asks a closure for the servers each time.
///
/// ```
/// use curator_framework::ensemble::{EnsembleProvider, FnEnsembleProvider};
/// let provider = FnEnsembleProvider::new(|| std::env::var("ZK").unwrap_or("127.0.0.1:2181".into()));
/// assert!(!provider.connect_string().is_empty());
/// ```
pub struct FnEnsembleProvider(Box<dyn Fn() -> String + Send + Sync>);

impl FnEnsembleProvider {
    /// Calls `f` for every new session.
    pub fn new(f: impl Fn() -> String + Send + Sync + 'static) -> Self {
        Self(Box::new(f))
    }
}

impl fmt::Debug for FnEnsembleProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnEnsembleProvider(..)")
    }
}

impl EnsembleProvider for FnEnsembleProvider {
    fn connect_string(&self) -> String {
        (self.0)()
    }
}

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
        let bad =
            |why: &str| crate::error::Error::InvalidArgument(format!("ensemble member {line:?}: {why}"));
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
                    crate::error::Error::InvalidArgument(format!("ensemble config version {version:?}"))
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

/// What the client does with the ensemble's dynamic configuration (see
/// [`CuratorFrameworkBuilder::ensemble_tracking`](crate::CuratorFrameworkBuilder::ensemble_tracking)).
pub(crate) struct Tracker {
    /// Follow the configuration at all.
    pub(crate) follow: bool,
    /// Use it for the connect string of later connections.
    pub(crate) rewrite: bool,
    /// The chroot of the connect string the client was given, kept on every rewritten one.
    chroot: Option<String>,
    current: parking_lot::Mutex<Option<EnsembleConfig>>,
    pub(crate) changes: crate::listen::ListenerContainer<EnsembleConfig>,
    /// Woken on every new configuration (the session task decides whether to move).
    pub(crate) changed: tokio::sync::Notify,
}

impl fmt::Debug for Tracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracker")
            .field("follow", &self.follow)
            .field("rewrite", &self.rewrite)
            .field("chroot", &self.chroot)
            .field("current", &*self.current.lock())
            .finish_non_exhaustive()
    }
}

impl Tracker {
    pub(crate) fn new(
        follow: bool,
        rewrite: bool,
        chroot: Option<String>,
        changes: crate::listen::ListenerContainer<EnsembleConfig>,
    ) -> Self {
        Self {
            follow,
            rewrite: follow && rewrite,
            chroot,
            current: parking_lot::Mutex::new(None),
            changes,
            changed: tokio::sync::Notify::new(),
        }
    }

    /// Takes a configuration read from the server; returns whether it is news (a configuration
    /// older than the one known is ignored).
    pub(crate) fn update(&self, config: EnsembleConfig) -> bool {
        {
            let mut current = self.current.lock();
            if let Some(known) = current.as_ref() {
                if config.version < known.version || *known == config {
                    return false;
                }
            }
            *current = Some(config.clone());
        }
        tracing::info!(
            version = format_args!("{:#x}", config.version),
            members = config.members.len(),
            connect_string = config.connect_string().as_deref().unwrap_or("-"),
            "ensemble configuration"
        );
        self.changes.publish(config);
        // One waiter (the session task); a stored permit covers a change between its checks.
        self.changed.notify_one();
        true
    }

    pub(crate) fn current(&self) -> Option<EnsembleConfig> {
        self.current.lock().clone()
    }

    /// The connect string the next connection should use, when the configuration is followed
    /// and names client addresses: those addresses and the original chroot.
    pub(crate) fn connect_string(&self) -> Option<String> {
        if !self.rewrite {
            return None;
        }
        let hosts = self.current.lock().as_ref()?.connect_string()?;
        Some(match &self.chroot {
            Some(chroot) => format!("{hosts}{chroot}"),
            None => hosts,
        })
    }

    /// Whether a connection made with `connect_string` can no longer reach the ensemble on its
    /// own: none of its servers is a member any more, and the configuration names others.
    pub(crate) fn should_move(&self, connect_string: &str) -> Option<String> {
        let target = self.connect_string()?;
        let members: Vec<(String, u16)> = servers(&target).iter().map(same_server_key).collect();
        let known = servers(connect_string)
            .iter()
            .map(same_server_key)
            .any(|server| members.contains(&server));
        (!known).then_some(target)
    }

    /// The members to ask for the configuration while a connection made with `connect_string`
    /// is down: the followed members, when they include servers that connection does not know
    /// (so the configuration may have moved on without it hearing).
    pub(crate) fn probe_target(&self, connect_string: &str) -> Option<String> {
        let target = self.connect_string()?;
        let known: Vec<(String, u16)> = servers(connect_string)
            .iter()
            .map(same_server_key)
            .collect();
        servers(&target)
            .iter()
            .map(same_server_key)
            .any(|server| !known.contains(&server))
            .then_some(target)
    }
}

/// The chroot suffix of a connect string (`/app` of `zk1:2181,zk2:2181/app`), if any.
pub(crate) fn chroot(connect: &str) -> Option<&str> {
    let last = without_protocol(connect.rsplit(',').next()?.trim());
    last.find('/').map(|at| &last[at..]).filter(|c| *c != "/")
}

/// `(host, port)` with `localhost` read as `127.0.0.1`, for telling whether two connect strings
/// share a server.
pub(crate) fn same_server_key((host, port): &(String, u16)) -> (String, u16) {
    let host = if host.eq_ignore_ascii_case("localhost") {
        "127.0.0.1".to_owned()
    } else {
        host.to_ascii_lowercase()
    };
    (host, *port)
}

/// The `host[:port]` parts of a connect string (`[tcp://|tcp+tls://]host[:port],...[/chroot]`),
/// without their protocol prefixes and the chroot.
fn host_parts(connect: &str) -> Vec<&str> {
    connect
        .split(',')
        .map(|part| {
            without_protocol(part.trim())
                .split('/')
                .next()
                .unwrap_or_default()
        })
        .collect()
}

/// A connect-string part without its `tcp://` or `tcp+tls://` prefix.
fn without_protocol(part: &str) -> &str {
    part.strip_prefix("tcp+tls://")
        .or_else(|| part.strip_prefix("tcp://"))
        .unwrap_or(part)
}

/// The servers of a connect string as `(host, port)` (ZooKeeper's default port 2181 when none
/// is given).
pub(crate) fn servers(connect: &str) -> Vec<(String, u16)> {
    host_parts(connect)
        .into_iter()
        .filter(|part| !part.is_empty())
        .map(|part| match part.rsplit_once(':') {
            Some((host, port)) => (
                host.trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned(),
                port.parse().unwrap_or(2181),
            ),
            None => (part.to_owned(), 2181),
        })
        .collect()
}

/// Checks that a connect string names at least one `host:port`.
pub(crate) fn validate_connect_string(connect: &str) -> Result<(), crate::error::Error> {
    let hosts = host_parts(connect);
    if hosts.iter().all(|host| host.is_empty()) {
        return Err(crate::error::Error::InvalidArgument(format!(
            "connect string {connect:?} names no server"
        )));
    }
    for host in hosts.into_iter().filter(|h| !h.is_empty()) {
        let port = host.rsplit_once(':').map(|(_, p)| p);
        if let Some(port) = port {
            if port.parse::<u16>().is_err() {
                return Err(crate::error::Error::InvalidArgument(format!(
                    "connect string {connect:?}: bad port in {host:?}"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_of_a_connect_string() {
        assert_eq!(
            servers("tcp+tls://zk1:2281,zk2,tcp://10.0.0.3:2182/app"),
            [
                ("zk1".to_owned(), 2281),
                ("zk2".to_owned(), 2181),
                ("10.0.0.3".to_owned(), 2182)
            ]
        );
        assert!(validate_connect_string("tcp+tls://localhost:2281").is_ok());
        assert!(validate_connect_string("tcp+tls://").is_err());
        assert!(validate_connect_string("zk1:x").is_err());
    }

    #[test]
    fn configs_read_and_write_back() {
        let text = "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n\
                    server.3=[::1]:2890:3890;2183\n\
                    server.2=zk2:2889:3889:observer\n\
                    version=1a";
        let config = EnsembleConfig::parse(text).unwrap();
        assert_eq!(config.version, 26);
        let ids: Vec<u64> = config.members.iter().map(|m| m.id).collect();
        assert_eq!(ids, [1, 2, 3]);
        assert_eq!(config.member(2).unwrap().role, MemberRole::Observer);
        assert_eq!(config.member(2).unwrap().client_address(), None);
        assert_eq!(
            config.member(3).unwrap().client_address().as_deref(),
            Some("[::1]:2183")
        );
        assert_eq!(
            config.connect_string().as_deref(),
            Some("127.0.0.1:2181,[::1]:2183")
        );
        for member in &config.members {
            assert_eq!(
                &member.to_string().parse::<EnsembleMember>().unwrap(),
                member
            );
        }
        assert_eq!(
            EnsembleConfig::parse("").unwrap(),
            EnsembleConfig::default()
        );
        for bad in [
            "server.x=h:1:2",
            "server.1=h:1",
            "server.1=h:1:2:leader",
            "server.1=h:1:2;nope",
            "server.1=:1:2",
        ] {
            assert!(
                matches!(
                    bad.parse::<EnsembleMember>(),
                    Err(crate::error::Error::InvalidArgument(_))
                ),
                "{bad}"
            );
        }
        assert!(EnsembleConfig::parse("version=zz").is_err());
    }

    #[test]
    fn chroots() {
        assert_eq!(chroot("a:1,b:2/app"), Some("/app"));
        assert_eq!(chroot("a:1,b:2/app/x"), Some("/app/x"));
        assert_eq!(chroot("tcp+tls://a:1/app"), Some("/app"));
        assert_eq!(chroot("a:1,b:2"), None);
        assert_eq!(chroot("a:1/"), None);
    }

    #[tokio::test]
    async fn when_a_connection_moves_and_when_it_asks_the_members() {
        let tracker = Tracker::new(
            true,
            true,
            Some("/app".into()),
            crate::listen::ListenerContainer::new("ensemble"),
        );
        let config = |a_port: u16| {
            EnsembleConfig::parse(&format!(
                "server.1=a:10:11;a:{a_port}\nserver.2=b:20:21;b:2\nserver.3=c:30:31;c:3\nversion={a_port:x}"
            ))
            .unwrap()
        };
        assert!(tracker.update(config(1)));
        assert!(
            !tracker.update(config(1)),
            "the same configuration is no news"
        );
        assert_eq!(tracker.connect_string().as_deref(), Some("a:1,b:2,c:3/app"));
        // A connection to one member: it stays, and while it is down the others are asked.
        assert_eq!(tracker.should_move("a:1/app"), None);
        assert!(tracker.should_move("x:9/app").is_some());
        assert_eq!(
            tracker.probe_target("a:1/app").as_deref(),
            Some("a:1,b:2,c:3/app")
        );
        assert_eq!(
            tracker.probe_target("c:3,b:2,a:1/app"),
            None,
            "it knows them all"
        );
        // Member 1 moved to port 7: the connection to its old address moves.
        assert!(tracker.update(config(7)));
        assert_eq!(
            tracker.should_move("a:1/app").as_deref(),
            Some("a:7,b:2,c:3/app")
        );
        assert!(!tracker.update(config(1)), "an older version is ignored");
    }
}
