//! Which ZooKeeper release the harness starts: each one asked for, and the one the environment
//! selects (`CURATOR_TEST_ZK_VERSION`), for dedicated, shared and ensemble servers.

use curator_test::{
    ServerVersion, TestingCluster, TestingServer, ZK_3_9_DIR_ENV, ZooKeeperVersion, server_version,
};

/// The release servers started without an explicit version run, unless `ZOOKEEPER_CLASSPATH`
/// names other jars (then nothing is known about them).
fn release_from_env() -> Option<ServerVersion> {
    if std::env::var("ZOOKEEPER_CLASSPATH").is_ok_and(|c| !c.trim().is_empty()) {
        return None;
    }
    let version = ZooKeeperVersion::from_env().expect("a valid CURATOR_TEST_ZK_VERSION");
    Some(version.release().parse().unwrap())
}

#[tokio::test]
async fn each_release_asked_for_reports_its_version() {
    let (v38, v39) = tokio::join!(
        TestingServer::builder()
            .version(ZooKeeperVersion::V3_8)
            .start(),
        TestingServer::builder()
            .version(ZooKeeperVersion::V3_9)
            .start(),
    );
    let (v38, v39) = (v38.unwrap(), v39.unwrap());
    assert_eq!(
        v38.server_version().await.unwrap(),
        ServerVersion::new(3, 8, 0)
    );
    assert_eq!(
        v39.server_version().await.unwrap(),
        ServerVersion::new(3, 9, 3)
    );
    assert!(ZooKeeperVersion::V3_9.matches(v39.server_version().await.unwrap()));
}

#[tokio::test]
async fn servers_started_without_a_version_run_the_release_of_the_environment() {
    let Some(expected) = release_from_env() else {
        return;
    };
    let dedicated = TestingServer::start_dedicated().await.unwrap();
    assert_eq!(dedicated.server_version().await.unwrap(), expected);
    // The shared server of a `just test` pass (scripts/with-shared-zk.sh) too, when there is one.
    let shared = TestingServer::start().await.unwrap();
    assert_eq!(shared.server_version().await.unwrap(), expected);
}

#[tokio::test]
async fn an_ensemble_runs_the_release_asked_for_on_every_member() {
    let cluster = TestingCluster::builder(2)
        .version(ZooKeeperVersion::V3_9)
        .start()
        .await
        .unwrap();
    for member in cluster.connect_string().split(',') {
        assert_eq!(
            server_version(member).await.unwrap(),
            ServerVersion::new(3, 9, 3),
            "{member}"
        );
    }
}

#[test]
fn a_release_that_was_not_fetched_is_reported_with_the_setup_command() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_curator-test-server"))
        .args(["--zookeeper-version", "3.9"])
        .env(ZK_3_9_DIR_ENV, "/nonexistent/zookeeper-3.9.3")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/nonexistent/zookeeper-3.9.3/"), "{stderr}");
    assert!(stderr.contains("just setup"), "{stderr}");
}

#[test]
fn an_unknown_release_in_the_environment_is_refused() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_curator-test-server"))
        .env("CURATOR_TEST_ZK_VERSION", "3.7")
        .env_remove("ZOOKEEPER_CLASSPATH")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("\"3.7\""), "{stderr}");
}
