//! Retry policies (Curator's seven) and the retry loop that applies them.
//!
//! A policy only decides: given the retry count, the time spent so far and the error, it returns
//! how long to sleep before the next attempt, or `None` to give up. The loop sleeps with
//! `tokio::time`, so tests can run with paused time.
//!
//! Which errors reach the policy ([`Error::is_retried`]): connection loss, no connection,
//! operation timeout and session moved ([`Error::is_retryable`]), and session expiry, as in
//! Curator (the next attempt runs on the new session). Wrap a policy in
//! [`SessionFailedRetryPolicy`] to fail on session expiry instead.
//!
//! ```
//! use std::time::Duration;
//! use curator_framework::Error;
//! use curator_framework::retry::{RetryPolicy, RetryNTimes};
//! let policy = RetryNTimes::new(2, Duration::from_millis(10));
//! assert_eq!(policy.allow_retry(0, Duration::ZERO, &Error::ConnectionLoss), Some(Duration::from_millis(10)));
//! assert_eq!(policy.allow_retry(2, Duration::ZERO, &Error::ConnectionLoss), None);
//! ```

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument;

use crate::error::{Error, Result};

/// Decides whether, and after how long, a failed attempt is retried.
pub trait RetryPolicy: Send + Sync + fmt::Debug {
    /// `retry_count` is 0 for the first retry; `elapsed` is the time since the first attempt
    /// started. Returns the sleep before the next attempt, or `None` to give up.
    fn allow_retry(&self, retry_count: u32, elapsed: Duration, error: &Error) -> Option<Duration>;
}

impl<P: RetryPolicy + ?Sized> RetryPolicy for Arc<P> {
    fn allow_retry(&self, retry_count: u32, elapsed: Duration, error: &Error) -> Option<Duration> {
        (**self).allow_retry(retry_count, elapsed, error)
    }
}

impl<P: RetryPolicy + ?Sized> RetryPolicy for Box<P> {
    fn allow_retry(&self, retry_count: u32, elapsed: Duration, error: &Error) -> Option<Duration> {
        (**self).allow_retry(retry_count, elapsed, error)
    }
}

/// A cheaply cloned, shared retry policy: what the client and recipes keep of the policy they
/// were given.
///
/// ```
/// use std::time::Duration;
/// use curator_framework::Error;
/// use curator_framework::retry::{RetryNTimes, RetryPolicy, SharedRetryPolicy};
/// let shared = SharedRetryPolicy::new(RetryNTimes::new(1, Duration::from_millis(5)));
/// let clone = shared.clone();
/// assert_eq!(clone.allow_retry(0, Duration::ZERO, &Error::ConnectionLoss), Some(Duration::from_millis(5)));
/// ```
#[derive(Debug, Clone)]
pub struct SharedRetryPolicy(Arc<dyn RetryPolicy>);

impl SharedRetryPolicy {
    /// Shares `policy`.
    pub fn new(policy: impl RetryPolicy + 'static) -> Self {
        Self(Arc::new(policy))
    }
}

impl RetryPolicy for SharedRetryPolicy {
    fn allow_retry(&self, retry_count: u32, elapsed: Duration, error: &Error) -> Option<Duration> {
        self.0.allow_retry(retry_count, elapsed, error)
    }
}

/// `base` stretched by up to `±jitter` (a fraction, clamped to `0..=1`).
fn jittered(base: Duration, jitter: f64) -> Duration {
    if jitter <= 0.0 || base.is_zero() {
        return base;
    }
    let jitter = jitter.min(1.0);
    let factor = crate::random::fraction((1.0 - jitter)..=(1.0 + jitter));
    base.mul_f64(factor)
}

/// Sleeps grow exponentially with the retry count, randomised: `base × random(1..2^(n+1))`, at
/// most `max_sleep`; gives up after `max_retries` retries (at most 29).
///
/// ```
/// use std::time::Duration;
/// use curator_framework::retry::ExponentialBackoffRetry;
/// let policy = ExponentialBackoffRetry::new(Duration::from_millis(100), 3)
///     .with_max_sleep(Duration::from_secs(2));
/// # let _ = policy;
/// ```
#[derive(Debug, Clone)]
pub struct ExponentialBackoffRetry {
    base_sleep: Duration,
    max_retries: u32,
    max_sleep: Duration,
}

/// Curator's cap on exponential retries (beyond it `2^(n+1)` overflows an `i32`).
const MAX_EXPONENTIAL_RETRIES: u32 = 29;

