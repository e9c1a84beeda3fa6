//! Connecting in the era the server speaks, and remembering it.
//!
//! # The two eras
//!
//! One client speaks both protocol eras — the stateless 2026-07-28 and the `initialize`
//! handshake of the revisions before it — and picks the right one by itself
//! ([`Config::era`](mcp_proto::Config::era), default [`EraChoice::Auto`]): it sends
//! `server/discover` first; a discover result (or a modern error such as -32022 with the versions
//! the server supports) means the modern era — every request then carries the protocol version,
//! the client's identity and capabilities in its `_meta`, no handshake, no session, no ping; any
//! other answer (an error, `{}`, an HTTP refusal) means a legacy server, and `initialize` follows
//! on the same connection. A server that does not answer the probe within
//! [`Config::probe_timeout`](mcp_proto::Config::probe_timeout) (2 s) gets `initialize` too, and
//! the first answer that settles the era wins, so a slow modern server loses nothing and a legacy
//! server that ignores unknown requests waits 2 s once. [`EraChoice::Legacy`] and
//! [`EraChoice::Modern`] force one. [`Client::era`] and [`Client::initialize_result`] say what was
//! picked (`mcp-client --info` prints it); [`Client::discover_result`] has the modern answer,
//! `ttlMs` and `cacheScope` included.
//!
//! In the modern era: `resultType` is read on every result (absent means complete, an unknown one
//! is an error at once); an `input_required` result is answered by the [`Handlers`](crate::Handlers)
//! and the call sent again (without a handler for what it asks, the call fails clearly), and one
//! that only carries `requestState` is sent again with a new id
//! and that state, byte for byte, after 50–250 ms — at most
//! [`Config::max_input_rounds`](mcp_proto::Config::max_input_rounds) (10) times, and the caller
//! sees one call; -32022 is retried once with a version both speak; -32020 and -32021 are typed
//! errors. What changes over HTTP is in the [`http`](crate::http) module.
//!
//! # Era memory
//!
//! [`connect_stdio`] and [`connect_http`] start the transport, open the session (with
//! [`EraChoice::Auto`] by default: the probe finds the era) and remember the era per server —
//! a stdio command line, an HTTP endpoint — in the configuration's
//! [`era_memory`](ClientConfig::era_memory), shared by its clones (a [`ServerSet`](crate::ServerSet)
//! gives each server's restarts the memory of its first start). The policy is the core's
//! [`EraMemory`]: a server remembered as legacy is opened with [`EraChoice::LegacyFirst`] (no
//! probe; the probe follows only if `initialize` is refused), and a stdio server that exits on
//! the probe — a legacy server that does not survive an unknown request — is started again and
//! spoken to in the legacy era. Only one that read the probe is: a server that exits without
//! having read a byte of it (a missing setting, a crash at start-up) ended whatever it was sent,
//! and is started once ([`EraMemory::relaunch`]; on Linux, where the pipe says what is unread). A client made with [`Client::new`] and opened with
//! [`Client::initialize`] does neither: prefer `connect_*`.

#[cfg(feature = "http")]
use crate::http::{HttpTransport, HttpTransportConfig};
#[cfg(feature = "stdio")]
use crate::stdio::{StdioConfig, StdioTransport};
use crate::{Client, ClientConfig, Error};
use mcp_proto::server_set::EraMemory;
use mcp_proto::EraChoice;
use std::sync::MutexGuard;

#[cfg(feature = "stdio")]
/// The key a stdio server's era is remembered by: its command line and directory (never its
/// environment, which may hold secrets).
pub fn stdio_key(config: &StdioConfig) -> String {
    let args: Vec<_> = config.args.iter().map(|a| a.to_string_lossy()).collect();
    let dir = config.dir.as_ref().map(|d| d.to_string_lossy());
    EraMemory::stdio_key(
        &config.command.to_string_lossy(),
        args.iter().map(|a| a.as_ref()),
        dir.as_deref(),
    )
}

#[cfg(feature = "http")]
/// The key an HTTP server's era is remembered by: its endpoint without credentials, query or
/// fragment.
pub fn http_key(config: &HttpTransportConfig) -> String {
    EraMemory::http_key(&config.rules.url)
}

fn memory(config: &ClientConfig) -> MutexGuard<'_, EraMemory> {
    config.era_memory.lock().unwrap_or_else(|e| e.into_inner())
}

/// The era to open with: the remembered one refines `Auto`.
fn choice(config: &ClientConfig, key: &str) -> EraChoice {
    memory(config).opening(key, config.session.era)
}

fn with_era(config: &ClientConfig, era: EraChoice) -> ClientConfig {
    let mut config = config.clone();
    config.session.era = era;
    config
}

#[cfg(feature = "stdio")]
/// Starts a stdio server and opens its session in the era it speaks (see the
/// [module docs](self)). On failure the process is ended and reaped before the error returns.
pub async fn connect_stdio(stdio: StdioConfig, config: ClientConfig) -> Result<Client, Error> {
    let key = stdio_key(&stdio);
    let era = choice(&config, &key);
    let client = Client::with_config(
        StdioTransport::spawn(stdio.clone())?,
        with_era(&config, era),
    );
    let error = match client.initialize().await {
        Ok(_) => {
            memory(&config).opened(&key, client.era());
            return Ok(client);
        }
        Err(e) => e,
    };
    // Before the close, which closes stdin: what of the probe the server read.
    let read = client.transport().input_read();
    let relaunch = EraMemory::relaunch(era, client.ended_on_probe(), read);
    let _ = client.close().await;
    let Some(era) = relaunch else {
        memory(&config).opened(&key, None);
        return Err(error);
    };
    // > "The server returns any other error, or does not respond … the server is legacy." A
    // > server that exits on the probe is one: start it again, without the probe.
    let client = Client::with_config(StdioTransport::spawn(stdio)?, with_era(&config, era));
    match client.initialize().await {
        Ok(_) => {
            memory(&config).opened(&key, Some(mcp_proto::Era::Legacy));
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
) -> Result<Client, Error> {
    let key = http_key(&http);
    let era = choice(&config, &key);
    let client = Client::with_config(HttpTransport::new(http)?, with_era(&config, era));
    match client.initialize().await {
        Ok(_) => {
            memory(&config).opened(&key, client.era());
            Ok(client)
        }
        Err(e) => {
            memory(&config).opened(&key, None);
            let _ = client.close().await;
            Err(e)
        }
    }
}
