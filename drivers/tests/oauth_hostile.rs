//! OAuth against hostile or broken servers: small fake HTTP servers written here (std
//! `TcpListener` on 127.0.0.1, a thread per connection, canned answers, every request recorded
//! with its method, path, headers and body) play the MCP server, its protected resource
//! metadata, the authorization server and "another origin". Each test checks what the client
//! refused and what it did not send: no token to another origin, no authorization or token
//! request after a refused document, bounded failures for broken token endpoints, the retry
//! and step-up limits, one flow for concurrent `401`s, and no secret in any error or `Debug`.

use mcp_connect::proto::oauth::{AuthError, AuthorizationRequest, PreRegistered, Secret};
use mcp_connect::proto::EraChoice;
use mcp_connect::{
    Authorize, Client, ClientConfig, Error, HttpTransport, HttpTransportConfig, OAuthConfig,
};
use serde_json::{json, Value};
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// The fake servers.

/// One request a fake received.
type Req = mcp_testkit::http_server::RawRequest;

/// What the tests read of a request's body.
trait Body {
    fn json(&self) -> Value;
    /// A form body's field.
    fn form(&self, name: &str) -> Option<String>;
}

impl Body for Req {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
    fn form(&self, name: &str) -> Option<String> {
        url::form_urlencoded::parse(&self.body)
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }
}

/// A canned answer.
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Held this long before answering (a stalled server).
    delay: Option<Duration>,
}

impl Resp {
    fn new(status: u16) -> Resp {
        Resp {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            delay: None,
        }
    }
    fn json(status: u16, body: Value) -> Resp {
        Resp::raw(status, "application/json", body.to_string().into_bytes())
    }
    fn raw(status: u16, content_type: &str, body: Vec<u8>) -> Resp {
        Resp::new(status)
            .header("Content-Type", content_type)
            .body(body)
    }
    fn header(mut self, name: &str, value: &str) -> Resp {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
    fn body(mut self, body: Vec<u8>) -> Resp {
        self.body = body;
        self
    }
}

type Handler = Arc<dyn Fn(&Req) -> Resp + Send + Sync>;

/// A fake HTTP server on 127.0.0.1: bound at once (so its URL can go into another fake's
/// documents), answering once [`serve`](Fake::serve) gave it a handler.
struct Fake {
    origin: String,
    log: Arc<Mutex<Vec<Req>>>,
    listener: Option<TcpListener>,
}

impl Fake {
    fn new() -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        Fake {
            origin: format!("http://127.0.0.1:{port}"),
            log: Arc::default(),
            listener: Some(listener),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    fn serve(&mut self, handler: impl Fn(&Req) -> Resp + Send + Sync + 'static) {
        let listener = self.listener.take().expect("served once");
        let handler: Handler = Arc::new(handler);
        let log = self.log.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (handler, log) = (handler.clone(), log.clone());
                std::thread::spawn(move || connection(stream, &handler, &log));
            }
        });
    }

    fn log(&self) -> Vec<Req> {
        self.log.lock().unwrap().clone()
    }

    fn count(&self, method: &str, path: &str) -> usize {
        self.log()
            .iter()
            .filter(|r| r.method == method && r.path() == path)
            .count()
    }
}

/// Serves the requests of one connection (keep-alive) until it closes.
fn connection(stream: TcpStream, handler: &Handler, log: &Mutex<Vec<Req>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let Ok(Some(req)) = mcp_testkit::http_server::read_request(&mut reader) else {
            return;
        };
        log.lock().unwrap().push(req.clone());
        let resp = handler(&req);
        if let Some(d) = resp.delay {
            std::thread::sleep(d);
        }
        let reason = match resp.status {
            200 => "OK",
            401 => "Unauthorized",
            403 => "Forbidden",
            _ => "Whatever",
        };
        let mut head = format!("HTTP/1.1 {} {reason}\r\n", resp.status);
        for (k, v) in &resp.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", resp.body.len()));
        if out.write_all(head.as_bytes()).is_err() || out.write_all(&resp.body).is_err() {
            return;
        }
        let _ = out.flush();
    }
}

// ---------------------------------------------------------------------------------------------
// An MCP server, its protected resource metadata, an authorization server.

/// A well-behaved legacy MCP server's answer to a POST (JSON), GET (no stream) or DELETE.
fn mcp_answer(req: &Req) -> Resp {
    match req.method.as_str() {
        "GET" => return Resp::new(405),
        "DELETE" => return Resp::new(200),
        _ => {}
    }
    let msg = req.json();
    let Some(id) = msg.get("id").cloned() else {
        return Resp::new(202);
    };
    let result = match msg["method"].as_str().unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake-protected", "version": "1"}
        }),
        "tools/list" => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
        "tools/call" => json!({"content": [{"type": "text", "text": "ok"}]}),
        _ => {
            return Resp::json(
                200,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
            )
        }
    };
    Resp::json(200, json!({"jsonrpc": "2.0", "id": id, "result": result}))
        .header("Mcp-Session-Id", "s1")
}

/// A `401` with a challenge naming `prm`.
fn unauthorized(prm: &str) -> Resp {
    Resp::json(401, json!({"error": "invalid_token"})).header(
        "WWW-Authenticate",
        &format!(r#"Bearer error="invalid_token", resource_metadata="{prm}""#),
    )
}

/// The protected resource metadata of `mcp` (its `resource`), naming `issuer`.
fn prm(resource: &str, issuer: &str) -> Resp {
    Resp::json(
        200,
        json!({
            "resource": resource,
            "authorization_servers": [issuer],
            "scopes_supported": ["mcp:tools"],
        }),
    )
}

const PRM_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// An MCP server at `/mcp` on `fake` whose PRM names `issuer`: `gate` decides each `/mcp`
/// request (`None`: answered as [`mcp_answer`]); the default gate is "a Bearer token or 401".
fn serve_mcp(
    fake: &mut Fake,
    issuer: &str,
    gate: impl Fn(&Req) -> Option<Resp> + Send + Sync + 'static,
) {
    let (resource, issuer) = (fake.url("/mcp"), issuer.to_owned());
    fake.serve(move |req| match req.path() {
        PRM_PATH => prm(&resource, &issuer),
        "/mcp" => gate(req).unwrap_or_else(|| mcp_answer(req)),
        _ => Resp::new(404),
    });
}

/// "A Bearer token, else 401 naming the PRM."
fn bearer_gate(prm_url: String) -> impl Fn(&Req) -> Option<Resp> + Send + Sync + 'static {
    move |req: &Req| match req.header("authorization") {
        Some(a) if a.starts_with("Bearer ") => None,
        _ => Some(unauthorized(&prm_url)),
    }
}

/// Whether `req` is the `notifications/initialized` POST. The tests that revoke a token right
/// after the opening let it through: it may still be under way then, and a 401 to it runs a flow
/// of its own (T14), which is not what they count.
fn initialized(req: &Req) -> bool {
    req.json()["method"] == "notifications/initialized"
}

/// The access token a request carries.
fn bearer(req: &Req) -> Option<String> {
    req.header("authorization")
        .and_then(|a| a.strip_prefix("Bearer "))
        .map(str::to_owned)
}

