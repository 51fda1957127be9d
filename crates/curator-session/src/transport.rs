//! Connections: the [`Connector`] trait and the two the crate brings, [`TcpConnector`] and
//! [`TlsConnector`].
//!
//! A session works over any byte stream that is `AsyncRead + AsyncWrite`: a TCP socket, a TLS
//! stream, an in-memory pipe, a simulated network's socket. A [`Connector`] makes one for a
//! server address; the session asks for a new one at every connection attempt, so a host name
//! is resolved anew each time (a member replaced behind the same name is found).

use std::fmt;
use std::io;
use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::RwLock;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::config::ServerAddress;
use crate::error::{Error, Result};

/// A byte stream to one server.
pub trait Transport: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Transport for T {}

/// A boxed [`Transport`].
pub type BoxTransport = Box<dyn Transport>;

/// Makes connections to servers.
///
/// ```
/// use std::io;
/// use curator_session::{BoxTransport, Connector, ServerAddress};
/// use futures::future::BoxFuture;
///
/// /// Every server is reached through one in-memory pipe (a test's own server plays it).
/// #[derive(Debug)]
/// struct Pipe(parking_lot::Mutex<Option<tokio::io::DuplexStream>>);
///
/// impl Connector for Pipe {
///     fn connect<'a>(&'a self, _server: &'a ServerAddress) -> BoxFuture<'a, io::Result<BoxTransport>> {
///         Box::pin(async move {
///             let stream = self.0.lock().take().ok_or(io::ErrorKind::ConnectionRefused)?;
///             Ok(Box::new(stream) as BoxTransport)
///         })
///     }
/// }
/// ```
pub trait Connector: fmt::Debug + Send + Sync + 'static {
    /// A new connection to `server`. The session bounds the attempt by its own timeout.
    fn connect<'a>(&'a self, server: &'a ServerAddress) -> BoxFuture<'a, io::Result<BoxTransport>>;
}

/// Plain TCP, with `TCP_NODELAY` (a request is one small write; waiting to coalesce it with
/// the next only adds latency). Host names are resolved at every attempt and each address is
/// tried in turn.
///
/// ```
/// let connector = curator_session::TcpConnector::new();
/// # drop(connector);
/// ```
#[derive(Debug, Clone, Default)]
pub struct TcpConnector;

impl TcpConnector {
    /// The connector.
    pub fn new() -> Self {
        Self
    }

    /// A TCP stream to `server`, with `TCP_NODELAY`.
    ///
    /// # Errors
    /// The last address's connection error, or `NotFound` when the name resolves to nothing.
    pub async fn stream(server: &ServerAddress) -> io::Result<tokio::net::TcpStream> {
        let mut last = io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} resolves to no address", server.host),
        );
        for address in tokio::net::lookup_host((server.host.as_str(), server.port)).await? {
            match tokio::net::TcpStream::connect(address).await {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    return Ok(stream);
                }
                Err(error) => last = error,
            }
        }
        Err(last)
    }
}

impl Connector for TcpConnector {
    fn connect<'a>(&'a self, server: &'a ServerAddress) -> BoxFuture<'a, io::Result<BoxTransport>> {
        Box::pin(async move {
            let stream = Self::stream(server).await?;
            Ok(Box::new(stream) as BoxTransport)
        })
    }
}

/// TLS over TCP with rustls, on the application's runtime. The rustls configuration can be
/// replaced at any time ([`reload`](Self::reload)); the next connection uses the new one.
///
/// ```no_run
/// use curator_session::TlsConnector;
/// # fn demo(ca: &str, cert: &str, key: &str) -> curator_session::Result<()> {
/// let config = TlsConnector::config_from_pem(ca, Some((cert, key)), true)?;
/// let connector = TlsConnector::new(config);
/// # drop(connector); Ok(()) }
/// ```
#[derive(Clone)]
pub struct TlsConnector {
    config: Arc<RwLock<Arc<rustls::ClientConfig>>>,
}

impl fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConnector").finish_non_exhaustive()
    }
}

impl TlsConnector {
    /// A connector with this rustls configuration.
    pub fn new(config: Arc<rustls::ClientConfig>) -> Self {
        Self {
            config: Arc::new(RwLock::new(config)),
        }
    }

    /// Replaces the configuration for the next connections (certificates renewed on disk).
    pub fn reload(&self, config: Arc<rustls::ClientConfig>) {
        *self.config.write() = config;
    }

    /// A rustls configuration from PEM texts: the CA certificates that sign the servers'
    /// certificates, an optional client certificate chain and private key, and whether the
    /// server's certificate must name the host connected to.
    ///
    /// # Errors
    /// [`Error::Tls`] naming which text cannot be used.
    pub fn config_from_pem(
        ca: &str,
        identity: Option<(&str, &str)>,
        verify_hostname: bool,
    ) -> Result<Arc<rustls::ClientConfig>> {
        let tls = |what: &str, why: String| Error::Tls(format!("{what}: {why}"));
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        let cas = rustls_pemfile::certs(&mut ca.as_bytes())
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|error| tls("the CA", error.to_string()))?;
        if cas.is_empty() {
            return Err(tls("the CA", "no certificate in the PEM text".into()));
        }
        for ca in cas {
            roots
                .add(ca)
                .map_err(|error| tls("the CA", error.to_string()))?;
        }
        let roots = Arc::new(roots);
        let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|error| tls("the protocol versions", error.to_string()))?;
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|error| tls("the CA", error.to_string()))?;
        let builder = if verify_hostname {
            builder.with_webpki_verifier(verifier)
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyName(verifier)))
        };
        let config = match identity {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = rustls_pemfile::certs(&mut cert.as_bytes())
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|error| tls("the client certificate", error.to_string()))?;
                if chain.is_empty() {
                    return Err(tls(
                        "the client certificate",
                        "no certificate in the PEM text".into(),
                    ));
                }
                let key = rustls_pemfile::private_key(&mut key.as_bytes())
                    .map_err(|error| tls("the client key", error.to_string()))?
                    .ok_or_else(|| {
                        tls("the client key", "no private key in the PEM text".into())
                    })?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|error| tls("the client certificate or key", error.to_string()))?
            }
        };
        Ok(Arc::new(config))
    }
}

impl Connector for TlsConnector {
    fn connect<'a>(&'a self, server: &'a ServerAddress) -> BoxFuture<'a, io::Result<BoxTransport>> {
        Box::pin(async move {
            let config = Arc::clone(&self.config.read());
            let name = rustls::pki_types::ServerName::try_from(server.host.clone())
                .map_err(|error| io::Error::new(io::ErrorKind::InvalidInput, error))?;
            let stream = TcpConnector::stream(server).await?;
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, stream)
                .await?;
            Ok(Box::new(stream) as BoxTransport)
        })
    }
}

/// Checks a server's certificate chain but not the name in it (the caller turned hostname
/// verification off: servers reached by an address their certificates do not name).
#[derive(Debug)]
struct AnyName(Arc<rustls::client::WebPkiServerVerifier>);

impl rustls::client::danger::ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> std::result::Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))
            | Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(rustls::client::danger::ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
