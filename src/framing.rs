//! Newline-delimited message framing for the stdio transport.
//!
//! > "Messages are delimited by newlines, and MUST NOT contain embedded newlines."
//! > — MCP 2025-11-25, Transports § stdio
//!
//! [`LineFramer`] turns a byte stream that arrives in arbitrary chunks into lines. It is linear: each
//! input byte is scanned for a newline exactly once, and a line that lies wholly inside one chunk is
//! handed out without being copied. Only the incomplete tail of a chunk is buffered.
//!
//! Tolerated on input: a UTF-8 byte-order mark at the very start of the stream (even split across
//! chunks) and a trailing `\r` on each line (CRLF line ends, even with the CR and LF in different
//! chunks). Blank lines are skipped.
//!
//! Bounded memory: the partial-line buffer never holds more than [`LineFramer::limit`] bytes. A line
//! longer than the limit is not buffered: the framer switches to discarding until the next newline and
//! then yields [`Frame::Oversized`], which carries the line's length and, when it can be read from the
//! line's first or last bytes, the JSON-RPC `id` it carries, so the request it answers can fail at once.

/// Default cap on one line: 64 MiB.
pub const DEFAULT_FRAME_LIMIT: usize = 64 * 1024 * 1024;

/// How many bytes of an oversized line's start and end are kept to look for its `id`.
const HINT_LEN: usize = 256;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One framing result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A complete line, without its line end (`\n` or `\r\n`). Never empty.
    Line(&'a [u8]),
    /// A line longer than the limit was discarded through its newline.
    Oversized {
        /// The line's full length in bytes (without the line end).
        len: u64,
        /// The JSON-RPC `id` found at the top level of the line's start or end, as raw JSON text
        /// (`5`, `"abc"`), when one could be read there.
        id_hint: Option<String>,
    },
}

/// Splits a byte stream into newline-delimited lines. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct LineFramer {
    limit: usize,
    /// The incomplete line carried over from earlier chunks (never more than `limit` bytes).
    partial: Vec<u8>,
    /// How many bytes of the stream start have been checked against the BOM (0..=3), or
    /// `usize::MAX` once the check is over.
    bom_seen: usize,
    /// Set while discarding an oversized line.
    discard: Option<Discard>,
    /// `partial` holds a line of exactly `limit` bytes followed by a CR not yet known to be the
    /// start of a CRLF line end.
    cr_pending: bool,
    /// Bytes examined for a newline so far: each input byte exactly once (checked by tests).
    #[cfg(test)]
    scanned: u64,
}

#[derive(Debug, Clone)]
struct Discard {
    len: u64,
    head: Vec<u8>,
    /// The last `HINT_LEN` bytes seen, as a ring: `tail_pos` is where the next byte goes.
    tail: Vec<u8>,
    tail_pos: usize,
}

impl Discard {
    fn start(bytes: &[u8]) -> Self {
        let mut d = Discard {
            len: 0,
            head: Vec::with_capacity(HINT_LEN),
            tail: Vec::with_capacity(HINT_LEN),
            tail_pos: 0,
        };
        d.push(bytes);
        d
    }

    fn push(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
        // The line's first HINT_LEN bytes, however it arrives.
        let room = HINT_LEN - self.head.len();
        self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        // Only the last HINT_LEN bytes of this push can end up in the ring.
        let bytes = &bytes[bytes.len().saturating_sub(HINT_LEN)..];
        for &b in bytes {
            if self.tail.len() < HINT_LEN {
                self.tail.push(b);
            } else {
                self.tail[self.tail_pos] = b;
            }
            self.tail_pos = (self.tail_pos + 1) % HINT_LEN;
        }
    }

    fn finish(self) -> Frame<'static> {
        let mut tail = self.tail;
        if tail.len() == HINT_LEN {
            tail.rotate_left(self.tail_pos);
        }
        // A trailing CR is part of the line end, not of the line.
        let cr = tail.last() == Some(&b'\r');
        let tail = strip_cr(&tail);
        let id_hint = id_from_head(&self.head).or_else(|| id_from_tail(tail));
        Frame::Oversized {
            len: self.len - u64::from(cr),
            id_hint,
        }
    }
}

impl Default for LineFramer {
    fn default() -> Self {
        Self::new(DEFAULT_FRAME_LIMIT)
    }
}

