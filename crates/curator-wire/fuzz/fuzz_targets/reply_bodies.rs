//! A reply body, read as the reply to every opcode and as a watch notification.
#![no_main]

#[path = "../drivers.rs"]
mod drivers;

libfuzzer_sys::fuzz_target!(|data: &[u8]| drivers::reply_bodies(data));
