//! A tour of the secured servers: a TLS server whose clients are known by their certificates, a
//! SASL DIGEST-MD5 server that refuses anonymous clients, and a Kerberos server with its own KDC,
//! each shown with the identity its client gets (ZooKeeper's `whoAmI`).
//!
//! ```text
//! cargo run -p curator-test --example secured_tour
//! ```

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use curator_session::{Sasl, Session, SessionConfig, TlsConnector};
use curator_test::{ClientAuth, ServerSasl, TestCertificates, TestingKdc, TestingServer, Timing};

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

#[tokio::main]
async fn main() -> Result {
    let timing = Timing::new();

    println!("== TLS, client certificates required (x509)");
    let certs = TestCertificates::generate()?;
    let server = TestingServer::builder()
        .tls(certs.server_tls().with_client_auth(ClientAuth::Need))
        .start()
        .await?;
    let address = server.secure_connect_string().ok_or("no TLS port")?;
    let alice = certs.client("alice")?;
    let tls = TlsConnector::config_from_pem(
        certs.ca().cert_pem(),
        Some((alice.cert_pem(), alice.key_pem())),
        true,
    )?;
    let client = Session::connect(
        SessionConfig::new(&address)?
            // A JVM's first TLS handshake can take seconds: the session gives each attempt a
            // share of its timeout, and tries within the connection timeout.
            .session_timeout(timing.scale(Duration::from_secs(20)))
            .connection_timeout(timing.wait())
            .connector(Arc::new(TlsConnector::new(tls))),
    )
    .await?;
    println!("   {address}: {}", whoami(&client).await?);
    drop(server);

    println!("== SASL DIGEST-MD5, enforced");
    let server = TestingServer::builder()
        .sasl(
            ServerSasl::digest_md5()
                .with_user("alice", "alice-secret")
                .enforced(),
        )
        .start()
        .await?;
    let client = Session::connect(
        SessionConfig::new(&server.connect_string())?
            .session_timeout(timing.session_timeout())
            .sasl(Sasl::digest_md5("alice", "alice-secret")),
    )
    .await?;
    println!("   {}: {}", server.connect_string(), whoami(&client).await?);
    // ZooKeeper answers the first request of a session without a login with
    // `SessionClosedRequireSaslAuth` and closes it.
    let anonymous = Session::connect(
        SessionConfig::new(&server.connect_string())?.session_timeout(timing.session_timeout()),
    )
    .await?;
    println!(
        "   without SASL: {}",
        anonymous
            .exists("/")
            .await
            .err()
            .map_or("let in".to_owned(), |e| e.to_string())
    );
    drop(server);

    println!("== Kerberos, with a real MIT KDC");
    let kdc = TestingKdc::start().await?;
    let server = TestingServer::builder()
        .sasl(ServerSasl::kerberos(&kdc)?)
        .start()
        .await?;
    let alice = kdc.add_principal("alice")?;
    println!(
        "   realm {} on 127.0.0.1:{}, server principal zookeeper/localhost@{}",
        kdc.realm(),
        kdc.port(),
        kdc.realm()
    );
    let klist = Command::new("klist")
        .envs(kdc.client_env(&alice)?)
        .output()?;
    println!(
        "   a client process with client_env({}) holds:",
        alice.name()
    );
    for line in String::from_utf8_lossy(&klist.stdout).lines() {
        println!("     {line}");
    }
    println!(
        "   such a client connects to {} with SASL GSSAPI (service `zookeeper`) and is known as \
         sasl:{} (tests/kerberos.rs proves it with a Java and a Rust client)",
        server.localhost_connect_string().ok_or("no address")?,
        alice.name()
    );
    Ok(())
}

async fn whoami(client: &Session) -> Result<String> {
    Ok(client
        .who_am_i()
        .await?
        .iter()
        .map(|user| format!("{}:{}", user.auth_scheme, user.user))
        .collect::<Vec<_>>()
        .join(", "))
}
