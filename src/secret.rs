//! [`Secret`]: a value (a token, a client secret, an `Authorization` header) that must not
//! reach a log line. A leaf: the HTTP rules and the OAuth flow both keep secrets in it.

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
