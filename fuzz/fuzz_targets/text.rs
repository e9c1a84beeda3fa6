//! `mcp_proto::text::repair`: valid UTF-8 out with nothing left to mend, only the bad parts
//! changed, valid JSON text left alone, and a JSON string of any bytes readable once repaired.
//! Checks: see `fuzz/checks.rs`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_text(data));
