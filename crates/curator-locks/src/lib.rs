#![doc = include_str!("../README.md")]
// Background work goes through the recipe runtime (clippy.toml says why).
#![warn(clippy::disallowed_methods)]

mod fencing_gate;
mod holding;
mod lock_delay;
mod multi_lock;
mod mutex;
mod non_blocking_lease;
mod revoker;
mod rwlock;
mod semaphore;

pub use fencing_gate::{Admission, FencingGate};
pub use lock_delay::{LockDelay, LockDelayEntry, LockDelayRecord};
pub use multi_lock::{InterProcessMultiLock, MultiLockGuard};
pub use mutex::{InterProcessMutex, InterProcessMutexBuilder, LockGuard};
pub use non_blocking_lease::{LeaseGrant, NonBlockingLease};
pub use revoker::Revoker;
pub use rwlock::{InterProcessReadWriteLock, InterProcessReadWriteLockBuilder};
pub use semaphore::{
    InterProcessSemaphoreMutex, InterProcessSemaphoreMutexBuilder, InterProcessSemaphoreV2,
    InterProcessSemaphoreV2Builder, Lease, MaxLeases,
};

#[cfg(feature = "planted-bugs")]
#[doc(hidden)]
pub mod planted;
