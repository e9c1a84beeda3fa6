//! The official MCP conformance runner (`@modelcontextprotocol/conformance`, installed by
//! `.ci/install-peers`; see tests/peers/CONFORMANCE.md) drives the `conformance` example, one
//! scenario per test: `initialize`, `tools_call`, `sse-retry`.
//!
//! A scenario passes when the runner exits 0, reports `Passed: N/N, 0 failed, 0 warnings` and
//! `OVERALL: PASSED`. On failure the test prints the runner's whole output. The runner missing:
//! `skipped: …` locally, a failure under `CI=true`.
//!
//! The runner's own summary lines are never echoed on success: CI counts tests from closing lines
//! shaped like "N passed, M failed".

mod common;

use common::{example_bin, peer_bin, run_within};
use std::process::Command;
use std::time::Duration;

/// The runner kills a client after 30 s; the whole run (node start, scenario server, client) gets
/// this long before the test kills the runner's process group.
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// Removes ANSI escape sequences (`ESC [ … final byte`, and lone `ESC x`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        // A CSI sequence: parameters and intermediates up to the final byte (@ to ~). Any other
        // escape drops just the byte after ESC.
        if let Some('[') = chars.next() {
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

/// `Passed: N/N, 0 failed, 0 warnings` with N ≥ 1: the number of checks, if that line is there.
fn all_passed(output: &str) -> Option<u32> {
    output.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("Passed: ")?;
        let (ratio, tail) = rest.split_once(", ")?;
        let (passed, total) = ratio.split_once('/')?;
        let (passed, total): (u32, u32) = (passed.parse().ok()?, total.parse().ok()?);
        (passed == total && total >= 1 && tail.trim() == "0 failed, 0 warnings").then_some(total)
    })
}

fn scenario(name: &str) {
    let Some(runner) = peer_bin("conformance") else {
        return;
    };
    let client = example_bin("conformance");
    let client = client.to_str().expect("UTF-8 path");
    // The runner splits --command on spaces.
    assert!(
        !client.contains(char::is_whitespace),
        "the runner cannot take a client path with spaces: {client}"
    );
    let done = run_within(
        Command::new(&runner).args(["client", "--command", client, "--scenario", name]),
        RUN_LIMIT,
    );
    let output = strip_ansi(&format!("{}{}", done.stderr, done.stdout));
    let checks = all_passed(&output);
    let overall = output.lines().any(|l| l.contains("OVERALL: PASSED"));
    if !(done.status.success() && checks.is_some() && overall) {
        panic!(
            "conformance scenario {name} failed: {} (all checks passed: {}, OVERALL: PASSED: {overall})\n\
             ----- runner output -----\n{output}\n----- end of runner output -----",
            done.status,
            checks.is_some()
        );
    }
    // Rephrased on purpose (see the module docs).
    eprintln!(
        "conformance scenario {name}: every one of its {} checks succeeded",
        checks.unwrap_or(0)
    );
}

#[test]
fn scenario_initialize() {
    scenario("initialize");
}

#[test]
fn scenario_tools_call() {
    scenario("tools_call");
}

#[test]
fn scenario_sse_retry() {
    scenario("sse-retry");
}

#[test]
fn summary_parsing() {
    let sample = "Test Results:\n\u{1b}[32mPassed: 3/3, 0 failed, 0 warnings\u{1b}[0m\n\n\u{1b}[1m✅ OVERALL: PASSED\u{1b}[0m\n";
    let clean = strip_ansi(sample);
    assert_eq!(all_passed(&clean), Some(3));
    assert!(clean.contains("✅ OVERALL: PASSED"));
    assert_eq!(all_passed("Passed: 2/3, 1 failed, 0 warnings"), None);
    assert_eq!(all_passed("Passed: 3/3, 0 failed, 1 warnings"), None);
    assert_eq!(all_passed("Passed: 0/0, 0 failed, 0 warnings"), None);
}
