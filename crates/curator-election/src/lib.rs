#![doc = include_str!("../README.md")]

mod latch;
mod selector;

pub use latch::{CloseMode, ElectionEvent, LatchEvent, LeaderLatch, Participant};
pub use selector::{LeaderSelector, LeadershipContext};
