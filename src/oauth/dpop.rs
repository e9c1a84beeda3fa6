//! DPoP (RFC 9449): sender-constrained tokens. The client holds a P-256 key, proves possession of
//! it with a signed proof JWT on every token request and every request to the resource, and the
//! token it gets is bound to the key. Pure: the key's bytes, the proof's `jti` and the time are
//! inputs.
//!
//! What is here: when to use it ([`DpopUse`]), the key ([`DpopKey`], the application's PEM or 32
//! random bytes the driver passes in, and its RFC 7638 thumbprint), the proof
//! ([`DpopKey::proof`]), the `htu` rule ([`htu`]), the `ath` claim ([`ath`]), the server's nonce
//! ([`accept_nonce`], capped at [`MAX_DPOP_NONCE`]) and the `use_dpop_nonce` error
//! ([`USE_DPOP_NONCE`]). The flow signs its token requests with it (and retries once with an
//! authorization server's nonce); the [`Authorizer`](super::Authorizer) signs each request to the
//! resource (and retries once with the resource server's nonce).

use super::assertion::SigningKey;

/// The only JWS algorithm this client signs DPoP proofs with.
///
/// > "A JSON Web Signature (JWS) algorithm … MUST NOT be none or an identifier for a symmetric
/// > algorithm (Message Authentication Code (MAC))." — RFC 9449 § 4.2
pub const DPOP_ALG: &str = "ES256";

/// The error code a server answers with when a proof must carry its nonce.
///
/// > "the authorization server responds with an HTTP 400 (Bad Request) … with an error response
/// > parameter value of use_dpop_nonce … and a DPoP-Nonce HTTP header" — RFC 9449 § 8;
/// > "the resource server … responds with an HTTP 401 … WWW-Authenticate … error="use_dpop_nonce""
/// > — RFC 9449 § 9
pub const USE_DPOP_NONCE: &str = "use_dpop_nonce";

/// The response header carrying a server's nonce (header names compare case-insensitively).
pub const DPOP_NONCE_HEADER: &str = "DPoP-Nonce";

/// The longest `DPoP-Nonce` value this client keeps and sends back, in bytes (a longer one is
/// refused: a server's nonce is an opaque short string, and each proof repeats it).
pub const MAX_DPOP_NONCE: usize = 1024;

/// When a flow asks for DPoP-bound tokens (it needs a key too: [`AuthOptions::dpop_key`]).
///
/// DPoP is optional for a client (RFC 9449 § 5: "the client MAY" send a proof; MCP's DPoP
/// extension, SEP-1932, is opt-in). This client uses it when the application asks, and by
/// default when the resource asks: its `401` challenges with the `DPoP` scheme only (RFC 9449
/// § 7.1), or its protected resource metadata says `dpop_bound_access_tokens_required` (RFC 9728
/// § 2). An authorization server whose `dpop_signing_alg_values_supported` leaves out ES256 gets
/// no proof.
///
/// [`AuthOptions::dpop_key`]: super::AuthOptions::dpop_key
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum DpopUse {
    /// Never: Bearer tokens only.
    Never,
    /// When the resource asks for it (the default).
    #[default]
    WhenAsked,
    /// At every authorization server that does not refuse ES256 (its answer's `token_type`
    /// says whether the token is bound: a server without DPoP answers `Bearer`).
    Always,
}

/// A DPoP key: an ECDSA P-256 private key (ES256). `Debug` shows nothing of it, and it is never
/// serialized: a token store keeps the token type, not the key.
pub struct DpopKey {
    key: p256::ecdsa::SigningKey,
    /// The public key as a JWK (RFC 7517), for the proof's header.
    jwk: serde_json::Value,
}

/// Two keys are the same key when their public keys are.
impl PartialEq for DpopKey {
    fn eq(&self, other: &DpopKey) -> bool {
        self.jwk == other.jwk
    }
}

impl Eq for DpopKey {}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DpopKey(<redacted>)")
    }
}