impl ExponentialBackoffRetry {
    /// `max_retries` above 29 counts as 29.
    pub fn new(base_sleep: Duration, max_retries: u32) -> Self {
        Self {
            base_sleep,
            max_retries: max_retries.min(MAX_EXPONENTIAL_RETRIES),
            max_sleep: Duration::MAX,
        }
    }

    /// Caps each sleep.
    pub fn with_max_sleep(mut self, max_sleep: Duration) -> Self {
        self.max_sleep = max_sleep;
        self
    }

    fn sleep_for(&self, retry_count: u32) -> Duration {
        let ceiling = 1u32 << (retry_count.min(MAX_EXPONENTIAL_RETRIES) + 1);
        let factor = crate::random::between(1..ceiling).max(1);
        self.base_sleep.saturating_mul(factor).min(self.max_sleep)
    }
}

impl RetryPolicy for ExponentialBackoffRetry {
    fn allow_retry(
        &self,
        retry_count: u32,
        _elapsed: Duration,
        _error: &Error,
    ) -> Option<Duration> {
        (retry_count < self.max_retries).then(|| self.sleep_for(retry_count))
    }
}

/// [`ExponentialBackoffRetry`] whose sleeps never exceed `max_sleep`.
#[derive(Debug, Clone)]
pub struct BoundedExponentialBackoffRetry(ExponentialBackoffRetry);

impl BoundedExponentialBackoffRetry {
    /// Exponential sleeps from `base_sleep`, each at most `max_sleep`, for `max_retries` retries.
    pub fn new(base_sleep: Duration, max_sleep: Duration, max_retries: u32) -> Self {
        Self(ExponentialBackoffRetry::new(base_sleep, max_retries).with_max_sleep(max_sleep))
    }
}

impl RetryPolicy for BoundedExponentialBackoffRetry {
    fn allow_retry(&self, retry_count: u32, elapsed: Duration, error: &Error) -> Option<Duration> {
        self.0.allow_retry(retry_count, elapsed, error)
    }
}

/// Retries `n` times, sleeping the same time before each.
#[derive(Debug, Clone)]
pub struct RetryNTimes {
    n: u32,
    sleep: Duration,
    jitter: f64,
}

impl RetryNTimes {
    /// `n` retries, `sleep` apart.
    pub fn new(n: u32, sleep: Duration) -> Self {
        Self {
            n,
            sleep,
            jitter: 0.0,
        }
    }

    /// Randomises each sleep by up to `±fraction` of it, so many clients do not retry in step.
    pub fn with_jitter(mut self, fraction: f64) -> Self {
        self.jitter = fraction;
        self
    }
}

impl RetryPolicy for RetryNTimes {
    fn allow_retry(
        &self,
        retry_count: u32,
        _elapsed: Duration,
        _error: &Error,
    ) -> Option<Duration> {
        (retry_count < self.n).then(|| jittered(self.sleep, self.jitter))
    }
}

/// Retries once.
#[derive(Debug, Clone)]
pub struct RetryOneTime(RetryNTimes);

impl RetryOneTime {
    /// One retry after `sleep`.
    pub fn new(sleep: Duration) -> Self {
        Self(RetryNTimes::new(1, sleep))
    }
}

impl RetryPolicy for RetryOneTime {
    fn allow_retry(&self, retry_count: u32, elapsed: Duration, error: &Error) -> Option<Duration> {
        self.0.allow_retry(retry_count, elapsed, error)
    }
}

/// Retries forever, `sleep` apart. Operations then wait as long as ZooKeeper is unreachable.
#[derive(Debug, Clone)]
pub struct RetryForever {
    sleep: Duration,
    jitter: f64,
}

impl RetryForever {
    /// Retries `sleep` apart, without end.
    pub fn new(sleep: Duration) -> Self {
        Self { sleep, jitter: 0.0 }
    }

    /// Randomises each sleep by up to `±fraction` of it.
    pub fn with_jitter(mut self, fraction: f64) -> Self {
        self.jitter = fraction;
        self
    }
}

impl RetryPolicy for RetryForever {
    fn allow_retry(
        &self,
        _retry_count: u32,
        _elapsed: Duration,
        _error: &Error,
    ) -> Option<Duration> {
        Some(jittered(self.sleep, self.jitter))
    }
}

