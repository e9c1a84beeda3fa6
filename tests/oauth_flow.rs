//! The OAuth flow of the core, rule by rule, as transcripts: every request the flow makes is
//! answered from a table of documents (anything else is a 404), the person is a function of the
//! authorization URL, and the test reads what went out. No network, no clock, no randomness but
//! the fixed one given.

use mcp_proto::http::{HttpRequest, Method};
use mcp_proto::oauth::{
    parse_challenges, Attempt, AuthError, AuthMethod, AuthOptions, AuthorizationRequest,
    Authorizer, BearerChallenge, Client, ClientKind, Credentials, FetchRefusal, Flow, FlowStart,
    Grant, Pkce, PreRegistered, Randomness, Reason, Redirect, Secret, Step, Tokens, Turn, Verdict,
    MAX_STEP_UPS,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const MCP: &str = "https://mcp.example.com/mcp";
const PRM: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const PRM_ROOT: &str = "https://mcp.example.com/.well-known/oauth-protected-resource";
const AS: &str = "https://as.example.com";
const AS_META: &str = "https://as.example.com/.well-known/oauth-authorization-server";
const REDIRECT: &str = "http://127.0.0.1:7777/callback";
const RANDOM: Randomness = Randomness {
    verifier: [7; 32],
    state: [9; 16],
};

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_000_000)
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// The documents the fake servers answer with, by `METHOD URL` (the URL without its query).
#[derive(Clone)]
struct World {
    docs: HashMap<String, (u16, Vec<u8>)>,
    /// Redirects, by `METHOD URL`: the status and the `Location`.
    moved: HashMap<String, (u16, String)>,
}

impl World {
    /// An MCP server with path-based metadata, an authorization server with RFC 8414 metadata,
    /// dynamic registration, and a token endpoint that issues `AT1`/`RT1` for an hour.
    fn standard() -> World {
        let mut w = World {
            docs: HashMap::new(),
            moved: HashMap::new(),
        };
        w.put(
            "GET",
            PRM,
            200,
            json!({"resource": MCP, "authorization_servers": [AS], "scopes_supported": ["files:read"]}),
        );
        w.put("GET", AS_META, 200, as_metadata(AS));
        w.put(
            "POST",
            "https://as.example.com/register",
            201,
            json!({"client_id": "c1"}),
        );
        w.put(
            "POST",
            "https://as.example.com/token",
            200,
            json!({"access_token": "AT1", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "RT1"}),
        );
        w
    }

    fn put(&mut self, method: &str, url: &str, status: u16, body: Value) {
        self.docs.insert(
            format!("{method} {url}"),
            (status, body.to_string().into_bytes()),
        );
    }

    /// `GET url` answers `status` with this `Location`.
    fn redirect(&mut self, url: &str, status: u16, location: &str) {
        self.moved
            .insert(format!("GET {url}"), (status, location.to_owned()));
    }

    /// The answer with its headers (a `Location` for a redirect).
    fn answer_with_headers(&self, request: &HttpRequest) -> (u16, Vec<(String, String)>, Vec<u8>) {
        let url = request.url.split('?').next().unwrap();
        match self
            .moved
            .get(&format!("{} {url}", request.method.as_str()))
        {
            Some((status, location)) => (
                *status,
                vec![("Location".to_owned(), location.clone())],
                Vec::new(),
            ),
            None => {
                let (status, body) = self.answer(request);
                (status, Vec::new(), body)
            }
        }
    }

    fn remove(&mut self, method: &str, url: &str) {
        self.docs.remove(&format!("{method} {url}"));
    }

    fn answer(&self, request: &HttpRequest) -> (u16, Vec<u8>) {
        let url = request.url.split('?').next().unwrap();
        self.docs
            .get(&format!("{} {url}", request.method.as_str()))
            .cloned()
            .unwrap_or((404, b"not found".to_vec()))
    }
}

fn as_metadata(issuer: &str) -> Value {
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": true,
    })
}

/// The authorization URL's query parameters.
fn params(url: &str) -> HashMap<String, String> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// A form body's parameters.
fn form(request: &HttpRequest) -> HashMap<String, String> {
    url::form_urlencoded::parse(request.body.as_deref().unwrap_or_default())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn header<'a>(request: &'a HttpRequest, name: &str) -> Option<&'a str> {
    request
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_ref())
}

/// A person who approves: back to the redirect URI with a code, the request's state and the
/// issuer as `iss`.
fn approve(request: &AuthorizationRequest) -> String {
    let p = params(&request.url);
    format!(
        "{}?code=CODE&state={}&iss={}",
        request.redirect_uri,
        p["state"],
        url::form_urlencoded::byte_serialize(request.issuer.as_bytes()).collect::<String>()
    )
}

/// What a flow did.
struct Run {
    result: Result<Credentials, AuthError>,
    requests: Vec<HttpRequest>,
    authorizations: Vec<AuthorizationRequest>,
    loads: Vec<(String, String)>,
}

impl Run {
    fn urls(&self) -> Vec<String> {
        self.requests
            .iter()
            .map(|r| format!("{} {}", r.method.as_str(), r.url.split('?').next().unwrap()))
            .collect()
    }

    fn last_to(&self, url: &str) -> &HttpRequest {
        self.requests
            .iter()
            .rev()
            .find(|r| r.url == url)
            .unwrap_or_else(|| panic!("no request to {url}: {:?}", self.urls()))
    }