/// An authorization server's metadata for `origin`, changed by `tweak`.
fn as_metadata(origin: &str, tweak: &dyn Fn(&mut Value)) -> Value {
    let mut md = json!({
        "issuer": origin,
        "authorization_endpoint": format!("{origin}/authorize"),
        "token_endpoint": format!("{origin}/token"),
        "registration_endpoint": format!("{origin}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
    });
    tweak(&mut md);
    md
}

/// The tokens a fake token endpoint hands out, numbered from 1.
fn tokens(n: usize, refresh: bool) -> Value {
    let mut t = json!({
        "access_token": format!("TOPSECRET-ACCESS-{n}"),
        "token_type": "Bearer",
        "expires_in": 3600,
    });
    if refresh {
        t["refresh_token"] = json!(format!("TOPSECRET-REFRESH-{n}"));
    }
    t
}

/// An authorization server on `fake`: metadata (changed by `tweak`), registration (a public
/// client), and a token endpoint answered by `token` (given the request and how many token
/// requests came before it, from 1).
fn serve_as(
    fake: &mut Fake,
    tweak: impl Fn(&mut Value) + Send + Sync + 'static,
    token: impl Fn(&Req, usize) -> Resp + Send + Sync + 'static,
) {
    let origin = fake.origin.clone();
    let count = AtomicUsize::new(0);
    fake.serve(move |req| match (req.method.as_str(), req.path()) {
        ("GET", "/.well-known/oauth-authorization-server")
        | ("GET", "/.well-known/openid-configuration") => {
            Resp::json(200, as_metadata(&origin, &tweak))
        }
        ("POST", "/register") => Resp::json(
            201,
            json!({"client_id": "client-1", "token_endpoint_auth_method": "none"}),
        ),
        ("POST", "/token") => token(req, count.fetch_add(1, Ordering::SeqCst) + 1),
        _ => Resp::new(404),
    });
}

/// The usual token endpoint: numbered tokens with refresh tokens.
fn good_tokens(_: &Req, n: usize) -> Resp {
    Resp::json(200, tokens(n, true))
}

/// A person who approves at once: the redirect back carries a code and the request's `state`
/// (the fake servers do not advertise `iss`), with every request kept and counted.
#[derive(Clone, Default)]
struct Person {
    seen: Arc<Mutex<Vec<AuthorizationRequest>>>,
}

impl Person {
    fn authorize(&self) -> Authorize {
        let seen = self.seen.clone();
        Authorize::callback(move |request: AuthorizationRequest| {
            seen.lock().unwrap().push(request.clone());
            let n = seen.lock().unwrap().len();
            async move {
                let state = query(&request.url, "state").ok_or("no state")?;
                Ok(format!(
                    "{}?code=TOPSECRET-CODE-{n}&state={state}",
                    request.redirect_uri
                ))
            }
        })
    }
    fn calls(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
    fn scopes(&self) -> Vec<Option<String>> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|r| query(&r.url, "scope"))
            .collect()
    }
}

