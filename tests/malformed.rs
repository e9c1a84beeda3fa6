//! What servers send wrong, in the pure session: text that is not valid JSON text (invalid UTF-8,
//! lone surrogate escapes), read with U+FFFD in place of the bad part. Fake time, no I/O; what
//! the model would read is asserted through `CallToolResult::text()`.

use mcp_proto::error::Warning;
use mcp_proto::http::{HttpConfig, HttpRules};
use mcp_proto::sse::{SseDecoder, SseItem};
use mcp_proto::text::Damage;
use mcp_proto::{Config, EraChoice, Event, Reply, RequestError, RequestId, Session};
use serde_json::Value;
use std::time::{Duration, Instant};

const INIT_RESULT: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"srv","version":"1"}}}"#;

fn sent(s: &mut Session) -> Vec<Value> {
    std::iter::from_fn(|| s.poll_transmit())
        .map(|t| serde_json::from_slice(&t.payload).expect("we send JSON"))
        .collect()
}

fn events(s: &mut Session) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn config(era: EraChoice) -> Config {
    Config {
        era,
        ..Config::default()
    }
}

/// A legacy session past its handshake, outputs drained.
fn ready_with(config: Config) -> (Session, Instant) {
    let now = Instant::now();
    let mut s = Session::new(config);
    s.initialize(now).unwrap();
    s.handle_bytes(format!("{INIT_RESULT}\n").as_bytes(), now);
    sent(&mut s);
    assert_eq!(events(&mut s), vec![Event::Ready]);
    (s, now)
}

fn ready() -> (Session, Instant) {
    ready_with(config(EraChoice::Legacy))
}

/// A `tools/call` answer to wire id `id` whose one text block is `text`, as raw bytes.
fn call_answer(id: u64, text: &[u8]) -> Vec<u8> {
    let mut m =
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#)
            .into_bytes();
    m.extend_from_slice(text);
    m.extend_from_slice(br#""}]}}"#);
    m
}

/// What the model reads from the one `tools/call` outcome among `events`.
fn model_reads(events: &[Event], id: RequestId) -> String {
    let outcome = events.iter().find_map(|e| match e {
        Event::Response { id: i, result } if *i == id => Some(result.clone()),
        _ => None,
    });
    match outcome {
        Some(Ok(Reply::ToolCall(r))) => r.text(),
        other => panic!("no tool result for {id}: {other:?} in {events:?}"),
    }
}

fn repaired(events: &[Event]) -> Vec<Damage> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Warning(Warning::Repaired { what, .. }) => Some(*what),
            _ => None,
        })
        .collect()
}

const UTF8: Damage = Damage {
    invalid_utf8: 1,
    lone_surrogates: 0,
};

fn surrogates(n: usize) -> Damage {
    Damage {
        invalid_utf8: 0,
        lone_surrogates: n,
    }
}

// ---- invalid UTF-8 -----------------------------------------------------------------------------

#[test]
fn latin1_bytes_in_a_stdio_line_reach_the_model_as_replacement_characters() {
    let (mut s, now) = ready();
    let id = s.call_tool("read_file", Value::Null, now).unwrap();
    sent(&mut s);
    // "café" in Latin-1: é is the single byte 0xE9.
    let mut line = call_answer(id.0, b"caf\xe9 cr\xe8me");
    line.push(b'\n');
    s.handle_bytes(&line, now);
    let ev = events(&mut s);
    assert_eq!(model_reads(&ev, id), "caf\u{FFFD} cr\u{FFFD}me");
    assert_eq!(
        ev[0],
        Event::Warning(Warning::Repaired {
            what: Damage {
                invalid_utf8: 2,
                lone_surrogates: 0
            },
            len: line.len() - 1
        }),
        "the application is told first: {ev:?}"
    );
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert_eq!(s.stats().repaired, 1);
    assert_eq!(s.stats().messages_ignored, 0, "nothing was dropped");
    assert!(
        s.poll_timeout().is_none(),
        "nothing is left waiting for its timeout"
    );

    // The same bytes, one at a time: the same events.
    let (mut s, now) = ready();
    let id = s.call_tool("read_file", Value::Null, now).unwrap();
    for b in &line {
        s.handle_bytes(std::slice::from_ref(b), now);
    }
    assert_eq!(events(&mut s), ev);
    assert_eq!(model_reads(&ev, id), "caf\u{FFFD} cr\u{FFFD}me");
}

