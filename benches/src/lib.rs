//! Shared pieces of the benchmarks: timing rounds and reporting medians.

use std::time::{Duration, Instant};

/// Runs `f` once and returns how long it took.
pub async fn time<F, Fut>(f: F) -> Duration
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let start = Instant::now();
    f().await;
    start.elapsed()
}

/// The median of `samples` (sorted in place).
///
/// ```
/// use std::time::Duration;
/// let mut samples = vec![Duration::from_millis(3), Duration::from_millis(1), Duration::from_millis(2)];
/// assert_eq!(curator_benches::median(&mut samples), Duration::from_millis(2));
/// ```
pub fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// Operations per second for `ops` operations taking `elapsed`.
pub fn rate(ops: usize, elapsed: Duration) -> f64 {
    ops as f64 / elapsed.as_secs_f64()
}

pub mod harness;
