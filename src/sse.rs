//! Sans-IO decoder for `text/event-stream` (server-sent events).
//!
//! Implements the WHATWG HTML Standard, "Interpreting an event stream": feed raw
//! bytes in chunks of any size with [`SseDecoder::feed`], drain decoded items
//! with [`SseDecoder::poll_event`], and call [`SseDecoder::finish`] at end of
//! stream. Output does not depend on how the input was split into chunks.
//!
//! Memory is bounded: the event being accumulated (pending line, data, event
//! type and new id) may hold at most [`SseDecoder::limit`] bytes. An event
//! that would exceed it is dropped, reported once as [`SseItem::Overflow`],
//! and input is skipped up to the next blank line.
//!
//! Each input byte is examined a constant number of times, so decoding is
//! linear in the input whatever the chunking.

use std::collections::VecDeque;
use std::mem;
use std::sync::Arc;
use std::time::Duration;

/// Default cap on bytes held for the event in progress: 64 MiB.
pub const DEFAULT_LIMIT: usize = 64 << 20;

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// Event type: the last `event:` field of the event, or `"message"` when
    /// there was none or it was empty (WHATWG's default type). `"message"`, what
    /// MCP's events are, is borrowed: an event copies no type.
    pub event: std::borrow::Cow<'static, str>,
    /// The `data:` lines joined with `"\n"`. May be empty: `data:` followed by
    /// a blank line dispatches an event with empty data (MCP priming events).
    pub data: String,
    /// The stream's last event id when this event was dispatched. Sticky: it
    /// carries over from earlier events until an `id:` field changes it.
    /// `None` when never set or reset with an empty `id:` (WHATWG treats an
    /// empty last event id as "no id"; no `Last-Event-ID` is sent for it).
    /// Shared, so a long id is not copied into every event.
    pub id: Option<Arc<str>>,
}

/// An item produced by the decoder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A complete event.
    Event(SseEvent),
    /// An event exceeded the memory limit and was dropped (any line longer
    /// than the limit does this, even a comment). Input up to and
    /// including the next blank line is discarded, then decoding resumes. Any
    /// `id:` seen in the dropped event is forgotten, so the last event id still
    /// names the last event actually delivered.
    Overflow,
}

/// Incremental, sans-IO server-sent-events decoder.
#[derive(Debug)]
pub struct SseDecoder {
    limit: usize,
    /// Bytes of the BOM matched at the start of the stream; 3 once settled.
    bom: usize,
    /// Incomplete last line, raw bytes (decoded only once complete).
    line: Vec<u8>,
    /// The last byte fed was a CR: a LF starting the next chunk ends nothing.
    skip_lf: bool,
    data: String,
    event_type: String,
    /// `id:` seen since the last dispatch (WHATWG's "last event ID buffer"
    /// when it differs from `last_event_id`).
    pending_id: Option<String>,
    last_event_id: Option<Arc<str>>,
    retry: Option<Duration>,
    /// After an overflow: skipping input up to the next blank line.
    discarding: bool,
    /// While discarding: the current line has at least one byte.
    discard_mid_line: bool,
    queue: VecDeque<SseItem>,
    #[cfg(test)]
    scanned: usize,
}

