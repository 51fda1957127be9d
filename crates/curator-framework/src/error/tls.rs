//! [`TlsFailure`]: why a TLS connection failed. Beside [`Error`](crate::Error), which carries
//! it, so the error type depends on no feature module (`security` builds on the error).

use std::fmt;

/// Why a TLS connection failed: [`Error::Tls`](crate::Error::Tls).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The server's certificate is not signed by a CA this client trusts.
    UnknownIssuer {
        /// The server (`host:port`).
        server: String,
    },
    /// The server's certificate is not valid for the host name connected to.
    WrongHostName {
        /// The server (`host:port`).
        server: String,
    },
    /// The server's certificate expired (or is not valid yet).
    Expired {
        /// The server (`host:port`).
        server: String,
    },
    /// The server refused this client's certificate, or wanted one and got none.
    ClientCertificateRefused {
        /// The server (`host:port`).
        server: String,
    },
    /// The server does not speak TLS on that port.
    NotTls {
        /// The server (`host:port`).
        server: String,
    },
    /// The server speaks only TLS on that port, and this client has no TLS settings
    /// ([`CuratorFrameworkBuilder::tls`](crate::CuratorFrameworkBuilder::tls)).
    TlsRequired {
        /// The server (`host:port`).
        server: String,
    },
    /// Another handshake failure.
    Handshake {
        /// The server (`host:port`).
        server: String,
        /// What TLS said.
        reason: String,
    },
    /// The TLS settings themselves are unusable: no CA, an unreadable file, PEM without a
    /// certificate or key.
    Config {
        /// What is wrong.
        reason: String,
    },
}

impl fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsFailure::UnknownIssuer { server } => write!(
                f,
                "the certificate of {server} is not signed by a trusted CA"
            ),
            TlsFailure::WrongHostName { server } => write!(
                f,
                "the certificate of {server} is not valid for that host name"
            ),
            TlsFailure::Expired { server } => write!(
                f,
                "the certificate of {server} has expired (or is not valid yet)"
            ),
            TlsFailure::ClientCertificateRefused { server } => write!(
                f,
                "{server} refused this client's certificate (or wanted one)"
            ),
            TlsFailure::NotTls { server } => write!(f, "{server} does not speak TLS"),
            TlsFailure::TlsRequired { server } => write!(
                f,
                "{server} speaks only TLS: connect with TLS settings (a CA to trust)"
            ),
            TlsFailure::Handshake { server, reason } => {
                write!(f, "TLS handshake with {server} failed: {reason}")
            }
            TlsFailure::Config { reason } => write!(f, "unusable TLS settings: {reason}"),
        }
    }
}
