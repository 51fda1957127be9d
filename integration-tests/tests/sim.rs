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

/// Each known-bad recipe variant is caught on the first seed (nextest runs each test in a
/// process of its own, so a planted bug stays in its test).
#[cfg(feature = "planted-bugs")]
mod planted {
    use integration_tests::sim::{SimConfig, run};

    fn caught(what: &str, plant: impl FnOnce(bool)) {
        plant(true);
        let run = run(&SimConfig::new(1)).unwrap_or_else(|error| panic!("{error}"));
        assert!(
            run.violations.iter().any(|v| v.to_string().contains(what)),
            "the planted bug went unseen: {run}"
        );
    }

    #[test]
    fn a_mutex_waiter_that_skips_its_watch_is_caught() {
        caught("[mutex]", curator_locks::planted::plant);
    }

    #[test]
    fn a_latch_that_leads_as_second_is_caught() {
        caught("[leader]", curator_election::planted::plant);
    }

    #[test]
    fn a_queue_take_that_deletes_before_it_reads_is_caught() {
        caught("lost", curator_queues::planted::plant);
    }
}
