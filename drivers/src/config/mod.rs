//! The MCP server config files people already write, read into one model.
//!
//! | format | file | servers under | reader |
//! |---|---|---|---|
//! | [`ConfigFormat::McpServers`] | Claude Desktop's `claude_desktop_config.json`, Cursor's `mcp.json`, Claude Code's `.mcp.json`, Windsurf's `mcp_config.json` (`serverUrl`), Cline's and most others | `mcpServers` | [`mcp_servers`] |
//! | [`ConfigFormat::Gemini`] | Gemini CLI's `settings.json` (`httpUrl`, `timeout` in ms, `includeTools`, `$VAR`) | `mcpServers` | [`mcp_servers`] |
//! | [`ConfigFormat::VsCode`] | VS Code's `.vscode/mcp.json` | `servers` (and `inputs`) | [`vscode`] |
//! | [`ConfigFormat::Codex`] | Codex's `config.toml` | `[mcp_servers.NAME]` | [`codex`] |
//! | [`ConfigFormat::Zed`] | Zed's `settings.json` | `context_servers` | [`zed`] |
//! | [`ConfigFormat::Goose`] | Goose's `config.yaml` | `extensions` | [`goose`] |
//!
//! [`load`] reads a file and tells the format from its name and content: a `.toml` file is
//! Codex's, a `.yaml` or `.yml` file Goose's; a JSON file with `mcpServers` at the top level is
//! the common format (Gemini CLI's when it is in a `.gemini` folder or a server has `httpUrl`),
//! one with `servers` VS Code's, one with `context_servers` Zed's. A file whose name says neither
//! is YAML when its first line (after blank lines, `#` comments and `---`) is `KEY: …` or
//! `- …`, so a YAML file is reported as YAML, never as invalid JSON. The JSON formats are read as
//! JSONC, as VS Code and Zed write them: `//` and `/* */` comments and trailing commas are
//! accepted (nothing looser); YAML as YAML 1.2 (without aliases). Keys a format does not use are
//! ignored, since each client adds its own (`autoApprove`, `alwaysAllow`, `trust`, …). A server
//! of the legacy `sse` type is refused with a message saying it is the deprecated HTTP+SSE
//! transport, which this client does not speak. Entries that are not MCP servers (Goose's
//! built-in extensions, Zed's extension-provided servers) are left out and listed in
//! [`ServersConfig::skipped`] with why. An entry whose variables cannot be expanded here (an
//! unset `${VAR}`, an input not given) fails alone: it is listed in [`ServersConfig::failed`]
//! with its error, and the file's other entries are read as usual. Each entry becomes a [`ServerSpec`](crate::ServerSpec)
//! for a [`ServerSet`](crate::ServerSet), or the [`StdioConfig`] / [`HttpTransportConfig`] of
//! one connection.
//!
//! ```no_run
//! let config = mcp_connect::config::load("claude_desktop_config.json")?;
//! for server in config.servers.iter().filter(|s| s.enabled) {
//!     if let Some(stdio) = server.stdio_config() {
//!         println!("{}: {:?}", server.name, stdio); // env values are not shown
//!     }
//! }
//! # Ok::<(), mcp_connect::config::ConfigError>(())
//! ```
//!
//! # Variables
//!
//! Every string that is used as a value — `command`, `args`, `env` values, `cwd`, `url`, header
//! values and VS Code's `envFile`, and their other formats' names (`cmd`, `envs`, `uri`,
//! `serverUrl`, `httpUrl`, Zed's `path`) — is expanded, in every format (names, keys, `type` and
//! tool lists are not):
//!
//! | written | becomes |
//! |---|---|
//! | `${VAR}`, `${env:VAR}` | the environment variable `VAR` ([`ExpandOptions::env`]); **unset fails the entry** (see below), so an empty secret is never sent |
//! | `${input:ID}` | the value supplied in [`ExpandOptions::inputs`]; not supplied fails the entry (VS Code would prompt; a library never does) |
//! | `${workspaceFolder}` | the directory holding the `.vscode` (or `.cursor`, `.zed`, `.gemini`) folder the file is in, otherwise the file's own directory |
//! | `${workspaceFolderBasename}` | that directory's last component |
//! | `${userHome}` | `HOME` (or `USERPROFILE`) from [`ExpandOptions::env`] |
//! | `${pathSeparator}`, `${/}` | `/` (`\` on Windows) |
//! | `$VAR` | in Gemini CLI's files only, as Gemini CLI does: the environment variable `VAR` (a name of letters, digits and `_`), unset failing the entry |
//! | `$${` | a literal `${` (the one escape; any other `$` is kept as written) |
//!
//! Any other `${…}` (`${config:…}`, `${command:…}`) is an error, and so is a `${` without its `}`.
//! Strings without `${` (in Gemini CLI's files, without `$`) are never changed. A relative `cwd` (or `envFile`) is taken relative to the
//! workspace folder as defined above.
//!
//! An unset variable (`${VAR}`, `${env:VAR}`, Gemini CLI's `$VAR`, Codex's `bearer_token_env_var`,
//! `env_http_headers` and Goose's `env_keys`) or an input not supplied fails only the entry that
//! uses it: the entry is left out of [`ServersConfig::servers`] and listed in
//! [`ServersConfig::failed`] with a [`ConfigError`] naming the variable and where it is used
//! ([`ConfigErrorKind::MissingVariable`], [`ConfigErrorKind::MissingInput`]). A file whose
//! variables are set on one machine and not on another still gives its other servers; a caller
//! that starts only some entries ignores the failures of the others.
//!
//! # Files read
//!
//! A config file and an `envFile` are read only when they are regular files (a symlink is
//! followed: its target must be one) of at most [`MAX_CONFIG_FILE`] (16 MiB) and
//! [`MAX_ENV_FILE`] (4 MiB) bytes. A directory, a FIFO, a device (`/dev/zero`, `/dev/stdin`) or a
//! socket is refused at once, without reading from it ([`ConfigErrorKind::NotAFile`]), and so is
//! a larger file ([`ConfigErrorKind::TooLarge`]): loading never blocks on a pipe nor reads
//! without end. What is checked is the file opened (opened without waiting for a writer, and
//! read at most one byte past the cap), so a path swapped after the check gains nothing.
//!
//! # Errors
//!
//! A [`ConfigError`] names the file, the line and column (1-based, columns in characters) of the
//! offending value or key, and the server when there is one:
//! `path/mcp.json:12:17: server "github": "args" must be an array of strings`. No message quotes
//! a string's value, except a `type` (or Zed's `source`) it does not know. A [`ConfigError`]
//! returned fails the whole file; one in [`ServersConfig::failed`] fails only its entry.

