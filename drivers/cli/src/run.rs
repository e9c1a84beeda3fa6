//! Running: one server (`-- COMMAND` or `--url`) connected, initialized, listed or called, and
//! closed; the client's settings and the OAuth settings the options say; what `--repeat` costs.
//! The servers of a config file are run by [`crate::set`].

use crate::args::{call_arguments, AuthFlags, Options, StoreChoice};
use crate::ask::{can_ask, elicit_on_terminal, show_authorization_url};
use crate::output::{describe, failure, print_info, print_result, print_tools, show_progress};
use crate::signals::Started;
use crate::term;
use mcp_connect::proto::oauth::{PreRegistered, Secret};
use mcp_connect::proto::{
    CallToolResult, Config, Implementation, LogMessage, RequestError, SessionError,
};
use mcp_connect::{
    connect_http, connect_stdio, Authorize, Client, ClientConfig, Error, FileStore, Handlers,
    HttpTransportConfig, LogCallback, MemoryStore, OAuthConfig, Request, Root, StderrMode,
    StdioConfig, StdioTransport, TokenStore,
};
use serde_json::Value;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a `--call` with `--roots` waits, after the handshake, for the server to ask for the
/// roots (`roots/list`, answered at once) before it calls. A server that works from the roots
/// asks as soon as it is initialized (server-filesystem started without directories has none
/// until then, and answers a call that came first as if it had none). Over stdio a `ping` sent
/// after the handshake ends the wait for one that does not ask then (its answer comes with no
/// `roots/list` before it: `Client::roots_listed`); over HTTP one that never asks costs this
/// whole wait, once. Without `--roots`, or without `--call`, nothing waits.
pub(crate) const ROOTS_WAIT: Duration = Duration::from_secs(2);

/// How long a `--call` waits after the server's roots were answered, before it calls. The
/// protocol says nothing of when a server has applied them, and server-filesystem applies them
/// asynchronously (it resolves each directory on node's thread pool): a call read right after the
/// answer is served before that ends. Measured with server-filesystem 2026.8.31 on 2 busy cores
/// (load 9–10), 20 runs each: a call sent at once after the answer saw the roots 0 times in 20,
/// after 5 ms 13, after 20 ms 19; after 50 ms and 100 ms, 40 times in 40. Twice the shortest
/// wait that always did.
pub(crate) const ROOTS_SETTLE: Duration = Duration::from_millis(100);

/// The default of `--max-time`: the most a `--call` may take in all while its progress keeps
/// restarting `--timeout`. The spec asks for a maximum whatever the progress ("implementations
/// SHOULD always enforce a maximum timeout, regardless of progress notifications" — MCP
/// 2025-11-25, Lifecycle § Timeouts); an hour lets a long build or test run finish and still
/// ends a server that reports progress forever.
pub(crate) const MAX_TIME: Duration = Duration::from_secs(3600);

/// The OAuth settings the auth options say.
fn oauth_config(a: &AuthFlags) -> OAuthConfig {
    let pre = a.client_id.clone().map(|client_id| PreRegistered {
        client_id,
        client_secret: a.client_secret.clone(),
        private_key: None,
        auth_method: None,
        issuer: a.client_issuer.clone(),
    });
    let mut config = match pre {
        Some(pre) if a.client_credentials => OAuthConfig::client_credentials(pre),
        Some(pre) if a.assertion_file.is_some() => {
            let mut config = OAuthConfig::jwt_bearer(pre, None);
            config.assertion_file = a.assertion_file.clone();
            config
        }
        Some(pre) if a.idp_token_url.is_some() => {
            // All three are there: `check_auth` said so.
            let idp = mcp_connect::proto::oauth::IdentityProvider {
                token_endpoint: a.idp_token_url.clone().unwrap_or_default(),
                client_id: a.idp_client_id.clone().unwrap_or_default(),
                client_secret: a.idp_client_secret.clone(),
                id_token: a
                    .id_token
                    .clone()
                    .unwrap_or_else(|| Secret::new(String::new())),
            };
            OAuthConfig::enterprise_managed(pre, idp)
        }
        pre => {
            let mut authorize = Authorize::browser();
            if let Authorize::Browser { open, timeout, .. } = &mut authorize {
                *open = !a.no_browser;
                *timeout = a.timeout.unwrap_or(*timeout);
            }
            // `--no-auth`: the stored credentials are used (and refreshed), but a flow that
            // needs a person is refused once the authorization server is known, so the
            // message can name it.
            let authorize = if a.off { Authorize::Refuse } else { authorize };
            let mut config = OAuthConfig::new(authorize);
            config.options.pre_registered = pre;
            config
        }
    };
    // DPoP: by default when the server asks (with a key made for the run); `--dpop` at every
    // authorization server that takes it; `--dpop-key` signs with the user's key, which keeps
    // stored DPoP-bound tokens usable from run to run.
    use mcp_connect::proto::oauth::dpop::DpopUse;
    match a.dpop {
        Some(true) => config.options.dpop = DpopUse::Always,
        Some(false) => config.options.dpop = DpopUse::Never,
        None => {}
    }
    config.options.dpop_key = a.dpop_key.clone();
    let path = match &a.store {
        StoreChoice::Default => FileStore::default_path(),
        StoreChoice::File(path) => Some(path.clone()),
        StoreChoice::Memory => None,
    };
    config.store = match path {
        Some(path) => Arc::new(FileStore::new(path)) as Arc<dyn TokenStore>,
        None => Arc::new(MemoryStore::new()),
    };
    config
}

