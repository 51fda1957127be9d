//! `just sim [--seeds N] [--seed S]`: the recipe mix in deterministic simulation, seed after
//! seed; a failing seed replays exactly with `--seed S`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use integration_tests::sim::{SimConfig, run};

/// The soak's recipe mix (mutex, leader latch, counter, queues) against curator-zkmodel's
/// server on turmoil's simulated network, under seeded faults; exits non-zero when a seed finds
/// a violation or fails to finish.
#[derive(Debug, Parser)]
#[command(name = "sim")]
struct Args {
    /// How many seeds to explore (from `--from`, one after another).
    #[arg(long, default_value_t = 20, conflicts_with = "seed")]
    seeds: u64,
    /// The first seed to explore [default: random].
    #[arg(long, conflicts_with = "seed")]
    from: Option<u64>,
    /// Replay this one seed and print everything it did.
    #[arg(long, env = "SIM_SEED")]
    seed: Option<u64>,
    /// Threads running seeds side by side (each seed runs on one thread).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..))]
    jobs: u16,
    /// Simulated seconds of faults per seed.
    #[arg(long, default_value_t = 8)]
    fault_seconds: u64,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let faults_for = Duration::from_secs(args.fault_seconds);
    let config = move |seed| SimConfig {
        faults_for,
        ..SimConfig::new(seed)
    };
    if let Some(seed) = args.seed {
        return match run(&config(seed)) {
            Ok(run) => {
                print!("{run}");
                if run.violations.is_empty() {
                    std::process::ExitCode::SUCCESS
                } else {
                    std::process::ExitCode::FAILURE
                }
            }
            Err(error) => {
                eprintln!("{error}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    let from = args.from.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |now| now.as_nanos() as u64)
    });
    println!("sim: seeds {from}..{} on {} threads", from.wrapping_add(args.seeds), args.jobs);
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..args.jobs)
        .map(|_| {
            let (next, failed) = (Arc::clone(&next), Arc::clone(&failed));
            let seeds = args.seeds;
            std::thread::spawn(move || {
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n >= seeds {
                        return;
                    }
                    let seed = from.wrapping_add(n);
                    match run(&config(seed)) {
                        Ok(run) if run.violations.is_empty() => {}
                        Ok(run) => {
                            failed.fetch_add(1, Ordering::SeqCst);
                            print!("{run}");
                            println!("replay: just sim --seed {seed}");
                        }
                        Err(error) => {
                            failed.fetch_add(1, Ordering::SeqCst);
                            println!("{error}\nreplay: just sim --seed {seed}");
                        }
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
    let failed = failed.load(Ordering::SeqCst);
    println!(
        "sim: {} seeds in {:.1?}, {failed} failed",
        args.seeds,
        started.elapsed()
    );
    if failed == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
