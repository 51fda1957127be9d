//! One place that scales every deadline a test waits on.

use std::time::Duration;

/// Deadlines for tests, scaled by `CURATOR_TEST_TIMING` (a float, default 1.0) so a slow or loaded
/// machine can stretch all of them at once instead of editing tests.
///
/// Deadlines are upper bounds on waits for events, never sleeps: a test that waits with
/// [`Timing::wait`] returns as soon as its event arrives.
///
/// ```
/// use curator_test::Timing;
/// let timing = Timing::new();
/// assert!(timing.wait() >= std::time::Duration::from_secs(1));
/// let stretched = timing.multiple(2.0);
/// assert_eq!(stretched.wait(), timing.wait() * 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    factor: f64,
}

impl Default for Timing {
    fn default() -> Self {
        Self::new()
    }
}

impl Timing {
    /// Reads the factor from `CURATOR_TEST_TIMING` (values that do not parse, or are not positive,
    /// count as 1.0).
    pub fn new() -> Self {
        let factor = std::env::var("CURATOR_TEST_TIMING")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|f| f.is_finite() && *f > 0.0)
            .unwrap_or(1.0);
        Self { factor }
    }

    /// The same timing stretched by `factor` more.
    pub fn multiple(self, factor: f64) -> Self {
        Self {
            factor: self.factor * factor,
        }
    }

    /// Scales an arbitrary duration.
    pub fn scale(self, base: Duration) -> Duration {
        base.mul_f64(self.factor)
    }

    /// How long to wait for something that should happen soon (20 s, scaled).
    pub fn wait(self) -> Duration {
        self.scale(Duration::from_secs(20))
    }

    /// How long to wait for something slow, such as a JVM start or an ensemble election
    /// (90 s, scaled).
    pub fn forever(self) -> Duration {
        self.scale(Duration::from_secs(90))
    }

    /// A session timeout short enough for expiry tests and long enough not to expire by accident
    /// on a loaded machine (4 s, scaled).
    pub fn session_timeout(self) -> Duration {
        self.scale(Duration::from_secs(4))
    }

    /// A connection timeout to pair with [`Timing::session_timeout`] (2 s, scaled).
    pub fn connection_timeout(self) -> Duration {
        self.scale(Duration::from_secs(2))
    }
}

/// Polls `condition` every 20 ms until it holds, for what nothing notifies (a server-side
/// change seen from another client), and panics with `what` when [`Timing::wait`] passes first.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let mut calls = 0;
/// curator_test::eventually("the third call", || {
///     calls += 1;
///     let done = calls == 3;
///     async move { done }
/// })
/// .await;
/// # }
/// ```
pub async fn eventually<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let end = tokio::time::Instant::now() + Timing::new().wait();
    while !condition().await {
        assert!(
            tokio::time::Instant::now() < end,
            "{what} did not happen in time"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
