//! Dynamic reconfiguration: the super user allowed to reconfigure an ensemble, and the
//! ensemble's dynamic configuration as a member reports it.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;

use crate::config::PeerPorts;
use crate::error::{Error, Result};

const SUPER_USER: &str = "super";

/// The ZooKeeper super user of an ensemble started with
/// [`dynamic_reconfig`](crate::TestingClusterBuilder::dynamic_reconfig): the one identity that
/// may write `/zookeeper/config`, so the one that may reconfigure the ensemble.
///
/// A client becomes super by authenticating with the `digest` scheme and
/// [`digest_auth`](Self::digest_auth) (`super:<password>`). The password is random for each
/// ensemble; `Debug` does not print it.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use curator_session::{Session, SessionConfig};
/// use curator_test::TestingCluster;
///
/// let cluster = TestingCluster::builder(3).dynamic_reconfig().start().await?;
/// let credentials = cluster.super_credentials().expect("a dynamic ensemble has a super user");
/// assert_eq!(credentials.user(), "super");
/// let config = SessionConfig::new(&cluster.connect_string())?
///     .auth("digest", credentials.digest_auth()); // b"super:<password>"
/// let admin = Session::connect(config).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct SuperCredentials {
    password: String,
}

impl SuperCredentials {
    /// A super user with a fresh random password.
    pub(crate) fn generate() -> Self {
        Self {
            password: uuid::Uuid::new_v4().simple().to_string(),
        }
    }

    /// The user name: `super`.
    pub fn user(&self) -> &'static str {
        SUPER_USER
    }

    /// The password.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// `super:<password>`: the `auth` bytes of a `digest` authentication.
    pub fn digest_auth(&self) -> Vec<u8> {
        format!("{SUPER_USER}:{}", self.password).into_bytes()
    }

    /// What ZooKeeper's `DigestAuthenticationProvider` compares an authentication with:
    /// `super:base64(sha1("super:<password>"))`.
    pub(crate) fn server_digest(&self) -> String {
        let hash = aws_lc_rs::digest::digest(
            &aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY,
            &self.digest_auth(),
        );
        let encoded = base64::engine::general_purpose::STANDARD.encode(hash.as_ref());
        format!("{SUPER_USER}:{encoded}")
    }

    /// The JVM option that makes this user the servers' super user.
    pub(crate) fn jvm_arg(&self) -> String {
        format!(
            "-Dzookeeper.DigestAuthenticationProvider.superDigest={}",
            self.server_digest()
        )
    }
}

impl fmt::Debug for SuperCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SuperCredentials")
            .field("user", &SUPER_USER)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// The value of a member's `server.<id>=` line: every address on loopback, the member a voting
/// participant.
pub(crate) fn server_value(ports: &PeerPorts) -> String {
    format!(
        "127.0.0.1:{}:{}:participant;127.0.0.1:{}",
        ports.quorum, ports.election, ports.client
    )
}

/// An ensemble's dynamic configuration: its `server.<id>=` lines and its version (the zxid of
/// the reconfiguration that made it; 0 for a configuration no leader has established yet).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct DynamicConfig {
    pub(crate) version: u64,
    /// The value after `server.<id>=`, by id.
    pub(crate) servers: BTreeMap<u64, String>,
}

impl DynamicConfig {
    /// Reads the `membership:` part of a member's `conf` answer (or the text of
    /// `/zookeeper/config`): `server.<id>=...` lines and `version=<hex>`.
    pub(crate) fn parse(text: &str) -> Result<Self> {
        let membership = match text.find("membership:") {
            Some(at) => &text[at + "membership:".len()..],
            None => text,
        };
        let mut config = DynamicConfig::default();
        for line in membership.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix("server.") {
                let (id, value) = rest
                    .split_once('=')
                    .ok_or_else(|| Error::Protocol(format!("server line {line:?}")))?;
                let id = id
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| Error::Protocol(format!("server id in {line:?}")))?;
                config.servers.insert(id, value.trim().to_owned());
            } else if let Some(version) = line.strip_prefix("version=") {
                config.version = u64::from_str_radix(version.trim(), 16)
                    .map_err(|_| Error::Protocol(format!("config version in {line:?}")))?;
            }
        }
        if config.servers.is_empty() {
            return Err(Error::Protocol(format!(
                "no server lines in a member's configuration: {text:?}"
            )));
        }
        Ok(config)
    }

    /// The name ZooKeeper gives this configuration's file next to `zoo.cfg`: it reads the
    /// version from the name's hexadecimal suffix, and a file without one is version 0.
    pub(crate) fn file_name(&self) -> String {
        if self.version == 0 {
            "zoo.cfg.dynamic".to_owned()
        } else {
            format!("zoo.cfg.dynamic.{:x}", self.version)
        }
    }

    /// The file's text: the `server.<id>=` lines only (ZooKeeper refuses a `version` line).
    pub(crate) fn file_contents(&self) -> String {
        self.servers
            .iter()
            .map(|(id, value)| format!("server.{id}={value}\n"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_super_digest_is_what_zookeeper_computes() {
        // DigestAuthenticationProvider.generateDigest("super:test") in ZooKeeper 3.8.
        let credentials = SuperCredentials {
            password: "test".into(),
        };
        assert_eq!(
            credentials.server_digest(),
            "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
        );
        assert_eq!(credentials.digest_auth(), b"super:test");
        assert!(!format!("{credentials:?}").contains("test"));
    }

    #[test]
    fn conf_answers_are_read_from_their_membership() {
        let answer = "clientPort=1\nserverId=1\npeerType=0\nmembership: \n\
                      server.1=127.0.0.1:11:12:participant;127.0.0.1:13\n\
                      server.3=127.0.0.1:31:32:participant;127.0.0.1:33\nversion=100000002";
        let config = DynamicConfig::parse(answer).unwrap();
        assert_eq!(config.version, 0x1_0000_0002);
        assert_eq!(config.servers.len(), 2);
        assert_eq!(config.file_name(), "zoo.cfg.dynamic.100000002");
        assert_eq!(
            config.file_contents(),
            "server.1=127.0.0.1:11:12:participant;127.0.0.1:13\n\
             server.3=127.0.0.1:31:32:participant;127.0.0.1:33\n"
        );
        assert!(DynamicConfig::parse("This ZooKeeper instance is not currently serving").is_err());
        let initial = DynamicConfig {
            version: 0,
            servers: config.servers,
        };
        assert_eq!(initial.file_name(), "zoo.cfg.dynamic");
    }
}
