//! The mutex's wait and hold times through the `metrics` facade, against a real server: counts
//! of samples per `name` label, never their values.
//!
//! The recorder is installed for the test's thread only, and `#[tokio::test]` runs the client's
//! tasks on that thread (a current-thread runtime).

use curator_framework::metrics::names;
use curator_locks::InterProcessMutex;
use curator_test::{TestingServer, unique_root};
use curator_testkit as testkit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

/// Samples per `name` label of the histogram `metric` since the last snapshot (every snapshot
/// resets the recorder).
fn samples(snapshotter: &Snapshotter, metric: &str) -> Vec<(String, usize)> {
    let mut seen = Vec::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        if key.key().name() != metric {
            continue;
        }
        let name = key
            .key()
            .labels()
            .find(|l| l.key() == "name")
            .map(|l| l.value().to_owned())
            .expect("a name label");
        match value {
            DebugValue::Histogram(values) => seen.push((name, values.len())),
            other => panic!("{metric} is not a histogram: {other:?}"),
        }
    }
    seen
}

#[tokio::test]
async fn an_acquire_and_release_record_one_wait_and_one_hold() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let path = unique_root("mutex-metrics");
    let mutex = InterProcessMutex::builder(client.clone(), &path)
        .build()
        .unwrap();

    let guard = mutex.acquire().await.unwrap();
    // Reentrant holds wait for nothing, and the hold ends with the last release.
    let again = mutex.acquire().await.unwrap();
    again.release().await.unwrap();
    guard.release().await.unwrap();

    let entries = snapshotter.snapshot().into_vec();
    let count = |metric: &str| {
        entries
            .iter()
            .filter(|(key, ..)| key.key().name() == metric)
            .map(|(key, _, _, value)| {
                let name = key.key().labels().find(|l| l.key() == "name").unwrap();
                assert_eq!(name.value(), path);
                match value {
                    DebugValue::Histogram(values) => values.len(),
                    other => panic!("{metric}: {other:?}"),
                }
            })
            .sum::<usize>()
    };
    assert_eq!(count(names::LOCK_WAIT_SECONDS), 1);
    assert_eq!(count(names::LOCK_HOLD_SECONDS), 1);
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_metrics_name_replaces_the_path_label_and_timeouts_record_their_wait() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let root = unique_root("mutex-metrics-name");
    let holder = InterProcessMutex::builder(client.clone(), &format!("{root}/job-1"))
        .metrics_name("jobs")
        .build()
        .unwrap();
    let contender = InterProcessMutex::builder(client.clone(), &format!("{root}/job-1"))
        .metrics_name("jobs")
        .build()
        .unwrap();
    let _ = snapshotter.snapshot();

    let guard = holder.acquire().await.unwrap();
    assert!(contender.try_acquire().await.unwrap().is_none());
    assert!(
        contender
            .acquire_timeout(std::time::Duration::ZERO)
            .await
            .unwrap()
            .is_none()
    );
    guard.release().await.unwrap();

    let waits = samples(&snapshotter, names::LOCK_WAIT_SECONDS);
    assert_eq!(waits, [("jobs".to_owned(), 3)]);
    client.close().await.unwrap();
}
