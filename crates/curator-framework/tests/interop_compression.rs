//! Compressed node data shared with Apache Curator (Java, Debian's 5.4 jars): what Java writes
//! with `compressed()` reads here with `decompressed()`, and the other way round, byte for byte.

mod support;

use std::fmt::Write as _;
use std::path::Path;

use curator_framework::{CuratorFramework, Error};
use curator_test::{CuratorProgram, JavaPeer, TestingServer, unique_root};

fn hex(data: &[u8]) -> String {
    if data.is_empty() {
        return "-".to_owned();
    }
    data.iter()
        .fold(String::with_capacity(data.len() * 2), |mut out, byte| {
            let _ = write!(out, "{byte:02x}");
            out
        })
}

fn unhex(text: &str) -> Vec<u8> {
    if text == "-" {
        return Vec::new();
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex from Java"))
        .collect()
}

async fn ask(peer: &mut JavaPeer, line: String) -> String {
    tokio::task::block_in_place(|| peer.ask(&line)).unwrap()
}

/// Java's `getData().decompressed()` (or the stored bytes, with `raw`) of `path`.
async fn java_read(peer: &mut JavaPeer, command: &str, path: &str) -> Vec<u8> {
    let answer = ask(peer, format!("{command} {path}")).await;
    let data = answer
        .strip_prefix("data ")
        .unwrap_or_else(|| panic!("{command} {path}: {answer}"));
    unhex(data)
}

fn java_peer(connect: &str) -> JavaPeer {
    let program = CuratorProgram::compile(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/CompressionPeer.java"),
    )
    .unwrap();
    let mut peer = program.start(&[connect]).unwrap();
    assert_eq!(peer.read_line().unwrap(), "ready");
    peer
}

/// 100 KB of text, an empty payload, and a short binary one.
fn payloads() -> Vec<(&'static str, Vec<u8>)> {
    let mut text = String::new();
    let mut n = 0u32;
    while text.len() < 100_000 {
        let _ = writeln!(
            text,
            "{n}: Curator and curator-rs share this node; ünïcödé ✓"
        );
        n += 1;
    }
    vec![
        ("text", text.into_bytes()),
        ("empty", Vec::new()),
        ("binary", (0..=255u8).rev().collect()),
    ]
}

async fn rust_read(client: &CuratorFramework, path: &str) -> Vec<u8> {
    client
        .get_data()
        .decompressed()
        .for_path(path)
        .await
        .unwrap()
        .0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_nodes_are_shared_with_java_curator() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let mut java = tokio::task::block_in_place(|| java_peer(&server.connect_string()));
    let root = unique_root("interop-compression");

    for (name, payload) in payloads() {
        // Java writes compressed, Rust reads decompressed (and a client with the default on).
        let path = format!("{root}/from-java-{name}");
        assert_eq!(
            ask(&mut java, format!("create {path} {}", hex(&payload))).await,
            "ok",
            "{name}"
        );
        assert_eq!(rust_read(&client, &path).await, payload, "{name}");
        let stored = client.get_data().for_path(&path).await.unwrap().0;
        assert_eq!(&stored[..2], &[0x1f, 0x8b], "{name}");
        assert_eq!(
            ask(
                &mut java,
                format!("set {path} {}", hex(&payload[..payload.len() / 2]))
            )
            .await,
            "ok"
        );
        assert_eq!(
            rust_read(&client, &path).await,
            &payload[..payload.len() / 2],
            "{name} set"
        );

        // Rust writes compressed, Java reads decompressed.
        let path = format!("{root}/from-rust-{name}");
        client
            .create()
            .compressed()
            .for_path(&path, &payload)
            .await
            .unwrap();
        assert_eq!(java_read(&mut java, "read", &path).await, payload, "{name}");
        client
            .set_data()
            .compressed()
            .for_path(&path, &payload[payload.len() / 3..])
            .await
            .unwrap();
        assert_eq!(
            java_read(&mut java, "read", &path).await,
            &payload[payload.len() / 3..],
            "{name} set"
        );
        // Java sees gzip stored, as Rust wrote it.
        let stored = java_read(&mut java, "raw", &path).await;
        assert_eq!(&stored[..2], &[0x1f, 0x8b], "{name}");
    }

    // A Rust client with compression on by default reads Java's nodes too.
    let defaulted =
        support::started(support::builder(&server.connect_string()).enable_compression()).await;
    let (_, text) = &payloads()[0];
    let path = format!("{root}/from-java-text");
    assert_eq!(
        defaulted.get_data().for_path(&path).await.unwrap().0,
        &text[..text.len() / 2]
    );
    // And Java refuses, as Rust does, data that is not compressed.
    let plain = format!("{root}/plain");
    client.create().for_path(&plain, b"not gzip").await.unwrap();
    let answer = ask(&mut java, format!("read {plain}")).await;
    assert!(answer.starts_with("error "), "{answer}");
    assert!(matches!(
        defaulted.get_data().for_path(&plain).await,
        Err(Error::Decompression { .. })
    ));
}
