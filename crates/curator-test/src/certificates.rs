//! Test certificates, generated at test time: a CA, the server and client certificates it signs,
//! and the wrong ones (an unrelated CA, an expired certificate, one for another host).
//!
//! Generated with [`rcgen`] (the rustls project's certificate generator, maintained beside
//! rustls and used by its own tests): no checked-in keys that expire or leak, no `openssl` or
//! `keytool` run, and every run gets fresh keys. Keys are ECDSA P-256 in PKCS#8 PEM, which both
//! ZooKeeper's PEM key stores and rustls read.

use std::fmt;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use tempfile::TempDir;

use crate::error::{Error, Result};

/// The host names and addresses the servers of this crate answer on, and so the names their
/// certificate holds: clients connect to `localhost` (see
/// [`TestingServer::secure_connect_string`](crate::TestingServer::secure_connect_string)).
pub const SERVER_HOSTS: &[&str] = &["localhost", "127.0.0.1"];

/// A host name no server of this crate answers on, for a certificate that must fail host-name
/// verification.
pub const WRONG_HOST: &str = "wrong-host.invalid";

/// A calendar day: year, month, day.
type Ymd = (i32, u8, u8);

/// A certificate authority that signs server and client certificates.
///
/// ```
/// # fn demo() -> curator_test::Result<()> {
/// let ca = curator_test::CertificateAuthority::new("my test CA")?;
/// let alice = ca.client_certificate("alice")?;
/// assert_eq!(alice.subject(), "CN=alice");
/// assert!(ca.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
/// # Ok(()) }
/// # demo().unwrap();
/// ```
pub struct CertificateAuthority {
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
    subject: String,
}

impl fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertificateAuthority")
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

