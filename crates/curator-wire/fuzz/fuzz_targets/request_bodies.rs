//! A request body, read as the request of every opcode.
#![no_main]

#[path = "../drivers.rs"]
mod drivers;

libfuzzer_sys::fuzz_target!(|data: &[u8]| drivers::request_bodies(data));
