//! GroupMember with Apache Curator's (Java, Debian's 5.4 jars) in the same group: each sees the
//! other join, with its payload, and leave.

use std::path::Path;

use curator_nodes::GroupMember;
use curator_test::{CuratorProgram, JavaPeer, TestingServer, unique_root};
use curator_testkit::{client, eventually};

async fn ask(peer: &mut JavaPeer, line: &str) -> String {
    tokio::task::block_in_place(|| peer.ask(line)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_and_java_members_see_each_other() {
    let server = TestingServer::start().await.unwrap();
    let group = format!("{}/members", unique_root("interop-group"));
    let rust = GroupMember::new(
        client(&server.connect_string()).await,
        &group,
        "rust-1",
        b"r",
    )
    .unwrap();
    rust.start().await.unwrap();
    let mut java = tokio::task::block_in_place(|| {
        let program = CuratorProgram::compile(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/GroupPeer.java"),
        )
        .unwrap();
        let mut peer = program
            .start(&[&server.connect_string(), &group, "java-1", "j"])
            .unwrap();
        assert_eq!(peer.read_line().unwrap(), "ready");
        peer
    });
    assert_eq!(
        ask(&mut java, "members java-1=j,rust-1=r").await,
        "members java-1=j,rust-1=r"
    );
    eventually("Rust sees the Java member", || async {
        rust.current_members().get("java-1").map(Vec::as_slice) == Some(&b"j"[..])
    })
    .await;

    // Rust's payload changes, Java sees it; Java leaves, Rust sees it.
    rust.set_this_data(b"r2").await.unwrap();
    assert_eq!(
        ask(&mut java, "members java-1=j,rust-1=r2").await,
        "members java-1=j,rust-1=r2"
    );
    assert_eq!(ask(&mut java, "leave").await, "ok");
    eventually("Rust sees the Java member leave", || async {
        rust.current_members().keys().eq(["rust-1"].iter())
    })
    .await;
    rust.close().await.unwrap();
}
