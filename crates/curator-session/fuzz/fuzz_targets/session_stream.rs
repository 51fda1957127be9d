//! What a server sends to a session, after the session's handshake and requests.
#![no_main]

#[path = "../drivers.rs"]
mod drivers;

libfuzzer_sys::fuzz_target!(|input: &[u8]| drivers::session_stream(input));
