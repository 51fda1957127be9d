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

/// The `host[:port]` parts of a connect string (`[tcp://|tcp+tls://]host[:port],...[/chroot]`),
/// without their protocol prefixes and the chroot.
fn host_parts(connect: &str) -> Vec<&str> {
    connect
        .split(',')
        .map(|part| {
            let part = part.trim();
            let part = part
                .strip_prefix("tcp+tls://")
                .or_else(|| part.strip_prefix("tcp://"))
                .unwrap_or(part);
            part.split('/').next().unwrap_or_default()
        })
        .collect()
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
pub(crate) fn validate_connect_string(connect: &str) -> Result<(), crate::Error> {
    let hosts = host_parts(connect);
    if hosts.iter().all(|host| host.is_empty()) {
        return Err(crate::Error::InvalidArgument(format!(
            "connect string {connect:?} names no server"
        )));
    }
    for host in hosts.into_iter().filter(|h| !h.is_empty()) {
        let port = host.rsplit_once(':').map(|(_, p)| p);
        if let Some(port) = port {
            if port.parse::<u16>().is_err() {
                return Err(crate::Error::InvalidArgument(format!(
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
}