impl DpopKey {
    /// The application's key, in PEM (PKCS#8 or SEC1). Only a P-256 key is taken: an RSA key,
    /// or anything unreadable, is an error that shows nothing of the key.
    pub fn from_pem(pem: &str) -> Result<DpopKey, String> {
        match SigningKey::read(pem) {
            Ok(SigningKey::Es256(key)) => Ok(DpopKey::new(key)),
            Ok(SigningKey::Rs256(_)) => Err(
                "the DPoP key is an RSA key: this client signs DPoP proofs with ES256, a P-256 key"
                    .to_owned(),
            ),
            Err(_) => Err("the DPoP key is not a P-256 private key in PEM".to_owned()),
        }
    }

    /// A key made from 32 random bytes (the driver's randomness). The odd chance of bytes that
    /// are no P-256 scalar (zero, or not below the group's order) is an error: take new bytes.
    pub fn from_random(bytes: &[u8; 32]) -> Result<DpopKey, String> {
        p256::ecdsa::SigningKey::from_bytes(bytes.into())
            .map(DpopKey::new)
            .map_err(|_| "these 32 bytes are no P-256 private key: take new ones".to_owned())
    }

    fn new(key: p256::ecdsa::SigningKey) -> DpopKey {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let point = key.verifying_key().to_encoded_point(false);
        // An uncompressed point always has both coordinates.
        let (x, y) = (
            point.x().map(|x| b64.encode(x)).unwrap_or_default(),
            point.y().map(|y| b64.encode(y)).unwrap_or_default(),
        );
        let jwk = serde_json::json!({"kty": "EC", "crv": "P-256", "x": x, "y": y});
        DpopKey { key, jwk }
    }

    /// The public key as a JWK (`kty`, `crv`, `x`, `y`: no private part).
    pub fn public_jwk(&self) -> &serde_json::Value {
        &self.jwk
    }

    /// The public key's JWK SHA-256 thumbprint, base64url: what a bound token's `cnf.jkt` names
    /// (a token store keeps it to tell which key a stored token is bound to).
    ///
    /// > "The required members for an elliptic curve public key … are: crv, kty, x, y … in
    /// > lexicographic order … with no whitespace" — RFC 7638 § 3.2; "jkt … JWK SHA-256
    /// > Thumbprint" — RFC 9449 § 6.1
    pub fn thumbprint(&self) -> String {
        jwk_thumbprint(&self.jwk)
    }

    /// A DPoP proof for one request: `method` and `url` of the request, `now` in seconds since
    /// the epoch, `jti` a fresh random value, `access_token` on a request to the resource (not on
    /// a token request), `nonce` the last one this server gave.
    ///
    /// > "typ: … dpop+jwt … alg: … jwk: Represents the public key chosen by the client in JSON
    /// > Web Key (JWK) format … MUST NOT contain a private key." — RFC 9449 § 4.2
    /// >
    /// > "jti: Unique identifier for the DPoP proof JWT. … htm: The value of the HTTP method …
    /// > htu: The HTTP target URI …, without query and fragment parts. … iat: Creation timestamp
    /// > … ath: Hash of the access token. … MUST be included when the DPoP proof is used in
    /// > conjunction with the presentation of an access token … nonce: … when the authorization
    /// > server or resource server has provided a DPoP-Nonce HTTP header" — RFC 9449 § 4.2
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        now: u64,
        jti: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> String {
        let header = serde_json::json!({"typ": "dpop+jwt", "alg": DPOP_ALG, "jwk": self.jwk});
        let mut claims = serde_json::json!({
            "jti": jti,
            "htm": method,
            "htu": htu(url),
            "iat": now,
        });
        if let Some(token) = access_token {
            claims["ath"] = ath(token).into();
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = nonce.into();
        }
        SigningKey::Es256(self.key.clone()).jws(&header, &claims)
    }
}

