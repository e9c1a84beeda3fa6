//! The `WWW-Authenticate` header: its challenges (RFC 9110 § 11.6.1) and the `Bearer` one's
//! parameters (RFC 6750 § 3, RFC 9728 § 5.1).

use crate::http::is_tchar;

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
    /// The challenge is the `DPoP` scheme's (RFC 9449 § 7.1), not `Bearer`'s: the resource
    /// asks for a DPoP-bound token (with `error="use_dpop_nonce"`, for a proof with its nonce).
    pub dpop: bool,
}

impl BearerChallenge {
    /// The challenge of a `WWW-Authenticate` value the client answers: the first `Bearer` one,
    /// else the first `DPoP` one (the same parameters, RFC 9449 § 7.1) — and the `DPoP` one
    /// first when it asks for a nonce (`error="use_dpop_nonce"`, RFC 9449 § 9).
    ///
    /// > "WWW-Authenticate: DPoP algs="ES256 PS256"" … "a resource server … supporting both
    /// > schemes … can include both" — RFC 9449 § 7.1
    pub fn from_header(header: &str) -> Option<BearerChallenge> {
        let all = parse_challenges(header);
        let dpop = |c: &&Challenge| c.scheme.eq_ignore_ascii_case("DPoP");
        let nonce = all
            .iter()
            .filter(dpop)
            .find(|c| c.param("error") == Some(super::dpop::USE_DPOP_NONCE));
        let c = nonce
            .or_else(|| all.iter().find(|c| c.scheme.eq_ignore_ascii_case("Bearer")))
            .or_else(|| all.iter().find(dpop))?;
        let get = |n: &str| c.param(n).map(str::to_owned);
        Some(BearerChallenge {
            resource_metadata: get("resource_metadata"),
            scope: get("scope"),
            error: get("error"),
            error_description: get("error_description"),
            dpop: c.scheme.eq_ignore_ascii_case("DPoP"),
        })
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
        assert!(!c.dpop);
    }

    #[test]
    fn a_dpop_challenge_is_read_when_there_is_no_bearer_one_or_it_asks_for_a_nonce() {
        let only = BearerChallenge::from_header(
            r#"DPoP resource_metadata="https://m.example/.well-known/oauth-protected-resource""#,
        )
        .unwrap();
        assert!(only.dpop);
        assert_eq!(
            only.resource_metadata.as_deref(),
            Some("https://m.example/.well-known/oauth-protected-resource")
        );
        let both = BearerChallenge::from_header(r#"Bearer scope="a", DPoP algs="ES256""#).unwrap();
        assert!(!both.dpop);
        assert_eq!(both.scope.as_deref(), Some("a"));
        let nonce =
            BearerChallenge::from_header(r#"Bearer, DPoP error="use_dpop_nonce", algs="ES256""#)
                .unwrap();
        assert!(nonce.dpop);
        assert_eq!(nonce.error.as_deref(), Some("use_dpop_nonce"));
    }
}
