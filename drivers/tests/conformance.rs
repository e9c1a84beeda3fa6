//! The official MCP conformance runner (`@modelcontextprotocol/conformance`, installed by
//! `.ci/install-peers`; see drivers/tests/peers/CONFORMANCE.md and CONFORMANCE-2026.md) drives the
//! `conformance` example, one scenario per test:
//! - 0.1.16 (`.peers/bin/conformance`, spec 2025-11-25): `initialize`, `tools_call`, `sse-retry`,
//!   `elicitation-sep1034-client-defaults`;
//! - 0.2.0-alpha.12 (`.peers/bin/conformance-next`) with `--spec-version 2026-07-28`:
//!   `tools_call`, `request-metadata`, `http-standard-headers`, `http-custom-headers`,
//!   `http-invalid-tool-headers`, `json-schema-ref-no-deref`, `json-schema-2020-12-preservation`,
//!   `sep-2322-client-request-state`; and with `--force` (extensions are not on the spec's
//!   timeline) the skills extension's `sep-2640-client-no-prefetch`, `-verify-digest`,
//!   `-verify-size` and `-verify-frontmatter`.
//!
//! The two elicitation scenarios are the only ones where the example registers a handler (an
//! elicitation handler that accepts): `elicitation-sep1034-client-defaults` checks that the
//! fields the user left out get the schema's defaults (the core fills them in on accept; the
//! server's TS SDK sends the request on the standalone GET stream, which the HTTP transport opens
//! because a capability was declared); `sep-2322-client-request-state` checks the multi
//! round-trip rules (the retry's new id, the exact `requestState` or none, no round fields on an
//! unrelated call, a result without `resultType` is complete).
//!
//! The client opens every scenario in the default era, `Auto` (`server/discover` first, then
//! `initialize` if the server is legacy): no scenario server makes `Auto` pick wrongly, and a
//! dual-era client must not need to be told. Per scenario, the era `Auto` settles on, and why:
//!
//! | scenario (spec) | era | the server's answer to the probe |
//! |---|---|---|
//! | `initialize` (2025-11-25) | legacy | `{}` result, not a discover result |
//! | `tools_call` (2025-11-25) | legacy | TS SDK: HTTP 400, its JSON-RPC error without the request's id |
//! | `sse-retry` (2025-11-25) | legacy | `{}` result |
//! | `elicitation-sep1034-client-defaults` (2025-11-25) | legacy | TS SDK (stateful): HTTP 400 |
//! | `tools_call`, `json-schema-2020-12-preservation` (2026-07-28) | modern | discover result (stateless mock) |
//! | `request-metadata` (2026-07-28) | modern | -32022 with `data.supported`, then a discover result on the retry |
//! | `http-*`, `json-schema-ref-no-deref`, `sep-2322-client-request-state` (2026-07-28) | modern | discover result |
//! | `sep-2640-client-*` (2026-07-28, `--force`) | modern | discover result |
//!
//! None of the 2026-07-28 servers is ever sent `initialize` (the probe is answered in
//! milliseconds, long before the 2 s fallback). The example checks the era itself: modern when the
//! runner says `MCP_CONFORMANCE_PROTOCOL_VERSION=2026-07-28`, legacy for 2025-x (or unset).
//!
//! A scenario passes when the runner exits 0, reports `Passed: N/N, 0 failed, 0 warnings` (N ≥ 1)
//! and `OVERALL: PASSED`; for 0.2.0 also when the scenario was not `SKIPPED:` (which exits 0
//! without running the client), at least one check line is listed, and the client's saved stderr
//! (`-o`) ends its flow with `flow completed` (`http-invalid-tool-headers` ignores the client's
//! exit code). On failure the test prints the runner's whole output. The runner missing:
//! `skipped: …` locally, a failure under `CI=true`.
//!
//! The runner's own summary lines are never echoed on success: CI counts tests from closing lines
//! shaped like "N passed, M failed".

use mcp_testkit::{example_bin, peer_bin, run_within, TempDir};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// The runner kills a client after 30 s; the whole run (node start, scenario server, client) gets
/// this long before the test kills the runner's process group.
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// One runner at a time: each is a node process with its scenario server and the client, and on a
/// small machine ten at once could push the client's timings (the probe's 2 s fallback,
/// `sse-retry`'s reconnect window) past what the scenarios allow.
static ONE_RUN: Mutex<()> = Mutex::new(());

/// What the example prints to stderr when its whole flow succeeded.
const CLIENT_DONE: &str = "flow completed";

