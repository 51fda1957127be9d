//! Compressed node data against a real ZooKeeper server: per operation, as the client's default,
//! in transactions; what the server stores is gzip; bad data is a typed error; the size limit
//! applies to the compressed data.

mod support;

use std::io::Read;

use curator_framework::ops::transaction::TransactionOp;
use curator_framework::paths::MAX_DATA_LEN;
use curator_framework::{CuratorFramework, Error};
use curator_test::TestingServer;

/// `len` bytes of text that compresses well but not trivially.
fn text(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let mut n = 0u64;
    while out.len() < len {
        out.extend_from_slice(format!("line {n}: the quick brown fox {}\n", n % 97).as_bytes());
        n += 1;
    }
    out.truncate(len);
    out
}

fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .read_to_end(&mut out)
        .expect("the stored data is gzip");
    out
}

/// The stored bytes, read without decompression.
async fn raw(client: &CuratorFramework, path: &str) -> Vec<u8> {
    client
        .get_data()
        .undecompressed()
        .for_path(path)
        .await
        .unwrap()
        .0
}

/// The data at `path`, decompressed.
async fn unzipped(client: &CuratorFramework, path: &str) -> Vec<u8> {
    client
        .get_data()
        .decompressed()
        .for_path(path)
        .await
        .unwrap()
        .0
}

#[tokio::test]
async fn each_operation_round_trips_and_stores_gzip() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "compress-ops").await;
    let (path, payload) = (format!("{root}/a"), text(100_000));

    client
        .create()
        .compressed()
        .for_path(&path, &payload)
        .await
        .unwrap();
    let stored = raw(&client, &path).await;
    assert_eq!(&stored[..2], &[0x1f, 0x8b]);
    assert!(stored.len() < payload.len() / 5, "{} bytes", stored.len());
    assert_eq!(gunzip(&stored), payload);
    // Without decompressed() a client without the default reads the stored bytes.
    let (plain_read, stat) = client.get_data().for_path(&path).await.unwrap();
    assert_eq!(plain_read, stored);
    assert_eq!(stat.data_length as usize, stored.len());
    let data = unzipped(&client, &path).await;
    assert_eq!(data, payload);

    // set_data, and an empty payload.
    client
        .set_data()
        .compressed()
        .for_path(&path, b"")
        .await
        .unwrap();
    assert_eq!(gunzip(&raw(&client, &path).await), b"");
    let (data, _, watcher) = client
        .get_data()
        .watched()
        .decompressed()
        .for_path(&path)
        .await
        .unwrap();
    assert!(data.is_empty());
    client
        .set_data()
        .compressed()
        .for_path(&path, b"second")
        .await
        .unwrap();
    watcher.await;
    let data = unzipped(&client, &path).await;
    assert_eq!(data, b"second");

    // Transactions: compressed steps beside an uncompressed one.
    let (t1, t2) = (format!("{root}/t1"), format!("{root}/t2"));
    client
        .transaction()
        .op(TransactionOp::create(&t1, b"one").compressed())
        .create(&t2, b"two")
        .op(TransactionOp::set_data(&path, b"third").compressed())
        .commit()
        .await
        .unwrap();
    assert_eq!(gunzip(&raw(&client, &t1).await), b"one");
    assert_eq!(raw(&client, &t2).await, b"two");
    assert_eq!(gunzip(&raw(&client, &path).await), b"third");
}