pub mod codex;
pub mod goose;
pub mod mcp_servers;
mod tree;
pub mod vscode;
pub mod zed;

#[cfg(feature = "http")]
use crate::HttpTransportConfig;
#[cfg(feature = "stdio")]
use crate::StdioConfig;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tree::{Key, Node, Value};

/// The most bytes a config file may hold (16 MiB): a larger one is refused
/// ([`ConfigErrorKind::TooLarge`]).
pub const MAX_CONFIG_FILE: u64 = 16 << 20;

/// The most bytes VS Code's `envFile` may hold (4 MiB): a larger one is refused
/// ([`ConfigErrorKind::TooLarge`]).
pub const MAX_ENV_FILE: u64 = 4 << 20;

/// A config file's servers, in the order the file lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct ServersConfig {
    /// The file, as given to [`load`] or [`parse`].
    pub path: PathBuf,
    /// Its format.
    pub format: ConfigFormat,
    /// The servers, in file order (disabled ones included, with [`ServerEntry::enabled`] false).
    pub servers: Vec<ServerEntry>,
    /// The entries that are not MCP servers this client can start (Goose's built-in extensions,
    /// a Zed extension's server…), in file order, each with why; they are not in `servers`.
    pub skipped: Vec<SkippedEntry>,
    /// The entries that name a server but cannot be used as written here — a variable they use
    /// is not set, an input is not supplied (see [Variables](self#variables)) — in file order,
    /// each with its error; they are not in `servers`.
    pub failed: Vec<FailedEntry>,
}

/// An entry of a config file that names a server this client could start, but whose variables
/// cannot be expanded with the [`ExpandOptions`] given: an unset environment variable, an input
/// not supplied. It fails alone, listed in [`ServersConfig::failed`] rather than failing the file.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedEntry {
    /// Its name, the key it is listed under.
    pub name: String,
    /// False when the file disables it (as [`ServerEntry::enabled`]): a caller starting the
    /// enabled servers need not mention it.
    pub enabled: bool,
    /// Why: the file, the line and column of the variable, the server, and which variable
    /// ([`ConfigErrorKind::MissingVariable`] or [`ConfigErrorKind::MissingInput`]).
    pub error: ConfigError,
}

impl fmt::Display for FailedEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

/// An entry a config file lists that is not an MCP server this client can start, so it is left
/// out of [`ServersConfig::servers`] rather than failing the file: a Goose `builtin`, `platform`,
/// `frontend` or `inline_python` extension (run inside Goose), a Zed server provided by a Zed
/// extension (its command comes from the extension's code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedEntry {
    /// Its name, the key it is listed under.
    pub name: String,
    /// The line and column (1-based) of its name.
    pub position: (usize, usize),
    /// Why it is left out.
    pub reason: String,
}

impl fmt::Display for SkippedEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (line, column) = self.position;
        write!(
            f,
            "{line}:{column}: {:?} skipped: {}",
            self.name, self.reason
        )
    }
}

impl ServersConfig {
    /// The server of this name.
    pub fn get(&self, name: &str) -> Option<&ServerEntry> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// The failed entry of this name (see [`failed`](Self::failed)).
    pub fn failure(&self, name: &str) -> Option<&FailedEntry> {
        self.failed.iter().find(|s| s.name == name)
    }
}

/// Which config file format a file is in. See the [module docs](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigFormat {
    /// `{"mcpServers": {NAME: {…}}}`: Claude Desktop, Cursor, Claude Code, Windsurf (`serverUrl`),
    /// Cline and most others.
    McpServers,
    /// VS Code's `.vscode/mcp.json`: `{"servers": {NAME: {…}}, "inputs": […]}`.
    VsCode,
    /// Codex's `config.toml`: `[mcp_servers.NAME]` tables.
    Codex,
    /// Gemini CLI's `settings.json`: `mcpServers` with Gemini's own keys (`httpUrl`, `timeout` in
    /// milliseconds, `includeTools`, `excludeTools`, `$VAR`).
    Gemini,
    /// Zed's `settings.json`: `{"context_servers": {NAME: {…}}}`.
    Zed,
    /// Goose's `config.yaml`: `extensions: {NAME: {type: …}}`.
    Goose,
}

/// One configured server: how to reach it, and what the tool set should do with it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerEntry {
    /// Its name, the key it is listed under (never empty).
    pub name: String,
    /// How to reach it.
    pub transport: ServerTransport,
    /// False when the file disables it (`"disabled": true`; `enabled = false` in Codex's, Zed's
    /// and Goose's files).
    pub enabled: bool,
    /// How long starting and initializing it may take (Codex's `startup_timeout_sec`).
    pub startup_timeout: Option<Duration>,
    /// How long one tool call may take (Codex's `tool_timeout_sec`; the `timeout` of Gemini CLI,
    /// Zed and Goose).
    pub tool_timeout: Option<Duration>,
    /// When set, only these tools are offered (Codex's `enabled_tools`, Gemini CLI's
    /// `includeTools`, Goose's `available_tools`).
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered (Codex's `disabled_tools`, Gemini CLI's `excludeTools`).
    pub disabled_tools: Vec<String>,
}

impl ServerEntry {
    /// An enabled server with no timeouts and no tool lists.
    pub fn new(name: impl Into<String>, transport: ServerTransport) -> Self {
        ServerEntry {
            name: name.into(),
            transport,
            enabled: true,
            startup_timeout: None,
            tool_timeout: None,
            enabled_tools: None,
            disabled_tools: Vec::new(),
        }
    }

