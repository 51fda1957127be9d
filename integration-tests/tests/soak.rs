//! The reliability suite, short and seeded, as part of `just test`: every workload under faults
//! for 25 s, then every checker. `SOAK_SEED=<n>` replays another schedule; `just soak`
//! runs the long version.

use std::time::Duration;

use integration_tests::faults::FaultKind;
use integration_tests::{SoakConfig, run, write_report};

/// The seed of the short run (a schedule with every kind of fault in its first six, a member
/// replaced second).
const SEED: u64 = 20_243_578;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_soak_under_faults_breaks_no_invariant() {
    let mut config = SoakConfig::new(Duration::from_secs(25), Some(SEED));
    config.clients = 3;
    config.quiet_every = Duration::from_secs(7);
    let report = run(config).await.expect("the soak run completes");
    println!("{report}");
    let _ = write_report(&report);
    assert!(
        report.violations.is_empty(),
        "violations (replay with SOAK_SEED={}):\n{report}",
        report.seed
    );
    // Progress, not timing: every workload got somewhere, and faults were injected.
    for workload in [
        "mutex acquisitions",
        "leader terms",
        "counter increments applied",
        "simple queue takes",
        "lock-safe queue deliveries",
    ] {
        assert!(
            report.operations.get(workload).copied().unwrap_or(0) > 0,
            "no {workload}:\n{report}"
        );
    }
    assert!(report.faults.total() > 0, "no fault injected:\n{report}");
    assert!(
        report
            .faults
            .injected
            .get(&FaultKind::ReplaceMember)
            .is_some_and(|n| *n > 0),
        "no member replaced:\n{report}"
    );
}
