//! Rust members and an Apache Curator (Java, Debian's 5.4 jars) member in one
//! `DistributedDoubleBarrier`: nobody enters before all have arrived, nobody leaves before all
//! are leaving.

use std::path::Path;
use std::time::Duration;

use curator_barriers::DistributedDoubleBarrier;
use curator_test::{CuratorProgram, JavaPeer, TestingServer, Timing, unique_root};
use curator_testkit::client;

/// Sends `line` to the Java peer on a blocking thread; the answer comes with the peer back.
fn ask_later(
    mut peer: JavaPeer,
    line: &'static str,
) -> tokio::task::JoinHandle<(JavaPeer, String)> {
    tokio::task::spawn_blocking(move || {
        let answer = peer.ask(line).unwrap();
        (peer, answer)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_and_java_members_pass_one_double_barrier() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("interop-double-barrier");
    let program = CuratorProgram::compile(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/DoubleBarrierPeer.java"),
    )
    .unwrap();
    let java = tokio::task::block_in_place(|| {
        let mut peer = program
            .start(&[&server.connect_string(), &path, "3"])
            .unwrap();
        assert_eq!(peer.read_line().unwrap(), "ready");
        peer
    });
    // (Curator's own timed-out enter leaves its node behind and cannot be retried, so Java
    // waits with a long timeout only.)
    let java_enters = ask_later(java, "enter 60000");
    let first =
        DistributedDoubleBarrier::new(client(&server.connect_string()).await, &path, 3).unwrap();
    let second =
        DistributedDoubleBarrier::new(client(&server.connect_string()).await, &path, 3).unwrap();
    assert!(
        !first
            .enter_timeout(Duration::from_millis(300))
            .await
            .unwrap(),
        "two of three are not enough"
    );
    let (a, b) = tokio::join!(first.enter(), second.enter());
    a.unwrap();
    b.unwrap();
    let (java, answer) = tokio::time::timeout(Timing::new().wait(), java_enters)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer, "entered");

    // Leaving: Java's leave waits for the Rust members, and theirs for Java's.
    let java_leaves = ask_later(java, "leave 60000");
    let (a, b) = tokio::join!(first.leave(), second.leave());
    a.unwrap();
    b.unwrap();
    let (_java, answer) = tokio::time::timeout(Timing::new().wait(), java_leaves)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer, "left");
    let c = client(&server.connect_string()).await;
    assert!(
        c.get_children()
            .for_path(&path)
            .await
            .map(|(c, _)| c)
            .unwrap_or_default()
            .is_empty(),
        "no member node and no ready node left"
    );
}
