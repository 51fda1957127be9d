//! Kerberos (SASL GSSAPI) logins of the framework against a real MIT KDC and a Kerberos
//! ZooKeeper server, both started here. GSSAPI takes its credentials from the process
//! environment, so each client runs in a child process: this test binary again, running
//! [`kerberos_child`] with a principal's `KRB5_*` environment.
//!
//! Asserted: the server knows the child as `sasl:<principal>`; a `sasl` ACL naming alice admits
//! alice (also on a new session after an expiry, which logs in again by itself) and refuses bob
//! and an anonymous client (which may still see that the node exists on servers before
//! ZooKeeper 3.8.4 and 3.9.2); a process without credentials, or a client pinned to another
//! principal than its credentials', fails at once with `SaslLogin`; and
//! the child's complete tracing output holds no raw bytes (a token or a ticket).

#![cfg(feature = "kerberos")]

use std::time::Duration;

use curator_framework::acl::{Acl, Perms};
use curator_framework::retry::RetryNTimes;
use curator_framework::security::SaslConfig;
use curator_framework::{CuratorFramework, Error, paths};
use curator_test::{ServerSasl, TestingKdc, TestingServer, Timing, unique_root};
use curator_testkit::client;

const ROLE: &str = "CURATOR_KERBEROS_CHILD_ROLE";
const ADDRESS: &str = "CURATOR_KERBEROS_CHILD_ADDRESS";
const NODE: &str = "CURATOR_KERBEROS_CHILD_NODE";

/// Runs the child with `env`; its standard output, which must end in `CHILD DONE`.
async fn run_child(role: &str, env: Vec<(String, String)>, address: &str, node: &str) -> String {
    let child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "kerberos_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env_remove("KRB5CCNAME")
        .env_remove("KRB5_CLIENT_KTNAME")
        .env_remove("KRB5_CONFIG")
        .envs(env)
        .env(ROLE, role)
        .env(ADDRESS, address)
        .env(NODE, node)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Timing::new().forever(), child)
        .await
        .expect("the child did not finish")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("CHILD DONE"),
        "child {role} failed:\n{stdout}\n{stderr}"
    );
    stdout
}

#[tokio::test]
async fn kerberos_logins_are_identities_that_acls_admit_and_refuse() {
    let kdc = TestingKdc::start().await.unwrap();
    let server = TestingServer::builder()
        .sasl(ServerSasl::kerberos(&kdc).unwrap())
        .start()
        .await
        .unwrap();
    // GSSAPI asks for a ticket to zookeeper/<host>: the host must be the principal's.
    let address = server.localhost_connect_string().unwrap();
    let alice = kdc.add_principal("alice").unwrap();
    let bob = kdc.add_principal("bob").unwrap();
    let node = paths::join(&unique_root("kerberos"), "alice-only");

    let said = run_child("alice", kdc.client_env(&alice).unwrap(), &address, &node).await;
    assert!(said.contains("WHOAMI sasl:alice@EXAMPLE.COM"), "{said}");
    let said = run_child("bob", kdc.client_env(&bob).unwrap(), &address, &node).await;
    assert!(said.contains("WHOAMI sasl:bob@EXAMPLE.COM"), "{said}");
    // A client pinned to alice, with bob's credentials, never logs in.
    let said = run_child(
        "bob-as-alice",
        kdc.client_env(&bob).unwrap(),
        &address,
        &node,
    )
    .await;
    assert!(
        said.contains("credentials are bob@EXAMPLE.COM's, not alice@EXAMPLE.COM's"),
        "{said}"
    );
    // Credentials nowhere: an empty ticket cache and no keytab.
    let nothing = vec![
        (
            "KRB5_CONFIG".to_owned(),
            kdc.krb5_conf().display().to_string(),
        ),
        (
            "KRB5CCNAME".to_owned(),
            format!("FILE:{}", kdc.dir().join("no-such-cache").display()),
        ),
        (
            "KRB5_CLIENT_KTNAME".to_owned(),
            format!("FILE:{}", kdc.dir().join("no-such-keytab").display()),
        ),
    ];
    let said = run_child("nobody", nothing, &address, &node).await;
    assert!(said.contains("no Kerberos credentials"), "{said}");

    let anonymous = client(&server.connect_string()).await;
    // ZOOKEEPER-2590 (3.8.4, 3.9.2): `exists` needs READ permission; older servers answer it.
    let exists = anonymous.check_exists().for_path(&node).await;
    if server
        .server_version()
        .await
        .unwrap()
        .exists_checks_read_permission()
    {
        assert_eq!(exists.unwrap_err(), Error::NoAuth);
    } else {
        assert!(exists.unwrap().is_some());
    }
    assert_eq!(
        anonymous.get_data().for_path(&node).await.unwrap_err(),
        Error::NoAuth
    );
    anonymous.close().await.unwrap();
}

