//! A known-bad variant of this crate's recipes (a leader latch that leads as second in line: it skips the check that its node is first), for showing that the simulation's checkers
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
