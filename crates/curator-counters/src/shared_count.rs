//! `SharedCount`: an `i32` every participant sees (Curator's 4-byte big-endian layout).

use curator_framework::codec::BigEndianI32;
use curator_framework::listen::{Listenable, ListenerStream};
use curator_framework::recipe::{Recipe, RecipeCore, RecipeEvents};
use curator_framework::{CuratorFramework, Result};

use crate::shared_value::{SharedValue, VersionedValue};

/// A shared `i32` (Curator's `SharedCount`): the node holds 4 bytes, big-endian two's
/// complement, so Java and Rust processes share the count. A [`SharedValue`] underneath, with
/// the same guarantees.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_counters::SharedCount;
/// let count = SharedCount::new(client, "/config/workers", 3)?;
/// count.start().await?;
/// let seen = count.versioned_value()?;
/// let bumped = count.try_set_count(&seen, seen.value + 1).await?;
/// println!("bumped: {bumped}, now {}", count.count()?);
/// count.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SharedCount {
    value: SharedValue<i32, BigEndianI32>,
}

impl SharedCount {
    /// A count at `path`, created with `seed` when missing.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](curator_framework::Error::InvalidPath) for a bad path.
    pub fn new(client: CuratorFramework, path: &str, seed: i32) -> Result<Self> {
        let mut value = SharedValue::builder(client, path, seed).codec(BigEndianI32);
        value.kind = "SharedCount";
        Ok(Self {
            value: value.build()?,
        })
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        self.value.path()
    }

    /// See [`SharedValue::start`].
    ///
    /// # Errors
    /// As [`SharedValue::start`].
    ///
    /// # Cancellation safety
    /// As [`SharedValue::start`].
    pub async fn start(&self) -> Result<()> {
        self.value.start().await
    }

    /// See [`SharedValue::close`].
    ///
    /// # Errors
    /// As [`SharedValue::close`].
    ///
    /// # Cancellation safety
    /// As [`SharedValue::close`].
    pub async fn close(&self) -> Result<()> {
        self.value.close().await
    }

    /// The count this instance last saw.
    ///
    /// # Errors
    /// [`Error::NotStarted`](curator_framework::Error::NotStarted) before `start`;
    /// [`Error::Decode`](curator_framework::Error::Decode) when the node does not hold 0 or 4
    /// bytes.
    pub fn count(&self) -> Result<i32> {
        self.value.value()
    }

    /// The count with its version, the token for [`try_set_count`](Self::try_set_count).
    ///
    /// # Errors
    /// As [`count`](Self::count).
    pub fn versioned_value(&self) -> Result<VersionedValue<i32>> {
        self.value.versioned_value()
    }

    /// Reads the count from the server now.
    ///
    /// # Errors
    /// As [`SharedValue::read`].
    pub async fn read(&self) -> Result<VersionedValue<i32>> {
        self.value.read().await
    }

    /// Sets the count unconditionally.
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// The write may or may not be applied when the future is dropped.
    pub async fn set_count(&self, count: i32) -> Result<()> {
        self.value.set_value(count).await
    }

    /// Sets the count if it is still at `expected.version`; `false` when it changed first.
    ///
    /// # Errors
    /// As [`SharedValue::try_set_value`].
    ///
    /// # Cancellation safety
    /// The write may or may not be applied when the future is dropped.
    pub async fn try_set_count(&self, expected: &VersionedValue<i32>, count: i32) -> Result<bool> {
        self.value.try_set_value(expected, count).await
    }

    /// Listeners called with each new count this instance sees.
    pub fn listenable(&self) -> Listenable<VersionedValue<i32>> {
        self.value.listenable()
    }

    /// The new counts as a stream.
    pub fn stream(&self) -> ListenerStream<VersionedValue<i32>> {
        self.value.stream()
    }
}

impl Recipe for SharedCount {
    fn core(&self) -> &RecipeCore {
        self.value.recipe_core()
    }

    async fn start(&self) -> Result<()> {
        SharedCount::start(self).await
    }

    async fn close(&self) -> Result<()> {
        SharedCount::close(self).await
    }
}

impl RecipeEvents for SharedCount {
    type Event = VersionedValue<i32>;

    fn listenable(&self) -> Listenable<VersionedValue<i32>> {
        SharedCount::listenable(self)
    }
}
