//! `mcp-client --config FILE [--server NAME]...` as a user runs it: the test kit's stdio server
//! configured twice under two names (its answers tagged with the name) and a broken server, in
//! each of the three formats; prefixed listing, routed calls, the `--server` filter, the
//! failures on stderr and the exit codes of the usage text, config errors with their position,
//! start-up progress on a terminal, tracing without secrets, and no server process left behind.
//! (The real peers through a config: drivers/tests/peers_config.rs.)

use mcp_testkit::{pid_alive, run_within, serve_bin, Finished, TempDir};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The `mcp-client` binary, built by cargo for this package's tests.
const CLI: &str = env!("CARGO_BIN_EXE_mcp-client");

/// A temp dir holding the configs, and `serve`, a link to the test kit's server: every server
/// started from these configs has the dir in its command line, so leftovers can be found.
struct Setup {
    dir: TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = TempDir::new("mcp-cli-config");
        std::os::unix::fs::symlink(serve_bin(), dir.path().join("serve")).expect("symlink serve");
        Setup { dir }
    }

    fn serve(&self) -> String {
        self.dir.path().join("serve").to_str().unwrap().to_owned()
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The same three servers — alpha (legacy era), beta (modern era), broken (no such
    /// command) — in each format.
    fn configs(&self) -> Vec<PathBuf> {
        let serve = json!(self.serve());
        vec![
            self.write(
                "claude_desktop_config.json",
                &format!(
                    r#"{{"mcpServers": {{
  "alpha": {{"command": {serve}, "env": {{"MCP_TESTKIT_TAG": "alpha"}}}},
  "beta": {{"command": {serve}, "args": ["--era", "modern"], "env": {{"MCP_TESTKIT_TAG": "beta"}}}},
  "broken": {{"command": "/nonexistent/cmd"}}
}}}}"#
                ),
            ),
            self.write(
                ".vscode/mcp.json",
                &format!(
                    r#"// VS Code
{{"servers": {{
  "alpha": {{"type": "stdio", "command": {serve}, "env": {{"MCP_TESTKIT_TAG": "alpha"}}}},
  "beta": {{"command": {serve}, "args": ["--era", "modern"], "env": {{"MCP_TESTKIT_TAG": "beta"}},}},
  "broken": {{"type": "stdio", "command": "/nonexistent/cmd"}},
}}}}"#
                ),
            ),
            self.write(
                "config.toml",
                &format!(
                    r#"[mcp_servers.alpha]
command = {serve}
env = {{ MCP_TESTKIT_TAG = "alpha" }}

[mcp_servers.beta]
command = {serve}
args = ["--era", "modern"]
env = {{ MCP_TESTKIT_TAG = "beta" }}

[mcp_servers.broken]
command = "/nonexistent/cmd"

[mcp_servers.gamma]
command = {serve}
env = {{ MCP_TESTKIT_TAG = "gamma" }}
enabled = false
"#
                ),
            ),
        ]
    }

    fn cli(&self, args: &[&str]) -> Finished {
        self.cli_env(args, &[])
    }

    fn cli_env(&self, args: &[&str], env: &[(&str, &str)]) -> Finished {
        let mut command = Command::new(CLI);
        command.args(args).env_remove("RUST_LOG");
        for (k, v) in env {
            command.env(k, v);
        }
        let out = run_within(&mut command, Duration::from_secs(60));
        // The CLI closed every server it started before it exited.
        let left = self.left_behind();
        assert!(left.is_empty(), "{args:?} left {left:?} running: {out:?}");
        out
    }

    /// Live processes whose command line names this dir.
    fn left_behind(&self) -> Vec<u32> {
        let me = self.dir.path().to_str().unwrap().as_bytes().to_vec();
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.windows(me.len()).any(|w| w == me.as_slice()))
            })
            .filter(|pid| pid_alive(*pid))
            .collect()
    }
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The tools a listing names: its lines but a description's further lines (indented or empty).
fn listed(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(char::is_whitespace))
        .collect()
}

/// The lines of stderr that name server `name` as failed.
fn reported<'a>(out: &'a Finished, name: &str) -> Vec<&'a str> {
    let prefix = format!("mcp-client: server {name:?} failed: ");
    out.stderr
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .collect()
}

