//! OAuth for the HTTP transport: the MCP authorization flow (OAuth 2.1), run when the server
//! asks or up front, with the credentials kept in a [`TokenStore`] and a person authorizing the
//! way the application chose ([`Authorize`]).
//!
//! With [`HttpTransportConfig::oauth`](crate::HttpTransportConfig::oauth), a `401` runs the flow
//! and the request is sent again with the token: the challenge's `resource_metadata` (else the
//! well-known URLs) gives the protected resource metadata, that names the authorization server,
//! whose metadata is read (RFC 8414, then OpenID discovery; the 2025-03-26 fallbacks for servers
//! without resource metadata); the client identifies itself — pre-registered credentials, else a
//! client ID metadata document where the server supports it
//! ([`AuthOptions::client_metadata_url`]), else dynamic registration — a person authorizes, and
//! the code becomes tokens. The token's expiry is tracked, a refresh token is used before
//! authorizing again, a `401` with a token leads to one refresh or re-authorization and one retry,
//! and a `403 insufficient_scope` to a step-up with the union of the scopes (at most
//! [`MAX_STEP_UPS`](mcp_proto::oauth::MAX_STEP_UPS) authorizations a request). Single-flight:
//! concurrent requests that meet a `401` wait for one flow. The decisions are the core's
//! ([`Flow`], [`Authorizer`], sans-IO); this module only carries them over isahc.
//!
//! ```no_run
//! use mcp_connect::proto::oauth::{PreRegistered, Secret};
//! use mcp_connect::{connect_http, Authorize, ClientConfig, FileStore, HttpTransportConfig, OAuthConfig};
//! use std::sync::Arc;
//!
//! smol::block_on(async {
//!     // A person, in the system browser: a listener on 127.0.0.1 is the redirect URI (RFC 8252;
//!     // it takes only this flow's `state`), the URL is printed on stderr too, and they have 5
//!     // minutes.
//!     let mut oauth = OAuthConfig::new(Authorize::browser());
//!     // Kept between runs (in memory by default), in a file only its owner can read.
//!     if let Some(path) = FileStore::default_path() {
//!         oauth.store = Arc::new(FileStore::new(path));
//!     }
//!     let http = HttpTransportConfig::new("https://mcp.example.com/mcp").oauth(oauth);
//!     let client = connect_http(http, ClientConfig::default()).await?;
//!     println!("{} tools", client.list_tools().await?.len());
//!     client.close().await?;
//!
//!     // Headless: the application gets the authorization URL and returns the URL the person
//!     // was sent back to (the redirect URI is `config.options.redirect_uri`).
//!     let _headless = OAuthConfig::new(Authorize::callback(|request| async move {
//!         Err(format!("nobody here to open {}", request.url))
//!     }));
//!     // Machine to machine: the client credentials grant with a pre-registered client, bound
//!     // to its authorization server (required with a secret or key: a resource guarded by
//!     // another one is refused, and nothing is sent without it).
//!     let _service = OAuthConfig::client_credentials(PreRegistered {
//!         client_id: "my-service".into(),
//!         client_secret: Some(Secret::new(std::env::var("MCP_CLIENT_SECRET").unwrap_or_default())),
//!         private_key: None, // or a P-256 PEM key: private_key_jwt instead of the secret
//!         auth_method: None, // client_secret_basic (or _post when that is all the server takes)
//!         issuer: Some("https://auth.example.com".into()),
//!     });
//!     Ok::<(), mcp_connect::Error>(())
//! })?;
//! # Ok::<(), mcp_connect::Error>(())
//! ```
//!
//! # Choices
//!
//! [`Authorize::Callback`] (headless; what the tests use), [`Authorize::Browser`] (`open`, `show`,
//! `timeout`; [`Authorize::browser`] for the defaults), or [`Authorize::Refuse`] (a server that
//! needs a person fails with [`AuthError::NotAuthorized`], naming its authorization server).
//! [`OAuthConfig::options`] ([`AuthOptions`]) holds the pre-registered client, the metadata
//! document URL, `offline_access` and the fallbacks; [`OAuthConfig::upfront`] authorizes before
//! the first request; [`OAuthConfig::request_timeout`] bounds each of the flow's requests (30 s).
//! A configured `Authorization` header turns the flow off. Failures are
//! [`Error::Auth`](crate::Error::Auth).
//!
//! A pre-registered client may authenticate with a private key instead of a secret
//! ([`PreRegistered::private_key`], a P-256 key in PEM): the token endpoint gets an ES256-signed
//! `client_assertion` (`private_key_jwt`, RFC 7523) for the client credentials grant, the code
//! exchange and refreshes.
//!
//! # Stores
//!
//! Stores implement [`TokenStore`] (`load`/`save`/`remove`, keyed by the authorization server's
//! issuer and the resource): [`MemoryStore`] (the default) or [`FileStore`] (JSON, mode 0600, its
//! directory created 0700; [`FileStore::default_path`] is
//! `$XDG_CONFIG_HOME/mcp-client/credentials.json`, else `~/.config/…`). Several stores on one file,
//! in one process or several, lose nothing of each other's: each change is made under a per-file
//! lock in the process and an advisory `flock` on `FILE.lock`, through a temporary file of a
//! random name created with `O_EXCL` and `O_NOFOLLOW`. A store keeps tokens and dynamic
//! registrations, never a pre-registered secret or key: those stay with the application and are
//! added to each token request.
//!
//! # Safe by construction
//!
//! - The access token goes only to the MCP endpoint, in the `Authorization` header, and the client
//!   secret, codes and refresh token only to the token endpoint — never in a URL;
//!   [`Secret`](mcp_proto::oauth::Secret) values show as `<redacted>` in `Debug`, and no token or
//!   secret is in an error message or a log line (the tests check all of these).
//! - The flow's requests follow no redirect (a `3xx` is an answer), and MCP requests follow only
//!   same-origin `307`/`308`: no redirect takes a token or a secret to another origin.
//! - A pre-registered secret or private key goes only to the authorization server it is bound to
//!   ([`PreRegistered::issuer`], required with either: a flow without it fails before any request);
//!   a public client id alone may be used with the authorization server the MCP server names.
//! - Server-side request forgery (MCP Security Best Practices): every URL a server names — the
//!   challenge's `resource_metadata`, the issuer, its endpoints — is fetched only when
//!   [`allowed_fetch`](mcp_proto::oauth::allowed_fetch) allows it: HTTPS to a host that is not a
//!   private, link-local, cloud metadata or reserved address (IPv4-mapped IPv6 judged as IPv4), or
//!   this machine when the MCP server is on it too, or the MCP server's own origin. A refused
//!   `resource_metadata` falls back to the well-known URIs at the server's origin. Host *names*
//!   are judged by name: one that resolves to a private address (DNS rebinding) is not caught; use
//!   an egress proxy where that matters.
//! - The loopback redirect listener serves connections concurrently (10 s each to send a request,
//!   16 at once) and takes only the redirect with this flow's `state`: another process's request
//!   gets an error page and the wait goes on.
//! - PKCE with S256 always (a server that does not advertise it is refused); `state` checked; RFC
//!   9207 `iss` compared as a plain string when present, and required when advertised; the
//!   metadata's `issuer` must equal the authorization server's URL exactly; a protected resource
//!   metadata document for another `resource` is refused before anything is authorized, and the
//!   same `resource` (RFC 8707) goes into the authorization and token requests; credentials are
//!   keyed by issuer, so a server that moves to another authorization server registers there
//!   afresh.
//!
//! The official conformance suite (tests/conformance.rs): with 0.1.16, 21 of its 22 auth scenarios
//! — all but the `cross-app-access-complete-flow` extension; with 0.2.0-alpha.12 at 2026-07-28,
//! all 25 of its requirement list, plus the `client-credentials-basic` and
//! `client-credentials-jwt` extensions and both 2025-03-26 ones — each with no failed check and no
//! warning.
//!
//! [`PreRegistered::private_key`]: mcp_proto::oauth::PreRegistered::private_key
//! [`PreRegistered::issuer`]: mcp_proto::oauth::PreRegistered::issuer

