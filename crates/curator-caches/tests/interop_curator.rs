//! Apache Curator 5.4 (Java) and these caches on one tree: Rust caches see what Java writes, and
//! a Java `CuratorCache` sees what Rust writes.

mod support;

use std::path::Path;

use curator_caches::{CacheEvent, CuratorCache, NodeCache, TreeCache, WatchMode};
use curator_framework::CuratorFramework;
use curator_test::{CuratorProgram, JavaPeer, TestingServer, Timing, unique_root};
use support::{Recorder, cache_tree, replay, server_tree};
use tokio::time::Instant;

async fn ask(peer: &mut JavaPeer, line: &str) -> String {
    tokio::task::block_in_place(|| peer.ask(line)).unwrap()
}

fn java_peer(connect: &str, root: &str) -> JavaPeer {
    let program = CuratorProgram::compile(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/CachePeer.java"),
    )
    .unwrap();
    let mut peer = program.start(&[connect, root]).unwrap();
    assert_eq!(peer.read_line().unwrap(), "ready");
    peer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_caches_see_what_java_curator_writes() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("interop-java-writes");
    let mut java = tokio::task::block_in_place(|| java_peer(&server.connect_string(), &root));
    let client = curator_testkit::client(&server.connect_string()).await;
    // The one-shot caches get their own session: ZooKeeper before 3.9 keeps one watch mode per
    // path and session, so one-shot watches on the root of a persistent recursive watch, from
    // the same session, would turn that watch into a one-shot one (see the README).
    let other = curator_testkit::client(&server.connect_string()).await;
    let curator_cache = CuratorCache::builder(client.clone(), &root)
        .with_mode(WatchMode::Persistent)
        .build()
        .unwrap();
    let tree_cache = TreeCache::builder(other.clone(), &root).build().unwrap();
    let node_cache = NodeCache::builder(other.clone(), &format!("{root}/config"))
        .build()
        .unwrap();
    let mut curator_events = Recorder::new(&curator_cache.listenable());
    let mut tree_events = Recorder::new(&tree_cache.listenable());
    let mut node_events = Recorder::new(&node_cache.listenable());
    curator_cache.start().await.unwrap();
    tree_cache.start().await.unwrap();
    node_cache.start().await.unwrap();
    for events in [&mut curator_events, &mut tree_events, &mut node_events] {
        events
            .until("Initialized", |e| matches!(e, CacheEvent::Initialized))
            .await;
    }

    for command in [
        format!("create {root}/config v1"),
        format!("create {root}/services/a/instance-1 host1"),
        format!("set {root}/config v2"),
        format!("create {root}/services/b x"),
        format!("delete {root}/services/a"),
        format!("set {root}/config v3"),
    ] {
        assert_eq!(ask(&mut java, &command).await, "ok", "{command}");
    }
    // The last state of config, however the states before it were folded together.
    let last = |e: &CacheEvent| match e {
        CacheEvent::Created { node } | CacheEvent::Changed { node, .. } => {
            node.name() == "config" && node.data() == Some(&b"v3"[..])
        }
        _ => false,
    };
    curator_events.until("config v3", last).await;
    tree_events.until("config v3", last).await;
    node_events.until("config v3", last).await;
    let expected = server_tree(&client, &root).await;
    let end = Instant::now() + Timing::new().wait();
    while cache_tree(&curator_cache.snapshot()) != expected
        || cache_tree(&tree_cache.snapshot()) != expected
    {
        assert!(
            Instant::now() < end,
            "the Rust caches do not match the server\nCuratorCache: {:#?}\nTreeCache: {:#?}\nserver: {expected:#?}",
            cache_tree(&curator_cache.snapshot()),
            cache_tree(&tree_cache.snapshot())
        );
        let _ = curator_events
            .drain(std::time::Duration::from_millis(50))
            .await;
    }
    assert_eq!(replay(&curator_events.log), expected);
    assert_eq!(node_cache.current_data().unwrap().data(), Some(&b"v3"[..]));
    curator_cache.close().await.unwrap();
    tree_cache.close().await.unwrap();
    node_cache.close().await.unwrap();
}

/// Waits until the Java cache's content equals the server's tree (the Java side waits on its
/// listener's events, up to 30 s).
async fn java_sees_the_server(java: &mut JavaPeer, client: &CuratorFramework, root: &str) {
    let expected: Vec<String> = server_tree(client, root)
        .await
        .into_iter()
        .map(|(path, (data, _))| format!("{path}={data}"))
        .collect();
    let expected = expected.join(";");
    let dump = ask(java, &format!("await-dump {expected}")).await;
    assert_eq!(
        dump,
        format!("dump {expected}"),
        "Java's cache and the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_curator_cache_sees_what_rust_writes() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("interop-rust-writes");
    let client = curator_testkit::client(&server.connect_string()).await;
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/before"), b"b0")
        .await
        .unwrap();
    let mut java = tokio::task::block_in_place(|| java_peer(&server.connect_string(), &root));
    assert_eq!(ask(&mut java, "start").await, "started");

    // One write at a time, each waited for: a cache reports states, so writes in quick
    // succession may be folded together (by Curator's cache as by ours).
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/x/y"), b"xy")
        .await
        .unwrap();
    java_sees_the_server(&mut java, &client, &root).await;
    client
        .set_data()
        .for_path(&format!("{root}/before"), b"b1")
        .await
        .unwrap();
    java_sees_the_server(&mut java, &client, &root).await;
    client
        .delete()
        .deleting_children_if_needed()
        .for_path(&format!("{root}/x"))
        .await
        .unwrap();
    java_sees_the_server(&mut java, &client, &root).await;
    client
        .create()
        .for_path(&format!("{root}/after"), b"a0")
        .await
        .unwrap();
    java_sees_the_server(&mut java, &client, &root).await;

    // The cache's content is updated before its listeners run: wait for each event itself.
    for wanted in [
        format!("created {root}/before b0"),
        format!("created {root}/x/y xy"),
        format!("changed {root}/before b1"),
        format!("deleted {root}/x/y xy"),
        format!("created {root}/after a0"),
    ] {
        let answer = ask(&mut java, &format!("await-event {wanted}")).await;
        assert_eq!(answer, "seen", "{wanted}");
    }
}