fn query(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn oauth(person: &Person) -> OAuthConfig {
    let mut config = OAuthConfig::new(person.authorize());
    config.request_timeout = Duration::from_secs(2);
    config
}

fn client(mcp: &str, oauth: OAuthConfig) -> Client {
    let mut config = ClientConfig::default();
    config.session.era = EraChoice::Legacy;
    Client::with_config(
        HttpTransport::new(HttpTransportConfig::new(mcp).oauth(oauth)).unwrap(),
        config,
    )
}

/// Runs `f` on smol, failing the test past `limit` (nothing here may hang).
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

/// Opens a session expecting the OAuth failure `expected` (within 20 s); gives the error.
fn opening_fails(mcp: &str, oauth: OAuthConfig, expected: fn(&AuthError) -> bool) -> Error {
    let c = client(mcp, oauth);
    let error = within(Duration::from_secs(20), async {
        let e = c.initialize().await.expect_err("the opening must fail");
        let _ = c.close().await;
        e
    });
    match &error {
        Error::Auth(e) if expected(e) => {}
        other => panic!("unexpected: {other:?} ({other})"),
    }
    // What happened is the source, and the error's own message does not repeat it: a chain
    // says it once.
    let cause = std::error::Error::source(&error).expect("the AuthError is the source");
    assert!(!error.to_string().contains(&cause.to_string()), "{error}");
    assert_no_secret(&error);
    error
}

/// Neither the message nor the `Debug` of `error` shows a secret.
fn assert_no_secret(error: &impl std::fmt::Debug) {
    let debug = format!("{error:?}");
    assert!(!debug.contains("TOPSECRET"), "a secret in {debug}");
}

fn assert_no_secret_display(error: &Error) {
    let shown = shown(error);
    assert!(!shown.contains("TOPSECRET"), "a secret in {shown}");
}

/// `error` and its causes, one after the other, as an application that prints the chain
/// shows them.
fn shown(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}

// ---------------------------------------------------------------------------------------------
// The tests.

/// (a) After authorizing, the MCP server redirects to another origin: the core refuses the
/// cross-origin redirect, and the other origin never sees the request (so never the token).
/// The same-origin control shows the fake would have recorded it.
#[test]
fn a_redirect_never_takes_the_token_to_another_origin() {
    for same_origin in [false, true] {
        let mut other = Fake::new();
        other.serve(mcp_answer);
        let mut auth = Fake::new();
        serve_as(&mut auth, |_| {}, good_tokens);
        let mut mcp = Fake::new();
        let prm_url = mcp.url(PRM_PATH);
        let moved = if same_origin {
            mcp.url("/moved")
        } else {
            other.url("/mcp")
        };
        let resource = mcp.url("/mcp");
        let issuer = auth.origin.clone();
        mcp.serve(move |req| match req.path() {
            PRM_PATH => prm(&resource, &issuer),
            "/moved" => mcp_answer(req),
            "/mcp" if bearer(req).is_none() => unauthorized(&prm_url),
            "/mcp" => Resp::new(307).header("Location", &moved),
            _ => Resp::new(404),
        });
        let person = Person::default();
        let c = client(&mcp.url("/mcp"), oauth(&person));
        let opened = within(Duration::from_secs(20), async {
            let r = c.initialize().await;
            let _ = c.close().await;
            r
        });
        assert_eq!(person.calls(), 1, "authorized once");
        let with_token = |log: Vec<Req>| {
            log.iter()
                .filter(|r| bearer(r).as_deref() == Some("TOPSECRET-ACCESS-1"))
                .count()
        };
        if same_origin {
            opened.unwrap();
            let moved: Vec<Req> = mcp
                .log()
                .into_iter()
                .filter(|r| r.path() == "/moved")
                .collect();
            assert!(
                with_token(moved) >= 1,
                "the same-origin redirect is followed"
            );
        } else {
            let e = opened.expect_err("a cross-origin redirect is refused");
            assert!(
                matches!(&e, Error::HttpProtocol(_)) && e.to_string().contains("origin"),
                "{e:?}: {e}"
            );
            assert_no_secret(&e);
            assert!(other.log().is_empty(), "{:?}", other.log());
        }
        assert_eq!(with_token(other.log()), 0);
    }
}

/// (a') The flow's own requests follow no redirect either: a PRM or a token endpoint that
/// answers 307 to another origin gets nothing sent there.
#[test]
fn the_flow_follows_no_redirect() {
    // The token endpoint redirects: the code and verifier stay here.
    let mut other = Fake::new();
    other.serve(|_| Resp::json(200, tokens(99, true)));
    let elsewhere = other.url("/token");
    let mut auth = Fake::new();
    serve_as(
        &mut auth,
        |_| {},
        move |_, _| Resp::new(307).header("Location", &elsewhere),
    );
    let mut mcp = Fake::new();
    let gate = bearer_gate(mcp.url(PRM_PATH));
    serve_mcp(&mut mcp, &auth.origin, gate);
    let person = Person::default();
    opening_fails(&mcp.url("/mcp"), oauth(&person), |e| {
        matches!(e, AuthError::Token { status: 307, .. })
    });
    assert_eq!(auth.count("POST", "/token"), 1);
    assert!(other.log().is_empty(), "{:?}", other.log());

    // The PRM the challenge names redirects elsewhere: not followed, so there is no PRM (the
    // 2025-03-26 fallbacks are off here, so that the flow ends there).
    let mut other = Fake::new();
    other.serve(|_| Resp::new(500));
    let mut mcp = Fake::new();
    let prm_url = mcp.url(PRM_PATH);
    let elsewhere = other.url(PRM_PATH);
    mcp.serve(move |req| match req.path() {
        PRM_PATH => Resp::new(307).header("Location", &elsewhere),
        "/mcp" if bearer(req).is_none() => unauthorized(&prm_url),
        "/mcp" => mcp_answer(req),
        _ => Resp::new(404),
    });
    let person = Person::default();
    let mut config = oauth(&person);
    config.options.legacy_fallbacks = false;
    opening_fails(&mcp.url("/mcp"), config, |e| {
        matches!(e, AuthError::NoResourceMetadata { .. })
    });
    assert!(other.log().is_empty(), "{:?}", other.log());
    assert_eq!(person.calls(), 0);
}

/// (b) The 401's `resource_metadata` points at another origin whose PRM names another
/// resource: refused before anything is authorized; its authorization server is never asked.
#[test]
fn a_resource_mismatch_is_refused_before_authorizing() {
    let mut evil_as = Fake::new();
    serve_as(&mut evil_as, |_| {}, good_tokens);
    let mut evil = Fake::new();
    let (evil_resource, evil_issuer) = (evil.url("/mcp"), evil_as.origin.clone());
    evil.serve(move |req| match req.path() {
        PRM_PATH => prm(&evil_resource, &evil_issuer),
        _ => Resp::new(404),
    });
    let mut mcp = Fake::new();
    let evil_prm = evil.url(PRM_PATH);
    mcp.serve(move |req| match bearer(req) {
        None => unauthorized(&evil_prm),
        Some(_) => mcp_answer(req),
    });
    let person = Person::default();
    let error = opening_fails(&mcp.url("/mcp"), oauth(&person), |e| {
        matches!(e, AuthError::ResourceMismatch { .. })
    });
    let shown = shown(&error);
    assert!(shown.contains(&evil.url("/mcp")), "{shown}");
    assert_eq!(evil.count("GET", PRM_PATH), 1, "the document was read");
    assert!(evil_as.log().is_empty(), "{:?}", evil_as.log());
    assert_eq!(person.calls(), 0);
    // The MCP server saw only the unauthenticated initialize.
    assert!(mcp.log().iter().all(|r| bearer(r).is_none()));
}

/// (c) The authorization server's metadata names another issuer: not used (both well-known
/// documents are tried, then refused with the reason); its token endpoint never hears from us.
#[test]
fn metadata_naming_another_issuer_is_not_used() {
    let mut sink = Fake::new();
    sink.serve(|_| Resp::json(200, tokens(1, true)));
    let mut auth = Fake::new();
    let sink_origin = sink.origin.clone();
    serve_as(
        &mut auth,
        move |md| {
            md["issuer"] = json!("https://evil.example");
            for e in [
                "authorization_endpoint",
                "token_endpoint",
                "registration_endpoint",
            ] {
                md[e] = json!(format!("{sink_origin}/{e}"));
            }
        },
        good_tokens,
    );
    let mut mcp = Fake::new();
    let gate = bearer_gate(mcp.url(PRM_PATH));
    serve_mcp(&mut mcp, &auth.origin, gate);
    let person = Person::default();
    let error = opening_fails(&mcp.url("/mcp"), oauth(&person), |e| {
        matches!(e, AuthError::NoServerMetadata { reason: Some(r), tried, .. }
            if r.contains("https://evil.example") && tried.len() == 2)
    });
    assert!(
        shown(&error).contains("names the issuer"),
        "{}",
        shown(&error)
    );
    assert_eq!(
        auth.count("GET", "/.well-known/oauth-authorization-server"),
        1
    );
    assert_eq!(auth.count("GET", "/.well-known/openid-configuration"), 1);
    assert!(sink.log().is_empty(), "{:?}", sink.log());
    assert_eq!(person.calls(), 0);
}

/// (d) No `code_challenge_methods_supported`: PKCE is not supported, the flow refuses to go on.
#[test]
fn no_pkce_support_is_refused() {
    for methods in [None, Some(json!(["plain"]))] {
        let mut auth = Fake::new();
        let m = methods.clone();
        serve_as(
            &mut auth,
            move |md| match &m {
                None => drop(
                    md.as_object_mut()
                        .unwrap()
                        .remove("code_challenge_methods_supported"),
                ),
                Some(v) => md["code_challenge_methods_supported"] = v.clone(),
            },
            good_tokens,
        );
        let mut mcp = Fake::new();
        let gate = bearer_gate(mcp.url(PRM_PATH));
        serve_mcp(&mut mcp, &auth.origin, gate);
        let person = Person::default();
        opening_fails(&mcp.url("/mcp"), oauth(&person), |e| {
            matches!(e, AuthError::PkceUnsupported { .. })
        });
        assert_eq!(person.calls(), 0, "{methods:?}");
        assert!(
            auth.log().iter().all(|r| r.method == "GET"),
            "only metadata was read: {:?}",
            auth.log()
        );
    }
}

/// (e) An endpoint on plain HTTP to another host: refused before anything goes there (or to
/// any other endpoint of that server); an issuer on plain HTTP to another host is refused
/// before its metadata is fetched.
#[test]
fn plain_http_to_another_host_is_refused() {
    for endpoint in [
        "token_endpoint",
        "authorization_endpoint",
        "registration_endpoint",
    ] {
        let mut auth = Fake::new();
        serve_as(
            &mut auth,
            move |md| md[endpoint] = json!("http://example.com/oauth"),
            good_tokens,
        );
        let mut mcp = Fake::new();
        let gate = bearer_gate(mcp.url(PRM_PATH));
        serve_mcp(&mut mcp, &auth.origin, gate);
        let person = Person::default();
        let error = opening_fails(
            &mcp.url("/mcp"),
            oauth(&person),
            |e| matches!(e, AuthError::InsecureEndpoint { url, .. } if url == "http://example.com/oauth"),
        );
        assert!(shown(&error).contains("neither HTTPS"), "{}", shown(&error));
        assert_eq!(person.calls(), 0);
        assert!(
            auth.log().iter().all(|r| r.method == "GET"),
            "{endpoint}: {:?}",
            auth.log()
        );
    }
    // The PRM names an authorization server on plain HTTP elsewhere: its metadata would come
    // over plain HTTP, so it is not fetched.
    let mut mcp = Fake::new();
    let gate = bearer_gate(mcp.url(PRM_PATH));
    serve_mcp(&mut mcp, "http://auth.invalid", gate);
    let person = Person::default();
    let started = Instant::now();
    opening_fails(
        &mcp.url("/mcp"),
        oauth(&person),
        |e| matches!(e, AuthError::InsecureEndpoint { issuer, .. } if issuer == "http://auth.invalid"),
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(person.calls(), 0);
}

/// (f) A broken token endpoint — junk, a body past 1 MiB, another token type, a 500, no answer —
/// fails the request with a clear authorization error, soon, without a panic.
#[test]
fn broken_token_endpoints_fail_clearly_and_soon() {
    type Check = fn(&AuthError) -> bool;
    let huge = {
        // A valid answer, padded past 1 MiB.
        let mut t = tokens(1, true).to_string().into_bytes();
        t.pop();
        t.extend_from_slice(format!(r#","padding":"{}"}}"#, "x".repeat(1 << 21)).as_bytes());
        t
    };
    let cases: Vec<(&str, Resp, Check)> = vec![
        (
            "junk",
            Resp::raw(200, "application/json", b"<html>not json</html>".to_vec()),
            |e| matches!(e, AuthError::InvalidDocument { .. }),
        ),
        ("huge", Resp::raw(200, "application/json", huge), |e| {
            e.to_string().contains("larger than")
        }),
        (
            "mac",
            Resp::json(
                200,
                json!({"access_token": "TOPSECRET-ACCESS-1", "token_type": "mac"}),
            ),
            |e| {
                matches!(e, AuthError::InvalidDocument { .. })
                    && e.to_string().contains("token_type")
            },
        ),
        (
            "no access token",
            Resp::json(200, json!({"token_type": "Bearer"})),
            |e| matches!(e, AuthError::InvalidDocument { .. }),
        ),
        (
            "500",
            Resp::raw(500, "text/html", b"<h1>oops</h1>".to_vec()),
            |e| matches!(e, AuthError::Token { status: 500, .. }),
        ),
        (
            "400 invalid_grant",
            Resp::json(
                400,
                json!({"error": "invalid_grant", "error_description": "code used"}),
            ),
            |e| matches!(e, AuthError::Token { status: 400, error: Some(g), .. } if g == "invalid_grant"),
        ),
        (
            "stalled",
            Resp {
                delay: Some(Duration::from_secs(30)),
                ..Resp::json(200, tokens(1, true))
            },
            |e| matches!(e, AuthError::Transport { message, .. } if message.contains("no answer within 2 s")),
        ),
    ];
    for (name, answer, check) in cases {
        let answer = Mutex::new(Some(answer));
        let mut auth = Fake::new();
        serve_as(
            &mut auth,
            |_| {},
            move |_, _| {
                answer
                    .lock()
                    .unwrap()
                    .take()
                    .unwrap_or_else(|| Resp::new(599))
            },
        );
        let mut mcp = Fake::new();
        let gate = bearer_gate(mcp.url(PRM_PATH));
        serve_mcp(&mut mcp, &auth.origin, gate);
        let person = Person::default();
        let started = Instant::now();
        let error = opening_fails(&mcp.url("/mcp"), oauth(&person), check);
        eprintln!("{name}: {error} ({:?})", started.elapsed());
        assert!(started.elapsed() < Duration::from_secs(10), "{name}");
        assert_eq!(auth.count("POST", "/token"), 1, "{name}: one token request");
        assert_eq!(person.calls(), 1, "{name}");
        assert!(
            mcp.log().iter().all(|r| bearer(r).is_none()),
            "{name}: no token was sent"
        );
    }
}

/// (g) The MCP server refuses every token: one flow per request, then `Rejected`. With a token
/// that worked until the server revoked it, that one flow is a refresh (no person), and the
/// request is sent once more with the refreshed token before giving up.
#[test]
fn a_server_that_keeps_refusing_gets_one_reauthorization() {
    // Every token refused from the start.
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, good_tokens);
    let mut mcp = Fake::new();
    let prm_url = mcp.url(PRM_PATH);
    serve_mcp(&mut mcp, &auth.origin, move |_| {
        Some(unauthorized(&prm_url))
    });
    let person = Person::default();
    let error = opening_fails(&mcp.url("/mcp"), oauth(&person), |e| {
        matches!(e, AuthError::Rejected { .. })
    });
    assert!(
        shown(&error).contains("refused the new token"),
        "{}",
        shown(&error)
    );
    assert_eq!(person.calls(), 1);
    assert_eq!(auth.count("POST", "/token"), 1);
    let posts: Vec<Option<String>> = mcp
        .log()
        .iter()
        .filter(|r| r.path() == "/mcp")
        .map(bearer)
        .collect();
    assert_eq!(posts, [None, Some("TOPSECRET-ACCESS-1".into())]);

    // A token that worked, then revoked: the next request refreshes once, then gives up.
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, good_tokens);
    let revoked = Arc::new(AtomicBool::new(false));
    let mut mcp = Fake::new();
    let prm_url = mcp.url(PRM_PATH);
    let r = revoked.clone();
    serve_mcp(&mut mcp, &auth.origin, move |req| {
        (bearer(req).is_none() || (r.load(Ordering::SeqCst) && !initialized(req)))
            .then(|| unauthorized(&prm_url))
    });
    let person = Person::default();
    let c = client(&mcp.url("/mcp"), oauth(&person));
    let error = within(Duration::from_secs(20), async {
        c.initialize().await.unwrap();
        revoked.store(true, Ordering::SeqCst);
        let e = c.call_tool("echo", json!({})).await.expect_err("refused");
        let _ = c.close().await;
        e
    });
    assert!(
        matches!(&error, Error::Auth(AuthError::Rejected { .. })),
        "{error:?}"
    );
    assert_no_secret(&error);
    assert_eq!(person.calls(), 1, "the refresh needed nobody");
    let grants: Vec<Option<String>> = auth
        .log()
        .iter()
        .filter(|r| r.path() == "/token")
        .map(|r| r.form("grant_type"))
        .collect();
    assert_eq!(
        grants,
        [
            Some("authorization_code".into()),
            Some("refresh_token".into())
        ]
    );
    let refresh = auth
        .log()
        .into_iter()
        .filter(|r| r.path() == "/token")
        .nth(1)
        .unwrap();
    assert_eq!(
        refresh.form("refresh_token").as_deref(),
        Some("TOPSECRET-REFRESH-1")
    );
    let calls: Vec<Option<String>> = mcp
        .log()
        .iter()
        .filter(|r| r.json()["method"] == "tools/call")
        .map(bearer)
        .collect();
    assert_eq!(
        calls,
        [
            Some("TOPSECRET-ACCESS-1".into()),
            Some("TOPSECRET-ACCESS-2".into())
        ]
    );
}

/// (h) `403 insufficient_scope` every time, each naming one more scope: at most 3
/// authorizations for the request, each asking for the union so far; then `InsufficientScope`.
#[test]
fn step_up_stops_after_three_authorizations_asking_for_the_union() {
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, good_tokens);
    let mut mcp = Fake::new();
    let prm_url = mcp.url(PRM_PATH);
    let refusals = AtomicUsize::new(0);
    serve_mcp(&mut mcp, &auth.origin, move |req| {
        if bearer(req).is_none() {
            return Some(unauthorized(&prm_url));
        }
        let n = refusals.fetch_add(1, Ordering::SeqCst) + 1;
        Some(Resp::json(403, json!({"error": "insufficient_scope"})).header(
            "WWW-Authenticate",
            &format!(
                r#"Bearer error="insufficient_scope", scope="mcp:step{n}", resource_metadata="{prm_url}""#
            ),
        ))
    });
    let person = Person::default();
    let error = opening_fails(
        &mcp.url("/mcp"),
        oauth(&person),
        |e| matches!(e, AuthError::InsufficientScope { attempts: 3, scope, .. } if scope == "mcp:step3"),
    );
    eprintln!("{error}");
    assert_eq!(person.calls(), 3);
    assert_eq!(
        person.scopes(),
        [
            Some("mcp:tools".to_owned()),
            Some("mcp:tools mcp:step1".to_owned()),
            Some("mcp:tools mcp:step1 mcp:step2".to_owned()),
        ]
    );
    assert_eq!(auth.count("POST", "/token"), 3);
    assert_eq!(
        auth.count("POST", "/register"),
        1,
        "the client is registered once"
    );
    // The MCP server saw the three tokens, once each.
    let sent: Vec<Option<String>> = mcp
        .log()
        .iter()
        .filter(|r| r.path() == "/mcp")
        .map(bearer)
        .collect();
    assert_eq!(
        sent,
        [
            None,
            Some("TOPSECRET-ACCESS-1".into()),
            Some("TOPSECRET-ACCESS-2".into()),
            Some("TOPSECRET-ACCESS-3".into()),
        ]
    );
}

/// (i) No secret — access token, refresh token, client secret, code — in any error's message or
/// `Debug`, nor in the `Debug` of the settings or the stored credentials.
#[test]
fn no_secret_in_errors_or_debug() {
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, good_tokens);
    let mut mcp = Fake::new();
    let prm_url = mcp.url(PRM_PATH);
    serve_mcp(&mut mcp, &auth.origin, move |_| {
        Some(unauthorized(&prm_url))
    });
    let person = Person::default();
    let store = Arc::new(mcp_connect::MemoryStore::new());
    let mut config = oauth(&person);
    config.store = store.clone();
    config.options.pre_registered = Some(PreRegistered {
        client_id: "client-pre".into(),
        client_secret: Some(Secret::new("TOPSECRET-CLIENT-SECRET")),
        private_key: None,
        auth_method: None,
        issuer: Some(auth.origin.clone()),
    });
    let transport_config = HttpTransportConfig::new(mcp.url("/mcp")).oauth(config.clone());
    for shown in [format!("{config:?}"), format!("{transport_config:?}")] {
        assert!(!shown.contains("TOPSECRET"), "{shown}");
        assert!(
            shown.contains("client-pre"),
            "the Debug shows the settings: {shown}"
        );
    }
    let error = opening_fails(&mcp.url("/mcp"), config, |e| {
        matches!(e, AuthError::Rejected { .. })
    });
    assert_no_secret_display(&error);
    // The secrets were really used: sent where they belong, and stored.
    let token = auth
        .log()
        .into_iter()
        .find(|r| r.path() == "/token")
        .unwrap();
    assert!(token
        .header("authorization")
        .is_some_and(|a| a.starts_with("Basic ")));
    assert_eq!(token.form("code").as_deref(), Some("TOPSECRET-CODE-1"));
    let stored =
        mcp_connect::TokenStore::load(&*store, &auth.origin, &mcp.url("/mcp")).expect("stored");
    assert_eq!(stored.tokens.access_token.expose(), "TOPSECRET-ACCESS-1");
    // The application's own secret is not part of what is stored.
    assert_eq!(stored.client.client_secret, None);
    assert_no_secret(&stored);
    // A refusal at the token endpoint and a bad redirect back, with the code in flight.
    let mut auth = Fake::new();
    serve_as(
        &mut auth,
        |_| {},
        |_, _| Resp::json(400, json!({"error": "invalid_grant"})),
    );
    let mut mcp = Fake::new();
    let gate = bearer_gate(mcp.url(PRM_PATH));
    serve_mcp(&mut mcp, &auth.origin, gate);
    let person = Person::default();
    let e = opening_fails(&mcp.url("/mcp"), oauth(&person), |e| {
        matches!(e, AuthError::Token { .. })
    });
    assert_no_secret_display(&e);
    let mut config = OAuthConfig::new(Authorize::callback(|r: AuthorizationRequest| async move {
        Ok(format!(
            "{}?code=TOPSECRET-CODE-X&state=wrong",
            r.redirect_uri
        ))
    }));
    config.request_timeout = Duration::from_secs(2);
    let e = opening_fails(&mcp.url("/mcp"), config, |e| {
        matches!(e, AuthError::StateMismatch)
    });
    assert_no_secret_display(&e);
    let mut config = OAuthConfig::new(Authorize::callback(|_: AuthorizationRequest| async move {
        Ok("http://127.0.0.1:9/elsewhere?code=TOPSECRET-CODE-Y".to_owned())
    }));
    config.request_timeout = Duration::from_secs(2);
    let e = opening_fails(&mcp.url("/mcp"), config, |e| {
        matches!(e, AuthError::BadRedirect(_))
    });
    assert_no_secret_display(&e);
}