#[test]
fn one_replacement_per_maximal_invalid_subpart() {
    let (mut s, now) = ready();
    let id = s.call_tool("t", Value::Null, now).unwrap();
    // A truncated 3-byte sequence, a lone continuation byte, an overlong encoding, a surrogate
    // encoded in UTF-8 (CESU), a truncated 4-byte sequence: as `String::from_utf8_lossy` reads
    // them.
    let bad: &[u8] = b"a\xe2\x82b \x80 \xc0\xaf \xed\xa0\x80 \xf0\x9f\x98";
    s.handle_message(&call_answer(id.0, bad), now);
    let ev = events(&mut s);
    assert_eq!(model_reads(&ev, id), String::from_utf8_lossy(bad));
    assert_eq!(
        model_reads(&ev, id),
        "a\u{FFFD}b \u{FFFD} \u{FFFD}\u{FFFD} \u{FFFD}\u{FFFD}\u{FFFD} \u{FFFD}"
    );
    assert_eq!(repaired(&ev)[0].invalid_utf8, 8);
}

#[test]
fn an_http_json_body_with_bad_bytes_is_read() {
    let (mut s, now) = ready_with(Config {
        transport: mcp_proto::TransportKind::Http,
        ..config(EraChoice::Legacy)
    });
    let id = s.call_tool("t", Value::Null, now).unwrap();
    sent(&mut s);
    // One whole body, as the HTTP driver hands it over (with the BOM some servers put first).
    let mut body = b"\xEF\xBB\xBF".to_vec();
    body.extend(call_answer(id.0, b"\xff\xfe latin-1 \xe9"));
    s.handle_message(&body, now);
    let ev = events(&mut s);
    assert_eq!(model_reads(&ev, id), "\u{FFFD}\u{FFFD} latin-1 \u{FFFD}");
    assert_eq!(s.stats().repaired, 1);
}

#[test]
fn an_sse_event_with_bad_bytes_still_delivers_its_message() {
    // > "Streams must be decoded using the UTF-8 decode algorithm" (which replaces what is not
    // > UTF-8 with U+FFFD) — WHATWG HTML, Server-sent events § Parsing an event stream. So the
    // > decoder already hands on valid text; the session reads it as any other.
    let (mut s, now) = ready();
    let id = s.call_tool("t", Value::Null, now).unwrap();
    let mut stream = b"event: message\ndata: ".to_vec();
    stream.extend(call_answer(id.0, b"caf\xe9"));
    stream.extend_from_slice(b"\n\n");
    let mut d = SseDecoder::new();
    d.feed(&stream);
    let Some(SseItem::Event(event)) = d.poll_event() else {
        panic!("no event")
    };
    let message = HttpRules::event_message(&event).expect("the event carries a message");
    s.handle_message(message, now);
    let ev = events(&mut s);
    assert_eq!(model_reads(&ev, id), "caf\u{FFFD}");
    assert_eq!(
        s.stats().repaired,
        0,
        "the decoder did it, by the event-stream format's own rule"
    );
    // A lone surrogate escape in an event is the session's to mend.
    let id = s.call_tool("t", Value::Null, now).unwrap();
    let mut stream = b"data: ".to_vec();
    stream.extend(call_answer(id.0, br"\ud800!"));
    stream.extend_from_slice(b"\n\n");
    d.feed(&stream);
    let Some(SseItem::Event(event)) = d.poll_event() else {
        panic!("no event")
    };
    s.handle_message(HttpRules::event_message(&event).unwrap(), now);
    let ev = events(&mut s);
    assert_eq!(model_reads(&ev, id), "\u{FFFD}!");
    assert_eq!(repaired(&ev), [surrogates(1)]);
}

#[test]
fn the_http_rules_see_the_answer_in_a_body_with_bad_text() {
    let mut rules = HttpRules::new(HttpConfig::new("http://127.0.0.1:1/mcp"));
    let call = mcp_proto::TransmitKind::Request {
        id: RequestId(3),
        wire: RequestId(3),
        method: "tools/call".into(),
    };
    let transmit = mcp_proto::Transmit {
        payload: b"{}".to_vec(),
        kind: call,
        headers: Vec::new(),
        modern: false,
    };
    for body in [call_answer(3, b"caf\xe9"), call_answer(3, br"\ud800")] {
        assert!(json_exchange(&mut rules, &transmit, 200, &body)
            .1
            .answered());
    }
}

