//! The documents of discovery, read leniently where the RFCs allow and strictly where safety
//! needs it: protected resource metadata (RFC 9728), authorization server metadata (RFC 8414 /
//! OpenID Connect Discovery), and the answers of registration (RFC 7591) and of the token
//! endpoint (RFC 6749 § 5).

use super::Secret;
use serde_json::{Map, Value};

/// The largest metadata document, registration or token answer read (1 MiB); past it the
/// document is refused ([`DocumentError::TooLarge`]).
pub const MAX_DOCUMENT: usize = 1024 * 1024;

/// Why a document was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentError {
    /// Larger than [`MAX_DOCUMENT`].
    #[error("larger than {MAX_DOCUMENT} bytes")]
    TooLarge,
    /// Not a JSON object.
    #[error("not a JSON object")]
    NotAnObject,
    /// A required member is missing or has the wrong type.
    #[error("`{0}` is missing or not of its type")]
    Member(&'static str),
}

fn object(body: &[u8]) -> Result<Map<String, Value>, DocumentError> {
    if body.len() > MAX_DOCUMENT {
        return Err(DocumentError::TooLarge);
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(DocumentError::NotAnObject),
    }
}

fn string(map: &Map<String, Value>, name: &'static str) -> Result<Option<String>, DocumentError> {
    match map.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(DocumentError::Member(name)),
    }
}

fn required(map: &Map<String, Value>, name: &'static str) -> Result<String, DocumentError> {
    string(map, name)?
        .filter(|s| !s.is_empty())
        .ok_or(DocumentError::Member(name))
}

/// A list of strings; an absent or null member is `None`, a member of another type an error.
fn strings(
    map: &Map<String, Value>,
    name: &'static str,
) -> Result<Option<Vec<String>>, DocumentError> {
    match map.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or(DocumentError::Member(name)),
        Some(_) => Err(DocumentError::Member(name)),
    }
}

fn flag(map: &Map<String, Value>, name: &str) -> bool {
    map.get(name).and_then(Value::as_bool).unwrap_or(false)
}

/// Protected resource metadata (RFC 9728 § 2), the members the client uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceMetadata {
    /// `resource`: the protected resource's identifier.
    pub resource: Option<String>,
    /// `authorization_servers`: their issuer identifiers (at least one: a document without
    /// them is refused, the MCP spec requires them).
    pub authorization_servers: Vec<String>,
    /// `scopes_supported`.
    pub scopes_supported: Option<Vec<String>>,
    /// `dpop_bound_access_tokens_required` (RFC 9728 § 2): the resource takes DPoP-bound tokens
    /// only.
    pub dpop_bound_access_tokens_required: bool,
}

impl ResourceMetadata {
    /// Reads a document.
    ///
    /// > "The Protected Resource Metadata document returned by the MCP server **MUST** include
    /// > the `authorization_servers` field containing at least one authorization server." — MCP
    /// > 2025-11-25, Authorization § Authorization Server Location
    pub fn parse(body: &[u8]) -> Result<ResourceMetadata, DocumentError> {
        let map = object(body)?;
        let authorization_servers = strings(&map, "authorization_servers")?
            .filter(|s| !s.is_empty())
            .ok_or(DocumentError::Member("authorization_servers"))?;
        Ok(ResourceMetadata {
            resource: string(&map, "resource")?,
            authorization_servers,
            scopes_supported: strings(&map, "scopes_supported")?,
            dpop_bound_access_tokens_required: flag(&map, "dpop_bound_access_tokens_required"),
        })
    }
}

