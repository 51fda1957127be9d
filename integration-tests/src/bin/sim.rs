//! `just sim [--seeds N] [--seed S]`: the recipe mix in deterministic simulation, seed after
//! seed; a failing seed replays exactly with `--seed S`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;

/// A seed allocates and frees many small buffers; mimalloc runs them faster than the system's
/// allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
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
    #[arg(long, default_value_t = 4)]
    fault_seconds: u64,
    /// Simulated milliseconds per step of the simulation (every host runs once a step and
    /// messages arrive on step boundaries; 1 is finer, 2 explores twice as many seeds a
    /// minute).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=100))]
    step_ms: u64,
    /// Turn on a known-bad recipe variant, to see the checkers catch it (needs the
    /// `planted-bugs` feature, which `just sim` builds with).
    #[arg(long, value_enum)]
    plant: Option<Plant>,
    /// Replay this many of the explored seeds in a process of their own (as `--seed S` does)
    /// and fail unless the replay prints what the exploration did.
    #[arg(long, default_value_t = 3)]
    verify_replays: u64,
    /// Run every explored seed in a process of its own (slower; by default the threads run
    /// seed after seed in this process).
    #[arg(long)]
    isolate: bool,
}

/// The known-bad recipe variants.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Plant {
    /// A mutex waiter that skips its watch and takes the lock at once.
    MutexSkipsWatch,
    /// A leader latch that leads as second in line.
    LatchLeadsSecond,
    /// A simple queue take that deletes the item before it reads it.
    QueueDeletesBeforeRead,
}

impl Plant {
    fn name(self) -> &'static str {
        match self {
            Plant::MutexSkipsWatch => "mutex-skips-watch",
            Plant::LatchLeadsSecond => "latch-leads-second",
            Plant::QueueDeletesBeforeRead => "queue-deletes-before-read",
        }
    }

    /// Turns the bug on in this process; `false` when built without `planted-bugs`.
    fn plant(self) -> bool {
        #[cfg(feature = "planted-bugs")]
        {
            match self {
                Plant::MutexSkipsWatch => curator_locks::planted::plant(true),
                Plant::LatchLeadsSecond => curator_election::planted::plant(true),
                Plant::QueueDeletesBeforeRead => curator_queues::planted::plant(true),
            }
            true
        }
        #[cfg(not(feature = "planted-bugs"))]
        {
            false
        }
    }
}

/// Runs `seed` in a process of its own with the run's `settings` (flags): whether it passed,
/// and everything it printed.
fn replay(seed: u64, settings: &[String]) -> (bool, String) {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(error) => {
            return (
                false,
                format!("cannot find this program to run seed {seed}: {error}\n"),
            );
        }
    };
    match std::process::Command::new(exe)
        .args(["--seed", &seed.to_string()])
        .args(settings)
        .env_remove("SIM_SEED")
        .output()
    {
        Ok(output) => {
            let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&output.stderr));
            (output.status.success(), text)
        }
        Err(error) => (false, format!("cannot run seed {seed}: {error}\n")),
    }
}

/// Runs one seed in this process: whether it passed, and what `--seed S` prints for it.
fn explore(config: &SimConfig) -> (bool, String) {
    match std::panic::catch_unwind(|| run(config)) {
        Ok(Ok(run)) => (run.violations.is_empty(), run.to_string()),
        Ok(Err(error)) => (false, format!("{error}\n")),
        Err(_) => (false, format!("seed {}: the run panicked\n", config.seed)),
    }
}

fn main() -> std::process::ExitCode {
    // Logs only when asked (`RUST_LOG=turmoil=trace`), without times, so two replays diff.
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .without_time()
            .with_writer(std::io::stderr)
            .init();
    }
    let args = Args::parse();
    let faults_for = Duration::from_secs(args.fault_seconds);
    let step = Duration::from_millis(args.step_ms);
    let config = move |seed| SimConfig {
        faults_for,
        step,
        ..SimConfig::new(seed)
    };
    if let Some(plant) = args.plant
        && !plant.plant()
    {
        eprintln!("sim: --plant needs the planted-bugs feature (just sim builds with it)");
        return std::process::ExitCode::from(2);
    }
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
    println!(
        "sim: seeds {from}..{} on {} threads",
        from.wrapping_add(args.seeds),
        args.jobs
    );
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let diverged = Arc::new(AtomicUsize::new(0));
    let mut settings = vec![
        format!("--fault-seconds={}", args.fault_seconds),
        format!("--step-ms={}", args.step_ms),
    ];
    settings.extend(args.plant.map(|plant| format!("--plant={}", plant.name())));
    let settings = Arc::new(settings);
    let threads: Vec<_> = (0..args.jobs)
        .map(|_| {
            let (next, failed) = (Arc::clone(&next), Arc::clone(&failed));
            let diverged = Arc::clone(&diverged);
            let settings = Arc::clone(&settings);
            let seeds = args.seeds;
            let verify = args.verify_replays;
            let isolate = args.isolate;
            std::thread::spawn(move || {
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n >= seeds {
                        return;
                    }
                    let seed = from.wrapping_add(n);
                    let (passed, output) = if isolate {
                        replay(seed, &settings)
                    } else {
                        explore(&config(seed))
                    };
                    if !passed {
                        failed.fetch_add(1, Ordering::SeqCst);
                        print!("{output}");
                        println!("replay: just sim --seed {seed} {}", settings.join(" "));
                        continue;
                    }
                    if n < verify {
                        let (_, again) = replay(seed, &settings);
                        if again != output {
                            failed.fetch_add(1, Ordering::SeqCst);
                            diverged.fetch_add(1, Ordering::SeqCst);
                            println!(
                                "seed {seed} replayed differently:\n{output}--- again:\n{again}"
                            );
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
        "sim: {} seeds in {:.1?}, {failed} failed; {} of {} replayed seeds replayed differently",
        args.seeds,
        started.elapsed(),
        diverged.load(Ordering::SeqCst),
        args.verify_replays.min(args.seeds)
    );
    if failed == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