/// Not a test by itself: the child half of the test above. Run without its environment, it
/// does nothing.
#[tokio::test]
async fn kerberos_child() {
    let (Ok(role), Ok(address), Ok(node)) = (
        std::env::var(ROLE),
        std::env::var(ADDRESS),
        std::env::var(NODE),
    ) else {
        return;
    };
    let captured = capture::install();
    let client = CuratorFramework::builder()
        .connect_string(&address)
        .session_timeout(Timing::new().session_timeout())
        .connection_timeout(Timing::new().connection_timeout())
        .retry_policy(RetryNTimes::new(3, Duration::from_millis(50)))
        .sasl(match role.as_str() {
            // Pinned to a principal: by its bare name (any realm).
            "alice" => SaslConfig::kerberos().with_principal("alice"),
            // Pinned to alice, with bob's credentials.
            "bob-as-alice" => SaslConfig::kerberos().with_principal("alice@EXAMPLE.COM"),
            _ => SaslConfig::kerberos(),
        })
        .build()
        .unwrap();
    client.start().await.unwrap();
    if role == "bob-as-alice" {
        let error = client
            .block_until_connected(Duration::from_secs(3600))
            .await
            .unwrap_err();
        assert!(matches!(error, Error::SaslLogin { .. }), "{error}");
        println!("REFUSED {error}");
    } else if role == "nobody" {
        // Prompt: the connection timeout would be reported as NotConnected instead.
        let error = client
            .block_until_connected(Duration::from_secs(3600))
            .await
            .unwrap_err();
        assert!(matches!(error, Error::SaslLogin { .. }), "{error}");
        println!("REFUSED {error}");
        // Operations get it too, without waiting.
        let read = client.check_exists().for_path("/").await.unwrap_err();
        assert!(matches!(read, Error::SaslLogin { .. }), "{read}");
    } else {
        client
            .block_until_connected(Timing::new().wait())
            .await
            .unwrap();
        for identity in client.who_am_i().await.unwrap() {
            println!("WHOAMI {identity}");
        }
        if role == "alice" {
            client
                .create()
                .creating_parents_if_needed()
                .with_acl(vec![Acl::new(Perms::ALL, "sasl", "alice@EXAMPLE.COM")])
                .for_path(&node, b"for alice")
                .await
                .unwrap();
            // A new session logs in again by itself.
            let old = client.session_id();
            client.inject_session_expiration().await.unwrap();
            client
                .block_until_connected(Timing::new().wait())
                .await
                .unwrap();
            assert_ne!(client.session_id(), old);
            let (data, _) = client.get_data().for_path(&node).await.unwrap();
            assert_eq!(data, b"for alice");
        } else {
            assert_eq!(
                client.get_data().for_path(&node).await.unwrap_err(),
                Error::NoAuth
            );
        }
    }
    client.close().await.unwrap();
    let logs = captured.text();
    // (A pinned client with the wrong credentials never reaches the wire client.)
    if role != "bob-as-alice" {
        assert!(logs.contains("curator_session"), "nothing captured");
    }
    let dumps = capture::byte_dumps(&logs);
    assert!(dumps.is_empty(), "raw bytes in the logs: {:?}", &dumps[..1]);
    println!("CHILD DONE");
}

mod capture {
    use std::io::Write;
    use std::sync::Arc;

    use parking_lot::Mutex;

    /// Everything the process's tracing subscriber writes (every level, spans too).
    #[derive(Clone, Default)]
    pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

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
        pub(crate) fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock()).into_owned()
        }
    }

    pub(crate) fn install() -> Captured {
        let captured = Captured::default();
        let writer = captured.clone();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .init();
        captured
    }

    /// `Debug`-printed byte buffers of 16 or more numbers.
    pub(crate) fn byte_dumps(text: &str) -> Vec<&str> {
        text.split('[')
            .filter(|rest| {
                let inside = rest.split(']').next().unwrap_or("");
                let numbers: Vec<&str> = inside.split(',').map(str::trim).collect();
                numbers.len() >= 16 && numbers.iter().all(|n| n.parse::<u8>().is_ok())
            })
            .collect()
    }
}
