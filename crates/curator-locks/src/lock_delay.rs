//! Lock-delay (Chubby's, Consul's default 15 s): after a holder *fails* (its session ended, or
//! its health check failed, without a release), the lock stays unavailable for the delay that
//! holder promised, so requests it sent before it died drain before the next holder acts. A
//! clean release hands over at once.
//!
//! **The evidence is on the server.** A holder that promised a delay writes `held <node>
//! <delay>` into the data of the lock's directory when it acquires, and its release removes
//! that line *in the same transaction* as the delete of its node. A waiter that finds a `held`
//! line whose node is gone therefore knows, on the server's word, that the holder did not
//! release: it marks the line `failed`, and the lock is unavailable until the server's clock
//! (the `mtime` ZooKeeper's leader stamps on a write) reaches the write that saw the failure
//! plus the failed holder's delay. Local clocks only schedule the next look: admission needs a
//! write whose `mtime` is at or after the end.
//!
//! The record is text, one line each (see [`LockDelayRecord`]); `curator inspect` shows it.
//!
//! What it cannot do:
//! - Only contenders that enable lock-delay honour it and cause it. Java Curator holders (and
//!   ours without it) never read the record, so they acquire at once after a failure, and their
//!   own failures are not delayed.
//! - The delay runs from the moment a contender *saw* the failure, which is after the session's
//!   end: with waiters that is at once; when nobody waited, the next contender waits a whole
//!   delay from its arrival (the server keeps no time of an expiry).
//! - The record lives in the lock's directory, which lock-delay creates persistent (not a
//!   container) so that the record outlives every lock node: delete the directory yourself when
//!   a lock path is retired. A directory that already exists as a container (made by a
//!   contender without lock-delay, or by Java Curator) may be reaped by the server once empty,
//!   and its record with it.
//! - An interval that spans a change of ZooKeeper leader is off by the two leaders' clock
//!   difference, as every time measured on ZooKeeper's clock is.

use std::fmt;
use std::time::Duration;

use curator_framework::ops::transaction::TransactionOp;
use curator_framework::{CuratorFramework, Error, Result};
use tokio::time::Instant;

/// The first line of a lock-delay record.
const HEADER: &str = "curator-lock-delay 1";

/// The longest delay a holder may promise (a day): longer ones are surely a unit mistake.
const MAX_DELAY: Duration = Duration::from_secs(24 * 60 * 60);

/// One line of a [`LockDelayRecord`].
///
/// ```
/// use curator_locks::LockDelayEntry;
/// let held = LockDelayEntry::Held { node: "lock-0000000001".into(), delay_ms: 15_000 };
/// assert_eq!(held.node(), "lock-0000000001");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockDelayEntry {
    /// `held <node> <delay ms>`: the node holds (or held, if it is gone: then it failed).
    Held {
        /// The lock node's name (in the lock's directory).
        node: String,
        /// The delay its holder promised.
        delay_ms: u64,
    },
    /// `failed <node> <delay ms> [<since ms>]`: the node's holder failed; the lock (its slot,
    /// for a semaphore) is unavailable until `since + delay` on ZooKeeper's clock. Without
    /// `since`, the failure dates from the record's own `mtime` (the write that marked it).
    Failed {
        /// The failed lock node's name.
        node: String,
        /// The delay its holder promised.
        delay_ms: u64,
        /// When the failure was seen, on ZooKeeper's clock (ms since the epoch).
        since_ms: Option<i64>,
    },
}

impl LockDelayEntry {
    /// The lock node the line is about.
    pub fn node(&self) -> &str {
        match self {
            Self::Held { node, .. } | Self::Failed { node, .. } => node,
        }
    }

    /// For a failure: when the lock is available again on ZooKeeper's clock, dating an undated
    /// failure by `mtime` (the record's).
    ///
    /// ```
    /// use curator_locks::LockDelayEntry;
    /// let failed = LockDelayEntry::Failed { node: "n".into(), delay_ms: 100, since_ms: None };
    /// assert_eq!(failed.available_at(1_000), Some(1_100));
    /// ```
    pub fn available_at(&self, mtime: i64) -> Option<i64> {
        match self {
            Self::Held { .. } => None,
            Self::Failed {
                delay_ms, since_ms, ..
            } => Some(
                since_ms
                    .unwrap_or(mtime)
                    .saturating_add(i64::try_from(*delay_ms).unwrap_or(i64::MAX)),
            ),
        }
    }
}