impl LineFramer {
    /// A framer whose lines may be at most `limit` bytes (at least 1; `usize::MAX` means
    /// `usize::MAX - 1`, so that the limit plus a trailing CR cannot overflow).
    pub fn new(limit: usize) -> Self {
        LineFramer {
            limit: limit.clamp(1, usize::MAX - 1),
            partial: Vec::new(),
            bom_seen: 0,
            discard: None,
            cr_pending: false,
            #[cfg(test)]
            scanned: 0,
        }
    }

    /// The line-length limit in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes currently buffered for an incomplete line (always at most [`limit`](Self::limit)).
    pub fn buffered_len(&self) -> usize {
        self.partial.len()
    }

    /// Whether the framer is discarding the rest of an oversized line.
    pub fn is_discarding(&self) -> bool {
        self.discard.is_some()
    }

    /// Feeds one chunk; `on_frame` is called for each frame it completes, in order.
    pub fn feed(&mut self, mut data: &[u8], mut on_frame: impl FnMut(Frame<'_>)) {
        data = self.skip_bom(data);
        while !data.is_empty() {
            let newline = memchr::memchr(b'\n', data);
            let (segment, rest, complete) = match newline {
                Some(i) => (&data[..i], &data[i + 1..], true),
                None => (data, &data[data.len()..], false),
            };
            data = rest;
            #[cfg(test)]
            {
                self.scanned += segment.len() as u64 + u64::from(complete);
            }
            if std::mem::take(&mut self.cr_pending) {
                if complete && segment.is_empty() {
                    // The held-back CR was the line end: the line is exactly at the limit, and is
                    // all content (its own line end is already gone).
                    on_frame(Frame::Line(&self.partial));
                    self.partial.clear();
                    continue;
                }
                // The CR was inside the line, which is therefore over the limit.
                self.overflow(&[b"\r"]);
            }
            if let Some(discard) = self.discard.as_mut() {
                discard.push(segment);
                if complete {
                    let discard = self.discard.take().expect("checked above");
                    on_frame(discard.finish());
                }
                continue;
            }
            if !complete {
                let total = self.partial.len() + segment.len();
                if total <= self.limit {
                    self.partial.extend_from_slice(segment);
                } else if total == self.limit + 1 && segment.ends_with(b"\r") {
                    // A line exactly at the limit whose CR came without its LF: hold the CR back
                    // (as a flag) so the buffer stays within the limit.
                    self.partial
                        .extend_from_slice(&segment[..segment.len() - 1]);
                    self.cr_pending = true;
                } else {
                    self.overflow(&[segment]);
                }
                continue;
            }
            if self.partial.is_empty() {
                emit_line(segment, self.limit, &mut on_frame);
            } else if self.partial.len() + segment.len() > self.limit + 1 {
                // + 1: a trailing CR does not count against the limit.
                self.overflow(&[segment]);
                let discard = self.discard.take().expect("overflow sets it");
                on_frame(discard.finish());
            } else {
                self.partial.extend_from_slice(segment);
                let line = std::mem::take(&mut self.partial);
                emit_line(&line, self.limit, &mut on_frame);
                // Keep the allocation for the next partial line unless it is large.
                if line.capacity() <= 64 * 1024 {
                    self.partial = line;
                    self.partial.clear();
                }
            }
        }
    }

    /// Ends the stream: a final line left without its newline is still delivered.
    pub fn finish(&mut self, mut on_frame: impl FnMut(Frame<'_>)) {
        // A held-back CR at the end of the stream ends the line like a line end would.
        if std::mem::take(&mut self.cr_pending) {
            on_frame(Frame::Line(&self.partial));
            self.partial.clear();
        }
        // The stream ended inside what looked like a BOM: those bytes were content after all.
        if self.bom_seen != usize::MAX {
            self.partial.extend_from_slice(&BOM[..self.bom_seen]);
            self.bom_seen = usize::MAX;
        }
        if let Some(discard) = self.discard.take() {
            on_frame(discard.finish());
        }
        let line = std::mem::take(&mut self.partial);
        emit_line(&line, self.limit, &mut on_frame);
    }

    /// The line in `partial` plus `more` is over the limit: discard it from here on.
    fn overflow(&mut self, more: &[&[u8]]) {
        let mut discard = Discard::start(&self.partial);
        for bytes in more {
            discard.push(bytes);
        }
        self.partial = Vec::new();
        self.discard = Some(discard);
    }

    /// Strips a UTF-8 BOM at the very start of the stream, even when split across chunks.
    fn skip_bom<'d>(&mut self, data: &'d [u8]) -> &'d [u8] {
        if self.bom_seen == usize::MAX || data.is_empty() {
            return data;
        }
        let want = &BOM[self.bom_seen..];
        let n = want.len().min(data.len());
        if data[..n] == want[..n] {
            self.bom_seen += n;
            if self.bom_seen == BOM.len() {
                self.bom_seen = usize::MAX;
            }
            return &data[n..];
        }
        // Not a BOM after all: the bytes matched so far belong to the stream.
        let matched = self.bom_seen;
        self.bom_seen = usize::MAX;
        if matched > 0 {
            self.partial.extend_from_slice(&BOM[..matched]);
        }
        data
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn emit_line(line: &[u8], limit: usize, on_frame: &mut impl FnMut(Frame<'_>)) {
    let stripped = strip_cr(line);
    if stripped.is_empty() {
        return;
    }
    if stripped.len() > limit {
        // `finish` strips the line's CR itself.
        on_frame(Discard::start(line).finish());
    } else {
        on_frame(Frame::Line(stripped));
    }
}

/// The JSON-RPC `id` of a whole message, when its first or last bytes show it at the top level (raw
/// JSON text). Bounded work: only [`HINT_LEN`] bytes at each end are looked at.
pub(crate) fn peek_id(message: &[u8]) -> Option<String> {
    let n = message.len().min(HINT_LEN);
    id_from_head(&message[..n]).or_else(|| id_from_tail(&message[message.len() - n..]))
}

/// Finds `"id": <number or string>` among the top-level members of a JSON object prefix.
fn id_from_head(head: &[u8]) -> Option<String> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < head.len() {
        match head[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let end = string_end(head, i)?;
                if depth == 1 && &head[i..=end] == b"\"id\"" {
                    let rest = skip_ws(&head[end + 1..]);
                    if let Some(rest) = rest.strip_prefix(b":") {
                        return scalar_prefix(skip_ws(rest));
                    }
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Finds `"id": <number or string>` as the last member of a JSON object whose end this is.
fn id_from_tail(tail: &[u8]) -> Option<String> {
    let tail = trim_ws_end(tail).strip_suffix(b"}")?;
    let tail = trim_ws_end(tail);
    // The value: a string or a number, read backwards.
    let value_start = if tail.ends_with(b"\"") {
        let body = &tail[..tail.len() - 1];
        let open = body.iter().rposition(|&b| b == b'"')?;
        if body[..open].ends_with(b"\\") {
            return None;
        }
        open
    } else {
        tail.iter()
            .rposition(|b| !(b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E')))
            .map_or(0, |p| p + 1)
    };
    let value = &tail[value_start..];
    let before = trim_ws_end(&tail[..value_start]).strip_suffix(b":")?;
    let before = trim_ws_end(before).strip_suffix(b"\"id\"")?;
    let before = trim_ws_end(before);
    if !(before.ends_with(b",") || before.ends_with(b"{")) {
        return None;
    }
    scalar_prefix(value).filter(|v| v.len() == value.len())
}

/// The JSON number or string at the start of `s`, as raw text.
fn scalar_prefix(s: &[u8]) -> Option<String> {
    let end = match s.first()? {
        b'"' => string_end(s, 0)? + 1,
        b'-' | b'0'..=b'9' => s
            .iter()
            .position(|b| !(b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E')))
            .unwrap_or(s.len()),
        _ => return None,
    };
    let text = std::str::from_utf8(&s[..end]).ok()?;
    // Only accept what is valid JSON on its own.
    serde_json::from_str::<serde_json::Value>(text).ok()?;
    Some(text.to_owned())
}

/// Index of the quote closing the string that opens at `start`.
fn string_end(s: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn skip_ws(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &s[n..]
}

fn trim_ws_end(s: &[u8]) -> &[u8] {
    let n = s
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_whitespace())
        .count();
    &s[..s.len() - n]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Owned copy of a frame, for comparisons.
    #[derive(Debug, Clone, PartialEq)]
    enum Out {
        Line(Vec<u8>),
        Oversized(u64, Option<String>),
    }

    fn run(framer: &mut LineFramer, chunks: &[&[u8]], finish: bool) -> Vec<Out> {
        let mut out = Vec::new();
        let mut push = |f: Frame<'_>| {
            out.push(match f {
                Frame::Line(l) => Out::Line(l.to_vec()),
                Frame::Oversized { len, id_hint } => Out::Oversized(len, id_hint),
            })
        };
        for c in chunks {
            framer.feed(c, &mut push);
            assert!(framer.buffered_len() <= framer.limit());
        }
        if finish {
            framer.finish(&mut push);
        }
        out
    }

    fn whole(input: &[u8], limit: usize) -> Vec<Out> {
        run(&mut LineFramer::new(limit), &[input], true)
    }

    fn lines(v: &[&str]) -> Vec<Out> {
        v.iter().map(|l| Out::Line(l.as_bytes().to_vec())).collect()
    }

    #[test]
    fn splits_lines_and_skips_blank_ones() {
        assert_eq!(
            whole(b"a\nbb\n\n\r\nccc\n", 100),
            lines(&["a", "bb", "ccc"])
        );
    }

    #[test]
    fn trailing_cr_is_stripped_even_when_split() {
        let mut f = LineFramer::new(100);
        assert_eq!(
            run(&mut f, &[b"abc\r", b"\n", b"d\r\n"], false),
            lines(&["abc", "d"])
        );
    }

    #[test]
    fn bom_is_skipped_once_even_split() {
        assert_eq!(
            run(
                &mut LineFramer::new(100),
                &[b"\xEF", b"\xBB", b"\xBFx\n"],
                false
            ),
            lines(&["x"])
        );
        // Only at the very start.
        assert_eq!(
            whole(b"x\n\xEF\xBB\xBFy\n", 100),
            vec![
                Out::Line(b"x".to_vec()),
                Out::Line(b"\xEF\xBB\xBFy".to_vec())
            ]
        );
        // A partial match that turns out not to be a BOM keeps its bytes.
        assert_eq!(
            run(&mut LineFramer::new(100), &[b"\xEF\xBB", b"z\n"], false),
            vec![Out::Line(b"\xEF\xBBz".to_vec())]
        );
    }

    #[test]
    fn final_line_without_newline_is_delivered_on_finish() {
        let mut f = LineFramer::new(100);
        assert_eq!(run(&mut f, &[b"a\nlast"], false), lines(&["a"]));
        assert_eq!(f.buffered_len(), 4);
        assert_eq!(run(&mut f, &[], true), lines(&["last"]));
        assert_eq!(f.buffered_len(), 0);
    }

    #[test]
    fn oversized_line_is_discarded_through_its_newline() {
        let mut input = vec![b'x'; 50];
        input.extend_from_slice(b"\nok\n");
        assert_eq!(
            whole(&input, 10),
            vec![Out::Oversized(50, None), Out::Line(b"ok".to_vec())]
        );
        // Arriving in small chunks, the buffer never exceeds the limit.
        let chunks: Vec<&[u8]> = input.chunks(3).collect();
        assert_eq!(
            run(&mut LineFramer::new(10), &chunks, true),
            whole(&input, 10)
        );
    }

    #[test]
    fn a_line_exactly_at_the_limit_passes() {
        assert_eq!(whole(b"0123456789\r\n", 10), lines(&["0123456789"]));
        assert_eq!(whole(b"0123456789x\n", 10), vec![Out::Oversized(11, None)]);
    }

    #[test]
    fn id_hint_from_head_or_tail() {
        let pad = "p".repeat(1000);
        let head = format!(r#"{{"jsonrpc":"2.0","id":17,"result":{{"t":"{pad}"}}}}"#);
        assert_eq!(
            whole(head.as_bytes(), 100)[0],
            Out::Oversized(head.len() as u64, Some("17".into()))
        );
        let tail = format!(r#"{{"result":{{"t":"{pad}"}},"jsonrpc":"2.0","id":"abc"}}"#);
        assert_eq!(
            whole(tail.as_bytes(), 100)[0],
            Out::Oversized(tail.len() as u64, Some("\"abc\"".into()))
        );
        // A nested "id" is not the message's id.
        let nested = format!(r#"{{"result":{{"id":5,"t":"{pad}"}}}}"#);
        assert_eq!(
            whole(nested.as_bytes(), 100)[0],
            Out::Oversized(nested.len() as u64, None)
        );
        let nested_tail = format!(r#"{{"result":{{"t":"{pad}","id":5}}}}"#);
        assert_eq!(
            whole(nested_tail.as_bytes(), 100)[0],
            Out::Oversized(nested_tail.len() as u64, None)
        );
    }

    // Regressions found by the framer fuzz target (their inputs are seeds in fuzz/seeds/framer/).

    #[test]
    fn fuzz_line_at_the_limit_with_its_cr_in_another_chunk() {
        let line = [b'a'; 64];
        let mut f = LineFramer::new(64);
        assert_eq!(
            run(&mut f, &[&line, b"\r", b"\n"], false),
            vec![Out::Line(line.to_vec())]
        );
        let mut f = LineFramer::new(64);
        assert_eq!(
            run(&mut f, &[&line, b"\r"], true),
            vec![Out::Line(line.to_vec())]
        );
        // A CR that is not a line end makes the line too long.
        let mut f = LineFramer::new(64);
        assert_eq!(
            run(&mut f, &[&line, b"\r", b"b\n"], false),
            vec![Out::Oversized(66, None)]
        );
    }

    #[test]
    fn fuzz_line_of_crs_at_the_limit() {
        // 64 CRs of content, then CR LF: with the CR held back, no further CR may be stripped.
        let mut input = vec![b'\r'; 65];
        input.push(b'\n');
        let expected = vec![Out::Line(vec![b'\r'; 64])];
        assert_eq!(whole(&input, 64), expected);
        for size in 1..8 {
            let chunks: Vec<&[u8]> = input.chunks(size).collect();
            assert_eq!(
                run(&mut LineFramer::new(64), &chunks, true),
                expected,
                "chunks of {size}"
            );
        }
        let chunks: Vec<&[u8]> = input[..65].chunks(5).collect();
        assert_eq!(
            run(&mut LineFramer::new(64), &chunks, true),
            expected,
            "at end of stream"
        );
    }

    #[test]
    fn fuzz_id_hint_does_not_depend_on_chunking() {
        let line = format!(
            r#"{{"jsonrpc":"2.0","method":"x","pad":"{}","id":7,"result":{{"t":"{}"}}}}"#,
            "p".repeat(40),
            "p".repeat(300)
        );
        let bytes: Vec<&[u8]> = line.as_bytes().chunks(1).collect();
        let expected = vec![Out::Oversized(line.len() as u64, Some("7".into()))];
        assert_eq!(run(&mut LineFramer::new(64), &bytes, true), expected);
        assert_eq!(whole(line.as_bytes(), 64), expected);
    }

    #[test]
    fn fuzz_oversized_line_ending_in_two_crs() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\r\r\n");
        assert_eq!(whole(&input, 64), vec![Out::Oversized(101, None)]);
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(
            run(&mut LineFramer::new(64), &bytes, true),
            vec![Out::Oversized(101, None)]
        );
    }

    #[test]
    fn fuzz_partial_bom_at_end_of_stream_is_content() {
        assert_eq!(whole(b"\xEF", 64), vec![Out::Line(b"\xEF".to_vec())]);
        assert_eq!(
            whole(b"\xEF\xBB", 64),
            vec![Out::Line(b"\xEF\xBB".to_vec())]
        );
        assert_eq!(whole(b"\xEF\xBB\xBF", 64), vec![]);
    }

    #[test]
    fn chunking_does_not_change_frames() {
        let input: &[u8] = b"\xEF\xBB\xBF{\"a\":1}\r\nnoise\n\n{\"id\":3,\"b\":\"0123456789012345678901234567890123456789\"}\r\n{\"c\":2}";
        let expected = whole(input, 32);
        for split in 0..=input.len() {
            let (a, b) = input.split_at(split);
            assert_eq!(
                run(&mut LineFramer::new(32), &[a, b], true),
                expected,
                "split at {split}"
            );
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(run(&mut LineFramer::new(32), &bytes, true), expected);
    }

    #[test]
    fn framing_is_linear_in_input_size() {
        // A 50 MiB line in 4 KiB chunks: the partial buffer grows by amortised doubling, and no byte
        // is rescanned: the total capacity ever allocated stays within a small multiple of n.
        let chunk = vec![b'a'; 4096];
        let mut f = LineFramer::new(64 * 1024 * 1024);
        let n = 50 * 1024 * 1024 / chunk.len();
        let mut frames = 0;
        for _ in 0..n {
            f.feed(&chunk, |_| frames += 1);
        }
        assert_eq!(f.buffered_len(), 50 * 1024 * 1024);
        f.feed(b"\n", |fr| {
            assert!(matches!(fr, Frame::Line(l) if l.len() == 50 * 1024 * 1024));
            frames += 1;
        });
        assert_eq!(frames, 1);
        assert_eq!(
            f.scanned,
            50 * 1024 * 1024 + 1,
            "every byte scanned exactly once"
        );
    }

    #[test]
    fn a_limit_of_usize_max_neither_panics_nor_drops_split_lines() {
        let line = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        let mut input = line.to_vec();
        input.extend_from_slice(b"\r\n");
        let chunks: Vec<&[u8]> = input.chunks(7).collect();
        let mut framer = LineFramer::new(usize::MAX);
        assert_eq!(framer.limit(), usize::MAX - 1);
        assert_eq!(
            run(&mut framer, &chunks, false),
            vec![Out::Line(line.to_vec())]
        );
    }
}
