#![doc = include_str!("../README.md")]
// Background work goes through the recipe runtime (clippy.toml says why).
#![warn(clippy::disallowed_methods)]

mod barrier;
mod double_barrier;
mod two_phase_commit;
mod wait;

pub use barrier::DistributedBarrier;
pub use double_barrier::DistributedDoubleBarrier;
pub use two_phase_commit::{ALIVE_NODE, OUTCOME_NODE, Outcome, Site, TwoPhaseCommit, Vote};