/// `bytes` as text, invalid sequences replaced by U+FFFD (as the SSE spec decodes a stream).
/// Valid text, the common case, is checked by `str::from_utf8`, whose ASCII fast path is several
/// times cheaper per byte than `String::from_utf8_lossy`'s chunk-by-chunk walk (an answer's
/// `data` line is checked once per byte on every call).
fn utf8_lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder with the [`DEFAULT_LIMIT`] of 64 MiB.
    #[must_use]
    pub fn new() -> Self {
        Self::with_limit(DEFAULT_LIMIT)
    }

    /// A decoder holding at most `limit` bytes for the event in progress
    /// (see [`buffered_len`](Self::buffered_len)).
    #[must_use]
    pub fn with_limit(limit: usize) -> Self {
        Self {
            limit,
            bom: 0,
            line: Vec::new(),
            skip_lf: false,
            data: String::new(),
            event_type: String::new(),
            pending_id: None,
            last_event_id: None,
            retry: None,
            discarding: false,
            discard_mid_line: false,
            queue: VecDeque::new(),
            #[cfg(test)]
            scanned: 0,
        }
    }

    /// The configured limit in bytes.
    #[must_use]
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held for the event in progress: incomplete line, data, event type
    /// and a not-yet-dispatched id. Never exceeds [`limit`](Self::limit)
    /// between calls. Not counted: queued items and the last event id (itself
    /// at most `limit` bytes).
    #[must_use]
    pub fn buffered_len(&self) -> usize {
        self.line.len()
            + self.data.len()
            + self.event_type.len()
            + self.pending_id.as_ref().map_or(0, String::len)
    }

    /// The stream's last event id, to send as `Last-Event-ID` when resuming.
    /// Updated when an event is dispatched (at its blank line), also when that
    /// event had no data. `None` if unset or empty.
    #[must_use]
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The reconnection time from the last valid `retry:` field, if any.
    /// Takes effect as soon as the field's line is read.
    #[must_use]
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Removes and returns the next decoded item, oldest first.
    pub fn poll_event(&mut self) -> Option<SseItem> {
        self.queue.pop_front()
    }

    /// Ends the current stream. Per WHATWG, an incomplete event (no final
    /// blank line) is discarded, not dispatched. Already queued items stay.
    /// The decoder may then be fed a new stream (e.g. after reconnecting):
    /// [`last_event_id`](Self::last_event_id) and [`retry`](Self::retry) are
    /// kept, everything else starts afresh, including BOM stripping.
    pub fn finish(&mut self) {
        *self = Self {
            last_event_id: self.last_event_id.take(),
            retry: self.retry,
            queue: mem::take(&mut self.queue),
            ..Self::with_limit(self.limit)
        };
    }

    /// Feeds the next chunk of the stream; decoded items are queued for
    /// [`poll_event`](Self::poll_event). Chunks may split lines, CRLF pairs,
    /// the BOM and UTF-8 sequences anywhere.
    pub fn feed(&mut self, mut chunk: &[u8]) {
        // "The UTF-8 decode algorithm strips one leading UTF-8 Byte Order Mark
        // (BOM), if any." Only at the very start, possibly split across feeds.
        while self.bom < BOM.len() {
            let Some((&b, rest)) = chunk.split_first() else {
                return;
            };
            if b == BOM[self.bom] {
                self.bom += 1;
                chunk = rest;
            } else {
                // Not a BOM after all: the bytes matched so far are content.
                let matched = mem::replace(&mut self.bom, BOM.len());
                self.scan(&BOM[..matched]);
            }
        }
        self.scan(chunk);
    }

    /// Splits `rest` into lines, buffering only the incomplete tail.
    fn scan(&mut self, mut rest: &[u8]) {
        // "Lines must be separated by either a U+000D CARRIAGE RETURN U+000A
        // LINE FEED (CRLF) character pair, a single U+000A LINE FEED (LF)
        // character, or a single U+000D CARRIAGE RETURN (CR) character."
        if self.skip_lf && !rest.is_empty() {
            self.skip_lf = false;
            rest = rest.strip_prefix(b"\n").unwrap_or(rest);
        }
        while let Some(pos) = memchr::memchr2(b'\n', b'\r', rest) {
            #[cfg(test)]
            {
                self.scanned += pos + 1;
            }
            let head = &rest[..pos];
            let cr = rest[pos] == b'\r';
            rest = &rest[pos + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.skip_lf = true,
                    Some(_) => {}
                }
            }
            if self.line.is_empty() {
                self.end_line(head);
            } else {
                let mut line = mem::take(&mut self.line);
                line.extend_from_slice(head);
                self.end_line(&line);
            }
        }
        #[cfg(test)]
        {
            self.scanned += rest.len();
        }
        if rest.is_empty() {
            return;
        }
        if self.discarding {
            self.discard_mid_line = true;
        } else if self.fits(rest.len()) {
            self.line.extend_from_slice(rest);
        } else {
            self.overflow();
            self.discard_mid_line = true;
        }
    }

    /// Whether the event in progress still fits with `extra` more bytes.
    fn fits(&self, extra: usize) -> bool {
        self.buffered_len()
            .checked_add(extra)
            .is_some_and(|n| n <= self.limit)
    }

    /// Drops the event in progress and skips input to the next blank line.
    fn overflow(&mut self) {
        self.line = Vec::new();
        self.data = String::new();
        self.event_type = String::new();
        self.pending_id = None;
        self.discarding = true;
        self.discard_mid_line = false;
        self.queue.push_back(SseItem::Overflow);
    }

    /// Processes one complete line (terminator excluded).
    fn end_line(&mut self, line: &[u8]) {
        #[cfg(test)]
        {
            self.scanned += line.len();
        }
        if self.discarding {
            if line.is_empty() && !self.discard_mid_line {
                self.discarding = false;
            }
            self.discard_mid_line = false;
            return;
        }
        // "If the line is empty (a blank line): Dispatch the event."
        if line.is_empty() {
            return self.dispatch();
        }
        if !self.fits(line.len()) {
            return self.overflow();
        }
        // "If the line starts with a U+003A COLON character (:): Ignore the line.
        // If the line contains a U+003A COLON character: Collect the characters
        // on the line before the first U+003A COLON character (:), and let field
        // be that string. Collect the characters on the line after the first
        // U+003A COLON character (:), and let value be that string. If value
        // starts with a U+0020 SPACE character, remove it from value.
        // Otherwise, the string is not empty but does not contain a U+003A
        // COLON character: use the whole line as the field name, and the empty
        // string as the field value."
        // Splitting raw bytes then decoding equals decoding then splitting:
        // ASCII bytes always end an invalid UTF-8 sequence.
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return,
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            // "event: Set the event type buffer to field value."
            b"event" => {
                let value = utf8_lossy(value);
                self.event_type.clear();
                if self.fits(value.len()) {
                    self.event_type.push_str(&value);
                } else {
                    self.overflow();
                }
            }
            // "data: Append the field value to the data buffer, then append a
            // single U+000A LINE FEED (LF) character to the data buffer."
            b"data" => {
                let value = utf8_lossy(value);
                if self.fits(value.len() + 1) {
                    // Room for the line feed too: one allocation for a one-line event.
                    self.data.reserve(value.len() + 1);
                    self.data.push_str(&value);
                    self.data.push('\n');
                } else {
                    self.overflow();
                }
            }
            // "id: If the field value does not contain U+0000 NULL, then set
            // the last event ID buffer to the field value. Otherwise, ignore
            // the field."
            b"id" if !value.contains(&0) => {
                let value = utf8_lossy(value);
                self.pending_id = None;
                if self.fits(value.len()) {
                    self.pending_id = Some(value.into_owned());
                } else {
                    self.overflow();
                }
            }
            // "retry: If the field value consists of only ASCII digits, then
            // interpret the field value as an integer in base ten, and set the
            // event stream's reconnection time to that integer. Otherwise,
            // ignore the field." (A value overflowing u64 is ignored.)
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = value.iter().try_fold(0u64, |n, &d| {
                    n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
                });
                if let Some(ms) = ms {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            // "Otherwise: The field is ignored."
            _ => {}
        }
    }

    fn dispatch(&mut self) {
        // "1. Set the last event ID string of the event source to the value of
        // the last event ID buffer. The buffer does not get reset."
        if let Some(id) = self.pending_id.take() {
            self.last_event_id = (!id.is_empty()).then(|| id.into());
        }
        // "2. If the data buffer is an empty string, set the data buffer and
        // the event type buffer to the empty string and return."
        if self.data.is_empty() {
            self.event_type.clear();
            return;
        }
        // "3. If the data buffer's last character is a U+000A LINE FEED (LF)
        // character, then remove the last character from the data buffer."
        self.data.pop();
        // "5./6. Initialize event's type attribute to "message" [...] If the
        // event type buffer has a value other than the empty string, change the
        // type of the newly created event to equal the value of the event type
        // buffer. 7. Set the data buffer and the event type buffer to the empty
        // string."
        let event = match self.event_type.as_str() {
            "" | "message" => std::borrow::Cow::Borrowed("message"),
            t => std::borrow::Cow::Owned(t.to_owned()),
        };
        self.event_type.clear();
        self.queue.push_back(SseItem::Event(SseEvent {
            event,
            data: mem::take(&mut self.data),
            id: self.last_event_id.clone(),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str, id: Option<&str>) -> SseItem {
        SseItem::Event(SseEvent {
            event: event.to_owned().into(),
            data: data.into(),
            id: id.map(Into::into),
        })
    }

    fn msg(data: &str) -> SseItem {
        ev("message", data, None)
    }

    fn drain(d: &mut SseDecoder) -> Vec<SseItem> {
        std::iter::from_fn(|| d.poll_event()).collect()
    }

    fn decode_chunks_with(limit: usize, chunks: &[&[u8]]) -> Vec<SseItem> {
        let mut d = SseDecoder::with_limit(limit);
        for c in chunks {
            d.feed(c);
            assert!(d.buffered_len() <= limit);
        }
        d.finish();
        drain(&mut d)
    }

    fn decode_chunks(chunks: &[&[u8]]) -> Vec<SseItem> {
        decode_chunks_with(DEFAULT_LIMIT, chunks)
    }

    fn decode(s: &[u8]) -> Vec<SseItem> {
        decode_chunks(&[s])
    }

    #[test]
    fn lf() {
        assert_eq!(decode(b"data: a\n\ndata: b\n\n"), [msg("a"), msg("b")]);
    }

    #[test]
    fn crlf() {
        assert_eq!(
            decode(b"data: a\r\n\r\ndata: b\r\n\r\n"),
            [msg("a"), msg("b")]
        );
    }

    #[test]
    fn lone_cr() {
        assert_eq!(
            decode(b"data: a\r\rdata: b\rdata: c\r\r"),
            [msg("a"), msg("b\nc")]
        );
    }

    #[test]
    fn mixed_line_ends() {
        assert_eq!(
            decode(b"data: a\r\ndata: b\rdata: c\n\r\n"),
            [msg("a\nb\nc")]
        );
    }

    #[test]
    fn crlf_split_across_feeds() {
        // One CRLF, split: one line end, so no blank line and no dispatch yet.
        let mut d = SseDecoder::new();
        d.feed(b"data: a\r");
        d.feed(b"\ndata: b\r");
        d.feed(b"\n");
        assert_eq!(drain(&mut d), []);
        d.feed(b"\r");
        d.feed(b"\n");
        assert_eq!(drain(&mut d), [msg("a\nb")]);
        // An empty feed between CR and LF does not break the pair.
        assert_eq!(
            decode_chunks(&[b"data: a\r", b"", b"\n\r", b"", b"\n"]),
            [msg("a")]
        );
        // CR then CR across feeds is two line ends.
        assert_eq!(decode_chunks(&[b"data: a\r", b"\r"]), [msg("a")]);
    }

    #[test]
    fn bom_once() {
        assert_eq!(decode(b"\xEF\xBB\xBFdata: a\n\n"), [msg("a")]);
        // A second BOM is content: it becomes part of the field name.
        assert_eq!(decode(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n"), []);
    }

    #[test]
    fn bom_split() {
        let want = [msg("a")];
        assert_eq!(decode_chunks(&[b"\xEF", b"\xBB\xBF", b"data: a\n\n"]), want);
        assert_eq!(decode_chunks(&[b"\xEF\xBB", b"\xBFdata: a\n\n"]), want);
        assert_eq!(
            decode_chunks(&[b"\xEF", b"", b"\xBB", b"\xBF", b"data: a\n\n"]),
            want
        );
    }

    #[test]
    fn bom_only_at_start() {
        assert_eq!(
            decode(b"data: a\n\n\xEF\xBB\xBFdata: b\n\n"),
            [msg("a")],
            "a later BOM is part of a field name"
        );
        assert_eq!(
            decode(b"data: \xEF\xBB\xBFx\n\n"),
            [msg("\u{FEFF}x")],
            "kept inside a value"
        );
        // A partial BOM followed by other bytes is content (decoded lossily).
        assert_eq!(decode(b"\xEF\xBB:\ndata: a\n\n"), [msg("a")]);
        assert_eq!(
            decode_chunks(&[b"\xEF", b"data: a\n\n"]),
            [],
            "the field is U+FFFD followed by data"
        );
        assert_eq!(decode_chunks(&[b"\xEF", b"\n\ndata: a\n\n"]), [msg("a")]);
    }

    #[test]
    fn comment() {
        assert_eq!(decode(b": hello\ndata: a\n:\n\n"), [msg("a")]);
        assert_eq!(decode(b": only a comment\n\n"), []);
    }

    #[test]
    fn colonless_line() {
        // "data" with no colon appends an empty line to the data buffer.
        assert_eq!(decode(b"data\ndata\n\n"), [msg("\n")]);
        assert_eq!(decode(b"data\n\n"), [msg("")]);
        assert_eq!(decode(b"event\ndata: a\n\n"), [msg("a")]);
    }

    #[test]
    fn one_space_stripped() {
        assert_eq!(decode(b"data:a\n\n"), [msg("a")]);
        assert_eq!(decode(b"data: a\n\n"), [msg("a")]);
        assert_eq!(decode(b"data:  a \n\n"), [msg(" a ")]);
        assert_eq!(decode(b"data:\ta\n\n"), [msg("\ta")]);
        assert_eq!(decode(b"data: a:b: c\n\n"), [msg("a:b: c")]);
    }

    #[test]
    fn field_names_are_exact() {
        assert_eq!(decode(b"Data: a\ndata : b\n data: c\n\n"), []);
    }

    #[test]
    fn multi_data_joined() {
        assert_eq!(decode(b"data: a\ndata:\ndata: b\n\n"), [msg("a\n\nb")]);
        assert_eq!(decode(b"data: {\"a\":\ndata: 1}\n\n"), [msg("{\"a\":\n1}")]);
    }

    #[test]
    fn empty_data_dispatches_nothing() {
        assert_eq!(decode(b"event: x\n\n\n\nid: 1\n\nretry: 5\n\n"), []);
        // The event type does not leak into the next event.
        assert_eq!(decode(b"event: x\n\ndata: a\n\n"), [msg("a")]);
        // But a data field with an empty value is data: WHATWG dispatches it.
        assert_eq!(decode(b"data:\n\n"), [msg("")]);
    }

    #[test]
    fn event_type() {
        assert_eq!(
            decode(b"event: add\ndata: a\n\ndata: b\n\n"),
            [ev("add", "a", None), msg("b")]
        );
        assert_eq!(
            decode(b"event: a\nevent: b\ndata: x\n\n"),
            [ev("b", "x", None)]
        );
        assert_eq!(decode(b"event: a\nevent:\ndata: x\n\n"), [msg("x")]);
    }

    #[test]
    fn sticky_id() {
        let mut d = SseDecoder::new();
        d.feed(b"id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\nid\ndata: d\n\n");
        assert_eq!(
            drain(&mut d),
            [
                ev("message", "a", Some("1")),
                ev("message", "b", Some("1")),
                ev("message", "c", Some("2")),
                msg("d"),
            ]
        );
        assert_eq!(d.last_event_id(), None);
        // Set at dispatch even without data; not before the blank line.
        d.feed(b"id: 3\n");
        assert_eq!(d.last_event_id(), None);
        d.feed(b"\n");
        assert_eq!(d.last_event_id(), Some("3"));
        assert_eq!(drain(&mut d), []);
        // An incomplete event's id is never committed; the id survives finish.
        d.feed(b"id: 4\ndata: x\n");
        d.finish();
        assert_eq!(d.last_event_id(), Some("3"));
        d.feed(b"data: y\n\n");
        assert_eq!(drain(&mut d), [ev("message", "y", Some("3"))]);
    }

    #[test]
    fn id_with_nul_ignored() {
        let mut d = SseDecoder::new();
        d.feed(b"id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n");
        assert_eq!(
            drain(&mut d),
            [ev("message", "a", Some("1")), ev("message", "b", Some("1"))]
        );
        assert_eq!(d.last_event_id(), Some("1"));
    }

    #[test]
    fn retry_digits_only() {
        let mut d = SseDecoder::new();
        assert_eq!(d.retry(), None);
        for (line, want) in [
            (&b"retry: 1000\n"[..], Some(1000)),
            (b"retry: 12a\n", Some(1000)),
            (b"retry: -5\n", Some(1000)),
            (b"retry: +5\n", Some(1000)),
            (b"retry:  5\n", Some(1000)),
            (b"retry: 5 \n", Some(1000)),
            (b"retry: 1.5\n", Some(1000)),
            (b"retry:\n", Some(1000)),
            (b"retry\n", Some(1000)),
            (b"retry: 99999999999999999999999\n", Some(1000)),
            (b"retry: 0\n", Some(0)),
            (b"retry:0042\n", Some(42)),
            (b"retry: 18446744073709551615\n", Some(u64::MAX)),
        ] {
            d.feed(line);
            assert_eq!(d.retry(), want.map(Duration::from_millis), "{line:?}");
        }
        assert_eq!(drain(&mut d), []);
    }

    #[test]
    fn unknown_field_ignored() {
        assert_eq!(decode(b"foo: bar\ndata: a\nbaz\n\n"), [msg("a")]);
        assert_eq!(decode(b"foo: bar\n\n"), []);
    }

    #[test]
    fn eof_discards_incomplete_event() {
        assert_eq!(decode(b"data: a\n\ndata: b\n"), [msg("a")]);
        assert_eq!(decode(b"data: a\n\ndata: b"), [msg("a")]);
        assert_eq!(decode(b"data: a\n\ndata: b\r"), [msg("a")]);
        let mut d = SseDecoder::new();
        d.feed(b"data: a");
        d.finish();
        // A new stream starts clean (and may start with a BOM).
        d.feed(b"\xEF\xBB\xBF\n\ndata: b\n\n");
        assert_eq!(drain(&mut d), [msg("b")]);
    }

    #[test]
    fn overflow_resyncs() {
        let mut d = SseDecoder::with_limit(16);
        d.feed(b"id: 1\ndata: ok\n\n");
        d.feed(b"id: 2\ndata: 0123456789\ndata: 0123456789\nretry: 7\ndata: x\n\n");
        d.feed(b"data: after\n\n");
        assert_eq!(
            drain(&mut d),
            [
                ev("message", "ok", Some("1")),
                SseItem::Overflow,
                ev("message", "after", Some("1")),
            ]
        );
        assert_eq!(d.retry(), None, "lines after the overflow are skipped");
        assert_eq!(
            d.last_event_id(),
            Some("1"),
            "dropped event's id is forgotten"
        );

        // A long line overflows while still incomplete, without being buffered.
        let mut d = SseDecoder::with_limit(16);
        d.feed(b"data: ");
        for _ in 0..100 {
            d.feed(b"xxxxxxxxxx");
            assert!(d.buffered_len() <= 16);
        }
        assert_eq!(drain(&mut d), [SseItem::Overflow]);
        d.feed(b"\ndata: still dropped\n\ndata: b\n\n");
        assert_eq!(drain(&mut d), [msg("b")]);

        // Exactly at the limit is fine: "data:" + 11 bytes = 16 byte line.
        assert_eq!(
            decode_chunks_with(16, &[b"data:0123456789a\n\n"]),
            [msg("0123456789a")]
        );
        assert_eq!(
            decode_chunks_with(16, &[b"data:0123456789ab\n\n"]),
            [SseItem::Overflow]
        );
        // A huge event type or id counts too.
        assert_eq!(
            decode_chunks_with(16, &[b"event:0123456789ab\n\ndata: a\n\n"]),
            [SseItem::Overflow, msg("a")]
        );
        // Invalid UTF-8 grows 3x when decoded; that is counted too.
        assert_eq!(
            decode_chunks_with(16, &[b"data:\xFF\xFF\xFF\xFF\xFF\xFF\n\ndata: a\n\n"]),
            [SseItem::Overflow, msg("a")]
        );
        // A blank line ending the overflowing line's event is consumed by resync.
        assert_eq!(
            decode_chunks_with(8, &[b"data: 0123456789\r\n\r\ndata: a\r\n\r\n"]),
            [SseItem::Overflow, msg("a")]
        );
    }

    #[test]
    fn utf8_split_across_feeds() {
        let s = "data: h\u{e9}\u{20ac}\u{1F600}\n\n".as_bytes();
        for i in 0..s.len() {
            assert_eq!(
                decode_chunks(&[&s[..i], &s[i..]]),
                [msg("h\u{e9}\u{20ac}\u{1F600}")]
            );
        }
        assert_eq!(
            decode(b"data: a\xFFb\xE2\x82\n\n"),
            [msg("a\u{FFFD}b\u{FFFD}")]
        );
        assert_eq!(
            decode(b"event: \xC3\ndata: x\n\n"),
            [ev("\u{FFFD}", "x", None)]
        );
    }

    const STREAMS: &[&[u8]] = &[
        b"data: a\r\n\r\ndata: b\rdata: c\r\r: x\n\nid: 1\nevent: e\ndata: d\n\n",
        b"\xEF\xBB\xBFdata: \xE2\x82\xAC\r\n\r\n\xEF\xBB\xBFdata: x\n\n",
        b"\xEF\xBBdata: x\n\n",
        b"retry: 10\rid: a\0b\rdata\r\r\r\n\n\r\rdata: \xF0\x9F\x98\x80\r\n\r",
        b"id: 9\ndata: 0123456789012345678901234567890\n\ndata: ok\n\nevent: 0123456789012345678901234567890\n\ndata: y\n\n",
        b"data: aaaaaaaaaaaaaaaa\ndata: bbbbbbbbbbbbbbbb\n\n\ndata: c\r\n\r\n",
        b"data: 0123456789abcdefgh\n\n",
    ];

    #[test]
    fn chunk_invariance() {
        for limit in [DEFAULT_LIMIT, 24] {
            for s in STREAMS {
                let whole = decode_chunks_with(limit, &[s]);
                let bytes: Vec<&[u8]> = s.chunks(1).collect();
                assert_eq!(decode_chunks_with(limit, &bytes), whole, "{s:?}");
                for i in 0..=s.len() {
                    let (a, b) = s.split_at(i);
                    assert_eq!(decode_chunks_with(limit, &[a, b]), whole, "{s:?} at {i}");
                }
            }
        }
    }

    #[test]
    fn linear_scan() {
        let n = 8 << 20;
        let mut input = b"data: ".to_vec();
        input.resize(n, b'x');
        input.extend_from_slice(b"\n\n");
        let mut d = SseDecoder::new();
        for c in input.chunks(4096) {
            d.feed(c);
        }
        assert!(d.scanned < 3 * input.len(), "scanned {}", d.scanned);
        match d.poll_event() {
            Some(SseItem::Event(e)) => assert_eq!(e.data.len(), n - 6),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn mcp_python_sse_starlette() {
        let stream = b": ping - 2025-06-18 12:00:00.000000+00:00\r\n\r\n\
            event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\n\
            : ping - 2025-06-18 12:00:15.000000+00:00\r\n\r\n\
            event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n";
        let want = [
            msg(r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#),
            msg(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
        ];
        assert_eq!(decode(stream), want);
        // As read from a socket in odd pieces, splitting every CRLF.
        let pieces: Vec<&[u8]> = stream.split_inclusive(|&b| b == b'\r').collect();
        assert_eq!(decode_chunks(&pieces), want);
    }

    #[test]
    fn mcp_typescript_sdk() {
        let mut d = SseDecoder::new();
        d.feed(b"id: 0_abc\nretry: 1000\ndata: \n\n");
        assert_eq!(drain(&mut d), [ev("message", "", Some("0_abc"))]);
        assert_eq!(d.retry(), Some(Duration::from_secs(1)));
        d.feed(
            b"event: message\nid: 1_abc\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
        );
        assert_eq!(
            drain(&mut d),
            [ev(
                "message",
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
                Some("1_abc")
            )]
        );
        assert_eq!(d.last_event_id(), Some("1_abc"));
        // Priming without retry; server then closes the stream mid-event.
        d.feed(b"id: 2_abc\ndata: \n\nevent: message\nid: 3_abc\ndata: {\"jsonrpc\"");
        d.finish();
        assert_eq!(drain(&mut d), [ev("message", "", Some("2_abc"))]);
        assert_eq!(d.last_event_id(), Some("2_abc"));
    }
}
