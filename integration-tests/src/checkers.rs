//! Invariant checkers: pure functions over a recorded history, each returning the violations it
//! finds (none for a valid history).
//!
//! Soundness. A holder learns that it lost its lock (or leadership) only after the fact: its
//! session can be closed at the server while it still thinks it holds. So "acting" is defined
//! by what ZooKeeper confirms: every action is a transaction that checks the actor's own
//! lock/latch node exists, and appends an entry to a log of sequential nodes. Two checks follow:
//!
//! - **Server order.** In the log's sequence order, tokens (mutex) and terms (leader) never go
//!   back: an entry of an older holder after an entry of a newer one means two holders acted
//!   in overlapping turns.
//! - **Local time.** A hold provably lasts from the moment `acquire` returned (the holder's node
//!   was lowest at some instant before) to the sending of its last confirmed action (its node
//!   existed at some instant after). Nodes exist over one contiguous interval and a lower node
//!   blocks every higher one, so two such intervals can never overlap; an overlap, on one
//!   monotonic clock, is a violation whatever the scheduling.
//!
//! Actions that were sent after the holder was told it lost its role break the recipes'
//! connection-state policy as the workloads follow it: also a violation.
//!
//! The counter and the register nodes are also checked for linearizability by the generic
//! checker ([`crate::linearizability`]) against sequential models ([`CounterModel`],
//! [`RegisterModel`]); the queues' deliveries for FIFO order ([`queue_reorderings`]).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::history::{
    CounterHistory, CounterOp, Episode, LogEntry, Put, RegisterInput, RegisterOp, RegisterOutput,
    Take, Tree, Violation,
};
use crate::linearizability::{self, Budget, Model, Op, Outcome, Verdict};

/// How many details of one kind a checker spells out.
const MAX_DETAILS: usize = 10;

/// Checks the mutex: holders' log entries in server order never go back to an older token,
/// provable holds never overlap in time, and nobody acted after being told the lock was lost.
pub fn check_mutex(episodes: &[Episode], log: &[LogEntry]) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut sorted = log.to_vec();
    sorted.sort_by_key(|e| e.seq);
    let mut newest: Option<LogEntry> = None;
    for entry in &sorted {
        match newest {
            Some(top) if entry.token < top.token => violations.push(Violation::new(
                "mutex",
                format!(
                    "overlapping holders: client {} (token {}) acted at log seq {} after client {} \
                     (token {}) had acted as holder at seq {}",
                    entry.client, entry.token, entry.seq, top.client, top.token, top.seq
                ),
            )),
            Some(top) if entry.token == top.token => {}
            _ => newest = Some(*entry),
        }
    }
    violations.extend(overlapping_episodes("mutex", "holds", episodes));
    violations.extend(acted_after_lost("mutex", episodes));
    violations
}

/// Checks the leader latch: never two leaders of one term, terms never go back in server order
/// (a leader acting after its successor started), provable leaderships never overlap in time, and
/// no leader acted after being told it lost leadership.
pub fn check_leader(episodes: &[Episode], log: &[LogEntry]) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut leaders: BTreeMap<u64, BTreeSet<(usize, i64)>> = BTreeMap::new();
    for entry in log {
        leaders
            .entry(entry.term)
            .or_default()
            .insert((entry.client, entry.token));
    }
    for (term, who) in &leaders {
        if who.len() > 1 {
            violations.push(Violation::new(
                "leader",
                format!("two leaders of term {term}: (client, latch node) {who:?}"),
            ));
        }
    }
    let mut sorted = log.to_vec();
    sorted.sort_by_key(|e| e.seq);
    let mut newest: Option<LogEntry> = None;
    for entry in &sorted {
        match newest {
            Some(top) if entry.term < top.term => violations.push(Violation::new(
                "leader",
                format!(
                    "client {} acted as leader of term {} at log seq {} after its successor, \
                     client {}, started term {} at seq {}",
                    entry.client, entry.term, entry.seq, top.client, top.term, top.seq
                ),
            )),
            Some(top) if entry.term == top.term => {}
            _ => newest = Some(*entry),
        }
    }
    violations.extend(overlapping_episodes("leader", "leaderships", episodes));
    violations.extend(acted_after_lost("leader", episodes));
    violations
}

/// Pairs of episodes whose provable intervals overlap (a sweep over start times).
fn overlapping_episodes(
    workload: &'static str,
    what: &str,
    episodes: &[Episode],
) -> Vec<Violation> {
    let mut intervals: Vec<(&Episode, std::time::Duration)> = episodes
        .iter()
        .filter_map(|e| e.confirmed_until().map(|end| (e, end)))
        .collect();
    intervals.sort_by_key(|(e, _)| e.started_at);
    let mut violations = Vec::new();
    let mut latest: Option<(&Episode, std::time::Duration)> = None;
    for (episode, end) in intervals {
        if let Some((other, other_end)) = latest {
            if episode.started_at < other_end {
                violations.push(Violation::new(
                    workload,
                    format!(
                        "overlapping {what}: client {} (token {}) started at {:?}, while client {} \
                         (token {}) held from {:?} and acted, confirmed, at {:?}",
                        episode.client,
                        episode.token,
                        episode.started_at,
                        other.client,
                        other.token,
                        other.started_at,
                        other_end
                    ),
                ));
            }
        }
        if latest.is_none_or(|(_, other_end)| end > other_end) {
            latest = Some((episode, end));
        }
    }
    violations
}

fn acted_after_lost(workload: &'static str, episodes: &[Episode]) -> Vec<Violation> {
    episodes
        .iter()
        .filter_map(|e| {
            let lost = e.lost_at?;
            let late = e.actions.iter().find(|a| a.sent_at > lost)?;
            Some(Violation::new(
                workload,
                format!(
                    "client {} (token {}) acted at {:?}, after it was told at {:?} that it may \
                     have lost its role",
                    e.client, e.token, late.sent_at, lost
                ),
            ))
        })
        .collect()
}

