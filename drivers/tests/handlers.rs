//! Hostile servers against the application's handlers, over an in-memory transport whose far end
//! the test drives message by message (and sees everything the client sends):
//!
//! - a handler that panics (in its future, or before it returns one): the server gets -32603, the
//!   connection goes on, a later request is answered by the same handler and a later call works;
//! - a handler that never returns while the server cancels its request (`notifications/cancelled`):
//!   the handler's future is dropped and nothing is ever sent for the request;
//! - a handler still running when the call it belongs to (a modern input-required round) is given
//!   up (its future dropped): the handler is dropped too, and no next round goes out;
//! - a handler whose answer is invalid (a sampling result without role/model, a root that is not a
//!   `file://` URI): the server gets -32603 (legacy); the call fails (modern);
//! - a flood: 1000 `roots/list` requests sent without waiting, while the handler is held: at most
//!   [`MAX_ASKS`] (64) run at once, the rest are refused -32603 at once, every request is answered
//!   exactly once, and once the held ones finish the client takes new requests again.

use mcp_connect::proto::session::MAX_ASKS;
use mcp_connect::proto::{EraChoice, RequestError, TransmitKind};
use mcp_connect::transport::{BoxFuture, Inbound, Transmit, Transport};
use mcp_connect::{
    Client, ClientConfig, ElicitAnswer, Elicitation, Error, HandlerError, Handlers, Root,
};
use serde_json::{json, Map, Value};
use smol::channel::{unbounded, Receiver, Sender};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a scripted server answers `tools/call` (its params): `Some(result)`, or no answer.
type CallScript = dyn Fn(&Value) -> Option<Value> + Send + Sync;

/// The far end: what the client sent, and a way to send it messages.
struct Far {
    to_client: Sender<Inbound>,
    arrived: event_listener::Event,
    /// Every message the client sent, parsed, in order.
    sent: Mutex<Vec<Value>>,
    on_call: Box<CallScript>,
}

impl Far {
    /// Sends the client one message.
    fn push(&self, message: Value) {
        self.to_client
            .try_send(Inbound::Message(message.to_string().into_bytes()))
            .expect("the client's end is open");
        self.arrived.notify(usize::MAX);
    }

    fn sent(&self) -> Vec<Value> {
        self.sent.lock().unwrap().clone()
    }

    /// The messages the client sent that answer the server's request `id`.
    fn answers_to(&self, id: &Value) -> Vec<Value> {
        self.sent()
            .into_iter()
            .filter(|m| m.get("method").is_none() && m.get("id") == Some(id))
            .collect()
    }
}

/// The client's side of the in-memory pair. The far end answers `initialize` (legacy, 2025-11-25)
/// and `server/discover` (modern) by itself, and `tools/call` as its script says.
struct Memory(Arc<Far>, Receiver<Inbound>);

fn pair(on_call: impl Fn(&Value) -> Option<Value> + Send + Sync + 'static) -> (Memory, Arc<Far>) {
    let (tx, rx) = unbounded();
    let far = Arc::new(Far {
        to_client: tx,
        arrived: event_listener::Event::new(),
        sent: Mutex::new(Vec::new()),
        on_call: Box::new(on_call),
    });
    (Memory(far.clone(), rx), far)
}

impl Transport for Memory {
    fn send(&self, message: Transmit) -> Result<(), Error> {
        if matches!(message.kind, TransmitKind::Abort { .. }) || message.payload.is_empty() {
            return Ok(());
        }
        let m: Value = serde_json::from_slice(&message.payload).expect("the client sends JSON");
        self.0.sent.lock().unwrap().push(m.clone());
        let result = match m["method"].as_str() {
            Some("initialize") => Some(json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "0"}
            })),
            Some("server/discover") => Some(json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "hostile", "version": "0"}}
            })),
            Some("tools/call") => (self.0.on_call)(&m["params"]),
            _ => None,
        };
        if let (Some(result), Some(id)) = (result, m.get("id")) {
            self.0
                .push(json!({"jsonrpc": "2.0", "id": id, "result": result}));
        }
        Ok(())
    }

    fn try_recv(&self) -> Option<Inbound> {
        self.1.try_recv().ok()
    }

    fn ready(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let arrived = self.0.arrived.listen();
            if self.1.is_empty() {
                arrived.await;
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            let _ = self.0.to_client.try_send(Inbound::Closed(None));
            self.0.arrived.notify(usize::MAX);
            Ok(())
        })
    }
}

