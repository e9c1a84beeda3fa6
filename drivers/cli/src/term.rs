//! What the CLI writes of a server's text: never its control characters.
//!
//! A server's strings (tool text, error messages, elicitation questions and URLs, log lines,
//! progress messages, stderr lines, its name and its tools' names and descriptions) reach the
//! person's terminal, which obeys the control characters in them: ESC starts the CSI and OSC
//! sequences that move the cursor, erase or hide lines, set the window title or make a link
//! show one URL and open another (OSC 8), and so do the C1 characters (U+009B is CSI in some
//! terminals). So every print path of the CLI passes server text through [`shown`] (the core's
//! `mcp_proto::terminal`, which the driver's own print paths use too), which
//! replaces each C0 control character (but a newline and a tab where the text may have lines),
//! DEL and each C1 character (U+0080–U+009F) by a visible escape: `\x1b` for C0 and DEL,
//! `\u{9b}` for C1 — the notation tracing's formatter uses too, so a line shows what the server
//! sent (a U+FFFD would say only that something was there). The library's data stays as the
//! server sent it; `--json` is JSON, whose strings are escaped ([`json`]).
//!
//! The text is cleaned also when stdout is not a terminal: output kept in a file or piped
//! through a pager is shown on a terminal in the end; `--json` is the faithful form.

use std::fmt::Write;

pub use mcp_connect::proto::terminal::{block, display, line, shown, Layout};

/// JSON text as the CLI prints it: one line, with no control character anywhere. serde_json
/// escapes C0 in strings (and a parsed document has none raw in its strings), but not DEL nor
/// the C1 characters, which are written as `\u007f`, `\u009b`…; raw white space between tokens
/// (a server's raw tool object keeps its own) becomes a space. The value is the same JSON.
pub fn json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            // Outside strings only: inside one, serde_json escaped them or refused the document.
            '\n' | '\r' | '\t' => out.push(' '),
            '\x7f' | '\u{80}'..='\u{9f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_stays_json_without_control_characters() {
        let value = serde_json::json!({"t": "\x1b[31m\u{9b}\x7f\n", "k": 1});
        let text = json(&serde_json::to_string_pretty(&value).unwrap());
        assert!(!text.chars().any(char::is_control), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }
}