/// The client's settings; `server`: the configured server's name, which its log lines and its
/// questions show.
pub(crate) fn client_config(options: &Options, server: Option<&str>) -> ClientConfig {
    let mut handlers = Handlers::new();
    // > "Clients that support elicitation **MUST** declare the `elicitation` capability during
    // > initialization" — MCP 2025-11-25, Elicitation § Capabilities
    // Only with a person to ask: without a terminal the capability is not declared, and a server
    // that respects it does not ask (one that asks anyway is refused by the core).
    if can_ask() {
        let asker = server.map(str::to_owned);
        handlers = handlers.elicitation_modes(true, true, move |asked| {
            elicit_on_terminal(asker.clone(), asked)
        });
    }
    if !options.roots.is_empty() {
        handlers = handlers.fixed_roots(options.roots.iter().map(Root::directory).collect());
    }
    let on_log = options.verbose.then(|| log_printer(server));
    ClientConfig {
        session: Config {
            client_info: Implementation::new("mcp-client", env!("CARGO_PKG_VERSION")),
            default_timeout: options.timeout.unwrap_or(Some(Duration::from_secs(60))),
            era: options.era,
            ..Config::default()
        },
        handlers,
        on_log,
        on_resource_updated: crate::features::on_updated(options, server),
        ..ClientConfig::default()
    }
}

