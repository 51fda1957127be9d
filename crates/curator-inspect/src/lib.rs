#![doc = include_str!("../README.md")]

mod inspect;
mod names;
mod report;

pub use inspect::{Watch, inspect, watch};
pub use report::{DelayLine, Layout, Participant, QueueStats, Report, Who};
