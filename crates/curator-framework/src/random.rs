//! Where the framework's and the recipes' randomness comes from: retry jitter, reconnect
//! backoff, the order servers are tried in, the ids in protected and marker node names. It is
//! the operating system's unless a seed is given for the thread: a simulation that runs every
//! host on one thread (curator-sim) seeds it, so a seed runs the same way again.
//!
//! ```
//! use curator_framework::random;
//! random::seed_thread(7);
//! let a = random::uuid();
//! random::seed_thread(7);
//! assert_eq!(random::uuid(), a);
//! random::unseed_thread();
//! assert_ne!(random::uuid(), a);
//! ```

use rand::Rng as _;

use crate::wire::entropy;

/// From now on, randomness drawn on this thread comes from `seed`.
pub fn seed_thread(seed: u64) {
    entropy::seed_thread(seed);
}

/// Randomness drawn on this thread comes from the operating system again.
pub fn unseed_thread() {
    entropy::unseed_thread();
}

/// A random (version 4) UUID from this thread's source.
pub fn uuid() -> uuid::Uuid {
    let bytes: [u8; 16] = entropy::with(|rng| rng.random());
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// A random index below `n` (0 for `n` = 0) from this thread's source.
///
/// ```
/// assert!(curator_framework::random::below(3) < 3);
/// ```
pub fn below(n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    entropy::with(|rng| rng.random_range(0..n))
}

/// A random fraction in `range` from this thread's source.
pub(crate) fn fraction(range: std::ops::RangeInclusive<f64>) -> f64 {
    entropy::with(|rng| rng.random_range(range))
}

/// A random integer in `range` from this thread's source.
pub(crate) fn between(range: std::ops::Range<u32>) -> u32 {
    entropy::with(|rng| rng.random_range(range))
}
