//! Text a server sent that is not what JSON text must be, mended so that its message can still
//! be read.
//!
//! > "MCP uses JSON-RPC to encode messages. JSON-RPC messages **MUST** be UTF-8 encoded." — MCP
//! > 2025-11-25, Transports
//!
//! Servers break this in two ways in the wild. A tool hands on bytes in another encoding (a
//! Latin-1 file, a process's output) as if they were UTF-8. And a server whose strings are UTF-16
//! inside (JavaScript, Python, Java) escapes half of a surrogate pair on its own — a string cut in
//! the middle of an emoji becomes `"\ud83d"`. JSON's grammar allows the second, and leaves its
//! meaning open:
//!
//! > "the ABNF in this specification allows member names and string values to contain bit
//! > sequences that cannot encode Unicode characters; for example, "\uDEAD" (a single unpaired
//! > UTF-16 surrogate). … The behavior of software that receives JSON texts containing such
//! > values is unpredictable" — RFC 8259 § 8.2
//!
//! serde_json refuses both. Rather than lose the message (and leave its request waiting for its
//! timeout), the session mends it and reads it again; the model then reads U+FFFD REPLACEMENT
//! CHARACTER where the bad part was, as a browser would show it, and the application is told
//! ([`Warning::Repaired`](crate::Warning::Repaired), counted in
//! [`Stats::repaired`](crate::Stats::repaired)):
//! - an ill-formed UTF-8 sequence becomes one U+FFFD per maximal invalid subpart (what
//!   [`String::from_utf8_lossy`] and the WHATWG UTF-8 decoder do);
//! - inside a string, a `\uD800`–`\uDBFF` escape that no `\uDC00`–`\uDFFF` escape follows, and a
//!   `\uDC00`–`\uDFFF` escape that no `\uD800`–`\uDBFF` one precedes, become `\ufffd`. A correctly
//!   paired escape stays, and so does an escaped backslash followed by `u` (`\\ud800` is the text
//!   `\ud800`, not an escape).
//!
//! Only the failure path pays: the session reads every message strictly, and mends only one that
//! failed. A repair is one pass and one copy, at most three times the text's length (an invalid
//! byte becomes the three bytes of U+FFFD); text that needs none is left alone (`None`).

use std::borrow::Cow;
use std::fmt;

/// What a repair replaced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Damage {
    /// Ill-formed UTF-8 sequences (maximal invalid subparts), each replaced by one U+FFFD.
    pub invalid_utf8: usize,
    /// Lone surrogate escapes, each replaced by `\ufffd`.
    pub lone_surrogates: usize,
}

impl Damage {
    /// Whether nothing was replaced.
    pub fn is_none(&self) -> bool {
        self.invalid_utf8 == 0 && self.lone_surrogates == 0
    }
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        match (self.invalid_utf8, self.lone_surrogates) {
            (0, 0) => f.write_str("nothing"),
            (u, 0) => write!(f, "{u} invalid UTF-8 sequence{}", plural(u)),
            (0, s) => write!(f, "{s} lone surrogate escape{}", plural(s)),
            (u, s) => write!(
                f,
                "{u} invalid UTF-8 sequence{} and {s} lone surrogate escape{}",
                plural(u),
                plural(s)
            ),
        }
    }
}

/// `message` as UTF-8 JSON text with its bad parts replaced (see the [module docs](self)), and
/// what was replaced; `None` when it needs no repair (valid UTF-8 without lone surrogate
/// escapes). The result is valid UTF-8 and holds no lone surrogate escape.
pub fn repair(message: &[u8]) -> Option<(String, Damage)> {
    let mut damage = Damage::default();
    let text = match std::str::from_utf8(message) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => {
            // `String::from_utf8_lossy`, counting: one U+FFFD per maximal invalid subpart.
            let mut out = String::with_capacity(message.len() + 8);
            for chunk in message.utf8_chunks() {
                out.push_str(chunk.valid());
                if !chunk.invalid().is_empty() {
                    out.push(char::REPLACEMENT_CHARACTER);
                    damage.invalid_utf8 += 1;
                }
            }
            Cow::Owned(out)
        }
    };
    match mend_surrogates(&text) {
        Some((mended, n)) => {
            damage.lone_surrogates = n;
            Some((mended, damage))
        }
        None if damage.invalid_utf8 > 0 => Some((text.into_owned(), damage)),
        None => None,
    }
}

/// `text` with each lone surrogate escape inside a JSON string replaced by `\ufffd`, and how many
/// there were; `None` when there is none. Everything else, escapes included, is kept byte for
/// byte (a replacement has the length of what it replaces).
pub fn mend_surrogates(text: &str) -> Option<(String, usize)> {
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    // `text[..copied]` is in `out` already.
    let mut copied = 0;
    let mut count = 0;
    let mut in_string = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                in_string = !in_string;
                i += 1;
            }
            b'\\' if in_string => match b.get(i + 1) {
                Some(b'u') => {
                    let lone = match hex4(b, i + 2) {
                        Some(0xD800..=0xDBFF) => {
                            let low = b.get(i + 6..i + 8) == Some(b"\\u")
                                && matches!(hex4(b, i + 8), Some(0xDC00..=0xDFFF));
                            if low {
                                // A pair: one character, kept as it is.
                                i += 12;
                                continue;
                            }
                            true
                        }
                        // A low surrogate here has no high one before it (a pair was skipped
                        // whole above).
                        Some(0xDC00..=0xDFFF) => true,
                        Some(_) => false,
                        // Not four hex digits: not ours to mend (the parser refuses it).
                        None => {
                            i += 2;
                            continue;
                        }
                    };
                    if lone {
                        let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                        // `i` and `i + 6` are ASCII positions, so char boundaries.
                        o.push_str(&text[copied..i]);
                        o.push_str("\\ufffd");
                        copied = i + 6;
                        count += 1;
                    }
                    i += 6;
                }
                // Any other escape, an escaped quote or backslash among them, is two bytes.
                Some(_) => i += 2,
                None => i += 1,
            },
            _ => i += 1,
        }
    }
    let mut out = out?;
    out.push_str(&text[copied..]);
    Some((out, count))
}

