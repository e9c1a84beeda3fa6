//! A minimal MCP server over stdio, std only: the test kit's binary `mcp-testkit-serve [--era E]
//! [--behave B[,B…]]` for the tests and benchmarks, and, well behaved ([`serve`]), the server of the
//! `mcp-client` example's offline demo (`mcp-client --serve`). `--era E` picks the protocol era it
//! speaks; `--behave B[,B…]` makes it misbehave on purpose.
//!
//! Its tools are [`crate::tools`]. It calls itself `mcp-client-serve` (`serverInfo`).
//!
//! Eras:
//! - `legacy` (the default): the `initialize` handshake (2024-11-05 … 2025-11-25); anything it does
//!   not know, `server/discover` included, gets -32601, as a legacy server answers the era probe.
//! - `modern`: 2026-07-28 only. `server/discover` answers; every request must carry
//!   `io.modelcontextprotocol/{protocolVersion,clientInfo,clientCapabilities}` in `params._meta`
//!   (-32602 otherwise) with a version it speaks (-32022 otherwise); `initialize` is refused with
//!   an error that names the versions it supports; every result says `resultType` and carries the
//!   server's identity in its `_meta`; there is no `ping`.
//! - `dual`: both, chosen per request: a request (other than `initialize`) whose `params._meta`
//!   holds the protocol version key is served in the modern era, any other in the legacy era.
//!
//! Behaviours of either era: `crash-on-call` (exits with code 3 on `tools/call`), `hang`
//! (`tools/call` is never answered), `stderr-flood` (20 MiB on stderr before answering a call),
//! `junk` (non-JSON lines on stdout before a call's answer), `banner` (a line that is not JSON
//! on stdout at start, before reading anything, as a server that greets there does), `ping-first` (a call first sends the
//! client a `ping` and a `sampling/createMessage`, and appends their answers to its text;
//! with `ask-on-roots-change` too, it asks only once the client sent
//! `notifications/roots/list_changed`),
//! `ping-idle` (pings the client after each call and logs whether it answered), `ignore-eof`
//! (keeps running after its stdin ends), `threaded` (each call answered from a thread of its own,
//! out of order), `exit-before-handshake` (exits with code 4 at once), `progress-burst` (a
//! `tools/call` with a `progressToken` gets five `notifications/progress` and its answer in one
//! write; calls without one keep the other behaviours, so `progress-burst,hang` answers only
//! those), `progress-ticks` (`tools/call slow {"ms": N}` with a `progressToken` reports progress
//! every 100 ms while it waits its N ms, then answers).
//!
//! `lists-change` (legacy era): declares `listChanged` for tools, resources and prompts, and
//! after each `tools/call`'s answer sends `notifications/{tools,resources,prompts}/list_changed`.
//!
//! Listing behaviours of the legacy era (each logged on stderr as it happens): `hang-list`
//! (`tools/list` is never answered), `list-error` (`tools/list` gets -32603), `hang-relist` (the
//! first `tools/list` is answered, no later one), `no-tools` (no `tools` capability declared, and
//! `tools/list` refused as an unknown method, -32601: a server of resources or prompts only).
//!
//! Behaviours of the modern era: `mrtr-state` (`tools/call slow {"rounds": N, "hang": bool}`
//! answers `input_required` with only a `requestState` for N rounds (default 3), checking that each
//! round comes with a new id and the exact state, then completes with a text that says so; with
//! `hang`, the last round is not answered), `mrtr-elicit` (`tools/call` asks for
//! `elicitation/create`), `mrtr-forever` (`tools/call` is never done), `version-mismatch` (the first
//! request gets -32022 naming 2026-07-28), `unknown-result-type` (`tools/call` answers `resultType:
//! "mystery"`), `slow-discover` (`server/discover` answers after 1 s, while other requests are
//! answered at once). Of the legacy era: `ignore-discover` (`server/discover` is never answered),
//! `exit-on-discover` (exits with code 3 on it), `slow-discover-error` (-32601 to it after 3 s,
//! while other requests are answered at once).
//!
//! Behaviours of the legacy era for the CLI's tests: `hostile-text` (every string a person may be
//! shown holds [`HOSTILE`]'s terminal escapes: its identity and instructions, its tools' names and
//! descriptions, and in each `tools/call` a log message, a progress message (when the call has a
//! `progressToken`), a stderr line and the result's text; tool `fail` is a JSON-RPC error with it,
//! `crash` writes it on stderr and exits with code 3, `ask-form` and `ask-url` ask the client for a
//! form- or URL-mode `elicitation/create` (the URL is the `url` argument, else a link that shows one
//! URL and opens another) and answer its reply, as JSON text); `show-capabilities` (logs the
//! capabilities of each `initialize` on stderr: `serve: client capabilities {…}`);
//! `long-description` (tool `echo`'s description is [`LONG_DESCRIPTION`], a docstring of
//! several paragraphs).
//!
//! Task behaviours, either era (2025-11-25's SEP-1686 wire in the legacy era, 2026-07-28's
//! `io.modelcontextprotocol/tasks` extension in the modern one): `tasks-ok`, `tasks-forever`,
//! `tasks-no-result`, `tasks-failed`, `tasks-plain`, `tasks-backwards`, `tasks-wrong-id`,
//! `tasks-huge-message`, `tasks-notify`, and `tasks-input` (modern): the server declares tasks,
//! lists tool `research` that requires them and `survey` that allows them — plainly called, it
//! answers `surveyed without a task` — and its task `t1` completes after two polls, stays
//! `working`, completes with a result never sent, fails, or the task call is answered with a
//! plain result; completes then says it works again; is answered for `t2`; carries a 1 MiB status
//! message; comes with status notifications for unknown tasks and a lying one for `t1`; or waits
//! for an elicitation answered with `tasks/update` (see `TaskMode`). Every `tasks/…` request is
//! logged on stderr (`serve: tasks/cancel t1`).
//!
//! `skills` (either era): the server declares the skills extension (SEP-2640, with
//! `directoryRead`) and serves [`crate::skills`]' true and hostile skills.
//!
//! In the modern and dual eras, every `initialize` and `server/discover` received is logged on
//! stderr (`serve: got initialize`), and so is the end of input, with their counts (`serve: end of
//! input; initialize ×0, server/discover ×1`).

use crate::tools;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::Duration;

/// The modern versions the server speaks.
const MODERN: &str = "2026-07-28";
/// The legacy versions it speaks.
const LEGACY: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_INFO_META: &str = "io.modelcontextprotocol/clientInfo";
const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";

