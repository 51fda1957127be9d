#![doc = include_str!("../README.md")]

mod barrier;
mod double_barrier;

pub use barrier::DistributedBarrier;
pub use double_barrier::DistributedDoubleBarrier;
