//! Where the flow looks: the protected resource metadata and authorization server metadata
//! URLs, in the spec's order, and the one rule every URL a server names goes through before the
//! flow fetches it ([`allowed_fetch`]).

use super::BearerChallenge;
#[cfg(doc)]
use super::{AuthError, Flow};

/// The protected resource metadata URLs to try for the MCP server at `mcp_url`, in order: the
/// challenge's `resource_metadata` when it gave a usable one, else the path-based then the root
/// well-known URI.
///
/// > "MCP clients **MUST** support both discovery mechanisms and use the resource metadata URL
/// > from the parsed `WWW-Authenticate` headers when present; otherwise, they **MUST** fall back
/// > to constructing and requesting the well-known URIs in the order listed above." — MCP
/// > 2025-11-25, Authorization § Protected Resource Metadata Discovery Requirements
///
/// A `resource_metadata` the client may not fetch ([`allowed_fetch`]: plain HTTP to another
/// host, a private or link-local address, …) counts as not given: the well-known URIs at the
/// MCP server's own origin are tried instead. They are the spec's other mechanism, at the
/// origin the user chose, and a document found there must still name this resource
/// ([`AuthError::ResourceMismatch`]); failing instead would add no safety and leave a server
/// with a mistaken challenge unusable.
pub fn resource_metadata_urls(mcp_url: &str, challenge: Option<&BearerChallenge>) -> Vec<String> {
    if let Some(url) = challenge
        .and_then(|c| c.resource_metadata.as_deref())
        .and_then(|u| url::Url::parse(u).ok())
        .filter(|u| allowed_fetch(mcp_url, u.as_str()).is_ok())
    {
        return vec![url.into()];
    }
    let Ok(base) = url::Url::parse(mcp_url) else {
        return Vec::new();
    };
    let path = base.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(well_known(&base, "oauth-protected-resource", path));
    }
    urls.push(well_known(&base, "oauth-protected-resource", ""));
    urls
}

/// Why the flow does not fetch a URL a server named ([`allowed_fetch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FetchRefusal {
    /// Not an `http` or `https` URL, or one with a user name or password in it.
    #[error("not an http(s) URL without credentials")]
    NotHttp,
    /// Plain `http` to a host that is not this machine.
    #[error("plain http, not HTTPS")]
    NotHttps,
    /// This machine (`localhost`, `127.0.0.0/8`, `::1`), named by an MCP server elsewhere.
    #[error("an address of this machine, named by a server elsewhere")]
    Loopback,
    /// A private network: `10/8`, `172.16/12`, `192.168/16`, `100.64/10` (shared address
    /// space), `fc00::/7` (unique local).
    #[error("a private network address")]
    Private,
    /// Link-local: `169.254/16`, `fe80::/10`.
    #[error("a link-local address")]
    LinkLocal,
    /// A cloud provider's instance metadata service: `169.254.169.254`, `169.254.170.2`,
    /// `100.100.100.200`, `fd00:ec2::254`, `metadata.google.internal`, `metadata.goog`.
    #[error("a cloud metadata address")]
    CloudMetadata,
    /// `0.0.0.0/8`, `::`, multicast, broadcast and the reserved `240/4`: nothing to fetch from.
    #[error("an unspecified or reserved address")]
    Reserved,
}

/// Where a host is, as far as its literal form tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HostClass {
    Public,
    Loopback,
    Refused(FetchRefusal),
}

fn ipv4_class(ip: std::net::Ipv4Addr) -> HostClass {
    let o = ip.octets();
    let refused = HostClass::Refused;
    if [
        [169, 254, 169, 254],
        [169, 254, 170, 2],
        [100, 100, 100, 200],
    ]
    .contains(&o)
    {
        refused(FetchRefusal::CloudMetadata)
    } else if ip.is_loopback() {
        HostClass::Loopback
    } else if ip.is_private() || (o[0] == 100 && (o[1] & 0xc0) == 64) {
        refused(FetchRefusal::Private)
    } else if ip.is_link_local() {
        refused(FetchRefusal::LinkLocal)
    } else if o[0] == 0 || o[0] >= 224 {
        // 0/8 ("this network": Linux connects 0.0.0.0 to this machine), multicast 224/4,
        // reserved 240/4 and the broadcast address.
        refused(FetchRefusal::Reserved)
    } else {
        HostClass::Public
    }
}

