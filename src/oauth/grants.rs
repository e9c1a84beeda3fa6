//! The JWT-bearer grants: a JWT presented as the authorization grant itself (RFC 7523 § 2.1),
//! for workload identity federation (a platform-issued JWT) and for enterprise-managed
//! authorization (an identity assertion grant, ID-JAG, which the client first gets from the
//! enterprise's identity provider by RFC 8693 token exchange).
//!
//! What is here: the identity provider's settings, the token-exchange request and its answer,
//! and the checks made on an assertion before it is sent. The flow (`flow.rs`) decides when.
//! No assertion, ID token or ID-JAG is ever put in an error: they are credentials.

use super::assertion::token_request;
use super::{AuthMethod, Client, ClientKind, Secret};
use crate::http::HttpRequest;
use serde::Deserialize;

/// `grant_type` of the JWT-bearer grant (RFC 7523 § 2.1).
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// `grant_type` of token exchange (RFC 8693 § 2.1).
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an identity assertion authorization grant (ID-JAG).
pub const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The token type of an OpenID Connect ID token (RFC 8693 § 3).
pub const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";

/// The most bytes of an assertion the client reads the claims of (and sends): far above any
/// real JWT (a few KiB), far below what could hurt.
pub const MAX_ASSERTION: usize = 64 * 1024;

/// How far past an assertion's `exp` the client still sends it, in seconds: none. A clock
/// ahead of the authorization server's only makes the client give up a few seconds early; the
/// server would refuse an expired assertion anyway ("The authorization server MUST reject any
/// JWT with an expiration time that has passed, subject to allowable clock skew" — RFC 7523
/// § 3), and sending it only to be refused helps nobody.
const EXP_LEEWAY: u64 = 0;

/// The enterprise's identity provider, for enterprise-managed authorization: where the client
/// exchanges the person's ID token for an ID-JAG, and how it authenticates there. All of it is
/// the application's configuration (not something a server said), and none of it is ever sent
/// anywhere but to [`token_endpoint`](Self::token_endpoint) — the ID token and the client's
/// secret at the identity provider go to the identity provider only.
///
/// > "the MCP Client … requests an Identity Assertion JWT Authorization Grant (ID-JAG) from the
/// > IdP using Token Exchange [RFC 8693] … The MCP Client then exchanges the ID-JAG for an access
/// > token at the MCP Server's authorization server using the JWT Bearer grant [RFC 7523]" —
/// > Enterprise-Managed Authorization extension (SEP-990, `io.modelcontextprotocol/
/// > enterprise-managed-authorization`)
#[derive(Clone, PartialEq, Eq)]
pub struct IdentityProvider {
    /// The identity provider's token endpoint (HTTPS; loopback HTTP only where the MCP server is
    /// on loopback too, as for every fetch of the flow).
    pub token_endpoint: String,
    /// This client's id at the identity provider.
    pub client_id: String,
    /// This client's secret at the identity provider (`client_secret_basic`), if it is a
    /// confidential client there; else the client id goes in the body (`none`).
    pub client_secret: Option<Secret>,
    /// The person's ID token from the identity provider (their single sign-on), the subject of
    /// the exchange.
    pub id_token: Secret,
}

impl std::fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("id_token", &"…")
            .finish()
    }
}

impl IdentityProvider {
    /// The token-exchange request for an ID-JAG for `audience` (the MCP server's authorization
    /// server's issuer) and `resource` (the MCP server), with `scope` if any.
    ///
    /// > "`audience` … The logical name of the target service where the client intends to use
    /// > the requested security token." / "`requested_token_type` … An identifier … for the type
    /// > of the requested security token." / "`subject_token` REQUIRED." / "`subject_token_type`
    /// > REQUIRED." — RFC 8693 § 2.1
    pub(super) fn exchange_request(
        &self,
        audience: &str,
        resource: &str,
        scope: Option<&str>,
    ) -> HttpRequest {
        let client = Client {
            client_id: self.client_id.clone(),
            client_secret: None,
            auth_method: match self.client_secret {
                Some(_) => AuthMethod::ClientSecretBasic,
                None => AuthMethod::None,
            },
            kind: ClientKind::PreRegistered,
            secret_expires_at: None,
        };
        let mut params = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT),
            ("requested_token_type", ID_JAG_TOKEN_TYPE),
            ("audience", audience),
            ("resource", resource),
            ("subject_token", self.id_token.expose()),
            ("subject_token_type", ID_TOKEN_TYPE),
        ];
        if let Some(scope) = scope {
            params.push(("scope", scope));
        }
        token_request(
            &self.token_endpoint,
            &client,
            self.client_secret.as_ref(),
            &params,
            None,
        )
    }
}