/// Checks the counter: its final value is the initial value plus the increments reported
/// applied (plus at most the increments whose outcome is unknown).
pub fn check_counter(history: &CounterHistory) -> Vec<Violation> {
    let Some(final_value) = history.final_value else {
        return vec![Violation::new("counter", "the final value was never read")];
    };
    let low = history.initial + history.succeeded as i64;
    let high = low + history.unknown as i64;
    if (low..=high).contains(&final_value) {
        Vec::new()
    } else {
        vec![Violation::new(
            "counter",
            format!(
                "final value {final_value} but {} increments reported applied from {} \
                 ({} unknown, {} not applied): expected {low}{}",
                history.succeeded,
                history.initial,
                history.unknown,
                history.not_applied,
                if high > low {
                    format!("..={high}")
                } else {
                    String::new()
                }
            ),
        )]
    }
}

/// Checks that the counter's increments are linearizable: an order of the applied increments
/// exists that respects real time (an increment that returned before another was invoked
/// comes first) and in which each one moved the value from its reported `pre` to its `post`.
/// For increments by one that report both values that order is unique (by `post`), so the
/// check is exact and runs in `n log n`: every applied increment adds one, no two report the
/// same `post`, and no increment reports a `post` at or below one that returned before it was
/// invoked. Increments that did not report themselves applied are left out (they may or may
/// not have applied: `check_counter` bounds how many did).
pub fn check_counter_linearizable(ops: &[CounterOp]) -> Vec<Violation> {
    let mut violations = Vec::new();
    let applied: Vec<&CounterOp> = ops.iter().filter(|op| op.applied.is_some()).collect();
    let mut seen = std::collections::BTreeMap::new();
    for op in &applied {
        let (pre, post) = op.applied.expect("filtered");
        if post != pre + 1 {
            violations.push(Violation::new(
                "counter",
                format!("an increment reported {pre} -> {post}"),
            ));
        }
        if let Some(other) = seen.insert(post, *op) {
            violations.push(Violation::new(
                "counter",
                format!(
                    "two increments reported the same new value {post} (returned at {:?} and {:?})",
                    other.completed, op.completed
                ),
            ));
        }
    }
    // Real-time order: sweep invocations and completions in time order (a completion at the
    // same instant as an invocation does not precede it), keeping the highest `post` returned.
    let mut events: Vec<(std::time::Duration, u8, i64)> = Vec::new();
    for op in &applied {
        let (_, post) = op.applied.expect("filtered");
        events.push((op.invoked, 0, post));
        events.push((op.completed, 1, post));
    }
    events.sort_unstable();
    let mut highest_returned: Option<(std::time::Duration, i64)> = None;
    for (at, kind, post) in events {
        if kind == 1 {
            if highest_returned.is_none_or(|(_, high)| post > high) {
                highest_returned = Some((at, post));
            }
        } else if let Some((returned_at, high)) = highest_returned
            && post <= high
        {
            violations.push(Violation::new(
                "counter",
                format!(
                    "not linearizable: an increment invoked at {at:?} reported {post}, but one \
                     that returned at {returned_at:?} (before it) had already reported {high}"
                ),
            ));
        }
    }
    violations
}

/// The shared counter as a sequential object: increments by one, each reporting the value
/// before and after it.
#[derive(Debug, Clone, Copy)]
pub struct CounterModel {
    /// The value before the run.
    pub initial: i64,
}

impl Model for CounterModel {
    type State = i64;
    type Input = ();
    type Output = (i64, i64);

    fn init(&self) -> i64 {
        self.initial
    }

    fn step(&self, state: &i64, (): &(), output: Option<&(i64, i64)>) -> Option<i64> {
        match output {
            Some(&(pre, post)) => (pre == *state && post == pre + 1).then_some(post),
            None => Some(state + 1),
        }
    }
}

/// The counter's increments as a history for the generic checker: those reported applied, and
/// those of unknown outcome (the increments reported not applied did nothing and are left out).
pub fn counter_history(ops: &[CounterOp]) -> Vec<Op<(), (i64, i64)>> {
    ops.iter()
        .filter_map(|op| {
            let outcome = match (op.applied, op.unknown) {
                (Some(output), _) => Outcome::Returned {
                    output,
                    at: op.completed,
                },
                (None, true) => Outcome::Unknown,
                (None, false) => return None,
            };
            Some(Op {
                input: (),
                invoked: op.invoked,
                outcome,
            })
        })
        .collect()
}

/// Checks the counter's increments with the generic linearizability checker
/// ([`crate::linearizability`]); it must agree with [`check_counter_linearizable`] (which
/// leaves out the increments of unknown outcome, and is exact for the others). The
/// findings' `undecided` names a history the budget could not decide (not a violation).
pub fn check_counter_generic(
    history: &CounterHistory,
    budget: Budget,
) -> (Vec<Violation>, LinearizabilityFindings) {
    let ops = counter_history(&history.ops);
    let model = CounterModel {
        initial: history.initial,
    };
    let mut findings = LinearizabilityFindings {
        histories: 1,
        operations: ops.len(),
        ..Default::default()
    };
    let violations = match linearizability::check(&model, &ops, budget) {
        Verdict::Linearizable => Vec::new(),
        Verdict::NotLinearizable(why) => vec![Violation::new(
            "counter",
            format!("not linearizable (generic checker): {why}"),
        )],
        Verdict::Unknown(why) => {
            findings.undecided.push(format!("counter: {why}"));
            Vec::new()
        }
    };
    (violations, findings)
}

