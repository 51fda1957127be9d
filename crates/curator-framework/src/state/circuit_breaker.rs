//! Circuit breaking of connection-state transitions, as Curator's
//! `CircuitBreakingConnectionStateListener` does it, with one listener's view per breaker.
//!
//! Closed, a breaker passes every transition. The first `Suspended` or `Lost` it passes opens
//! the circuit for the sleep the retry policy gives for retry 0. While open, transitions are
//! absorbed (only the latest is remembered), except a `Lost` that would otherwise go unseen (see
//! [`CircuitBreaker::on_state`]). When the period ends: if the latest state is not connected
//! and the policy allows another retry, the circuit stays open for that retry's sleep;
//! otherwise it closes and passes the latest state if it differs from the last one passed.

use std::time::Duration;

use tokio::time::Instant;

use crate::error::Error;
use crate::retry::{RetryPolicy, SharedRetryPolicy};
use crate::state::ConnectionState;

use ConnectionState::{Lost, Reconnected};

/// What the client publishes to its raw connection-state listeners: a transition, or the
/// wake-up of some breaker's period (breakers whose period has not ended ignore it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateEvent {
    State(ConnectionState),
    Tick,
}

/// One listener's circuit breaker.
#[derive(Debug)]
pub(crate) struct CircuitBreaker {
    policy: SharedRetryPolicy,
    /// The last state passed to the listener.
    passed: Option<ConnectionState>,
    open: Option<Open>,
}

#[derive(Debug)]
struct Open {
    opened_at: Instant,
    /// Retries granted so far (the opening counts as the first).
    retries: u32,
    deadline: Instant,
    /// The latest state seen (passed or absorbed).
    latest: ConnectionState,
    /// A connected state was absorbed since the last passed state: after a passed `Lost`,
    /// that is a new session the listener has not heard of.
    connected_since_passed: bool,
}

impl CircuitBreaker {
    pub(crate) fn new(policy: SharedRetryPolicy) -> Self {
        Self {
            policy,
            passed: None,
            open: None,
        }
    }

