//! Fuzz the SSE decoder: no panics, bounded buffering, chunk invariance. The whole input is the
//! SSE stream; its first bytes also choose the memory limit and the chunk sizes, so seed files
//! stay plain SSE streams. Checks: `check_sse` in `fuzz/checks.rs`, which
//! `tests/fuzz_seeds.rs` also runs on `fuzz/seeds/sse/`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_sse(data));
