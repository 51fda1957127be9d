#![doc = include_str!("../README.md")]
// Background work goes through the recipe runtime (clippy.toml says why).
#![warn(clippy::disallowed_methods)]

mod atomic;
mod cached;
mod id_generator;
mod shared_count;
mod shared_value;

pub use atomic::{
    AtomicNumber, AtomicStats, AtomicValue, DistributedAtomicInteger, DistributedAtomicLong,
    DistributedAtomicNumber, DistributedAtomicNumberBuilder, DistributedAtomicValue,
    DistributedAtomicValueBuilder, MARKER_PREFIX, PromotedToLock,
};
pub use cached::CachedAtomicLong;
pub use id_generator::{SequentialId, SequentialIdGenerator};
pub use shared_count::SharedCount;
pub use shared_value::{SharedValue, SharedValueBuilder, VersionedValue};