/// `--verbose`'s printer of the server's log messages: `server log[ NAME] [LEVEL[ LOGGER]]: DATA`.
fn log_printer(server: Option<&str>) -> LogCallback {
    let from = server
        .map(|s| format!(" {}", term::line(s)))
        .unwrap_or_default();
    LogCallback(Arc::new(move |m: &LogMessage| {
        let logger = m
            .logger
            .as_deref()
            .map(|l| format!(" {l}"))
            .unwrap_or_default();
        let data = match &m.data {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let line = format!("[{}{logger}]: {data}", m.level);
        eprintln!("server log{from} {}", term::line(&line));
    }))
}

/// How a stdio server's stderr is shown: each line forwarded as it comes, escaped, after
/// `server stderr NAME: ` when `name` is given (`--verbose`), bare otherwise.
pub(crate) fn stderr_printer(name: Option<&str>) -> StderrMode {
    let prefix = name
        .map(|name| format!("server stderr {}: ", term::line(name)))
        .unwrap_or_default();
    StderrMode::Callback(Arc::new(move |line| {
        // One write per line: not cut by the CLI's own output, nor by another server's line.
        let line = format!("{prefix}{}\n", term::line(line));
        let _ = std::io::stderr().write_all(line.as_bytes());
    }))
}

/// What a session did: its exit code, and the calls' cost with `--repeat`.
pub(crate) struct Outcome {
    pub(crate) code: ExitCode,
    pub(crate) rate: Option<Rate>,
}

/// What `--repeat N` calls cost, printed last on stderr: `calls/s: R (client CPU C µs/call)`.
pub(crate) struct Rate {
    pub(crate) calls: u64,
    pub(crate) elapsed: Duration,
    /// This process's CPU time over the calls, where the system tells it.
    pub(crate) cpu: Option<Duration>,
}

impl Rate {
    /// Times `calls` calls made by `f`, with this process's CPU time.
    pub(crate) async fn measure<T>(
        calls: u64,
        f: impl std::future::Future<Output = T>,
    ) -> (T, Option<Rate>) {
        let (cpu0, started) = (process_cpu(), Instant::now());
        let out = f.await;
        let elapsed = started.elapsed();
        let cpu = process_cpu().zip(cpu0).map(|(b, a)| b.saturating_sub(a));
        (
            out,
            (calls > 1).then_some(Rate {
                calls,
                elapsed,
                cpu,
            }),
        )
    }
}

/// This process's CPU time: the time each of its live threads spent on a CPU, in nanoseconds
/// (Linux's `/proc/self/task/*/schedstat`; the 10 ms ticks of `/proc/self/stat` are too coarse
/// for a call). `None` where the system does not say.
fn process_cpu() -> Option<Duration> {
    let ns = std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Some(Duration::from_nanos(ns))
}

/// Connects to the one server the options name (`-- COMMAND` or `--url`), lists or calls, and
/// closes.
pub(crate) async fn run(options: &Options, to_close: &Started) -> Result<ExitCode, String> {
    // Checked before anything is started: a typo costs no server start-up.
    let arguments = call_arguments(options)?;
    let config = client_config(options, None);
    let outcome = if let Some(url) = &options.url {
        let mut http = HttpTransportConfig::new(url.as_str());
        for header in &options.headers {
            let Some((name, value)) = header.split_once(':') else {
                return Err(format!("--header {header:?} is not 'Name: value'"));
            };
            http = http.header(name.trim(), value.trim());
        }
        // Not used when an Authorization header is given (HttpRules::has_configured_authorization).
        let mut oauth = oauth_config(&options.auth);
        if let Authorize::Browser { show, .. } = &mut oauth.authorize {
            *show = Arc::new(show_authorization_url);
        }
        http = http.oauth(oauth);
        if let Some(path) = &options.record {
            let header = mcp_connect::recording::Header::http(url);
            let fail = |e: Error| failure(e, options);
            let open = || mcp_connect::HttpTransport::new(http);
            return recorded(
                path, header, open, config, options, arguments, to_close, &fail,
            )
            .await;
        }
        // Opens in the era the server speaks (the probe, unless --era says).
        let client = connect_http(http, config)
            .await
            .map_err(|e| failure(e, options))?;
        to_close.client(&client);
        let outcome = session(
            &client,
            options,
            arguments,
            &|e| failure(e, options),
            to_close,
        )
        .await;
        close(&client, outcome).await?
    } else {
        let mut command = options.command.iter().cloned();
        let program = command.next().expect("parse checked a command is given");
        // The server's name, in --verbose's lines: its program's file name.
        let name = std::path::Path::new(&program)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| program.to_string_lossy().into_owned());
        let stdio = StdioConfig::new(program)
            .args(command)
            .stderr(stderr_printer(options.verbose.then_some(&*name)));
        // --verbose's lines name it: the request spans, its log messages, its stderr.
        let mut config = config;
        config.label = Some(name.clone());
        config.on_log = options.verbose.then(|| log_printer(Some(&name)));
        let fail = |e: Error| said_once(e, &name, options);
        if let Some(path) = &options.record {
            let header = mcp_connect::recording::Header::stdio(&stdio.command, &stdio.args);
            let open = || StdioTransport::spawn(stdio);
            return recorded(
                path, header, open, config, options, arguments, to_close, &fail,
            )
            .await;
        }
        // Opens in the era the server speaks; a server that exits on the probe is started again
        // in the legacy era.
        let client = connect_stdio(stdio, config).await.map_err(fail)?;
        to_close.client(&client);
        let outcome = session(&client, options, arguments, &fail, to_close).await;
        close(&client, outcome).await?
    };
    // Last, after the server's own stderr lines (forwarded) have stopped.
    if let Some(rate) = outcome.rate {
        eprintln!("{rate}");
    }
    Ok(outcome.code)
}

/// `--record FILE`: the session with the server (stdio, or Streamable HTTP), everything that
/// went over the wire written to FILE ([`mcp_connect::recording`]; emptied first when it exists,
/// as `curl -o` and `tee` do). Opened in the era `--era` says (`auto`: the probe), without the
/// relaunch [`connect_stdio`] gives a legacy server that exits on the probe (one file, one
/// process): such a server is recorded with `--era legacy`. Over HTTP the JSON-RPC messages are
/// recorded, never an HTTP header (no `Authorization`, no session id) nor an OAuth exchange.
#[allow(clippy::too_many_arguments)]
async fn recorded<T: mcp_connect::Transport + 'static>(
    path: &std::path::Path,
    header: mcp_connect::recording::Header,
    open: impl FnOnce() -> Result<T, Error>,
    config: ClientConfig,
    options: &Options,
    arguments: Value,
    to_close: &Started,
    fail: &dyn Fn(Error) -> String,
) -> Result<ExitCode, String> {
    use mcp_connect::recording::{Recorder, Recording};
    let recorder =
        Recorder::create(path, &header).map_err(|e| format!("--record {}: {e}", path.display()))?;
    let recorder = Arc::new(recorder);
    let transport = open().map_err(fail)?;
    let client = Client::with_config(Recording::new(transport, recorder.clone()), config);
    to_close.client(&client);
    let opened = client.initialize().await.map_err(fail);
    recorder.opened(&client);
    let outcome = match opened {
        Ok(_) => session(&client, options, arguments, fail, to_close).await,
        Err(e) => Err(e),
    };
    let outcome = close(&client, outcome).await;
    let written = recorder
        .finish()
        .map_err(|e| format!("--record {}: {e}", path.display()));
    let outcome = outcome?;
    written?;
    if let Some(rate) = outcome.rate {
        eprintln!("{rate}");
    }
    Ok(outcome.code)
}

