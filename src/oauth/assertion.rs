//! The client's authentication at the token endpoint: a token request's form with the client's
//! secret (HTTP Basic, or in the body) or its signed client assertion (`private_key_jwt`,
//! RFC 7523).

use super::{AuthMethod, Client, Secret};
use crate::http::{HttpRequest, Method};

/// A form POST to a token endpoint, with the client's authentication (`secret`, when it has
/// one).
///
/// > "The client identifier is encoded using the "application/x-www-form-urlencoded" encoding
/// > algorithm …, and the encoded value is used as the username; the client password is encoded
/// > using the same algorithm and used as the password." — RFC 6749 § 2.3.1
pub(super) fn token_request(
    endpoint: &str,
    client: &Client,
    secret: Option<&Secret>,
    params: &[(&str, &str)],
    assertion: Option<&str>,
) -> HttpRequest {
    use base64::Engine;
    let mut pairs: Vec<(&str, &str)> = params.to_vec();
    let mut headers: Vec<(crate::http::HeaderText, crate::http::HeaderText)> = vec![
        (
            "Content-Type".into(),
            "application/x-www-form-urlencoded".into(),
        ),
        ("Accept".into(), "application/json".into()),
    ];
    match (client.auth_method, secret.map(Secret::expose)) {
        (AuthMethod::ClientSecretBasic, Some(secret)) => {
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let user_pass = format!("{}:{}", enc(&client.client_id), enc(secret));
            let basic = base64::engine::general_purpose::STANDARD.encode(user_pass);
            headers.push(("Authorization".into(), format!("Basic {basic}").into()));
        }
        (AuthMethod::ClientSecretPost, Some(secret)) => {
            pairs.push(("client_id", &client.client_id));
            pairs.push(("client_secret", secret));
        }
        _ => pairs.push(("client_id", &client.client_id)),
    }
    // > "client_assertion_type … MUST be "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    // > … client_assertion … MUST contain a single JWT" — RFC 7523 § 2.2
    if let Some(assertion) = assertion {
        pairs.push((
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        ));
        pairs.push(("client_assertion", assertion));
    }
    HttpRequest {
        method: Method::Post,
        url: endpoint.to_owned(),
        headers,
        body: Some(form(&pairs)),
    }
}

/// The smallest RSA key this client signs with, in bits.
///
/// > "A key of size 2048 bits or larger MUST be used with these algorithms." — RFC 7518 § 3.3
pub const MIN_RSA_BITS: usize = 2048;

/// The largest RSA key this client reads, in bits (a bigger one is a mistake, and its operations
/// take time without bound).
pub const MAX_RSA_BITS: usize = 8192;

/// A key for `private_key_jwt`, read from PEM: its type decides the JWS `alg`.
pub(super) enum SigningKey {
    /// A P-256 key (PKCS#8 or SEC1): ES256.
    Es256(p256::ecdsa::SigningKey),
    /// An RSA key (PKCS#8 or PKCS#1) of [`MIN_RSA_BITS`] to [`MAX_RSA_BITS`]: RS256.
    Rs256(Box<rsa::pkcs1v15::SigningKey<sha2::Sha256>>),
}

impl SigningKey {
    /// The key in `pem`; an error that shows nothing of it when it is none of the kinds taken.
    pub(super) fn read(pem: &str) -> Result<SigningKey, String> {
        use p256::pkcs8::DecodePrivateKey;
        use rsa::pkcs1::DecodeRsaPrivateKey;
        use rsa::traits::PublicKeyParts;
        if let Some(key) = p256::ecdsa::SigningKey::from_pkcs8_pem(pem)
            .ok()
            .or_else(|| {
                p256::SecretKey::from_sec1_pem(pem)
                    .ok()
                    .map(p256::ecdsa::SigningKey::from)
            })
        {
            return Ok(SigningKey::Es256(key));
        }
        let rsa = rsa::RsaPrivateKey::from_pkcs8_pem(pem)
            .ok()
            .or_else(|| rsa::RsaPrivateKey::from_pkcs1_pem(pem).ok())
            .ok_or(
                "the private key for private_key_jwt is not a P-256 or RSA private key in PEM",
            )?;
        let bits = rsa.size() * 8;
        if !(MIN_RSA_BITS..=MAX_RSA_BITS).contains(&bits) {
            return Err(format!(
                "the RSA key for private_key_jwt has {bits} bits: RS256 takes {MIN_RSA_BITS} to {MAX_RSA_BITS} (RFC 7518 § 3.3)"
            ));
        }
        Ok(SigningKey::Rs256(Box::new(rsa::pkcs1v15::SigningKey::new(
            rsa,
        ))))
    }

