//! Cross-crate scenarios live in `tests/`. This library holds the reliability suite: mixed
//! workloads under a seeded fault schedule, with invariant checkers over what they recorded
//! (`just soak`, and a short seeded run in `tests/soak.rs`). See `docs/reliability.md`.

pub mod checkers;
pub mod faults;
pub mod history;
pub mod linearizability;
pub mod sim;
pub mod soak;
pub mod workloads;

pub use soak::{Report, SoakConfig, run, write_report};
