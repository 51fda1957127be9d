#![doc = include_str!("../README.md")]

mod mutex;
mod rwlock;
mod semaphore;

pub use mutex::{InterProcessMutex, LockGuard};
pub use rwlock::InterProcessReadWriteLock;
pub use semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease, MaxLeases};
