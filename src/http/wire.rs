//! The wire vocabulary of Streamable HTTP: the requests the rules build ([`HttpRequest`],
//! [`Method`]), every header name the transport sets, HTTP's syntax for header names and values,
//! and how a URL may appear in a message ([`redact_url`]). It depends on nothing else in
//! [`http`](super) but the error a request check returns.

use super::error::HttpError;
use std::borrow::Cow;
use std::fmt;

/// The header carrying the session id (header names compare case-insensitively).
pub const SESSION_ID_HEADER: &str = "Mcp-Session-Id";
/// The header carrying the negotiated protocol revision after the handshake.
pub const PROTOCOL_VERSION_HEADER: &str = "MCP-Protocol-Version";
/// The header mirroring a request's `method`.
pub const METHOD_HEADER: &str = "Mcp-Method";
/// The header mirroring `params.name` (`tools/call`, `prompts/get`) or `params.uri`
/// (`resources/read`).
pub const NAME_HEADER: &str = "Mcp-Name";
/// What precedes an `x-mcp-header` value in the name of the header it makes.
pub const PARAM_HEADER_PREFIX: &str = "Mcp-Param-";

/// Whether `b` may appear in a token: visible ASCII except the delimiters. The one copy of the
/// rule: header names, and the schemes and parameter names of a `WWW-Authenticate` challenge.
///
/// > `tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|"
/// > / "~" / DIGIT / ALPHA` — RFC 9110 § 5.6.2
pub(crate) fn is_tchar(b: u8) -> bool {
    TCHAR[usize::from(b)]
}

/// [`is_tchar`] for each byte: one load a byte, where every request's header names are checked.
static TCHAR: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    table
};

/// Whether `name` can be sent as a header name: a token.
///
/// > `field-name = token`, `token = 1*tchar` — RFC 9110 § 5.1, § 5.6.2
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(is_tchar)
}

/// Whether `value` can be sent as a header value: visible ASCII, spaces and tabs only. (HTTP
/// libraries refuse control characters, and some panic on bytes above 0x7e.)
pub fn is_header_value(value: &str) -> bool {
    // Every byte looked at, without an early exit: the compiler checks many a cycle (header
    // values are short, and almost all pass).
    value.bytes().fold(true, |ok, b| {
        ok & (b == b'\t' || (0x20..=0x7e).contains(&b))
    })
}

/// Every response header the rules read ([`HttpRules::on_head`](super::HttpRules::on_head),
/// [`HttpRules::listen_head`](super::HttpRules::listen_head)), in lower case: a driver may hand
/// them only these (each response's other headers would be copied for nothing).
pub const RESPONSE_HEADERS_READ: [&str; 4] = [
    "content-type",
    "mcp-session-id",
    "location",
    "www-authenticate",
];

/// Whether the rules read the response header `name` (see [`RESPONSE_HEADERS_READ`]).
pub fn rules_read_header(name: &str) -> bool {
    RESPONSE_HEADERS_READ
        .iter()
        .any(|h| h.eq_ignore_ascii_case(name))
}

/// A header's value, by case-insensitive name (a response's headers, or a request's).
pub fn header<'h, K: AsRef<str>, V: AsRef<str>>(
    headers: &'h [(K, V)],
    name: &str,
) -> Option<&'h str> {
    headers
        .iter()
        .find(|(k, _)| k.as_ref().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_ref())
}

/// `url` as it may appear in an error message or a log: `scheme://host:port/path`, without user
/// info (`user:password@`), query or fragment, which often carry credentials or API keys.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    let rest = &rest[..end];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{scheme}{host}{path}")
}

/// Header pairs for `Debug`: names shown, values hidden.
pub(super) struct RedactedHeaders<'a, K, V>(pub(super) &'a [(K, V)]);

impl<K: AsRef<str>, V> fmt::Debug for RedactedHeaders<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| (name.as_ref(), "<redacted>")))
            .finish()
    }
}

/// An HTTP method this transport uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Every client message.
    Post,
    /// Resuming a response stream.
    Get,
    /// Ending the session.
    Delete,
}

impl Method {
    /// The method's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Post => "POST",
            Method::Get => "GET",
            Method::Delete => "DELETE",
        }
    }
}

/// A header name or value of an [`HttpRequest`]. Most are the protocol's own constants
/// (`Accept`, `Content-Type`, the revision, the header names), borrowed, so that a request
/// copies nothing for them; a session id, a token or a configured header is owned.
pub type HeaderText = Cow<'static, str>;

/// One HTTP request to make. `Debug` hides header values and the URL's credentials and query.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// The method.
    pub method: Method,
    /// The URL.
    pub url: String,
    /// Headers, in order.
    pub headers: Vec<(HeaderText, HeaderText)>,
    /// The body, for a POST.
    pub body: Option<Vec<u8>>,
}

impl HttpRequest {
    /// Checks that every header can be sent as it is (see [`is_header_name`] and
    /// [`is_header_value`]); a driver calls it before handing the request to its HTTP library.
    pub fn check(&self) -> Result<(), HttpError> {
        match self
            .headers
            .iter()
            .find(|(name, value)| !is_header_name(name) || !is_header_value(value))
        {
            Some((name, _)) => Err(HttpError::InvalidHeader {
                name: name.to_string(),
                url: redact_url(&self.url),
            }),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &redact_url(&self.url))
            .field("headers", &RedactedHeaders(&self.headers))
            .field("body", &self.body.as_ref().map(Vec::len))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headers_read_are_the_ones_named_here() {
        assert!(RESPONSE_HEADERS_READ
            .iter()
            .any(|h| h.eq_ignore_ascii_case(SESSION_ID_HEADER)));
        assert!(rules_read_header("Content-Type") && rules_read_header("WWW-Authenticate"));
        assert!(!rules_read_header("date") && !rules_read_header("transfer-encoding"));
    }

    #[test]
    fn the_byte_rules_are_rfc_9110s_for_every_byte() {
        for b in 0..=255u8 {
            let tchar = b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            assert_eq!(is_tchar(b), tchar, "byte {b:#x}");
            let visible = b == b'\t' || (0x20..=0x7e).contains(&b);
            let value = [b'a', b, b'z'];
            let value = std::str::from_utf8(&value);
            if let Ok(value) = value {
                assert_eq!(is_header_value(value), visible, "byte {b:#x}");
            }
        }
        assert!(!is_header_value("caf\u{e9}") && !is_header_value("a\r\nb: c"));
        assert!(is_header_name("Mcp-Session-Id") && !is_header_name("a b") && !is_header_name(""));
    }

    #[test]
    fn urls_in_messages_lose_credentials_and_query() {
        assert_eq!(
            redact_url("http://bob:hunter2@127.0.0.1:9/mcp?key=SECRET#frag"),
            "http://127.0.0.1:9/mcp"
        );
        assert_eq!(redact_url("https://h.example"), "https://h.example");
        assert_eq!(redact_url("http://h/a@b/c"), "http://h/a@b/c");
        assert_eq!(redact_url("u:p@h/x?y"), "h/x");
    }
}