/// The spec version the 0.2.0 runner is asked for.
const MODERN: &str = "2026-07-28";

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

/// The lines of the runner's `Checks:` table (`<timestamp> [<id>] <STATUS> <description>`).
fn check_lines(output: &str) -> Vec<&str> {
    const STATUSES: [&str; 5] = ["SUCCESS", "FAILURE", "WARNING", "INFO", "SKIPPED"];
    output
        .lines()
        .filter(|line| {
            line.split_once("] ").is_some_and(|(head, tail)| {
                head.contains(" [") && STATUSES.iter().any(|s| tail.starts_with(s))
            })
        })
        .collect()
}

/// The runner's notice that the scenario does not apply at the spec version (it then exits 0
/// without starting the client).
fn skipped_notice(output: &str) -> Option<&str> {
    output
        .lines()
        .find(|line| line.trim_start().starts_with("SKIPPED: "))
}

/// Runs one scenario with `runner` (`--spec-version` when `spec` is given) and checks that it
/// passed. With a spec version (the 0.2.0 runner), the runner saves the client's output (`-o`) and
/// the client must have completed its flow.
fn scenario_with(runner: &str, spec: Option<&str>, name: &str) {
    let expect = if spec.is_some() {
        Expect::Completes
    } else {
        Expect::Unchecked
    };
    scenario_expecting(runner, spec, name, expect);
}