/// (j) Concurrent requests that all meet a `401` run one flow: the person is asked once, the
/// token endpoint hit once, and every request succeeds with the new token.
#[test]
fn concurrent_401s_run_one_flow() {
    for refresh in [false, true] {
        let mut auth = Fake::new();
        serve_as(
            &mut auth,
            |_| {},
            move |_, n| {
                // Slow enough that the requests pile up behind the flow.
                std::thread::sleep(Duration::from_millis(200));
                Resp::json(200, tokens(n, refresh))
            },
        );
        let mut mcp = Fake::new();
        let prm_url = mcp.url(PRM_PATH);
        // Only the newest token is good: after the test revokes the first, every request
        // carrying it meets a 401.
        let good = Arc::new(Mutex::new(String::new()));
        let g = good.clone();
        serve_mcp(&mut mcp, &auth.origin, move |req| {
            let good = g.lock().unwrap().clone();
            match bearer(req) {
                Some(t) if good.is_empty() || t == good || initialized(req) => None,
                _ => Some(unauthorized(&prm_url)),
            }
        });
        let person = Person::default();
        let c = client(&mcp.url("/mcp"), oauth(&person));
        let results = within(Duration::from_secs(30), async {
            c.initialize().await.unwrap();
            *good.lock().unwrap() = "TOPSECRET-ACCESS-2".into();
            let calls = (0..8).map(|_| c.call_tool("echo", json!({})));
            let results = mcp_testkit::join_all(calls.collect()).await;
            let _ = c.close().await;
            results
        });
        for r in &results {
            assert_eq!(
                r.as_ref().map(|r| r.text()).ok(),
                Some("ok".into()),
                "{r:?}"
            );
        }
        let expected_calls = if refresh { 1 } else { 2 };
        assert_eq!(person.calls(), expected_calls, "refresh: {refresh}");
        assert_eq!(auth.count("POST", "/token"), 2, "refresh: {refresh}");
        // One discovery for the opening, one for the eight 401s (a flow per request would
        // read the documents again, even if it then found the new token in the store).
        assert_eq!(mcp.count("GET", PRM_PATH), 2, "refresh: {refresh}");
        assert_eq!(
            auth.count("GET", "/.well-known/oauth-authorization-server"),
            2,
            "refresh: {refresh}"
        );
        // Each tools/call was answered once, with the second token, after at most one refusal
        // of the first.
        let calls: Vec<Option<String>> = mcp
            .log()
            .iter()
            .filter(|r| r.json()["method"] == "tools/call")
            .map(bearer)
            .collect();
        let count = |t: &str| calls.iter().filter(|c| c.as_deref() == Some(t)).count();
        assert_eq!(count("TOPSECRET-ACCESS-2"), 8, "{calls:?}");
        let first = count("TOPSECRET-ACCESS-1");
        assert!((1..=8).contains(&first), "{calls:?}");
        assert_eq!(calls.len(), 8 + first, "{calls:?}");
    }
}