use crate::sync::lock;
use crate::transport::BoxFuture;
use isahc::{AsyncReadResponseExt, HttpClient};
use mcp_proto::http::{redact_url, HttpRequest, HttpRules};
use mcp_proto::oauth::{
    Attempt, AuthError, AuthOptions, AuthorizationRequest, Authorizer, Credentials, Flow,
    FlowStart, Randomness, Step, Verdict,
};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Where credentials are kept between flows (and, for a persistent store, between runs),
/// keyed by the authorization server's issuer and the resource.
///
/// > "Clients that use pre-registered credentials, or persist client credentials obtained via
/// > Dynamic Client Registration, **MUST** associate those credentials with the specific
/// > authorization server that issued them, keyed by the authorization server's `issuer`
/// > identifier." — MCP 2026-07-28, Authorization Server Binding
pub trait TokenStore: Send + Sync {
    /// The credentials for this issuer and resource, if any.
    fn load(&self, issuer: &str, resource: &str) -> Option<Credentials>;
    /// Keeps credentials (replacing those of the same issuer and resource).
    fn save(&self, credentials: &Credentials);
    /// Forgets the credentials of this issuer and resource.
    fn remove(&self, issuer: &str, resource: &str);
}

/// Credentials in memory, for the life of the process (the default store).
#[derive(Default)]
pub struct MemoryStore {
    entries: Mutex<HashMap<(String, String), Credentials>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }
}

