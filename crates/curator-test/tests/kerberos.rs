//! A real MIT Kerberos KDC, and ZooKeeper servers that authenticate clients with Kerberos
//! (SASL GSSAPI), with clients in child processes: `kinit`/`klist`, ZooKeeper's Java client, and
//! (with the `kerberos-client-tests` feature) curator-session's GSSAPI client.

mod common;

use std::process::Command;

use curator_test::{CURATOR_CLASSPATH, Error, ServerSasl, TestingKdc, TestingServer};

#[tokio::test]
async fn the_kdc_issues_tickets_to_keytab_principals_and_dies_with_its_handle() {
    let kdc = TestingKdc::start().await.unwrap();
    assert_eq!(kdc.realm(), "EXAMPLE.COM");
    let alice = kdc.add_principal("alice").unwrap();
    assert_eq!(alice.name(), "alice@EXAMPLE.COM");
    assert!(alice.keytab().is_file());
    // Adding again hands out the same principal (its keytab stays valid).
    assert_eq!(kdc.add_principal("alice@EXAMPLE.COM").unwrap(), alice);
    let service = kdc.add_principal("zookeeper/localhost").unwrap();
    assert_eq!(service.name(), "zookeeper/localhost@EXAMPLE.COM");

    let env = kdc.client_env(&alice).unwrap();
    let names: Vec<&str> = env.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["KRB5_CONFIG", "KRB5CCNAME", "KRB5_CLIENT_KTNAME"]);
    // The cache holds alice's ticket-granting ticket...
    let klist = Command::new("klist").envs(env.clone()).output().unwrap();
    let listed = String::from_utf8_lossy(&klist.stdout);
    assert!(klist.status.success(), "{listed}");
    assert!(
        listed.contains("Default principal: alice@EXAMPLE.COM"),
        "{listed}"
    );
    assert!(
        listed.contains("krbtgt/EXAMPLE.COM@EXAMPLE.COM"),
        "{listed}"
    );
    // ...with which the KDC issues a service ticket for zookeeper/localhost.
    let kvno = Command::new("kvno")
        .arg("zookeeper/localhost@EXAMPLE.COM")
        .envs(env)
        .output()
        .unwrap();
    assert!(
        kvno.status.success(),
        "{}{}\nKDC log:\n{}",
        String::from_utf8_lossy(&kvno.stdout),
        String::from_utf8_lossy(&kvno.stderr),
        kdc.log_tail()
    );

    let refused = kdc.add_principal("bob@OTHER.REALM").unwrap_err();
    assert!(matches!(refused, Error::InvalidArgument(_)), "{refused}");

    // Dropping the handle kills the KDC and removes its directory.
    let port = kdc.port();
    let dir = kdc.dir().to_owned();
    drop(kdc);
    assert!(!dir.exists());
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_kerberos_server_accepts_a_gssapi_login_from_zookeepers_java_client() {
    let kdc = TestingKdc::start().await.unwrap();
    let mut server = TestingServer::builder()
        .sasl(ServerSasl::kerberos(&kdc).unwrap().enforced())
        .start()
        .await
        .unwrap();
    let alice = kdc.add_principal("alice").unwrap();
    let address = server.localhost_connect_string().unwrap();

    for round in ["before restart", "after restart"] {
        let whoami = java_whoami(&kdc, &alice, &address);
        assert!(
            whoami.contains("SaslAuthenticated") && whoami.contains("sasl: alice@EXAMPLE.COM"),
            "{round}: {whoami}\nKDC log:\n{}",
            kdc.log_tail()
        );
        if round == "before restart" {
            server.restart().await.unwrap();
        }
    }

    // With the realm removed from identities, alice is plain `alice`.
    let short = TestingServer::builder()
        .sasl(ServerSasl::kerberos(&kdc).unwrap().with_realm_removed())
        .start()
        .await
        .unwrap();
    let whoami = java_whoami(&kdc, &alice, &short.localhost_connect_string().unwrap());
    assert!(
        whoami.lines().any(|line| line.trim() == "sasl: alice"),
        "{whoami}"
    );
}

