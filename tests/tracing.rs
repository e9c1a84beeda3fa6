//! The `tracing` feature: one span per request with the OpenTelemetry MCP field names, the
//! outcome and the duration; the server's stderr lines and log messages as events; nothing
//! secret (argument values, results) in any field. Captured with a layer that records every
//! span's fields and every event.

use mcp_connect::{Client, ClientConfig, StdioTransport};
use mcp_testkit::serve;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

type FieldMap = BTreeMap<String, String>;

#[derive(Default, Clone)]
struct Captured {
    /// Each span: its id, name and fields (recorded later ones included), in creation order.
    spans: Arc<Mutex<Vec<(u64, String, FieldMap)>>>,
    /// Each event: level, target, fields (`message` included).
    events: Arc<Mutex<Vec<(Level, String, FieldMap)>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Captured {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.spans.lock().unwrap().push((
            id.into_u64(),
            attrs.metadata().name().to_owned(),
            fields,
        ));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut spans = self.spans.lock().unwrap();
        if let Some((_, _, fields)) = spans.iter_mut().rev().find(|(i, _, _)| *i == id.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.events.lock().unwrap().push((
            *event.metadata().level(),
            event.metadata().target().to_owned(),
            fields,
        ));
    }
}

#[test]
fn requests_are_spans_and_the_server_s_words_are_events() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::registry().with(captured.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    // The work runs on this thread (block_on), so the thread-local subscriber sees it; the
    // stderr drain runs on smol's executor, a thread of its own: its events are checked below
    // with a global default where one can be set.
    smol::block_on(async {
        let config = ClientConfig {
            label: Some("kit".into()),
            ..ClientConfig::default()
        };
        let client = Client::with_config(StdioTransport::spawn(serve(&[])).unwrap(), config);
        client.initialize().await.unwrap();
        let ok = client
            .call_tool("echo", json!({"text": "SECRET-ARGUMENT"}))
            .await
            .unwrap();
        assert_eq!(ok.text(), "SECRET-ARGUMENT");
        let failed = client
            .call_tool("fail", json!({"message": "m"}))
            .await
            .unwrap();
        assert!(failed.is_error);
        assert!(client
            .request(mcp_connect::Request::new("no/such/method", None))
            .await
            .is_err());
        client.close().await.unwrap();
    });
    let spans = captured.spans.lock().unwrap().clone();

    let requests: Vec<&BTreeMap<String, String>> = spans
        .iter()
        .filter(|(_, name, _)| name == "mcp.request")
        .map(|(_, _, f)| f)
        .collect();
    let by_name = |otel: &str| {
        requests
            .iter()
            .find(|f| f.get("otel.name").map(String::as_str) == Some(otel))
            .unwrap_or_else(|| panic!("no span {otel}: {requests:#?}"))
    };
    let echo = by_name("tools/call echo");
    assert_eq!(echo["mcp.method.name"], "tools/call");
    assert_eq!(echo["gen_ai.tool.name"], "echo");
    assert_eq!(echo["gen_ai.operation.name"], "execute_tool");
    assert_eq!(echo["network.transport"], "pipe");
    assert_eq!(echo["mcp.server"], "kit");
    assert_eq!(echo["outcome"], "ok");
    assert!(
        echo["jsonrpc.request.id"].parse::<u64>().is_ok(),
        "{echo:?}"
    );
    assert!(echo["duration_ms"].parse::<f64>().unwrap() >= 0.0);
    assert_eq!(by_name("tools/call fail")["outcome"], "tool_error");
    let missing = by_name("no/such/method");
    assert_eq!(missing["outcome"], "error");
    assert_eq!(missing["error.type"], "jsonrpc_error");
    assert_eq!(missing["rpc.response.status_code"], "-32601");
    // The opening is a span too, with the version it settled on.
    let opening = by_name("initialize");
    assert_eq!(opening["outcome"], "ok");
    assert_eq!(opening["mcp.protocol.version"], "2025-11-25");
    // A failed request is also an event, at WARN.
    let events = captured.events.lock().unwrap().clone();
    assert!(events
        .iter()
        .any(|(level, _, f)| *level == Level::WARN && f["message"] == "request failed"));
    // No argument or result value anywhere.
    let everything = format!("{spans:?}{events:?}");
    assert!(!everything.contains("SECRET-ARGUMENT"), "{everything}");
}
