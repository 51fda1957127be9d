//! No secret in any log: every tracing event and span (down to `trace`, the wire client's
//! included) of succeeding and failing secured connections is captured, and neither a password
//! nor a private key nor a dump of raw bytes (a SASL token, a ticket) appears in it; nor in the
//! `Debug` text of the settings and the client.
//!
//! One test in this file: it installs the process's global subscriber.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::retry::RetryNTimes;
use curator_framework::security::{SaslConfig, TlsConfig};
use curator_framework::{CuratorFramework, CuratorFrameworkBuilder, Error, paths};
use curator_test::{ClientAuth, ServerSasl, TestCertificates, TestingServer, Timing, unique_root};
use parking_lot::Mutex;
use tracing_subscriber::fmt::format::FmtSpan;

const PASSWORD: &str = "pw-Zq81xVb3";
const WRONG_PASSWORD: &str = "pw-Kk20mWq7";

/// Everything the subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }
}

fn builder(connect: &str) -> CuratorFrameworkBuilder {
    CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(Timing::new().session_timeout())
        .connection_timeout(Timing::new().connection_timeout())
        .retry_policy(RetryNTimes::new(3, Duration::from_millis(50)))
}

/// The base64 lines of a PEM block's body (the secret part of a private key).
fn pem_body_lines(pem: &str) -> Vec<&str> {
    pem.lines()
        .filter(|line| !line.starts_with("-----") && line.len() >= 16)
        .collect()
}

/// A `Debug`-printed byte buffer of 16 or more numbers: how a token or a ticket would show.
fn byte_dumps(text: &str) -> Vec<&str> {
    text.split('[')
        .filter(|rest| {
            let inside = rest.split(']').next().unwrap_or("");
            let numbers: Vec<&str> = inside.split(',').map(str::trim).collect();
            numbers.len() >= 16 && numbers.iter().all(|n| n.parse::<u8>().is_ok())
        })
        .collect()
}

#[tokio::test]
async fn no_password_key_or_token_reaches_the_logs() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(FmtSpan::FULL)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();

    let certs = TestCertificates::generate().unwrap();
    let server = TestingServer::builder()
        .tls(certs.server_tls().with_client_auth(ClientAuth::Need))
        .sasl(ServerSasl::digest_md5().with_user("alice", PASSWORD))
        .start()
        .await
        .unwrap();
    let connect = server.secure_connect_string().unwrap();
    let alice = certs.client("alice").unwrap();
    let tls = TlsConfig::new()
        .ca_pem(certs.ca().cert_pem())
        .identity_pem(alice.cert_pem(), alice.key_pem());

    // Succeeding: TLS with a client certificate and a SASL login, some work, a new session
    // (which logs in again), a close.
    let settings = builder(&connect)
        .tls(tls.clone())
        .sasl(SaslConfig::digest_md5("alice", PASSWORD));
    let debug_of_settings = format!("{settings:?}");
    let client = settings.build().unwrap();
    client.start().await.unwrap();
    client
        .block_until_connected(Timing::new().wait())
        .await
        .unwrap();
    let root = unique_root("secret-logs");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&paths::join(&root, "n"), b"data")
        .await
        .unwrap();
    let who = client.who_am_i().await.unwrap();
    assert!(
        who.iter().any(|id| id.to_string() == "sasl:alice"),
        "{who:?}"
    );
    client.inject_session_expiration().await.unwrap();
    client
        .block_until_connected(Timing::new().wait())
        .await
        .unwrap();
    let debug_of_client = format!("{client:?}");
    client.close().await.unwrap();

    // Failing: a wrong password, and a CA that does not sign the server.
    let wrong = builder(&connect)
        .tls(tls.clone())
        .sasl(SaslConfig::digest_md5("alice", WRONG_PASSWORD))
        .build()
        .unwrap();
    wrong.start().await.unwrap();
    assert_eq!(
        wrong.block_until_connected(Timing::new().wait()).await,
        Err(Error::AuthFailed)
    );
    wrong.close().await.unwrap();
    let untrusting = builder(&connect)
        .tls(
            TlsConfig::new()
                .ca_pem(certs.unknown_ca().cert_pem())
                .identity_pem(alice.cert_pem(), alice.key_pem()),
        )
        .sasl(SaslConfig::digest_md5("alice", PASSWORD))
        .build()
        .unwrap();
    untrusting.start().await.unwrap();
    assert!(matches!(
        untrusting.block_until_connected(Timing::new().wait()).await,
        Err(Error::Tls(_))
    ));
    untrusting.close().await.unwrap();

    let logs = captured.text();
    // The capture saw the wire client's own detail, not only the framework's.
    assert!(
        logs.contains("curator_session"),
        "nothing captured from the wire client"
    );
    assert!(logs.contains("TRACE") || logs.contains("DEBUG"));
    for (what, text) in [
        ("the logs", logs.as_str()),
        ("the settings' Debug", debug_of_settings.as_str()),
        ("the client's Debug", debug_of_client.as_str()),
    ] {
        for secret in [PASSWORD, WRONG_PASSWORD] {
            assert!(!text.contains(secret), "a password in {what}");
        }
        for line in pem_body_lines(alice.key_pem()) {
            assert!(!text.contains(line), "the private key in {what}");
        }
        let dumps = byte_dumps(text);
        assert!(dumps.is_empty(), "raw bytes in {what}: {:?}", &dumps[..1]);
    }
}
