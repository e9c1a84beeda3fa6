//! The JWT-bearer grants of the core's OAuth flow, as transcripts (the same harness idea as
//! `oauth_flow.rs`: every request answered from a table, no network, no clock): workload
//! identity federation (RFC 7523 § 2.1 with the platform's JWT) and enterprise-managed
//! authorization (RFC 8693 token exchange at the identity provider for an ID-JAG, then the
//! JWT-bearer grant). What is checked before sending, what goes where, and that no credential
//! ends up in an error.

mod oauth_common;

use mcp_proto::http::HttpRequest;
use mcp_proto::oauth::{
    AuthMethod, AuthOptions, Flow, FlowStart, Grant, IdentityProvider, PreRegistered, Randomness,
    Reason, Secret, ID_JAG_TOKEN_TYPE, JWT_BEARER_GRANT, TOKEN_EXCHANGE_GRANT,
};
use oauth_common::{form, Run};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const MCP: &str = "https://mcp.example.com/mcp";
const PRM: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const AS: &str = "https://as.example.com";
const AS_META: &str = "https://as.example.com/.well-known/oauth-authorization-server";
const AS_TOKEN: &str = "https://as.example.com/token";
const IDP_TOKEN: &str = "https://idp.example.com/oauth2/token";
const NOW: u64 = 1_000_000;

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NOW)
}

/// A JWT with these claims (the signature is not the client's to check).
fn jwt(claims: Value) -> String {
    use base64::Engine;
    let e = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    format!(
        "{}.{}.c2ln",
        e(&json!({"alg": "ES256", "typ": "JWT"})),
        e(&claims)
    )
}

fn platform_jwt() -> String {
    jwt(
        json!({"iss": "https://k8s.example", "sub": "system:serviceaccount:ns:agent", "aud": AS, "exp": NOW + 600}),
    )
}

struct World(HashMap<String, (u16, Vec<u8>)>);

impl World {
    fn new() -> World {
        let mut w = World(HashMap::new());
        w.put(
            PRM,
            200,
            json!({"resource": MCP, "authorization_servers": [AS]}),
        );
        w.put(
            AS_META,
            200,
            json!({
                "issuer": AS,
                "authorization_endpoint": format!("{AS}/authorize"),
                "token_endpoint": AS_TOKEN,
                "grant_types_supported": [JWT_BEARER_GRANT],
                "code_challenge_methods_supported": ["S256"],
            }),
        );
        w.put(
            AS_TOKEN,
            200,
            json!({"access_token": "AT1", "token_type": "Bearer", "expires_in": 3600}),
        );
        w.put(
            IDP_TOKEN,
            200,
            json!({
                "access_token": jwt(json!({"aud": AS, "exp": NOW + 300, "client_id": "mcp-app"})),
                "issued_token_type": ID_JAG_TOKEN_TYPE,
                "token_type": "N_A",
            }),
        );
        w
    }

    fn put(&mut self, url: &str, status: u16, body: Value) {
        self.0
            .insert(url.to_owned(), (status, body.to_string().into_bytes()));
    }
}

fn drive(options: AuthOptions, world: &World) -> Run {
    let start = FlowStart {
        resource_url: MCP.into(),
        challenge: None,
        reason: Reason::Unauthorized,
        previous: None,
    };
    let random = Randomness {
        verifier: [1; 32],
        state: [2; 16],
    };
    let flow = Flow::new(start, options, random, now());
    let answer = |r: &HttpRequest| {
        let url = r.url.split('?').next().unwrap();
        let (status, body) = world.0.get(url).cloned().unwrap_or((404, b"nope".to_vec()));
        (status, Vec::new(), body)
    };
    oauth_common::drive(flow, answer, None, now())
}

fn authorization(r: &HttpRequest) -> Option<&str> {
    r.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.as_ref())
}

fn workload(assertion: Option<String>) -> AuthOptions {
    let mut o = AuthOptions::new("http://127.0.0.1/callback");
    o.grant = Grant::JwtBearer;
    o.interactive = false;
    o.pre_registered = Some(PreRegistered {
        client_id: "agent-workload".into(),
        client_secret: None,
        private_key: None,
        auth_method: None,
        issuer: None,
    });
    o.jwt_assertion = assertion.map(Secret::new);
    o
}