// ---- lone surrogate escapes --------------------------------------------------------------------

#[test]
fn lone_surrogate_escapes_reach_the_model_as_replacement_characters() {
    for (escaped, reads, n) in [
        (&br"\ud800"[..], "\u{FFFD}", 1),
        (br"\udfff", "\u{FFFD}", 1),
        (br"\uDBFF\uDBFF", "\u{FFFD}\u{FFFD}", 2),
        // A high surrogate followed by a character, an ordinary escape, the string's end.
        (br"x\ud83dy", "x\u{FFFD}y", 1),
        (br"\ud83d\n", "\u{FFFD}\n", 1),
        (br"end\ud83d", "end\u{FFFD}", 1),
        // A string cut inside an emoji, then a whole one: the pair stays.
        (br"\ud83d\ud83d\ude00", "\u{FFFD}\u{1F600}", 1),
    ] {
        let (mut s, now) = ready();
        let id = s.call_tool("t", Value::Null, now).unwrap();
        let mut line = call_answer(id.0, escaped);
        line.push(b'\n');
        s.handle_bytes(&line, now);
        let ev = events(&mut s);
        assert_eq!(
            model_reads(&ev, id),
            reads,
            "{}",
            String::from_utf8_lossy(escaped)
        );
        assert_eq!(repaired(&ev), [surrogates(n)]);
        assert_eq!(s.stats().repaired, 1);
    }
}

#[test]
fn pairs_and_escaped_backslashes_are_not_repairs() {
    let (mut s, now) = ready();
    let id = s.call_tool("t", Value::Null, now).unwrap();
    // `\\ud800` is a backslash and the letters "ud800"; the pair is one emoji.
    s.handle_message(&call_answer(id.0, br"\\ud800 \ud83d\ude00 \u00e9"), now);
    let ev = events(&mut s);
    assert_eq!(model_reads(&ev, id), "\\ud800 \u{1F600} \u{e9}");
    assert_eq!(ev.len(), 1, "no warning: {ev:?}");
    assert_eq!(s.stats().repaired, 0);
}

#[test]
fn bad_text_elsewhere_in_a_message_is_mended_too() {
    let (mut s, now) = ready();
    // In an error's message: the call fails at once with the server's code.
    let id = s.call_tool("t", Value::Null, now).unwrap();
    sent(&mut s);
    let mut error = format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32000,"message":"bad \ud800 and "#,
        id.0
    )
    .into_bytes();
    error.extend_from_slice(b"\xff\"}}");
    s.handle_message(&error, now);
    let ev = events(&mut s);
    let outcome = ev.iter().find_map(|e| match e {
        Event::Response { result: Err(e), .. } => Some(e.clone()),
        _ => None,
    });
    let Some(RequestError::Rpc(e)) = outcome else {
        panic!("{ev:?}")
    };
    assert_eq!(
        (e.code, e.message.as_str()),
        (-32000, "bad \u{FFFD} and \u{FFFD}")
    );
    // In a server request's params: the ping is still answered.
    s.handle_message(
        b"{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\",\"params\":{\"x\":\"\xe9\"}}",
        now,
    );
    assert_eq!(
        sent(&mut s),
        [serde_json::json!({"jsonrpc":"2.0","id":"p","result":{}})]
    );
    assert_eq!(repaired(&events(&mut s)), [UTF8]);
    // In a batch item.
    let id = s.call_tool("t", Value::Null, now).unwrap();
    let mut batch = b"[".to_vec();
    batch.extend(call_answer(id.0, br"\udc00"));
    batch.extend_from_slice(br#",{"jsonrpc":"2.0","method":"notifications/message"}]"#);
    s.handle_message(&batch, now);
    let ev = events(&mut s);
    assert_eq!(model_reads(&ev, id), "\u{FFFD}");
    assert_eq!(repaired(&ev), [surrogates(1)]);
    assert_eq!(s.stats().repaired, 3);
}

