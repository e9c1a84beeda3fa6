//! What the feature tests of the session (`features.rs`, `skills.rs`, `tasks.rs`) share: a
//! session opened against a server that declared given capabilities, in either era, and the
//! plumbing to read what it sends and says. Fake time, no I/O.
#![allow(dead_code)] // each test file uses its part

use mcp_proto::{Config, EraChoice, Event, Session};
use serde_json::{json, Value};
use std::time::Instant;

/// What the session sent, each message as JSON.
pub fn sent(s: &mut Session) -> Vec<Value> {
    std::iter::from_fn(|| s.poll_transmit())
        .map(|t| serde_json::from_slice(&t.payload).expect("we send JSON"))
        .collect()
}

/// The session's events.
pub fn events(s: &mut Session) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

/// One line from the server.
pub fn line(s: &mut Session, text: &str, now: Instant) {
    s.handle_bytes(format!("{text}\n").as_bytes(), now);
}

/// A session of `era` (legacy: `initialize`; modern: `server/discover`) whose server declared
/// `capabilities`, open and ready.
pub fn opened(era: EraChoice, capabilities: &Value) -> (Session, Instant) {
    let now = Instant::now();
    let mut s = Session::new(Config {
        era,
        ..Config::default()
    });
    s.initialize(now).unwrap();
    let out = sent(&mut s);
    let result = if era == EraChoice::Modern {
        assert_eq!(out[0]["method"], "server/discover");
        json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
               "capabilities": capabilities})
    } else {
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
               "serverInfo": {"name": "srv", "version": "1"}})
    };
    line(
        &mut s,
        &json!({"jsonrpc": "2.0", "id": out[0]["id"], "result": result}).to_string(),
        now,
    );
    sent(&mut s);
    assert_eq!(events(&mut s), vec![Event::Ready]);
    (s, now)
}