/// The code unit spelled by the four hex digits at `b[at..at + 4]`, if they are four hex digits.
fn hex4(b: &[u8], at: usize) -> Option<u16> {
    let digits = b.get(at..at.checked_add(4)?)?;
    digits.iter().try_fold(0u16, |n, &d| {
        let v = (d as char).to_digit(16)?;
        Some(n << 4 | v as u16)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mended(s: &str) -> Option<String> {
        mend_surrogates(s).map(|(t, _)| t)
    }

    #[test]
    fn invalid_utf8_becomes_one_replacement_per_maximal_subpart() {
        // Latin-1 "café" and "naïve", a truncated three-byte sequence, a stray continuation byte.
        let bytes = b"{\"t\":\"caf\xe9 na\xefve \xe2\x82 \x80\"}";
        let (text, damage) = repair(bytes).unwrap();
        assert_eq!(
            text,
            "{\"t\":\"caf\u{FFFD} na\u{FFFD}ve \u{FFFD} \u{FFFD}\"}"
        );
        assert_eq!(text, String::from_utf8_lossy(bytes));
        assert_eq!(
            damage,
            Damage {
                invalid_utf8: 4,
                lone_surrogates: 0
            }
        );
        assert_eq!(damage.to_string(), "4 invalid UTF-8 sequences");
    }

    #[test]
    fn lone_surrogates_become_replacement_escapes_and_pairs_stay() {
        assert_eq!(mended(r#"["\ud800"]"#).as_deref(), Some(r#"["\ufffd"]"#));
        assert_eq!(mended(r#"["\uDFFF"]"#).as_deref(), Some(r#"["\ufffd"]"#));
        // A high surrogate followed by something else than a low one.
        assert_eq!(
            mended(r#"["a\ud83db", "\ud83d\n", "\ud83d\u0041", "\ud83d\ud83d\ude00"]"#).as_deref(),
            Some(r#"["a\ufffdb", "\ufffd\n", "\ufffd\u0041", "\ufffd\ud83d\ude00"]"#)
        );
        // At the end of a string, and of the text.
        assert_eq!(mended(r#""\ud83d""#).as_deref(), Some(r#""\ufffd""#));
        assert_eq!(mended(r#""\ud83d"#).as_deref(), Some(r#""\ufffd"#));
        // Pairs, ordinary escapes and escaped backslashes are not touched.
        for fine in [
            r#"{"t":"\ud83d\ude00 \u00e9 \\ud800 \\\\ud800 \" \\"}"#,
            r#"{"\\":"\\\ud83d\ude00"}"#,
            r#"{"t":"\u12"}"#,
            "plain text, no JSON at all: \\ud800 outside any string",
        ] {
            assert_eq!(mend_surrogates(fine), None, "{fine}");
        }
        // An escaped backslash then a real lone escape.
        let (text, n) = mend_surrogates(r#"["\\\udc00", "\udc00\ud800"]"#).unwrap();
        assert_eq!(text, r#"["\\\ufffd", "\ufffd\ufffd"]"#);
        assert_eq!(n, 3);
        // The mended text parses, and reads U+FFFD where the lone half was.
        let v: Vec<String> = serde_json::from_str(&text).unwrap();
        assert_eq!(v, ["\\\u{FFFD}", "\u{FFFD}\u{FFFD}"]);
    }

    #[test]
    fn both_kinds_at_once() {
        let (text, damage) = repair(b"{\"t\":\"\xff\\ud800\"}").unwrap();
        assert_eq!(text, "{\"t\":\"\u{FFFD}\\ufffd\"}");
        assert_eq!(
            damage.to_string(),
            "1 invalid UTF-8 sequence and 1 lone surrogate escape"
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["t"], "\u{FFFD}\u{FFFD}");
    }

    #[test]
    fn valid_json_needs_no_repair() {
        for fine in [
            &br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"h\u00e9 \ud83d\ude00"}]}}"#[..],
            "{\"t\":\"caf\u{e9} \u{1F600}\"}".as_bytes(),
            b"",
            b"not json",
        ] {
            assert_eq!(repair(fine), None);
        }
    }

    #[test]
    fn hex4_reads_four_hex_digits_only() {
        assert_eq!(hex4(b"d83D", 0), Some(0xD83D));
        assert_eq!(hex4(b"d83", 0), None);
        assert_eq!(hex4(b"d8 3", 0), None);
        assert_eq!(hex4(b"+123", 0), None);
        assert_eq!(hex4(b"x", usize::MAX), None);
    }
}
