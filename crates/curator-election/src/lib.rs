#![doc = include_str!("../README.md")]
// Background work goes through the recipe runtime (clippy.toml says why).
#![warn(clippy::disallowed_methods)]

mod latch;
mod observer;
mod participant;
mod selector;

pub use latch::{CloseMode, LatchEvent, LeaderLatch, LeaderLatchBuilder};
pub use observer::LeaderObserver;
pub use participant::Participant;
pub use selector::{LeaderSelector, LeaderSelectorBuilder, LeadershipContext};

#[cfg(feature = "planted-bugs")]
#[doc(hidden)]
pub mod planted;
