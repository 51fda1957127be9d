//! Chunked values against a real ZooKeeper server: sizes around chunk boundaries and past
//! 1 MiB, the size limit, concurrent writers and readers (a read is always exactly one written
//! value), writers that die before the flip, session expiry and a server restart mid-write.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use curator_framework::{CreateMode, CuratorFramework, Error};
use curator_test::{FaultProxy, TestingServer, Timing, patterned_bytes};
use curator_testkit as testkit;
use curator_values::chunked::{ChunkSettings, ChunkedValue};

/// Waits until a writer's marker is under the value's chunk container (a write is under way).
async fn writer_marker(client: &CuratorFramework, value: &ChunkedValue) {
    curator_test::eventually("the writer's marker", || async {
        let (names, _) = client
            .get_children()
            .for_path(value.chunk_dir())
            .await
            .unwrap();
        names.iter().any(|name| name.starts_with("w-"))
    })
    .await;
}

/// The generations (not the markers) under the value's chunk container.
async fn generations(client: &CuratorFramework, value: &ChunkedValue) -> Vec<String> {
    match client.get_children().for_path(value.chunk_dir()).await {
        Ok((names, _)) => names.into_iter().filter(|n| !n.starts_with("w-")).collect(),
        Err(Error::NoNode) => Vec::new(),
        Err(error) => panic!("listing chunks: {error}"),
    }
}

#[tokio::test]
async fn values_round_trip_at_every_size_around_chunk_boundaries() {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let root = testkit::create_root(&client, "chunked-sizes").await;
    let settings = ChunkSettings::new()
        .with_chunk_size(1000)
        .with_inline_limit(100);
    let blob = ChunkedValue::new(client.clone(), &format!("{root}/v"), settings).unwrap();
    blob.create(b"").await.unwrap();
    assert_eq!(blob.read().await.unwrap().0, b"");
    let sizes = [
        0, 1, 100, 101, 999, 1000, 1001, 2000, 2999, 3000, 10_001, 0, 50,
    ];
    for (seed, len) in sizes.into_iter().enumerate() {
        let data = patterned_bytes(seed as u64, len);
        let stat = blob.set(&data).await.unwrap();
        let (read, read_stat) = blob.read().await.unwrap();
        assert_eq!(read.len(), len);
        assert!(read == data, "size {len}");
        assert_eq!(read_stat.version, stat.version);
        // The manifest is small whatever the value; only the current generation is left.
        let (manifest, _) = client.get_data().for_path(blob.path()).await.unwrap();
        let gens = generations(&client, &blob).await;
        if len <= 100 {
            assert_eq!(manifest.len(), 18 + len, "inline at {len}");
            assert!(gens.is_empty(), "{gens:?}");
        } else {
            assert!(manifest.len() < 100);
            assert_eq!(gens.len(), 1, "{gens:?}");
            let chunk_path = format!("{}/{}", blob.chunk_dir(), gens[0]);
            let (chunks, _) = client.get_children().for_path(&chunk_path).await.unwrap();
            assert_eq!(chunks.len(), len.div_ceil(1000), "chunks at {len}");
        }
    }
}

