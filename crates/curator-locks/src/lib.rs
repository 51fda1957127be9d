#![doc = include_str!("../README.md")]

mod mutex;
mod rwlock;

pub use mutex::{InterProcessMutex, LockGuard};
pub use rwlock::InterProcessReadWriteLock;
