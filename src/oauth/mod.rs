//! OAuth 2.1 for hosted MCP servers, as a sans-IO flow: the client reads a `401`'s
//! `WWW-Authenticate` challenge, discovers the authorization server (protected resource
//! metadata, then authorization server metadata), identifies itself (pre-registered, a client ID
//! metadata document, or dynamic registration), has a person authorize (PKCE S256, `state`,
//! `resource`, RFC 9207 `iss`), and exchanges the code for tokens; or, with a secret and no
//! person, uses the client credentials grant.
//!
//! - [`Flow`] makes every decision of one authorization: it says which HTTP request to make
//!   next ([`Step::Send`]), which stored credentials it wants ([`Step::Load`]), when a person
//!   must visit a URL ([`Step::Authorize`]), and ends with [`Step::Done`] (credentials) or
//!   [`Step::Failed`]. Time and randomness are inputs.
//! - [`Authorizer`] keeps one connection's credentials and decides, on each `401`/`403`, whether
//!   to retry, to run a flow (one refresh or re-authorization per request, at most
//!   [`MAX_STEP_UPS`] step-ups) or to fail.
//! - [`metadata`] reads the documents; the rest of this module the challenge, the discovery
//!   URLs and the PKCE pair.
//!
//! > "MCP clients **MUST** be able to parse `WWW-Authenticate` headers and respond appropriately
//! > to `HTTP 401 Unauthorized` responses from the MCP server." — MCP 2025-11-25, Authorization

mod authorizer;
mod flow;
pub mod metadata;

pub use authorizer::{Attempt, Authorizer, Verdict, MAX_STEP_UPS};
pub use flow::{
    ApplicationType, AuthError, AuthMethod, AuthOptions, AuthorizationRequest, Client, ClientKind,
    Credentials, Flow, FlowStart, Grant, PreRegistered, Randomness, Reason, Step, Tokens,
};

/// A secret (a token, a client secret): `Debug` shows `<redacted>`, and only [`Secret::expose`]
/// gives the value, so it never reaches a log line or an error message by accident. It
/// serializes as its plain string, for a token store.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value, for the one place it is sent.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// One challenge of a `WWW-Authenticate` header: its scheme, and its parameters (names in lower
/// case, values unquoted) or its `token68`.
///
/// > `challenge = auth-scheme [ 1*SP ( token68 / #auth-param ) ]`, `auth-param = token BWS "="
/// > BWS ( token / quoted-string )` — RFC 9110 § 11.6.1
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The scheme, as sent (compare case-insensitively).
    pub scheme: String,
    /// The parameters, in order; names lower-cased (they are case-insensitive).
    pub params: Vec<(String, String)>,
    /// A `token68` instead of parameters.
    pub token68: Option<String>,
}

impl Challenge {
    /// A parameter's value, by case-insensitive name (the first, if repeated).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The most challenges (and parameters per challenge) read from one header; the rest is ignored.
pub const MAX_CHALLENGE_PARTS: usize = 32;

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Reads every challenge of a `WWW-Authenticate` value. Malformed parts end the reading: what
/// was read before them is kept (a server's odd header never fails the caller).
pub fn parse_challenges(header: &str) -> Vec<Challenge> {
    let b = header.as_bytes();
    let mut i = 0;
    let mut out: Vec<Challenge> = Vec::new();
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t') {
            *i += 1;
        }
    };
    let token = |i: &mut usize| -> Option<String> {
        let start = *i;
        while *i < b.len() && is_tchar(b[*i]) {
            *i += 1;
        }
        (*i > start).then(|| header[start..*i].to_owned())
    };
    while i < b.len() && out.len() < MAX_CHALLENGE_PARTS {
        // Empty list elements (", ,") are allowed.
        skip_ws(&mut i);
        if i < b.len() && b[i] == b',' {
            i += 1;
            continue;
        }
        let Some(scheme) = token(&mut i) else { break };
        let mut challenge = Challenge {
            scheme,
            params: Vec::new(),
            token68: None,
        };
        skip_ws(&mut i);
        // Parameters (or a token68) until the next challenge.
        loop {
            skip_ws(&mut i);
            while i < b.len() && b[i] == b',' {
                i += 1;
                skip_ws(&mut i);
            }
            let mark = i;
            let Some(name) = token(&mut i) else { break };
            let mut j = i;
            skip_ws(&mut j);
            if j >= b.len() || b[j] != b'=' {
                // A token not followed by "=": the next challenge's scheme (or a token68).
                i = mark;
                break;
            }
            // `token68` is the token and its "=" padding with nothing after it, as the only thing
            // of its challenge; a parameter has a value after its one "=".
            if challenge.params.is_empty() && challenge.token68.is_none() && value_missing(b, j) {
                let mut k = j;
                while k < b.len() && b[k] == b'=' {
                    k += 1;
                }
                challenge.token68 = Some(header[mark..k].to_owned());
                i = k;
                continue;
            }
            i = j + 1;
            skip_ws(&mut i);
            let value = if i < b.len() && b[i] == b'"' {
                let Some((v, next)) = quoted(header, i) else {
                    out.push(challenge);
                    return out;
                };
                i = next;
                v
            } else {
                match token(&mut i) {
                    Some(v) => v,
                    None => break,
                }
            };
            if challenge.params.len() < MAX_CHALLENGE_PARTS {
                challenge.params.push((name.to_ascii_lowercase(), value));
            }
        }
        out.push(challenge);
        if i == b.len() {
            break;
        }
        // Garbage that is neither a parameter nor a scheme ends the reading.
        let before = i;
        skip_ws(&mut i);
        if i < b.len() && !is_tchar(b[i]) && b[i] != b',' {
            break;
        }
        if i == before && i < b.len() && is_tchar(b[i]) {
            continue;
        }
    }
    out
}

