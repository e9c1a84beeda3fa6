//! The `opentelemetry` feature: with `ClientConfig::default()`, the trace context of the calling
//! span — read from a real OpenTelemetry tracer (the SDK's, under `tracing-opentelemetry`'s
//! layer) — reaches a real server (the Python SDK, drivers/tests/peers/fastmcp_server.py
//! `--trace`) in the call's `params._meta`.
//!
//! The agent's span has a remote parent whose trace id the test chose: the server must see that
//! trace id, and as the parent id the span id of the client's own request span
//! (`tools/call trace_meta`), whose parent is the agent's span — one trace, from the agent
//! through the client to the server.
//!
//! `cargo test -p mcp-connect --features opentelemetry --test otel`. Skips (prints
//! `skipped: …`) when the peer is missing; fails instead under `CI=true`.

use mcp_connect::proto::Request;
use mcp_connect::{Client, ClientConfig, StdioConfig, StdioTransport};
use mcp_testkit::{close_and_check, peer_bin, peer_script};
use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanProcessor};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const REMOTE_SPAN_ID: &str = "00f067aa0ba902b7";

/// Keeps every span that ends (nothing is exported).
#[derive(Debug, Default, Clone)]
struct Recorder(Arc<Mutex<Vec<SpanData>>>);

impl SpanProcessor for Recorder {
    fn on_start(&self, _: &mut opentelemetry_sdk::trace::Span, _: &opentelemetry::Context) {}
    fn on_end(&self, span: SpanData) {
        self.0.lock().unwrap().push(span);
    }
    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }
    fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
        Ok(())
    }
}

#[test]
fn the_server_sees_the_calling_spans_trace_context_and_nothing_without_one() {
    let Some(python) = peer_bin("python") else {
        return;
    };
    let script = peer_script("fastmcp_server.py");
    let recorder = Recorder::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(recorder.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("otel-test")));
    let (seen, agent_span_id) = tracing::subscriber::with_default(subscriber, || {
        let remote = SpanContext::new(
            TraceId::from_hex(TRACE_ID).unwrap(),
            SpanId::from_hex(REMOTE_SPAN_ID).unwrap(),
            TraceFlags::SAMPLED,
            true,
            TraceState::from_key_value([("vendor", "v1")]).unwrap(),
        );
        let agent = tracing::info_span!("agent turn");
        agent
            .set_parent(opentelemetry::Context::new().with_remote_span_context(remote))
            .expect("the layer is there");
        let agent_span_id = agent.context().span().span_context().span_id();
        let seen = agent.in_scope(|| {
            smol::block_on(async {
                let config = StdioConfig::new(&python).args([script.as_os_str()]).args([
                    "--transport",
                    "stdio",
                    "--trace",
                ]);
                let client = Client::with_config(
                    StdioTransport::spawn(config).expect("spawn"),
                    ClientConfig::default(),
                );
                client.initialize().await.expect("the Python server opens");
                let r = client
                    .call(Request::call_tool("trace_meta", json!({})))
                    .await
                    .expect("trace_meta answers");
                close_and_check(client).await;
                serde_json::from_str::<Value>(&r.text()).expect("JSON")
            })
        });
        (seen, agent_span_id)
    });
    let traceparent = seen["traceparent"].as_str().expect("a traceparent came");
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    assert_eq!(parts[0], "00");
    assert_eq!(parts[1], TRACE_ID, "the agent's trace");
    assert_eq!(parts[3], "01", "sampled, as the parent");
    assert_eq!(seen["tracestate"], "vendor=v1", "the parent's tracestate");
    // The parent the server sees is the client's request span, a child of the agent's span.
    let spans = recorder.0.lock().unwrap();
    let request = spans
        .iter()
        .find(|s| s.name == "tools/call trace_meta")
        .unwrap_or_else(|| {
            let names: Vec<_> = spans.iter().map(|s| s.name.to_string()).collect();
            panic!("no request span among {names:?}")
        });
    assert_eq!(parts[2], request.span_context.span_id().to_string());
    assert_eq!(request.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(request.parent_span_id, agent_span_id);
    assert_ne!(parts[2], REMOTE_SPAN_ID);
    drop(spans);

    // Then the feature's default provider with no subscriber (so no layer, no span): no valid
    // context, so no `traceparent`. (In the same test, after the first: a test without a
    // subscriber running beside one that has a scoped one can make `tracing` cache the request
    // span's callsite as unwanted, and the first would then see no request span.)
    let seen = smol::block_on(async {
        let config = StdioConfig::new(python).args([script.as_os_str()]).args([
            "--transport",
            "stdio",
            "--trace",
        ]);
        let client = Client::with_config(
            StdioTransport::spawn(config).expect("spawn"),
            ClientConfig::default(),
        );
        assert!(
            ClientConfig::default().trace_context.is_some(),
            "the feature sets the provider"
        );
        client.initialize().await.expect("the Python server opens");
        let r = client
            .call(Request::call_tool("trace_meta", json!({})))
            .await
            .unwrap();
        close_and_check(client).await;
        serde_json::from_str::<Value>(&r.text()).unwrap()
    });
    assert_eq!(seen, json!({}));
}