/// The RFC 7638 SHA-256 thumbprint of an EC public key in JWK form, base64url.
fn jwk_thumbprint(jwk: &serde_json::Value) -> String {
    use base64::Engine;
    use sha2::Digest;
    let member = |name: &str| jwk[name].as_str().unwrap_or_default();
    let canonical = format!(
        r#"{{"crv":"{}","kty":"{}","x":"{}","y":"{}"}}"#,
        member("crv"),
        member("kty"),
        member("x"),
        member("y")
    );
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(canonical))
}

/// The proof's `htu`: the request's URL without its query and fragment.
///
/// > "htu: The HTTP target URI (Section 7.1 of \[RFC9110\]) of the request to which the JWT is
/// > attached, without query and fragment parts." — RFC 9449 § 4.2
pub fn htu(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    &url[..end]
}

/// The proof's `ath`: base64url of the SHA-256 of the access token's ASCII bytes.
///
/// > "ath: Hash of the access token. The value MUST be the result of a base64url encoding (as
/// > defined in Section 2 of \[RFC7515\]) the SHA-256 \[SHS\] hash of the ASCII encoding of the
/// > associated access token's value." — RFC 9449 § 4.2
pub fn ath(access_token: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(access_token))
}

/// The nonce in a response's `DPoP-Nonce` header, when it is one this client keeps: not empty,
/// at most [`MAX_DPOP_NONCE`] bytes, and of the characters the RFC allows.
///
/// > "The nonce is opaque to the client. … DPoP-Nonce = 1*NQCHAR" — RFC 9449 § 8.1
/// > (NQCHAR = %x21 / %x23-5B / %x5D-7E, RFC 6749 Appendix A)
pub fn accept_nonce(header: &str) -> Option<&str> {
    let nonce = header.trim();
    let nqchar = |b: u8| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b);
    (!nonce.is_empty() && nonce.len() <= MAX_DPOP_NONCE && nonce.bytes().all(nqchar))
        .then_some(nonce)
}

