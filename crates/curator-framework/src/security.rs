//! Secure connections: TLS (the server verified against a CA, optionally a client certificate,
//! reloadable) and SASL logins (DIGEST-MD5; GSSAPI/Kerberos with the `kerberos` cargo feature),
//! set on the builder with [`tls`](crate::CuratorFrameworkBuilder::tls) and
//! [`sasl`](crate::CuratorFrameworkBuilder::sasl).
//!
//! Secrets never leave these types by `Debug`, logs or spans: a password or a private key prints
//! as `<redacted>`.
//!
//! **Failures are prompt and typed.** A TLS handshake that fails on a certificate (an unknown
//! CA, a name that does not match, an expired certificate, a client certificate the server
//! refuses; TLS to a plaintext port; no TLS settings for a port that speaks only TLS) is
//! [`Error::Tls`] with a [`TlsFailure`] saying which; a refused SASL login is
//! [`Error::AuthFailed`]; a Kerberos login that cannot start (no
//! credentials, no ticket for the service) is [`Error::SaslLogin`]; a server that makes an
//! anonymous session although SASL was asked for (it has no SASL configured) is
//! [`Error::IdentityNotGranted`], checked with `whoAmI` on every new session. Waiting operations and
//! [`block_until_connected`](crate::CuratorFramework::block_until_connected) get that error as
//! soon as a connection attempt to every server failed that way, instead of waiting out the
//! connection timeout; the client keeps trying in the background (the server may be fixed).
//!
//! ```no_run
//! # async fn demo() -> curator_framework::Result<()> {
//! use curator_framework::CuratorFramework;
//! use curator_framework::security::{SaslConfig, TlsConfig};
//! let client = CuratorFramework::builder()
//!     .connect_string("zk1.example.com:2281,zk2.example.com:2281")
//!     .tls(TlsConfig::new()
//!         .ca_file("/etc/zookeeper/ca.pem")
//!         .identity_files("/etc/app/client.pem", "/etc/app/client.key"))
//!     .sasl(SaslConfig::digest_md5_password_file("app", "/etc/app/zk-password")?)
//!     .build()?;
//! client.start().await?;
//! for identity in client.who_am_i().await? {
//!     println!("the server knows us as {}:{}", identity.scheme, identity.id);
//! }
//! # Ok(()) }
//! ```

#[cfg(feature = "kerberos")]
mod kerberos;
mod probe;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(feature = "kerberos")]
pub(crate) use kerberos::{
    check_principal as check_kerberos_principal, diagnose as diagnose_kerberos,
};
pub(crate) use probe::{diagnose, diagnose_plaintext};

pub use crate::error::TlsFailure;
use crate::error::{Error, Result};

/// A string that must not be printed: a password, a private key.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(Arc<str>);

impl Secret {
    pub(crate) fn new(value: impl Into<String>) -> Self {
        Self(Arc::from(value.into()))
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Where PEM text comes from.
#[derive(Clone, PartialEq, Eq)]
enum Pem {
    Text(Secret),
    File(PathBuf),
}

impl Pem {
    fn load(&self, what: &str) -> Result<Secret> {
        match self {
            Pem::Text(text) => Ok(text.clone()),
            Pem::File(path) => std::fs::read_to_string(path)
                .map(Secret::new)
                .map_err(|error| {
                    Error::Tls(TlsFailure::Config {
                        reason: format!("cannot read the {what} file {}: {error}", path.display()),
                    })
                }),
        }
    }
}

impl fmt::Debug for Pem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pem::Text(_) => f.write_str("<PEM text>"),
            Pem::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// TLS settings: the CA that signs the servers' certificates, and optionally this client's
/// certificate and key (for servers that want client certificates, and ZooKeeper's `x509`
/// authentication). PEM text or PEM files; files are read by `build()` and again by
/// [`CuratorFramework::reload_tls`](crate::CuratorFramework::reload_tls).
///
/// The server's certificate is checked against the host name of the connect string, as Java's
/// ZooKeeper client does (connect to `zk1.example.com`, not an IP address, unless the certificate
/// names the address); that host is also the name sent in the handshake (SNI). There is no
/// separate server-name setting: the wire client takes the name from the connect string. Where
/// certificates do not name the hosts, [`hostname_verification(false)`](Self::hostname_verification)
/// is the equivalent of Java's `zookeeper.ssl.hostnameVerification=false`. With TLS on, every
/// server of the connect string is reached over TLS.
///
/// ```
/// use curator_framework::security::TlsConfig;
/// let tls = TlsConfig::new().ca_file("/etc/zookeeper/ca.pem");
/// assert!(format!("{tls:?}").contains("ca.pem"));
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct TlsConfig {
    ca: Option<Pem>,
    identity: Option<(Pem, Pem)>,
    skip_hostname_verification: bool,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("ca", &self.ca)
            .field(
                "client_certificate",
                &self.identity.as_ref().map(|(cert, _)| cert),
            )
            .field("hostname_verification", &!self.skip_hostname_verification)
            .finish()
    }
}

/// The PEM texts of a [`TlsConfig`], read.
#[derive(Clone, Debug)]
pub(crate) struct LoadedTls {
    pub(crate) ca: Secret,
    pub(crate) identity: Option<(Secret, Secret)>,
    pub(crate) skip_hostname_verification: bool,
}

impl TlsConfig {
    /// No CA yet: add one with [`ca_pem`](Self::ca_pem) or [`ca_file`](Self::ca_file).
    pub fn new() -> Self {
        Self::default()
    }

