//! A Rust `InterProcessMutex` and Apache Curator's (Java, Debian's 5.4 jars) on one path exclude
//! each other both ways and see each other as participants.

use std::path::Path;
use std::time::Duration;

use curator_locks::{
    InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, MaxLeases,
};
use curator_test::{CuratorProgram, JavaPeer, TestingServer, Timing, unique_root};
use curator_testkit as testkit;

/// Runs a blocking exchange with the Java peer without stalling the runtime.
async fn ask(peer: &mut JavaPeer, line: &str) -> String {
    tokio::task::block_in_place(|| peer.ask(line)).unwrap()
}

fn java_peer(connect: &str, path: &str, kind: &str) -> JavaPeer {
    let program = CuratorProgram::compile(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/MutexPeer.java"),
    )
    .unwrap();
    let mut peer = program.start(&[connect, path, kind]).unwrap();
    assert_eq!(peer.read_line().unwrap(), "ready");
    peer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_and_java_mutexes_exclude_each_other_both_ways() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("interop-mutex");
    let mut java =
        tokio::task::block_in_place(|| java_peer(&server.connect_string(), &path, "mutex"));
    let rust = InterProcessMutex::builder(testkit::client(&server.connect_string()).await, &path)
        .build()
        .unwrap();

    // Java holds: Rust cannot acquire, and sees Java's node first in line.
    assert_eq!(ask(&mut java, "acquire 10000").await, "acquired");
    assert!(
        rust.acquire_timeout(Duration::from_millis(500))
            .await
            .unwrap()
            .is_none()
    );
    let waiting = tokio::spawn({
        let rust = rust.clone();
        async move { rust.acquire().await }
    });
    curator_test::eventually("the waiter queues", || async {
        rust.participant_nodes().await.unwrap().len() == 2
    })
    .await;
    let participants = rust.participant_nodes().await.unwrap();
    let java_sees = ask(&mut java, "participants").await;
    let java_nodes: Vec<&str> = java_sees
        .trim_start_matches("participants ")
        .split(',')
        .collect();
    assert_eq!(
        java_nodes,
        participants.iter().map(String::as_str).collect::<Vec<_>>(),
        "both list the same order"
    );

    // Java releases: the waiting Rust handle gets the lock.
    assert_eq!(ask(&mut java, "release").await, "released");
    let guard = tokio::time::timeout(Timing::new().wait(), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();

    // Rust holds: Java cannot acquire.
    assert_eq!(ask(&mut java, "acquire 500").await, "timeout");
    let java_sees = ask(&mut java, "participants").await;
    assert!(java_sees.contains(guard.node_path()), "{java_sees}");
    guard.release().await.unwrap();
    assert_eq!(ask(&mut java, "acquire 10000").await, "acquired");
    assert_eq!(ask(&mut java, "release").await, "released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_and_java_read_write_locks_share_and_exclude() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("interop-rw");
    let mut java_writer =
        tokio::task::block_in_place(|| java_peer(&server.connect_string(), &path, "write"));
    let mut java_reader =
        tokio::task::block_in_place(|| java_peer(&server.connect_string(), &path, "read"));
    let rust =
        InterProcessReadWriteLock::new(testkit::client(&server.connect_string()).await, &path)
            .unwrap();

    // A Java reader and a Rust reader hold together; then no writer, Java or Rust, gets in.
    assert_eq!(ask(&mut java_reader, "acquire 10000").await, "acquired");
    let rust_read = rust
        .read_lock()
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap()
        .expect("readers share");
    assert_eq!(ask(&mut java_writer, "acquire 300").await, "timeout");
    assert!(
        rust.write_lock()
            .acquire_timeout(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
    let java_sees = ask(&mut java_reader, "participants").await;
    assert!(java_sees.contains(rust_read.node_path()), "{java_sees}");
    rust_read.release().await.unwrap();
    assert_eq!(ask(&mut java_reader, "release").await, "released");

    // A Java writer excludes a Rust reader; a Rust writer excludes a Java reader.
    assert_eq!(ask(&mut java_writer, "acquire 10000").await, "acquired");
    assert!(
        rust.read_lock()
            .acquire_timeout(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(ask(&mut java_writer, "release").await, "released");
    let rust_write = rust
        .write_lock()
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap()
        .expect("free");
    assert_eq!(ask(&mut java_reader, "acquire 300").await, "timeout");
    let java_sees = ask(&mut java_writer, "participants").await;
    assert!(java_sees.contains(rust_write.node_path()), "{java_sees}");
    rust_write.release().await.unwrap();
    assert_eq!(ask(&mut java_reader, "acquire 10000").await, "acquired");
    assert_eq!(ask(&mut java_reader, "release").await, "released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_and_java_semaphores_share_the_same_leases() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("interop-semaphore");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/SemaphorePeer.java");
    let mut java = tokio::task::block_in_place(|| {
        let program = CuratorProgram::compile(&source).unwrap();
        let mut peer = program
            .start(&[&server.connect_string(), &path, "2"])
            .unwrap();
        assert_eq!(peer.read_line().unwrap(), "ready");
        peer
    });
    let rust = InterProcessSemaphoreV2::new(
        testkit::client(&server.connect_string()).await,
        &path,
        MaxLeases::Fixed(2),
    )
    .unwrap();

    // One lease each: the two leases are out, so neither side gets a third.
    assert_eq!(ask(&mut java, "acquire 10000").await, "acquired");
    let rust_lease = rust
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap()
        .expect("a second lease");
    assert_eq!(ask(&mut java, "acquire 300").await, "timeout");
    assert!(
        rust.acquire_timeout(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none()
    );
    let java_sees = ask(&mut java, "participants").await;
    // Java lists bare names; Rust lists full paths, like the mutex's participant_nodes().
    let nodes: Vec<String> = rust.participant_nodes().await.unwrap();
    assert_eq!(nodes.len(), 2);
    for node in &nodes {
        let name = curator_framework::paths::node_name(node);
        assert!(java_sees.contains(name), "{java_sees} lacks {name}");
    }
    assert!(java_sees.contains(curator_framework::paths::node_name(rust_lease.node_path())));

    // A lease returned on one side is taken on the other.
    rust_lease.release().await.unwrap();
    assert_eq!(ask(&mut java, "acquire 10000").await, "acquired");
    assert_eq!(ask(&mut java, "release").await, "released");
    let again = rust.acquire_timeout(Timing::new().wait()).await.unwrap();
    assert!(again.is_some());
}
