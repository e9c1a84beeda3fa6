//! The commands beside the tools — `resources`, `prompts`, `complete` — as a user runs them:
//! against server-everything (resources, templates, a blob, prompts with arguments, completion,
//! a subscription it feeds once its `toggle-subscriber-updates` tool is called), against the
//! test kit's server (which offers none of them), and across a config's servers. Text and
//! `--json` shapes, exit codes, and a watch ended by SIGINT after its first update.
//!
//! server-everything comes from `.ci/install-peers`: each test that needs it prints
//! `skipped: …` and passes when it is missing, and fails instead under `CI=true`.

use mcp_testkit::{peer_bin, run_within, serve_bin, Finished, GroupGuard, TempDir};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The `mcp-client` binary, built by cargo for this package's tests.
const CLI: &str = env!("CARGO_BIN_EXE_mcp-client");

/// A backstop for a line the command prints at once: a loaded machine is slow, never this slow.
const EVENT: Duration = Duration::from_secs(60);

fn cli(args: &[&str]) -> Finished {
    run_within(Command::new(CLI).args(args), Duration::from_secs(120))
}

/// `mcp-client ARGS -- everything stdio`.
fn against(everything: &std::path::Path, args: &[&str]) -> Finished {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", everything.to_str().unwrap(), "stdio"]);
    cli(&all)
}

