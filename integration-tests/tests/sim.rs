//! The recipe mix in deterministic simulation, as part of `just test`: a few seeds, every
//! checker; `just sim` explores many more.

use integration_tests::sim::{SimConfig, run};

#[test]
fn the_mix_passes_every_checker_on_a_few_seeds() {
    for seed in [1, 2, 3] {
        let run = run(&SimConfig::new(seed)).unwrap_or_else(|error| panic!("{error}"));
        assert!(run.violations.is_empty(), "{run}");
        assert!(!run.faults.is_empty(), "seed {seed} injected no fault");
        assert!(
            run.operations.values().all(|n| *n > 0),
            "every workload did something: {run}"
        );
    }
}