#[test]
fn junk_that_no_repair_saves_is_still_skipped_as_not_json() {
    let (mut s, now) = ready();
    s.handle_bytes(b"\xff\xfe banner \xe9\n", now);
    let ev = events(&mut s);
    assert!(
        matches!(&ev[..], [Event::Warning(Warning::NotJson { excerpt, .. })] if excerpt == "\u{FFFD}\u{FFFD} banner \u{FFFD}"),
        "{ev:?}"
    );
    assert_eq!(s.stats().repaired, 0);
    assert_eq!(s.stats().messages_ignored, 1);
}

#[test]
fn a_modern_result_with_a_lone_surrogate_is_read() {
    const DISCOVER: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}}"#;
    let now = Instant::now();
    let mut s = Session::new(config(EraChoice::Auto));
    s.initialize(now).unwrap();
    s.handle_message(DISCOVER.as_bytes(), now);
    assert_eq!(events(&mut s), [Event::Ready]);
    let id = s.call_tool("t", Value::Null, now).unwrap();
    s.handle_message(
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"resultType":"complete","content":[{{"type":"text","text":"\ud83d"}}]}}}}"#,
            id.0
        )
        .as_bytes(),
        now,
    );
    let ev = events(&mut s);
    assert_eq!(model_reads(&ev, id), "\u{FFFD}");
    assert_eq!(repaired(&ev), [surrogates(1)]);
}

#[test]
fn an_oversized_line_with_bad_text_still_fails_its_request_at_once() {
    let (mut s, now) = ready_with(Config {
        frame_limit: 256,
        ..config(EraChoice::Legacy)
    });
    let id = s.call_tool("t", Value::Null, now).unwrap();
    let _other = s.call_tool("t", Value::Null, now).unwrap();
    // The id at the start is read from the line's first bytes, whatever comes after it.
    let mut line = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"t":""#, id.0).into_bytes();
    line.extend(b"\xe9\\ud800".repeat(200));
    line.extend_from_slice(b"\"}}\n");
    s.handle_bytes(&line, now);
    let ev = events(&mut s);
    assert!(
        ev.iter().any(|e| matches!(e, Event::Response { id: i, result: Err(RequestError::TooLarge { .. }) } if *i == id)),
        "{ev:?}"
    );
    // And at the end.
    let id = s.call_tool("t", Value::Null, now).unwrap();
    let mut line = br#"{"result":{"t":""#.to_vec();
    line.extend(b"\xe9\\ud800".repeat(200));
    line.extend(format!(r#""}},"jsonrpc":"2.0","id":{}}}"#, id.0).into_bytes());
    line.push(b'\n');
    s.handle_bytes(&line, now);
    let ev = events(&mut s);
    assert!(
        ev.iter().any(|e| matches!(e, Event::Response { id: i, result: Err(RequestError::TooLarge { .. }) } if *i == id)),
        "{ev:?}"
    );
    assert!(s
        .poll_timeout()
        .is_some_and(|t| t > now + Duration::from_secs(1)));
}

// ---- JSON-RPC errors without an id ---------------------------------------------------------------

const PARSE_ERROR: &str =
    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#;

fn rpc_failure(events: &[Event], id: RequestId) -> Option<mcp_proto::RpcError> {
    events.iter().find_map(|e| match e {
        Event::Response {
            id: i,
            result: Err(RequestError::Rpc(e)),
        } if *i == id => Some(e.clone()),
        _ => None,
    })
}

#[test]
fn a_null_id_error_fails_the_one_pending_request_at_once_with_the_servers_code() {
    for error in [
        PARSE_ERROR,
        // MCP's schema lets the id be absent instead (`id?: string | number`).
        r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"}}"#,
    ] {
        let (mut s, now) = ready();
        let id = s.call_tool("t", Value::Null, now).unwrap();
        sent(&mut s);
        s.handle_bytes(format!("{error}\n").as_bytes(), now);
        let ev = events(&mut s);
        let e = rpc_failure(&ev, id).unwrap_or_else(|| panic!("{ev:?}"));
        assert!(
            (e.code, e.message.as_str()) == (-32700, "Parse error")
                || (e.code, e.message.as_str()) == (-32600, "Invalid Request"),
            "{e:?}"
        );
        assert_eq!(ev.len(), 1, "no warning: {ev:?}");
        assert_eq!(s.stats().messages_ignored, 0);
        assert!(!s.is_pending(id));
        assert!(s.poll_timeout().is_none(), "nothing waits for a timeout");
        // The session goes on.
        let next = s.call_tool("t", Value::Null, now).unwrap();
        s.handle_message(&call_answer(next.0, b"fine"), now);
        assert_eq!(model_reads(&events(&mut s), next), "fine");
    }
}

#[test]
fn with_several_pending_a_null_id_error_is_reported_and_they_keep_waiting() {
    let (mut s, now) = ready();
    let a = s.call_tool("t", Value::Null, now).unwrap();
    let b = s.list_tools(None, now).unwrap();
    s.handle_bytes(format!("{PARSE_ERROR}\n").as_bytes(), now);
    let ev = events(&mut s);
    assert!(
        matches!(&ev[..], [Event::Warning(Warning::ErrorWithoutId(e))] if e.code == -32700),
        "{ev:?}"
    );
    assert_eq!(s.stats().messages_ignored, 1, "counted");
    assert!(s.is_pending(a) && s.is_pending(b));
    // With none pending it is reported too.
    s.handle_message(&call_answer(a.0, b"a"), now);
    s.handle_message(
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"tools":[]}}}}"#,
            b.0
        )
        .as_bytes(),
        now,
    );
    assert_eq!(events(&mut s).len(), 2);
    s.handle_message(PARSE_ERROR.as_bytes(), now);
    assert!(matches!(
        &events(&mut s)[..],
        [Event::Warning(Warning::ErrorWithoutId(_))]
    ));
    assert_eq!(s.stats().messages_ignored, 2);
}