/// Whether the `=` at `eq` starts padding with no parameter value after it.
fn value_missing(b: &[u8], eq: usize) -> bool {
    let mut k = eq;
    while k < b.len() && b[k] == b'=' {
        k += 1;
    }
    while k < b.len() && (b[k] == b' ' || b[k] == b'\t') {
        k += 1;
    }
    k >= b.len() || b[k] == b','
}

/// A quoted-string starting at `start` (its `"`): the unescaped value and the index after it.
fn quoted(s: &str, start: usize) -> Option<(String, usize)> {
    let mut out = String::new();
    let mut chars = s[start + 1..].char_indices();
    while let Some((k, c)) = chars.next() {
        match c {
            '"' => return Some((out, start + 1 + k + 1)),
            '\\' => out.push(chars.next()?.1),
            c => out.push(c),
        }
    }
    None
}

/// What a `Bearer` challenge says (RFC 6750 § 3, RFC 9728 § 5.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// Where the protected resource metadata is (`resource_metadata`).
    pub resource_metadata: Option<String>,
    /// The scopes the request needs (`scope`, space-separated).
    pub scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`, …
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl BearerChallenge {
    /// The first `Bearer` challenge of a `WWW-Authenticate` value, if any.
    pub fn from_header(header: &str) -> Option<BearerChallenge> {
        let c = parse_challenges(header)
            .into_iter()
            .find(|c| c.scheme.eq_ignore_ascii_case("Bearer"))?;
        let get = |n: &str| c.param(n).map(str::to_owned);
        Some(BearerChallenge {
            resource_metadata: get("resource_metadata"),
            scope: get("scope"),
            error: get("error"),
            error_description: get("error_description"),
        })
    }
}

/// The protected resource metadata URLs to try for the MCP server at `mcp_url`, in order: the
/// challenge's `resource_metadata` when it gave a usable one, else the path-based then the root
/// well-known URI.
///
/// > "MCP clients **MUST** support both discovery mechanisms and use the resource metadata URL
/// > from the parsed `WWW-Authenticate` headers when present; otherwise, they **MUST** fall back
/// > to constructing and requesting the well-known URIs in the order listed above." — MCP
/// > 2025-11-25, Authorization § Protected Resource Metadata Discovery Requirements
pub fn resource_metadata_urls(mcp_url: &str, challenge: Option<&BearerChallenge>) -> Vec<String> {
    if let Some(url) = challenge
        .and_then(|c| c.resource_metadata.as_deref())
        .and_then(|u| url::Url::parse(u).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.username().is_empty())
    {
        return vec![url.into()];
    }
    let Ok(base) = url::Url::parse(mcp_url) else {
        return Vec::new();
    };
    let path = base.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(well_known(&base, "oauth-protected-resource", path));
    }
    urls.push(well_known(&base, "oauth-protected-resource", ""));
    urls
}

/// The authorization server metadata URLs to try for `issuer`, in the spec's priority order.
///
/// > "For issuer URLs with path components … clients **MUST** try endpoints in the following
/// > priority order: 1. OAuth 2.0 Authorization Server Metadata with path insertion … 2. OpenID
/// > Connect Discovery 1.0 with path insertion … 3. OpenID Connect Discovery 1.0 path appending"
/// > / without path components: "1. OAuth 2.0 Authorization Server Metadata … 2. OpenID Connect
/// > Discovery 1.0" — MCP 2025-11-25, Authorization § Authorization Server Metadata Discovery
pub fn authorization_server_metadata_urls(issuer: &str) -> Vec<String> {
    let Ok(base) = url::Url::parse(issuer) else {
        return Vec::new();
    };
    let path = base.path().trim_end_matches('/');
    if path.is_empty() {
        return vec![
            well_known(&base, "oauth-authorization-server", ""),
            well_known(&base, "openid-configuration", ""),
        ];
    }
    let mut appended = base.clone();
    appended.set_query(None);
    appended.set_fragment(None);
    appended.set_path(&format!("{path}/.well-known/openid-configuration"));
    vec![
        well_known(&base, "oauth-authorization-server", path),
        well_known(&base, "openid-configuration", path),
        appended.into(),
    ]
}

/// `scheme://authority/.well-known/{name}{path}` (no query, no fragment).
fn well_known(base: &url::Url, name: &str, path: &str) -> String {
    let mut u = base.clone();
    u.set_query(None);
    u.set_fragment(None);
    u.set_path(&format!("/.well-known/{name}{path}"));
    u.into()
}

