//! A server's text as a terminal may show it: never its control characters.
//!
//! A server's strings (tool text, error messages, elicitation questions and URLs, log lines,
//! progress messages, stderr lines, its name and its tools' names and descriptions) reach a
//! person's terminal when an application prints them, and the terminal obeys the control
//! characters in them: ESC starts the CSI and OSC sequences that move the cursor, erase or hide
//! lines, set the window title or make a link show one URL and open another (OSC 8), and so do
//! the C1 characters (U+009B is CSI in some terminals). [`shown`] replaces each C0 control
//! character (but a newline and a tab where the text may have lines), DEL and each C1 character
//! (U+0080–U+009F) by a visible escape: `\x1b` for C0 and DEL, `\u{9b}` for C1 — the notation
//! tracing's formatter uses too, so a line shows what the server sent (a U+FFFD would say only
//! that something was there).
//!
//! Clean where the text is printed, not in the data: the model and the application read what
//! the server sent. The driver's own print paths (the default browser-login message, a stdio
//! server's forwarded stderr) and every print path of the `mcp-client` CLI use it.

use std::fmt::{self, Write};

/// How a text is laid out where it is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Lines of their own (tool text, a server's instructions): newlines and tabs are kept (a
    /// CRLF becomes a newline).
    Text,
    /// Part of one line (a name, an error, a log line, a prompt): every run of white space,
    /// newlines and tabs included, becomes one space.
    Line,
}

/// `text` as the terminal may show it: its control characters escaped, its white space laid
/// out as `layout` says.
pub fn shown(text: &str, layout: Layout) -> String {
    let mut out = String::with_capacity(text.len());
    // Writing to a String cannot fail.
    let _ = write!(out, "{}", display(text, layout));
    out
}

/// [`shown`] without the copy: what it returns, written straight to where the text is printed
/// (`write!(out, "{}", display(text, layout))`). The runs of characters that need no escape are
/// written as they are, so printing a 16 MiB tool result takes no second 16 MiB.
pub fn display(text: &str, layout: Layout) -> Shown<'_> {
    Shown { text, layout }
}

/// A text as the terminal may show it, when displayed: see [`display`].
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    text: &'a str,
    layout: Layout,
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.text;
        // `text[run..i]` is written as it is when something else must be written after it.
        let mut run = 0;
        // Whether anything was written yet, and whether a run of white space waits (Line).
        let (mut any, mut blank) = (false, false);
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if self.layout == Layout::Line && c.is_whitespace() {
                any |= i > run;
                f.write_str(&text[run..i])?;
                run = i + c.len_utf8();
                blank = true;
                continue;
            }
            if std::mem::take(&mut blank) && any {
                f.write_char(' ')?;
            }
            match c {
                // A CRLF's CR goes (Text: Line took both as white space).
                '\r' if chars.peek().map(|&(_, next)| next) == Some('\n') => {
                    any |= i > run;
                    f.write_str(&text[run..i])?;
                }
                '\n' | '\t' => continue,
                '\0'..='\x1f' | '\x7f' => {
                    f.write_str(&text[run..i])?;
                    write!(f, "\\x{:02x}", c as u32)?;
                    any = true;
                }
                '\u{80}'..='\u{9f}' => {
                    f.write_str(&text[run..i])?;
                    write!(f, "\\u{{{:x}}}", c as u32)?;
                    any = true;
                }
                _ => continue,
            }
            run = i + c.len_utf8();
        }
        f.write_str(&text[run..])
    }
}

/// [`shown`] as one line.
pub fn line(text: &str) -> String {
    shown(text, Layout::Line)
}

