//! What the server asks of the application and tells it, in the pure session: server requests
//! (legacy JSON-RPC requests and modern input requests) answered through `Session::respond`,
//! progress, logs, list changes. One named test per rule. Fake time, no I/O.

use mcp_proto::capabilities::{ClientCapabilities, Elicitation};
use mcp_proto::{
    AskId, Config, EraChoice, Event, ListKind, Progress, Reply, Request, RequestError, RpcError,
    ServerRequest, Session, UsageError,
};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn sent(s: &mut Session) -> Vec<Value> {
    std::iter::from_fn(|| s.poll_transmit())
        .filter(|t| !t.payload.is_empty())
        .map(|t| serde_json::from_slice(&t.payload).expect("we send JSON"))
        .collect()
}

fn events(s: &mut Session) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn line(s: &mut Session, text: &str, now: Instant) {
    s.handle_bytes(format!("{text}\n").as_bytes(), now);
}

fn all() -> ClientCapabilities {
    ClientCapabilities {
        elicitation: Some(Elicitation {
            form: true,
            url: false,
        }),
        sampling: true,
        roots: Some(true),
    }
}

fn legacy(capabilities: ClientCapabilities) -> (Session, Instant) {
    let now = Instant::now();
    let mut s = Session::new(Config {
        era: EraChoice::Legacy,
        capabilities,
        ..Config::default()
    });
    s.initialize(now).unwrap();
    let init = sent(&mut s);
    assert_eq!(init[0]["params"]["capabilities"], capabilities.to_json());
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#,
        now,
    );
    sent(&mut s);
    assert_eq!(events(&mut s), vec![Event::Ready]);
    (s, now)
}

fn modern(capabilities: ClientCapabilities) -> (Session, Instant) {
    let now = Instant::now();
    let mut s = Session::new(Config {
        era: EraChoice::Modern,
        capabilities,
        ..Config::default()
    });
    s.initialize(now).unwrap();
    let discover = sent(&mut s);
    assert_eq!(
        discover[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        capabilities.to_json()
    );
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","id":0,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}"#,
        now,
    );
    assert_eq!(events(&mut s), vec![Event::Ready]);
    (s, now)
}

fn the_ask(s: &mut Session) -> (AskId, ServerRequest) {
    match events(s).as_slice() {
        [Event::ServerRequest { ask, request }] => (*ask, request.clone()),
        other => panic!("{other:?}"),
    }
}

const FORM: &str = r#"{"jsonrpc":"2.0","id":"e-1","method":"elicitation/create","params":{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"},"lang":{"type":"string","default":"en"},"n":{"type":"integer","default":3}}}}}"#;

#[test]
fn without_capabilities_every_server_request_but_ping_is_refused() {
    let (mut s, now) = legacy(ClientCapabilities::default());
    line(&mut s, FORM, now);
    let out = sent(&mut s);
    assert_eq!(out[0]["error"]["code"], -32601);
    assert!(events(&mut s).is_empty());
}

#[test]
fn a_declared_elicitation_reaches_the_application_and_its_answer_goes_back_with_defaults() {
    let (mut s, now) = legacy(all());
    line(&mut s, FORM, now);
    assert!(
        sent(&mut s).is_empty(),
        "the application answers, not the session"
    );
    let (ask, request) = the_ask(&mut s);
    assert_eq!(request.method(), "elicitation/create");
    assert!(!request.is_url_elicitation());
    assert_eq!(request.params().unwrap()["message"], "Your name?");
    s.respond(
        ask,
        Ok(json!({"action": "accept", "content": {"name": "Ada", "n": 7}})),
        now,
    )
    .unwrap();
    let out = sent(&mut s);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], "e-1", "the id echoed exactly");
    assert_eq!(
        out[0]["result"],
        json!({"action": "accept", "content": {"name": "Ada", "n": 7, "lang": "en"}}),
        "absent fields get the schema's defaults; given ones stay"
    );
    assert_eq!(s.stats().server_requests, 1);
    assert_eq!(
        s.respond(ask, Ok(json!({})), now),
        Err(UsageError::UnknownAsk(ask.0))
    );
}