impl fmt::Display for LockDelayEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Held { node, delay_ms } => write!(f, "held {node} {delay_ms}"),
            Self::Failed {
                node,
                delay_ms,
                since_ms: Some(since),
            } => write!(f, "failed {node} {delay_ms} {since}"),
            Self::Failed {
                node,
                delay_ms,
                since_ms: None,
            } => write!(f, "failed {node} {delay_ms}"),
        }
    }
}

/// The lock-delay record in a lock directory's data: the header line `curator-lock-delay 1`,
/// then one [`LockDelayEntry`] per line (UTF-8, `\n` after each line).
///
/// ```
/// use curator_locks::{LockDelayEntry, LockDelayRecord};
/// let data = b"curator-lock-delay 1\nheld lock-0000000003 15000\nfailed lock-0000000002 15000 1700000000000\n";
/// let record = LockDelayRecord::parse(data)?.expect("a record");
/// assert_eq!(record.entries().len(), 2);
/// assert_eq!(record.available_at(0), Some(1_700_000_015_000));
/// assert_eq!(record.to_bytes(), data);
/// # Ok::<(), curator_framework::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockDelayRecord {
    entries: Vec<LockDelayEntry>,
}

impl LockDelayRecord {
    /// Reads a directory's data: `None` for no data (no record yet).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for data that is not a lock-delay record (lock-delay never
    /// overwrites data it does not know).
    pub fn parse(data: &[u8]) -> Result<Option<Self>> {
        if data.is_empty() {
            return Ok(None);
        }
        let not_a_record = |why: &str| {
            Error::InvalidArgument(format!(
                "the lock's directory holds data that is not a lock-delay record ({why})"
            ))
        };
        let text = std::str::from_utf8(data).map_err(|_| not_a_record("not UTF-8"))?;
        let mut lines = text.lines();
        if lines.next() != Some(HEADER) {
            return Err(not_a_record("no `curator-lock-delay 1` header"));
        }
        let mut entries = Vec::new();
        for line in lines.filter(|line| !line.is_empty()) {
            let words: Vec<&str> = line.split(' ').collect();
            let number = |word: &str| word.parse::<u64>().map_err(|_| not_a_record(line));
            let entry = match words.as_slice() {
                ["held", node, delay] => LockDelayEntry::Held {
                    node: (*node).to_owned(),
                    delay_ms: number(delay)?,
                },
                ["failed", node, delay] => LockDelayEntry::Failed {
                    node: (*node).to_owned(),
                    delay_ms: number(delay)?,
                    since_ms: None,
                },
                ["failed", node, delay, since] => LockDelayEntry::Failed {
                    node: (*node).to_owned(),
                    delay_ms: number(delay)?,
                    since_ms: Some(since.parse().map_err(|_| not_a_record(line))?),
                },
                _ => return Err(not_a_record(line)),
            };
            entries.push(entry);
        }
        Ok(Some(Self { entries }))
    }

    /// The record's lines after the header.
    pub fn entries(&self) -> &[LockDelayEntry] {
        &self.entries
    }

    /// The record as it is stored.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut text = format!("{HEADER}\n");
        for entry in &self.entries {
            text.push_str(&entry.to_string());
            text.push('\n');
        }
        text.into_bytes()
    }

    /// When every failure in the record has run out its delay, on ZooKeeper's clock (`mtime`
    /// is the record's, for undated failures); `None` when nothing failed.
    pub fn available_at(&self, mtime: i64) -> Option<i64> {
        self.entries
            .iter()
            .filter_map(|entry| entry.available_at(mtime))
            .max()
    }

    /// Dates undated failures by `mtime` (the record's: the write that marked them) and forgets
    /// failures whose delay ended at or before it. Every rewrite starts with this, so the
    /// `mtime` of the new write never re-dates an old failure.
    fn settle(&mut self, mtime: i64) {
        for entry in &mut self.entries {
            if let LockDelayEntry::Failed { since_ms, .. } = entry {
                since_ms.get_or_insert(mtime);
            }
        }
        self.entries
            .retain(|entry| entry.available_at(mtime).is_none_or(|end| end > mtime));
    }

    fn held_by(&self, node: &str) -> bool {
        self.entries
            .iter()
            .any(|entry| matches!(entry, LockDelayEntry::Held { node: held, .. } if held == node))
    }

    fn remove(&mut self, node: &str) {
        self.entries.retain(
            |entry| !matches!(entry, LockDelayEntry::Held { node: held, .. } if held == node),
        );
    }
}

