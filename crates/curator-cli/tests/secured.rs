//! The security flags against real secured servers: TLS with client certificates (x509), SASL
//! DIGEST-MD5 and (with the `kerberos` feature) Kerberos, each through its flags and its
//! environment variables; and the failures each must report at once, with exit code 3 and what
//! is wrong (or 2 for files that cannot be used).
//!
//! Failing connections run with a ten-minute `--connection-timeout`, far beyond the harness's
//! deadline for a process to exit: a failure that only came with the timeout would fail the
//! test, and the message must name the certificate or the login, never the timeout.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use curator_test::{
    ClientAuth, ServerSasl, ServerTls, TestCertificates, TestingServer, unique_root,
};
use serde_json::{Value, json};
use support::{curator, curator_env, run, text};

/// Far longer than any wait of the harness: an answer must come from the failure itself.
const PATIENT: [&str; 2] = ["--connection-timeout", "10m"];

fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

/// Asserts the process exited with `code`; returns its stdout.
fn exited(output: &Output, code: i32) -> String {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}

/// Asserts the process failed with `code` and one line on stderr, `curator: ...` holding each
/// of `expected`; returns the line.
fn failed(output: &Output, code: i32, expected: &[&str]) -> String {
    exited(output, code);
    let stderr = text(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected: {stderr}");
    let line = lines[0];
    assert!(line.starts_with("curator: "), "{line}");
    for expected in expected {
        assert!(line.contains(expected), "{expected:?} not in: {line}");
    }
    // A refused certificate or login is said as such, not as a wait that ran out.
    assert!(!line.contains(" within "), "{line}");
    assert!(!line.contains("internal error"), "{line}");
    line.to_owned()
}

/// The identities `curator whoami` printed, one per line.
fn identities(output: &Output) -> Vec<String> {
    exited(output, 0).lines().map(str::to_owned).collect()
}

/// The identities of `curator whoami --json`.
fn json_identities(output: &Output) -> Vec<Value> {
    let stdout = exited(output, 0);
    let value: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|error| panic!("not JSON ({error}): {stdout}"));
    value.as_array().expect("a JSON array").clone()
}