#[test]
fn decline_and_cancel_carry_no_content() {
    let (mut s, now) = legacy(all());
    for action in ["decline", "cancel"] {
        line(&mut s, FORM, now);
        let (ask, _) = the_ask(&mut s);
        s.respond(ask, Ok(json!({"action": action, "content": {"x": 1}})), now)
            .unwrap();
        assert_eq!(sent(&mut s)[0]["result"], json!({"action": action}));
    }
}

#[test]
fn an_invalid_answer_is_refused_and_the_server_told_the_client_failed() {
    let (mut s, now) = legacy(all());
    line(&mut s, FORM, now);
    let (ask, _) = the_ask(&mut s);
    let err = s
        .respond(ask, Ok(json!({"action": "maybe"})), now)
        .unwrap_err();
    assert!(matches!(err, UsageError::InvalidAnswer { .. }), "{err:?}");
    let out = sent(&mut s);
    assert_eq!(out[0]["error"]["code"], -32603);
    assert!(out[0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("maybe"));
}

#[test]
fn an_application_error_goes_back_as_the_response() {
    let (mut s, now) = legacy(all());
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":10}}"#,
        now,
    );
    let (ask, request) = the_ask(&mut s);
    assert!(matches!(request, ServerRequest::CreateMessage(_)));
    let refused = RpcError {
        code: -1,
        message: "the user said no".into(),
        data: None,
    };
    s.respond(ask, Err(refused), now).unwrap();
    let out = sent(&mut s);
    assert_eq!(out[0]["id"], 5);
    assert_eq!(out[0]["error"]["message"], "the user said no");
}

#[test]
fn answers_are_checked_by_method() {
    let (mut s, now) = legacy(all());
    let sampling = r#"{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}"#;
    let roots = r#"{"jsonrpc":"2.0","id":2,"method":"roots/list"}"#;
    for (request, answer, ok) in [
        (
            sampling,
            json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}),
            true,
        ),
        (
            sampling,
            json!({"role": "assistant", "content": {"type": "text", "text": "hi"}}),
            false,
        ),
        (
            roots,
            json!({"roots": [{"uri": "file:///tmp", "name": "tmp"}]}),
            true,
        ),
        (
            roots,
            json!({"roots": [{"uri": "https://example.com"}]}),
            false,
        ),
        (roots, json!({"roots": "none"}), false),
        (roots, json!([]), false),
    ] {
        line(&mut s, request, now);
        let (ask, _) = the_ask(&mut s);
        assert_eq!(
            s.respond(ask, Ok(answer.clone()), now).is_ok(),
            ok,
            "{answer}"
        );
        let out = sent(&mut s);
        if ok {
            assert_eq!(out[0]["result"], answer);
        } else {
            assert_eq!(out[0]["error"]["code"], -32603, "{answer}");
        }
    }
}

#[test]
fn an_elicitation_mode_not_declared_is_invalid_params() {
    let (mut s, now) = legacy(all());
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"mode":"url","message":"Pay","url":"https://pay.example","elicitationId":"x"}}"#,
        now,
    );
    assert_eq!(sent(&mut s)[0]["error"]["code"], -32602);
    assert!(events(&mut s).is_empty());
}

#[test]
fn the_server_cancelling_its_request_drops_the_ask() {
    let (mut s, now) = legacy(all());
    line(&mut s, FORM, now);
    let (ask, _) = the_ask(&mut s);
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"e-1","reason":"timeout"}}"#,
        now,
    );
    assert_eq!(events(&mut s), vec![Event::ServerRequestCancelled { ask }]);
    assert_eq!(
        s.respond(ask, Ok(json!({"action": "cancel"})), now),
        Err(UsageError::UnknownAsk(ask.0))
    );
    assert!(
        sent(&mut s).is_empty(),
        "nothing goes to a request the server gave up on"
    );
}

