//! `mcp-client`: the offline demo and a practical command-line MCP client.
//!
//! ```text
#![doc = include_str!("help.txt")]
//! ```
//!
//! `--era` picks the serve mode's protocol era: `legacy` (the `initialize` handshake, the
//! default), `modern` (2026-07-28 only) or `dual` (both, per request). The server is the test
//! kit's (`mcp_testkit::stdio_server`, a dev-dependency), well behaved; the misbehaving variants
//! the tests use are its own binary's, `mcp-testkit-serve --behave …`.

use mcp_connect::proto::oauth::{AuthError, PreRegistered, Secret};
use mcp_connect::proto::{Config, Era, EraChoice, Implementation, LogMessage};
use mcp_connect::{
    connect_http, connect_stdio, Authorize, CallToolResult, Client, ClientConfig, ElicitAnswer,
    Elicitation, Error, FileStore, HandlerError, Handlers, HttpTransportConfig, LogCallback,
    MemoryStore, OAuthConfig, Request, Root, StderrMode, StdioConfig, StdioTransport, TokenStore,
    Transport,
};
use serde_json::Value;
use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod set;
mod term;

const USAGE: &str = "usage: mcp-client [--serve] [--info | --call NAME [--args JSON] [--repeat N]] [--era auto|legacy|modern] [--timeout SECS] [--json] [--verbose] [--roots DIR...] (-- COMMAND [ARG...] | --url URL [--header 'K: V']... [--no-auth | --client-id ID ...] | --config FILE [--server NAME]...); --help for more";

/// What `--help` prints (on stdout, exit 0): every option (the file's docs show the same text).
const HELP: &str = include_str!("help.txt");

#[derive(Debug, Default)]
struct Options {
    call: Option<String>,
    args: Option<String>,
    repeat: u64,
    /// `Some(None)`: no timeout (a value too large for a `Duration`).
    timeout: Option<Option<Duration>>,
    headers: Vec<String>,
    json: bool,
    info: bool,
    verbose: bool,
    roots: Vec<std::path::PathBuf>,
    era: EraChoice,
    url: Option<String>,
    command: Vec<OsString>,
    /// `--config FILE`: the servers of a config file, as one tool set ([`set`]).
    config: Option<std::path::PathBuf>,
    /// `--server NAME`, repeatable: only these servers of the config.
    servers: Vec<String>,
    /// `--input ID=VALUE`: the values of VS Code's `${input:ID}`.
    inputs: Vec<(String, String)>,
    auth: AuthFlags,
    /// `--help`: print [`HELP`] and do nothing else.
    help: bool,
}

/// How `--url` authorizes when the server asks.
#[derive(Debug, Default)]
struct AuthFlags {
    /// `--no-auth`.
    off: bool,
    client_id: Option<String>,
    /// From `--client-secret` or `--client-secret-env` (its `Debug` shows no value).
    client_secret: Option<Secret>,
    client_issuer: Option<String>,
    client_credentials: bool,
    store: StoreChoice,
    no_browser: bool,
    timeout: Option<Duration>,
    /// The auth options given, in order, for the checks that need `--url`.
    given: Vec<&'static str>,
}

/// Where the credentials are kept.
#[derive(Debug, Default)]
enum StoreChoice {
    /// [`FileStore::default_path`] (in memory where there is none: no home directory).
    #[default]
    Default,
    File(std::path::PathBuf),
    Memory,
}

