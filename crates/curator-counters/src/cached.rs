//! `CachedAtomicLong`: hands out numbers from ranges reserved on a `DistributedAtomicLong`.

use curator_framework::Result;

use crate::atomic::{AtomicValue, DistributedAtomicLong};

/// Hands out consecutive numbers locally from blocks of `factor` reserved with one
/// [`DistributedAtomicLong::add`] (Curator's `CachedAtomicLong`): a reservation that moves the
/// counter from `pre` to `pre + factor` owns `pre .. pre + factor`. Numbers are unique across
/// every process sharing the counter; they increase within one instance but interleave between
/// instances, and numbers of a block not handed out before the instance is dropped are skipped.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_counters::{CachedAtomicLong, DistributedAtomicLong};
/// use curator_framework::retry::RetryNTimes;
/// let counter = DistributedAtomicLong::builder(client, "/ids/orders", RetryNTimes::new(10, Duration::from_millis(5))).build()?;
/// let ids = CachedAtomicLong::new(counter, 100)?;
/// let id = ids.next().await?;
/// if id.succeeded {
///     println!("order {}", id.post_value);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct CachedAtomicLong {
    number: DistributedAtomicLong,
    factor: i64,
    /// The next number to hand out and the end (exclusive) of the reserved block.
    block: tokio::sync::Mutex<Option<(i64, i64)>>,
}

impl CachedAtomicLong {
    /// Reserves blocks of `factor` numbers from `number`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](curator_framework::Error::InvalidArgument) when `factor` is
    /// not positive.
    pub fn new(number: DistributedAtomicLong, factor: i64) -> Result<Self> {
        if factor <= 0 {
            return Err(curator_framework::Error::InvalidArgument(format!(
                "the block size of a cached atomic long must be positive, not {factor}"
            )));
        }
        Ok(Self {
            number,
            factor,
            block: tokio::sync::Mutex::new(None),
        })
    }

    /// The next number (as `pre_value` and `post_value`), reserving a new block when the
    /// current one is used up; `succeeded` is `false` when the reservation gave up.
    ///
    /// # Errors
    /// As [`DistributedAtomicLong::add`].
    ///
    /// # Cancellation safety
    /// Dropping the future during a reservation may lose that block (its numbers are skipped).
    pub async fn next(&self) -> Result<AtomicValue<i64>> {
        let mut block = self.block.lock().await;
        let mut stats = Default::default();
        if block.is_none_or(|(next, end)| next >= end) {
            let reserved = self.number.add(self.factor).await?;
            if !reserved.succeeded {
                return Ok(reserved);
            }
            stats = reserved.stats;
            *block = Some((reserved.pre_value, reserved.pre_value + self.factor));
        }
        let (next, end) = block.expect("a block was reserved");
        *block = Some((next + 1, end));
        Ok(AtomicValue {
            succeeded: true,
            pre_value: next,
            post_value: next,
            stats,
        })
    }
}
