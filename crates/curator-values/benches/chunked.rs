//! Write and read times of chunked values (1, 4 and 16 MiB) against a test server, beside a
//! plain node of 1 000 000 bytes (the largest chunk). Prints medians of 5 rounds.
//!
//! ```text
//! cargo bench -p curator-framework --bench chunked
//! ```
//! Starts a server of its own with a 1 GiB heap: with the test server's default 384 MiB, ZooKeeper
//! 3.8 ran out of heap after about 100 MiB of chunk writes in quick succession (it keeps recent
//! transactions, data and all, in memory).

use std::time::{Duration, Instant};

use curator_framework::CuratorFramework;
use curator_framework::retry::RetryNTimes;
use curator_test::TestingServer;
use curator_values::chunked::{ChunkSettings, ChunkedValue};

const ROUNDS: usize = 5;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn data(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo bench` passes `--bench`; test runners list or run bench targets without it.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let server = TestingServer::builder()
        .jvm_arg("-Xmx1g")
        .start()
        .await
        .expect("a server");
    let client = CuratorFramework::builder()
        .connect_string(server.connect_string())
        .session_timeout(Duration::from_secs(30))
        .retry_policy(RetryNTimes::new(3, Duration::from_millis(100)))
        .build()
        .expect("settings");
    client.start().await.expect("start");
    client
        .block_until_connected(Duration::from_secs(30))
        .await
        .expect("connected");
    let root = curator_test::unique_root("bench-chunked");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&root, b"")
        .await
        .expect("root");

    // The baseline: one plain node of the largest chunk's size.
    let plain = format!("{root}/plain");
    let bytes = data(0, 1_000_000);
    client
        .create()
        .for_path(&plain, &bytes)
        .await
        .expect("plain");
    let (mut writes, mut reads) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let start = Instant::now();
        client
            .set_data()
            .for_path(&plain, &bytes)
            .await
            .expect("set");
        writes.push(start.elapsed());
        let start = Instant::now();
        client.get_data().for_path(&plain).await.expect("get");
        reads.push(start.elapsed());
    }
    println!("| value | write (median ms) | read (median ms) | write MiB/s | read MiB/s |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    report(
        "plain node, 1 000 000 B",
        1_000_000,
        median(writes),
        median(reads),
    );

    for mib in [1usize, 4, 16] {
        let len = mib << 20;
        let value = ChunkedValue::new(
            client.clone(),
            &format!("{root}/v{mib}"),
            ChunkSettings::new(),
        )
        .expect("value");
        value.create(b"").await.expect("create");
        let (mut writes, mut reads) = (Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            let bytes = data(round as u8, len);
            let start = Instant::now();
            value.set(&bytes).await.expect("set");
            writes.push(start.elapsed());
            let start = Instant::now();
            let (read, _) = value.read().await.expect("read");
            reads.push(start.elapsed());
            assert!(read == bytes);
        }
        report(
            &format!("chunked, {mib} MiB"),
            len,
            median(writes),
            median(reads),
        );
    }
    client
        .delete()
        .deleting_children_if_needed()
        .for_path(&root)
        .await
        .expect("cleanup");
    client.close().await.unwrap();
}

fn report(what: &str, len: usize, write: Duration, read: Duration) {
    let mib = len as f64 / f64::from(1u32 << 20);
    println!(
        "| {what} | {:.1} | {:.1} | {:.0} | {:.0} |",
        write.as_secs_f64() * 1e3,
        read.as_secs_f64() * 1e3,
        mib / write.as_secs_f64(),
        mib / read.as_secs_f64()
    );
}
