//! The Python SDK server (mcp 2.3.0, drivers/tests/peers/fastmcp_server.py) asks the application for
//! input and reports progress, in both eras, over stdio and Streamable HTTP; one elicitation
//! handler answers both eras.
//!
//! - `confirm {action}` elicits `{confirmed: boolean, name: string default "Ada"}` through an SDK
//!   resolver: in the modern era (2026-07-28, which `Auto` finds) an `input_required` round that
//!   the core answers by sending the call again (new id, `inputResponses`, the sealed
//!   `requestState`); in the legacy era (forced) an `elicitation/create` request mid-call. The
//!   handler answers `confirmed: true` and leaves `name` to the schema's default, which the core
//!   fills in: the model reads "Ada confirmed <action>". For the action "nothing" the handler
//!   declines, and the model reads "declined: nothing".
//! - `count {steps}` reports progress after each step (`ctx.report_progress`), which reaches
//!   `Client::request_with_progress` in order, before the answer: over stdio in both eras, and
//!   over HTTP in SSE mode in both eras (legacy: on the call's SSE stream; modern: the SDK turns
//!   the call's answer into an SSE stream once the tool emits a notification). In
//!   `--json-response` mode the SDK sends no progress at all (and no legacy elicitation: a JSON
//!   body carries only the answer); the modern elicitation still works there (plain JSON rounds).
//!
//! The peers come from `.ci/install-peers`; a missing peer skips (and fails under `CI=true`).

use mcp_connect::proto::{CallTool, Era, EraChoice, Method};
use mcp_connect::{
    Client, ClientConfig, ElicitAnswer, Elicitation, HandlerError, Handlers, HttpTransport,
    HttpTransportConfig, Request, StdioConfig, StdioTransport,
};
use mcp_testkit::{close_and_check, peer_bin, peer_script, HttpPeer};
use serde_json::{json, Map};
use std::sync::{Arc, Mutex};

/// What the handler was asked, in order.
type Asked = Arc<Mutex<Vec<String>>>;

/// The user: confirms (leaving the name to its default), except for "nothing", which they
/// decline. Records each message and the schema's field names.
fn handlers(asked: Asked) -> Handlers {
    Handlers::new().elicitation(move |e: Elicitation| {
        let asked = asked.clone();
        async move {
            let Elicitation::Form { message, schema } = e else {
                return Err(HandlerError("form mode only".into()));
            };
            let mut fields: Vec<&str> = schema["properties"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k.as_str())
                .collect();
            fields.sort_unstable();
            asked
                .lock()
                .unwrap()
                .push(format!("{message} {}", fields.join(",")));
            if message.contains("nothing") {
                return Ok(ElicitAnswer::Decline);
            }
            let mut content = Map::new();
            content.insert("confirmed".into(), json!(true));
            Ok(ElicitAnswer::Accept(content))
        }
    })
}

fn config(era: EraChoice, asked: Asked) -> ClientConfig {
    let mut config = ClientConfig {
        handlers: handlers(asked),
        ..ClientConfig::default()
    };
    config.session.era = era;
    config
}

/// Whether the SDK sends progress (and legacy elicitations) on this connection.
#[derive(Clone, Copy, PartialEq)]
enum Streams {
    /// stdio, or HTTP in SSE mode.
    Yes,
    /// HTTP in `--json-response` mode.
    JsonOnly,
}

