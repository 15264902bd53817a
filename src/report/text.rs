//! Text from the input, made safe to show. A log line can carry terminal
//! escapes (window titles, OSC 8 links, cursor moves), CR and BEL, and
//! Markdown (backticks, links, `<img>`): in human output every control
//! character is shown escaped (`\x1b`), and in Markdown text from the log
//! stands only in code spans and fenced blocks that it cannot close.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Control characters (C0, DEL, C1) and the bidirectional overrides that
/// make a terminal show text in another order than it is.
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape_into(out: &mut String, c: char) {
    if (c as u32) < 0x80 {
        let _ = write!(out, "\\x{:02x}", c as u32);
    } else {
        let _ = write!(out, "\\u{{{:x}}}", c as u32);
    }
}

/// One line of text from the input, every control character (newlines
/// and tabs too) escaped.
pub fn clean(s: &str) -> Cow<'_, str> {
    escape_except(s, |_| false)
}

fn escape_except(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_unsafe(c) && !keep(c) {
            escape_into(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The colour codes [`Style`](super::style::Style) writes.
pub const SGR: &[&str] = &[
    "\x1b[0m",
    "\x1b[1m",
    "\x1b[2m",
    "\x1b[1;31m",
    "\x1b[33m",
    "\x1b[32m",
];

/// The last pass over a human or Markdown document before it is written:
/// newlines stay, and with `colour` the codes `Style` writes; any other
/// control character, from whatever renderer let it through, is escaped.
pub fn document(s: &str, colour: bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe(c) && c != '\n') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b' && colour {
            if let Some(code) = SGR.iter().find(|code| rest.starts_with(**code)) {
                out.push_str(code);
                rest = &rest[code.len()..];
                continue;
            }
        }
        if is_unsafe(c) && c != '\n' {
            escape_into(&mut out, c);
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

fn longest_run(s: &str, of: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for c in s.chars() {
        run = if c == of { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

/// `s` as a Markdown code span on one line: controls escaped, delimited by
/// more backticks than any run inside it.
pub fn code(s: &str) -> String {
    let s = clean(s);
    let ticks = "`".repeat(longest_run(&s, '`') + 1);
    // A span that starts or ends with a backtick or space needs a space of
    // padding, which CommonMark strips again.
    let pad = if s.starts_with(['`', ' ']) || s.ends_with(['`', ' ']) || s.is_empty() {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{s}{pad}{ticks}")
}

/// A code span for a Markdown table cell, where even inside code a `|`
/// would end the cell.
pub fn code_cell(s: &str) -> String {
    code(s).replace('|', "\\|")
}

/// A fenced code block around `lines`: each line's controls escaped, and
/// a fence longer than any backtick run in them, so none closes it.
pub fn fenced<S: AsRef<str>>(info: &str, lines: &[S]) -> String {
    let cleaned: Vec<Cow<'_, str>> = lines.iter().map(|l| clean(l.as_ref())).collect();
    let run = cleaned
        .iter()
        .map(|l| longest_run(l, '`'))
        .max()
        .unwrap_or(0);
    let fence = "`".repeat((run + 1).max(3));
    let mut o = format!("{fence}{info}\n");
    for l in &cleaned {
        o.push_str(l);
        o.push('\n');
    }
    o.push_str(&fence);
    o.push('\n');
    o
}

/// Prose written by rules, with the values from the log that were filled
/// into it set as code wherever they stand outside the prose's own code
/// spans.
pub fn prose(s: &str, values: &[String]) -> String {
    let mut vals: Vec<&str> = values
        .iter()
        .map(String::as_str)
        .filter(|v| !v.is_empty())
        .collect();
    // The longest first, so a value that contains another wins.
    vals.sort_by_key(|v| std::cmp::Reverse(v.len()));
    let mut out = String::with_capacity(s.len() + 8);
    let mut in_code = false;
    let mut i = 0;
    'outer: while i < s.len() {
        let rest = &s[i..];
        if rest.starts_with('`') {
            in_code = !in_code;
        } else if !in_code {
            for v in &vals {
                if rest.starts_with(v) {
                    out.push_str(&code(v));
                    i += v.len();
                    continue 'outer;
                }
            }
        }
        let c = rest.chars().next().expect("in bounds");
        out.push(c);
        i += c.len_utf8();
    }
    clean_keeping_newlines(&out)
}

/// A reporter's sentence as Markdown text: controls escaped, and every
/// character that could start markup backslash-escaped.
pub fn escaped(s: &str) -> String {
    let s = clean(s);
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '!' | '&'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn clean_keeping_newlines(s: &str) -> String {
    escape_except(s, |c| c == '\n').into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_escaped() {
        assert_eq!(
            clean("a\x1b]0;t\x07b\r\n\u{9b}\u{202e}"),
            "a\\x1b]0;t\\x07b\\x0d\\x0a\\u{9b}\\u{202e}"
        );
        assert_eq!(
            document("\x1b[1mok\x1b[0m\x1b]8;;x\x1b\\\n", true),
            "\x1b[1mok\x1b[0m\\x1b]8;;x\\x1b\\\n"
        );
        assert_eq!(document("\x1b[1mok", false), "\\x1b[1mok");
    }

    #[test]
    fn code_cannot_be_closed_from_inside() {
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code_cell("a|b"), "`a\\|b`");
        let f = fenced("text", &["```", "x"]);
        assert!(f.starts_with("````text\n```\nx\n````"), "{f}");
        assert_eq!(escaped("**bold** <img>"), "\\*\\*bold\\*\\* \\<img\\>");
        assert_eq!(
            prose("to a.b:80 (`see a.b:80`)", &["a.b:80".into()]),
            "to `a.b:80` (`see a.b:80`)"
        );
    }
}