    /// When the open circuit's period ends (`None` while closed).
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.open.as_ref().map(|open| open.deadline)
    }

    fn allow(&self, retries: u32, elapsed: Duration) -> Option<Duration> {
        self.policy
            .allow_retry(retries, elapsed, &Error::ConnectionLoss)
    }

    fn pass(&mut self, states: Vec<ConnectionState>) -> Vec<ConnectionState> {
        if let Some(last) = states.last() {
            self.passed = Some(*last);
        }
        states
    }

    /// A transition; returns what the listener hears now, in order.
    ///
    /// While open, a `Lost` is passed at once unless the listener's last state is already that
    /// `Lost`: after a passed `Suspended`, as `Lost`; after a passed `Lost` when a new session
    /// was connected in between (absorbed), as `Reconnected` then `Lost`, so a listener never
    /// misses that a session it could have used is gone.
    pub(crate) fn on_state(
        &mut self,
        state: ConnectionState,
        now: Instant,
    ) -> Vec<ConnectionState> {
        let passed = self.passed;
        let Some(open) = &mut self.open else {
            if !state.is_connected() {
                if let Some(sleep) = self.allow(0, Duration::ZERO) {
                    self.open = Some(Open {
                        opened_at: now,
                        retries: 1,
                        deadline: now + sleep,
                        latest: state,
                        connected_since_passed: false,
                    });
                }
            }
            return self.pass(vec![state]);
        };
        let connected_since_passed = open.connected_since_passed;
        open.latest = state;
        if state.is_connected() {
            open.connected_since_passed = true;
            return Vec::new();
        }
        if state != Lost || (passed == Some(Lost) && !connected_since_passed) {
            return Vec::new();
        }
        open.connected_since_passed = false;
        if passed == Some(Lost) {
            self.pass(vec![Reconnected, Lost])
        } else {
            self.pass(vec![Lost])
        }
    }

    /// A wake-up; returns what the listener hears now (something only when this breaker's
    /// period has ended and it closes).
    pub(crate) fn on_tick(&mut self, now: Instant) -> Vec<ConnectionState> {
        let Some(open) = &self.open else {
            return Vec::new();
        };
        if now < open.deadline {
            return Vec::new();
        }
        if !open.latest.is_connected() {
            if let Some(sleep) = self.allow(open.retries, now - open.opened_at) {
                let open = self.open.as_mut().expect("open");
                open.retries += 1;
                open.deadline = now + sleep;
                return Vec::new();
            }
        }
        let Some(open) = self.open.take() else {
            return Vec::new();
        };
        if Some(open.latest) == self.passed {
            return Vec::new();
        }
        // After a passed `Lost`, a not-connected latest state means a new session came and
        // the connection went again: the listener hears the new session first.
        if self.passed == Some(Lost) && !open.latest.is_connected() {
            return self.pass(vec![Reconnected, open.latest]);
        }
        self.pass(vec![open.latest])
    }

    /// An event of the raw stream.
    pub(crate) fn on_event(&mut self, event: StateEvent, now: Instant) -> Vec<ConnectionState> {
        match event {
            StateEvent::State(state) => self.on_state(state, now),
            StateEvent::Tick => self.on_tick(now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::{NeverRetry, RetryNTimes};
    use ConnectionState::{Connected, Suspended};

    const PERIOD: Duration = Duration::from_secs(1);

    fn breaker(retries: u32) -> CircuitBreaker {
        CircuitBreaker::new(SharedRetryPolicy::new(RetryNTimes::new(retries, PERIOD)))
    }

    #[test]
    fn closed_passes_everything_and_the_first_error_state_opens() {
        let mut b = breaker(3);
        let t = Instant::now();
        assert_eq!(b.on_state(Connected, t), [Connected]);
        assert_eq!(b.deadline(), None);
        assert_eq!(b.on_state(Suspended, t), [Suspended]);
        assert_eq!(b.deadline(), Some(t + PERIOD));
    }

    #[test]
    fn flapping_while_open_is_absorbed_and_the_latest_state_passed_at_the_end() {
        let mut b = breaker(3);
        let t = Instant::now();
        b.on_state(Connected, t);
        b.on_state(Suspended, t);
        for _ in 0..10 {
            assert!(b.on_state(Reconnected, t).is_empty());
            assert!(b.on_state(Suspended, t).is_empty());
        }
        assert!(b.on_state(Reconnected, t).is_empty());
        assert!(b.on_tick(t + PERIOD / 2).is_empty(), "not yet");
        assert_eq!(b.on_tick(t + PERIOD), [Reconnected]);
        assert_eq!(b.deadline(), None);
        // Closed again: the next error state opens a new circuit.
        assert_eq!(b.on_state(Suspended, t + PERIOD), [Suspended]);
    }

    #[test]
    fn a_still_bad_connection_extends_the_circuit_until_retries_run_out() {
        let mut b = breaker(2);
        let t = Instant::now();
        b.on_state(Connected, t);
        b.on_state(Suspended, t);
        b.on_state(Reconnected, t);
        b.on_state(Suspended, t);
        assert!(b.on_tick(t + PERIOD).is_empty());
        assert_eq!(b.deadline(), Some(t + 2 * PERIOD));
        // Retries exhausted: closes; the latest equals the passed state, so nothing is passed.
        assert!(b.on_tick(t + 2 * PERIOD).is_empty());
        assert_eq!(b.deadline(), None);
        assert_eq!(b.on_state(Reconnected, t + 3 * PERIOD), [Reconnected]);
    }

    #[test]
    fn lost_while_open_is_passed_at_once() {
        let mut b = breaker(3);
        let t = Instant::now();
        b.on_state(Connected, t);
        b.on_state(Suspended, t);
        assert_eq!(b.on_state(Lost, t), [Lost]);
        assert!(b.on_state(Reconnected, t).is_empty());
        assert_eq!(b.on_tick(t + PERIOD), [Reconnected]);
    }

    #[test]
    fn a_second_session_lost_while_open_is_passed_with_the_session_before_it() {
        let mut b = breaker(2);
        let t = Instant::now();
        b.on_state(Connected, t);
        assert_eq!(b.on_state(Lost, t), [Lost]);
        assert!(b.on_state(Reconnected, t).is_empty());
        assert!(b.on_state(Suspended, t).is_empty());
        assert_eq!(b.on_state(Lost, t), [Reconnected, Lost]);
        assert!(b.on_state(Lost, t).is_empty(), "the same loss again");
        assert!(b.on_state(Reconnected, t).is_empty());
        assert!(b.on_state(Suspended, t).is_empty());
        assert!(b.on_tick(t + PERIOD).is_empty(), "still bad: extended");
        assert_eq!(b.on_tick(t + 3 * PERIOD), [Reconnected, Suspended]);
    }

    #[test]
    fn a_policy_that_refuses_never_opens() {
        let mut b = CircuitBreaker::new(SharedRetryPolicy::new(NeverRetry));
        let t = Instant::now();
        assert_eq!(b.on_state(Suspended, t), [Suspended]);
        assert_eq!(b.deadline(), None);
        assert_eq!(b.on_state(Reconnected, t), [Reconnected]);
    }
}
