//! SASL DIGEST-MD5 servers against real ZooKeeper processes.

mod common;

use curator_test::{
    ClientAuth, Error, ServerSasl, TestCertificates, TestingCluster, TestingServer, Timing,
    unique_root,
};
use zookeeper_client as zk;

fn digest_connector(user: &str, password: &str) -> zk::Connector {
    zk::Client::connector()
        .with_session_timeout(Timing::new().session_timeout())
        .with_connection_timeout(Timing::new().connection_timeout())
        .with_sasl(zk::SaslOptions::digest_md5(
            user.to_owned(),
            password.to_owned(),
        ))
}

#[tokio::test]
async fn the_right_password_logs_in_and_a_wrong_one_is_refused() {
    let server = TestingServer::builder()
        .sasl(
            ServerSasl::digest_md5()
                .with_user("alice", "alice-secret")
                // Quotes and backslashes survive the JAAS file.
                .with_user("bob", r#"b"o\b"#),
        )
        .start()
        .await
        .unwrap();
    let alice = digest_connector("alice", "alice-secret")
        .connect(&server.connect_string())
        .await
        .unwrap();
    let users = alice.list_auth_users().await.unwrap();
    assert!(
        users.contains(&zk::AuthUser::new("sasl", "alice")),
        "{users:?}"
    );
    let bob = digest_connector("bob", r#"b"o\b"#)
        .connect(&server.connect_string())
        .await
        .unwrap();
    assert!(
        bob.list_auth_users()
            .await
            .unwrap()
            .contains(&zk::AuthUser::new("sasl", "bob"))
    );

    // An ACL naming `sasl:alice` keeps bob and anonymous clients out.
    let root = unique_root("sasl");
    common::mkdirs(&alice, &root).await;
    let secret = format!("{root}/alice-only");
    let acl = [zk::Acl::new(
        zk::Permission::ALL,
        zk::AuthId::new("sasl", "alice"),
    )];
    alice
        .create(
            &secret,
            b"for alice",
            &zk::CreateMode::Persistent.with_acls(zk::Acls::new(&acl)),
        )
        .await
        .unwrap();
    assert_eq!(alice.get_data(&secret).await.unwrap().0, b"for alice");
    assert_eq!(bob.get_data(&secret).await.unwrap_err(), zk::Error::NoAuth);
    let anonymous =
        common::connect(&server.connect_string(), Timing::new().session_timeout()).await;
    assert_eq!(
        anonymous.get_data(&secret).await.unwrap_err(),
        zk::Error::NoAuth
    );

    let wrong = digest_connector("alice", "not-her-password")
        .connect(&server.connect_string())
        .await;
    assert!(
        matches!(wrong, Err(zk::Error::AuthFailed)),
        "{:?}",
        wrong.map(|_| ())
    );
    // An unknown user with a password of its own. (Not another user's password: ZooKeeper
    // 3.8.0's `SaslServerCallbackHandler` is shared by all connections and remembers the last
    // known user name, so an unknown user presenting *that* user's password is accepted under
    // the unknown name. See the README.)
    let unknown = digest_connector("mallory", "mallory-secret")
        .connect(&server.connect_string())
        .await;
    assert!(
        matches!(unknown, Err(zk::Error::AuthFailed)),
        "{:?}",
        unknown.map(|_| ())
    );
}

#[tokio::test]
async fn an_enforced_server_refuses_unauthenticated_clients_and_restarts_enforced() {
    let mut server = TestingServer::builder()
        .sasl(
            ServerSasl::digest_md5()
                .with_user("alice", "alice-secret")
                .enforced(),
        )
        .start()
        .await
        .unwrap();
    for round in ["before restart", "after restart"] {
        let alice = digest_connector("alice", "alice-secret")
            .connect(&server.connect_string())
            .await
            .unwrap_or_else(|e| panic!("{round}: {e}"));
        assert!(alice.check_stat("/").await.unwrap().is_some(), "{round}");

        // ZooKeeper refuses the session; the wire client reports it as an authentication
        // failure.
        let anonymous = zk::Client::connector()
            .with_session_timeout(Timing::new().session_timeout())
            .with_connection_timeout(Timing::new().connection_timeout())
            .connect(&server.connect_string())
            .await;
        assert!(
            matches!(anonymous, Err(zk::Error::AuthFailed)),
            "{round}: {:?}",
            anonymous.map(|_| ())
        );
        if round == "before restart" {
            server.restart().await.unwrap();
        }
    }
}

#[tokio::test]
async fn invalid_user_names_are_reported_at_start() {
    let refused = TestingServer::builder()
        .sasl(ServerSasl::digest_md5().with_user("no spaces", "x"))
        .start()
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, Error::InvalidArgument(message) if message.contains("no spaces")),
        "{refused}"
    );
}

#[tokio::test]
async fn every_member_of_an_enforced_ensemble_authenticates_digest_users() {
    let cluster = TestingCluster::builder(3)
        .sasl(
            ServerSasl::digest_md5()
                .with_user("alice", "alice-secret")
                .enforced(),
        )
        .start()
        .await
        .unwrap();
    for index in 0..cluster.len() {
        let member = cluster.member_connect_string(index);
        let alice = digest_connector("alice", "alice-secret")
            .connect(&member)
            .await
            .unwrap_or_else(|e| panic!("member {index}: {e}"));
        assert!(
            alice
                .list_auth_users()
                .await
                .unwrap()
                .contains(&zk::AuthUser::new("sasl", "alice"))
        );
        let anonymous = zk::Client::connector()
            .with_session_timeout(Timing::new().session_timeout())
            .with_connection_timeout(Timing::new().connection_timeout())
            .connect(&member)
            .await;
        assert!(
            matches!(anonymous, Err(zk::Error::AuthFailed)),
            "member {index}: {:?}",
            anonymous.map(|_| ())
        );
    }
}

#[tokio::test]
async fn a_tls_client_with_a_certificate_also_logs_in_with_sasl() {
    let certs = TestCertificates::generate().unwrap();
    let server = TestingServer::builder()
        .tls(certs.server_tls().with_client_auth(ClientAuth::Need))
        .sasl(
            ServerSasl::digest_md5()
                .with_user("alice", "alice-secret")
                .enforced(),
        )
        .start()
        .await
        .unwrap();
    let identity = certs.client("alice-app").unwrap();
    let tls = zk::TlsOptions::new()
        .with_pem_ca(certs.ca().cert_pem())
        .unwrap()
        .with_pem_identity(identity.cert_pem(), identity.key_pem())
        .unwrap();
    let client = digest_connector("alice", "alice-secret")
        .with_tls(tls)
        .secure_connect(&server.secure_connect_string().unwrap())
        .await
        .unwrap();
    let users = client.list_auth_users().await.unwrap();
    for expected in [
        zk::AuthUser::new("sasl", "alice"),
        zk::AuthUser::new("x509", "CN=alice-app"),
    ] {
        assert!(users.contains(&expected), "{users:?}");
    }
}
