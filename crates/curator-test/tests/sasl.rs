//! SASL DIGEST-MD5 servers against real ZooKeeper processes.

mod common;

use curator_session::proto::{Acl, CreateMode, ErrorCode, Id, Perms};
use curator_session::{Sasl, Session, SessionConfig, SessionState};
use curator_test::{
    ClientAuth, Error, ServerSasl, TestCertificates, TestingCluster, TestingServer, Timing,
    unique_root,
};

/// A session configuration for `address` that logs in with DIGEST-MD5.
fn digest_config(address: &str, user: &str, password: &str) -> SessionConfig {
    common::config(address, Timing::new().session_timeout()).sasl(Sasl::digest_md5(user, password))
}

/// Connects with DIGEST-MD5.
async fn digest_connect(
    address: &str,
    user: &str,
    password: &str,
) -> Result<Session, curator_session::Error> {
    common::try_connect(digest_config(address, user, password)).await
}

/// Connects to `address`, a server that enforces SASL, without logging in, and asserts that
/// ZooKeeper refuses the session: it answers the session's first request with
/// `SessionClosedRequireSaslAuth` (the session reports `AuthFailed`) and closes it.
async fn assert_anonymous_refused(address: &str, context: &str) {
    let anonymous = common::connect(address, Timing::new().session_timeout()).await;
    let refused = anonymous.exists("/").await;
    assert!(
        matches!(refused, Err(curator_session::Error::AuthFailed(_))),
        "{context}: {refused:?}"
    );
    assert_eq!(anonymous.state(), SessionState::AuthFailed, "{context}");
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
    let alice = digest_connect(&server.connect_string(), "alice", "alice-secret")
        .await
        .unwrap();
    let users = alice.who_am_i().await.unwrap();
    assert!(
        users.contains(&common::identity("sasl", "alice")),
        "{users:?}"
    );
    let bob = digest_connect(&server.connect_string(), "bob", r#"b"o\b"#)
        .await
        .unwrap();
    assert!(
        bob.who_am_i()
            .await
            .unwrap()
            .contains(&common::identity("sasl", "bob"))
    );

    // An ACL naming `sasl:alice` keeps bob and anonymous clients out.
    let root = unique_root("sasl");
    common::mkdirs(&alice, &root).await;
    let secret = format!("{root}/alice-only");
    let acl = vec![Acl {
        perms: Perms::ALL,
        id: Id::new("sasl", "alice"),
    }];
    alice
        .create(&secret, b"for alice", acl, CreateMode::Persistent, None)
        .await
        .unwrap();
    assert_eq!(alice.get_data(&secret).await.unwrap().0, b"for alice");
    let no_auth = curator_session::Error::Server(ErrorCode::NoAuth);
    assert_eq!(bob.get_data(&secret).await.unwrap_err(), no_auth);
    let anonymous =
        common::connect(&server.connect_string(), Timing::new().session_timeout()).await;
    assert_eq!(anonymous.get_data(&secret).await.unwrap_err(), no_auth);

    let wrong = digest_connect(&server.connect_string(), "alice", "not-her-password").await;
    assert!(
        matches!(wrong, Err(curator_session::Error::AuthFailed(_))),
        "{wrong:?}"
    );
    // An unknown user with a password of its own. (Not another user's password: ZooKeeper
    // 3.8.0's `SaslServerCallbackHandler` is shared by all connections and remembers the last
    // known user name, so an unknown user presenting *that* user's password is accepted under
    // the unknown name. See the README.)
    let unknown = digest_connect(&server.connect_string(), "mallory", "mallory-secret").await;
    assert!(
        matches!(unknown, Err(curator_session::Error::AuthFailed(_))),
        "{unknown:?}"
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
        let alice = digest_connect(&server.connect_string(), "alice", "alice-secret")
            .await
            .unwrap_or_else(|e| panic!("{round}: {e}"));
        assert!(alice.exists("/").await.unwrap().is_some(), "{round}");

        // ZooKeeper refuses the session; the session reports it as an authentication failure.
        assert_anonymous_refused(&server.connect_string(), round).await;
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
        let alice = digest_connect(&member, "alice", "alice-secret")
            .await
            .unwrap_or_else(|e| panic!("member {index}: {e}"));
        assert!(
            alice
                .who_am_i()
                .await
                .unwrap()
                .contains(&common::identity("sasl", "alice"))
        );
        assert_anonymous_refused(&member, &format!("member {index}")).await;
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
    let client = common::connect_with(
        common::tls_config(
            &server.secure_connect_string().unwrap(),
            certs.ca().cert_pem(),
            Some(&identity),
        )
        .sasl(Sasl::digest_md5("alice", "alice-secret")),
    )
    .await;
    let users = client.who_am_i().await.unwrap();
    for expected in [
        common::identity("sasl", "alice"),
        common::identity("x509", "CN=alice-app"),
    ] {
        assert!(users.contains(&expected), "{users:?}");
    }
}
