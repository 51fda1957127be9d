#![doc = include_str!("../README.md")]

mod envelope;
mod queue;
mod sharder;
mod simple;

pub use queue::{
    DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue, DistributedQueue,
    ErrorMode, PutEvent, QUEUE_PREFIX, Queue, QueueBuilder, kind,
};
pub use sharder::{QueueSharder, QueueSharderBuilder};
pub use simple::{SIMPLE_PREFIX, SimpleDistributedQueue};
