//! DPoP (RFC 9449) in the core's OAuth flow and authorizer, as transcripts: every request
//! answered from a script, no network, no clock. When the flow signs its token requests, what a
//! proof holds, the authorization server's nonce (retried once, never looped), tokens bound to a
//! key (used and refreshed only with it), and the resource server's side: the `DPoP` scheme, a
//! fresh proof per request, its nonce retried once.

mod oauth_common;

use base64::Engine;
use mcp_proto::http::HttpRequest;
use mcp_proto::oauth::dpop::{DpopKey, DpopUse, MAX_DPOP_NONCE};
use mcp_proto::oauth::{
    Attempt, AuthMethod, AuthOptions, Authorizer, BearerChallenge, Client, ClientKind, Credentials,
    Flow, FlowStart, Grant, PreRegistered, Randomness, Reason, Secret, Step, Tokens, Verdict,
};
use oauth_common::{form, Run};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const MCP: &str = "https://mcp.example.com/mcp";
const PRM: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const AS: &str = "https://as.example.com";
const AS_META: &str = "https://as.example.com/.well-known/oauth-authorization-server";
const AS_TOKEN: &str = "https://as.example.com/token";
const NOW: u64 = 1_700_000_000;

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NOW)
}

fn key(seed: u8) -> Arc<DpopKey> {
    Arc::new(DpopKey::from_random(&[seed; 32]).unwrap())
}

type Answer = (u16, Vec<(String, String)>, Vec<u8>);

/// Each URL's answers, in order; the last one repeats.
struct World(HashMap<String, VecDeque<Answer>>);

impl World {
    fn new(algs: Option<Value>, prm_extra: Value) -> World {
        let mut w = World(HashMap::new());
        let mut prm = json!({"resource": MCP, "authorization_servers": [AS]});
        if let (Some(p), Some(extra)) = (prm.as_object_mut(), prm_extra.as_object()) {
            p.extend(extra.clone());
        }
        w.put(PRM, 200, &[], prm);
        let mut meta = json!({
            "issuer": AS,
            "token_endpoint": AS_TOKEN,
            "code_challenge_methods_supported": ["S256"],
        });
        if let Some(algs) = algs {
            meta["dpop_signing_alg_values_supported"] = algs;
        }
        w.put(AS_META, 200, &[], meta);
        w
    }

    fn put(&mut self, url: &str, status: u16, headers: &[(&str, &str)], body: Value) {
        let headers = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.0.entry(url.to_owned()).or_default().push_back((
            status,
            headers,
            body.to_string().into_bytes(),
        ));
    }

    fn answer(&mut self, url: &str) -> Answer {
        match self.0.get_mut(url) {
            Some(q) if q.len() > 1 => q.pop_front().unwrap(),
            Some(q) => q.front().cloned().unwrap(),
            None => (404, Vec::new(), b"{}".to_vec()),
        }
    }
}

fn dpop_token(token: &str) -> Value {
    json!({"access_token": token, "token_type": "DPoP", "expires_in": 3600, "refresh_token": "RT"})
}

fn options(dpop: DpopUse, key: Option<Arc<DpopKey>>) -> AuthOptions {
    let mut o = AuthOptions::new("http://127.0.0.1/callback");
    o.grant = Grant::ClientCredentials;
    o.pre_registered = Some(PreRegistered {
        client_id: "svc".into(),
        client_secret: Some(Secret::new("s3cret")),
        private_key: None,
        auth_method: None,
        issuer: Some(AS.into()),
    });
    o.dpop = dpop;
    o.dpop_key = key;
    o
}