#[test]
fn open_asks_are_bounded() {
    let (mut s, now) = legacy(all());
    for i in 0..mcp_proto::session::MAX_ASKS {
        line(
            &mut s,
            &format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"roots/list"}}"#),
            now,
        );
    }
    assert_eq!(s.open_asks(), mcp_proto::session::MAX_ASKS);
    assert!(sent(&mut s).is_empty());
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","id":"one-more","method":"roots/list"}"#,
        now,
    );
    let out = sent(&mut s);
    assert_eq!(out[0]["id"], "one-more");
    assert_eq!(out[0]["error"]["code"], -32603);
}

#[test]
fn roots_changed_is_sent_only_when_declared() {
    let (mut s, now) = legacy(all());
    assert!(s.notify_roots_changed(now));
    assert_eq!(
        sent(&mut s)[0]["method"],
        "notifications/roots/list_changed"
    );
    let (mut s, now) = legacy(ClientCapabilities {
        roots: Some(false),
        ..ClientCapabilities::default()
    });
    assert!(!s.notify_roots_changed(now));
    assert!(sent(&mut s).is_empty());
}

#[test]
fn roots_are_unasked_until_the_first_roots_list_is_answered() {
    let (mut s, now) = legacy(all());
    assert!(s.roots_unasked());
    // Another request answered changes nothing.
    line(&mut s, FORM, now);
    let (ask, _) = the_ask(&mut s);
    s.respond(ask, Ok(json!({"action": "decline"})), now)
        .unwrap();
    sent(&mut s);
    assert!(s.roots_unasked());
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","id":"r1","method":"roots/list"}"#,
        now,
    );
    let (ask, _) = the_ask(&mut s);
    assert!(s.roots_unasked(), "asked, not yet answered");
    s.respond(ask, Ok(json!({"roots": [{"uri": "file:///srv"}]})), now)
        .unwrap();
    assert_eq!(sent(&mut s)[0]["id"], "r1");
    assert!(!s.roots_unasked());
    assert_eq!(s.stats().roots_answered, 1);
    // No roots declared, or the modern era (a server asks within a call): nothing to wait for.
    let (s, _) = legacy(ClientCapabilities::default());
    assert!(!s.roots_unasked());
    let (s, _) = modern(all());
    assert!(!s.roots_unasked());
}

#[test]
fn a_ping_answered_before_any_roots_list_ends_the_wait_over_a_stream_only() {
    let (mut s, now) = legacy(all());
    assert!(s.roots_unasked_after_ping());
    // Asked: not yet answered, but a ping answered now tells nothing more.
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","id":"r1","method":"roots/list"}"#,
        now,
    );
    assert!(s.roots_unasked(), "asked, not yet answered");
    assert!(!s.roots_unasked_after_ping());
    // No roots declared: nothing to wait for at all.
    let (s, _) = legacy(ClientCapabilities::default());
    assert!(!s.roots_unasked_after_ping());
    // Over HTTP the server's request and the ping's answer travel apart: a ping tells nothing.
    let mut s = Session::new(Config {
        era: EraChoice::Legacy,
        capabilities: all(),
        transport: mcp_proto::TransportKind::Http,
        ..Config::default()
    });
    s.initialize(now).unwrap();
    sent(&mut s);
    s.handle_message(
        br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#,
        now,
    );
    assert_eq!(events(&mut s), vec![Event::Ready]);
    assert!(s.roots_unasked());
    assert!(!s.roots_unasked_after_ping());
}

#[test]
fn closing_the_session_drops_open_asks() {
    let (mut s, now) = legacy(all());
    line(&mut s, FORM, now);
    let (ask, _) = the_ask(&mut s);
    s.close(now);
    let ev = events(&mut s);
    assert!(
        ev.contains(&Event::ServerRequestCancelled { ask }),
        "{ev:?}"
    );
}

// ---- modern input requests --------------------------------------------------------------------

const ROUND: &str = r#"{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean","default":true}}}}},"where":{"method":"roots/list"}},"requestState":"st\"ate"}"#;

