//! Test data.

/// `len` bytes that differ by `seed` and by position (an xorshift sequence), so that a mix of
/// two values, or a value cut at another length, never equals either: what tests of large or
/// chunked values compare against.
///
/// ```
/// let a = curator_test::patterned_bytes(1, 1000);
/// assert_eq!(a, curator_test::patterned_bytes(1, 1000));
/// assert_ne!(a, curator_test::patterned_bytes(2, 1000));
/// ```
pub fn patterned_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}
