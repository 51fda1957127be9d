//! Queue depth and consumer lag through the `metrics` facade, against a real server: counts of
//! samples and the depth a listing saw, never durations.
//!
//! The recorder is installed for the test's thread only, and `#[tokio::test]` runs the client's
//! tasks on that thread (a current-thread runtime).

use curator_framework::metrics::names;
use curator_queues::SimpleDistributedQueue;
use curator_test::{TestingServer, unique_root};
use curator_testkit::client;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

#[tokio::test]
async fn takes_record_their_lag_and_listings_the_depth() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let queue = SimpleDistributedQueue::builder(c.clone(), &unique_root("queue-metrics"))
        .metrics_name("jobs")
        .build()
        .unwrap();
    for i in 0..3u8 {
        queue.offer(&[i]).await.unwrap();
    }
    let _ = snapshotter.snapshot();

    // One listing (three items), then three takes from what it saw.
    for i in 0..3u8 {
        assert_eq!(queue.poll().await.unwrap(), Some(vec![i]));
    }
    let seen = snapshotter.snapshot().into_vec();
    let value = |metric: &str| {
        seen.iter()
            .find(|(key, ..)| key.key().name() == metric)
            .map(|(key, _, _, value)| {
                let name = key.key().labels().find(|l| l.key() == "name").unwrap();
                assert_eq!(name.value(), "jobs");
                value
            })
    };
    assert_eq!(
        value(names::QUEUE_DEPTH),
        Some(&DebugValue::Gauge(3.0.into()))
    );
    assert!(
        matches!(value(names::QUEUE_CONSUMER_LAG_SECONDS), Some(DebugValue::Histogram(v)) if v.len() == 3)
    );

    // An empty queue lists again: depth 0, and nothing taken.
    assert_eq!(queue.poll().await.unwrap(), None);
    let seen = snapshotter.snapshot().into_vec();
    let lags = seen
        .iter()
        .filter(|(key, ..)| key.key().name() == names::QUEUE_CONSUMER_LAG_SECONDS)
        .map(|(.., value)| match value {
            DebugValue::Histogram(v) => v.len(),
            other => panic!("{other:?}"),
        })
        .sum::<usize>();
    assert_eq!(lags, 0);
    c.close().await.unwrap();
}
