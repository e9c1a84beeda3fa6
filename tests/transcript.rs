//! Transcript tests: what `@modelcontextprotocol/server-everything` (stdio) wrote to its stdout,
//! recorded by tests/peers/record-transcript.py, replayed into a `Session` whole, one byte at a time
//! and split at every offset. The events must be identical every time.

use mcp_proto::{bridge, ContentBlock, Event, Reply, Session};
use serde_json::{json, Value};
use std::time::Instant;

const OUT: &[u8] = include_bytes!("transcripts/everything-stdio.out");
const IN: &str = include_str!("transcripts/everything-stdio.in");

/// The server's first line (the initialize answer) and the rest.
fn split_transcript() -> (&'static [u8], &'static [u8]) {
    let end = OUT.iter().position(|&b| b == b'\n').expect("a first line") + 1;
    OUT.split_at(end)
}

/// Replays the transcript: the handshake answer in `first` chunks, then the five requests the
/// recording made, then the rest in `rest` chunks. Returns every event and every frame sent.
fn replay(first: &[&[u8]], rest: &[&[u8]]) -> (Vec<Event>, Vec<Value>) {
    let now = Instant::now();
    let mut s = Session::new(mcp_proto::Config::default());
    let mut events = Vec::new();
    let mut sent = Vec::new();
    let drain = |s: &mut Session, events: &mut Vec<Event>, sent: &mut Vec<Value>| {
        while let Some(t) = s.poll_transmit() {
            sent.push(serde_json::from_slice(&t.payload).unwrap());
        }
        events.extend(std::iter::from_fn(|| s.poll_event()));
    };
    s.initialize(now).unwrap();
    for chunk in first {
        s.handle_bytes(chunk, now);
        drain(&mut s, &mut events, &mut sent);
    }
    s.list_tools(None, now).unwrap();
    s.call_tool("echo", json!({"message": "hello"}), now)
        .unwrap();
    s.call_tool("get-sum", json!({"a": 2, "b": 3}), now)
        .unwrap();
    s.call_tool("get-tiny-image", json!({}), now).unwrap();
    s.call_tool(
        "get-structured-content",
        json!({"location": "New York"}),
        now,
    )
    .unwrap();
    drain(&mut s, &mut events, &mut sent);
    for chunk in rest {
        s.handle_bytes(chunk, now);
        drain(&mut s, &mut events, &mut sent);
    }
    s.handle_eof(now);
    drain(&mut s, &mut events, &mut sent);
    (events, sent)
}

fn whole() -> (Vec<Event>, Vec<Value>) {
    let (first, rest) = split_transcript();
    replay(&[first], &[rest])
}

#[test]
fn whole_transcript_gives_the_recorded_answers() {
    let (events, sent) = whole();
    // What we sent matches what the recording sent, but for our own clientInfo and list params.
    let recorded: Vec<Value> = IN
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(sent.len(), recorded.len());
    for (ours, theirs) in sent.iter().zip(&recorded) {
        assert_eq!(ours["method"], theirs["method"]);
        assert_eq!(ours["id"], theirs["id"]);
        if theirs["method"] == "tools/call" {
            assert_eq!(ours["params"], theirs["params"]);
        }
    }
    assert_eq!(sent[0]["params"]["protocolVersion"], "2025-11-25");

    assert_eq!(events[0], Event::Ready);
    assert_eq!(
        events[1],
        Event::ToolsListChanged,
        "the server announces its tools after initialized"
    );
    let responses: Vec<&Reply> = events[2..7]
        .iter()
        .map(|e| match e {
            Event::Response { result: Ok(r), .. } => r,
            other => panic!("{other:?}"),
        })
        .collect();
    let Reply::Tools(page) = responses[0] else {
        panic!()
    };
    let names: Vec<&str> = page.tools.iter().map(|t| t.name.as_str()).collect();
    for expected in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "get-structured-content",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    // Schemas stay verbatim, `$schema` included.
    let echo = page.tools.iter().find(|t| t.name == "echo").unwrap();
    let schema = echo.input_schema.as_ref().unwrap().get();
    assert!(schema.contains("\"$schema\""), "{schema}");
    assert!(
        String::from_utf8_lossy(OUT).contains(schema),
        "byte for byte as sent"
    );
    let Reply::ToolCall(r) = responses[1] else {
        panic!()
    };
    assert_eq!(r.text(), "Echo: hello");
    let Reply::ToolCall(r) = responses[2] else {
        panic!()
    };
    assert_eq!(r.text(), "The sum of 2 and 3 is 5.");
    let Reply::ToolCall(r) = responses[3] else {
        panic!()
    };
    assert!(
        matches!(&r.content[1], ContentBlock::Image { mime_type, .. } if mime_type == "image/png")
    );
    let text = bridge::render_text(r);
    assert!(
        text.starts_with("Here's the image you requested:\n[image: image/png, "),
        "{text}"
    );
    assert!(!text.contains("iVBOR"), "never the base64 payload");
    let Reply::ToolCall(r) = responses[4] else {
        panic!()
    };
    assert!(r
        .structured_content
        .as_ref()
        .unwrap()
        .get("temperature")
        .is_some());
    assert_eq!(events.last(), Some(&Event::Closed));
    assert_eq!(events.len(), 8, "{events:#?}");
}

#[test]
fn byte_by_byte_gives_identical_events() {
    let (first, rest) = split_transcript();
    let a: Vec<&[u8]> = first.chunks(1).collect();
    let b: Vec<&[u8]> = rest.chunks(1).collect();
    assert_eq!(replay(&a, &b), whole());
}

#[test]
fn every_split_offset_gives_identical_events() {
    let expected = whole();
    let (first, rest) = split_transcript();
    for at in 0..=first.len() {
        let (x, y) = first.split_at(at);
        assert_eq!(
            replay(&[x, y], &[rest]),
            expected,
            "handshake split at {at}"
        );
    }
    for at in 0..=rest.len() {
        let (x, y) = rest.split_at(at);
        assert_eq!(replay(&[first], &[x, y]), expected, "split at {at}");
    }
}

#[test]
fn crlf_version_of_the_transcript_gives_identical_events() {
    let (first, rest) = split_transcript();
    let crlf = |b: &[u8]| -> Vec<u8> {
        let mut out = Vec::new();
        for &c in b {
            if c == b'\n' {
                out.push(b'\r');
            }
            out.push(c);
        }
        out
    };
    let (first, rest) = (crlf(first), crlf(rest));
    assert_eq!(replay(&[&first], &[&rest]), whole());
    // With every CRLF split between two reads.
    let pieces: Vec<&[u8]> = rest.split_inclusive(|&c| c == b'\r').collect();
    assert_eq!(replay(&[&first], &pieces), whole());
}