/// Retries, `sleep` apart, until `max_elapsed` has passed since the first attempt: a time budget
/// instead of a count.
#[derive(Debug, Clone)]
pub struct RetryUntilElapsed {
    max_elapsed: Duration,
    sleep: Duration,
    jitter: f64,
}

impl RetryUntilElapsed {
    /// Retries within `max_elapsed`, `sleep` apart.
    pub fn new(max_elapsed: Duration, sleep: Duration) -> Self {
        Self {
            max_elapsed,
            sleep,
            jitter: 0.0,
        }
    }

    /// Randomises each sleep by up to `±fraction` of it.
    pub fn with_jitter(mut self, fraction: f64) -> Self {
        self.jitter = fraction;
        self
    }
}

impl RetryPolicy for RetryUntilElapsed {
    fn allow_retry(
        &self,
        _retry_count: u32,
        elapsed: Duration,
        _error: &Error,
    ) -> Option<Duration> {
        (elapsed < self.max_elapsed).then(|| jittered(self.sleep, self.jitter))
    }
}

/// Another policy, except that it never retries after the session expired.
///
/// ```
/// use std::time::Duration;
/// use curator_framework::Error;
/// use curator_framework::retry::{RetryPolicy, RetryForever, SessionFailedRetryPolicy};
/// let policy = SessionFailedRetryPolicy::new(RetryForever::new(Duration::from_millis(5)));
/// assert!(policy.allow_retry(0, Duration::ZERO, &Error::SessionExpired).is_none());
/// assert!(policy.allow_retry(0, Duration::ZERO, &Error::ConnectionLoss).is_some());
/// ```
#[derive(Debug, Clone)]
pub struct SessionFailedRetryPolicy<P> {
    inner: P,
}

impl<P: RetryPolicy> SessionFailedRetryPolicy<P> {
    /// Wraps `inner`.
    pub fn new(inner: P) -> Self {
        Self { inner }
    }
}

impl<P: RetryPolicy> RetryPolicy for SessionFailedRetryPolicy<P> {
    fn allow_retry(&self, retry_count: u32, elapsed: Duration, error: &Error) -> Option<Duration> {
        if error.is_session_terminal() {
            return None;
        }
        self.inner.allow_retry(retry_count, elapsed, error)
    }
}

/// Never retries.
#[derive(Debug, Clone, Copy, Default)]
pub struct NeverRetry;

impl RetryPolicy for NeverRetry {
    fn allow_retry(
        &self,
        _retry_count: u32,
        _elapsed: Duration,
        _error: &Error,
    ) -> Option<Duration> {
        None
    }
}

/// Runs `attempt` until it succeeds, fails with an error that is not retried, or `policy` gives
/// up. `attempt` receives the attempt number (0 first). Each retry is counted through `on_retry`.
///
/// This is the loop every operation of the framework runs; use
/// [`CuratorFramework::call_with_retry`](crate::CuratorFramework::call_with_retry) to run your
/// own steps with the client's policy and its wait for a connection.
///
/// # Errors
/// The last attempt's error.
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::time::Duration;
/// use curator_framework::Error;
/// use curator_framework::retry::{run, RetryNTimes};
/// let policy = RetryNTimes::new(3, Duration::from_millis(1));
/// let result = run(&policy, |attempt| async move {
///     if attempt < 2 { Err(Error::ConnectionLoss) } else { Ok(attempt) }
/// }, |_, _| {}).await;
/// assert_eq!(result, Ok(2));
/// # }
/// ```
pub async fn run<T, F, Fut>(
    policy: &dyn RetryPolicy,
    mut attempt: F,
    mut on_retry: impl FnMut(u32, &Error),
) -> Result<T>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let start = tokio::time::Instant::now();
    let mut retry_count = 0u32;
    loop {
        let error = match attempt(retry_count)
            .instrument(tracing::debug_span!("attempt", attempt = retry_count))
            .await
        {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        let Some(sleep) = decide(policy, retry_count, start, &error) else {
            return Err(error);
        };
        on_retry(retry_count, &error);
        retry_count = retry_count.saturating_add(1);
        if !sleep.is_zero() {
            tokio::time::sleep(sleep).await;
        }
    }
}