#[test]
fn input_requests_go_to_the_application_and_the_call_goes_on_with_the_answers() {
    let (mut s, now) = modern(all());
    let call = s.call_tool("deploy", json!({"env": "prod"}), now).unwrap();
    sent(&mut s);
    line(
        &mut s,
        &format!(r#"{{"jsonrpc":"2.0","id":{},"result":{ROUND}}}"#, call.0),
        now,
    );
    let ev = events(&mut s);
    assert_eq!(ev.len(), 2, "{ev:?}");
    let asks: Vec<(AskId, &'static str)> = ev
        .iter()
        .map(|e| match e {
            Event::ServerRequest { ask, request } => (*ask, request.method()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(sent(&mut s).is_empty(), "not before every answer is in");
    let (elicit, roots) = if asks[0].1 == "elicitation/create" {
        (asks[0].0, asks[1].0)
    } else {
        (asks[1].0, asks[0].0)
    };
    s.respond(elicit, Ok(json!({"action": "accept", "content": {}})), now)
        .unwrap();
    assert!(sent(&mut s).is_empty());
    s.respond(roots, Ok(json!({"roots": [{"uri": "file:///srv"}]})), now)
        .unwrap();
    let out = sent(&mut s);
    assert_eq!(out.len(), 1, "sent again at once, no backoff: {out:?}");
    let retry = &out[0];
    assert_ne!(retry["id"], call.0, "a new id");
    assert_eq!(retry["params"]["requestState"], "st\"ate");
    assert_eq!(retry["params"]["arguments"], json!({"env": "prod"}));
    assert_eq!(
        retry["params"]["inputResponses"],
        json!({
            "confirm": {"action": "accept", "content": {"ok": true}},
            "where": {"roots": [{"uri": "file:///srv"}]}
        })
    );
    let wire = retry["id"].as_u64().unwrap();
    line(
        &mut s,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{wire},"result":{{"content":[{{"type":"text","text":"deployed"}}]}}}}"#
        ),
        now,
    );
    match events(&mut s).as_slice() {
        [Event::Response {
            id,
            result: Ok(Reply::ToolCall(r)),
        }] if *id == call => {
            assert_eq!(r.text(), "deployed")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.stats().input_rounds, 1);
}

#[test]
fn an_input_handler_error_fails_the_call() {
    let (mut s, now) = modern(all());
    let call = s.call_tool("t", json!({}), now).unwrap();
    sent(&mut s);
    line(
        &mut s,
        &format!(r#"{{"jsonrpc":"2.0","id":{},"result":{ROUND}}}"#, call.0),
        now,
    );
    let ev = events(&mut s);
    let Event::ServerRequest { ask, .. } = &ev[0] else {
        panic!("{ev:?}")
    };
    let e = RpcError {
        code: -1,
        message: "no model".into(),
        data: None,
    };
    s.respond(*ask, Err(e), now).unwrap();
    let ev = events(&mut s);
    assert!(
        ev.iter().any(|e| matches!(e, Event::Response { id, result: Err(RequestError::InputFailed { reason, .. }) } if *id == call && reason == "no model")),
        "{ev:?}"
    );
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::ServerRequestCancelled { .. })),
        "the other input request is dropped: {ev:?}"
    );
}

#[test]
fn cancelling_a_call_drops_its_input_requests() {
    let (mut s, now) = modern(all());
    let call = s.call_tool("t", json!({}), now).unwrap();
    sent(&mut s);
    line(
        &mut s,
        &format!(r#"{{"jsonrpc":"2.0","id":{},"result":{ROUND}}}"#, call.0),
        now,
    );
    assert_eq!(events(&mut s).len(), 2);
    s.cancel(call, "bored", now).unwrap();
    let ev = events(&mut s);
    let dropped = ev
        .iter()
        .filter(|e| matches!(e, Event::ServerRequestCancelled { .. }))
        .count();
    assert_eq!(dropped, 2, "{ev:?}");
    assert!(
        sent(&mut s).is_empty(),
        "between rounds nothing is out to cancel"
    );
    assert_eq!(s.open_asks(), 0);
}

#[test]
fn an_input_request_for_an_undeclared_capability_fails_the_call() {
    let (mut s, now) = modern(ClientCapabilities {
        roots: Some(false),
        ..ClientCapabilities::default()
    });
    let call = s.call_tool("t", json!({}), now).unwrap();
    sent(&mut s);
    line(
        &mut s,
        &format!(r#"{{"jsonrpc":"2.0","id":{},"result":{ROUND}}}"#, call.0),
        now,
    );
    match events(&mut s).as_slice() {
        [Event::Response {
            result: Err(RequestError::InputUnsupported { methods }),
            ..
        }] => {
            assert_eq!(methods, &["elicitation/create"])
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        s.open_asks(),
        0,
        "no ask is opened when the round cannot be answered"
    );
}

// ---- progress, logs, list changes ----------------------------------------------------------------

fn progress(token: u64, p: f64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{token},"progress":{p},"total":10,"message":"step"}}}}"#
    )
}

