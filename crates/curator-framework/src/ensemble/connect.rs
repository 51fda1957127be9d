//! Connect strings: their servers, their chroot, and their validation.

/// The chroot suffix of a connect string (`/app` of `zk1:2181,zk2:2181/app`), if any.
pub(crate) fn chroot(connect: &str) -> Option<&str> {
    let last = without_protocol(connect.rsplit(',').next()?.trim());
    last.find('/').map(|at| &last[at..]).filter(|c| *c != "/")
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
