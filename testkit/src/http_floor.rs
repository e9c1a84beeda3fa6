//! The floor for Streamable HTTP: bare isahc's blocking API making the exchanges of a legacy-era
//! session (`initialize`, `notifications/initialized`, then one POST a call with its
//! `Mcp-Session-Id` and `MCP-Protocol-Version`) — or, [`HttpFloor::start_modern`], of the
//! 2026-07-28 era (no handshake; each POST with its `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` headers and its `_meta`) — no MCP library; each answer's body read whole,
//! as JSON or as the SSE event that carries it, and parsed as a `serde_json::Value`. The same
//! exchanges our client makes over the same HTTP stack: what the MCP layer adds is the
//! difference. The binary `mcp-testkit-floor --url URL` runs it as the CLI runs ours.

use crate::floor::{initialize_params, modern_meta, with_meta};
use isahc::prelude::*;
use isahc::{HttpClient, Request};
use serde_json::{json, Value};

/// A blocking session with one server.
pub struct HttpFloor {
    client: HttpClient,
    url: String,
    session: Option<String>,
    next_id: u64,
    /// In the 2026-07-28 era: each request's `params._meta`.
    modern: Option<Value>,
}

impl HttpFloor {
    /// Connects and makes the handshake (2025-11-25).
    pub fn start(url: &str) -> HttpFloor {
        let mut floor = HttpFloor {
            client: HttpClient::new().expect("an isahc client"),
            url: url.to_owned(),
            session: None,
            next_id: 0,
            modern: None,
        };
        let init = floor.request("initialize", initialize_params());
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        floor.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        floor
    }

    /// Talks to `url` in the 2026-07-28 era: no handshake.
    pub fn start_modern(url: &str) -> HttpFloor {
        HttpFloor {
            client: HttpClient::new().expect("an isahc client"),
            url: url.to_owned(),
            session: None,
            next_id: 0,
            modern: Some(modern_meta()),
        }
    }

    /// One request, its answer.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let params = match &self.modern {
            Some(meta) => with_meta(params, meta),
            None => params,
        };
        let message =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        let body = self.post(&message);
        let answer = match body.trim_start().starts_with('{') {
            true => body.as_str(),
            // SSE: the `data:` line of the event that carries the answer (the test kit's server
            // sends one event a POST).
            false => body
                .lines()
                .find_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .unwrap_or_else(|| panic!("no data line in {body:?}")),
        };
        serde_json::from_str(answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
    }

    /// POSTs `message`; the body of the answer, read whole.
    fn post(&mut self, message: &Value) -> String {
        let mut request = Request::post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        if let Some(session) = &self.session {
            request = request
                .header("Mcp-Session-Id", session.as_str())
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        if self.modern.is_some() {
            // MCP 2026-07-28, Streamable HTTP: the version, the method and the tool's name.
            request = request
                .header("MCP-Protocol-Version", "2026-07-28")
                .header("Mcp-Method", message["method"].as_str().unwrap_or_default());
            if let Some(name) = message["params"]["name"].as_str() {
                request = request.header("Mcp-Name", name);
            }
        }
        let request = request
            .body(serde_json::to_vec(message).expect("JSON"))
            .expect("a request");
        let mut response = self.client.send(request).expect("the exchange");
        assert!(response.status().is_success(), "HTTP {}", response.status());
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = session.to_str().ok().map(str::to_owned);
        }
        String::from_utf8(response.bytes().expect("the body")).expect("UTF-8")
    }
}
