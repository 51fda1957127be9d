//! Trees written by Apache Curator (Java, Debian's 5.4 jars) are recognized: a mutex held by
//! Java with Rust and Java waiters, a Java leader latch and selector, and queues filled by Java.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use curator_election::LeaderLatch;
use curator_inspect::{Layout, Who, inspect};
use curator_locks::InterProcessMutex;
use curator_test::{CuratorProgram, JavaPeer, TestingServer, Timing, unique_root};

use common::{client, report_when};

fn java_source(crate_name: &str, file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(crate_name)
        .join("tests/java")
        .join(file)
}

fn java(source: PathBuf, args: &[&str]) -> JavaPeer {
    tokio::task::block_in_place(|| {
        let mut peer = CuratorProgram::compile(&source)
            .unwrap()
            .start(args)
            .unwrap();
        assert_eq!(peer.read_line().unwrap(), "ready");
        peer
    })
}

async fn ask(peer: &mut JavaPeer, line: &str) -> String {
    tokio::task::block_in_place(|| peer.ask(line)).unwrap()
}

fn is_ip(who: &Who) -> bool {
    who.text
        .as_deref()
        .is_some_and(|t| t.parse::<std::net::IpAddr>().is_ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_holder_then_rust_and_java_waiters_in_order() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("inspect-java-mutex");
    let source = java_source("curator-locks", "MutexPeer.java");
    let mut holder = java(source.clone(), &[&connect, &path, "mutex"]);
    assert_eq!(ask(&mut holder, "acquire 10000").await, "acquired");

    let rust = client(&server, "rust-waiter").await;
    let mutex = InterProcessMutex::builder(rust.clone(), &path)
        .build()
        .unwrap();
    let waiting = tokio::spawn(async move {
        let guard = mutex.acquire().await.unwrap();
        std::future::pending::<()>().await;
        drop(guard);
    });
    report_when(&rust, &path, "the Rust waiter queues", |r| {
        r.waiters.len() == 1
    })
    .await;
    let mut java_waiter = java(source, &[&connect, &path, "mutex"]);
    let asked = tokio::spawn(async move {
        let answer = ask(&mut java_waiter, "acquire 60000").await;
        (java_waiter, answer)
    });
    let report = report_when(&rust, &path, "the Java waiter queues", |r| {
        r.waiters.len() == 2
    })
    .await;

    assert_eq!(report.layout, Layout::Mutex);
    let rust_session = rust.session_id().unwrap();
    let java_holder = &report.holders[0];
    assert!(is_ip(&java_holder.who), "{java_holder:?}");
    assert_ne!(java_holder.session_id, rust_session);
    assert!(java_holder.node.starts_with("_c_"), "{java_holder:?}");
    assert_eq!(
        (report.waiters[0].who.clone(), report.waiters[0].session_id),
        (Who::from(rust.identity()), rust_session)
    );
    assert!(is_ip(&report.waiters[1].who), "{report:?}");
    let java_waiter_session = report.waiters[1].session_id;
    assert!(![0, rust_session, java_holder.session_id].contains(&java_waiter_session));

    // Java releases: the Rust waiter holds, the Java waiter still waits (seen on a watch event).
    let (_, mut watch) = curator_inspect::watch(&rust, &path).await.unwrap();
    assert_eq!(ask(&mut holder, "release").await, "released");
    let deadline = tokio::time::Instant::now() + Timing::new().wait();
    loop {
        let report = tokio::time::timeout_at(deadline, watch.next())
            .await
            .expect("the Rust waiter holds before the deadline")
            .unwrap()
            .unwrap();
        if report.holders.first().map(|h| h.session_id) == Some(rust_session) {
            assert_eq!(
                report
                    .waiters
                    .iter()
                    .map(|w| w.session_id)
                    .collect::<Vec<_>>(),
                vec![java_waiter_session]
            );
            break;
        }
    }
    waiting.abort();
    let (mut java_waiter, answer) = asked.await.unwrap();
    assert_eq!(answer, "acquired");
    assert_eq!(ask(&mut java_waiter, "release").await, "released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_latch_and_selector_participants_by_id() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let root = unique_root("inspect-java-election");
    let source = java_source("curator-election", "ElectionPeer.java");

    let latch_path = format!("{root}/latch");
    let mut java_latch = java(source.clone(), &[&connect, &latch_path, "java-1", "latch"]);
    let rust = client(&server, "rust-2").await;
    report_when(&rust, &latch_path, "Java takes part", |r| {
        r.leader.is_some()
    })
    .await;
    // Java's latch learns that it leads a moment after its node is there.
    let deadline = tokio::time::Instant::now() + Timing::new().wait();
    while ask(&mut java_latch, "leading").await != "yes" {
        assert!(
            tokio::time::Instant::now() < deadline,
            "Java's latch never said it leads"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let latch = LeaderLatch::builder(rust.clone(), &latch_path, "rust-2")
        .build()
        .unwrap();
    latch.start().await.unwrap();
    let report = report_when(&rust, &latch_path, "both take part", |r| {
        r.waiters.len() == 1
    })
    .await;
    assert_eq!(report.layout, Layout::LeaderLatch);
    let leader = report.leader.clone().unwrap();
    assert_eq!(leader.who.text.as_deref(), Some("java-1"));
    assert_ne!(leader.session_id, rust.session_id().unwrap());
    assert_eq!(
        (
            report.waiters[0].who.text.as_deref(),
            report.waiters[0].session_id
        ),
        (Some("rust-2"), rust.session_id().unwrap())
    );
    latch.close().await.unwrap();

    let selector_path = format!("{root}/selector");
    let mut java_selector = java(source, &[&connect, &selector_path, "java-s", "selector"]);
    let report = report_when(&rust, &selector_path, "Java's selector leads", |r| {
        r.leader.is_some()
    })
    .await;
    assert_eq!(report.layout, Layout::LeaderSelector);
    assert_eq!(report.leader.unwrap().who.text.as_deref(), Some("java-s"));
    assert_eq!(ask(&mut java_selector, "release").await, "released");
    assert_eq!(ask(&mut java_latch, "release").await, "released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_filled_by_java() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let root = unique_root("inspect-java-queues");
    let (simple_path, queue_path, lock_path) = (
        format!("{root}/simple"),
        format!("{root}/queue"),
        format!("{root}/locks"),
    );
    let mut peer = java(
        java_source("curator-queues", "QueuePeer.java"),
        &[&connect, &simple_path, &queue_path, &lock_path],
    );
    for item in ["j1", "j2", "j3"] {
        assert_eq!(ask(&mut peer, &format!("offer {item}")).await, "ok");
    }
    assert_eq!(ask(&mut peer, "put p1").await, "ok");
    let rust = client(&server, "inspector").await;

    let report = inspect(&rust, &simple_path).await.unwrap();
    assert_eq!(report.layout, Layout::SimpleQueue);
    let queue = report.queue.unwrap();
    assert_eq!(queue.depth, 3);
    let oldest = queue.oldest.unwrap();
    let (_, stat) = rust
        .get_data()
        .for_path(&format!("{simple_path}/{oldest}"))
        .await
        .unwrap();
    assert_eq!(queue.oldest_since_ms, Some(stat.ctime));
    assert_eq!(
        rust.get_data()
            .for_path(&format!("{simple_path}/{oldest}"))
            .await
            .unwrap()
            .0,
        b"j1"
    );

    let report = report_when(&rust, &queue_path, "Java's item lands", |r| {
        r.queue.as_ref().is_some_and(|q| q.depth == 1)
    })
    .await;
    assert_eq!(report.layout, Layout::DistributedQueue);
    assert_eq!(report.descendants, Some(1));
}
