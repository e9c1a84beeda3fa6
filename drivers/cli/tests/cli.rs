//! The `mcp-client` command as a user runs it (the binary `cargo install` gives): the stdio
//! options, output formats and exit codes of its usage text; with `--url`, its authorization
//! (OAuth) against the conformance suite's authorization server, the browser played by a fake
//! `xdg-open`. (`--url` itself is exercised in drivers/tests/peers_http.rs; the root example's offline
//! demo and `--serve` in tests/cli_demo.rs.)

use mcp_testkit::{peer_bin, run_within, serve_bin, Finished, HttpPeer, TempDir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The `mcp-client` binary, built by cargo for this package's tests.
const CLI: &str = env!("CARGO_BIN_EXE_mcp-client");

fn cli(args: &[&str]) -> Finished {
    run_within(Command::new(CLI).args(args), Duration::from_secs(60))
}

/// `mcp-client [OPTIONS] -- mcp-testkit-serve`
fn against_serve(options: &[&str]) -> Finished {
    let bin = serve_bin();
    let mut args: Vec<&str> = options.to_vec();
    args.extend(["--", bin.to_str().unwrap()]);
    cli(&args)
}

#[test]
fn list_prints_name_tab_description_with_further_lines_indented() {
    let out = against_serve(&[]);
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "echo\tEchoes its text back.");
    // Under the first line: as many spaces as the name has characters, then a tab.
    assert_eq!(lines[1], "    \tSecond line of the description.");
    assert_eq!(
        lines[2],
        "add\tAdds two integers; returns text and structured content."
    );
    assert_eq!(lines.len(), 7);
}

/// A description of several paragraphs (a Python docstring) reads as one block under the
/// tool's name: its shared indentation gone, a nested list's kept, one empty line between
/// paragraphs, a long line whole, a terminal escape shown escaped.
#[test]
fn a_multi_line_description_stays_readable() {
    let bin = serve_bin();
    let out = cli(&["--", bin.to_str().unwrap(), "--behave", "long-description"]);
    assert!(out.status.success(), "{out:?}");
    let digits = "0123456789".repeat(30);
    let indent = "    \t";
    let expected = format!(
        "echo\tEchoes its text back.\n\
         \n\
         {indent}Args:\n\
         {indent}    text: what to echo\n\
         {indent}    tag: an optional \\x1b[31mtag\n\
         {indent}      - kept as given\n\
         \n\
         {indent}Returns the text, then the tag.\n\
         {indent}{digits}\n\
         add\tAdds two integers; returns text and structured content.\n"
    );
    assert!(
        out.stdout.starts_with(&expected),
        "want {expected}\ngot {}",
        out.stdout
    );
    assert!(raw_controls(&out.stdout).is_empty(), "{}", out.stdout);
    // Five more tools, one line each.
    assert_eq!(
        out.stdout[expected.len()..].lines().count(),
        4,
        "{}",
        out.stdout
    );
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
    // `calls/s: R (client CPU C µs/call)`, where the system tells the CPU time (Linux).
    let last = out.stderr.lines().last().unwrap_or_default();
    let rest = last.strip_prefix("calls/s: ").expect(last);
    let (rate, cpu) = rest.split_once(" (client CPU ").unwrap_or((rest, ""));
    let rate: f64 = rate.parse().expect(last);
    assert!(rate > 0.0, "{last}");
    if cfg!(target_os = "linux") {
        let cpu: f64 = cpu
            .strip_suffix(" µs/call)")
            .expect(last)
            .parse()
            .expect(last);
        assert!(cpu > 0.0, "{last}");
    }
}

