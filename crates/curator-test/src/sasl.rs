//! `ServerSasl`: SASL authentication on a ZooKeeper server, with DIGEST-MD5 users or Kerberos.

use std::fmt;
use std::path::PathBuf;

use crate::error::Result;
use crate::kdc::TestingKdc;

/// The service principal of a Kerberos ZooKeeper server, without its realm: the one a client
/// asks a ticket for when it connects to `localhost` (service name `zookeeper`, host
/// `localhost`).
pub const ZOOKEEPER_SERVICE_PRINCIPAL: &str = "zookeeper/localhost";

/// SASL authentication on a server, for
/// [`TestingServerBuilder::sasl`](crate::TestingServerBuilder::sasl) and
/// [`TestingClusterBuilder::sasl`](crate::TestingClusterBuilder::sasl): a JAAS `Server`
/// section (passed with `-Djava.security.auth.login.config`) and ZooKeeper's
/// `SASLAuthenticationProvider`. A client that logs in gets the `sasl` identity shown below;
/// with [`enforced`](Self::enforced), a client that does not is refused.
///
/// **DIGEST-MD5** ([`digest_md5`](Self::digest_md5)): users and passwords given by the test,
/// in ZooKeeper's `DigestLoginModule`. A client logs in with the user name and password; its
/// identity is `sasl:<user>`.
///
/// **Kerberos** ([`kerberos`](Self::kerberos)): the server logs in from a keytab as
/// `zookeeper/localhost@<REALM>` of a [`TestingKdc`]. A client process with
/// [`TestingKdc::client_env`] connects to `localhost:<port>` with SASL GSSAPI (service name
/// `zookeeper`); its identity is its principal as ZooKeeper's default rules leave it:
/// `sasl:alice@EXAMPLE.COM` for `alice@EXAMPLE.COM`, `sasl:app/host@EXAMPLE.COM` for a
/// host-based principal. [`with_host_removed`](Self::with_host_removed) and
/// [`with_realm_removed`](Self::with_realm_removed) shorten it (`sasl:app`).
///
/// ```no_run
/// # async fn demo() -> curator_test::Result<()> {
/// use curator_test::{ServerSasl, TestingKdc, TestingServer};
/// let digest = TestingServer::builder()
///     .sasl(ServerSasl::digest_md5().with_user("alice", "alice-secret").enforced())
///     .start()
///     .await?;
/// let kdc = TestingKdc::start().await?;
/// let kerberos = TestingServer::builder().sasl(ServerSasl::kerberos(&kdc)?).start().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ServerSasl {
    pub(crate) mechanism: Mechanism,
    pub(crate) enforced: bool,
    pub(crate) remove_host: bool,
    pub(crate) remove_realm: bool,
    /// The first invalid option, reported by the server builder's `start`.
    pub(crate) invalid: Option<String>,
}

#[derive(Clone)]
pub(crate) enum Mechanism {
    DigestMd5 {
        users: Vec<(String, String)>,
    },
    Kerberos {
        principal: String,
        keytab: PathBuf,
        krb5_conf: PathBuf,
    },
}

impl fmt::Debug for ServerSasl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("ServerSasl");
        match &self.mechanism {
            // User names only: passwords are never printed.
            Mechanism::DigestMd5 { users } => debug.field(
                "digest_md5_users",
                &users.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            ),
            Mechanism::Kerberos { principal, .. } => debug.field("kerberos_principal", principal),
        };
        debug
            .field("enforced", &self.enforced)
            .field("remove_host", &self.remove_host)
            .field("remove_realm", &self.remove_realm)
            .finish()
    }
}

impl ServerSasl {
    /// DIGEST-MD5 with no users yet; add them with [`with_user`](Self::with_user).
    pub fn digest_md5() -> Self {
        Self::with_mechanism(Mechanism::DigestMd5 { users: Vec::new() })
    }

