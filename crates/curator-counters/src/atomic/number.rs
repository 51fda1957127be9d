//! The numeric forms: `DistributedAtomicLong` (8 bytes) and `DistributedAtomicInteger` (4 bytes),
//! big-endian, as Curator stores them.

use std::fmt;
use std::marker::PhantomData;

use curator_framework::retry::RetryPolicy;
use curator_framework::{CuratorFramework, Result};

use super::update::Attempts;
use super::{AtomicValue, DistributedAtomicValue, DistributedAtomicValueBuilder, PromotedToLock};

mod sealed {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

/// The numbers a [`DistributedAtomicNumber`] can hold: `i64` (8 bytes, Curator's
/// `DistributedAtomicLong`) and `i32` (4 bytes, `DistributedAtomicInteger`), big-endian. Empty
/// data and a missing node read as 0; arithmetic wraps on overflow, as in Java.
pub trait AtomicNumber:
    sealed::Sealed + Copy + Eq + fmt::Debug + fmt::Display + Send + Sync + 'static
{
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// `self + other`, wrapping.
    fn wrapping_add(self, other: Self) -> Self;
    /// `-self`, wrapping.
    fn wrapping_neg(self) -> Self;
    /// The big-endian bytes.
    fn to_bytes(self) -> Vec<u8>;
    /// The number in node data.
    ///
    /// # Errors
    /// [`Error::Decode`](curator_framework::Error::Decode) for data of the wrong length.
    fn from_bytes(bytes: &[u8]) -> Result<Self>;
}

macro_rules! atomic_number {
    ($t:ty, $codec:ident) => {
        impl AtomicNumber for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            fn wrapping_add(self, other: Self) -> Self {
                <$t>::wrapping_add(self, other)
            }
            fn wrapping_neg(self) -> Self {
                <$t>::wrapping_neg(self)
            }
            fn to_bytes(self) -> Vec<u8> {
                self.to_be_bytes().to_vec()
            }
            fn from_bytes(bytes: &[u8]) -> Result<Self> {
                use curator_framework::codec::Codec;
                curator_framework::codec::$codec.decode(bytes)
            }
        }
    };
}

atomic_number!(i64, BigEndianI64);
atomic_number!(i32, BigEndianI32);

/// A distributed atomic number: [`DistributedAtomicLong`] or [`DistributedAtomicInteger`].
/// Everything [`DistributedAtomicValue`] says (exactly-once outcomes, promotion to a lock)
/// holds here.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_counters::{DistributedAtomicLong, PromotedToLock};
/// use curator_framework::retry::RetryNTimes;
/// let hits = DistributedAtomicLong::builder(client, "/counters/hits", RetryNTimes::new(10, Duration::from_millis(5)))
///     .promoted_to_lock(PromotedToLock::new("/counters/hits-lock", RetryNTimes::new(3, Duration::ZERO)))
///     .build()?;
/// let result = hits.increment().await?;
/// if result.succeeded {
///     println!("{} -> {}", result.pre_value, result.post_value);
/// }
/// # Ok(()) }
/// ```
pub struct DistributedAtomicNumber<N> {
    value: DistributedAtomicValue,
    _number: PhantomData<fn() -> N>,
}

/// A distributed `i64` in 8 big-endian bytes (Curator's `DistributedAtomicLong`).
pub type DistributedAtomicLong = DistributedAtomicNumber<i64>;

/// A distributed `i32` in 4 big-endian bytes (Curator's `DistributedAtomicInteger`).
pub type DistributedAtomicInteger = DistributedAtomicNumber<i32>;

impl<N> Clone for DistributedAtomicNumber<N> {
    fn clone(&self) -> Self {
        Self {
            value: self.value.clone(),
            _number: PhantomData,
        }
    }
}

impl<N> fmt::Debug for DistributedAtomicNumber<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DistributedAtomicNumber")
            .field("number", &std::any::type_name::<N>())
            .field("value", &self.value)
            .finish()
    }
}

impl<N: AtomicNumber> DistributedAtomicNumber<N> {
    /// Settings for a number at `path`; see [`DistributedAtomicValue::builder`].
    pub fn builder(
        client: CuratorFramework,
        path: &str,
        retry_policy: impl RetryPolicy + 'static,
    ) -> DistributedAtomicNumberBuilder<N> {
        DistributedAtomicNumberBuilder {
            value: DistributedAtomicValue::builder(client, path, retry_policy),
            _number: PhantomData,
        }
    }

    fn wrap(value: DistributedAtomicValue) -> Self {
        Self {
            value,
            _number: PhantomData,
        }
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        self.value.path()
    }

    /// The bytes-level view of the same node.
    pub fn as_value(&self) -> &DistributedAtomicValue {
        &self.value
    }

    /// The current number (0 when the node is missing).
    ///
    /// # Errors
    /// Connection errors; [`Error::Decode`](curator_framework::Error::Decode) when the node holds data of the wrong length.
    pub async fn get(&self) -> Result<AtomicValue<N>> {
        let raw = self.value.get().await?;
        let value = self.decode(&raw.post_value)?;
        Ok(raw.map(|_| value))
    }

    /// Adds 1.
    ///
    /// # Errors
    /// See [`add`](Self::add).
    pub async fn increment(&self) -> Result<AtomicValue<N>> {
        self.add(N::ONE).await
    }