/// The protocol era the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Era {
    /// The `initialize` handshake (2024-11-05 … 2025-11-25); `server/discover` gets -32601.
    #[default]
    Legacy,
    /// 2026-07-28 only.
    Modern,
    /// Both, chosen per request.
    Dual,
}

impl Era {
    /// `legacy`, `modern` or `dual`.
    pub fn from_name(name: &str) -> Option<Era> {
        match name {
            "legacy" => Some(Era::Legacy),
            "modern" => Some(Era::Modern),
            "dual" => Some(Era::Dual),
            _ => None,
        }
    }
}

#[derive(Default)]
struct Behaviour {
    era: Era,
    crash_on_call: bool,
    hang: bool,
    stderr_flood: usize,
    junk: bool,
    /// `banner`: a greeting on stdout at start.
    banner: bool,
    ping_first: bool,
    /// `ask-on-roots-change`: `ping-first` asks only after `notifications/roots/list_changed`.
    ask_on_roots_change: bool,
    ignore_eof: bool,
    ping_idle: bool,
    threaded: bool,
    mrtr_state: bool,
    mrtr_elicit: bool,
    mrtr_forever: bool,
    version_mismatch: bool,
    unknown_result_type: bool,
    ignore_discover: bool,
    exit_on_discover: bool,
    slow_discover_error: bool,
    slow_discover: bool,
    /// After the first call, lists one more tool (`grown`) and says so
    /// (`notifications/tools/list_changed`; legacy era).
    grow: bool,
    /// `swap`: as `grow`, and the grown list no longer has `slow` (a tool added, one removed).
    swap: bool,
    /// `lists-change`: declares `listChanged` for tools, resources and prompts, and after each
    /// `tools/call`'s answer says all three lists changed (legacy era).
    lists_change: bool,
    /// A `tools/call` that asks for progress gets five progress notifications and its answer
    /// in one write (other calls keep the other behaviours).
    progress_burst: bool,
    /// `tools/call slow` with a `progressToken` reports progress every 100 ms while it waits.
    progress_ticks: bool,
    /// `hostile-text`: [`HOSTILE`] in every string a person may be shown (legacy era).
    hostile_text: bool,
    /// `show-capabilities`: each `initialize`'s capabilities logged on stderr.
    show_capabilities: bool,
    /// `skills`: the skills extension, with hostile skills ([`crate::skills`]).
    skills: bool,
    /// `long-description`: tool `echo`'s description is [`LONG_DESCRIPTION`] (legacy era).
    long_description: bool,
    /// `tools/list` is never answered (legacy era).
    hang_list: bool,
    /// `tools/list` is answered with an error, -32603 (legacy era).
    list_error: bool,
    /// The first `tools/list` is answered, no later one (legacy era).
    hang_relist: bool,
    /// `no-tools`: no `tools` capability, and `tools/list` is an unknown method (legacy era).
    no_tools: bool,
    /// `tasks-…`: declares tasks (SEP-1686 in the legacy era, the `io.modelcontextprotocol/tasks`
    /// extension in the modern one) and lists tool `research` (`execution.taskSupport:
    /// "required"`), whose task call goes as the mode says (see [`task_reply`]).
    tasks: Option<TaskMode>,
}

/// How the `tasks-…` behaviours answer a task-augmented `research` call.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum TaskMode {
    /// `tasks-ok`: task `t1` works for two polls, then completes with text `researched`.
    Ok,
    /// `tasks-forever`: task `t1` stays `working` (every poll says so, `pollInterval` 50 ms).
    Forever,
    /// `tasks-no-result`: task `t1` is `completed` at once, and `tasks/result` is never
    /// answered (2026-07-28: `completed` with no `result`).
    NoResult,
    /// `tasks-failed`: task `t1` is `failed`, and `tasks/result` answers -32603 (2026-07-28:
    /// the error inlined).
    Failed,
    /// `tasks-plain`: the task call is answered with a plain result (`plain`), no task.
    Plain,
    /// `tasks-backwards`: `t1` completes on the first poll, and every later poll says it is
    /// `working` again (out of a terminal state).
    Backwards,
    /// `tasks-wrong-id`: every poll answers for task `t2`.
    WrongId,
    /// `tasks-huge-message`: every poll's `statusMessage` is 1 MiB (then as `tasks-ok`).
    HugeMessage,
    /// `tasks-notify`: before each answer, status notifications for unknown tasks (`zz0`…),
    /// and for `t1` one that says it completed (with a result, `from a notification`) while
    /// polls say `working` for five polls, then `completed` (`researched`).
    Notify,
    /// `tasks-input` (2026-07-28): `t1` is `input_required` with an `elicitation/create` (key
    /// `name`) until a `tasks/update` answers it, then completes with `hello <name>`.
    Input,
}

/// What `hostile-text` puts in every string: an OSC 8 link that shows one URL and opens another,
/// a window title (OSC 0, ended by BEL), erase-line and hidden-text CSI sequences, a C1 CSI
/// (U+009B), DEL, NUL, a carriage return that would overwrite the line, a vertical tab and a
/// backspace.
pub const HOSTILE: &str = "\x1b]8;;https://evil.example/steal\x1b\\https://accounts.google.com/signin\x1b]8;;\x1b\\ \
    \x1b]0;PWNED-TITLE\x07 \x1b[2K all good \x1b[8m hidden \u{9b}31m red \x7f\0 over\rwrite \x0b\x08";

/// Tool `echo`'s description with `--behave long-description`: a Python docstring as the
/// Python SDK sends one (indented, blank lines around it and between its paragraphs, a nested
/// list, a line of 300 characters), with a CRLF, a tab, trailing blanks and a terminal escape.
pub const LONG_DESCRIPTION: &str = "\n    Echoes its text back.  \r\n\n\n\n    Args:\n        \
    text: what to echo\n        tag:\tan optional \x1b[31mtag\n          - kept as given\n\n    \
    Returns the text, then the tag.\n    \
    0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\
    0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\
    0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\n\n    ";

/// Collects what is written and hands it to the writer thread at each flush (`threaded` mode, in
/// which call threads answer on their own, out of order; and `slow-discover-error`, whose late
/// answer comes from a thread).
struct ChannelWriter {
    buf: Vec<u8>,
    tx: std::sync::mpsc::Sender<Vec<u8>>,
}

impl Write for ChannelWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            self.tx
                .send(std::mem::take(&mut self.buf))
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        }
        Ok(())
    }
}