#[test]
fn only_a_request_out_at_the_server_counts() {
    // A modern call between two input-required rounds has no copy out at the server: the one
    // request that has is the one the server could not read.
    const DISCOVER: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}}"#;
    let now = Instant::now();
    let mut s = Session::new(config(EraChoice::Modern));
    s.initialize(now).unwrap();
    s.handle_message(DISCOVER.as_bytes(), now);
    assert_eq!(events(&mut s), [Event::Ready]);
    let waiting = s.call_tool("slow", Value::Null, now).unwrap();
    let out = s.call_tool("t", Value::Null, now).unwrap();
    s.handle_message(
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"resultType":"input_required","requestState":"s1"}}}}"#,
            waiting.0
        )
        .as_bytes(),
        now,
    );
    assert!(
        events(&mut s).is_empty(),
        "the next round waits its backoff"
    );
    s.handle_message(
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Invalid params"}}"#,
        now,
    );
    let ev = events(&mut s);
    assert_eq!(
        rpc_failure(&ev, out).map(|e| e.code),
        Some(-32602),
        "{ev:?}"
    );
    assert!(s.is_pending(waiting), "the request between rounds waits on");
}

#[test]
fn a_null_id_error_to_the_handshake_ends_it_with_the_servers_code() {
    let now = Instant::now();
    let mut s = Session::new(config(EraChoice::Legacy));
    s.initialize(now).unwrap();
    s.handle_bytes(format!("{PARSE_ERROR}\n").as_bytes(), now);
    let ev = events(&mut s);
    assert!(
        matches!(&ev[..], [Event::Failed(mcp_proto::SessionError::Initialize(RequestError::Rpc(e)))] if e.code == -32700),
        "{ev:?}"
    );
}

#[test]
fn a_null_id_error_to_the_era_probe_means_the_legacy_era() {
    let now = Instant::now();
    let mut s = Session::new(config(EraChoice::Auto));
    s.initialize(now).unwrap();
    assert_eq!(sent(&mut s)[0]["method"], "server/discover");
    s.handle_bytes(
        b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid Request\"}}\n",
        now,
    );
    let out = sent(&mut s);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(
        out[0]["method"], "initialize",
        "the legacy handshake follows"
    );
    assert!(events(&mut s).is_empty());
    s.handle_bytes(
        format!("{}\n", INIT_RESULT.replace("\"id\":0", "\"id\":1")).as_bytes(),
        now,
    );
    assert_eq!(events(&mut s), [Event::Ready]);
    assert_eq!(s.era(), Some(mcp_proto::Era::Legacy));

    // Racing: after the probe's fallback both are out, and the error cannot be told apart.
    let mut s = Session::new(config(EraChoice::Auto));
    s.initialize(now).unwrap();
    let later = now + mcp_proto::session::DEFAULT_PROBE_TIMEOUT;
    s.handle_timeout(later);
    assert_eq!(sent(&mut s).len(), 2, "discover, then initialize");
    s.handle_bytes(format!("{PARSE_ERROR}\n").as_bytes(), later);
    assert!(matches!(
        &events(&mut s)[..],
        [Event::Warning(Warning::ErrorWithoutId(_))]
    ));
    assert_eq!(s.state(), mcp_proto::State::Initializing, "still waiting");
}