    /// The JWS compact serialization (RFC 7515 § 7.1) of `claims` under `header`, signed with
    /// this key: the one JWS encoder of the client (client assertions, DPoP proofs).
    pub(super) fn jws(&self, header: &serde_json::Value, claims: &serde_json::Value) -> String {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let input = format!(
            "{}.{}",
            b64.encode(header.to_string()),
            b64.encode(claims.to_string())
        );
        let signature = self.sign(input.as_bytes());
        format!("{input}.{}", b64.encode(signature))
    }

    pub(super) fn alg(&self) -> &'static str {
        match self {
            SigningKey::Es256(_) => "ES256",
            SigningKey::Rs256(_) => "RS256",
        }
    }

    /// The JWS signature of `input`: ES256's is `R || S` (RFC 7518 § 3.4), RS256's the
    /// RSASSA-PKCS1-v1_5 signature (§ 3.3). Both are deterministic.
    fn sign(&self, input: &[u8]) -> Vec<u8> {
        match self {
            SigningKey::Es256(key) => {
                use p256::ecdsa::signature::Signer;
                let signature: p256::ecdsa::Signature = key.sign(input);
                signature.to_bytes().to_vec()
            }
            SigningKey::Rs256(key) => {
                use rsa::signature::{SignatureEncoding, Signer};
                key.sign(input).to_vec()
            }
        }
    }
}

/// A client assertion (RFC 7523 § 3): `iss` and `sub` the client id, `aud` the authorization
/// server's issuer, valid for 5 minutes from `now`, signed with ES256 for a P-256 key (PEM:
/// PKCS#8 or SEC1) or RS256 for an RSA key (PEM: PKCS#8 or PKCS#1) — the key's type decides.
/// An unreadable key is an error that shows nothing of it.
///
/// > "The JWT MUST be digitally signed or have a Message Authentication Code (MAC) applied by
/// > the issuer." — RFC 7523 § 3
pub(super) fn client_assertion(
    client_id: &str,
    audience: &str,
    key_pem: &str,
    now: u64,
    jti: &str,
) -> Result<String, String> {
    let key = SigningKey::read(key_pem)?;
    let header = serde_json::json!({"alg": key.alg(), "typ": "JWT"});
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": jti,
    });
    Ok(key.jws(&header, &claims))
}

/// A form body (`application/x-www-form-urlencoded`).
pub(super) fn form(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish().into_bytes()
}

/// A JWT's `jti`: 32 hex digits of the SHA-256 of `parts` (a seed of the caller's randomness,
/// then whatever makes this one unique: a count, the time). The one recipe for every assertion
/// and DPoP proof this client signs.
pub(super) fn jti(parts: &[&[u8]]) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for part in parts {
        h.update(part);
    }
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::ClientKind;

    #[test]
    fn basic_authentication_encodes_as_rfc_6749_says() {
        use base64::Engine;
        let client = Client {
            client_id: "id:with space".into(),
            client_secret: Some(Secret::new("p@ss")),
            auth_method: AuthMethod::ClientSecretBasic,
            kind: ClientKind::PreRegistered,
            secret_expires_at: None,
        };
        let secret = client.client_secret.clone();
        let r = token_request(
            "https://as/token",
            &client,
            secret.as_ref(),
            &[("grant_type", "x")],
            None,
        );
        let auth = r
            .headers
            .iter()
            .find(|(k, _)| k == "Authorization")
            .unwrap();
        let raw = base64::engine::general_purpose::STANDARD
            .decode(auth.1.strip_prefix("Basic ").unwrap())
            .unwrap();
        assert_eq!(String::from_utf8(raw).unwrap(), "id%3Awith+space:p%40ss");
        assert_eq!(r.body.unwrap(), b"grant_type=x");
    }
}
