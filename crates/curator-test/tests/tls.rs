//! TLS servers and ensembles, and x509 identities, against real ZooKeeper processes.

mod common;

use curator_session::proto::{Acl, CreateMode, ErrorCode, Id, Perms};
use curator_session::{Session, open_acl};
use curator_test::{
    ClientAuth, ServerTls, TestCertificate, TestCertificates, TestingCluster, TestingServer,
    Timing, four_letter_word, unique_root,
};

/// Connects over TLS (trying again while no server answers in time).
async fn tls_connect(address: &str, ca_pem: &str, identity: Option<&TestCertificate>) -> Session {
    common::connect_with(common::tls_config(address, ca_pem, identity)).await
}

/// A bare TLS handshake with `address` (`localhost:<port>`) as a client that trusts `ca_pem`
/// and verifies the host name `localhost`: `Ok` or rustls's reason for refusing the server.
async fn handshake(address: &str, ca_pem: &str) -> Result<(), rustls::Error> {
    use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let address = address.to_owned();
    tokio::task::spawn_blocking(move || {
        let name = ServerName::try_from("localhost").unwrap();
        let mut tls = rustls::ClientConnection::new(std::sync::Arc::new(config), name)?;
        let mut socket = std::net::TcpStream::connect(&address).unwrap();
        socket.set_read_timeout(Some(Timing::new().wait())).unwrap();
        while tls.is_handshaking() {
            tls.complete_io(&mut socket).map_err(|error| {
                // rustls reports its own verdict as an I/O error wrapping a `rustls::Error`.
                match error
                    .into_inner()
                    .map(|inner| inner.downcast::<rustls::Error>())
                {
                    Some(Ok(reason)) => *reason,
                    other => rustls::Error::General(format!("{other:?}")),
                }
            })?;
        }
        Ok(())
    })
    .await
    .unwrap()
}

/// Connects over TLS, expecting the connection to be refused: the session tries every host
/// once within its connection timeout and fails with `NoServer`, naming each refusal.
async fn assert_tls_refused(address: &str, ca_pem: &str, identity: Option<&TestCertificate>) {
    let attempt = Session::connect(common::tls_config(address, ca_pem, identity));
    match tokio::time::timeout(Timing::new().forever(), attempt).await {
        Ok(Err(curator_session::Error::NoServer(reasons))) => {
            tracing::debug!(%reasons, "refused, as expected");
        }
        Ok(other) => panic!("a TLS session to {address} was not refused: {other:?}"),
        Err(_) => panic!("connecting to {address} outlasted its connection timeout"),
    }
}

#[tokio::test]
async fn a_tls_client_creates_and_reads_and_plaintext_stays_for_four_letter_words() {
    let certs = TestCertificates::generate().unwrap();
    let server = TestingServer::builder()
        .tls(certs.server_tls())
        .start()
        .await
        .unwrap();
    let address = server.secure_connect_string().unwrap();
    assert_eq!(
        address,
        format!("localhost:{}", server.secure_port().unwrap())
    );
    assert_ne!(server.secure_port(), Some(server.port()));

    let client = tls_connect(&address, certs.ca().cert_pem(), None).await;
    let root = unique_root("tls");
    common::mkdirs(&client, &root).await;
    let path = format!("{root}/node");
    client
        .create(&path, b"over tls", open_acl(), CreateMode::Persistent, None)
        .await
        .unwrap();
    let (data, _) = client.get_data(&path).await.unwrap();
    assert_eq!(data, b"over tls");
    // No client certificate was asked for: the client is anonymous apart from its address.
    let users = client.who_am_i().await.unwrap();
    assert!(
        users.iter().all(|user| user.auth_scheme != "x509"),
        "{users:?}"
    );

    let answer = four_letter_word(&server.connect_string(), "ruok", Timing::new().wait())
        .await
        .unwrap();
    assert_eq!(answer, "imok");
    let config = std::fs::read_to_string(server.data_dir().unwrap().join("zoo.cfg")).unwrap();
    assert!(config.contains("ssl.clientAuth=none"), "{config}");
}