    /// Adds a DIGEST-MD5 user (`user_<name>="<password>"` in the JAAS file). Names are letters,
    /// digits and `._-`; the password may be any text. An invalid name, or a user for a Kerberos
    /// server, is reported when the server starts.
    pub fn with_user(mut self, name: impl Into<String>, password: impl Into<String>) -> Self {
        let name = name.into();
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        match &mut self.mechanism {
            Mechanism::DigestMd5 { users } if valid => users.push((name, password.into())),
            Mechanism::DigestMd5 { .. } => {
                self.record_invalid(format!(
                    "`{name}` is not a DIGEST-MD5 user name a JAAS file can hold (letters, digits, `._-`)"
                ));
            }
            Mechanism::Kerberos { .. } => {
                self.record_invalid(format!(
                    "user `{name}` given to a Kerberos server; users are principals of its TestingKdc"
                ));
            }
        }
        self
    }

    /// Kerberos with `kdc`: adds `zookeeper/localhost` to its realm (once per KDC) and has the
    /// server log in from its keytab. The server works from copies of the keytab and
    /// `krb5.conf` in its own directory, but it logs in to the KDC whenever it starts (and
    /// restarts), and clients log in through it too: keep the KDC as long as the server.
    ///
    /// # Errors
    /// As [`TestingKdc::add_principal`].
    pub fn kerberos(kdc: &TestingKdc) -> Result<Self> {
        let principal = kdc.add_principal(ZOOKEEPER_SERVICE_PRINCIPAL)?;
        Ok(Self::with_mechanism(Mechanism::Kerberos {
            principal: principal.name().to_owned(),
            keytab: principal.keytab().to_owned(),
            krb5_conf: kdc.krb5_conf().to_owned(),
        }))
    }

    /// Refuses clients that have not authenticated with SASL (`enforce.auth.enabled=true`,
    /// `enforce.auth.schemes=sasl`): ZooKeeper closes such a connection with an authentication
    /// failure (curator-session's first request fails with `Error::AuthFailed`).
    pub fn enforced(mut self) -> Self {
        self.enforced = true;
        self
    }

    /// Kerberos identities lose their host part (`zookeeper.kerberos.removeHostFromPrincipal`):
    /// `app/host@EXAMPLE.COM` becomes `app@EXAMPLE.COM`.
    pub fn with_host_removed(mut self) -> Self {
        self.remove_host = true;
        self
    }

    /// Kerberos identities lose their realm (`zookeeper.kerberos.removeRealmFromPrincipal`):
    /// `alice@EXAMPLE.COM` becomes `alice`.
    pub fn with_realm_removed(mut self) -> Self {
        self.remove_realm = true;
        self
    }

    /// Whether unauthenticated clients are refused.
    pub fn is_enforced(&self) -> bool {
        self.enforced
    }

    /// The server's Kerberos principal (`zookeeper/localhost@<REALM>`), or `None` for
    /// DIGEST-MD5.
    pub fn kerberos_principal(&self) -> Option<&str> {
        match &self.mechanism {
            Mechanism::Kerberos { principal, .. } => Some(principal),
            Mechanism::DigestMd5 { .. } => None,
        }
    }

    fn with_mechanism(mechanism: Mechanism) -> Self {
        Self {
            mechanism,
            enforced: false,
            remove_host: false,
            remove_realm: false,
            invalid: None,
        }
    }

    fn record_invalid(&mut self, message: String) {
        self.invalid.get_or_insert(message);
    }
}

/// `text` as a double-quoted JAAS string (backslashes and quotes escaped).
pub(crate) fn jaas_quoted(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        if matches!(c, '"' | '\\') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_quoted_and_never_printed() {
        assert_eq!(jaas_quoted(r#"a"b\c"#), r#""a\"b\\c""#);
        let sasl = ServerSasl::digest_md5().with_user("alice", "s3cret");
        let debug = format!("{sasl:?}");
        assert!(
            debug.contains("alice") && !debug.contains("s3cret"),
            "{debug}"
        );
        assert!(sasl.invalid.is_none());
    }

    #[test]
    fn invalid_user_names_are_recorded() {
        let sasl = ServerSasl::digest_md5()
            .with_user("bad name", "x")
            .with_user("ok", "y");
        assert!(sasl.invalid.unwrap().contains("bad name"));
    }
}
