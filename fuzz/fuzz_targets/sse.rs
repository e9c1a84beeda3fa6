//! Fuzz the SSE decoder: no panics, bounded buffering, chunk invariance.
//!
//! The whole input is the SSE stream; its first bytes also choose the memory
//! limit and the chunk sizes, so seed files stay plain SSE streams.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_proto::sse::{SseDecoder, SseItem, DEFAULT_LIMIT};

/// Everything observable after decoding a stream.
type Outcome = (Vec<SseItem>, Option<String>, Option<std::time::Duration>);

fn decode<'a>(limit: usize, chunks: impl IntoIterator<Item = &'a [u8]>) -> Outcome {
    let mut d = SseDecoder::with_limit(limit);
    let mut items = Vec::new();
    for chunk in chunks {
        d.feed(chunk);
        assert!(d.buffered_len() <= limit, "{} > {limit}", d.buffered_len());
        items.extend(std::iter::from_fn(|| d.poll_event()));
    }
    d.finish();
    assert_eq!(d.buffered_len(), 0);
    items.extend(std::iter::from_fn(|| d.poll_event()));
    (items, d.last_event_id().map(str::to_owned), d.retry())
}

fuzz_target!(|input: &[u8]| {
    // Odd first byte: default limit; even: a tiny one, to exercise overflow.
    let limit = match input.first() {
        Some(&b) if b % 2 == 0 => usize::from(b / 2),
        _ => DEFAULT_LIMIT,
    };
    // Bytes 1..4 give a repeating cycle of chunk sizes 0..=31; 0 feeds an
    // empty chunk, then one byte.
    let sizes: Vec<usize> = input
        .get(1..4)
        .unwrap_or_default()
        .iter()
        .map(|&b| usize::from(b % 32))
        .collect();
    let mut chunks = Vec::new();
    let mut rest = input;
    for &n in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        if n == 0 {
            chunks.push(&[][..]);
        }
        let (chunk, tail) = rest.split_at(n.clamp(1, rest.len()));
        chunks.push(chunk);
        rest = tail;
    }
    chunks.push(rest);

    let whole = decode(limit, [input]);
    assert_eq!(decode(limit, chunks), whole, "chunking changed the output");
    assert_eq!(
        decode(limit, input.chunks(1)),
        whole,
        "byte-by-byte changed the output"
    );
    // Decoded text is at most 3x the input (U+FFFD per invalid byte), so a
    // generous limit never overflows.
    if limit == DEFAULT_LIMIT && input.len() < DEFAULT_LIMIT / 4 {
        assert!(!whole.0.contains(&SseItem::Overflow));
    }
});