    /// Subtracts 1.
    ///
    /// # Errors
    /// See [`add`](Self::add).
    pub async fn decrement(&self) -> Result<AtomicValue<N>> {
        self.add(N::ONE.wrapping_neg()).await
    }

    /// Subtracts `delta`.
    ///
    /// # Errors
    /// See [`add`](Self::add).
    pub async fn subtract(&self, delta: N) -> Result<AtomicValue<N>> {
        self.add(delta.wrapping_neg()).await
    }

    /// Adds `delta` (wrapping on overflow, as Java does); `succeeded` is `false` when every
    /// attempt met a concurrent write and the retry policy (and the lock, if promoted) gave up.
    ///
    /// # Errors
    /// Connection errors (nothing applied; see [`DistributedAtomicValue`] for
    /// [`Error::Closed`](curator_framework::Error::Closed)); [`Error::Decode`](curator_framework::Error::Decode) when the node holds data of the wrong length.
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the update applied or not.
    pub async fn add(&self, delta: N) -> Result<AtomicValue<N>> {
        let path = self.value.path().to_owned();
        let raw = self
            .value
            .core
            .update(
                |current| {
                    let current = decode::<N>(&path, current)?;
                    Ok(Some(current.wrapping_add(delta).to_bytes()))
                },
                Attempts::UnderPolicy,
            )
            .await?;
        self.decode_result(raw)
    }

    /// Sets `new` if the number equals `expected`; one attempt.
    ///
    /// # Errors
    /// As [`add`](Self::add).
    pub async fn compare_and_set(&self, expected: N, new: N) -> Result<AtomicValue<N>> {
        let path = self.value.path().to_owned();
        let raw = self
            .value
            .core
            .update(
                |current| Ok((decode::<N>(&path, current)? == expected).then(|| new.to_bytes())),
                Attempts::Once,
            )
            .await?;
        self.decode_result(raw)
    }

    /// Sets `new` whatever the number is, by optimistic attempts.
    ///
    /// # Errors
    /// As [`add`](Self::add).
    pub async fn try_set(&self, new: N) -> Result<AtomicValue<N>> {
        let path = self.value.path().to_owned();
        let raw = self
            .value
            .core
            .update(
                |current| {
                    decode::<N>(&path, current)?;
                    Ok(Some(new.to_bytes()))
                },
                Attempts::UnderPolicy,
            )
            .await?;
        self.decode_result(raw)
    }

    /// Writes `new` unconditionally.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn force_set(&self, new: N) -> Result<()> {
        self.value.force_set(&new.to_bytes()).await
    }

    /// Creates the node with `initial` if it does not exist; `false` when it did.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn initialize(&self, initial: N) -> Result<bool> {
        self.value.initialize(&initial.to_bytes()).await
    }

    /// See [`DistributedAtomicValue::flush_markers`].
    ///
    /// # Errors
    /// Connection errors.
    pub async fn flush_markers(&self) -> Result<()> {
        self.value.flush_markers().await
    }

    fn decode(&self, bytes: &[u8]) -> Result<N> {
        decode(self.value.path(), bytes)
    }

    fn decode_result(&self, raw: AtomicValue<Vec<u8>>) -> Result<AtomicValue<N>> {
        let pre = self.decode(&raw.pre_value)?;
        let post = self.decode(&raw.post_value)?;
        Ok(AtomicValue {
            succeeded: raw.succeeded,
            pre_value: pre,
            post_value: post,
            stats: raw.stats,
        })
    }
}

fn decode<N: AtomicNumber>(path: &str, bytes: &[u8]) -> Result<N> {
    N::from_bytes(bytes).map_err(|error| curator_framework::codec::with_path(error, path))
}

/// Settings of a [`DistributedAtomicNumber`]: the [`DistributedAtomicValueBuilder`] options.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_counters::DistributedAtomicLong;
/// use curator_framework::retry::RetryNTimes;
/// let plain = DistributedAtomicLong::builder(client, "/counters/plain", RetryNTimes::new(3, Duration::ZERO))
///     .without_markers()
///     .build()?;
/// # let _ = plain;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until built"]
pub struct DistributedAtomicNumberBuilder<N> {
    value: DistributedAtomicValueBuilder,
    _number: PhantomData<fn() -> N>,
}

impl<N: AtomicNumber> DistributedAtomicNumberBuilder<N> {
    /// See [`DistributedAtomicValueBuilder::promoted_to_lock`].
    pub fn promoted_to_lock(self, promoted: PromotedToLock) -> Self {
        Self {
            value: self.value.promoted_to_lock(promoted),
            _number: PhantomData,
        }
    }

    /// See [`DistributedAtomicValueBuilder::metrics_name`].
    pub fn metrics_name(self, name: impl Into<String>) -> Self {
        Self {
            value: self.value.metrics_name(name),
            _number: PhantomData,
        }
    }

    /// See [`DistributedAtomicValueBuilder::without_markers`].
    pub fn without_markers(self) -> Self {
        Self {
            value: self.value.without_markers(),
            _number: PhantomData,
        }
    }

    /// The number.
    ///
    /// # Errors
    /// As [`DistributedAtomicValueBuilder::build`].
    pub fn build(self) -> Result<DistributedAtomicNumber<N>> {
        Ok(DistributedAtomicNumber::wrap(self.value.build()?))
    }
}