fn parse(argv: impl Iterator<Item = OsString>) -> Result<Options, String> {
    let mut argv = argv.peekable();
    let mut o = Options {
        repeat: 1,
        ..Options::default()
    };
    let value = |argv: &mut dyn Iterator<Item = OsString>, flag: &str| {
        argv.next()
            .and_then(|v| v.into_string().ok())
            .ok_or_else(|| format!("{flag} needs a value"))
    };
    while let Some(arg) = argv.next() {
        match arg.to_str() {
            Some("--call") => o.call = Some(value(&mut argv, "--call")?),
            Some("--args") => o.args = Some(value(&mut argv, "--args")?),
            Some("--repeat") => {
                o.repeat = value(&mut argv, "--repeat")?
                    .parse()
                    .map_err(|_| "--repeat needs a count")?
            }
            Some("--timeout") => {
                let secs: f64 = value(&mut argv, "--timeout")?
                    .parse()
                    .map_err(|_| "--timeout needs seconds")?;
                if secs.is_nan() || secs < 0.001 {
                    return Err("--timeout needs at least 0.001 seconds".into());
                }
                // A timeout too long for a Duration (or infinite) means none.
                o.timeout = Some(Duration::try_from_secs_f64(secs).ok());
            }
            Some("--header") => o.headers.push(value(&mut argv, "--header")?),
            Some("--json") => o.json = true,
            Some("--info") => o.info = true,
            Some("--verbose") => o.verbose = true,
            Some("--roots") => {
                // The directories up to the next option.
                while let Some(dir) =
                    argv.next_if(|a| !a.to_str().is_some_and(|d| d.starts_with("--")))
                {
                    o.roots.push(dir.into());
                }
                if o.roots.is_empty() {
                    return Err("--roots needs at least one directory".into());
                }
            }
            Some("--era") => {
                o.era = match value(&mut argv, "--era")?.as_str() {
                    "auto" => EraChoice::Auto,
                    "legacy" => EraChoice::Legacy,
                    "modern" => EraChoice::Modern,
                    other => return Err(format!("--era {other:?}: give auto, legacy or modern")),
                }
            }
            Some("--url") => o.url = Some(value(&mut argv, "--url")?),
            Some("--config") => o.config = Some(value(&mut argv, "--config")?.into()),
            Some("--server") => o.servers.push(value(&mut argv, "--server")?),
            Some("--input") => {
                let pair = value(&mut argv, "--input")?;
                let Some((id, v)) = pair.split_once('=').filter(|(id, _)| !id.is_empty()) else {
                    return Err(format!("--input takes ID=VALUE, not {pair:?}"));
                };
                o.inputs.push((id.to_owned(), v.to_owned()));
            }
            Some(flag) if AUTH_FLAGS.contains(&flag) => {
                let flag = AUTH_FLAGS[AUTH_FLAGS.iter().position(|f| *f == flag).unwrap_or(0)];
                let mut next = || value(&mut argv, flag);
                auth_flag(&mut o.auth, flag, &mut next)?;
            }
            Some("--") => {
                o.command = argv.collect();
                break;
            }
            Some("-h" | "--help") => {
                o.help = true;
                return Ok(o);
            }
            _ => return Err(format!("unexpected argument {arg:?}\n{USAGE}")),
        }
    }
    if o.args.is_some() && o.call.is_none() {
        return Err("--args needs --call".into());
    }
    if o.info && o.call.is_some() {
        return Err("give --info or --call, not both".into());
    }
    let targets = [o.url.is_some(), !o.command.is_empty(), o.config.is_some()];
    if targets.iter().filter(|t| **t).count() != 1 {
        return Err(format!(
            "give one of -- COMMAND, --url URL or --config FILE\n{USAGE}"
        ));
    }
    if !o.servers.is_empty() && o.config.is_none() {
        return Err("--server needs --config".into());
    }
    if !o.inputs.is_empty() && o.config.is_none() {
        return Err("--input needs --config".into());
    }
    if o.info && o.config.is_some() {
        return Err("--info works on one server (-- COMMAND or --url), not with --config".into());
    }
    if !o.headers.is_empty() && o.url.is_none() {
        return Err("--header needs --url".into());
    }
    check_auth(&o.auth, o.url.is_some())?;
    Ok(o)
}

/// The options of [`AuthFlags`].
const AUTH_FLAGS: [&str; 10] = [
    "--no-auth",
    "--client-id",
    "--client-secret",
    "--client-secret-env",
    "--client-issuer",
    "--client-credentials",
    "--auth-store",
    "--no-auth-store",
    "--no-browser",
    "--auth-timeout",
];

/// One auth option; `value` reads its value.
fn auth_flag(
    a: &mut AuthFlags,
    flag: &'static str,
    value: &mut dyn FnMut() -> Result<String, String>,
) -> Result<(), String> {
    if a.given.contains(&flag) {
        return Err(format!("{flag} is given twice"));
    }
    a.given.push(flag);
    match flag {
        "--no-auth" => a.off = true,
        "--client-id" => a.client_id = Some(value()?),
        "--client-secret" => a.client_secret = Some(Secret::new(value()?)),
        "--client-secret-env" => {
            let var = value()?;
            // The message names the variable, never a value.
            match std::env::var(&var) {
                Ok(secret) if !secret.is_empty() => a.client_secret = Some(Secret::new(secret)),
                _ => {
                    return Err(format!(
                        "--client-secret-env: the environment variable {var} is not set"
                    ))
                }
            }
        }
        "--client-issuer" => a.client_issuer = Some(value()?),
        "--client-credentials" => a.client_credentials = true,
        "--auth-store" => a.store = StoreChoice::File(value()?.into()),
        "--no-auth-store" => a.store = StoreChoice::Memory,
        "--no-browser" => a.no_browser = true,
        _ => {
            let secs: f64 = value()?
                .parse()
                .map_err(|_| "--auth-timeout needs seconds")?;
            if secs.is_nan() || secs < 1.0 {
                return Err("--auth-timeout needs at least 1 second".into());
            }
            // Too long for a Duration: as good as forever.
            a.timeout = Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX));
        }
    }
    Ok(())
}

