//! HTTP's syntax for header names and values: a leaf that the HTTP rules ([`crate::http`]), the
//! request-metadata headers ([`crate::headers`]) and the OAuth challenge reader read, so that none
//! of them depends on another for it. Reached as [`crate::http::is_header_name`] and
//! [`crate::http::is_header_value`].

/// Whether `b` may appear in a token: visible ASCII except the delimiters. The one copy of the
/// rule: header names, and the schemes and parameter names of a `WWW-Authenticate` challenge.
///
/// > `tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|"
/// > / "~" / DIGIT / ALPHA` — RFC 9110 § 5.6.2
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Whether `name` can be sent as a header name: a token.
///
/// > `field-name = token`, `token = 1*tchar` — RFC 9110 § 5.1, § 5.6.2
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(is_tchar)
}

/// Whether `value` can be sent as a header value: visible ASCII, spaces and tabs only. (HTTP
/// libraries refuse control characters, and some panic on bytes above 0x7e.)
pub fn is_header_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
}