/// The pause before retry number `retry_count` after `error`, or `None` to give up: errors the
/// framework does not retry ([`Error::is_retried`]) end the loop, others go to the policy.
pub(crate) fn decide(
    policy: &dyn RetryPolicy,
    retry_count: u32,
    start: tokio::time::Instant,
    error: &Error,
) -> Option<Duration> {
    if !error.is_retried() {
        return None;
    }
    let Some(sleep) = policy.allow_retry(retry_count, start.elapsed(), error) else {
        tracing::debug!(%error, retry_count, "retry policy gave up");
        return None;
    };
    tracing::debug!(%error, retry_count, ?sleep, "retrying");
    Some(sleep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_sleeps_stay_within_their_window() {
        let base = Duration::from_millis(10);
        let policy = ExponentialBackoffRetry::new(base, 5);
        for retry in 0..5 {
            for _ in 0..50 {
                let sleep = policy
                    .allow_retry(retry, Duration::ZERO, &Error::ConnectionLoss)
                    .unwrap();
                assert!(sleep >= base, "{sleep:?}");
                assert!(
                    sleep < base * (1 << (retry + 1)),
                    "retry {retry}: {sleep:?}"
                );
            }
        }
        assert_eq!(
            policy.allow_retry(5, Duration::ZERO, &Error::ConnectionLoss),
            None
        );
    }

    #[test]
    fn exponential_retries_are_capped_and_bounded() {
        assert_eq!(
            ExponentialBackoffRetry::new(Duration::from_millis(1), 1000).max_retries,
            29
        );
        let bounded = BoundedExponentialBackoffRetry::new(
            Duration::from_millis(100),
            Duration::from_millis(150),
            30,
        );
        for _ in 0..50 {
            let sleep = bounded
                .allow_retry(20, Duration::ZERO, &Error::ConnectionLoss)
                .unwrap();
            assert!(sleep <= Duration::from_millis(150));
        }
        // Huge retry counts must not overflow.
        let huge = ExponentialBackoffRetry::new(Duration::from_secs(1), 29);
        assert!(
            huge.allow_retry(28, Duration::ZERO, &Error::ConnectionLoss)
                .is_some()
        );
    }

    #[test]
    fn fixed_policies() {
        let e = Error::ConnectionLoss;
        let ms = Duration::from_millis;
        assert_eq!(
            RetryOneTime::new(ms(5)).allow_retry(0, ms(0), &e),
            Some(ms(5))
        );
        assert_eq!(RetryOneTime::new(ms(5)).allow_retry(1, ms(0), &e), None);
        assert_eq!(
            RetryForever::new(ms(5)).allow_retry(1_000_000, ms(0), &e),
            Some(ms(5))
        );
        let until = RetryUntilElapsed::new(ms(100), ms(7));
        assert_eq!(until.allow_retry(50, ms(99), &e), Some(ms(7)));
        assert_eq!(until.allow_retry(0, ms(100), &e), None);
        let jittered = RetryNTimes::new(3, ms(100)).with_jitter(0.2);
        for _ in 0..50 {
            let sleep = jittered.allow_retry(0, ms(0), &e).unwrap();
            assert!(sleep >= ms(80) && sleep <= ms(120), "{sleep:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_loop_retries_only_what_should_be_retried() {
        let policy = RetryNTimes::new(5, Duration::from_secs(1));
        let mut retries = Vec::new();
        let started = tokio::time::Instant::now();
        let result: Result<()> = run(
            &policy,
            |n| async move {
                if n < 3 {
                    Err(Error::ConnectionLoss)
                } else {
                    Err(Error::NoNode)
                }
            },
            |n, _| retries.push(n),
        )
        .await;
        assert_eq!(result, Err(Error::NoNode));
        assert_eq!(retries, vec![0, 1, 2]);
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(3),
            "slept between attempts"
        );

        let result: Result<()> = run(
            &policy,
            |_| async { Err(Error::OperationTimeout) },
            |_, _| {},
        )
        .await;
        assert_eq!(
            result,
            Err(Error::OperationTimeout),
            "gave up after the policy's five retries"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn session_expiry_is_retried_unless_the_policy_refuses() {
        let lenient = RetryNTimes::new(1, Duration::ZERO);
        let result = run(
            &lenient,
            |n| async move {
                if n == 0 {
                    Err(Error::SessionExpired)
                } else {
                    Ok(n)
                }
            },
            |_, _| {},
        )
        .await;
        assert_eq!(result, Ok(1));
        let strict = SessionFailedRetryPolicy::new(RetryNTimes::new(1, Duration::ZERO));
        let result: Result<u32> =
            run(&strict, |_| async { Err(Error::SessionExpired) }, |_, _| {}).await;
        assert_eq!(result, Err(Error::SessionExpired));
    }
}
