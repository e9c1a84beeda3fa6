//! `mcp_proto::oauth`: the flow against answers from the input, and the document parsers on
//! each answer. Checks: see `fuzz/checks.rs` (`check_oauth`).
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    checks::check_oauth(data);
});
