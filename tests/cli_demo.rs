//! The root package's `mcp-client` example as a user runs it (`cargo run --example mcp-client`):
//! its offline demo, and its `--serve` mode (the demo's server, the test kit's) in each era. All
//! else the example hands to the `mcp-client` command, whose tests are drivers/cli/tests/.

use mcp_testkit::{example_bin, run_within, Finished};
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

fn cli(args: &[&str]) -> Finished {
    run_within(
        Command::new(example_bin("mcp-client")).args(args),
        Duration::from_secs(60),
    )
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

#[test]
fn the_examples_usage_and_help_name_the_demo_and_the_installed_commands_do_not() {
    let example = cli(&["--help"]);
    assert!(example.status.success(), "{example:?}");
    assert!(
        example.stdout.contains("mcp-client --serve [--era E]"),
        "{}",
        example.stdout
    );
    let example = cli(&["--bogus"]);
    assert_eq!(example.status.code(), Some(1), "{example:?}");
    assert!(
        example
            .stderr
            .contains("usage: mcp-client [--serve] [--info"),
        "{}",
        example.stderr
    );
    let installed = |args: &[&str]| {
        run_within(
            Command::new(mcp_testkit::cli_bin()).args(args),
            Duration::from_secs(60),
        )
    };
    let help = installed(&["--help"]);
    assert!(help.status.success(), "{help:?}");
    for demo in ["--serve [", "offline demo"] {
        assert!(!help.stdout.contains(demo), "{demo}: {}", help.stdout);
    }
    // The rest of the help is the example's, after its demo lines.
    assert!(example_help_ends_with(&help.stdout), "{}", help.stdout);
    let usage = installed(&["--bogus"]);
    assert_eq!(usage.status.code(), Some(1), "{usage:?}");
    assert!(
        usage.stderr.contains("usage: mcp-client [--info"),
        "{}",
        usage.stderr
    );
    // Neither the demo (no arguments) nor `--serve` is the installed command's.
    for args in [&[][..], &["--serve"]] {
        let out = installed(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
    }
}

/// Whether the example's `--help` is its two demo lines, then `installed_help`.
fn example_help_ends_with(installed_help: &str) -> bool {
    let example = cli(&["--help"]).stdout;
    example.lines().count() == installed_help.lines().count() + 2
        && example.ends_with(installed_help)
}