/// A register node as a sequential object: its value and data version. Writes and
/// compare-and-sets that apply move the version up by one; a compare-and-set applies only at
/// its expected version, and fails (`BadVersion`) only at another; a read returns both.
#[derive(Debug, Clone, Copy, Default)]
pub struct RegisterModel {
    /// The node's value and version before the run.
    pub initial: (u64, i32),
}

impl Model for RegisterModel {
    type State = (u64, i32);
    type Input = RegisterInput;
    type Output = RegisterOutput;

    fn init(&self) -> (u64, i32) {
        self.initial
    }

    fn step(
        &self,
        &(value, version): &(u64, i32),
        input: &RegisterInput,
        output: Option<&RegisterOutput>,
    ) -> Option<(u64, i32)> {
        let next = version.wrapping_add(1);
        let written = |v: &Option<i32>| v.is_none_or(|v| v == next);
        match (*input, output) {
            (RegisterInput::Read, None) => Some((value, version)),
            (
                RegisterInput::Read,
                Some(RegisterOutput::Read {
                    value: v,
                    version: n,
                }),
            ) => (*v == value && *n == version).then_some((value, version)),
            (RegisterInput::Write(new), None) => Some((new, next)),
            (RegisterInput::Write(new), Some(RegisterOutput::Written { version: v })) => {
                written(v).then_some((new, next))
            }
            (
                RegisterInput::Cas {
                    expected,
                    value: new,
                },
                None,
            ) => (version == expected).then_some((new, next)),
            (
                RegisterInput::Cas {
                    expected,
                    value: new,
                },
                Some(RegisterOutput::Written { version: v }),
            ) => (version == expected && written(v)).then_some((new, next)),
            (RegisterInput::Cas { expected, .. }, Some(RegisterOutput::CasFailed)) => {
                (version != expected).then_some((value, version))
            }
            _ => None,
        }
    }
}

/// What a run of the generic checker found besides violations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinearizabilityFindings {
    /// Histories checked (one per object).
    pub histories: usize,
    /// Operations in them.
    pub operations: usize,
    /// Operations among them of unknown outcome.
    pub unknown: usize,
    /// Histories the budget could not decide, and why (not violations).
    pub undecided: Vec<String>,
}

/// Checks that every register node's history is linearizable (each node on its own; every node
/// starts at `initial`). Reads count only when made linearizable: see
/// [`crate::workloads::register_worker`] (a plain read on a ZooKeeper follower may lag: it is
/// sequentially consistent, not linearizable; the workload reads after a `sync` on the same
/// client).
pub fn check_register(
    ops: &[RegisterOp],
    initial: (u64, i32),
    budget: Budget,
) -> (Vec<Violation>, LinearizabilityFindings) {
    let history = ops.iter().map(|op| {
        let outcome = match op.output {
            Some(output) => Outcome::Returned {
                output,
                at: op.completed,
            },
            None => Outcome::Unknown,
        };
        let input = op.input;
        (
            op.key,
            Op {
                input,
                invoked: op.invoked,
                outcome,
            },
        )
    });
    let model = RegisterModel { initial };
    let mut violations = Vec::new();
    let mut findings = LinearizabilityFindings {
        operations: ops.len(),
        unknown: ops.iter().filter(|op| op.output.is_none()).count(),
        ..Default::default()
    };
    let verdicts = linearizability::check_partitioned(&model, history, budget);
    for (key, verdict) in verdicts {
        findings.histories += 1;
        match verdict {
            Verdict::Linearizable => {}
            Verdict::NotLinearizable(why) => violations.push(Violation::new(
                "register",
                format!("register {key} not linearizable: {why}"),
            )),
            Verdict::Unknown(why) => findings.undecided.push(format!("register {key}: {why}")),
        }
    }
    (violations, findings)
}

/// What a queue promises about delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Each item delivered once; a duplicate is allowed only where the recipe documents it
    /// (a put or a take that ran across a connection-state change).
    ExactlyOnce,
    /// Each item delivered at least once; duplicates are reported, not violations.
    AtLeastOnce,
    /// Each item delivered exactly once, across faults too (the queues' exactly-once mode): any
    /// duplicate is a violation, and so is a failed put whose item was delivered (an error
    /// means not applied).
    Strict,
}

/// A queue check's findings besides violations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueFindings {
    /// Distinct items delivered.
    pub delivered: usize,
    /// Extra deliveries of items already delivered, that the delivery mode allows.
    pub allowed_duplicates: usize,
    /// Failed puts whose item was nevertheless delivered.
    pub failed_puts_delivered: usize,
}

