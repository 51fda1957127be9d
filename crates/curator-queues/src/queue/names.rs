//! Curator's item names: how a kind of queue writes and orders its item nodes.

use std::time::{SystemTime, UNIX_EPOCH};

/// Curator's priority code: `1` + 8 hex digits for priorities ≥ 0, `0` + the 32-bit two's
/// complement in hex for negatives, so names sort by priority.
pub(super) fn priority_code(priority: i32) -> String {
    if priority >= 0 {
        format!("1{priority:08X}")
    } else {
        format!("0{:08X}", priority as u32)
    }
}

/// An id as Curator writes it into a name (`/` and `|` become `_`).
pub(super) fn id_code(id: &str) -> String {
    id.replace(['/', '|'], "_")
}

/// The sequence number at the end of an item name.
pub(super) fn sequence(name: &str) -> &str {
    &name[name.len().saturating_sub(10)..]
}

/// The epoch (ms) of a delay-queue item name, between its last two `|`.
pub(super) fn delay_epoch(name: &str) -> u64 {
    let mut parts = name.rsplitn(3, '|');
    let _sequence = parts.next();
    parts
        .next()
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .unwrap_or(0)
}

/// The epoch (ms) of `at`, as a delay-queue name holds it.
pub(super) fn epoch_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The item name without its sequence: the prefix a requeued item keeps.
pub(super) fn name_prefix(name: &str) -> &str {
    &name[..name.len().saturating_sub(10)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curator_names() {
        assert_eq!(priority_code(0), "100000000");
        assert_eq!(priority_code(10), "10000000A");
        assert_eq!(priority_code(-1), "0FFFFFFFF");
        assert_eq!(priority_code(i32::MIN), "080000000");
        assert_eq!(priority_code(i32::MAX), "17FFFFFFF");
        assert_eq!(format!("{:08X}", 1_700_000_000_000u64), "18BCFE56800");
        assert_eq!(
            delay_epoch("queue-|18BCFE56800|0000000003"),
            1_700_000_000_000
        );
        assert_eq!(id_code("a/b|c"), "a_b_c");
        assert_eq!(sequence("queue-|x|0000000042"), "0000000042");
        assert_eq!(name_prefix("queue-10000000A0000000042"), "queue-10000000A");
        let mut sorted = vec![priority_code(5), priority_code(-3), priority_code(0)];
        sorted.sort();
        assert_eq!(
            sorted,
            [priority_code(-3), priority_code(0), priority_code(5)]
        );
    }
}
