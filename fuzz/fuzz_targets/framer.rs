//! `LineFramer`: bounded buffer, chunk invariance (also after `finish`), agreement with a naive
//! model. Input layout and checks: see `fuzz/checks.rs`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_framer(data));