/// Runs ZooKeeper's Java command-line client as `principal` (JAAS `Client` section with its
/// keytab) against `address`, and returns the output of its `whoami`.
fn java_whoami(
    kdc: &TestingKdc,
    principal: &curator_test::KerberosPrincipal,
    address: &str,
) -> String {
    let jaas = kdc.dir().join(format!(
        "client-{}.jaas",
        principal.primary_and_instance().replace('/', "_")
    ));
    std::fs::write(
        &jaas,
        format!(
            "Client {{\n  com.sun.security.auth.module.Krb5LoginModule required\n  \
             useKeyTab=true\n  keyTab=\"{}\"\n  storeKey=true\n  useTicketCache=false\n  \
             principal=\"{}\";\n}};\n",
            principal.keytab().display(),
            principal.name()
        ),
    )
    .unwrap();
    let output = Command::new("java")
        .arg("-cp")
        .arg(CURATOR_CLASSPATH.join(":"))
        .arg(format!(
            "-Djava.security.auth.login.config={}",
            jaas.display()
        ))
        .arg(format!(
            "-Djava.security.krb5.conf={}",
            kdc.krb5_conf().display()
        ))
        .arg("-Dzookeeper.sasl.client=true")
        .arg("org.apache.zookeeper.ZooKeeperMain")
        .args(["-server", address, "whoami"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The Rust client: this test binary runs itself again as a child process with the KDC's
/// client environment, and the child ([`gssapi_child`]) connects with curator-session's
/// GSSAPI SASL.
#[cfg(feature = "kerberos-client-tests")]
#[tokio::test]
async fn a_kerberos_server_accepts_a_gssapi_login_from_a_rust_client_process() {
    use curator_test::{Timing, unique_root};
    let kdc = TestingKdc::start().await.unwrap();
    let server = TestingServer::builder()
        .sasl(ServerSasl::kerberos(&kdc).unwrap())
        .start()
        .await
        .unwrap();
    let alice = kdc.add_principal("alice").unwrap();
    let root = unique_root("kerberos");

    let child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["gssapi_child", "--exact", "--nocapture", "--test-threads=1"])
        .envs(kdc.client_env(&alice).unwrap())
        .env(CHILD_ADDRESS, server.localhost_connect_string().unwrap())
        .env(CHILD_ROOT, &root)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Timing::new().forever(), child)
        .await
        .expect("the child client did not finish")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{stdout}\n{stderr}\nKDC log:\n{}",
        kdc.log_tail()
    );
    assert!(
        stdout.contains("WHOAMI sasl alice@EXAMPLE.COM"),
        "{stdout}\n{stderr}"
    );
    // What the child created is there, and its ACL (naming alice's Kerberos identity) keeps an
    // anonymous client out.
    let anonymous =
        common::connect(&server.connect_string(), Timing::new().session_timeout()).await;
    let secret = format!("{root}/alice-only");
    // ZOOKEEPER-2590 (3.8.4, 3.9.2): `exists` needs READ permission; older servers answer it.
    let exists = anonymous.exists(&secret).await;
    if server
        .server_version()
        .await
        .unwrap()
        .exists_checks_read_permission()
    {
        assert_eq!(
            exists.unwrap_err(),
            curator_session::Error::Server(curator_session::proto::ErrorCode::NoAuth)
        );
    } else {
        assert!(exists.unwrap().is_some());
    }
    assert_eq!(
        anonymous.get_data(&secret).await.unwrap_err(),
        curator_session::Error::Server(curator_session::proto::ErrorCode::NoAuth)
    );
}

#[cfg(feature = "kerberos-client-tests")]
const CHILD_ADDRESS: &str = "CURATOR_TEST_KERBEROS_CHILD_ADDRESS";
#[cfg(feature = "kerberos-client-tests")]
const CHILD_ROOT: &str = "CURATOR_TEST_KERBEROS_CHILD_ROOT";

/// Not a test by itself: the child half of
/// [`a_kerberos_server_accepts_a_gssapi_login_from_a_rust_client_process`], which runs it with
/// the KDC's environment. Run directly, without that environment, it does nothing.
#[cfg(feature = "kerberos-client-tests")]
#[tokio::test]
async fn gssapi_child() {
    use curator_session::Sasl;
    use curator_session::proto::{Acl, CreateMode, Id, Perms};
    use curator_test::Timing;
    let (Ok(address), Ok(root)) = (std::env::var(CHILD_ADDRESS), std::env::var(CHILD_ROOT)) else {
        return;
    };
    // Service `zookeeper` at the host connected to (`localhost`): zookeeper/localhost.
    let config = common::config(&address, Timing::new().session_timeout())
        .sasl(Sasl::gssapi("zookeeper", None));
    let client = common::try_connect(config)
        .await
        .unwrap_or_else(|e| panic!("GSSAPI login to {address}: {e}"));
    for user in client.who_am_i().await.unwrap() {
        println!("WHOAMI {} {}", user.auth_scheme, user.user);
    }
    common::mkdirs(&client, &root).await;
    let acl = vec![Acl {
        perms: Perms::ALL,
        id: Id::new("sasl", "alice@EXAMPLE.COM"),
    }];
    client
        .create(
            &format!("{root}/alice-only"),
            b"kerberos",
            acl,
            CreateMode::Persistent,
            None,
        )
        .await
        .unwrap();
}

const KDC_CHILD: &str = "CURATOR_TEST_KDC_CHILD";

#[test]
fn a_killed_test_process_leaves_no_kdc_behind() {
    use std::io::{BufRead, BufReader};
    // This test binary runs itself as a child ([`kdc_child`]) that starts a KDC and prints its
    // port; `SIGKILL` gives the child no chance to clean up, and the guard must still stop the
    // KDC. The directory the child could not remove lands in a directory this test removes.
    let scratch = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["kdc_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(KDC_CHILD, "1")
        .env("TMPDIR", scratch.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let port: u16 = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        // libtest prints `test kdc_child ... ` before the child's own output, on the same line.
        .find_map(|line| line.split("KDC_PORT ").nth(1).map(str::to_owned))
        .expect("the child printed no KDC port")
        .parse()
        .unwrap();
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    child.kill().unwrap();
    child.wait().unwrap();

    let deadline = std::time::Instant::now() + curator_test::Timing::new().wait();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "the KDC outlived its test process"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Not a test by itself: the child half of [`a_killed_test_process_leaves_no_kdc_behind`].
/// Run directly, without its environment, it does nothing.
#[tokio::test]
async fn kdc_child() {
    if std::env::var_os(KDC_CHILD).is_none() {
        return;
    }
    let kdc = TestingKdc::start().await.unwrap();
    println!("KDC_PORT {}", kdc.port());
    // Hold the KDC until killed (the parent never closes standard input first).
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    drop(kdc);
}
