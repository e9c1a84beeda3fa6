//! The W3C trace context reaches a real server: the official Python SDK (mcp 2.3.0,
//! drivers/tests/peers/fastmcp_server.py `--trace`), whose `trace_meta` tool answers with the
//! `traceparent` and `tracestate` it found in its call's `params._meta` — what a server's
//! instrumentation would extract as the remote parent. The context comes from a
//! [`ClientConfig::trace_context`] provider (no feature needed); tests/otel.rs reads it from a
//! real OpenTelemetry span.
//!
//! Skips (prints `skipped: …`) when the peer is missing; fails instead under `CI=true`.

use mcp_connect::proto::{EraChoice, Request, TraceContext};
use mcp_connect::{Client, ClientConfig, StdioConfig, StdioTransport, TraceContextProvider};
use mcp_testkit::{close_and_check, peer_bin, peer_script};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TRACESTATE: &str = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";

async fn connect(era: EraChoice, provider: Option<TraceContextProvider>) -> Option<Client> {
    let python = peer_bin("python")?;
    let script = peer_script("fastmcp_server.py");
    let config = StdioConfig::new(python).args([script.as_os_str()]).args([
        "--transport",
        "stdio",
        "--trace",
    ]);
    let mut settings = ClientConfig {
        trace_context: provider,
        ..ClientConfig::default()
    };
    settings.session.era = era;
    let client = Client::with_config(StdioTransport::spawn(config).expect("spawn"), settings);
    client.initialize().await.expect("the Python server opens");
    Some(client)
}

/// What the server saw in the call's `_meta`.
async fn seen(client: &Client, request: Request) -> Value {
    let r = client.call(request).await.expect("trace_meta answers");
    assert!(!r.is_error, "{}", r.text());
    serde_json::from_str(&r.text()).expect("the tool answers JSON")
}

fn fixed(calls: Arc<AtomicUsize>) -> TraceContextProvider {
    TraceContextProvider(Arc::new(move || {
        calls.fetch_add(1, Ordering::Relaxed);
        TraceContext::new(TRACEPARENT, Some(TRACESTATE))
    }))
}

#[test]
fn the_server_sees_the_providers_traceparent_in_both_eras() {
    for era in [EraChoice::Auto, EraChoice::Legacy] {
        smol::block_on(async {
            let calls = Arc::new(AtomicUsize::new(0));
            let Some(client) = connect(era, Some(fixed(calls.clone()))).await else {
                return;
            };
            let want = json!({"traceparent": TRACEPARENT, "tracestate": TRACESTATE});
            let call = Request::call_tool("trace_meta", json!({}));
            assert_eq!(seen(&client, call).await, want, "{era:?}");
            // Asked for that request only (the opening goes without).
            assert_eq!(calls.load(Ordering::Relaxed), 1);
            // With progress asked for, the keys share `_meta` with the `progressToken`.
            let r = client
                .call_with_progress(Request::call_tool("trace_meta", json!({})), |_| {})
                .await
                .unwrap();
            assert_eq!(serde_json::from_str::<Value>(&r.text()).unwrap(), want);
            close_and_check(client).await;
        });
    }
}

#[test]
fn a_callers_own_traceparent_wins_and_no_provider_sends_none() {
    smol::block_on(async {
        let calls = Arc::new(AtomicUsize::new(0));
        let Some(client) = connect(EraChoice::Auto, Some(fixed(calls))).await else {
            return;
        };
        let own = "00-11111111111111111111111111111111-2222222222222222-00";
        let call = Request::of::<mcp_connect::proto::CallTool>(Some(json!({
            "name": "trace_meta",
            "arguments": {},
            "_meta": {"traceparent": own},
        })));
        assert_eq!(seen(&client, call).await, json!({"traceparent": own}));
        close_and_check(client).await;

        let Some(client) = connect(EraChoice::Auto, None).await else {
            return;
        };
        let call = Request::call_tool("trace_meta", json!({}));
        assert_eq!(seen(&client, call).await, json!({}));
        close_and_check(client).await;
    });
}