/// A call's answer: one text block.
fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

/// A client in `era` over `transport`, opened.
async fn open(transport: Memory, era: EraChoice, handlers: Handlers) -> Client {
    let mut config = ClientConfig {
        handlers,
        ..ClientConfig::default()
    };
    config.session.era = era;
    let client = Client::with_config(transport, config);
    client.initialize().await.expect("opened");
    client
}

/// Waits (polling) until `cond` holds, for at most 10 s; whether it did.
async fn until(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        if Instant::now() > deadline {
            return false;
        }
        smol::Timer::after(Duration::from_millis(5)).await;
    }
    true
}

/// Sets its flag when dropped: put in a handler's future, it tells that the future was dropped.
struct DropGuard(Arc<AtomicBool>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn elicit(id: Value, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create", "params": {
        "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
    }})
}

/// The error code of a JSON-RPC error answer (panics on anything else).
fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error answer: {answer}"))
}

#[test]
fn a_panicking_handler_answers_internal_error_and_the_connection_goes_on() {
    let (transport, far) = pair(|_| Some(text("ok")));
    let elicitations = Arc::new(AtomicUsize::new(0));
    let n = elicitations.clone();
    let handlers = Handlers::new()
        // Panics inside its future the first time, answers afterwards.
        .elicitation(move |_: Elicitation| {
            let first = n.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                if first {
                    panic!("the elicitation handler panics on purpose");
                }
                let mut content = Map::new();
                content.insert("name".into(), json!("Ada"));
                Ok(ElicitAnswer::Accept(content))
            }
        })
        // Panics before it returns a future.
        .roots(
            false,
            || -> std::future::Ready<Result<Vec<Root>, HandlerError>> {
                panic!("the roots handler panics on purpose")
            },
        );
    smol::block_on(async {
        let client = open(transport, EraChoice::Legacy, handlers).await;

        far.push(elicit(json!("e1"), "first"));
        assert!(until(|| !far.answers_to(&json!("e1")).is_empty()).await);
        let answer = &far.answers_to(&json!("e1"))[0];
        assert_eq!(error_code(answer), -32603, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("panicked")),
            "{answer}"
        );

        far.push(json!({"jsonrpc": "2.0", "id": 7, "method": "roots/list"}));
        assert!(until(|| !far.answers_to(&json!(7)).is_empty()).await);
        assert_eq!(error_code(&far.answers_to(&json!(7))[0]), -32603);

        // The connection goes on: the same handler answers the next request, a call works.
        far.push(elicit(json!("e2"), "second"));
        assert!(until(|| !far.answers_to(&json!("e2")).is_empty()).await);
        assert_eq!(
            far.answers_to(&json!("e2"))[0]["result"],
            json!({"action": "accept", "content": {"name": "Ada"}})
        );
        let r = client.call_tool("t", json!({})).await.unwrap();
        assert_eq!(r.text(), "ok");
        for id in ["e1", "e2"] {
            assert_eq!(far.answers_to(&json!(id)).len(), 1, "answered once: {id}");
        }
        client.close().await.unwrap();
    });
}

#[test]
fn a_handler_that_never_returns_is_dropped_when_the_server_cancels_its_request() {
    let (transport, far) = pair(|_| Some(text("ok")));
    let started = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));
    let (s, d) = (started.clone(), dropped.clone());
    let handlers = Handlers::new().elicitation(move |_: Elicitation| {
        let guard = DropGuard(d.clone());
        s.store(true, Ordering::SeqCst);
        async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            Ok(ElicitAnswer::Cancel)
        }
    });
    smol::block_on(async {
        let client = open(transport, EraChoice::Legacy, handlers).await;
        far.push(elicit(json!(41), "forever"));
        assert!(until(|| started.load(Ordering::SeqCst)).await, "started");
        smol::Timer::after(Duration::from_millis(50)).await;
        assert!(!dropped.load(Ordering::SeqCst), "still running");

        far.push(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 41, "reason": "the user left"}}),
        );
        assert!(
            until(|| dropped.load(Ordering::SeqCst)).await,
            "the handler's future is dropped"
        );
        // Nothing is sent for it, then or later (a call goes and comes back meanwhile).
        let r = client.call_tool("t", json!({})).await.unwrap();
        assert_eq!(r.text(), "ok");
        smol::Timer::after(Duration::from_millis(200)).await;
        assert!(
            far.answers_to(&json!(41)).is_empty(),
            "{:?}",
            far.answers_to(&json!(41))
        );
        client.close().await.unwrap();
    });
}