#[tokio::test]
async fn clients_refuse_an_unknown_ca_an_expired_certificate_and_a_wrong_host_name() {
    let certs = TestCertificates::generate().unwrap();
    let good = TestingServer::builder()
        .tls(certs.server_tls())
        .start()
        .await
        .unwrap();
    let good_address = good.secure_connect_string().unwrap();
    assert_tls_refused(&good_address, certs.unknown_ca().cert_pem(), None).await;
    let unknown = handshake(&good_address, certs.unknown_ca().cert_pem()).await;
    assert!(
        matches!(
            unknown,
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer
            ))
        ),
        "{unknown:?}"
    );
    // The same server and CA work: the refusal was the CA's.
    handshake(&good_address, certs.ca().cert_pem())
        .await
        .unwrap();
    tls_connect(&good_address, certs.ca().cert_pem(), None).await;

    for (what, certificate) in [
        ("expired", certs.expired_server()),
        ("wrong host", certs.wrong_host_server()),
    ] {
        let server = TestingServer::builder()
            .tls(ServerTls::new(certs.ca(), certificate))
            .start()
            .await
            .unwrap_or_else(|e| panic!("starting the {what} server: {e}"));
        let address = server.secure_connect_string().unwrap();
        assert_tls_refused(&address, certs.ca().cert_pem(), None).await;
        // The server presents the certificate it was given, and that is why it is refused.
        let reason = handshake(&address, certs.ca().cert_pem()).await;
        let expected = match reason {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::Expired | rustls::CertificateError::ExpiredContext { .. },
            )) => what == "expired",
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => what == "wrong host",
            _ => false,
        };
        assert!(expected, "{what}: {reason:?}");
    }
}

#[tokio::test]
async fn a_client_certificate_is_an_x509_identity_that_acls_name() {
    let certs = TestCertificates::generate().unwrap();
    let server = TestingServer::builder()
        .tls(certs.server_tls().with_client_auth(ClientAuth::Need))
        .start()
        .await
        .unwrap();
    let address = server.secure_connect_string().unwrap();
    let alice_cert = certs.client("alice").unwrap();
    let bob_cert = certs.client("bob").unwrap();

    let alice = tls_connect(&address, certs.ca().cert_pem(), Some(&alice_cert)).await;
    let users = alice.who_am_i().await.unwrap();
    assert!(
        users.contains(&common::identity("x509", "CN=alice")),
        "{users:?}"
    );
    assert_eq!(alice_cert.subject(), "CN=alice");

    // An ACL naming alice's certificate keeps bob out.
    let root = unique_root("x509");
    common::mkdirs(&alice, &root).await;
    let secret = format!("{root}/alice-only");
    let acl = vec![Acl {
        perms: Perms::ALL,
        id: Id::new("x509", alice_cert.subject()),
    }];
    alice
        .create(&secret, b"for alice", acl, CreateMode::Persistent, None)
        .await
        .unwrap();
    assert_eq!(alice.get_data(&secret).await.unwrap().0, b"for alice");
    let bob = tls_connect(&address, certs.ca().cert_pem(), Some(&bob_cert)).await;
    assert_eq!(
        bob.get_data(&secret).await.unwrap_err(),
        curator_session::Error::Server(ErrorCode::NoAuth)
    );

    // `need`: no certificate, or one from an unknown CA, and the handshake fails.
    assert_tls_refused(&address, certs.ca().cert_pem(), None).await;
    let stranger = certs.unknown_ca().client_certificate("mallory").unwrap();
    assert_tls_refused(&address, certs.ca().cert_pem(), Some(&stranger)).await;
}

