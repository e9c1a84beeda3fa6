//! The settings of the HTTP rules ([`HttpConfig`]) and their validation ([`ConfigError`]).

use super::wire::{
    is_header_name, is_header_value, redact_url, RedactedHeaders, METHOD_HEADER, NAME_HEADER,
    PARAM_HEADER_PREFIX, PROTOCOL_VERSION_HEADER, SESSION_ID_HEADER,
};
use std::fmt;
use std::time::Duration;

/// Settings of the HTTP rules. Check them with [`validate`](Self::validate) before use; `Debug`
/// shows the URL without credentials or query and hides header values.
#[derive(Clone)]
pub struct HttpConfig {
    /// The MCP endpoint.
    pub url: String,
    /// Extra headers sent on every request (`Authorization`, say).
    pub headers: Vec<(String, String)>,
    /// Whether a 404 to a message carrying a session id starts a new session transparently
    /// (default true): a request that met it is resent in the new session, once per request; a
    /// notification or response is not resent. When false, or when the resent request gets a 404
    /// again, the request fails with the HTTP status and the session id is kept, so that later
    /// requests meet the 404 too.
    pub renew_expired_session: bool,
    /// How many times one response stream is resumed with `GET` + `Last-Event-ID` (default 5).
    pub max_resume_attempts: u32,
    /// The wait before resuming when the server gave no `retry` (default 1 s).
    pub default_retry: Duration,
    /// When the client opens the standalone `GET` stream on which the server sends requests and
    /// notifications unrelated to any of the client's requests (default
    /// [`StandaloneStream::WhenAnswering`]).
    pub standalone_stream: StandaloneStream,
}

/// When the client opens the standalone event stream (`HttpRules::listen`).
///
/// > "The client MAY issue an HTTP GET to the MCP endpoint. This can be used to open an SSE
/// > stream, allowing the server to communicate to the client, without the client first sending
/// > data via HTTP POST." / "The server MUST either return Content-Type: text/event-stream in
/// > response to this HTTP GET, or else return HTTP 405 Method Not Allowed, indicating that the
/// > server does not offer an SSE stream at this endpoint." — MCP 2025-11-25, Transports §
/// > Listening for Messages from the Server
///
/// Only in the legacy era: a modern server has no such stream (it answers the `GET` 405).
///
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StandaloneStream {
    /// When the client declared a capability in `initialize`: it then answers requests the
    /// server may send at any time (servers built on the TypeScript SDK send a tool's
    /// `elicitation/create` there unless the tool names its own request).
    #[default]
    WhenAnswering,
    /// After every handshake.
    Always,
    /// Never: what the server sends outside a response stream is not received.
    Never,
}

impl HttpConfig {
    /// Defaults for an endpoint.
    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig {
            url: url.into(),
            headers: Vec::new(),
            renew_expired_session: true,
            max_resume_attempts: 5,
            default_retry: Duration::from_secs(1),
            standalone_stream: StandaloneStream::default(),
        }
    }

    /// Checks the settings a server never sees being refused: the URL is `http://` or `https://`
    /// and carries no credentials, and every extra header has a valid name and a value of visible
    /// ASCII, spaces and tabs (no other byte can go in a header unmangled), and is not one of the
    /// headers the rules set themselves.
    ///
    /// > "field-name = token", "field-value = *( field-content / obs-fold )", and "a recipient
    /// > SHOULD treat other octets in field content (obs-text) as opaque data" — RFC 7230 § 3.2
    ///
    /// Credentials in the URL (`http://user:pass@host`) are refused rather than dropped: HTTP
    /// clients do not send them, so they would be silently lost.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let lower = self.url.to_ascii_lowercase();
        let Some(rest) = lower
            .strip_prefix("http://")
            .or_else(|| lower.strip_prefix("https://"))
        else {
            return Err(ConfigError::NotHttp {
                url: redact_url(&self.url),
            });
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if authority.contains('@') {
            return Err(ConfigError::Credentials);
        }
        if authority.is_empty() {
            return Err(ConfigError::NotHttp {
                url: redact_url(&self.url),
            });
        }
        for (name, value) in &self.headers {
            check_header(name, value)?;
            let mirrored = name.len() >= PARAM_HEADER_PREFIX.len()
                && name.as_bytes()[..PARAM_HEADER_PREFIX.len()]
                    .eq_ignore_ascii_case(PARAM_HEADER_PREFIX.as_bytes());
            if mirrored
                || RESERVED_HEADERS
                    .iter()
                    .any(|r| r.eq_ignore_ascii_case(name))
            {
                return Err(ConfigError::ReservedHeader { name: name.clone() });
            }
        }
        Ok(())
    }
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("url", &redact_url(&self.url))
            .field("headers", &RedactedHeaders(&self.headers))
            .field("renew_expired_session", &self.renew_expired_session)
            .field("max_resume_attempts", &self.max_resume_attempts)
            .field("default_retry", &self.default_retry)
            .field("standalone_stream", &self.standalone_stream)
            .finish()
    }
}

