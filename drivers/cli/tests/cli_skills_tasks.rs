//! The `skills` command and `--task`, as a user runs them: the test kit's server with `--behave
//! skills` (one true skill, and skills whose files lie about their size, digest or frontmatter)
//! and `--behave tasks-…` (a tool that requires a task, one that allows it, tasks that end, never
//! end, or whose server dies), over stdio, across a config's servers, and over Streamable HTTP
//! (the test kit's HTTP server with skills; server-everything's resources, prompts, completion
//! and its task tool). Bad command lines exit 1 before any server starts.
//!
//! server-everything comes from `.ci/install-peers`: the test that needs it prints `skipped: …`
//! and passes when it is missing, and fails instead under `CI=true`.

use mcp_testkit::{
    http_server, peer_bin, pid_alive, run_within, serve_bin, Finished, HttpPeer, TempDir, Watched,
};
use serde_json::Value;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The `mcp-client` binary, built by cargo for this package's tests.
const CLI: &str = env!("CARGO_BIN_EXE_mcp-client");

/// A backstop for what comes at once: a loaded machine is slow, never this slow.
const EVENT: Duration = Duration::from_secs(60);

fn cli(args: &[&str]) -> Finished {
    run_within(Command::new(CLI).args(args), Duration::from_secs(120))
}

/// `mcp-client ARGS -- mcp-testkit-serve --behave BEHAVE`.
fn against(behave: &str, args: &[&str]) -> Finished {
    let bin = serve_bin();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", bin.to_str().unwrap(), "--behave", behave]);
    cli(&all)
}