impl TokenStore for MemoryStore {
    fn load(&self, issuer: &str, resource: &str) -> Option<Credentials> {
        lock(&self.entries)
            .get(&(issuer.to_owned(), resource.to_owned()))
            .cloned()
    }

    fn save(&self, credentials: &Credentials) {
        lock(&self.entries).insert(
            (credentials.issuer.clone(), credentials.resource.clone()),
            credentials.clone(),
        );
    }

    fn remove(&self, issuer: &str, resource: &str) {
        lock(&self.entries).remove(&(issuer.to_owned(), resource.to_owned()));
    }
}

/// Credentials in a JSON file that only its owner can read (mode 0600 on Unix, in a directory
/// created with mode 0700 when it does not exist), rewritten whole on every change.
///
/// Several stores on one path, in one process or in several, lose nothing of each other's:
/// every change is a read-modify-write under a lock held by one of them at a time — a
/// process-wide lock per canonical path, and an advisory lock (`flock`) on `PATH.lock` beside
/// the file for the other processes. The new contents go to a temporary file of a random name
/// (`PATH.<random>.tmp`), created afresh (`O_EXCL`) and never through a symbolic link
/// (`O_NOFOLLOW`), then renamed over the file, so a reader sees the old contents or the new,
/// never a part. The file itself is read without following a link either: a link planted in a
/// directory others can write to is neither followed, truncated nor `chmod`-ed.
///
/// A file that cannot be read (or is over [`MAX_STORE_FILE`] bytes) counts as empty; a change
/// that cannot be made (no lock within [`STORE_LOCK_WAIT`], a directory that cannot be
/// written) is lost: the flow still works, the next run authorizes again. The calls block the
/// calling thread for the file's I/O and the lock, as a [`TokenStore`] does. On Windows only
/// the process-wide lock applies.
///
/// It keeps what a flow ends with: tokens, and a dynamic registration (with the secret the
/// authorization server issued, if any). A pre-registered client's secret or key, given by the
/// application, is never among them ([`mcp_proto::oauth::PreRegistered`]).
pub struct FileStore {
    path: PathBuf,
}

/// The largest credentials file a [`FileStore`] reads; a larger one counts as empty.
pub const MAX_STORE_FILE: u64 = 16 * 1024 * 1024;

/// How long a [`FileStore`] change waits for another process's lock on the file before it is
/// given up.
pub const STORE_LOCK_WAIT: Duration = Duration::from_secs(10);

/// The process-wide locks of the files being changed, by canonical path: an entry lives while a
/// change of its file holds it (the map holds them weakly and forgets the dead ones).
fn path_lock(path: &std::path::Path) -> Arc<Mutex<()>> {
    use std::sync::{OnceLock, Weak};
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Weak<Mutex<()>>>>> = OnceLock::new();
    let mut locks = lock(LOCKS.get_or_init(Mutex::default));
    if let Some(live) = locks.get(path).and_then(Weak::upgrade) {
        return live;
    }
    locks.retain(|_, w| w.strong_count() > 0);
    let fresh = Arc::new(Mutex::new(()));
    locks.insert(path.to_owned(), Arc::downgrade(&fresh));
    fresh
}

/// `path` with `suffix` appended to its file name.
fn with_suffix(path: &std::path::Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// Options that create or open a file for its owner alone and never through a symbolic link.
fn private_options() -> std::fs::OpenOptions {
    #[allow(unused_mut)]
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    options
}

/// The advisory lock on `PATH.lock` (released when the file is closed), waiting at most
/// [`STORE_LOCK_WAIT`] for another process to release it.
#[cfg(unix)]
fn file_lock(path: &std::path::Path) -> Option<std::fs::File> {
    use rustix::fs::{flock, FlockOperation};
    let file = private_options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(with_suffix(path, ".lock"))
        .ok()?;
    let give_up = std::time::Instant::now() + STORE_LOCK_WAIT;
    loop {
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Some(file),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK || e == rustix::io::Errno::INTR => {
                if std::time::Instant::now() >= give_up {
                    return None;
                }
                // Another process is changing the file: its change takes milliseconds.
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => return None,
        }
    }
}

#[cfg(not(unix))]
fn file_lock(_path: &std::path::Path) -> Option<()> {
    Some(())
}

/// A random suffix for a temporary file (the process id and a count where the system gives no
/// randomness: `O_EXCL` keeps a clash harmless).
fn temp_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut random = [0u8; 12];
    if getrandom::fill(&mut random).is_err() {
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        random[..4].copy_from_slice(&std::process::id().to_be_bytes());
        random[4..].copy_from_slice(&n.to_be_bytes());
    }
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    format!(".{hex}.tmp")
}

