//! One named test per rule the `Session` implements. Fake time, no I/O.

use mcp_proto::error::Warning;
use mcp_proto::{
    Config, ContentBlock, Event, Reply, RequestError, RequestId, RpcError, Session, SessionError,
    State, UsageError,
};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const INIT_RESULT: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"srv","version":"1.2.3"},"instructions":"be nice"}}"#;

/// Drains and parses every queued transmit.
fn sent(s: &mut Session) -> Vec<Value> {
    std::iter::from_fn(|| s.poll_transmit())
        .map(|t| serde_json::from_slice(&t.payload).expect("we send JSON"))
        .collect()
}

fn events(s: &mut Session) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn line(s: &mut Session, text: &str, now: Instant) {
    s.handle_bytes(format!("{text}\n").as_bytes(), now);
}

/// A session past its handshake, with its outputs drained.
fn ready_with(config: Config) -> (Session, Instant) {
    let now = Instant::now();
    let mut s = Session::new(config);
    s.initialize(now).unwrap();
    line(&mut s, INIT_RESULT, now);
    sent(&mut s);
    assert_eq!(events(&mut s), vec![Event::Ready]);
    (s, now)
}

fn ready() -> (Session, Instant) {
    ready_with(legacy())
}

/// The legacy era, forced: what these tests are about (the modern era and the probe have their
/// own tests, in tests/modern.rs).
fn legacy() -> Config {
    Config {
        era: mcp_proto::EraChoice::Legacy,
        ..Config::default()
    }
}

fn call_result(text: &str) -> Reply {
    Reply::ToolCall(mcp_proto::CallToolResult {
        content: vec![ContentBlock::Text { text: text.into() }],
        structured_content: None,
        is_error: false,
        meta: None,
        result_type: None,
    })
}

#[test]
fn handshake_sends_initialize_then_initialized() {
    let now = Instant::now();
    let mut s = Session::new(legacy());
    assert_eq!(s.state(), State::New);
    let id = s.initialize(now).unwrap();
    let out = sent(&mut s);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["method"], "initialize");
    assert_eq!(out[0]["id"], json!(id.0));
    assert_eq!(out[0]["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(out[0]["params"]["capabilities"], json!({}));
    assert_eq!(out[0]["params"]["clientInfo"]["name"], "mcp-proto");
    assert_eq!(s.state(), State::Initializing);

    line(&mut s, INIT_RESULT, now);
    assert_eq!(
        sent(&mut s),
        vec![json!({"jsonrpc":"2.0","method":"notifications/initialized"})]
    );
    assert_eq!(events(&mut s), vec![Event::Ready]);
    assert!(s.is_ready());
    assert_eq!(s.protocol_version(), Some("2025-11-25"));
    assert_eq!(s.server_info().unwrap().name, "srv");
    assert_eq!(s.server_info().unwrap().version, "1.2.3");
    assert_eq!(s.instructions(), Some("be nice"));
    assert_eq!(
        s.server_capabilities().unwrap()["tools"]["listChanged"],
        true
    );
}

#[test]
fn every_legacy_version_is_accepted() {
    for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let now = Instant::now();
        let mut s = Session::new(legacy());
        s.initialize(now).unwrap();
        line(&mut s, &INIT_RESULT.replace("2025-11-25", v), now);
        assert_eq!(events(&mut s), vec![Event::Ready], "{v}");
        assert_eq!(s.protocol_version(), Some(v));
    }
}

#[test]
fn version_refused() {
    let now = Instant::now();
    let mut s = Session::new(legacy());
    s.initialize(now).unwrap();
    sent(&mut s);
    line(
        &mut s,
        &INIT_RESULT.replace("2025-11-25", "2099-01-01"),
        now,
    );
    let ev = events(&mut s);
    let [Event::Failed(err)] = ev.as_slice() else {
        panic!("{ev:?}")
    };
    assert!(
        matches!(err, SessionError::UnsupportedVersion { offered, .. } if offered == "2099-01-01")
    );
    let msg = err.to_string();
    assert!(
        msg.contains("2099-01-01") && msg.contains("2025-11-25") && msg.contains("2024-11-05"),
        "{msg}"
    );
    assert_eq!(s.state(), State::Closed);
    assert!(
        sent(&mut s).is_empty(),
        "no initialized notification after a refusal"
    );
    assert_eq!(s.call_tool("x", json!({}), now), Err(UsageError::Closed));
}

#[test]
fn initialize_error_fails_the_session() {
    let now = Instant::now();
    let mut s = Session::new(legacy());
    s.initialize(now).unwrap();
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"bad version"}}"#,
        now,
    );
    let ev = events(&mut s);
    assert!(
        matches!(&ev[..], [Event::Failed(SessionError::Initialize(RequestError::Rpc(e)))] if e.code == -32602),
        "{ev:?}"
    );
}

#[test]
fn command_before_initialize_is_a_usage_error() {
    let now = Instant::now();
    let mut s = Session::new(legacy());
    assert_eq!(s.list_tools(None, now), Err(UsageError::NotReady));
    assert_eq!(
        UsageError::NotReady.to_string(),
        "initialize first: the session is not ready"
    );
    s.initialize(now).unwrap();
    assert_eq!(
        s.call_tool("echo", json!({}), now),
        Err(UsageError::NotReady)
    );
    assert_eq!(s.initialize(now), Err(UsageError::AlreadyInitialized));
}