/// The auth options that do not go together, or lack what they need.
fn check_auth(a: &AuthFlags, url: bool) -> Result<(), String> {
    let has = |flag: &str| a.given.contains(&flag);
    if let (Some(first), false) = (a.given.first(), url) {
        return Err(format!("{first} needs --url"));
    }
    if a.off {
        if let Some(other) = a.given.iter().find(|f| **f != "--no-auth") {
            return Err(format!(
                "--no-auth turns authorizing off: {other} has no use with it"
            ));
        }
    }
    if has("--client-secret") && has("--client-secret-env") {
        return Err("give --client-secret or --client-secret-env, not both".into());
    }
    if has("--auth-store") && has("--no-auth-store") {
        return Err("give --auth-store or --no-auth-store, not both".into());
    }
    if a.client_id.is_none() {
        for needs_id in [
            "--client-secret",
            "--client-secret-env",
            "--client-issuer",
            "--client-credentials",
        ] {
            if has(needs_id) {
                return Err(format!("{needs_id} needs --client-id"));
            }
        }
    }
    if a.client_credentials {
        if a.client_secret.is_none() {
            return Err(
                "--client-credentials needs the client's secret (--client-secret-env VAR or --client-secret)"
                    .into(),
            );
        }
        for browser in ["--no-browser", "--auth-timeout"] {
            if has(browser) {
                return Err(format!(
                    "--client-credentials involves no person: {browser} has no use with it"
                ));
            }
        }
    }
    // A secret goes only to the authorization server that issued it (MCP 2026-07-28,
    // Authorization Server Binding), never to one the MCP server names.
    if a.client_issuer.is_none() {
        for secret in [
            "--client-secret",
            "--client-secret-env",
            "--client-credentials",
        ] {
            if has(secret) {
                return Err(format!(
                    "{secret} needs --client-issuer URL: the client's secret is sent only to the authorization server that issued it"
                ));
            }
        }
    }
    Ok(())
}

/// The OAuth settings the auth options say.
fn oauth_config(a: &AuthFlags) -> OAuthConfig {
    if a.off {
        // Refused once the authorization server is known, so the message can name it.
        return OAuthConfig::new(Authorize::Refuse);
    }
    let pre = a.client_id.clone().map(|client_id| PreRegistered {
        client_id,
        client_secret: a.client_secret.clone(),
        private_key: None,
        auth_method: None,
        issuer: a.client_issuer.clone(),
    });
    let mut config = match pre {
        Some(pre) if a.client_credentials => OAuthConfig::client_credentials(pre),
        pre => {
            let mut authorize = Authorize::browser();
            if let Authorize::Browser { open, timeout, .. } = &mut authorize {
                *open = !a.no_browser;
                *timeout = a.timeout.unwrap_or(*timeout);
            }
            let mut config = OAuthConfig::new(authorize);
            config.options.pre_registered = pre;
            config
        }
    };
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

fn main() -> ExitCode {
    let mut argv = std::env::args_os().skip(1).peekable();
    match argv.peek().and_then(|a| a.to_str()) {
        Some("--serve") => return serve(argv.skip(1).collect()),
        None => return demo(),
        _ => {}
    }
    let options = match parse(argv) {
        Ok(o) if o.help => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Ok(o) => o,
        Err(e) => {
            eprintln!("mcp-client: {e}");
            return ExitCode::from(1);
        }
    };
    install_tracing(options.verbose);
    let run = async {
        match &options.config {
            Some(file) => set::run(file, &options).await,
            None => run(&options).await,
        }
    };
    match smol::block_on(run) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mcp-client: {}", term::line(&e));
            ExitCode::from(1)
        }
    }
}