fn with_env(mut command: Command, variables: &[(&str, &str)]) -> Command {
    for (name, value) in variables {
        command.env(name, value);
    }
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_is_the_x509_identity_through_flags_or_environment() {
    let certs = TestCertificates::generate().unwrap();
    let files = certs.write_to_temp_dir().unwrap();
    let alice = certs
        .client("alice")
        .unwrap()
        .write_pem(files.dir(), "alice")
        .unwrap();
    let bob = certs
        .client("bob")
        .unwrap()
        .write_pem(files.dir(), "bob")
        .unwrap();
    let server = TestingServer::builder()
        .tls(certs.server_tls().with_client_auth(ClientAuth::Need))
        .start()
        .await
        .unwrap();
    let secure = server.secure_connect_string().unwrap();
    let (ca, cert, key) = (path(files.ca()), path(&alice.cert), path(&alice.key));
    let tls = |args: &[&str]| {
        let mut all = vec!["--tls-ca", ca, "--tls-cert", cert, "--tls-key", key];
        all.extend_from_slice(args);
        run(curator(&secure, &all))
    };

    let me = identities(&tls(&["whoami"]));
    assert!(me.iter().any(|id| id == "x509:CN=alice"), "{me:?}");
    let me = json_identities(&tls(&["whoami", "--json"]));
    assert!(
        me.contains(&json!({ "scheme": "x509", "id": "CN=alice" })),
        "{me:?}"
    );

    // Ordinary commands work over TLS.
    let root = unique_root("cli-tls");
    let node = format!("{root}/node");
    assert_eq!(
        exited(&tls(&["create", "--parents", &node, "over tls"]), 0).trim(),
        node
    );
    assert_eq!(exited(&tls(&["get", &node]), 0).trim(), "over tls");
    assert_eq!(exited(&tls(&["ls", &root]), 0).trim(), "node");

    // The same settings from the environment, the address included.
    let environment = [
        ("ZK_TLS_CA", ca),
        ("ZK_TLS_CERT", cert),
        ("ZK_TLS_KEY", key),
    ];
    let me = identities(&run(with_env(
        curator_env(Some(&secure), &["whoami"]),
        &environment,
    )));
    assert!(me.iter().any(|id| id == "x509:CN=alice"), "{me:?}");
    let got = run(with_env(
        curator_env(Some(&secure), &["get", &node]),
        &environment,
    ));
    assert_eq!(exited(&got, 0).trim(), "over tls");

    // A flag wins over its variable: bob's certificate in the environment, alice's given.
    let bobs = [
        ("ZK_TLS_CA", ca),
        ("ZK_TLS_CERT", path(&bob.cert)),
        ("ZK_TLS_KEY", path(&bob.key)),
    ];
    let me = identities(&run(with_env(
        curator(&secure, &["whoami", "--tls-cert", cert, "--tls-key", key]),
        &bobs,
    )));
    assert!(me.iter().any(|id| id == "x509:CN=alice"), "{me:?}");
    assert!(!me.iter().any(|id| id == "x509:CN=bob"), "{me:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_problems_exit_with_code_3_at_once_saying_which() {
    let certs = TestCertificates::generate().unwrap();
    let files = certs.write_to_temp_dir().unwrap();
    let alice = certs
        .client("alice")
        .unwrap()
        .write_pem(files.dir(), "alice")
        .unwrap();
    let mallory = certs
        .unknown_ca()
        .client_certificate("mallory")
        .unwrap()
        .write_pem(files.dir(), "mallory")
        .unwrap();
    let need = TestingServer::builder()
        .tls(certs.server_tls().with_client_auth(ClientAuth::Need))
        .start()
        .await
        .unwrap();
    let secure = need.secure_connect_string().unwrap();
    let (ca, cert, key) = (path(files.ca()), path(&alice.cert), path(&alice.key));
    let attempt = |connect: &str, args: &[&str]| {
        let mut all = PATIENT.to_vec();
        all.extend_from_slice(args);
        all.push("whoami");
        run(curator(connect, &all))
    };

    // The server's certificate, checked against a CA that did not sign it.
    let unknown_ca = path(files.unknown_ca());
    failed(
        &attempt(
            &secure,
            &["--tls-ca", unknown_ca, "--tls-cert", cert, "--tls-key", key],
        ),
        3,
        &[
            &format!("cannot connect to ZooKeeper at {secure}"),
            "is not signed by a trusted CA",
            "--tls-ca",
        ],
    );
    // No client certificate for a server that needs one.
    failed(
        &attempt(&secure, &["--tls-ca", ca]),
        3,
        &["requires a client certificate", "--tls-cert and --tls-key"],
    );
    // A client certificate the server's CA did not sign.
    failed(
        &attempt(
            &secure,
            &[
                "--tls-ca",
                ca,
                "--tls-cert",
                path(&mallory.cert),
                "--tls-key",
                path(&mallory.key),
            ],
        ),
        3,
        &["refused this client's certificate (--tls-cert)"],
    );
    // TLS to the plaintext port, and no TLS to the secure one.
    let plain = need.connect_string();
    failed(
        &attempt(
            &plain,
            &["--tls-ca", ca, "--tls-cert", cert, "--tls-key", key],
        ),
        3,
        &["does not speak TLS", "secure client port"],
    );
    failed(&attempt(&secure, &[]), 3, &["speaks only TLS", "--tls-ca"]);
    // With --json, the same failure is one JSON error event.
    let json_failure = attempt(&secure, &["--tls-ca", ca, "--json"]);
    exited(&json_failure, 3);
    let event: Value = serde_json::from_slice(&json_failure.stderr).unwrap();
    assert_eq!(event["event"], "error");
    assert_eq!(event["code"], 3);
    assert!(
        event["message"]
            .as_str()
            .unwrap()
            .contains("requires a client certificate"),
        "{event}"
    );
    // The key where the certificate should be: no certificate to present. (The framework's
    // `build()` takes it; the failed handshake finds it, and it is a settings error.)
    failed(
        &attempt(
            &secure,
            &["--tls-ca", ca, "--tls-cert", key, "--tls-key", key],
        ),
        2,
        &["unusable TLS settings", "client certificate"],
    );
    // The right settings work with the same server: each refusal above was the settings'.
    let me = identities(&attempt(
        &secure,
        &["--tls-ca", ca, "--tls-cert", cert, "--tls-key", key],
    ));
    assert!(me.iter().any(|id| id == "x509:CN=alice"), "{me:?}");
    drop(need);

    for (kind, certificate, expected) in [
        ("expired", certs.expired_server(), "has expired"),
        (
            "wrong host",
            certs.wrong_host_server(),
            "is not valid for that host name",
        ),
    ] {
        let server = TestingServer::builder()
            .tls(ServerTls::new(certs.ca(), certificate))
            .start()
            .await
            .unwrap_or_else(|error| panic!("starting the {kind} server: {error}"));
        let secure = server.secure_connect_string().unwrap();
        let line = failed(
            &attempt(&secure, &["--tls-ca", ca]),
            3,
            &[&format!("the certificate of {secure}"), expected],
        );
        eprintln!("{kind}: {line}");
    }
}

#[test]
fn unusable_tls_files_are_usage_errors_found_before_connecting() {
    let certs = TestCertificates::generate().unwrap();
    let files = certs.write_to_temp_dir().unwrap();
    let alice = certs
        .client("alice")
        .unwrap()
        .write_pem(files.dir(), "alice")
        .unwrap();
    let (ca, cert, key) = (path(files.ca()), path(&alice.cert), path(&alice.key));
    let missing = files.dir().join("missing.pem");
    let not_pem = files.dir().join("notes.txt");
    std::fs::write(&not_pem, "not a certificate\n").unwrap();
    // No server there: a check that came after the connection would report that instead.
    let nowhere = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("127.0.0.1:{}", listener.local_addr().unwrap().port())
    };
    let cases: [(&[&str], &[&str]); 6] = [
        (
            &["--tls-ca", path(&missing)],
            &["cannot read the CA file", path(&missing), "No such file"],
        ),
        (
            &["--tls-ca", path(files.dir())],
            &["cannot read the CA file", "directory"],
        ),
        (&["--tls-ca", path(&not_pem)], &["the CA"]),
        (&["--tls-ca", key], &["the CA"]),
        (
            &[
                "--tls-ca",
                ca,
                "--tls-cert",
                path(&missing),
                "--tls-key",
                key,
            ],
            &["cannot read the certificate file", path(&missing)],
        ),
        (
            &[
                "--tls-ca",
                ca,
                "--tls-cert",
                cert,
                "--tls-key",
                path(&missing),
            ],
            &["cannot read the private key file", path(&missing)],
        ),
    ];
    for (args, expected) in cases {
        let mut all = args.to_vec();
        all.push("whoami");
        let line = failed(&run(curator(&nowhere, &all)), 2, expected);
        assert!(line.contains("unusable TLS settings"), "{line}");
    }
}

const ALICE_PASSWORD: &str = "alice-Secret-5e7a";
const WRONG_PASSWORD: &str = "not-alice-3c1f";

/// Runs `command` to its end, and asserts no password of this test is in what it printed.
fn zk(command: Command) -> Output {
    let output = run(command);
    for stream in [&output.stdout, &output.stderr] {
        let stream = text(stream);
        for password in [ALICE_PASSWORD, WRONG_PASSWORD] {
            assert!(
                !stream.contains(password),
                "a password was printed: {stream}"
            );
        }
    }
    output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sasl_login_is_the_sasl_identity_and_its_password_is_never_printed() {
    let certs = TestCertificates::generate().unwrap();
    let files = certs.write_to_temp_dir().unwrap();
    let alice_cert = certs
        .client("alice")
        .unwrap()
        .write_pem(files.dir(), "alice")
        .unwrap();
    // Enforced SASL on both ports; the TLS port also takes client certificates.
    let server = TestingServer::builder()
        .sasl(
            ServerSasl::digest_md5()
                .with_user("alice", ALICE_PASSWORD)
                .enforced(),
        )
        .tls(certs.server_tls().with_client_auth(ClientAuth::Want))
        .start()
        .await
        .unwrap();
    let connect = server.connect_string();
    let password_file = files.dir().join("alice.password");
    std::fs::write(&password_file, format!("{ALICE_PASSWORD}\n")).unwrap();
    let wrong_file = files.dir().join("wrong.password");
    std::fs::write(&wrong_file, format!("{WRONG_PASSWORD}\n")).unwrap();
    let empty_file = files.dir().join("empty.password");
    std::fs::write(&empty_file, "").unwrap();
    let missing_file = files.dir().join("missing.password");
    let login = |password: &Path, args: &[&str]| {
        let mut all = vec![
            "--sasl-user",
            "alice",
            "--sasl-password-file",
            path(password),
        ];
        all.extend_from_slice(&PATIENT);
        all.extend_from_slice(args);
        curator(&connect, &all)
    };

    let me = identities(&zk(login(&password_file, &["whoami"])));
    assert!(me.iter().any(|id| id == "sasl:alice"), "{me:?}");
    let me = json_identities(&zk(login(&password_file, &["whoami", "--json"])));
    assert!(
        me.contains(&json!({ "scheme": "sasl", "id": "alice" })),
        "{me:?}"
    );
    let root = unique_root("cli-sasl");
    let node = format!("{root}/node");
    exited(
        &zk(login(&password_file, &["create", "-p", &node, "logged in"])),
        0,
    );
    assert_eq!(
        exited(&zk(login(&password_file, &["get", &node])), 0).trim(),
        "logged in"
    );

    // The same from the environment.
    let me = identities(&zk(with_env(
        curator_env(Some(&connect), &["whoami"]),
        &[
            ("ZK_SASL_USER", "alice"),
            ("ZK_SASL_PASSWORD_FILE", path(&password_file)),
        ],
    )));
    assert!(me.iter().any(|id| id == "sasl:alice"), "{me:?}");

    // With a client certificate too, over TLS: both identities.
    let secure = server.secure_connect_string().unwrap();
    let both = zk(curator(
        &secure,
        &[
            "--tls-ca",
            path(files.ca()),
            "--tls-cert",
            path(&alice_cert.cert),
            "--tls-key",
            path(&alice_cert.key),
            "--sasl-user",
            "alice",
            "--sasl-password-file",
            path(&password_file),
            "whoami",
        ],
    ));
    let me = identities(&both);
    assert!(me.iter().any(|id| id == "sasl:alice"), "{me:?}");
    assert!(me.iter().any(|id| id == "x509:CN=alice"), "{me:?}");

    // A wrong password: refused at once, said so.
    failed(
        &zk(login(&wrong_file, &["whoami"])),
        3,
        &[
            &format!("cannot connect to ZooKeeper at {connect}"),
            "the server refused the login",
            "--sasl-user",
        ],
    );
    // The same login from the environment: the message names the variable that was set.
    let mut patient = PATIENT.to_vec();
    patient.push("whoami");
    let line = failed(
        &zk(with_env(
            curator_env(Some(&connect), &patient),
            &[
                ("ZK_SASL_USER", "alice"),
                ("ZK_SASL_PASSWORD_FILE", path(&wrong_file)),
            ],
        )),
        3,
        &["the server refused the login", "$ZK_SASL_USER"],
    );
    assert!(!line.contains("--sasl-user"), "{line}");
    let refused = zk(login(&wrong_file, &["whoami", "--json"]));
    exited(&refused, 3);
    let event: Value = serde_json::from_slice(&refused.stderr).unwrap();
    assert_eq!(event["code"], 3, "{event}");
    assert!(
        event["message"]
            .as_str()
            .unwrap()
            .contains("refused the login"),
        "{event}"
    );
    // No login at all, on a server that requires one.
    let mut anonymous = PATIENT.to_vec();
    anonymous.push("whoami");
    failed(
        &zk(curator(&connect, &anonymous)),
        3,
        &["requires a login", "--sasl-user"],
    );
    // Password files that give no password: usage errors, before any connection.
    failed(
        &zk(login(&missing_file, &["whoami"])),
        2,
        &[
            "--sasl-password-file",
            "cannot read the password file",
            path(&missing_file),
            "No such file",
        ],
    );
    failed(
        &zk(login(&empty_file, &["whoami"])),
        2,
        &["--sasl-password-file", "is empty"],
    );
}

/// `--sasl-user` against a server that has no SASL: no anonymous session and exit 0, but exit 3
/// at once saying that the server did not log the client in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sasl_login_to_a_server_without_sasl_exits_3_not_anonymous() {
    let server = TestingServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let password_file = dir.path().join("bob.password");
    std::fs::write(&password_file, "bob's secret\n").unwrap();
    let mut args = vec![
        "--sasl-user",
        "bob",
        "--sasl-password-file",
        path(&password_file),
    ];
    args.extend_from_slice(&PATIENT);
    args.push("whoami");
    failed(
        &zk(curator(&server.connect_string(), &args)),
        3,
        &[
            "did not log this client in as sasl:bob",
            "SASL is not enabled on that server",
        ],
    );
}

/// Kerberos (SASL GSSAPI) with a real KDC. `curator` runs itself again with the Kerberos
/// environment its flags ask for, so every login here is a process of its own, as in use.
#[cfg(feature = "kerberos")]
mod kerberos {
    use super::*;
    use curator_test::{KerberosPrincipal, TestingKdc};

    /// The file of a `FILE:` ticket cache from `client_env`.
    fn ticket_cache(kdc: &TestingKdc, principal: &KerberosPrincipal) -> String {
        let environment = kdc.client_env(principal).unwrap();
        let (_, cache) = environment
            .iter()
            .find(|(name, _)| name == "KRB5CCNAME")
            .expect("a ticket cache");
        cache.strip_prefix("FILE:").unwrap_or(cache).to_owned()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_kerberos_login_from_a_keytab_or_a_ticket_cache() {
        let kdc = TestingKdc::start().await.unwrap();
        let server = TestingServer::builder()
            .sasl(ServerSasl::kerberos(&kdc).unwrap().enforced())
            .start()
            .await
            .unwrap();
        let alice = kdc.add_principal("alice").unwrap();
        let bob = kdc.add_principal("bob").unwrap();
        let connect = server.localhost_connect_string().unwrap();
        let config = path(kdc.krb5_conf()).to_owned();
        let keytab = path(alice.keytab()).to_owned();
        let kerberos = |args: &[&str]| {
            let mut all = vec!["--kerberos", "--kerberos-config", &config];
            all.extend_from_slice(&PATIENT);
            all.extend_from_slice(args);
            curator(&connect, &all)
        };
        let alice_id = "sasl:alice@EXAMPLE.COM";

        // From the keytab.
        let me = identities(&run(kerberos(&["--kerberos-keytab", &keytab, "whoami"])));
        assert!(me.iter().any(|id| id == alice_id), "{me:?}");
        // Still alice when the environment's ticket cache holds bob's ticket: the keytab given
        // is the login asked for.
        let bobs_cache = ticket_cache(&kdc, &bob);
        let me = identities(&run(with_env(
            kerberos(&["--kerberos-keytab", &keytab, "whoami"]),
            &[("KRB5CCNAME", &bobs_cache)],
        )));
        assert!(me.iter().any(|id| id == alice_id), "{me:?}");
        assert!(!me.iter().any(|id| id.contains("bob")), "{me:?}");

        // Pinned to a principal: alice's ticket cache logs in as alice, and as bob it is
        // refused at once, before the server is asked.
        let alices_cache = ticket_cache(&kdc, &alice);
        let me = identities(&run(kerberos(&[
            "--kerberos-ccache",
            &alices_cache,
            "--kerberos-principal",
            "alice",
            "whoami",
        ])));
        assert!(me.iter().any(|id| id == alice_id), "{me:?}");
        let pinned = run(kerberos(&[
            "--kerberos-ccache",
            &alices_cache,
            "--kerberos-principal",
            "bob@EXAMPLE.COM",
            "whoami",
        ]));
        exited(&pinned, 3);
        let stderr = text(&pinned.stderr);
        assert!(
            stderr.contains("credentials are alice@EXAMPLE.COM's, not bob@EXAMPLE.COM's"),
            "{stderr}"
        );

        // From a ticket cache (`kinit`'s), with no keytab anywhere.
        let cache = ticket_cache(&kdc, &alice);
        let me = json_identities(&run(kerberos(&[
            "--kerberos-ccache",
            &cache,
            "whoami",
            "--json",
        ])));
        assert!(
            me.contains(&json!({ "scheme": "sasl", "id": "alice@EXAMPLE.COM" })),
            "{me:?}"
        );
        // A command, too.
        let root = unique_root("cli-kerberos");
        let node = format!("{root}/node");
        exited(
            &run(kerberos(&[
                "--kerberos-ccache",
                &cache,
                "create",
                "-p",
                &node,
                "kerberized",
            ])),
            0,
        );

        // From the environment.
        let me = identities(&run(with_env(
            curator_env(Some(&connect), &["whoami"]),
            &[
                ("ZK_KERBEROS", "1"),
                ("ZK_KERBEROS_KEYTAB", &keytab),
                ("ZK_KERBEROS_CONFIG", &config),
            ],
        )));
        assert!(me.iter().any(|id| id == alice_id), "{me:?}");

        // Files that are not there: usage errors before any connection.
        let missing = kdc.dir().join("missing");
        failed(
            &run(kerberos(&["--kerberos-keytab", path(&missing), "whoami"])),
            2,
            &["--kerberos-keytab", "cannot read", path(&missing)],
        );
        failed(
            &run(kerberos(&["--kerberos-ccache", path(&missing), "whoami"])),
            2,
            &["--kerberos-ccache", "cannot read", "kinit -c"],
        );
    }

    /// A keytab of a principal this realm's KDC does not know (made by another KDC). The wire
    /// client fails such a login before it reaches the server, and the framework takes that
    /// for a lost connection and tries again (see the crate's report): the failure comes with
    /// the connection timeout, kept short here, and the message says where to look.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_principal_the_kdc_does_not_know_cannot_log_in() {
        let kdc = TestingKdc::start().await.unwrap();
        let server = TestingServer::builder()
            .sasl(ServerSasl::kerberos(&kdc).unwrap().enforced())
            .start()
            .await
            .unwrap();
        let elsewhere = TestingKdc::start().await.unwrap();
        let mallory = elsewhere.add_principal("mallory").unwrap();
        let connect = server.localhost_connect_string().unwrap();
        // Far longer than the test may run: the refusal must come at once.
        let timeout = "10m";
        let output = run(curator(
            &connect,
            &[
                "--kerberos",
                "--kerberos-config",
                path(kdc.krb5_conf()),
                "--kerberos-keytab",
                path(mallory.keytab()),
                "--connection-timeout",
                timeout,
                "whoami",
            ],
        ));
        exited(&output, 3);
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains(&format!("cannot connect to ZooKeeper at {connect}"))
                && stderr.contains("GSSAPI login cannot start")
                && stderr.contains("--kerberos")
                && stderr.contains("klist")
                && !stderr.contains(" within "),
            "{stderr}"
        );
    }
}
