//! Metrics through the `metrics` facade, against a real server: exact counts per label for a
//! known run of operations, state transitions and session lifetimes after an expiry, and the
//! Prometheus text rendering.
//!
//! Each test installs its recorder for its own thread only (`set_default_local_recorder`) and
//! runs on a current-thread runtime (`#[tokio::test]`'s default), so every task of its client
//! records there, and tests running side by side in one process do not see each other.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use curator_framework::metrics::names;
use curator_framework::{ConnectionState, Error};
use curator_test::{TestingServer, Timing};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

/// One snapshot (which also resets the recorder), keyed by metric name and sorted labels.
#[derive(Debug, Default)]
struct Seen(BTreeMap<(String, Vec<(String, String)>), DebugValue>);

impl Seen {
    fn take(snapshotter: &Snapshotter) -> Seen {
        let mut seen = BTreeMap::new();
        for (key, _, _, value) in snapshotter.snapshot().into_vec() {
            let mut labels: Vec<(String, String)> = key
                .key()
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            labels.sort();
            seen.insert((key.key().name().to_owned(), labels), value);
        }
        Seen(seen)
    }

    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<&DebugValue> {
        let mut labels: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        labels.sort();
        self.0.get(&(name.to_owned(), labels))
    }

    /// A counter's value (0 when never recorded since the last snapshot).
    fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        match self.get(name, labels) {
            Some(DebugValue::Counter(n)) => *n,
            None => 0,
            Some(other) => panic!("{name} is not a counter: {other:?}"),
        }
    }

    /// How many samples a histogram took.
    fn samples(&self, name: &str, labels: &[(&str, &str)]) -> usize {
        match self.get(name, labels) {
            Some(DebugValue::Histogram(values)) => values.len(),
            None => 0,
            Some(other) => panic!("{name} is not a histogram: {other:?}"),
        }
    }

    /// The values of one label across the series of `name`.
    fn label_values(&self, name: &str, label: &str) -> BTreeSet<String> {
        self.0
            .keys()
            .filter(|(n, _)| n == name)
            .flat_map(|(_, labels)| labels.iter().filter(|(k, _)| k == label))
            .map(|(_, v)| v.clone())
            .collect()
    }
}