#[test]
fn initialize_is_never_cancelled() {
    let now = Instant::now();
    let mut s = Session::new(Config {
        default_timeout: Some(Duration::from_secs(5)),
        ..legacy()
    });
    let id = s.initialize(now).unwrap();
    assert_eq!(
        s.cancel(id, "bored", now),
        Err(UsageError::CannotCancelInitialize)
    );
    sent(&mut s);
    assert_eq!(s.poll_timeout(), Some(now + Duration::from_secs(5)));
    s.handle_timeout(now + Duration::from_secs(5));
    assert!(
        sent(&mut s).is_empty(),
        "no notifications/cancelled for initialize"
    );
    let ev = events(&mut s);
    assert!(
        matches!(
            &ev[..],
            [Event::Failed(SessionError::Initialize(
                RequestError::Timeout(_)
            ))]
        ),
        "{ev:?}"
    );
}

#[test]
fn ping_mid_call_is_answered_with_the_id_echoed() {
    let (mut s, now) = ready();
    let call = s.call_tool("slow", json!({}), now).unwrap();
    sent(&mut s);
    line(&mut s, r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, now);
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","id":"p-1","method":"ping","params":{}}"#,
        now,
    );
    let out: Vec<String> = std::iter::from_fn(|| s.poll_transmit())
        .map(|t| String::from_utf8(t.payload).unwrap())
        .collect();
    assert_eq!(
        out,
        [
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"p-1","result":{}}"#
        ]
    );
    assert!(s.is_pending(call));
    assert_eq!(s.stats().pings_answered, 2);
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":{call},"result":{{"content":[{{"type":"text","text":"done"}}]}}}}"#
    );
    line(&mut s, &answer, now);
    assert_eq!(
        events(&mut s),
        vec![Event::Response {
            id: call,
            result: Ok(call_result("done"))
        }]
    );
}

#[test]
fn unknown_server_request_gets_method_not_found() {
    let (mut s, now) = ready();
    s.call_tool("t", json!({}), now).unwrap();
    sent(&mut s);
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","id":42,"method":"sampling/createMessage","params":{}}"#,
        now,
    );
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","id":"r1","method":"roots/list"}"#,
        now,
    );
    let out = sent(&mut s);
    assert_eq!(out[0]["id"], 42);
    assert_eq!(out[0]["error"]["code"], -32601);
    assert_eq!(out[1]["id"], "r1");
    assert_eq!(out[1]["error"]["code"], -32601);
    assert!(out[1].get("result").is_none());
    assert_eq!(s.stats().requests_rejected, 2);
    assert!(events(&mut s).is_empty());
}

#[test]
fn answers_to_server_requests_are_bounded_whatever_the_server_sends() {
    use mcp_proto::session::{MAX_ECHOED_ID, MAX_ECHOED_METHOD};
    let (mut s, now) = ready();
    // A ping whose id is 1 MiB long is left unanswered, with a warning.
    let huge_id = "i".repeat(1024 * 1024);
    line(
        &mut s,
        &format!(r#"{{"jsonrpc":"2.0","id":"{huge_id}","method":"ping"}}"#),
        now,
    );
    assert!(sent(&mut s).is_empty(), "a huge id is not echoed");
    assert_eq!(
        events(&mut s),
        vec![Event::Warning(Warning::RequestIdTooLong {
            len: huge_id.len() + 2,
            limit: MAX_ECHOED_ID
        })]
    );
    assert_eq!(s.stats().pings_answered, 0);
    // An id at the limit is still answered.
    let at_limit = "j".repeat(MAX_ECHOED_ID - 2);
    line(
        &mut s,
        &format!(r#"{{"jsonrpc":"2.0","id":"{at_limit}","method":"ping"}}"#),
        now,
    );
    assert_eq!(sent(&mut s)[0]["id"], at_limit.as_str());
    // A long method name is not quoted back; a short one is.
    let long_method = "m".repeat(64 * 1024);
    line(
        &mut s,
        &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{long_method}"}}"#),
        now,
    );
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","id":2,"method":"roots/list"}"#,
        now,
    );
    let out = sent(&mut s);
    assert_eq!(out[0]["error"]["message"], "Method not found");
    assert!(out[0].to_string().len() < 200, "{}", out[0]);
    assert_eq!(out[1]["error"]["message"], "Method not found: roots/list");
    assert!("roots/list".len() <= MAX_ECHOED_METHOD);
}

#[test]
fn logs_and_list_changes_are_events_and_unasked_progress_is_dropped() {
    let (mut s, now) = ready();
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}"#,
        now,
    );
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#,
        now,
    );
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        now,
    );
    assert_eq!(
        events(&mut s),
        vec![
            Event::Log(mcp_proto::LogMessage {
                level: "info".into(),
                logger: None,
                data: json!("hi"),
            }),
            Event::ListChanged(mcp_proto::ListKind::Tools)
        ]
    );
    // No request asked for progress with token 1.
    assert_eq!(s.stats().notifications_dropped, 1);
    assert!(sent(&mut s).is_empty());
}

#[test]
fn response_with_wrong_id_is_ignored_with_a_warning() {
    let (mut s, now) = ready();
    let id = s.call_tool("t", json!({}), now).unwrap();
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","id":999,"result":{"content":[]}}"#,
        now,
    );
    line(
        &mut s,
        r#"{"jsonrpc":"2.0","id":"1","result":{"content":[]}}"#,
        now,
    );
    let ev = events(&mut s);
    assert_eq!(
        ev,
        vec![
            Event::Warning(Warning::UnknownId("999".into())),
            Event::Warning(Warning::UnknownId("\"1\"".into()))
        ]
    );
    assert!(s.is_pending(id));
}

