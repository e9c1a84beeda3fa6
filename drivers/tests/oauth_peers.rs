//! OAuth end to end against a real authorization server nobody here wrote (oidc-provider 9,
//! drivers/tests/peers/oauth/authorization-server.cjs) guarding a real MCP server (the Python SDK's
//! protected server, drivers/tests/peers/oauth/protected_server.py): the headless callback, refresh,
//! a file store across connections, the RFC 8252 loopback listener driven by a real HTTP
//! client, and a tampered `state` / `iss` that must stop the flow before the token endpoint.
//!
//! The peers come from `.ci/install-peers` (drivers/tests/peers/oauth/README.md). Each test prints
//! `skipped: …` and passes when they are missing, and fails instead under `CI=true`. The
//! authorization server runs with `--log` (one stderr line per request), which the tests count.

use isahc::config::{Configurable, RedirectPolicy};
use isahc::ReadResponseExt;
use mcp_connect::proto::oauth::{AuthError, AuthorizationRequest, Credentials};
use mcp_connect::{
    connect_http, Authorize, Client, ClientConfig, Error, FileStore, HttpTransportConfig,
    MemoryStore, OAuthConfig, TokenStore,
};
use mcp_testkit::{peer_bin, wait_until, HttpPeer, TempDir};
use serde_json::{json, Value};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The authorization server and the resource server it guards.
struct Peers {
    auth: HttpPeer,
    rs: HttpPeer,
    /// The authorization server's issuer (`http://127.0.0.1:A`, no trailing slash).
    issuer: String,
}

impl Peers {
    /// Both peers, the authorization server with `as_args` (and `--log`), or `None` (skipped).
    fn start(as_args: &[&str], rs_args: &[&str]) -> Option<Peers> {
        let as_bin = peer_bin("oauth-as")?;
        let rs_bin = peer_bin("oauth-rs")?;
        let mut command = Command::new(as_bin);
        command.arg("--log").args(as_args);
        let auth = HttpPeer::start(command, |line| {
            line.strip_prefix("ISSUER ").map(|u| u.trim().to_owned())
        });
        let issuer = auth.url.clone();
        let mut command = Command::new(rs_bin);
        command.args(["--issuer", &issuer]).args(rs_args);
        let rs = HttpPeer::start(command, |line| {
            line.strip_prefix("LISTENING ").map(|u| u.trim().to_owned())
        });
        Some(Peers { auth, rs, issuer })
    }

    /// How many requests the authorization server logged whose line starts with `prefix`
    /// (`"POST /token"`, `"GET /auth?"`, `"POST /reg"`).
    fn as_requests(&self, prefix: &str) -> usize {
        let needle = format!("[oauth-as] {prefix}");
        self.auth
            .output()
            .lines()
            .filter(|l| l.starts_with(&needle))
            .count()
    }

    /// Waits (up to 30 s) until the log shows `n` such requests — its lines are written after each
    /// answer, and read by another thread — and gives the count then.
    fn as_requests_settled(&self, prefix: &str, n: usize) -> usize {
        wait_until(Duration::from_secs(30), || self.as_requests(prefix) >= n);
        // A little longer, so that one too many shows too.
        std::thread::sleep(Duration::from_millis(150));
        self.as_requests(prefix)
    }

    fn stop(self) {
        self.rs.stop();
        self.auth.stop();
    }
}

/// Runs `f` on smol, failing the test past `limit`.
fn within<T>(limit: Duration, f: impl std::future::Future<Output = T>) -> T {
    smol::block_on(async {
        smol::future::or(async { Some(f.await) }, async {
            smol::Timer::after(limit).await;
            None
        })
        .await
        .unwrap_or_else(|| panic!("the test did not finish within {limit:?}"))
    })
}

/// A query parameter of a URL, decoded.
fn param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Replaces a query parameter's value (percent-encoding it the simple way: the tests' values
/// are URL-safe or spelled out).
fn with_param(url: &str, name: &str, value: &str) -> String {
    let (base, query) = url.split_once('?').expect("a query");
    let query: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if k == name => format!("{k}={value}"),
            _ => kv.to_owned(),
        })
        .collect();
    format!("{base}?{}", query.join("&"))
}

