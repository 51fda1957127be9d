//! A known-bad variant of this crate's recipes (a mutex waiter that skips its watch: it takes the lock at once, whoever is ahead of it), for showing that the simulation's checkers
//! catch them (`just sim --plant ...`). Only with the `planted-bugs` feature, which nothing
//! published enables; every variant is off until [`plant`] turns it on.

use std::sync::atomic::{AtomicBool, Ordering};

static ON: AtomicBool = AtomicBool::new(false);

/// Turns the planted bug of this crate on (for the whole process).
pub fn plant(on: bool) {
    ON.store(on, Ordering::SeqCst);
}

/// Whether the planted bug is on.
pub(crate) fn planted() -> bool {
    ON.load(Ordering::SeqCst)
}