/// Which failures keep a contender out.
pub(crate) enum Rule<'a> {
    /// The first in line of a mutex, a write lock or a latch: every other holder is gone, and
    /// every failure keeps it out.
    Exclusive,
    /// A reader with no writer ahead: writers' lines (names with `writer`) other than its own
    /// handle's writer are gone, and only writers' failures keep it out.
    Reader {
        writer: &'static str,
        own_writer: Option<String>,
    },
    /// A semaphore lease among `live` leases (its own included) of at most `max`: lines of
    /// leases not live are failures, and each one whose delay runs takes a slot.
    Slots { live: &'a [String], max: usize },
}

impl Rule<'_> {
    fn is_dead(&self, node: &str, ours: &str) -> bool {
        if node == ours {
            return false;
        }
        match self {
            Rule::Exclusive => true,
            Rule::Reader { writer, own_writer } => {
                node.contains(writer) && own_writer.as_deref() != Some(node)
            }
            Rule::Slots { live, .. } => !live.iter().any(|live| live == node),
        }
    }

    /// When the contender may hold, on ZooKeeper's clock (`None`: now).
    fn available_at(&self, record: &LockDelayRecord, mtime: i64) -> Option<i64> {
        let mut ends: Vec<i64> = record
            .entries
            .iter()
            .filter(|entry| match self {
                Rule::Reader { writer, .. } => entry.node().contains(writer),
                Rule::Exclusive | Rule::Slots { .. } => true,
            })
            .filter_map(|entry| entry.available_at(mtime))
            .filter(|end| *end > mtime)
            .collect();
        match self {
            Rule::Exclusive | Rule::Reader { .. } => ends.into_iter().max(),
            Rule::Slots { live, max } => {
                let over = (live.len() + ends.len()).saturating_sub(*max);
                if over == 0 {
                    return None;
                }
                ends.sort_unstable();
                ends.get(over - 1).copied()
            }
        }
    }
}

/// How an admission ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admitted {
    /// The contender's `held` line is written: it holds.
    Yes,
    /// The deadline came first (nothing of the contender's is in the record).
    TimedOut,
    /// The directory is gone: so is the contender's node.
    NodeLost,
}

/// A holder's promise of a lock-delay, for recipes that hold by being first in line in a
/// directory of ephemeral sequential nodes (the leader latch of curator-election uses it; the
/// locks of this crate take it through their builders' `lock_delay` options).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework, dir: &str, ours: &str) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_locks::LockDelay;
/// let delay = LockDelay::new(Duration::from_secs(15))?;
/// LockDelay::prepare(&client, dir).await?;          // before the first node is made
/// // ... our node `ours` is first in line in `dir` ...
/// if delay.admit_first(&client, dir, ours).await? {
///     // holding: failed holders' delays ran out, and our line is in the record
///     LockDelay::release(&client, dir, ours).await?; // delete and line out, in one transaction
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockDelay {
    delay: Duration,
}

impl LockDelay {
    /// A delay to promise.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero delay or one over a day.
    pub fn new(delay: Duration) -> Result<Self> {
        if delay.is_zero() || delay > MAX_DELAY {
            return Err(Error::InvalidArgument(format!(
                "a lock-delay must be above zero and at most a day, not {delay:?}"
            )));
        }
        Ok(Self { delay })
    }

    fn delay_ms(self) -> u64 {
        u64::try_from(self.delay.as_millis()).unwrap_or(u64::MAX)
    }

    /// The delay.
    pub fn delay(self) -> Duration {
        self.delay
    }

