//! Sessions with secured servers, all real: TLS (rustls) against ZooKeeper's Netty TLS port with
//! certificates made at test time, x509 identities, SASL DIGEST-MD5 against a JAAS-configured
//! server, and (feature `gssapi`) Kerberos against a real MIT KDC.

use std::sync::Arc;
use std::time::Duration;

use curator_session::proto::{Acl, CreateMode, ErrorCode, Id, Perms};
use curator_session::{
    Error, Sasl, Session, SessionConfig, SessionState, StateChanges, TlsConnector, open_acl,
};
use curator_test::{
    ClientAuth, FaultProxy, ServerSasl, ServerTls, TestCertificate, TestCertificates,
    TestingServer, Timing, unique_root,
};

/// A session configuration for `connect`. No test here is about expiry: the session timeout
/// is long enough for a server restart, and each connection attempt (a server gets the whole
/// session timeout when it is alone in the list) may take long. A JVM's first TLS handshake
/// loads its key store and warms its TLS code: over half a second on an idle machine, several
/// seconds with other JVMs starting beside it. Refusals come at once all the same.
fn config(connect: &str) -> SessionConfig {
    let timing = Timing::new();
    SessionConfig::new(connect)
        .unwrap()
        .session_timeout(timing.scale(Duration::from_secs(20)))
        .connection_timeout(timing.wait())
}

/// A TLS connector that trusts `ca` (PEM), presents `identity` if given, and checks that the
/// server's certificate names the host connected to when `verify_hostname`.
fn tls(ca: &str, identity: Option<&TestCertificate>, verify_hostname: bool) -> Arc<TlsConnector> {
    Arc::new(TlsConnector::new(tls_config(ca, identity, verify_hostname)))
}

fn tls_config(
    ca: &str,
    identity: Option<&TestCertificate>,
    verify_hostname: bool,
) -> Arc<rustls::ClientConfig> {
    TlsConnector::config_from_pem(
        ca,
        identity.map(|i| (i.cert_pem(), i.key_pem())),
        verify_hostname,
    )
    .unwrap()
}

/// The session's identities as `scheme:user`.
async fn identities(session: &Session) -> Vec<String> {
    session
        .who_am_i()
        .await
        .unwrap()
        .into_iter()
        .map(|info| format!("{}:{}", info.auth_scheme, info.user))
        .collect()
}

/// Expects the connection to be refused: `Error::NoServer` whose reasons contain `why`, after
/// one round over the servers.
async fn assert_refused(config: SessionConfig, why: &str) {
    match Session::connect(config.one_connect_round(true)).await {
        Err(Error::NoServer(reasons)) => assert!(reasons.contains(why), "{why:?} in {reasons}"),
        Err(other) => panic!("refused for another reason than {why:?}: {other:?}"),
        Ok(session) => panic!("a session was made: {session:?}"),
    }
}

/// Creates `root` (and the shared parent of test roots).
async fn create_root(session: &Session, root: &str) {
    let parent = &root[..root.rfind('/').unwrap()];
    match session
        .create(parent, b"", open_acl(), CreateMode::Persistent, None)
        .await
    {
        Ok(_) | Err(Error::Server(ErrorCode::NodeExists)) => {}
        Err(error) => panic!("{error}"),
    }
    session
        .create(root, b"", open_acl(), CreateMode::Persistent, None)
        .await
        .unwrap();
}

/// Waits until the session lost its connection and has a new one.
async fn await_reconnected(states: &mut StateChanges) {
    let mut seen = Vec::new();
    let wait = async {
        while !seen.contains(&SessionState::Disconnected)
            || seen.last() != Some(&SessionState::Connected)
        {
            match states.next().await {
                Some(state) => seen.push(state),
                None => break,
            }
        }
    };
    tokio::time::timeout(Timing::new().forever(), wait)
        .await
        .unwrap_or_else(|_| panic!("no reconnection; states seen: {seen:?}"));
    assert_eq!(seen.last(), Some(&SessionState::Connected), "{seen:?}");
}