/// A stdio server's error on one line: its stderr, forwarded line by line as it came, is not
/// repeated (the exit status is said), and a program that is not an MCP server is named.
fn said_once(e: Error, name: &str, options: &Options) -> String {
    match e {
        Error::ServerExited { status, .. } => describe(Error::ServerExited {
            status,
            stderr: String::new(),
        }),
        Error::ExitedAfterPrinting {
            status,
            printed,
            more,
            ..
        } => describe(Error::ExitedAfterPrinting {
            status,
            printed,
            more,
            stderr: String::new(),
        }),
        Error::Session(e @ SessionError::NotAnMcpServer { .. }) => format!("{name} is {e}"),
        e => failure(e, options),
    }
}

/// Closes the client whatever the session's outcome; the session's error comes first.
async fn close(client: &Client, outcome: Result<Outcome, String>) -> Result<Outcome, String> {
    let closed = client.close().await.map_err(describe);
    let outcome = outcome?;
    closed?;
    Ok(outcome)
}

/// Lists or calls, as the options say, on an open client.
async fn session(
    client: &Client,
    options: &Options,
    arguments: Value,
    fail: &dyn Fn(Error) -> String,
    to_close: &Started,
) -> Result<Outcome, String> {
    let init = client.initialize().await.map_err(fail)?;
    if options.call.is_some() && !options.roots.is_empty() {
        // The call would reach a server that reads its roots before it has them.
        if client.roots_listed(ROOTS_WAIT).await {
            smol::Timer::after(ROOTS_SETTLE).await;
        }
    }
    if let Some(feature) = &options.feature {
        let code = crate::features::one(client, feature, options, fail).await?;
        return Ok(Outcome { code, rate: None });
    }
    let mut out = std::io::stdout().lock();
    if options.info {
        let supported = client.discover_result().map(|d| d.supported_versions);
        print_info(&mut out, &init, client.era(), supported, options.json);
        return Ok(Outcome {
            code: ExitCode::SUCCESS,
            rate: None,
        });
    }
    let Some(name) = &options.call else {
        let tools = client.list_tools().await.map_err(fail)?;
        print_tools(&mut out, &tools, options.json);
        return Ok(Outcome {
            code: ExitCode::SUCCESS,
            rate: None,
        });
    };
    let (result, rate) = call(client, name, arguments, options, fail, to_close).await?;
    print_result(&mut out, &result, options.json);
    Ok(Outcome {
        code: if result.is_error {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        },
        rate,
    })
}

/// Whether tool `name` goes as a task: with `--task`, it must (the server takes task calls and
/// the tool allows them, else the reason); without, when the core says so (the tool requires
/// one). The tools are listed to know (one round trip, only on a server that takes task calls).
async fn as_task(client: &Client, name: &str, asked: bool) -> Result<bool, String> {
    use mcp_connect::proto::tasks::{CallMode, TaskSupport};
    if !client.takes_task_calls() {
        if asked {
            // > "If a server's capabilities do not include `tasks.requests.tools.call`, then
            // > clients **MUST NOT** attempt to use task augmentation on that server's tools" —
            // > MCP 2025-11-25, Tasks § Tool-Level Negotiation
            return Err(format!(
                "--task: the server does not take tool calls as tasks (it declares no tasks.requests.tools.call{})",
                match client.era() {
                    Some(mcp_connect::proto::Era::Modern) => ", or speaks 2026-07-28",
                    _ => "",
                }
            ));
        }
        return Ok(false);
    }
    let tool = client
        .list_tools()
        .await
        .ok()
        .and_then(|tools| tools.into_iter().find(|t| t.name == name));
    let Some(tool) = tool else {
        return match asked {
            true => Err(term::line(&format!(
                "--task: the server lists no tool {name:?}"
            ))),
            false => Ok(false),
        };
    };
    if asked && TaskSupport::of(&tool) == TaskSupport::Forbidden {
        // > "If `execution.taskSupport` is not present or `"forbidden"`, clients **MUST NOT**
        // > attempt to invoke the tool as a task." — MCP 2025-11-25, Tasks § Tool-Level
        // > Negotiation
        return Err(term::line(&format!(
            "--task: tool {name:?} does not allow tasks (its execution.taskSupport is not \"optional\" or \"required\")"
        )));
    }
    Ok(asked || client.task_call_mode_of(&tool) == CallMode::Task)
}

