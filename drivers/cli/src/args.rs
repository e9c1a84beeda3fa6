//! The command line: [`Options`], read and checked by [`parse`] before anything is started.

use mcp_connect::proto::oauth::Secret;
use mcp_connect::proto::EraChoice;
use serde_json::Value;
use std::ffi::OsString;
use std::time::Duration;

/// The usage line after `usage: mcp-client ` (a wrong argument prints it).
pub(crate) const USAGE: &str = "[--info | --call NAME [--args JSON] [--repeat N | --task] | resources [list|templates|read URI [--out FILE]|watch URI [--read]] | prompts [list|get NAME [--arg K=V]...] | skills [list|load NAME [--file PATH] [--out FILE]] | complete (--prompt NAME|--resource TEMPLATE) ARG [VALUE] [--context K=V]...] [--era auto|legacy|modern] [--timeout SECS] [--max-time SECS] [--json] [--verbose] [--roots DIR...] [--record FILE] (-- COMMAND [ARG...] | --url URL [--header 'K: V']... [--no-auth | --client-id ID ...] | --config FILE [--server NAME]...); --help for more";

/// What the command line asks for.
#[derive(Debug, Default)]
pub(crate) struct Options {
    pub(crate) call: Option<String>,
    pub(crate) args: Option<String>,
    pub(crate) repeat: u64,
    /// `--task`: the `--call` runs as a task (the tool must allow it).
    pub(crate) task: bool,
    /// `Some(None)`: no timeout (a value too large for a `Duration`).
    pub(crate) timeout: Option<Option<Duration>>,
    /// `--max-time`: the most a `--call` may take in all, progress or not (`None`: the default,
    /// [`crate::run::MAX_TIME`]; `Some(None)`: none).
    pub(crate) max_time: Option<Option<Duration>>,
    pub(crate) headers: Vec<String>,
    pub(crate) json: bool,
    pub(crate) info: bool,
    pub(crate) verbose: bool,
    pub(crate) roots: Vec<std::path::PathBuf>,
    pub(crate) era: EraChoice,
    pub(crate) url: Option<String>,
    pub(crate) command: Vec<OsString>,
    /// `--config FILE`: the servers of a config file, as one tool set ([`crate::set`]).
    pub(crate) config: Option<std::path::PathBuf>,
    /// `--server NAME`, repeatable: only these servers of the config.
    pub(crate) servers: Vec<String>,
    /// `--input ID=VALUE`: the values of VS Code's `${input:ID}`.
    pub(crate) inputs: Vec<(String, String)>,
    pub(crate) auth: AuthFlags,
    /// `--record FILE`: what went over the wire, written to FILE (one server: stdio or HTTP).
    pub(crate) record: Option<std::path::PathBuf>,
    /// `--help`: print the help ([`crate::HELP`]) and do nothing else.
    pub(crate) help: bool,
    /// The words before `--` that are no option: a command and its operands, read into
    /// [`feature`](Self::feature).
    pub(crate) words: Vec<String>,
    /// `resources`, `prompts` or `complete`, with its own options ([`crate::features`]).
    pub(crate) feature: Option<crate::features::Feature>,
    /// The options only those commands take.
    pub(crate) feature_flags: crate::features::Flags,
}

/// How `--url` authorizes when the server asks.
#[derive(Debug, Default)]
pub(crate) struct AuthFlags {
    /// `--no-auth`.
    pub(crate) off: bool,
    pub(crate) client_id: Option<String>,
    /// From `--client-secret` or `--client-secret-env` (its `Debug` shows no value).
    pub(crate) client_secret: Option<Secret>,
    pub(crate) client_issuer: Option<String>,
    pub(crate) client_credentials: bool,
    /// `--assertion-file`: the workload's JWT (the JWT-bearer grant), read at each flow.
    pub(crate) assertion_file: Option<std::path::PathBuf>,
    /// `--idp-token-url`: enterprise-managed authorization's identity provider.
    pub(crate) idp_token_url: Option<String>,
    pub(crate) idp_client_id: Option<String>,
    /// From `--idp-client-secret-env` (its `Debug` shows no value).
    pub(crate) idp_client_secret: Option<Secret>,
    /// From `--id-token-file` or `--id-token-env`.
    pub(crate) id_token: Option<Secret>,
    /// `--dpop` (`Some(true)`) or `--no-dpop` (`Some(false)`); by default DPoP when the server
    /// asks.
    pub(crate) dpop: Option<bool>,
    /// From `--dpop-key FILE` (its `Debug` shows nothing of it).
    pub(crate) dpop_key: Option<std::sync::Arc<mcp_connect::proto::oauth::dpop::DpopKey>>,
    pub(crate) store: StoreChoice,
    pub(crate) no_browser: bool,
    pub(crate) timeout: Option<Duration>,
    /// The auth options given, in order, for the checks that need `--url`.
    pub(crate) given: Vec<&'static str>,
}