/// The headers the rules (or the body's framing) set on their own; an extra header may not
/// override them.
const RESERVED_HEADERS: &[&str] = &[
    "Content-Type",
    "Accept",
    SESSION_ID_HEADER,
    PROTOCOL_VERSION_HEADER,
    "Last-Event-ID",
    "Content-Length",
    "Transfer-Encoding",
    // The modern era mirrors the body into these (and into `Mcp-Param-*`).
    METHOD_HEADER,
    NAME_HEADER,
];

/// Why an [`HttpConfig`] cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The URL is not `http://host…` or `https://host…`.
    #[error("the MCP endpoint {url} is not an http:// or https:// URL")]
    NotHttp {
        /// The URL, without credentials or query.
        url: String,
    },
    /// The URL carries user info.
    #[error("the MCP endpoint URL carries credentials (user:password@); they would not be sent: pass an Authorization header instead")]
    Credentials,
    /// A header name is not an HTTP token.
    #[error("header name {name:?} is not a valid HTTP header name")]
    HeaderName {
        /// The name.
        name: String,
    },
    /// A header value holds a byte other than visible ASCII, space or tab (the value is not shown).
    #[error("the value of header {name} may only hold visible ASCII characters, spaces and tabs")]
    HeaderValue {
        /// The header's name.
        name: String,
    },
    /// A header the rules set themselves.
    #[error("header {name} is set by the transport and cannot be given")]
    ReservedHeader {
        /// The name.
        name: String,
    },
}

fn check_header(name: &str, value: &str) -> Result<(), ConfigError> {
    if !is_header_name(name) {
        return Err(ConfigError::HeaderName {
            name: name.to_owned(),
        });
    }
    if !is_header_value(value) {
        return Err(ConfigError::HeaderValue {
            name: name.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::fixtures::h;
    use crate::http::{HttpError, HttpRequest, Method};

    #[test]
    fn headers_and_urls_are_validated() {
        let ok = |url: &str, headers: &[(&str, &str)]| {
            HttpConfig {
                headers: h(headers),
                ..HttpConfig::new(url)
            }
            .validate()
        };
        assert_eq!(
            ok("http://127.0.0.1:1/mcp", &[("Authorization", "Bearer t")]),
            Ok(())
        );
        assert_eq!(
            ok("HTTPS://example.com/mcp?key=1", &[("X-A", "a\tb c")]),
            Ok(())
        );
        assert_eq!(
            ok("http://bob:hunter2@127.0.0.1/mcp", &[]),
            Err(ConfigError::Credentials)
        );
        assert!(!ConfigError::Credentials.to_string().contains("hunter2"));
        assert!(matches!(
            ok("ftp://h/", &[]),
            Err(ConfigError::NotHttp { .. })
        ));
        assert!(matches!(
            ok("http:///mcp", &[]),
            Err(ConfigError::NotHttp { .. })
        ));
        assert_eq!(
            ok("http://h/", &[("X-User", "Jos\u{e9}")]),
            Err(ConfigError::HeaderValue {
                name: "X-User".into()
            })
        );
        assert!(matches!(
            ok("http://h/", &[("X-A", "a\r\nX-B: 1")]),
            Err(ConfigError::HeaderValue { .. })
        ));
        assert!(matches!(
            ok("http://h/", &[("Bad Name", "v")]),
            Err(ConfigError::HeaderName { .. })
        ));
        assert!(matches!(
            ok("http://h/", &[("mcp-session-id", "v")]),
            Err(ConfigError::ReservedHeader { .. })
        ));
        let bad = HttpRequest {
            method: Method::Get,
            url: "http://u:p@h/mcp?k=SECRET".into(),
            headers: vec![("Last-Event-ID".into(), "caf\u{e9}".into())],
            body: None,
        };
        assert_eq!(
            bad.check(),
            Err(HttpError::InvalidHeader {
                name: "Last-Event-ID".into(),
                url: "http://h/mcp".into()
            })
        );
    }
}
