#![doc = include_str!("../README.md")]

mod latch;
mod participant;
mod selector;

pub use latch::{CloseMode, LatchEvent, LeaderLatch, LeaderLatchBuilder};
pub use participant::Participant;
pub use selector::{LeaderSelector, LeaderSelectorBuilder, LeadershipContext};