/// The first round of a modern call: one elicitation, with state.
fn input_round() -> Value {
    json!({
        "resultType": "input_required",
        "inputRequests": {"q": {"method": "elicitation/create", "params": {
            "message": "which?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
        }}},
        "requestState": "state-1"
    })
}

#[test]
fn a_handler_still_running_when_its_call_is_given_up_is_dropped() {
    // The first round of `ask` asks for input; a retry (it must not come) would complete.
    // `plain` answers at once.
    let (transport, far) = pair(|params| {
        Some(if params["name"] == "plain" {
            text("ok")
        } else if params.get("inputResponses").is_some() {
            text("done")
        } else {
            input_round()
        })
    });
    let started = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));
    let (s, d) = (started.clone(), dropped.clone());
    let handlers = Handlers::new().elicitation(move |_: Elicitation| {
        let guard = DropGuard(d.clone());
        s.store(true, Ordering::SeqCst);
        async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            Ok(ElicitAnswer::Decline)
        }
    });
    smol::block_on(async {
        let client = open(transport, EraChoice::Modern, handlers).await;
        // The call is given up (its future dropped) once its handler runs.
        let gave_up = smol::future::or(
            async {
                let _ = client.call_tool("ask", json!({})).await;
                false
            },
            async {
                until(|| started.load(Ordering::SeqCst)).await;
                true
            },
        )
        .await;
        assert!(gave_up, "the call ended before its handler ran");
        assert!(
            until(|| dropped.load(Ordering::SeqCst)).await,
            "the handler's future is dropped with its call"
        );
        smol::Timer::after(Duration::from_millis(200)).await;
        let calls: Vec<Value> = far
            .sent()
            .into_iter()
            .filter(|m| m["method"] == "tools/call")
            .collect();
        assert_eq!(calls.len(), 1, "no next round goes out: {calls:?}");

        // The client goes on.
        let r = client.call_tool("plain", json!({})).await.unwrap();
        assert_eq!(r.text(), "ok");
        client.close().await.unwrap();
    });
}