/// One input-required chain of `mrtr-state`: a `tools/call slow` answered over several rounds.
struct Chain {
    number: u64,
    /// Rounds answered `input_required` so far.
    round: u32,
    total: u32,
    hang: bool,
    /// The params of the first round (less `requestState` and `_meta`): every round must repeat
    /// them.
    params: Value,
    /// The JSON-RPC ids of its rounds, as JSON text.
    ids: Vec<String>,
}

/// What the modern behaviours remember.
#[derive(Default)]
struct Mrtr {
    /// Live chains by the `requestState` they wait for.
    chains: HashMap<String, Chain>,
    next_chain: u64,
    /// `mrtr-forever`: rounds answered so far.
    forever_rounds: u32,
    /// Every request id seen (JSON text), to tell a reused one.
    seen_ids: HashSet<String>,
    /// Whether the request being handled came with an id never seen before.
    fresh_id: bool,
}

/// The well-behaved server in `era`, until the end of its input.
pub fn serve(era: Era) -> ExitCode {
    run(Behaviour {
        era,
        ..Behaviour::default()
    })
}

/// The `tasks-…` behaviours' answers: `None` for a method they leave to the rest of the server,
/// `Some(None)` for a request left unanswered on purpose. Every task request and the
/// cancellation are logged on stderr (`serve: tasks/cancel t1`).
type TaskReply = Option<Option<Result<Value, Value>>>;

/// What the `tasks-…` behaviours remember: the polls so far, and the input `tasks-input` got.
#[derive(Default)]
struct TaskState {
    polls: u64,
    input: Option<String>,
}

