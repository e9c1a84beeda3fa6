//! `mcp_proto::skills`: a SKILL.md's frontmatter read, checked against an entry, and its files
//! kept inside the skill. Checks: see `fuzz/checks.rs`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check_skills(data));
