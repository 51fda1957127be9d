//! The cache's event lag through the `metrics` facade, against a real server: one sample per
//! live created or changed node, none for the initial load or deletions. Counts, never
//! durations.
//!
//! The recorder is installed for the test's thread only, and `#[tokio::test]` runs the client's
//! tasks on that thread (a current-thread runtime).

mod support;

use curator_caches::{CacheEvent, CuratorCache};
use curator_framework::metrics::names;
use curator_test::{TestingServer, unique_root};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use support::Recorder;

/// Samples of the event lag per `name` label since the last snapshot.
fn lag_samples(snapshotter: &Snapshotter) -> Vec<(String, usize)> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == names::CACHE_EVENT_LAG_SECONDS)
        .map(|(key, _, _, value)| {
            let name = key.key().labels().find(|l| l.key() == "name").unwrap();
            match value {
                DebugValue::Histogram(v) => (name.value().to_owned(), v.len()),
                other => panic!("{other:?}"),
            }
        })
        .collect()
}

#[tokio::test]
async fn live_events_record_their_lag() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("cache-metrics");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/before"), b"0")
        .await
        .unwrap();
    let cache = CuratorCache::builder(client.clone(), &root)
        .metrics_name("configs")
        .build()
        .unwrap();
    let mut events = Recorder::new(&cache.listenable());
    cache.start().await.unwrap();
    events
        .until("Initialized", |e| matches!(e, CacheEvent::Initialized))
        .await;
    assert_eq!(
        lag_samples(&snapshotter),
        [],
        "the initial load records nothing"
    );

    let node = format!("{root}/a");
    client.create().for_path(&node, b"1").await.unwrap();
    events
        .until(
            "a created",
            |e| matches!(e, CacheEvent::Created { node: n } if n.path() == node),
        )
        .await;
    client.set_data().for_path(&node, b"2").await.unwrap();
    events
        .until(
            "a changed",
            |e| matches!(e, CacheEvent::Changed { node: n, .. } if n.path() == node),
        )
        .await;
    client.delete().for_path(&node).await.unwrap();
    events
        .until(
            "a deleted",
            |e| matches!(e, CacheEvent::Deleted { old } if old.path() == node),
        )
        .await;
    assert_eq!(lag_samples(&snapshotter), [("configs".to_owned(), 2)]);
    cache.close().await.unwrap();
    client.close().await.unwrap();
}
