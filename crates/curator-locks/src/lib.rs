#![doc = include_str!("../README.md")]

mod mutex;

pub use mutex::{InterProcessMutex, LockGuard};