#[test]
fn junk_lines_on_stdout_are_skipped() {
    let (mut s, now) = ready();
    let id = s.call_tool("t", json!({}), now).unwrap();
    let mut text =
        b"Server listening on stdio...\n\x00\x01garbage\xff\n42\n{\"jsonrpc\":\"2.0\"}\n".to_vec();
    text.extend_from_slice(
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"ok\"}}]}}}}\n").as_bytes(),
    );
    s.handle_bytes(&text, now);
    let ev = events(&mut s);
    assert_eq!(ev.len(), 5, "{ev:?}");
    assert!(
        matches!(&ev[0], Event::Warning(Warning::NotJson { excerpt, .. }) if excerpt.starts_with("Server listening"))
    );
    assert!(matches!(&ev[1], Event::Warning(Warning::NotJson { .. })));
    assert!(matches!(&ev[2], Event::Warning(Warning::NotJsonRpc(_))));
    assert!(matches!(&ev[3], Event::Warning(Warning::NotJsonRpc(_))));
    assert_eq!(
        ev[4],
        Event::Response {
            id,
            result: Ok(call_result("ok"))
        }
    );
    assert_eq!(s.stats().messages_ignored, 4);
}

#[test]
fn bom_at_stream_start_is_skipped() {
    let now = Instant::now();
    let mut s = Session::new(legacy());
    s.initialize(now).unwrap();
    s.handle_bytes(b"\xEF\xBB", now);
    s.handle_bytes(b"\xBF", now);
    line(&mut s, INIT_RESULT, now);
    assert_eq!(events(&mut s), vec![Event::Ready]);
}

#[test]
fn crlf_line_ends_are_tolerated_even_split() {
    let now = Instant::now();
    let mut s = Session::new(legacy());
    s.initialize(now).unwrap();
    s.handle_bytes(INIT_RESULT.as_bytes(), now);
    s.handle_bytes(b"\r", now);
    s.handle_bytes(b"\n", now);
    assert_eq!(events(&mut s), vec![Event::Ready]);
}

#[test]
fn batch_is_handled_element_by_element() {
    let (mut s, now) = ready();
    let a = s.call_tool("a", json!({}), now).unwrap();
    let b = s
        .send(mcp_proto::Request::new("resources/list", None), now)
        .unwrap();
    sent(&mut s);
    let batch = format!(
        r#"[{{"jsonrpc":"2.0","id":{a},"result":{{"content":[{{"type":"text","text":"A"}}]}}}},{{"jsonrpc":"2.0","id":5,"method":"ping"}},{{"jsonrpc":"2.0","method":"notifications/message"}},{{"jsonrpc":"2.0","id":{b},"error":{{"code":-32601,"message":"nope"}}}}]"#
    );
    line(&mut s, &batch, now);
    assert_eq!(
        events(&mut s),
        vec![
            Event::Response {
                id: a,
                result: Ok(call_result("A"))
            },
            Event::Response {
                id: b,
                result: Err(RequestError::Rpc(RpcError {
                    code: -32601,
                    message: "nope".into(),
                    data: None
                }))
            },
        ]
    );
    assert_eq!(
        sent(&mut s),
        vec![json!({"jsonrpc":"2.0","id":5,"result":{}})]
    );
}

#[test]
fn rpc_error_keeps_code_message_and_data() {
    let (mut s, now) = ready();
    let id = s.call_tool("nope", json!({}), now).unwrap();
    line(
        &mut s,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32602,"message":"Unknown tool: nope","data":{{"x":1}}}}}}"#
        ),
        now,
    );
    let expected = RpcError {
        code: -32602,
        message: "Unknown tool: nope".into(),
        data: Some(json!({"x":1})),
    };
    assert_eq!(
        events(&mut s),
        vec![Event::Response {
            id,
            result: Err(RequestError::Rpc(expected))
        }]
    );
}

#[test]
fn timeout_fails_the_request_and_sends_cancelled() {
    let (mut s, now) = ready();
    let slow = s
        .send(
            mcp_proto::Request::call_tool("slow", json!({})).timeout(Duration::from_secs(2)),
            now,
        )
        .unwrap();
    let other = s.call_tool("other", json!({}), now).unwrap();
    sent(&mut s);
    assert_eq!(s.poll_timeout(), Some(now + Duration::from_secs(2)));
    s.handle_timeout(now + Duration::from_millis(1999));
    assert!(events(&mut s).is_empty(), "not yet");
    s.handle_timeout(now + Duration::from_secs(2));
    assert_eq!(
        events(&mut s),
        vec![Event::Response {
            id: slow,
            result: Err(RequestError::Timeout(Duration::from_secs(2)))
        }]
    );
    assert_eq!(
        sent(&mut s),
        vec![
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": slow.0, "reason":"timed out after 2s"}})
        ]
    );
    assert!(s.is_pending(other));
    assert_eq!(
        s.poll_timeout(),
        Some(now + Duration::from_secs(60)),
        "the default timeout"
    );
}

