//! Why a TLS connection failed. The wire client reports any failed connection attempt as a lost
//! connection and tries again, so after a failed pass over the servers the session holder asks
//! here: a TLS handshake of its own with the same certificates, whose error says what is wrong.

use std::io::{ErrorKind, Read};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{AlertDescription, CertificateError, ClientConfig, ClientConnection, RootCertStore};

use super::{LoadedTls, TlsFailure};

/// A certificate failure shared by every server that took a TCP connection and failed the
/// handshake, or `None` when some server shook hands, none could be reached, or the failures
/// were not about certificates.
pub(crate) async fn diagnose(
    tls: LoadedTls,
    servers: Vec<(String, u16)>,
    timeout: Duration,
) -> Option<TlsFailure> {
    tokio::task::spawn_blocking(move || {
        let config = match client_config(&tls) {
            Ok(config) => Arc::new(config),
            Err(failure) => return Some(failure),
        };
        let mut found = None;
        for (host, port) in servers {
            match handshake(&config, &host, port, timeout) {
                Outcome::Unreachable => {}
                Outcome::Fine => return None,
                // The client does not check names; this probe's rustls does, and stops there.
                Outcome::Failed(TlsFailure::WrongHostName { .. })
                    if tls.skip_hostname_verification =>
                {
                    return None;
                }
                Outcome::Failed(failure) => {
                    if matches!(failure, TlsFailure::Handshake { .. }) {
                        // Not a certificate problem: maybe a server shutting down.
                        return None;
                    }
                    found.get_or_insert(failure);
                }
            }
        }
        found
    })
    .await
    .unwrap_or(None)
}

/// For a client without TLS settings: [`TlsFailure::TlsRequired`] when every server that took a
/// TCP connection answers a TLS handshake with a certificate and not the plaintext protocol,
/// otherwise `None`.
pub(crate) async fn diagnose_plaintext(
    servers: Vec<(String, u16)>,
    timeout: Duration,
) -> Option<TlsFailure> {
    tokio::task::spawn_blocking(move || {
        // No CA at all: any certificate the server presents fails as an unknown issuer, which
        // is all this needs to know (that it presented one).
        let config = Arc::new(
            ClientConfig::builder()
                .with_root_certificates(RootCertStore::empty())
                .with_no_client_auth(),
        );
        let mut found = None;
        for (host, port) in servers {
            match handshake(&config, &host, port, timeout) {
                Outcome::Unreachable => {}
                Outcome::Failed(
                    TlsFailure::UnknownIssuer { server }
                    | TlsFailure::Expired { server }
                    | TlsFailure::WrongHostName { server },
                ) => {
                    found.get_or_insert(TlsFailure::TlsRequired { server });
                }
                Outcome::Fine | Outcome::Failed(_) => return None,
            }
        }
        found
    })
    .await
    .unwrap_or(None)
}

fn client_config(tls: &LoadedTls) -> Result<ClientConfig, TlsFailure> {
    let config = |reason: String| TlsFailure::Config { reason };
    let mut roots = RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut tls.ca.expose().as_bytes()) {
        let cert = cert.map_err(|error| config(format!("the CA: {error}")))?;
        roots
            .add(cert)
            .map_err(|error| config(format!("the CA: {error}")))?;
    }
    let builder = ClientConfig::builder().with_root_certificates(roots);
    match &tls.identity {
        None => Ok(builder.with_no_client_auth()),
        Some((cert, key)) => {
            let chain = rustls_pemfile::certs(&mut cert.expose().as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| config(format!("the client certificate: {error}")))?;
            let key = rustls_pemfile::private_key(&mut key.expose().as_bytes())
                .map_err(|error| config(format!("the client key: {error}")))?
                .ok_or_else(|| config("no private key in the client key".into()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|error| config(format!("the client certificate: {error}")))
        }
    }
}

enum Outcome {
    Unreachable,
    Fine,
    Failed(TlsFailure),
}

