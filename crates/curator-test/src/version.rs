//! Which ZooKeeper release a server runs: the two the harness can start, and what a running
//! server reports.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::four_letter::four_letter_word;

/// The variable that selects the release of every server this crate starts without an explicit
/// [`version`](crate::TestingServerBuilder::version): `3.8` (the default) or `3.9`.
pub const ZK_VERSION_ENV: &str = "CURATOR_TEST_ZK_VERSION";
/// The variable naming the directory Debian 13's ZooKeeper 3.9.3 packages were unpacked into
/// (with `dpkg -x`), instead of the workspace's `target/zookeeper-3.9.3`.
pub const ZK_3_9_DIR_ENV: &str = "CURATOR_TEST_ZK_3_9_DIR";

const DEBIAN_JARS: &str = "/usr/share/java";
/// A logger, so start-up failures reach the log file.
const DEBIAN_LOGGER: &str = "/usr/share/java/slf4j-simple.jar";
/// Netty's codec jar, which Debian's ZooKeeper manifests (3.8 and 3.9) leave out although the
/// Netty connection factory's TLS handler (`SslHandler`, a `ByteToMessageDecoder`) needs it:
/// without it every TLS handshake fails with `NoClassDefFoundError`.
const DEBIAN_NETTY_CODEC: &str = "/usr/share/java/netty-codec.jar";

/// A ZooKeeper release the harness starts servers from.
///
/// - [`V3_8`](Self::V3_8): Debian 12's ZooKeeper 3.8.0 (`libzookeeper-java`, installed in
///   `/usr/share/java`). The default.
/// - [`V3_9`](Self::V3_9): Debian 13's ZooKeeper 3.9.3, which `scripts/setup.sh test` downloads
///   and unpacks into the workspace's `target/zookeeper-3.9.3` (or the directory named by
///   [`CURATOR_TEST_ZK_3_9_DIR`](ZK_3_9_DIR_ENV)). Its jars run on Debian 12's dependency jars,
///   which their manifests name in `/usr/share/java`.
///
/// A server started without an explicit version uses `ZOOKEEPER_CLASSPATH` when it is set, and
/// otherwise the release named by [`CURATOR_TEST_ZK_VERSION`](ZK_VERSION_ENV) (`3.8` or `3.9`),
/// so one environment variable moves a whole test run to 3.9.
///
/// ```
/// use curator_test::ZooKeeperVersion;
/// assert_eq!("3.9".parse::<ZooKeeperVersion>().unwrap(), ZooKeeperVersion::V3_9);
/// assert_eq!(ZooKeeperVersion::V3_8.release(), "3.8.0");
/// assert_eq!(ZooKeeperVersion::V3_9.to_string(), "3.9");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[non_exhaustive]
pub enum ZooKeeperVersion {
    /// ZooKeeper 3.8.0, Debian 12's.
    #[default]
    V3_8,
    /// ZooKeeper 3.9.3, Debian 13's.
    V3_9,
}

impl ZooKeeperVersion {
    /// Every release the harness can start, oldest first.
    pub const ALL: [ZooKeeperVersion; 2] = [ZooKeeperVersion::V3_8, ZooKeeperVersion::V3_9];

    /// The release named by `CURATOR_TEST_ZK_VERSION` (3.8 when it is unset or empty).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the variable names another release.
    pub fn from_env() -> Result<Self> {
        match std::env::var(ZK_VERSION_ENV) {
            Ok(value) if !value.trim().is_empty() => value.trim().parse(),
            _ => Ok(Self::default()),
        }
    }