#[test]
fn progress_reaches_the_request_that_asked_for_it_in_order_until_its_answer() {
    let (mut s, now) = legacy(all());
    let id = s
        .send(Request::call_tool("long", json!({})).with_progress(), now)
        .unwrap();
    let out = sent(&mut s);
    assert_eq!(
        out[0]["params"]["_meta"]["progressToken"], id.0,
        "its handle is its token"
    );
    assert_eq!(out[0]["params"]["arguments"], json!({}));
    let other = s.call_tool("quiet", json!({}), now).unwrap();
    sent(&mut s);
    line(&mut s, &progress(id.0, 1.0), now);
    line(&mut s, &progress(id.0, 2.5), now);
    line(&mut s, &progress(other.0, 1.0), now);
    let ev = events(&mut s);
    assert_eq!(
        ev,
        vec![
            Event::Progress {
                id,
                progress: Progress {
                    progress: 1.0,
                    total: Some(10.0),
                    message: Some("step".into())
                }
            },
            Event::Progress {
                id,
                progress: Progress {
                    progress: 2.5,
                    total: Some(10.0),
                    message: Some("step".into())
                }
            },
        ],
        "the request that did not ask gets none"
    );
    line(
        &mut s,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[]}}}}"#,
            id.0
        ),
        now,
    );
    events(&mut s);
    line(&mut s, &progress(id.0, 3.0), now);
    assert!(events(&mut s).is_empty(), "none after the answer");
    assert_eq!(s.stats().progress_notifications, 2);
}

#[test]
fn progress_can_restart_the_timeout_up_to_a_maximum() {
    let (mut s, now) = legacy(all());
    let id = s
        .send(
            Request::call_tool("long", json!({}))
                .timeout(Duration::from_secs(10))
                .reset_timeout_on_progress(Duration::from_secs(25)),
            now,
        )
        .unwrap();
    sent(&mut s);
    assert_eq!(s.deadline(id), Some(now + Duration::from_secs(10)));
    line(&mut s, &progress(id.0, 1.0), now + Duration::from_secs(8));
    assert_eq!(s.deadline(id), Some(now + Duration::from_secs(18)));
    line(&mut s, &progress(id.0, 2.0), now + Duration::from_secs(17));
    assert_eq!(
        s.deadline(id),
        Some(now + Duration::from_secs(25)),
        "capped"
    );
    s.handle_timeout(now + Duration::from_secs(25));
    let ev = events(&mut s);
    // The maximum was reached, not the timeout: the error and the cancellation say which.
    assert!(
        ev.iter().any(|e| matches!(e, Event::Response { id: got, result: Err(RequestError::TotalTimeout(max)) } if *got == id && *max == Duration::from_secs(25))),
        "{ev:?}"
    );
    assert_eq!(
        sent(&mut s)[0]["params"],
        json!({"requestId": id.0, "reason": "exceeded its maximum total time of 25s"})
    );
    // Without the opt-in, progress moves nothing.
    let id = s
        .send(
            Request::call_tool("long", json!({}))
                .timeout(Duration::from_secs(10))
                .with_progress(),
            now,
        )
        .unwrap();
    line(&mut s, &progress(id.0, 1.0), now + Duration::from_secs(8));
    assert_eq!(s.deadline(id), Some(now + Duration::from_secs(10)));
}

