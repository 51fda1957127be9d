//! A generic linearizability checker for recorded histories (Knossos- and Porcupine-style):
//! given operations with their invocation and completion times and what they returned, and a
//! sequential [`Model`] of the object, it searches for a total order of the operations that
//! respects real time (an operation that returned before another was invoked comes first) and
//! in which every operation, applied to the model in turn, returns what it returned.
//!
//! The search is Wing and Gong's, with Lowe's refinements, as Porcupine implements it: the
//! invocations and completions are one list in time order; the search walks it, linearizing an
//! operation whose invocation it meets when the model accepts it there, and backtracking when it
//! meets the completion of an operation not linearized yet. Every (set of operations
//! linearized, model state) configuration tried is remembered, so no configuration is explored
//! twice. The set is kept as a 128-bit Zobrist hash (a random word per operation, XORed in and
//! out), so a remembered configuration costs a few words whatever the history's length; two
//! distinct sets collide with probability about 2^-128 per pair, and a collision could only
//! prune a branch (report a linearizable history as not), never the other way round.
//!
//! **Unknown outcomes.** An operation whose outcome the caller never learned (invoked and never
//! returned, or failed with an error that does not say whether it applied: a lost reply, a
//! client closed mid-way) is given as [`Outcome::Unknown`]: it may take effect at any point
//! after its invocation, or never. It has no completion in the list (so nothing forces it in),
//! and the search succeeds once every operation with a known outcome is linearized. An
//! operation that failed *definitely* (nothing applied) is best left out; when its failure
//! says something about the state (a compare-and-set that met another version), give the
//! failure as its output.
//!
//! **Partitions.** Operations on independent objects (a register per node) linearize
//! independently (linearizability is compositional), so [`check_partitioned`] checks each
//! object's history on its own: far cheaper than one search over everything.
//!
//! **Bounded.** The search can be exponential in the number of concurrent operations. It stops
//! after [`Budget::max_steps`] steps and answers [`Verdict::Unknown`], so a history too large or
//! too ambiguous to decide costs a bounded time and is reported as undecided, never as a
//! violation.
//!
//! **Why not `stateright`.** Stateright is a model checker: it explores the states a model of
//! a system can reach (and its `LinearizabilityTester` checks histories *the model checker
//! itself generates*, operation by operation as they happen). Here the history comes from a real
//! (or simulated) run, recorded afterwards, with operations of unknown outcome and wall-clock
//! times: what is needed is a history checker (Knossos, Porcupine), and its core is a short
//! search, written here against the project's own history types.
//!
//! ```
//! use std::time::Duration;
//! use integration_tests::linearizability::{check, Budget, Model, Op, Outcome, Verdict};
//!
//! /// A register of integers: writes and reads.
//! struct Register;
//! #[derive(Debug)]
//! enum Input { Write(u32), Read }
//!
//! impl Model for Register {
//!     type State = u32;
//!     type Input = Input;
//!     type Output = u32; // what a read returned (0 for a write)
//!     fn init(&self) -> u32 { 0 }
//!     fn step(&self, state: &u32, input: &Input, output: Option<&u32>) -> Option<u32> {
//!         match input {
//!             Input::Write(v) => Some(*v),
//!             Input::Read => output.is_none_or(|read| read == state).then_some(*state),
//!         }
//!     }
//! }
//!
//! let ms = Duration::from_millis;
//! // A write of 1 returned, then a read invoked after it returned 0: a stale read.
//! let history = [
//!     Op { input: Input::Write(1), invoked: ms(0), outcome: Outcome::Returned { output: 0, at: ms(10) } },
//!     Op { input: Input::Read, invoked: ms(20), outcome: Outcome::Returned { output: 0, at: ms(30) } },
//! ];
//! assert!(matches!(check(&Register, &history, Budget::default()), Verdict::NotLinearizable(_)));
//! // Had the write's outcome been unknown, it might never have applied.
//! let history = [
//!     Op { input: Input::Write(1), invoked: ms(0), outcome: Outcome::Unknown },
//!     Op { input: Input::Read, invoked: ms(20), outcome: Outcome::Returned { output: 0, at: ms(30) } },
//! ];
//! assert_eq!(check(&Register, &history, Budget::default()), Verdict::Linearizable);
//! ```