fn json_line(out: &Finished) -> Value {
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one line of JSON: {out:?}");
    serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

const BLOB: &str = "demo://resource/dynamic/blob/3";
const TEXT_TEMPLATE: &str = "demo://resource/dynamic/text/{resourceId}";

#[test]
fn resources_are_listed_read_and_written_out() {
    let Some(everything) = peer_bin("everything") else {
        return;
    };
    // Text: URI, a tab, name (MIME): description.
    let out = against(&everything, &["resources"]);
    assert!(out.status.success(), "{out:?}");
    let features = out
        .stdout
        .lines()
        .find(|l| l.starts_with("demo://resource/static/document/features.md\t"))
        .unwrap_or_else(|| panic!("{out:?}"));
    assert!(
        features.contains("features.md (text/markdown)"),
        "{features}"
    );
    // `list` is the default verb.
    assert_eq!(
        against(&everything, &["resources", "list"]).stdout,
        out.stdout
    );

    // --json: the resource objects as sent.
    let listed = json_line(&against(&everything, &["resources", "--json"]));
    let listed = listed.as_array().expect("an array");
    assert!(listed.len() >= 3);
    assert!(listed
        .iter()
        .all(|r| r["uri"].is_string() && r["name"].is_string()));

    // Templates.
    let out = against(&everything, &["resources", "templates", "--json"]);
    let templates = json_line(&out);
    assert!(
        templates
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["uriTemplate"] == TEXT_TEMPLATE),
        "{out:?}"
    );
    let out = against(&everything, &["resources", "templates"]);
    assert!(
        out.stdout.contains(&format!("{TEXT_TEMPLATE}\t")),
        "{out:?}"
    );

    // A text read, as text and as JSON.
    let uri = "demo://resource/static/document/features.md";
    let out = against(&everything, &["resources", "read", uri]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.lines().count() > 3, "{out:?}");
    let read = json_line(&against(&everything, &["resources", "read", uri, "--json"]));
    assert_eq!(read["contents"][0]["uri"], uri);
    assert!(read["contents"][0]["text"].as_str().unwrap().len() > 100);

    // A blob: one placeholder line; its base64 with --json; its bytes with --out.
    let out = against(&everything, &["resources", "read", BLOB]);
    assert!(out.status.success(), "{out:?}");
    // Its size varies with the time it was made (the server writes a timestamp in it).
    let line = out.stdout.trim_end();
    let size = line
        .strip_prefix(&format!("[resource: {BLOB}, text/plain, "))
        .and_then(|rest| rest.strip_suffix(" bytes]"))
        .and_then(|n| n.parse::<usize>().ok());
    assert!(size.is_some_and(|n| n > 0), "{out:?}");
    let read = json_line(&against(
        &everything,
        &["resources", "read", BLOB, "--json"],
    ));
    assert!(read["contents"][0]["blob"].is_string(), "{read}");
    let dir = TempDir::new("mcp-cli-features");
    let file = dir.path().join("blob.bin");
    let out = against(
        &everything,
        &["resources", "read", BLOB, "--out", file.to_str().unwrap()],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "", "{out:?}");
    let bytes = std::fs::read(&file).unwrap();
    // The bytes decoded (their length varies with the timestamp in them, as above).
    assert!(
        String::from_utf8_lossy(&bytes).starts_with("Resource 3: This is a base64 blob"),
        "{bytes:?}"
    );

    // A resource it does not have: exit 1, the server's error on stderr.
    let out = against(&everything, &["resources", "read", "demo://resource/nope"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains("mcp-client: server error -32602")
            && out.stderr.contains("demo://resource/nope not found"),
        "{out:?}"
    );
}

#[test]
fn prompts_are_listed_and_got_and_arguments_completed() {
    let Some(everything) = peer_bin("everything") else {
        return;
    };
    let out = against(&everything, &["prompts"]);
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("args-prompt\t"))
        .unwrap_or_else(|| panic!("{out:?}"));
    // The arguments under the description, indented as far as the name.
    assert_eq!(
        lines[at + 1],
        format!(
            "{}\targuments: city (required), state",
            " ".repeat("args-prompt".len())
        )
    );
    let listed = json_line(&against(&everything, &["prompts", "list", "--json"]));
    let args = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "args-prompt")
        .expect("args-prompt");
    assert_eq!(args["arguments"][0]["name"], "city");

    // Got with its arguments: ROLE: TEXT, or the result object.
    let out = against(
        &everything,
        &["prompts", "get", "args-prompt", "--arg", "city=Paris"],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "user: What's weather in Paris?\n");
    let got = json_line(&against(
        &everything,
        &[
            "prompts",
            "get",
            "args-prompt",
            "--arg",
            "city=Paris",
            "--json",
        ],
    ));
    assert_eq!(got["messages"][0]["role"], "user");
    assert_eq!(got["messages"][0]["content"]["type"], "text");
    // A required argument left out: the server's error, exit 1.
    let out = against(&everything, &["prompts", "get", "args-prompt"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr.contains("mcp-client: server error -32602") && out.stderr.contains("city"),
        "{out:?}"
    );

    // Completion: narrowed by the context; a template's variable; JSON's shape.
    let out = against(
        &everything,
        &[
            "complete",
            "--prompt",
            "completable-prompt",
            "name",
            "--context",
            "department=Sales",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "David\nEve\nFrank\n");
    let c = json_line(&against(
        &everything,
        &[
            "complete",
            "--prompt",
            "completable-prompt",
            "department",
            "E",
            "--json",
        ],
    ));
    assert_eq!(c["values"], serde_json::json!(["Engineering"]));
    assert_eq!(c["hasMore"], false);
    let out = against(
        &everything,
        &["complete", "--resource", TEXT_TEMPLATE, "resourceId", "1"],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.lines().all(|l| l.starts_with('1')), "{out:?}");
}

#[test]
fn a_server_without_resources_or_prompts_is_a_failure_naming_it() {
    let bin = serve_bin();
    for command in [
        &["resources"][..],
        &["prompts"],
        &["resources", "read", "x:/y"],
    ] {
        let mut args = command.to_vec();
        args.extend(["--", bin.to_str().unwrap()]);
        let out = cli(&args);
        assert_eq!(out.status.code(), Some(1), "{command:?}: {out:?}");
        assert_eq!(out.stdout, "");
        assert!(
            out.stderr.contains("does not offer"),
            "{command:?}: {out:?}"
        );
    }
}

#[test]
fn wrong_commands_exit_1_before_anything_starts() {
    for (args, said) in [
        (
            &["frobnicate", "--", "x"][..],
            "unknown command \"frobnicate\"",
        ),
        (&["resources", "read", "--", "x"], "resources takes"),
        (
            &["prompts", "--arg", "a=b", "--", "x"],
            "--arg needs prompts get",
        ),
        (
            &["complete", "a", "--", "x"],
            "complete needs --prompt NAME or --resource",
        ),
        (
            &["--call", "echo", "prompts", "--", "x"],
            "give --call or prompts",
        ),
        (
            &["--info", "resources", "--", "x"],
            "give --info or resources",
        ),
        (
            &["resources", "read", "u", "--read", "--", "x"],
            "--read needs resources watch",
        ),
        (
            &["prompts", "get", "p", "--arg", "novalue", "--", "x"],
            "--arg takes KEY=VALUE",
        ),
    ] {
        let out = cli(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert!(out.stderr.contains(said), "{args:?}: {out:?}");
    }
}

/// A config with server-everything twice (`a`, `b`), the test kit's server (`kit`: tools only)
/// and one that cannot start (`bad`).
fn config(dir: &TempDir, everything: &std::path::Path) -> PathBuf {
    let e = everything.to_str().unwrap();
    let kit = serve_bin();
    let config = serde_json::json!({"mcpServers": {
        "a": {"command": e, "args": ["stdio"]},
        "kit": {"command": kit},
        "b": {"command": e, "args": ["stdio"]},
        "bad": {"command": "/nonexistent/mcp-server"},
    }});
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

#[test]
fn across_a_config_each_item_names_its_server() {
    let Some(everything) = peer_bin("everything") else {
        return;
    };
    let dir = TempDir::new("mcp-cli-features-config");
    let file = config(&dir, &everything);
    let file = file.to_str().unwrap();

    // Listed from both, each named; the broken server said once; exit 3.
    let out = cli(&["--config", file, "resources"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let doc = "demo://resource/static/document/features.md";
    for server in ["a", "b"] {
        assert!(
            out.stdout.contains(&format!("{server} {doc}\t")),
            "{server}: {out:?}"
        );
    }
    assert_eq!(out.stderr.matches("\"bad\"").count(), 1, "{out:?}");
    let listed = json_line(&cli(&["--config", file, "resources", "--json"]));
    let servers: std::collections::BTreeSet<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["server"].as_str().unwrap())
        .collect();
    assert_eq!(servers.into_iter().collect::<Vec<_>>(), ["a", "b"]);
    assert!(listed[0]["resource"]["uri"].is_string(), "{listed}");

    // Prompts: SERVER__PROMPT, got by that name.
    let prompts = json_line(&cli(&["--config", file, "prompts", "--json"]));
    let b = prompts
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "b__args-prompt")
        .expect("b__args-prompt");
    assert_eq!(b["server"], "b");
    assert_eq!(b["prompt"]["name"], "args-prompt");
    let out = cli(&[
        "--config",
        file,
        "prompts",
        "get",
        "b__args-prompt",
        "--arg",
        "city=Rome",
    ]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(out.stdout, "user: What's weather in Rome?\n");
    let out = cli(&[
        "--config",
        file,
        "complete",
        "--prompt",
        "a__completable-prompt",
        "department",
        "E",
    ]);
    assert_eq!(out.stdout, "Engineering\n", "{out:?}");

    // A URI both list must name its server; --server names it.
    let out = cli(&["--config", file, "resources", "read", doc]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("is listed by servers [\"a\", \"b\"]: name one with --server"),
        "{out:?}"
    );
    let out = cli(&[
        "--config",
        file,
        "--server",
        "b",
        "resources",
        "read",
        BLOB,
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let read = json_line(&out);
    assert_eq!(read["server"], "b");
    assert_eq!(read["result"]["contents"][0]["uri"], BLOB);
}

#[test]
fn watch_prints_updates_until_sigint() {
    let Some(everything) = peer_bin("everything") else {
        return;
    };
    let uri = "demo://resource/static/document/features.md";
    let mut command = Command::new(CLI);
    command
        .args(["resources", "watch", uri, "--json"])
        .args(["--call", "toggle-subscriber-updates"])
        .args(["--", everything.to_str().unwrap(), "stdio"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut cli = GroupGuard::spawn(&mut command).expect("spawn mcp-client");
    let stdout = cli.child().stdout.take().unwrap();
    let stderr = cli.child().stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut { stderr }, &mut s);
        s
    });
    // The first update, as it is printed.
    let line = match rx.recv_timeout(EVENT) {
        Ok(line) => line,
        Err(e) => {
            let _ = cli.stop();
            panic!("no update: {e}; stderr: {}", err.join().unwrap())
        }
    };
    let update: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(update, serde_json::json!({ "uri": uri }));
    let status = Command::new("kill")
        .args(["-INT", &cli.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = cli.child().wait().unwrap();
    let stderr = err.join().unwrap();
    assert_eq!(exit.code(), Some(130), "{stderr}");
    assert!(stderr.contains("SIGINT: closing the servers"), "{stderr}");
    // Every further line is an update too.
    for line in rx.try_iter() {
        assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["uri"], uri);
    }
}

/// With --config: the server --server names is watched, each update names it, and --read
/// prints the contents again, as a read across the set does.
#[test]
fn a_watch_across_a_config_names_its_server_and_reads_again() {
    let Some(everything) = peer_bin("everything") else {
        return;
    };
    let dir = TempDir::new("mcp-cli-features-watch");
    let file = config(&dir, &everything);
    let uri = "demo://resource/static/document/features.md";
    let mut command = Command::new(CLI);
    command
        .args(["--config", file.to_str().unwrap(), "--server", "b"])
        .args(["resources", "watch", uri, "--read", "--json"])
        .args(["--call", "b__toggle-subscriber-updates"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut cli = GroupGuard::spawn(&mut command).expect("spawn mcp-client");
    let stdout = cli.child().stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next = || {
        let line = rx.recv_timeout(EVENT).expect("a line");
        serde_json::from_str::<Value>(&line).unwrap()
    };
    assert_eq!(next(), serde_json::json!({"server": "b", "uri": uri}));
    let read = next();
    assert_eq!(read["server"], "b");
    assert_eq!(read["result"]["contents"][0]["uri"], uri);
    let status = Command::new("kill")
        .args(["-TERM", &cli.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(cli.child().wait().unwrap().code(), Some(143));
}
