//! SharedCount and SharedValue against a real ZooKeeper: seeds, versioned sets, listeners in
//! commit order, typed values, and following the node through restarts and session expiry.

use curator_counters::{SharedCount, SharedValue, VersionedValue};
use curator_framework::Error;
use curator_framework::codec::Raw;
use curator_test::{TestingServer, Timing, patterned_bytes, unique_root};
use curator_testkit::{client, raw};
use futures::StreamExt;

async fn next<T: Clone + Send + 'static>(
    stream: &mut curator_framework::listen::ListenerStream<VersionedValue<T>>,
) -> VersionedValue<T> {
    tokio::time::timeout(Timing::new().wait(), stream.next())
        .await
        .expect("a value in time")
        .expect("the stream goes on")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_are_seeded_once_shared_and_set_by_version() {
    let server = TestingServer::start().await.unwrap();
    let path = format!("{}/count", unique_root("shared-count"));
    let first = SharedCount::new(client(&server.connect_string()).await, &path, 10).unwrap();
    let second = SharedCount::new(client(&server.connect_string()).await, &path, 99).unwrap();
    assert_eq!(first.count(), Err(Error::NotStarted));
    first.start().await.unwrap();
    second.start().await.unwrap();
    assert_eq!(second.count().unwrap(), 10, "the first starter's seed wins");
    assert_eq!(
        raw(&client(&server.connect_string()).await, &path).await,
        [0, 0, 0, 10],
        "Curator's 4-byte encoding"
    );

    let mut seen = second.stream();
    first.set_count(-1).await.unwrap();
    assert_eq!(next(&mut seen).await, VersionedValue::new(1, -1));
    assert_eq!(second.count().unwrap(), -1);

    // A stale version loses; a fresh one wins, and the other instance hears of it.
    let mut first_seen = first.stream();
    let stale = VersionedValue::new(0, 10);
    assert!(!second.try_set_count(&stale, 5).await.unwrap());
    let fresh = second.versioned_value().unwrap();
    assert!(second.try_set_count(&fresh, 5).await.unwrap());
    assert_eq!(second.versioned_value().unwrap(), VersionedValue::new(2, 5));
    // (Its own earlier write may still be on its way to listeners added after it returned.)
    let mut heard = next(&mut first_seen).await;
    if heard == VersionedValue::new(1, -1) {
        heard = next(&mut first_seen).await;
    }
    assert_eq!(heard, VersionedValue::new(2, 5));
    assert_eq!(first.count().unwrap(), 5);
    first.close().await.unwrap();
    second.close().await.unwrap();
    assert_eq!(first.start().await, Err(Error::Closed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listeners_see_values_once_and_in_commit_order() {
    let server = TestingServer::start().await.unwrap();
    let path = format!("{}/count", unique_root("shared-order"));
    let reader = SharedCount::new(client(&server.connect_string()).await, &path, 0).unwrap();
    reader.start().await.unwrap();
    let mut seen = reader.stream();

    // Paced writes: every committed value is seen, in order, once.
    let writer = SharedCount::new(client(&server.connect_string()).await, &path, 0).unwrap();
    writer.start().await.unwrap();
    for value in 1..=20 {
        writer.set_count(value).await.unwrap();
        assert_eq!(next(&mut seen).await, VersionedValue::new(value, value));
    }

    // Concurrent writers: what is seen moves forward only and ends at the final value.
    let mut tasks = Vec::new();
    for w in 0..4 {
        let count = SharedCount::new(client(&server.connect_string()).await, &path, 0).unwrap();
        count.start().await.unwrap();
        tasks.push(tokio::spawn(async move {
            for i in 0..25 {
                count.set_count(1000 * (w + 1) + i).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let last_version = 20 + 100;
    let mut versions = Vec::new();
    loop {
        let value = next(&mut seen).await;
        versions.push(value.version);
        if value.version == last_version {
            break;
        }
    }
    assert!(
        versions.windows(2).all(|w| w[0] < w[1]),
        "versions strictly increase: {versions:?}"
    );
    assert_eq!(reader.versioned_value().unwrap().version, last_version);
    assert_eq!(
        reader.count().unwrap(),
        reader.read().await.unwrap().value,
        "the local view equals the server"
    );
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Limits {
    max_jobs: u32,
    queue: String,
}

#[tokio::test]
async fn typed_values_round_trip_and_bad_data_is_a_typed_error() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let path = format!("{}/limits", unique_root("shared-typed"));
    let limits = SharedValue::builder(
        c.clone(),
        &path,
        Limits {
            max_jobs: 4,
            queue: "default".into(),
        },
    )
    .build()
    .unwrap();
    limits.start().await.unwrap();
    assert_eq!(raw(&c, &path).await, br#"{"max_jobs":4,"queue":"default"}"#);
    let seen = limits.versioned_value().unwrap();
    let wanted = Limits {
        max_jobs: 8,
        ..seen.value.clone()
    };
    assert!(limits.try_set_value(&seen, wanted.clone()).await.unwrap());
    assert_eq!(limits.value().unwrap(), wanted);

    // Someone writes garbage: reads report it, nothing panics, and a good value recovers.
    let mut values = limits.stream();
    c.set_data().for_path(&path, b"not json").await.unwrap();
    let Err(Error::Decode { path: bad, .. }) = limits.read().await else {
        panic!("garbage decoded");
    };
    assert_eq!(bad, path);
    assert!(matches!(limits.value(), Err(Error::Decode { .. })));
    limits.set_value(wanted.clone()).await.unwrap();
    assert_eq!(
        next(&mut values).await.value,
        wanted,
        "garbage is never published"
    );

    // Raw bytes need no serde.
    let bytes = SharedValue::builder(c.clone(), &format!("{path}-raw"), vec![1u8, 2])
        .codec(Raw)
        .build()
        .unwrap();
    bytes.start().await.unwrap();
    assert_eq!(bytes.value().unwrap(), vec![1, 2]);
    limits.close().await.unwrap();
    bytes.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_view_follows_the_node_through_restart_and_expiry() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let path = format!("{}/count", unique_root("shared-faults"));
    let follower_client = client(&server.connect_string()).await;
    let follower = SharedCount::new(follower_client.clone(), &path, 0).unwrap();
    follower.start().await.unwrap();
    let mut seen = follower.stream();
    let writer = SharedCount::new(client(&server.connect_string()).await, &path, 0).unwrap();
    writer.start().await.unwrap();

    server.restart().await.unwrap();
    writer.set_count(1).await.unwrap();
    assert_eq!(next(&mut seen).await.value, 1, "seen after a restart");

    // The follower's session ends; a write lands before its new session reads again.
    let mut states = follower_client.connection_state_stream();
    follower_client.inject_session_expiration().await.unwrap();
    writer.set_count(2).await.unwrap();
    loop {
        let state = tokio::time::timeout(Timing::new().wait(), states.next())
            .await
            .unwrap()
            .unwrap();
        if state == curator_framework::ConnectionState::Reconnected {
            break;
        }
    }
    assert_eq!(next(&mut seen).await.value, 2, "re-read on the new session");
    writer.set_count(3).await.unwrap();
    assert_eq!(next(&mut seen).await.value, 3, "and followed again");
    assert_eq!(follower.count().unwrap(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_values_over_a_mib_are_whole_for_readers_and_listeners() {
    use curator_values::chunked::ChunkSettings;
    let server = TestingServer::start().await.unwrap();
    let path = format!("{}/blob", unique_root("shared-chunked"));
    let settings = ChunkSettings::new().with_max_size(8 << 20);
    let make = |client| {
        SharedValue::builder(client, &path, patterned_bytes(0, 1_500_000))
            .codec(Raw)
            .chunked_with(settings)
            .build()
            .unwrap()
    };
    let writer = make(client(&server.connect_string()).await);
    let reader = make(client(&server.connect_string()).await);
    writer.start().await.unwrap();
    reader.start().await.unwrap();
    assert!(
        reader.value().unwrap() == patterned_bytes(0, 1_500_000),
        "the seed, whole"
    );
    // The node itself is a small manifest.
    assert!(
        raw(&client(&server.connect_string()).await, &path)
            .await
            .len()
            < 100
    );

    let mut seen = reader.stream();
    let mut written = std::collections::HashSet::new();
    written.insert(patterned_bytes(0, 1_500_000));
    for n in 1..=6u64 {
        let value = patterned_bytes(n, (n as usize) * 700_000);
        written.insert(value.clone());
        writer.set_value(value).await.unwrap();
    }
    // Listeners get whole values (some may be skipped when writes are quicker than reads),
    // and end at the last one.
    let last = patterned_bytes(6, 6 * 700_000);
    loop {
        let heard = next(&mut seen).await;
        assert!(
            written.contains(&heard.value),
            "a listener got {} bytes that nobody wrote",
            heard.value.len()
        );
        if heard.value == last {
            break;
        }
    }
    assert!(reader.read().await.unwrap().value == last);

    // Compare-and-set on the manifest's version.
    let seen_now = writer.versioned_value().unwrap();
    assert!(
        writer
            .try_set_value(&seen_now, patterned_bytes(7, 10))
            .await
            .unwrap()
    );
    assert!(
        !reader
            .try_set_value(&seen_now, patterned_bytes(8, 2_000_000))
            .await
            .unwrap()
    );
    assert_eq!(reader.read().await.unwrap().value, patterned_bytes(7, 10));

    // Over the limit: a typed error, nothing written.
    let error = writer
        .set_value(patterned_bytes(9, 9 << 20))
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::ValueTooLarge { size, limit, .. } if size == 9 << 20 && limit == 8 << 20)
    );
    assert_eq!(reader.read().await.unwrap().value, patterned_bytes(7, 10));
    let too_big_seed = SharedValue::builder(
        client(&server.connect_string()).await,
        &path,
        patterned_bytes(1, 9 << 20),
    )
    .codec(Raw)
    .chunked_with(settings)
    .build();
    assert!(matches!(too_big_seed, Err(Error::ValueTooLarge { .. })));
    writer.close().await.unwrap();
    reader.close().await.unwrap();
}