use std::collections::{BTreeMap, HashSet};
use std::fmt::Debug;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::time::Duration;

/// A sequential specification of an object.
pub trait Model {
    /// The object's state; cloned and remembered by the search, so keep it small.
    type State: Clone + Eq + Hash + Debug;
    /// What an operation asks (a read, a write of a value, ...).
    type Input: Debug;
    /// What an operation returned.
    type Output: Debug;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// Applies `input` to `state`: the next state when the operation, applied in `state`, could
    /// have returned `output`; `None` when it could not. `output` is `None` for an operation of
    /// unknown outcome: then the next state *if it takes effect* (`None` when it cannot take
    /// effect in `state`; "never" is always allowed, the checker tries that itself). A model
    /// whose unknown operations could leave several states can make its state the set of them.
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State>;
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<O> {
    /// It returned `output` at `at`: it took effect once, between its invocation and `at`.
    Returned {
        /// What it returned.
        output: O,
        /// When it returned (the run's clock).
        at: Duration,
    },
    /// Nobody knows: it took effect once at some point after its invocation, or never.
    Unknown,
}

/// One operation of a history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op<I, O> {
    /// What it asked.
    pub input: I,
    /// When it was invoked (the run's clock).
    pub invoked: Duration,
    /// How it ended.
    pub outcome: Outcome<O>,
}

/// A history of operations on `M`'s object.
pub type History<M> = Vec<Op<<M as Model>::Input, <M as Model>::Output>>;

/// How much work one check may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Steps of the search (an operation tried, or a backtrack) before it gives up.
    pub max_steps: u64,
}

impl Default for Budget {
    /// Two million steps: well under a second; a history of thousands of operations with
    /// little concurrency takes a few steps per operation.
    fn default() -> Self {
        Self {
            max_steps: 2_000_000,
        }
    }
}

/// What the search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// An order exists.
    Linearizable,
    /// No order exists; what the search got furthest with.
    NotLinearizable(String),
    /// The budget ran out first: undecided (not a violation).
    Unknown(String),
}

/// A fast, deterministic hasher for the search's remembered configurations (their keys are
/// already random words).
#[derive(Default)]
struct WordHasher(u64);

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u128(&mut self, n: u128) {
        self.write_u64(n as u64);
        self.write_u64((n >> 64) as u64);
    }

    fn write_i32(&mut self, n: i32) {
        self.write_u64(u64::from(n as u32));
    }

    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A deterministic stream of random words (splitmix64), for the Zobrist hashes.
fn splitmix(seed: &mut u64) -> u64 {
    *seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Call(usize),
    Return(usize),
}