/// With `RUST_LOG` (its filter) or `--verbose` (`mcp_connect=info`): the driver's spans and
/// events on stderr, each request's span when it closes (method, tool, server, outcome,
/// duration). None of them holds a header, token or argument value (see the driver's `trace`).
fn install_tracing(verbose: bool) {
    use tracing_subscriber::field::MakeExt;
    use tracing_subscriber::fmt::format::FmtSpan;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => {
            EnvFilter::builder().parse_lossy(directives)
        }
        _ if verbose => EnvFilter::new("mcp_connect=info"),
        _ => return,
    };
    // --verbose prints the server's log messages itself ("server log [...]"): not twice.
    let not_log_messages = tracing_subscriber::filter::filter_fn(move |meta| {
        !(verbose
            && meta.is_event()
            && meta.target() == "mcp_connect::trace"
            && meta.fields().field("logger").is_some())
    });
    // Field values (a server's error message, a tool's name…) shown as `term` shows them; the
    // colours are the formatter's own.
    let fields = tracing_subscriber::fmt::format::debug_fn(|w, field, value| {
        let value = term::line(&format!("{value:?}"));
        match field.name() {
            "message" => write!(w, "{value}"),
            name => write!(w, "{name}={value}"),
        }
    })
    .delimited(" ");
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .fmt_fields(fields)
        .with_span_events(FmtSpan::CLOSE)
        .with_filter(not_log_messages);
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .try_init();
}

/// `--serve [--era E]`: the demo's stdio server, in era E (default legacy).
fn serve(args: Vec<OsString>) -> ExitCode {
    use mcp_testkit::stdio_server::{self, Era};
    let args: Vec<&str> = args.iter().filter_map(|a| a.to_str()).collect();
    let era = match args.as_slice() {
        [] => Some(Era::Legacy),
        ["--era", name] => Era::from_name(name),
        _ => None,
    };
    match era {
        Some(era) => stdio_server::serve(era),
        None => {
            eprintln!("mcp-client: usage: mcp-client --serve [--era legacy|modern|dual]");
            ExitCode::from(1)
        }
    }
}

/// An error and its causes, on one line.
fn describe(e: impl std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = cause.source();
    }
    text
}

/// A client error on one line; a refusal under `--no-auth` says that it was this flag.
fn failure(e: Error, options: &Options) -> String {
    let refused = options.auth.off && matches!(e, Error::Auth(AuthError::NotAuthorized { .. }));
    let text = describe(e);
    if refused {
        format!("{text} (--no-auth)")
    } else {
        text
    }
}

/// Whether a person can be asked: the questions go to stderr and the answers come from stdin,
/// so both must be terminals.
fn can_ask() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// The client's settings; `server`: the configured server's name, which its log lines and its
/// questions show.
fn client_config(options: &Options, server: Option<&str>) -> ClientConfig {
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
    let from = server
        .map(|s| format!(" {}", term::line(s)))
        .unwrap_or_default();
    let on_log = options.verbose.then(|| {
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
    });
    ClientConfig {
        session: Config {
            client_info: Implementation::new("mcp-client", env!("CARGO_PKG_VERSION")),
            default_timeout: options.timeout.unwrap_or(Some(Duration::from_secs(60))),
            era: options.era,
            ..Config::default()
        },
        handlers,
        on_log,
        ..ClientConfig::default()
    }
}

