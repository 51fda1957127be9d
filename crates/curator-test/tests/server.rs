//! `TestingServer` against a real ZooKeeper process.

mod common;

use std::time::Duration;

use curator_session::proto::CreateMode;
use curator_session::{SessionState, open_acl};
use curator_test::{Error, TestingServer, Timing, four_letter_word, unique_root};

#[tokio::test]
async fn start_answers_and_stop_frees_the_port() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    assert!(server.is_running());
    assert!(!server.is_shared());
    let address = server.connect_string();
    assert_eq!(address, format!("127.0.0.1:{}", server.port()));
    let answer = four_letter_word(&address, "ruok", Timing::new().wait())
        .await
        .unwrap();
    assert_eq!(answer, "imok");
    let data_dir = server.data_dir().unwrap().to_owned();
    assert!(data_dir.join("zoo.cfg").is_file());

    server.stop().unwrap();
    assert!(!server.is_running());
    let refused = four_letter_word(&address, "ruok", Timing::new().wait()).await;
    assert!(matches!(refused, Err(Error::Io { .. })), "{refused:?}");

    drop(server);
    assert!(
        !data_dir.exists(),
        "dropping the server removes its directory"
    );
}

#[tokio::test]
async fn a_session_survives_restart_with_the_same_id() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let client = common::connect(
        &server.connect_string(),
        Timing::new().scale(Duration::from_secs(20)),
    )
    .await;
    let root = unique_root("restart");
    common::mkdirs(&client, &root).await;
    let ephemeral = format!("{root}/mine");
    client
        .create(&ephemeral, b"x", open_acl(), CreateMode::Ephemeral, None)
        .await
        .unwrap();
    let session_before = client.session_id();

    server.restart().await.unwrap();
    assert!(server.is_running());

    // The data is the same and the session lives on: the ephemeral node is still there.
    let (data, stat) = common::retry(|| client.get_data(&ephemeral)).await;
    assert_eq!(data, b"x");
    assert_eq!(stat.ephemeral_owner, session_before);
    assert_eq!(client.session_id(), session_before);
    assert_eq!(client.state(), SessionState::Connected);
}

#[tokio::test]
async fn ttl_nodes_are_enabled() {
    let server = TestingServer::start().await.unwrap();
    let client = common::connect(&server.connect_string(), Timing::new().session_timeout()).await;
    let root = unique_root("ttl");
    common::mkdirs(&client, &root).await;
    let ttl = Duration::from_secs(60).as_millis() as i64;
    client
        .create(
            &format!("{root}/ttl"),
            b"",
            open_acl(),
            CreateMode::PersistentWithTtl,
            Some(ttl),
        )
        .await
        .unwrap();
}

#[test]
fn missing_jars_are_reported_with_the_setup_command() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_curator-test-server"))
        .env("ZOOKEEPER_CLASSPATH", "/nonexistent/zookeeper.jar")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/nonexistent/zookeeper.jar"), "{stderr}");
    assert!(stderr.contains("just setup"), "{stderr}");
}

#[test]
fn missing_java_is_reported_with_the_setup_command() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_curator-test-server"))
        .env_remove("JAVA_HOME")
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("java") && stderr.contains("just setup"),
        "{stderr}"
    );
}

#[test]
fn the_server_binary_shares_a_server_and_leaves_no_process() {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_curator-test-server"))
        .arg("--until-stdin-closes")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let connect = line.trim().to_owned();
    assert!(connect.starts_with("127.0.0.1:"), "{connect:?}");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let answer = four_letter_word(&connect, "ruok", Timing::new().wait())
            .await
            .unwrap();
        assert_eq!(answer, "imok");
    });

    // Closing standard input stops the server: its port refuses connections afterwards.
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    runtime.block_on(async {
        let refused = four_letter_word(&connect, "ruok", Timing::new().wait()).await;
        assert!(refused.is_err(), "{refused:?}");
    });
}

#[test]
fn a_killed_test_process_leaves_no_server_behind() {
    use std::io::{BufRead, BufReader};
    // SIGKILL gives the binary no chance to clean up; the guard must still stop the JVM. The
    // data directory it could not remove lands in a directory this test removes.
    let scratch = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_curator-test-server"))
        .env("TMPDIR", scratch.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let connect = line.trim().to_owned();
    child.kill().unwrap();
    child.wait().unwrap();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let deadline = tokio::time::Instant::now() + Timing::new().wait();
        loop {
            if four_letter_word(&connect, "ruok", Duration::from_secs(2))
                .await
                .is_err()
            {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the JVM outlived its test process"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
}