/// Checks that `history` is linearizable with respect to `model`, within `budget`.
pub fn check<M: Model>(model: &M, history: &[Op<M::Input, M::Output>], budget: Budget) -> Verdict {
    let n = history.len();
    // The events in time order; at one instant invocations first (two operations where one
    // returns at the instant the other is invoked are concurrent: nothing orders them).
    let mut events: Vec<(Duration, u8, usize, Event)> = Vec::with_capacity(2 * n);
    for (i, op) in history.iter().enumerate() {
        events.push((op.invoked, 0, i, Event::Call(i)));
        if let Outcome::Returned { at, .. } = op.outcome {
            events.push((at.max(op.invoked), 1, i, Event::Return(i)));
        }
    }
    events.sort_unstable_by_key(|&(at, kind, i, _)| (at, kind, i));
    // A doubly linked list over the events, node 0 the head and node len+1 the tail.
    let len = events.len();
    let tail = len + 1;
    let mut next: Vec<usize> = (1..=len + 1).chain([tail]).collect();
    let mut prev: Vec<usize> = [0].into_iter().chain(0..=len).collect();
    let kind: Vec<Event> = [Event::Call(usize::MAX)]
        .into_iter()
        .chain(events.iter().map(|e| e.3))
        .chain([Event::Call(usize::MAX)])
        .collect();
    let mut call_node = vec![0; n];
    let mut return_node = vec![None; n];
    for (node, event) in kind.iter().enumerate().take(len + 1).skip(1) {
        match *event {
            Event::Call(i) => call_node[i] = node,
            Event::Return(i) => return_node[i] = Some(node),
        }
    }
    let mut seed = 0x5eed_u64;
    let zobrist: Vec<u128> = (0..n)
        .map(|_| (u128::from(splitmix(&mut seed)) << 64) | u128::from(splitmix(&mut seed)))
        .collect();

    let unlink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, node: usize| {
        let (p, q) = (prev[node], next[node]);
        next[p] = q;
        prev[q] = p;
    };
    let relink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, node: usize| {
        let (p, q) = (prev[node], next[node]);
        next[p] = node;
        prev[q] = node;
    };

    let mut remaining = history
        .iter()
        .filter(|op| matches!(op.outcome, Outcome::Returned { .. }))
        .count();
    let mut state = model.init();
    let mut linearized: u128 = 0;
    let mut seen: HashSet<(u128, M::State), BuildHasherDefault<WordHasher>> = HashSet::default();
    // (operation, state before it, its call node)
    let mut stack: Vec<(usize, M::State)> = Vec::new();
    // The deepest point a backtrack started from: (operations linearized, the one that could
    // not be placed, the state there).
    let mut furthest: Option<(usize, usize, M::State)> = None;
    let mut node = next[0];
    let mut steps = 0u64;
    loop {
        if remaining == 0 {
            return Verdict::Linearizable;
        }
        steps += 1;
        if steps > budget.max_steps {
            return Verdict::Unknown(format!(
                "gave up after {} steps ({} of {} operations linearized, {} configurations \
                 remembered)",
                budget.max_steps,
                stack.len(),
                n,
                seen.len()
            ));
        }
        match kind[node] {
            Event::Call(i) if node != tail => {
                let op = &history[i];
                let output = match &op.outcome {
                    Outcome::Returned { output, .. } => Some(output),
                    Outcome::Unknown => None,
                };
                if let Some(after) = model.step(&state, &op.input, output) {
                    let key = linearized ^ zobrist[i];
                    if seen.insert((key, after.clone())) {
                        stack.push((i, std::mem::replace(&mut state, after)));
                        linearized = key;
                        unlink(&mut next, &mut prev, call_node[i]);
                        if let Some(ret) = return_node[i] {
                            unlink(&mut next, &mut prev, ret);
                            remaining -= 1;
                        }
                        node = next[0];
                        continue;
                    }
                }
                node = next[node];
            }
            Event::Call(_) => {
                // The tail: only reached with operations of known outcome left when every
                // one of them has a completion ahead, so never; be safe.
                return Verdict::Unknown("the search ran off the end of the history".into());
            }
            Event::Return(blocked) => {
                if furthest
                    .as_ref()
                    .is_none_or(|(depth, _, _)| stack.len() > *depth)
                {
                    furthest = Some((stack.len(), blocked, state.clone()));
                }
                let Some((i, before)) = stack.pop() else {
                    let (depth, blocked, state) = furthest.expect("set above");
                    let op = &history[blocked];
                    return Verdict::NotLinearizable(format!(
                        "no order of the {n} operations is linearizable; the longest prefix \
                         found linearizes {depth}, and then cannot place {:?} invoked at \
                         {:?}, {:?}, in state {state:?}",
                        op.input, op.invoked, op.outcome
                    ));
                };
                state = before;
                linearized ^= zobrist[i];
                if let Some(ret) = return_node[i] {
                    relink(&mut next, &mut prev, ret);
                    remaining += 1;
                }
                relink(&mut next, &mut prev, call_node[i]);
                node = next[call_node[i]];
            }
        }
    }
}