/// One question at a time on the terminal (with `--config`, several servers may ask at once).
static ASKING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Answers an elicitation on the terminal (declared only when [`can_ask`]): each field is asked
/// on stderr and read from stdin (an empty line takes the default, or leaves the field out);
/// when stdin ends, it is declined. `server`: the configured server's name, shown with the
/// question. Everything the server sent is shown through [`term`].
fn elicit_on_terminal(
    server: Option<String>,
    asked: Elicitation,
) -> impl std::future::Future<Output = Result<ElicitAnswer, HandlerError>> + Send {
    smol::unblock(move || {
        use std::io::BufRead;
        let _one_at_a_time = ASKING.lock().unwrap_or_else(|e| e.into_inner());
        let stdin = std::io::stdin();
        let mut lines = stdin.lock().lines();
        let mut ask = |prompt: &str| -> Option<String> {
            eprint!("{prompt}");
            lines.next()?.ok()
        };
        // > "Clients **MUST** provide clear indication of which server is requesting
        // > information" — MCP 2025-11-25, Elicitation § Security Considerations
        let who = match &server {
            Some(name) => format!("server {}", term::line(name)),
            None => "the server".to_owned(),
        };
        match asked {
            Elicitation::Url { message, url, .. } => {
                let Some((url, host)) = url_to_show(&url) else {
                    eprintln!(
                        "mcp-client: {who} asks to visit a URL that is not https (nor http on this machine); declined: {}",
                        term::line(&url)
                    );
                    return Ok(ElicitAnswer::Decline);
                };
                // > "MUST show the full URL to the user for examination before consent. […]
                // > SHOULD highlight the domain of the URL to mitigate subdomain spoofing. […]
                // > SHOULD have warnings for ambiguous/suspicious URIs (i.e., containing
                // > Punycode)" — MCP 2025-11-25, Elicitation § Safe URL Handling
                let punycode = if host.split('.').any(|label| label.starts_with("xn--")) {
                    " (punycode: it may look like another name)"
                } else {
                    ""
                };
                eprintln!(
                    "{who} asks: {}\n  visit: {}\n  opens host: {}{punycode}",
                    term::line(&message),
                    term::line(&url),
                    term::line(&host)
                );
                match ask("done? [y/N] ").as_deref().map(str::trim) {
                    Some("y" | "Y" | "yes") => Ok(ElicitAnswer::Accept(Default::default())),
                    Some(_) => Ok(ElicitAnswer::Decline),
                    None => Ok(ElicitAnswer::Cancel),
                }
            }
            Elicitation::Form { message, schema } => {
                eprintln!(
                    "{who} asks: {}  (an empty line keeps the default; end of input declines)",
                    term::line(&message)
                );
                let mut content = serde_json::Map::new();
                let props = schema["properties"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                for (name, prop) in props {
                    let kind = prop["type"].as_str().unwrap_or("string");
                    let default = prop
                        .get("default")
                        .map(|d| format!(" [{d}]"))
                        .unwrap_or_default();
                    let prompt = term::line(&format!("{name} ({kind}){default}:"));
                    let Some(line) = ask(&format!("  {prompt} ")) else {
                        return Ok(ElicitAnswer::Decline);
                    };
                    let line = line.trim();
                    if line.is_empty() {
                        continue;
                    }
                    let value = match kind {
                        "boolean" => Value::Bool(matches!(line, "y" | "yes" | "true" | "1")),
                        "integer" | "number" => {
                            serde_json::from_str(line).unwrap_or(Value::String(line.into()))
                        }
                        _ => Value::String(line.into()),
                    };
                    content.insert(name, value);
                }
                Ok(ElicitAnswer::Accept(content))
            }
            _ => Ok(ElicitAnswer::Decline),
        }
    })
}

/// A URL-mode elicitation's URL as it is shown, and its host: only an `https` URL, or an `http`
/// one on this machine's loopback (a local service's page), is offered to the person; `None`
/// for any other (`javascript:`, `file:`, `data:`, plain http to another host, no URL at all).
/// The URL shown is the parsed one as a browser would open it (its control characters and
/// non-ASCII percent-encoded, an international host in punycode).
fn url_to_show(url: &str) -> Option<(String, String)> {
    let parsed = url::Url::parse(url).ok()?;
    let host = parsed.host()?;
    let loopback = match &host {
        url::Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    };
    match parsed.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => return None,
    }
    Some((parsed.as_str().to_owned(), host.to_string()))
}

/// The browser flow's message, in the CLI's words: the authorization server's name and URL as
/// [`term`] shows them.
fn show_authorization_url(request: &mcp_connect::proto::oauth::AuthorizationRequest, opened: bool) {
    let how = if opened {
        "A browser was opened to authorize"
    } else {
        "Open this URL to authorize"
    };
    eprintln!(
        "{how} with {}:\n  {}",
        term::line(&request.issuer),
        term::line(&request.url)
    );
}

/// What a session did: its exit code, and the calls' cost with `--repeat`.
struct Outcome {
    code: ExitCode,
    rate: Option<Rate>,
}

/// What `--repeat N` calls cost, printed last on stderr: `calls/s: R (client CPU C µs/call)`.
struct Rate {
    calls: u64,
    elapsed: Duration,
    /// This process's CPU time over the calls, where the system tells it.
    cpu: Option<Duration>,
}