/// Checks a queue: every successful put is delivered, nothing is delivered that was never put,
/// and duplicates only as `delivery` allows.
pub fn check_queue(
    workload: &'static str,
    puts: &[Put],
    takes: &[Take],
    delivery: Delivery,
) -> (Vec<Violation>, QueueFindings) {
    let mut violations = Vec::new();
    let mut findings = QueueFindings::default();
    let put_of: BTreeMap<&str, &Put> = puts.iter().map(|p| (p.item.as_str(), p)).collect();
    let mut taken: BTreeMap<&str, Vec<&Take>> = BTreeMap::new();
    for take in takes {
        taken.entry(take.item.as_str()).or_default().push(take);
    }
    let mut details = |kind: &str, list: Vec<String>| {
        if !list.is_empty() {
            let shown: Vec<&String> = list.iter().take(MAX_DETAILS).collect();
            violations.push(Violation::new(
                workload,
                format!("{} item(s) {kind}: {shown:?}", list.len()),
            ));
        }
    };
    let lost: Vec<String> = puts
        .iter()
        .filter(|p| p.ok && !taken.contains_key(p.item.as_str()))
        .map(|p| p.item.clone())
        .collect();
    details("lost (put succeeded, never delivered)", lost);
    let phantom: Vec<String> = taken
        .keys()
        .filter(|item| !put_of.contains_key(*item))
        .map(|item| (*item).to_owned())
        .collect();
    details("delivered but never put", phantom);
    let mut twice = Vec::new();
    for (item, deliveries) in &taken {
        findings.delivered += 1;
        if put_of.get(item).is_some_and(|p| !p.ok) {
            findings.failed_puts_delivered += 1;
        }
        if deliveries.len() < 2 {
            continue;
        }
        let documented = delivery != Delivery::Strict
            && (put_of.get(item).is_some_and(|p| p.across_fault)
                || deliveries.iter().any(|t| t.across_fault));
        if delivery == Delivery::AtLeastOnce || documented {
            findings.allowed_duplicates += deliveries.len() - 1;
        } else {
            let by: Vec<&str> = deliveries.iter().map(|t| t.by.as_str()).collect();
            twice.push(format!(
                "{item} (taken by {by:?}, no fault during put or takes)"
            ));
        }
    }
    details("taken more than once", twice);
    if delivery == Delivery::Strict {
        let applied_anyway: Vec<String> = puts
            .iter()
            .filter(|p| !p.ok && taken.contains_key(p.item.as_str()))
            .map(|p| p.item.clone())
            .collect();
        details("delivered although their put failed", applied_anyway);
    }
    (violations, findings)
}

/// Items a FIFO queue delivered out of order, as `(skipped, taken first)` pairs: `a` was put
/// (successfully) before `b`'s put was invoked, and `b`'s first take returned before `a`'s
/// first take was invoked, so a consumer took `b` while `a` sat in the queue (Elle's "queue
/// reordering"). Puts that did not report success, and items never taken, are left out (the
/// lost and never-put checks of [`check_queue`] see them). `n log n`.
pub fn queue_reorderings(puts: &[Put], takes: &[Take]) -> Vec<(String, String)> {
    let mut first_take: BTreeMap<&str, (Duration, Duration)> = BTreeMap::new();
    for take in takes {
        let entry = first_take
            .entry(take.item.as_str())
            .or_insert((take.invoked, take.completed));
        entry.0 = entry.0.min(take.invoked);
        entry.1 = entry.1.min(take.completed);
    }
    // (item, put invoked, put completed, take invoked, take completed)
    let items: Vec<(&str, Duration, Duration, Duration, Duration)> = puts
        .iter()
        .filter(|p| p.ok)
        .filter_map(|p| {
            let &(taken, returned) = first_take.get(p.item.as_str())?;
            Some((p.item.as_str(), p.invoked, p.completed, taken, returned))
        })
        .collect();
    let mut by_take_invoked: Vec<usize> = (0..items.len()).collect();
    by_take_invoked.sort_by_key(|&i| items[i].3);
    let mut by_take_completed: Vec<usize> = (0..items.len()).collect();
    by_take_completed.sort_by_key(|&i| items[i].4);
    let mut reordered = Vec::new();
    // Among the items whose take returned before the current item's take was invoked: the one
    // whose put was invoked last.
    let mut latest_put: Option<usize> = None;
    let mut next = 0;
    for &a in &by_take_invoked {
        while next < by_take_completed.len() && items[by_take_completed[next]].4 < items[a].3 {
            let b = by_take_completed[next];
            if latest_put.is_none_or(|l| items[b].1 > items[l].1) {
                latest_put = Some(b);
            }
            next += 1;
        }
        if let Some(b) = latest_put
            && items[b].1 > items[a].2
        {
            reordered.push((items[a].0.to_owned(), items[b].0.to_owned()));
        }
    }
    reordered
}

/// Checks a FIFO queue's order ([`queue_reorderings`]): each item skipped is a violation.
pub fn check_queue_order(workload: &'static str, puts: &[Put], takes: &[Take]) -> Vec<Violation> {
    let reordered = queue_reorderings(puts, takes);
    if reordered.is_empty() {
        return Vec::new();
    }
    let shown: Vec<String> = reordered
        .iter()
        .take(MAX_DETAILS)
        .map(|(a, b)| format!("{a} (put before {b} was put; taken after {b} was taken)"))
        .collect();
    vec![Violation::new(
        workload,
        format!(
            "{} item(s) delivered out of FIFO order: {shown:?}",
            reordered.len()
        ),
    )]
}

