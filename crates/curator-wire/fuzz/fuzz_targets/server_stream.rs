//! A byte stream as a server reads it: the handshake, then requests, in reads of any size; every request body by its opcode.
#![no_main]

#[path = "../drivers.rs"]
mod drivers;

libfuzzer_sys::fuzz_target!(|data: &[u8]| drivers::server_stream(data));
