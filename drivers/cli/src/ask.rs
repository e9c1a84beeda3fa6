//! The person at the terminal: a server's questions (elicitation) asked on stderr and answered on
//! stdin, and the browser flow's message. Everything a server sent is shown through [`term`].

use crate::term;
use mcp_connect::{ElicitAnswer, Elicitation, HandlerError};
use serde_json::Value;

/// Whether a person can be asked: the questions go to stderr and the answers come from stdin,
/// so both must be terminals.
pub(crate) fn can_ask() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// One question at a time on the terminal (with `--config`, several servers may ask at once).
static ASKING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Answers an elicitation on the terminal (declared only when [`can_ask`]): each field is asked
/// on stderr and read from stdin (an empty line takes the default, or leaves the field out);
/// when stdin ends, it is declined. `server`: the configured server's name, shown with the
/// question. Everything the server sent is shown through [`term`].
pub(crate) fn elicit_on_terminal(
    server: Option<String>,
    asked: Elicitation,
) -> impl std::future::Future<Output = Result<ElicitAnswer, HandlerError>> + Send {
    smol::unblock(move || {
        use std::io::BufRead;
        let _one_at_a_time = ASKING.lock().unwrap_or_else(|e| e.into_inner());
        let stdin = std::io::stdin();
        let mut lines = stdin.lock().lines();
        let mut ask = |prompt: &str| -> Option<String> {
            eprint!("{prompt}");
            lines.next()?.ok()
        };
        // > "Clients **MUST** provide clear indication of which server is requesting
        // > information" — MCP 2025-11-25, Elicitation § Security Considerations
        let who = match &server {
            Some(name) => format!("server {}", term::line(name)),
            None => "the server".to_owned(),
        };
        match asked {
            Elicitation::Url { message, url, .. } => {
                let Some((url, host)) = url_to_show(&url) else {
                    eprintln!(
                        "mcp-client: {who} asks to visit a URL that is not https (nor http on this machine); declined: {}",
                        term::line(&url)
                    );
                    return Ok(ElicitAnswer::Decline);
                };
                // > "MUST show the full URL to the user for examination before consent. […]
                // > SHOULD highlight the domain of the URL to mitigate subdomain spoofing. […]
                // > SHOULD have warnings for ambiguous/suspicious URIs (i.e., containing
                // > Punycode)" — MCP 2025-11-25, Elicitation § Safe URL Handling
                let punycode = if host.split('.').any(|label| label.starts_with("xn--")) {
                    " (punycode: it may look like another name)"
                } else {
                    ""
                };
                eprintln!(
                    "{who} asks: {}\n  visit: {}\n  opens host: {}{punycode}",
                    term::line(&message),
                    term::line(&url),
                    term::line(&host)
                );
                match ask("done? [y/N] ").as_deref().map(str::trim) {
                    Some("y" | "Y" | "yes") => Ok(ElicitAnswer::Accept(Default::default())),
                    Some(_) => Ok(ElicitAnswer::Decline),
                    None => Ok(ElicitAnswer::Cancel),
                }
            }
            Elicitation::Form { message, schema } => {
                eprintln!(
                    "{who} asks: {}  (an empty line keeps the default; end of input declines)",
                    term::line(&message)
                );
                let mut content = serde_json::Map::new();
                let props = schema["properties"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                for (name, prop) in props {
                    let kind = prop["type"].as_str().unwrap_or("string");
                    let default = prop
                        .get("default")
                        .map(|d| format!(" [{d}]"))
                        .unwrap_or_default();
                    let prompt = term::line(&format!("{name} ({kind}){default}:"));
                    let Some(line) = ask(&format!("  {prompt} ")) else {
                        return Ok(ElicitAnswer::Decline);
                    };
                    let line = line.trim();
                    if line.is_empty() {
                        continue;
                    }
                    let value = match kind {
                        "boolean" => Value::Bool(matches!(line, "y" | "yes" | "true" | "1")),
                        "integer" | "number" => {
                            serde_json::from_str(line).unwrap_or(Value::String(line.into()))
                        }
                        _ => Value::String(line.into()),
                    };
                    content.insert(name, value);
                }
                Ok(ElicitAnswer::Accept(content))
            }
            _ => Ok(ElicitAnswer::Decline),
        }
    })
}

/// A URL-mode elicitation's URL as it is shown, and its host: only an `https` URL, or an `http`
/// one on this machine's loopback (a local service's page), is offered to the person; `None`
/// for any other (`javascript:`, `file:`, `data:`, plain http to another host, no URL at all).
/// The URL shown is the parsed one as a browser would open it (its control characters and
/// non-ASCII percent-encoded, an international host in punycode).
fn url_to_show(url: &str) -> Option<(String, String)> {
    let parsed = url::Url::parse(url).ok()?;
    let host = parsed.host()?;
    let loopback = match &host {
        url::Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    };
    match parsed.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => return None,
    }
    Some((parsed.as_str().to_owned(), host.to_string()))
}

/// The browser flow's message, in the CLI's words: the authorization server's name and URL as
/// [`term`] shows them.
pub(crate) fn show_authorization_url(
    request: &mcp_connect::proto::oauth::AuthorizationRequest,
    opened: bool,
) {
    let how = if opened {
        "A browser was opened to authorize"
    } else {
        "Open this URL to authorize"
    };
    eprintln!(
        "{how} with {}:\n  {}",
        term::line(&request.issuer),
        term::line(&request.url)
    );
}
