//! A real MIT Kerberos KDC: tickets for keytab principals, and no KDC left behind.

use std::process::Command;

use curator_test::{Error, TestingKdc};

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
