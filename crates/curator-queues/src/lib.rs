#![doc = include_str!("../README.md")]
// Background work goes through the recipe runtime (clippy.toml says why).
#![warn(clippy::disallowed_methods)]

mod bucket;
mod envelope;
mod outcome;
mod queue;
mod sharder;
mod simple;

pub use queue::{
    DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue, DistributedQueue,
    ErrorMode, PutEvent, QUEUE_PREFIX, Queue, QueueBuilder, kind,
};
pub use sharder::{QueueSharder, QueueSharderBuilder};
pub use simple::{SIMPLE_PREFIX, SimpleDistributedQueue, SimpleDistributedQueueBuilder};

#[cfg(feature = "planted-bugs")]
#[doc(hidden)]
pub mod planted;