#[tokio::test]
async fn a_five_mib_value_with_the_default_settings() {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let root = testkit::create_root(&client, "chunked-5mib").await;
    let blob = ChunkedValue::new(client.clone(), &format!("{root}/a/b"), ChunkSettings::new())
        .unwrap()
        .creating_parent_containers_if_needed();
    let big = patterned_bytes(5, 5 * 1024 * 1024);
    blob.create_or_set(&big).await.unwrap();
    assert!(blob.read().await.unwrap().0 == big);
    let gens = generations(&client, &blob).await;
    assert_eq!(gens.len(), 1);
    // 5 MiB in chunks of 1 000 000 bytes: six of them.
    let (chunks, _) = client
        .get_children()
        .for_path(&format!("{}/{}", blob.chunk_dir(), gens[0]))
        .await
        .unwrap();
    assert_eq!(chunks.len(), 6);
    // Back to a small (inline) value: the chunks go.
    blob.create_or_set(b"small").await.unwrap();
    assert_eq!(blob.read().await.unwrap().0, b"small");
    assert!(generations(&client, &blob).await.is_empty());
    // The exact default boundary: 1 000 000 bytes stay inline, one more is chunked.
    for len in [1_000_000, 1_000_001, 2_000_000] {
        let data = patterned_bytes(len as u64, len);
        blob.set(&data).await.unwrap();
        assert!(blob.read().await.unwrap().0 == data, "size {len}");
    }
    blob.delete(None).await.unwrap();
    assert_eq!(blob.read().await.unwrap_err(), Error::NoNode);
    assert_eq!(
        client.check_exists().for_path(blob.chunk_dir()).await,
        Ok(None)
    );
}

#[tokio::test]
async fn too_large_is_a_typed_error_and_writes_nothing() {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let root = testkit::create_root(&client, "chunked-limit").await;
    let path = format!("{root}/v");
    let blob = ChunkedValue::new(
        client.clone(),
        &path,
        ChunkSettings::new().with_max_size(2_000_000),
    )
    .unwrap();
    let error = blob.create(&vec![1; 2_000_001]).await.unwrap_err();
    assert_eq!(
        error,
        Error::ValueTooLarge {
            path: path.clone(),
            size: 2_000_001,
            limit: 2_000_000
        }
    );
    assert_eq!(client.check_exists().for_path(&path).await, Ok(None));
    assert_eq!(
        client.check_exists().for_path(blob.chunk_dir()).await,
        Ok(None)
    );
    blob.create(&vec![2; 2_000_000]).await.unwrap();
    assert!(matches!(
        blob.set(&vec![3; 3_000_000]).await,
        Err(Error::ValueTooLarge { .. })
    ));
    assert_eq!(blob.read().await.unwrap().0, vec![2; 2_000_000]);
    // Bad settings and paths are refused before anything is sent.
    assert!(matches!(
        ChunkedValue::new(client.clone(), "/", ChunkSettings::new()),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        ChunkedValue::new(
            client.clone(),
            &path,
            ChunkSettings::new().with_chunk_size(2 << 20)
        ),
        Err(Error::InvalidArgument(_))
    ));
    // A plain node is not a manifest.
    client
        .create()
        .for_path(&format!("{root}/plain"), b"x")
        .await
        .unwrap();
    let plain = ChunkedValue::new(
        client.clone(),
        &format!("{root}/plain"),
        ChunkSettings::new(),
    )
    .unwrap();
    assert!(matches!(plain.read().await, Err(Error::Decode { .. })));
}

#[tokio::test]
async fn compare_and_set_and_watches() {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let root = testkit::create_root(&client, "chunked-cas").await;
    let settings = ChunkSettings::new()
        .with_chunk_size(1000)
        .with_inline_limit(10);
    let blob = ChunkedValue::new(client.clone(), &format!("{root}/v"), settings).unwrap();
    let first = blob.create(&patterned_bytes(1, 5000)).await.unwrap();
    assert_eq!(blob.create(b"again").await, Err(Error::NodeExists));
    let (_, _, watcher) = blob.read_watched().await.unwrap();
    let second = blob
        .set_with_version(&patterned_bytes(2, 7000), first.version)
        .await
        .unwrap();
    watcher.changed().await;
    // A stale version loses and leaves nothing behind.
    assert_eq!(
        blob.set_with_version(&patterned_bytes(3, 9000), first.version)
            .await,
        Err(Error::BadVersion)
    );
    assert!(blob.read().await.unwrap().0 == patterned_bytes(2, 7000));
    assert_eq!(generations(&client, &blob).await.len(), 1);
    blob.set_with_version(b"tiny", second.version)
        .await
        .unwrap();
    assert_eq!(blob.read().await.unwrap().0, b"tiny");
    let missing = ChunkedValue::new(client.clone(), &format!("{root}/none"), settings).unwrap();
    assert_eq!(
        missing.set(&patterned_bytes(4, 3000)).await,
        Err(Error::NoNode)
    );
    assert_eq!(
        missing.set_with_version(&patterned_bytes(4, 3000), 0).await,
        Err(Error::NoNode)
    );
    assert!(generations(&client, &missing).await.is_empty());
    // Parents are required unless asked for.
    let deep = ChunkedValue::new(client.clone(), &format!("{root}/x/y"), settings).unwrap();
    assert_eq!(
        deep.create(&patterned_bytes(5, 3000)).await,
        Err(Error::NoNode)
    );
}