/// Authorization server metadata (RFC 8414 § 2; OpenID Connect Discovery § 3), the members the
/// client uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerMetadata {
    /// `issuer`, as sent.
    pub issuer: String,
    /// `authorization_endpoint` (required unless only grants without it are used).
    pub authorization_endpoint: Option<String>,
    /// `token_endpoint`.
    pub token_endpoint: String,
    /// `registration_endpoint`: dynamic registration (RFC 7591) is offered.
    pub registration_endpoint: Option<String>,
    /// `scopes_supported`.
    pub scopes_supported: Option<Vec<String>>,
    /// `token_endpoint_auth_methods_supported` (absent: `client_secret_basic`, RFC 8414 § 2).
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// `code_challenge_methods_supported` (absent: no PKCE, RFC 8414 § 2).
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// `grant_types_supported`.
    pub grant_types_supported: Option<Vec<String>>,
    /// `client_id_metadata_document_supported` (Client ID Metadata Documents).
    pub client_id_metadata_document_supported: bool,
    /// `authorization_response_iss_parameter_supported` (RFC 9207 § 3).
    pub authorization_response_iss_parameter_supported: bool,
    /// `dpop_signing_alg_values_supported` (RFC 9449 § 5.1): absent, the server may or may not
    /// take DPoP proofs.
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl ServerMetadata {
    /// Reads a document. The issuer is not compared here: the flow does that, with the issuer it
    /// built the document's URL from.
    pub fn parse(body: &[u8]) -> Result<ServerMetadata, DocumentError> {
        let map = object(body)?;
        Ok(ServerMetadata {
            issuer: required(&map, "issuer")?,
            authorization_endpoint: string(&map, "authorization_endpoint")?,
            token_endpoint: required(&map, "token_endpoint")?,
            registration_endpoint: string(&map, "registration_endpoint")?,
            scopes_supported: strings(&map, "scopes_supported")?,
            token_endpoint_auth_methods_supported: strings(
                &map,
                "token_endpoint_auth_methods_supported",
            )?,
            code_challenge_methods_supported: strings(&map, "code_challenge_methods_supported")?,
            grant_types_supported: strings(&map, "grant_types_supported")?,
            client_id_metadata_document_supported: flag(
                &map,
                "client_id_metadata_document_supported",
            ),
            authorization_response_iss_parameter_supported: flag(
                &map,
                "authorization_response_iss_parameter_supported",
            ),
            dpop_signing_alg_values_supported: strings(&map, "dpop_signing_alg_values_supported")?,
        })
    }

    /// Whether it lists `method` among its token endpoint authentication methods (with the
    /// RFC 8414 default, `client_secret_basic`, when it lists none).
    pub fn supports_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(list) => list.iter().any(|m| m == method),
            None => method == "client_secret_basic",
        }
    }
}

/// A dynamic registration's answer (RFC 7591 § 3.2.1), the members the client uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrationResponse {
    /// `client_id`.
    pub client_id: String,
    /// `client_secret`, for a confidential client.
    pub client_secret: Option<Secret>,
    /// `token_endpoint_auth_method`, as registered.
    pub token_endpoint_auth_method: Option<String>,
    /// `client_secret_expires_at` (seconds since the epoch; 0 or absent: never).
    pub client_secret_expires_at: Option<u64>,
}

impl RegistrationResponse {
    /// Reads an answer.
    pub fn parse(body: &[u8]) -> Result<RegistrationResponse, DocumentError> {
        let map = object(body)?;
        Ok(RegistrationResponse {
            client_id: required(&map, "client_id")?,
            client_secret: string(&map, "client_secret")?
                .filter(|s| !s.is_empty())
                .map(Secret::new),
            token_endpoint_auth_method: string(&map, "token_endpoint_auth_method")?,
            client_secret_expires_at: map
                .get("client_secret_expires_at")
                .and_then(Value::as_u64)
                .filter(|&t| t != 0),
        })
    }
}

/// A token endpoint's successful answer (RFC 6749 § 5.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenResponse {
    /// `access_token`.
    pub access_token: Secret,
    /// `token_type`: `Bearer` or `DPoP` (compared case-insensitively; a `DPoP` one is used only
    /// when the token request carried a proof: the flow checks).
    pub token_type: String,
    /// `expires_in`, seconds (a number, or a string of digits as some servers send).
    pub expires_in: Option<u64>,
    /// `refresh_token`.
    pub refresh_token: Option<Secret>,
    /// `scope`: what was granted, when the server says.
    pub scope: Option<String>,
}

impl TokenResponse {
    /// Reads an answer; a token of another type than `Bearer` or `DPoP` (RFC 9449 § 5) is
    /// refused (the client could not use it).
    pub fn parse(body: &[u8]) -> Result<TokenResponse, DocumentError> {
        let map = object(body)?;
        let token_type = required(&map, "token_type")?;
        if !token_type.eq_ignore_ascii_case("bearer") && !token_type.eq_ignore_ascii_case("dpop") {
            return Err(DocumentError::Member("token_type"));
        }
        let expires_in = match map.get("expires_in") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => n
                .as_u64()
                .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
            Some(Value::String(s)) => s.trim().parse().ok(),
            Some(_) => None,
        };
        Ok(TokenResponse {
            access_token: Secret::new(required(&map, "access_token")?),
            token_type,
            expires_in,
            refresh_token: string(&map, "refresh_token")?
                .filter(|s| !s.is_empty())
                .map(Secret::new),
            scope: string(&map, "scope")?,
        })
    }

    /// Whether the token is DPoP-bound (`token_type: DPoP`, RFC 9449 § 5).
    pub fn is_dpop(&self) -> bool {
        self.token_type.eq_ignore_ascii_case("dpop")
    }
}