impl CertificateAuthority {
    /// A new self-signed CA whose subject is `CN=<common_name>`, valid from 1975 to 4096.
    ///
    /// # Errors
    /// [`Error::Certificate`] when the key or certificate cannot be generated.
    pub fn new(common_name: &str) -> Result<Self> {
        let mut params = CertificateParams::default();
        params.distinguished_name = common_name_only(common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().map_err(certificate_error("a CA key"))?;
        let cert = params
            .self_signed(&key)
            .map_err(certificate_error("a CA certificate"))?;
        Ok(Self {
            cert_pem: cert.pem(),
            subject: rfc2253_common_name(common_name),
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA's certificate (PEM): what a client trusts, and what a server trusts for client
    /// certificates.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA's subject, such as `CN=curator-test CA`.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// A server certificate for `hosts` (DNS names or IP addresses, which become its subject
    /// alternative names; the first is also its common name).
    ///
    /// # Errors
    /// [`Error::Certificate`] for an empty or invalid host name.
    pub fn server_certificate(&self, hosts: &[&str]) -> Result<TestCertificate> {
        self.issue_server(hosts, None)
    }

    /// A server certificate for `hosts` that expired long ago (valid during the year 2000 only).
    ///
    /// # Errors
    /// As [`server_certificate`](Self::server_certificate).
    pub fn expired_server_certificate(&self, hosts: &[&str]) -> Result<TestCertificate> {
        self.issue_server(hosts, Some(((2000, 1, 1), (2001, 1, 1))))
    }

    /// A client certificate whose subject is `CN=<common_name>` and nothing else, so a ZooKeeper
    /// server with x509 authentication knows its client as the `x509` identity
    /// [`TestCertificate::subject`] (for example `CN=alice`).
    ///
    /// # Errors
    /// [`Error::Certificate`] when the key or certificate cannot be generated.
    pub fn client_certificate(&self, common_name: &str) -> Result<TestCertificate> {
        let mut params = CertificateParams::default();
        params.distinguished_name = common_name_only(common_name);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.use_authority_key_identifier_extension = true;
        self.issue(
            params,
            rfc2253_common_name(common_name),
            "a client certificate",
        )
    }

    fn issue_server(
        &self,
        hosts: &[&str],
        validity: Option<(Ymd, Ymd)>,
    ) -> Result<TestCertificate> {
        let first = hosts
            .first()
            .ok_or_else(|| Error::Certificate("a server certificate needs a host name".into()))?;
        let mut params = CertificateParams::new(
            hosts
                .iter()
                .map(|host| (*host).to_owned())
                .collect::<Vec<_>>(),
        )
        .map_err(certificate_error(format!(
            "a server certificate for {hosts:?}"
        )))?;
        params.distinguished_name = common_name_only(first);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        if let Some(((y0, m0, d0), (y1, m1, d1))) = validity {
            params.not_before = rcgen::date_time_ymd(y0, m0, d0);
            params.not_after = rcgen::date_time_ymd(y1, m1, d1);
        }
        self.issue(params, rfc2253_common_name(first), "a server certificate")
    }

    fn issue(
        &self,
        params: CertificateParams,
        subject: String,
        what: &str,
    ) -> Result<TestCertificate> {
        let key = KeyPair::generate().map_err(certificate_error(format!("a key for {what}")))?;
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(certificate_error(what))?;
        Ok(TestCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            subject,
        })
    }

    /// Writes the CA certificate to `path` (PEM), for a program that reads a trust store file.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub fn write_pem(&self, path: &Path) -> Result<PathBuf> {
        write_file(path, &self.cert_pem)?;
        Ok(path.to_owned())
    }
}

/// A certificate signed by a [`CertificateAuthority`], with its private key.
///
/// `Debug` shows the subject only, never the key.
///
/// ```
/// # fn demo() -> curator_test::Result<()> {
/// let certs = curator_test::TestCertificates::generate()?;
/// let server = certs.server();
/// assert!(server.key_pem().starts_with("-----BEGIN PRIVATE KEY-----")); // PKCS#8
/// // ZooKeeper's PEM key store: the key, then the certificate.
/// assert!(server.key_store_pem().contains("-----BEGIN CERTIFICATE-----"));
/// # Ok(()) }
/// # demo().unwrap();
/// ```
#[derive(Clone)]
pub struct TestCertificate {
    cert_pem: String,
    key_pem: String,
    subject: String,
}

impl fmt::Debug for TestCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestCertificate")
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

impl TestCertificate {
    /// The certificate (PEM).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The private key (PKCS#8 PEM, unencrypted).
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// The key and then the certificate in one PEM text: the key store ZooKeeper reads with
    /// `ssl.keyStore.type=PEM`.
    pub fn key_store_pem(&self) -> String {
        format!("{}{}", self.key_pem, self.cert_pem)
    }

    /// The subject as RFC 2253 text, such as `CN=alice`: for a client certificate, the `x509`
    /// identity a ZooKeeper server with x509 authentication gives its client (what `whoAmI`
    /// shows and what an ACL names).
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// Writes `<stem>.crt`, `<stem>.key` and `<stem>.pem` (key store: key and certificate) into
    /// `dir`, for a program that reads files.
    ///
    /// # Errors
    /// [`Error::Io`] when a file cannot be written.
    pub fn write_pem(&self, dir: &Path, stem: &str) -> Result<PemFiles> {
        let files = PemFiles {
            cert: dir.join(format!("{stem}.crt")),
            key: dir.join(format!("{stem}.key")),
            key_store: dir.join(format!("{stem}.pem")),
        };
        write_file(&files.cert, &self.cert_pem)?;
        write_file(&files.key, &self.key_pem)?;
        write_file(&files.key_store, &self.key_store_pem())?;
        Ok(files)
    }
}

/// Where [`TestCertificate::write_pem`] wrote a certificate and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PemFiles {
    /// The certificate (PEM).
    pub cert: PathBuf,
    /// The private key (PKCS#8 PEM).
    pub key: PathBuf,
    /// Key and certificate in one file: a ZooKeeper PEM key store (`ssl.keyStore.location` with
    /// `ssl.keyStore.type=PEM`).
    pub key_store: PathBuf,
}

/// Every certificate a secured-server test needs, generated at once: a CA; a server
/// certificate for `localhost` and `127.0.0.1` signed by it; client certificates on demand; and,
/// for failure tests, an unrelated CA, an expired server certificate and a server certificate
/// for another host name ([`WRONG_HOST`]), both signed by the CA.
///
/// ```
/// # fn demo() -> curator_test::Result<()> {
/// let certs = curator_test::TestCertificates::generate()?;
/// let bob = certs.client("bob")?;
/// assert_eq!(bob.subject(), "CN=bob");
/// let files = certs.write_to_temp_dir()?; // ZooKeeper and Java clients read files
/// assert!(files.ca().is_file());
/// # Ok(()) }
/// # demo().unwrap();
/// ```
#[derive(Debug)]
pub struct TestCertificates {
    ca: CertificateAuthority,
    server: TestCertificate,
    unknown_ca: CertificateAuthority,
    expired_server: TestCertificate,
    wrong_host_server: TestCertificate,
}

impl TestCertificates {
    /// Generates the CA, the unrelated CA and the three server certificates (a few
    /// milliseconds).
    ///
    /// # Errors
    /// [`Error::Certificate`] when a key or certificate cannot be generated.
    pub fn generate() -> Result<Self> {
        let ca = CertificateAuthority::new("curator-test CA")?;
        let unknown_ca = CertificateAuthority::new("curator-test unknown CA")?;
        Ok(Self {
            server: ca.server_certificate(SERVER_HOSTS)?,
            expired_server: ca.expired_server_certificate(SERVER_HOSTS)?,
            wrong_host_server: ca.server_certificate(&[WRONG_HOST])?,
            ca,
            unknown_ca,
        })
    }

    /// The CA that signed every certificate here: clients trust it, and servers trust it for
    /// client certificates.
    pub fn ca(&self) -> &CertificateAuthority {
        &self.ca
    }

    /// The server certificate for `localhost` and `127.0.0.1` (subject `CN=localhost`).
    pub fn server(&self) -> &TestCertificate {
        &self.server
    }

