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
    assert!(rules.observe_message(&call, &call_answer(3, b"caf\xe9")));
    assert!(rules.observe_message(&call, &call_answer(3, br"\ud800")));
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