/// The whole check on an opened client: the era as asked, the handler called and its answer
/// read by the model, progress in order.
async fn check(client: &Client, era: EraChoice, streams: Streams, asked: &Asked) {
    let expected = match era {
        EraChoice::Legacy => Era::Legacy,
        _ => Era::Modern,
    };
    assert_eq!(client.era(), Some(expected), "mcp 2.3.0 speaks 2026-07-28");

    let tools = client.list_tools().await.unwrap();
    for name in ["confirm", "count"] {
        assert!(tools.iter().any(|t| t.name == name), "{name} is listed");
    }

    let r = client
        .call_tool("confirm", json!({"action": "delete /tmp/x"}))
        .await
        .unwrap();
    assert!(!r.is_error, "{}", r.text());
    // The handler's `confirmed: true`, and the schema's default name the core filled in.
    assert_eq!(r.text(), "Ada confirmed delete /tmp/x");
    let r = client
        .call_tool("confirm", json!({"action": "nothing"}))
        .await
        .unwrap();
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), "declined: nothing");
    assert_eq!(
        *asked.lock().unwrap(),
        [
            "Confirm: delete /tmp/x? confirmed,name",
            "Confirm: nothing? confirmed,name"
        ],
        "the handler was asked once per call"
    );
    let stats = client.stats();
    assert_eq!(stats.server_requests, 2, "{stats:?}");
    // Modern: each answer went back in the call's next round; legacy: as JSON-RPC responses.
    let rounds = if expected == Era::Modern { 2 } else { 0 };
    assert_eq!(stats.input_rounds, rounds, "{stats:?}");

    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let reply = client
        .request_with_progress(Request::call_tool("count", json!({"steps": 3})), move |p| {
            sink.lock()
                .unwrap()
                .push((p.progress, p.total, p.message.clone()))
        })
        .await
        .unwrap();
    let result = CallTool::from_reply(reply).expect("a tools/call result");
    assert_eq!(result.text(), "counted to 3");
    let progress = seen.lock().unwrap().clone();
    match streams {
        Streams::Yes => assert_eq!(
            progress,
            (1..=3)
                .map(|i| (i as f64, Some(3.0), Some(format!("step {i} of 3"))))
                .collect::<Vec<_>>(),
            "every step, in order, before the answer"
        ),
        Streams::JsonOnly => assert!(progress.is_empty(), "{progress:?}"),
    }
    assert_eq!(client.stats().progress_notifications, progress.len() as u64);
}

fn stdio(era: EraChoice) {
    let Some(python) = peer_bin("python") else {
        return;
    };
    let asked = Asked::default();
    smol::block_on(async {
        let transport = StdioTransport::spawn(
            StdioConfig::new(python)
                .args([peer_script("fastmcp_server.py")])
                .args(["--transport", "stdio"]),
        )
        .expect("spawn the Python SDK server");
        let client = Client::with_config(transport, config(era, asked.clone()));
        if let Err(e) = client.initialize().await {
            panic!(
                "initialize: {e}\n{}",
                client.transport().stderr_tail().unwrap_or_default()
            );
        }
        check(&client, era, Streams::Yes, &asked).await;
        close_and_check(client).await;
    });
}

fn http(options: &[&str], era: EraChoice, streams: Streams) {
    let Some(python) = peer_bin("python") else {
        return;
    };
    let peer = HttpPeer::python(&python, options);
    let asked = Asked::default();
    smol::block_on(async {
        let transport = HttpTransport::new(HttpTransportConfig::new(peer.url.as_str())).unwrap();
        let client = Client::with_config(transport, config(era, asked.clone()));
        if let Err(e) = client.initialize().await {
            panic!("initialize: {e}\nserver output:\n{}", peer.output());
        }
        check(&client, era, streams, &asked).await;
        client.close().await.expect("close");
    });
    peer.stop();
}

#[test]
fn stdio_modern() {
    stdio(EraChoice::Auto);
}

#[test]
fn stdio_legacy() {
    stdio(EraChoice::Legacy);
}

#[test]
fn http_modern() {
    http(&[], EraChoice::Auto, Streams::Yes);
}

#[test]
fn http_legacy() {
    http(&[], EraChoice::Legacy, Streams::Yes);
}

/// JSON responses, modern era: the elicitation rounds are plain JSON exchanges; the SDK drops
/// progress in this mode. (Legacy `--json-response` is not checked: the SDK cannot send a request
/// mid-call when the answer is one JSON body, so `confirm` cannot work there.)
#[test]
fn http_json_response_modern() {
    http(&["--json-response"], EraChoice::Auto, Streams::JsonOnly);
}