/// In the modern era (`modern`) the tasks extension's wire: the server declares it in
/// `server/discover`, creates a task only for a call that declared it on itself (a plain call of
/// `research` gets -32021), answers with the task's members flat (`resultType: "task"`, `ttlMs`,
/// `pollIntervalMs`), inlines the result or error in `tasks/get`, acknowledges `tasks/cancel`
/// and `tasks/update` with an empty result, and has no `tasks/result` nor `tasks/list`.
fn task_reply(
    mode: TaskMode,
    modern: bool,
    msg: &Value,
    method: &str,
    state: &mut TaskState,
    out: &mut dyn Write,
) -> TaskReply {
    if method == "tasks/get" {
        state.polls += 1;
    }
    let polls = state.polls;
    let params = &msg["params"];
    let declared = params["_meta"][CLIENT_CAPABILITIES_META]["extensions"]
        .get("io.modelcontextprotocol/tasks")
        .is_some();
    let message = match mode {
        TaskMode::HugeMessage => "m".repeat(1 << 20),
        _ => String::new(),
    };
    let task = |status: &str| {
        let message = match mode {
            TaskMode::HugeMessage => message.clone(),
            _ => format!("{status} ({polls})"),
        };
        let id = if mode == TaskMode::WrongId && polls > 0 {
            "t2"
        } else {
            "t1"
        };
        if modern {
            json!({"taskId": id, "status": status, "statusMessage": message,
                   "createdAt": "2026-07-28T10:30:00Z", "lastUpdatedAt": "2026-07-28T10:30:00Z",
                   "ttlMs": 60000, "pollIntervalMs": 50})
        } else {
            json!({"taskId": id, "status": status, "statusMessage": message,
                   "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:30:00Z",
                   "ttl": 60000, "pollInterval": 50})
        }
    };
    let researched = json!({"content": [{"type": "text", "text": "researched"}]});
    if mode == TaskMode::Notify && (method == "tasks/get" || method == "tools/call") {
        let name = if modern {
            "notifications/tasks"
        } else {
            "notifications/tasks/status"
        };
        for n in 0..3 {
            let mut t = task("completed");
            t["taskId"] = json!(format!("zz{n}"));
            let note = json!({"jsonrpc": "2.0", "method": name, "params": t});
            let _ = writeln!(out, "{note}");
        }
        let mut t = task("completed");
        t["result"] = json!({"content": [{"type": "text", "text": "from a notification"}]});
        let _ = writeln!(
            out,
            "{}",
            json!({"jsonrpc": "2.0", "method": name, "params": t})
        );
        let _ = out.flush();
    }
    if method.starts_with("tasks/") {
        eprintln!(
            "serve: {method} {}",
            params["taskId"].as_str().unwrap_or("")
        );
        if modern && !declared {
            return Some(Some(Err(json!({"code": -32021,
                "message": "Missing required client capability",
                "data": {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}}))));
        }
        if modern && (method == "tasks/result" || method == "tasks/list") {
            return Some(Some(Err(
                json!({"code": -32601, "message": format!("Method not found: {method}")}),
            )));
        }
        if method != "tasks/list" && params["taskId"] != "t1" {
            return Some(Some(Err(
                json!({"code": -32602, "message": "Failed to retrieve task: Task not found"}),
            )));
        }
    }
    let done = |mut t: Value, result: Value| {
        t["result"] = result;
        t
    };
    Some(Some(Ok(match method {
        "initialize" if !modern => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {},
                             "requests": {"tools": {"call": {}}}}},
            "serverInfo": {"name": "mcp-client-serve-tasks", "version": env!("CARGO_PKG_VERSION")}
        }),
        "server/discover" if modern => json!({
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
            "serverInfo": {"name": "mcp-client-serve-tasks", "version": env!("CARGO_PKG_VERSION")}
        }),
        "tools/list" => {
            let mut list = tools::list();
            if let Some(tools) = list.as_array_mut() {
                tools.push(json!({"name": "research", "description": "A long task.",
                    "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}));
                tools.push(json!({"name": "survey", "description": "A task if asked.",
                    "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}));
            }
            json!({ "tools": list })
        }
        "tools/call"
            if params["name"] == "survey"
                && if modern {
                    !declared
                } else {
                    params.get("task").is_none()
                } =>
        {
            json!({"content": [{"type": "text", "text": "surveyed without a task"}]})
        }
        "tools/call" if params["name"] == "research" || params["name"] == "survey" => {
            if modern && !declared {
                eprintln!("serve: research without the tasks extension: -32021");
                return Some(Some(Err(json!({"code": -32021,
                    "message": "Missing required client capability",
                    "data": {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}}))));
            }
            if !modern && params.get("task").is_none() {
                return Some(Some(Err(json!({"code": -32601,
                    "message": "research must be called as a task"}))));
            }
            eprintln!("serve: research as a task");
            match (mode, modern) {
                (TaskMode::Plain, _) => json!({"content": [{"type": "text", "text": "plain"}]}),
                (_, true) => {
                    let mut t = task("working");
                    t["resultType"] = json!("task");
                    t
                }
                (_, false) => json!({ "task": task("working") }),
            }
        }
        "tasks/get" => match mode {
            TaskMode::Ok | TaskMode::HugeMessage if polls > 2 => {
                if modern {
                    done(task("completed"), researched)
                } else {
                    task("completed")
                }
            }
            TaskMode::Notify if polls > 5 => {
                if modern {
                    done(task("completed"), researched)
                } else {
                    task("completed")
                }
            }
            TaskMode::Backwards if polls == 1 => {
                if modern {
                    done(task("completed"), researched)
                } else {
                    task("completed")
                }
            }
            TaskMode::Input => match &state.input {
                Some(name) => done(
                    task("completed"),
                    json!({"content": [{"type": "text", "text": format!("hello {name}")}]}),
                ),
                None => {
                    let mut t = task("input_required");
                    t["inputRequests"] = json!({"name": {"method": "elicitation/create",
                        "params": {"mode": "form", "message": "Your name?",
                            "requestedSchema": {"type": "object",
                                "properties": {"name": {"type": "string"}}, "required": ["name"]}}}});
                    t
                }
            },
            TaskMode::NoResult => task("completed"),
            TaskMode::Failed => {
                let mut t = task("failed");
                if modern {
                    t["error"] = json!({"code": -32603, "message": "the task failed"});
                }
                t
            }
            _ => task("working"),
        },
        "tasks/update" => {
            let name = params["inputResponses"]["name"]["content"]["name"].as_str();
            eprintln!("serve: tasks/update t1 {}", name.unwrap_or("(no name)"));
            state.input = name.map(str::to_owned);
            json!({})
        }
        "tasks/result" => match mode {
            TaskMode::NoResult | TaskMode::Forever => return Some(None),
            TaskMode::Failed => {
                return Some(Some(Err(
                    json!({"code": -32603, "message": "the task failed"}),
                )))
            }
            _ => json!({"content": [{"type": "text", "text": "researched"}],
                        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t1"}}}),
        },
        "tasks/cancel" if modern => json!({}),
        "tasks/cancel" => task("cancelled"),
        "tasks/list" => json!({ "tasks": [task("working")] }),
        _ => return None,
    })))
}

/// The server as `mcp-testkit-serve ARGS…` runs it (`--era E`, `--behave B[,B…]`).
pub fn main(args: Vec<std::ffi::OsString>) -> ExitCode {
    let mut b = Behaviour::default();
    let mut args = args.into_iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--era" => {
                let name = args.next();
                b.era = match name.as_deref().and_then(Era::from_name) {
                    Some(era) => era,
                    None => {
                        eprintln!("serve: unknown era {name:?} (legacy, modern or dual)");
                        return ExitCode::from(1);
                    }
                }
            }
            "--behave" => {
                for name in args.next().unwrap_or_default().split(',') {
                    match name {
                        "crash-on-call" => b.crash_on_call = true,
                        "hang" => b.hang = true,
                        "stderr-flood" => b.stderr_flood = 20 * 1024 * 1024,
                        "junk" => b.junk = true,
                        "banner" => b.banner = true,
                        "ping-first" => b.ping_first = true,
                        "ask-on-roots-change" => b.ask_on_roots_change = true,
                        "ignore-eof" => b.ignore_eof = true,
                        "ping-idle" => b.ping_idle = true,
                        "threaded" => b.threaded = true,
                        "mrtr-state" => b.mrtr_state = true,
                        "mrtr-elicit" => b.mrtr_elicit = true,
                        "mrtr-forever" => b.mrtr_forever = true,
                        "version-mismatch" => b.version_mismatch = true,
                        "unknown-result-type" => b.unknown_result_type = true,
                        "ignore-discover" => b.ignore_discover = true,
                        "exit-on-discover" => b.exit_on_discover = true,
                        "slow-discover-error" => b.slow_discover_error = true,
                        "slow-discover" => b.slow_discover = true,
                        "grow" => b.grow = true,
                        "swap" => (b.grow, b.swap) = (true, true),
                        "lists-change" => b.lists_change = true,
                        "progress-burst" => b.progress_burst = true,
                        "progress-ticks" => b.progress_ticks = true,
                        "hostile-text" => b.hostile_text = true,
                        "show-capabilities" => b.show_capabilities = true,
                        "skills" => b.skills = true,
                        "long-description" => b.long_description = true,
                        "hang-list" => b.hang_list = true,
                        "list-error" => b.list_error = true,
                        "no-tools" => b.no_tools = true,
                        "hang-relist" => b.hang_relist = true,
                        "tasks-ok" => b.tasks = Some(TaskMode::Ok),
                        "tasks-forever" => b.tasks = Some(TaskMode::Forever),
                        "tasks-no-result" => b.tasks = Some(TaskMode::NoResult),
                        "tasks-failed" => b.tasks = Some(TaskMode::Failed),
                        "tasks-plain" => b.tasks = Some(TaskMode::Plain),
                        "tasks-backwards" => b.tasks = Some(TaskMode::Backwards),
                        "tasks-wrong-id" => b.tasks = Some(TaskMode::WrongId),
                        "tasks-huge-message" => b.tasks = Some(TaskMode::HugeMessage),
                        "tasks-notify" => b.tasks = Some(TaskMode::Notify),
                        "tasks-input" => b.tasks = Some(TaskMode::Input),
                        "exit-before-handshake" => {
                            eprintln!("serve: exiting before the handshake, on purpose");
                            return ExitCode::from(4);
                        }
                        other => {
                            eprintln!("serve: unknown behaviour {other:?}");
                            return ExitCode::from(1);
                        }
                    }
                }
            }
            other => {
                eprintln!("serve: unexpected argument {other:?}");
                return ExitCode::from(1);
            }
        }
    }
    run(b)
}

/// Serves stdin to stdout as `b` says, until the end of input.
fn run(b: Behaviour) -> ExitCode {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let mut out: Box<dyn Write> = if b.threaded || b.slow_discover_error || b.slow_discover {
        std::thread::spawn(move || {
            let mut stdout = std::io::stdout().lock();
            for bytes in rx {
                if stdout
                    .write_all(&bytes)
                    .and_then(|()| stdout.flush())
                    .is_err()
                {
                    return;
                }
            }
        });
        Box::new(ChannelWriter {
            buf: Vec::new(),
            tx: tx.clone(),
        })
    } else {
        drop(rx);
        Box::new(std::io::BufWriter::new(std::io::stdout().lock()))
    };
    if b.banner {
        let greeted = writeln!(out, "mcp-testkit-serve starting (a banner on stdout)")
            .and_then(|()| out.flush());
        if greeted.is_err() {
            return ExitCode::from(1);
        }
    }
    let mut line = String::new();
    // A line read ahead (by `ping-idle`) that still has to be handled.
    let mut pending: Option<String> = None;
    let mut mrtr = Mrtr::default();
    // `grow`: the first call has been answered, and the list grew.
    let mut grown = false;
    let (mut initializes, mut discovers) = (0u64, 0u64);
    let mut first_request = true;
    // `tools/list` requests received so far.
    let mut listings = 0u64;
    // What the `tasks-…` behaviours remember.
    let mut tasks = TaskState::default();
    loop {
        line.clear();
        if let Some(ahead) = pending.take() {
            line = ahead;
        } else {
            match input.read_line(&mut line) {
                Ok(0) | Err(_) if b.ignore_eof => loop {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                },
                Ok(0) | Err(_) => {
                    if b.era != Era::Legacy {
                        eprintln!(
                            "serve: end of input; initialize ×{initializes}, server/discover ×{discovers}"
                        );
                    }
                    return ExitCode::SUCCESS;
                }
                Ok(_) => {}
            }
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            eprintln!("serve: ignoring a line that is not JSON");
            continue;
        };
        let method = msg["method"].as_str().unwrap_or_default();
        let id = msg.get("id").cloned();
        let Some(id) = id else {
            if method == "notifications/cancelled" {
                eprintln!("serve: cancelled {}", msg["params"]["requestId"]);
            }
            continue;
        };
        if method.is_empty() {
            // An answer to one of our requests.
            if id == "idle-ping" {
                eprintln!("serve: idle pong {}", line.trim_end());
            }
            continue;
        }
        if b.show_capabilities && method == "initialize" {
            eprintln!(
                "serve: client capabilities {}",
                msg["params"]["capabilities"]
            );
        }
        if b.era != Era::Legacy {
            match method {
                "initialize" => {
                    initializes += 1;
                    eprintln!("serve: got initialize");
                }
                "server/discover" => {
                    discovers += 1;
                    eprintln!("serve: got server/discover");
                }
                _ => {}
            }
        }
        if b.mrtr_state {
            mrtr.fresh_id = mrtr.seen_ids.insert(id.to_string());
        }
        let modern = match b.era {
            Era::Legacy => false,
            Era::Modern => true,
            Era::Dual => method != "initialize" && has_envelope(&msg),
        };
        let written = if std::mem::take(&mut first_request) && b.version_mismatch {
            let requested = if method == "initialize" {
                msg["params"]["protocolVersion"].clone()
            } else {
                msg["params"]["_meta"][PROTOCOL_VERSION_META].clone()
            };
            eprintln!("serve: refusing the first request ({method}) with -32022, on purpose");
            let error = json!({"code": -32022, "message": "Unsupported protocol version",
                               "data": {"supported": [MODERN], "requested": requested}});
            write_response(&mut out, &id, Err(error))
        } else if let Some(reply) = b
            .tasks
            .and_then(|mode| task_reply(mode, modern, &msg, method, &mut tasks, &mut out))
        {
            match (reply, modern) {
                (Some(Ok(result)), true) if result.get("resultType").is_some() => {
                    write_modern(&mut out, &id, Ok((result, "task")))
                }
                (Some(reply), true) => write_modern(&mut out, &id, reply.map(|r| (r, "complete"))),
                (Some(reply), false) => write_response(&mut out, &id, reply),
                (None, _) => continue,
            }
        } else if modern {
            match modern_reply(&b, &msg, method, &id, &mut mrtr, &mut input, &mut out, &tx) {
                Some(reply) => write_modern(&mut out, &id, reply),
                None => continue,
            }
        } else {
            let mut skill = match b.skills {
                true => crate::skills::answer(method, &msg["params"]),
                false => None,
            };
            let reply = match method {
                _ if skill.is_some() => skill.take().unwrap_or(Ok(Value::Null)),
                "initialize" if b.skills => Ok(json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": crate::skills::capabilities(),
                    "serverInfo": {"name": "mcp-client-serve", "version": env!("CARGO_PKG_VERSION")}
                })),
                "initialize" if b.hostile_text => Ok(json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}, "logging": {}, "experimental": {HOSTILE: HOSTILE}},
                    "serverInfo": {"name": format!("evil {HOSTILE}"), "version": HOSTILE},
                    "instructions": format!("line one\n{HOSTILE}\nline three")
                })),
                "tools/list" if b.hostile_text => Ok(json!({"tools": [
                    {"name": "echo", "description": format!("{HOSTILE}\nsecond line"),
                     "inputSchema": {"type": "object", "properties": {"hostile": {"description": HOSTILE}}}},
                    {"name": format!("evil{HOSTILE}"), "description": "a hostile name",
                     "inputSchema": {"type": "object"}}
                ]})),
                "tools/call" if b.hostile_text => hostile_call(&msg, &mut input, &mut out),
                "initialize" => {
                    let asked = msg["params"]["protocolVersion"]
                        .as_str()
                        .unwrap_or("2025-11-25");
                    let version = if LEGACY.contains(&asked) {
                        asked
                    } else {
                        "2025-11-25"
                    };
                    let capabilities = if b.no_tools {
                        json!({})
                    } else if b.lists_change {
                        json!({"tools": {"listChanged": true}, "resources": {"listChanged": true},
                            "prompts": {"listChanged": true}})
                    } else {
                        json!({"tools": {}})
                    };
                    Ok(json!({
                        "protocolVersion": version,
                        "capabilities": capabilities,
                        "serverInfo": {"name": "mcp-client-serve", "version": env!("CARGO_PKG_VERSION")}
                    }))
                }
                "ping" => Ok(json!({})),
                "tools/list" if b.hang_list || (b.hang_relist && listings > 0) => {
                    listings += 1;
                    eprintln!("serve: not answering tools/list {id}, on purpose");
                    continue;
                }
                "tools/list" if b.no_tools => {
                    Err(json!({"code": -32601, "message": "Method not found"}))
                }
                "tools/list" if b.list_error => {
                    listings += 1;
                    eprintln!("serve: failing tools/list {id}, on purpose");
                    Err(json!({"code": -32603, "message": "listing failed, on purpose"}))
                }
                "tools/list" if grown => {
                    listings += 1;
                    let mut list = tools::list();
                    if let Some(tools) = list.as_array_mut() {
                        if b.swap {
                            tools.retain(|tool| tool["name"] != "slow");
                        }
                        tools.push(
                            json!({"name": "grown", "description": "Listed after the first call.",
                            "inputSchema": {"type": "object"}}),
                        );
                    }
                    Ok(json!({"tools": list}))
                }
                "tools/list" => {
                    listings += 1;
                    let mut list = tools::list();
                    if b.long_description {
                        list[0]["description"] = json!(LONG_DESCRIPTION);
                    }
                    Ok(json!({"tools": list}))
                }
                "tools/call" => match call(&b, &msg, &id, &mut input, &mut out, &tx, false) {
                    Some(reply) => reply,
                    None => continue,
                },
                "server/discover" if b.ignore_discover => {
                    eprintln!("serve: not answering server/discover {id}, on purpose");
                    continue;
                }
                "server/discover" if b.exit_on_discover => {
                    eprintln!(
                        "serve: exiting on server/discover (pid {}), on purpose",
                        std::process::id()
                    );
                    std::process::exit(3);
                }
                "server/discover" if b.slow_discover_error => {
                    eprintln!("serve: answering server/discover {id} in 3 s");
                    let tx = tx.clone();
                    std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_secs(3));
                        let error =
                            json!({"code": -32601, "message": "Method not found: server/discover"});
                        let response = json!({"jsonrpc": "2.0", "id": id, "error": error});
                        let _ = tx.send(format!("{response}\n").into_bytes());
                        eprintln!("serve: answered server/discover, late");
                    });
                    continue;
                }
                other => {
                    Err(json!({"code": -32601, "message": format!("Method not found: {other}")}))
                }
            };
            write_response(&mut out, &id, reply)
        };
        if written.is_err() {
            return ExitCode::SUCCESS;
        }
        if b.grow && !grown && method == "tools/call" {
            grown = true;
            let _ = out.write_all(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n",
            );
            let _ = out.flush();
        }
        if b.lists_change && method == "tools/call" {
            for list in ["tools", "resources", "prompts"] {
                let _ = writeln!(
                    out,
                    "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/{list}/list_changed\"}}"
                );
            }
            let _ = out.flush();
        }
        if b.ping_idle && method == "tools/call" {
            // Between calls: ping the client and report when (and whether) it answers.
            std::thread::sleep(std::time::Duration::from_millis(100));
            let _ =
                out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"idle-ping\",\"method\":\"ping\"}\n");
            let _ = out.flush();
            let mut next = String::new();
            if input.read_line(&mut next).unwrap_or(0) > 0 {
                let answered = serde_json::from_str::<Value>(&next)
                    .is_ok_and(|v| v["id"] == "idle-ping" && v.get("method").is_none());
                if answered {
                    eprintln!("serve: idle pong {}", next.trim_end());
                } else {
                    eprintln!("serve: no idle pong before the next message");
                    pending = Some(next);
                }
            }
        }
    }
}