    #[cfg(feature = "stdio")]
    /// The stdio driver's config, for a stdio server: command, arguments, environment entries
    /// (on top of the inherited environment) and working directory.
    pub fn stdio_config(&self) -> Option<StdioConfig> {
        match &self.transport {
            ServerTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut config = StdioConfig::new(command).args(args);
                for (key, value) in env {
                    config = config.env(key, value);
                }
                if let Some(cwd) = cwd {
                    config = config.dir(cwd);
                }
                Some(config)
            }
            ServerTransport::Http { .. } => None,
        }
    }

    #[cfg(feature = "http")]
    /// The Streamable HTTP driver's config, for an HTTP server: its URL and headers.
    pub fn http_config(&self) -> Option<HttpTransportConfig> {
        match &self.transport {
            ServerTransport::Http { url, headers } => Some(
                headers
                    .iter()
                    .fold(HttpTransportConfig::new(url), |c, (k, v)| c.header(k, v)),
            ),
            ServerTransport::Stdio { .. } => None,
        }
    }
}

/// How to reach a server, every variable expanded. Its `Debug` shows environment variable and
/// header names but not their values, and the URL without user info or query.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerTransport {
    /// A child process speaking MCP over stdin and stdout.
    Stdio {
        /// The program (looked up in `PATH` when started).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment entries applied on top of the inherited environment.
        env: BTreeMap<String, String>,
        /// Its working directory, absolute when the file's was relative (see the
        /// [module docs](self)); `None`: the caller's.
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint's URL (`http` or `https`).
        url: String,
        /// Headers sent on every request, in file order (a bearer token from Codex's
        /// `bearer_token_env_var` is an `Authorization: Bearer …` header, last).
        headers: Vec<(String, String)>,
    },
}

impl fmt::Debug for ServerTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &Names(env.keys().map(String::as_str).collect()))
                .field("cwd", cwd)
                .finish(),
            ServerTransport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &mcp_proto::http::redact_url(url))
                .field(
                    "headers",
                    &Names(headers.iter().map(|(k, _)| k.as_str()).collect()),
                )
                .finish(),
        }
    }
}

/// Names shown as `["NAME=…", …]`.
struct Names<'a>(Vec<&'a str>);

impl fmt::Debug for Names<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|n| format!("{n}=…")))
            .finish()
    }
}

/// Where `${…}` values come from. [`Default`] is empty (hermetic, for tests);
/// [`from_env`](Self::from_env) takes this process's environment, as [`load`] does.
#[derive(Clone, Default)]
pub struct ExpandOptions {
    /// Environment variables, for `${VAR}`, `${env:VAR}`, `${userHome}` and Codex's
    /// `bearer_token_env_var` and `env_http_headers`.
    pub env: HashMap<String, String>,
    /// Values of VS Code's `${input:ID}`, by ID.
    pub inputs: HashMap<String, String>,
}

impl ExpandOptions {
    /// This process's environment (variables whose name or value is not UTF-8 are left out), and
    /// no inputs.
    pub fn from_env() -> Self {
        ExpandOptions {
            env: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            inputs: HashMap::new(),
        }
    }

    /// Sets an environment variable.
    pub fn var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// Supplies an input's value.
    pub fn input(mut self, id: impl Into<String>, value: impl Into<String>) -> Self {
        self.inputs.insert(id.into(), value.into());
        self
    }
}

impl fmt::Debug for ExpandOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut env: Vec<&str> = self.env.keys().map(String::as_str).collect();
        let mut inputs: Vec<&str> = self.inputs.keys().map(String::as_str).collect();
        env.sort_unstable();
        inputs.sort_unstable();
        f.debug_struct("ExpandOptions")
            .field("env", &Names(env))
            .field("inputs", &Names(inputs))
            .finish()
    }
}

/// A config that cannot be used: which file, where in it, which server, and why.
///
/// Displayed as `FILE:LINE:COLUMN: server "NAME": MESSAGE` (the position and the server only when
/// known).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    /// The file the error is in (an `envFile` for an error inside one).
    pub path: PathBuf,
    /// The line and column (1-based; columns count characters) of the offending value or key.
    pub position: Option<(usize, usize)>,
    /// The server whose entry is wrong.
    pub server: Option<String>,
    /// What is wrong.
    pub kind: ConfigErrorKind,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some((line, column)) = self.position {
            write!(f, ":{line}:{column}")?;
        }
        f.write_str(": ")?;
        if let Some(server) = &self.server {
            write!(f, "server {server:?}: ")?;
        }
        write!(f, "{}", self.kind)
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ConfigErrorKind::Read { error, .. } => Some(&**error),
            _ => None,
        }
    }
}

/// What is wrong with a config.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// The file (or an `envFile`) could not be read.
    #[error("cannot read {what}: {error}")]
    Read {
        /// `the file`, or `"envFile" PATH`.
        what: String,
        /// The cause (also [`ConfigError`]'s `source()`).
        error: Arc<std::io::Error>,
    },
    /// The file (or an `envFile`) is not a regular file: a directory, a FIFO, a device or a
    /// socket (a symlink's target counts). Refused without reading from it.
    #[error("{what} is not a regular file: it is {found}")]
    NotAFile {
        /// `the file`, or `"envFile" PATH`.
        what: String,
        /// What it is: `a directory`, `a FIFO`, `a character device`…
        found: &'static str,
    },
    /// The file (or an `envFile`) holds more than `cap` bytes ([`MAX_CONFIG_FILE`],
    /// [`MAX_ENV_FILE`]).
    #[error("{what} is larger than {} MiB, the most it may hold", cap >> 20)]
    TooLarge {
        /// `the file`, or `"envFile" PATH`.
        what: String,
        /// The cap, in bytes.
        cap: u64,
    },
    /// The file is not JSON (JSONC), TOML or YAML.
    #[error("invalid {syntax}: {message}")]
    Syntax {
        /// `JSON`, `TOML` or `YAML`.
        syntax: &'static str,
        /// The parser's message.
        message: String,
    },
    /// A value is missing, of the wrong type, or not allowed (the message says which).
    #[error("{0}")]
    Invalid(String),
    /// `${VAR}`, `${env:VAR}` or a Codex `*_env_var` names an unset variable.
    #[error("environment variable {0:?} is not set")]
    MissingVariable(String),
    /// `${input:ID}` names an input not in [`ExpandOptions::inputs`].
    #[error("input {id:?}{} is not given (inputs are never prompted for)", description.as_ref().map(|d| format!(" ({d:?})")).unwrap_or_default())]
    MissingInput {
        /// The input's ID.
        id: String,
        /// Its `description` in the file's `inputs`, when declared.
        description: Option<String>,
    },
}

