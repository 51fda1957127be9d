//! Rust queues and Apache Curator's (Java, Debian's 5.4 jars) on the same nodes: each consumes
//! what the other produced, for the simple queue (also in exactly-once mode) and for
//! `DistributedQueue`'s item envelope.

use std::path::Path;

use curator_framework::codec::Utf8;
use curator_queues::{DistributedQueue, SimpleDistributedQueue};
use curator_test::{CuratorProgram, JavaPeer, TestingServer, Timing, unique_root};
use curator_testkit::client;

async fn ask(peer: &mut JavaPeer, line: &str) -> String {
    tokio::task::block_in_place(|| peer.ask(line)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_and_java_share_queues_both_ways() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("interop-queues");
    let (simple_path, queue_path, lock_path) = (
        format!("{root}/simple"),
        format!("{root}/queue"),
        format!("{root}/locks"),
    );
    let mut java = tokio::task::block_in_place(|| {
        let program = CuratorProgram::compile(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/QueuePeer.java"),
        )
        .unwrap();
        let mut peer = program
            .start(&[
                &server.connect_string(),
                &simple_path,
                &queue_path,
                &lock_path,
            ])
            .unwrap();
        assert_eq!(peer.read_line().unwrap(), "ready");
        peer
    });
    let c = client(&server.connect_string()).await;

    // Simple queue: Rust offers, Java takes in order; Java offers, Rust takes in order.
    let simple = SimpleDistributedQueue::builder(c.clone(), &simple_path)
        .build()
        .unwrap();
    for item in ["r1", "r2", "r3"] {
        simple.offer(item.as_bytes()).await.unwrap();
    }
    for item in ["r1", "r2", "r3"] {
        assert_eq!(ask(&mut java, "poll 5000").await, format!("item {item}"));
    }
    assert_eq!(ask(&mut java, "poll 100").await, "timeout");
    for item in ["j1", "j2"] {
        assert_eq!(ask(&mut java, &format!("offer {item}")).await, "ok");
    }
    assert_eq!(simple.take().await.unwrap(), b"j1");
    assert_eq!(simple.take().await.unwrap(), b"j2");

    // The exactly-once mode keeps Curator's items: Java takes what it offered, in order, and it
    // takes what Java offered. Its markers live beside the queue, never among the items.
    let exactly_once = SimpleDistributedQueue::builder(c.clone(), &simple_path)
        .exactly_once()
        .build()
        .unwrap();
    for item in ["e1", "e2"] {
        exactly_once.offer(item.as_bytes()).await.unwrap();
    }
    for item in ["e1", "e2"] {
        assert_eq!(ask(&mut java, "poll 5000").await, format!("item {item}"));
    }
    assert_eq!(ask(&mut java, "offer j3").await, "ok");
    assert_eq!(exactly_once.take().await.unwrap(), b"j3");
    assert!(
        curator_testkit::children(&c, &simple_path)
            .await
            .iter()
            .all(|name| name.starts_with("qn-"))
    );
    assert_eq!(
        curator_testkit::children(&c, &format!("{simple_path}-outcomes")).await,
        Vec::<String>::new()
    );

    // DistributedQueue: Java puts, a Rust lock-safe consumer gets them in order...
    for item in ["j1", "j2", "j3"] {
        assert_eq!(ask(&mut java, &format!("put {item}")).await, "ok");
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // The Rust consumer locks under a directory of its own: lock directories are container
    // nodes, and once this one had children and emptied, the server may remove it at any moment,
    // after Java's consumer checked it exists at start; Curator's lock-safe consumer then reads
    // the NoNode of its lock create as "consumed elsewhere" and skips the item for good.
    let rust_locks = format!("{lock_path}-rust");
    let consumer = DistributedQueue::<String>::builder(c.clone(), &queue_path)
        .codec(Utf8)
        .lock_path(&rust_locks)
        .consumer(move |item: String| {
            let _ = tx.send(item);
            futures::future::ready(Ok::<_, String>(()))
        })
        .build()
        .unwrap();
    consumer.start().await.unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(
            tokio::time::timeout(Timing::new().wait(), rx.recv())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    assert_eq!(got, ["j1", "j2", "j3"]);
    consumer.close().await.unwrap();
    let queue = DistributedQueue::<String>::builder(c.clone(), &queue_path)
        .codec(Utf8)
        .build()
        .unwrap();
    queue.start().await.unwrap();
    curator_testkit::eventually("Java's items are deleted", || async {
        queue.is_empty().await.unwrap()
    })
    .await;

    // ...and Rust puts (one single and one multi-item node), a Java lock-safe consumer gets them.
    queue.put(&"r1".to_owned()).await.unwrap();
    queue
        .put_multi(&["r2".to_owned(), "r3".to_owned()])
        .await
        .unwrap();
    assert_eq!(ask(&mut java, "consume").await, "ok");
    let wait = Timing::new().forever().as_millis();
    assert_eq!(
        ask(&mut java, &format!("consumed 3 {wait}")).await,
        "items r1,r2,r3"
    );
}