/// Plays the person headlessly: one GET of the authorization URL, not following redirects; the
/// answer must be a 303 (or 302) to the redirect URI, and its `Location` is the redirect back.
async fn visit(request: &AuthorizationRequest) -> Result<String, String> {
    let http = isahc::Request::get(request.url.as_str())
        .redirect_policy(RedirectPolicy::None)
        .body(())
        .map_err(|e| e.to_string())?;
    let response = isahc::send_async(http).await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if !matches!(status, 302 | 303) {
        return Err(format!(
            "the authorization endpoint answered {status}, not 303"
        ));
    }
    if !location.starts_with(&format!("{}?", request.redirect_uri)) {
        return Err(format!(
            "the authorization endpoint redirected to {location}, not to {}",
            request.redirect_uri
        ));
    }
    Ok(location)
}

/// A headless callback that counts its calls and keeps each authorization request, changing
/// the redirect back with `tamper`.
fn headless(
    calls: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<AuthorizationRequest>>>,
    tamper: fn(String) -> String,
) -> Authorize {
    Authorize::callback(move |request: AuthorizationRequest| {
        calls.fetch_add(1, Ordering::SeqCst);
        seen.lock().unwrap().push(request.clone());
        async move { visit(&request).await.map(tamper) }
    })
}

/// A store that records every save (and keeps them in memory).
#[derive(Default)]
struct Recording {
    inner: MemoryStore,
    saves: Mutex<Vec<Credentials>>,
}

impl TokenStore for Recording {
    fn load(&self, issuer: &str, resource: &str) -> Option<Credentials> {
        self.inner.load(issuer, resource)
    }
    fn save(&self, credentials: &Credentials) {
        self.saves.lock().unwrap().push(credentials.clone());
        self.inner.save(credentials);
    }
    fn remove(&self, issuer: &str, resource: &str) {
        self.inner.remove(issuer, resource)
    }
}

/// The claims of a JWT access token.
fn jwt_claims(token: &str) -> Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).expect("a JWT access token");
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url claims");
    serde_json::from_slice(&raw).expect("JSON claims")
}

async fn connect(peers: &Peers, oauth: OAuthConfig) -> Result<Client, Error> {
    connect_http(
        HttpTransportConfig::new(peers.rs.url.as_str()).oauth(oauth),
        ClientConfig::default(),
    )
    .await
}

/// [`connect`], which must succeed: a failure shows both servers' logs.
async fn connected(peers: &Peers, oauth: OAuthConfig) -> Client {
    connect(peers, oauth).await.unwrap_or_else(|e| {
        panic!(
            "connect: {e}\nAS:\n{}\nRS:\n{}",
            peers.auth.output(),
            peers.rs.output()
        )
    })
}

/// `whoami`'s answer, as JSON.
async fn whoami(client: &Client) -> Value {
    let r = client.call_tool("whoami", json!({})).await.unwrap();
    assert!(!r.is_error, "{}", r.text());
    serde_json::from_str(&r.text()).unwrap_or_else(|e| panic!("whoami: {e}: {}", r.text()))
}

async fn echo(client: &Client, text: &str) {
    let r = client
        .call_tool("echo", json!({ "text": text }))
        .await
        .unwrap();
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), text);
}