    /// Trusts the CA certificates in `pem`.
    pub fn ca_pem(mut self, pem: impl Into<String>) -> Self {
        self.ca = Some(Pem::Text(Secret::new(pem)));
        self
    }

    /// Trusts the CA certificates in the PEM file at `path`.
    pub fn ca_file(mut self, path: impl AsRef<Path>) -> Self {
        self.ca = Some(Pem::File(path.as_ref().to_owned()));
        self
    }

    /// Presents the certificate (chain) `cert` with its private key `key`, both PEM.
    pub fn identity_pem(mut self, cert: impl Into<String>, key: impl Into<String>) -> Self {
        self.identity = Some((Pem::Text(Secret::new(cert)), Pem::Text(Secret::new(key))));
        self
    }

    /// Presents the certificate in the PEM file `cert` with the private key in the PEM file
    /// `key`.
    pub fn identity_files(mut self, cert: impl AsRef<Path>, key: impl AsRef<Path>) -> Self {
        self.identity = Some((
            Pem::File(cert.as_ref().to_owned()),
            Pem::File(key.as_ref().to_owned()),
        ));
        self
    }

    /// Whether the server's certificate must name the host the client connected to (default
    /// `true`). Turning it off still checks that a trusted CA signed the certificate, but any
    /// server holding a certificate from that CA can pose as any other: use it only where the
    /// CA signs ZooKeeper servers alone.
    ///
    /// ```
    /// use curator_framework::security::TlsConfig;
    /// let tls = TlsConfig::new().ca_file("ca.pem").hostname_verification(false);
    /// assert!(format!("{tls:?}").contains("hostname_verification: false"));
    /// ```
    pub fn hostname_verification(mut self, verify: bool) -> Self {
        self.skip_hostname_verification = !verify;
        self
    }

    /// Reads what the settings name.
    pub(crate) fn load(&self) -> Result<LoadedTls> {
        let ca = self
            .ca
            .as_ref()
            .ok_or_else(|| {
                Error::Tls(TlsFailure::Config {
                    reason: "no CA: set TlsConfig::ca_pem or ca_file".into(),
                })
            })?
            .load("CA")?;
        require_certificates(&ca, "the CA")?;
        let identity = match &self.identity {
            Some((cert, key)) => {
                let (cert, key) = (cert.load("certificate")?, key.load("private key")?);
                require_certificates(&cert, "the client certificate")?;
                match rustls_pemfile::private_key(&mut key.expose().as_bytes()) {
                    Ok(Some(_)) => {}
                    _ => {
                        return Err(Error::Tls(TlsFailure::Config {
                            reason: "the client key holds no PEM private key".into(),
                        }));
                    }
                }
                Some((cert, key))
            }
            None => None,
        };
        Ok(LoadedTls {
            ca,
            identity,
            skip_hostname_verification: self.skip_hostname_verification,
        })
    }
}

/// Fails unless `pem` holds at least one readable PEM certificate.
fn require_certificates(pem: &Secret, what: &str) -> Result<()> {
    let mut count = 0;
    for cert in rustls_pemfile::certs(&mut pem.expose().as_bytes()) {
        cert.map_err(|error| {
            Error::Tls(TlsFailure::Config {
                reason: format!("{what}: {error}"),
            })
        })?;
        count += 1;
    }
    if count == 0 {
        return Err(Error::Tls(TlsFailure::Config {
            reason: format!("{what} holds no PEM certificate"),
        }));
    }
    Ok(())
}

/// How the client logs in with SASL when a session is made (and again for every new session).
///
/// ```
/// use curator_framework::security::SaslConfig;
/// let login = SaslConfig::digest_md5("app", "s3cret");
/// assert!(!format!("{login:?}").contains("s3cret"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct SaslConfig {
    pub(crate) kind: SaslKind,
}

/// The mechanisms.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum SaslKind {
    /// DIGEST-MD5 with a user and password (a `user_<name>` of the server's JAAS `Server`
    /// section); the server then knows the session as `sasl:<user>`.
    DigestMd5 { user: String, password: Secret },
    /// GSSAPI (Kerberos): the server principal is `<service>/<host>`.
    #[cfg(feature = "kerberos")]
    Kerberos {
        service: String,
        host: Option<String>,
        principal: Option<String>,
    },
}

