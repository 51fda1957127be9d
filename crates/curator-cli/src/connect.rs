//! A started, connected client from the connection settings.

use std::io::ErrorKind;
use std::time::Duration;

use curator_framework::retry::ExponentialBackoffRetry;
use curator_framework::security::TlsFailure;
use curator_framework::{CuratorFramework, Error};
use futures::future::join_all;
use tokio::net::{TcpStream, lookup_host};

use crate::args::Settings;
use crate::duration::human;
use crate::exit::{CliError, CliResult, codes};

/// How long a first look at each host may take (see [`refused_everywhere`]).
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Builds and starts a client for `connect`, and waits for its first session.
///
/// # Errors
/// Exit code 2 for bad settings (unreadable or unusable TLS files included, found before any
/// connection is tried); 3 at once when every host refuses the connection (or has no address),
/// when a server's certificate or this client's is refused, or when the server refuses the
/// login; 3 when no session comes within the connection timeout.
pub(crate) async fn connect(settings: &Settings, connect: &str) -> CliResult<CuratorFramework> {
    // Built first: `build()` reads the TLS files, and a file that is not there is the same
    // mistake whether or not a server answers.
    let client =
        build(settings, connect).map_err(|error| settings.from_environment.name_in(error))?;
    if let Some(why) = refused_everywhere(connect).await {
        // `curator server` is there only in a build with the `server` feature.
        let hint = match (why.contains("refused"), cfg!(feature = "server")) {
            (true, true) => " (no server runs there; `curator server` starts one)",
            (true, false) => " (no server runs there)",
            (false, _) => "",
        };
        return Err(CliError::new(
            codes::CONNECTION,
            format!("cannot connect to ZooKeeper at {connect}: {why}{hint}"),
        ));
    }
    client
        .start()
        .await
        .map_err(|error| CliError::zk("starting the client", error))?;
    if let Err(error) = client
        .block_until_connected(settings.connection_timeout)
        .await
    {
        let _ = client.close().await;
        // A flag taken from its variable is named as the variable.
        let error = not_connected(settings, connect, error);
        return Err(settings.from_environment.name_in(error));
    }
    Ok(client)
}

/// The client for `connect` with `settings`, not started.
fn build(settings: &Settings, connect: &str) -> CliResult<CuratorFramework> {
    let mut builder = CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(settings.session_timeout)
        .connection_timeout(settings.connection_timeout)
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3));
    if let Some(namespace) = &settings.namespace {
        builder = builder.namespace(namespace.as_str());
    }
    if let Some(tls) = &settings.security.tls {
        builder = builder.tls(tls.clone());
    }
    if let Some(sasl) = &settings.security.sasl {
        builder = builder.sasl(sasl.clone());
    }
    if let Some(digest) = &settings.security.digest {
        builder = builder.authorization("digest", digest.auth_bytes());
    }
    builder.build().map_err(|error| match error {
        // Unreadable or unusable certificate files: the files' fault, said as such.
        Error::Tls(failure) => CliError::new(codes::USAGE, failure.to_string()),
        other => CliError::usage(other.to_string()),
    })
}