#[test]
fn the_full_flow_through_a_headless_callback() {
    let Some(peers) = Peers::start(&[], &[]) else {
        return;
    };
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let store = Arc::new(Recording::default());
    let mut oauth = OAuthConfig::new(headless(calls.clone(), seen.clone(), |u| u));
    oauth.store = store.clone();
    let started = Instant::now();
    within(Duration::from_secs(60), async {
        let client = connected(&peers, oauth).await;
        let tools = client.list_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert!(
            names.contains(&"echo") && names.contains(&"whoami"),
            "{names:?}"
        );
        echo(&client, "hello through oauth").await;
        let me = whoami(&client).await;
        assert_eq!(me["subject"], "test-user", "{me}");
        assert_eq!(me["scopes"], json!(["mcp:tools"]), "{me}");
        assert_eq!(me["resource"], peers.rs.url.as_str(), "{me}");
        assert_eq!(me["issuer"], peers.issuer.as_str(), "{me}");

        // One authorization, as the spec's request: PKCE S256, the resource, the PRM's scopes
        // (and offline_access, which the AS lists), our redirect URI, the registered client.
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let request = seen.lock().unwrap()[0].clone();
        assert_eq!(request.issuer, peers.issuer);
        assert_eq!(request.redirect_uri, "http://127.0.0.1/callback");
        assert!(
            request.url.starts_with(&format!("{}/auth?", peers.issuer)),
            "{}",
            request.url
        );
        let p = |n| param(&request.url, n);
        assert_eq!(p("response_type").as_deref(), Some("code"));
        assert_eq!(p("code_challenge_method").as_deref(), Some("S256"));
        assert_eq!(p("code_challenge").map(|c| c.len()), Some(43));
        assert_eq!(p("resource").as_deref(), Some(peers.rs.url.as_str()));
        assert_eq!(p("scope").as_deref(), Some("mcp:tools offline_access"));
        assert_eq!(
            p("redirect_uri").as_deref(),
            Some("http://127.0.0.1/callback")
        );
        let client_id = p("client_id").expect("client_id");
        assert_eq!(me["client_id"], client_id.as_str(), "{me}");

        // The token is a JWT for this resource, kept once, with a refresh token.
        let saves = store.saves.lock().unwrap().clone();
        assert_eq!(saves.len(), 1, "one flow, one save");
        let c = &saves[0];
        assert_eq!(c.issuer, peers.issuer);
        assert_eq!(c.resource, peers.rs.url);
        assert_eq!(c.token_endpoint, format!("{}/token", peers.issuer));
        assert_eq!(c.client.client_id, client_id);
        assert!(c.tokens.refresh_token.is_some());
        let claims = jwt_claims(c.tokens.access_token.expose());
        assert_eq!(claims["aud"], peers.rs.url.as_str(), "{claims}");
        assert_eq!(claims["sub"], "test-user", "{claims}");
        client.close().await.unwrap();
    });
    assert_eq!(peers.as_requests_settled("POST /reg", 1), 1);
    assert_eq!(peers.as_requests_settled("GET /auth?", 1), 1);
    assert_eq!(peers.as_requests_settled("POST /token", 1), 1);
    eprintln!("full flow: {:?}", started.elapsed());
    peers.stop();
}

#[test]
fn an_expired_token_is_refreshed_without_a_person() {
    let Some(peers) = Peers::start(&["--access-token-ttl", "2"], &[]) else {
        return;
    };
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let store = Arc::new(Recording::default());
    let mut oauth = OAuthConfig::new(headless(calls.clone(), seen, |u| u));
    oauth.store = store.clone();
    within(Duration::from_secs(60), async {
        let client = connect(&peers, oauth).await.unwrap();
        echo(&client, "before").await;
        let first = store.saves.lock().unwrap().last().cloned().unwrap();
        // The RS checks `exp` with no leeway: past it, the old token is refused.
        smol::Timer::after(Duration::from_millis(3500)).await;
        echo(&client, "after").await;
        let me = whoami(&client).await;
        assert_eq!(me["subject"], "test-user", "{me}");

        assert_eq!(calls.load(Ordering::SeqCst), 1, "no second person");
        let saves = store.saves.lock().unwrap().clone();
        assert!(
            saves.len() >= 2,
            "a refresh saves new tokens: {}",
            saves.len()
        );
        let last = saves.last().unwrap();
        assert_ne!(
            last.tokens.access_token, first.tokens.access_token,
            "a new access token"
        );
        // A public client's refresh token rotates at oidc-provider: the new one was kept.
        assert_ne!(last.tokens.refresh_token, first.tokens.refresh_token);
        assert!(last.tokens.refresh_token.is_some());
        assert_eq!(last.client.client_id, first.client.client_id, "same client");
        let (old, new) = (
            jwt_claims(first.tokens.access_token.expose()),
            jwt_claims(last.tokens.access_token.expose()),
        );
        assert!(new["exp"].as_u64() > old["exp"].as_u64(), "{old} {new}");
        assert_eq!(new["aud"], peers.rs.url.as_str());
        client.close().await.unwrap();
    });
    // One registration, one authorization; the token endpoint: the code, then refreshes.
    assert_eq!(peers.as_requests_settled("POST /reg", 1), 1);
    assert_eq!(peers.as_requests_settled("GET /auth?", 1), 1);
    assert!(peers.as_requests_settled("POST /token", 2) >= 2);
    peers.stop();
}