fn enterprise() -> AuthOptions {
    let mut o = AuthOptions::new("http://127.0.0.1/callback");
    o.grant = Grant::EnterpriseManaged;
    o.pre_registered = Some(PreRegistered {
        client_id: "mcp-app".into(),
        client_secret: Some(Secret::new("as-secret")),
        private_key: None,
        auth_method: Some(AuthMethod::ClientSecretBasic),
        issuer: Some(AS.into()),
    });
    o.identity_provider = Some(IdentityProvider {
        token_endpoint: IDP_TOKEN.into(),
        client_id: "mcp-app-at-idp".into(),
        client_secret: Some(Secret::new("idp-secret")),
        id_token: Secret::new("the-persons-id-token"),
    });
    o
}

#[test]
fn a_workload_jwt_is_the_grant_with_the_resource_and_the_client_id() {
    let run = drive(workload(Some(platform_jwt())), &World::new());
    let creds = run.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(creds.tokens.access_token.expose(), "AT1");
    let token = run.to(AS_TOKEN);
    assert_eq!(token.len(), 1);
    let f = form(token[0]);
    assert_eq!(f["grant_type"], JWT_BEARER_GRANT);
    assert_eq!(f["assertion"], platform_jwt());
    assert_eq!(f["resource"], MCP);
    assert_eq!(f["client_id"], "agent-workload");
    assert!(authorization(token[0]).is_none());
    // The assertion is the application's: it is not kept with the tokens.
    assert!(!format!("{creds:?}").contains(&platform_jwt()));
}

#[test]
fn an_assertion_for_another_audience_or_expired_is_not_sent() {
    let cases = [
        (
            jwt(json!({"aud": "https://wrong.example", "exp": NOW + 600})),
            "is not the authorization server",
        ),
        (jwt(json!({"aud": AS, "exp": NOW - 60})), "expired 60 s ago"),
        (jwt(json!({"aud": AS})), "no exp claim"),
        ("not-a-jwt".to_owned(), "3 parts"),
        (format!("a.{}.c", "%%%"), "base64url"),
        ("x".repeat(70_000), "more than"),
    ];
    for (assertion, why) in cases {
        let run = drive(workload(Some(assertion.clone())), &World::new());
        let err = run.err();
        assert!(err.contains(why), "{why}: {err}");
        assert!(
            err.contains("was not sent to https://as.example.com"),
            "{err}"
        );
        assert!(run.to(AS_TOKEN).is_empty(), "{why}: sent anyway");
        assert!(!err.contains(&assertion), "the assertion is in the error");
    }
    // None given at all.
    let run = drive(workload(None), &World::new());
    assert!(
        run.err().contains("needs the workload's JWT"),
        "{}",
        run.err()
    );
}

#[test]
fn a_refused_grant_ends_the_flow_once_with_no_other_grant_tried() {
    for error in ["invalid_grant", "invalid_scope", "unauthorized_client"] {
        let mut w = World::new();
        w.put(
            AS_TOKEN,
            400,
            json!({"error": error, "error_description": "no"}),
        );
        let run = drive(workload(Some(platform_jwt())), &w);
        assert!(run.err().contains(error), "{}", run.err());
        let token = run.to(AS_TOKEN);
        assert_eq!(token.len(), 1, "{error}: retried");
        assert_eq!(form(token[0])["grant_type"], JWT_BEARER_GRANT);
        assert!(!run.requests.iter().any(|r| r.url.contains("/authorize")));
    }
}