#[test]
fn an_invalid_answer_is_refused_with_internal_error() {
    let (transport, far) = pair(|_| Some(text("ok")));
    let handlers = Handlers::new()
        .sampling(|_params: Value| async { Ok(json!({"text": "no role, no model"})) })
        .roots(false, || async {
            Ok(vec![Root {
                uri: "https://example.com/not-a-file".into(),
                name: None,
            }])
        });
    smol::block_on(async {
        let client = open(transport, EraChoice::Legacy, handlers).await;
        far.push(
            json!({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage",
                        "params": {"messages": [], "maxTokens": 5}}),
        );
        far.push(json!({"jsonrpc": "2.0", "id": 2, "method": "roots/list"}));
        assert!(
            until(|| !far.answers_to(&json!(1)).is_empty() && !far.answers_to(&json!(2)).is_empty())
                .await
        );
        for (id, why) in [(1, "a sampling result needs role"), (2, "file:// URI")] {
            let answer = &far.answers_to(&json!(id))[0];
            assert_eq!(error_code(answer), -32603, "{answer}");
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("invalid") && message.contains(why),
                "{answer}"
            );
            assert!(answer.get("result").is_none(), "{answer}");
        }
        let r = client.call_tool("t", json!({})).await.unwrap();
        assert_eq!(r.text(), "ok");
        client.close().await.unwrap();
    });

    // Modern: the round asks for sampling, the invalid answer fails the call; nothing more is
    // sent for it.
    let (transport, far) = pair(|params| {
        Some(if params.get("inputResponses").is_some() {
            text("should not come")
        } else {
            json!({"resultType": "input_required", "inputRequests": {"s": {
                "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}}})
        })
    });
    let handlers =
        Handlers::new().sampling(|_params: Value| async { Ok(json!({"role": "assistant"})) });
    smol::block_on(async {
        let client = open(transport, EraChoice::Modern, handlers).await;
        let err = client.call_tool("ask", json!({})).await.unwrap_err();
        assert!(
            matches!(&err, Error::Request(RequestError::InputFailed { method, reason })
                if method == "sampling/createMessage" && reason.contains("content")),
            "{err:?}"
        );
        let calls = far
            .sent()
            .into_iter()
            .filter(|m| m["method"] == "tools/call")
            .count();
        assert_eq!(calls, 1);
        client.close().await.unwrap();
    });
}

#[test]
fn a_flood_of_server_requests_is_bounded_and_every_one_is_answered() {
    const FLOOD: usize = 1000;
    let (transport, far) = pair(|_| Some(text("ok")));
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (gate_tx, gate_rx) = unbounded::<()>();
    let (r, m) = (running.clone(), most.clone());
    let handlers = Handlers::new().roots(false, move || {
        let (r, m, gate) = (r.clone(), m.clone(), gate_rx.clone());
        async move {
            let now = r.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(now, Ordering::SeqCst);
            // Held until the test opens the gate (closing the channel wakes every waiter).
            let _ = gate.recv().await;
            r.fetch_sub(1, Ordering::SeqCst);
            Ok(vec![Root::directory("/tmp")])
        }
    });
    smol::block_on(async {
        let client = open(transport, EraChoice::Legacy, handlers).await;
        // Without waiting for any answer.
        for id in 0..FLOOD {
            far.push(json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"}));
        }
        let answers = || {
            far.sent()
                .into_iter()
                .filter(|m| m.get("method").is_none() && m.get("id").is_some_and(Value::is_u64))
                .collect::<Vec<_>>()
        };
        // While the handlers are held: every request past the 64th is refused at once.
        assert!(
            until(|| answers().len() == FLOOD - MAX_ASKS
                && running.load(Ordering::SeqCst) == MAX_ASKS)
            .await,
            "{} answers, {} running",
            answers().len(),
            running.load(Ordering::SeqCst)
        );
        smol::Timer::after(Duration::from_millis(100)).await;
        assert_eq!(
            answers().len(),
            FLOOD - MAX_ASKS,
            "no more answers while held"
        );
        for a in answers() {
            assert_eq!(error_code(&a), -32603, "{a}");
        }
        assert_eq!(most.load(Ordering::SeqCst), MAX_ASKS, "at most 64 at once");
        assert_eq!(client.stats().server_requests, MAX_ASKS as u64);

        // Released: the held ones are answered with their roots, each request exactly once.
        gate_tx.close();
        assert!(
            until(|| answers().len() == FLOOD).await,
            "{}",
            answers().len()
        );
        let all = answers();
        let mut ids: Vec<u64> = all.iter().map(|a| a["id"].as_u64().unwrap()).collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..FLOOD as u64).collect::<Vec<_>>(), "each once");
        let ok = all.iter().filter(|a| a.get("result").is_some()).count();
        assert_eq!(ok, MAX_ASKS);
        assert!(all
            .iter()
            .filter(|a| a.get("result").is_some())
            .all(|a| a["result"]["roots"][0]["uri"] == "file:///tmp"));
        assert_eq!(running.load(Ordering::SeqCst), 0);

        // Room again: another 64 at once are all taken and answered.
        for id in FLOOD..FLOOD + MAX_ASKS {
            far.push(json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"}));
        }
        assert!(until(|| answers().len() == FLOOD + MAX_ASKS).await);
        let later = answers()
            .into_iter()
            .filter(|a| a["id"].as_u64().unwrap() >= FLOOD as u64)
            .filter(|a| a.get("result").is_some())
            .count();
        assert_eq!(later, MAX_ASKS);
        let r = client.call_tool("t", json!({})).await.unwrap();
        assert_eq!(r.text(), "ok");
        client.close().await.unwrap();
    });
}