/// Checks a cache against the server's tree at a quiet point.
pub fn check_cache(workload: &'static str, cache: &Tree, server: &Tree) -> Vec<Violation> {
    let mut differences = Vec::new();
    for (path, node) in server {
        match cache.get(path) {
            None => differences.push(format!("{path} missing from the cache")),
            Some(cached) if cached != node => differences.push(format!(
                "{path}: cache has version {} {:?}, server version {} {:?}",
                cached.version,
                String::from_utf8_lossy(&cached.data),
                node.version,
                String::from_utf8_lossy(&node.data)
            )),
            Some(_) => {}
        }
    }
    for path in cache.keys().filter(|p| !server.contains_key(*p)) {
        differences.push(format!("{path} in the cache but not on the server"));
    }
    if differences.is_empty() {
        return Vec::new();
    }
    let count = differences.len();
    differences.truncate(MAX_DETAILS);
    vec![Violation::new(
        workload,
        format!("cache differs from the server in {count} node(s): {differences:?}"),
    )]
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::history::{Action, NodeState};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn episode(client: usize, token: i64, start: u64, actions: &[(u64, bool)]) -> Episode {
        Episode {
            client,
            token,
            started_at: ms(start),
            actions: actions
                .iter()
                .map(|&(at, ok)| Action {
                    sent_at: ms(at),
                    ok,
                })
                .collect(),
            lost_at: None,
        }
    }

    fn entry(seq: i64, client: usize, token: i64, term: u64) -> LogEntry {
        LogEntry {
            seq,
            client,
            token,
            term,
        }
    }

    // ---- mutex

    #[test]
    fn mutex_hand_overs_pass() {
        let episodes = [
            episode(0, 10, 0, &[(1, true), (2, true)]),
            episode(1, 12, 3, &[(4, true), (5, true)]),
            // A hold that lost its session: its last action failed, and a later holder started
            // before that failed action was sent. Not a violation: it was never confirmed.
            episode(0, 15, 6, &[(7, true), (20, false)]),
            episode(2, 17, 9, &[(10, true), (11, true)]),
            episode(1, 18, 12, &[]),
        ];
        let log = [
            entry(1, 0, 10, 0),
            entry(2, 0, 10, 0),
            entry(3, 1, 12, 0),
            entry(4, 1, 12, 0),
            entry(5, 0, 15, 0),
            entry(6, 2, 17, 0),
            entry(7, 2, 17, 0),
        ];
        assert_eq!(check_mutex(&episodes, &log), []);
    }

    #[test]
    fn mutex_catches_interleaved_holders_in_server_order() {
        let log = [
            entry(1, 0, 10, 0),
            entry(2, 1, 12, 0),
            entry(3, 0, 10, 0),
            entry(4, 1, 12, 0),
        ];
        let violations = check_mutex(&[], &log);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("overlapping holders"));
        // Unsorted input is sorted by sequence first.
        let mut shuffled = log;
        shuffled.reverse();
        assert_eq!(check_mutex(&[], &shuffled), violations);
    }

    #[test]
    fn mutex_catches_overlapping_holds_in_time() {
        let episodes = [
            episode(0, 10, 0, &[(1, true), (8, true)]),
            episode(1, 12, 5, &[(6, true)]),
        ];
        let violations = check_mutex(&episodes, &[]);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("overlapping holds"));
        // Also when the overlapping hold is not adjacent in start order.
        let episodes = [
            episode(0, 10, 0, &[(50, true)]),
            episode(1, 12, 5, &[(6, true)]),
            episode(2, 14, 7, &[(8, true)]),
        ];
        assert_eq!(check_mutex(&episodes, &[]).len(), 2);
    }

    #[test]
    fn mutex_catches_a_holder_acting_after_it_was_told_of_the_loss() {
        let mut late = episode(0, 10, 0, &[(1, true), (9, false)]);
        late.lost_at = Some(ms(5));
        let violations = check_mutex(&[late], &[]);
        assert_eq!(violations.len(), 1);
        assert!(violations[0].detail.contains("after it was told"));
    }

    // ---- leader

    #[test]
    fn leader_successions_pass() {
        let episodes = [
            episode(0, 1, 0, &[(1, true), (2, true)]),
            episode(1, 2, 3, &[(4, true)]),
            episode(2, 3, 5, &[(6, true), (7, true)]),
        ];
        let log = [
            entry(1, 0, 1, 1),
            entry(2, 0, 1, 1),
            entry(3, 1, 2, 2),
            entry(4, 2, 3, 3),
            entry(5, 2, 3, 3),
        ];
        assert_eq!(check_leader(&episodes, &log), []);
    }

    #[test]
    fn leader_catches_two_leaders_of_one_term() {
        let log = [entry(1, 0, 1, 4), entry(2, 1, 2, 4)];
        let violations = check_leader(&[], &log);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("two leaders of term 4"));
    }

    #[test]
    fn leader_catches_a_leader_acting_after_its_successor_started() {
        let log = [entry(1, 0, 1, 1), entry(2, 1, 2, 2), entry(3, 0, 1, 1)];
        let violations = check_leader(&[], &log);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("after its successor"));
        // The same in local time: the old leader's confirmed action after the new one started.
        let episodes = [
            episode(0, 1, 0, &[(1, true), (6, true)]),
            episode(1, 2, 5, &[(7, true)]),
        ];
        let violations = check_leader(&episodes, &[]);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("overlapping leaderships"));
    }

    #[test]
    fn leader_catches_acting_after_losing_leadership() {
        let mut late = episode(0, 1, 0, &[(1, true), (3, true)]);
        late.lost_at = Some(ms(2));
        assert_eq!(check_leader(&[late], &[]).len(), 1);
    }

    // ---- counter

    #[test]
    fn counter_matching_successes_passes() {
        let history = CounterHistory {
            initial: 5,
            succeeded: 10,
            not_applied: 3,
            unknown: 0,
            final_value: Some(15),
            ops: Vec::new(),
        };
        assert_eq!(check_counter(&history), []);
        let unknown = CounterHistory {
            unknown: 2,
            final_value: Some(16),
            ..history.clone()
        };
        assert_eq!(check_counter(&unknown), []);
    }

    #[test]
    fn counter_catches_a_mismatch() {
        let history = CounterHistory {
            initial: 0,
            succeeded: 10,
            not_applied: 3,
            unknown: 0,
            final_value: Some(11),
            ops: Vec::new(),
        };
        assert_eq!(check_counter(&history).len(), 1);
        let lost = CounterHistory {
            final_value: Some(9),
            ..history.clone()
        };
        assert_eq!(check_counter(&lost).len(), 1);
        let unread = CounterHistory {
            final_value: None,
            ..history
        };
        assert_eq!(check_counter(&unread).len(), 1);
    }

    // ---- queues

    fn put(item: &str, ok: bool, across_fault: bool) -> Put {
        Put {
            item: item.into(),
            ok,
            across_fault,
            invoked: Duration::ZERO,
            completed: Duration::ZERO,
        }
    }

    fn take(item: &str, by: &str, across_fault: bool) -> Take {
        Take {
            item: item.into(),
            by: by.into(),
            across_fault,
            invoked: Duration::ZERO,
            completed: Duration::ZERO,
        }
    }

    fn timed_put(item: &str, ok: bool, invoked: u64, completed: u64) -> Put {
        Put {
            invoked: ms(invoked),
            completed: ms(completed),
            ..put(item, ok, false)
        }
    }

    fn timed_take(item: &str, invoked: u64, completed: u64) -> Take {
        Take {
            invoked: ms(invoked),
            completed: ms(completed),
            ..take(item, "x", false)
        }
    }

    #[test]
    fn fifo_deliveries_pass_the_order_check() {
        let puts = [
            timed_put("a", true, 0, 10),
            timed_put("b", true, 20, 30),
            // Concurrent with b's put: either order.
            timed_put("c", true, 25, 40),
        ];
        let takes = [
            timed_take("a", 50, 60),
            timed_take("c", 61, 70),
            timed_take("b", 71, 80),
        ];
        assert_eq!(
            queue_reorderings(&puts, &takes),
            Vec::<(String, String)>::new()
        );
        assert_eq!(check_queue_order("queue", &puts, &takes), []);
        // Takes that overlap may return in any order.
        let takes = [timed_take("b", 50, 60), timed_take("a", 55, 70)];
        assert_eq!(check_queue_order("queue", &puts[..2], &takes), []);
        // A failed put, or an item never taken, says nothing about order.
        let puts = [timed_put("a", false, 0, 10), timed_put("b", true, 20, 30)];
        let takes = [timed_take("b", 50, 60), timed_take("a", 70, 80)];
        assert_eq!(check_queue_order("queue", &puts, &takes), []);
        assert_eq!(check_queue_order("queue", &puts, &takes[..1]), []);
    }

    #[test]
    fn the_order_check_catches_a_skipped_item() {
        let puts = [
            timed_put("a", true, 0, 10),
            timed_put("b", true, 20, 30),
            timed_put("c", true, 40, 50),
        ];
        // b taken (and returned) before a's take was even invoked.
        let takes = [
            timed_take("b", 60, 70),
            timed_take("a", 71, 80),
            timed_take("c", 81, 90),
        ];
        assert_eq!(
            queue_reorderings(&puts, &takes),
            [("a".to_owned(), "b".to_owned())]
        );
        let violations = check_queue_order("queue", &puts, &takes);
        assert_eq!(violations.len(), 1);
        assert!(violations[0].detail.contains("out of FIFO order"));
        // Also when the witness is not the item just before: c taken before a and b.
        let takes = [
            timed_take("c", 60, 70),
            timed_take("a", 71, 80),
            timed_take("b", 81, 90),
        ];
        assert_eq!(queue_reorderings(&puts, &takes).len(), 2);
        // A duplicate delivery of b later does not excuse its first.
        let takes = [
            timed_take("b", 60, 70),
            timed_take("a", 71, 80),
            timed_take("b", 81, 90),
            timed_take("c", 91, 95),
        ];
        assert_eq!(queue_reorderings(&puts, &takes).len(), 1);
    }

    #[test]
    fn queue_delivering_each_item_once_passes() {
        let puts = [
            put("a", true, false),
            put("b", true, false),
            put("c", false, true),
        ];
        // The failed put was stored after all: delivered, fine.
        let takes = [
            take("b", "x", false),
            take("a", "y", false),
            take("c", "x", false),
        ];
        for delivery in [Delivery::ExactlyOnce, Delivery::AtLeastOnce] {
            let (violations, findings) = check_queue("queue", &puts, &takes, delivery);
            assert_eq!(violations, []);
            assert_eq!(findings.delivered, 3);
            assert_eq!(findings.failed_puts_delivered, 1);
        }
        // A failed put that was not stored is not lost.
        let (violations, _) = check_queue("queue", &puts, &takes[..2], Delivery::ExactlyOnce);
        assert_eq!(violations, []);
    }

    #[test]
    fn queue_catches_a_lost_item() {
        let puts = [put("a", true, false), put("b", true, false)];
        let takes = [take("a", "x", false)];
        let (violations, _) = check_queue("queue", &puts, &takes, Delivery::AtLeastOnce);
        assert_eq!(violations.len(), 1);
        assert!(violations[0].detail.contains("lost"));
        assert!(violations[0].detail.contains("\"b\""));
    }

    #[test]
    fn queue_catches_an_item_taken_twice() {
        let puts = [put("a", true, false)];
        let takes = [take("a", "x", false), take("a", "y", false)];
        let (violations, _) = check_queue("queue", &puts, &takes, Delivery::ExactlyOnce);
        assert_eq!(violations.len(), 1);
        assert!(violations[0].detail.contains("more than once"));
        // At least once: a duplicate is reported, not a violation.
        let (violations, findings) = check_queue("queue", &puts, &takes, Delivery::AtLeastOnce);
        assert_eq!(violations, []);
        assert_eq!(findings.allowed_duplicates, 1);
        // Exactly once, but a take ran across a connection loss: documented, allowed.
        let takes = [take("a", "x", true), take("a", "y", false)];
        let (violations, findings) = check_queue("queue", &puts, &takes, Delivery::ExactlyOnce);
        assert_eq!(violations, []);
        assert_eq!(findings.allowed_duplicates, 1);
        // Strict (the exactly-once mode): no excuse.
        let (violations, _) = check_queue("queue", &puts, &takes, Delivery::Strict);
        assert_eq!(violations.len(), 1);
        assert!(violations[0].detail.contains("more than once"));
    }

    #[test]
    fn strict_queues_catch_a_failed_put_delivered() {
        let puts = [put("a", false, true)];
        let takes = [take("a", "x", false)];
        let (violations, _) = check_queue("queue", &puts, &takes, Delivery::ExactlyOnce);
        assert_eq!(violations, []);
        let (violations, _) = check_queue("queue", &puts, &takes, Delivery::Strict);
        assert_eq!(violations.len(), 1);
        assert!(violations[0].detail.contains("put failed"));
    }

    #[test]
    fn queue_catches_an_item_never_put() {
        let (violations, _) = check_queue(
            "queue",
            &[put("a", true, false)],
            &[take("a", "x", false), take("z", "x", false)],
            Delivery::AtLeastOnce,
        );
        assert_eq!(violations.len(), 1);
        assert!(violations[0].detail.contains("never put"));
    }

    // ---- cache

    fn tree(nodes: &[(&str, &str, i32)]) -> Tree {
        nodes
            .iter()
            .map(|&(path, data, version)| {
                (
                    path.to_owned(),
                    NodeState {
                        data: data.as_bytes().to_vec(),
                        version,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn equal_cache_passes() {
        let server = tree(&[("/r", "", 0), ("/r/a", "1", 3), ("/r/a/b", "x", 0)]);
        assert_eq!(check_cache("cache", &server.clone(), &server), []);
    }

    #[test]
    fn cache_catches_missing_extra_and_stale_nodes() {
        let server = tree(&[("/r", "", 0), ("/r/a", "1", 3), ("/r/b", "", 0)]);
        for cache in [
            tree(&[("/r", "", 0), ("/r/a", "1", 3)]),
            tree(&[
                ("/r", "", 0),
                ("/r/a", "1", 3),
                ("/r/b", "", 0),
                ("/r/c", "", 0),
            ]),
            tree(&[("/r", "", 0), ("/r/a", "0", 2), ("/r/b", "", 0)]),
        ] {
            let violations = check_cache("cache", &cache, &server);
            assert_eq!(violations.len(), 1, "{cache:?}");
        }
    }

    fn op(invoked: u64, completed: u64, applied: Option<(i64, i64)>) -> CounterOp {
        CounterOp {
            invoked: std::time::Duration::from_millis(invoked),
            completed: std::time::Duration::from_millis(completed),
            applied,
            unknown: false,
        }
    }

    fn counter_ops(ops: &[CounterOp]) -> CounterHistory {
        CounterHistory {
            initial: 0,
            ops: ops.to_vec(),
            ..Default::default()
        }
    }

    /// Both linearizability checks of the counter on one history: whether each found it
    /// linearizable (they must agree).
    fn both_counter_checks(ops: &[CounterOp]) -> bool {
        let exact = check_counter_linearizable(ops).is_empty();
        let (generic, findings) = check_counter_generic(&counter_ops(ops), Budget::default());
        assert_eq!(findings.undecided, Vec::<String>::new());
        assert_eq!(exact, generic.is_empty(), "the checks disagree on {ops:?}");
        exact
    }

    #[test]
    fn the_generic_counter_check_agrees_with_the_exact_one() {
        let histories: Vec<Vec<CounterOp>> = vec![
            vec![op(0, 10, Some((1, 2))), op(5, 8, Some((0, 1)))],
            vec![op(0, 10, Some((1, 2))), op(11, 12, Some((0, 1)))],
            vec![op(0, 1, Some((0, 1))), op(0, 1, Some((0, 1)))],
            vec![op(0, 1, Some((0, 1))), op(2, 3, Some((1, 3)))],
            vec![op(0, 1, None), op(2, 3, Some((0, 1)))],
            vec![
                op(0, 5, Some((0, 1))),
                op(1, 9, Some((2, 3))),
                op(2, 6, Some((1, 2))),
                op(7, 8, Some((3, 4))),
            ],
            vec![
                op(0, 5, Some((0, 1))),
                op(6, 9, Some((2, 3))),
                op(7, 8, Some((1, 2))),
            ],
        ];
        let verdicts: Vec<bool> = histories.iter().map(|h| both_counter_checks(h)).collect();
        assert_eq!(verdicts, [true, false, false, false, true, true, true]);
        // Pseudo-random histories of concurrent increments, a few of them tampered with.
        let mut seed = 7_u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            seed >> 33
        };
        for round in 0..200 {
            let mut ops = Vec::new();
            let mut t = 0;
            for value in 0..30 {
                t += next() % 5;
                let invoked = t.saturating_sub(next() % 8);
                let completed = t + next() % 8;
                ops.push(op(invoked, completed, Some((value, value + 1))));
            }
            if round % 3 == 0 {
                let i = (next() % 30) as usize;
                let j = (next() % 30) as usize;
                let (a, b) = (ops[i].applied, ops[j].applied);
                ops[i].applied = b;
                ops[j].applied = a;
            }
            both_counter_checks(&ops);
        }
    }

    #[test]
    fn the_generic_counter_check_places_increments_of_unknown_outcome() {
        let unknown = CounterOp {
            unknown: true,
            ..op(0, 1, None)
        };
        // It applied (between 0 and the next increment's read of 1)...
        let ops = [unknown, op(5, 6, Some((1, 2)))];
        let (violations, _) = check_counter_generic(&counter_ops(&ops), Budget::default());
        assert_eq!(violations, []);
        // ...or it did not.
        let ops = [unknown, op(5, 6, Some((0, 1)))];
        let (violations, _) = check_counter_generic(&counter_ops(&ops), Budget::default());
        assert_eq!(violations, []);
        // But not twice.
        let ops = [unknown, op(5, 6, Some((2, 3)))];
        let (violations, _) = check_counter_generic(&counter_ops(&ops), Budget::default());
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("generic"));
    }

    // ---- register

    fn reg(
        key: usize,
        input: RegisterInput,
        invoked: u64,
        completed: u64,
        output: Option<RegisterOutput>,
    ) -> RegisterOp {
        RegisterOp {
            key,
            client: 0,
            input,
            invoked: ms(invoked),
            completed: ms(completed),
            output,
        }
    }

    fn read(value: u64, version: i32) -> Option<RegisterOutput> {
        Some(RegisterOutput::Read { value, version })
    }

    fn written(version: i32) -> Option<RegisterOutput> {
        Some(RegisterOutput::Written {
            version: Some(version),
        })
    }

    fn cas(expected: i32, value: u64) -> RegisterInput {
        RegisterInput::Cas { expected, value }
    }

    fn register_violations(ops: &[RegisterOp]) -> Vec<Violation> {
        let (violations, findings) = check_register(ops, (0, 0), Budget::default());
        assert_eq!(findings.undecided, Vec::<String>::new());
        violations
    }

    #[test]
    fn linearizable_register_histories_pass() {
        use RegisterInput::{Read, Write};
        let ops = [
            reg(0, Read, 0, 1, read(0, 0)),
            reg(0, Write(7), 2, 3, written(1)),
            reg(1, Write(8), 2, 3, written(1)),
            // A read concurrent with a CAS sees either side.
            reg(0, cas(1, 9), 4, 10, written(2)),
            reg(0, Read, 5, 6, read(7, 1)),
            reg(0, Read, 11, 12, read(9, 2)),
            // A CAS that lost to a concurrent write.
            reg(1, cas(1, 10), 4, 10, Some(RegisterOutput::CasFailed)),
            reg(1, Write(11), 5, 9, written(2)),
            reg(1, Read, 11, 12, read(11, 2)),
            // A write whose version the writer did not learn.
            reg(
                1,
                Write(12),
                13,
                14,
                Some(RegisterOutput::Written { version: None }),
            ),
            reg(1, Read, 15, 16, read(12, 3)),
        ];
        assert_eq!(register_violations(&ops), []);
    }

    #[test]
    fn the_register_check_catches_a_stale_read() {
        use RegisterInput::{Read, Write};
        let ops = [
            reg(0, Write(7), 0, 1, written(1)),
            reg(0, Read, 2, 3, read(0, 0)),
        ];
        let violations = register_violations(&ops);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].detail.contains("register 0 not linearizable"));
        // The other register is unaffected, and reported apart.
        let mut more = ops.to_vec();
        more.push(reg(1, Read, 2, 3, read(0, 0)));
        assert_eq!(register_violations(&more).len(), 1);
    }

    #[test]
    fn the_register_check_catches_bad_compare_and_sets() {
        use RegisterInput::Write;
        // Two CAS from version 0 both applied.
        let ops = [
            reg(0, cas(0, 1), 0, 5, written(1)),
            reg(0, cas(0, 2), 0, 5, written(1)),
        ];
        assert_eq!(register_violations(&ops).len(), 1);
        // A CAS failed with nothing in its way.
        let ops = [reg(0, cas(0, 1), 0, 5, Some(RegisterOutput::CasFailed))];
        assert_eq!(register_violations(&ops).len(), 1);
        // A write reported a version that skips one.
        let ops = [reg(0, Write(3), 0, 5, written(2))];
        assert_eq!(register_violations(&ops).len(), 1);
    }

    #[test]
    fn register_writes_of_unknown_outcome_are_placed_both_ways() {
        use RegisterInput::{Read, Write};
        // Applied, and seen after its writer gave up.
        let ops = [
            reg(0, Write(7), 0, 5, None),
            reg(0, Read, 6, 7, read(0, 0)),
            reg(0, Read, 8, 9, read(7, 1)),
            reg(0, cas(1, 8), 10, 11, written(2)),
        ];
        assert_eq!(register_violations(&ops), []);
        // Not applied at all.
        let ops = [
            reg(0, Write(7), 0, 5, None),
            reg(0, Read, 8, 9, read(0, 0)),
            reg(0, cas(0, 8), 10, 11, written(1)),
        ];
        assert_eq!(register_violations(&ops), []);
        // Not seen before it was invoked.
        let ops = [reg(0, Read, 0, 1, read(7, 1)), reg(0, Write(7), 5, 6, None)];
        assert_eq!(register_violations(&ops).len(), 1);
        // Applied once, not twice: seen, then the version moves on by two with nothing else.
        let ops = [
            reg(0, Write(7), 0, 5, None),
            reg(0, Read, 6, 7, read(7, 1)),
            reg(0, Read, 8, 9, read(7, 2)),
        ];
        assert_eq!(register_violations(&ops).len(), 1);
        // An unknown CAS that applied.
        let ops = [
            reg(0, cas(0, 5), 0, 5, None),
            reg(0, Read, 6, 7, read(5, 1)),
        ];
        assert_eq!(register_violations(&ops), []);
    }

    #[test]
    fn overlapping_increments_may_take_either_order_but_real_time_binds() {
        // Overlapping: either may come first.
        let fine = [op(0, 10, Some((1, 2))), op(5, 8, Some((0, 1)))];
        assert!(check_counter_linearizable(&fine).is_empty());
        // The second was invoked after the first returned 2, yet reported 1.
        let stale = [op(0, 10, Some((1, 2))), op(11, 12, Some((0, 1)))];
        let found = check_counter_linearizable(&stale);
        assert!(
            found
                .iter()
                .any(|v| v.to_string().contains("not linearizable")),
            "{found:?}"
        );
        // Two reported the same value; a step of two.
        let twice = [
            op(0, 1, Some((0, 1))),
            op(0, 1, Some((0, 1))),
            op(2, 3, Some((1, 3))),
        ];
        let found = check_counter_linearizable(&twice);
        assert_eq!(found.len(), 2, "{found:?}");
        // Increments that did not apply are left out.
        assert!(check_counter_linearizable(&[op(0, 1, None), op(2, 3, Some((0, 1)))]).is_empty());
    }
}
