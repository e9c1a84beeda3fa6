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
    let mut headers = vec![
        (
            "Content-Type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        ),
        ("Accept".to_owned(), "application/json".to_owned()),
    ];
    match (client.auth_method, secret.map(Secret::expose)) {
        (AuthMethod::ClientSecretBasic, Some(secret)) => {
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let user_pass = format!("{}:{}", enc(&client.client_id), enc(secret));
            let basic = base64::engine::general_purpose::STANDARD.encode(user_pass);
            headers.push(("Authorization".to_owned(), format!("Basic {basic}")));
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

/// An ES256 client assertion (RFC 7523 § 3): `iss` and `sub` the client id, `aud` the
/// authorization server's issuer, valid for 5 minutes from `now`. The key is a P-256 private key
/// in PEM (PKCS#8 or SEC1); an unreadable one is an error that shows nothing of it.
pub(super) fn client_assertion(
    client_id: &str,
    audience: &str,
    key_pem: &str,
    now: u64,
    jti: &str,
) -> Result<String, String> {
    use base64::Engine;
    use p256::ecdsa::signature::Signer;
    use p256::ecdsa::{Signature, SigningKey};
    use p256::pkcs8::DecodePrivateKey;
    let key = SigningKey::from_pkcs8_pem(key_pem)
        .ok()
        .or_else(|| {
            p256::SecretKey::from_sec1_pem(key_pem)
                .ok()
                .map(SigningKey::from)
        })
        .ok_or("the private key for private_key_jwt is not a P-256 key in PEM")?;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = b64.encode(br#"{"alg":"ES256","typ":"JWT"}"#);
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": jti,
    });
    let input = format!("{header}.{}", b64.encode(claims.to_string()));
    let signature: Signature = key.sign(input.as_bytes());
    Ok(format!("{input}.{}", b64.encode(signature.to_bytes())))
}

/// A form body (`application/x-www-form-urlencoded`).
pub(super) fn form(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish().into_bytes()
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