/// `--args` is checked before the server starts: a typo costs no start-up (the server's command
/// would leave a mark).
#[test]
fn bad_args_are_refused_before_the_server_starts() {
    let dir = TempDir::new("mcp-cli-args");
    let mark = dir.path().join("started");
    let script = format!(
        "touch '{}'; exec '{}'",
        mark.display(),
        serve_bin().display()
    );
    for args in ["{bad", "[1]"] {
        let out = cli(&["--call", "echo", "--args", args, "--", "sh", "-c", &script]);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(
            out.stderr.starts_with("mcp-client: --args "),
            "{}",
            out.stderr
        );
        assert!(!mark.exists(), "the server was started for {args:?}");
    }
    // The same command with good arguments does start it (the mark can appear).
    let out = cli(&[
        "--call",
        "echo",
        "--args",
        r#"{"text":"ok"}"#,
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(mark.exists());
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

/// A server that cannot be reached is said in words: no curl code (`[7] Could not connect to
/// server`), no library type name; the system's reason for a refused connection.
#[test]
fn an_unreachable_url_is_said_in_words() {
    // A port nothing listens on: one just bound and let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let out = cli(&["--url", &url]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr,
        format!(
            "mcp-client: transport error: POST {url}: could not connect to 127.0.0.1:{port}: \
             connection refused\n"
        )
    );
    // `.invalid` never resolves (RFC 2606 § 2).
    let out = cli(&["--url", "http://nonexistent.invalid/mcp"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr,
        "mcp-client: transport error: POST http://nonexistent.invalid/mcp: could not resolve \
         the host name nonexistent.invalid\n"
    );
}

// ---- Races a one-shot call must win ----

#[test]
fn roots_reach_server_filesystem_before_the_call() {
    // Started without directories, server-filesystem asks for the roots once initialized, and
    // until it has applied them it allows none: the call must come after.
    let Some(bin) = peer_bin("filesystem") else {
        return;
    };
    let dir = TempDir::new("mcp-cli-fs-roots");
    // The server shows the directory as it resolves it (symlinks followed).
    let resolved = std::fs::canonicalize(dir.path()).unwrap();
    let out = cli(&[
        "--roots",
        dir.path().to_str().unwrap(),
        "--call",
        "list_allowed_directories",
        "--",
        bin.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stdout.contains(resolved.to_str().unwrap()),
        "the call saw no roots: {out:?}"
    );
}

#[test]
fn a_server_that_never_asks_for_roots_is_still_called() {
    // The wait for the server's roots/list is bounded: the call is made after it.
    let dir = TempDir::new("mcp-cli-roots-unasked");
    let out = against_serve(&[
        "--roots",
        dir.path().to_str().unwrap(),
        "--call",
        "echo",
        "--args",
        r#"{"text":"called"}"#,
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "called\n");
}

#[test]
fn progress_keeps_a_call_alive_past_its_timeout() {
    // Progress every 100 ms for 2.5 s, with a 1 s timeout: each report restarts it.
    let out = against_behaving(
        &[
            "--call",
            "slow",
            "--args",
            r#"{"ms":2500}"#,
            "--timeout",
            "1",
        ],
        "progress-ticks",
    );
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.starts_with("done after "), "{out:?}");
}

#[test]
fn max_time_ends_a_call_that_keeps_reporting_progress() {
    let out = against_behaving(
        &[
            "--call",
            "slow",
            "--args",
            r#"{"ms":4000}"#,
            "--timeout",
            "1",
            "--max-time",
            "1.5",
        ],
        "progress-ticks",
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr.lines().last().unwrap_or_default(),
        r#"mcp-client: tools/call "slow" exceeded --max-time 1.5 s"#,
        "{out:?}"
    );
    // --max-time is about a call.
    let out = against_serve(&["--max-time", "1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(out.stderr.trim(), "mcp-client: --max-time needs --call");
}

#[test]
fn server_everythings_long_operation_outlives_a_short_timeout_by_its_progress() {
    let Some(bin) = peer_bin("everything") else {
        return;
    };
    // 3 s in 10 steps, a progress report each 0.3 s; the timeout is 1.5 s.
    let out = cli(&[
        "--call",
        "trigger-long-running-operation",
        "--args",
        r#"{"duration":3,"steps":10}"#,
        "--timeout",
        "1.5",
        "--",
        bin.to_str().unwrap(),
        "stdio",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stdout
            .starts_with("Long running operation completed. Duration: 3 seconds, Steps: 10."),
        "{out:?}"
    );
}

#[test]
fn a_tool_that_requires_a_task_runs_as_one_its_status_shown() {
    // server-everything's simulate-research-query has `taskSupport: "required"`: called plainly
    // it is refused (-32601); the command runs it as a task and polls it to its result.
    let Some(bin) = peer_bin("everything") else {
        return;
    };
    let out = cli(&[
        "--call",
        "simulate-research-query",
        "--args",
        r#"{"topic":"rust"}"#,
        "--",
        bin.to_str().unwrap(),
        "stdio",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.contains("simulated research report"), "{out:?}");
    assert!(
        out.stderr.contains("progress: "),
        "no status shown: {out:?}"
    );
}

#[test]
fn a_task_that_never_ends_is_bounded_by_max_time() {
    let out = against_behaving(&["--call", "research", "--max-time", "1"], "tasks-forever");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr.lines().last().unwrap_or_default(),
        r#"mcp-client: tools/call "research" (a task) exceeded --max-time 1 s"#,
        "{out:?}"
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
    // The limit that was hit, in the options' words.
    assert_eq!(
        out.stderr.lines().last().unwrap_or_default(),
        r#"mcp-client: tools/call "echo" timed out: no answer or progress for 0.3 s (--timeout)"#,
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

// Authorization (OAuth) with --url.

/// A scenario of the conformance suite (0.1.16) served with no client: `conformance client
/// --scenario NAME` without `--command` starts its MCP server and authorization server, prints
/// `Server URL: …` and serves until stopped, so several runs of the CLI meet the same servers.
/// `None` when the suite is not installed (skipped; a failure under CI).
struct Scenario {
    peer: HttpPeer,
    /// The MCP endpoint, as the scenario's documents name it (`http://localhost:PORT/mcp`).
    url: String,
}

impl Scenario {
    fn start(name: &str) -> Option<Scenario> {
        Scenario::start_with("conformance", name, &[])
    }

    /// An extension scenario of the 2026-07-28 suite (`conformance-next`, `--force`).
    fn start_extension(name: &str) -> Option<Scenario> {
        Scenario::start_with(
            "conformance-next",
            name,
            &["--spec-version", "2026-07-28", "--force"],
        )
    }

    fn start_with(runner: &str, name: &str, extra: &[&str]) -> Option<Scenario> {
        let bin = peer_bin(runner)?;
        let mut command = Command::new(bin);
        command.args(["client", "--scenario", name]).args(extra);
        // The runner's preload binds 127.0.0.1 (HttpPeer insists on that); its documents say
        // `localhost`, and the resource check compares origins as sent, so the CLI is given that.
        let peer = HttpPeer::start(command, |line| {
            let url = line.strip_prefix("Server URL: ")?.trim();
            Some(url.replace("//localhost:", "//127.0.0.1:"))
        });
        let url = peer.url.replace("//127.0.0.1:", "//localhost:");
        Some(Scenario { peer, url })
    }

    /// The scenario's authorization server, as its protected resource metadata names it: what
    /// a person would give as `--client-issuer` for a client registered there.
    fn issuer(&self) -> String {
        use isahc::ReadResponseExt;
        let prm = self
            .url
            .replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
            .replace("//localhost:", "//127.0.0.1:");
        let mut response = isahc::get(prm.as_str()).unwrap();
        let doc: Value = serde_json::from_slice(&response.bytes().unwrap()).unwrap();
        doc["authorization_servers"][0]
            .as_str()
            .unwrap_or_else(|| panic!("{prm}: {doc}"))
            .to_owned()
    }
}

/// The person, for the CLI's browser flow: a directory put first on `PATH` with an `xdg-open`
/// that notes each call, then follows the authorization URL (the suite's authorization endpoint
/// answers at once with a 302 to the redirect URI) to the CLI's loopback listener — the real
/// RFC 8252 flow, end to end. Also the runs' home: `XDG_CONFIG_HOME` is under it, so that the
/// default store is never the user's.
struct Person {
    dir: TempDir,
}

impl Person {
    fn new() -> Person {
        let dir = TempDir::new("mcp-cli-auth");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let opened = dir.path().join("opened");
        let script = format!(
            "#!/bin/sh\necho \"$1\" >> '{}'\n\
             if command -v curl >/dev/null; then exec curl -s -o /dev/null -L \"$1\"; fi\n\
             exec python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1])' \"$1\"\n",
            opened.display()
        );
        let xdg_open = bin.join("xdg-open");
        std::fs::write(&xdg_open, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&xdg_open, std::fs::Permissions::from_mode(0o755)).unwrap();
        Person { dir }
    }

    /// The CLI with these arguments, the fake browser first on `PATH`, the config home here.
    fn cli(&self, args: &[&str], env: &[(&str, &str)]) -> Finished {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![self.dir.path().join("bin")];
        dirs.extend(std::env::split_paths(&path));
        let mut command = Command::new(CLI);
        command
            .args(args)
            .env("PATH", std::env::join_paths(dirs).unwrap())
            .env("XDG_CONFIG_HOME", self.config_home())
            .envs(env.iter().copied());
        run_within(&mut command, Duration::from_secs(60))
    }

    fn config_home(&self) -> PathBuf {
        self.dir.path().join("config")
    }

    /// How many times the browser was opened.
    fn opened(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("opened"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// No code, token or secret of the flow in what the CLI printed.
fn shows_no_secret(out: &Finished, secrets: &[&str]) {
    for secret in [
        "test-auth-code",
        "test-token",
        "test-client-secret",
        "Bearer ",
    ]
    .iter()
    .chain(secrets)
    {
        assert!(
            !out.stdout.contains(secret) && !out.stderr.contains(secret),
            "the CLI shows {secret:?}: {out:?}"
        );
    }
}

#[test]
fn url_authorizes_in_the_browser_once_and_keeps_the_credentials_for_the_user_alone() {
    let Some(scenario) = Scenario::start("auth/metadata-default") else {
        return;
    };
    let person = Person::new();
    let out = person.cli(&["--url", &scenario.url, "--verbose"], &[]);
    assert!(out.status.success(), "{out:?}\n{}", scenario.peer.output());
    assert_eq!(out.stdout, "test-tool\t\n");
    assert_eq!(person.opened(), 1, "{out:?}");
    assert!(
        out.stderr
            .contains("A browser was opened to authorize with http://localhost:"),
        "{}",
        out.stderr
    );
    shows_no_secret(&out, &[]);
    // The default store, created for the user alone.
    let dir = person.config_home().join("mcp-client");
    let store = dir.join("credentials.json");
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&store), 0o600);
    let kept = std::fs::read_to_string(&store).unwrap();
    assert!(kept.contains("test-token-"), "{kept}");
    // The next run uses them: no browser.
    let out = person.cli(&["--url", &scenario.url, "--call", "test-tool"], &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "test\n");
    assert_eq!(person.opened(), 1, "the browser was opened again: {out:?}");
    assert!(!out.stderr.contains("authorize"), "{}", out.stderr);
    assert_eq!(mode(&store), 0o600);
    // `--no-auth` starts no flow, but uses what is stored.
    let out = person.cli(&["--url", &scenario.url, "--no-auth"], &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "test-tool\t\n");
    assert_eq!(person.opened(), 1, "the browser was opened again: {out:?}");
}

/// DPoP through the CLI (the suite's `auth/dpop-nonce`: its resource challenges with the `DPoP`
/// scheme, both servers want their nonce): the browser flow gets a DPoP-bound token, kept with
/// the thumbprint of the key, never the key. A run's own key dies with it, so the next run
/// authorizes again; with `--dpop-key` the stored token is the same key's, and is used.
#[test]
fn dpop_bound_tokens_through_the_cli_with_a_run_key_or_the_users() {
    let Some(scenario) = Scenario::start_extension("auth/dpop-nonce") else {
        return;
    };
    let person = Person::new();
    let store = person
        .config_home()
        .join("mcp-client")
        .join("credentials.json");
    let call = ["--url", scenario.url.as_str(), "--call", "test-tool"];
    let out = person.cli(&call, &[]);
    assert!(out.status.success(), "{out:?}\n{}", scenario.peer.output());
    assert_eq!(out.stdout, "test\n");
    assert_eq!(person.opened(), 1);
    let kept = std::fs::read_to_string(&store).unwrap();
    assert!(kept.contains("\"dpop_jkt\""), "{kept}");
    assert!(
        !kept.contains("PRIVATE") && !kept.contains("\"d\""),
        "{kept}"
    );
    // Another run, another key: the stored token is not its to use.
    let out = person.cli(&call, &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(person.opened(), 2, "{out:?}");
    // The user's key: authorized once, then the stored token serves the next run.
    let key = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/keys/p256.pkcs8.pem"
    );
    let keyed = [call.as_slice(), &["--dpop-key", key]].concat();
    let out = person.cli(&keyed, &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(person.opened(), 3, "{out:?}");
    let out = person.cli(&keyed, &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "test\n");
    assert_eq!(person.opened(), 3, "the stored token was not used: {out:?}");
}

#[test]
fn no_auth_exits_1_naming_the_authorization_server() {
    let Some(scenario) = Scenario::start("auth/metadata-default") else {
        return;
    };
    let person = Person::new();
    let out = person.cli(&["--url", &scenario.url, "--no-auth"], &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    let needs = format!("{} needs authorization by http://localhost:", scenario.url);
    let line = out.stderr.trim();
    let issuer = line
        .split_once(&needs)
        .map(|(_, rest)| rest.split(':').next().unwrap_or(""))
        .unwrap_or_else(|| panic!("{line}"));
    // The authorization server's port, not the MCP server's.
    assert!(!scenario.url.contains(&format!(":{issuer}/")), "{line}");
    assert!(
        line.ends_with("authorizing is turned off (--no-auth)"),
        "{line}"
    );
    assert_eq!(person.opened(), 0);
    assert!(!person.config_home().exists());
}

#[test]
fn an_authorization_header_is_sent_as_given_and_no_flow_runs() {
    let Some(scenario) = Scenario::start("auth/metadata-default") else {
        return;
    };
    let person = Person::new();
    // The suite's server takes any token that starts with `test-token`.
    let out = person.cli(
        &[
            "--url",
            &scenario.url,
            "--header",
            "Authorization: Bearer test-token-from-the-header",
        ],
        &[],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "test-tool\t\n");
    let out = person.cli(
        &[
            "--url",
            &scenario.url,
            "--header",
            "Authorization: Bearer not-a-good-one",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stderr.contains("HTTP 401"), "{}", out.stderr);
    assert!(!out.stderr.contains("not-a-good-one"), "{}", out.stderr);
    assert_eq!(person.opened(), 0, "the header skips the flow");
    assert!(!person.config_home().exists(), "nothing was stored");
}

#[test]
fn a_pre_registered_client_with_its_secret_from_the_environment_and_a_store_file() {
    let Some(scenario) = Scenario::start("auth/pre-registration") else {
        return;
    };
    let person = Person::new();
    let store = person.dir.path().join("new/dir/creds.json");
    let issuer = scenario.issuer();
    let args = [
        "--url",
        &scenario.url,
        "--client-id",
        "pre-registered-client",
        "--client-secret-env",
        "MCP_TEST_CLIENT_SECRET",
        "--client-issuer",
        &issuer,
        "--auth-store",
        store.to_str().unwrap(),
    ];
    let out = person.cli(
        &[&args[..], &["--verbose"]].concat(),
        &[("MCP_TEST_CLIENT_SECRET", "pre-registered-secret")],
    );
    assert!(out.status.success(), "{out:?}\n{}", scenario.peer.output());
    assert_eq!(out.stdout, "test-tool\t\n");
    assert_eq!(person.opened(), 1);
    assert!(
        out.stderr.contains("client_id=pre-registered-client"),
        "{}",
        out.stderr
    );
    shows_no_secret(&out, &["pre-registered-secret"]);
    assert_eq!(mode(&store), 0o600);
    assert_eq!(mode(store.parent().unwrap()), 0o700);
    assert_eq!(mode(&person.dir.path().join("new")), 0o700);
    assert!(
        !person.config_home().exists(),
        "--auth-store replaces the default"
    );
    // The store holds the tokens, not the secret the user gave (from the environment here).
    let kept = std::fs::read_to_string(&store).unwrap();
    assert!(kept.contains("test-token-"), "{kept}");
    assert!(!kept.contains("pre-registered-secret"), "{kept}");
    // The next run, given the secret again, uses them: no browser.
    let out = person.cli(
        &[&args[..], &["--call", "test-tool"]].concat(),
        &[("MCP_TEST_CLIENT_SECRET", "pre-registered-secret")],
    );
    assert!(out.status.success(), "{out:?}\n{}", scenario.peer.output());
    assert_eq!(out.stdout, "test\n");
    assert_eq!(person.opened(), 1, "the browser was opened again: {out:?}");
    shows_no_secret(&out, &["pre-registered-secret"]);
    assert!(!std::fs::read_to_string(&store)
        .unwrap()
        .contains("pre-registered-secret"));
    // Bound to another authorization server, the credentials are not sent to this one.
    let out = person.cli(
        &[
            "--url",
            &scenario.url,
            "--client-id",
            "pre-registered-client",
            "--client-secret-env",
            "MCP_TEST_CLIENT_SECRET",
            "--client-issuer",
            "https://as.example",
            "--no-auth-store",
        ],
        &[("MCP_TEST_CLIENT_SECRET", "pre-registered-secret")],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("the pre-registered client is for https://as.example"),
        "{}",
        out.stderr
    );
    assert_eq!(person.opened(), 1, "no browser for another server's client");
    shows_no_secret(&out, &["pre-registered-secret"]);
}

#[test]
fn client_credentials_need_no_person() {
    let Some(scenario) = Scenario::start("auth/client-credentials-basic") else {
        return;
    };
    let person = Person::new();
    let out = person.cli(
        &[
            "--url",
            &scenario.url,
            "--client-credentials",
            "--client-id",
            "conformance-test-client",
            "--client-secret-env",
            "MCP_TEST_CLIENT_SECRET",
            "--client-issuer",
            &scenario.issuer(),
            "--no-auth-store",
            "--call",
            "test-tool",
        ],
        &[("MCP_TEST_CLIENT_SECRET", "conformance-test-secret")],
    );
    assert!(out.status.success(), "{out:?}\n{}", scenario.peer.output());
    assert_eq!(out.stdout, "test\n");
    assert_eq!(person.opened(), 0);
    shows_no_secret(&out, &["conformance-test-secret", "cc-token"]);
    assert!(
        !person.config_home().exists(),
        "--no-auth-store keeps nothing"
    );
}

/// The CLI run by the conformance runner on one scenario (at the 2026-07-28 wire, `--force`:
/// the authorization extensions): `script` is the shell that turns the runner's
/// `MCP_CONFORMANCE_CONTEXT` (each of its values in a file of `$d`, named by its key; `$d/issuer`
/// the scenario's authorization server) into the CLI's flags; `$1` is the server's URL, `$CLI`
/// the CLI. What the runner said, and the CLI's exit status, stdout and stderr.
struct ExtensionRun {
    runner: String,
    status: String,
    stdout: String,
    stderr: String,
}

fn cli_under_runner(scenario: &str, script: &str) -> Option<ExtensionRun> {
    let runner = peer_bin("conformance-next")?;
    let python = peer_bin("python")?;
    let dir = TempDir::new("mcp-cli-ext");
    let d = dir.path().display().to_string();
    let wrapper = dir.path().join("client.sh");
    let unpack = r#"import json, os, sys, urllib.request
c = json.loads(os.environ["MCP_CONFORMANCE_CONTEXT"]); d = sys.argv[1]
for k, v in c.items():
    open(os.path.join(d, k), "w").write(str(v))
prm = sys.argv[2].replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
open(os.path.join(d, "issuer"), "w").write(json.load(urllib.request.urlopen(prm))["authorization_servers"][0])
"#;
    std::fs::write(dir.path().join("unpack.py"), unpack).unwrap();
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nd='{d}'\nCLI='{CLI}'\n'{}' \"$d/unpack.py\" \"$d\" \"$1\" || exit 9\n{script} > \"$d/out\" 2> \"$d/err\"\necho $? > \"$d/status\"\n",
            python.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut command = Command::new(runner);
    command.args([
        "client",
        "--spec-version",
        "2026-07-28",
        "--force",
        "--scenario",
        scenario,
    ]);
    command.arg("--command").arg(&wrapper);
    let done = run_within(&mut command, Duration::from_secs(120));
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap_or_default();
    Some(ExtensionRun {
        runner: format!("{}{}", done.stdout, done.stderr),
        status: read("status").trim().to_owned(),
        stdout: read("out"),
        stderr: read("err"),
    })
}

/// The runner's summary line says every check passed, with no warning, and some ran.
fn runner_passed(runner: &str) -> bool {
    runner.lines().any(|l| {
        l.contains("Passed: ") && l.contains(", 0 failed, 0 warnings") && !l.contains("Passed: 0/0")
    }) && runner.contains("OVERALL: PASSED")
}

#[test]
fn a_workloads_jwt_file_is_the_grant_and_a_wrong_one_is_not_sent() {
    let Some(run) = cli_under_runner(
        "auth/wif-jwt-bearer",
        r#""$CLI" --url "$1" --client-id "$(cat "$d/client_id")" --assertion-file "$d/valid_jwt" --no-auth-store --call test-tool"#,
    ) else {
        return;
    };
    assert!(runner_passed(&run.runner), "{}\n{}", run.runner, run.stderr);
    assert_eq!(
        (run.status.as_str(), run.stdout.as_str()),
        ("0", "test\n"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("eyJ"),
        "a JWT on stderr: {}",
        run.stderr
    );
    // The one for another audience: refused by the CLI, never sent (the runner saw no grant).
    let Some(run) = cli_under_runner(
        "auth/wif-jwt-bearer",
        r#""$CLI" --url "$1" --client-id "$(cat "$d/client_id")" --assertion-file "$d/wrong_audience_jwt" --no-auth-store --call test-tool"#,
    ) else {
        return;
    };
    assert_eq!(run.status, "1", "{}", run.stderr);
    assert!(
        run.stderr.contains("was not sent to") && run.stderr.contains("\"https://wrong.example\""),
        "{}",
        run.stderr
    );
    assert!(
        run.runner
            .contains("Client did not make a JWT-bearer token request"),
        "{}",
        run.runner
    );
    assert!(
        !run.stderr.contains("eyJ"),
        "a JWT on stderr: {}",
        run.stderr
    );
    // An expired one likewise.
    let Some(run) = cli_under_runner(
        "auth/wif-jwt-bearer",
        r#""$CLI" --url "$1" --client-id "$(cat "$d/client_id")" --assertion-file "$d/expired_jwt" --no-auth-store --call test-tool"#,
    ) else {
        return;
    };
    assert_eq!(run.status, "1", "{}", run.stderr);
    assert!(run.stderr.contains("expired"), "{}", run.stderr);
}

#[test]
fn an_id_token_is_exchanged_at_the_identity_provider_with_no_browser() {
    let Some(run) = cli_under_runner(
        "auth/enterprise-managed-authorization",
        r#"AS_SECRET="$(cat "$d/client_secret")" ID_TOKEN="$(cat "$d/idp_id_token")" "$CLI" --url "$1" --client-id "$(cat "$d/client_id")" --client-secret-env AS_SECRET --client-issuer "$(cat "$d/issuer")" --idp-token-url "$(cat "$d/idp_token_endpoint")" --idp-client-id "$(cat "$d/idp_client_id")" --id-token-env ID_TOKEN --no-auth-store --verbose --call test-tool"#,
    ) else {
        return;
    };
    assert!(runner_passed(&run.runner), "{}\n{}", run.runner, run.stderr);
    assert_eq!(
        (run.status.as_str(), run.stdout.as_str()),
        ("0", "test\n"),
        "{}",
        run.stderr
    );
    // Nothing secret in what the CLI printed, even with --verbose: no JWT (the ID token, the
    // ID-JAG), no client secret.
    assert!(
        !run.stderr.contains("eyJ"),
        "a JWT on stderr: {}",
        run.stderr
    );
    assert!(!run.stderr.contains("Basic "), "{}", run.stderr);
}

#[test]
fn without_a_browser_the_url_is_printed_and_the_wait_ends() {
    let Some(scenario) = Scenario::start("auth/metadata-default") else {
        return;
    };
    let person = Person::new();
    let out = person.cli(
        &[
            "--url",
            &scenario.url,
            "--no-browser",
            "--auth-timeout",
            "1",
            "--no-auth-store",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(person.opened(), 0);
    assert!(
        out.stderr
            .contains("Open this URL to authorize with http://localhost:"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("/authorize?response_type=code&"),
        "{}",
        out.stderr
    );
    let last = out.stderr.lines().last().unwrap_or_default();
    assert!(last.contains("nobody came back within 1 s"), "{last}");
}

#[test]
fn auth_options_that_do_not_go_together_are_refused() {
    let url = "http://127.0.0.1:9/mcp";
    for (args, message) in [
        (
            vec!["--client-id", "a", "--", "cmd"],
            "--client-id needs --url",
        ),
        (
            vec!["--url", url, "--client-secret", "s3cret"],
            "--client-secret needs --client-id",
        ),
        (
            vec!["--url", url, "--no-auth", "--no-browser"],
            "--no-auth starts no authorization: --no-browser has no use with it",
        ),
        (
            vec!["--url", url, "--client-credentials", "--client-id", "a"],
            "--client-credentials needs the client's secret",
        ),
        (
            vec![
                "--url",
                url,
                "--client-id",
                "a",
                "--client-secret",
                "s3cret",
                "--client-secret-env",
                "PATH",
            ],
            "give --client-secret or --client-secret-env, not both",
        ),
        (
            vec!["--url", url, "--auth-store", "f", "--no-auth-store"],
            "give --auth-store or --no-auth-store, not both",
        ),
        (
            vec![
                "--url",
                url,
                "--client-id",
                "a",
                "--client-secret-env",
                "MCP_TEST_SURELY_UNSET",
            ],
            "the environment variable MCP_TEST_SURELY_UNSET is not set",
        ),
        (
            vec!["--url", url, "--auth-timeout", "0.5"],
            "--auth-timeout needs at least 1 second",
        ),
        // A secret goes only to the authorization server that issued it: that must be named.
        (
            vec![
                "--url",
                url,
                "--client-id",
                "a",
                "--client-secret",
                "s3cret",
            ],
            "--client-secret needs --client-issuer URL",
        ),
        (
            vec![
                "--url",
                url,
                "--client-id",
                "a",
                "--client-secret-env",
                "PATH",
                "--client-credentials",
            ],
            "--client-secret-env needs --client-issuer URL",
        ),
        (
            vec!["--url", url, "--assertion-file", "/dev/null"],
            "--assertion-file needs --client-id",
        ),
        (
            vec![
                "--url",
                url,
                "--client-id",
                "a",
                "--assertion-file",
                "/dev/null",
                "--idp-token-url",
                "https://idp.example/token",
            ],
            "--assertion-file and --idp-token-url are two ways to get a token: give one",
        ),
        (
            vec![
                "--url",
                url,
                "--client-id",
                "a",
                "--idp-token-url",
                "https://idp.example/token",
            ],
            "enterprise-managed authorization needs --idp-token-url URL, --idp-client-id ID and the person's ID token",
        ),
        (
            vec!["--url", url, "--id-token-env", "MCP_TEST_SURELY_UNSET"],
            "--id-token-env: the environment variable MCP_TEST_SURELY_UNSET is not set",
        ),
        (
            vec!["--url", url, "--id-token-file", "/nonexistent/id-token"],
            "--id-token-file /nonexistent/id-token:",
        ),
        (
            vec!["--url", url, "--no-auth", "--assertion-file", "/dev/null"],
            "--no-auth starts no authorization: --assertion-file has no use with it",
        ),
        (
            vec!["--url", url, "--no-dpop", "--dpop"],
            "--no-dpop and --dpop do not go together",
        ),
        (
            vec!["--url", url, "--dpop-key", "/nonexistent/key.pem"],
            "--dpop-key /nonexistent/key.pem:",
        ),
        (
            vec!["--url", url, "--dpop-key", concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/keys/rsa2048.pkcs8.pem")],
            "the DPoP key is an RSA key",
        ),
        (
            vec!["--url", url, "--no-auth", "--dpop"],
            "--no-auth starts no authorization: --dpop has no use with it",
        ),
        (
            vec![
                "--url",
                url,
                "--client-id",
                "a",
                "--assertion-file",
                "/dev/null",
                "--no-browser",
            ],
            "--assertion-file involves no person: --no-browser has no use with it",
        ),
    ] {
        let out = cli(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert!(out.stderr.contains(message), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("s3cret"), "{args:?}: {}", out.stderr);
    }
    let help = cli(&["--help"]);
    assert!(help.status.success(), "{help:?}");
    for flag in [
        "--no-auth",
        "--client-id",
        "--client-secret-env",
        "--client-credentials",
        "--assertion-file",
        "--idp-token-url",
        "--idp-client-id",
        "--id-token-file",
        "--auth-store",
        "--auth-timeout",
        "--dpop",
        "--no-dpop",
        "--dpop-key",
    ] {
        assert!(help.stdout.contains(flag), "{flag}: {}", help.stdout);
    }
}

// ---- A server's control characters never reach the terminal (T9) ----

/// The control characters of `text` a terminal would obey: C0 but newline and tab, DEL, C1.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| matches!(c, '\0'..='\x08' | '\x0b'..='\x1f' | '\x7f'..='\u{9f}'))
        .collect()
}

/// Neither stdout nor stderr holds a raw control character, and `[HOSTILE]`'s title sequence
/// shows escaped somewhere in `shown` (so the text was printed, not dropped).
fn escaped(out: &Finished, shown: &str) {
    for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let raw = raw_controls(text);
        assert!(raw.is_empty(), "raw {raw:?} on {name}: {out:?}");
    }
    assert!(
        shown.contains(r"\x1b]0;PWNED-TITLE\x07 \x1b[2K all good \x1b[8m hidden \u{9b}31m red"),
        "{out:?}"
    );
}

/// `mcp-client OPTIONS -- mcp-testkit-serve --behave BEHAVE`
fn against_behaving(options: &[&str], behave: &str) -> Finished {
    let bin = serve_bin();
    let mut args: Vec<&str> = options.to_vec();
    args.extend(["--", bin.to_str().unwrap(), "--behave", behave]);
    cli(&args)
}

#[test]
fn a_servers_control_characters_are_shown_escaped_wherever_the_cli_prints_them() {
    // The tool list: names and descriptions (a further line indented under the first).
    let list = against_behaving(&[], "hostile-text");
    assert!(list.status.success(), "{list:?}");
    escaped(&list, &list.stdout);
    let first = list.stdout.lines().next().unwrap();
    assert!(first.starts_with("echo\t"), "{first}");
    assert!(
        list.stdout.contains("\n    \tsecond line\n"),
        "{}",
        list.stdout
    );
    // --info: the server's name, version and instructions (the instructions keep their lines).
    let info = against_behaving(&["--info"], "hostile-text");
    assert!(info.status.success(), "{info:?}");
    escaped(&info, &info.stdout);
    assert!(info.stdout.contains("server: evil "), "{}", info.stdout);
    assert!(info.stdout.contains("\nline three"), "{}", info.stdout);
    // A call, with --verbose: the server's log line, the call's progress, its stderr line
    // (forwarded), the client's tracing and the result's text (its lines kept, CRLF as LF, a
    // lone CR escaped). The server's lines are named by its program's file name.
    let call = against_behaving(&["--call", "echo", "--verbose"], "hostile-text");
    assert!(call.status.success(), "{call:?}");
    escaped(&call, &call.stdout);
    let bin = serve_bin();
    let name = bin.file_name().unwrap().to_str().unwrap();
    let log = format!("server log {name} [warning ");
    let stderr = format!("server stderr {name}: serve: ");
    for shown in [log.as_str(), "progress: 1/2 ", stderr.as_str()] {
        let line = call.stderr.lines().find(|l| l.starts_with(shown));
        let line = line.unwrap_or_else(|| panic!("no {shown:?} line: {call:?}"));
        assert!(line.contains(r"\x1b]0;PWNED-TITLE\x07"), "{line}");
    }
    assert!(call.stdout.contains(r"over\x0dwrite"), "{}", call.stdout);
    assert!(
        call.stdout.ends_with("\nsecond line\n\n"),
        "{:?}",
        call.stdout
    );
    // An error's message on the one line of the cause; a crashed server's stderr, forwarded
    // as it came, before the line that says its exit status (and does not repeat it).
    let failed = against_behaving(&["--call", "fail"], "hostile-text");
    assert_eq!(failed.status.code(), Some(1), "{failed:?}");
    let last = failed.stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("mcp-client: "), "{failed:?}");
    escaped(&failed, last);
    let crashed = against_behaving(&["--call", "crash"], "hostile-text");
    assert_eq!(crashed.status.code(), Some(1), "{crashed:?}");
    let last = crashed.stderr.lines().last().unwrap_or_default();
    assert_eq!(
        last, "mcp-client: server exited (exit status: 3)",
        "{crashed:?}"
    );
    escaped(&crashed, &crashed.stderr);
}

#[test]
fn json_output_is_json_with_no_raw_control_character() {
    use mcp_testkit::stdio_server::HOSTILE;
    let one = |options: &[&str]| {
        let out = against_behaving(options, "hostile-text");
        assert!(out.status.success(), "{out:?}");
        let raw = raw_controls(&out.stdout);
        assert!(raw.is_empty(), "raw {raw:?}: {}", out.stdout);
        assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
        serde_json::from_str::<Value>(&out.stdout).unwrap()
    };
    // The same values, escaped as JSON (DEL and C1 too).
    let tools = one(&["--json"]);
    assert_eq!(tools[0]["description"], format!("{HOSTILE}\nsecond line"));
    assert_eq!(tools[1]["name"], format!("evil{HOSTILE}"));
    let info = one(&["--info", "--json"]);
    assert_eq!(info["serverInfo"]["version"], HOSTILE);
    assert_eq!(info["capabilities"]["experimental"][HOSTILE], HOSTILE);
    let call = one(&["--call", "echo", "--json"]);
    assert_eq!(call["text"], format!("text {HOSTILE}\nsecond line\r\n"));
}

/// Quotes `arg` for `sh`.
fn sh_quoted(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// The CLI on a terminal: run by `script` (util-linux) in a pseudo-terminal that is its stdin,
/// stdout and stderr, `input` typed on it (the end of input then, as ^D). What the terminal
/// showed is `stdout` (the CLI's stdout and stderr, and the echo of what was typed), with the
/// terminal's CRLF line ends back to LF.
fn on_a_terminal(args: &[&str], input: &str) -> Finished {
    use std::io::Write;
    let mut line = sh_quoted(CLI);
    for arg in args {
        line.push(' ');
        line.push_str(&sh_quoted(arg));
    }
    let mut command = Command::new("script");
    command
        .args(["-qec", &line, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut guard = mcp_testkit::GroupGuard::spawn(&mut command)
        .expect("script (util-linux) runs the CLI on a pseudo-terminal");
    let mut stdin = guard.child().stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let stdout = guard.child().stdout.take().unwrap();
    let stderr = guard.child().stderr.take().unwrap();
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let (stdout, stderr) = (read(Box::new(stdout)), read(Box::new(stderr)));
    let limit = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = guard.child().try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < limit,
            "the CLI on a terminal did not end"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    guard.stop();
    Finished {
        status,
        stdout: stdout.join().unwrap().replace("\r\n", "\n"),
        stderr: stderr.join().unwrap(),
    }
}

/// What the server was answered, from its result's text (`answer: {…}`).
/// (The terminal shows stdout and stderr as they come: another line may end right before it.)
fn elicitation_answer(shown: &str) -> Value {
    let at = shown
        .find("answer: {")
        .unwrap_or_else(|| panic!("no answer: {shown}"));
    let mut values = serde_json::Deserializer::from_str(&shown[at + 8..]).into_iter::<Value>();
    values.next().unwrap().unwrap()
}

#[test]
fn elicitation_on_a_terminal_is_escaped_and_shows_only_safe_urls_with_their_host() {
    let bin = serve_bin();
    let bin = bin.to_str().unwrap();
    let ask = |tool: &str, args: &str, input: &str| {
        let options = [
            "--call",
            tool,
            "--args",
            args,
            "--",
            bin,
            "--behave",
            "hostile-text",
        ];
        let out = on_a_terminal(&options, input);
        assert!(out.status.success(), "{out:?}");
        let raw = raw_controls(&out.stdout);
        assert!(
            raw.is_empty(),
            "raw {raw:?} on the terminal: {}",
            out.stdout
        );
        out
    };
    // A form: the question, the field's name and its default are shown escaped; the answer
    // typed goes back under the field's name as sent.
    let form = ask("ask-form", "{}", "octocat\n");
    let shown = &form.stdout;
    assert!(shown.contains(r"the server asks: \x1b]8;;https://evil.example/steal\x1b\https://accounts.google.com/signin\x1b]8;;\x1b\ \x1b]0;PWNED-TITLE\x07"), "{shown}");
    assert!(shown.contains(r"  name\x1b]8;;"), "{shown}");
    let answer = elicitation_answer(shown);
    let name = format!("name{}", mcp_testkit::stdio_server::HOSTILE);
    assert_eq!(answer["result"]["action"], "accept", "{shown}");
    assert_eq!(answer["result"]["content"][&name], "octocat", "{shown}");
    // An https URL is shown as parsed (its escapes percent-encoded), its host spelled out: the
    // one a userinfo in front would hide.
    let url = "https://accounts.google.com@evil.example/sign\x1b]8;;\x07in";
    let args = serde_json::json!({ "url": url }).to_string();
    let https = ask("ask-url", &args, "y\n");
    let shown = &https.stdout;
    assert!(
        shown.contains("  visit: https://accounts.google.com@evil.example/sign%1B]8;;%07in\n"),
        "{shown}"
    );
    assert!(shown.contains("  opens host: evil.example\n"), "{shown}");
    assert_eq!(
        elicitation_answer(shown)["result"]["action"],
        "accept",
        "{shown}"
    );
    // http on this machine's loopback too; a punycode host is pointed out.
    let local = ask("ask-url", r#"{"url": "http://127.0.0.1:9/x"}"#, "n\n");
    assert!(
        local.stdout.contains("  opens host: 127.0.0.1\n"),
        "{}",
        local.stdout
    );
    assert_eq!(
        elicitation_answer(&local.stdout)["result"]["action"],
        "decline"
    );
    let idn = ask("ask-url", r#"{"url": "https://аррӏе.com/"}"#, "n\n");
    assert!(
        idn.stdout
            .contains("  opens host: xn--80ak6aa92e.com (punycode"),
        "{}",
        idn.stdout
    );
    // Any other URL is declined without asking: OSC 8 text (the server's default, which has a
    // NUL no argument can carry), javascript:, file:, plain http.
    for url in [
        None,
        Some("javascript:alert(1)"),
        Some("file:///etc/passwd"),
        Some("http://evil.example/"),
        Some("not a url"),
    ] {
        let args = match url {
            Some(url) => serde_json::json!({ "url": url }).to_string(),
            None => "{}".to_owned(),
        };
        // A "y" typed ahead is never read: no question is asked.
        let out = ask("ask-url", &args, "y\n");
        let shown = &out.stdout;
        assert!(
            shown.contains(
                "asks to visit a URL that is not https (nor http on this machine); declined"
            ),
            "{url:?}: {shown}"
        );
        assert!(!shown.contains("visit: "), "{url:?}: {shown}");
        assert_eq!(
            elicitation_answer(shown)["result"]["action"],
            "decline",
            "{shown}"
        );
    }
}

#[test]
fn elicitation_is_declared_only_with_a_terminal_to_ask_on() {
    let bin = serve_bin();
    let bin = bin.to_str().unwrap();
    let capabilities = |shown: &str| -> Value {
        // The server's stderr line (forwarded as it comes) may land after a prompt the CLI
        // printed without a line end: the two reach the terminal through different pipes.
        let line = shown
            .lines()
            .find_map(|l| Some(l.split_once("serve: client capabilities ")?.1))
            .unwrap_or_else(|| panic!("no capabilities: {shown}"));
        serde_json::from_str(line).unwrap()
    };
    let behave = "hostile-text,show-capabilities";
    // Without a terminal (stdin closed, output piped): not declared, and a server that asks
    // anyway is refused by the client (no question is printed).
    let piped = against_behaving(&["--call", "ask-form"], behave);
    assert!(piped.status.success(), "{piped:?}");
    let declared = capabilities(&piped.stderr);
    assert!(declared.get("elicitation").is_none(), "{declared}");
    assert!(
        elicitation_answer(&piped.stdout).get("error").is_some(),
        "{piped:?}"
    );
    assert!(!piped.stderr.contains("asks:"), "{piped:?}");
    // With --roots, roots are declared (and only then): the CLI answers them.
    let dir = TempDir::new("mcp-cli-roots");
    let roots = against_behaving(
        &["--roots", dir.path().to_str().unwrap(), "--call", "echo"],
        behave,
    );
    let declared = capabilities(&roots.stderr);
    assert!(declared.get("roots").is_some(), "{declared}");
    assert!(declared.get("sampling").is_none(), "{declared}");
    // On a terminal: declared, both modes.
    let options = ["--call", "ask-form", "--", bin, "--behave", behave];
    let tty = on_a_terminal(&options, "octocat\n");
    assert!(tty.status.success(), "{tty:?}");
    let declared = capabilities(&tty.stdout);
    assert_eq!(
        declared["elicitation"],
        serde_json::json!({"form": {}, "url": {}}),
        "{declared}"
    );
    assert_eq!(
        elicitation_answer(&tty.stdout)["result"]["action"],
        "accept"
    );
}

/// A fake protected MCP server that is its own authorization server (127.0.0.1): `/mcp`
/// answers 401 naming its resource metadata, which names this origin as the issuer, whose
/// metadata offers the client credentials grant; the token endpoint refuses with an
/// `error_description` full of terminal escapes. Its origin.
fn refusing_authorization_server() -> String {
    use std::io::{BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let base = origin.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let origin = base.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                while let Ok(Some(req)) = mcp_testkit::http_server::read_request(&mut reader) {
                    let prm = format!("{origin}/.well-known/oauth-protected-resource/mcp");
                    let (status, extra, body) = match req.path() {
                        "/mcp" => (
                            "401 Unauthorized",
                            format!("WWW-Authenticate: Bearer resource_metadata=\"{prm}\"\r\n"),
                            serde_json::json!({"error": "invalid_token"}),
                        ),
                        "/.well-known/oauth-protected-resource/mcp" => (
                            "200 OK",
                            String::new(),
                            serde_json::json!({"resource": format!("{origin}/mcp"),
                                               "authorization_servers": [origin]}),
                        ),
                        "/.well-known/oauth-authorization-server" => (
                            "200 OK",
                            String::new(),
                            serde_json::json!({
                                "issuer": origin,
                                "authorization_endpoint": format!("{origin}/authorize"),
                                "token_endpoint": format!("{origin}/token"),
                                "response_types_supported": ["code"],
                                "grant_types_supported": ["client_credentials"],
                                "code_challenge_methods_supported": ["S256"],
                                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                            }),
                        ),
                        "/token" => (
                            "400 Bad Request",
                            String::new(),
                            serde_json::json!({"error": "invalid_client",
                                "error_description": mcp_testkit::stdio_server::HOSTILE}),
                        ),
                        _ => ("404 Not Found", String::new(), serde_json::json!({})),
                    };
                    let body = body.to_string();
                    let head = format!(
                        "HTTP/1.1 {status}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    if out.write_all(head.as_bytes()).is_err()
                        || out.write_all(body.as_bytes()).is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    origin
}

#[test]
fn an_authorization_servers_error_description_is_shown_escaped() {
    let origin = refusing_authorization_server();
    let url = format!("{origin}/mcp");
    let mut command = Command::new(CLI);
    command
        .args([
            "--url",
            &url,
            "--client-id",
            "c1",
            "--client-secret-env",
            "CLI_TEST_SECRET",
        ])
        .args([
            "--client-issuer",
            &origin,
            "--client-credentials",
            "--no-auth-store",
        ])
        .env("CLI_TEST_SECRET", "s3cr3t-value");
    let out = run_within(&mut command, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let last = out.stderr.lines().last().unwrap_or_default();
    assert!(last.contains("invalid_client"), "{out:?}");
    escaped(&out, last);
    shows_no_secret(&out, &["s3cr3t-value"]);
}

// ---- start-up diagnostics ------------------------------------------------------------------------

#[test]
fn a_program_that_is_not_an_mcp_server_is_named_with_what_it_printed() {
    let started = std::time::Instant::now();
    let out = cli(&["--", "sh", "-c", "echo hello; echo world; exec sleep 100"]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr.trim(),
        "mcp-client: sh is not an MCP server: it printed \"hello\" (and 1 more line) and did not answer initialize"
    );
    // Not the 60 s of initialize's timeout: the probe's 2 s, 3 s more, and the close.
    assert!(took < Duration::from_secs(30), "{took:?}");
}

/// A program that prints a usage message on stdout and exits: named with what it printed,
/// beside its exit status; its stderr forwarded as it came, not repeated.
#[test]
fn a_program_that_prints_and_exits_is_named_with_what_it_printed() {
    let script =
        "echo 'Usage: foo [OPTIONS]'; echo '  -h  help'; echo 'foo: no such option' >&2; exit 1";
    for verbose in [false, true] {
        let mut args = vec!["--", "sh", "-c", script];
        if verbose {
            args.insert(0, "--verbose");
        }
        let out = cli(&args);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let last = out.stderr.lines().last().unwrap_or_default();
        assert_eq!(
            last,
            "mcp-client: server exited (exit status: 1) after printing \"Usage: foo [OPTIONS]\" \
             (and 1 more line) on stdout — not an MCP server?",
            "{out:?}"
        );
        assert_eq!(out.stderr.matches("Usage").count(), 1, "{out:?}");
        let stderr_line = if verbose {
            "server stderr sh: foo: no such option"
        } else {
            "foo: no such option"
        };
        assert_eq!(out.stderr.matches("no such option").count(), 1, "{out:?}");
        assert!(out.stderr.lines().any(|l| l == stderr_line), "{out:?}");
    }
}

/// A server that fails at start-up whatever it is sent: started once, its stderr shown once
/// (forwarded as it came: the message says the exit status without repeating it), with and
/// without `--verbose`.
#[cfg(target_os = "linux")]
#[test]
fn a_server_that_dies_at_start_up_is_started_once_and_its_stderr_shown_once() {
    for verbose in [false, true] {
        let dir = TempDir::new("cli-dies-at-start");
        let starts = dir.path().join("starts");
        let script = format!(
            "echo start >> '{}'; echo 'boom: no configuration' >&2; exit 1",
            starts.display()
        );
        let mut args = vec!["--", "sh", "-c", &script];
        if verbose {
            args.insert(0, "--verbose");
        }
        let out = cli(&args);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let started = std::fs::read_to_string(&starts).unwrap();
        assert_eq!(started.lines().count(), 1, "started again: {out:?}");
        assert_eq!(
            out.stderr.matches("boom: no configuration").count(),
            1,
            "{}",
            out.stderr
        );
        let last = out.stderr.lines().last().unwrap_or_default();
        assert_eq!(
            last, "mcp-client: server exited (exit status: 1)",
            "{}",
            out.stderr
        );
        if verbose {
            assert!(
                out.stderr
                    .lines()
                    .any(|l| l == "server stderr sh: boom: no configuration"),
                "{}",
                out.stderr
            );
            let spans = out.stderr.matches("otel.name=\"initialize\"").count();
            assert_eq!(spans, 1, "{}", out.stderr);
        }
    }
}

#[test]
fn verbose_says_each_thing_once_with_the_servers_name() {
    let Some(everything) = peer_bin("everything") else {
        return;
    };
    let out = cli(&["--verbose", "--", everything.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<&str> = out.stderr.lines().filter(|l| !l.is_empty()).collect();
    // One opening, one span; one listing.
    let count = |what: &str| lines.iter().filter(|l| l.contains(what)).count();
    assert_eq!(count("otel.name=\"initialize\""), 1, "{}", out.stderr);
    assert_eq!(count("otel.name=tools/list"), 1, "{}", out.stderr);
    // Every line names the server: the spans, and its stderr as forwarded.
    for line in &lines {
        assert!(
            line.contains("mcp.server=\"everything\"")
                || line.starts_with("server stderr everything: "),
            "a line without the server's name: {line:?}\n{}",
            out.stderr
        );
    }
    assert!(count("server stderr everything: ") >= 1, "{}", out.stderr);
    // No line twice (the timestamps make the spans' lines differ; the rest must not repeat).
    let mut seen = std::collections::HashSet::new();
    for line in &lines {
        assert!(seen.insert(*line), "{line:?} twice:\n{}", out.stderr);
    }
}

/// The same with `--config`: each server's opening once, named; a failed server's stderr once
/// (forwarded as it came, named: its failure line says the exit status alone).
#[cfg(target_os = "linux")]
#[test]
fn verbose_with_a_config_says_each_servers_opening_and_failure_once() {
    let Some(everything) = peer_bin("everything") else {
        return;
    };
    let dir = TempDir::new("cli-verbose-set");
    let starts = dir.path().join("starts");
    let script = format!(
        "echo start >> '{}'; echo 'boom: no configuration' >&2; exit 1",
        starts.display()
    );
    let config = serde_json::json!({"mcpServers": {
        "ev": {"command": everything},
        "bad": {"command": "sh", "args": ["-c", script]},
    }});
    let file = dir.path().join("servers.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let out = cli(&["--verbose", "--config", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let opening = |server: &str| {
        let named = format!("mcp.server=\"{server}\"");
        out.stderr
            .lines()
            .filter(|l| l.contains("otel.name=\"initialize\"") && l.contains(&named))
            .count()
    };
    assert_eq!(opening("ev"), 1, "{}", out.stderr);
    assert_eq!(opening("bad"), 1, "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("boom: no configuration").count(),
        1,
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .lines()
            .any(|l| l == "server stderr bad: boom: no configuration"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .lines()
            .any(|l| l == "mcp-client: server \"bad\" failed: server exited (exit status: 1)"),
        "{}",
        out.stderr
    );
    let started = std::fs::read_to_string(&starts).unwrap();
    assert_eq!(started.lines().count(), 1, "{}", out.stderr);
}

/// `--record FILE`: the session is written to FILE (emptied first, as `curl -o` does), and a
/// client that does what the command did replays it with no server.
#[test]
fn record_writes_a_session_a_client_replays() {
    use mcp_connect::recording::ReplayTransport;
    let dir = TempDir::new("mcp-cli-record");
    let file = dir.path().join("serve.mcplog");
    std::fs::write(&file, "what was there before\n").unwrap();
    let out = against_serve(&["--record", file.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("mcplog 1 {"), "{text}");
    assert!(!text.contains("what was there before"), "{text}");
    assert!(
        text.contains(r#"= "#) && text.contains(r#""protocolVersion""#),
        "{text}"
    );
    let listed: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
    let replayed = smol::block_on(async {
        let client = mcp_connect::Client::new(ReplayTransport::from_file(&file).unwrap());
        client.initialize().await.unwrap();
        let tools = client.list_tools().await.unwrap();
        client.close().await.unwrap();
        tools.into_iter().map(|t| t.name).collect::<Vec<_>>()
    });
    assert_eq!(replayed, names);
}

/// `--record` takes one server: config files are refused before anything starts.
#[test]
fn record_refuses_what_it_cannot_record() {
    let out = cli(&["--record", "x.mcplog", "--config", "mcp.json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr.contains("--record records one server"),
        "{out:?}"
    );
    assert!(!Path::new("x.mcplog").exists());
}

/// `--record` over Streamable HTTP, in both eras: the JSON-RPC messages each way, no header
/// of the exchanges (not `--header`'s, not the session id), and a client replays it with no
/// server.
#[test]
fn record_over_http_writes_the_messages_a_client_replays() {
    use mcp_connect::recording::ReplayTransport;
    for modern in [false, true] {
        let srv = mcp_testkit::http_server::start(mcp_testkit::http_server::Behaviour {
            modern,
            ..Default::default()
        })
        .unwrap();
        let dir = TempDir::new("mcp-cli-record-http");
        let file = dir.path().join("http.mcplog");
        let url = format!("{}?api_key=sk-live-0123456789abcdef", srv.url);
        let out = cli(&[
            "--record",
            file.to_str().unwrap(),
            "--url",
            &url,
            "--header",
            "X-Api-Key: hush-hush-value",
            "--call",
            "echo",
            "--args",
            r#"{"text":"over http"}"#,
        ]);
        assert!(out.status.success(), "{out:?}");
        assert_eq!(out.stdout, "over http\n");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.starts_with(r#"mcplog 1 {"era":null,"server":["#)
                || text.starts_with("mcplog 1 {"),
            "{text}"
        );
        assert!(text.contains(r#""transport":"http""#), "{text}");
        assert!(text.contains("> ") && text.contains("\n< "), "{text}");
        assert!(text.contains(r#""over http""#), "{text}");
        for secret in [
            "hush-hush-value",
            "sk-live-0123456789abcdef",
            "mcp-session-id",
            "Mcp-Session-Id",
        ] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        let replayed = smol::block_on(async {
            // As the command opened: the probe first (EraChoice::Auto, the default).
            let config = mcp_connect::ClientConfig::default();
            let client = mcp_connect::Client::with_config(
                ReplayTransport::from_file(&file).unwrap(),
                config,
            );
            client.initialize().await.unwrap();
            // What `--call` does: learn the tool (a listing), then call it asking for progress.
            let _ = client.learn_tool("echo").await;
            let request = mcp_connect::proto::Request::call_tool(
                "echo",
                serde_json::json!({"text": "over http"}),
            );
            let r = client.call_with_progress(request, |_| {}).await.unwrap();
            client.close().await.unwrap();
            r.text()
        });
        assert_eq!(replayed, "over http", "modern: {modern}");
    }
}

/// A recording of an OAuth-protected server holds no token, no secret, no OAuth exchange.
#[test]
fn record_over_http_keeps_no_credential() {
    let Some(scenario) = Scenario::start("auth/client-credentials-basic") else {
        return;
    };
    let dir = TempDir::new("mcp-cli-record-oauth");
    let file = dir.path().join("oauth.mcplog");
    let person = Person::new();
    let out = person.cli(
        &[
            "--record",
            file.to_str().unwrap(),
            "--url",
            &scenario.url,
            "--client-credentials",
            "--client-id",
            "conformance-test-client",
            "--client-secret-env",
            "MCP_TEST_CLIENT_SECRET",
            "--client-issuer",
            &scenario.issuer(),
            "--no-auth-store",
            "--call",
            "test-tool",
        ],
        &[("MCP_TEST_CLIENT_SECRET", "conformance-test-secret")],
    );
    assert!(out.status.success(), "{out:?}\n{}", scenario.peer.output());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(r#""transport":"http""#), "{text}");
    assert!(text.contains("# "), "the authorization is noted: {text}");
    for secret in [
        "conformance-test-secret",
        "cc-token",
        "test-token",
        "Bearer",
        "Basic",
        "access_token",
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
}