#[tokio::test]
async fn the_client_default_compresses_every_write_and_decompresses_every_read() {
    let server = TestingServer::start().await.unwrap();
    let plain = support::connected(&server.connect_string()).await;
    let root = support::create_root(&plain, "compress-default").await;
    let client =
        support::started(support::builder(&server.connect_string()).enable_compression()).await;
    assert!(client.compression_enabled());
    let (a, b, c) = (
        format!("{root}/a"),
        format!("{root}/b"),
        format!("{root}/c"),
    );
    let payload = text(50_000);

    client.create().for_path(&a, &payload).await.unwrap();
    assert_eq!(gunzip(&raw(&plain, &a).await), payload);
    assert_eq!(client.get_data().for_path(&a).await.unwrap().0, payload);
    client.set_data().for_path(&a, b"updated").await.unwrap();
    assert_eq!(gunzip(&raw(&plain, &a).await), b"updated");
    assert_eq!(client.get_data().for_path(&a).await.unwrap().0, b"updated");
    client
        .transaction()
        .create(&c, b"in a txn")
        .commit()
        .await
        .unwrap();
    assert_eq!(gunzip(&raw(&plain, &c).await), b"in a txn");

    // Opting out per operation.
    client
        .create()
        .uncompressed()
        .for_path(&b, b"as is")
        .await
        .unwrap();
    assert_eq!(raw(&plain, &b).await, b"as is");
    assert_eq!(raw(&client, &b).await, b"as is");
    // ...which the default then cannot decompress: a typed error naming the caller's path.
    match client.get_data().for_path(&b).await {
        Err(Error::Decompression { path, .. }) => assert_eq!(path, b),
        other => panic!("{other:?}"),
    }
    client
        .set_data()
        .uncompressed()
        .for_path(&a, b"plain again")
        .await
        .unwrap();
    assert_eq!(raw(&plain, &a).await, b"plain again");

    // A namespaced view passes the caller's path (namespace removed) and still round trips.
    let spaced = client.using_namespace("compress-ns").unwrap();
    spaced.create().for_path("/n", b"namespaced").await.unwrap();
    assert_eq!(
        spaced.get_data().for_path("/n").await.unwrap().0,
        b"namespaced"
    );
    match spaced.get_data().for_path("/").await {
        Err(Error::Decompression { path, .. }) => assert_eq!(path, "/"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn data_that_is_not_gzip_is_a_typed_error() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "compress-bad").await;
    let payload = b"hello, compressed world".to_vec();
    let mut trailing = {
        let good = format!("{root}/good");
        client
            .create()
            .compressed()
            .for_path(&good, &payload)
            .await
            .unwrap();
        raw(&client, &good).await
    };
    trailing.extend_from_slice(b"!!");
    let mut truncated = trailing.clone();
    truncated.truncate(truncated.len() - 6);
    let cases: [(&str, Vec<u8>); 4] = [
        ("empty", Vec::new()),
        ("plain", b"plain text".to_vec()),
        ("trailing", trailing),
        ("truncated", truncated),
    ];
    for (name, data) in cases {
        let path = format!("{root}/{name}");
        client.create().for_path(&path, &data).await.unwrap();
        match client.get_data().decompressed().for_path(&path).await {
            Err(error @ Error::Decompression { .. }) => {
                assert!(!error.is_retryable(), "{name}");
                assert!(error.to_string().contains(&path), "{name}: {error}");
            }
            other => panic!("{name}: {other:?}"),
        }
        match client
            .get_data()
            .watched()
            .decompressed()
            .for_path(&path)
            .await
        {
            Err(Error::Decompression { .. }) => {}
            other => panic!("{name} watched: {other:?}"),
        }
    }
    // The client is fine afterwards.
    assert!(
        client
            .check_exists()
            .for_path(&root)
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn the_size_limit_applies_to_the_compressed_data() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "compress-size").await;

    // 3 MiB of text stores in well under 1 MiB compressed.
    let big = text(3 * 1024 * 1024);
    let path = format!("{root}/big");
    client
        .create()
        .compressed()
        .for_path(&path, &big)
        .await
        .unwrap();
    assert!(raw(&client, &path).await.len() <= MAX_DATA_LEN);
    let data = unzipped(&client, &path).await;
    assert_eq!(data, big);
    client
        .set_data()
        .compressed()
        .for_path(&path, &big)
        .await
        .unwrap();
    // ...but not uncompressed.
    assert!(matches!(
        client.set_data().for_path(&path, &big).await,
        Err(Error::InvalidArgument(_))
    ));

    // Data that does not compress (pseudo-random bytes) is still over the limit compressed:
    // refused before anything is sent.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let noise: Vec<u8> = (0..MAX_DATA_LEN + 1)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let refused = format!("{root}/noise");
    for result in [
        client
            .create()
            .compressed()
            .for_path(&refused, &noise)
            .await
            .map(drop),
        client
            .set_data()
            .compressed()
            .for_path(&path, &noise)
            .await
            .map(drop),
        client
            .transaction()
            .op(TransactionOp::create(&refused, &noise).compressed())
            .commit()
            .await
            .map(drop),
    ] {
        match result {
            Err(Error::InvalidArgument(message)) => assert!(message.contains("exceeds")),
            other => panic!("{other:?}"),
        }
    }
    assert!(
        client
            .check_exists()
            .for_path(&refused)
            .await
            .unwrap()
            .is_none()
    );
}