fn ipv6_class(ip: std::net::Ipv6Addr) -> HostClass {
    let s = ip.segments();
    let refused = HostClass::Refused;
    if ip.is_loopback() {
        return HostClass::Loopback;
    }
    if ip.is_unspecified() || s[0] >> 8 == 0xff {
        return refused(FetchRefusal::Reserved);
    }
    // An IPv4 address in IPv6 clothes (`::ffff:a.b.c.d`, NAT64's `64:ff9b::a.b.c.d`) is
    // judged as that IPv4 address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return ipv4_class(v4);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [a, b] = s[6].to_be_bytes();
        let [c, d] = s[7].to_be_bytes();
        return ipv4_class(std::net::Ipv4Addr::new(a, b, c, d));
    }
    if s == [0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254] {
        refused(FetchRefusal::CloudMetadata)
    } else if s[0] & 0xfe00 == 0xfc00 {
        refused(FetchRefusal::Private)
    } else if s[0] & 0xffc0 == 0xfe80 {
        refused(FetchRefusal::LinkLocal)
    } else {
        HostClass::Public
    }
}

fn host_class(url: &url::Url) -> HostClass {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ipv4_class(ip),
        Some(url::Host::Ipv6(ip)) => ipv6_class(ip),
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            if d == "localhost" || d.ends_with(".localhost") {
                HostClass::Loopback
            } else if d == "metadata.google.internal" || d == "metadata.goog" {
                HostClass::Refused(FetchRefusal::CloudMetadata)
            } else {
                HostClass::Public
            }
        }
        None => HostClass::Refused(FetchRefusal::NotHttp),
    }
}