/// The identity provider's answer to a token exchange: the ID-JAG, once its type is checked.
///
/// > "`access_token` REQUIRED. The security token issued by the authorization server in response
/// > to the token exchange request. … `issued_token_type` REQUIRED. An identifier … for the
/// > representation of the issued security token." — RFC 8693 § 2.2.1
pub(super) fn exchanged_grant(body: &[u8]) -> Result<Secret, String> {
    #[derive(Deserialize)]
    struct Exchanged {
        access_token: String,
        issued_token_type: Option<String>,
    }
    let answer: Exchanged =
        serde_json::from_slice(body).map_err(|e| format!("not a token exchange answer: {e}"))?;
    match answer.issued_token_type.as_deref() {
        Some(ID_JAG_TOKEN_TYPE) => Ok(Secret::new(answer.access_token)),
        Some(other) => Err(format!(
            "the identity provider issued a {:?}, not an ID-JAG ({ID_JAG_TOKEN_TYPE})",
            crate::terminal::line(other)
        )),
        None => Err("the identity provider's answer has no issued_token_type".into()),
    }
}

/// Why an assertion is not sent: what its claims say, never the assertion itself.
///
/// > "The JWT MUST contain an "aud" (audience) claim containing a value that identifies the
/// > authorization server as an intended audience. The token endpoint URL of the authorization
/// > server MAY be used as a value for an "aud" element" / "The JWT MUST contain an "exp"
/// > (expiration time) claim that limits the time window during which the JWT can be used." —
/// > RFC 7523 § 3
///
/// The client is not the assertion's verifier (it has no key to check the signature with, and
/// it need not be able to read it at all): it only declines to send what the authorization
/// server must refuse — one not meant for it, or expired — so that a mistake in the
/// configuration is said as such, not as a server's `invalid_grant`.
pub(super) fn check_assertion(
    assertion: &str,
    issuer: &str,
    token_endpoint: &str,
    now: u64,
) -> Result<(), String> {
    use base64::Engine;
    if assertion.len() > MAX_ASSERTION {
        return Err(format!(
            "it is {} bytes, more than the {MAX_ASSERTION} this client sends",
            assertion.len()
        ));
    }
    let parts: Vec<&str> = assertion.trim().split('.').collect();
    let [_, payload, _] = parts.as_slice() else {
        return Err(format!(
            "it is not a JWT (a JWS in compact form has 3 parts, this has {})",
            parts.len()
        ));
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| "its claims are not base64url".to_owned())?;
    let claims: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&bytes)
        .map_err(|_| "its claims are not a JSON object".to_owned())?;
    let audiences: Vec<&str> = match claims.get("aud") {
        Some(serde_json::Value::String(a)) => vec![a.as_str()],
        Some(serde_json::Value::Array(a)) => a.iter().filter_map(|a| a.as_str()).collect(),
        _ => return Err("it has no aud claim".into()),
    };
    let same = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
    if !audiences
        .iter()
        .any(|a| same(a, issuer) || same(a, token_endpoint))
    {
        let shown: Vec<String> = audiences
            .iter()
            .take(4)
            .map(|a| format!("{:?}", crate::terminal::line(a)))
            .collect();
        return Err(format!(
            "its audience ({}) is not the authorization server {issuer} nor its token endpoint",
            shown.join(", ")
        ));
    }
    let Some(exp) = claims.get("exp").and_then(serde_json::Value::as_f64) else {
        return Err("it has no exp claim".into());
    };
    if exp < 0.0 || (exp as u64).saturating_add(EXP_LEEWAY) <= now {
        return Err(format!(
            "it expired {} s ago",
            now.saturating_sub(exp.max(0.0) as u64)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        use base64::Engine;
        let e = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        format!("{}.{}.sig", e(r#"{"alg":"ES256"}"#), e(claims))
    }

    const AS: &str = "https://as.example.com";
    const TOKEN: &str = "https://as.example.com/token";

    #[test]
    fn an_assertion_for_this_server_and_in_time_goes() {
        let ok = |claims: &str| check_assertion(&jwt(claims), AS, TOKEN, 1000);
        assert_eq!(ok(r#"{"aud":"https://as.example.com","exp":2000}"#), Ok(()));
        assert_eq!(
            ok(r#"{"aud":"https://as.example.com/","exp":2000}"#),
            Ok(())
        );
        assert_eq!(
            ok(r#"{"aud":["x","https://as.example.com/token"],"exp":1001}"#),
            Ok(())
        );
    }

    #[test]
    fn a_wrong_audience_an_expired_or_a_malformed_assertion_is_refused_without_its_text() {
        let refused = |a: &str| check_assertion(a, AS, TOKEN, 1000).unwrap_err();
        let wrong = refused(&jwt(r#"{"aud":"https://wrong.example","exp":2000}"#));
        assert!(wrong.contains("\"https://wrong.example\""), "{wrong}");
        assert!(
            refused(&jwt(r#"{"aud":"https://as.example.com","exp":1000}"#))
                .contains("expired 0 s ago")
        );
        assert!(
            refused(&jwt(r#"{"aud":"https://as.example.com","exp":10}"#))
                .contains("expired 990 s ago")
        );
        assert!(refused(&jwt(r#"{"aud":"https://as.example.com"}"#)).contains("no exp"));
        assert!(refused(&jwt(r#"{"exp":2000}"#)).contains("no aud"));
        assert!(refused(&jwt(r#"[1,2]"#)).contains("not a JSON object"));
        assert!(refused("a.b").contains("3 parts"));
        assert!(refused("a.!!!.c").contains("base64url"));
        let huge = "a".repeat(MAX_ASSERTION + 1);
        assert!(refused(&huge).contains("more than"));
        // The assertion's text is never in the reason.
        let secret = jwt(r#"{"aud":"https://wrong.example","exp":2000,"sub":"s3cr3t-subject"}"#);
        assert!(!refused(&secret).contains("s3cr3t"));
        assert!(!refused(&secret).contains(&secret));
    }

    #[test]
    fn a_token_exchange_asks_for_an_id_jag_for_the_server_with_the_id_token() {
        let idp = IdentityProvider {
            token_endpoint: "https://idp.example.com/token".into(),
            client_id: "mcp-client".into(),
            client_secret: None,
            id_token: Secret::new("the.id.token"),
        };
        let r = idp.exchange_request(AS, "https://mcp.example.com/mcp", Some("read"));
        assert_eq!(r.url, "https://idp.example.com/token");
        let body = String::from_utf8(r.body.unwrap()).unwrap();
        let pairs: Vec<(String, String)> = url::form_urlencoded::parse(body.as_bytes())
            .into_owned()
            .collect();
        let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("grant_type"), Some(TOKEN_EXCHANGE_GRANT));
        assert_eq!(get("requested_token_type"), Some(ID_JAG_TOKEN_TYPE));
        assert_eq!(get("subject_token_type"), Some(ID_TOKEN_TYPE));
        assert_eq!(get("subject_token"), Some("the.id.token"));
        assert_eq!(get("audience"), Some(AS));
        assert_eq!(get("resource"), Some("https://mcp.example.com/mcp"));
        assert_eq!(get("scope"), Some("read"));
        assert_eq!(get("client_id"), Some("mcp-client"));
        assert!(!r.headers.iter().any(|(k, _)| k == "Authorization"));
        // A confidential client at the identity provider authenticates there with Basic.
        let idp = IdentityProvider {
            client_secret: Some(Secret::new("idp-secret")),
            ..idp
        };
        let r = idp.exchange_request(AS, "https://mcp.example.com/mcp", None);
        assert!(r
            .headers
            .iter()
            .any(|(k, v)| k == "Authorization" && v.starts_with("Basic ")));
        assert!(!format!("{idp:?}").contains("idp-secret"));
        assert!(!format!("{idp:?}").contains("the.id.token"));
    }

    #[test]
    fn only_an_id_jag_is_taken_from_the_exchange() {
        let ok = exchanged_grant(
            br#"{"access_token":"jag","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}"#,
        )
        .unwrap();
        assert_eq!(ok.expose(), "jag");
        let wrong = exchanged_grant(
            br#"{"access_token":"at","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}"#,
        )
        .unwrap_err();
        assert!(wrong.contains("not an ID-JAG"), "{wrong}");
        assert!(exchanged_grant(br#"{"access_token":"at"}"#)
            .unwrap_err()
            .contains("no issued_token_type"));
        assert!(exchanged_grant(b"<html>").is_err());
    }
}
