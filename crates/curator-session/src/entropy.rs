//! Where the session engine's (and the framework's) randomness comes from: the operating
//! system's by default, or a seed for this thread, so a simulation that runs every host on one
//! thread runs the same way again (retry jitter, reconnect backoff, the order hosts are tried
//! in, the ids of protected node names).
//!
//! ```
//! use curator_session::entropy;
//! entropy::seed_thread(42);
//! let a = entropy::with(|rng| rand::Rng::random::<u64>(rng));
//! entropy::seed_thread(42);
//! let b = entropy::with(|rng| rand::Rng::random::<u64>(rng));
//! assert_eq!(a, b);
//! entropy::unseed_thread();
//! ```

use std::cell::RefCell;

use rand::SeedableRng;
use rand::rngs::StdRng;

thread_local! {
    static SEEDED: RefCell<Option<StdRng>> = const { RefCell::new(None) };
}

/// From now on, randomness drawn on this thread comes from `seed` (until
/// [`unseed_thread`]).
pub fn seed_thread(seed: u64) {
    SEEDED.with(|seeded| *seeded.borrow_mut() = Some(StdRng::seed_from_u64(seed)));
}

/// Randomness drawn on this thread comes from the operating system again.
pub fn unseed_thread() {
    SEEDED.with(|seeded| *seeded.borrow_mut() = None);
}

/// Runs `draw` with this thread's source of randomness.
pub fn with<R>(draw: impl FnOnce(&mut dyn rand::RngCore) -> R) -> R {
    SEEDED.with(|seeded| match seeded.borrow_mut().as_mut() {
        Some(rng) => draw(rng),
        None => draw(&mut rand::rng()),
    })
}