impl ConfigErrorKind {
    /// Whether this is a variable with no value here ([`MissingVariable`](Self::MissingVariable),
    /// [`MissingInput`](Self::MissingInput)): such an error fails one entry, not the file (see
    /// [`ServersConfig::failed`]).
    pub fn is_unset_variable(&self) -> bool {
        matches!(
            self,
            ConfigErrorKind::MissingVariable(_) | ConfigErrorKind::MissingInput { .. }
        )
    }
}

impl PartialEq for ConfigErrorKind {
    fn eq(&self, other: &Self) -> bool {
        use ConfigErrorKind::*;
        match (self, other) {
            (Read { what: a, error: x }, Read { what: b, error: y }) => {
                a == b && x.kind() == y.kind() && x.to_string() == y.to_string()
            }
            (
                Syntax {
                    syntax: a,
                    message: x,
                },
                Syntax {
                    syntax: b,
                    message: y,
                },
            ) => a == b && x == y,
            (Invalid(a), Invalid(b)) | (MissingVariable(a), MissingVariable(b)) => a == b,
            (NotAFile { what: a, found: x }, NotAFile { what: b, found: y }) => a == b && x == y,
            (TooLarge { what: a, cap: x }, TooLarge { what: b, cap: y }) => a == b && x == y,
            (
                MissingInput {
                    id: a,
                    description: x,
                },
                MissingInput {
                    id: b,
                    description: y,
                },
            ) => a == b && x == y,
            _ => false,
        }
    }
}

/// The text of the regular file at `path` (a symlink followed), of at most `cap` bytes (see
/// [Files read](self#files-read)); `what` names it in errors.
fn read_text(path: &Path, cap: u64, what: &str) -> Result<String, ConfigErrorKind> {
    use std::io::Read;
    let read = |e: std::io::Error| ConfigErrorKind::Read {
        what: what.to_owned(),
        error: Arc::new(e),
    };
    let not_a_file = |meta: &std::fs::Metadata| {
        (!meta.is_file()).then(|| ConfigErrorKind::NotAFile {
            what: what.to_owned(),
            found: file_type(meta.file_type()),
        })
    };
    // Not opened at all when it is no regular file (opening a device may do something)…
    if let Some(refused) = not_a_file(&std::fs::metadata(path).map_err(read)?) {
        return Err(refused);
    }
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    #[cfg(unix)]
    {
        // …and, when it was swapped since, a FIFO opens without waiting for a writer (a regular
        // file reads the same).
        use std::os::unix::fs::OpenOptionsExt;
        open.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = open.open(path).map_err(read)?;
    // What counts is the file opened.
    let meta = file.metadata().map_err(read)?;
    if let Some(refused) = not_a_file(&meta) {
        return Err(refused);
    }
    let too_large = || ConfigErrorKind::TooLarge {
        what: what.to_owned(),
        cap,
    };
    if meta.len() > cap {
        return Err(too_large());
    }
    // At most one byte past the cap, should it grow while read.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut bytes).map_err(read)?;
    if bytes.len() as u64 > cap {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|_| {
        read(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ))
    })
}

/// What a file that is not a regular one is, for [`ConfigErrorKind::NotAFile`].
fn file_type(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// Reads a config file, telling its format from it (see the [module docs](self)), with `${…}` from
/// this process's environment.
pub fn load(path: impl AsRef<Path>) -> Result<ServersConfig, ConfigError> {
    load_with(path, &ExpandOptions::from_env())
}

/// [`load`] with the variables' values from `options`.
pub fn load_with(
    path: impl AsRef<Path>,
    options: &ExpandOptions,
) -> Result<ServersConfig, ConfigError> {
    let path = path.as_ref();
    let text = read_text(path, MAX_CONFIG_FILE, "the file").map_err(|kind| ConfigError {
        path: path.to_owned(),
        position: None,
        server: None,
        kind,
    })?;
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("toml") => return parse(&text, ConfigFormat::Codex, path, options),
        Some("yaml" | "yml") => return parse(&text, ConfigFormat::Goose, path, options),
        Some("json" | "jsonc") => {}
        _ if looks_like_yaml(&text) => return parse(&text, ConfigFormat::Goose, path, options),
        _ => {}
    }
    // Told from the content, so read before the format is known (the reader's format only
    // changes how messages say "object" and whether `$VAR` is a variable).
    let mut reader = Reader::new(&text, path, ConfigFormat::McpServers, options);
    let root = reader.json()?;
    let top = reader.top(&root)?;
    let found: Vec<(&Key, &Node, ConfigFormat)> = [
        ("mcpServers", ConfigFormat::McpServers),
        ("servers", ConfigFormat::VsCode),
        ("context_servers", ConfigFormat::Zed),
    ]
    .into_iter()
    .filter_map(|(name, format)| field(top, name).map(|(k, v)| (k, v, format)))
    .collect();
    reader.format = match found.as_slice() {
        [] => return Err(reader.error(
            root.span.start,
            "found neither \"mcpServers\" (Claude Desktop, Cursor, Windsurf, Gemini CLI and most \
                 others), \"servers\" (VS Code) nor \"context_servers\" (Zed) at the top level",
        )),
        [(_, servers, ConfigFormat::McpServers)] if is_gemini(path, servers) => {
            ConfigFormat::Gemini
        }
        [(_, _, format)] => *format,
        [(first, _, _), (second, _, _), ..] => {
            return Err(reader.error(
                second.span.start,
                format!(
                    "has both \"{}\" and \"{}\" at the top level: cannot tell the format",
                    first.name, second.name
                ),
            ))
        }
    };
    reader.finish(&root)
}

