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

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{CounterHistory, CounterOp, Episode, LogEntry, Put, Take, Tree, Violation};

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
        }
    }

    fn take(item: &str, by: &str, across_fault: bool) -> Take {
        Take {
            item: item.into(),
            by: by.into(),
            across_fault,
        }
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
        }
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
