//! `just soak [--minutes N] [--seed S]`: the reliability suite, for as long as asked.

use std::time::Duration;

use clap::Parser;
use integration_tests::{SoakConfig, run, write_report};

/// Mixed curator-rs workloads on a 3-member ZooKeeper ensemble under a random fault schedule,
/// with invariant checkers; exits non-zero on any violation.
#[derive(Debug, Parser)]
#[command(name = "soak")]
struct Args {
    /// How long to inject faults, in minutes (fractions allowed: 0.5).
    #[arg(long, default_value = "3", value_parser = minutes)]
    minutes: Duration,
    /// The fault schedule's seed, to replay a run [default: random].
    #[arg(long, env = "SOAK_SEED")]
    seed: Option<u64>,
    /// How many clients run the workloads (at least 2).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(2..))]
    clients: u16,
    /// Seconds between quiet points (where the caches are compared with the server).
    #[arg(long, default_value_t = 45, value_parser = clap::value_parser!(u64).range(1..))]
    quiet_seconds: u64,
}

/// A number of minutes, finite and not negative, as a duration.
fn minutes(text: &str) -> Result<Duration, String> {
    let minutes: f64 = text.trim().parse().map_err(|_| "not a number".to_owned())?;
    if !minutes.is_finite() || minutes < 0.0 {
        return Err("must be a finite number of minutes, 0 or more".to_owned());
    }
    Duration::try_from_secs_f64(minutes * 60.0).map_err(|_| "too long".to_owned())
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
    let mut config = SoakConfig::new(args.minutes, None);
    if let Some(seed) = args.seed {
        config.seed = seed;
    }
    config.clients = usize::from(args.clients);
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
