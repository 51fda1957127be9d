//! The recipe mix in deterministic simulation, as part of `just test`: a few seeds, every
//! checker; `just sim` explores many more.

use integration_tests::sim::{SimConfig, run};

/// A seed replays exactly, each run in a process of its own as `just sim --seed S` runs it
/// (in one process, Tokio's process-wide task ids would differ between the runs). Only when
/// built with Tokio's `tokio_unstable` cfg, as `just sim` builds (turmoil then seeds the
/// branch order of `select!`); `just sim` checks replays of explored seeds too.
#[test]
#[cfg_attr(
    not(tokio_unstable),
    ignore = "replays exactly only when built with --cfg tokio_unstable (just sim)"
)]
fn a_seed_of_the_mix_replays_the_same_run() {
    let replay = || {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
            .args(["--seed", "7"])
            .env_remove("SIM_SEED")
            .env_remove("RUST_LOG")
            .output()
            .expect("the sim program runs");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).expect("text")
    };
    let first = replay();
    assert!(first.starts_with("seed 7:"), "{first}");
    assert_eq!(first, replay());
}

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
