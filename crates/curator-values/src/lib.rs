#![doc = include_str!("../README.md")]

pub mod chunked;
pub mod guarded;
pub mod optimistic;

pub use chunked::{ChunkSettings, ChunkedValue};
pub use guarded::Guarded;
pub use optimistic::Optimistic;