/// Whether a request carries the modern era's envelope (its protocol version key).
fn has_envelope(msg: &Value) -> bool {
    msg["params"]["_meta"]
        .as_object()
        .is_some_and(|m| m.contains_key(PROTOCOL_VERSION_META))
}

/// A modern answer: a result and the `resultType` it is sent with, or an error.
type ModernReply = Result<(Value, &'static str), Value>;

/// Writes a legacy-shaped answer, one line.
fn write_response(
    out: &mut impl Write,
    id: &Value,
    reply: Result<Value, Value>,
) -> std::io::Result<()> {
    let response = match reply {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    };
    serde_json::to_writer(&mut *out, &response)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Writes a modern answer, one line: a result says what it is (`resultType`) and who made it
/// (`_meta`), spliced in as text after its own members.
fn write_modern(out: &mut impl Write, id: &Value, reply: ModernReply) -> std::io::Result<()> {
    let (mut result, kind) = match reply {
        Ok(r) => r,
        Err(error) => return write_response(out, id, Err(error)),
    };
    out.write_all(br#"{"jsonrpc":"2.0","id":"#)?;
    serde_json::to_writer(&mut *out, id)?;
    out.write_all(br#","result":"#)?;
    out.write_all(&stamp(&mut result, kind))?;
    out.write_all(b"}\n")?;
    out.flush()
}

/// A result as the modern era sends it, as JSON text.
fn stamp(result: &mut Value, kind: &str) -> Vec<u8> {
    if let Some(o) = result.as_object_mut() {
        o.remove("resultType");
        o.remove("_meta");
    }
    let mut text = serde_json::to_vec(result).unwrap_or_default();
    if text.last() != Some(&b'}') {
        return text;
    }
    text.pop();
    if text.len() > 1 {
        text.push(b',');
    }
    text.extend_from_slice(br#""resultType":"#);
    serde_json::to_writer(&mut text, kind).expect("a string serializes");
    text.extend_from_slice(SERVER_STAMP.as_bytes());
    text
}

/// The `_meta` member of every modern result (and the result's closing brace).
const SERVER_STAMP: &str = concat!(
    r#","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-client-serve","version":""#,
    env!("CARGO_PKG_VERSION"),
    r#""}}}"#
);

/// A modern request's answer (`None`: none now).
#[allow(clippy::too_many_arguments)]
fn modern_reply(
    b: &Behaviour,
    msg: &Value,
    method: &str,
    id: &Value,
    mrtr: &mut Mrtr,
    input: &mut impl BufRead,
    out: &mut Box<dyn Write>,
    tx: &std::sync::mpsc::Sender<Vec<u8>>,
) -> Option<ModernReply> {
    if method == "initialize" {
        // > "A server that supports only modern versions SHOULD name the protocol versions it
        // > supports in any error it returns to an `initialize` request" — MCP 2026-07-28
        eprintln!("serve: refused initialize (this server speaks only {MODERN})");
        return Some(Err(json!({
            "code": -32022,
            "message": format!("this server speaks only protocol version {MODERN} (the modern era): initialize is not accepted; send server/discover and the per-request _meta instead"),
            "data": {"supported": [MODERN], "requested": msg["params"]["protocolVersion"]}
        })));
    }
    let meta = msg["params"]["_meta"].as_object();
    let missing: Vec<&str> = [
        PROTOCOL_VERSION_META,
        CLIENT_INFO_META,
        CLIENT_CAPABILITIES_META,
    ]
    .into_iter()
    .filter(|k| !meta.is_some_and(|m| m.contains_key(*k)))
    .collect();
    if !missing.is_empty() {
        eprintln!("serve: {method} without {}", missing.join(", "));
        return Some(Err(json!({
            "code": -32602,
            "message": format!("params._meta is missing the required key(s): {}", missing.join(", "))
        })));
    }
    let version = &msg["params"]["_meta"][PROTOCOL_VERSION_META];
    if version != MODERN {
        return Some(Err(
            json!({"code": -32022, "message": "Unsupported protocol version",
                               "data": {"supported": [MODERN], "requested": version}}),
        ));
    }
    let mut skill = match b.skills {
        true => crate::skills::answer(method, &msg["params"]),
        false => None,
    };
    let reply = match method {
        _ if skill.is_some() => skill
            .take()
            .unwrap_or(Ok(Value::Null))
            .map(|v| (v, "complete")),
        "server/discover" if b.skills => Ok((
            json!({"supportedVersions": [MODERN], "capabilities": crate::skills::capabilities()}),
            "complete",
        )),
        "server/discover" if b.slow_discover => {
            eprintln!("serve: answering server/discover {id} in 1 s");
            let (tx, id) = (tx.clone(), id.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs(1));
                let mut bytes = Vec::new();
                let result = json!({"supportedVersions": [MODERN], "capabilities": {"tools": {}}});
                let _ = write_modern(&mut bytes, &id, Ok((result, "complete")));
                let _ = tx.send(bytes);
            });
            return None;
        }
        "server/discover" => Ok((
            json!({"supportedVersions": [MODERN], "capabilities": {"tools": {}}}),
            "complete",
        )),
        "tools/list" => Ok((json!({"tools": tools::list()}), "complete")),
        "tools/call" => {
            if b.mrtr_state && msg["params"]["name"] == "slow" {
                return mrtr_round(msg, id, mrtr);
            }
            if b.mrtr_elicit {
                eprintln!("serve: asking {id} for elicitation/create");
                return Some(Ok((
                    json!({
                        "inputRequests": {"confirm": {"method": "elicitation/create", "params": {
                            "mode": "form",
                            "message": "Proceed?",
                            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
                        }}},
                        "requestState": "elicit-1"
                    }),
                    "input_required",
                )));
            }
            if b.mrtr_forever {
                mrtr.forever_rounds += 1;
                eprintln!("serve: mrtr-forever round {} id {id}", mrtr.forever_rounds);
                return Some(Ok((
                    json!({"requestState": format!("forever-{}", mrtr.forever_rounds)}),
                    "input_required",
                )));
            }
            let reply = call(b, msg, id, input, out, tx, true)?;
            if b.unknown_result_type {
                return Some(reply.map(|r| (r, "mystery")));
            }
            reply.map(|r| (r, "complete"))
        }
        other => Err(json!({"code": -32601, "message": format!("Method not found: {other}")})),
    };
    Some(reply)
}

/// One round of an `mrtr-state` chain.
fn mrtr_round(msg: &Value, id: &Value, mrtr: &mut Mrtr) -> Option<ModernReply> {
    let id_text = id.to_string();
    let fresh_id = mrtr.fresh_id;
    let mut params = msg["params"].clone();
    let echoed = params
        .as_object_mut()
        .and_then(|p| {
            p.remove("_meta");
            p.remove("requestState")
        })
        .map(|s| s.as_str().map(str::to_owned).ok_or(s));
    let mut chain = match echoed {
        None => {
            mrtr.next_chain += 1;
            let args = &msg["params"]["arguments"];
            Chain {
                number: mrtr.next_chain,
                round: 0,
                total: args["rounds"].as_u64().unwrap_or(3).min(1000) as u32,
                hang: args["hang"].as_bool().unwrap_or(false),
                params: params.clone(),
                ids: Vec::new(),
            }
        }
        Some(Err(not_text)) => {
            eprintln!("serve: mrtr BAD requestState {not_text} (not a string) on id {id}");
            return Some(Err(
                json!({"code": -32602, "message": "requestState must be the string sent"}),
            ));
        }
        Some(Ok(state)) => match mrtr.chains.remove(&state) {
            Some(chain) => chain,
            None => {
                eprintln!("serve: mrtr BAD requestState {state:?} on id {id}: not one sent");
                return Some(Err(json!({"code": -32602,
                    "message": format!("requestState {state:?} is not the one sent (echo it exactly)")})));
            }
        },
    };
    let c = chain.number;
    if !fresh_id {
        eprintln!("serve: mrtr chain {c} REUSED id {id}");
        return Some(Err(
            json!({"code": -32600, "message": format!("id {id} was used before: each round needs a new id")}),
        ));
    }
    if params != chain.params {
        eprintln!("serve: mrtr chain {c} params changed on id {id}: {params}");
        return Some(Err(
            json!({"code": -32602, "message": "a round must repeat the request's params"}),
        ));
    }
    chain.ids.push(id_text);
    if chain.round >= chain.total {
        let ids = chain.ids.join(",");
        if chain.hang {
            eprintln!("serve: mrtr chain {c} not answering id {id} (ids {ids}), on purpose");
            return None;
        }
        eprintln!(
            "serve: mrtr chain {c} complete after {} rounds, ids {ids} all new, state exact",
            chain.round
        );
        let text = format!(
            "done after {} rounds (ids {ids}, each new; requestState echoed exactly)",
            chain.round
        );
        return Some(Ok((
            json!({"content": [{"type": "text", "text": text}]}),
            "complete",
        )));
    }
    chain.round += 1;
    // Opaque to the client, and awkward on purpose: quotes, a backslash, escapes, non-ASCII and
    // trailing blanks must all come back as they were.
    let state = format!(
        "chain {c} round {}/{} \"q\" \\ \u{1F980} ünï\tcødé\u{2028} ",
        chain.round, chain.total
    );
    eprintln!(
        "serve: mrtr chain {c} round {}/{} id {id}: input_required",
        chain.round, chain.total
    );
    mrtr.chains.insert(state.clone(), chain);
    let mut result = Map::new();
    result.insert("requestState".into(), state.into());
    Some(Ok((Value::Object(result), "input_required")))
}

/// A `tools/call` with the behaviours every era shares (`None`: no answer now). `modern`: the
/// answer of `threaded` is stamped for the modern era.
fn call(
    b: &Behaviour,
    msg: &Value,
    id: &Value,
    input: &mut impl BufRead,
    out: &mut Box<dyn Write>,
    tx: &std::sync::mpsc::Sender<Vec<u8>>,
    modern: bool,
) -> Option<Result<Value, Value>> {
    let token = &msg["params"]["_meta"]["progressToken"];
    if b.progress_burst && !token.is_null() {
        let mut bytes = Vec::new();
        for p in 1..=5 {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": p, "total": 5}});
            let _ = serde_json::to_writer(&mut bytes, &note);
            bytes.push(b'\n');
        }
        let _ = match tools::call(&msg["params"], "") {
            Ok(result) if modern => write_modern(&mut bytes, id, Ok((result, "complete"))),
            reply => write_response(&mut bytes, id, reply),
        };
        let _ = out.write_all(&bytes);
        let _ = out.flush();
        return None;
    }
    if b.progress_ticks && !token.is_null() && msg["params"]["name"] == "slow" {
        // Progress every 100 ms until the wait is over, then the answer.
        let ms = msg["params"]["arguments"]["ms"].as_u64().unwrap_or(0);
        let started = std::time::Instant::now();
        let mut ticks = 0u64;
        while started.elapsed() < Duration::from_millis(ms) {
            std::thread::sleep(Duration::from_millis(100));
            ticks += 1;
            let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": ticks}});
            if writeln!(out, "{note}").and_then(|()| out.flush()).is_err() {
                return None;
            }
        }
        return Some(Ok(
            json!({"content": [{"type": "text", "text": format!("done after {ticks} progress notifications")}]}),
        ));
    }
    if b.threaded {
        // Each call on a thread of its own: slow calls answer after faster later ones.
        let tx = tx.clone();
        let (msg, id) = (msg.clone(), id.clone());
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = match tools::call(&msg["params"], "") {
                Ok(result) if modern => write_modern(&mut bytes, &id, Ok((result, "complete"))),
                reply => write_response(&mut bytes, &id, reply),
            };
            let _ = tx.send(bytes);
        });
        return None;
    }
    if b.crash_on_call {
        eprintln!("serve: crashing mid-call, on purpose");
        std::process::exit(3);
    }
    if b.hang {
        eprintln!("serve: not answering call {id}, on purpose");
        return None;
    }
    if b.stderr_flood > 0 {
        let chunk = "flood flood flood flood flood flood flood flood flood flood\n".repeat(1024);
        let mut err = std::io::stderr().lock();
        let mut written = 0;
        while written < b.stderr_flood {
            if err.write_all(chunk.as_bytes()).is_err() {
                break;
            }
            written += chunk.len();
        }
        let _ = writeln!(err, "serve: flooded {written} bytes");
    }
    if b.junk {
        let _ = out
            .write_all(b"this is not JSON\n\x1b[31mnor this\x1b[0m\n[1,2\n{\"hello\":\"world\"}\n");
    }
    // `MCP_TESTKIT_TAG` marks the answers of this server (tests of several servers).
    let mut extra = std::env::var("MCP_TESTKIT_TAG")
        .map(|t| format!("[{t}]"))
        .unwrap_or_default();
    if b.ping_first {
        if b.ask_on_roots_change {
            wait_for_roots_change(input);
        }
        extra = ask_client(input, out);
    }
    Some(tools::call(&msg["params"], &extra))
}

/// A `tools/call` of `hostile-text`.
fn hostile_call(
    msg: &Value,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<Value, Value> {
    let params = &msg["params"];
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                     "params": {"level": "warning", "logger": HOSTILE, "data": HOSTILE}});
    let _ = writeln!(out, "{log}");
    if let Some(token) = params["_meta"].get("progressToken") {
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1, "total": 2, "message": HOSTILE}});
        let _ = writeln!(out, "{progress}");
    }
    let _ = out.flush();
    eprintln!("serve: {HOSTILE}");
    let asked = match params["name"].as_str().unwrap_or_default() {
        "fail" => return Err(json!({"code": -32000, "message": HOSTILE})),
        "crash" => {
            eprintln!("serve: crashing {HOSTILE}");
            std::process::exit(3);
        }
        "ask-form" => json!({
            "message": HOSTILE,
            "requestedSchema": {"type": "object", "properties": {
                format!("name{HOSTILE}"): {"type": "string", "default": HOSTILE}
            }}
        }),
        "ask-url" => {
            let url = params["arguments"]["url"].as_str().unwrap_or(HOSTILE);
            json!({"mode": "url", "message": HOSTILE, "url": url, "elicitationId": "e-1"})
        }
        _ => {
            let text = format!("text {HOSTILE}\nsecond line\r\n");
            return Ok(json!({"content": [{"type": "text", "text": text}]}));
        }
    };
    let request = json!({"jsonrpc": "2.0", "id": "srv-elicit", "method": "elicitation/create", "params": asked});
    let _ = writeln!(out, "{request}");
    let _ = out.flush();
    let mut line = String::new();
    let answer = loop {
        line.clear();
        if input.read_line(&mut line).unwrap_or(0) == 0 {
            break Value::Null;
        }
        if let Ok(v) = serde_json::from_str::<Value>(&line) {
            if v["id"] == "srv-elicit" && v.get("method").is_none() {
                break v;
            }
        }
    };
    // As JSON text with no control character left raw (DEL and C1 escaped too), so that the
    // answer reads back the same however the client shows the text.
    let mut text = String::from("answer: ");
    for c in answer.to_string().chars() {
        match c {
            '\x7f' | '\u{80}'..='\u{9f}' => text.push_str(&format!("\\u{:04x}", c as u32)),
            c => text.push(c),
        }
    }
    eprintln!("serve: elicitation {text}");
    Ok(json!({"content": [{"type": "text", "text": text}]}))
}

/// Sends the client a ping and a request it does not implement; returns what it answered.
/// Reads the client's lines until `notifications/roots/list_changed` (or the end of input).
fn wait_for_roots_change(input: &mut impl BufRead) {
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if line.contains("\"notifications/roots/list_changed\"") {
            return;
        }
    }
}

fn ask_client(input: &mut impl BufRead, out: &mut impl Write) -> String {
    let _ = out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"srv-ping\",\"method\":\"ping\"}\n");
    let _ = out.write_all(
        b"{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"sampling/createMessage\",\"params\":{}}\n",
    );
    let _ = out.flush();
    let mut answers = Vec::new();
    let mut line = String::new();
    while answers.len() < 2 {
        line.clear();
        if input.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        if let Ok(v) = serde_json::from_str::<Value>(&line) {
            if v.get("method").is_none() {
                answers.push(v.to_string());
            }
        }
    }
    answers.join("\n")
}
