//! The bucketed layout: items spread over child directories `<path>/bucket-<n>` so that no
//! listing is ever larger than one bucket (opt-in, `bucketed(capacity)` on the queue builders).
//!
//! - **Producers** put into the highest bucket they know (a sequential create under it, no
//!   parents made). The server-assigned sequence number says how full the bucket is: the
//!   producer whose item gets sequence `capacity - 1` or more creates bucket `n + 1`
//!   (`NodeExists` from a racing producer is fine) and moves on to it. A create that meets
//!   `NoNode` (a consumer deleted the bucket) lists the buckets again and retries in the
//!   highest: buckets are never created again from a producer's stale knowledge, except as
//!   "the next one" (see below).
//! - **Consumers** list the bucket directory (small), then the buckets lowest first: the first
//!   with items gives the batch (item names `bucket-<n>/<item>`). An empty bucket that is not
//!   the highest is deleted on the way: ZooKeeper refuses to delete a node with children
//!   (`NotEmpty`: an item arrived late, so the scan starts again) and refuses to create under
//!   a deleted one (`NoNode`: the producer retries elsewhere), so an item can never be deleted
//!   with its bucket. The highest bucket is never deleted by a consumer, so producers always
//!   have somewhere to go.
//! - **Waiting** consumers watch the bucket directory (a new bucket) and every bucket they
//!   listed empty (an item in any of them).
//!
//! A producer that stalls between its put and making bucket `n + 1` can make it after
//! consumers drained and deleted it (when `n + 2` already exists): it then lists the buckets
//! (one listing per bucket it makes) and moves on to the highest, and the empty `n + 1` is
//! deleted by the next scan. Nothing is lost either way: an item that lands in a lower bucket
//! is taken next.

use std::collections::HashSet;
use std::future::Future;

use curator_framework::watcher::Watcher;
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};
use parking_lot::Mutex;

/// Bucket directories are `<path>/bucket-<10 digits>`.
pub(crate) const BUCKET_PREFIX: &str = "bucket-";

/// The largest capacity: sequence numbers are 31-bit.
const MAX_CAPACITY: usize = i32::MAX as usize;

/// The bucket name of number `n`.
pub(crate) fn bucket_name(n: u64) -> String {
    format!("{BUCKET_PREFIX}{n:010}")
}

/// The number of a bucket name; `None` for anything else.
pub(crate) fn bucket_number(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(BUCKET_PREFIX)?;
    if digits.len() < 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The sequence number at the end of a sequential node's path.
fn sequence_of(node: &str) -> Option<u64> {
    let tail = &node[node.len().saturating_sub(10)..];
    tail.parse().ok()
}

/// A flat name for the item `bucket-<n>/<item>` (lock nodes and outcome markers live in flat
/// directories): `bucket-<n>.<item>`; a name without a bucket is unchanged.
pub(crate) fn flat_name(name: &str) -> String {
    name.replace('/', ".")
}

/// Checks a capacity given to a builder.
pub(crate) fn validate_capacity(capacity: usize) -> Result<()> {
    if capacity == 0 || capacity > MAX_CAPACITY {
        return Err(Error::InvalidArgument(format!(
            "a queue bucket's capacity must be between 1 and {MAX_CAPACITY}, not {capacity}"
        )));
    }
    Ok(())
}

/// What a consumer's scan found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The items of the lowest bucket that has any, as `bucket-<n>/<item>`, in order; empty
    /// when the queue is empty.
    pub(crate) items: Vec<String>,
    /// Watches that fire when this may change (when asked for): the bucket directory's, and
    /// those of the buckets listed.
    pub(crate) watchers: Vec<Watcher>,
}

/// The bucketed layout of one queue handle.
#[derive(Debug)]
pub(crate) struct Buckets {
    client: CuratorFramework,
    /// The queue's node (the bucket directory).
    path: String,
    capacity: u64,
    /// The highest bucket this handle knows of: where its producers put.
    highest: Mutex<Option<u64>>,
    /// How the queue node is made when missing.
    queue_mode: CreateMode,
}

impl Buckets {
    pub(crate) fn new(
        client: CuratorFramework,
        path: &str,
        capacity: usize,
        queue_mode: CreateMode,
    ) -> Result<Self> {
        validate_capacity(capacity)?;
        Ok(Self {
            client,
            path: path.to_owned(),
            capacity: capacity as u64,
            highest: Mutex::new(None),
            queue_mode,
        })
    }

    fn bucket_path(&self, n: u64) -> String {
        paths::join(&self.path, &bucket_name(n))
    }

