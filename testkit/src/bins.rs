//! The binaries the tests and benchmarks run: the test kit's stdio server and the examples, built
//! (or brought up to date) by a nested `cargo build` when needed.

use mcp_connect::StdioConfig;
use std::path::PathBuf;

/// The test kit's stdio server, `mcp-testkit-serve` ([`crate::stdio_server`]). A plain `cargo test
/// --workspace` builds it before it runs tests; a filtered run (`cargo test --test stdio`) or
/// `cargo bench` does not, so it is built here when needed.
pub fn serve_bin() -> PathBuf {
    built(Target::Bin("mcp-testkit-serve"))
}

/// The floor the benchmarks hold the CLI against, `mcp-testkit-floor`: a minimal hand-written
/// blocking client (no library), taking the CLI's `--call NAME --args JSON --repeat N -- COMMAND`.
pub fn floor_bin() -> PathBuf {
    built(Target::Bin("mcp-testkit-floor"))
}

/// [`serve_bin`] in the legacy era (its default) with these behaviours (`--behave B,…`).
pub fn serve(behave: &[&str]) -> StdioConfig {
    with_behaviours(StdioConfig::new(serve_bin()), behave)
}

/// [`serve_bin`] in `era` (`legacy`, `modern`, `dual`) with these behaviours.
pub fn serve_in(era: &str, behave: &[&str]) -> StdioConfig {
    with_behaviours(StdioConfig::new(serve_bin()).args(["--era", era]), behave)
}

fn with_behaviours(config: StdioConfig, behave: &[&str]) -> StdioConfig {
    if behave.is_empty() {
        config
    } else {
        config.args(["--behave", &behave.join(",")])
    }
}

/// The binary of the root package's example `name` (`target/<profile>/examples/<name>`).
pub fn example_bin(name: &str) -> PathBuf {
    built(Target::Example(name))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target<'a> {
    /// A binary of this package.
    Bin(&'a str),
    /// An example of the root package.
    Example(&'a str),
}

/// The binary of `target`, beside the running test or bench binary's `deps/`
/// (`target/<profile>/`). `cargo build` (with `--release` under the release profile) runs once per
/// process for each: a no-op when the binary is fresh, and it keeps a filtered run (`cargo test
/// --test X`, which builds no examples) or `cargo bench` (which builds neither examples nor other
/// packages' binaries) from using a stale one. Run by hand (not by cargo, which sets `CARGO` at run
/// time: under `perf`, `strace`), an existing binary is used as it is and built only when missing.
fn built(target: Target) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let deps = std::env::current_exe().expect("test binary path");
    let profile_dir = deps
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    let (key, bin, selection) = match target {
        Target::Bin(name) => (
            format!("bin {name}"),
            profile_dir.join(name),
            ["-p", env!("CARGO_PKG_NAME"), "--bin", name],
        ),
        Target::Example(name) => (
            format!("example {name}"),
            profile_dir.join("examples").join(name),
            ["-p", "mcp-proto", "--example", name],
        ),
    };
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let by_cargo = std::env::var_os("CARGO").is_some();
    if !built.contains(&key) && (by_cargo || !bin.exists()) {
        let mut cargo = std::process::Command::new(env!("CARGO"));
        cargo
            .args(["build", "--quiet"])
            .args(selection)
            .current_dir(crate::repo_root());
        // What cargo set for the running test binary (CARGO_PKG_VERSION=0.1.0, …) must not reach
        // the nested build: build scripts watch some of it (curl-sys: rerun-if-env-changed=
        // CARGO_PKG_VERSION), so each `cargo test` and each nested build would rebuild libcurl
        // and everything above it for the other.
        for (key, _) in std::env::vars_os() {
            let key_text = key.to_string_lossy();
            if key_text.starts_with("CARGO_PKG_")
                || [
                    "CARGO_CRATE_NAME",
                    "CARGO_MANIFEST_DIR",
                    "CARGO_MANIFEST_PATH",
                ]
                .contains(&key_text.as_ref())
            {
                cargo.env_remove(&key);
            }
        }
        if profile_dir.file_name().is_some_and(|p| p == "release") {
            cargo.arg("--release");
        }
        let status = cargo.status().expect("run cargo");
        assert!(status.success(), "building the {key} failed");
        built.push(key);
    }
    assert!(bin.exists(), "{} is missing", bin.display());
    bin
}