impl FileStore {
    /// A store in this file (its directory is created when needed, readable by its owner alone).
    pub fn new(path: impl Into<PathBuf>) -> FileStore {
        FileStore { path: path.into() }
    }

    /// The default place: `$XDG_CONFIG_HOME/mcp-client/credentials.json`, else
    /// `~/.config/mcp-client/credentials.json` (`%APPDATA%\mcp-client\…` on Windows).
    pub fn default_path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| {
                if cfg!(windows) {
                    std::env::var_os("APPDATA").map(PathBuf::from)
                } else {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config"))
                }
            })?;
        Some(base.join("mcp-client").join("credentials.json"))
    }

    fn read(path: &std::path::Path) -> Vec<Credentials> {
        use std::io::Read;
        let mut bytes = Vec::new();
        let read = private_options().read(true).open(path).and_then(|f| {
            f.take(MAX_STORE_FILE + 1).read_to_end(&mut bytes)?;
            Ok(())
        });
        if read.is_err() || bytes.len() as u64 > MAX_STORE_FILE {
            return Vec::new();
        }
        serde_json::from_slice(&bytes).unwrap_or_default()
    }

    /// Runs a read-modify-write of the file under both locks (`f` says whether it changed
    /// anything); when the locks cannot be had, the change is lost.
    fn change(&self, f: impl FnOnce(&mut Vec<Credentials>) -> bool) {
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            // Only the directories created here; an existing one keeps its mode.
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        let _ = builder.create(dir);
        // One lock per file, however it is named: `a/../creds.json` and `creds.json` are one.
        let path = match (std::fs::canonicalize(dir), self.path.file_name()) {
            (Ok(dir), Some(name)) => dir.join(name),
            _ => self.path.clone(),
        };
        let in_process = path_lock(&path);
        let _process = lock(&in_process);
        let Some(_file) = file_lock(&path) else {
            return;
        };
        let mut entries = FileStore::read(&path);
        if f(&mut entries) {
            FileStore::write(&path, &entries);
        }
    }

    fn write(path: &std::path::Path, entries: &[Credentials]) {
        let Ok(json) = serde_json::to_vec_pretty(entries) else {
            return;
        };
        let tmp = with_suffix(path, &temp_suffix());
        let written = private_options()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut f| {
                use std::io::Write;
                f.write_all(&json)?;
                f.sync_all()
            });
        // The rename replaces a link at `path` itself, never what it points to.
        if written.is_err() || std::fs::rename(&tmp, path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

impl TokenStore for FileStore {
    fn load(&self, issuer: &str, resource: &str) -> Option<Credentials> {
        // Changes are renames: a read sees a whole file without taking the lock.
        FileStore::read(&self.path)
            .into_iter()
            .find(|c| c.issuer == issuer && c.resource == resource)
    }

    fn save(&self, credentials: &Credentials) {
        self.change(|entries| {
            entries.retain(|c| {
                !(c.issuer == credentials.issuer && c.resource == credentials.resource)
            });
            entries.push(credentials.clone());
            true
        });
    }

    fn remove(&self, issuer: &str, resource: &str) {
        self.change(|entries| {
            let before = entries.len();
            entries.retain(|c| !(c.issuer == issuer && c.resource == resource));
            entries.len() != before
        });
    }
}

/// The application's answer to an authorization URL: the URL the person was sent back to.
pub type AuthorizeCallback =
    Arc<dyn Fn(AuthorizationRequest) -> BoxFuture<'static, Result<String, String>> + Send + Sync>;

/// What the built-in browser flow shows the person (default: the URL on stderr).
pub type ShowUrl = Arc<dyn Fn(&AuthorizationRequest, bool) + Send + Sync>;

/// How a person authorizes.
#[derive(Clone)]
pub enum Authorize {
    /// The application's callback gets the authorization request and returns the redirect URL
    /// (headless programs and tests; the redirect URI is [`AuthOptions::redirect_uri`]). The
    /// requests waiting for it do not time out meanwhile (their timeouts start again when the
    /// flow ends): the callback bounds its own time.
    Callback(AuthorizeCallback),
    /// The native-app flow (RFC 8252): a listener on `127.0.0.1` and an ephemeral port is the
    /// redirect URI (it takes only this flow's redirect, by its `state`, and serves other
    /// connections meanwhile with an error page); the system browser is opened on the authorization URL (`open`:
    /// whether to try), `show` is told the URL (and whether a browser was started), and the
    /// person has `timeout` to finish (the requests waiting for the flow do not time out
    /// meanwhile; past it the flow fails with [`AuthError::NotAuthorized`]).
    Browser {
        /// Try to open the system browser.
        open: bool,
        /// Shows the URL.
        show: ShowUrl,
        /// How long the listener waits.
        timeout: Duration,
    },
    /// Nobody can authorize: a flow that needs a person fails with
    /// [`AuthError::NotAuthorized`] naming the authorization server (stored and refreshed
    /// tokens are not used either).
    Refuse,
}

impl Authorize {
    /// The browser flow with its defaults: open the browser, print the URL on stderr, wait 5
    /// minutes.
    pub fn browser() -> Authorize {
        Authorize::Browser {
            open: true,
            show: Arc::new(|request, opened| {
                let how = if opened {
                    "A browser was opened to authorize"
                } else {
                    "Open this URL to authorize"
                };
                // The issuer and the URL come from the server's documents: no control character
                // of theirs reaches the terminal.
                let line = mcp_proto::terminal::line;
                eprintln!(
                    "{how} with {}:\n  {}",
                    line(&request.issuer),
                    line(&request.url)
                );
            }),
            timeout: Duration::from_secs(300),
        }
    }

    /// A callback from an async closure.
    pub fn callback<F, Fut>(f: F) -> Authorize
    where
        F: Fn(AuthorizationRequest) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<String, String>> + Send + 'static,
    {
        Authorize::Callback(Arc::new(move |r| Box::pin(f(r))))
    }
}

impl std::fmt::Debug for Authorize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Authorize::Callback(_) => f.write_str("Callback"),
            Authorize::Browser { open, timeout, .. } => f
                .debug_struct("Browser")
                .field("open", open)
                .field("timeout", timeout)
                .finish(),
            Authorize::Refuse => f.write_str("Refuse"),
        }
    }
}