/// Why no session came, said for a person who typed the flags: the framework's reason, and
/// which flag to look at.
fn not_connected(settings: &Settings, connect: &str, error: Error) -> CliError {
    let security = &settings.security;
    let (code, why) = match error {
        // Files that read fine but do not make a usable certificate or key (found only when
        // connecting): bad settings, like an unreadable file.
        Error::Tls(failure @ TlsFailure::Config { .. }) => (codes::USAGE, failure.to_string()),
        // A certificate that will not work: said at once, as it is.
        Error::Tls(failure) => {
            let why = match &failure {
                TlsFailure::UnknownIssuer { .. } => {
                    format!("{failure} (none of the CAs in --tls-ca signed it)")
                }
                TlsFailure::WrongHostName { .. } => {
                    format!("{failure} (connect with a host name the certificate names)")
                }
                TlsFailure::ClientCertificateRefused { server } if !security.client_certificate => {
                    format!("{server} requires a client certificate (--tls-cert and --tls-key)")
                }
                TlsFailure::ClientCertificateRefused { server } => format!(
                    "{server} refused this client's certificate (--tls-cert): is it signed by a \
                     CA the server trusts?"
                ),
                TlsFailure::NotTls { .. } => {
                    format!("{failure} (with --tls-ca, connect to its secure client port)")
                }
                TlsFailure::TlsRequired { server } => format!(
                    "{server} speaks only TLS: connect with --tls-ca (and --tls-cert with \
                     --tls-key if it asks for a client certificate)"
                ),
                _ => failure.to_string(),
            };
            (codes::CONNECTION, why)
        }
        Error::AuthFailed => {
            let why = match (&security.sasl, security.kerberos) {
                (None, _) => {
                    "the server refused this client: it requires a login (--sasl-user and \
                     --sasl-password-file, or --kerberos)"
                }
                (Some(_), false) => {
                    "the server refused the login (wrong user name or password for --sasl-user)"
                }
                (Some(_), true) => "the server refused the Kerberos login",
            };
            (codes::CONNECTION, why.to_owned())
        }
        // The server has no SASL: it made an anonymous session, which the framework refused.
        Error::IdentityNotGranted { requested, granted } => (
            codes::CONNECTION,
            format!(
                "the server did not log this client in as {requested} (it gave {}): SASL is \
                 not enabled on that server, or on that port",
                if granted.is_empty() {
                    "no identity".to_owned()
                } else {
                    granted.join(", ")
                }
            ),
        ),
        // A Kerberos login that cannot even start (no ticket, a principal the KDC does not
        // know, no KDC): GSSAPI's words, and where to look.
        error @ Error::SaslLogin { .. } => (
            codes::CONNECTION,
            format!(
                "{error} (--kerberos: does the keytab or ticket cache hold a principal the KDC \
                 knows? `klist` shows it)"
            ),
        ),
        _ => {
            return CliError::new(
                codes::CONNECTION,
                format!(
                    "cannot connect to ZooKeeper at {connect} within {}",
                    human(settings.connection_timeout)
                ),
            );
        }
    };
    CliError::new(
        code,
        format!("cannot connect to ZooKeeper at {connect}: {why}"),
    )
}

/// A plain TCP connection to each host of `connect` (at most [`PROBE_TIMEOUT`] each, all at
/// once): `Some(why)` when every host refused it or has no address, so that waiting for the
/// connection timeout would be pointless. `None` when any host accepted, or did not answer in
/// time (it may be slow or far: the client gets its chance).
async fn refused_everywhere(connect: &str) -> Option<String> {
    let hosts = connect.split('/').next().unwrap_or_default();
    let probes = hosts.split(',').map(|host| async move {
        let host = host.trim();
        let addresses = match tokio::time::timeout(PROBE_TIMEOUT, lookup_host(host)).await {
            Ok(Ok(addresses)) => addresses.collect::<Vec<_>>(),
            Ok(Err(_)) => return Some(format!("{host}: no such host")),
            Err(_) => return None,
        };
        if addresses.is_empty() {
            return Some(format!("{host}: no such host"));
        }
        for address in addresses {
            match tokio::time::timeout(PROBE_TIMEOUT, TcpStream::connect(address)).await {
                Ok(Err(error)) if error.kind() == ErrorKind::ConnectionRefused => {}
                // Accepted (dropped at once: ZooKeeper logs a client that said nothing), or
                // another failure, or no answer in time: let the client try.
                _ => return None,
            }
        }
        Some(format!("{host}: connection refused"))
    });
    let refusals = join_all(probes).await;
    let refusals: Option<Vec<String>> = refusals.into_iter().collect();
    refusals.map(|refusals| {
        if refusals.len() == 1 {
            refusals[0]
                .rsplit_once(": ")
                .map_or_else(|| refusals[0].clone(), |(_, why)| why.to_owned())
        } else {
            refusals.join("; ")
        }
    })
}