#[test]
fn lists_both_servers_tools_prefixed_and_reports_the_broken_one_in_each_format() {
    let s = Setup::new();
    for file in s.configs() {
        let out = s.cli(&["--config", p(&file)]);
        assert_eq!(out.status.code(), Some(3), "{file:?}: {out:?}");
        let lines = listed(&out.stdout);
        assert_eq!(lines.len(), 12, "{file:?}: {}", out.stdout);
        assert_eq!(lines[0], "alpha__echo\tEchoes its text back.");
        assert!(
            lines.contains(&"beta__echo\tEchoes its text back."),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"beta__add\tAdds two integers; returns text and structured content.")
        );
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with("alpha__") || l.starts_with("beta__")),
            "{lines:?}"
        );
        let broken = reported(&out, "broken");
        assert_eq!(broken.len(), 1, "{}", out.stderr);
        assert!(broken[0].contains("/nonexistent/cmd"), "{}", broken[0]);
        assert!(reported(&out, "alpha").is_empty() && reported(&out, "beta").is_empty());
        // stderr is not a terminal here: no progress.
        assert!(!out.stderr.contains("starting"), "{}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
}

#[test]
fn a_server_that_exits_at_start_is_reported_with_its_stderr_tail() {
    let s = Setup::new();
    let file = s.write(
        "mcp.json",
        &format!(
            r#"{{"mcpServers": {{
  "alpha": {{"command": {serve}}},
  "quitter": {{"command": {serve}, "args": ["--behave", "exit-before-handshake"]}}
}}}}"#,
            serve = json!(s.serve())
        ),
    );
    let out = s.cli(&["--config", p(&file)]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(listed(&out.stdout).len(), 6, "{}", out.stdout);
    let quitter = reported(&out, "quitter");
    assert_eq!(quitter.len(), 1, "{}", out.stderr);
    assert!(
        quitter[0].contains("exiting before the handshake, on purpose"),
        "{}",
        quitter[0]
    );
}

