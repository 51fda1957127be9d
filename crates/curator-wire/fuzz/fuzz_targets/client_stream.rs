//! A byte stream as a client reads it: the handshake's answer, then replies and notifications, in reads of any size; every reply body under every opcode.
#![no_main]

#[path = "../drivers.rs"]
mod drivers;

libfuzzer_sys::fuzz_target!(|data: &[u8]| drivers::client_stream(data));