/// OAuth settings of an HTTP transport.
#[derive(Clone)]
pub struct OAuthConfig {
    /// What every flow is told (grant, client identity, redirect URI for a callback).
    pub options: AuthOptions,
    /// How a person authorizes.
    pub authorize: Authorize,
    /// Where credentials are kept (default: in memory).
    pub store: Arc<dyn TokenStore>,
    /// Authorize before the first request instead of waiting for a `401`.
    pub upfront: bool,
    /// The time limit of each of the flow's requests (default 30 s).
    pub request_timeout: Duration,
}

impl OAuthConfig {
    /// Settings for the authorization code grant with this way to authorize. With a callback,
    /// the redirect URI is `http://127.0.0.1/callback` unless set in
    /// [`options`](Self::options); the browser flow sets its own.
    pub fn new(authorize: Authorize) -> OAuthConfig {
        OAuthConfig {
            options: AuthOptions::new("http://127.0.0.1/callback"),
            authorize,
            store: Arc::new(MemoryStore::new()),
            upfront: false,
            request_timeout: Duration::from_secs(30),
        }
    }

    /// Settings for the client credentials grant with a pre-registered client.
    pub fn client_credentials(pre: mcp_proto::oauth::PreRegistered) -> OAuthConfig {
        let mut config = OAuthConfig::new(Authorize::Refuse);
        config.options.grant = mcp_proto::oauth::Grant::ClientCredentials;
        config.options.pre_registered = Some(pre);
        config
    }
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("options", &self.options)
            .field("authorize", &self.authorize)
            .field("upfront", &self.upfront)
            .field("request_timeout", &self.request_timeout)
            .finish()
    }
}

/// One transport's OAuth state: the authorizer (behind a lock held only briefly), and a lock
/// that lets one flow run at a time (requests that meet a `401` meanwhile wait for it and are
/// sent again with its token, or fail with its error).
pub(crate) struct OAuth {
    config: OAuthConfig,
    authorizer: Mutex<Authorizer>,
    single: smol::lock::Mutex<Single>,
    /// Flows run to their end after a `401` or `403`, for the requests waiting on `single`.
    flows: std::sync::atomic::AtomicU64,
    client: HttpClient,
}

/// What the flow lock guards.
#[derive(Default)]
struct Single {
    /// The up-front flow was run (or found needless).
    upfront_done: bool,
    /// How the last flow after a `401` or `403` failed, if it did.
    failed: Option<AuthError>,
}

impl OAuth {
    pub(crate) fn new(url: &str, config: OAuthConfig, client: HttpClient) -> OAuth {
        OAuth {
            authorizer: Mutex::new(Authorizer::new(url)),
            single: smol::lock::Mutex::new(Single::default()),
            flows: std::sync::atomic::AtomicU64::new(0),
            config,
            client,
        }
    }