/// Whether the flow may fetch `url`, a URL a server named (the challenge's
/// `resource_metadata`, an authorization server's issuer, its endpoints), for the MCP server at
/// `mcp_url`: the one rule every request of a [`Flow`] goes through.
///
/// - The MCP server's own origin (scheme, host, port) is always allowed: the user chose it.
/// - Elsewhere, only HTTPS, to a host that is not a private (`10/8`, `172.16/12`, `192.168/16`,
///   `100.64/10`, `fc00::/7`), link-local (`169.254/16`, `fe80::/10`), cloud metadata
///   (`169.254.169.254`, `fd00:ec2::254`, `metadata.google.internal`, …), unspecified or
///   reserved address; IPv4-mapped and NAT64 IPv6 addresses are judged as their IPv4 address.
/// - This machine (`localhost`, `*.localhost`, `127.0.0.0/8`, `::1`), over HTTP or HTTPS, only
///   when the MCP server is on it too (local development, tests).
///
/// Hosts are judged as the URL parser reads them (WHATWG: `0x7f.1`, `2130706433` and `127.1`
/// are all `127.0.0.1`), which is also how the request is sent. **Not covered:** a host *name*
/// is judged by its name, not by the addresses it resolves to: a public name that resolves to
/// a private address (or changes its answer between two requests: DNS rebinding) is fetched.
/// The core sees no DNS; an application that must close this gap (a client deployed on a
/// server, next to cloud metadata) resolves names itself or sends the flow's requests through
/// an egress proxy.
///
/// > "Reject `http://` URLs except for loopback addresses (`localhost`, `127.0.0.1`, `::1`)
/// > during development" … "MCP clients **SHOULD** block requests to private and reserved IP
/// > address ranges as recommended by RFC 9728 Section 7.7: Private IPv4 ranges: `10.0.0.0/8`,
/// > `172.16.0.0/12`, `192.168.0.0/16`; Loopback: `127.0.0.0/8`, `::1` (except when explicitly
/// > allowed for development); Link-local: `169.254.0.0/16` (including cloud metadata
/// > endpoints); Private IPv6 ranges: `fc00::/7`, `fe80::/10`" — MCP 2025-11-25, Security Best
/// > Practices § Server-Side Request Forgery (SSRF)
/// >
/// > "All authorization server endpoints **MUST** be served over HTTPS." — MCP 2026-07-28,
/// > Authorization § Security Considerations
pub fn allowed_fetch(mcp_url: &str, url: &str) -> Result<(), FetchRefusal> {
    let Some(u) = url::Url::parse(url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .filter(|u| u.username().is_empty() && u.password().is_none())
    else {
        return Err(FetchRefusal::NotHttp);
    };
    let mcp = url::Url::parse(mcp_url).ok();
    if mcp.as_ref().is_some_and(|m| m.origin() == u.origin()) {
        return Ok(());
    }
    let mcp_here = mcp.as_ref().map(host_class) == Some(HostClass::Loopback);
    match host_class(&u) {
        HostClass::Refused(why) => Err(why),
        HostClass::Loopback if mcp_here => Ok(()),
        HostClass::Loopback => Err(FetchRefusal::Loopback),
        HostClass::Public if u.scheme() == "https" => Ok(()),
        HostClass::Public => Err(FetchRefusal::NotHttps),
    }
}

/// The authorization server metadata URLs to try for `issuer`, in the spec's priority order.
///
/// > "For issuer URLs with path components … clients **MUST** try endpoints in the following
/// > priority order: 1. OAuth 2.0 Authorization Server Metadata with path insertion … 2. OpenID
/// > Connect Discovery 1.0 with path insertion … 3. OpenID Connect Discovery 1.0 path appending"
/// > / without path components: "1. OAuth 2.0 Authorization Server Metadata … 2. OpenID Connect
/// > Discovery 1.0" — MCP 2025-11-25, Authorization § Authorization Server Metadata Discovery
pub fn authorization_server_metadata_urls(issuer: &str) -> Vec<String> {
    let Ok(base) = url::Url::parse(issuer) else {
        return Vec::new();
    };
    let path = base.path().trim_end_matches('/');
    if path.is_empty() {
        return vec![
            well_known(&base, "oauth-authorization-server", ""),
            well_known(&base, "openid-configuration", ""),
        ];
    }
    let mut appended = base.clone();
    appended.set_query(None);
    appended.set_fragment(None);
    appended.set_path(&format!("{path}/.well-known/openid-configuration"));
    vec![
        well_known(&base, "oauth-authorization-server", path),
        well_known(&base, "openid-configuration", path),
        appended.into(),
    ]
}

/// `scheme://authority/.well-known/{name}{path}` (no query, no fragment).
fn well_known(base: &url::Url, name: &str, path: &str) -> String {
    let mut u = base.clone();
    u.set_query(None);
    u.set_fragment(None);
    u.set_path(&format!("/.well-known/{name}{path}"));
    u.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_metadata_is_looked_for_where_the_spec_says() {
        let challenge = BearerChallenge {
            resource_metadata: Some("https://meta.example.com/prm".into()),
            ..BearerChallenge::default()
        };
        assert_eq!(
            resource_metadata_urls("https://example.com/public/mcp", Some(&challenge)),
            ["https://meta.example.com/prm"]
        );
        assert_eq!(
            resource_metadata_urls("https://example.com/public/mcp?x=1", None),
            [
                "https://example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            resource_metadata_urls("http://127.0.0.1:8080/", None),
            ["http://127.0.0.1:8080/.well-known/oauth-protected-resource"]
        );
        // A server on this machine may name another port of it (local development, tests).
        let local = BearerChallenge {
            resource_metadata: Some("http://localhost:9000/prm".into()),
            ..BearerChallenge::default()
        };
        assert_eq!(
            resource_metadata_urls("http://localhost:8080/mcp", Some(&local)),
            ["http://localhost:9000/prm"]
        );
        // An unusable resource_metadata (not http(s), credentials, plain http elsewhere, an
        // address the client does not fetch) falls back to the server's own origin.
        for bad in [
            "ftp://x/prm",
            "https://user:pw@x/prm",
            "not a url",
            "http://meta.example.com/prm",
            "http://127.0.0.2:18783/admin/delete-all?confirm=yes",
            "https://169.254.169.254/latest/meta-data/",
            "https://192.168.1.1/prm",
            "https://[fe80::1]/prm",
        ] {
            let c = BearerChallenge {
                resource_metadata: Some(bad.into()),
                ..BearerChallenge::default()
            };
            assert_eq!(
                resource_metadata_urls("https://example.com/mcp", Some(&c))[0],
                "https://example.com/.well-known/oauth-protected-resource/mcp",
                "{bad}"
            );
        }
    }

    #[test]
    fn fetches_go_to_https_on_public_hosts_or_to_the_servers_own_origin() {
        use FetchRefusal::*;
        let remote = "https://mcp.example.com/mcp";
        let local = "http://localhost:3000/mcp";
        let cases: &[(&str, &str, Result<(), FetchRefusal>)] = &[
            (remote, "https://as.example.com/x?y=1", Ok(())),
            (remote, "http://as.example.com/", Err(NotHttps)),
            // The server's own origin, whatever it is.
            (remote, "https://mcp.example.com/.well-known/x", Ok(())),
            (
                "http://10.1.2.3:8080/mcp",
                "http://10.1.2.3:8080/.well-known/x",
                Ok(()),
            ),
            (
                "http://10.1.2.3:8080/mcp",
                "http://10.1.2.3:9090/",
                Err(Private),
            ),
            // Private, link-local, metadata, reserved: over HTTPS too.
            (remote, "https://10.0.0.1/", Err(Private)),
            (remote, "https://172.16.5.4/", Err(Private)),
            (remote, "https://172.31.255.255/", Err(Private)),
            (remote, "https://172.32.0.1/", Ok(())),
            (remote, "https://192.168.1.1/admin", Err(Private)),
            (remote, "https://100.64.0.1/", Err(Private)),
            (remote, "https://[fd12:3456::1]/", Err(Private)),
            (remote, "https://[fc00::1]/", Err(Private)),
            (remote, "https://169.254.1.1/", Err(LinkLocal)),
            (remote, "https://[fe80::1]/", Err(LinkLocal)),
            (remote, "http://169.254.169.254/latest/", Err(CloudMetadata)),
            (remote, "https://[fd00:ec2::254]/", Err(CloudMetadata)),
            (
                remote,
                "https://metadata.google.internal/",
                Err(CloudMetadata),
            ),
            (
                remote,
                "https://METADATA.google.internal./",
                Err(CloudMetadata),
            ),
            (remote, "https://0.0.0.0/", Err(Reserved)),
            (remote, "https://[::]/", Err(Reserved)),
            (remote, "https://224.0.0.1/", Err(Reserved)),
            (remote, "https://255.255.255.255/", Err(Reserved)),
            // Encodings the URL parser normalises, and IPv4 inside IPv6.
            (remote, "https://0x7f.1/", Err(Loopback)),
            (remote, "https://2130706433/", Err(Loopback)),
            (remote, "https://0xa9.254.169.254/", Err(CloudMetadata)),
            (remote, "https://[::ffff:192.168.0.1]/", Err(Private)),
            (remote, "https://[::ffff:127.0.0.1]/", Err(Loopback)),
            (remote, "https://[64:ff9b::a9fe:a9fe]/", Err(CloudMetadata)),
            // This machine: only for a server on it.
            (remote, "http://127.0.0.1:9000/", Err(Loopback)),
            (remote, "https://localhost/", Err(Loopback)),
            (remote, "https://x.localhost/", Err(Loopback)),
            (remote, "https://[::1]/", Err(Loopback)),
            (local, "http://localhost:4000/token", Ok(())),
            (local, "http://127.0.0.1:4000/token", Ok(())),
            (local, "http://[::1]:4000/token", Ok(())),
            (
                "http://127.0.0.1:3000/mcp",
                "http://localhost:4000/",
                Ok(()),
            ),
            (local, "https://as.example.com/", Ok(())),
            (local, "http://as.example.com/", Err(NotHttps)),
            (local, "http://192.168.1.1/", Err(Private)),
            // Not http(s), or credentials in the URL.
            (remote, "ftp://as.example.com/", Err(NotHttp)),
            (remote, "file:///etc/passwd", Err(NotHttp)),
            (remote, "https://user:pw@as.example.com/", Err(NotHttp)),
            (remote, "not a url", Err(NotHttp)),
        ];
        for (mcp, url, want) in cases {
            assert_eq!(allowed_fetch(mcp, url), *want, "{mcp} → {url}");
        }
    }

    #[test]
    fn authorization_server_metadata_is_looked_for_in_the_spec_order() {
        assert_eq!(
            authorization_server_metadata_urls("https://auth.example.com/tenant1"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            authorization_server_metadata_urls("https://auth.example.com"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            authorization_server_metadata_urls("https://auth.example.com/"),
            authorization_server_metadata_urls("https://auth.example.com")
        );
        assert!(authorization_server_metadata_urls("nope").is_empty());
    }
}