fn json_line(out: &Finished) -> Value {
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one line of JSON: {out:?}");
    serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// The true skill's `SKILL.md`, as the test kit serves it.
const PDF_SKILL_MD: &str = "---\nname: pdf-processing\ndescription: The pdf-processing skill\nmetadata:\n  version: 2.1\n---\n\n# pdf-processing\n\nRead references/FORMS.md.\n";

/// Listing, loading and refusing, against `target` (the args that name the server).
fn skills_checks(target: &[&str]) {
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(target);
        cli(&all)
    };
    // NAME<TAB>DESCRIPTION; `list` is the default verb.
    let out = run(&["skills"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stdout
            .lines()
            .any(|l| l == "pdf-processing\tThe pdf-processing skill"),
        "{out:?}"
    );
    assert!(!out.stdout.contains("hidden"), "unlisted: {out:?}");
    assert_eq!(run(&["skills", "list"]).stdout, out.stdout);
    let listed = json_line(&run(&["skills", "--json"]));
    let pdf = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["frontmatter"]["name"] == "pdf-processing")
        .expect("pdf-processing");
    assert_eq!(pdf["uri"], "skill://pdf-processing/SKILL.md");

    // Loaded: the verified SKILL.md as it is; by URI too (an unlisted one through skills/get).
    let out = run(&["skills", "load", "pdf-processing"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, PDF_SKILL_MD);
    let out = run(&["skills", "load", "skill://hidden/SKILL.md"]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.starts_with("---\nname: hidden\n"), "{out:?}");
    let got = json_line(&run(&["skills", "load", "pdf-processing", "--json"]));
    assert_eq!(got["text"], PDF_SKILL_MD);
    assert_eq!(got["uri"], "skill://pdf-processing/SKILL.md");
    // A supporting file, verified; a binary one only into --out.
    let out = run(&[
        "skills",
        "load",
        "pdf-processing",
        "--file",
        "references/FORMS.md",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "Supporting content.\n");
    let binary = [
        "skills",
        "load",
        "pdf-processing",
        "--file",
        "references/data.bin",
    ];
    let out = run(&binary);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr.trim(),
        "mcp-client: references/data.bin is a binary file of 4 bytes: write it with --out FILE"
    );
    let dir = TempDir::new("mcp-cli-skills");
    let file = dir.path().join("data.bin");
    let mut to_file = binary.to_vec();
    to_file.extend(["--out", file.to_str().unwrap()]);
    let out = run(&to_file);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read(&file).unwrap().len(), 4);

    // The liars: refused with the reason, exit 1, nothing of the file printed.
    for (args, why) in [
        (vec!["size-lie"], "bytes where the skill's entry says 119"),
        (vec!["digest-lie"], "digest sha256:"),
        (
            vec!["frontmatter-lie"],
            "frontmatter field \"description\" differs",
        ),
        (vec!["huge"], "over the limits"),
        (vec!["escape"], "is not a file of the skill's directory"),
        (vec!["big-read"], "where the skill's entry says 100"),
        (
            vec!["file-lie", "--file", "references/DATA.md"],
            "digest sha256:",
        ),
        (vec!["pdf-processing", "--file", "../escape/SKILL.md"], ""),
    ] {
        let mut all = vec!["skills", "load"];
        all.extend(&args);
        let out = run(&all);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert_eq!(out.stdout, "", "{args:?}: nothing printed");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {out:?}");
        assert!(
            out.stderr
                .starts_with(&format!("mcp-client: skill {:?} refused: ", args[0]))
                && out.stderr.contains(why),
            "{args:?}: {out:?}"
        );
    }
    let out = run(&["skills", "load", "nope"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr.trim(),
        "mcp-client: no skill named \"nope\" (skills list shows them)"
    );
}

#[test]
fn skills_are_listed_loaded_and_refused_when_they_lie() {
    let bin = serve_bin();
    skills_checks(&["--", bin.to_str().unwrap(), "--behave", "skills"]);
    // A server without the extension: a clear failure, exit 1.
    let out = against("hostile-text", &["skills"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stderr.contains("skills"), "{out:?}");
}

#[test]
fn skills_over_streamable_http() {
    let server = http_server::start(http_server::Behaviour {
        skills: true,
        ..Default::default()
    })
    .expect("start the HTTP server");
    skills_checks(&["--url", &server.url]);
}

/// A config of servers `a` and `b` (skills), `c` (none).
fn config(dir: &TempDir) -> String {
    let bin = serve_bin();
    let server = |behave: &str| serde_json::json!({"command": bin, "args": ["--behave", behave]});
    let file = dir.path().join("mcp.json");
    let config = serde_json::json!({"mcpServers": {
        "a": server("skills"), "b": server("skills"), "c": server("hostile-text")}});
    std::fs::write(&file, config.to_string()).unwrap();
    file.display().to_string()
}

#[test]
fn skills_across_a_config_name_their_server() {
    let dir = TempDir::new("mcp-cli-skills-config");
    let file = config(&dir);
    let out = cli(&["skills", "--config", &file]);
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines.contains(&"a pdf-processing\tThe pdf-processing skill"),
        "{out:?}"
    );
    assert!(
        lines.contains(&"b pdf-processing\tThe pdf-processing skill"),
        "{out:?}"
    );
    // c declares no skills: it offers none, and is no failure.
    assert!(!out.stdout.contains("\nc "), "{out:?}");
    let listed = json_line(&cli(&["skills", "--json", "--config", &file]));
    assert_eq!(listed[0]["server"], "a");
    assert_eq!(listed[0]["skill"]["frontmatter"]["name"], "pdf-processing");

    // Listed by two servers: which one is the person's to say.
    let out = cli(&["skills", "load", "pdf-processing", "--config", &file]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr.trim(),
        "mcp-client: a skill \"pdf-processing\" is listed by servers [\"a\", \"b\"]: name one with --server"
    );
    let out = cli(&[
        "skills",
        "load",
        "pdf-processing",
        "--config",
        &file,
        "--server",
        "b",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, PDF_SKILL_MD);
    let got = json_line(&cli(&[
        "skills",
        "load",
        "pdf-processing",
        "--file",
        "references/FORMS.md",
        "--json",
        "--config",
        &file,
        "--server",
        "a",
    ]));
    assert_eq!(got["server"], "a");
    assert_eq!(got["text"], "Supporting content.\n");
    // A liar is refused naming its server.
    let out = cli(&[
        "skills",
        "load",
        "digest-lie",
        "--config",
        &file,
        "--server",
        "a",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr
            .starts_with("mcp-client: skill \"digest-lie\" of server \"a\" refused: "),
        "{out:?}"
    );
    let out = cli(&["skills", "load", "nope", "--config", &file]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr.trim(),
        "mcp-client: no server lists a skill \"nope\": name its server with --server"
    );
}

#[test]
fn task_runs_a_tool_that_allows_tasks_as_one() {
    // `survey` allows tasks: with --task it runs as one (its status messages as progress)...
    let out = against("tasks-ok", &["--call", "survey", "--task"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "researched\n");
    assert!(out.stderr.contains("serve: tasks/result t1"), "{out:?}");
    assert!(out.stderr.contains("progress: 1 working (1)"), "{out:?}");
    // ...without, as a plain call.
    let out = against("tasks-ok", &["--call", "survey"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "surveyed without a task\n");
    assert!(!out.stderr.contains("tasks/"), "{out:?}");
    // `research` requires one: --task or not.
    let out = against("tasks-ok", &["--call", "research", "--task", "--json"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(json_line(&out)["text"], "researched");

    // A tool that forbids tasks, a server that takes none, a tool not listed: exit 1, why.
    let out = against("tasks-ok", &["--call", "echo", "--task"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr.trim(),
        "mcp-client: --task: tool \"echo\" does not allow tasks (its execution.taskSupport is not \"optional\" or \"required\")"
    );
    let out = against("hostile-text", &["--call", "echo", "--task"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr.trim(),
        "mcp-client: --task: the server does not take tool calls as tasks (it declares no tasks.requests.tools.call)"
    );
    let out = against("tasks-ok", &["--call", "nope", "--task"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr.trim(),
        "mcp-client: --task: the server lists no tool \"nope\""
    );
}

#[test]
fn a_task_that_never_ends_is_cancelled_at_max_time() {
    let started = Instant::now();
    let out = against(
        "tasks-forever",
        &["--call", "survey", "--task", "--max-time", "0.5"],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        out.stderr.lines().last().unwrap_or_default(),
        "mcp-client: tools/call \"survey\" (a task) exceeded --max-time 0.5 s",
        "{out:?}"
    );
    // Cancelled before the server was closed, once.
    assert_eq!(
        out.stderr.matches("serve: tasks/cancel t1").count(),
        1,
        "{out:?}"
    );
    assert!(started.elapsed() < EVENT, "{:?}", started.elapsed());
}

/// `mcp-client ARGS` running, its stderr gathered as it comes.
struct Running {
    cli: Watched,
}

impl Running {
    fn start(args: &[&str]) -> Running {
        let mut command = Command::new(CLI);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        Running {
            cli: Watched::spawn(&mut command),
        }
    }

    fn stderr(&self) -> String {
        self.cli.stderr()
    }

    fn wait_for_line(&self, line: &str) {
        self.cli.wait_for_line(line, EVENT);
    }

    /// Its exit status, and the rest of its stderr.
    fn wait(&mut self) -> ExitStatus {
        self.cli.wait(EVENT)
    }
}

fn kill(signal: &str, pid: u32) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
}

#[test]
fn sigint_during_a_task_cancels_it_and_exits_130() {
    let bin = serve_bin();
    let mut cli = Running::start(&[
        "--call",
        "survey",
        "--task",
        "--",
        bin.to_str().unwrap(),
        "--behave",
        "tasks-forever",
    ]);
    // Polled once: the task is under way.
    cli.wait_for_line("progress: 1 working");
    kill("INT", cli.cli.pid());
    let status = cli.wait();
    assert_eq!(status.code(), Some(130), "{}", cli.stderr());
    let stderr = cli.stderr();
    assert_eq!(
        stderr.matches("serve: tasks/cancel t1").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("mcp-client: task t1 cancelled"), "{stderr}");
}

#[test]
fn a_server_dying_mid_task_fails_the_call() {
    let dir = TempDir::new("mcp-cli-task-death");
    let pid_file = dir.path().join("server.pid");
    let script = format!(
        "echo $$ > '{}'; exec '{}' --behave tasks-forever",
        pid_file.display(),
        serve_bin().display()
    );
    let mut cli = Running::start(&["--call", "research", "--", "sh", "-c", &script]);
    cli.wait_for_line("progress: 1 working");
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    kill("KILL", pid);
    let status = cli.wait();
    assert_eq!(status.code(), Some(1), "{}", cli.stderr());
    let stderr = cli.stderr();
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("mcp-client: "), "{stderr}");
    assert!(
        last.contains("signal 9") || last.contains("exited"),
        "{stderr}"
    );
    assert!(!pid_alive(pid));
}

#[test]
fn bad_command_lines_exit_1_before_anything_starts() {
    let dir = TempDir::new("mcp-cli-usage");
    let mark = dir.path().join("started");
    let script = format!(
        "touch '{}'; exec '{}'",
        mark.display(),
        serve_bin().display()
    );
    for (args, said) in [
        (vec!["--task"], "--task needs --call"),
        (
            vec!["--call", "a", "--task", "--repeat", "2"],
            "give --task or --repeat, not both (a task is one call)",
        ),
        (
            vec!["skills", "load"],
            "skills takes list or load NAME (one name)",
        ),
        (
            vec!["skills", "load", "a", "b"],
            "skills takes list or load NAME (one name)",
        ),
        (
            vec!["skills", "get", "a"],
            "skills takes list or load NAME (one name)",
        ),
        (vec!["skills", "--file", "x"], "--file needs skills load"),
        (
            vec!["skills", "load", "a", "--file", "x", "--file", "y"],
            "--file is given twice",
        ),
        (
            vec!["skills", "--out", "x"],
            "--out needs resources read or skills load",
        ),
        (
            vec!["skills", "--call", "echo"],
            "give --call or skills (--call goes with resources watch only)",
        ),
        (
            vec!["prompts", "get"],
            "prompts takes list or get NAME (one name)",
        ),
        (vec!["--max-time", "1"], "--max-time needs --call"),
        (vec!["--args", "{}"], "--args needs --call"),
    ] {
        let mut all = args.clone();
        all.extend(["--", "sh", "-c", &script]);
        let out = cli(&all);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert_eq!(out.stderr.trim(), format!("mcp-client: {said}"), "{args:?}");
        assert!(!mark.exists(), "the server was started for {args:?}");
    }
    // --task with --config: one server's option.
    let out = cli(&["--call", "a__b", "--task", "--config", "/nonexistent.json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr
            .starts_with("mcp-client: --task works on one server"),
        "{out:?}"
    );
}

/// The commands that were tested over stdio, now over Streamable HTTP against server-everything:
/// resources (list, read), prompts (list, get), completion, and a --task call of its research
/// tool (which requires a task).
#[test]
fn resources_prompts_completion_and_task_over_http() {
    let Some(everything) = peer_bin("everything") else {
        return;
    };
    let peer = HttpPeer::everything(&everything);
    let url = peer.url.clone();
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--url", &url, "--no-auth-store"]);
        cli(&all)
    };
    let out = run(&["resources"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("demo://resource/static/document/features.md\t")),
        "{out:?}"
    );
    let out = run(&[
        "resources",
        "read",
        "demo://resource/static/document/features.md",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(!out.stdout.is_empty(), "{out:?}");
    let out = run(&["resources", "templates", "--json"]);
    assert!(out.status.success(), "{out:?}");
    assert!(json_line(&out).as_array().is_some_and(|t| !t.is_empty()));
    let out = run(&["prompts"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stdout.lines().any(|l| l.starts_with("args-prompt\t")),
        "{out:?}"
    );
    let out = run(&["prompts", "get", "args-prompt", "--arg", "city=Paris"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "user: What's weather in Paris?\n");
    let out = run(&[
        "complete",
        "--prompt",
        "completable-prompt",
        "name",
        "--context",
        "department=Sales",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, "David\nEve\nFrank\n");
    let out = run(&[
        "--call",
        "simulate-research-query",
        "--args",
        r#"{"topic":"http"}"#,
        "--task",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.contains("http"), "{out:?}");
    assert!(out.stderr.contains("progress: "), "{out:?}");
    peer.stop();
}