/// Checks each object's history on its own: `history` gives each operation with the object it
/// acts on; the verdicts by object.
pub fn check_partitioned<M, K>(
    model: &M,
    history: impl IntoIterator<Item = (K, Op<M::Input, M::Output>)>,
    budget: Budget,
) -> BTreeMap<K, Verdict>
where
    M: Model,
    K: Ord,
{
    let mut parts: BTreeMap<K, History<M>> = BTreeMap::new();
    for (key, op) in history {
        parts.entry(key).or_default().push(op);
    }
    parts
        .into_iter()
        .map(|(key, ops)| (key, check(model, &ops, budget)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A register of integers with writes, reads and compare-and-set.
    struct Reg;

    #[derive(Debug, Clone)]
    enum In {
        W(u32),
        R,
        Cas(u32, u32),
    }

    impl Model for Reg {
        type State = u32;
        type Input = In;
        /// A read's value; a CAS's success; 0 for a write.
        type Output = u32;
        fn init(&self) -> u32 {
            0
        }
        fn step(&self, s: &u32, input: &In, output: Option<&u32>) -> Option<u32> {
            match (input, output) {
                (In::W(v), _) => Some(*v),
                (In::R, None) => Some(*s),
                (In::R, Some(r)) => (r == s).then_some(*s),
                (In::Cas(from, to), Some(1) | None) => (s == from).then_some(*to),
                (In::Cas(from, _), Some(_)) => (s != from).then_some(*s),
            }
        }
    }

    fn op(input: In, invoked: u64, returned: u64, output: u32) -> Op<In, u32> {
        Op {
            input,
            invoked: ms(invoked),
            outcome: Outcome::Returned {
                output,
                at: ms(returned),
            },
        }
    }

    fn unknown(input: In, invoked: u64) -> Op<In, u32> {
        Op {
            input,
            invoked: ms(invoked),
            outcome: Outcome::Unknown,
        }
    }

    fn verdict(history: &[Op<In, u32>]) -> Verdict {
        check(&Reg, history, Budget::default())
    }

    #[test]
    fn empty_and_sequential_histories_are_linearizable() {
        assert_eq!(verdict(&[]), Verdict::Linearizable);
        let history = [
            op(In::W(1), 0, 1, 0),
            op(In::R, 2, 3, 1),
            op(In::Cas(1, 2), 4, 5, 1),
            op(In::Cas(1, 3), 6, 7, 0),
            op(In::R, 8, 9, 2),
        ];
        assert_eq!(verdict(&history), Verdict::Linearizable);
    }

    #[test]
    fn concurrent_operations_may_take_either_order() {
        // The read overlaps the write: it may see the old value or the new one.
        for seen in [0, 1] {
            let history = [op(In::W(1), 0, 10, 0), op(In::R, 5, 15, seen)];
            assert_eq!(verdict(&history), Verdict::Linearizable, "read {seen}");
        }
        // Two overlapping writes, then reads that agree on the last one.
        let history = [
            op(In::W(1), 0, 10, 0),
            op(In::W(2), 1, 9, 0),
            op(In::R, 11, 12, 1),
            op(In::R, 13, 14, 1),
        ];
        assert_eq!(verdict(&history), Verdict::Linearizable);
        // An operation returning at the instant another is invoked does not precede it.
        let history = [op(In::W(1), 0, 10, 0), op(In::R, 10, 11, 0)];
        assert_eq!(verdict(&history), Verdict::Linearizable);
    }

    #[test]
    fn a_stale_read_after_a_completed_write_is_caught() {
        let history = [op(In::W(1), 0, 10, 0), op(In::R, 11, 12, 0)];
        let found = verdict(&history);
        assert!(matches!(found, Verdict::NotLinearizable(_)), "{found:?}");
    }

    #[test]
    fn reads_seeing_writes_in_opposite_orders_are_caught() {
        // Writes of 1 and 2 overlap; one reader sees 1 then 2, the other 2 then 1, all reads
        // after both writes returned... and before: the classic.
        let history = [
            op(In::W(1), 0, 100, 0),
            op(In::W(2), 0, 100, 0),
            op(In::R, 10, 20, 1),
            op(In::R, 30, 40, 2),
            op(In::R, 10, 20, 2),
            op(In::R, 30, 40, 1),
        ];
        let found = verdict(&history);
        assert!(matches!(found, Verdict::NotLinearizable(_)), "{found:?}");
        // One reader only: fine.
        assert_eq!(verdict(&history[..4]), Verdict::Linearizable);
    }

    #[test]
    fn a_value_never_written_is_caught() {
        let history = [op(In::W(1), 0, 10, 0), op(In::R, 5, 12, 7)];
        assert!(matches!(verdict(&history), Verdict::NotLinearizable(_)));
    }

    #[test]
    fn compare_and_set_is_checked_both_ways() {
        // Two CAS from 0 both succeeded: impossible.
        let history = [op(In::Cas(0, 1), 0, 10, 1), op(In::Cas(0, 2), 0, 10, 1)];
        assert!(matches!(verdict(&history), Verdict::NotLinearizable(_)));
        // A CAS failed although nothing could have changed the value.
        let history = [op(In::Cas(0, 1), 0, 10, 0)];
        assert!(matches!(verdict(&history), Verdict::NotLinearizable(_)));
        // It failed because a concurrent write got in first.
        let history = [op(In::Cas(0, 1), 0, 10, 0), op(In::W(5), 0, 10, 0)];
        assert_eq!(verdict(&history), Verdict::Linearizable);
    }

    #[test]
    fn an_unknown_write_may_take_effect_late_or_never() {
        // Seen: it took effect (even long after its invocation).
        let history = [
            unknown(In::W(1), 0),
            op(In::R, 10, 11, 0),
            op(In::R, 50, 51, 1),
            op(In::R, 60, 61, 1),
        ];
        assert_eq!(verdict(&history), Verdict::Linearizable);
        // Never seen: it did not.
        let history = [unknown(In::W(1), 0), op(In::R, 50, 51, 0)];
        assert_eq!(verdict(&history), Verdict::Linearizable);
        // But once, at one point: not seen, then seen, then not seen again.
        let history = [
            unknown(In::W(1), 0),
            op(In::R, 10, 11, 1),
            op(In::R, 20, 21, 0),
        ];
        assert!(matches!(verdict(&history), Verdict::NotLinearizable(_)));
        // And not before it was invoked.
        let history = [op(In::R, 0, 1, 1), unknown(In::W(1), 5)];
        assert!(matches!(verdict(&history), Verdict::NotLinearizable(_)));
        // An unknown CAS that cannot apply simply did not.
        let history = [unknown(In::Cas(7, 8), 0), op(In::R, 10, 11, 0)];
        assert_eq!(verdict(&history), Verdict::Linearizable);
    }

    #[test]
    fn the_budget_bounds_the_search() {
        // Many concurrent writes and a read of a value nobody wrote: every order is tried.
        let mut history: Vec<Op<In, u32>> = (1..=18).map(|v| op(In::W(v), 0, 100, 0)).collect();
        history.push(op(In::R, 0, 100, 99));
        let found = check(&Reg, &history, Budget { max_steps: 10_000 });
        assert!(matches!(found, Verdict::Unknown(_)), "{found:?}");
    }

    #[test]
    fn long_sequential_histories_are_cheap() {
        let mut history = Vec::new();
        for i in 0..20_000u32 {
            let t = u64::from(i) * 10;
            history.push(op(In::W(i + 1), t, t + 6, 0));
            // A read overlapping the next write.
            history.push(op(In::R, t + 5, t + 12, i + 1));
        }
        assert_eq!(
            check(&Reg, &history, Budget { max_steps: 400_000 }),
            Verdict::Linearizable
        );
    }

    #[test]
    fn partitions_are_checked_on_their_own() {
        let history = [
            op(In::W(1), 0, 1, 0),
            op(In::W(2), 0, 1, 0),
            op(In::R, 2, 3, 1),
            op(In::R, 2, 3, 2),
        ];
        // As one register: two reads disagree after both writes returned.
        assert!(matches!(verdict(&history), Verdict::NotLinearizable(_)));
        // As two registers (by parity of the value): both fine.
        let by_parity = history.iter().map(|op| {
            let key = match (&op.input, &op.outcome) {
                (In::W(v), _) | (_, Outcome::Returned { output: v, .. }) => v % 2,
                _ => 0,
            };
            (key, op.clone())
        });
        let verdicts = check_partitioned(&Reg, by_parity, Budget::default());
        assert_eq!(verdicts.len(), 2);
        assert!(verdicts.values().all(|v| *v == Verdict::Linearizable));
    }
}
