//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The `mcp-client` example binary. A plain `cargo test` builds examples before it runs tests; a
/// filtered run (`cargo test --test stdio`) does not, so it is built here once when missing.
pub fn serve_bin() -> PathBuf {
    static BUILD: std::sync::Once = std::sync::Once::new();
    let deps = std::env::current_exe().expect("test binary path");
    let bin = deps
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>")
        .join("examples/mcp-client");
    BUILD.call_once(|| {
        if !bin.exists() {
            let status = std::process::Command::new(env!("CARGO"))
                .args(["build", "--example", "mcp-client"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("run cargo");
            assert!(status.success(), "building the mcp-client example failed");
        }
    });
    assert!(bin.exists(), "{} is missing", bin.display());
    bin
}

/// Fields of /proc/PID/stat after the command name: state is [0], pgrp is [2].
fn stat_fields(pid: &str) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    Some(after.split_whitespace().map(str::to_owned).collect())
}

/// Whether process `pid` exists and is not a zombie.
pub fn pid_alive(pid: u32) -> bool {
    stat_fields(&pid.to_string()).is_some_and(|f| f[0] != "Z")
}

/// Whether any live (non-zombie) process belongs to process group `pgid`.
pub fn group_alive(pgid: u32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|pid| stat_fields(&pid))
        .any(|f| f[0] != "Z" && f[2] == pgid.to_string())
}

/// Polls `cond` until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether tests that need real peers must run (CI) rather than skip.
pub fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}