#[tokio::test]
async fn known_operations_record_exact_counts_per_op() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "metrics-ops").await;
    let before = Seen::take(&snapshotter);
    assert_eq!(before.counter(names::SESSIONS_ESTABLISHED_TOTAL, &[]), 1);
    assert_eq!(
        before.counter(
            names::CONNECTION_STATE_TRANSITIONS_TOTAL,
            &[("state", "connected")]
        ),
        1
    );

    for i in 0..5 {
        client
            .create()
            .for_path(&format!("{root}/n{i}"), b"x")
            .await
            .unwrap();
    }
    for i in 0..3 {
        client
            .get_data()
            .for_path(&format!("{root}/n{i}"))
            .await
            .unwrap();
    }
    assert_eq!(
        client.delete().for_path(&format!("{root}/missing")).await,
        Err(Error::NoNode)
    );

    let seen = Seen::take(&snapshotter);
    let duration = names::OPERATION_DURATION_SECONDS;
    assert_eq!(seen.samples(duration, &[("op", "zk.create")]), 5);
    assert_eq!(seen.samples(duration, &[("op", "zk.get_data")]), 3);
    assert_eq!(seen.samples(duration, &[("op", "zk.delete")]), 1);
    assert_eq!(
        seen.label_values(duration, "op"),
        ["zk.create", "zk.delete", "zk.get_data"]
            .map(String::from)
            .into()
    );
    let failures = names::OPERATION_FAILURES_TOTAL;
    assert_eq!(
        seen.counter(failures, &[("op", "zk.delete"), ("error", "no_node")]),
        1
    );
    assert_eq!(
        seen.label_values(failures, "op"),
        ["zk.delete".into()].into()
    );
    // Nothing was lost on the way, so nothing was retried.
    assert!(
        seen.label_values(names::OPERATION_RETRIES_TOTAL, "op")
            .is_empty()
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn retries_are_counted_by_op_and_call_with_retry_is_an_op() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let _ = Seen::take(&snapshotter);

    // Two retryable failures, then success: two retries, one sample, no failure.
    let tries = std::sync::atomic::AtomicU32::new(0);
    let value = client
        .call_with_retry(|_| async {
            if tries.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 2 {
                Err(Error::ConnectionLoss)
            } else {
                Ok(7)
            }
        })
        .await
        .unwrap();
    assert_eq!(value, 7);
    let seen = Seen::take(&snapshotter);
    let op = [("op", "call_with_retry")];
    assert_eq!(seen.counter(names::OPERATION_RETRIES_TOTAL, &op), 2);
    assert_eq!(seen.samples(names::OPERATION_DURATION_SECONDS, &op), 1);
    assert!(
        seen.label_values(names::OPERATION_FAILURES_TOTAL, "op")
            .is_empty()
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_session_expiry_counts_transitions_and_records_a_lifetime() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let mut states = client.connection_state_stream();
    let _ = Seen::take(&snapshotter);

    client.inject_session_expiration().await.unwrap();
    support::expect_states(
        &mut states,
        &[
            ConnectionState::Suspended,
            ConnectionState::Lost,
            ConnectionState::Reconnected,
        ],
    )
    .await;
    client
        .block_until_connected(Timing::new().wait())
        .await
        .unwrap();

    let seen = Seen::take(&snapshotter);
    let transitions = names::CONNECTION_STATE_TRANSITIONS_TOTAL;
    for state in ["suspended", "lost", "reconnected"] {
        assert_eq!(seen.counter(transitions, &[("state", state)]), 1, "{state}");
    }
    assert_eq!(seen.counter(transitions, &[("state", "connected")]), 0);
    assert_eq!(seen.counter(names::SESSIONS_ESTABLISHED_TOTAL, &[]), 1);
    assert_eq!(seen.samples(names::SESSION_LIFETIME_SECONDS, &[]), 1);

    // Closing ends the second session: its lifetime too.
    client.close().await.unwrap();
    let seen = Seen::take(&snapshotter);
    assert_eq!(seen.samples(names::SESSION_LIFETIME_SECONDS, &[]), 1);
}

#[tokio::test]
async fn prometheus_rendering_parses_and_has_the_families() {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets_for_metric(
            metrics_exporter_prometheus::Matcher::Suffix("_seconds".into()),
            &[0.001, 0.01, 0.1, 1.0, 10.0],
        )
        .unwrap()
        .build_recorder();
    let handle = recorder.handle();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "metrics-prometheus").await;
    client.get_data().for_path(&root).await.unwrap();
    assert_eq!(
        client.get_data().for_path(&format!("{root}/missing")).await,
        Err(Error::NoNode)
    );

    let text = handle.render();
    let families = parse_prometheus(&text);
    let expect = |name: &str, kind: &str| {
        assert_eq!(
            families.get(name).map(|f| f.kind.as_str()),
            Some(kind),
            "{name} in:\n{text}"
        );
    };
    expect(names::OPERATION_DURATION_SECONDS, "histogram");
    expect(names::OPERATION_FAILURES_TOTAL, "counter");
    expect(names::CONNECTION_STATE_TRANSITIONS_TOTAL, "counter");
    expect(names::SESSIONS_ESTABLISHED_TOTAL, "counter");
    let durations = &families[names::OPERATION_DURATION_SECONDS];
    let count = durations
        .samples
        .iter()
        .find(|s| {
            s.name == format!("{}_count", names::OPERATION_DURATION_SECONDS)
                && s.labels.get("op").map(String::as_str) == Some("zk.get_data")
        })
        .expect("a get_data count");
    assert_eq!(count.value, 2.0);
    let failed = families[names::OPERATION_FAILURES_TOTAL]
        .samples
        .iter()
        .find(|s| s.labels.get("error").map(String::as_str) == Some("no_node"))
        .expect("a no_node failure");
    assert_eq!(failed.labels["op"], "zk.get_data");
    assert_eq!(failed.value, 1.0);
    client.close().await.unwrap();
}

/// A metric family of the Prometheus text format: its `# TYPE` and its samples.
#[derive(Debug, Default)]
struct Family {
    kind: String,
    samples: Vec<Sample>,
}

#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A small parser of the Prometheus text exposition format (0.0.4), strict about what the
/// exporter writes: `# HELP`/`# TYPE` lines, then `name{k="v",…} value` samples whose names
/// start with their family's name. Panics on anything else.
fn parse_prometheus(text: &str) -> BTreeMap<String, Family> {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                "{line}"
            );
            families.entry(name.to_owned()).or_default().kind = kind.to_owned();
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        assert!(!line.starts_with('#'), "unexpected comment: {line}");
        let (series, value) = line.rsplit_once(' ').expect("a sample: series value");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("a number in {line}")),
        };
        let (name, labels) = match series.split_once('{') {
            None => (series, BTreeMap::new()),
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').expect("labels end with }");
                let mut labels = BTreeMap::new();
                let mut rest = body;
                while !rest.is_empty() {
                    let (key, after) = rest.split_once("=\"").expect("label=\"value\"");
                    let end = after.find('"').expect("a closing quote");
                    labels.insert(key.to_owned(), after[..end].to_owned());
                    rest = after[end + 1..].trim_start_matches(',');
                }
                (name, labels)
            }
        };
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "metric name {name}"
        );
        let family = families
            .iter_mut()
            .filter(|(family, _)| name.starts_with(family.as_str()))
            .max_by_key(|(family, _)| family.len())
            .map(|(_, f)| f)
            .unwrap_or_else(|| panic!("a sample before its # TYPE: {line}"));
        family.samples.push(Sample {
            name: name.to_owned(),
            labels,
            value,
        });
    }
    families
}
