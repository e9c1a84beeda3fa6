//! OAuth for the HTTP transport: runs the core's [`Flow`] over isahc when the server asks
//! (a `401`, a `403 insufficient_scope`, an expired token) or up front, keeps the credentials
//! in a [`TokenStore`], and has a person authorize the way the application chose
//! ([`Authorize`]).
//!
//! The flow's requests go where the core says and nowhere else; isahc follows no redirect. The
//! access token is only ever sent to the MCP endpoint (by the transport's rules, in the
//! `Authorization` header), the client secret and codes only to the token endpoint; neither
//! appears in an error message, a URL or `Debug` output.

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
/// created with mode 0700 when it does not exist), rewritten whole (through a temporary file of
/// this process and a rename) on every change. A file that cannot be read counts as empty; one
/// that cannot be written loses the change (the flow still works, the next run authorizes
/// again). Changes are serialized within a process, not between processes: two runs saving at
/// once keep one of their changes.
pub struct FileStore {
    path: PathBuf,
    lock: Mutex<()>,
}

impl FileStore {
    /// A store in this file (its directory is created when needed, readable by its owner alone).
    pub fn new(path: impl Into<PathBuf>) -> FileStore {
        FileStore {
            path: path.into(),
            lock: Mutex::new(()),
        }
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

    fn read(&self) -> Vec<Credentials> {
        std::fs::read(&self.path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    fn write(&self, entries: &[Credentials]) {
        let Ok(json) = serde_json::to_vec_pretty(entries) else {
            return;
        };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            {
                // Only the directories created here; an existing one keeps its mode.
                use std::os::unix::fs::DirBuilderExt;
                builder.mode(0o700);
            }
            let _ = builder.create(dir);
        }
        // One temporary file per process, so that two runs saving at once do not write into
        // the same file.
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(format!(".{}.tmp", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let written = options.open(&tmp).and_then(|mut f| {
            use std::io::Write;
            // The mode above applies only to a file it creates: a leftover one is narrowed too.
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            }
            f.write_all(&json)?;
            f.sync_all()
        });
        if written.is_ok() {
            let _ = std::fs::rename(&tmp, &self.path);
        } else {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

impl TokenStore for FileStore {
    fn load(&self, issuer: &str, resource: &str) -> Option<Credentials> {
        let _guard = lock(&self.lock);
        self.read()
            .into_iter()
            .find(|c| c.issuer == issuer && c.resource == resource)
    }

    fn save(&self, credentials: &Credentials) {
        let _guard = lock(&self.lock);
        let mut entries = self.read();
        entries.retain(|c| !(c.issuer == credentials.issuer && c.resource == credentials.resource));
        entries.push(credentials.clone());
        self.write(&entries);
    }

    fn remove(&self, issuer: &str, resource: &str) {
        let _guard = lock(&self.lock);
        let mut entries = self.read();
        let before = entries.len();
        entries.retain(|c| !(c.issuer == issuer && c.resource == resource));
        if entries.len() != before {
            self.write(&entries);
        }
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
    /// The native-app flow (RFC 8252): a one-shot listener on `127.0.0.1` and an ephemeral port
    /// is the redirect URI; the system browser is opened on the authorization URL (`open`:
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
                eprintln!("{how} with {}:\n  {}", request.issuer, request.url);
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
                    let redirect = self.authorize(&request, listener.as_ref()).await;
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
                let wait = receive_redirect(listener, &request.redirect_uri);
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

/// Waits on the listener for the browser's request to the redirect URI's path, answers it with
/// a short page, and gives the full redirect URL. Other requests (a favicon) get a 404 and the
/// wait goes on.
async fn receive_redirect(
    listener: &smol::net::TcpListener,
    redirect_uri: &str,
) -> Result<String, String> {
    let expected_path = redirect_path(redirect_uri);
    loop {
        let (mut stream, _) = listener
            .accept()
            .await
            .map_err(|e| format!("waiting for the redirect: {e}"))?;
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
        // A browser sends its request at once; a connection that does not cannot hold the
        // listener for long.
        smol::future::or(read, smol::Timer::after(Duration::from_secs(2)).map_unit()).await;
        let line = String::from_utf8_lossy(&head);
        let target = line
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("GET "))
            .and_then(|l| l.split(' ').next())
            .unwrap_or("")
            .to_owned();
        let path = target.split('?').next().unwrap_or("");
        if path != expected_path {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        let page = "<!doctype html><title>Authorized</title><p>You can close this window and go back to the application.</p>";
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{page}",
            page.len()
        );
        let _ = stream.write_all(answer.as_bytes()).await;
        let _ = stream.flush().await;
        let base = redirect_uri.split('?').next().unwrap_or(redirect_uri);
        let query = target.split_once('?').map(|(_, q)| q).unwrap_or("");
        return Ok(format!("{base}?{query}"));
    }
}

/// The path of a redirect URI (`http://127.0.0.1:PORT/callback` → `/callback`).
fn redirect_path(uri: &str) -> String {
    let rest = uri.split_once("://").map_or(uri, |(_, r)| r);
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    match rest.find('/') {
        Some(i) => rest[i..].to_owned(),
        None => "/".to_owned(),
    }
}

trait MapUnit: std::future::Future + Sized {
    fn map_unit(self) -> impl std::future::Future<Output = ()> {
        async {
            self.await;
        }
    }
}

impl<F: std::future::Future> MapUnit for F {}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[allow(dead_code)]
fn _assert_send() {
    fn is_send<T: Send + Sync>() {}
    is_send::<OAuth>();
}