    /// A new client certificate with subject `CN=<common_name>`, signed by [`ca`](Self::ca).
    ///
    /// # Errors
    /// [`Error::Certificate`] when it cannot be generated.
    pub fn client(&self, common_name: &str) -> Result<TestCertificate> {
        self.ca.client_certificate(common_name)
    }

    /// A CA that signed nothing here: a client trusting only it rejects every server here, and a
    /// server given its certificates ([`CertificateAuthority::client_certificate`]) rejects
    /// them as unknown.
    pub fn unknown_ca(&self) -> &CertificateAuthority {
        &self.unknown_ca
    }

    /// A server certificate for `localhost` and `127.0.0.1`, signed by [`ca`](Self::ca), that
    /// expired in 2001.
    pub fn expired_server(&self) -> &TestCertificate {
        &self.expired_server
    }

    /// A server certificate signed by [`ca`](Self::ca) for [`WRONG_HOST`] only, which fails
    /// host-name verification for a client that connects to `localhost`.
    pub fn wrong_host_server(&self) -> &TestCertificate {
        &self.wrong_host_server
    }

    /// Writes every certificate into a new temporary directory, removed when the returned value
    /// drops: `ca.crt`, `unknown-ca.crt`, and `.crt`/`.key`/`.pem` triples for `server`,
    /// `expired-server` and `wrong-host-server`.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory or a file cannot be written.
    pub fn write_to_temp_dir(&self) -> Result<CertificateFiles> {
        let dir = tempfile::Builder::new()
            .prefix("curator-test-certs-")
            .tempdir()
            .map_err(Error::io("creating a certificate directory"))?;
        Ok(CertificateFiles {
            ca: self.ca.write_pem(&dir.path().join("ca.crt"))?,
            unknown_ca: self
                .unknown_ca
                .write_pem(&dir.path().join("unknown-ca.crt"))?,
            server: self.server.write_pem(dir.path(), "server")?,
            expired_server: self
                .expired_server
                .write_pem(dir.path(), "expired-server")?,
            wrong_host_server: self
                .wrong_host_server
                .write_pem(dir.path(), "wrong-host-server")?,
            dir,
        })
    }
}

/// [`TestCertificates`] written to a temporary directory (removed on drop).
#[derive(Debug)]
pub struct CertificateFiles {
    ca: PathBuf,
    unknown_ca: PathBuf,
    server: PemFiles,
    expired_server: PemFiles,
    wrong_host_server: PemFiles,
    dir: TempDir,
}

impl CertificateFiles {
    /// The directory holding every file.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The CA certificate (a PEM trust store).
    pub fn ca(&self) -> &Path {
        &self.ca
    }

    /// The unrelated CA's certificate.
    pub fn unknown_ca(&self) -> &Path {
        &self.unknown_ca
    }

    /// The server certificate's files.
    pub fn server(&self) -> &PemFiles {
        &self.server
    }

    /// The expired server certificate's files.
    pub fn expired_server(&self) -> &PemFiles {
        &self.expired_server
    }

    /// The wrong-host server certificate's files.
    pub fn wrong_host_server(&self) -> &PemFiles {
        &self.wrong_host_server
    }
}

fn common_name_only(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name
}

/// `CN=<value>` escaped as RFC 2253 (and Java's `X500Principal.getName()`) writes it.
fn rfc2253_common_name(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len() + 3);
    escaped.push_str("CN=");
    let last = value.chars().count().saturating_sub(1);
    for (index, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';' | '=')
            || (index == 0 && matches!(c, '#' | ' '))
            || (index == last && c == ' ');
        if special {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

fn certificate_error(what: impl Into<String>) -> impl FnOnce(rcgen::Error) -> Error {
    let what = what.into();
    move |source| Error::Certificate(format!("generating {what}: {source}"))
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(Error::io(format!("writing {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_are_escaped_as_java_prints_them() {
        assert_eq!(rfc2253_common_name("alice"), "CN=alice");
        assert_eq!(rfc2253_common_name("a,b+c"), "CN=a\\,b\\+c");
        assert_eq!(rfc2253_common_name(" x "), "CN=\\ x\\ ");
    }

    #[test]
    fn every_certificate_is_pem_with_a_pkcs8_key() {
        let certs = TestCertificates::generate().unwrap();
        for cert in [
            certs.server(),
            certs.expired_server(),
            certs.wrong_host_server(),
            &certs.client("alice").unwrap(),
        ] {
            assert!(cert.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
            assert!(cert.key_pem().starts_with("-----BEGIN PRIVATE KEY-----"));
        }
        assert_ne!(certs.ca().cert_pem(), certs.unknown_ca().cert_pem());
        assert_eq!(certs.server().subject(), "CN=localhost");
        let files = certs.write_to_temp_dir().unwrap();
        let store = std::fs::read_to_string(&files.server().key_store).unwrap();
        assert_eq!(store, certs.server().key_store_pem());
        let dir = files.dir().to_owned();
        drop(files);
        assert!(!dir.exists());
    }
}
