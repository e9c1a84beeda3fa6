//! PKCE (RFC 7636): the verifier and its S256 challenge.

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