    fn learn(&self, n: u64) {
        let mut highest = self.highest.lock();
        if highest.is_none_or(|h| h < n) {
            *highest = Some(n);
        }
    }

    fn forget(&self, n: u64) {
        let mut highest = self.highest.lock();
        if *highest == Some(n) {
            *highest = None;
        }
    }

    /// The bucket numbers under the queue node, lowest first (`NoNode`: no queue node).
    async fn list(&self) -> Result<Vec<u64>> {
        let (children, _) = self.client.get_children().for_path(&self.path).await?;
        let mut numbers: Vec<u64> = children.iter().filter_map(|c| bucket_number(c)).collect();
        numbers.sort_unstable();
        Ok(numbers)
    }

    /// The highest bucket now, made (with the queue node) when there is none.
    async fn refresh(&self) -> Result<u64> {
        let numbers = match self.list().await {
            Ok(numbers) => numbers,
            Err(Error::NoNode) => Vec::new(),
            Err(error) => return Err(error),
        };
        if let Some(&highest) = numbers.last() {
            self.learn(highest);
            return Ok(highest);
        }
        // No bucket yet (a new queue): make the first. The queue node is made as the flat
        // layout makes it; its parents are containers.
        match self
            .client
            .create()
            .with_mode(self.queue_mode)
            .creating_parent_containers_if_needed()
            .for_path(&self.path, [])
            .await
        {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(error) => return Err(error),
        }
        match self
            .client
            .create()
            .for_path(&self.bucket_path(0), [])
            .await
        {
            Ok(_) | Err(Error::NodeExists) => {}
            // The queue node vanished again (a container reaped): the caller retries.
            Err(Error::NoNode) => return Err(Error::NoNode),
            Err(error) => return Err(error),
        }
        self.learn(0);
        Ok(0)
    }