#[test]
fn no_timeout_means_no_deadline() {
    let (mut s, now) = ready();
    s.send(
        mcp_proto::Request::call_tool("forever", json!({})).no_timeout(),
        now,
    )
    .unwrap();
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn explicit_cancel_sends_cancelled() {
    let (mut s, now) = ready();
    let id = s.call_tool("slow", json!({}), now).unwrap();
    sent(&mut s);
    s.cancel(id, "user gave up", now).unwrap();
    assert_eq!(
        sent(&mut s),
        vec![
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": id.0, "reason":"user gave up"}})
        ]
    );
    assert_eq!(
        events(&mut s),
        vec![Event::Response {
            id,
            result: Err(RequestError::Cancelled("user gave up".into()))
        }]
    );
    assert_eq!(
        s.cancel(id, "again", now),
        Err(UsageError::UnknownRequest(id))
    );
}

#[test]
fn late_response_is_dropped_silently() {
    let (mut s, now) = ready();
    let id = s
        .send(
            mcp_proto::Request::call_tool("slow", json!({})).timeout(Duration::from_secs(1)),
            now,
        )
        .unwrap();
    s.handle_timeout(now + Duration::from_secs(1));
    events(&mut s);
    sent(&mut s);
    line(
        &mut s,
        &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}}"#),
        now,
    );
    assert!(events(&mut s).is_empty(), "no event, not even a warning");
    assert!(sent(&mut s).is_empty());
    assert_eq!(s.stats().late_responses, 1);
}

#[test]
fn eof_fails_every_pending_request() {
    let (mut s, now) = ready();
    let a = s.call_tool("a", json!({}), now).unwrap();
    let b = s.list_tools(None, now).unwrap();
    s.handle_eof(now);
    assert_eq!(
        events(&mut s),
        vec![
            Event::Response {
                id: a,
                result: Err(RequestError::Closed)
            },
            Event::Response {
                id: b,
                result: Err(RequestError::Closed)
            },
            Event::Closed,
        ]
    );
    assert_eq!(s.state(), State::Closed);
    assert_eq!(s.pending_requests(), 0);
    assert_eq!(s.call_tool("a", json!({}), now), Err(UsageError::Closed));
}

#[test]
fn eof_during_handshake_fails_the_session() {
    let now = Instant::now();
    let mut s = Session::new(legacy());
    s.initialize(now).unwrap();
    s.handle_eof(now);
    assert_eq!(events(&mut s), vec![Event::Failed(SessionError::Closed)]);
}

#[test]
fn final_message_without_newline_is_delivered_at_eof() {
    let (mut s, now) = ready();
    let id = s.call_tool("t", json!({}), now).unwrap();
    s.handle_bytes(
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"last"}}]}}}}"#).as_bytes(),
        now,
    );
    assert!(events(&mut s).is_empty());
    s.handle_eof(now);
    assert_eq!(
        events(&mut s),
        vec![
            Event::Response {
                id,
                result: Ok(call_result("last"))
            },
            Event::Closed
        ]
    );
}

#[test]
fn oversized_line_fails_the_only_pending_request_at_once() {
    let (mut s, now) = ready_with(Config {
        frame_limit: 1024,
        ..legacy()
    });
    let id = s.call_tool("big", json!({}), now).unwrap();
    // The id sits past the kept head and the line is cut into chunks: the lone pending request fails.
    let big = format!(
        r#"{{"result":{{"content":[{{"type":"text","text":"{}"}}]}},"jsonrpc":"2.0","x":{id}}}"#,
        "a".repeat(10_000)
    );
    for chunk in big.as_bytes().chunks(100) {
        s.handle_bytes(chunk, now);
        assert!(s.buffered_len() <= 1024);
    }
    assert!(events(&mut s).is_empty(), "nothing until the line ends");
    s.handle_bytes(b"\n", now);
    let len = big.len() as u64;
    assert_eq!(
        events(&mut s),
        vec![
            Event::Warning(Warning::Oversized { len, limit: 1024 }),
            Event::Response {
                id,
                result: Err(RequestError::TooLarge { len, limit: 1024 })
            },
        ]
    );
    assert_eq!(
        RequestError::TooLarge { len, limit: 1024 }.to_string(),
        format!("message larger than the limit: {len} bytes, limit 1024")
    );
    // The stream goes on after the discarded line.
    let next = s.call_tool("small", json!({}), now).unwrap();
    line(
        &mut s,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{next},"result":{{"content":[{{"type":"text","text":"ok"}}]}}}}"#
        ),
        now,
    );
    assert_eq!(
        events(&mut s),
        vec![Event::Response {
            id: next,
            result: Ok(call_result("ok"))
        }]
    );
}

#[test]
fn oversized_line_fails_the_request_its_id_names() {
    let (mut s, now) = ready_with(Config {
        frame_limit: 1024,
        ..legacy()
    });
    let a = s.call_tool("a", json!({}), now).unwrap();
    let b = s.call_tool("b", json!({}), now).unwrap();
    let pad = "x".repeat(5000);
    // TypeScript SDK order: the id comes last.
    let ts = format!(
        r#"{{"result":{{"content":[{{"type":"text","text":"{pad}"}}]}},"jsonrpc":"2.0","id":{b}}}"#
    );
    line(&mut s, &ts, now);
    let ev = events(&mut s);
    assert!(
        matches!(&ev[1], Event::Response { id, result: Err(RequestError::TooLarge { .. }) } if *id == b),
        "{ev:?}"
    );
    assert!(s.is_pending(a));
    // Python SDK order: the id comes first.
    let py = format!(
        r#"{{"jsonrpc":"2.0","id":{a},"result":{{"content":[{{"type":"text","text":"{pad}"}}]}}}}"#
    );
    line(&mut s, &py, now);
    let ev = events(&mut s);
    assert!(
        matches!(&ev[1], Event::Response { id, result: Err(RequestError::TooLarge { .. }) } if *id == a),
        "{ev:?}"
    );
}