/// Writers and readers hammer one value; every read is exactly one of the written values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_and_readers_never_see_a_mix() {
    let server = TestingServer::start().await.unwrap();
    let setup = testkit::client(&server.connect_string()).await;
    let root = testkit::create_root(&setup, "chunked-hammer").await;
    let path = format!("{root}/v");
    let settings = ChunkSettings::new()
        .with_chunk_size(4096)
        .with_inline_limit(1024)
        .with_read_attempts(50);
    const WRITERS: u64 = 3;
    const WRITES: u64 = 15;
    // Sizes from inline to a dozen chunks; every value distinct.
    let written = |writer: u64, n: u64| {
        patterned_bytes(
            writer * 1000 + n,
            ((writer * 7 + n * 13) % 50) as usize * 1000,
        )
    };
    let mut all: HashSet<Vec<u8>> = HashSet::new();
    all.insert(b"seed".to_vec());
    for writer in 0..WRITERS {
        for n in 0..WRITES {
            all.insert(written(writer, n));
        }
    }
    let all = Arc::new(all);
    ChunkedValue::new(setup.clone(), &path, settings)
        .unwrap()
        .create(b"seed")
        .await
        .unwrap();

    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let mut readers = Vec::new();
    for _ in 0..3 {
        let client = testkit::client(&server.connect_string()).await;
        let blob = ChunkedValue::new(client, &path, settings).unwrap();
        let (all, done, reads) = (Arc::clone(&all), Arc::clone(&done), Arc::clone(&reads));
        readers.push(tokio::spawn(async move {
            let mut last_mzxid = 0;
            let mut unreadable = 0;
            while !done.load(Ordering::SeqCst) {
                match blob.read().await {
                    Ok((data, stat)) => {
                        assert!(
                            all.contains(&data),
                            "a read of {} bytes is no written value",
                            data.len()
                        );
                        assert!(stat.mzxid >= last_mzxid, "a read went back in time");
                        last_mzxid = stat.mzxid;
                        reads.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(Error::ChunkedRead { .. }) => unreadable += 1,
                    Err(error) => panic!("read: {error}"),
                }
            }
            unreadable
        }));
    }
    let mut writers = Vec::new();
    for writer in 0..WRITERS {
        let client = testkit::client(&server.connect_string()).await;
        let blob = ChunkedValue::new(client, &path, settings).unwrap();
        writers.push(tokio::spawn(async move {
            let mut wins = 0;
            for n in 0..WRITES {
                let data = written(writer, n);
                if n % 2 == 0 {
                    blob.set(&data).await.unwrap();
                    wins += 1;
                } else {
                    let (_, stat) = blob.read().await.unwrap();
                    match blob.set_with_version(&data, stat.version).await {
                        Ok(_) => wins += 1,
                        Err(Error::BadVersion) => {}
                        Err(error) => panic!("write: {error}"),
                    }
                }
            }
            wins
        }));
    }
    let mut wins = 0;
    for writer in writers {
        wins += writer.await.unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let mut unreadable = 0;
    for reader in readers {
        unreadable += reader.await.unwrap();
    }
    assert!(wins >= WRITERS * WRITES / 2, "{wins} writes won");
    assert!(reads.load(Ordering::SeqCst) > 0);
    eprintln!(
        "{wins} writes won, {} reads, {unreadable} reads gave up",
        reads.load(Ordering::SeqCst)
    );
    // Quiet now: the value reads, and after a purge only its generation (if any) is left.
    let blob = ChunkedValue::new(setup.clone(), &path, settings).unwrap();
    let (last, _) = blob.read().await.unwrap();
    assert!(all.contains(&last));
    blob.purge().await.unwrap();
    assert!(generations(&setup, &blob).await.len() <= 1);
}

/// A writer that made its chunks but never flipped: the old value stays; its generation goes
/// with the next write, or with a purge once its session is gone.
#[tokio::test]
async fn a_writer_that_dies_before_the_flip_leaves_the_old_value() {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let root = testkit::create_root(&client, "chunked-crash").await;
    let path = format!("{root}/v");
    let settings = ChunkSettings::new()
        .with_chunk_size(1000)
        .with_inline_limit(10);
    let blob = ChunkedValue::new(client.clone(), &path, settings).unwrap();
    let old = patterned_bytes(1, 4500);
    blob.create(&old).await.unwrap();
    let current = generations(&client, &blob).await;

    // A second writer's chunks and marker, as a write leaves them just before its flip.
    let dying = testkit::client(&server.connect_string()).await;
    let abandon = |dying: CuratorFramework, name: &'static str| {
        let dir = blob.chunk_dir().to_owned();
        async move {
            dying
                .create()
                .with_mode(CreateMode::Ephemeral)
                .for_path(&format!("{dir}/w-{name}"), b"")
                .await
                .unwrap();
            dying
                .create()
                .for_path(&format!("{dir}/{name}"), b"")
                .await
                .unwrap();
            for index in 0..3 {
                dying
                    .create()
                    .for_path(&format!("{dir}/{name}/{index}"), patterned_bytes(9, 1000))
                    .await
                    .unwrap();
            }
        }
    };
    abandon(dying.clone(), "abandoned1").await;
    assert!(blob.read().await.unwrap().0 == old);
    // Its writer is alive: purge keeps it.
    assert_eq!(blob.purge().await.unwrap(), 0);
    dying.close().await.unwrap();
    assert_eq!(blob.purge().await.unwrap(), 1);
    assert_eq!(generations(&client, &blob).await, current);
    assert!(blob.read().await.unwrap().0 == old);

    // The next write removes what an abandoned writer left (its session still alive).
    let dying = testkit::client(&server.connect_string()).await;
    abandon(dying.clone(), "abandoned2").await;
    let new = patterned_bytes(2, 2500);
    blob.set(&new).await.unwrap();
    let left = generations(&client, &blob).await;
    assert_eq!(left.len(), 1);
    assert!(!left.contains(&"abandoned2".to_owned()) && left != current);
    assert!(blob.read().await.unwrap().0 == new);
    dying.close().await.unwrap();

    // A real write whose client closes mid-way: the value is the old or the new one, whole.
    let writer_client = testkit::client(&server.connect_string()).await;
    let writer = ChunkedValue::new(writer_client.clone(), &path, ChunkSettings::new()).unwrap();
    let huge = patterned_bytes(3, 16 << 20);
    let write = tokio::spawn({
        let huge = huge.clone();
        async move { writer.set(&huge).await }
    });
    writer_marker(&client, &blob).await;
    writer_client.close().await.unwrap();
    let outcome = write.await.unwrap();
    let (now, _) = blob.read().await.unwrap();
    match outcome {
        Ok(_) => assert!(now == huge),
        Err(_) => assert!(now == new || now == huge, "{} bytes", now.len()),
    }
    blob.purge().await.unwrap();
    assert_eq!(generations(&client, &blob).await.len(), 1);
}