impl fmt::Debug for SaslConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            SaslKind::DigestMd5 { user, password } => f
                .debug_struct("DigestMd5")
                .field("user", user)
                .field("password", password)
                .finish(),
            #[cfg(feature = "kerberos")]
            SaslKind::Kerberos {
                service,
                host,
                principal,
            } => f
                .debug_struct("Kerberos")
                .field("service", service)
                .field("host", host)
                .field("principal", principal)
                .finish(),
        }
    }
}

impl SaslConfig {
    /// DIGEST-MD5 as `user` with `password` (a `user_<name>` of the server's JAAS `Server`
    /// section); the server knows the session as `sasl:<user>`.
    pub fn digest_md5(user: impl Into<String>, password: impl Into<String>) -> Self {
        Self {
            kind: SaslKind::DigestMd5 {
                user: user.into(),
                password: Secret::new(password),
            },
        }
    }

    /// DIGEST-MD5 as `user` with the password in the file at `path` (its first line; the file
    /// is read now).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the file cannot be read or is empty (its content is never
    /// part of the message).
    pub fn digest_md5_password_file(
        user: impl Into<String>,
        path: impl AsRef<Path>,
    ) -> Result<Self> {
        let password = read_password_file(path)?;
        Ok(Self::digest_md5(user, password))
    }

    /// GSSAPI (Kerberos) with the server principal `zookeeper/<host connected to>`.
    ///
    /// The client's credentials come from the process's Kerberos environment, as MIT Kerberos
    /// defines it: `KRB5_CONFIG`, and a keytab in `KRB5_CLIENT_KTNAME` or a ticket cache in
    /// `KRB5CCNAME` (or the defaults of `krb5.conf`). The wire client asks GSSAPI for the
    /// default credentials, so the principal is the one of that keytab or cache.
    #[cfg(feature = "kerberos")]
    pub fn kerberos() -> Self {
        Self {
            kind: SaslKind::Kerberos {
                service: "zookeeper".into(),
                host: None,
                principal: None,
            },
        }
    }

    /// Kerberos with another service name than `zookeeper` (the first part of the server's
    /// principal). No effect on other mechanisms.
    #[cfg(feature = "kerberos")]
    pub fn with_service(mut self, service: impl Into<String>) -> Self {
        if let SaslKind::Kerberos {
            service: current, ..
        } = &mut self.kind
        {
            *current = service.into();
        }
        self
    }

    /// Kerberos as `principal` only (`app@EXAMPLE.COM`, or `app` for any realm): before each new
    /// session the client checks that the process's credentials are that principal's, and
    /// fails with [`Error::SaslLogin`] naming both otherwise, without asking the server. A
    /// guard against logging in as whoever holds the ticket cache. No effect on other
    /// mechanisms.
    ///
    /// ```
    /// use curator_framework::security::SaslConfig;
    /// let login = SaslConfig::kerberos().with_principal("app@EXAMPLE.COM");
    /// assert!(format!("{login:?}").contains("app@EXAMPLE.COM"));
    /// ```
    #[cfg(feature = "kerberos")]
    pub fn with_principal(mut self, principal: impl Into<String>) -> Self {
        if let SaslKind::Kerberos {
            principal: current, ..
        } = &mut self.kind
        {
            *current = Some(principal.into());
        }
        self
    }

    /// Kerberos with a fixed host part of the server principal (when the connect string names
    /// servers otherwise than their principals do). No effect on other mechanisms.
    #[cfg(feature = "kerberos")]
    pub fn with_host(mut self, host: impl Into<String>) -> Self {
        if let SaslKind::Kerberos { host: current, .. } = &mut self.kind {
            *current = Some(host.into());
        }
        self
    }
}

/// One identity the server associates with this client's session (ZooKeeper's `whoAmI`),
/// from [`CuratorFramework::who_am_i`](crate::CuratorFramework::who_am_i): `ip:127.0.0.1`,
/// `sasl:app`, `x509:CN=app`, `digest:app`…
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct AuthIdentity {
    /// The authentication scheme (`ip`, `sasl`, `x509`, `digest`, ...).
    pub scheme: String,
    /// The identity within the scheme.
    pub id: String,
}

impl fmt::Display for AuthIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.scheme, self.id)
    }
}

/// The password kept in the file at `path`: its first line (without the line end). What
/// [`SaslConfig::digest_md5_password_file`] reads, for callers that need the password for
/// another scheme (a `digest` authorization, say).
///
/// ```no_run
/// let password = curator_framework::security::read_password_file("/etc/app/zk-password")?;
/// # Ok::<(), curator_framework::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] when the file cannot be read or its first line is empty (its
/// content is never part of the message).
pub fn read_password_file(path: impl AsRef<Path>) -> Result<String> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|error| {
        Error::InvalidArgument(format!(
            "cannot read the password file {}: {error}",
            path.display()
        ))
    })?;
    let password = text.lines().next().unwrap_or_default();
    if password.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "the password file {} is empty",
            path.display()
        )));
    }
    Ok(password.to_owned())
}
