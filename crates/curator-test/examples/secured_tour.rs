//! A tour of the secured servers: a TLS server whose clients are known by their certificates, a
//! SASL DIGEST-MD5 server that refuses anonymous clients, and a Kerberos server with its own KDC,
//! each shown with the identity its client gets (ZooKeeper's `whoAmI`).
//!
//! ```text
//! cargo run -p curator-test --example secured_tour
//! ```

use std::process::Command;

use curator_test::{ClientAuth, ServerSasl, TestCertificates, TestingKdc, TestingServer, Timing};
use zookeeper_client as zk;

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
    let client = zk::Client::connector()
        .with_session_timeout(timing.session_timeout())
        .with_tls(
            zk::TlsOptions::new()
                .with_pem_ca(certs.ca().cert_pem())?
                .with_pem_identity(alice.cert_pem(), alice.key_pem())?,
        )
        .secure_connect(&address)
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
    let client = zk::Client::connector()
        .with_session_timeout(timing.session_timeout())
        .with_sasl(zk::SaslOptions::digest_md5("alice", "alice-secret"))
        .connect(&server.connect_string())
        .await?;
    println!("   {}: {}", server.connect_string(), whoami(&client).await?);
    let anonymous = zk::Client::connector()
        .with_session_timeout(timing.session_timeout())
        .connect(&server.connect_string())
        .await;
    println!(
        "   without SASL: {}",
        anonymous
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

async fn whoami(client: &zk::Client) -> Result<String> {
    Ok(client
        .list_auth_users()
        .await?
        .iter()
        .map(|user| format!("{}:{}", user.scheme(), user.user()))
        .collect::<Vec<_>>()
        .join(", "))
}