#[test]
fn oversized_line_with_several_pending_and_no_id_only_warns() {
    let (mut s, now) = ready_with(Config {
        frame_limit: 256,
        ..legacy()
    });
    let a = s.call_tool("a", json!({}), now).unwrap();
    let b = s.call_tool("b", json!({}), now).unwrap();
    line(&mut s, &"z".repeat(1000), now);
    assert_eq!(
        events(&mut s),
        vec![Event::Warning(Warning::Oversized {
            len: 1000,
            limit: 256
        })]
    );
    assert!(s.is_pending(a) && s.is_pending(b));
}

#[test]
fn pagination_cursor_is_passed_through() {
    let (mut s, now) = ready();
    let first = s.list_tools(None, now).unwrap();
    let out = sent(&mut s);
    assert!(
        out[0].get("params").is_none(),
        "first page without a cursor: {}",
        out[0]
    );
    line(
        &mut s,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{first},"result":{{"tools":[{{"name":"a","inputSchema":{{"type":"object"}}}}],"nextCursor":"page/2=="}}}}"#
        ),
        now,
    );
    let ev = events(&mut s);
    let [Event::Response {
        result: Ok(Reply::Tools(page)),
        ..
    }] = ev.as_slice()
    else {
        panic!("{ev:?}")
    };
    assert_eq!(page.tools[0].name, "a");
    assert_eq!(page.next_cursor.as_deref(), Some("page/2=="));
    let second = s.list_tools(page.next_cursor.as_deref(), now).unwrap();
    let out = sent(&mut s);
    assert_eq!(out[0]["params"], json!({"cursor":"page/2=="}));
    line(
        &mut s,
        &format!(r#"{{"jsonrpc":"2.0","id":{second},"result":{{"tools":[]}}}}"#),
        now,
    );
    let ev = events(&mut s);
    let [Event::Response {
        result: Ok(Reply::Tools(page)),
        ..
    }] = ev.as_slice()
    else {
        panic!("{ev:?}")
    };
    assert_eq!(page.next_cursor, None);
}

#[test]
fn call_tool_sends_raw_arguments_and_empty_object_for_null() {
    let (mut s, now) = ready();
    s.call_tool("echo", json!({"message": "hi", "n": [1, 2]}), now)
        .unwrap();
    s.call_tool("noargs", Value::Null, now).unwrap();
    let out = sent(&mut s);
    assert_eq!(out[0]["method"], "tools/call");
    assert_eq!(
        out[0]["params"],
        json!({"name":"echo","arguments":{"message":"hi","n":[1,2]}})
    );
    assert_eq!(out[1]["params"], json!({"name":"noargs","arguments":{}}));
}

#[test]
fn invalid_result_shape_is_a_typed_error() {
    let (mut s, now) = ready();
    let id = s.list_tools(None, now).unwrap();
    line(
        &mut s,
        &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":"no"}}}}"#),
        now,
    );
    let ev = events(&mut s);
    assert!(
        matches!(&ev[..], [Event::Response { result: Err(RequestError::InvalidResult { method, .. }), .. }] if method == "tools/list"),
        "{ev:?}"
    );
}

#[test]
fn close_fails_pending_and_stops_sending() {
    let (mut s, now) = ready();
    let id = s.call_tool("a", json!({}), now).unwrap();
    sent(&mut s);
    s.close(now);
    assert_eq!(
        events(&mut s),
        vec![
            Event::Response {
                id,
                result: Err(RequestError::Closed)
            },
            Event::Closed
        ]
    );
    line(&mut s, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, now);
    assert!(sent(&mut s).is_empty(), "a closed session answers nothing");
    s.close(now);
    assert!(events(&mut s).is_empty());
}

#[test]
fn request_ids_are_unique_and_increasing() {
    let (mut s, now) = ready();
    let ids: Vec<RequestId> = (0..5)
        .map(|_| s.call_tool("t", json!({}), now).unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert!(!ids.contains(&RequestId(0)), "0 was initialize");
}

#[test]
fn restart_renews_the_handshake_and_resends_the_request_that_met_the_expiry() {
    let (mut s, now) = ready();
    let call = s.call_tool("echo", json!({"text": "again"}), now).unwrap();
    let first = sent(&mut s);
    s.restart(Some(call), now).unwrap();
    s.restart(Some(call), now).unwrap(); // a second expiry during the restart starts nothing
    let out = sent(&mut s);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["method"], "initialize");
    let init_id = out[0]["id"].as_u64().unwrap();
    assert!(s.is_pending(call));
    line(
        &mut s,
        &INIT_RESULT.replace("\"id\":0", &format!("\"id\":{init_id}")),
        now,
    );
    let out = sent(&mut s);
    assert_eq!(
        out[0],
        json!({"jsonrpc":"2.0","method":"notifications/initialized"})
    );
    assert_eq!(
        out[1], first[0],
        "the pending call is sent again, unchanged"
    );
    assert!(events(&mut s).is_empty(), "no second Ready");
    line(
        &mut s,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{call},"result":{{"content":[{{"type":"text","text":"again"}}]}}}}"#
        ),
        now,
    );
    assert_eq!(
        events(&mut s),
        vec![Event::Response {
            id: call,
            result: Ok(call_result("again"))
        }]
    );
}

/// Answers the renewal's `initialize` (the only transmit queued) and returns what follows it.
fn finish_renewal(s: &mut Session, now: Instant) -> Vec<Value> {
    let out = sent(s);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["method"], "initialize");
    let init_id = out[0]["id"].as_u64().unwrap();
    line(
        s,
        &INIT_RESULT.replace("\"id\":0", &format!("\"id\":{init_id}")),
        now,
    );
    sent(s)
}

