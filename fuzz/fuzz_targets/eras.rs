//! `Session` in every era setting (the probe, the modern era, HTTP headers) fed hostile server
//! output, with the session target's checks: no panic, well-formed transmits (modern requests
//! with their `_meta`, headers that are valid HTTP), at most one response per request (exactly one
//! after EOF), the opening's own requests never answered as responses, chunk invariance.
//! Input layout: see `fuzz/checks.rs`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_eras(data));
