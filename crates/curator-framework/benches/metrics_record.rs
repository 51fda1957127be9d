//! What one operation's metrics cost the caller: the records `run` makes when an operation ends
//! (a latency sample labelled `op`, and for a failure a counter labelled `op` and `error`), with
//! no recorder installed (the facade's no-op) and with a Prometheus recorder. Prints nanoseconds
//! per operation; no server needed.
//!
//! ```text
//! cargo bench -p curator-framework --bench metrics_record
//! ```

use std::hint::black_box;
use std::time::Instant;

use curator_framework::metrics::names;

const OPS: u32 = 2_000_000;

/// The records of one operation, as `ops::run` makes them.
fn record(op: &'static str, failed: bool) {
    metrics::histogram!(names::OPERATION_DURATION_SECONDS, "op" => op).record(black_box(0.000_2));
    if failed {
        metrics::counter!(names::OPERATION_FAILURES_TOTAL, "op" => op, "error" => "no_node")
            .increment(1);
    }
}

fn measure(what: &str) {
    for failed in [false, true] {
        let start = Instant::now();
        for i in 0..OPS {
            let op = if i % 2 == 0 {
                "zk.get_data"
            } else {
                "zk.create"
            };
            record(black_box(op), failed);
        }
        let ns = start.elapsed().as_secs_f64() * 1e9 / f64::from(OPS);
        let kind = if failed { "failed" } else { "succeeded" };
        println!("| {what} | {kind} | {ns:.0} |");
    }
}

fn main() {
    // `cargo bench` passes `--bench`; test runners list or run bench targets without it.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    println!("| recorder | operation | ns per operation |\n| --- | --- | ---: |");
    measure("none (no-op)");
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    metrics::with_local_recorder(&recorder, || measure("Prometheus"));
}
