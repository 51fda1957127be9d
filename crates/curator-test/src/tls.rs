//! `ServerTls`: a ZooKeeper server's TLS client port, its certificate and client authentication.

use crate::certificates::{CertificateAuthority, TestCertificate, TestCertificates};

/// Whether a TLS server asks its clients for a certificate (ZooKeeper's `ssl.clientAuth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// The server asks for no certificate; clients are anonymous unless they authenticate
    /// otherwise.
    #[default]
    None,
    /// The server asks for a certificate; a client that presents one signed by the trusted CA
    /// gets its `x509` identity, and a client without one is let in anonymously.
    Want,
    /// The server requires a certificate signed by the trusted CA; the handshake fails without
    /// one. Each client gets its `x509` identity: the certificate's subject, such as `CN=alice`.
    Need,
}

impl ClientAuth {
    pub(crate) fn zookeeper_value(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Want => "want",
            ClientAuth::Need => "need",
        }
    }
}

/// TLS on a server's client port (ZooKeeper's `secureClientPort` on the Netty connection
/// factory), for [`TestingServerBuilder::tls`](crate::TestingServerBuilder::tls) and
/// [`TestingClusterBuilder::tls`](crate::TestingClusterBuilder::tls).
///
/// The server presents `certificate` and trusts `trusted_ca` for client certificates. Every TLS
/// server also registers ZooKeeper's `X509AuthenticationProvider`, so a client certificate the
/// server accepts (with [`ClientAuth::Want`] or [`ClientAuth::Need`]) becomes an `x509` identity
/// that ACLs can name: the certificate's [subject](TestCertificate::subject), such as
/// `CN=alice`.
///
/// A client connects to
/// [`secure_connect_string`](crate::TestingServer::secure_connect_string) (`localhost:<port>`),
/// trusting the CA that signed `certificate`.
///
/// ```no_run
/// # async fn demo() -> curator_test::Result<()> {
/// use curator_test::{ClientAuth, ServerTls, TestCertificates, TestingServer};
/// let certs = TestCertificates::generate()?;
/// // The default: the good server certificate, no client certificates asked for.
/// let plain_tls = TestingServer::builder().tls(certs.server_tls()).start().await?;
/// // An expired certificate, and client certificates required.
/// let strict = TestingServer::builder()
///     .tls(ServerTls::new(certs.ca(), certs.expired_server()).with_client_auth(ClientAuth::Need))
///     .start()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ServerTls {
    pub(crate) trusted_ca_pem: String,
    pub(crate) certificate: TestCertificate,
    pub(crate) client_auth: ClientAuth,
}

impl ServerTls {
    /// The server presents `certificate` and trusts `trusted_ca` for client certificates;
    /// [`ClientAuth::None`].
    pub fn new(trusted_ca: &CertificateAuthority, certificate: &TestCertificate) -> Self {
        Self {
            trusted_ca_pem: trusted_ca.cert_pem().to_owned(),
            certificate: certificate.clone(),
            client_auth: ClientAuth::None,
        }
    }

    /// Another certificate for the server to present (an expired one, or one for another host).
    pub fn with_certificate(mut self, certificate: &TestCertificate) -> Self {
        self.certificate = certificate.clone();
        self
    }

    /// Whether the server asks clients for a certificate (default [`ClientAuth::None`]).
    pub fn with_client_auth(mut self, client_auth: ClientAuth) -> Self {
        self.client_auth = client_auth;
        self
    }

    /// The CA whose client certificates the server accepts.
    pub fn with_trusted_ca(mut self, trusted_ca: &CertificateAuthority) -> Self {
        self.trusted_ca_pem = trusted_ca.cert_pem().to_owned();
        self
    }

    /// Whether the server asks clients for a certificate.
    pub fn client_auth(&self) -> ClientAuth {
        self.client_auth
    }
}

impl TestCertificates {
    /// TLS with the good server certificate, trusting [`ca`](Self::ca) for client
    /// certificates, and [`ClientAuth::None`]: `ServerTls::new(self.ca(), self.server())`.
    pub fn server_tls(&self) -> ServerTls {
        ServerTls::new(self.ca(), self.server())
    }
}