/// A text of several lines and paragraphs (a tool's description) laid out after something on
/// its first line (a tool's name): its first line, then each further line after `indent`, so
/// that the text reads as one block under its first line. Control characters are escaped as
/// [`shown`] does; leading and trailing blank lines and each line's trailing white space are
/// dropped, a run of blank lines is kept as one empty line (without the indent), the
/// indentation the further lines share is removed (a docstring's, as Python's
/// `inspect.cleandoc` does) and what one has beyond it is kept (a nested list), a tab in that
/// indentation counted as four spaces and one within a line written as a space. No line is
/// wrapped or cut.
pub fn block(text: &str, indent: &str) -> String {
    /// A line's leading blanks, in columns (a tab is four), and the rest.
    fn leading(line: &str) -> (usize, &str) {
        let rest = line.trim_start_matches([' ', '\t']);
        let columns = line[..line.len() - rest.len()]
            .chars()
            .map(|c| if c == '\t' { 4 } else { 1 })
            .sum();
        (columns, rest)
    }
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).trim_end())
        .collect();
    let Some(first) = lines.iter().position(|l| !l.is_empty()) else {
        return String::new();
    };
    let last = lines.iter().rposition(|l| !l.is_empty()).unwrap_or(first);
    let lines = &lines[first..=last];
    let shared = lines[1..]
        .iter()
        .filter(|l| !l.is_empty())
        .map(|l| leading(l).0)
        .min()
        .unwrap_or(0);
    let mut out = String::with_capacity(text.len() + 16);
    let write = |out: &mut String, line: &str| {
        let _ = write!(out, "{}", display(&line.replace('\t', " "), Layout::Text));
    };
    write(&mut out, leading(lines[0]).1);
    let mut blank = false;
    for line in &lines[1..] {
        if line.is_empty() {
            blank = true;
            continue;
        }
        if std::mem::take(&mut blank) {
            out.push('\n');
        }
        let (columns, rest) = leading(line);
        out.push('\n');
        out.push_str(indent);
        out.extend(std::iter::repeat_n(' ', columns - shared));
        write(&mut out, rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-character rule `display` implements with runs, as `shown` was first written.
    fn one_by_one(text: &str, layout: Layout) -> String {
        let mut out = String::new();
        let mut chars = text.chars().peekable();
        let mut blank = false;
        while let Some(c) = chars.next() {
            if layout == Layout::Line && c.is_whitespace() {
                blank = true;
                continue;
            }
            if std::mem::take(&mut blank) && !out.is_empty() {
                out.push(' ');
            }
            match c {
                '\n' | '\t' => out.push(c),
                '\r' if chars.peek() == Some(&'\n') => {}
                '\0'..='\x1f' | '\x7f' => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                '\u{80}'..='\u{9f}' => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
                c => out.push(c),
            }
        }
        out
    }

    #[test]
    fn runs_are_written_as_the_characters_one_by_one() {
        // Every string of up to three of these pieces, in both layouts.
        let pieces = [
            "a", "é", " ", "  ", "\t", "\n", "\r", "\r\n", "\x1b", "\x7f", "\u{9b}", "\u{85}",
            "\u{a0}", "🦀", "\0", "bc",
        ];
        let mut texts = vec![String::new()];
        for _ in 0..3 {
            let longer: Vec<String> = texts
                .iter()
                .flat_map(|t| pieces.iter().map(move |p| format!("{t}{p}")))
                .collect();
            texts.extend(longer);
        }
        for text in &texts {
            for layout in [Layout::Text, Layout::Line] {
                assert_eq!(
                    shown(text, layout),
                    one_by_one(text, layout),
                    "{text:?} {layout:?}"
                );
            }
        }
    }

    #[test]
    fn control_characters_are_escaped_and_white_space_laid_out() {
        let hostile = "a\x1b]8;;https://evil\x07b\x1b[2K\u{9b}31m\x7f\0c";
        let want = r"a\x1b]8;;https://evil\x07b\x1b[2K\u{9b}31m\x7f\x00c";
        assert_eq!(shown(hostile, Layout::Text), want);
        assert_eq!(line(hostile), want);
        assert_eq!(
            shown("one\r\ntwo\tthree\rfour\n", Layout::Text),
            "one\ntwo\tthree\\x0dfour\n"
        );
        assert_eq!(line("  one\r\n two\t\u{85}three \n"), "one two three");
        assert_eq!(line("ünï 🦀"), "ünï 🦀");
    }

    #[test]
    fn a_block_reads_under_its_first_line() {
        // One line: as it is.
        assert_eq!(
            block("Echoes its text back.", "> "),
            "Echoes its text back."
        );
        assert_eq!(block("", "> "), "");
        assert_eq!(block(" \n\t\n", "> "), "");
        // A docstring: blank lines around it gone, shared indentation gone, a nested list's kept,
        // blank lines kept as one, empty (no indent), CRLF as LF, trailing blanks dropped.
        let doc = "\n    Reads a file.  \r\n\n\n\n    Args:\n        path: where\n\t  - tabbed\n\n";
        assert_eq!(
            block(doc, "> "),
            "Reads a file.\n\n> Args:\n>     path: where\n>   - tabbed"
        );
        // Control characters escaped (a lone CR too), a tab in a line is a space, a long line
        // is not cut.
        let long = "x".repeat(500);
        assert_eq!(
            block(&format!("a\x1b]0;T\x07\tb\n\u{9b}c\rd\n{long}"), "  "),
            format!("a\\x1b]0;T\\x07 b\n  \\u{{9b}}c\\x0dd\n  {long}")
        );
        // Nothing left that a terminal obeys.
        let shown = block("\x1b[2J\n\x1b[H\u{85}\x7f", "\t");
        assert!(
            !shown
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{shown:?}"
        );
    }
}