#[test]
fn over_http_the_exchange_tells_which_request_a_null_id_error_answers() {
    let (mut s, now) = ready_with(Config {
        transport: mcp_proto::TransportKind::Http,
        ..config(EraChoice::Legacy)
    });
    let a = s.call_tool("t", Value::Null, now).unwrap();
    let b = s.call_tool("t", Value::Null, now).unwrap();
    s.handle_message_for(b, PARSE_ERROR.as_bytes(), now);
    let ev = events(&mut s);
    assert_eq!(rpc_failure(&ev, b).map(|e| e.code), Some(-32700), "{ev:?}");
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert!(s.is_pending(a), "the other request waits on");
    // Anything else on an exchange is read as usual.
    s.handle_message_for(b, &call_answer(a.0, b"by its own id"), now);
    assert_eq!(model_reads(&events(&mut s), a), "by its own id");
    // An error for a request that has ended is late, not anyone else's.
    let c = s.call_tool("t", Value::Null, now).unwrap();
    s.handle_message_for(b, PARSE_ERROR.as_bytes(), now);
    assert!(events(&mut s).is_empty());
    assert_eq!(s.stats().late_responses, 1);
    assert!(s.is_pending(c));
    // A message over the limit on an exchange fails that exchange's request.
    let (mut s, now) = ready_with(Config {
        frame_limit: 256,
        ..config(EraChoice::Legacy)
    });
    let a = s.call_tool("t", Value::Null, now).unwrap();
    let b = s.call_tool("t", Value::Null, now).unwrap();
    s.handle_message_for(a, &call_answer(a.0, &[b'x'; 300]), now);
    let ev = events(&mut s);
    assert!(
        ev.iter().any(|e| matches!(e, Event::Response { id, result: Err(RequestError::TooLarge { .. }) } if *id == a)),
        "{ev:?}"
    );
    assert!(s.is_pending(b));
}