#[tokio::test]
async fn want_takes_a_certificate_when_offered_and_lets_clients_in_without() {
    let certs = TestCertificates::generate().unwrap();
    let server = TestingServer::builder()
        .tls(certs.server_tls().with_client_auth(ClientAuth::Want))
        .start()
        .await
        .unwrap();
    let address = server.secure_connect_string().unwrap();
    let carol_cert = certs.client("carol").unwrap();
    let carol = tls_connect(&address, certs.ca().cert_pem(), Some(&carol_cert)).await;
    let users = carol.who_am_i().await.unwrap();
    assert!(
        users.contains(&common::identity("x509", "CN=carol")),
        "{users:?}"
    );
    // Without a certificate the client is still let in, anonymously. (ZooKeeper 3.8.0 logs
    // "Unsuccessful handshake" for it, but keeps the connection.)
    let anonymous = tls_connect(&address, certs.ca().cert_pem(), None).await;
    let users = anonymous.who_am_i().await.unwrap();
    assert!(
        users.iter().all(|user| user.auth_scheme != "x509"),
        "{users:?}"
    );
    assert!(anonymous.exists("/").await.unwrap().is_some());
}

#[tokio::test]
async fn restart_keeps_tls_and_the_session() {
    let certs = TestCertificates::generate().unwrap();
    let mut server = TestingServer::builder()
        .tls(certs.server_tls())
        .start()
        .await
        .unwrap();
    let address = server.secure_connect_string().unwrap();
    // Its session timeout (20 s, scaled) outlasts the restart.
    let client = tls_connect(&address, certs.ca().cert_pem(), None).await;
    let root = unique_root("tls-restart");
    common::mkdirs(&client, &root).await;
    let session = client.session_id();

    server.restart().await.unwrap();
    assert_eq!(server.secure_connect_string().unwrap(), address);

    // The client reconnects over TLS to the same session; a new client connects too.
    let (_, stat) = common::retry(|| client.get_data(&root)).await;
    assert!(stat.czxid > 0);
    assert_eq!(client.session_id(), session);
    let fresh = tls_connect(&address, certs.ca().cert_pem(), None).await;
    assert!(fresh.exists(&root).await.unwrap().is_some());
    assert_tls_refused(&address, certs.unknown_ca().cert_pem(), None).await;
}

#[tokio::test]
async fn every_member_of_a_tls_ensemble_serves_tls() {
    let certs = TestCertificates::generate().unwrap();
    let cluster = TestingCluster::builder(3)
        .tls(certs.server_tls())
        .start()
        .await
        .unwrap();
    let all = cluster.secure_connect_string().unwrap();
    assert_eq!(all.split(',').count(), 3);
    assert!(all.split(',').all(|host| host.starts_with("localhost:")));

    let root = unique_root("tls-ensemble");
    let writer = tls_connect(&all, certs.ca().cert_pem(), None).await;
    common::mkdirs(&writer, &root).await;
    for index in 0..cluster.len() {
        let member = cluster.member_secure_connect_string(index).unwrap();
        let client = tls_connect(&member, certs.ca().cert_pem(), None).await;
        let path = format!("{root}/from-member-{index}");
        client
            .create(
                &path,
                member.as_bytes(),
                open_acl(),
                CreateMode::Persistent,
                None,
            )
            .await
            .unwrap();
        client.sync(&path).await.unwrap();
        assert_eq!(client.get_data(&path).await.unwrap().0, member.as_bytes());
        assert_tls_refused(&member, certs.unknown_ca().cert_pem(), None).await;
    }
    assert_eq!(writer.get_children(&root).await.unwrap().0.len(), 3);

    // A restarted member serves TLS again on the same port.
    let mut cluster = cluster;
    let member = cluster.member_secure_connect_string(0).unwrap();
    cluster.restart(0).await.unwrap();
    assert_eq!(cluster.member_secure_connect_string(0).unwrap(), member);
    let client = tls_connect(&member, certs.ca().cert_pem(), None).await;
    assert_eq!(client.get_children(&root).await.unwrap().0.len(), 3);
}
