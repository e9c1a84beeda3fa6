//! The W3C trace context a request carries in `params._meta` (`traceparent`, `tracestate`), in
//! both eras, over both transports: what reaches the wire. Fake time, no I/O.

use mcp_proto::{Config, EraChoice, Event, Request, Session, TraceContext, TransportKind};
use serde_json::{json, Value};
use std::time::Instant;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const INIT: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"prompts":{}},"serverInfo":{"name":"legacy-srv","version":"1"}}"#;
const DISCOVER: &str = r#"{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"prompts":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern-srv","version":"2.0"}}}"#;

fn trace() -> TraceContext {
    TraceContext::new(TRACEPARENT, Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")).unwrap()
}

fn sent(s: &mut Session) -> Vec<Value> {
    std::iter::from_fn(|| s.poll_transmit())
        .map(|t| serde_json::from_slice(&t.payload).expect("we send JSON"))
        .collect()
}

/// A session past its opening in `era` over `transport`, outputs drained.
fn ready(era: EraChoice, transport: TransportKind) -> (Session, Instant) {
    let now = Instant::now();
    let mut s = Session::new(Config {
        era,
        transport,
        ..Config::default()
    });
    s.initialize(now).unwrap();
    let answer = match era {
        EraChoice::Legacy => INIT,
        _ => DISCOVER,
    };
    s.handle_bytes(
        format!("{{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{answer}}}\n").as_bytes(),
        now,
    );
    sent(&mut s);
    assert_eq!(
        std::iter::from_fn(|| s.poll_event()).collect::<Vec<_>>(),
        vec![Event::Ready]
    );
    (s, now)
}

fn sessions() -> Vec<(Session, Instant, bool)> {
    let mut out = Vec::new();
    for transport in [TransportKind::Stream, TransportKind::Http] {
        let (s, now) = ready(EraChoice::Legacy, transport);
        out.push((s, now, false));
        let (s, now) = ready(EraChoice::Modern, transport);
        out.push((s, now, true));
    }
    out
}

#[test]
fn a_call_carries_the_trace_context_beside_its_arguments_untouched() {
    for (mut s, now, modern) in sessions() {
        let arguments = json!({"text": "hi", "_meta": {"traceparent": "the arguments' own"}});
        let call = Request::call_tool("echo", arguments.clone()).with_trace(trace());
        s.send(call, now).unwrap();
        let out = sent(&mut s);
        let params = &out[0]["params"];
        assert_eq!(params["arguments"], arguments, "{params}");
        assert_eq!(params["name"], "echo");
        let meta = &params["_meta"];
        assert_eq!(meta["traceparent"], TRACEPARENT, "{params}");
        assert_eq!(
            meta["tracestate"],
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
        );
        // The era's keys are still there, beside the trace's.
        assert_eq!(
            meta.get("io.modelcontextprotocol/protocolVersion")
                .is_some(),
            modern,
            "{params}"
        );
    }
}

#[test]
fn every_kind_of_request_carries_it_with_the_rest_of_its_meta() {
    for (mut s, now, _) in sessions() {
        // No params at all, params without `_meta`, a call that asked for progress (its
        // `progressToken` is in `_meta` too).
        s.send(Request::list_tools(None).with_trace(trace()), now)
            .unwrap();
        s.send(
            Request::get_prompt("p", &serde_json::Map::new()).with_trace(trace()),
            now,
        )
        .unwrap();
        s.send(
            Request::call_tool("echo", json!({}))
                .with_trace(trace())
                .with_progress(),
            now,
        )
        .unwrap();
        let out = sent(&mut s);
        assert_eq!(out.len(), 3);
        for r in &out {
            assert_eq!(r["params"]["_meta"]["traceparent"], TRACEPARENT, "{r}");
        }
        assert_eq!(out[1]["params"]["name"], "p");
        assert_eq!(out[2]["params"]["_meta"]["progressToken"], out[2]["id"]);
        assert_eq!(out[2]["params"]["arguments"], json!({}));
    }
}

#[test]
fn a_callers_own_traceparent_or_tracestate_wins_and_gets_no_companion() {
    for (mut s, now, _) in sessions() {
        for own in [
            json!({"traceparent": "00-11111111111111111111111111111111-2222222222222222-00"}),
            json!({"tracestate": "mine=1"}),
        ] {
            let params = json!({"name": "p", "_meta": own.clone()});
            let request = Request::new("prompts/get", Some(params)).with_trace(trace());
            s.send(request, now).unwrap();
            let out = sent(&mut s);
            let meta = out[0]["params"]["_meta"].as_object().unwrap();
            let trace_keys: Vec<_> = meta
                .iter()
                .filter(|(k, _)| !k.starts_with("io.modelcontextprotocol/"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let want: Vec<_> = own.as_object().unwrap().clone().into_iter().collect();
            assert_eq!(trace_keys, want, "{meta:?}");
        }
    }
}

#[test]
fn without_a_trace_context_nothing_is_added() {
    for (mut s, now, _) in sessions() {
        s.call_tool("echo", json!({"x": 1}), now).unwrap();
        s.send(Request::list_tools(None), now).unwrap();
        for r in sent(&mut s) {
            let text = r.to_string();
            assert!(!text.contains("traceparent"), "{text}");
            assert!(!text.contains("tracestate"), "{text}");
        }
    }
}

#[test]
fn a_request_sent_again_carries_the_same_context() {
    // A modern server that refuses the version (-32022) gets the request again with its own:
    // the same operation, in the same trace.
    let (mut s, now) = ready(EraChoice::Modern, TransportKind::Stream);
    s.send(
        Request::call_tool("echo", json!({"a": 1})).with_trace(trace()),
        now,
    )
    .unwrap();
    let first = sent(&mut s);
    let wire = first[0]["id"].as_u64().unwrap();
    let refusal = format!(
        r#"{{"jsonrpc":"2.0","id":{wire},"error":{{"code":-32022,"message":"unsupported","data":{{"supported":["2026-07-28"],"requested":"2026-07-28"}}}}}}"#
    );
    s.handle_bytes(format!("{refusal}\n").as_bytes(), now);
    let again = sent(&mut s);
    assert_eq!(again.len(), 1, "the request goes out once more");
    assert_ne!(again[0]["id"], first[0]["id"]);
    assert_eq!(again[0]["params"]["_meta"]["traceparent"], TRACEPARENT);
    assert_eq!(again[0]["params"]["arguments"], json!({"a": 1}));
}

#[test]
fn a_call_written_directly_is_what_its_map_would_give() {
    // The tool call's own writer (no map made) and the general one (a map) agree, in both eras.
    for (mut s, now, _) in sessions() {
        let direct = Request::call_tool("echo", json!({"t": [1, 2]})).with_trace(trace());
        let as_map = Request::new(
            "tools/call",
            Some(json!({"name": "echo", "arguments": {"t": [1, 2]}})),
        )
        .with_trace(trace());
        assert_eq!(direct.params(), as_map.params());
        s.send(direct, now).unwrap();
        s.send(as_map, now).unwrap();
        let out = sent(&mut s);
        assert_eq!(out[0]["params"], out[1]["params"]);
    }
}