#[test]
fn restart_resends_only_the_requests_that_met_the_expiry() {
    let (mut s, now) = ready();
    let a = s.call_tool("slow", json!({}), now).unwrap();
    let b = s.call_tool("echo", json!({"text": "b"}), now).unwrap();
    let c = s.call_tool("echo", json!({"text": "c"}), now).unwrap();
    sent(&mut s);
    s.restart(Some(b), now).unwrap();
    // Another request meets the 404 while the renewal is under way: it is marked too.
    s.restart(Some(c), now).unwrap();
    let out = finish_renewal(&mut s, now);
    let ids: Vec<_> = out.iter().map(|m| m["id"].as_u64()).collect();
    assert_eq!(
        ids,
        [None, Some(b.0), Some(c.0)],
        "initialized, b, c: {out:?}"
    );
    assert!(s.is_pending(a), "a stays on its own stream");
    line(
        &mut s,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{a},"result":{{"content":[{{"type":"text","text":"a"}}]}}}}"#
        ),
        now,
    );
    assert_eq!(
        events(&mut s),
        vec![Event::Response {
            id: a,
            result: Ok(call_result("a"))
        }]
    );
}

#[test]
fn a_404_to_a_notification_renews_without_resending_anything() {
    let (mut s, now) = ready();
    let a = s.call_tool("slow", json!({}), now).unwrap();
    sent(&mut s);
    s.restart(None, now).unwrap();
    let out = finish_renewal(&mut s, now);
    assert_eq!(out.len(), 1, "only notifications/initialized: {out:?}");
    assert!(s.is_pending(a));
    assert!(s.is_ready());
}

#[test]
fn requests_sent_during_a_renewal_wait_for_the_new_session() {
    let (mut s, now) = ready();
    s.restart(None, now).unwrap();
    assert_eq!(sent(&mut s).len(), 1, "the initialize");
    let d = s.call_tool("echo", json!({"text": "d"}), now).unwrap();
    assert!(
        sent(&mut s).is_empty(),
        "not transmitted in the expired session"
    );
    assert!(s.is_pending(d));
    // A waiting request that times out tells the server nothing: it never saw it.
    let e = s
        .send(
            mcp_proto::Request::call_tool("echo", json!({})).timeout(Duration::from_secs(1)),
            now,
        )
        .unwrap();
    s.handle_timeout(now + Duration::from_secs(1));
    assert!(
        sent(&mut s).is_empty(),
        "no cancellation for an unsent request"
    );
    assert!(matches!(
        events(&mut s).as_slice(),
        [Event::Response { id, result: Err(RequestError::Timeout(_)) }] if *id == e
    ));
    // The renewal's initialize is the next id after the first session's.
    let init_id = 1;
    line(
        &mut s,
        &INIT_RESULT.replace("\"id\":0", &format!("\"id\":{init_id}")),
        now,
    );
    let out = sent(&mut s);
    assert_eq!(out[0]["method"], "notifications/initialized");
    assert_eq!(out[1]["id"], d.0, "{out:?}");
    assert_eq!(out.len(), 2);
}

#[test]
fn a_failed_restart_fails_the_requests_it_kept() {
    let (mut s, now) = ready();
    let call = s.call_tool("echo", json!({}), now).unwrap();
    s.restart(Some(call), now).unwrap();
    sent(&mut s);
    s.handle_eof(now);
    assert_eq!(
        events(&mut s),
        vec![
            Event::Failed(SessionError::Closed),
            Event::Response {
                id: call,
                result: Err(RequestError::Closed)
            }
        ]
    );
}

#[test]
fn restart_before_the_handshake_is_a_usage_error() {
    let now = Instant::now();
    let mut s = Session::new(legacy());
    assert_eq!(s.restart(None, now), Err(UsageError::NotReady));
}

#[test]
fn abort_stops_waiting_without_telling_the_server() {
    let (mut s, now) = ready();
    let id = s.call_tool("echo", json!({}), now).unwrap();
    sent(&mut s);
    assert!(s.abort(id, now));
    assert!(
        sent(&mut s).is_empty(),
        "no notifications/cancelled for a request the server never got"
    );
    assert_eq!(
        events(&mut s),
        vec![Event::Response {
            id,
            result: Err(RequestError::Closed)
        }]
    );
    assert!(!s.abort(id, now));
}

#[test]
fn cancellation_transmits_name_the_request() {
    let (mut s, now) = ready();
    let id = s.call_tool("echo", json!({}), now).unwrap();
    let _ = s.poll_transmit();
    s.cancel(id, "bye", now).unwrap();
    let t = s.poll_transmit().unwrap();
    assert_eq!(t.kind, mcp_proto::TransmitKind::Cancellation { id });
}

#[test]
fn pagination_guard_stops_repeated_cursors_and_page_floods() {
    use mcp_proto::{Pagination, PaginationError};
    let mut p = Pagination::new(3);
    p.admit().unwrap();
    assert_eq!(p.follow(Some("a".into()), 0), Ok(Some("a".into())));
    p.admit().unwrap();
    assert_eq!(
        p.follow(Some("".into()), 0),
        Ok(Some("".into())),
        "an empty cursor is a cursor"
    );
    p.admit().unwrap();
    assert_eq!(
        p.follow(Some("a".into()), 0),
        Err(PaginationError::RepeatedCursor("a".into()))
    );
    assert_eq!(p.admit(), Err(PaginationError::TooManyPages(3)));
    assert_eq!(
        PaginationError::TooManyPages(3).to_string(),
        "more than 3 pages"
    );
    assert_eq!(Pagination::new(5).follow(None, 0), Ok(None));
}