/// A `401` whose only challenge is the `DPoP` scheme's.
fn dpop_challenge() -> Option<BearerChallenge> {
    BearerChallenge::from_header(&format!(r#"DPoP resource_metadata="{PRM}""#))
}

fn drive(
    start: FlowStart,
    options: AuthOptions,
    world: &mut World,
    stored: Option<Credentials>,
) -> Run {
    let random = Randomness {
        verifier: [1; 32],
        state: [2; 16],
    };
    let flow = Flow::new(start, options, random, now());
    oauth_common::drive(flow, |r| world.answer(&r.url), stored, now())
}

fn unauthorized(challenge: Option<BearerChallenge>) -> FlowStart {
    FlowStart {
        resource_url: MCP.into(),
        challenge,
        reason: Reason::Unauthorized,
        previous: None,
    }
}

/// Part `i` of a JWT (0: its header, 1: its claims), as JSON.
fn jwt_part(jwt: &str, i: usize) -> Value {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(jwt.split('.').nth(i).unwrap())
        .unwrap();
    serde_json::from_slice(&raw).unwrap()
}

fn proof_of(r: &HttpRequest) -> Option<(Value, Value)> {
    let proofs: Vec<&str> = r
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("dpop"))
        .map(|(_, v)| v.as_ref())
        .collect();
    assert!(proofs.len() <= 1, "one DPoP header at most: {proofs:?}");
    let jwt = proofs.first()?;
    let part = |i: usize| jwt_part(jwt, i);
    Some((part(0), part(1)))
}

#[test]
fn a_dpop_challenge_makes_the_token_request_carry_a_proof_and_binds_the_token_to_the_key() {
    let k = key(7);
    let mut world = World::new(Some(json!(["ES256", "RS256"])), json!({}));
    world.put(AS_TOKEN, 200, &[], dpop_token("AT"));
    let run = drive(
        unauthorized(dpop_challenge()),
        options(DpopUse::WhenAsked, Some(k.clone())),
        &mut world,
        None,
    );
    let c = run.ok();
    assert_eq!(c.tokens.dpop_jkt.as_deref(), Some(k.thumbprint().as_str()));
    let token = run.to(AS_TOKEN);
    assert_eq!(token.len(), 1);
    let (header, claims) = proof_of(token[0]).expect("a proof at the token endpoint");
    assert_eq!(header["typ"], "dpop+jwt");
    assert_eq!(header["alg"], "ES256");
    assert_eq!(&header["jwk"], k.public_jwk());
    assert_eq!(claims["htm"], "POST");
    assert_eq!(claims["htu"], AS_TOKEN);
    assert_eq!(claims["iat"], NOW);
    assert!(claims.get("ath").is_none(), "no token yet: no ath");
    assert!(claims.get("nonce").is_none());
    // The metadata requests carry none.
    assert!(run
        .requests
        .iter()
        .filter(|r| r.url != AS_TOKEN)
        .all(|r| proof_of(r).is_none()));
    // The store's copy names the key, never holds it.
    let stored = serde_json::to_string(c).unwrap();
    assert!(stored.contains(&k.thumbprint()) && !stored.contains("\"d\""));
}

#[test]
fn dpop_is_used_when_the_metadata_requires_it_or_the_application_asks_and_not_when_refused() {
    let k = key(7);
    let cases = [
        // (algs, PRM extra, use, challenge, proof expected)
        (
            Some(json!(["ES256"])),
            json!({"dpop_bound_access_tokens_required": true}),
            DpopUse::WhenAsked,
            None,
            true,
        ),
        (
            Some(json!(["ES256"])),
            json!({}),
            DpopUse::WhenAsked,
            None,
            false,
        ),
        (
            Some(json!(["ES256"])),
            json!({}),
            DpopUse::Always,
            None,
            true,
        ),
        // No list says nothing: the client tries.
        (None, json!({}), DpopUse::Always, None, true),
        // A list without ES256 refuses this client's proofs.
        (
            Some(json!(["RS256"])),
            json!({}),
            DpopUse::Always,
            None,
            false,
        ),
        (Some(json!([])), json!({}), DpopUse::Always, None, false),
        (
            Some(json!(["ES256"])),
            json!({}),
            DpopUse::Never,
            None,
            false,
        ),
    ];
    for (algs, prm, dpop, challenge, expected) in cases {
        let mut world = World::new(algs.clone(), prm.clone());
        world.put(
            AS_TOKEN,
            200,
            &[],
            json!({"access_token": "AT", "token_type": "Bearer"}),
        );
        let run = drive(
            unauthorized(challenge.clone()),
            options(dpop, Some(k.clone())),
            &mut world,
            None,
        );
        let signed = proof_of(run.to(AS_TOKEN)[0]).is_some();
        assert_eq!(signed, expected, "{algs:?} {prm} {dpop:?} {challenge:?}");
        // A Bearer answer to a proof is a Bearer token.
        assert_eq!(run.ok().tokens.dpop_jkt, None);
    }
    // Without a key, nothing is signed.
    let mut world = World::new(Some(json!(["ES256"])), json!({}));
    world.put(
        AS_TOKEN,
        200,
        &[],
        json!({"access_token": "AT", "token_type": "Bearer"}),
    );
    let run = drive(
        unauthorized(None),
        options(DpopUse::Always, None),
        &mut world,
        None,
    );
    assert!(proof_of(run.to(AS_TOKEN)[0]).is_none());
}

#[test]
fn a_resource_that_takes_dpop_tokens_only_is_told_apart_before_any_token_request() {
    let k = key(7);
    let cases = [
        // (algs, PRM extra, use, key, challenge, the reason told)
        (
            json!(["RS256"]),
            json!({}),
            DpopUse::WhenAsked,
            Some(k.clone()),
            dpop_challenge(),
            "takes no ES256 DPoP proofs",
        ),
        (
            json!([]),
            json!({}),
            DpopUse::Always,
            Some(k.clone()),
            dpop_challenge(),
            "takes no ES256 DPoP proofs",
        ),
        (
            json!(["ES256"]),
            json!({}),
            DpopUse::Never,
            Some(k.clone()),
            dpop_challenge(),
            "DPoP is turned off",
        ),
        (
            json!(["ES256"]),
            json!({}),
            DpopUse::WhenAsked,
            None,
            dpop_challenge(),
            "there is no DPoP key",
        ),
        (
            json!(["RS256"]),
            json!({"dpop_bound_access_tokens_required": true}),
            DpopUse::WhenAsked,
            Some(k.clone()),
            None,
            "takes no ES256 DPoP proofs",
        ),
    ];
    for (algs, prm, dpop, key, challenge, why) in cases {
        let mut world = World::new(Some(algs), prm);
        world.put(
            AS_TOKEN,
            200,
            &[],
            json!({"access_token": "AT", "token_type": "Bearer"}),
        );
        let run = drive(
            unauthorized(challenge),
            options(dpop, key),
            &mut world,
            None,
        );
        let e = run
            .result
            .as_ref()
            .expect_err("refused up front")
            .to_string();
        assert!(
            e.contains("takes DPoP-bound tokens only") && e.contains(why),
            "{e}"
        );
        assert!(run.to(AS_TOKEN).is_empty(), "{e}");
    }
    // A resource that takes both (a Bearer challenge beside the DPoP one) takes a Bearer token.
    let both = BearerChallenge::from_header(&format!(
        r#"Bearer resource_metadata="{PRM}", DPoP algs="ES256""#
    ));
    let mut world = World::new(Some(json!(["RS256"])), json!({}));
    world.put(
        AS_TOKEN,
        200,
        &[],
        json!({"access_token": "AT", "token_type": "Bearer"}),
    );
    let run = drive(
        unauthorized(both),
        options(DpopUse::WhenAsked, Some(k)),
        &mut world,
        None,
    );
    assert_eq!(run.ok().tokens.dpop_jkt, None);
}

fn expired_start(jkt: Option<String>) -> FlowStart {
    FlowStart {
        resource_url: MCP.into(),
        challenge: None,
        reason: Reason::Expired,
        previous: Some(credentials(jkt, NOW - 10)),
    }
}

#[test]
fn a_nonce_kept_from_an_earlier_flow_signs_the_first_token_request() {
    let k = key(7);
    let mut world = World::new(Some(json!(["ES256"])), json!({}));
    world.put(AS_TOKEN, 200, &[("DPoP-Nonce", "next")], dpop_token("AT"));
    let random = Randomness {
        verifier: [1; 32],
        state: [2; 16],
    };
    // A refresh (made by `new`) is signed again with the kept nonce.
    let mut flow = Flow::new(
        expired_start(Some(k.thumbprint())),
        options(DpopUse::WhenAsked, Some(k.clone())),
        random,
        now(),
    )
    .with_dpop_nonce(Some("kept"));
    let Step::Send(refresh) = flow.step().clone() else {
        panic!("a refresh first")
    };
    assert_eq!(proof_of(&refresh).unwrap().1["nonce"], "kept");
    let (status, headers, body) = world.answer(AS_TOKEN);
    flow.on_response(status, &headers, &body, now());
    assert!(matches!(flow.step(), Step::Done(_)));
    // The answer's nonce is the one to keep next.
    assert_eq!(flow.dpop_nonce(), Some("next"));
    // A kept value that is no nonce is dropped.
    let flow = Flow::new(
        expired_start(Some(k.thumbprint())),
        options(DpopUse::WhenAsked, Some(k)),
        random,
        now(),
    )
    .with_dpop_nonce(Some("bad nonce"));
    let Step::Send(refresh) = flow.step().clone() else {
        panic!("a refresh first")
    };
    assert!(proof_of(&refresh).unwrap().1.get("nonce").is_none());
    assert_eq!(flow.dpop_nonce(), None);
}

#[test]
fn a_dpop_token_the_client_did_not_ask_for_is_refused() {
    let mut world = World::new(Some(json!(["ES256"])), json!({}));
    world.put(AS_TOKEN, 200, &[], dpop_token("AT"));
    let run = drive(
        unauthorized(None),
        options(DpopUse::WhenAsked, Some(key(7))),
        &mut world,
        None,
    );
    let e = run.result.expect_err("unbound DPoP token").to_string();
    assert!(
        e.contains("DPoP-bound token") && e.contains("without a DPoP proof"),
        "{e}"
    );
    assert!(!e.contains("AT\"") && !e.contains("s3cret"), "{e}");
}

#[test]
fn the_authorization_servers_nonce_is_used_once_and_never_looped() {
    let k = key(7);
    let nonce_400 = json!({"error": "use_dpop_nonce", "error_description": "nonce"});
    // Asked once: the request goes again, with the nonce, and succeeds.
    let mut world = World::new(Some(json!(["ES256"])), json!({}));
    world.put(AS_TOKEN, 400, &[("DPoP-Nonce", "n-1")], nonce_400.clone());
    world.put(AS_TOKEN, 200, &[("DPoP-Nonce", "n-2")], dpop_token("AT"));
    let run = drive(
        unauthorized(dpop_challenge()),
        options(DpopUse::WhenAsked, Some(k.clone())),
        &mut world,
        None,
    );
    run.ok();
    let token = run.to(AS_TOKEN);
    assert_eq!(token.len(), 2);
    let (_, first) = proof_of(token[0]).unwrap();
    let (_, second) = proof_of(token[1]).unwrap();
    assert!(first.get("nonce").is_none());
    assert_eq!(second["nonce"], "n-1");
    assert_ne!(first["jti"], second["jti"], "a fresh jti for the retry");
    assert_eq!(form(token[0]), form(token[1]), "the same request otherwise");
    // Asked again after the retry: the flow fails with the server's answer, no third try.
    let mut world = World::new(Some(json!(["ES256"])), json!({}));
    world.put(AS_TOKEN, 400, &[("DPoP-Nonce", "n-1")], nonce_400.clone());
    let run = drive(
        unauthorized(dpop_challenge()),
        options(DpopUse::WhenAsked, Some(k.clone())),
        &mut world,
        None,
    );
    assert_eq!(run.to(AS_TOKEN).len(), 2);
    let e = run.result.expect_err("refused twice").to_string();
    assert!(e.contains("use_dpop_nonce"), "{e}");
    // A nonce too long, or of characters the RFC does not allow, is no nonce: no retry.
    for bad in [
        "n".repeat(MAX_DPOP_NONCE + 1),
        "a b".to_owned(),
        String::new(),
    ] {
        let mut world = World::new(Some(json!(["ES256"])), json!({}));
        world.put(
            AS_TOKEN,
            400,
            &[("DPoP-Nonce", bad.as_str())],
            nonce_400.clone(),
        );
        let run = drive(
            unauthorized(dpop_challenge()),
            options(DpopUse::WhenAsked, Some(k.clone())),
            &mut world,
            None,
        );
        assert_eq!(run.to(AS_TOKEN).len(), 1, "{}", bad.len());
        assert!(run.result.is_err());
    }
    // Without a proof sent, a use_dpop_nonce answer is an ordinary refusal.
    let mut world = World::new(Some(json!(["ES256"])), json!({}));
    world.put(AS_TOKEN, 400, &[("DPoP-Nonce", "n-1")], nonce_400);
    let run = drive(
        unauthorized(None),
        options(DpopUse::WhenAsked, Some(k)),
        &mut world,
        None,
    );
    assert_eq!(run.to(AS_TOKEN).len(), 1);
}

fn credentials(jkt: Option<String>, expires_at: u64) -> Credentials {
    Credentials {
        issuer: AS.into(),
        resource: MCP.into(),
        token_endpoint: AS_TOKEN.into(),
        client: Client {
            client_id: "svc".into(),
            client_secret: None,
            auth_method: AuthMethod::ClientSecretBasic,
            kind: ClientKind::PreRegistered,
            secret_expires_at: None,
        },
        tokens: Tokens {
            access_token: Secret::new("OLD"),
            issued_at: NOW - 3600,
            expires_at: Some(expires_at),
            refresh_token: Some(Secret::new("RT")),
            scope: None,
            requested_scope: None,
            dpop_jkt: jkt,
        },
    }
}

#[test]
fn stored_tokens_bound_to_another_key_are_neither_used_nor_refreshed() {
    let mine = key(7);
    let theirs = key(9);
    let mut world = World::new(Some(json!(["ES256"])), json!({}));
    world.put(AS_TOKEN, 200, &[], dpop_token("NEW"));
    // A fresh stored token, bound to another key: a new grant, not the stored token.
    let stored = credentials(Some(theirs.thumbprint()), NOW + 3600);
    let run = drive(
        unauthorized(dpop_challenge()),
        options(DpopUse::WhenAsked, Some(mine.clone())),
        &mut world,
        Some(stored),
    );
    assert_eq!(run.ok().tokens.access_token.expose(), "NEW");
    let token = run.to(AS_TOKEN);
    assert_eq!(token.len(), 1);
    assert_eq!(form(token[0])["grant_type"], "client_credentials");
    // The same stored token bound to this key is used as it is.
    let stored = credentials(Some(mine.thumbprint()), NOW + 3600);
    let run = drive(
        unauthorized(dpop_challenge()),
        options(DpopUse::WhenAsked, Some(mine.clone())),
        &mut world,
        Some(stored),
    );
    assert_eq!(run.ok().tokens.access_token.expose(), "OLD");
    assert!(run.to(AS_TOKEN).is_empty());
}

#[test]
fn an_expired_dpop_token_is_refreshed_with_a_proof_by_its_key_only() {
    let mine = key(7);
    let mut world = World::new(Some(json!(["ES256"])), json!({}));
    world.put(AS_TOKEN, 200, &[], dpop_token("REFRESHED"));
    let expired = |jkt| FlowStart {
        resource_url: MCP.into(),
        challenge: None,
        reason: Reason::Expired,
        previous: Some(credentials(jkt, NOW - 10)),
    };
    let run = drive(
        expired(Some(mine.thumbprint())),
        options(DpopUse::WhenAsked, Some(mine.clone())),
        &mut world,
        None,
    );
    let c = run.ok();
    assert_eq!(c.tokens.access_token.expose(), "REFRESHED");
    assert_eq!(
        c.tokens.dpop_jkt.as_deref(),
        Some(mine.thumbprint().as_str())
    );
    let token = run.to(AS_TOKEN);
    assert_eq!(form(token[0])["grant_type"], "refresh_token");
    let (_, claims) = proof_of(token[0]).expect("the refresh carries a proof");
    assert_eq!(claims["htu"], AS_TOKEN);
    // Bound to a key this client no longer has: no refresh goes out (the refresh token is
    // bound too); the flow gets a new grant instead.
    let run = drive(
        expired(Some(key(9).thumbprint())),
        options(DpopUse::WhenAsked, Some(mine)),
        &mut world,
        None,
    );
    run.ok();
    assert!(run
        .to(AS_TOKEN)
        .iter()
        .all(|r| form(r)["grant_type"] != "refresh_token"));
}

fn bound_authorizer(k: &Arc<DpopKey>) -> Authorizer {
    let mut a = Authorizer::new(MCP).with_dpop(Some(k.clone()), [3; 16]);
    a.install(credentials(Some(k.thumbprint()), NOW + 3600));
    a
}

#[test]
fn the_resource_gets_the_dpop_scheme_and_a_fresh_proof_bound_to_the_token_each_time() {
    let k = key(7);
    let mut a = bound_authorizer(&k);
    let value = a.authorization().unwrap();
    assert_eq!(value.expose(), "DPoP OLD");
    let one = a
        .dpop_proof(
            "POST",
            "https://mcp.example.com/mcp?session=1",
            value.expose(),
            now(),
        )
        .unwrap();
    let two = a
        .dpop_proof("POST", "https://mcp.example.com/mcp", value.expose(), now())
        .unwrap();
    let claims = |p: &str| jwt_part(p, 1);
    let (c1, c2) = (claims(&one), claims(&two));
    assert_ne!(c1["jti"], c2["jti"]);
    assert_eq!(c1["htu"], MCP, "no query in htu");
    assert_eq!(c1["ath"], mcp_proto::oauth::dpop::ath("OLD"));
    assert!(c1.get("nonce").is_none());
    // A Bearer value gets no proof; neither does one without a key.
    assert!(a.dpop_proof("POST", MCP, "Bearer OLD", now()).is_none());
    let mut keyless = Authorizer::new(MCP);
    assert!(keyless.dpop_proof("POST", MCP, "DPoP OLD", now()).is_none());
    // A Bearer token is sent as one.
    let mut b = Authorizer::new(MCP);
    b.install(credentials(None, NOW + 3600));
    assert_eq!(b.authorization().unwrap().expose(), "Bearer OLD");
}

#[test]
fn the_resource_servers_nonce_is_retried_once_then_the_401_is_an_authorization_matter() {
    let k = key(7);
    let mut a = bound_authorizer(&k);
    let g = a.generation();
    let header = format!(r#"DPoP error="use_dpop_nonce", resource_metadata="{PRM}""#);
    // No nonce kept: nothing to retry with, so the 401 is a 401.
    let mut attempt = Attempt::default();
    assert!(matches!(
        a.on_response(&mut attempt, g, 401, Some(&header)),
        Verdict::Authorize(_)
    ));
    // With the response's nonce: one retry, whose proof carries it.
    a.on_dpop_nonce("rs-nonce");
    let mut attempt = Attempt::default();
    assert_eq!(
        a.on_response(&mut attempt, g, 401, Some(&header)),
        Verdict::Retry
    );
    let proof = a.dpop_proof("POST", MCP, "DPoP OLD", now()).unwrap();
    let claims = jwt_part(&proof, 1);
    assert_eq!(claims["nonce"], "rs-nonce");
    // Asked again for the same request: no second retry.
    assert!(matches!(
        a.on_response(&mut attempt, g, 401, Some(&header)),
        Verdict::Authorize(_)
    ));
    // A hostile nonce is not kept (the last good one stays).
    a.on_dpop_nonce(&"x".repeat(MAX_DPOP_NONCE + 1));
    a.on_dpop_nonce("bad\u{7f}nonce");
    let proof = a.dpop_proof("POST", MCP, "DPoP OLD", now()).unwrap();
    let claims = jwt_part(&proof, 1);
    assert_eq!(claims["nonce"], "rs-nonce");
}