#[test]
fn a_file_store_carries_credentials_to_the_next_connection() {
    let Some(peers) = Peers::start(&["--access-token-ttl", "6"], &[]) else {
        return;
    };
    let dir = TempDir::new("oauth-store");
    let path = dir.path().join("config").join("credentials.json");
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let never = || {
        Authorize::callback(|request: AuthorizationRequest| async move {
            Err::<String, _>(format!("nobody should be asked: {}", request.url))
        })
    };
    within(Duration::from_secs(60), async {
        // The first connection authorizes and stores.
        let mut oauth = OAuthConfig::new(headless(calls.clone(), seen, |u| u));
        oauth.store = Arc::new(FileStore::new(&path));
        let first = connect(&peers, oauth).await.unwrap();
        let me = whoami(&first).await;
        first.close().await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        let stored: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let entries = stored.as_array().expect("a list of credentials");
        assert_eq!(entries.len(), 1, "{stored}");
        assert_eq!(entries[0]["issuer"], peers.issuer.as_str());
        assert_eq!(entries[0]["resource"], peers.rs.url.as_str());
        assert!(
            !path.with_extension("json.tmp").exists(),
            "no temporary file is left"
        );

        // A new connection, the same file: its token is used as it is, nobody is asked.
        let mut oauth = OAuthConfig::new(never());
        oauth.store = Arc::new(FileStore::new(&path));
        let second = connect(&peers, oauth).await.unwrap();
        let again = whoami(&second).await;
        assert_eq!(again["client_id"], me["client_id"]);
        second.close().await.unwrap();
        assert_eq!(
            peers.as_requests_settled("POST /token", 1),
            1,
            "no new token"
        );

        // Past the access token's lifetime, a third connection refreshes from the file.
        smol::Timer::after(Duration::from_millis(6500)).await;
        let mut oauth = OAuthConfig::new(never());
        oauth.store = Arc::new(FileStore::new(&path));
        let third = connect(&peers, oauth).await.unwrap();
        let again = whoami(&third).await;
        assert_eq!(again["client_id"], me["client_id"]);
        third.close().await.unwrap();
    });
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(peers.as_requests_settled("POST /reg", 1), 1);
    assert_eq!(peers.as_requests_settled("GET /auth?", 1), 1);
    assert_eq!(
        peers.as_requests_settled("POST /token", 2),
        2,
        "one refresh"
    );
    peers.stop();
}

/// Where the test's "browser" got: the status of a stray request to the loopback listener, and
/// the status and page it landed on after following the redirects.
type Landed = Result<(u16, u16, String), String>;