#[test]
fn pagination_guard_caps_the_bytes_kept_across_pages_and_remembers_cursors_by_hash() {
    use mcp_proto::{Pagination, PaginationError};
    let mut p = Pagination::new(1000).max_bytes(100);
    assert_eq!(
        p.follow(Some("x".repeat(10_000)), 60),
        Ok(Some("x".repeat(10_000)))
    );
    // A repeated huge cursor is reported by its start only.
    assert_eq!(
        p.follow(Some("x".repeat(10_000)), 0),
        Err(PaginationError::RepeatedCursor("x".repeat(80)))
    );
    assert_eq!(p.follow(Some("next".into()), 40), Ok(Some("next".into())));
    assert_eq!(
        p.follow(None, 1),
        Err(PaginationError::TooLarge(100)),
        "101 bytes in all is past the cap, even on the last page"
    );
    let mut q = Pagination::new(10).max_bytes(usize::MAX);
    assert_eq!(q.follow(None, usize::MAX), Ok(None), "no overflow");
}

#[test]
fn a_typed_request_decodes_as_its_declared_result_on_both_paths() {
    use mcp_proto::{ListTools, Method, Request};
    let (mut s, now) = ready();
    let a = s.send(Request::of::<ListTools>(None), now).unwrap();
    let b = s.send(Request::of::<ListTools>(None), now).unwrap();
    assert_eq!(sent(&mut s)[0]["method"], ListTools::NAME);
    // `a` is answered with its id last (the fast path reads it from the end); `b` with a
    // notification batched in front, which takes the general path.
    line(
        &mut s,
        &format!(
            r#"{{"jsonrpc":"2.0","result":{{"tools":[{{"name":"x","inputSchema":{{}}}}]}},"id":{}}}"#,
            a.0
        ),
        now,
    );
    line(
        &mut s,
        &format!(
            r#"[{{"jsonrpc":"2.0","method":"notifications/message"}},{{"jsonrpc":"2.0","id":{},"result":{{"tools":[{{"name":"x","inputSchema":{{}}}}]}}}}]"#,
            b.0
        ),
        now,
    );
    let replies: Vec<Reply> = events(&mut s)
        .into_iter()
        .filter_map(|e| match e {
            Event::Response { result, .. } => Some(result.unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(replies.len(), 2);
    assert_eq!(replies[0], replies[1], "both paths decode alike");
    let page = ListTools::from_reply(replies[0].clone()).expect("a tools/list reply");
    assert_eq!(page.tools[0].name, "x");
    assert!(ListTools::from_reply(Reply::Raw(json!({}))).is_err());
}

#[test]
fn an_undeliverable_request_fails_alone_and_an_undeliverable_handshake_ends_the_session() {
    use mcp_proto::Casualties;
    let (mut s, now) = ready();
    let a = s.call_tool("t", json!({}), now).unwrap();
    let b = s.call_tool("t", json!({}), now).unwrap();
    sent(&mut s);
    assert_eq!(
        s.handle_undeliverable(a, now),
        Casualties {
            request: Some(a),
            session: false
        }
    );
    assert!(events(&mut s).is_empty(), "the driver reports a itself");
    assert!(
        sent(&mut s).is_empty(),
        "the server never saw a: nothing to cancel"
    );
    assert!(s.is_pending(b) && s.is_ready());
    assert_eq!(
        s.handle_undeliverable(a, now),
        Casualties::default(),
        "once"
    );

    let now = Instant::now();
    let mut s = Session::new(legacy());
    let init = s.initialize(now).unwrap();
    assert_eq!(
        s.handle_undeliverable(init, now),
        Casualties {
            request: Some(init),
            session: true
        }
    );
    assert_eq!(s.state(), State::Closed);
    assert!(matches!(&events(&mut s)[..], [Event::Failed(_)]));
}

#[test]
fn an_expired_session_renews_or_says_whom_it_hits() {
    use mcp_proto::Casualties;
    let (mut s, now) = ready();
    let a = s.call_tool("t", json!({}), now).unwrap();
    sent(&mut s);
    assert_eq!(
        s.handle_expired(Some(a), now),
        Casualties::default(),
        "renewing"
    );
    assert_eq!(sent(&mut s)[0]["method"], "initialize");
    // Before any handshake it cannot renew: with no request hit, the session closes.
    let mut fresh = Session::new(legacy());
    assert_eq!(
        fresh.handle_expired(None, now),
        Casualties {
            request: None,
            session: true
        }
    );
    assert_eq!(fresh.state(), State::Closed);
}

#[test]
fn the_next_timer_says_whose_deadline_it_is() {
    use mcp_proto::{Request, TimerFor};
    let (mut s, now) = ready();
    let slow = s
        .send(
            Request::call_tool("a", json!({})).timeout(Duration::from_secs(9)),
            now,
        )
        .unwrap();
    let quick = s
        .send(
            Request::call_tool("b", json!({})).timeout(Duration::from_secs(2)),
            now,
        )
        .unwrap();
    let never = s
        .send(Request::call_tool("c", json!({})).no_timeout(), now)
        .unwrap();
    sent(&mut s);
    assert_eq!(
        s.poll_timer(),
        Some((now + Duration::from_secs(2), TimerFor::Request(quick)))
    );
    assert_eq!(s.deadline(never), None);
    s.handle_timeout(now + Duration::from_secs(2));
    assert!(!s.is_pending(quick));
    // The cancellation names the request by the id it went out with.
    assert_eq!(sent(&mut s)[0]["params"]["requestId"], quick.0);
    assert_eq!(
        s.poll_timer(),
        Some((now + Duration::from_secs(9), TimerFor::Request(slow)))
    );
    // An answer to `slow` arrives; no timer is left (`never` has none).
    line(
        &mut s,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[]}}}}"#,
            slow.0
        ),
        now,
    );
    assert_eq!(s.poll_timer(), None);
    assert!(s.is_pending(never));
}

