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