/// (j') When the one flow for concurrent `401`s fails (the person refuses), the requests that
/// waited for it fail with its error: the person is not asked again once per waiting request.
#[test]
fn concurrent_401s_share_a_failed_flow() {
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, |_, n| Resp::json(200, tokens(n, false)));
    let mut mcp = Fake::new();
    let prm_url = mcp.url(PRM_PATH);
    let revoked = Arc::new(AtomicBool::new(false));
    let r = revoked.clone();
    serve_mcp(&mut mcp, &auth.origin, move |req| {
        (bearer(req).is_none() || (r.load(Ordering::SeqCst) && !initialized(req)))
            .then(|| unauthorized(&prm_url))
    });
    // Approves the first time; then takes a while and refuses.
    let asked = Arc::new(AtomicUsize::new(0));
    let a = asked.clone();
    let mut config = OAuthConfig::new(Authorize::callback(move |r: AuthorizationRequest| {
        let n = a.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            if n > 1 {
                smol::Timer::after(Duration::from_millis(300)).await;
                return Err("the person said no".to_owned());
            }
            let state = query(&r.url, "state").ok_or("no state")?;
            Ok(format!("{}?code=c&state={state}", r.redirect_uri))
        }
    }));
    config.request_timeout = Duration::from_secs(2);
    let c = client(&mcp.url("/mcp"), config);
    let results = within(Duration::from_secs(30), async {
        c.initialize().await.unwrap();
        revoked.store(true, Ordering::SeqCst);
        let calls = (0..8).map(|_| c.call_tool("echo", json!({})));
        let results = mcp_testkit::join_all(calls.collect()).await;
        let _ = c.close().await;
        results
    });
    for r in &results {
        assert!(
            matches!(r, Err(Error::Auth(AuthError::NotAuthorized { reason, .. })) if reason == "the person said no"),
            "{r:?}"
        );
    }
    assert_eq!(
        asked.load(Ordering::SeqCst),
        2,
        "asked once for the eight requests"
    );
}

/// Up front (`OAuthConfig::upfront`): the flow runs before the first request, so the MCP
/// server never sees a request without a token; once, however many requests follow.
#[test]
fn upfront_authorization_sends_no_request_without_a_token() {
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, good_tokens);
    let mut mcp = Fake::new();
    let prm_url = mcp.url(PRM_PATH);
    let issuer = auth.origin.clone();
    serve_mcp(&mut mcp, &issuer, bearer_gate(prm_url));
    let person = Person::default();
    let mut config = oauth(&person);
    config.upfront = true;
    let c = client(&mcp.url("/mcp"), config);
    within(Duration::from_secs(20), async {
        c.initialize().await.unwrap();
        c.list_tools().await.unwrap();
        c.close().await.unwrap();
    });
    assert_eq!(person.calls(), 1);
    let posts: Vec<Req> = mcp
        .log()
        .into_iter()
        .filter(|r| r.path() == "/mcp" && r.method == "POST")
        .collect();
    assert!(posts.len() >= 3, "{posts:?}");
    assert!(
        posts
            .iter()
            .all(|r| bearer(r).as_deref() == Some("TOPSECRET-ACCESS-1")),
        "a request went without the token: {:?}",
        posts.iter().map(bearer).collect::<Vec<_>>()
    );
    assert_eq!(auth.count("POST", "/token"), 1);
}

/// A client whose requests time out after `timeout`, in `era`.
fn client_timing_out(mcp: &str, oauth: OAuthConfig, era: EraChoice, timeout: Duration) -> Client {
    let mut config = ClientConfig::default();
    config.session.era = era;
    config.session.default_timeout = Some(timeout);
    Client::with_config(
        HttpTransport::new(HttpTransportConfig::new(mcp).oauth(oauth)).unwrap(),
        config,
    )
}