    /// The exact release: `3.8.0` or `3.9.3`.
    pub fn release(self) -> &'static str {
        match self {
            ZooKeeperVersion::V3_8 => "3.8.0",
            ZooKeeperVersion::V3_9 => "3.9.3",
        }
    }

    /// The classpath that runs this release's server classes. Every entry exists.
    ///
    /// # Errors
    /// [`Error::JarNotFound`] when the release is not installed (3.8) or not fetched (3.9):
    /// `scripts/setup.sh test` does both.
    pub fn classpath(self) -> Result<String> {
        let entries = match self {
            ZooKeeperVersion::V3_8 => vec![PathBuf::from(DEBIAN_JARS).join("zookeeper.jar")],
            ZooKeeperVersion::V3_9 => {
                // The jute jar first: the server jar's manifest names Debian 12's
                // `zookeeper-jute.jar` (3.8.0), whose classes must not win.
                let jars = zk_3_9_dir().join("usr/share/java");
                vec![
                    jars.join("zookeeper-jute-3.9.3.jar"),
                    jars.join("zookeeper-3.9.3.jar"),
                ]
            }
        };
        let mut classpath: Vec<String> = entries.iter().map(|e| e.display().to_string()).collect();
        for optional in [DEBIAN_NETTY_CODEC, DEBIAN_LOGGER] {
            if Path::new(optional).is_file() {
                classpath.push(optional.to_owned());
            }
        }
        let classpath = classpath.join(":");
        check_classpath(&classpath)?;
        Ok(classpath)
    }

    /// Whether a server reporting `version` runs this release line (3.8.x or 3.9.x).
    pub fn matches(self, version: ServerVersion) -> bool {
        let (major, minor) = match self {
            ZooKeeperVersion::V3_8 => (3, 8),
            ZooKeeperVersion::V3_9 => (3, 9),
        };
        (version.major, version.minor) == (major, minor)
    }
}

impl fmt::Display for ZooKeeperVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ZooKeeperVersion::V3_8 => "3.8",
            ZooKeeperVersion::V3_9 => "3.9",
        })
    }
}

impl FromStr for ZooKeeperVersion {
    type Err = Error;

    /// `3.8` or `3.9` (or the exact releases, `3.8.0` and `3.9.3`).
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "3.8" | "3.8.0" => Ok(ZooKeeperVersion::V3_8),
            "3.9" | "3.9.3" => Ok(ZooKeeperVersion::V3_9),
            other => Err(Error::InvalidArgument(format!(
                "unknown ZooKeeper version {other:?}: the harness starts 3.8 (Debian 12's 3.8.0) \
                 or 3.9 (Debian 13's 3.9.3)"
            ))),
        }
    }
}

/// Where Debian 13's ZooKeeper 3.9.3 packages were unpacked: `CURATOR_TEST_ZK_3_9_DIR`, or the
/// workspace's `target/zookeeper-3.9.3`, where `scripts/setup.sh test` puts them.
fn zk_3_9_dir() -> PathBuf {
    match std::env::var_os(ZK_3_9_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            // crates/curator-test/ sits two levels below the workspace's root.
            let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
            let root = manifest.ancestors().nth(2).unwrap_or(manifest);
            root.join("target/zookeeper-3.9.3")
        }
    }
}

/// Every entry of `classpath` must exist (a directory wildcard, `dir/*`, through its directory).
pub(crate) fn check_classpath(classpath: &str) -> Result<()> {
    for entry in classpath.split(':').filter(|e| !e.is_empty()) {
        let checked = entry.strip_suffix("/*").unwrap_or(entry);
        if !Path::new(checked).exists() {
            return Err(Error::JarNotFound {
                path: PathBuf::from(entry),
                classpath: classpath.to_owned(),
            });
        }
    }
    Ok(())
}

/// The version a running server reports (`srvr`'s `Zookeeper version:` line).
///
/// Ordered by release, so a test can ask `version >= ServerVersion::new(3, 9, 0)`.
///
/// ```
/// use curator_test::ServerVersion;
/// let v: ServerVersion = "3.9.3-c26634f34490bb0ea7a09cc51e05ede3b4e320ee".parse().unwrap();
/// assert_eq!(v, ServerVersion::new(3, 9, 3));
/// assert!(v >= ServerVersion::new(3, 9, 0));
/// assert_eq!(v.to_string(), "3.9.3");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerVersion {
    /// 3 for every release the harness starts.
    pub major: u32,
    /// 8 or 9.
    pub minor: u32,
    /// The patch release.
    pub patch: u32,
}