/// Calls tool `name` as a task and waits for its result within `max`, its status messages shown
/// as progress; a signal meanwhile cancels it (`to_close`), and so does `max` passing.
async fn task_call(
    client: &Client,
    name: &str,
    arguments: Value,
    max: Option<Duration>,
    to_close: &Started,
) -> Result<CallToolResult, Error> {
    let started = Instant::now();
    let call = client.call_as_task(name, arguments, None);
    let created = match max {
        Some(max) => {
            smol::future::or(call, async move {
                smol::Timer::after(max).await;
                Err(Error::Timeout(max))
            })
            .await?
        }
        None => call.await?,
    };
    let mut handle = match created {
        mcp_connect::TaskStart::Done(result) => return Ok(result),
        mcp_connect::TaskStart::Task(handle) => handle,
    };
    to_close.task(client, handle.id());
    let left = max.map(|m| m.saturating_sub(started.elapsed()));
    // The task is cancelled here (past --max-time) or by `to_close` (on a signal), each time
    // once and before the client is closed: the wait itself cancels nothing.
    let waited = handle.wait_without_cancel(left, show_progress).await;
    if let Err(Error::Timeout(_)) = &waited {
        let cancel = async {
            let _ = handle.cancel().await;
        };
        let limit = async {
            smol::Timer::after(Duration::from_secs(2)).await;
        };
        smol::future::or(cancel, limit).await;
    }
    waited
}

/// Calls tool `name` once (its progress shown as it comes), or `--repeat N` times in a row
/// (measured): the last result.
async fn call(
    client: &Client,
    name: &str,
    arguments: Value,
    options: &Options,
    fail: &dyn Fn(Error) -> String,
    to_close: &Started,
) -> Result<(CallToolResult, Option<Rate>), String> {
    // In the modern era over HTTP, the call's first POST carries the tool's `Mcp-Param-*`
    // headers: the tools are listed first (one round trip, the cheapest way to know them) when
    // the session does not know them. A listing that fails leaves the call to say what is wrong.
    let _ = client.learn_tool(name).await;
    if options.repeat <= 1 {
        // One call: its progress is shown as it comes, and restarts --timeout, up to --max-time.
        let max = options.max_time.unwrap_or(Some(MAX_TIME));
        if as_task(client, name, options.task).await? {
            // > "If a tool's `taskSupport` is `"required"`, clients **MUST** invoke the tool as a
            // > task" — MCP 2025-11-25, Tasks § Tool-Level Negotiation
            // Waited for to its end within --max-time, its status messages shown as progress,
            // the task cancelled when the limit passes or the command is interrupted.
            let limit = max.unwrap_or(Duration::MAX).as_secs_f64();
            let result = task_call(client, name, arguments, max, to_close)
                .await
                .map_err(|e| match e {
                    Error::Timeout(_) => {
                        format!("tools/call {name:?} (a task) exceeded --max-time {limit} s")
                    }
                    e => fail(e),
                })?;
            return Ok((result, None));
        }
        let request = Request::call_tool(name, arguments.clone())
            .reset_timeout_on_progress(max.unwrap_or(Duration::MAX));
        let result = client
            .call_with_progress(request, show_progress)
            .await
            .map_err(|e| match e {
                // Which limit was hit, in the options' words.
                Error::Timeout(after) => format!(
                    "tools/call {name:?} timed out: no answer or progress for {} s (--timeout)",
                    after.as_secs_f64()
                ),
                Error::Request(RequestError::TotalTimeout(max)) => format!(
                    "tools/call {name:?} exceeded --max-time {} s",
                    max.as_secs_f64()
                ),
                e => fail(e),
            })?;
        return Ok((result, None));
    }
    let (result, rate) = Rate::measure(options.repeat, async {
        let mut result = None;
        for _ in 0..options.repeat {
            result = Some(
                client
                    .call(Request::call_tool(name, arguments.clone()))
                    .await?,
            );
        }
        Ok(result)
    })
    .await;
    Ok((
        result.map_err(fail)?.expect("at least one call was made"),
        rate,
    ))
}
