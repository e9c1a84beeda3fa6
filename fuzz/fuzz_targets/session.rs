//! `Session` fed hostile server output: no panic, bounded buffer, well-formed transmits, at most one
//! response per request (exactly one after EOF), and chunk invariance when time stands still.
//! Input layout and checks: see `fuzz/checks.rs`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_session(data));