#[test]
fn verbose_shows_each_servers_stderr_once_named() {
    let s = Setup::new();
    let file = s.write(
        "mcp.json",
        &format!(
            r#"{{"mcpServers": {{
  "beta": {{"command": {serve}, "args": ["--era", "modern"]}},
  "quitter": {{"command": {serve}, "args": ["--behave", "exit-before-handshake"]}}
}}}}"#,
            serve = json!(s.serve())
        ),
    );
    let count = |text: &str, what: &str| text.matches(what).count();
    let out = s.cli(&["--config", p(&file), "--verbose"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    // The quitter's stderr line, shown once, on a line of its own that names it; its failure
    // line says its exit status only.
    let said = "exiting before the handshake, on purpose";
    assert_eq!(count(&out.stderr, said), 1, "{}", out.stderr);
    assert_eq!(
        count(
            &out.stderr,
            &format!("server stderr quitter: serve: {said}")
        ),
        1,
        "{}",
        out.stderr
    );
    let quitter = reported(&out, "quitter");
    assert_eq!(
        quitter,
        ["mcp-client: server \"quitter\" failed: server exited (exit status: 4)"]
    );
    // The modern server logs each request it gets on stderr: each line once, named, the
    // second server's lines too.
    let got = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("server stderr beta: serve: got "))
        .count();
    assert!(got >= 1, "{}", out.stderr);
    assert_eq!(count(&out.stderr, "serve: got "), got, "{}", out.stderr);
    assert!(
        !out.stderr.contains("server stderr alpha"),
        "{}",
        out.stderr
    );

    // Without --verbose: the stderr is not shown, the failure line has its tail.
    let out = s.cli(&["--config", p(&file)]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(count(&out.stderr, said), 1, "{}", out.stderr);
    assert_eq!(count(&out.stderr, "server stderr"), 0, "{}", out.stderr);
    assert_eq!(count(&out.stderr, "serve: got "), 0, "{}", out.stderr);
    assert!(
        reported(&out, "quitter")[0].contains(said),
        "{}",
        out.stderr
    );
}

#[test]
fn calls_go_to_their_server_and_exit_codes_say_what_failed() {
    let s = Setup::new();
    let file = &s.configs()[0];
    let config = p(file);
    // A call names its server: only beta starts, so the broken one is not even tried, and the
    // exit code speaks of the call alone → 0.
    let out = s.cli(&[
        "--config",
        config,
        "--call",
        "beta__echo",
        "--args",
        r#"{"text":"hi"}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout, "hi\n[beta]\n");
    assert_eq!(reported(&out, "broken").len(), 0, "{}", out.stderr);
    // Named with --server too, broken is started, fails, and says so: the call worked → 3.
    let out = s.cli(&[
        "--config",
        config,
        "--server",
        "beta",
        "--server",
        "broken",
        "--call",
        "beta__echo",
        "--args",
        r#"{"text":"hi"}"#,
    ]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(out.stdout, "hi\n[beta]\n");
    assert_eq!(reported(&out, "broken").len(), 1, "{}", out.stderr);
    // Only alpha: nothing failed → 0.
    let out = s.cli(&[
        "--config",
        config,
        "--server",
        "alpha",
        "--call",
        "alpha__echo",
        "--args",
        r#"{"text":"hi"}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout, "hi\n[alpha]\n");
    assert_eq!(out.stderr, "");
    // --json, two servers named.
    let out = s.cli(&[
        "--config",
        config,
        "--server",
        "alpha",
        "--server",
        "beta",
        "--call",
        "beta__add",
        "--args",
        r#"{"a":2,"b":3}"#,
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        v,
        json!({"text": "5\n[beta]", "isError": false, "structuredContent": {"sum": 5}})
    );
    // The tool says isError → 2, also with a failed server around (2 wins over 3).
    let out = s.cli(&[
        "--config",
        config,
        "--server",
        "alpha",
        "--server",
        "broken",
        "--call",
        "alpha__fail",
        "--args",
        r#"{"message":"no good"}"#,
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.contains("no good"), "{}", out.stdout);
    // A tool of a server that fails to start: 1, saying why (it was the only one started).
    let out = s.cli(&["--config", config, "--call", "broken__echo"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(reported(&out, "broken").len(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("no server started (1 failed)"),
        "{}",
        out.stderr
    );
    // …and with the others started too, the call names the server that is not running.
    let out = s.cli(&[
        "--config",
        config,
        "--server",
        "alpha",
        "--server",
        "broken",
        "--call",
        "broken__echo",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains(r#"no tool named "broken__echo": server "broken" is not running"#),
        "{}",
        out.stderr
    );
    // The unprefixed name is no tool of the set: the names it may mean are offered.
    let out = s.cli(&["--config", config, "--server", "alpha", "--call", "echo"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains(r#"no tool named "echo"; did you mean "alpha__echo"?"#),
        "{}",
        out.stderr
    );
    // A typo too; and a name far from every one gets the hint to list them.
    let out = s.cli(&[
        "--config",
        config,
        "--server",
        "alpha",
        "--call",
        "alpha__ecoh",
    ]);
    assert!(
        out.stderr.contains(r#"did you mean "alpha__echo"?"#),
        "{}",
        out.stderr
    );
    let out = s.cli(&["--config", config, "--server", "alpha", "--call", "deploy"]);
    assert!(
        out.stderr
            .contains(r#"no tool named "deploy" (without --call, the tools are listed)"#),
        "{}",
        out.stderr
    );
    // --repeat: the rate last on stderr.
    let out = s.cli(&[
        "--config",
        config,
        "--server",
        "alpha",
        "--call",
        "alpha__echo",
        "--args",
        r#"{"text":"x"}"#,
        "--repeat",
        "5",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout, "x\n[alpha]\n");
    let last = out.stderr.lines().last().unwrap_or("");
    assert!(last.starts_with("calls/s: "), "{}", out.stderr);
}

/// `--call server__tool` starts that server only: the others' commands never run (each would
/// leave a mark), while a listing, or a name that says no server, starts them all.
#[test]
fn a_routed_call_starts_only_its_server() {
    let s = Setup::new();
    let serve = s.serve();
    let mark = |name: &str| s.dir.path().join(format!("started-{name}"));
    let entry = |name: &str| {
        json!({"command": "sh", "args": ["-c", format!("touch '{}'; exec '{serve}'", mark(name).display())],
               "env": {"MCP_TESTKIT_TAG": name}})
    };
    let config = s.write(
        "mcp.json",
        &json!({"mcpServers": {"one": entry("one"), "two": entry("two"), "three": entry("three")}})
            .to_string(),
    );
    let out = s.cli(&[
        "--config",
        p(&config),
        "--call",
        "two__echo",
        "--args",
        r#"{"text":"x"}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout, "x\n[two]\n");
    assert!(mark("two").exists());
    assert!(
        !mark("one").exists() && !mark("three").exists(),
        "others started: {out:?}"
    );
    // An unprefixed name cannot tell: all start (and the name is no tool of the set).
    let out = s.cli(&["--config", p(&config), "--call", "echo"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(mark("one").exists() && mark("three").exists(), "{out:?}");
}

/// server-filesystem from a config, started without directories: a call with `--roots` comes
/// after the server asked for them and applied them.
#[test]
fn a_configured_server_has_the_roots_before_the_call() {
    let Some(fs) = mcp_testkit::peer_bin("filesystem") else {
        return;
    };
    let s = Setup::new();
    let roots = TempDir::new("mcp-cli-config-roots");
    let resolved = std::fs::canonicalize(roots.path()).unwrap();
    let config = s.write(
        "mcp.json",
        &json!({"mcpServers": {"fs": {"command": fs}}}).to_string(),
    );
    let out = s.cli(&[
        "--config",
        p(&config),
        "--roots",
        p(roots.path()),
        "--call",
        "fs__list_allowed_directories",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        out.stdout.contains(resolved.to_str().unwrap()),
        "the call saw no roots: {out:?}"
    );
}

/// A Goose config: its built-in extension is no MCP server for us; a listing says it was
/// skipped, with its position, and a call does not.
#[test]
fn a_skipped_entry_is_said_when_listing() {
    let s = Setup::new();
    let file = s.write(
        "config.yaml",
        &format!(
            "extensions:\n  developer:\n    type: builtin\n    enabled: true\n  alpha:\n    type: stdio\n    cmd: {}\n    args: []\n    enabled: true\n    envs:\n      MCP_TESTKIT_TAG: alpha\n",
            s.serve()
        ),
    );
    let out = s.cli(&["--config", p(&file)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.contains("alpha__echo"), "{}", out.stdout);
    let said: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("skipped"))
        .collect();
    assert_eq!(said.len(), 1, "{}", out.stderr);
    assert!(
        said[0].starts_with(&format!(
            "mcp-client: {}:2:3: \"developer\" skipped: ",
            p(&file)
        )),
        "{}",
        said[0]
    );
    let out = s.cli(&[
        "--config",
        p(&file),
        "--call",
        "alpha__echo",
        "--args",
        r#"{"text":"y"}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!out.stderr.contains("skipped"), "{}", out.stderr);
}

#[test]
fn server_filter_picks_servers_and_an_unknown_name_lists_the_available_ones() {
    let s = Setup::new();
    let configs = s.configs();
    let out = s.cli(&["--config", p(&configs[0]), "--server", "beta"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let lines = listed(&out.stdout);
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert!(lines.iter().all(|l| l.starts_with("beta__")), "{lines:?}");
    assert_eq!(out.stderr, "", "broken is not started");

    let out = s.cli(&["--config", p(&configs[0]), "--server", "nope"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        format!(
            "mcp-client: --server \"nope\": no such server in {} (it has: alpha, beta, broken)\n",
            p(&configs[0])
        )
    );

    // Codex's `enabled = false`: not started, unless named.
    let toml = p(&configs[2]);
    let out = s.cli(&["--config", toml]);
    assert!(
        !out.stdout.contains("gamma__"),
        "a disabled server was started: {}",
        out.stdout
    );
    let out = s.cli(&[
        "--config",
        toml,
        "--server",
        "gamma",
        "--call",
        "gamma__echo",
        "--args",
        r#"{"text":"on"}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout, "on\n[gamma]\n");
}

#[test]
fn list_json_gives_each_tool_with_its_server_and_own_name() {
    let s = Setup::new();
    let out = s.cli(&[
        "--config",
        p(&s.configs()[2]),
        "--json",
        "--server",
        "alpha",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let tools: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(tools.len(), 6);
    let add = tools.iter().find(|t| t["name"] == "alpha__add").unwrap();
    assert_eq!(add["server"], "alpha");
    assert_eq!(add["tool"], "add");
    assert_eq!(add["inputSchema"]["type"], "object");
    assert!(add["description"]
        .as_str()
        .unwrap()
        .starts_with("Adds two integers"));
}

#[test]
fn when_no_server_starts_the_exit_is_1() {
    let s = Setup::new();
    let file = s.write(
        "mcp.json",
        r#"{"mcpServers": {"x": {"command": "/nonexistent/cmd"}, "y": {"command": "/nonexistent/other"}}}"#,
    );
    let out = s.cli(&["--config", p(&file)]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(out.stdout, "");
    assert_eq!(reported(&out, "x").len(), 1, "{}", out.stderr);
    assert_eq!(reported(&out, "y").len(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .ends_with("mcp-client: no server started (2 failed)\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_bad_config_exits_1_with_file_line_and_column() {
    let s = Setup::new();
    for (name, text, at, rest) in [
        (
            "mcp.json",
            "{\"mcpServers\": {\n  \"alpha\": {\"command\": 42}\n}}",
            ":2:24: ",
            "server \"alpha\": ",
        ),
        (
            "config.toml",
            "[mcp_servers.alpha]\nargs = [\"x\"]\n",
            ":1:14: ",
            "server \"alpha\": ",
        ),
        (
            "syntax.json",
            "{\"mcpServers\": {\n  \"alpha\": {\"command\": }\n}}",
            ":2:24: ",
            "invalid JSON",
        ),
    ] {
        let file = s.write(name, text);
        let out = s.cli(&["--config", p(&file)]);
        assert_eq!(out.status.code(), Some(1), "{name}: {out:?}");
        assert_eq!(out.stdout, "");
        let expected = format!("mcp-client: {}{at}{rest}", p(&file));
        assert!(
            out.stderr.starts_with(&expected),
            "{name}: want {expected:?}…, got {:?}",
            out.stderr
        );
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
    let missing = s.dir.path().join("missing.json");
    let out = s.cli(&["--config", p(&missing)]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr.starts_with(&format!(
            "mcp-client: {}: cannot read the file",
            p(&missing)
        )),
        "{}",
        out.stderr
    );
}

/// An entry whose variable is not set fails alone: the others list (exit 3) and its line says
/// where, which variable and how to give it; a `--server` naming another is no error at all; a
/// call to it fails with that line (exit 1).
#[test]
fn an_unset_variable_fails_its_server_only() {
    let s = Setup::new();
    let serve = json!(s.serve());
    let json = s.write(
        "mcp.json",
        &format!(
            r#"{{"mcpServers": {{
  "alpha": {{"command": {serve}, "env": {{"MCP_TESTKIT_TAG": "alpha"}}}},
  "needy": {{"command": {serve}, "env": {{"MCP_TESTKIT_TAG": "${{MCP_CLI_SURELY_UNSET}}"}}}},
  "beta": {{"command": {serve}, "env": {{"MCP_TESTKIT_TAG": "beta"}}}},
  "off": {{"command": "$${{x}}", "args": ["${{MCP_CLI_SURELY_UNSET}}"], "disabled": true}}
}}}}"#
        ),
    );
    let toml = s.write(
        "config.toml",
        &format!(
            "[mcp_servers.alpha]\ncommand = {serve}\nenv = {{ MCP_TESTKIT_TAG = \"alpha\" }}\n\n\
             [mcp_servers.needy]\ncommand = {serve}\nenv = {{ MCP_TESTKIT_TAG = \"${{MCP_CLI_SURELY_UNSET}}\" }}\n\n\
             [mcp_servers.beta]\ncommand = {serve}\nenv = {{ MCP_TESTKIT_TAG = \"beta\" }}\n"
        ),
    );
    for file in [&json, &toml] {
        // Where the variable is: its line and column (1-based, in characters).
        let text = std::fs::read_to_string(file).unwrap();
        let before = &text[..text.find("${MCP_CLI_SURELY_UNSET}").unwrap()];
        let line = before.lines().count();
        let column = before.lines().last().unwrap().chars().count() + 1;
        let at = format!(":{line}:{column}: ");
        assert!(line == 3 || line == 7, "{at}");
        let at = at.as_str();
        let out = s.cli(&["--config", p(file)]);
        assert_eq!(out.status.code(), Some(3), "{out:?}");
        let lines = listed(&out.stdout);
        assert_eq!(lines.len(), 12, "{}", out.stdout);
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with("alpha__") || l.starts_with("beta__")),
            "{lines:?}"
        );
        // One line, for it alone (the disabled one is not started, so not said).
        assert_eq!(
            out.stderr,
            format!(
                "mcp-client: server \"needy\" failed: {}{at}environment variable \
                 \"MCP_CLI_SURELY_UNSET\" is not set; set MCP_CLI_SURELY_UNSET in the environment\n",
                p(file)
            )
        );
        // Naming a good one: no error at all.
        let out = s.cli(&["--config", p(file), "--server", "beta"]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_eq!(out.stderr, "");
        assert_eq!(listed(&out.stdout).len(), 6, "{}", out.stdout);
        let out = s.cli(&[
            "--config",
            p(file),
            "--call",
            "alpha__echo",
            "--args",
            r#"{"text":"hi"}"#,
        ]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_eq!((&*out.stdout, &*out.stderr), ("hi\n[alpha]\n", ""));
        // A call to it fails with its line, nothing started.
        let out = s.cli(&["--config", p(file), "--call", "needy__echo"]);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert_eq!(out.stdout, "");
        let needy = reported(&out, "needy");
        assert_eq!(needy.len(), 1, "{}", out.stderr);
        assert!(needy[0].contains(at), "{}", needy[0]);
        // Set, it starts.
        let out = s.cli_env(
            &[
                "--config",
                p(file),
                "--call",
                "needy__echo",
                "--args",
                r#"{"text":"hi"}"#,
            ],
            &[("MCP_CLI_SURELY_UNSET", "set")],
        );
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_eq!(out.stdout, "hi\n[set]\n");
    }
    // Named with --server, the disabled one is said too.
    let out = s.cli(&["--config", p(&json), "--server", "off", "--server", "alpha"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(reported(&out, "off").len(), 1, "{}", out.stderr);
}

#[test]
fn config_options_that_do_not_go_together_are_refused() {
    let s = Setup::new();
    let file = s.configs().remove(0);
    let config = p(&file);
    for (args, message) in [
        (
            vec!["--server", "alpha", "--", "cmd"],
            "--server needs --config",
        ),
        (
            vec!["--config", config, "--url", "http://127.0.0.1:9/mcp"],
            "give one of -- COMMAND, --url URL or --config FILE",
        ),
        (
            vec!["--config", config, "--", "cmd"],
            "give one of -- COMMAND, --url URL or --config FILE",
        ),
        (
            vec!["--config", config, "--info"],
            "--info works on one server",
        ),
        (
            vec!["--config", config, "--header", "A: b"],
            "--header needs --url",
        ),
        (
            vec!["--config", config, "--call", "alpha__echo", "--args", "[1]"],
            "--args must be a JSON object",
        ),
    ] {
        let out = s.cli(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert!(out.stderr.contains(message), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn start_up_progress_is_shown_on_a_terminal() {
    // `script` gives the command a terminal (util-linux); stdout and stderr both go to it.
    let have_script = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_script {
        eprintln!("skipped: no `script` (util-linux) to run the CLI on a terminal");
        return;
    }
    let s = Setup::new();
    let file = s.configs().remove(0);
    let command = format!("{CLI} --config {}", p(&file));
    let out = s.cli_script(&command);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let text = out.stdout.replace('\r', "");
    let lines: Vec<&str> = text.lines().collect();
    let at = |line: &str| {
        lines
            .iter()
            .position(|l| *l == line)
            .unwrap_or_else(|| panic!("no line {line:?} in {text}"))
    };
    let starting = at("starting 3 servers…");
    // Each server's line as its start-up ends (in whatever order they finish).
    let starts_with = |prefix: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line starting {prefix:?} in {text}"))
    };
    let alpha = starts_with("ok alpha (6 tools, ");
    let beta = starts_with("ok beta (6 tools, ");
    let done = starts_with("started 2 of 3 servers in ");
    assert!(
        starting < alpha.min(beta) && alpha.max(beta) < done,
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("mcp-client: server \"broken\" failed: ")),
        "{text}"
    );
    assert!(lines[done + 1..].contains(&"alpha__echo\tEchoes its text back."));
}

/// On a terminal, an entry whose variable is not set is said failed before the others start,
/// and the start-up's two lines count the same servers: those started.
#[test]
fn start_up_progress_counts_the_servers_it_starts() {
    let have_script = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_script {
        eprintln!("skipped: no `script` (util-linux) to run the CLI on a terminal");
        return;
    }
    let s = Setup::new();
    let file = s.write(
        "mcp.json",
        &format!(
            r#"{{"mcpServers": {{
  "alpha": {{"command": {serve}}},
  "needy": {{"command": {serve}, "env": {{"MCP_TESTKIT_TAG": "${{MCP_CLI_SURELY_UNSET}}"}}}}
}}}}"#,
            serve = json!(s.serve())
        ),
    );
    let out = s.cli_script(&format!("{CLI} --config {}", p(&file)));
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let text = out.stdout.replace('\r', "");
    let lines: Vec<&str> = text.lines().collect();
    let at = |prefix: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line starting {prefix:?} in {text}"))
    };
    let needy = at("mcp-client: server \"needy\" failed: ");
    let starting = at("starting 1 server…");
    let done = at("started 1 of 1 server in ");
    assert!(needy < starting && starting < done, "{text}");
}

impl Setup {
    fn cli_script(&self, command: &str) -> Finished {
        let out = run_within(
            Command::new("script")
                .args(["-qec", command, "/dev/null"])
                .env_remove("RUST_LOG"),
            Duration::from_secs(60),
        );
        let left = self.left_behind();
        assert!(left.is_empty(), "left {left:?} running: {out:?}");
        out
    }
}

#[test]
fn verbose_traces_each_servers_requests_and_shows_no_secret() {
    use mcp_testkit::http_server::{self, Behaviour};
    let http = http_server::start(Behaviour::default()).unwrap();
    let s = Setup::new();
    let file = s.write(
        "mcp.json",
        &format!(
            r#"{{"mcpServers": {{
  "alpha": {{"command": {serve}, "env": {{"MCP_TESTKIT_TAG": "alpha", "API_KEY": "s3cr3t-env"}}}},
  "web": {{"type": "http", "url": {url}, "headers": {{"Authorization": "Bearer ${{MCP_CLI_TOKEN}}"}}}}
}}}}"#,
            serve = json!(s.serve()),
            url = json!(http.url),
        ),
    );
    let env = [("MCP_CLI_TOKEN", "s3cr3t-token")];
    let out = s.cli_env(
        &[
            "--config",
            p(&file),
            "--server",
            "alpha",
            "--server",
            "web",
            "--verbose",
            "--call",
            "web__echo",
            "--args",
            r#"{"text":"s3cr3t-arg"}"#,
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout, "s3cr3t-arg\n");
    // The header was sent (so the token was there to leak)…
    assert!(
        http.log()
            .iter()
            .any(|r| r.header("authorization") == Some("Bearer s3cr3t-token")),
        "the server got no Authorization header"
    );
    // …and each server's requests are traced, without it or any argument value.
    for needle in [
        r#"mcp.server="alpha""#,
        r#"mcp.server="web""#,
        r#"mcp.method.name="tools/call""#,
        r#"gen_ai.tool.name="echo""#,
        r#"outcome="ok""#,
    ] {
        assert!(out.stderr.contains(needle), "{needle}: {}", out.stderr);
    }
    assert!(!out.stderr.contains("s3cr3t"), "{}", out.stderr);
    assert!(
        !out.stderr.contains('\x1b'),
        "colours on a pipe: {}",
        out.stderr
    );

    // RUST_LOG alone turns it on too; without either, nothing is traced.
    let out = s.cli_env(
        &["--config", p(&file), "--server", "alpha"],
        &[("MCP_CLI_TOKEN", "x"), ("RUST_LOG", "mcp_connect=info")],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        out.stderr.contains(r#"mcp.method.name="tools/list""#),
        "{}",
        out.stderr
    );
    let out = s.cli_env(&["--config", p(&file), "--server", "alpha"], &env);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stderr, "");
}

#[test]
fn vs_code_inputs_come_from_input_flags_and_are_never_prompted_for() {
    let s = Setup::new();
    let serve = json!(s.serve());
    let file = s.write(
        "ws/.vscode/mcp.json",
        &format!(
            r#"{{"inputs": [{{"type": "promptString", "id": "tag", "description": "The tag"}}],
"servers": {{"tagged": {{"command": {serve}, "env": {{"MCP_TESTKIT_TAG": "${{input:tag}}"}}}}}}}}"#
        ),
    );
    let call = |extra: &[&str]| {
        let mut args = vec!["--config", p(&file)];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--call", "tagged__echo", "--args", r#"{"text":"hi"}"#]);
        s.cli(&args)
    };
    let out = call(&["--input", "tag=from-flag"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout.trim_end(), "hi\n[from-flag]");
    // Not given: an error naming it, with where it is used; nothing started, nothing asked.
    let out = call(&[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let tagged = reported(&out, "tagged");
    assert_eq!(tagged.len(), 1, "{}", out.stderr);
    assert!(
        tagged[0].contains(r#"input "tag" ("The tag") is not given"#),
        "{}",
        tagged[0]
    );
    assert!(tagged[0].contains("mcp.json:2:"), "{}", tagged[0]);
    assert!(
        tagged[0].ends_with("; give it with --input tag=VALUE"),
        "{}",
        tagged[0]
    );
    assert!(!out.stderr.contains("::"), "{}", out.stderr);
    // A malformed flag is refused before the file is read.
    let out = call(&["--input", "no-equals-sign"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr.contains("--input takes ID=VALUE"),
        "{}",
        out.stderr
    );
}

/// The control characters of `text` a terminal would obey: C0 but newline and tab, DEL, C1.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| matches!(c, '\0'..='\x08' | '\x0b'..='\x1f' | '\x7f'..='\u{9f}'))
        .collect()
}

#[test]
fn a_servers_control_characters_are_shown_escaped_with_config_too() {
    let s = Setup::new();
    // A server whose every text holds terminal escapes, and one that writes some on stderr
    // and exits at start.
    let quitter = r#"printf '\033]0;PWNED-TITLE\007 \033[2K gone\n' >&2; exit 4"#;
    let file = s.write(
        "mcp.json",
        &json!({"mcpServers": {
            "hostile": {"command": s.serve(), "args": ["--behave", "hostile-text"]},
            "quitter": {"command": "sh", "args": ["-c", quitter, s.serve()]}
        }})
        .to_string(),
    );
    let clean = |out: &Finished| {
        for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let raw = raw_controls(text);
            assert!(raw.is_empty(), "raw {raw:?} on {name}: {out:?}");
        }
    };
    let list = s.cli(&["--config", p(&file), "--verbose"]);
    assert_eq!(list.status.code(), Some(3), "{list:?}");
    clean(&list);
    let failed = reported(&list, "quitter");
    assert_eq!(failed.len(), 1, "{list:?}");
    // With --verbose its stderr is forwarded as it came, named and escaped.
    assert!(
        list.stderr
            .lines()
            .any(|l| l == r"server stderr quitter: \x1b]0;PWNED-TITLE\x07 \x1b[2K gone"),
        "{}",
        list.stderr
    );
    assert!(
        list.stdout
            .contains(r"hostile__echo	\x1b]8;;https://evil.example/steal\x1b\"),
        "{}",
        list.stdout
    );
    // Both started (a routed call alone would start only hostile): the quitter's report too.
    for tool in ["hostile__echo", "hostile__fail"] {
        let out = s.cli(&[
            "--config",
            p(&file),
            "--server",
            "hostile",
            "--server",
            "quitter",
            "--call",
            tool,
            "--verbose",
        ]);
        clean(&out);
        let shown = format!("{}{}", out.stdout, out.stderr);
        assert!(shown.contains(r"\x1b]0;PWNED-TITLE\x07"), "{out:?}");
    }
}