/// (T3) A person who takes longer to log in than the request timeout (1 s here, 60 s by
/// default, against minutes of single sign-on): the requests waiting for the flow do not time
/// out meanwhile, and their timeouts start again when it ends. The era probe meets the first
/// `401`: its fallback to `initialize` waits for the login too (so no second request goes out
/// without a token), and the opening succeeds. Later, two calls meet a `401` at once and share
/// one slow flow: both succeed.
#[test]
fn a_person_slower_than_the_request_timeout_still_authorizes() {
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, |_, n| Resp::json(200, tokens(n, false)));
    let mut mcp = Fake::new();
    let prm_url = mcp.url(PRM_PATH);
    // Only the newest token is good: after the test revokes the first, it meets a 401 (but for
    // the opening's `initialized`, which may still be under way then: see `initialized`).
    let good = Arc::new(Mutex::new(String::new()));
    let g = good.clone();
    serve_mcp(&mut mcp, &auth.origin, move |req| {
        let good = g.lock().unwrap().clone();
        match bearer(req) {
            Some(t) if good.is_empty() || t == good || initialized(req) => None,
            _ => Some(unauthorized(&prm_url)),
        }
    });
    let timeout = Duration::from_secs(1);
    let login = Duration::from_secs(3);
    let logins = Arc::new(Mutex::new(Vec::new()));
    let l = logins.clone();
    let person = Authorize::callback(move |request: AuthorizationRequest| {
        let logins = l.clone();
        async move {
            // The person takes their time: the behaviour under test.
            let started = Instant::now();
            smol::Timer::after(login).await;
            logins.lock().unwrap().push(started.elapsed());
            let state = query(&request.url, "state").ok_or("no state")?;
            Ok(format!(
                "{}?code=TOPSECRET-CODE&state={state}",
                request.redirect_uri
            ))
        }
    });
    let mut config = OAuthConfig::new(person);
    config.request_timeout = Duration::from_secs(5);
    let c = client_timing_out(&mcp.url("/mcp"), config, EraChoice::Auto, timeout);
    let (opened, calls) = within(Duration::from_secs(60), async {
        let opened = c.initialize().await.map(drop);
        *good.lock().unwrap() = "TOPSECRET-ACCESS-2".into();
        let calls = mcp_testkit::join_all(vec![
            c.call_tool("echo", json!({})),
            c.call_tool("echo", json!({})),
        ])
        .await;
        let _ = c.close().await;
        (opened, calls)
    });
    opened.expect("the opening waits for the person");
    assert_eq!(c.era(), Some(mcp_connect::proto::Era::Legacy));
    for r in &calls {
        assert_eq!(
            r.as_ref().map(|r| r.text()).ok(),
            Some("ok".into()),
            "{r:?}"
        );
    }
    let logins = logins.lock().unwrap().clone();
    assert_eq!(
        logins.len(),
        2,
        "one login for the opening, one for both calls"
    );
    assert!(
        logins.iter().all(|l| *l >= login && *l > timeout),
        "{logins:?}"
    );
    // Only the probe went without a token: `initialize` was not sent while the person logged
    // in (the probe's fallback waited too).
    let untokened: Vec<Value> = mcp
        .log()
        .iter()
        .filter(|r| r.method == "POST" && r.path() == "/mcp" && bearer(r).is_none())
        .map(|r| r.json()["method"].clone())
        .collect();
    assert_eq!(untokened, vec![json!("server/discover")]);
}

/// (T3) A person who never comes back: the flow fails with the browser flow's own timeout (2 s),
/// not with the request's (1 s, which the flow outlasts).
#[test]
fn a_person_who_never_comes_back_fails_with_the_authorization_timeout() {
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, good_tokens);
    let mut mcp = Fake::new();
    let prm_url = mcp.url(PRM_PATH);
    let issuer = auth.origin.clone();
    serve_mcp(&mut mcp, &issuer, bearer_gate(prm_url));
    let shown = Arc::new(AtomicUsize::new(0));
    let s = shown.clone();
    let browser = Authorize::Browser {
        open: false,
        // Shown to nobody: nobody comes back.
        show: Arc::new(move |_, _| {
            s.fetch_add(1, Ordering::SeqCst);
        }),
        timeout: Duration::from_secs(2),
    };
    let mut config = OAuthConfig::new(browser);
    config.request_timeout = Duration::from_secs(5);
    let c = client_timing_out(
        &mcp.url("/mcp"),
        config,
        EraChoice::Legacy,
        Duration::from_secs(1),
    );
    let started = Instant::now();
    let error = within(Duration::from_secs(30), async {
        let e = c.initialize().await.expect_err("nobody authorized");
        let _ = c.close().await;
        e
    });
    match &error {
        Error::Auth(AuthError::NotAuthorized { reason, .. }) => {
            assert_eq!(reason, "nobody came back within 2 s", "{error}")
        }
        other => panic!("unexpected: {other:?} ({other})"),
    }
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert_eq!(shown.load(Ordering::SeqCst), 1);
    assert_no_secret(&error);
}

/// (T3) Authorizing up front (`OAuthConfig::upfront`) runs the flow before the first request is
/// sent: that request's timeout (1 s) waits for a person who takes 3 s too.
#[test]
fn an_upfront_login_slower_than_the_request_timeout_still_opens() {
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, good_tokens);
    let mut mcp = Fake::new();
    let prm_url = mcp.url(PRM_PATH);
    let issuer = auth.origin.clone();
    serve_mcp(&mut mcp, &issuer, bearer_gate(prm_url));
    let login = Duration::from_secs(3);
    let took = Arc::new(Mutex::new(None));
    let t = took.clone();
    let person = Authorize::callback(move |request: AuthorizationRequest| {
        let took = t.clone();
        async move {
            let started = Instant::now();
            smol::Timer::after(login).await;
            *took.lock().unwrap() = Some(started.elapsed());
            let state = query(&request.url, "state").ok_or("no state")?;
            Ok(format!(
                "{}?code=TOPSECRET-CODE&state={state}",
                request.redirect_uri
            ))
        }
    });
    let mut config = OAuthConfig::new(person);
    config.request_timeout = Duration::from_secs(5);
    config.upfront = true;
    let timeout = Duration::from_secs(1);
    let c = client_timing_out(&mcp.url("/mcp"), config, EraChoice::Legacy, timeout);
    let listed = within(Duration::from_secs(30), async {
        c.initialize()
            .await
            .expect("the opening waits for the person");
        let tools = c.list_tools().await;
        let _ = c.close().await;
        tools
    });
    assert_eq!(listed.unwrap().len(), 1);
    let took = took.lock().unwrap().expect("the person was asked");
    assert!(took >= login && took > timeout, "{took:?}");
    assert!(
        mcp.log()
            .iter()
            .filter(|r| r.path() == "/mcp" && r.method == "POST")
            .all(|r| bearer(r).is_some()),
        "a request went without the token"
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 16: secrets bound to their issuer (T1), no secret of the user's in the store, fetches
// only where a server may send the client (T2), a redirect listener a local process cannot
// derail (T8).

/// T1: a pre-registered secret without the issuer that issued it goes nowhere — not even a
/// discovery request is made — and with an issuer, to no other authorization server. With the
/// client credentials grant nobody would notice otherwise. A public client (an id alone) still
/// works with the authorization server the MCP server names.
#[test]
fn a_secret_goes_only_to_the_issuer_it_is_bound_to() {
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, good_tokens);
    let mut mcp = Fake::new();
    let gate = bearer_gate(mcp.url(PRM_PATH));
    serve_mcp(&mut mcp, &auth.origin, gate);
    let secret = |issuer: Option<String>| PreRegistered {
        client_id: "real-client".into(),
        client_secret: Some(Secret::new("TOPSECRET-OF-THE-REAL-AS")),
        private_key: None,
        auth_method: None,
        issuer,
    };
    let mut config = OAuthConfig::client_credentials(secret(None));
    config.request_timeout = Duration::from_secs(2);
    let error = opening_fails(
        &mcp.url("/mcp"),
        config,
        |e| matches!(e, AuthError::UnboundSecret { client_id } if client_id == "real-client"),
    );
    assert!(
        shown(&error).contains("give the URL of the authorization server"),
        "{}",
        shown(&error)
    );
    assert!(auth.log().is_empty(), "{:?}", auth.log());
    assert_eq!(mcp.count("GET", PRM_PATH), 0, "discovery ran");
    // The same with the authorization code grant, and with a private key.
    let person = Person::default();
    let mut config = oauth(&person);
    let mut keyed = secret(None);
    keyed.client_secret = None;
    keyed.private_key = Some(Secret::new("TOPSECRET-KEY"));
    config.options.pre_registered = Some(keyed);
    opening_fails(&mcp.url("/mcp"), config, |e| {
        matches!(e, AuthError::UnboundSecret { .. })
    });
    assert!(auth.log().is_empty(), "{:?}", auth.log());
    assert_eq!(person.calls(), 0);
    // Bound to another issuer: the server's is looked at, nothing is sent to its token endpoint.
    let mut config =
        OAuthConfig::client_credentials(secret(Some("https://as.real.example".into())));
    config.request_timeout = Duration::from_secs(2);
    opening_fails(&mcp.url("/mcp"), config, |e| {
        matches!(e, AuthError::WrongIssuer { .. })
    });
    assert!(
        auth.log().iter().all(|r| r.method == "GET"),
        "{:?}",
        auth.log()
    );
    // Bound to this one: it is used there.
    let mut config = OAuthConfig::client_credentials(secret(Some(auth.origin.clone())));
    config.request_timeout = Duration::from_secs(2);
    let c = client(&mcp.url("/mcp"), config);
    within(Duration::from_secs(20), async {
        c.initialize().await.unwrap();
        c.close().await.unwrap();
    });
    let token = auth
        .log()
        .into_iter()
        .find(|r| r.path() == "/token")
        .expect("a token request");
    assert_eq!(
        token.form("grant_type").as_deref(),
        Some("client_credentials")
    );
    assert!(token
        .header("authorization")
        .is_some_and(|a| a.starts_with("Basic ")));
    // A public client with no issuer: the person signs in at the server's authorization server.
    let person = Person::default();
    let mut config = oauth(&person);
    config.options.pre_registered = Some(PreRegistered {
        client_id: "public-client".into(),
        client_secret: None,
        private_key: None,
        auth_method: None,
        issuer: None,
    });
    let c = client(&mcp.url("/mcp"), config);
    within(Duration::from_secs(20), async {
        c.initialize().await.unwrap();
        c.close().await.unwrap();
    });
    assert_eq!(person.calls(), 1);
    let seen = person.seen.lock().unwrap()[0].clone();
    assert_eq!(
        query(&seen.url, "client_id").as_deref(),
        Some("public-client")
    );
}