impl Rate {
    /// Times `calls` calls made by `f`, with this process's CPU time.
    async fn measure<T>(calls: u64, f: impl std::future::Future<Output = T>) -> (T, Option<Rate>) {
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

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let per_s = self.calls as f64 / self.elapsed.as_secs_f64();
        write!(f, "calls/s: {per_s:.1}")?;
        if let Some(cpu) = self.cpu {
            let us = cpu.as_secs_f64() * 1e6 / self.calls as f64;
            write!(f, " (client CPU {us:.2} µs/call)")?;
        }
        Ok(())
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

async fn run(options: &Options) -> Result<ExitCode, String> {
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
        // Opens in the era the server speaks (the probe, unless --era says).
        let client = connect_http(http, config)
            .await
            .map_err(|e| failure(e, options))?;
        let outcome = session(&client, options).await;
        close(&client, outcome).await?
    } else {
        let mut command = options.command.iter().cloned();
        let program = command.next().expect("parse checked a command is given");
        let stdio = StdioConfig::new(program)
            .args(command)
            .stderr(StderrMode::Callback(Arc::new(|line| {
                // One write per line: not cut by the CLI's own output.
                let mut line = term::line(line);
                line.push('\n');
                let _ = std::io::stderr().write_all(line.as_bytes());
            })));
        // Opens in the era the server speaks; a server that exits on the probe is started again
        // in the legacy era.
        let client = connect_stdio(stdio, config).await.map_err(describe)?;
        let outcome = session(&client, options).await;
        close(&client, outcome).await?
    };
    // Last, after the server's own stderr lines (forwarded) have stopped.
    if let Some(rate) = outcome.rate {
        eprintln!("{rate}");
    }
    Ok(outcome.code)
}

/// Closes the client whatever the session's outcome; the session's error comes first.
async fn close<T: Transport>(
    client: &Client<T>,
    outcome: Result<Outcome, String>,
) -> Result<Outcome, String> {
    let closed = client.close().await.map_err(describe);
    let outcome = outcome?;
    closed?;
    Ok(outcome)
}

/// Lists or calls, as the options say, on an open client.
async fn session<T: Transport>(client: &Client<T>, options: &Options) -> Result<Outcome, String> {
    let arguments = call_arguments(options)?;
    let fail = |e: Error| failure(e, options);
    let init = client.initialize().await.map_err(fail)?;
    let mut out = std::io::stdout().lock();
    if options.info {
        let era = match client.era() {
            Some(Era::Modern) => "modern",
            _ => "legacy",
        };
        let supported = client.discover_result().map(|d| d.supported_versions);
        if options.json {
            let object = serde_json::json!({
                "era": era,
                "protocolVersion": init.protocol_version,
                "serverInfo": init.server_info,
                "capabilities": init.capabilities,
                "instructions": init.instructions,
                "supportedVersions": supported,
            });
            let _ = writeln!(out, "{}", term::json(&object.to_string()));
        } else {
            let info = &init.server_info;
            let line = |text: String| term::line(&text);
            let _ = writeln!(
                out,
                "{}",
                line(format!("server: {} {}", info.name, info.version))
            );
            let _ = writeln!(out, "era: {era}");
            let version = line(format!("protocol version: {}", init.protocol_version));
            let _ = writeln!(out, "{version}");
            if let Some(supported) = supported {
                let supported = line(format!("supported versions: {}", supported.join(", ")));
                let _ = writeln!(out, "{supported}");
            }
            // Pretty JSON keeps its lines; its strings are escaped.
            let capabilities = serde_json::to_string_pretty(&init.capabilities)
                .unwrap_or_else(|_| init.capabilities.to_string());
            let capabilities = term::shown(&capabilities, term::Layout::Text);
            let _ = writeln!(out, "capabilities: {capabilities}");
            if let Some(instructions) = &init.instructions {
                let instructions = term::shown(instructions, term::Layout::Text);
                let _ = writeln!(out, "instructions: {instructions}");
            }
        }
        return Ok(Outcome {
            code: ExitCode::SUCCESS,
            rate: None,
        });
    }
    let Some(name) = &options.call else {
        let tools = client.list_tools().await.map_err(fail)?;
        if options.json {
            let raw: Vec<&serde_json::value::RawValue> = tools.iter().map(|t| t.raw()).collect();
            let text = serde_json::to_string(&raw).expect("raw JSON serializes");
            let _ = writeln!(out, "{}", term::json(&text));
        } else {
            for tool in &tools {
                let description = tool.description.as_deref().unwrap_or("");
                let _ = writeln!(out, "{}", listed(&tool.name, description));
            }
        }
        return Ok(Outcome {
            code: ExitCode::SUCCESS,
            rate: None,
        });
    };
    // In the modern era over HTTP, the call's first POST carries the tool's `Mcp-Param-*`
    // headers: the tools are listed first (one round trip, the cheapest way to know them) when
    // the session does not know them. A listing that fails leaves the call to say what is wrong.
    let _ = client.learn_tool(name).await;
    let (result, rate) = if options.repeat <= 1 {
        // One call: its progress is shown as it comes.
        let shown = |p: &mcp_connect::proto::Progress| {
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            let message = p
                .message
                .as_deref()
                .map(|m| format!(" {m}"))
                .unwrap_or_default();
            let line = format!("progress: {}{total}{message}", p.progress);
            eprintln!("{}", term::line(&line));
        };
        let request = Request::call_tool(name, arguments.clone());
        let result = client
            .call_with_progress(request, shown)
            .await
            .map_err(fail)?;
        (result, None)
    } else {
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
        (
            result.map_err(fail)?.expect("at least one call was made"),
            rate,
        )
    };
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

/// `--args` (default `{}`), checked to be a JSON object.
fn call_arguments(options: &Options) -> Result<Value, String> {
    match options.args.as_deref() {
        None => Ok(Value::Object(Default::default())),
        Some(text) => match serde_json::from_str(text) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(_) => Err("--args must be a JSON object".into()),
            Err(e) => Err(format!("--args is not JSON: {e}")),
        },
    }
}

/// A tool's line in the list: its name, a tab, its description's first line.
fn listed(name: &str, description: &str) -> String {
    let first_line = description.lines().next().unwrap_or("");
    format!("{}\t{}", term::line(name), term::line(first_line))
}

/// A call's result on stdout: its bridged text, or with `--json` one object.
fn print_result(out: &mut impl Write, result: &CallToolResult, json: bool) {
    if json {
        let object = serde_json::json!({
            "text": result.text(),
            "isError": result.is_error,
            "structuredContent": result.structured_content,
        });
        let _ = writeln!(out, "{}", term::json(&object.to_string()));
        return;
    }
    // Escaped as it is written, not into a copy; one text block (the usual answer) is written
    // from the result itself, without the bridged copy: a 16 MiB text takes no more memory here.
    let bridged;
    let text = match &result.content[..] {
        [mcp_connect::proto::ContentBlock::Text { text }] => text,
        _ => {
            bridged = result.text();
            &bridged
        }
    };
    let _ = writeln!(out, "{}", term::display(text, term::Layout::Text));
}

/// The offline demo: this very binary, started with `--serve`, as the server.
fn demo() -> ExitCode {
    let result = smol::block_on(async {
        let me = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
        let transport =
            StdioTransport::spawn(StdioConfig::new(me).args(["--serve"])).map_err(describe)?;
        let client = std::sync::Arc::new(Client::new(transport));
        let init = client.initialize().await.map_err(describe)?;
        println!(
            "connected to {} {} (protocol {})",
            init.server_info.name, init.server_info.version, init.protocol_version
        );
        let tools = mcp_connect::as_tools(&client).await.map_err(describe)?;
        println!("{} tools:", tools.len());
        for tool in &tools {
            use mcp_connect::AgentTool;
            println!(
                "  {}\t{}\n    schema: {}",
                tool.name(),
                tool.description(),
                tool.input_schema()
            );
        }
        for (name, args) in [
            ("echo", serde_json::json!({"text": "hello from the demo"})),
            ("add", serde_json::json!({"a": 2, "b": 40})),
            (
                "fail",
                serde_json::json!({"message": "this tool always fails"}),
            ),
            ("image", serde_json::json!({})),
        ] {
            let tool = tools
                .iter()
                .find(|t| t.definition().name == name)
                .expect("the demo server has it");
            match mcp_connect::AgentTool::call(tool, args.clone()).await {
                Ok(text) => println!("call {name} {args} -> {text}"),
                Err(mcp_connect::ToolError::Retry(msg)) => {
                    println!("call {name} {args} -> correctable error: {msg}")
                }
                Err(e) => return Err(describe(e)),
            }
        }
        client.close().await.map_err(describe)
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-client: {}", term::line(&e));
            ExitCode::from(1)
        }
    }
}