    /// Before a request, when no flow is to run or be waited for first (no token to refresh, no
    /// authorization up front): puts the current token in the rules and gives the generation
    /// the request is sent with. `None`: call [`prepare`](Self::prepare), which may take a
    /// flow's time.
    pub(crate) fn ready(&self, rules: &Mutex<HttpRules>) -> Option<u64> {
        let a = lock(&self.authorizer);
        let flow = a.before_send(SystemTime::now()).is_some()
            || (self.config.upfront && a.current().is_none());
        if flow {
            return None;
        }
        lock(rules).set_authorization(a.bearer());
        Some(a.generation())
    }

    /// Before a request: refreshes an expired token (or authorizes up front, once), puts the
    /// current token in the rules, and gives the generation the request is sent with.
    pub(crate) async fn prepare(&self, rules: &Mutex<HttpRules>) -> Result<u64, AuthError> {
        let start = {
            let a = lock(&self.authorizer);
            a.before_send(SystemTime::now())
        };
        let upfront = self.config.upfront && lock(&self.authorizer).current().is_none();
        if start.is_some() || upfront {
            let mut single = self.single.lock().await;
            // Another request may have done it meanwhile.
            let start = {
                let a = lock(&self.authorizer);
                match a.before_send(SystemTime::now()) {
                    Some(s) => Some(s),
                    None if upfront && !single.upfront_done && a.current().is_none() => {
                        Some(a.upfront())
                    }
                    None => None,
                }
            };
            single.upfront_done = true;
            if let Some(start) = start {
                self.run_and_install(start, rules).await?;
            }
        }
        let a = lock(&self.authorizer);
        lock(rules).set_authorization(a.bearer());
        Ok(a.generation())
    }

    /// After a response to a request sent with `generation`: `Ok(true)` to send it again
    /// (after a flow, when one was needed), `Ok(false)` to go on with the response.
    pub(crate) async fn on_response(
        &self,
        attempt: &mut Attempt,
        generation: u64,
        status: u16,
        challenge: Option<&str>,
        rules: &Mutex<HttpRules>,
    ) -> Result<bool, AuthError> {
        match self.verdict(attempt, generation, status, challenge) {
            Verdict::Proceed => Ok(false),
            Verdict::Retry => Ok(true),
            Verdict::Fail(e) => Err(e),
            Verdict::Authorize(start) => self.authorize_for(*start, generation, rules).await,
        }
    }

    /// The authorizer's verdict on a response to a request sent with `generation` (see
    /// [`on_response`](Self::on_response), which carries it out): only
    /// [`Verdict::Authorize`] takes a flow's time ([`authorize_for`](Self::authorize_for)).
    pub(crate) fn verdict(
        &self,
        attempt: &mut Attempt,
        generation: u64,
        status: u16,
        challenge: Option<&str>,
    ) -> Verdict {
        lock(&self.authorizer).on_response(attempt, generation, status, challenge)
    }

    /// Runs the flow `start` for a request sent with `generation`, or waits for the one running
    /// and takes its outcome: `Ok(true)` to send the request again.
    pub(crate) async fn authorize_for(
        &self,
        start: FlowStart,
        generation: u64,
        rules: &Mutex<HttpRules>,
    ) -> Result<bool, AuthError> {
        use std::sync::atomic::Ordering;
        let flows = self.flows.load(Ordering::SeqCst);
        let mut single = self.single.lock().await;
        // A flow that ran while this one waited may have answered the same challenge…
        if lock(&self.authorizer).generation() != generation {
            return Ok(true);
        }
        // …or failed: this request fails with it, rather than asking the person again once per
        // waiting request.
        if self.flows.load(Ordering::SeqCst) != flows {
            if let Some(e) = &single.failed {
                return Err(e.clone());
            }
        }
        let outcome = self.run_and_install(start, rules).await;
        single.failed = outcome.as_ref().err().cloned();
        self.flows.fetch_add(1, Ordering::SeqCst);
        outcome.map(|()| true)
    }

    async fn run_and_install(
        &self,
        start: FlowStart,
        rules: &Mutex<HttpRules>,
    ) -> Result<(), AuthError> {
        let reason = start.reason;
        let outcome = self.run(start).await;
        let mut a = lock(&self.authorizer);
        let next = match outcome {
            Ok(credentials) => {
                a.install(credentials);
                Ok(())
            }
            Err(e) => a.flow_failed(reason, e),
        };
        lock(rules).set_authorization(a.bearer());
        next
    }