#[test]
fn progress_restarts_a_timeout_that_then_passes_without_progress() {
    let (mut s, now) = legacy(all());
    let secs = Duration::from_secs;
    let id = s
        .send(
            Request::call_tool("long", json!({}))
                .timeout(secs(10))
                .reset_timeout_on_progress(secs(100)),
            now,
        )
        .unwrap();
    sent(&mut s);
    line(&mut s, &progress(id.0, 1.0), now + secs(5));
    assert_eq!(s.deadline(id), Some(now + secs(15)));
    s.handle_timeout(now + secs(15));
    let ev = events(&mut s);
    assert!(
        ev.iter().any(|e| matches!(e, Event::Response { id: got, result: Err(RequestError::Timeout(t)) } if *got == id && *t == secs(10))),
        "the timeout, not the maximum: {ev:?}"
    );
    assert_eq!(sent(&mut s)[0]["params"]["reason"], "timed out after 10s");
}

#[test]
fn the_maximum_total_bounds_the_first_deadline_and_a_request_without_timeout() {
    let (mut s, now) = legacy(all());
    let secs = Duration::from_secs;
    // A maximum shorter than the timeout: the first deadline is the maximum.
    let short = s
        .send(
            Request::call_tool("long", json!({}))
                .timeout(secs(60))
                .reset_timeout_on_progress(secs(3)),
            now,
        )
        .unwrap();
    // No timeout at all: the maximum still applies, and progress moves nothing.
    let untimed = s
        .send(
            Request::call_tool("long", json!({}))
                .no_timeout()
                .reset_timeout_on_progress(secs(7)),
            now,
        )
        .unwrap();
    // A maximum too large for an instant: none, the timeout alone.
    let endless = s
        .send(
            Request::call_tool("long", json!({}))
                .timeout(secs(4))
                .reset_timeout_on_progress(Duration::MAX),
            now,
        )
        .unwrap();
    sent(&mut s);
    assert_eq!(s.deadline(short), Some(now + secs(3)));
    assert_eq!(s.deadline(untimed), Some(now + secs(7)));
    assert_eq!(s.deadline(endless), Some(now + secs(4)));
    line(&mut s, &progress(short.0, 1.0), now + secs(1));
    line(&mut s, &progress(untimed.0, 1.0), now + secs(1));
    line(&mut s, &progress(endless.0, 1.0), now + secs(3));
    assert_eq!(s.deadline(short), Some(now + secs(3)), "capped");
    assert_eq!(s.deadline(untimed), Some(now + secs(7)));
    assert_eq!(s.deadline(endless), Some(now + secs(7)));
    s.handle_timeout(now + secs(7));
    let ev = events(&mut s);
    let failed = |id, error: RequestError| {
        ev.iter()
            .any(|e| matches!(e, Event::Response { id: got, result: Err(e) } if *got == id && *e == error))
    };
    assert!(failed(short, RequestError::TotalTimeout(secs(3))), "{ev:?}");
    assert!(
        failed(untimed, RequestError::TotalTimeout(secs(7))),
        "{ev:?}"
    );
    assert!(failed(endless, RequestError::Timeout(secs(4))), "{ev:?}");
}

#[test]
fn logs_list_changes_and_resource_updates_are_events() {
    let (mut s, now) = legacy(all());
    for n in [
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","logger":"db","data":{"code":7}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"no level"}}"#,
    ] {
        line(&mut s, n, now);
    }
    assert_eq!(
        events(&mut s),
        vec![
            Event::Log(mcp_proto::LogMessage {
                level: "error".into(),
                logger: Some("db".into()),
                data: json!({"code": 7})
            }),
            Event::ListChanged(ListKind::Resources),
            Event::ListChanged(ListKind::Prompts),
            Event::ResourceUpdated {
                uri: "file:///a".into()
            },
        ]
    );
    assert_eq!(s.stats().notifications_dropped, 1, "a log without a level");
}

#[test]
fn set_log_level_is_a_request() {
    let (mut s, now) = legacy(all());
    s.send(Request::set_log_level("debug"), now).unwrap();
    let out = sent(&mut s);
    assert_eq!(out[0]["method"], "logging/setLevel");
    assert_eq!(out[0]["params"], json!({"level": "debug"}));
}