    /// Puts one item: `create` makes it at the prefix path it is given
    /// (`<path>/bucket-<n>/<item_prefix>`) without making parents, and answers the node made
    /// (`None` when made under a name it did not learn) or `NoNode` when the bucket is gone.
    pub(crate) async fn put<F, Fut>(&self, item_prefix: &str, create: F) -> Result<Option<String>>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<Option<String>>>,
    {
        let mut gone = 0u32;
        loop {
            let known = *self.highest.lock();
            let bucket = match known {
                Some(n) => n,
                None => match self.refresh().await {
                    Ok(n) => n,
                    Err(Error::NoNode) if gone < 100 => {
                        gone += 1;
                        continue;
                    }
                    Err(error) => return Err(error),
                },
            };
            let prefix_path = paths::join(&self.bucket_path(bucket), item_prefix);
            match create(prefix_path).await {
                Ok(node) => {
                    if let Some(sequence) = node.as_deref().and_then(sequence_of) {
                        if sequence + 1 >= self.capacity {
                            self.open_next(bucket).await;
                        }
                    }
                    return Ok(node);
                }
                // The bucket was deleted by a consumer (it was empty and a newer one exists),
                // or the queue node is gone: look again. Nothing was stored.
                Err(Error::NoNode) => {
                    self.forget(bucket);
                    gone += 1;
                    if gone > 100 {
                        return Err(Error::NoNode);
                    }
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Creates bucket `full + 1` (or finds it made by another producer) and puts there from now
    /// on. Failures are left to the next put (whose sequence is over the capacity too): the
    /// item is stored either way.
    async fn open_next(&self, full: u64) {
        let next = full + 1;
        match self
            .client
            .create()
            .for_path(&self.bucket_path(next), [])
            .await
        {
            Ok(_) => {
                self.learn(next);
                // A producer that stalled since its put may be making a bucket consumers
                // already drained and deleted (a newer one exists): then it must not fill it
                // ahead of the newer one. One listing per bucket made.
                if let Ok(numbers) = self.list().await {
                    if let Some(&highest) = numbers.last() {
                        self.learn(highest);
                    }
                }
            }
            Err(Error::NodeExists) => self.learn(next),
            Err(Error::NoNode) => self.forget(full),
            Err(error) => {
                tracing::debug!(%error, bucket = next, path = %self.path, "next queue bucket not made yet");
            }
        }
    }

    /// The items of the lowest bucket that has any (see [`Scan`]), deleting empty buckets
    /// below the highest on the way; with `watch`, also the watches to wait on when empty.
    /// A bucket whose items are all in `skip` (locked by other consumers) does not stop the
    /// scan: its items come first, then those of the next bucket with any other item.
    pub(crate) async fn scan(
        &self,
        item_prefix: &str,
        watch: bool,
        skip: &HashSet<String>,
    ) -> Result<Scan> {
        'again: loop {
            let mut scan = Scan::default();
            let listed = if watch {
                self.client
                    .get_children()
                    .watched()
                    .for_path(&self.path)
                    .await
                    .map(|(children, _, watcher)| (children, Some(watcher)))
            } else {
                self.client
                    .get_children()
                    .for_path(&self.path)
                    .await
                    .map(|(children, _)| (children, None))
            };
            let children = match listed {
                Ok((children, watcher)) => {
                    scan.watchers.extend(watcher);
                    children
                }
                Err(Error::NoNode) => {
                    if watch {
                        let (stat, watcher) = self
                            .client
                            .check_exists()
                            .watched()
                            .for_path(&self.path)
                            .await?;
                        if stat.is_some() {
                            continue 'again;
                        }
                        scan.watchers.push(watcher);
                    }
                    return Ok(scan);
                }
                Err(error) => return Err(error),
            };
            let mut numbers: Vec<u64> = children.iter().filter_map(|c| bucket_number(c)).collect();
            numbers.sort_unstable();
            if let Some(&highest) = numbers.last() {
                self.learn(highest);
            }
            for (index, &n) in numbers.iter().enumerate() {
                let bucket = self.bucket_path(n);
                let listed = if watch {
                    self.client
                        .get_children()
                        .watched()
                        .for_path(&bucket)
                        .await
                        .map(|(children, _, watcher)| (children, Some(watcher)))
                } else {
                    self.client
                        .get_children()
                        .for_path(&bucket)
                        .await
                        .map(|(children, _)| (children, None))
                };
                let (children, watcher) = match listed {
                    Ok(found) => found,
                    // Another consumer deleted it (it was empty).
                    Err(Error::NoNode) => continue,
                    Err(error) => return Err(error),
                };
                let name = bucket_name(n);
                let mut items: Vec<String> = children
                    .iter()
                    .filter(|c| c.starts_with(item_prefix))
                    .map(|c| format!("{name}/{c}"))
                    .collect();
                let last = index + 1 == numbers.len();
                if !items.is_empty() {
                    items.sort_unstable();
                    let all_skipped = items.iter().all(|item| skip.contains(item));
                    scan.items.extend(items);
                    scan.watchers.extend(watcher);
                    if all_skipped && !last {
                        continue;
                    }
                    return Ok(scan);
                }
                if last {
                    scan.watchers.extend(watcher);
                    break;
                }
                if !children.is_empty() {
                    // Only foreign nodes: not ours to delete, nothing to take.
                    tracing::debug!(bucket, "queue bucket holds no items but other nodes; kept");
                    scan.watchers.extend(watcher);
                    continue;
                }
                // Empty and a newer bucket exists: nobody should put here any more.
                drop(watcher);
                match self.client.delete().for_path(&bucket).await {
                    Ok(()) | Err(Error::NoNode) => {}
                    // An item arrived meanwhile (a producer that had not heard of the newer
                    // bucket): look again.
                    Err(Error::NotEmpty) => continue 'again,
                    Err(error) => return Err(error),
                }
            }
            return Ok(scan);
        }
    }

    /// How many item nodes all buckets hold (one read per bucket).
    pub(crate) async fn count(&self) -> Result<usize> {
        let numbers = match self.list().await {
            Ok(numbers) => numbers,
            Err(Error::NoNode) => return Ok(0),
            Err(error) => return Err(error),
        };
        let mut total = 0usize;
        for n in numbers {
            if let Some(stat) = self
                .client
                .check_exists()
                .for_path(&self.bucket_path(n))
                .await?
            {
                total += usize::try_from(stat.num_children).unwrap_or(0);
            }
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(bucket_name(7), "bucket-0000000007");
        assert_eq!(bucket_number("bucket-0000000007"), Some(7));
        assert_eq!(bucket_number("bucket-12345678901"), Some(12_345_678_901));
        assert_eq!(bucket_number("bucket-7"), None);
        assert_eq!(bucket_number("qn-0000000007"), None);
        assert_eq!(sequence_of("/q/bucket-0000000001/qn-0000000009"), Some(9));
        assert_eq!(
            flat_name("bucket-0000000001/qn-0000000009"),
            "bucket-0000000001.qn-0000000009"
        );
        assert_eq!(flat_name("qn-0000000009"), "qn-0000000009");
        assert!(validate_capacity(0).is_err());
        assert!(validate_capacity(1).is_ok());
        assert!(validate_capacity(usize::MAX).is_err());
    }
}