/// A PKCE pair (RFC 7636): the `code_verifier` kept by the client, and its S256
/// `code_challenge` sent in the authorization request.
///
/// > "MCP clients **MUST** implement PKCE according to OAuth 2.1 … and **MUST** use the `S256`
/// > code challenge method when technically capable" — MCP 2025-11-25, Authorization
#[derive(Clone, PartialEq, Eq)]
pub struct Pkce {
    /// The verifier (43 characters of the unreserved set), sent in the token request.
    pub verifier: String,
    /// `BASE64URL(SHA256(verifier))`, sent in the authorization request.
    pub challenge: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The verifier is a secret until the token request.
        f.debug_struct("Pkce")
            .field("verifier", &"<redacted>")
            .field("challenge", &self.challenge)
            .finish()
    }
}

/// The code challenge method this client uses.
pub const PKCE_METHOD: &str = "S256";

impl Pkce {
    /// A pair from 32 random bytes (the caller's randomness: the core has none of its own).
    ///
    /// > "It is RECOMMENDED that the output of a suitable random number generator be used to
    /// > create a 32-octet sequence. The octet sequence is then base64url-encoded to produce a
    /// > 43-octet URL safe string to use as the code verifier." — RFC 7636 § 4.1
    pub fn from_random(random: [u8; 32]) -> Pkce {
        use base64::Engine;
        Pkce::from_verifier(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random))
    }

    /// The pair for a given verifier.
    ///
    /// > `code_challenge = BASE64URL-ENCODE(SHA256(ASCII(code_verifier)))` — RFC 7636 § 4.2
    pub fn from_verifier(verifier: String) -> Pkce {
        use base64::Engine;
        use sha2::Digest;
        let digest = sha2::Sha256::digest(verifier.as_bytes());
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
        Pkce {
            verifier,
            challenge,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn challenges_are_read_as_rfc_9110_writes_them() {
        let cases: &[(&str, Vec<Challenge>)] = &[
            (
                r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read""#,
                vec![Challenge {
                    scheme: "Bearer".into(),
                    params: p(&[
                        (
                            "resource_metadata",
                            "https://mcp.example.com/.well-known/oauth-protected-resource",
                        ),
                        ("scope", "files:read"),
                    ]),
                    token68: None,
                }],
            ),
            (
                r#"Basic realm="x, y", Bearer error=invalid_token,error_description="a \"quoted\" \\ word""#,
                vec![
                    Challenge {
                        scheme: "Basic".into(),
                        params: p(&[("realm", "x, y")]),
                        token68: None,
                    },
                    Challenge {
                        scheme: "Bearer".into(),
                        params: p(&[
                            ("error", "invalid_token"),
                            ("error_description", r#"a "quoted" \ word"#),
                        ]),
                        token68: None,
                    },
                ],
            ),
            (
                "Negotiate abc123==, Bearer",
                vec![
                    Challenge {
                        scheme: "Negotiate".into(),
                        params: vec![],
                        token68: Some("abc123==".into()),
                    },
                    Challenge {
                        scheme: "Bearer".into(),
                        params: vec![],
                        token68: None,
                    },
                ],
            ),
            (
                "Bearer  Scope = \"a b\" ,  ,REALM=r",
                vec![Challenge {
                    scheme: "Bearer".into(),
                    params: p(&[("scope", "a b"), ("realm", "r")]),
                    token68: None,
                }],
            ),
            ("", vec![]),
            (
                "Bearer realm=\"unterminated",
                vec![Challenge {
                    scheme: "Bearer".into(),
                    params: vec![],
                    token68: None,
                }],
            ),
        ];
        for (header, want) in cases {
            assert_eq!(&parse_challenges(header), want, "{header}");
        }
    }

    #[test]
    fn odd_headers_never_panic_and_stay_bounded() {
        for header in [
            "=",
            ",,,",
            "\"",
            "Bearer ===",
            "Bearer a=\"\\",
            "é Bearer",
            "Bearer a=b c=d",
            "\u{0}\u{7f}",
        ] {
            let _ = parse_challenges(header);
        }
        let many = "Bearer ".to_owned() + &"a=b,".repeat(10_000);
        let read = parse_challenges(&many);
        assert!(read[0].params.len() <= MAX_CHALLENGE_PARTS);
        let schemes = "A, ".repeat(10_000);
        assert!(parse_challenges(&schemes).len() <= MAX_CHALLENGE_PARTS);
    }

    #[test]
    fn the_bearer_challenge_is_found_among_others() {
        let c = BearerChallenge::from_header(
            r#"Basic realm="r", Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource""#,
        )
        .unwrap();
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(BearerChallenge::from_header("Basic realm=x"), None);
    }

    #[test]
    fn resource_metadata_is_looked_for_where_the_spec_says() {
        let challenge = BearerChallenge {
            resource_metadata: Some("https://meta.example.com/prm".into()),
            ..BearerChallenge::default()
        };
        assert_eq!(
            resource_metadata_urls("https://example.com/public/mcp", Some(&challenge)),
            ["https://meta.example.com/prm"]
        );
        assert_eq!(
            resource_metadata_urls("https://example.com/public/mcp?x=1", None),
            [
                "https://example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            resource_metadata_urls("http://127.0.0.1:8080/", None),
            ["http://127.0.0.1:8080/.well-known/oauth-protected-resource"]
        );
        // An unusable resource_metadata (not http(s), credentials) falls back.
        for bad in ["ftp://x/prm", "https://user:pw@x/prm", "not a url"] {
            let c = BearerChallenge {
                resource_metadata: Some(bad.into()),
                ..BearerChallenge::default()
            };
            assert_eq!(
                resource_metadata_urls("https://example.com/mcp", Some(&c))[0],
                "https://example.com/.well-known/oauth-protected-resource/mcp",
                "{bad}"
            );
        }
    }

    #[test]
    fn authorization_server_metadata_is_looked_for_in_the_spec_order() {
        assert_eq!(
            authorization_server_metadata_urls("https://auth.example.com/tenant1"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            authorization_server_metadata_urls("https://auth.example.com"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            authorization_server_metadata_urls("https://auth.example.com/"),
            authorization_server_metadata_urls("https://auth.example.com")
        );
        assert!(authorization_server_metadata_urls("nope").is_empty());
    }

    #[test]
    fn pkce_matches_rfc_7636_appendix_b() {
        // The RFC's example: these 32 octets, this verifier, this challenge.
        let random = [
            116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186, 22, 212,
            37, 77, 105, 214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121,
        ];
        let pkce = Pkce::from_random(random);
        assert_eq!(pkce.verifier, "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
        assert_eq!(
            pkce.challenge,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert_eq!(pkce.verifier.len(), 43);
        assert!(pkce
            .verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b)));
        assert!(
            !format!("{pkce:?}").contains(&pkce.verifier),
            "the verifier is not shown"
        );
    }
}
