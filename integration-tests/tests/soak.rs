//! The reliability suite, short and seeded, as part of `just test`: every workload under faults
//! for 25 s, then every checker. `SOAK_SEED=<n>` replays another schedule; `just soak`
//! runs the long version.

use std::time::Duration;

use integration_tests::faults::{Fault, FaultKind, FaultPlan};
use integration_tests::{SoakConfig, run, write_report};

/// The seed of the short run: a schedule with every kind of fault in its first seven, the
/// leader isolated from the other members first (for 1.1 session timeouts), a member replaced
/// second ([`the_short_soaks_schedule_starts_with_every_kind_of_fault`]).
const SEED: u64 = 20_320_602;

/// The short run's clients.
const CLIENTS: usize = 3;

#[test]
fn the_short_soaks_schedule_starts_with_every_kind_of_fault() {
    let timeout = SoakConfig::new(Duration::ZERO, None).session_timeout;
    let mut plan = FaultPlan::new(SEED, CLIENTS, 3, timeout);
    let first: Vec<Fault> = (0..FaultKind::ALL.len())
        .map(|_| plan.next_fault().1)
        .collect();
    let kinds: std::collections::BTreeSet<FaultKind> = first.iter().map(Fault::kind).collect();
    assert_eq!(kinds.len(), FaultKind::ALL.len(), "{first:?}");
    assert!(
        matches!(first[0], Fault::IsolateMember { member: None, .. }),
        "{first:?}"
    );
    assert_eq!(first[1].kind(), FaultKind::ReplaceMember, "{first:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_soak_under_faults_breaks_no_invariant() {
    let mut config = SoakConfig::new(Duration::from_secs(25), Some(SEED));
    config.clients = CLIENTS;
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
    for kind in [FaultKind::IsolateMember, FaultKind::ReplaceMember] {
        assert!(
            report.faults.injected.get(&kind).is_some_and(|n| *n > 0),
            "no {kind}:\n{report}"
        );
    }
}
