//! The `mcp-client` example as a user runs it: the offline demo, and the stdio options, output
//! formats and exit codes of its usage text. (`--url` is exercised in tests/peers_http.rs.)

use mcp_testkit::{example_bin, run_within, serve_bin, Finished};
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

fn cli(args: &[&str]) -> Finished {
    run_within(
        Command::new(example_bin("mcp-client")).args(args),
        Duration::from_secs(60),
    )
}

/// `mcp-client [OPTIONS] -- mcp-testkit-serve`
fn against_serve(options: &[&str]) -> Finished {
    let bin = serve_bin();
    let mut args: Vec<&str> = options.to_vec();
    args.extend(["--", bin.to_str().unwrap()]);
    cli(&args)
}

#[test]
fn the_offline_demo_lists_and_calls_its_tools() {
    let out = cli(&[]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stdout.starts_with("connected to mcp-client-serve"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("6 tools:"), "{}", out.stdout);
    assert!(out.stdout.contains("-> 42"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("correctable error: this tool always fails"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("[image: image/png, 70 bytes]"),
        "{}",
        out.stdout
    );
}

#[test]
fn list_prints_name_tab_first_description_line() {
    let out = against_serve(&[]);
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "echo\tEchoes its text back.");
    assert_eq!(lines.len(), 6);
}

#[test]
fn list_json_gives_each_tool_exactly_as_sent() {
    let out = against_serve(&["--json"]);
    assert!(out.status.success(), "{out:?}");
    let tools: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(tools.len(), 6);
    assert_eq!(tools[1]["name"], "add");
    assert_eq!(tools[1]["outputSchema"]["required"][0], "sum");
}

#[test]
fn call_prints_the_bridged_text_or_json() {
    let out = against_serve(&["--call", "add", "--args", r#"{"a":2,"b":3}"#]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "5\n");
    let out = against_serve(&["--call", "add", "--args", r#"{"a":2,"b":3}"#, "--json"]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"text": "5", "isError": false, "structuredContent": {"sum": 5}})
    );
}

#[test]
fn is_error_exits_2_with_the_text_on_stdout() {
    let out = against_serve(&["--call", "fail", "--args", r#"{"message":"bad b"}"#]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(out.stdout, "bad b\n");
}

#[test]
fn repeat_reports_calls_per_second_last_on_stderr() {
    let out = against_serve(&[
        "--call",
        "echo",
        "--args",
        r#"{"text":"r"}"#,
        "--repeat",
        "50",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "r\n");
    let last = out.stderr.lines().last().unwrap_or_default();
    let rate: f64 = last.strip_prefix("calls/s: ").expect(last).parse().unwrap();
    assert!(rate > 0.0);
}

#[test]
fn failures_exit_1_with_a_one_line_cause() {
    let bad_args = against_serve(&["--call", "echo", "--args", "[1]"]);
    assert_eq!(bad_args.status.code(), Some(1));
    assert_eq!(
        bad_args.stderr.trim(),
        "mcp-client: --args must be a JSON object"
    );
    let missing = cli(&["--", "/nonexistent/server"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(missing.stderr.lines().count(), 1, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("/nonexistent/server"),
        "{}",
        missing.stderr
    );
    let crash = against_serve(&["--call", "echo", "--timeout", "5"]);
    assert!(crash.status.success(), "{crash:?}");
    let bin = serve_bin();
    let crashing = cli(&[
        "--call",
        "echo",
        "--",
        bin.to_str().unwrap(),
        "--behave",
        "crash-on-call",
    ]);
    assert_eq!(crashing.status.code(), Some(1));
    let last = crashing.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("mcp-client: server exited (exit status: 3)"),
        "{}",
        crashing.stderr
    );
}

#[test]
fn timeout_exits_1() {
    let bin = serve_bin();
    let out = cli(&[
        "--call",
        "echo",
        "--timeout",
        "0.3",
        "--",
        bin.to_str().unwrap(),
        "--behave",
        "hang",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr
            .lines()
            .last()
            .unwrap_or_default()
            .contains("timed out"),
        "{}",
        out.stderr
    );
}

#[test]
fn timeout_extremes_are_refused_or_mean_none() {
    for tiny in ["1e-12", "0", "-1", "NaN"] {
        let out = against_serve(&["--call", "echo", "--timeout", tiny]);
        assert_eq!(out.status.code(), Some(1), "{tiny}: {out:?}");
        assert_eq!(
            out.stderr.trim(),
            "mcp-client: --timeout needs at least 0.001 seconds",
            "{tiny}"
        );
    }
    for huge in ["1e30", "inf"] {
        let out = against_serve(&[
            "--call",
            "echo",
            "--args",
            r#"{"text":"t"}"#,
            "--timeout",
            huge,
        ]);
        assert!(out.status.success(), "{huge}: {out:?}");
        assert_eq!(out.stdout, "t\n", "{huge}");
    }
}

#[test]
fn info_says_who_the_server_is_and_which_era_was_found() {
    // The serve example is a legacy server: the probe finds that.
    let out = against_serve(&["--info"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stdout.starts_with("server: mcp-client-serve"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("\nera: legacy\n"), "{}", out.stdout);
    assert!(
        out.stdout.contains("protocol version: 2025-"),
        "{}",
        out.stdout
    );
    let out = against_serve(&["--info", "--json", "--era", "legacy"]);
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_str(out.stdout.trim()).expect("one JSON object");
    assert_eq!(v["era"], "legacy");
    assert_eq!(v["serverInfo"]["name"], "mcp-client-serve");
    assert!(v["capabilities"]["tools"].is_object(), "{v}");
    assert!(
        v["supportedVersions"].is_null(),
        "only a modern server lists them: {v}"
    );
}

#[test]
fn era_modern_against_a_legacy_server_fails_clearly_and_a_bad_era_is_refused() {
    let out = against_serve(&["--era", "modern"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr.contains("server/discover failed") && out.stderr.contains("2026-07-28"),
        "{}",
        out.stderr
    );
    let out = against_serve(&["--era", "postmodern"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr.contains("auto, legacy or modern"),
        "{}",
        out.stderr
    );
    let out = against_serve(&["--info", "--call", "echo"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

#[test]
fn the_examples_serve_mode_is_the_well_behaved_server_in_each_era() {
    let me = example_bin("mcp-client");
    let me = me.to_str().unwrap();
    for era in ["legacy", "modern", "dual"] {
        let out = cli(&["--info", "--json", "--", me, "--serve", "--era", era]);
        assert!(out.status.success(), "{era}: {out:?}");
        let v: Value = serde_json::from_str(out.stdout.trim()).expect("one JSON object");
        let found = if era == "legacy" { "legacy" } else { "modern" };
        assert_eq!(v["era"], found, "{era}: {v}");
        assert_eq!(v["serverInfo"]["name"], "mcp-client-serve", "{era}: {v}");
    }
    // The misbehaviours are the test kit's binary's, not the example's.
    let out = cli(&["--call", "echo", "--", me, "--serve", "--behave", "hang"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stderr.contains("--serve [--era"), "{}", out.stderr);
}