#[test]
fn without_a_pre_registered_client_nothing_is_sent_to_the_token_endpoint() {
    let mut o = workload(Some(platform_jwt()));
    o.pre_registered = None;
    // No registration endpoint: no identity at all.
    let run = drive(o.clone(), &World::new());
    assert!(
        run.err()
            .contains("no client identity for https://as.example.com"),
        "{}",
        run.err()
    );
    assert!(run.to(AS_TOKEN).is_empty());
    // One there: still not registered dynamically (a workload's client is the operator's).
    let mut w = World::new();
    w.put(
        AS_META,
        200,
        json!({"issuer": AS, "token_endpoint": AS_TOKEN, "registration_endpoint": format!("{AS}/register")}),
    );
    let run = drive(o, &w);
    assert!(
        run.err()
            .contains("needs a client pre-registered with https://as.example.com"),
        "{}",
        run.err()
    );
    assert!(run
        .requests
        .iter()
        .all(|r| r.url != AS_TOKEN && !r.url.ends_with("/register")));
}

#[test]
fn enterprise_exchanges_the_id_token_at_the_idp_then_presents_the_id_jag() {
    let run = drive(enterprise(), &World::new());
    run.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    let urls: Vec<&str> = run.requests.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(urls, [PRM, AS_META, IDP_TOKEN, AS_TOKEN]);
    // At the identity provider: the exchange, the ID token, the IdP's own credentials.
    let idp = run.to(IDP_TOKEN)[0];
    let f = form(idp);
    assert_eq!(f["grant_type"], TOKEN_EXCHANGE_GRANT);
    assert_eq!(f["requested_token_type"], ID_JAG_TOKEN_TYPE);
    assert_eq!(f["subject_token"], "the-persons-id-token");
    assert_eq!(f["audience"], AS);
    assert_eq!(f["resource"], MCP);
    use base64::Engine;
    let basic = |id: &str, secret: &str| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"))
        )
    };
    assert_eq!(
        authorization(idp),
        Some(basic("mcp-app-at-idp", "idp-secret").as_str())
    );
    // At the authorization server: the ID-JAG, the AS's client credentials; never the ID token
    // or the identity provider's secret.
    let at = run.to(AS_TOKEN)[0];
    let f = form(at);
    assert_eq!(f["grant_type"], JWT_BEARER_GRANT);
    assert!(f["assertion"].contains('.'));
    assert_eq!(
        authorization(at),
        Some(basic("mcp-app", "as-secret").as_str())
    );
    let text = format!("{at:?}");
    assert!(!text.contains("the-persons-id-token") && !text.contains("idp-secret"));
    let text = format!("{idp:?}");
    assert!(!text.contains("as-secret"));
}

#[test]
fn enterprise_stops_at_an_idp_refusal_or_a_grant_that_is_not_an_id_jag() {
    let cases = [
        (
            400,
            json!({"error": "invalid_grant", "error_description": "stale ID token"}),
            "invalid_grant: stale ID token",
        ),
        (
            200,
            json!({"access_token": "x", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}),
            "not an ID-JAG",
        ),
        (200, json!({"access_token": "x"}), "no issued_token_type"),
        // An ID-JAG the IdP made for another authorization server is not passed on.
        (
            200,
            json!({"access_token": jwt(json!({"aud": "https://other-as.example", "exp": NOW + 300})), "issued_token_type": ID_JAG_TOKEN_TYPE}),
            "is not the authorization server",
        ),
        (
            200,
            json!({"access_token": jwt(json!({"aud": AS, "exp": NOW - 1})), "issued_token_type": ID_JAG_TOKEN_TYPE}),
            "expired",
        ),
    ];
    for (status, body, why) in cases {
        let mut w = World::new();
        w.put(IDP_TOKEN, status, body);
        let run = drive(enterprise(), &w);
        let err = run.err();
        assert!(err.contains(why), "{why}: {err}");
        assert!(run.to(AS_TOKEN).is_empty(), "{why}: went on to the AS");
        assert!(
            !err.contains("the-persons-id-token") && !err.contains("secret"),
            "{err}"
        );
    }
}

#[test]
fn enterprise_without_its_identity_provider_asks_for_it() {
    let mut o = enterprise();
    o.identity_provider = None;
    let run = drive(o, &World::new());
    assert!(
        run.err().contains("identity provider's settings"),
        "{}",
        run.err()
    );
    assert!(run
        .requests
        .iter()
        .all(|r| r.url != IDP_TOKEN && r.url != AS_TOKEN));
}