/// Tokens that are stale at once (`expires_in: 0`), so every request refreshes them first.
fn stale_tokens(_: &Req, n: usize) -> Resp {
    let mut t = tokens(n, true);
    t["expires_in"] = json!(0);
    Resp::json(200, t)
}

/// The store keeps tokens, never the pre-registered secret the application gave: the file
/// never holds it, and each refresh — in this run, and in the next one that finds the stored
/// tokens — authenticates with the secret given again.
#[test]
fn a_pre_registered_secret_is_never_stored_and_is_sent_with_each_refresh() {
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, stale_tokens);
    let mut mcp = Fake::new();
    let gate = bearer_gate(mcp.url(PRM_PATH));
    serve_mcp(&mut mcp, &auth.origin, gate);
    let dir = mcp_testkit::TempDir::new("oauth-store");
    let path = dir.path().join("credentials.json");
    let run = |person: &Person| {
        let mut config = oauth(person);
        config.store = Arc::new(mcp_connect::FileStore::new(&path));
        config.options.pre_registered = Some(PreRegistered {
            client_id: "client-pre".into(),
            client_secret: Some(Secret::new("TOPSECRET-CLIENT-SECRET")),
            private_key: None,
            auth_method: None,
            issuer: Some(auth.origin.clone()),
        });
        let c = client(&mcp.url("/mcp"), config);
        within(Duration::from_secs(30), async {
            c.initialize().await.unwrap();
            c.list_tools().await.unwrap();
            c.close().await.unwrap();
        });
    };
    let basic = {
        use base64::Engine;
        let raw = "client-pre:TOPSECRET-CLIENT-SECRET";
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    };
    let person = Person::default();
    run(&person);
    assert_eq!(person.calls(), 1);
    let kept = std::fs::read_to_string(&path).unwrap();
    assert!(kept.contains("TOPSECRET-ACCESS-"), "{kept}");
    assert!(!kept.contains("TOPSECRET-CLIENT-SECRET"), "{kept}");
    let refreshes = |log: &[Req]| {
        log.iter()
            .filter(|r| r.path() == "/token")
            .filter(|r| r.form("grant_type").as_deref() == Some("refresh_token"))
            .map(|r| r.header("authorization").map(str::to_owned))
            .collect::<Vec<_>>()
    };
    let first = refreshes(&auth.log());
    assert!(!first.is_empty(), "no refresh: {:?}", auth.log());
    assert!(first.iter().all(|a| a.as_deref() == Some(basic.as_str())));
    // The next run: the stored (stale) tokens are refreshed with the secret given again; no
    // person is asked.
    let before = first.len();
    let person = Person::default();
    run(&person);
    assert_eq!(person.calls(), 0);
    let all = refreshes(&auth.log());
    assert!(all.len() > before, "no refresh in the next run");
    assert!(all.iter().all(|a| a.as_deref() == Some(basic.as_str())));
    let kept = std::fs::read_to_string(&path).unwrap();
    assert!(!kept.contains("TOPSECRET-CLIENT-SECRET"), "{kept}");
}

