//! The latch's leadership metrics through the `metrics` facade, against a real server: a
//! leadership's end records one tenure and the `is_leader` gauge follows it. Counts, never
//! durations.
//!
//! The recorder is installed for the test's thread only, and `#[tokio::test]` runs the client's
//! tasks on that thread (a current-thread runtime).

use curator_election::LeaderLatch;
use curator_framework::metrics::names;
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit as testkit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

/// Every recipe metric since the last snapshot (which resets the recorder: gauges to 0 too), as
/// (metric, `name` label, value); operation metrics (no `name`) left out.
fn snapshot(snapshotter: &Snapshotter) -> Vec<(String, String, DebugValue)> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter_map(|(key, _, _, value)| {
            let name = key.key().labels().find(|l| l.key() == "name")?;
            Some((key.key().name().to_owned(), name.value().to_owned(), value))
        })
        .collect()
}

fn values<'a>(
    seen: &'a [(String, String, DebugValue)],
    metric: &str,
) -> Vec<(&'a str, &'a DebugValue)> {
    seen.iter()
        .filter(|(m, ..)| m == metric)
        .map(|(_, name, value)| (name.as_str(), value))
        .collect()
}

#[tokio::test]
async fn a_leadership_end_records_its_tenure() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let path = unique_root("latch-metrics");
    let latch = LeaderLatch::builder(client.clone(), &path, "a")
        .metrics_name("tenure-test")
        .build()
        .unwrap();
    latch.start().await.unwrap();
    tokio::time::timeout(Timing::new().wait(), latch.await_leadership())
        .await
        .expect("leads in time")
        .unwrap();
    let seen = snapshot(&snapshotter);
    assert_eq!(
        values(&seen, names::LEADER_IS_LEADER),
        [("tenure-test", &DebugValue::Gauge(1.0.into()))]
    );
    assert!(values(&seen, names::LEADER_TENURE_SECONDS).is_empty());

    latch.close().await.unwrap();
    let seen = snapshot(&snapshotter);
    let tenure = values(&seen, names::LEADER_TENURE_SECONDS);
    assert_eq!(tenure.len(), 1);
    assert!(
        matches!(tenure[0], ("tenure-test", DebugValue::Histogram(v)) if v.len() == 1),
        "{tenure:?}"
    );
    client.close().await.unwrap();
}