/// An OAuth error answer (RFC 6749 § 5.2; RFC 7591 § 3.2.2): `error`, `error_description`.
/// Descriptions are cut at 200 characters and to one line, for messages.
pub fn error_answer(body: &[u8]) -> (Option<String>, Option<String>) {
    let Ok(map) = object(body) else {
        return (None, None);
    };
    let clean = |s: String| -> String {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(200)
            .collect()
    };
    (
        string(&map, "error").ok().flatten().map(clean),
        string(&map, "error_description").ok().flatten().map(clean),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_metadata_needs_an_authorization_server() {
        let ok = ResourceMetadata::parse(
            br#"{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://as.example.com"],"scopes_supported":["a","b"]}"#,
        )
        .unwrap();
        assert_eq!(ok.resource.as_deref(), Some("https://mcp.example.com/mcp"));
        assert_eq!(ok.authorization_servers, ["https://as.example.com"]);
        assert_eq!(ok.scopes_supported.unwrap(), ["a", "b"]);
        for bad in [
            &br#"{"resource":"x"}"#[..],
            br#"{"authorization_servers":[]}"#,
            br#"{"authorization_servers":"https://as"}"#,
            br#"{"authorization_servers":[1]}"#,
            br#"[]"#,
            b"not json",
        ] {
            assert!(ResourceMetadata::parse(bad).is_err(), "{:?}", bad);
        }
        assert_eq!(
            ResourceMetadata::parse(&vec![b' '; MAX_DOCUMENT + 1]),
            Err(DocumentError::TooLarge)
        );
    }

    #[test]
    fn server_metadata_reads_what_the_flow_needs() {
        let md = ServerMetadata::parse(
            br#"{"issuer":"https://as.example.com","authorization_endpoint":"https://as.example.com/a",
                "token_endpoint":"https://as.example.com/t","code_challenge_methods_supported":["S256"],
                "authorization_response_iss_parameter_supported":true,"client_id_metadata_document_supported":"yes"}"#,
        )
        .unwrap();
        assert_eq!(md.issuer, "https://as.example.com");
        assert!(md.authorization_response_iss_parameter_supported);
        // Only JSON `true` is true.
        assert!(!md.client_id_metadata_document_supported);
        assert!(md.supports_auth_method("client_secret_basic"));
        assert!(!md.supports_auth_method("none"));
        assert_eq!(
            ServerMetadata::parse(br#"{"issuer":"https://as","authorization_endpoint":"x"}"#),
            Err(DocumentError::Member("token_endpoint"))
        );
    }

    #[test]
    fn token_answers_are_bearer_tokens() {
        let t = TokenResponse::parse(
            br#"{"access_token":"at","token_type":"bearer","expires_in":"3600","refresh_token":"rt","scope":"a b"}"#,
        )
        .unwrap();
        assert_eq!(t.access_token.expose(), "at");
        assert_eq!(t.expires_in, Some(3600));
        assert_eq!(t.refresh_token.unwrap().expose(), "rt");
        assert!(TokenResponse::parse(br#"{"access_token":"at","token_type":"DPoP"}"#).is_ok());
        assert!(TokenResponse::parse(br#"{"access_token":"at","token_type":"mac"}"#).is_err());
        assert!(TokenResponse::parse(br#"{"token_type":"Bearer"}"#).is_err());
        // The secret does not show in Debug.
        let t = TokenResponse::parse(br#"{"access_token":"s3cr3t","token_type":"Bearer"}"#);
        assert!(!format!("{t:?}").contains("s3cr3t"));
    }

    #[test]
    fn error_answers_are_cut_for_messages() {
        let long = format!(
            r#"{{"error":"invalid_grant","error_description":"{}\nsecond"}}"#,
            "x".repeat(500)
        );
        let (e, d) = error_answer(long.as_bytes());
        assert_eq!(e.as_deref(), Some("invalid_grant"));
        assert_eq!(d.unwrap().chars().count(), 200);
        assert_eq!(error_answer(b"<html>"), (None, None));
    }
}