fn handshake(config: &Arc<ClientConfig>, host: &str, port: u16, timeout: Duration) -> Outcome {
    let server = format!("{host}:{port}");
    let Some(address) = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
    else {
        return Outcome::Unreachable;
    };
    let Ok(mut tcp) = TcpStream::connect_timeout(&address, timeout) else {
        return Outcome::Unreachable;
    };
    let _ = tcp.set_read_timeout(Some(timeout));
    let _ = tcp.set_write_timeout(Some(timeout));
    let Ok(name) = ServerName::try_from(host.to_owned()) else {
        return Outcome::Failed(TlsFailure::Handshake {
            server,
            reason: "the host is not a valid TLS server name".into(),
        });
    };
    let Ok(mut tls) = ClientConnection::new(Arc::clone(config), name) else {
        return Outcome::Unreachable;
    };
    while tls.is_handshaking() {
        if let Err(error) = tls.complete_io(&mut tcp) {
            let failure = classify(&server, &error);
            // A plaintext ZooKeeper port reads a ClientHello as an oversized request and hangs
            // up without a word: ask it something in its own language to be sure.
            if matches!(failure, TlsFailure::Handshake { .. })
                && hung_up(&error)
                && speaks_plaintext(&address, timeout)
            {
                return Outcome::Failed(TlsFailure::NotTls { server });
            }
            return Outcome::Failed(failure);
        }
    }
    // TLS 1.3 servers judge the client's certificate after the client has finished: a refusal
    // arrives as an alert on the first read. ZooKeeper says nothing before a request, so a
    // read that times out (2 s: room for a loaded machine) means the server kept the connection.
    let _ = tcp.set_read_timeout(Some(timeout.min(Duration::from_secs(2))));
    let mut stream = rustls::Stream::new(&mut tls, &mut tcp);
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Ok(_) => Outcome::Fine,
        Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            Outcome::Fine
        }
        Err(error) => Outcome::Failed(classify(&server, &error)),
    }
}

fn hung_up(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
    )
}

/// Whether the server at `address` answers the four-letter word `srvr` in plaintext, as a
/// plaintext ZooKeeper port does (with the statistics, or with a refusal naming the whitelist);
/// a TLS port hangs up.
fn speaks_plaintext(address: &std::net::SocketAddr, timeout: Duration) -> bool {
    let Ok(mut tcp) = TcpStream::connect_timeout(address, timeout) else {
        return false;
    };
    let _ = tcp.set_read_timeout(Some(timeout));
    let _ = tcp.set_write_timeout(Some(timeout));
    if std::io::Write::write_all(&mut tcp, b"srvr").is_err() {
        return false;
    }
    let mut answer = [0u8; 64];
    matches!(tcp.read(&mut answer), Ok(n) if n > 0 && answer[..n].is_ascii())
}

fn classify(server: &str, error: &std::io::Error) -> TlsFailure {
    let server = server.to_owned();
    let tls = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match tls {
        Some(rustls::Error::InvalidCertificate(certificate)) => match certificate {
            CertificateError::UnknownIssuer | CertificateError::BadSignature => {
                TlsFailure::UnknownIssuer { server }
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                TlsFailure::WrongHostName { server }
            }
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. } => TlsFailure::Expired { server },
            other => TlsFailure::Handshake {
                server,
                reason: format!("the server's certificate: {other:?}"),
            },
        },
        Some(rustls::Error::AlertReceived(
            AlertDescription::BadCertificate
            | AlertDescription::CertificateRequired
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnknownCA
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateRevoked
            | AlertDescription::AccessDenied,
        )) => TlsFailure::ClientCertificateRefused { server },
        Some(rustls::Error::InvalidMessage(_)) => TlsFailure::NotTls { server },
        Some(other) => TlsFailure::Handshake {
            server,
            reason: other.to_string(),
        },
        None => TlsFailure::Handshake {
            server,
            reason: error.to_string(),
        },
    }
}