/// Whether an `mcpServers` file is Gemini CLI's: it is in a `.gemini` folder (`~/.gemini/`, a
/// project's `.gemini/`) or Gemini CLI's system folder (`/etc/gemini-cli/`), or a server in it
/// has `httpUrl`, a key no other host uses.
fn is_gemini(path: &Path, servers: &Node) -> bool {
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str());
    matches!(folder, Some(".gemini" | "gemini-cli"))
        || servers.as_object().is_some_and(|entries| {
            entries.iter().any(|(_, server)| {
                server
                    .as_object()
                    .is_some_and(|e| field(e, "httpUrl").is_some())
            })
        })
}

/// Whether a file whose name does not tell its syntax is YAML: its first line that is not blank,
/// a `#` comment or `---` is `KEY: …` or `- …` (JSON starts with `{`, `[`, `"` or a `//` comment;
/// TOML's `KEY = …` has its `=` before any `:`).
fn looks_like_yaml(text: &str) -> bool {
    let Some(line) = text
        .trim_start_matches('\u{feff}')
        .lines()
        .map(str::trim)
        .find(|l| !(l.is_empty() || l.starts_with('#') || *l == "---"))
    else {
        return false;
    };
    if line == "-" || line.starts_with("- ") {
        return true;
    }
    match line.split_once(':') {
        Some((key, value)) => {
            !key.is_empty()
                && !key.contains(['=', '{', '[', '/'])
                && (value.is_empty() || value.starts_with([' ', '\t']))
        }
        None => false,
    }
}

/// Reads `text` as a config of `format`; `path` is where it came from (for errors, and for
/// `${workspaceFolder}`, relative `cwd` and `envFile`).
pub fn parse(
    text: &str,
    format: ConfigFormat,
    path: impl AsRef<Path>,
    options: &ExpandOptions,
) -> Result<ServersConfig, ConfigError> {
    let reader = Reader::new(text, path.as_ref(), format, options);
    let root = match format {
        ConfigFormat::Codex => reader.toml()?,
        ConfigFormat::Goose => reader.yaml()?,
        ConfigFormat::McpServers
        | ConfigFormat::VsCode
        | ConfigFormat::Gemini
        | ConfigFormat::Zed => reader.json()?,
    };
    reader.finish(&root)
}

/// An object's entries with the key's node.
type Entries = [(Key, Node)];

/// The first entry named `name` (the readers refuse repeated keys before they look).
fn field<'n>(entries: &'n Entries, name: &str) -> Option<(&'n Key, &'n Node)> {
    entries
        .iter()
        .find(|(k, _)| k.name == name)
        .map(|(k, v)| (k, v))
}

/// The two transports a server entry can name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Stdio,
    Http,
}

/// Where a format's reader is: the file (for positions), the current server (for messages), the
/// variables, and the workspace folder.
pub(crate) struct Reader<'a> {
    text: &'a str,
    path: &'a Path,
    format: ConfigFormat,
    options: &'a ExpandOptions,
    workspace: PathBuf,
    /// The server being read, named in errors.
    server: Option<String>,
    /// VS Code's declared inputs: ID → description.
    declared_inputs: HashMap<String, Option<String>>,
    /// The entries left out, with why.
    skipped: Vec<SkippedEntry>,
    /// The entries whose variables could not be expanded.
    failed: Vec<FailedEntry>,
}

impl<'a> Reader<'a> {
    fn new(
        text: &'a str,
        path: &'a Path,
        format: ConfigFormat,
        options: &'a ExpandOptions,
    ) -> Self {
        Reader {
            text,
            path,
            format,
            options,
            workspace: workspace_folder(path),
            server: None,
            declared_inputs: HashMap::new(),
            skipped: Vec::new(),
            failed: Vec::new(),
        }
    }

    fn json(&self) -> Result<Node, ConfigError> {
        match tree::parse_json(self.text) {
            Ok(Some(root)) => Ok(root),
            Ok(None) => Err(self.error(0, "the file holds no JSON value")),
            Err(e) => Err(self.error_kind(
                e.at,
                ConfigErrorKind::Syntax {
                    syntax: "JSON",
                    message: e.message,
                },
            )),
        }
    }

    fn toml(&self) -> Result<Node, ConfigError> {
        tree::parse_toml(self.text).map_err(|e| {
            self.error_kind(
                e.at,
                ConfigErrorKind::Syntax {
                    syntax: "TOML",
                    message: e.message,
                },
            )
        })
    }

    fn yaml(&self) -> Result<Node, ConfigError> {
        match tree::parse_yaml(self.text) {
            Ok(Some(root)) => Ok(root),
            Ok(None) => Err(self.error(0, "the file holds no YAML document")),
            Err(e) => Err(self.error_kind(
                e.at,
                ConfigErrorKind::Syntax {
                    syntax: "YAML",
                    message: e.message,
                },
            )),
        }
    }

