//! HTTP's syntax for header names and values: a leaf that the HTTP rules ([`crate::http`]), the
//! request-metadata headers ([`crate::headers`]) and the OAuth challenge reader read, so that none
//! of them depends on another for it. Reached as [`crate::http::is_header_name`] and
//! [`crate::http::is_header_value`].

/// Whether `name` is an HTTP token (RFC 7230 § 3.2.6: visible ASCII except delimiters).
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether `value` can be sent as a header value: visible ASCII, spaces and tabs only. (HTTP
/// libraries refuse control characters, and some panic on bytes above 0x7e.)
pub fn is_header_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
}
