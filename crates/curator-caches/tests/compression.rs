//! Caches on a client with compression on by default (`enable_compression()`): they hold and
//! report decompressed data, in both watch modes (multi-reads and watched single reads); a node
//! that does not decompress stays with its stored bytes, is reported, and is still followed.

mod support;

use std::time::Duration;

use curator_caches::{CacheError, CacheEvent, CuratorCache, WatchMode};
use curator_framework::{CuratorFramework, Error};
use curator_test::{TestingServer, unique_root};
use support::Recorder;

fn changed_to(event: &CacheEvent, path: &str) -> Option<Vec<u8>> {
    match event {
        CacheEvent::Changed { node, .. } if node.path() == path => Some(node.data()?.to_vec()),
        _ => None,
    }
}

async fn cache_on(
    client: &CuratorFramework,
    root: &str,
    mode: WatchMode,
) -> (CuratorCache, Recorder) {
    let cache = CuratorCache::builder(client.clone(), root)
        .with_mode(mode)
        .build()
        .unwrap();
    let mut recorder = Recorder::new(&cache.listenable());
    cache.start().await.unwrap();
    recorder
        .until("Initialized", |e| matches!(e, CacheEvent::Initialized))
        .await;
    (cache, recorder)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caches_decompress_when_the_client_does() {
    let server = TestingServer::start().await.unwrap();
    let plain = curator_testkit::client(&server.connect_string()).await;
    let compressing = curator_testkit::started(
        curator_testkit::builder(&server.connect_string(), Duration::from_secs(15))
            .enable_compression(),
    )
    .await;
    let text: Vec<u8> = (0..2000)
        .flat_map(|n| format!("entry {n} of a compressed node\n").into_bytes())
        .collect();

    for mode in [WatchMode::Persistent, WatchMode::OneShot] {
        let root = unique_root("cache-compression");
        let (a, b, raw) = (
            format!("{root}/a"),
            format!("{root}/b"),
            format!("{root}/raw"),
        );
        // The root (and its parents) get empty, uncompressed data; a and b are compressed.
        compressing
            .create()
            .creating_parents_if_needed()
            .for_path(&a, b"alpha")
            .await
            .unwrap();
        compressing.create().for_path(&b, &text).await.unwrap();
        plain.create().for_path(&raw, b"not gzip").await.unwrap();

        let (cache, mut events) = cache_on(&compressing, &root, mode).await;
        assert_eq!(cache.get(&root).unwrap().data(), Some(&b""[..]), "{mode:?}");
        assert_eq!(
            cache.get(&a).unwrap().data(),
            Some(&b"alpha"[..]),
            "{mode:?}"
        );
        assert_eq!(cache.get(&b).unwrap().data(), Some(&text[..]), "{mode:?}");
        // The node that does not decompress: kept as stored, and reported.
        assert_eq!(
            cache.get(&raw).unwrap().data(),
            Some(&b"not gzip"[..]),
            "{mode:?}"
        );
        let reported = events.log.iter().any(|event| {
            matches!(
                event,
                CacheEvent::Error(CacheError::Read {
                    path,
                    error: Error::Decompression { .. },
                }) if *path == raw
            )
        });
        assert!(reported, "{mode:?}: {:#?}", events.log);

        // Changes arrive decompressed, also for the node that did not decompress before.
        compressing.set_data().for_path(&a, b"beta").await.unwrap();
        let seen = events
            .until("a changed", |e| changed_to(e, &a).is_some())
            .await;
        assert_eq!(changed_to(&seen, &a).unwrap(), b"beta", "{mode:?}");
        plain
            .set_data()
            .compressed()
            .for_path(&raw, b"gzip now")
            .await
            .unwrap();
        let seen = events
            .until("raw changed", |e| changed_to(e, &raw).is_some())
            .await;
        assert_eq!(changed_to(&seen, &raw).unwrap(), b"gzip now", "{mode:?}");
        cache.close().await.unwrap();

        // A cache on a client without the default holds the stored (gzip) bytes.
        let (stored, _) = cache_on(&plain, &root, mode).await;
        let data = stored.get(&a).unwrap().data().unwrap().to_vec();
        assert_eq!(&data[..2], &[0x1f, 0x8b], "{mode:?}");
        stored.close().await.unwrap();
    }
}