/// What the client's own stderr (saved by the runner) must show.
#[derive(Clone, Copy)]
enum Expect {
    /// Not looked at (0.1.16's older scenarios run without `-o`).
    Unchecked,
    /// The flow completed.
    Completes,
    /// The client refused, with an error containing this (the scenarios where a safe client
    /// stops: a resource mismatch, a wrong `iss`, a metadata issuer that is not the server's).
    Refuses(&'static str),
}

fn scenario_expecting(runner: &str, spec: Option<&str>, name: &str, expect: Expect) {
    scenario_run(runner, spec, name, expect, &[]);
}

/// Runs one scenario as [`scenario_expecting`] does, with `extra` arguments for the runner
/// (`--force` for the extension scenarios, which `--spec-version` otherwise skips).
fn scenario_run(runner: &str, spec: Option<&str>, name: &str, expect: Expect, extra: &[&str]) {
    let Some(runner) = peer_bin(runner) else {
        return;
    };
    let client = example_bin("conformance");
    let client = client.to_str().expect("UTF-8 path");
    // The runner splits --command on spaces.
    assert!(
        !client.contains(char::is_whitespace),
        "the runner cannot take a client path with spaces: {client}"
    );
    let saved = (!matches!(expect, Expect::Unchecked)).then(|| TempDir::new("mcp-conformance"));
    let mut command = Command::new(&runner);
    command.arg("client");
    if let Some(spec) = spec {
        command.args(["--spec-version", spec]);
    }
    command.args(["--command", client, "--scenario", name]);
    command.args(extra);
    if let Some(dir) = &saved {
        command.arg("-o").arg(dir.path());
    }
    let done = {
        let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
        run_within(&mut command, RUN_LIMIT)
    };
    let output = strip_ansi(&format!("{}{}", done.stderr, done.stdout));
    let fail = |why: &str| -> ! {
        panic!(
            "conformance scenario {name} failed: {why}\n\
             ----- runner output -----\n{output}\n----- end of runner output -----"
        )
    };
    if let Some(notice) = skipped_notice(&output) {
        fail(&format!("the runner did not run it: {notice}"));
    }
    let checks = all_passed(&output);
    let overall = output.lines().any(|l| l.contains("OVERALL: PASSED"));
    if !(done.status.success() && checks.is_some() && overall) {
        fail(&format!(
            "{} (all checks passed: {}, OVERALL: PASSED: {overall})",
            done.status,
            checks.is_some()
        ));
    }
    let listed = check_lines(&output);
    if listed.is_empty() {
        fail("the runner listed no check");
    }
    if let Some(bad) = listed
        .iter()
        .find(|l| l.contains("] FAILURE") || l.contains("] WARNING"))
    {
        fail(&format!("a check did not succeed: {bad}"));
    }
    if let Some(dir) = &saved {
        let stderr = client_stderr(dir.path());
        let last = stderr
            .lines()
            .rfind(|l| l.starts_with("conformance client ("))
            .unwrap_or("");
        match expect {
            Expect::Completes if !last.ends_with(CLIENT_DONE) => fail(&format!(
                "the client did not complete its flow; its stderr:\n{stderr}"
            )),
            Expect::Refuses(why) if !last.contains(why) => fail(&format!(
                "the client did not refuse with \"{why}\"; its stderr:\n{stderr}"
            )),
            _ => {}
        }
        // Whatever happened, no secret of the flow is in the client's output.
        for secret in [
            "test-auth-code",
            "test-token",
            "cc-token",
            "test-secret",
            "Bearer ",
        ] {
            assert!(
                !stderr.contains(secret),
                "{name}: the client's stderr shows {secret:?}:\n{stderr}"
            );
        }
    }
    // Rephrased on purpose (see the module docs).
    eprintln!(
        "conformance scenario {name}: every one of its {} checks succeeded",
        checks.unwrap_or(0)
    );
}

/// The client's stderr as the runner saved it (`-o DIR` writes `DIR/<scenario>-<time>/stderr.txt`;
/// a scenario named `auth/x` is under `DIR/auth/`).
fn client_stderr(dir: &std::path::Path) -> String {
    fn find(dir: &std::path::Path, depth: u8, found: &mut Vec<String>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries.filter_map(|e| e.ok()) {
            let path = entry.path();
            if let Ok(text) = std::fs::read_to_string(path.join("stderr.txt")) {
                found.push(text);
            } else if path.is_dir() && depth > 0 {
                find(&path, depth - 1, found);
            }
        }
    }
    let mut found = Vec::new();
    find(dir, 1, &mut found);
    assert_eq!(
        found.len(),
        1,
        "expected one saved run under {}",
        dir.display()
    );
    found.remove(0)
}

/// A 2025-11-25 scenario of 0.1.16.
fn scenario(name: &str) {
    scenario_with("conformance", None, name);
}

/// A 2026-07-28 scenario of 0.2.0-alpha.12.
fn scenario_2026(name: &str) {
    scenario_with("conformance-next", Some(MODERN), name);
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
fn scenario_elicitation_sep1034_client_defaults() {
    scenario("elicitation-sep1034-client-defaults");
}

#[test]
fn scenario_2026_tools_call() {
    scenario_2026("tools_call");
}

#[test]
fn scenario_2026_request_metadata() {
    scenario_2026("request-metadata");
}

#[test]
fn scenario_2026_http_standard_headers() {
    scenario_2026("http-standard-headers");
}

#[test]
fn scenario_2026_http_custom_headers() {
    scenario_2026("http-custom-headers");
}

#[test]
fn scenario_2026_http_invalid_tool_headers() {
    scenario_2026("http-invalid-tool-headers");
}

#[test]
fn scenario_2026_json_schema_ref_no_deref() {
    scenario_2026("json-schema-ref-no-deref");
}

#[test]
fn scenario_2026_json_schema_2020_12_preservation() {
    scenario_2026("json-schema-2020-12-preservation");
}

#[test]
fn scenario_2026_sep_2322_client_request_state() {
    scenario_2026("sep-2322-client-request-state");
}

/// A scenario of an extension of 0.2.0-alpha.12 at 2026-07-28: `--force`, as `--spec-version`
/// skips extensions ("not on the spec timeline").
fn scenario_extension(name: &str, expect: Expect) {
    scenario_run(NEXT, Some(MODERN), name, expect, &["--force"]);
}

// The skills extension (SEP-2640), its four client scenarios. `no-prefetch`: the client lists
// the skills and reads no file of theirs. The three `verify-*` serve a SKILL.md that lies: the
// client loads the skill, refuses it for that lie, and reads none of its supporting files.
#[test]
fn scenario_sep_2640_client_no_prefetch() {
    scenario_extension("sep-2640-client-no-prefetch", Expect::Completes);
}

#[test]
fn scenario_sep_2640_client_verify_digest() {
    // Same length, other bytes: the digest differs.
    scenario_extension(
        "sep-2640-client-verify-digest",
        Expect::Refuses("SKILL.md: digest sha256:"),
    );
}

#[test]
fn scenario_sep_2640_client_verify_size() {
    scenario_extension(
        "sep-2640-client-verify-size",
        Expect::Refuses("bytes where the skill's entry says"),
    );
}

#[test]
fn scenario_sep_2640_client_verify_frontmatter() {
    // The file's digest and size are the entry's; only its frontmatter lies.
    scenario_extension(
        "sep-2640-client-verify-frontmatter",
        Expect::Refuses("frontmatter field \"description\" differs"),
    );
}

// Two of issue 22's authorization extensions, at the 2026-07-28 wire with `--force`:
// workload identity federation (the context's platform JWT is the RFC 7523 grant; the
// scenario checks its signature, audience and expiry, and that a failure is not retried), and
// enterprise-managed authorization (the ID token exchanged at the scenario's identity provider
// for an ID-JAG, RFC 8693, then presented with client_secret_basic at the authorization server).
#[test]
fn auth_extension_wif_jwt_bearer() {
    scenario_extension("auth/wif-jwt-bearer", Expect::Completes);
}

#[test]
fn auth_extension_enterprise_managed_authorization() {
    scenario_extension("auth/enterprise-managed-authorization", Expect::Completes);
}

// DPoP (SEP-1932, RFC 9449): the resource's first 401 challenges with the `DPoP` scheme only, so
// the client asks for a DPoP-bound token with a proof at the token endpoint (its default: DPoP
// when the resource asks), and sends each MCP request with `Authorization: DPoP` and a fresh
// proof bound to the token (`ath`, `cnf.jkt`); `-nonce`: both servers answer the first proof with
// `use_dpop_nonce` and a `DPoP-Nonce`, and the client retries once with it.
#[test]
fn auth_extension_dpop() {
    scenario_extension("auth/dpop", Expect::Completes);
}

#[test]
fn auth_extension_dpop_nonce() {
    scenario_extension("auth/dpop-nonce", Expect::Completes);
}

/// One test per OAuth scenario: `runner`, its `--spec-version` (none: the scenario's own), the
/// scenario, and what the client must do.
macro_rules! auth_scenarios {
    ($($test:ident: $runner:expr, $spec:expr, $name:expr, $expect:expr;)*) => {
        $(
            #[test]
            fn $test() {
                scenario_expecting($runner, $spec, $name, $expect);
            }
        )*
    };
}

const OLD: &str = "conformance";
const NEXT: &str = "conformance-next";
use Expect::{Completes, Refuses};

// 0.1.16: the 14 of its 2025-11-25 core suite, the two 2025-03-26 back-compat ones, its three
// draft ones and the two client credentials extensions (a secret; a private key). Headless: the
// example fetches the authorization URL and takes its `Location` (drivers/tests/peers/CONFORMANCE-AUTH.md).
auth_scenarios! {
    auth_metadata_default: OLD, None, "auth/metadata-default", Completes;
    auth_metadata_var1: OLD, None, "auth/metadata-var1", Completes;
    auth_metadata_var2: OLD, None, "auth/metadata-var2", Completes;
    auth_metadata_var3: OLD, None, "auth/metadata-var3", Completes;
    auth_basic_cimd: OLD, None, "auth/basic-cimd", Completes;
    auth_scope_from_www_authenticate: OLD, None, "auth/scope-from-www-authenticate", Completes;
    auth_scope_from_scopes_supported: OLD, None, "auth/scope-from-scopes-supported", Completes;
    auth_scope_omitted_when_undefined: OLD, None, "auth/scope-omitted-when-undefined", Completes;
    auth_scope_step_up: OLD, None, "auth/scope-step-up", Completes;
    // The server keeps asking for more scope; a fourth authorization would fail the scenario.
    auth_scope_retry_limit: OLD, None, "auth/scope-retry-limit", Refuses("after 3 authorizations");
    auth_token_endpoint_auth_basic: OLD, None, "auth/token-endpoint-auth-basic", Completes;
    auth_token_endpoint_auth_post: OLD, None, "auth/token-endpoint-auth-post", Completes;
    auth_token_endpoint_auth_none: OLD, None, "auth/token-endpoint-auth-none", Completes;
    auth_pre_registration: OLD, None, "auth/pre-registration", Completes;
    auth_2025_03_26_metadata_backcompat: OLD, None, "auth/2025-03-26-oauth-metadata-backcompat", Completes;
    auth_2025_03_26_endpoint_fallback: OLD, None, "auth/2025-03-26-oauth-endpoint-fallback", Completes;
    auth_resource_mismatch: OLD, None, "auth/resource-mismatch", Refuses("nothing was authorized");
    auth_offline_access_scope: OLD, None, "auth/offline-access-scope", Completes;
    auth_offline_access_not_supported: OLD, None, "auth/offline-access-not-supported", Completes;
    auth_client_credentials_basic: OLD, None, "auth/client-credentials-basic", Completes;
    // private_key_jwt: an ES256 assertion signed with the context's key.
    auth_client_credentials_jwt: OLD, None, "auth/client-credentials-jwt", Completes;
}

// 0.2.0-alpha.12 at 2026-07-28: the 25 auth scenarios of its requirement list, the client
// credentials extension (by name: `--spec-version` skips extensions) and the two 2025-03-26 ones
// at their own version.
auth_scenarios! {
    auth_2026_metadata_default: NEXT, Some(MODERN), "auth/metadata-default", Completes;
    auth_2026_metadata_var1: NEXT, Some(MODERN), "auth/metadata-var1", Completes;
    auth_2026_metadata_var2: NEXT, Some(MODERN), "auth/metadata-var2", Completes;
    auth_2026_metadata_var3: NEXT, Some(MODERN), "auth/metadata-var3", Completes;
    auth_2026_basic_cimd: NEXT, Some(MODERN), "auth/basic-cimd", Completes;
    auth_2026_scope_from_www_authenticate: NEXT, Some(MODERN), "auth/scope-from-www-authenticate", Completes;
    auth_2026_scope_from_scopes_supported: NEXT, Some(MODERN), "auth/scope-from-scopes-supported", Completes;
    auth_2026_scope_omitted_when_undefined: NEXT, Some(MODERN), "auth/scope-omitted-when-undefined", Completes;
    auth_2026_scope_step_up: NEXT, Some(MODERN), "auth/scope-step-up", Completes;
    auth_2026_scope_retry_limit: NEXT, Some(MODERN), "auth/scope-retry-limit", Refuses("after 3 authorizations");
    auth_2026_token_endpoint_auth_basic: NEXT, Some(MODERN), "auth/token-endpoint-auth-basic", Completes;
    auth_2026_token_endpoint_auth_post: NEXT, Some(MODERN), "auth/token-endpoint-auth-post", Completes;
    auth_2026_token_endpoint_auth_none: NEXT, Some(MODERN), "auth/token-endpoint-auth-none", Completes;
    auth_2026_pre_registration: NEXT, Some(MODERN), "auth/pre-registration", Completes;
    auth_2026_resource_mismatch: NEXT, Some(MODERN), "auth/resource-mismatch", Refuses("nothing was authorized");
    auth_2026_offline_access_scope: NEXT, Some(MODERN), "auth/offline-access-scope", Completes;
    auth_2026_offline_access_not_supported: NEXT, Some(MODERN), "auth/offline-access-not-supported", Completes;
    auth_2026_authorization_server_migration: NEXT, Some(MODERN), "auth/authorization-server-migration", Completes;
    auth_2026_iss_supported: NEXT, Some(MODERN), "auth/iss-supported", Completes;
    auth_2026_iss_not_advertised: NEXT, Some(MODERN), "auth/iss-not-advertised", Completes;
    auth_2026_iss_supported_missing: NEXT, Some(MODERN), "auth/iss-supported-missing", Refuses("carries no iss");
    auth_2026_iss_wrong_issuer: NEXT, Some(MODERN), "auth/iss-wrong-issuer", Refuses("(RFC 9207): ignored");
    auth_2026_iss_unexpected: NEXT, Some(MODERN), "auth/iss-unexpected", Refuses("(RFC 9207): ignored");
    // `http://host:port/` against the issuer `http://host:port`: no normalisation.
    auth_2026_iss_normalized: NEXT, Some(MODERN), "auth/iss-normalized", Refuses("(RFC 9207): ignored");
    auth_2026_metadata_issuer_mismatch: NEXT, Some(MODERN), "auth/metadata-issuer-mismatch", Refuses("names the issuer https://attacker.example.com");
    auth_next_client_credentials_basic: NEXT, None, "auth/client-credentials-basic", Completes;
    auth_next_client_credentials_jwt: NEXT, None, "auth/client-credentials-jwt", Completes;
    auth_next_2025_03_26_metadata_backcompat: NEXT, Some("2025-03-26"), "auth/2025-03-26-oauth-metadata-backcompat", Completes;
    auth_next_2025_03_26_endpoint_fallback: NEXT, Some("2025-03-26"), "auth/2025-03-26-oauth-endpoint-fallback", Completes;
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

    let run = "Checks:\n2026-12-01T11:38:40.742Z [tool-add-numbers ] SUCCESS Validates\n\
               2026-12-01T11:38:41.623Z [sep-2575-x] SKIPPED Client declares\n\nTest Results:\n";
    assert_eq!(check_lines(run).len(), 2);
    assert!(check_lines("Test Results:\nPassed: 0/0, 0 failed, 0 warnings\n").is_empty());
    let skipped = "SKIPPED: scenario 'initialize' is not applicable at spec version 2026-07-28 \
                   (introduced in 2025-06-18, removed in 2026-07-28). Use --force to run it anyway.\n";
    assert!(skipped_notice(skipped).is_some());
    assert!(skipped_notice(run).is_none());
}