/// Whether an authorization server whose metadata lists `algs` (its
/// `dpop_signing_alg_values_supported`, `None` when absent) takes this client's ES256 proofs. An
/// absent list says nothing, so the client tries; a list without ES256 refuses them.
///
/// > "dpop_signing_alg_values_supported: A JSON array containing a list of the JWS alg values
/// > (from the [IANA.JOSE.ALGS] registry) supported by the authorization server for DPoP proof
/// > JWTs." — RFC 9449 § 5.1
pub fn server_takes_es256(algs: Option<&[String]>) -> bool {
    algs.is_none_or(|algs| algs.iter().any(|a| a == DPOP_ALG))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn part(jwt: &str, i: usize) -> serde_json::Value {
        let raw = B64.decode(jwt.split('.').nth(i).unwrap()).unwrap();
        serde_json::from_slice(&raw).unwrap()
    }

    fn key() -> DpopKey {
        DpopKey::from_random(&[7; 32]).unwrap()
    }

    #[test]
    fn a_proof_has_the_rfc_9449_header_and_claims_and_verifies_with_its_jwk() {
        use p256::ecdsa::signature::Verifier;
        let k = key();
        let proof = k.proof(
            "POST",
            "https://mcp.example/mcp?x=1#f",
            1_700_000_000,
            "jti-1",
            Some("tok"),
            Some("n0nce"),
        );
        let header = part(&proof, 0);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"]["kty"], "EC");
        assert_eq!(header["jwk"]["crv"], "P-256");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        let claims = part(&proof, 1);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["iat"], 1_700_000_000);
        assert_eq!(claims["jti"], "jti-1");
        assert_eq!(claims["nonce"], "n0nce");
        // printf tok | openssl dgst -sha256 -binary | basenc --base64url | tr -d =
        assert_eq!(claims["ath"], "GnZ0607njffhrEOak8P6jjyUV4TU3sn9jjARc4svHWI");
        // The signature verifies with the public key in the header.
        let x = B64.decode(header["jwk"]["x"].as_str().unwrap()).unwrap();
        let y = B64.decode(header["jwk"]["y"].as_str().unwrap()).unwrap();
        let mut sec1 = vec![4u8];
        sec1.extend(&x);
        sec1.extend(&y);
        let vk = p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1).unwrap();
        let (input, sig) = proof.rsplit_once('.').unwrap();
        let sig = p256::ecdsa::Signature::from_slice(&B64.decode(sig).unwrap()).unwrap();
        vk.verify(input.as_bytes(), &sig).unwrap();
    }

    #[test]
    fn a_token_request_proof_has_no_ath_and_no_nonce_unless_given() {
        let claims = part(
            &key().proof("POST", "https://as/token", 1, "j", None, None),
            1,
        );
        assert!(claims.get("ath").is_none());
        assert!(claims.get("nonce").is_none());
    }

    #[test]
    fn the_thumbprint_is_rfc_7638s() {
        // The key of RFC 9449 § 4.2's example, and its thumbprint in § 6.1.
        let jwk = serde_json::json!({
            "kty": "EC",
            "x": "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs",
            "y": "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA",
            "crv": "P-256"
        });
        assert_eq!(
            jwk_thumbprint(&jwk),
            "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
        );
        let k = key();
        assert_eq!(k.thumbprint(), jwk_thumbprint(k.public_jwk()));
        assert_ne!(
            k.thumbprint(),
            DpopKey::from_random(&[8; 32]).unwrap().thumbprint()
        );
        assert_eq!(k, key());
    }

    #[test]
    fn ath_is_the_base64url_sha256_of_the_token() {
        // SHA-256("") = e3b0c442…b855, base64url without padding.
        assert_eq!(ath(""), "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
    }

    #[test]
    fn htu_drops_the_query_and_the_fragment() {
        assert_eq!(htu("https://a/mcp?q=1"), "https://a/mcp");
        assert_eq!(htu("https://a/mcp#frag"), "https://a/mcp");
        assert_eq!(htu("https://a/mcp?q=1#frag"), "https://a/mcp");
        assert_eq!(htu("https://a/mcp"), "https://a/mcp");
    }

    #[test]
    fn an_rsa_key_is_refused_and_a_bad_pem_says_nothing_of_it() {
        let rsa = include_str!("../../tests/keys/rsa2048.pkcs8.pem");
        let err = DpopKey::from_pem(rsa).unwrap_err();
        assert!(err.contains("RSA") && err.contains("ES256"), "{err}");
        let bad = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LXN0dWZm\n-----END PRIVATE KEY-----\n";
        let err = DpopKey::from_pem(bad).unwrap_err();
        assert!(!err.contains("c2VjcmV0"), "{err}");
    }

    #[test]
    fn zero_bytes_are_no_key_and_debug_shows_nothing() {
        assert!(DpopKey::from_random(&[0; 32]).is_err());
        assert_eq!(format!("{:?}", key()), "DpopKey(<redacted>)");
    }

    #[test]
    fn es256_must_be_in_the_servers_list_when_it_gives_one() {
        assert!(server_takes_es256(None));
        assert!(server_takes_es256(Some(&["RS256".into(), "ES256".into()])));
        assert!(!server_takes_es256(Some(&["RS256".into()])));
        assert!(!server_takes_es256(Some(&[])));
    }

    #[test]
    fn a_nonce_is_capped_and_checked() {
        assert_eq!(accept_nonce(" abc "), Some("abc"));
        assert_eq!(accept_nonce(""), None);
        assert_eq!(accept_nonce("a b"), None);
        assert_eq!(accept_nonce("a\"b"), None);
        assert!(accept_nonce(&"n".repeat(MAX_DPOP_NONCE)).is_some());
        assert_eq!(accept_nonce(&"n".repeat(MAX_DPOP_NONCE + 1)), None);
    }
}