    fn ok(&self) -> &Credentials {
        self.result.as_ref().unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(&self) -> &AuthError {
        self.result
            .as_ref()
            .expect_err("the flow should have failed")
    }
}

fn drive(
    start: FlowStart,
    options: AuthOptions,
    world: &World,
    stored: Option<Credentials>,
    person: &dyn Fn(&AuthorizationRequest) -> String,
) -> Run {
    drive_with(start, options, world, stored, None, person)
}

/// [`drive`], with `registration` offered at each load (`Flow::on_loaded_with`).
fn drive_with(
    start: FlowStart,
    options: AuthOptions,
    world: &World,
    stored: Option<Credentials>,
    registration: Option<Credentials>,
    person: &dyn Fn(&AuthorizationRequest) -> String,
) -> Run {
    let mut flow = Flow::new(start, options, RANDOM, now());
    let mut run = Run {
        result: Err(AuthError::Misuse("unfinished")),
        requests: Vec::new(),
        authorizations: Vec::new(),
        loads: Vec::new(),
    };
    for _ in 0..64 {
        match flow.step().clone() {
            Step::Send(request) => {
                assert!(request.check().is_ok(), "{request:?}");
                let (status, headers, body) = world.answer_with_headers(&request);
                run.requests.push(request);
                flow.on_response(status, &headers, &body, now());
            }
            Step::Load { issuer, resource } => {
                run.loads.push((issuer, resource));
                flow.on_loaded_with(stored.clone(), registration.clone(), now());
            }
            Step::Authorize(request) => {
                let back = person(&request);
                run.authorizations.push(request);
                flow.on_redirect(&back);
            }
            Step::Done(c) => {
                assert!(flow.is_over());
                run.result = Ok(c);
                return run;
            }
            Step::Failed(e) => {
                assert!(flow.is_over());
                run.result = Err(e);
                return run;
            }
        }
    }
    panic!("the flow did not end in 64 steps: {:?}", run.urls());
}

fn start(reason: Reason, challenge: Option<&str>, previous: Option<Credentials>) -> FlowStart {
    FlowStart {
        resource_url: MCP.into(),
        challenge: challenge.and_then(BearerChallenge::from_header),
        reason,
        previous,
    }
}

fn unauthorized(challenge: Option<&str>) -> FlowStart {
    start(Reason::Unauthorized, challenge, None)
}

fn options() -> AuthOptions {
    AuthOptions::new(REDIRECT)
}

fn run(world: &World) -> Run {
    drive(unauthorized(None), options(), world, None, &approve)
}

#[test]
fn the_whole_flow_in_order() {
    let r = run(&World::standard());
    assert_eq!(
        r.urls(),
        [
            format!("GET {PRM}"),
            format!("GET {AS_META}"),
            "POST https://as.example.com/register".into(),
            "POST https://as.example.com/token".into(),
        ]
    );
    assert_eq!(r.loads, [(AS.to_owned(), MCP.to_owned())]);
    let c = r.ok();
    assert_eq!(c.issuer, AS);
    assert_eq!(c.resource, MCP);
    assert_eq!(c.client.client_id, "c1");
    assert_eq!(c.client.kind, ClientKind::Registered);
    assert_eq!(c.client.auth_method, AuthMethod::None);
    assert_eq!(c.tokens.access_token.expose(), "AT1");
    assert_eq!(c.tokens.refresh_token.as_ref().unwrap().expose(), "RT1");
    assert_eq!(c.tokens.issued_at, unix(now()));
    assert_eq!(c.tokens.expires_at, Some(unix(now()) + 3600));
    assert_eq!(c.tokens.requested_scope.as_deref(), Some("files:read"));
}

#[test]
fn the_authorization_request_carries_pkce_state_resource_and_scope() {
    let r = run(&World::standard());
    let a = &r.authorizations[0];
    assert!(a.url.starts_with("https://as.example.com/authorize?"));
    assert_eq!(a.issuer, AS);
    let p = params(&a.url);
    let pkce = Pkce::from_random(RANDOM.verifier);
    assert_eq!(p["response_type"], "code");
    assert_eq!(p["client_id"], "c1");
    assert_eq!(p["redirect_uri"], REDIRECT);
    assert_eq!(p["code_challenge"], pkce.challenge);
    assert_eq!(p["code_challenge_method"], "S256");
    assert_eq!(p["resource"], MCP);
    assert_eq!(p["scope"], "files:read");
    assert!(
        p["state"].len() >= 22,
        "state of 16 random bytes: {}",
        p["state"]
    );
    // The verifier itself never goes to the authorization endpoint.
    assert!(!a.url.contains(&pkce.verifier));
    // The token request: the code, the verifier, the same redirect URI and resource.
    let t = form(r.last_to("https://as.example.com/token"));
    assert_eq!(t["grant_type"], "authorization_code");
    assert_eq!(t["code"], "CODE");
    assert_eq!(t["code_verifier"], pkce.verifier);
    assert_eq!(t["redirect_uri"], REDIRECT);
    assert_eq!(t["resource"], MCP);
    assert_eq!(t["client_id"], "c1");
}

#[test]
fn registration_says_what_a_native_client_is() {
    let r = run(&World::standard());
    let reg = r.last_to("https://as.example.com/register");
    assert_eq!(header(reg, "content-type"), Some("application/json"));
    let body: Value = serde_json::from_slice(reg.body.as_deref().unwrap()).unwrap();
    assert_eq!(body["application_type"], "native");
    assert_eq!(body["redirect_uris"], json!([REDIRECT]));
    assert_eq!(
        body["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(body["response_types"], json!(["code"]));
    // The server lists no methods: RFC 8414's default, client_secret_basic.
    assert_eq!(body["token_endpoint_auth_method"], "client_secret_basic");
}

#[test]
fn the_challenge_s_metadata_url_comes_first_then_path_then_root() {
    // The challenge names a metadata URL: only that is asked.
    let mut w = World::standard();
    w.remove("GET", PRM);
    let custom = "https://mcp.example.com/custom/prm";
    w.put(
        "GET",
        custom,
        200,
        json!({"resource": MCP, "authorization_servers": [AS]}),
    );
    let challenge = format!(r#"Bearer resource_metadata="{custom}""#);
    let r = drive(
        unauthorized(Some(&challenge)),
        options(),
        &w,
        None,
        &approve,
    );
    r.ok();
    assert_eq!(r.urls()[0], format!("GET {custom}"));
    // No challenge: path-based, then root.
    let mut w = World::standard();
    w.remove("GET", PRM);
    w.put(
        "GET",
        PRM_ROOT,
        200,
        json!({"resource": "https://mcp.example.com", "authorization_servers": [AS]}),
    );
    let r = run(&w);
    assert_eq!(
        r.urls()[..2],
        [format!("GET {PRM}"), format!("GET {PRM_ROOT}")]
    );
    // The resource is the metadata's, exactly as sent (no trailing slash added).
    assert_eq!(r.ok().resource, "https://mcp.example.com");
    assert_eq!(
        params(&r.authorizations[0].url)["resource"],
        "https://mcp.example.com"
    );
}

#[test]
fn authorization_server_metadata_is_tried_in_the_spec_order() {
    let issuer = "https://as.example.com/tenant1";
    let mut w = World::standard();
    w.put(
        "GET",
        PRM,
        200,
        json!({"resource": MCP, "authorization_servers": [issuer]}),
    );
    w.remove("GET", AS_META);
    let appended = "https://as.example.com/tenant1/.well-known/openid-configuration";
    w.put("GET", appended, 200, as_metadata(issuer));
    w.put(
        "POST",
        &format!("{issuer}/register"),
        201,
        json!({"client_id": "t1"}),
    );
    w.put(
        "POST",
        &format!("{issuer}/token"),
        200,
        json!({"access_token": "T", "token_type": "Bearer"}),
    );
    let r = run(&w);
    r.ok();
    assert_eq!(
        r.urls()[1..4],
        [
            "GET https://as.example.com/.well-known/oauth-authorization-server/tenant1",
            "GET https://as.example.com/.well-known/openid-configuration/tenant1",
            &format!("GET {appended}"),
        ]
    );
}

#[test]
fn a_resource_that_is_not_the_server_is_refused_before_anything_is_authorized() {
    for resource in [
        "https://evil.example.com/mcp",
        "https://mcp.example.com/other",
        "http://mcp.example.com/mcp",
    ] {
        let mut w = World::standard();
        w.put(
            "GET",
            PRM,
            200,
            json!({"resource": resource, "authorization_servers": [AS]}),
        );
        let r = run(&w);
        assert!(
            matches!(r.err(), AuthError::ResourceMismatch { advertised, .. } if advertised == resource),
            "{resource}: {:?}",
            r.result
        );
        assert_eq!(r.urls(), [format!("GET {PRM}")], "{resource}");
        assert!(r.authorizations.is_empty());
    }
}

#[test]
fn metadata_naming_another_issuer_is_not_used() {
    let mut w = World::standard();
    w.put("GET", AS_META, 200, as_metadata("https://attacker.example"));
    // Not even with a trailing slash: the comparison is of strings.
    w.put(
        "GET",
        "https://as.example.com/.well-known/openid-configuration",
        200,
        as_metadata("https://as.example.com/"),
    );
    let r = run(&w);
    let AuthError::NoServerMetadata { issuer, reason, .. } = r.err() else {
        panic!("{:?}", r.result);
    };
    assert_eq!(issuer, AS);
    assert!(
        reason
            .as_deref()
            .unwrap()
            .contains("https://as.example.com/"),
        "{reason:?}"
    );
    assert!(r.urls().iter().all(|u| !u.contains("token")));
}

#[test]
fn no_pkce_no_authorization() {
    let mut w = World::standard();
    let mut md = as_metadata(AS);
    md.as_object_mut()
        .unwrap()
        .remove("code_challenge_methods_supported");
    w.put("GET", AS_META, 200, md.clone());
    assert!(matches!(run(&w).err(), AuthError::PkceUnsupported { .. }));
    md["code_challenge_methods_supported"] = json!(["plain"]);
    w.put("GET", AS_META, 200, md);
    let r = run(&w);
    assert!(matches!(r.err(), AuthError::PkceUnsupported { .. }));
    assert!(r.authorizations.is_empty());
}

#[test]
fn endpoints_must_be_https_or_this_machine() {
    let mut w = World::standard();
    let mut md = as_metadata(AS);
    md["token_endpoint"] = json!("http://as.example.com/token");
    w.put("GET", AS_META, 200, md);
    let r = run(&w);
    assert!(
        matches!(r.err(), AuthError::InsecureEndpoint { url, .. } if url == "http://as.example.com/token"),
        "{:?}",
        r.result
    );
    assert!(r.authorizations.is_empty());
}

#[test]
fn client_identity_pre_registered_then_metadata_document_then_registration() {
    let cimd = "https://client.example.com/metadata.json";
    let mut w = World::standard();
    let mut md = as_metadata(AS);
    md["client_id_metadata_document_supported"] = json!(true);
    w.put("GET", AS_META, 200, md);
    let mut o = options();
    o.client_metadata_url = Some(cimd.into());
    // CIMD where supported, no registration.
    let r = drive(unauthorized(None), o.clone(), &w, None, &approve);
    assert_eq!(r.ok().client.client_id, cimd);
    assert_eq!(r.ok().client.kind, ClientKind::MetadataDocument);
    assert!(r.urls().iter().all(|u| !u.ends_with("/register")));
    // Pre-registered credentials come first.
    o.pre_registered = Some(PreRegistered {
        client_id: "pre".into(),
        client_secret: Some(Secret::new("pre-secret")),
        private_key: None,
        auth_method: None,
        issuer: Some(AS.into()),
    });
    let r = drive(unauthorized(None), o.clone(), &w, None, &approve);
    assert_eq!(r.ok().client.client_id, "pre");
    assert_eq!(r.ok().client.auth_method, AuthMethod::ClientSecretBasic);
    assert!(r.urls().iter().all(|u| !u.ends_with("/register")));
    // …but only for their own authorization server.
    o.pre_registered.as_mut().unwrap().issuer = Some("https://other-as.example.com".into());
    let r = drive(unauthorized(None), o, &w, None, &approve);
    assert!(
        matches!(r.err(), AuthError::WrongIssuer { .. }),
        "{:?}",
        r.result
    );
    assert!(r.authorizations.is_empty());
    // Neither, and no registration endpoint: no identity.
    let mut w = World::standard();
    let mut md = as_metadata(AS);
    md.as_object_mut().unwrap().remove("registration_endpoint");
    w.put("GET", AS_META, 200, md);
    assert!(matches!(run(&w).err(), AuthError::NoClientIdentity { .. }));
}

#[test]
fn the_token_endpoint_sees_the_registered_authentication() {
    let mut w = World::standard();
    w.put(
        "POST",
        "https://as.example.com/register",
        201,
        json!({"client_id": "c2", "client_secret": "s2", "token_endpoint_auth_method": "client_secret_post"}),
    );
    let r = run(&w);
    let t = r.last_to("https://as.example.com/token");
    let f = form(t);
    assert_eq!(
        (f["client_id"].as_str(), f["client_secret"].as_str()),
        ("c2", "s2")
    );
    assert_eq!(header(t, "authorization"), None);
    // Basic: the secret in the header only.
    w.put(
        "POST",
        "https://as.example.com/register",
        201,
        json!({"client_id": "c3", "client_secret": "s3", "token_endpoint_auth_method": "client_secret_basic"}),
    );
    let r = run(&w);
    let t = r.last_to("https://as.example.com/token");
    assert_eq!(header(t, "authorization"), Some("Basic YzM6czM="));
    assert!(!form(t).contains_key("client_secret"));
    assert!(!form(t).contains_key("client_id"));
}

#[test]
fn scopes_challenge_then_supported_then_none_and_offline_access_only_when_listed() {
    let scope_of = |r: &Run| params(&r.authorizations[0].url).get("scope").cloned();
    let w = World::standard();
    let r = drive(
        unauthorized(Some(r#"Bearer scope="files:write admin""#)),
        options(),
        &w,
        None,
        &approve,
    );
    assert_eq!(scope_of(&r).as_deref(), Some("files:write admin"));
    assert_eq!(scope_of(&run(&w)).as_deref(), Some("files:read"));
    let mut w = World::standard();
    w.put(
        "GET",
        PRM,
        200,
        json!({"resource": MCP, "authorization_servers": [AS]}),
    );
    assert_eq!(scope_of(&run(&w)), None);
    // offline_access: asked for when the authorization server lists it.
    let mut md = as_metadata(AS);
    md["scopes_supported"] = json!(["files:read", "offline_access"]);
    w.put("GET", AS_META, 200, md);
    assert_eq!(scope_of(&run(&w)).as_deref(), Some("offline_access"));
    let mut o = options();
    o.offline_access = false;
    assert_eq!(
        scope_of(&drive(unauthorized(None), o, &w, None, &approve)),
        None
    );
}

#[test]
fn a_step_up_asks_for_the_union_and_authorizes_again() {
    let w = World::standard();
    let first = drive(
        unauthorized(Some(r#"Bearer scope="files:read""#)),
        options(),
        &w,
        None,
        &approve,
    );
    let previous = first.ok().clone();
    let challenge = r#"Bearer error="insufficient_scope", scope="files:write""#;
    let r = drive(
        start(
            Reason::InsufficientScope,
            Some(challenge),
            Some(previous.clone()),
        ),
        options(),
        &w,
        // Even with fresh stored tokens and a refresh token: a refresh cannot widen the scope.
        Some(previous),
        &approve,
    );
    assert_eq!(r.authorizations.len(), 1);
    assert_eq!(
        params(&r.authorizations[0].url)["scope"],
        "files:read files:write"
    );
    assert_eq!(
        r.ok().tokens.requested_scope.as_deref(),
        Some("files:read files:write")
    );
    // The registration is reused.
    assert!(r.urls().iter().all(|u| !u.ends_with("/register")));
}

fn redirect_with(query: &str) -> impl Fn(&AuthorizationRequest) -> String + '_ {
    move |request: &AuthorizationRequest| {
        let state = params(&request.url)["state"].clone();
        format!("{REDIRECT}?{}", query.replace("STATE", &state))
    }
}

#[test]
fn the_redirect_back_is_checked_before_the_code_is_used() {
    let w = World::standard();
    type Expected = fn(&AuthError) -> bool;
    let cases: Vec<(&str, Expected)> = vec![
        ("code=CODE&state=WRONG&iss=https%3A%2F%2Fas.example.com", |e| {
            matches!(e, AuthError::StateMismatch)
        }),
        ("code=CODE&iss=https%3A%2F%2Fas.example.com", |e| {
            matches!(e, AuthError::StateMismatch)
        }),
        // RFC 9207: advertised, so required; compared as strings.
        ("code=CODE&state=STATE", |e| matches!(e, AuthError::IssuerMissing { .. })),
        ("code=CODE&state=STATE&iss=https%3A%2F%2Fevil.example.com", |e| {
            matches!(e, AuthError::IssuerResponseMismatch { .. })
        }),
        ("code=CODE&state=STATE&iss=https%3A%2F%2Fas.example.com%2F", |e| {
            matches!(e, AuthError::IssuerResponseMismatch { .. })
        }),
        ("code=CODE&state=STATE&iss=HTTPS%3A%2F%2Fas.example.com", |e| {
            matches!(e, AuthError::IssuerResponseMismatch { .. })
        }),
        // A wrong iss hides the error it carries.
        ("error=access_denied&state=STATE&iss=https%3A%2F%2Fevil.example.com", |e| {
            matches!(e, AuthError::IssuerResponseMismatch { .. })
        }),
        ("error=access_denied&error_description=no%0Athanks&state=STATE&iss=https%3A%2F%2Fas.example.com", |e| {
            matches!(e, AuthError::Denied { error, description, .. } if error == "access_denied" && description.as_deref() == Some("nothanks"))
        }),
        ("state=STATE&iss=https%3A%2F%2Fas.example.com", |e| {
            matches!(e, AuthError::BadRedirect(_))
        }),
    ];
    for (query, expected) in cases {
        let r = drive(
            unauthorized(None),
            options(),
            &w,
            None,
            &redirect_with(query),
        );
        assert!(expected(r.err()), "{query}: {:?}", r.result);
        assert!(
            r.urls().iter().all(|u| !u.ends_with("/token")),
            "{query}: the code went to the token endpoint"
        );
    }
    // Another redirect URI: refused too.
    let elsewhere = |request: &AuthorizationRequest| {
        let state = params(&request.url)["state"].clone();
        format!("http://127.0.0.1:7778/callback?code=CODE&state={state}&iss=https%3A%2F%2Fas.example.com")
    };
    let r = drive(unauthorized(None), options(), &w, None, &elsewhere);
    assert!(matches!(r.err(), AuthError::BadRedirect(_)));
}

#[test]
fn iss_not_advertised_is_still_compared_when_present() {
    let mut w = World::standard();
    let mut md = as_metadata(AS);
    md["authorization_response_iss_parameter_supported"] = json!(false);
    w.put("GET", AS_META, 200, md);
    let r = drive(
        unauthorized(None),
        options(),
        &w,
        None,
        &redirect_with("code=CODE&state=STATE"),
    );
    r.ok();
    let r = drive(
        unauthorized(None),
        options(),
        &w,
        None,
        &redirect_with("code=CODE&state=STATE&iss=https%3A%2F%2Fevil.example.com"),
    );
    assert!(matches!(r.err(), AuthError::IssuerResponseMismatch { .. }));
}

fn credentials(
    issuer: &str,
    access: &str,
    refresh: Option<&str>,
    expires_at: Option<u64>,
) -> Credentials {
    Credentials {
        issuer: issuer.into(),
        resource: MCP.into(),
        token_endpoint: format!("{issuer}/token"),
        client: Client {
            client_id: "stored-client".into(),
            client_secret: None,
            auth_method: AuthMethod::None,
            kind: ClientKind::Registered,
            secret_expires_at: None,
        },
        tokens: Tokens {
            access_token: Secret::new(access),
            issued_at: unix(now()) - 100,
            expires_at,
            refresh_token: refresh.map(Secret::new),
            scope: None,
            requested_scope: Some("files:read".into()),
            dpop_jkt: None,
        },
    }
}

#[test]
fn stored_tokens_are_used_then_refreshed_then_replaced() {
    let w = World::standard();
    // Fresh stored tokens: no authorization at all.
    let stored = credentials(AS, "STORED", Some("RT0"), Some(unix(now()) + 1000));
    let r = drive(
        unauthorized(None),
        options(),
        &w,
        Some(stored.clone()),
        &approve,
    );
    assert_eq!(r.ok().tokens.access_token.expose(), "STORED");
    assert!(r.authorizations.is_empty());
    // The same token just failed: refreshed with the stored client, not authorized.
    let r = drive(
        start(Reason::Unauthorized, None, Some(stored.clone())),
        options(),
        &w,
        Some(stored.clone()),
        &approve,
    );
    assert!(r.authorizations.is_empty());
    let f = form(r.last_to("https://as.example.com/token"));
    assert_eq!(f["grant_type"], "refresh_token");
    assert_eq!(f["refresh_token"], "RT0");
    assert_eq!(f["resource"], MCP);
    assert_eq!(f["client_id"], "stored-client");
    assert_eq!(r.ok().tokens.access_token.expose(), "AT1");
    // A refused refresh: authorize again, with the stored registration.
    let mut w2 = World::standard();
    w2.put(
        "POST",
        "https://as.example.com/token",
        400,
        json!({"error": "invalid_grant"}),
    );
    let r = drive(
        start(Reason::Unauthorized, None, Some(stored.clone())),
        options(),
        &w2,
        Some(stored),
        &approve,
    );
    assert_eq!(r.authorizations.len(), 1);
    assert_eq!(
        params(&r.authorizations[0].url)["client_id"],
        "stored-client"
    );
    assert!(matches!(r.err(), AuthError::Token { status: 400, .. }));
}

#[test]
fn an_expired_token_is_refreshed_without_discovery_and_keeps_its_refresh_token() {
    let mut w = World::standard();
    w.put(
        "POST",
        "https://as.example.com/token",
        200,
        json!({"access_token": "AT2", "token_type": "Bearer", "expires_in": 60}),
    );
    let old = credentials(AS, "OLD", Some("RT0"), Some(unix(now()) - 1));
    let r = drive(
        start(Reason::Expired, None, Some(old)),
        options(),
        &w,
        None,
        &approve,
    );
    assert_eq!(r.urls(), ["POST https://as.example.com/token"]);
    let c = r.ok();
    assert_eq!(c.tokens.access_token.expose(), "AT2");
    assert_eq!(c.tokens.refresh_token.as_ref().unwrap().expose(), "RT0");
    assert_eq!(c.tokens.expires_at, Some(unix(now()) + 60));
    // A refused refresh of an expired token starts the whole flow.
    w.put(
        "POST",
        "https://as.example.com/token",
        400,
        json!({"error": "invalid_grant"}),
    );
    let old = credentials(AS, "OLD", Some("RT0"), Some(unix(now()) - 1));
    let r = drive(
        start(Reason::Expired, None, Some(old)),
        options(),
        &w,
        None,
        &approve,
    );
    assert_eq!(
        r.urls()[..2],
        [
            "POST https://as.example.com/token".to_owned(),
            format!("GET {PRM}")
        ]
    );
}

#[test]
fn a_new_authorization_server_means_a_new_registration() {
    // The connection's credentials are from another authorization server (the metadata now
    // names this one): neither its client nor its tokens are used here.
    let w = World::standard();
    let previous = credentials("https://old-as.example.com", "OLD", Some("RT0"), None);
    let r = drive(
        start(Reason::Unauthorized, None, Some(previous)),
        options(),
        &w,
        None,
        &approve,
    );
    assert!(r
        .urls()
        .contains(&"POST https://as.example.com/register".to_owned()));
    assert!(r.urls().iter().all(|u| !u.contains("old-as")));
    assert_eq!(params(&r.authorizations[0].url)["client_id"], "c1");
    assert_eq!(r.ok().issuer, AS);
}

#[test]
fn the_2025_03_26_fallbacks_without_resource_metadata() {
    // Metadata at the MCP server's origin.
    let mut w = World::standard();
    w.remove("GET", PRM);
    let origin = "https://mcp.example.com";
    w.put(
        "GET",
        &format!("{origin}/.well-known/oauth-authorization-server"),
        200,
        as_metadata(origin),
    );
    w.put(
        "POST",
        &format!("{origin}/register"),
        201,
        json!({"client_id": "legacy"}),
    );
    w.put(
        "POST",
        &format!("{origin}/token"),
        200,
        json!({"access_token": "LEGACY", "token_type": "Bearer"}),
    );
    // Only when the server asked for a Bearer token.
    let r = run(&w);
    assert!(
        matches!(r.err(), AuthError::NoResourceMetadata { .. }),
        "{:?}",
        r.result
    );
    assert_eq!(r.urls(), [format!("GET {PRM}"), format!("GET {PRM_ROOT}")]);
    let bearer = r#"Bearer error="invalid_token""#;
    let r = drive(unauthorized(Some(bearer)), options(), &w, None, &approve);
    assert_eq!(r.ok().tokens.access_token.expose(), "LEGACY");
    assert_eq!(r.ok().issuer, origin);
    // No metadata at all: the default endpoints.
    w.remove(
        "GET",
        &format!("{origin}/.well-known/oauth-authorization-server"),
    );
    let r = drive(
        unauthorized(Some(bearer)),
        options(),
        &w,
        None,
        &redirect_with("code=C&state=STATE"),
    );
    assert!(r.authorizations[0]
        .url
        .starts_with("https://mcp.example.com/authorize?"));
    assert_eq!(r.ok().tokens.access_token.expose(), "LEGACY");
    // With the fallbacks off: a clear error naming what was tried.
    let mut o = options();
    o.legacy_fallbacks = false;
    let r = drive(unauthorized(Some(bearer)), o, &w, None, &approve);
    let AuthError::NoResourceMetadata { tried, .. } = r.err() else {
        panic!("{:?}", r.result);
    };
    assert_eq!(tried, &[PRM.to_owned(), PRM_ROOT.to_owned()]);
}

#[test]
fn client_credentials_need_no_person() {
    let mut o = options();
    o.grant = Grant::ClientCredentials;
    o.pre_registered = Some(PreRegistered {
        client_id: "m2m".into(),
        client_secret: Some(Secret::new("m2m-secret")),
        private_key: None,
        auth_method: Some(AuthMethod::ClientSecretBasic),
        issuer: Some(AS.into()),
    });
    let r = drive(
        unauthorized(Some(r#"Bearer scope="jobs""#)),
        o.clone(),
        &World::standard(),
        None,
        &|_| panic!("no person in the client credentials grant"),
    );
    let t = r.last_to("https://as.example.com/token");
    let f = form(t);
    assert_eq!(f["grant_type"], "client_credentials");
    assert_eq!(f["scope"], "jobs");
    assert_eq!(f["resource"], MCP);
    assert!(header(t, "authorization").unwrap().starts_with("Basic "));
    assert_eq!(r.ok().tokens.access_token.expose(), "AT1");
    // Without a secret: refused before anything is sent to the token endpoint.
    o.pre_registered.as_mut().unwrap().client_secret = None;
    let r = drive(unauthorized(None), o, &World::standard(), None, &approve);
    assert!(matches!(r.err(), AuthError::Unsupported(_)));
    assert!(r.urls().iter().all(|u| !u.ends_with("/token")));
}

#[test]
fn bad_answers_are_clear_errors() {
    let token = "https://as.example.com/token";
    let cases: Vec<(u16, Vec<u8>, &str)> = vec![
        (500, b"oops".to_vec(), "HTTP 500"),
        (
            400,
            br#"{"error":"invalid_client","error_description":"who?"}"#.to_vec(),
            "invalid_client: who?",
        ),
        (200, b"<html>".to_vec(), "not a JSON object"),
        (
            200,
            br#"{"access_token":"x","token_type":"mac"}"#.to_vec(),
            "token_type",
        ),
        (200, vec![b' '; 2 * 1024 * 1024], "larger than"),
    ];
    for (status, body, message) in cases {
        let mut w = World::standard();
        w.docs.insert(format!("POST {token}"), (status, body));
        let r = run(&w);
        let text = r.err().to_string();
        assert!(text.contains(message), "{status}: {text}");
    }
    // A registration refused.
    let mut w = World::standard();
    w.put(
        "POST",
        "https://as.example.com/register",
        400,
        json!({"error": "invalid_redirect_uri"}),
    );
    assert!(run(&w).err().to_string().contains("invalid_redirect_uri"));
}

#[test]
fn transport_failures_move_discovery_on_and_end_token_requests() {
    let mut flow = Flow::new(unauthorized(None), options(), RANDOM, now());
    // The path-based metadata cannot be fetched: the root one is next.
    flow.on_failure("connection refused", now());
    match flow.step() {
        Step::Send(r) => assert_eq!(r.url, PRM_ROOT),
        s => panic!("{s:?}"),
    }
    // Inputs out of order fail the flow instead of confusing it.
    flow.on_redirect("http://127.0.0.1:7777/callback?code=x");
    assert!(matches!(flow.step(), Step::Failed(AuthError::Misuse(_))));
    assert!(flow.is_over());
}

#[test]
fn nothing_secret_in_debug_or_errors() {
    let mut w = World::standard();
    w.put(
        "POST",
        "https://as.example.com/register",
        201,
        json!({"client_id": "c9", "client_secret": "TOPSECRET-CLIENT", "token_endpoint_auth_method": "client_secret_post"}),
    );
    w.put(
        "POST",
        "https://as.example.com/token",
        200,
        json!({"access_token": "TOPSECRET-ACCESS", "token_type": "Bearer", "refresh_token": "TOPSECRET-REFRESH"}),
    );
    let r = run(&w);
    let c = r.ok().clone();
    let shown = format!("{c:?} {:?} {:?}", r.requests, r.authorizations);
    for secret in ["TOPSECRET", "CODE"] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    let mut authorizer = Authorizer::new(MCP);
    authorizer.install(c);
    assert!(!format!("{authorizer:?}").contains("TOPSECRET"));
    assert_eq!(
        authorizer.authorization().unwrap().expose(),
        "Bearer TOPSECRET-ACCESS"
    );
    assert_eq!(
        format!("{:?}", authorizer.authorization().unwrap()),
        "<redacted>"
    );
    assert!(!format!("{RANDOM:?}").contains('7'));
}

#[test]
fn the_authorizer_retries_once_after_a_401_and_steps_up_at_most_three_times() {
    let mut a = Authorizer::new(MCP);
    let mut attempt = Attempt::default();
    let g = a.generation();
    let Verdict::Authorize(first) =
        a.on_response(&mut attempt, g, 401, Some(r#"Bearer scope="a""#))
    else {
        panic!()
    };
    assert_eq!(first.reason, Reason::Unauthorized);
    assert_eq!(
        first.challenge.as_ref().unwrap().scope.as_deref(),
        Some("a")
    );
    a.install(credentials(AS, "T1", None, None));
    let g = a.generation();
    // The new token is refused too: no second flow for this request.
    assert!(matches!(
        a.on_response(&mut attempt, g, 401, None),
        Verdict::Fail(AuthError::Rejected { .. })
    ));
    // A response to a request sent before the credentials changed: just send it again.
    let mut other = Attempt::default();
    assert_eq!(a.on_response(&mut other, g - 1, 401, None), Verdict::Retry);
    // 403 insufficient_scope: the first authorization counts; two step-ups more, then no.
    let scope = r#"Bearer error="insufficient_scope", scope="b""#;
    let mut attempt = Attempt {
        reauthorized: 1,
        ..Attempt::default()
    };
    for _ in 1..MAX_STEP_UPS {
        let Verdict::Authorize(s) = a.on_response(&mut attempt, g, 403, Some(scope)) else {
            panic!()
        };
        assert_eq!(s.reason, Reason::InsufficientScope);
    }
    let Verdict::Fail(AuthError::InsufficientScope {
        scope, attempts, ..
    }) = a.on_response(&mut attempt, g, 403, Some(scope))
    else {
        panic!()
    };
    assert_eq!((scope.as_str(), attempts), ("b", MAX_STEP_UPS));
    // Another 403 is the caller's error; other statuses are not the authorizer's.
    assert_eq!(
        a.on_response(
            &mut Attempt::default(),
            g,
            403,
            Some("Bearer error=\"invalid_token\"")
        ),
        Verdict::Proceed
    );
    assert_eq!(
        a.on_response(&mut Attempt::default(), g, 403, None),
        Verdict::Proceed
    );
    assert_eq!(
        a.on_response(&mut Attempt::default(), g, 200, None),
        Verdict::Proceed
    );
}

#[test]
fn the_authorizer_refreshes_before_sending_an_expired_token() {
    let mut a = Authorizer::new(MCP);
    assert!(a.before_send(now()).is_none());
    a.install(credentials(AS, "T", Some("R"), Some(unix(now()) + 10)));
    // 10 s left of a 110 s token: inside the margin (a quarter, at most 30 s).
    let s = a.before_send(now()).expect("a refresh");
    assert_eq!(s.reason, Reason::Expired);
    a.install(credentials(AS, "T", Some("R"), Some(unix(now()) + 1000)));
    assert!(a.before_send(now()).is_none());
    // No refresh token: nothing to do before the server says.
    a.install(credentials(AS, "T", None, Some(unix(now()) - 1)));
    assert!(a.before_send(now()).is_none());
}

#[test]
fn odd_challenges_still_parse_and_methods_are_get_and_post_only() {
    assert!(
        parse_challenges("Bearer realm=\"a, b\", error=\"insufficient_scope\"")[0]
            .param("error")
            .is_some()
    );
    let r = run(&World::standard());
    assert!(r
        .requests
        .iter()
        .all(|q| matches!(q.method, Method::Get | Method::Post)));
    // Metadata GETs carry no credentials.
    assert!(r
        .requests
        .iter()
        .filter(|q| q.method == Method::Get)
        .all(|q| header(q, "authorization").is_none()));
}

/// A P-256 key made for this test (`openssl genpkey -algorithm EC -pkeyopt
/// ec_paramgen_curve:P-256`), and its public half.
const TEST_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgxaCrGpqhUxxOBxks
tyaAxCj2OONHN2vnxU4Qjw500y+hRANCAAQ0WSEtWARxCL9WNQJOzepN//kq4awC
w7EEhT396FnlrIGjC8uZk9uswp9c98zsTim3mtnCkuQXV5AL4vIEevCR
-----END PRIVATE KEY-----";
const TEST_PUBLIC_KEY: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAENFkhLVgEcQi/VjUCTs3qTf/5KuGs
AsOxBIU9/ehZ5ayBowvLmZPbrMKfXPfM7E4pt5rZwpLkF1eQC+LyBHrwkQ==
-----END PUBLIC KEY-----";

#[test]
fn private_key_jwt_sends_a_signed_assertion_and_no_secret() {
    use base64::Engine;
    use p256::ecdsa::signature::Verifier;
    use p256::pkcs8::DecodePublicKey;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut o = options();
    o.grant = Grant::ClientCredentials;
    o.pre_registered = Some(PreRegistered {
        client_id: "m2m-jwt".into(),
        client_secret: None,
        private_key: Some(Secret::new(TEST_KEY)),
        auth_method: None,
        issuer: Some(AS.into()),
    });
    let r = drive(
        unauthorized(None),
        o.clone(),
        &World::standard(),
        None,
        &|_| panic!("no person in the client credentials grant"),
    );
    assert_eq!(r.ok().client.auth_method, AuthMethod::PrivateKeyJwt);
    let t = r.last_to("https://as.example.com/token");
    let f = form(t);
    assert_eq!(f["grant_type"], "client_credentials");
    assert_eq!(
        f["client_assertion_type"],
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    );
    assert!(header(t, "authorization").is_none() && !f.contains_key("client_secret"));
    // The JWT: ES256, iss = sub = the client, aud = the issuer, 5 minutes from now, signed by
    // the key (checked with its public half).
    let parts: Vec<&str> = f["client_assertion"].split('.').collect();
    assert_eq!(parts.len(), 3);
    let head: Value = serde_json::from_slice(&b64.decode(parts[0]).unwrap()).unwrap();
    assert_eq!(head["alg"], "ES256");
    let claims: Value = serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(claims["iss"], "m2m-jwt");
    assert_eq!(claims["sub"], "m2m-jwt");
    assert_eq!(claims["aud"], AS);
    assert_eq!(claims["iat"], unix(now()));
    assert_eq!(claims["exp"], unix(now()) + 300);
    assert!(claims["jti"].as_str().is_some_and(|j| j.len() == 32));
    let key = p256::ecdsa::VerifyingKey::from_public_key_pem(TEST_PUBLIC_KEY).unwrap();
    let signature = p256::ecdsa::Signature::from_slice(&b64.decode(parts[2]).unwrap()).unwrap();
    key.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
        .expect("a valid ES256 signature");
    // Neither the key nor the assertion shows in what the flow made or ended with.
    let shown = format!("{:?} {:?}", r.requests, r.ok());
    assert!(
        !shown.contains("MIGHAgEA") && !shown.contains(parts[2]),
        "{shown}"
    );
    // A key that is not one: a clear error, nothing sent to the token endpoint.
    o.pre_registered.as_mut().unwrap().private_key = Some(Secret::new(
        "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----",
    ));
    let r = drive(unauthorized(None), o, &World::standard(), None, &approve);
    assert!(
        r.err()
            .to_string()
            .contains("not a P-256 or RSA private key in PEM"),
        "{}",
        r.err()
    );
    assert!(!r.err().to_string().contains("nope"));
    assert!(r.urls().iter().all(|u| !u.ends_with("/token")));
}

/// The client assertion `private_key_jwt` sends with `key`, from a client credentials flow
/// (or the flow's error, with what it sent).
fn assertion_with(key: &str) -> (Run, Option<String>) {
    let mut o = options();
    o.grant = Grant::ClientCredentials;
    o.pre_registered = Some(PreRegistered {
        client_id: "m2m-rsa".into(),
        client_secret: None,
        private_key: Some(Secret::new(key)),
        auth_method: None,
        issuer: Some(AS.into()),
    });
    let r = drive(unauthorized(None), o, &World::standard(), None, &|_| {
        panic!("no person in the client credentials grant")
    });
    let assertion = r
        .requests
        .iter()
        .rev()
        .find(|q| q.url == "https://as.example.com/token")
        .map(|t| form(t)["client_assertion"].clone());
    (r, assertion)
}

#[test]
fn private_key_jwt_signs_rs256_with_an_rsa_key_in_pkcs8_or_pkcs1() {
    use base64::Engine;
    use rsa::pkcs8::DecodePublicKey;
    use rsa::signature::Verifier;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let public =
        rsa::RsaPublicKey::from_public_key_pem(include_str!("keys/rsa2048.pub.pem")).unwrap();
    let verifier = rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(public);
    for pem in [
        include_str!("keys/rsa2048.pkcs8.pem"),
        include_str!("keys/rsa2048.pkcs1.pem"),
    ] {
        let (r, assertion) = assertion_with(pem);
        assert_eq!(r.ok().client.auth_method, AuthMethod::PrivateKeyJwt);
        let assertion = assertion.expect("a token request with an assertion");
        let parts: Vec<&str> = assertion.split('.').collect();
        assert_eq!(parts.len(), 3);
        // The key's type decides the algorithm (RFC 7518 § 3.3: RS256 is RSASSA-PKCS1-v1_5
        // with SHA-256).
        let head: Value = serde_json::from_slice(&b64.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(head["alg"], "RS256");
        let claims: Value = serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(
            (&claims["iss"], &claims["aud"]),
            (&json!("m2m-rsa"), &json!(AS))
        );
        let raw = b64.decode(parts[2]).unwrap();
        assert_eq!(raw.len(), 256, "a 2048-bit key signs 256 bytes");
        let signature = rsa::pkcs1v15::Signature::try_from(raw.as_slice()).unwrap();
        verifier
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("a valid RS256 signature");
        // The key shows nowhere in what the flow made or ended with.
        let body = pem.lines().nth(1).unwrap();
        let shown = format!("{:?} {:?}", r.requests, r.ok());
        assert!(!shown.contains(body), "{shown}");
    }
}

#[test]
fn private_key_jwt_refuses_a_short_or_broken_rsa_key_before_sending_it_anything() {
    let short = include_str!("keys/rsa1024.pkcs8.pem");
    // A PKCS#1 key with its body cut short: the PEM armour is right, the key is not.
    let full = include_str!("keys/rsa2048.pkcs1.pem");
    let lines: Vec<&str> = full.lines().collect();
    let broken = [&lines[..3], &lines[lines.len() - 1..]].concat().join("\n");
    let cases = [
        (short, "has 1024 bits"),
        (broken.as_str(), "not a P-256 or RSA private key"),
    ];
    for (pem, says) in cases {
        let (r, assertion) = assertion_with(pem);
        assert!(assertion.is_none(), "nothing goes to the token endpoint");
        let e = r.err().to_string();
        assert!(e.contains(says), "{e}");
        for line in pem.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!e.contains(line), "{e}");
        }
    }
}

#[test]
fn with_nobody_to_ask_stored_tokens_are_used_and_refreshed_but_nothing_else_is_started() {
    // The application has no way to show a person the URL (the driver's `Authorize::Refuse`,
    // the CLI's `--no-auth`): it means "never start a flow that needs a person", not "ignore
    // what is stored".
    let mut o = options();
    assert!(o.interactive && o.asks_person());
    o.interactive = false;
    assert!(!o.asks_person());
    let nobody = |_: &AuthorizationRequest| -> String { panic!("nobody is asked") };
    let refused = |r: &Run| {
        let AuthError::NotAuthorized {
            issuer,
            resource,
            reason,
        } = r.err()
        else {
            panic!("{:?}", r.result)
        };
        assert_eq!(
            (issuer.as_str(), resource.as_str(), reason.as_str()),
            (AS, MCP, "authorizing is turned off")
        );
        // Discovery and the store only: nothing registered or authorized.
        assert!(
            r.urls()
                .iter()
                .all(|u| !u.ends_with("/register") && !u.ends_with("/authorize")),
            "{:?}",
            r.urls()
        );
        assert!(r.authorizations.is_empty());
    };
    let w = World::standard();
    // Nothing stored: refused once the authorization server is known, naming it.
    let r = drive(unauthorized(None), o.clone(), &w, None, &nobody);
    refused(&r);
    assert_eq!(r.urls(), [format!("GET {PRM}"), format!("GET {AS_META}")]);
    assert_eq!(r.loads, [(AS.to_owned(), MCP.to_owned())]);
    // A fresh stored token: used as it is.
    let fresh = credentials(AS, "STORED", Some("R"), Some(unix(now()) + 600));
    let r = drive(unauthorized(None), o.clone(), &w, Some(fresh), &nobody);
    assert_eq!(r.ok().tokens.access_token.expose(), "STORED");
    assert_eq!(r.urls(), [format!("GET {PRM}"), format!("GET {AS_META}")]);
    // An expired one with a refresh token: refreshed, which needs nobody.
    let expired = credentials(AS, "OLD", Some("R"), Some(unix(now()) - 1));
    let r = drive(unauthorized(None), o.clone(), &w, Some(expired), &nobody);
    assert_eq!(r.ok().tokens.access_token.expose(), "AT1");
    assert_eq!(
        form(r.last_to(&format!("{AS}/token")))["grant_type"],
        "refresh_token"
    );
    // The token that the server just refused (a 401 sent with it), with a refresh token: the
    // same.
    let failed = credentials(AS, "OLD", Some("R"), None);
    let again = start(Reason::Unauthorized, None, Some(failed.clone()));
    let r = drive(again, o.clone(), &w, Some(failed), &nobody);
    assert_eq!(r.ok().tokens.access_token.expose(), "AT1");
    // Hostile: an expired token and no refresh token — not sent, nothing registered, refused.
    let dead = credentials(AS, "DEAD", None, Some(unix(now()) - 1));
    let r = drive(unauthorized(None), o.clone(), &w, Some(dead), &nobody);
    refused(&r);
    assert!(!format!("{:?}", r.requests).contains("DEAD"));
    // A refresh the server refuses: refused too (authorizing again would need a person).
    let mut revoked = World::standard();
    revoked.put(
        "POST",
        &format!("{AS}/token"),
        400,
        json!({"error": "invalid_grant"}),
    );
    let expired = credentials(AS, "OLD", Some("R"), Some(unix(now()) - 1));
    let r = drive(
        unauthorized(None),
        o.clone(),
        &revoked,
        Some(expired),
        &nobody,
    );
    refused(&r);
    // A step-up needs a person: refused, even with a fresh token stored.
    let fresh = credentials(AS, "STORED", Some("R"), None);
    let step_up = start(
        Reason::InsufficientScope,
        Some(r#"Bearer error="insufficient_scope", scope="files:write""#),
        Some(fresh.clone()),
    );
    refused(&drive(step_up, o.clone(), &w, Some(fresh), &nobody));
    // The client credentials grant needs no person: not affected.
    o.grant = Grant::ClientCredentials;
    assert!(!o.asks_person());
    o.pre_registered = Some(PreRegistered {
        client_id: "m2m".into(),
        client_secret: Some(Secret::new("m2m-secret")),
        private_key: None,
        auth_method: None,
        issuer: Some(AS.into()),
    });
    let r = drive(unauthorized(None), o, &World::standard(), None, &approve);
    assert_eq!(r.ok().tokens.access_token.expose(), "AT1");
}

#[test]
fn requests_that_meet_a_401_together_share_one_flow_and_its_outcome() {
    let mut a = Authorizer::new(MCP);
    let g = a.generation();
    // Two requests sent with no token meet a 401 each, and each queues for the flow.
    let (mut one, mut two) = (Attempt::default(), Attempt::default());
    let Verdict::Authorize(first) = a.on_response(&mut one, g, 401, None) else {
        panic!()
    };
    let first_ticket = a.ticket(g);
    let Verdict::Authorize(second) = a.on_response(&mut two, g, 401, None) else {
        panic!()
    };
    let second_ticket = a.ticket(g);
    // The first gets the flow lock: nothing ran meanwhile, so it runs the flow.
    let Turn::Run(start) = a.on_turn(first_ticket, *first) else {
        panic!()
    };
    assert_eq!(start.reason, Reason::Unauthorized);
    assert_eq!(
        a.flow_ended(start.reason, Ok(credentials(AS, "T1", None, None))),
        Ok(())
    );
    // The second, its turn come, is sent again with the first one's token: no second flow.
    assert_eq!(a.on_turn(second_ticket, *second.clone()), Turn::Retry);

    // Both tokens refused later: the first request's flow fails, and the second, which waited
    // for it, fails with the same error instead of asking the person again.
    let g = a.generation();
    let (mut one, mut two) = (Attempt::default(), Attempt::default());
    let Verdict::Authorize(first) = a.on_response(&mut one, g, 401, None) else {
        panic!()
    };
    let first_ticket = a.ticket(g);
    let Verdict::Authorize(second) = a.on_response(&mut two, g, 401, None) else {
        panic!()
    };
    let second_ticket = a.ticket(g);
    let Turn::Run(start) = a.on_turn(first_ticket, *first) else {
        panic!()
    };
    let denied = AuthError::Misuse("the person said no");
    assert_eq!(
        a.flow_ended(start.reason, Err(denied.clone())),
        Err(denied.clone())
    );
    assert_eq!(
        a.on_turn(second_ticket, *second.clone()),
        Turn::Fail(denied)
    );
    // A request that meets a 401 after that flow is a new question: it runs a flow of its own.
    let later = a.ticket(g);
    assert!(matches!(a.on_turn(later, *second), Turn::Run(_)));
}

#[test]
fn a_refresh_before_sending_is_run_once_and_its_failure_is_not_shared() {
    let mut a = Authorizer::new(MCP);
    a.install(credentials(AS, "T", Some("R"), Some(unix(now()) - 1)));
    let g = a.generation();
    // A request waiting for a 401 flow meanwhile.
    let mut waiting = Attempt::default();
    let Verdict::Authorize(its) = a.on_response(&mut waiting, g, 401, None) else {
        panic!()
    };
    let ticket = a.ticket(g);
    // Another request, before sending, refreshes (it holds the flow lock); the refresh fails.
    let refresh = a.before_send(now()).expect("a refresh");
    assert_eq!(refresh.reason, Reason::Expired);
    let refused = AuthError::Misuse("refused");
    assert_eq!(a.flow_ended(Reason::Expired, Err(refused)), Ok(()));
    // The expired token is dropped: no refresh is due any more, and the waiting request is
    // sent again (without it) rather than failed with the refresh's error.
    assert!(a.before_send(now()).is_none() && a.authorization().is_none());
    assert_eq!(a.on_turn(ticket, *its), Turn::Retry);
}

#[test]
fn the_authorization_up_front_is_due_until_a_flow_ended() {
    let a = Authorizer::new(MCP);
    assert!(a.before_send(now()).is_none());
    let mut a = a.with_upfront(true);
    let start = a.before_send(now()).expect("the flow up front");
    assert_eq!(start.reason, Reason::Upfront);
    // Still due for a request that asks before it ended (it waits for the flow lock, and asks
    // again once it has it).
    assert!(a.before_send(now()).is_some());
    let e = AuthError::Misuse("no");
    assert_eq!(a.flow_ended(Reason::Upfront, Err(e.clone())), Err(e));
    // Failed, it is not run again: the next requests go without a token, and a 401 decides.
    assert!(a.before_send(now()).is_none() && a.authorization().is_none());
    // Succeeded, its credentials are used.
    let mut a = Authorizer::new(MCP).with_upfront(true);
    assert_eq!(
        a.flow_ended(Reason::Upfront, Ok(credentials(AS, "UP", None, None))),
        Ok(())
    );
    assert!(a.before_send(now()).is_none());
    assert_eq!(a.authorization().unwrap().expose(), "Bearer UP");
}

#[test]
fn a_failed_refresh_before_sending_lets_the_request_go_without_the_token() {
    let mut a = Authorizer::new(MCP);
    a.install(credentials(AS, "T", Some("R"), Some(unix(now()) - 1)));
    let g = a.generation();
    let e = AuthError::Misuse("refused");
    assert_eq!(a.flow_failed(Reason::Expired, e.clone()), Ok(()));
    assert!(a.authorization().is_none() && a.generation() > g);
    // Any other failure is the request's, and the credentials stay.
    a.install(credentials(AS, "T2", None, None));
    assert_eq!(a.flow_failed(Reason::Unauthorized, e.clone()), Err(e));
    assert_eq!(a.authorization().unwrap().expose(), "Bearer T2");
}

// ---------------------------------------------------------------------------------------------
// Issue 16: T1 (a secret only to its issuer), T2 (fetches only where a server may send the
// client), T8 (a redirect that is not this flow's ends nothing), and no pre-registered secret
// in what a flow ends with.

fn confidential(issuer: Option<&str>) -> PreRegistered {
    PreRegistered {
        client_id: "pre".into(),
        client_secret: Some(Secret::new("pre-secret")),
        private_key: None,
        auth_method: None,
        issuer: issuer.map(str::to_owned),
    }
}

#[test]
fn a_secret_or_key_without_an_issuer_is_refused_before_anything_is_sent() {
    for grant in [Grant::AuthorizationCode, Grant::ClientCredentials] {
        for keyed in [false, true] {
            let mut pre = confidential(None);
            if keyed {
                pre.client_secret = None;
                pre.private_key = Some(Secret::new(TEST_KEY));
            }
            let mut o = options();
            o.grant = grant;
            o.pre_registered = Some(pre);
            let flow = Flow::new(unauthorized(None), o.clone(), RANDOM, now());
            assert!(flow.is_over());
            assert!(
                matches!(flow.step(), Step::Failed(AuthError::UnboundSecret { client_id }) if client_id == "pre"),
                "{:?}",
                flow.step()
            );
            let r = drive(unauthorized(None), o, &World::standard(), None, &approve);
            assert!(r.requests.is_empty(), "{:?}", r.urls());
            assert!(r
                .err()
                .to_string()
                .contains("give the URL of the authorization server that issued it"));
            assert!(!r.err().to_string().contains("pre-secret"));
        }
    }
    // A refresh of earlier credentials is refused the same way.
    let mut o = options();
    o.pre_registered = Some(confidential(None));
    let previous = credentials(AS, "OLD", Some("R"), Some(unix(now()) - 1));
    let r = drive(
        start(Reason::Expired, None, Some(previous)),
        o,
        &World::standard(),
        None,
        &approve,
    );
    assert!(r.requests.is_empty(), "{:?}", r.urls());
    // A public client (an id alone) needs no issuer: it is used with the server's.
    let mut o = options();
    o.pre_registered = Some(PreRegistered {
        client_secret: None,
        ..confidential(None)
    });
    let r = drive(unauthorized(None), o, &World::standard(), None, &approve);
    assert_eq!(r.ok().client.client_id, "pre");
    assert_eq!(params(&r.authorizations[0].url)["client_id"], "pre");
}

#[test]
fn a_legacy_document_at_the_servers_origin_cannot_claim_the_bound_issuer() {
    // No protected resource metadata; the MCP server's origin serves authorization server
    // metadata that claims the real issuer, with a token endpoint of its own.
    let mut w = World::standard();
    w.remove("GET", PRM);
    let origin = "https://mcp.example.com";
    let mut md = as_metadata(AS);
    md["token_endpoint"] = json!(format!("{origin}/steal"));
    w.put(
        "GET",
        &format!("{origin}/.well-known/oauth-authorization-server"),
        200,
        md,
    );
    let mut o = options();
    o.grant = Grant::ClientCredentials;
    o.pre_registered = Some(confidential(Some(AS)));
    let bearer = r#"Bearer error="invalid_token""#;
    let r = drive(unauthorized(Some(bearer)), o.clone(), &w, None, &approve);
    assert!(
        matches!(r.err(), AuthError::WrongIssuer { .. }),
        "{:?}",
        r.result
    );
    assert!(
        r.urls().iter().all(|u| !u.starts_with("POST")),
        "{:?}",
        r.urls()
    );
    // Bound to that origin (the 2025-03-26 server that is its own authorization server), it
    // is used.
    let mut md = as_metadata(origin);
    md["token_endpoint"] = json!(format!("{origin}/token"));
    w.put(
        "GET",
        &format!("{origin}/.well-known/oauth-authorization-server"),
        200,
        md,
    );
    w.put(
        "POST",
        &format!("{origin}/token"),
        200,
        json!({"access_token": "LEGACY", "token_type": "Bearer"}),
    );
    o.pre_registered = Some(confidential(Some(origin)));
    let r = drive(unauthorized(Some(bearer)), o, &w, None, &approve);
    assert_eq!(r.ok().tokens.access_token.expose(), "LEGACY");
}

#[test]
fn a_pre_registered_secret_is_in_no_credentials_and_is_sent_on_every_token_request() {
    let mut o = options();
    o.pre_registered = Some(confidential(Some(AS)));
    let r = drive(
        unauthorized(None),
        o.clone(),
        &World::standard(),
        None,
        &approve,
    );
    let done = r.ok().clone();
    assert_eq!(done.client.kind, ClientKind::PreRegistered);
    assert_eq!(done.client.client_secret, None);
    assert!(!serde_json::to_string(&done).unwrap().contains("pre-secret"));
    let basic = "Basic cHJlOnByZS1zZWNyZXQ="; // pre:pre-secret
    assert_eq!(
        header(r.last_to("https://as.example.com/token"), "authorization"),
        Some(basic)
    );
    // A refresh of those credentials (in this run, or stored from an earlier one, even one
    // that kept the secret) sends the secret given now.
    let mut stale = done.clone();
    stale.tokens.expires_at = Some(unix(now()) - 1);
    stale.tokens.refresh_token = Some(Secret::new("RT0"));
    stale.client.client_secret = Some(Secret::new("an-old-stored-secret"));
    for r in [
        drive(
            start(Reason::Expired, None, Some(stale.clone())),
            o.clone(),
            &World::standard(),
            None,
            &approve,
        ),
        drive(
            unauthorized(None),
            o.clone(),
            &World::standard(),
            Some(stale),
            &approve,
        ),
    ] {
        let t = r.last_to("https://as.example.com/token");
        assert_eq!(form(t)["grant_type"], "refresh_token");
        assert_eq!(header(t, "authorization"), Some(basic));
        assert_eq!(r.ok().client.client_secret, None);
        assert!(!format!("{:?}", r.requests).contains("an-old-stored-secret"));
    }
    // Bound to another issuer, it never goes to this one, not even for a refresh.
    let mut other = done;
    other.tokens.expires_at = Some(unix(now()) - 1);
    other.tokens.refresh_token = Some(Secret::new("RT0"));
    o.pre_registered = Some(confidential(Some("https://other-as.example.com")));
    let r = drive(
        start(Reason::Expired, None, Some(other)),
        o,
        &World::standard(),
        None,
        &approve,
    );
    assert!(
        r.requests.iter().all(|q| header(q, "authorization").is_none()
            && !form(q).contains_key("client_secret")),
        "{:?}",
        r.urls()
    );
}

#[test]
fn urls_a_server_names_are_fetched_only_where_it_may_send_the_client() {
    // A resource_metadata the client may not fetch: the well-known URI instead.
    for challenge in [
        r#"Bearer resource_metadata="http://169.254.169.254/latest/meta-data/""#,
        r#"Bearer resource_metadata="https://192.168.1.1/admin/delete-all?confirm=yes""#,
        r#"Bearer resource_metadata="http://meta.example.com/prm""#,
        r#"Bearer resource_metadata="https://localhost:9999/prm""#,
    ] {
        let r = drive(
            unauthorized(Some(challenge)),
            options(),
            &World::standard(),
            None,
            &approve,
        );
        assert_eq!(r.urls()[0], format!("GET {PRM}"), "{challenge}");
        assert_eq!(r.ok().tokens.access_token.expose(), "AT1");
    }
    // When nothing is found, the error says why the challenge's URL was not used.
    let mut w = World::standard();
    w.remove("GET", PRM);
    let mut o = options();
    o.legacy_fallbacks = false;
    let r = drive(
        unauthorized(Some(
            r#"Bearer resource_metadata="https://10.0.0.1/prm?x=1""#,
        )),
        o,
        &w,
        None,
        &approve,
    );
    let AuthError::NoResourceMetadata { tried, .. } = r.err() else {
        panic!("{:?}", r.result);
    };
    assert_eq!(
        tried,
        &[
            "https://10.0.0.1/prm (not fetched: a private network address)".to_owned(),
            PRM.to_owned(),
            PRM_ROOT.to_owned()
        ]
    );
    // An issuer, or an endpoint, at an address the client does not fetch: refused, nothing
    // sent there, nobody asked to authorize.
    let issuers = [
        ("https://10.0.0.7", FetchRefusal::Private),
        ("https://[fd00:ec2::254]", FetchRefusal::CloudMetadata),
        (
            "https://metadata.google.internal",
            FetchRefusal::CloudMetadata,
        ),
        ("http://127.0.0.1:8080", FetchRefusal::Loopback),
        ("https://[fe80::1]", FetchRefusal::LinkLocal),
    ];
    for (issuer, why) in issuers {
        let mut w = World::standard();
        w.put(
            "GET",
            PRM,
            200,
            json!({"resource": MCP, "authorization_servers": [issuer]}),
        );
        let r = run(&w);
        assert!(
            matches!(r.err(), AuthError::RefusedUrl { reason, .. } if *reason == why),
            "{issuer}: {:?}",
            r.result
        );
        assert_eq!(r.urls(), [format!("GET {PRM}")], "{issuer}");
    }
    for endpoint in [
        "token_endpoint",
        "authorization_endpoint",
        "registration_endpoint",
    ] {
        let mut w = World::standard();
        let mut md = as_metadata(AS);
        md[endpoint] = json!("https://169.254.169.254/latest/");
        w.put("GET", AS_META, 200, md);
        let r = run(&w);
        assert!(
            matches!(
                r.err(),
                AuthError::RefusedUrl {
                    reason: FetchRefusal::CloudMetadata,
                    ..
                }
            ),
            "{endpoint}: {:?}",
            r.result
        );
        assert!(r.authorizations.is_empty());
        assert!(r.urls().iter().all(|u| u.starts_with("GET")));
    }
    // A stored token endpoint that was changed to one: the refresh is not sent there.
    let mut stale = credentials(AS, "OLD", Some("R"), Some(unix(now()) - 1));
    stale.token_endpoint = "http://192.168.0.1/token".into();
    let r = drive(
        start(Reason::Expired, None, Some(stale)),
        options(),
        &World::standard(),
        None,
        &approve,
    );
    assert!(
        matches!(
            r.err(),
            AuthError::RefusedUrl {
                reason: FetchRefusal::Private,
                ..
            }
        ),
        "{:?}",
        r.result
    );
    assert!(r.requests.is_empty());
    // An MCP server on this machine may name an authorization server on it (development,
    // tests): another port of localhost over plain HTTP.
    let local_mcp = "http://localhost:3000/mcp";
    let local_as = "http://127.0.0.1:4000";
    let mut w = World::standard();
    w.put(
        "GET",
        "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
        200,
        json!({"resource": local_mcp, "authorization_servers": [local_as]}),
    );
    w.put(
        "GET",
        &format!("{local_as}/.well-known/oauth-authorization-server"),
        200,
        as_metadata(local_as),
    );
    w.put(
        "POST",
        &format!("{local_as}/register"),
        201,
        json!({"client_id": "c1"}),
    );
    w.put(
        "POST",
        &format!("{local_as}/token"),
        200,
        json!({"access_token": "LOCAL", "token_type": "Bearer"}),
    );
    let local = FlowStart {
        resource_url: local_mcp.into(),
        ..unauthorized(None)
    };
    let r = drive(local, options(), &w, None, &approve);
    assert_eq!(r.ok().tokens.access_token.expose(), "LOCAL");
}

#[test]
fn a_redirect_without_this_flows_state_is_not_its_and_changes_nothing() {
    let mut flow = Flow::new(unauthorized(None), options(), RANDOM, now());
    let mut request = None;
    for _ in 0..16 {
        match flow.step().clone() {
            Step::Send(r) => {
                let (status, body) = World::standard().answer(&r);
                flow.on_response(status, &[], &body, now());
            }
            Step::Load { .. } => flow.on_loaded(None, now()),
            Step::Authorize(r) => {
                request = Some(r);
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    let request = request.expect("the flow asks for a person");
    let state = params(&request.url)["state"].clone();
    let before = format!("{:?}", flow.step());
    for (url, want) in [
        (
            format!("{REDIRECT}?code=evil&state=WRONG"),
            Redirect::NotOurs,
        ),
        (format!("{REDIRECT}?code=evil"), Redirect::NotOurs),
        (
            format!("{REDIRECT}?code=evil&state={state}x"),
            Redirect::NotOurs,
        ),
        (
            "http://127.0.0.1:7777/favicon.ico".to_owned(),
            Redirect::Elsewhere,
        ),
        (
            format!("http://127.0.0.1:7778/callback?state={state}"),
            Redirect::Elsewhere,
        ),
        ("not a url".to_owned(), Redirect::Elsewhere),
        (format!("{REDIRECT}?code=C&state={state}"), Redirect::Ours),
        // The person denied: still this flow's answer (its state), which then fails it.
        (
            format!("{REDIRECT}?error=access_denied&state={state}"),
            Redirect::Ours,
        ),
    ] {
        assert_eq!(flow.check_redirect(&url), want, "{url}");
    }
    assert_eq!(
        format!("{:?}", flow.step()),
        before,
        "checking changed the flow"
    );
    flow.on_redirect(&approve(&request));
    assert!(matches!(flow.step(), Step::Send(r) if r.url == "https://as.example.com/token"));
    // Once it is past waiting, nothing is its redirect any more.
    assert_eq!(
        flow.check_redirect(&format!("{REDIRECT}?code=C&state={state}")),
        Redirect::NotOurs
    );
}

#[test]
fn metadata_behind_same_origin_redirects_is_followed_and_still_checked() {
    // The resource metadata moved (301, then 308), the authorization server's too (302): each
    // followed on its origin, and the documents judged as before.
    let mut w = World::standard();
    let prm = w.docs.remove(&format!("GET {PRM}")).unwrap();
    w.docs
        .insert("GET https://mcp.example.com/meta/prm.json".into(), prm);
    w.redirect(PRM, 301, "/meta/moved");
    w.redirect(
        "https://mcp.example.com/meta/moved",
        308,
        "prm.json#fragment-never-sent",
    );
    let meta = w.docs.remove(&format!("GET {AS_META}")).unwrap();
    w.docs
        .insert("GET https://as.example.com/v2/metadata".into(), meta);
    w.redirect(AS_META, 302, "https://as.example.com/v2/metadata");
    let r = run(&w);
    assert_eq!(r.ok().issuer, AS);
    assert_eq!(
        r.urls()[..5],
        [
            format!("GET {PRM}"),
            "GET https://mcp.example.com/meta/moved".into(),
            "GET https://mcp.example.com/meta/prm.json".into(),
            format!("GET {AS_META}"),
            "GET https://as.example.com/v2/metadata".into(),
        ]
    );
    assert!(r.requests.iter().all(|q| !q.url.contains('#')));
    // Behind a redirect, the document must still name the issuer the well-known URL was made
    // from (RFC 8414 § 3.3).
    w.put(
        "GET",
        "https://as.example.com/v2/metadata",
        200,
        as_metadata("https://as.example.com/v2"),
    );
    let r = run(&w);
    assert!(
        r.err()
            .to_string()
            .contains("names the issuer https://as.example.com/v2"),
        "{}",
        r.err()
    );
}

/// The URLs a run that failed without the resource metadata tried, as its error lists them.
fn tried(r: &Run) -> Vec<String> {
    match r.err() {
        AuthError::NoResourceMetadata { tried, .. } => tried.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn metadata_redirects_elsewhere_in_circles_or_on_and_on_are_not_followed() {
    let evil = "https://evil.example.com/prm";
    let plain = "http://mcp.example.com/.well-known/oauth-protected-resource/mcp";
    let cases = [
        // To another origin: the MCP server named no such place.
        (
            "another origin",
            vec![(PRM, evil)],
            "another origin, https://evil.example.com",
        ),
        // From HTTPS to plain HTTP on the same host: another origin too (the scheme is part of
        // it), and what came over it could be anyone's.
        (
            "https to http",
            vec![(PRM, plain)],
            "another origin, http://mcp.example.com",
        ),
        // A loop, back to where it started.
        (
            "a loop",
            vec![
                (PRM, "https://mcp.example.com/a"),
                ("https://mcp.example.com/a", PRM),
            ],
            "a redirect loop back to",
        ),
        // More than three: the fourth is not followed.
        (
            "too many",
            vec![
                (PRM, "https://mcp.example.com/r1"),
                ("https://mcp.example.com/r1", "https://mcp.example.com/r2"),
                ("https://mcp.example.com/r2", "https://mcp.example.com/r3"),
                ("https://mcp.example.com/r3", "https://mcp.example.com/r4"),
            ],
            "more than 3 redirects",
        ),
    ];
    for (case, hops, says) in cases {
        let mut w = World::standard();
        w.remove("GET", PRM);
        w.put(
            "GET",
            "https://mcp.example.com/r4",
            200,
            json!({"resource": MCP, "authorization_servers": [AS]}),
        );
        for (from, to) in &hops {
            w.redirect(from, 307, to);
        }
        let r = run(&w);
        // Nothing fetched where it was not to go; the next well-known URL tried; the refusal
        // told in the list of URLs tried.
        for url in r.urls() {
            assert!(
                !url.contains("evil") && !url.contains("http://") && !url.ends_with("/r4"),
                "{case}: {:?}",
                r.urls()
            );
        }
        assert!(r.urls().contains(&format!("GET {PRM_ROOT}")), "{case}");
        let tried = tried(&r);
        assert!(
            tried
                .iter()
                .any(|t| t.contains(says) && t.contains("not followed")),
            "{case}: {tried:?}"
        );
        assert!(r.authorizations.is_empty());
    }
    // A redirect without a Location, or to something that is no URL: not followed either.
    let mut w = World::standard();
    w.remove("GET", PRM);
    w.redirect(PRM, 302, "https://user:pw@mcp.example.com/x");
    let tried = tried(&run(&w));
    assert!(
        tried.iter().any(|t| t.contains("without user info")),
        "{tried:?}"
    );
    assert!(!tried.iter().any(|t| t.contains("pw")), "{tried:?}");
}

const AS2: &str = "https://as2.example.com";
const AS2_META: &str = "https://as2.example.com/.well-known/oauth-authorization-server";

/// The standard world, with the resource listing `servers` and a second authorization server
/// (`AS2`) that registers `c2` and issues `AT2`.
fn two_servers(servers: &[&str]) -> World {
    let mut w = World::standard();
    w.put(
        "GET",
        PRM,
        200,
        json!({"resource": MCP, "authorization_servers": servers, "scopes_supported": ["files:read"]}),
    );
    w.put("GET", AS2_META, 200, as_metadata(AS2));
    w.put(
        "POST",
        &format!("{AS2}/register"),
        201,
        json!({"client_id": "c2"}),
    );
    w.put(
        "POST",
        &format!("{AS2}/token"),
        200,
        json!({"access_token": "AT2", "token_type": "Bearer", "expires_in": 3600}),
    );
    w
}

/// Whether the run sent anything but a metadata `GET` to `origin`.
fn posted_to(r: &Run, origin: &str) -> bool {
    r.requests
        .iter()
        .any(|q| q.url.starts_with(origin) && q.method != Method::Get)
        || r.authorizations.iter().any(|a| a.url.starts_with(origin))
}

#[test]
fn the_next_authorization_server_is_tried_when_one_has_no_usable_metadata() {
    // The first one listed has no metadata at all (404 at each well-known URL): the second is
    // used.
    let mut w = two_servers(&[AS, AS2]);
    w.remove("GET", AS_META);
    let r = run(&w);
    assert_eq!(r.ok().issuer, AS2);
    assert_eq!(r.ok().tokens.access_token.expose(), "AT2");
    assert!(!posted_to(&r, AS));
    assert_eq!(r.loads, [(AS2.to_owned(), MCP.to_owned())]);
    // One that names another issuer in its metadata (here, the second one's: an impostor) is
    // not used, and nothing it names is sent anything.
    let mut w = two_servers(&[AS, AS2]);
    let mut impostor = as_metadata(AS);
    impostor["issuer"] = json!(AS2);
    w.put("GET", AS_META, 200, impostor);
    let r = run(&w);
    assert_eq!(r.ok().issuer, AS2);
    assert!(!posted_to(&r, AS), "{:?}", r.urls());
    // One without PKCE: the same.
    let mut w = two_servers(&[AS, AS2]);
    let mut no_pkce = as_metadata(AS);
    no_pkce
        .as_object_mut()
        .unwrap()
        .remove("code_challenge_methods_supported");
    w.put("GET", AS_META, 200, no_pkce);
    assert_eq!(run(&w).ok().issuer, AS2);
}

#[test]
fn when_no_authorization_server_is_usable_each_one_says_why() {
    // Hostile: the first has no metadata, the second names another issuer in its own.
    let mut w = two_servers(&[AS, AS2]);
    w.remove("GET", AS_META);
    let mut other = as_metadata(AS2);
    other["issuer"] = json!("https://evil.example.com");
    w.put("GET", AS2_META, 200, other);
    let r = run(&w);
    let AuthError::NoUsableServer { resource, tried } = r.err() else {
        panic!("{:?}", r.result)
    };
    assert_eq!(resource, MCP);
    assert_eq!(tried.len(), 2, "{tried:?}");
    assert!(tried[0].contains(AS), "{tried:?}");
    assert!(
        tried[1].contains("names the issuer https://evil.example.com"),
        "{tried:?}"
    );
    assert!(r.loads.is_empty() && !posted_to(&r, AS) && !posted_to(&r, AS2));
    // One listed twice is tried once; at most five are tried.
    let many: Vec<String> = (0..8)
        .map(|i| format!("https://as{i}.example.net"))
        .collect();
    let mut listed: Vec<&str> = vec![many[0].as_str()];
    listed.extend(many.iter().map(String::as_str));
    let r = run(&two_servers(&listed));
    let AuthError::NoUsableServer { tried, .. } = r.err() else {
        panic!("{:?}", r.result)
    };
    assert_eq!(tried.len(), mcp_proto::oauth::MAX_AUTHORIZATION_SERVERS);
    assert!(!r.urls().iter().any(|u| u.contains("as5.example.net")));
}

#[test]
fn a_token_error_or_a_refusal_at_one_authorization_server_is_not_taken_elsewhere() {
    // The first server's metadata is good: what goes wrong after that (its token endpoint
    // refuses, the person says no) ends the flow; the second is never asked.
    let mut w = two_servers(&[AS, AS2]);
    w.put(
        "POST",
        &format!("{AS}/token"),
        400,
        json!({"error": "invalid_grant"}),
    );
    let r = run(&w);
    assert!(matches!(r.err(), AuthError::Token { .. }), "{:?}", r.result);
    assert!(
        r.urls().iter().all(|u| !u.contains("as2.")),
        "{:?}",
        r.urls()
    );
    let w = two_servers(&[AS, AS2]);
    let deny = |request: &AuthorizationRequest| {
        let p = params(&request.url);
        format!(
            "{}?error=access_denied&state={}&iss={}",
            request.redirect_uri, p["state"], request.issuer
        )
    };
    let r = drive(unauthorized(None), options(), &w, None, &deny);
    assert!(
        matches!(r.err(), AuthError::Denied { .. }),
        "{:?}",
        r.result
    );
    assert!(
        r.urls().iter().all(|u| !u.contains("as2.")),
        "{:?}",
        r.urls()
    );
}

#[test]
fn a_pre_registered_client_is_taken_to_its_own_server_among_several_and_to_no_other() {
    let secret = "SECRET-OF-AS2";
    let pre = |issuer: &str| PreRegistered {
        client_id: "m2m".into(),
        client_secret: Some(Secret::new(secret)),
        private_key: None,
        auth_method: None,
        issuer: Some(issuer.into()),
    };
    let mut o = options();
    o.grant = Grant::ClientCredentials;
    // Bound to the second one listed: it is tried first, and the first is never asked.
    o.pre_registered = Some(pre(AS2));
    let w = two_servers(&[AS, AS2]);
    let r = drive(unauthorized(None), o.clone(), &w, None, &approve);
    assert_eq!(r.ok().issuer, AS2);
    assert!(
        r.urls().iter().all(|u| !u.contains("//as.example.com")),
        "{:?}",
        r.urls()
    );
    // Listed after an impostor that claims its issuer: the impostor's document is not used
    // (its issuer is not the URL it came from), the secret goes to AS2's own token endpoint.
    let mut w = two_servers(&[AS, AS2]);
    let mut impostor = as_metadata(AS);
    impostor["issuer"] = json!(AS2);
    w.put("GET", AS_META, 200, impostor);
    o.pre_registered = Some(pre(AS2));
    let r = drive(unauthorized(None), o.clone(), &w, None, &approve);
    assert_eq!(r.ok().issuer, AS2);
    for q in &r.requests {
        let shown = format!(
            "{q:?} {:?}",
            String::from_utf8_lossy(q.body.as_deref().unwrap_or_default())
        );
        let basic = header(q, "authorization").unwrap_or_default();
        if !q.url.starts_with(AS2) {
            assert!(!shown.contains(secret) && basic.is_empty(), "{shown}");
        }
    }
    // Bound to a server none of them is: each one is passed over, nothing is sent anywhere.
    o.pre_registered = Some(pre("https://as3.example.com"));
    let r = drive(
        unauthorized(None),
        o,
        &two_servers(&[AS, AS2]),
        None,
        &approve,
    );
    let AuthError::NoUsableServer { tried, .. } = r.err() else {
        panic!("{:?}", r.result)
    };
    assert!(
        tried
            .iter()
            .all(|t| t.contains("is for https://as3.example.com")),
        "{tried:?}"
    );
    assert!(r.requests.iter().all(|q| q.method == Method::Get));
    assert!(!r.err().to_string().contains(secret));
}

#[test]
fn a_registration_is_reused_at_another_resource_of_the_same_server_only() {
    // Stored for another resource of the same authorization server: its registration (with
    // its secret), not its tokens.
    let mut other = credentials(AS, "OTHER-AT", Some("OTHER-RT"), None);
    other.resource = "https://mcp.example.com/other".into();
    other.client.client_secret = Some(Secret::new("REGISTERED-SECRET"));
    other.client.auth_method = AuthMethod::ClientSecretBasic;
    let w = World::standard();
    let reuse = |registration: Credentials, o: AuthOptions| {
        drive_with(
            unauthorized(None),
            o,
            &w,
            None,
            Some(registration),
            &approve,
        )
    };
    let r = reuse(other.clone(), options());
    assert!(
        !r.urls().iter().any(|u| u.ends_with("/register")),
        "{:?}",
        r.urls()
    );
    assert_eq!(
        params(&r.authorizations[0].url)["client_id"],
        "stored-client"
    );
    let c = r.ok();
    assert_eq!(
        (c.client.client_id.as_str(), c.resource.as_str()),
        ("stored-client", MCP)
    );
    assert_eq!(c.tokens.access_token.expose(), "AT1");
    // Its secret goes to its issuer's token endpoint; the other resource's tokens go nowhere.
    let t = r.last_to(&format!("{AS}/token"));
    assert!(header(t, "authorization").is_some_and(|b| b.starts_with("Basic ")));
    let sent = format!("{:?}", r.requests);
    assert!(
        !sent.contains("OTHER-AT") && !sent.contains("OTHER-RT"),
        "{sent}"
    );
    // Hostile: a registration of another issuer (a store with entries for two), one whose
    // secret expired, one that is a client metadata document or pre-registered: each is not
    // reused, and the flow registers.
    let mut elsewhere = other.clone();
    elsewhere.issuer = AS2.into();
    let mut expired = other.clone();
    expired.client.secret_expires_at = Some(unix(now()) - 1);
    let mut document = other.clone();
    document.client.kind = ClientKind::MetadataDocument;
    let mut pre = other.clone();
    pre.client.kind = ClientKind::PreRegistered;
    for (case, registration) in [
        ("another issuer", elsewhere),
        ("an expired secret", expired),
        ("a metadata document", document),
        ("a pre-registered client", pre),
    ] {
        let r = reuse(registration, options());
        assert!(
            r.urls().iter().any(|u| u.ends_with("/register")),
            "{case}: {:?}",
            r.urls()
        );
        assert_eq!(r.ok().client.client_id, "c1", "{case}");
        assert!(
            !format!("{:?}", r.requests).contains("REGISTERED-SECRET"),
            "{case}"
        );
    }
    // With a pre-registered client configured, that one is used.
    let mut o = options();
    o.pre_registered = Some(PreRegistered {
        client_id: "public-app".into(),
        client_secret: None,
        private_key: None,
        auth_method: None,
        issuer: None,
    });
    assert_eq!(reuse(other, o).ok().client.client_id, "public-app");
}