/// Session expiry and a server restart in the middle of writes: the writes finish or fail with
/// a typed error; reads are whole values.
#[tokio::test]
async fn session_expiry_and_server_restart_during_writes() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let client = testkit::client(&proxy.connect_string()).await;
    let observer = testkit::client(&server.connect_string()).await;
    let root = testkit::create_root(&observer, "chunked-faults").await;
    let path = format!("{root}/v");
    let settings = ChunkSettings::new()
        .with_chunk_size(100_000)
        .with_inline_limit(10);
    let blob = ChunkedValue::new(client.clone(), &path, settings).unwrap();
    let watcher = ChunkedValue::new(observer.clone(), &path, settings).unwrap();
    let first = patterned_bytes(1, 3_000_000);
    blob.create(&first).await.unwrap();

    // Expire the writer's session once its marker is there.
    let second = patterned_bytes(2, 8_000_000);
    let write = tokio::spawn({
        let (blob, second) = (blob.clone(), second.clone());
        async move { blob.set(&second).await }
    });
    writer_marker(&observer, &watcher).await;
    let session = client.session_id().unwrap();
    let credentials = proxy.session(session).unwrap();
    proxy.pause();
    let expiry =
        curator_test::expire_session(&server.connect_string(), &credentials, Timing::new().wait())
            .await
            .unwrap();
    assert_eq!(expiry, curator_test::Expiry::Expired);
    // Meanwhile the observer reads the old value, whole.
    assert!(watcher.read().await.unwrap().0 == first);
    proxy.resume();
    let outcome = write.await.unwrap();
    let (now, _) = watcher.read().await.unwrap();
    match &outcome {
        Ok(_) => assert!(now == second),
        Err(error) => {
            eprintln!("the write across the expiry failed: {error}");
            assert!(now == first || now == second);
        }
    }

    // A server restart between writes and reads.
    let third = patterned_bytes(3, 5_000_000);
    let write = tokio::spawn({
        let (blob, third) = (blob.clone(), third.clone());
        async move { blob.set(&third).await }
    });
    server.restart().await.unwrap();
    let outcome = tokio::time::timeout(Timing::new().wait(), write)
        .await
        .expect("the write ends")
        .unwrap();
    let (now, _) = watcher.read().await.unwrap();
    match outcome {
        Ok(_) => assert!(now == third),
        Err(error) => {
            eprintln!("the write across the restart failed: {error}");
            assert!(now == third || now == second || now == first);
        }
    }
    // After one more write and a purge, only the current generation is left.
    blob.set(&patterned_bytes(4, 1_000_000)).await.unwrap();
    blob.purge().await.unwrap();
    curator_test::eventually("abandoned generations purged", || async {
        let _ = blob.purge().await;
        generations(&observer, &blob).await.len() == 1
    })
    .await;
    assert!(watcher.read().await.unwrap().0 == patterned_bytes(4, 1_000_000));
}

/// Write and read times of a 16 MiB value, repeated (run with `--run-ignored only`; the
/// figures in docs/benchmarks.md come from `cargo bench --bench chunked`, optimized).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a test"]
async fn measure_sixteen_mib() {
    // With the test server's 384 MiB heap, ZooKeeper runs out of memory after about 100 MiB of
    // chunk writes in quick succession.
    let server = TestingServer::builder()
        .jvm_arg("-Xmx1g")
        .start()
        .await
        .unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let root = testkit::create_root(&client, "chunked-measure").await;
    let blob =
        ChunkedValue::new(client.clone(), &format!("{root}/v"), ChunkSettings::new()).unwrap();
    blob.create(b"").await.unwrap();
    for round in 0..12u64 {
        let data = patterned_bytes(round, 16 << 20);
        let start = std::time::Instant::now();
        if let Err(error) = blob.set(&data).await {
            let log = server.data_dir().unwrap().join("zookeeper.log");
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            panic!(
                "round {round}: {error}; server log tail:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        let wrote = start.elapsed();
        let start = std::time::Instant::now();
        assert!(blob.read().await.unwrap().0 == data);
        eprintln!("16 MiB: write {wrote:?}, read {:?}", start.elapsed());
    }
}