#[test]
fn the_browser_flow_receives_the_redirect_on_its_loopback_listener() {
    let Some(peers) = Peers::start(&[], &[]) else {
        return;
    };
    // What the "browser" did: the URL it was shown, whether the stray request got a 404, and
    // the final page it landed on.
    let shown: Arc<Mutex<Vec<(AuthorizationRequest, bool)>>> = Arc::default();
    let landed: Arc<Mutex<Vec<Landed>>> = Arc::default();
    let show = {
        let (shown, landed) = (shown.clone(), landed.clone());
        Arc::new(move |request: &AuthorizationRequest, opened: bool| {
            shown.lock().unwrap().push((request.clone(), opened));
            let (request, landed) = (request.clone(), landed.clone());
            std::thread::spawn(move || {
                let outcome = (|| -> Landed {
                    let origin = request
                        .redirect_uri
                        .strip_suffix("/callback")
                        .ok_or("redirect URI without /callback")?;
                    // A stray request first (a favicon): 404, and the listener waits on.
                    let stray = isahc::get(format!("{origin}/favicon.ico"))
                        .map_err(|e| e.to_string())?
                        .status()
                        .as_u16();
                    let http = isahc::Request::get(request.url.as_str())
                        .redirect_policy(RedirectPolicy::Follow)
                        .body(())
                        .map_err(|e| e.to_string())?;
                    let mut response = isahc::send(http).map_err(|e| e.to_string())?;
                    let status = response.status().as_u16();
                    Ok((
                        stray,
                        status,
                        String::from_utf8_lossy(&response.bytes().map_err(|e| e.to_string())?)
                            .into_owned(),
                    ))
                })();
                landed.lock().unwrap().push(outcome);
            });
        })
    };
    let oauth = OAuthConfig::new(Authorize::Browser {
        open: false,
        show,
        timeout: Duration::from_secs(30),
    });
    within(Duration::from_secs(60), async {
        let client = connect(&peers, oauth).await.unwrap();
        let me = whoami(&client).await;
        assert_eq!(me["subject"], "test-user", "{me}");
        client.close().await.unwrap();
    });
    let shown = shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 1, "one authorization");
    let (request, opened) = &shown[0];
    assert!(!opened, "open: false starts no browser");
    // An ephemeral port on 127.0.0.1 (RFC 8252 § 7.3), sent as the redirect URI.
    let port: u16 = request
        .redirect_uri
        .strip_prefix("http://127.0.0.1:")
        .and_then(|r| r.strip_suffix("/callback"))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("redirect URI {}", request.redirect_uri));
    assert_ne!(port, 0);
    assert_eq!(
        param(&request.url, "redirect_uri").as_deref(),
        Some(request.redirect_uri.as_str())
    );
    let landed = landed.lock().unwrap().clone();
    let (stray, status, page) = landed[0].clone().unwrap();
    assert_eq!(stray, 404, "a request to another path is not the redirect");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("You can close this window"), "{page}");
    // The one-shot listener is gone once the flow is over.
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the loopback listener still accepts connections"
    );
    peers.stop();
}