    /// Runs one flow to its end.
    async fn run(&self, start: FlowStart) -> Result<Credentials, AuthError> {
        let mut options = self.config.options.clone();
        let resource_url = start.resource_url.clone();
        let listener = match &self.config.authorize {
            Authorize::Browser { .. }
                if options.grant == mcp_proto::oauth::Grant::AuthorizationCode =>
            {
                let listener = smol::net::TcpListener::bind(("127.0.0.1", 0))
                    .await
                    .map_err(|e| AuthError::Transport {
                        url: "http://127.0.0.1".into(),
                        message: format!("listening for the redirect: {e}"),
                    })?;
                let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
                // > "loopback redirect URIs … http://127.0.0.1:{port}/{path}" — RFC 8252 § 7.3
                options.redirect_uri = format!("http://127.0.0.1:{port}/callback");
                Some(listener)
            }
            _ => None,
        };
        let mut flow = Flow::new(start, options, randomness()?, SystemTime::now());
        loop {
            match flow.step().clone() {
                Step::Send(request) => match self.send(request).await {
                    Ok((status, headers, body)) => {
                        flow.on_response(status, &headers, &body, SystemTime::now())
                    }
                    Err(message) => flow.on_failure(&message, SystemTime::now()),
                },
                Step::Load { issuer, resource } => {
                    if matches!(self.config.authorize, Authorize::Refuse)
                        && self.config.options.grant == mcp_proto::oauth::Grant::AuthorizationCode
                    {
                        return Err(AuthError::NotAuthorized {
                            issuer,
                            resource: redact_url(&resource_url),
                            reason: "authorizing is turned off".into(),
                        });
                    }
                    let stored = self.config.store.load(&issuer, &resource);
                    flow.on_loaded(stored, SystemTime::now());
                }
                Step::Authorize(request) => {
                    let redirect = self.authorize(&request, listener.as_ref(), &flow).await;
                    match redirect {
                        Ok(url) => flow.on_redirect(&url),
                        Err(reason) => {
                            return Err(AuthError::NotAuthorized {
                                issuer: request.issuer,
                                resource: redact_url(&resource_url),
                                reason,
                            })
                        }
                    }
                }
                Step::Done(credentials) => {
                    self.config.store.save(&credentials);
                    return Ok(credentials);
                }
                Step::Failed(e) => return Err(e),
            }
        }
    }

    async fn authorize(
        &self,
        request: &AuthorizationRequest,
        listener: Option<&smol::net::TcpListener>,
        flow: &Flow,
    ) -> Result<String, String> {
        match &self.config.authorize {
            Authorize::Refuse => Err("authorizing is turned off".into()),
            Authorize::Callback(callback) => callback(request.clone()).await,
            Authorize::Browser {
                open,
                show,
                timeout,
            } => {
                let Some(listener) = listener else {
                    return Err("no listener for the redirect".into());
                };
                let opened = *open && open_browser(&request.url);
                show(request, opened);
                let wait = receive_redirect(listener, &request.redirect_uri, flow);
                smol::future::or(wait, async {
                    smol::Timer::after(*timeout).await;
                    Err(format!("nobody came back within {} s", timeout.as_secs()))
                })
                .await
            }
        }
    }

    /// One request of the flow: its status, headers and body (at most
    /// [`MAX_DOCUMENT`](mcp_proto::oauth::metadata::MAX_DOCUMENT) bytes plus one, so an
    /// oversized one is told), within the time limit. Failures are described without the URL's
    /// query or any header value.
    async fn send(
        &self,
        request: HttpRequest,
    ) -> Result<(u16, Vec<(String, String)>, Vec<u8>), String> {
        request.check().map_err(|e| e.to_string())?;
        let http =
            crate::http::isahc_request(request).map_err(|_| "not a valid request".to_owned())?;
        let exchange = async {
            let mut response = self
                .client
                .send_async(http)
                .await
                .map_err(|e| format!("{:?}", e.kind()))?;
            let status = response.status().as_u16();
            let headers = crate::http::head(&response);
            let mut body = Vec::new();
            let limit = mcp_proto::oauth::metadata::MAX_DOCUMENT as u64 + 1;
            response
                .body_mut()
                .take(limit)
                .read_to_end(&mut body)
                .await
                .map_err(|e| format!("reading the answer: {}", e.kind()))?;
            let _ = response.consume().await;
            Ok((status, headers, body))
        };
        smol::future::or(exchange, async {
            smol::Timer::after(self.config.request_timeout).await;
            Err(format!(
                "no answer within {} s",
                self.config.request_timeout.as_secs()
            ))
        })
        .await
    }
}

/// The flow's randomness, from the operating system.
fn randomness() -> Result<Randomness, AuthError> {
    let mut verifier = [0u8; 32];
    let mut state = [0u8; 16];
    getrandom::fill(&mut verifier)
        .and_then(|()| getrandom::fill(&mut state))
        .map_err(|e| AuthError::Unsupported(format!("no randomness from the system: {e}")))?;
    Ok(Randomness { verifier, state })
}