/// Where the credentials are kept.
#[derive(Debug, Default)]
pub(crate) enum StoreChoice {
    /// [`mcp_connect::FileStore::default_path`] (in memory where there is none: no home directory).
    #[default]
    Default,
    File(std::path::PathBuf),
    Memory,
}

/// The options of `argv` (the arguments after the program's name), checked; `usage` is the usage
/// line a wrong argument prints.
pub(crate) fn parse(argv: impl Iterator<Item = OsString>, usage: &str) -> Result<Options, String> {
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
            Some(flag @ ("--timeout" | "--max-time")) => {
                let secs: f64 = value(&mut argv, flag)?
                    .parse()
                    .map_err(|_| format!("{flag} needs seconds"))?;
                if secs.is_nan() || secs < 0.001 {
                    return Err(format!("{flag} needs at least 0.001 seconds"));
                }
                // A time too long for a Duration (or infinite) means none.
                let limit = Some(Duration::try_from_secs_f64(secs).ok());
                if flag == "--timeout" {
                    o.timeout = limit;
                } else {
                    o.max_time = limit;
                }
            }
            Some("--header") => o.headers.push(value(&mut argv, "--header")?),
            Some("--json") => o.json = true,
            Some("--task") => o.task = true,
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
            Some("--record") => o.record = Some(value(&mut argv, "--record")?.into()),
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
            Some(flag) if crate::features::FLAGS.contains(&flag) => {
                let mut next = || value(&mut argv, flag);
                crate::features::flag(&mut o.feature_flags, flag, &mut next)?;
            }
            Some(word) if !word.starts_with('-') => o.words.push(word.to_owned()),
            Some("-h" | "--help") => {
                o.help = true;
                return Ok(o);
            }
            _ => return Err(format!("unexpected argument {arg:?}\n{usage}")),
        }
    }
    if o.args.is_some() && o.call.is_none() {
        return Err("--args needs --call".into());
    }
    if o.max_time.is_some() && o.call.is_none() {
        return Err("--max-time needs --call".into());
    }
    if o.task && o.call.is_none() {
        return Err("--task needs --call".into());
    }
    if o.task && o.repeat != 1 {
        return Err("give --task or --repeat, not both (a task is one call)".into());
    }
    if o.task && o.config.is_some() {
        return Err(
            "--task works on one server (-- COMMAND or --url), not with --config (a tool that requires a task runs as one there)"
                .into(),
        );
    }
    if o.info && o.call.is_some() {
        return Err("give --info or --call, not both".into());
    }
    let targets = [o.url.is_some(), !o.command.is_empty(), o.config.is_some()];
    if targets.iter().filter(|t| **t).count() != 1 {
        return Err(format!(
            "give one of -- COMMAND, --url URL or --config FILE\n{usage}"
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
    if o.record.is_some() && o.config.is_some() {
        return Err("--record records one server: start it with -- COMMAND (the servers of a config file are not recorded)".into());
    }
    if !o.headers.is_empty() && o.url.is_none() {
        return Err("--header needs --url".into());
    }
    check_auth(&o.auth, o.url.is_some())?;
    call_arguments(&o)?;
    o.feature = crate::features::parse(&o, usage)?;
    Ok(o)
}

/// The options of [`AuthFlags`].
const AUTH_FLAGS: [&str; 19] = [
    "--no-auth",
    "--client-id",
    "--client-secret",
    "--client-secret-env",
    "--client-issuer",
    "--client-credentials",
    "--assertion-file",
    "--idp-token-url",
    "--idp-client-id",
    "--idp-client-secret-env",
    "--id-token-file",
    "--id-token-env",
    "--dpop",
    "--no-dpop",
    "--dpop-key",
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
        "--assertion-file" => a.assertion_file = Some(value()?.into()),
        "--idp-token-url" => a.idp_token_url = Some(value()?),
        "--idp-client-id" => a.idp_client_id = Some(value()?),
        "--idp-client-secret-env" => a.idp_client_secret = Some(secret_env(flag, &value()?)?),
        "--id-token-env" => a.id_token = Some(secret_env(flag, &value()?)?),
        "--id-token-file" => {
            // Read here, once: an ID token is short-lived and a run is one sign-in. The
            // message names the file, never what is in it.
            let path = value()?;
            let text = read_capped(&path, mcp_connect::proto::oauth::MAX_ASSERTION)
                .map_err(|e| format!("--id-token-file {path}: {e}"))?;
            a.id_token = Some(Secret::new(text.trim().to_owned()));
        }
        "--dpop" => a.dpop = Some(true),
        "--no-dpop" => a.dpop = Some(false),
        "--dpop-key" => {
            // Read here, once; a message names the file, never what is in it.
            let path = value()?;
            let pem =
                read_capped(&path, MAX_KEY_FILE).map_err(|e| format!("--dpop-key {path}: {e}"))?;
            let key = mcp_connect::proto::oauth::dpop::DpopKey::from_pem(&pem)
                .map_err(|e| format!("--dpop-key {path}: {e}"))?;
            a.dpop_key = Some(std::sync::Arc::new(key));
        }
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

/// The largest `--dpop-key` file read (a PEM P-256 key is about 250 bytes).
const MAX_KEY_FILE: usize = 16 * 1024;

/// The value of the environment variable `var`, for `flag`; an error names the variable, never
/// a value.
fn secret_env(flag: &str, var: &str) -> Result<Secret, String> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Ok(Secret::new(v.trim().to_owned())),
        _ => Err(format!("{flag}: the environment variable {var} is not set")),
    }
}

/// The text of the file at `path`, at most `max` bytes.
fn read_capped(path: &str, max: usize) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut text = String::new();
    file.take(max as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() > max {
        return Err(format!("more than {max} bytes"));
    }
    Ok(text)
}

/// The auth options that do not go together, or lack what they need.
fn check_auth(a: &AuthFlags, url: bool) -> Result<(), String> {
    let has = |flag: &str| a.given.contains(&flag);
    if let (Some(first), false) = (a.given.first(), url) {
        return Err(format!("{first} needs --url"));
    }
    if a.off {
        // It uses the stored credentials (and a pre-registered client to refresh them with),
        // and starts no flow: what only a flow uses has no use with it.
        let flow_only = [
            "--client-credentials",
            "--no-browser",
            "--auth-timeout",
            "--assertion-file",
            "--idp-token-url",
            "--idp-client-id",
            "--idp-client-secret-env",
            "--id-token-file",
            "--id-token-env",
            "--dpop",
        ];
        if let Some(other) = a.given.iter().find(|f| flow_only.contains(f)) {
            return Err(format!(
                "--no-auth starts no authorization: {other} has no use with it"
            ));
        }
    }
    if has("--client-secret") && has("--client-secret-env") {
        return Err("give --client-secret or --client-secret-env, not both".into());
    }
    if has("--auth-store") && has("--no-auth-store") {
        return Err("give --auth-store or --no-auth-store, not both".into());
    }
    if has("--no-dpop") {
        if let Some(other) = ["--dpop", "--dpop-key"].into_iter().find(|f| has(f)) {
            return Err(format!("--no-dpop and {other} do not go together"));
        }
    }
    if has("--id-token-file") && has("--id-token-env") {
        return Err("give --id-token-file or --id-token-env, not both".into());
    }
    let enterprise = [
        "--idp-token-url",
        "--idp-client-id",
        "--idp-client-secret-env",
        "--id-token-file",
        "--id-token-env",
    ];
    let grants = [
        ("--client-credentials", has("--client-credentials")),
        ("--assertion-file", has("--assertion-file")),
        ("--idp-token-url", enterprise.iter().any(|f| has(f))),
    ];
    let chosen: Vec<&str> = grants.iter().filter(|g| g.1).map(|g| g.0).collect();
    if chosen.len() > 1 {
        return Err(format!(
            "{} and {} are two ways to get a token: give one",
            chosen[0], chosen[1]
        ));
    }
    if enterprise.iter().any(|f| has(f))
        && (a.idp_token_url.is_none() || a.idp_client_id.is_none() || a.id_token.is_none())
    {
        return Err("enterprise-managed authorization needs --idp-token-url URL, --idp-client-id ID and the person's ID token (--id-token-file FILE or --id-token-env VAR)".into());
    }
    if a.client_id.is_none() {
        for needs_id in [
            "--client-secret",
            "--client-secret-env",
            "--client-issuer",
            "--client-credentials",
            "--assertion-file",
            "--idp-token-url",
        ] {
            if has(needs_id) {
                return Err(format!("{needs_id} needs --client-id"));
            }
        }
    }
    if a.client_credentials && a.client_secret.is_none() {
        return Err(
            "--client-credentials needs the client's secret (--client-secret-env VAR or --client-secret)"
                .into(),
        );
    }
    // The grants with no person open no browser and wait for nobody.
    if let Some(grant) = chosen.first() {
        for browser in ["--no-browser", "--auth-timeout"] {
            if has(browser) {
                return Err(format!(
                    "{grant} involves no person: {browser} has no use with it"
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

/// `--args` (default `{}`), checked to be a JSON object.
pub(crate) fn call_arguments(options: &Options) -> Result<Value, String> {
    match options.args.as_deref() {
        None => Ok(Value::Object(Default::default())),
        Some(text) => match serde_json::from_str(text) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(_) => Err("--args must be a JSON object".into()),
            Err(e) => Err(format!("--args is not JSON: {e}")),
        },
    }
}