// ---- TLS ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_over_tls_round_trips_and_an_unknown_ca_is_refused() {
    let certs = TestCertificates::generate().unwrap();
    let server = TestingServer::builder()
        .tls(certs.server_tls())
        .start()
        .await
        .unwrap();
    let address = server.secure_connect_string().unwrap();
    let session =
        Session::connect(config(&address).connector(tls(certs.ca().cert_pem(), None, true)))
            .await
            .unwrap();
    let root = unique_root("secured-tls");
    create_root(&session, &root).await;
    let path = format!("{root}/node");
    session
        .create(&path, b"over tls", open_acl(), CreateMode::Persistent, None)
        .await
        .unwrap();
    assert_eq!(session.get_data(&path).await.unwrap().0, b"over tls");
    // No certificate was asked for: no x509 identity.
    let ids = identities(&session).await;
    assert!(ids.iter().all(|id| !id.starts_with("x509:")), "{ids:?}");
    session.close().await.unwrap();

    // The same server, trusted through a CA that did not sign its certificate.
    assert_refused(
        config(&address).connector(tls(certs.unknown_ca().cert_pem(), None, true)),
        "UnknownIssuer",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_gives_an_x509_identity() {
    let certs = TestCertificates::generate().unwrap();
    let server = TestingServer::builder()
        .tls(certs.server_tls().with_client_auth(ClientAuth::Need))
        .start()
        .await
        .unwrap();
    let address = server.secure_connect_string().unwrap();
    let alice = certs.client("alice").unwrap();
    let session = Session::connect(config(&address).connector(tls(
        certs.ca().cert_pem(),
        Some(&alice),
        true,
    )))
    .await
    .unwrap();
    let ids = identities(&session).await;
    assert!(
        ids.contains(&format!("x509:{}", alice.subject())),
        "{ids:?}"
    );
    assert_eq!(alice.subject(), "CN=alice");
    session.close().await.unwrap();

    // The server needs a certificate: without one there is no session.
    match Session::connect(config(&address).connector(tls(certs.ca().cert_pem(), None, true))).await
    {
        Err(Error::NoServer(_)) => {}
        other => panic!("a session without a certificate: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostname_verification_refuses_the_wrong_host_and_off_accepts_it() {
    let certs = TestCertificates::generate().unwrap();
    let server = TestingServer::builder()
        .tls(ServerTls::new(certs.ca(), certs.wrong_host_server()))
        .start()
        .await
        .unwrap();
    let address = server.secure_connect_string().unwrap();
    assert_refused(
        config(&address).connector(tls(certs.ca().cert_pem(), None, true)),
        "not valid for name",
    )
    .await;
    // Off: the chain is still checked (the CA signed it), only the name is not.
    let session =
        Session::connect(config(&address).connector(tls(certs.ca().cert_pem(), None, false)))
            .await
            .unwrap();
    assert!(session.exists("/").await.unwrap().is_some());
    session.close().await.unwrap();
    // Off does not mean trusting anyone.
    assert_refused(
        config(&address).connector(tls(certs.unknown_ca().cert_pem(), None, false)),
        "UnknownIssuer",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_server_certificate_is_refused_with_or_without_hostname_verification() {
    let certs = TestCertificates::generate().unwrap();
    let server = TestingServer::builder()
        .tls(ServerTls::new(certs.ca(), certs.expired_server()))
        .start()
        .await
        .unwrap();
    let address = server.secure_connect_string().unwrap();
    for verify_hostname in [true, false] {
        assert_refused(
            config(&address).connector(tls(certs.ca().cert_pem(), None, verify_hostname)),
            "certificate expired",
        )
        .await;
    }
}

/// `TlsConnector::reload` changes what the next connection presents: the same session, cut
/// from its server by the fault proxy, comes back with the new client certificate's identity.
/// A configuration that cannot work reloaded before a new session refuses it, and reloading a
/// good one lets the next attempt in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_applies_to_the_next_connection() {
    let certs = TestCertificates::generate().unwrap();
    let server = TestingServer::builder()
        .tls(certs.server_tls().with_client_auth(ClientAuth::Need))
        .start()
        .await
        .unwrap();
    // The proxy listens on 127.0.0.1, which the server certificate names too.
    let proxy = FaultProxy::start(&server.secure_connect_string().unwrap())
        .await
        .unwrap();
    let alice = certs.client("alice").unwrap();
    let bob = certs.client("bob").unwrap();
    let connector = Arc::new(TlsConnector::new(tls_config(
        certs.ca().cert_pem(),
        Some(&alice),
        true,
    )));
    let session = Session::connect(config(&proxy.connect_string()).connector(connector.clone()))
        .await
        .unwrap();
    assert!(
        identities(&session)
            .await
            .contains(&"x509:CN=alice".to_owned())
    );
    let id = session.session_id();

    connector.reload(tls_config(certs.ca().cert_pem(), Some(&bob), true));
    // The current connection keeps what it was made with.
    assert!(
        identities(&session)
            .await
            .contains(&"x509:CN=alice".to_owned())
    );
    let mut states = session.state_changes();
    proxy.drop_connections();
    await_reconnected(&mut states).await;
    let ids = identities(&session).await;
    assert!(ids.contains(&"x509:CN=bob".to_owned()), "{ids:?}");
    assert!(!ids.contains(&"x509:CN=alice".to_owned()), "{ids:?}");
    assert_eq!(session.session_id(), id);
    session.close().await.unwrap();

    // The same connector for new sessions: trust only the unknown CA, then the right one.
    connector.reload(tls_config(certs.unknown_ca().cert_pem(), Some(&bob), true));
    assert_refused(
        config(&proxy.connect_string()).connector(connector.clone()),
        "UnknownIssuer",
    )
    .await;
    connector.reload(tls_config(certs.ca().cert_pem(), Some(&alice), true));
    let session = Session::connect(config(&proxy.connect_string()).connector(connector))
        .await
        .unwrap();
    assert!(
        identities(&session)
            .await
            .contains(&"x509:CN=alice".to_owned())
    );
    session.close().await.unwrap();
}

// ---- SASL DIGEST-MD5 ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_md5_logs_in_with_the_right_password_only() {
    let server = TestingServer::builder()
        .sasl(
            ServerSasl::digest_md5()
                .with_user("alice", "alice-secret")
                // Quotes and backslashes in the password.
                .with_user("bob", r#"b"o\b"#),
        )
        .start()
        .await
        .unwrap();
    let address = server.connect_string();
    let alice = Session::connect(config(&address).sasl(Sasl::digest_md5("alice", "alice-secret")))
        .await
        .unwrap();
    let ids = identities(&alice).await;
    assert!(ids.contains(&"sasl:alice".to_owned()), "{ids:?}");
    let bob = Session::connect(config(&address).sasl(Sasl::digest_md5("bob", r#"b"o\b"#)))
        .await
        .unwrap();
    assert!(identities(&bob).await.contains(&"sasl:bob".to_owned()));

    // An ACL naming sasl:alice keeps bob out.
    let root = unique_root("secured-digest");
    create_root(&alice, &root).await;
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
    assert_eq!(
        bob.get_data(&secret).await,
        Err(Error::Server(ErrorCode::NoAuth))
    );
    alice.close().await.unwrap();
    bob.close().await.unwrap();

    // A wrong password, and an unknown user with a password of its own (not another user's:
    // see curator-test's README on ZooKeeper 3.8.0's shared callback handler).
    for (user, password) in [("alice", "not-her-password"), ("mallory", "mallory-secret")] {
        let refused =
            Session::connect(config(&address).sasl(Sasl::digest_md5(user, password))).await;
        assert!(
            matches!(refused, Err(Error::AuthFailed(_))),
            "{user}: {refused:?}"
        );
    }
}

/// An enforcing server answers a failed login with `SessionClosedRequireSaslAuth`, not
/// `AuthFailed`: still a refused login. And a session logs in again on every new connection:
/// after a server restart, its identity is still there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enforcing_server_refuses_a_wrong_password_and_a_session_logs_in_again_after_a_restart()
{
    let mut server = TestingServer::builder()
        .sasl(
            ServerSasl::digest_md5()
                .with_user("alice", "alice-secret")
                .enforced(),
        )
        .start()
        .await
        .unwrap();
    let address = server.connect_string();
    let refused = Session::connect(config(&address).sasl(Sasl::digest_md5("alice", "wrong"))).await;
    assert!(matches!(refused, Err(Error::AuthFailed(_))), "{refused:?}");

    let session =
        Session::connect(config(&address).sasl(Sasl::digest_md5("alice", "alice-secret")))
            .await
            .unwrap();
    assert!(
        identities(&session)
            .await
            .contains(&"sasl:alice".to_owned())
    );
    let id = session.session_id();
    let mut states = session.state_changes();
    server.restart().await.unwrap();
    await_reconnected(&mut states).await;
    assert_eq!(session.session_id(), id);
    let ids = identities(&session).await;
    assert!(ids.contains(&"sasl:alice".to_owned()), "{ids:?}");
    assert!(session.exists("/").await.unwrap().is_some());
    session.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_over_tls_with_a_client_certificate_gives_both_identities() {
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
    let app = certs.client("alice-app").unwrap();
    let session = Session::connect(
        config(&server.secure_connect_string().unwrap())
            .connector(tls(certs.ca().cert_pem(), Some(&app), true))
            .sasl(Sasl::digest_md5("alice", "alice-secret")),
    )
    .await
    .unwrap();
    let ids = identities(&session).await;
    for expected in ["sasl:alice", "x509:CN=alice-app"] {
        assert!(ids.contains(&expected.to_owned()), "{ids:?}");
    }
    session.close().await.unwrap();
}

// ---- Kerberos ----

/// Kerberos (SASL GSSAPI) with a real MIT KDC. MIT Kerberos takes its configuration and ticket
/// cache from the process's environment (`KRB5_CONFIG`, `KRB5CCNAME`), which a test cannot
/// change safely for itself, so each scenario runs in a child process: this test binary again,
/// running only [`child`] with the KDC's client environment.
#[cfg(feature = "gssapi")]
mod kerberos {
    use std::process::Output;

    use super::*;
    use curator_test::{KerberosPrincipal, TestingKdc};

    const MODE: &str = "CURATOR_SESSION_KERBEROS_CHILD";
    /// The server as `localhost:<port>` (its principal is `zookeeper/localhost`).
    const ADDRESS: &str = "CURATOR_SESSION_KERBEROS_ADDRESS";
    /// The server as `127.0.0.1:<port>`, for a proxy in front of it.
    const PLAIN: &str = "CURATOR_SESSION_KERBEROS_PLAIN";
    const ROOT: &str = "CURATOR_SESSION_KERBEROS_ROOT";

    /// Runs [`child`] in `mode` with `env` (a KDC's client environment) against `server`.
    async fn run_child(
        mode: &str,
        env: Vec<(String, String)>,
        server: &TestingServer,
        root: &str,
    ) -> Output {
        let child = tokio::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "kerberos::child",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env_remove("KRB5_CONFIG")
            .env_remove("KRB5CCNAME")
            .env_remove("KRB5_CLIENT_KTNAME")
            .envs(env)
            .env(MODE, mode)
            .env(ADDRESS, server.localhost_connect_string().unwrap())
            .env(PLAIN, server.connect_string())
            .env(ROOT, root)
            .kill_on_drop(true)
            .output();
        tokio::time::timeout(Timing::new().forever(), child)
            .await
            .expect("the child did not finish")
            .unwrap()
    }

    fn assert_child_passed(mode: &str, output: &Output, kdc: &TestingKdc) {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        println!("{mode}:\n{stdout}");
        assert!(
            output.status.success() && stdout.contains(&format!("KERBEROS CHILD PASSED {mode}")),
            "{mode}:\n{stdout}\n{stderr}\nKDC log:\n{}",
            kdc.log_tail()
        );
    }

    async fn kerberos_server(kdc: &TestingKdc) -> (TestingServer, KerberosPrincipal) {
        let server = TestingServer::builder()
            .sasl(ServerSasl::kerberos(kdc).unwrap())
            .start()
            .await
            .unwrap();
        (server, kdc.add_principal("alice").unwrap())
    }

    /// The session logs in as alice (`sasl:alice@EXAMPLE.COM`), its ACL keeps others out, and
    /// it logs in again on a new connection.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_kerberos_login_gives_the_principal_identity_on_every_connection() {
        let kdc = TestingKdc::start().await.unwrap();
        let (server, alice) = kerberos_server(&kdc).await;
        let root = unique_root("secured-kerberos");
        let output = run_child("login", kdc.client_env(&alice).unwrap(), &server, &root).await;
        assert_child_passed("login", &output, &kdc);

        // What alice made is there, and its ACL keeps an anonymous session out.
        let anonymous = Session::connect(config(&server.connect_string()))
            .await
            .unwrap();
        let secret = format!("{root}/alice-only");
        // ZOOKEEPER-2590 (3.8.4, 3.9.2): `exists` needs READ permission too on such servers.
        let stat_refused = server
            .server_version()
            .await
            .unwrap()
            .exists_checks_read_permission();
        let exists = anonymous.exists(&secret).await;
        if stat_refused {
            assert_eq!(exists, Err(Error::Server(ErrorCode::NoAuth)));
        } else {
            assert!(exists.unwrap().is_some());
        }
        assert_eq!(
            anonymous.get_data(&secret).await,
            Err(Error::Server(ErrorCode::NoAuth))
        );
        anonymous.close().await.unwrap();
    }

    /// Without a ticket, or asking for a service the KDC does not know, the login fails at
    /// once with `AuthFailed` naming why (not a hang, not a connection error to retry).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_missing_ticket_or_an_unknown_service_fails_with_auth_failed() {
        let kdc = TestingKdc::start().await.unwrap();
        let (server, alice) = kerberos_server(&kdc).await;
        let root = unique_root("secured-kerberos-fail");
        // The realm's configuration, but an empty ticket cache and no keytab.
        let no_ticket = vec![
            (
                "KRB5_CONFIG".to_owned(),
                kdc.krb5_conf().display().to_string(),
            ),
            (
                "KRB5CCNAME".to_owned(),
                format!("FILE:{}", kdc.dir().join("no-such-cache").display()),
            ),
        ];
        let (missing, unknown) = tokio::join!(
            run_child("no-ticket", no_ticket, &server, &root),
            run_child(
                "unknown-service",
                kdc.client_env(&alice).unwrap(),
                &server,
                &root
            ),
        );
        assert_child_passed("no-ticket", &missing, &kdc);
        assert_child_passed("unknown-service", &unknown, &kdc);
    }

    /// Not a test by itself: the child half of the tests above, which run it with a KDC's
    /// environment. Run directly, without that environment, it does nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn child() {
        let Ok(mode) = std::env::var(MODE) else {
            return;
        };
        let localhost = std::env::var(ADDRESS).unwrap();
        let plain = std::env::var(PLAIN).unwrap();
        let root = std::env::var(ROOT).unwrap();
        match mode.as_str() {
            "login" => login(&localhost, &plain, &root).await,
            "no-ticket" => {
                let refused =
                    Session::connect(config(&localhost).sasl(Sasl::gssapi("zookeeper", None)))
                        .await;
                match refused {
                    Err(Error::AuthFailed(why)) => {
                        assert!(why.contains("credentials"), "{why}");
                        println!("refused: {why}");
                    }
                    other => panic!("without a ticket: {other:?}"),
                }
            }
            "unknown-service" => {
                let refused = Session::connect(
                    config(&localhost).sasl(Sasl::gssapi("zookeeper", Some("unknown-host".into()))),
                )
                .await;
                match refused {
                    Err(Error::AuthFailed(why)) => {
                        assert!(why.contains("zookeeper@unknown-host"), "{why}");
                        assert!(why.contains("not found in Kerberos database"), "{why}");
                        println!("refused: {why}");
                    }
                    other => panic!("an unknown service: {other:?}"),
                }
            }
            other => panic!("unknown mode {other}"),
        }
        println!("KERBEROS CHILD PASSED {mode}");
    }

    async fn login(localhost: &str, plain: &str, root: &str) {
        let session = Session::connect(config(localhost).sasl(Sasl::gssapi("zookeeper", None)))
            .await
            .unwrap_or_else(|e| panic!("GSSAPI login to {localhost}: {e}"));
        let ids = identities(&session).await;
        println!("identities: {ids:?}");
        assert!(
            ids.contains(&"sasl:alice@EXAMPLE.COM".to_owned()),
            "{ids:?}"
        );
        create_root(&session, root).await;
        let acl = vec![Acl {
            perms: Perms::ALL,
            id: Id::new("sasl", "alice@EXAMPLE.COM"),
        }];
        let secret = format!("{root}/alice-only");
        session
            .create(&secret, b"kerberos", acl, CreateMode::Persistent, None)
            .await
            .unwrap();
        assert_eq!(session.get_data(&secret).await.unwrap().0, b"kerberos");
        session.close().await.unwrap();

        // Through a proxy at 127.0.0.1 (so the server's host is named explicitly): the
        // connection is cut, and the session logs in again on the next one.
        let proxy = FaultProxy::start(plain).await.unwrap();
        let session = Session::connect(
            config(&proxy.connect_string())
                .sasl(Sasl::gssapi("zookeeper", Some("localhost".into()))),
        )
        .await
        .unwrap();
        assert!(
            identities(&session)
                .await
                .contains(&"sasl:alice@EXAMPLE.COM".to_owned())
        );
        let id = session.session_id();
        let mut states = session.state_changes();
        proxy.drop_connections();
        await_reconnected(&mut states).await;
        assert_eq!(session.session_id(), id);
        assert!(
            identities(&session)
                .await
                .contains(&"sasl:alice@EXAMPLE.COM".to_owned())
        );
        assert_eq!(session.get_data(&secret).await.unwrap().0, b"kerberos");
        session.close().await.unwrap();
    }
}