/// Opens the system browser on `url`; whether a browser program could be started.
fn open_browser(url: &str) -> bool {
    let mut command = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut c = std::process::Command::new("rundll32");
        c.arg("url.dll,FileProtocolHandler");
        c
    } else {
        std::process::Command::new("xdg-open")
    };
    command
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    match command.spawn() {
        Ok(mut child) => {
            // Reaped in the background: xdg-open returns at once.
            std::thread::spawn(move || {
                let _ = child.wait();
            });
            true
        }
        Err(_) => false,
    }
}

/// The largest request head the redirect listener reads.
const MAX_REDIRECT_HEAD: usize = 16 * 1024;

/// How long one connection to the redirect listener has to send its request head: a browser
/// sends it at once; the connection is closed after this, and other connections are served
/// meanwhile.
const REDIRECT_READ_DEADLINE: Duration = Duration::from_secs(10);

/// The most connections the redirect listener serves at once; more wait in the system's
/// backlog until one is done (at most [`REDIRECT_READ_DEADLINE`]).
const MAX_REDIRECT_CONNECTIONS: usize = 16;

/// Waits on the listener for this flow's redirect (the flow's [`Flow::check_redirect`] says
/// which request is its), answers it with a short page, and gives the full redirect URL.
/// Connections are served concurrently, each with its own read deadline, so a slow or silent
/// one does not hold up the person's; a request to another path (a favicon) gets a 404, and
/// one to the redirect path without this flow's `state` an error page: the wait goes on in
/// both cases, until the flow's redirect or the caller's timeout.
async fn receive_redirect(
    listener: &smol::net::TcpListener,
    redirect_uri: &str,
    flow: &Flow,
) -> Result<String, String> {
    let origin = url::Url::parse(redirect_uri)
        .map(|u| u.origin().ascii_serialization())
        .map_err(|_| "the redirect URI is not a URL".to_owned())?;
    let slots = smol::lock::Semaphore::new(MAX_REDIRECT_CONNECTIONS);
    let (found, redirect) = smol::channel::bounded::<String>(1);
    // Declared after what its tasks borrow: dropped (with every connection still open) first.
    let connections = smol::Executor::new();
    let accept = async {
        loop {
            let slot = slots.acquire().await;
            let (stream, _) = listener
                .accept()
                .await
                .map_err(|e| format!("waiting for the redirect: {e}"))?;
            let (found, origin) = (found.clone(), origin.as_str());
            connections
                .spawn(async move {
                    let _slot = slot;
                    if let Some(url) = serve_redirect(stream, origin, flow).await {
                        let _ = found.try_send(url);
                    }
                })
                .detach();
        }
    };
    let taken = async {
        redirect
            .recv()
            .await
            .map_err(|_| "the redirect listener stopped".to_owned())
    };
    connections.run(smol::future::or(taken, accept)).await
}

/// One connection to the redirect listener: reads its request head (within the deadline),
/// answers it, and gives the redirect URL when it is this flow's.
async fn serve_redirect(
    mut stream: smol::net::TcpStream,
    origin: &str,
    flow: &Flow,
) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REDIRECT_HEAD {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    };
    smol::future::or(read, smol::Timer::after(REDIRECT_READ_DEADLINE).map_unit()).await;
    let line = String::from_utf8_lossy(&head);
    let target = line
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("GET "))
        .and_then(|l| l.split(' ').next())
        .filter(|t| t.starts_with('/'))
        .unwrap_or("");
    let url = format!("{origin}{target}");
    let verdict = if target.is_empty() {
        mcp_proto::oauth::Redirect::Elsewhere
    } else {
        flow.check_redirect(&url)
    };
    let (status, title, text) = match verdict {
        mcp_proto::oauth::Redirect::Ours => (
            "200 OK",
            "Authorized",
            "You can close this window and go back to the application.",
        ),
        mcp_proto::oauth::Redirect::NotOurs => (
            "400 Bad Request",
            "Not this sign-in",
            "This is not the answer to the sign-in the application is waiting for: it was ignored, and the application keeps waiting.",
        ),
        mcp_proto::oauth::Redirect::Elsewhere => ("404 Not Found", "Not found", "Nothing here."),
    };
    let page = format!("<!doctype html><title>{title}</title><p>{text}</p>");
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{page}",
        page.len()
    );
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.flush().await;
    (verdict == mcp_proto::oauth::Redirect::Ours).then_some(url)
}

trait MapUnit: std::future::Future + Sized {
    fn map_unit(self) -> impl std::future::Future<Output = ()> {
        async {
            self.await;
        }
    }
}

impl<F: std::future::Future> MapUnit for F {}

#[allow(dead_code)]
fn _assert_send() {
    fn is_send<T: Send + Sync>() {}
    is_send::<OAuth>();
}