#[test]
fn over_http_a_message_that_opens_as_a_requests_result_but_is_none_fails_it_at_once() {
    // The transport takes such a message for the answer and reads no further (see
    // `jsonrpc::result_id`): the session fails the request rather than leave it to its deadline.
    let (mut s, now) = ready_with(Config {
        transport: mcp_proto::TransportKind::Http,
        ..config(EraChoice::Legacy)
    });
    let cut = |id: u64| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":["#);
    let unbalanced = |id: u64| format!(r#"{{"result":{{"content":[}},"jsonrpc":"2.0","id":{id}}}"#);
    let sorted = |id: u64| format!(r#"{{"id":{id},"jsonrpc":"2.0","result":{{"content":[1,]}}}}"#);
    for junk in [cut, unbalanced, sorted] {
        let a = s.call_tool("t", Value::Null, now).unwrap();
        let b = s.call_tool("t", Value::Null, now).unwrap();
        // On another request's exchange it fails nobody: it is only junk there.
        s.handle_message_for(b, junk(a.0).as_bytes(), now);
        assert!(s.is_pending(a) && s.is_pending(b));
        s.handle_message_for(a, junk(a.0).as_bytes(), now);
        let ev = events(&mut s);
        assert!(
            ev.iter().any(|e| matches!(e, Event::Response { id, result: Err(RequestError::InvalidResult { method, .. }) } if *id == a && method == "tools/call")),
            "{ev:?}"
        );
        assert!(s.is_pending(b), "the other request waits on");
        // Its answer, in either common form, is read as usual.
        let tail = format!(
            r#"{{"result":{{"content":[{{"type":"text","text":"tail"}}]}},"jsonrpc":"2.0","id":{}}}"#,
            b.0
        );
        s.handle_message_for(b, tail.as_bytes(), now);
        assert_eq!(model_reads(&events(&mut s), b), "tail");
    }
    // Over stdio nothing is taken for an answer unread: a line of junk is only that.
    let (mut s, now) = ready_with(config(EraChoice::Legacy));
    let a = s.call_tool("t", Value::Null, now).unwrap();
    s.handle_bytes(format!("{}\n", cut(a.0)).as_bytes(), now);
    assert!(s.is_pending(a));
}

#[test]
fn a_legacy_servers_null_id_refusal_of_the_http_probe_still_means_legacy() {
    // What the TypeScript SDK's stateful server answers a POST without a session id.
    const REFUSAL: &[u8] = br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#;
    for era in [EraChoice::Auto, EraChoice::Modern] {
        let now = Instant::now();
        let mut s = Session::new(Config {
            transport: mcp_proto::TransportKind::Http,
            ..config(era)
        });
        let mut rules = HttpRules::new(HttpConfig::new("http://127.0.0.1:1/mcp"));
        s.initialize(now).unwrap();
        let probe = s.poll_transmit().unwrap();
        let (delivered, exchange) = json_exchange(&mut rules, &probe, 400, REFUSAL);
        assert!(delivered, "the probe's answer");
        assert!(exchange.answered());
        s.handle_message_for(exchange.wire().unwrap(), REFUSAL, now);
        match era {
            EraChoice::Auto => {
                let next = s.poll_transmit().expect("initialize follows");
                assert!(
                    matches!(&next.kind, mcp_proto::TransmitKind::Request { method, .. } if method == "initialize")
                );
                assert!(events(&mut s).is_empty());
            }
            _ => {
                // The modern era only: the opening fails, saying what the server said.
                let ev = events(&mut s);
                assert!(
                    matches!(&ev[..], [Event::Failed(mcp_proto::SessionError::Discover(RequestError::Rpc(e)))] if e.code == -32000 && e.message.contains("No valid session ID")),
                    "{ev:?}"
                );
            }
        }
    }
}

#[test]
fn the_http_rules_take_an_error_without_an_id_for_the_exchanges_answer() {
    let mut rules = HttpRules::new(HttpConfig::new("http://127.0.0.1:1/mcp"));
    let call = mcp_proto::TransmitKind::Request {
        id: RequestId(5),
        wire: RequestId(7),
        method: "tools/call".into(),
    };
    let error = |id: &str| {
        format!(r#"{{"jsonrpc":"2.0",{id}"error":{{"code":-32700,"message":"Parse error"}}}}"#)
    };
    for (body, answers) in [
        (error(r#""id":null,"#), true),
        (error(""), true),
        (error(r#""id":7,"#), true),
        (error(r#""id":5,"#), false),
        (error(r#""id":"x","#), false),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"x","error":{"code":1,"message":"m"}}"#.into(),
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"error":"not an object"}"#.into(),
            false,
        ),
        (r#"{"jsonrpc":"2.0","id":null,"result":{}}"#.into(), false),
        ("<html>400</html>".into(), false),
    ] {
        let transmit = mcp_proto::Transmit {
            payload: b"{}".to_vec(),
            kind: call.clone(),
            headers: Vec::new(),
            modern: false,
        };
        assert_eq!(
            json_exchange(&mut rules, &transmit, 400, body.as_bytes()).0,
            answers,
            "{body}"
        );
        if body.contains("\"error\":{") && !body.contains("method") {
            assert_eq!(
                json_exchange(&mut rules, &transmit, 200, body.as_bytes())
                    .1
                    .answered(),
                answers,
                "{body}"
            );
        }
    }
}

/// `transmit`'s exchange, run through the HTTP rules' machine against one JSON response
/// (`status`, `body`): whether the body was delivered (it is the request's answer, or a JSON
/// body read in any case) rather than the status failing the request, and the exchange.
fn json_exchange(
    rules: &mut HttpRules,
    transmit: &mcp_proto::Transmit,
    status: u16,
    body: &[u8],
) -> (bool, mcp_proto::http::Exchange) {
    use mcp_proto::http::Step;
    let json = [("Content-Type".to_owned(), "application/json".to_owned())];
    let mut exchange = rules.start(transmit, 1 << 20, false);
    assert!(matches!(rules.step(&mut exchange, transmit), Step::Send(_)));
    rules.on_head(&mut exchange, status, &json);
    assert!(matches!(
        rules.step(&mut exchange, transmit),
        Step::ReadBody { .. }
    ));
    rules.on_body(&mut exchange, body.to_vec());
    let delivered = matches!(rules.step(&mut exchange, transmit), Step::Deliver(_));
    (delivered, exchange)
}