    /// Makes `dir` a persistent node (its parents containers) if it is missing, so the record
    /// outlives the lock's nodes.
    ///
    /// # Errors
    /// Connection errors; what the create of `dir` meets other than `NodeExists`.
    pub async fn prepare(client: &CuratorFramework, dir: &str) -> Result<()> {
        match client
            .create()
            .creating_parent_containers_if_needed()
            .uncompressed()
            .for_path(dir, b"")
            .await
        {
            Ok(_) | Err(Error::NodeExists) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Once `ours` (a node name in `dir`) is first in line: waits out the delays of failed
    /// holders, then writes its `held` line. `false` when `dir` is gone (and with it our node).
    ///
    /// # Errors
    /// Connection errors; [`Error::InvalidArgument`] when `dir` holds data that is not a
    /// lock-delay record.
    ///
    /// # Cancellation safety
    /// Dropping it may leave our `held` line in the record: release the node with
    /// [`release`](Self::release) (or let a contender count it as a failure).
    pub async fn admit_first(
        self,
        client: &CuratorFramework,
        dir: &str,
        ours: &str,
    ) -> Result<bool> {
        Ok(self
            .admit(client, dir, ours, &Rule::Exclusive, None)
            .await?
            == Admitted::Yes)
    }

    /// Once the recipe's own rule lets `ours` (a node name in `dir`) hold: waits out the delays
    /// of failed holders that keep it out under `rule`, then writes its `held` line.
    /// `deadline` bounds the wait (`Some(now)` or earlier: no waiting at all).
    pub(crate) async fn admit(
        self,
        client: &CuratorFramework,
        dir: &str,
        ours: &str,
        rule: &Rule<'_>,
        deadline: Option<Instant>,
    ) -> Result<Admitted> {
        // After a wait meant to outlast every delay that kept us out, claim at once: the
        // write then tells whether the server's clock agrees.
        let mut optimistic = false;
        loop {
            let (data, stat) = match client.get_data().undecompressed().for_path(dir).await {
                Ok(read) => read,
                Err(Error::NoNode) => return Ok(Admitted::NodeLost),
                Err(error) => return Err(error),
            };
            let mut record = LockDelayRecord::parse(&data)?.unwrap_or_default();
            record.settle(stat.mtime);
            for entry in &mut record.entries {
                if let LockDelayEntry::Held { node, delay_ms } = entry
                    && rule.is_dead(node, ours)
                {
                    tracing::warn!(
                        dir,
                        node = %node,
                        delay_ms = *delay_ms,
                        "a lock holder failed without releasing: its lock-delay starts"
                    );
                    *entry = LockDelayEntry::Failed {
                        node: std::mem::take(node),
                        delay_ms: *delay_ms,
                        since_ms: None,
                    };
                }
            }
            let claim = optimistic || rule.available_at(&record, stat.mtime).is_none();
            if claim {
                if !record.held_by(ours) {
                    record.entries.push(LockDelayEntry::Held {
                        node: ours.to_owned(),
                        delay_ms: self.delay_ms(),
                    });
                }
            } else {
                record.remove(ours);
                if deadline.is_some_and(|deadline| deadline <= Instant::now()) {
                    // Record what we saw (others then know of the failure), then give up.
                    let _ = self.write(client, dir, &record, stat.version).await;
                    return Ok(Admitted::TimedOut);
                }
            }
            // The write is also the server's clock now (undated failures are this write's).
            let Some(now) = self.write(client, dir, &record, stat.version).await? else {
                continue;
            };
            let Some(end) = rule.available_at(&record, now) else {
                if claim {
                    return Ok(Admitted::Yes);
                }
                optimistic = true;
                continue;
            };
            let wake =
                Instant::now() + Duration::from_millis(u64::try_from(end - now).unwrap_or(0));
            match deadline {
                Some(deadline) if deadline < wake => {
                    if claim {
                        // Our line is in: the next pass takes it out before giving up.
                        optimistic = false;
                        continue;
                    }
                    tokio::time::sleep_until(deadline).await;
                    return Ok(Admitted::TimedOut);
                }
                _ => {
                    optimistic = true;
                    tokio::time::sleep_until(wake).await;
                }
            }
        }
    }

    /// Writes `record` over `version`: the server's clock at the write, or `None` when someone
    /// wrote first.
    async fn write(
        self,
        client: &CuratorFramework,
        dir: &str,
        record: &LockDelayRecord,
        version: i32,
    ) -> Result<Option<i64>> {
        match client
            .set_data()
            .uncompressed()
            .with_version(version)
            .for_path(dir, record.to_bytes())
            .await
        {
            Ok(stat) => Ok(Some(stat.mtime)),
            Err(Error::BadVersion) => Ok(None),
            Err(error) => Err(error),
        }
    }
}

impl LockDelay {
    /// Releases `node` (a name in `dir`): its delete and the removal of its `held` line in one
    /// transaction, so waiters know it was a release. A node gone already is fine; on errors
    /// no retry fixed, delete the node alone (which then counts as a failure).
    ///
    /// # Errors
    /// Connection errors.
    pub async fn release(client: &CuratorFramework, dir: &str, node: &str) -> Result<()> {
        release(client, dir, node).await
    }
}

async fn release(client: &CuratorFramework, dir: &str, node: &str) -> Result<()> {
    let path = curator_framework::paths::join(dir, node);
    loop {
        let (data, stat) = match client.get_data().undecompressed().for_path(dir).await {
            Ok(read) => read,
            Err(Error::NoNode) => return Ok(()),
            Err(error) => return Err(error),
        };
        let Ok(Some(mut record)) = LockDelayRecord::parse(&data) else {
            // No record (or not ours to touch): a plain release.
            return match client.delete().quietly().for_path(&path).await {
                Ok(()) => Ok(()),
                Err(error) => Err(error),
            };
        };
        record.settle(stat.mtime);
        record.remove(node);
        let outcome = client
            .transaction()
            .delete(&path)
            .op(TransactionOp::set_data(dir, record.to_bytes())
                .with_version(stat.version)
                .uncompressed())
            .commit()
            .await;
        match outcome {
            Ok(_) => return Ok(()),
            Err(Error::Transaction { index: 0, cause }) if matches!(*cause, Error::NoNode) => {
                return Ok(());
            }
            Err(Error::Transaction { index: 1, cause }) if matches!(*cause, Error::BadVersion) => {}
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(lines: &[&str]) -> LockDelayRecord {
        let text = std::iter::once(HEADER)
            .chain(lines.iter().copied())
            .map(|line| format!("{line}\n"))
            .collect::<String>();
        LockDelayRecord::parse(text.as_bytes()).unwrap().unwrap()
    }

    #[test]
    fn records_read_back_what_they_write() {
        let r = record(&["held a 10", "failed b 20", "failed c 30 1000"]);
        assert_eq!(
            LockDelayRecord::parse(&r.to_bytes()).unwrap(),
            Some(r.clone())
        );
        assert_eq!(r.available_at(5_000), Some(5_020));
    }

    #[test]
    fn foreign_data_is_refused_and_empty_data_is_no_record() {
        assert_eq!(LockDelayRecord::parse(b"").unwrap(), None);
        for data in [
            &b"10.0.0.1"[..],
            b"curator-lock-delay 1\nheld a",
            b"\xff\xfe",
        ] {
            let error = LockDelayRecord::parse(data).unwrap_err();
            assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
        }
    }

    #[test]
    fn settling_dates_failures_and_forgets_the_ended_ones() {
        let mut r = record(&["held a 10", "failed b 100", "failed c 30 1000"]);
        r.settle(2_000);
        assert_eq!(
            r.entries(),
            [
                LockDelayEntry::Held {
                    node: "a".into(),
                    delay_ms: 10
                },
                LockDelayEntry::Failed {
                    node: "b".into(),
                    delay_ms: 100,
                    since_ms: Some(2_000)
                },
            ]
        );
    }

    #[test]
    fn readers_wait_for_writers_failures_only_and_slots_for_enough_of_them() {
        let r = record(&[
            "failed __READ__1 100 1000",
            "failed __WRIT__2 50 1000",
            "failed __WRIT__3 70 1000",
        ]);
        let reader = Rule::Reader {
            writer: "__WRIT__",
            own_writer: None,
        };
        assert_eq!(reader.available_at(&r, 1_000), Some(1_070));
        assert_eq!(Rule::Exclusive.available_at(&r, 1_000), Some(1_100));
        let live = ["x".to_owned()];
        // One live lease and three running failures in five slots: room now.
        assert_eq!(
            Rule::Slots {
                live: &live,
                max: 5
            }
            .available_at(&r, 1_000),
            None
        );
        // In three slots, one failure must end first: the earliest.
        assert_eq!(
            Rule::Slots {
                live: &live,
                max: 3
            }
            .available_at(&r, 1_000),
            Some(1_050)
        );
        assert!(Rule::Exclusive.is_dead("other", "ours"));
        assert!(!reader.is_dead("__READ__9", "ours"));
        assert!(
            Rule::Slots {
                live: &live,
                max: 1
            }
            .is_dead("y", "ours")
        );
    }

    #[test]
    fn any_bytes_parse_to_a_record_or_a_typed_error() {
        // A directory's data is whatever the server holds: mangled records included.
        let valid = record(&["held a 10", "failed b 20", "failed c 30 1000"]).to_bytes();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..5_000 {
            let mut data = valid.clone();
            for _ in 0..(next() % 4) {
                let at = usize::try_from(next() % data.len() as u64).unwrap_or(0);
                data[at] = (next() % 256) as u8;
            }
            data.truncate(usize::try_from(next() % (data.len() as u64 + 1)).unwrap_or(0));
            match LockDelayRecord::parse(&data) {
                Ok(Some(parsed)) => {
                    let _ = parsed.available_at(i64::MAX);
                    assert_eq!(
                        LockDelayRecord::parse(&parsed.to_bytes()).unwrap(),
                        Some(parsed)
                    );
                }
                Ok(None) => assert!(data.is_empty()),
                Err(error) => assert!(matches!(error, Error::InvalidArgument(_)), "{error}"),
            }
        }
    }

    #[test]
    fn delays_are_bounded() {
        assert!(LockDelay::new(Duration::ZERO).is_err());
        assert!(LockDelay::new(Duration::from_secs(2 * 24 * 3600)).is_err());
        assert!(LockDelay::new(Duration::from_secs(15)).is_ok());
    }
}