impl ServerVersion {
    /// `major.minor.patch`.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// Whether this is `major.minor` or later.
    pub fn at_least(self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }

    /// Whether `exists` on a node needs READ permission on it (ZOOKEEPER-2590, in 3.8.4 and
    /// 3.9.2): a client that may not read the node gets `NoAuth`, where earlier servers (such
    /// as Debian 12's 3.8.0) answer with its `Stat`. A missing node is `NoNode` either way.
    ///
    /// ```
    /// use curator_test::ServerVersion;
    /// assert!(!ServerVersion::new(3, 8, 0).exists_checks_read_permission());
    /// assert!(ServerVersion::new(3, 8, 4).exists_checks_read_permission());
    /// assert!(!ServerVersion::new(3, 9, 1).exists_checks_read_permission());
    /// assert!(ServerVersion::new(3, 9, 3).exists_checks_read_permission());
    /// ```
    pub fn exists_checks_read_permission(self) -> bool {
        match (self.major, self.minor) {
            (3, 8) => self.patch >= 4,
            (3, 9) => self.patch >= 2,
            (major, minor) => (major, minor) > (3, 9),
        }
    }
}

impl fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl FromStr for ServerVersion {
    type Err = Error;

    /// A version as servers report it: `3.9.3`, with anything after a `-` (a commit id) or a
    /// `,` (the build date) ignored.
    fn from_str(s: &str) -> Result<Self> {
        let release = s.trim().split([',', '-', ' ']).next().unwrap_or_default();
        let mut parts = release.split('.').map(str::parse::<u32>);
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(Ok(major)), Some(Ok(minor)), Some(Ok(patch)), None) => {
                Ok(Self::new(major, minor, patch))
            }
            _ => Err(Error::Protocol(format!("not a ZooKeeper version: {s:?}"))),
        }
    }
}

/// Asks the server at `address` (`host:port`; the first host of a list) for its version with
/// `srvr`. Works for every server, shared ones included.
///
/// ```no_run
/// # async fn demo() -> curator_test::Result<()> {
/// use curator_test::{ServerVersion, TestingServer, server_version};
/// let server = TestingServer::start().await?;
/// if server_version(&server.connect_string()).await? >= ServerVersion::new(3, 9, 0) {
///     // ZooKeeper 3.9's behaviour
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::Io`] or [`Error::Timeout`] (10 s) when the server does not answer,
/// [`Error::Protocol`] when the answer has no version.
pub async fn server_version(address: &str) -> Result<ServerVersion> {
    let answer = four_letter_word(address, "srvr", Duration::from_secs(10)).await?;
    answer
        .lines()
        .find_map(|line| line.strip_prefix("Zookeeper version:"))
        .ok_or_else(|| Error::Protocol(format!("`srvr` without a version: {answer:?}")))?
        .parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_as_servers_report_them() {
        let line = "3.8.0-5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f, built on 2022-02-25 08:49 UTC";
        assert_eq!(
            line.parse::<ServerVersion>().unwrap(),
            ServerVersion::new(3, 8, 0)
        );
        assert!("3.9".parse::<ServerVersion>().is_err());
        assert!("three".parse::<ServerVersion>().is_err());
        assert!(ServerVersion::new(3, 9, 3).at_least(3, 9));
        assert!(!ServerVersion::new(3, 8, 4).at_least(3, 9));
        assert!(ZooKeeperVersion::V3_9.matches(ServerVersion::new(3, 9, 3)));
        assert!(!ZooKeeperVersion::V3_8.matches(ServerVersion::new(3, 9, 3)));
    }

    #[test]
    fn releases_are_named_as_the_variable_takes_them() {
        for version in ZooKeeperVersion::ALL {
            assert_eq!(
                version.to_string().parse::<ZooKeeperVersion>().unwrap(),
                version
            );
            assert_eq!(
                version.release().parse::<ZooKeeperVersion>().unwrap(),
                version
            );
        }
        let error = "3.7".parse::<ZooKeeperVersion>().unwrap_err().to_string();
        assert!(error.contains("3.8") && error.contains("3.9"), "{error}");
    }
}