/// While its transport authorizes (a person logging in), a request's deadline is suspended; it
/// restarts whole when the authorization ends, and then fires as any other.
#[test]
fn a_deadline_waits_while_the_transport_authorizes_and_restarts_whole_after() {
    use mcp_proto::{Request, TimerFor};
    let (mut s, now) = ready();
    let secs = Duration::from_secs;
    let call = s
        .send(Request::call_tool("a", json!({})).timeout(secs(1)), now)
        .unwrap();
    let other = s
        .send(Request::call_tool("b", json!({})).timeout(secs(30)), now)
        .unwrap();
    sent(&mut s);
    s.handle_authorizing(call, now + Duration::from_millis(100));
    assert_eq!(s.deadline(call), None);
    assert_eq!(s.wake_at(call), None);
    assert_eq!(
        s.poll_timer(),
        Some((now + secs(30), TimerFor::Request(other))),
        "the other request's deadline still runs"
    );
    // Far past its timeout, while the person takes their time: nothing fires for it.
    s.handle_timeout(now + secs(20));
    assert!(events(&mut s).is_empty());
    assert!(sent(&mut s).is_empty(), "no cancellation");
    assert!(s.is_pending(call));
    // Saying so twice changes nothing.
    s.handle_authorizing(call, now + secs(20));
    s.handle_authorized(call, now + secs(25));
    assert_eq!(s.deadline(call), Some(now + secs(26)));
    assert_eq!(
        s.poll_timer(),
        Some((now + secs(26), TimerFor::Request(call)))
    );
    // An end of authorization for a request that was not waiting does nothing.
    s.handle_authorized(other, now + secs(25));
    assert_eq!(s.deadline(other), Some(now + secs(30)));
    s.handle_timeout(now + secs(26) - Duration::from_millis(1));
    assert!(events(&mut s).is_empty(), "not a millisecond early");
    s.handle_timeout(now + secs(26));
    assert_eq!(
        events(&mut s),
        vec![Event::Response {
            id: call,
            result: Err(RequestError::Timeout(secs(1)))
        }]
    );
    // Unknown and finished requests are ignored.
    s.handle_authorizing(RequestId(999), now + secs(27));
    s.handle_authorizing(call, now + secs(27));
    s.handle_authorized(call, now + secs(27));
    assert!(!s.is_pending(call));
}

/// `initialize` usually meets the server's `401`: the handshake's deadline waits for the
/// authorization too (a 60 s timeout and a 5 minute login), and a late answer still opens.
#[test]
fn the_handshake_waits_while_the_transport_authorizes() {
    let now = Instant::now();
    let mut s = Session::new(Config {
        default_timeout: Some(Duration::from_secs(60)),
        ..legacy()
    });
    let init = s.initialize(now).unwrap();
    sent(&mut s);
    s.handle_authorizing(init, now);
    assert_eq!(s.poll_timeout(), None);
    s.handle_timeout(now + Duration::from_secs(299));
    assert!(events(&mut s).is_empty());
    assert_eq!(s.state(), State::Initializing);
    s.handle_authorized(init, now + Duration::from_secs(300));
    assert_eq!(s.poll_timeout(), Some(now + Duration::from_secs(360)));
    line(&mut s, INIT_RESULT, now + Duration::from_secs(301));
    assert_eq!(events(&mut s), vec![Event::Ready]);
    // The other way: the handshake's deadline, restarted, fires.
    let mut s = Session::new(Config {
        default_timeout: Some(Duration::from_secs(60)),
        ..legacy()
    });
    let init = s.initialize(now).unwrap();
    s.handle_authorizing(init, now);
    s.handle_authorized(init, now + Duration::from_secs(300));
    s.handle_timeout(now + Duration::from_secs(359));
    assert!(events(&mut s).is_empty());
    s.handle_timeout(now + Duration::from_secs(360));
    assert_eq!(
        events(&mut s),
        vec![Event::Failed(SessionError::Initialize(
            RequestError::Timeout(Duration::from_secs(60))
        ))]
    );
}

/// The era probe that meets the `401` has not waited for the server while a person logs in: its
/// fallback to `initialize` is suspended too, and comes a whole probe timeout after.
#[test]
fn the_probe_fallback_waits_while_the_transport_authorizes() {
    let now = Instant::now();
    let mut s = Session::new(Config {
        probe_timeout: Duration::from_secs(2),
        ..Config::default()
    });
    let probe = s.initialize(now).unwrap();
    assert_eq!(sent(&mut s)[0]["method"], "server/discover");
    s.handle_authorizing(probe, now + Duration::from_millis(10));
    assert_eq!(s.poll_timeout(), None);
    s.handle_timeout(now + Duration::from_secs(100));
    assert!(sent(&mut s).is_empty(), "no initialize while authorizing");
    assert!(events(&mut s).is_empty());
    s.handle_authorized(probe, now + Duration::from_secs(100));
    assert_eq!(s.poll_timeout(), Some(now + Duration::from_secs(102)));
    s.handle_timeout(now + Duration::from_secs(101));
    assert!(sent(&mut s).is_empty());
    s.handle_timeout(now + Duration::from_secs(102));
    let out = sent(&mut s);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["method"], "initialize");
}