/// T2: a challenge's `resource_metadata` the client may not fetch (a cloud metadata address)
/// is not fetched: the well-known URI at the server's own origin is used instead, and the flow
/// completes there. Issuers and endpoints at private addresses are refused before anything is
/// sent to them.
#[test]
fn urls_a_server_names_are_fetched_only_where_it_may_send_the_client() {
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, good_tokens);
    let mut mcp = Fake::new();
    serve_mcp(&mut mcp, &auth.origin, |req: &Req| match bearer(req) {
        Some(_) => None,
        None => Some(unauthorized(
            "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        )),
    });
    let person = Person::default();
    let c = client(&mcp.url("/mcp"), oauth(&person));
    within(Duration::from_secs(20), async {
        c.initialize().await.unwrap();
        c.close().await.unwrap();
    });
    assert_eq!(person.calls(), 1);
    assert!(mcp.count("GET", PRM_PATH) >= 1, "{:?}", mcp.log());
    assert_eq!(auth.count("POST", "/token"), 1);
    // An issuer on a private network.
    let mut mcp = Fake::new();
    let gate = bearer_gate(mcp.url(PRM_PATH));
    serve_mcp(&mut mcp, "https://10.255.255.1", gate);
    let person = Person::default();
    let error = opening_fails(&mcp.url("/mcp"), oauth(&person), |e| {
        matches!(
            e,
            AuthError::RefusedUrl {
                reason: mcp_connect::proto::oauth::FetchRefusal::Private,
                ..
            }
        )
    });
    assert!(shown(&error).contains("not fetched"), "{}", shown(&error));
    assert_eq!(person.calls(), 0);
    // A token endpoint on a link-local address: the person is not even asked.
    let mut auth = Fake::new();
    serve_as(
        &mut auth,
        |md| md["token_endpoint"] = json!("https://169.254.10.10/token"),
        good_tokens,
    );
    let mut mcp = Fake::new();
    let gate = bearer_gate(mcp.url(PRM_PATH));
    serve_mcp(&mut mcp, &auth.origin, gate);
    let person = Person::default();
    opening_fails(
        &mcp.url("/mcp"),
        oauth(&person),
        |e| matches!(e, AuthError::RefusedUrl { url, .. } if url == "https://169.254.10.10/token"),
    );
    assert_eq!(person.calls(), 0);
    assert!(auth.log().iter().all(|r| r.method == "GET"));
}

/// Sends `request` on a new connection to the listener and gives the status line of the
/// answer (read until the listener closes the connection).
fn listener_says(port: u16, target: &str) -> String {
    use std::io::Read;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    answer.lines().next().unwrap_or("(nothing)").to_owned()
}

/// T8: the loopback redirect listener takes only this flow's redirect. A local process's
/// request with a wrong `state` (or none) gets an error page and ends nothing; a connection
/// that sends nothing does not hold up the others; the person's real redirect then completes
/// the flow.
#[test]
fn the_redirect_listener_waits_for_its_own_state_and_serves_connections_at_once() {
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, good_tokens);
    let mut mcp = Fake::new();
    let gate = bearer_gate(mcp.url(PRM_PATH));
    serve_mcp(&mut mcp, &auth.origin, gate);
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = seen.clone();
    let show: mcp_connect::oauth::ShowUrl =
        Arc::new(move |request: &AuthorizationRequest, opened| {
            assert!(!opened);
            let port: u16 = request
                .redirect_uri
                .strip_prefix("http://127.0.0.1:")
                .and_then(|r| r.split('/').next())
                .and_then(|p| p.parse().ok())
                .expect("a loopback redirect URI");
            let state = query(&request.url, "state").expect("a state");
            let record = record.clone();
            // The other local process, then the person's browser.
            std::thread::spawn(move || {
                let note = |s: String| record.lock().unwrap().push(s);
                // A connection that sends nothing, kept open…
                let silent = TcpStream::connect(("127.0.0.1", port)).unwrap();
                // …while requests without this flow's state are answered (and ignored).
                note(format!(
                    "wrong state: {}",
                    listener_says(port, "/callback?code=evil&state=WRONG")
                ));
                note(format!(
                    "no state: {}",
                    listener_says(port, "/callback?code=evil")
                ));
                note(format!("favicon: {}", listener_says(port, "/favicon.ico")));
                // The silent connection is still open: it was never in the way.
                silent.set_nonblocking(true).unwrap();
                let mut byte = [0u8; 1];
                let open = matches!(
                    std::io::Read::read(&mut &silent, &mut byte),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
                );
                note(format!("silent connection still open: {open}"));
                note(format!(
                    "real: {}",
                    listener_says(
                        port,
                        &format!("/callback?code=TOPSECRET-CODE-1&state={state}")
                    )
                ));
                drop(silent);
            });
        });
    let mut config = OAuthConfig::new(Authorize::Browser {
        open: false,
        show,
        timeout: Duration::from_secs(60),
    });
    config.request_timeout = Duration::from_secs(5);
    let c = client(&mcp.url("/mcp"), config);
    within(Duration::from_secs(60), async {
        c.initialize().await.unwrap();
        c.close().await.unwrap();
    });
    let seen = seen.lock().unwrap().clone();
    let status = |prefix: &str| {
        seen.iter()
            .find_map(|s| s.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {seen:?}"))
            .to_owned()
    };
    assert!(
        status("wrong state: ").starts_with("HTTP/1.1 400"),
        "{seen:?}"
    );
    assert!(status("no state: ").starts_with("HTTP/1.1 400"), "{seen:?}");
    assert!(status("favicon: ").starts_with("HTTP/1.1 404"), "{seen:?}");
    assert_eq!(status("silent connection still open: "), "true", "{seen:?}");
    assert!(status("real: ").starts_with("HTTP/1.1 200"), "{seen:?}");
    // The code exchanged is the person's, not the other process's.
    let token = auth
        .log()
        .into_iter()
        .find(|r| r.path() == "/token")
        .expect("a token request");
    assert_eq!(token.form("code").as_deref(), Some("TOPSECRET-CODE-1"));
    assert_eq!(auth.count("POST", "/token"), 1);
}

/// T14: a `401` to a notification's POST (a token revoked between two messages) runs the same
/// flow as for a request, and the notification is sent again with the new token: the server
/// hears `notifications/initialized` after re-authorization.
#[test]
fn a_401_to_a_notification_reauthorizes_and_sends_it_again() {
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, good_tokens);
    let mut mcp = Fake::new();
    let prm_url = mcp.url(PRM_PATH);
    serve_mcp(&mut mcp, &auth.origin, move |req| {
        let initialized = req.json()["method"] == "notifications/initialized";
        // The first token is refused on the notification (and only there).
        let refused = match bearer(req).as_deref() {
            None => true,
            Some("TOPSECRET-ACCESS-1") => initialized,
            Some(_) => false,
        };
        refused.then(|| unauthorized(&prm_url))
    });
    let person = Person::default();
    let c = client(&mcp.url("/mcp"), oauth(&person));
    within(Duration::from_secs(30), async {
        c.initialize().await.unwrap();
        let r = c.call_tool("echo", json!({})).await.unwrap();
        assert_eq!(r.text(), "ok");
        c.close().await.unwrap();
    });
    assert_eq!(person.calls(), 1, "a refresh needs nobody");
    let grants: Vec<Option<String>> = auth
        .log()
        .iter()
        .filter(|r| r.path() == "/token")
        .map(|r| r.form("grant_type"))
        .collect();
    assert_eq!(
        grants,
        [
            Some("authorization_code".into()),
            Some("refresh_token".into())
        ]
    );
    let initialized: Vec<Option<String>> = mcp
        .log()
        .iter()
        .filter(|r| r.json()["method"] == "notifications/initialized")
        .map(bearer)
        .collect();
    assert_eq!(
        initialized,
        [
            Some("TOPSECRET-ACCESS-1".into()),
            Some("TOPSECRET-ACCESS-2".into())
        ]
    );
    assert!(c.recent_warnings().is_empty(), "{:?}", c.recent_warnings());
}

/// The loopback listener flooded: more idle connections than it serves at once, and slow ones
/// that sent half a request, stay open while the browser's favicon request, a pre-connect that
/// sends nothing and the person's redirect come. The strays are answered (404) or closed, and
/// the redirect is taken at once: it does not wait for the idle ones' 10 s deadline.
#[test]
fn a_listener_flooded_with_idle_connections_still_takes_the_redirect_at_once() {
    let mut auth = Fake::new();
    serve_as(&mut auth, |_| {}, good_tokens);
    let mut mcp = Fake::new();
    let gate = bearer_gate(mcp.url(PRM_PATH));
    serve_mcp(&mut mcp, &auth.origin, gate);
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = seen.clone();
    let show: mcp_connect::oauth::ShowUrl = Arc::new(move |request: &AuthorizationRequest, _| {
        let port: u16 = request
            .redirect_uri
            .strip_prefix("http://127.0.0.1:")
            .and_then(|r| r.split('/').next())
            .and_then(|p| p.parse().ok())
            .expect("a loopback redirect URI");
        let state = query(&request.url, "state").expect("a state");
        let record = record.clone();
        std::thread::spawn(move || {
            let note = |s: String| record.lock().unwrap().push(s);
            // Three times as many idle connections as it serves at once, and as many that
            // sent the start of a request and stopped: all kept open.
            let mut flood = Vec::new();
            for i in 0..48 {
                let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                if i % 2 == 1 {
                    c.write_all(b"GET /callback?code=slow").unwrap();
                }
                flood.push(c);
            }
            let started = std::time::Instant::now();
            // A browser's pre-connect (nothing sent) and its favicon request.
            let _preconnect = TcpStream::connect(("127.0.0.1", port)).unwrap();
            note(format!("favicon: {}", listener_says(port, "/favicon.ico")));
            note(format!(
                "real: {}",
                listener_says(
                    port,
                    &format!("/callback?code=TOPSECRET-CODE-2&state={state}")
                )
            ));
            note(format!("after: {}", started.elapsed().as_millis()));
            drop(flood);
        });
    });
    let mut config = OAuthConfig::new(Authorize::Browser {
        open: false,
        show,
        timeout: Duration::from_secs(60),
    });
    config.request_timeout = Duration::from_secs(5);
    let c = client(&mcp.url("/mcp"), config);
    within(Duration::from_secs(60), async {
        c.initialize().await.unwrap();
        c.close().await.unwrap();
    });
    let seen = seen.lock().unwrap().clone();
    let status = |prefix: &str| {
        seen.iter()
            .find_map(|s| s.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {seen:?}"))
            .to_owned()
    };
    assert!(status("favicon: ").starts_with("HTTP/1.1 404"), "{seen:?}");
    assert!(status("real: ").starts_with("HTTP/1.1 200"), "{seen:?}");
    // Served before any idle connection's deadline (10 s) freed a place: it took the place of
    // one of them. (Without that, 49 connections ahead of it, 16 at a time, kept it waiting 30 s.)
    let after: u64 = status("after: ").parse().unwrap();
    assert!(after < 9_000, "the redirect waited {after} ms: {seen:?}");
    let token = auth
        .log()
        .into_iter()
        .find(|r| r.path() == "/token")
        .expect("a token request");
    assert_eq!(token.form("code").as_deref(), Some("TOPSECRET-CODE-2"));
    assert_eq!(auth.count("POST", "/token"), 1);
}
