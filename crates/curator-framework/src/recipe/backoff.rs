//! [`Backoff`]: the one doubling pause of loops that retry until they succeed.

use std::time::Duration;

/// A doubling pause for loops that retry until they succeed: `min`, `2·min`, … up to `max`;
/// [`reset`](Self::reset) after a success. Sleeps with `tokio::time` (so paused-time tests
/// work).
///
/// ```
/// use std::time::Duration;
/// use curator_framework::recipe::Backoff;
/// let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_millis(150));
/// let pauses: Vec<_> = (0..4).map(|_| backoff.next_pause()).collect();
/// assert_eq!(pauses, [50, 100, 150, 150].map(Duration::from_millis));
/// backoff.reset();
/// assert_eq!(backoff.next_pause(), Duration::from_millis(50));
/// ```
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Pauses from `min`, doubling, up to `max` (at least `min`).
    pub fn new(min: Duration, max: Duration) -> Self {
        Self {
            min,
            max: max.max(min),
            next: min,
        }
    }

    /// The workspace's pause for background retries: 50 ms doubling up to 2 s.
    pub fn standard() -> Self {
        Self::new(Duration::from_millis(50), Duration::from_secs(2))
    }

    /// The next pause (and doubles the one after).
    pub fn next_pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        pause
    }

    /// Sleeps the next pause.
    ///
    /// # Cancellation safety
    /// Safe (the pause is used up either way).
    pub async fn wait(&mut self) {
        tokio::time::sleep(self.next_pause()).await;
    }

    /// Starts again from the shortest pause.
    pub fn reset(&mut self) {
        self.next = self.min;
    }
}
