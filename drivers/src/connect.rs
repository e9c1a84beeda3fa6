//! Connecting in the era the server speaks, and remembering it.
//!
//! [`connect_stdio`] and [`connect_http`] start the transport, open the session (with
//! [`EraChoice::Auto`] by default: the probe finds the era) and remember the era per server —
//! a stdio command line, an HTTP endpoint — for the next connection in this process:
//!
//! > "The era determination is a property of the server, not of an individual request. Clients
//! > **SHOULD** cache the result for the lifetime of the server process (stdio) or origin (HTTP),
//! > and **MAY** persist it across restarts of the same server configuration, re-probing if the
//! > cached assumption later fails." — MCP 2026-07-28, Versioning § Backward Compatibility
//!
//! A server remembered as legacy is opened with [`EraChoice::LegacyFirst`] (no probe; the probe
//! follows only if `initialize` is refused). A stdio server that exits on the probe — a legacy
//! server that does not survive an unknown request — is started again and spoken to in the
//! legacy era.

#[cfg(feature = "http")]
use crate::http::{HttpTransport, HttpTransportConfig};
#[cfg(feature = "stdio")]
use crate::stdio::{StdioConfig, StdioTransport};
use crate::{Client, ClientConfig, Error};
use mcp_proto::{Era, EraChoice};
use std::collections::HashMap;
use std::sync::Mutex;

/// The most servers whose era is remembered; past it the memory starts afresh.
pub const MAX_REMEMBERED: usize = 256;

static ERAS: Mutex<Option<HashMap<String, Era>>> = Mutex::new(None);

/// The era remembered for the server `key`, if any.
pub fn remembered_era(key: &str) -> Option<Era> {
    let eras = ERAS.lock().unwrap_or_else(|e| e.into_inner());
    eras.as_ref()?.get(key).copied()
}

/// Remembers `era` for the server `key` (`None` forgets it).
pub fn remember_era(key: &str, era: Option<Era>) {
    let mut eras = ERAS.lock().unwrap_or_else(|e| e.into_inner());
    let map = eras.get_or_insert_with(HashMap::new);
    match era {
        Some(era) => {
            if map.len() >= MAX_REMEMBERED && !map.contains_key(key) {
                map.clear();
            }
            map.insert(key.to_owned(), era);
        }
        None => {
            map.remove(key);
        }
    }
}

#[cfg(feature = "stdio")]
/// The key a stdio server's era is remembered by: its command line and directory (never its
/// environment, which may hold secrets).
pub fn stdio_key(config: &StdioConfig) -> String {
    let mut key = format!("stdio:{}", config.command.to_string_lossy());
    for arg in &config.args {
        key.push('\0');
        key.push_str(&arg.to_string_lossy());
    }
    if let Some(dir) = &config.dir {
        key.push_str("\0@");
        key.push_str(&dir.to_string_lossy());
    }
    key
}

#[cfg(feature = "http")]
/// The key an HTTP server's era is remembered by: its endpoint without credentials, query or
/// fragment.
pub fn http_key(config: &HttpTransportConfig) -> String {
    let url = &config.rules.url;
    let cut = url.find(['?', '#']).unwrap_or(url.len());
    format!("http:{}", mcp_proto::http::redact_url(&url[..cut]))
}

/// The era to open with: the remembered one refines `Auto`.
fn choice(config: &ClientConfig, key: &str) -> EraChoice {
    match (config.session.era, remembered_era(key)) {
        (EraChoice::Auto, Some(Era::Legacy)) => EraChoice::LegacyFirst,
        (choice, _) => choice,
    }
}

fn with_era(config: &ClientConfig, era: EraChoice) -> ClientConfig {
    let mut config = config.clone();
    config.session.era = era;
    config
}

#[cfg(feature = "stdio")]
/// Starts a stdio server and opens its session in the era it speaks (see the
/// [module docs](self)). On failure the process is ended and reaped before the error returns.
pub async fn connect_stdio(
    stdio: StdioConfig,
    config: ClientConfig,
) -> Result<Client<StdioTransport>, Error> {
    let key = stdio_key(&stdio);
    let era = choice(&config, &key);
    let client = Client::with_config(
        StdioTransport::spawn(stdio.clone())?,
        with_era(&config, era),
    );
    let error = match client.initialize().await {
        Ok(_) => {
            remember_era(&key, client.era());
            return Ok(client);
        }
        Err(e) => e,
    };
    let relaunch = client.ended_on_probe() && era == EraChoice::Auto;
    let _ = client.close().await;
    if !relaunch {
        remember_era(&key, None);
        return Err(error);
    }
    // > "The server returns any other error, or does not respond … the server is legacy." A
    // > server that exits on the probe is one: start it again, without the probe.
    let client = Client::with_config(
        StdioTransport::spawn(stdio)?,
        with_era(&config, EraChoice::Legacy),
    );
    match client.initialize().await {
        Ok(_) => {
            remember_era(&key, Some(Era::Legacy));
            Ok(client)
        }
        Err(e) => {
            let _ = client.close().await;
            Err(e)
        }
    }
}

#[cfg(feature = "http")]
/// Opens a session with a Streamable HTTP server in the era it speaks (see the
/// [module docs](self)).
pub async fn connect_http(
    http: HttpTransportConfig,
    config: ClientConfig,
) -> Result<Client<HttpTransport>, Error> {
    let key = http_key(&http);
    let era = choice(&config, &key);
    let client = Client::with_config(HttpTransport::new(http)?, with_era(&config, era));
    match client.initialize().await {
        Ok(_) => {
            remember_era(&key, client.era());
            Ok(client)
        }
        Err(e) => {
            remember_era(&key, None);
            let _ = client.close().await;
            Err(e)
        }
    }
}