#[test]
fn the_browser_flow_gives_up_after_its_timeout() {
    let Some(peers) = Peers::start(&[], &[]) else {
        return;
    };
    let oauth = OAuthConfig::new(Authorize::Browser {
        open: false,
        show: Arc::new(|_: &AuthorizationRequest, _| {}),
        timeout: Duration::from_secs(1),
    });
    let started = Instant::now();
    let error = within(Duration::from_secs(30), async {
        connect(&peers, oauth).await.expect_err("nobody came back")
    });
    match &error {
        Error::Auth(AuthError::NotAuthorized { issuer, reason, .. }) => {
            assert_eq!(issuer, &peers.issuer);
            assert!(reason.contains("within 1 s"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(peers.as_requests_settled("POST /token", 0), 0);
    peers.stop();
}

/// A redirect back with a tampered parameter stops the flow with `expected`, before the code
/// goes to the token endpoint.
fn tampered(tamper: fn(String) -> String, expected: fn(&AuthError) -> bool) {
    let Some(peers) = Peers::start(&[], &[]) else {
        return;
    };
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let store = Arc::new(Recording::default());
    let mut oauth = OAuthConfig::new(headless(calls.clone(), seen, tamper));
    oauth.store = store.clone();
    let error = within(Duration::from_secs(60), async {
        connect(&peers, oauth)
            .await
            .expect_err("the flow must fail")
    });
    match &error {
        Error::Auth(e) if expected(e) => {}
        other => panic!("unexpected: {other:?}"),
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "no second try");
    assert!(store.saves.lock().unwrap().is_empty(), "no token obtained");
    // The authorization was made (the AS answered with a code), the code never sent.
    assert_eq!(peers.as_requests_settled("GET /auth?", 1), 1);
    assert_eq!(peers.as_requests_settled("POST /token", 0), 0);
    peers.stop();
}

#[test]
fn a_wrong_state_stops_the_flow_before_the_token_endpoint() {
    tampered(
        |u| {
            let state = param(&u, "state").expect("state in the redirect");
            with_param(&u, "state", &format!("{state}x"))
        },
        |e| matches!(e, AuthError::StateMismatch),
    );
}

#[test]
fn a_wrong_iss_stops_the_flow_before_the_token_endpoint() {
    tampered(
        |u| {
            assert!(param(&u, "iss").is_some(), "oidc-provider sends iss: {u}");
            with_param(&u, "iss", "http%3A%2F%2F127.0.0.1%3A1")
        },
        |e| matches!(e, AuthError::IssuerResponseMismatch { found, .. } if found == "http://127.0.0.1:1"),
    );
}

#[test]
fn a_missing_iss_stops_the_flow_since_the_server_advertises_it() {
    tampered(
        |u| {
            let (base, query) = u.split_once('?').unwrap();
            let kept: Vec<&str> = query
                .split('&')
                .filter(|kv| !kv.starts_with("iss="))
                .collect();
            format!("{base}?{}", kept.join("&"))
        },
        |e| matches!(e, AuthError::IssuerMissing { .. }),
    );
}

#[test]
fn the_scope_the_resource_requires_is_asked_for() {
    // The RS wants mcp:admin: its PRM lists only that, and the client asks for it.
    let Some(peers) = Peers::start(&[], &["--required-scope", "mcp:admin"]) else {
        return;
    };
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let oauth = OAuthConfig::new(headless(calls.clone(), seen.clone(), |u| u));
    within(Duration::from_secs(60), async {
        let client = connect(&peers, oauth).await.unwrap();
        let me = whoami(&client).await;
        assert_eq!(me["scopes"], json!(["mcp:admin"]), "{me}");
        client.close().await.unwrap();
    });
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let url = seen.lock().unwrap()[0].url.clone();
    assert_eq!(
        param(&url, "scope").as_deref(),
        Some("mcp:admin offline_access")
    );
    peers.stop();
}

/// `--no-auth` (Authorize::Refuse) against the real authorization server: with nothing stored,
/// refused naming the server and nothing registered; with a stored token whose lifetime is over
/// (marked so in the store: no waiting), refreshed at the real token endpoint without a person.
#[test]
fn refusing_to_authorize_still_uses_and_refreshes_stored_tokens() {
    let Some(peers) = Peers::start(&[], &[]) else {
        return;
    };
    let store = Arc::new(MemoryStore::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let refuse = |store: &Arc<MemoryStore>| {
        let mut oauth = OAuthConfig::new(Authorize::Refuse);
        oauth.store = store.clone();
        oauth
    };
    within(Duration::from_secs(60), async {
        match connect(&peers, refuse(&store)).await {
            Err(Error::Auth(AuthError::NotAuthorized { issuer, .. })) => {
                assert_eq!(issuer, peers.issuer)
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
        let mut oauth = OAuthConfig::new(headless(calls.clone(), seen, |u| u));
        oauth.store = store.clone();
        let first = connect(&peers, oauth).await.unwrap();
        let me = whoami(&first).await;
        first.close().await.unwrap();
        let mut stored = store.load(&peers.issuer, &peers.rs.url).expect("stored");
        assert!(stored.tokens.refresh_token.is_some());
        stored.tokens.expires_at = Some(stored.tokens.issued_at);
        store.save(&stored);
        let second = connect(&peers, refuse(&store)).await.unwrap();
        assert_eq!(whoami(&second).await["client_id"], me["client_id"]);
        second.close().await.unwrap();
    });
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(peers.as_requests_settled("POST /reg", 1), 1);
    assert_eq!(peers.as_requests_settled("GET /auth?", 1), 1);
    assert_eq!(
        peers.as_requests_settled("POST /token", 2),
        2,
        "the code, then one refresh"
    );
    peers.stop();
}

/// Two resource servers guarded by one real authorization server, one store: the client
/// registered for the first is the client at the second (one `POST /reg`), each with its own
/// authorization and token.
#[test]
fn one_registration_serves_two_resources_of_one_authorization_server() {
    let Some(peers) = Peers::start(&[], &[]) else {
        return;
    };
    let Some(rs_bin) = peer_bin("oauth-rs") else {
        return;
    };
    let mut command = Command::new(rs_bin);
    command.args(["--issuer", &peers.issuer]);
    let second_rs = HttpPeer::start(command, |line| {
        line.strip_prefix("LISTENING ").map(|u| u.trim().to_owned())
    });
    let store = Arc::new(MemoryStore::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    within(Duration::from_secs(60), async {
        let mut ids = Vec::new();
        for url in [peers.rs.url.as_str(), second_rs.url.as_str()] {
            let mut oauth = OAuthConfig::new(headless(calls.clone(), seen.clone(), |u| u));
            oauth.store = store.clone();
            let client = connect_http(
                HttpTransportConfig::new(url).oauth(oauth),
                ClientConfig::default(),
            )
            .await
            .unwrap();
            ids.push(whoami(&client).await["client_id"].clone());
            client.close().await.unwrap();
        }
        assert_eq!(ids[0], ids[1], "{ids:?}");
    });
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(peers.as_requests_settled("POST /reg", 1), 1);
    assert_eq!(peers.as_requests_settled("POST /token", 2), 2);
    second_rs.stop();
    peers.stop();
}

/// DPoP end to end (RFC 9449): oidc-provider binds the token to the client's key when the token
/// request carries a proof, and requires its nonce in every proof; the resource server (the
/// SDK's, behind `--dpop --dpop-nonce`) takes only `Authorization: DPoP` with a valid proof
/// bound to that token, carrying its own nonce. The client was told nothing but the key: the
/// resource's `DPoP` challenge is what turns DPoP on. Both nonces are met once, then every
/// request (and the refresh after the short-lived token expires) goes through signed.
#[test]
fn dpop_bound_tokens_end_to_end_with_both_servers_nonces() {
    use mcp_connect::proto::oauth::dpop::DpopKey;
    let Some(peers) = Peers::start(
        &["--dpop-nonce", "--access-token-ttl", "3"],
        &["--dpop", "--dpop-nonce", "--log-level", "INFO"],
    ) else {
        return;
    };
    let key = DpopKey::from_random(&[42; 32]).unwrap();
    let jkt = key.thumbprint();
    let calls = Arc::new(AtomicUsize::new(0));
    let store = Arc::new(Recording::default());
    let mut oauth = OAuthConfig::new(headless(calls.clone(), Arc::default(), |u| u));
    oauth.store = store.clone();
    oauth.options.dpop_key = Some(Arc::new(key));
    within(Duration::from_secs(60), async {
        let client = connected(&peers, oauth).await;
        echo(&client, "signed").await;
        let me = whoami(&client).await;
        assert_eq!(me["dpop_jkt"], jkt.as_str(), "{me}");
        assert_eq!(me["subject"], "test-user", "{me}");
        let first = store.saves.lock().unwrap().last().cloned().unwrap();
        assert_eq!(first.tokens.dpop_jkt.as_deref(), Some(jkt.as_str()));
        assert_eq!(
            jwt_claims(first.tokens.access_token.expose())["cnf"]["jkt"],
            jkt.as_str()
        );
        // Past the token's life (the RS checks exp with no leeway): refreshed, with a proof by
        // the same key, bound again.
        let expires = first.tokens.expires_at.unwrap();
        while std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            <= expires
        {
            smol::Timer::after(Duration::from_millis(200)).await;
        }
        echo(&client, "after the refresh").await;
        let last = store.saves.lock().unwrap().last().cloned().unwrap();
        assert_ne!(last.tokens.access_token, first.tokens.access_token);
        assert_eq!(last.tokens.dpop_jkt.as_deref(), Some(jkt.as_str()));
        assert_eq!(whoami(&client).await["dpop_jkt"], jkt.as_str());
        client.close().await.unwrap();
    });
    assert_eq!(calls.load(Ordering::SeqCst), 1, "one person, once");
    // The code's token request twice (the first refused for the AS's nonce), then the refresh
    // at once: it starts with the nonce the first flow was given.
    assert!(peers.as_requests_settled("POST /token", 3) >= 3);
    let auth = peers.auth.output();
    let token: Vec<&str> = auth
        .lines()
        .filter(|l| l.starts_with("[oauth-as] POST /token -> "))
        .collect();
    assert_eq!(
        token,
        [
            "[oauth-as] POST /token -> 400",
            "[oauth-as] POST /token -> 200",
            "[oauth-as] POST /token -> 200"
        ],
        "{auth}"
    );
    // The RS: one request without a token, one proof without its nonce, and no proof refused
    // for anything else.
    let rs = peers.rs.output();
    assert_eq!(rs.matches("refused: no nonce").count(), 1, "{rs}");
    let bad: Vec<&str> = rs
        .lines()
        .filter(|l| {
            l.contains("refused: ") && !l.contains("no nonce") && !l.contains("no DPoP token")
        })
        .collect();
    assert!(bad.is_empty(), "{bad:?}");
    peers.stop();
}