    fn top<'n>(&self, root: &'n Node) -> Result<&'n Entries, ConfigError> {
        root.as_object()
            .ok_or_else(|| self.error(root.span.start, "the top level must be an object"))
    }

    fn finish(mut self, root: &Node) -> Result<ServersConfig, ConfigError> {
        let servers = match self.format {
            ConfigFormat::McpServers | ConfigFormat::Gemini => mcp_servers::read(&mut self, root)?,
            ConfigFormat::VsCode => vscode::read(&mut self, root)?,
            ConfigFormat::Codex => codex::read(&mut self, root)?,
            ConfigFormat::Zed => zed::read(&mut self, root)?,
            ConfigFormat::Goose => goose::read(&mut self, root)?,
        };
        Ok(ServersConfig {
            path: self.path.to_owned(),
            format: self.format,
            servers,
            skipped: self.skipped,
            failed: self.failed,
        })
    }

    // Errors.

    fn error(&self, at: usize, message: impl Into<String>) -> ConfigError {
        self.error_kind(at, ConfigErrorKind::Invalid(message.into()))
    }

    fn error_kind(&self, at: usize, kind: ConfigErrorKind) -> ConfigError {
        ConfigError {
            path: self.path.to_owned(),
            position: Some(line_column(self.text, at)),
            server: self.server.clone(),
            kind,
        }
    }

    /// "an object" in JSON, "a table" in TOML, "a mapping" in YAML.
    fn a_map(&self) -> &'static str {
        match self.format {
            ConfigFormat::Codex => "a table",
            ConfigFormat::Goose => "a mapping",
            _ => "an object",
        }
    }

    // The servers.

    /// Reads each entry of the servers' object with `read` (`None`: skipped, see
    /// [`skip`](Self::skip)), refusing empty and repeated names. An entry whose variables are
    /// not set fails alone (in [`failed`](Self::failed)); any other error fails the file.
    fn servers(
        &mut self,
        key: &str,
        node: &Node,
        read: impl Fn(&mut Self, &Key, &Node) -> Result<Option<ServerEntry>, ConfigError>,
    ) -> Result<Vec<ServerEntry>, ConfigError> {
        let entries = node.as_object().ok_or_else(|| {
            self.error(
                node.span.start,
                format!("\"{key}\" must be {}", self.a_map()),
            )
        })?;
        let mut servers: Vec<ServerEntry> = Vec::with_capacity(entries.len());
        for (name, value) in entries {
            if name.name.is_empty() {
                return Err(self.error(name.span.start, "a server's name must not be empty"));
            }
            self.server = Some(name.name.clone());
            if servers.iter().any(|s| s.name == name.name)
                || self.skipped.iter().any(|s| s.name == name.name)
                || self.failed.iter().any(|s| s.name == name.name)
            {
                return Err(self.error(name.span.start, "listed twice"));
            }
            match read(self, name, value) {
                Ok(Some(server)) => servers.push(server),
                Ok(None) => {}
                Err(error) if error.kind.is_unset_variable() => {
                    let enabled = self.enabled_as_written(value);
                    self.failed.push(FailedEntry {
                        name: name.name.clone(),
                        enabled,
                        error,
                    });
                }
                Err(error) => return Err(error),
            }
            self.server = None;
        }
        Ok(servers)
    }

    /// Whether an entry that failed is enabled, from the key this format disables it with
    /// (read as its reader reads it; anything but a boolean counts as enabled).
    fn enabled_as_written(&self, node: &Node) -> bool {
        let flag = |key: &str| match node.as_object().and_then(|e| field(e, key)) {
            Some((
                _,
                Node {
                    value: Value::Bool(b),
                    ..
                },
            )) => Some(*b),
            _ => None,
        };
        match self.format {
            ConfigFormat::McpServers | ConfigFormat::Gemini => flag("disabled") != Some(true),
            ConfigFormat::Codex | ConfigFormat::Zed | ConfigFormat::Goose => {
                flag("enabled") != Some(false)
            }
            ConfigFormat::VsCode => true,
        }
    }

    /// Leaves the entry `name` out of the servers, noting why.
    fn skip(&mut self, name: &Key, reason: impl Into<String>) -> Option<ServerEntry> {
        self.skipped.push(SkippedEntry {
            name: name.name.clone(),
            position: line_column(self.text, name.span.start),
            reason: reason.into(),
        });
        None
    }

    /// A server's entry: a map without repeated keys.
    fn entry<'n>(&self, node: &'n Node) -> Result<&'n Entries, ConfigError> {
        let entries = node
            .as_object()
            .ok_or_else(|| self.error(node.span.start, format!("must be {}", self.a_map())))?;
        self.unique(entries, None)?;
        Ok(entries)
    }

    /// Refuses a key given twice (JSON allows it; the last would silently win elsewhere).
    fn unique(&self, entries: &Entries, within: Option<&str>) -> Result<(), ConfigError> {
        for (i, (key, _)) in entries.iter().enumerate() {
            if entries[..i].iter().any(|(k, _)| k.name == key.name) {
                let within = within.map(|w| format!(" in \"{w}\"")).unwrap_or_default();
                return Err(self.error(
                    key.span.start,
                    format!("\"{}\" is given twice{within}", key.name),
                ));
            }
        }
        Ok(())
    }

    /// Reads `type`: one of `known` (the format's names and what each means), `sse` refused.
    fn transport_type(
        &self,
        entries: &Entries,
        known: &[(&str, Kind)],
    ) -> Result<Option<(Kind, String, usize)>, ConfigError> {
        let Some((_, node)) = field(entries, "type") else {
            return Ok(None);
        };
        let name = self.string(node, "type")?;
        if name == "sse" {
            return Err(self.error(
                node.span.start,
                "\"type\" \"sse\" is the HTTP+SSE transport of MCP 2024-11-05, deprecated since \
                 2025-03-26 and not supported: use \"http\" (Streamable HTTP) if the server offers it",
            ));
        }
        match known.iter().find(|(n, _)| *n == name) {
            Some((_, kind)) => Ok(Some((*kind, name, node.span.start))),
            None => {
                let names: Vec<String> = known.iter().map(|(n, _)| format!("\"{n}\"")).collect();
                let (last, rest) = names.split_last().expect("every format knows a type");
                Err(self.error(
                    node.span.start,
                    format!(
                        "unknown \"type\" {name:?}: expected {} or {last}",
                        rest.join(", ")
                    ),
                ))
            }
        }
    }

    /// Whether the entry is a stdio or an HTTP server, from its `type` (if any) and which of
    /// `command` and `url` it has.
    fn kind(
        &self,
        name_at: usize,
        entries: &Entries,
        declared: Option<(Kind, String, usize)>,
    ) -> Result<Kind, ConfigError> {
        self.kind_of(
            name_at,
            ("command", field(entries, "command")),
            ("url", field(entries, "url")),
            declared,
        )
    }

    /// [`kind`](Self::kind) from the entry's command and URL as this format names them (the
    /// names are for messages; a present key's own name is used).
    fn kind_of(
        &self,
        name_at: usize,
        (command_name, command): (&str, Option<(&Key, &Node)>),
        (url_name, url): (&str, Option<(&Key, &Node)>),
        declared: Option<(Kind, String, usize)>,
    ) -> Result<Kind, ConfigError> {
        match (command, url, declared) {
            (Some((command, _)), Some((key, _)), _) => Err(self.error(
                key.span.start,
                format!(
                    "has both \"{}\" and \"{}\": a server is either a command to start (stdio) \
                     or a URL (Streamable HTTP)",
                    command.name, key.name
                ),
            )),
            (None, None, None) => Err(self.error(
                name_at,
                format!(
                    "has neither \"{command_name}\" (a stdio server) nor \"{url_name}\" (a \
                     Streamable HTTP server)"
                ),
            )),
            (None, _, Some((Kind::Stdio, name, at))) => Err(self.error(
                at,
                format!("\"type\" is {name:?} but \"{command_name}\" is missing"),
            )),
            (_, None, Some((Kind::Http, name, at))) => Err(self.error(
                at,
                format!("\"type\" is {name:?} but \"{url_name}\" is missing"),
            )),
            (Some(_), None, _) => Ok(Kind::Stdio),
            (None, Some(_), _) => Ok(Kind::Http),
        }
    }

    /// A stdio transport from the entry's `command`, `args` and `cwd`, and `env` as read.
    fn stdio(
        &self,
        entries: &Entries,
        env: BTreeMap<String, String>,
    ) -> Result<ServerTransport, ConfigError> {
        let (_, node) = field(entries, "command").expect("kind() saw a command");
        self.stdio_from(node, "command", entries, env)
    }

    /// A stdio transport from `command` (the value of the key `key`), and the entry's `args` and
    /// `cwd`, and `env` as read.
    fn stdio_from(
        &self,
        node: &Node,
        key: &str,
        entries: &Entries,
        env: BTreeMap<String, String>,
    ) -> Result<ServerTransport, ConfigError> {
        let command = self.expanded(node, key)?;
        if command.is_empty() {
            return Err(self.error(node.span.start, format!("\"{key}\" must not be empty")));
        }
        let args = match field(entries, "args") {
            Some((_, node)) => self.strings(node, "args", true)?,
            None => Vec::new(),
        };
        let cwd = match field(entries, "cwd") {
            Some((_, node)) => Some(self.path_value(node, "cwd")?),
            None => None,
        };
        Ok(ServerTransport::Stdio {
            command,
            args,
            env,
            cwd,
        })
    }

    /// An HTTP transport from the entry's `url` and these headers.
    fn http(
        &self,
        entries: &Entries,
        headers: Vec<(String, String, usize)>,
    ) -> Result<ServerTransport, ConfigError> {
        let (_, node) = field(entries, "url").expect("kind() saw a url");
        self.http_from(node, "url", headers)
    }

    /// An HTTP transport from `url` (the value of the key `key`) and these headers.
    fn http_from(
        &self,
        node: &Node,
        key: &str,
        headers: Vec<(String, String, usize)>,
    ) -> Result<ServerTransport, ConfigError> {
        let url = self.expanded(node, key)?;
        match url::Url::parse(&url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => {}
            Ok(u) => {
                return Err(self.error(
                    node.span.start,
                    format!(
                        "\"{key}\" must be an http or https URL, not {}:",
                        u.scheme()
                    ),
                ))
            }
            Err(e) => {
                return Err(self.error(node.span.start, format!("\"{key}\" is not a URL: {e}")))
            }
        }
        for (i, (name, _, at)) in headers.iter().enumerate() {
            if headers[..i]
                .iter()
                .any(|(n, _, _)| n.eq_ignore_ascii_case(name))
            {
                return Err(self.error(*at, format!("header {name:?} is given twice")));
            }
        }
        Ok(ServerTransport::Http {
            url,
            headers: headers.into_iter().map(|(k, v, _)| (k, v)).collect(),
        })
    }

    // Values.

    fn string(&self, node: &Node, key: &str) -> Result<String, ConfigError> {
        node.as_str()
            .map(str::to_owned)
            .ok_or_else(|| self.error(node.span.start, format!("\"{key}\" must be a string")))
    }

    fn expanded(&self, node: &Node, key: &str) -> Result<String, ConfigError> {
        let raw = self.string(node, key)?;
        self.expand(&raw, node)
    }

    /// A path, expanded, relative to the workspace folder.
    fn path_value(&self, node: &Node, key: &str) -> Result<PathBuf, ConfigError> {
        let value = self.expanded(node, key)?;
        if value.is_empty() {
            return Err(self.error(node.span.start, format!("\"{key}\" must not be empty")));
        }
        Ok(self.workspace.join(value))
    }

    fn strings(&self, node: &Node, key: &str, expand: bool) -> Result<Vec<String>, ConfigError> {
        let message = || format!("\"{key}\" must be an array of strings");
        let Value::Array(items) = &node.value else {
            return Err(self.error(node.span.start, message()));
        };
        items
            .iter()
            .map(|item| match item.as_str() {
                Some(s) if expand => self.expand(s, item),
                Some(s) => Ok(s.to_owned()),
                None => Err(self.error(item.span.start, message())),
            })
            .collect()
    }

    /// A map of strings (`env`, `headers`), each value expanded when `expand`: (key, value, where).
    fn string_map(
        &self,
        node: &Node,
        key: &str,
        expand: bool,
    ) -> Result<Vec<(String, String, usize)>, ConfigError> {
        let message = || format!("\"{key}\" must be {} of strings", self.a_map());
        let entries = node
            .as_object()
            .ok_or_else(|| self.error(node.span.start, message()))?;
        self.unique(entries, Some(key))?;
        entries
            .iter()
            .map(|(k, v)| {
                let value = match v.as_str() {
                    Some(s) if expand => self.expand(s, v)?,
                    Some(s) => s.to_owned(),
                    None => return Err(self.error(v.span.start, message())),
                };
                Ok((k.name.clone(), value, k.span.start))
            })
            .collect()
    }

    /// The map of strings under `key` in a server's `entries`, each value expanded (none when
    /// absent).
    fn string_map_field(
        &self,
        entries: &Entries,
        key: &str,
    ) -> Result<Vec<(String, String, usize)>, ConfigError> {
        match field(entries, key) {
            Some((_, node)) => self.string_map(node, key, true),
            None => Ok(Vec::new()),
        }
    }

    /// A server's `env`, each value expanded (empty when absent).
    fn env(&self, entries: &Entries) -> Result<BTreeMap<String, String>, ConfigError> {
        Ok(self
            .string_map_field(entries, "env")?
            .into_iter()
            .map(|(k, v, _)| (k, v))
            .collect())
    }

    fn bool(&self, node: &Node, key: &str) -> Result<bool, ConfigError> {
        match node.value {
            Value::Bool(b) => Ok(b),
            _ => Err(self.error(node.span.start, format!("\"{key}\" must be true or false"))),
        }
    }

    /// A timeout: a positive number of `unit`s (`1` for seconds, `1000` for milliseconds).
    fn duration(&self, node: &Node, key: &str, per_second: f64) -> Result<Duration, ConfigError> {
        let (what, whole) = if per_second == 1.0 {
            ("number of seconds", false)
        } else {
            ("whole number of milliseconds", true)
        };
        match node.value {
            Value::Num(n) if n > 0.0 && (!whole || n.fract() == 0.0) => {
                Duration::try_from_secs_f64(n / per_second)
                    .ok()
                    .filter(|d| *d <= MAX_TIMEOUT)
                    .ok_or_else(|| {
                        self.error(node.span.start, format!("\"{key}\" is more than a year"))
                    })
            }
            _ => Err(self.error(
                node.span.start,
                format!("\"{key}\" must be a positive {what}"),
            )),
        }
    }

    /// An environment variable's value, for Codex's `*_env_var` keys: unset and empty are errors.
    fn env_var(&self, name: &str, node: &Node, key: &str) -> Result<String, ConfigError> {
        match self.options.env.get(name) {
            None => Err(self.error_kind(
                node.span.start,
                ConfigErrorKind::MissingVariable(name.to_owned()),
            )),
            Some(v) if v.is_empty() => Err(self.error(
                node.span.start,
                format!("environment variable {name:?} (from \"{key}\") is empty"),
            )),
            Some(v) => Ok(v.clone()),
        }
    }

    // Expansion.

    /// Expands `${…}` in `raw`, the value of `node` (see the [module docs](self)).
    fn expand(&self, raw: &str, node: &Node) -> Result<String, ConfigError> {
        let mut out = String::with_capacity(raw.len());
        let mut rest = raw;
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            if let Some(escaped) = after.strip_prefix("${") {
                out.push_str("${");
                rest = escaped;
                continue;
            }
            let Some(body) = after.strip_prefix('{') else {
                // Gemini CLI's `$VAR`: a name of letters, digits and `_`, not starting with a digit.
                let name_len = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                if self.format == ConfigFormat::Gemini
                    && name_len > 0
                    && !after.starts_with(|c: char| c.is_ascii_digit())
                {
                    let at = self.offset_in(node, raw.len() - rest.len() + i);
                    let name = &after[..name_len];
                    out.push_str(&self.options.env.get(name).cloned().ok_or_else(|| {
                        self.error_kind(at, ConfigErrorKind::MissingVariable(name.to_owned()))
                    })?);
                    rest = &after[name_len..];
                    continue;
                }
                out.push('$');
                rest = after;
                continue;
            };
            let at = self.offset_in(node, raw.len() - rest.len() + i);
            let Some(end) = body.find('}') else {
                return Err(self.error(at, "\"${\" without its closing \"}\""));
            };
            out.push_str(&self.variable(&body[..end], at)?);
            rest = &body[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn variable(&self, name: &str, at: usize) -> Result<String, ConfigError> {
        let env = |var: &str| {
            if var.is_empty() {
                return Err(self.error(at, "\"${}\" names no variable"));
            }
            self.options.env.get(var).cloned().ok_or_else(|| {
                self.error_kind(at, ConfigErrorKind::MissingVariable(var.to_owned()))
            })
        };
        match name.split_once(':') {
            Some(("env", var)) => env(var),
            Some(("input", id)) => self.options.inputs.get(id).cloned().ok_or_else(|| {
                self.error_kind(
                    at,
                    ConfigErrorKind::MissingInput {
                        id: id.to_owned(),
                        description: self.declared_inputs.get(id).cloned().flatten(),
                    },
                )
            }),
            Some(_) => Err(self.error(
                at,
                format!(
                    "unknown variable \"${{{name}}}\": expected ${{VAR}}, ${{env:VAR}}, \
                     ${{input:ID}}, ${{workspaceFolder}} or ${{userHome}}"
                ),
            )),
            None => match name {
                "workspaceFolder" => Ok(self.workspace.to_string_lossy().into_owned()),
                "workspaceFolderBasename" => Ok(self
                    .workspace
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()),
                "userHome" => self
                    .options
                    .env
                    .get("HOME")
                    .or_else(|| self.options.env.get("USERPROFILE"))
                    .cloned()
                    .ok_or_else(|| self.error(at, "\"${userHome}\" is used but HOME is not set")),
                "pathSeparator" | "/" => Ok(std::path::MAIN_SEPARATOR_STR.to_owned()),
                var => env(var),
            },
        }
    }

    /// The file offset of byte `i` of a string value: exact when the value is written without
    /// escapes, the value's start otherwise.
    fn offset_in(&self, node: &Node, i: usize) -> usize {
        let value = node.as_str().unwrap_or_default();
        let source = self.text.get(node.span.clone()).unwrap_or_default();
        match source.find(value) {
            Some(start) if !value.is_empty() => node.span.start + start + i,
            _ => node.span.start,
        }
    }
}

/// The longest timeout accepted.
const MAX_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// The directory holding the `.vscode`, `.cursor`, `.zed` or `.gemini` folder `path` is in, else
/// `path`'s directory; absolute.
fn workspace_folder(path: &Path) -> PathBuf {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    match (dir.file_name(), dir.parent()) {
        (Some(name), Some(parent))
            if [".vscode", ".cursor", ".zed", ".gemini"]
                .iter()
                .any(|n| name == *n) =>
        {
            parent.to_owned()
        }
        _ => dir,
    }
}

/// The 1-based line and column (in characters) of byte `at`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let before = text.get(..at).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}
