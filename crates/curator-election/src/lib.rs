#![doc = include_str!("../README.md")]

mod latch;

pub use latch::{CloseMode, ElectionEvent, LatchEvent, LeaderLatch, Participant};
