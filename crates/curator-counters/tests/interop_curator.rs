//! Rust counters and Apache Curator's (Java, Debian's 5.4 jars) on the same nodes: each reads
//! what the other wrote, and concurrent increments from both add up.

use std::path::Path;
use std::time::Duration;

use curator_counters::{DistributedAtomicLong, SharedCount};
use curator_test::{CuratorProgram, JavaPeer, TestingServer, Timing, unique_root};
use curator_testkit::{client, patient};
use futures::StreamExt;

async fn ask(peer: &mut JavaPeer, line: &str) -> String {
    tokio::task::block_in_place(|| peer.ask(line)).unwrap()
}

fn java_peer(connect: &str, count: &str, long: &str) -> JavaPeer {
    let program = CuratorProgram::compile(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/CounterPeer.java"),
    )
    .unwrap();
    let mut peer = program.start(&[connect, count, long]).unwrap();
    assert_eq!(peer.read_line().unwrap(), "ready");
    peer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_counts_and_atomic_longs_are_shared_with_java() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("interop-counters");
    let (count_path, long_path) = (format!("{root}/count"), format!("{root}/long"));
    // Rust creates the count (its seed wins), then Java joins.
    let count = SharedCount::new(client(&server.connect_string()).await, &count_path, 7).unwrap();
    count.start().await.unwrap();
    let mut java = tokio::task::block_in_place(|| {
        java_peer(&server.connect_string(), &count_path, &long_path)
    });
    assert_eq!(ask(&mut java, "count").await, "count 7");

    // Rust sets, Java sees; Java sets, Rust sees.
    count.set_count(-12).await.unwrap();
    assert_eq!(ask(&mut java, "count-wait -12").await, "count -12");
    let mut seen = count.stream();
    assert_eq!(ask(&mut java, "count-set 40000").await, "ok");
    let value = tokio::time::timeout(Timing::new().wait(), seen.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(value.value, 40000);

    // Atomic longs: each reads the other's writes, and concurrent increments add up.
    let long = DistributedAtomicLong::builder(
        client(&server.connect_string()).await,
        &long_path,
        patient(),
    )
    .build()
    .unwrap();
    assert!(long.subtract(5).await.unwrap().succeeded);
    assert_eq!(ask(&mut java, "long").await, "long -5");
    assert_eq!(ask(&mut java, "long-add 10 1").await, "long 5 1");
    assert_eq!(long.get().await.unwrap().post_value, 5);

    let rust_side = tokio::spawn({
        let long = long.clone();
        async move {
            let mut successes = 0;
            for _ in 0..100 {
                if long.increment().await.unwrap().succeeded {
                    successes += 1;
                }
            }
            successes
        }
    });
    let java_answer = ask(&mut java, "long-add 1 100").await;
    let java_successes: i64 = java_answer.rsplit(' ').next().unwrap().parse().unwrap();
    let rust_successes = tokio::time::timeout(Duration::from_secs(60), rust_side)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(java_successes, 100, "{java_answer}");
    assert_eq!(rust_successes, 100);
    assert_eq!(long.get().await.unwrap().post_value, 205);
    assert_eq!(ask(&mut java, "long").await, "long 205");
    count.close().await.unwrap();
}
