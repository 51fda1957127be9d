//! `just soak [--minutes N] [--seed S]`: the reliability suite, for as long as asked.

use std::time::Duration;

use clap::Parser;
use integration_tests::{SoakConfig, run, write_report};

/// Mixed curator-rs workloads on a 3-member ZooKeeper ensemble under a random fault schedule,
/// with invariant checkers; exits non-zero on any violation.
#[derive(Debug, Parser)]
struct Args {
    /// How long to inject faults, in minutes (fractions allowed).
    #[arg(long, default_value_t = 3.0)]
    minutes: f64,
    /// The fault schedule's seed (default: `SOAK_SEED`, else random).
    #[arg(long)]
    seed: Option<u64>,
    /// How many clients run the workloads.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Seconds between quiet points (where the caches are compared with the server).
    #[arg(long, default_value_t = 45)]
    quiet_seconds: u64,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "error".into()),
        )
        .init();
    let args = Args::parse();
    let mut config = SoakConfig::new(Duration::from_secs_f64(args.minutes * 60.0), None);
    if let Some(seed) = args.seed {
        config.seed = seed;
    }
    config.clients = args.clients;
    config.quiet_every = Duration::from_secs(args.quiet_seconds);
    let report = match run(config).await {
        Ok(report) => report,
        Err(error) => {
            eprintln!("soak run failed to complete: {error}");
            return std::process::ExitCode::from(2);
        }
    };
    println!("{report}");
    match write_report(&report) {
        Ok(path) => println!("report written to {}", path.display()),
        Err(error) => eprintln!("could not write the report: {error}"),
    }
    if report.violations.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
