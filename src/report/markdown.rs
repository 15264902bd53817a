//! CommonMark that stays what it means whatever the text holds: text from a
//! log goes into code spans and blocks whose fences are longer than any
//! run of backticks inside, and control characters are shown escaped.

use std::borrow::Cow;

/// Control characters (C0 but tab, DEL, C1) as `\xNN`, so that text from
/// a log can neither drive a terminal nor break a document.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| is_control(c) && c != '\t' && c != '\n') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_control(c) && c != '\t' && c != '\n' {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn is_control(c: char) -> bool {
    c.is_control()
}

fn longest_run(s: &str, ch: char) -> usize {
    let mut best = 0;
    let mut cur = 0;
    for c in s.chars() {
        if c == ch {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

/// `s` as one inline code span (line breaks become spaces).
pub fn code(s: &str) -> String {
    let s = escape_controls(s).replace(['\n', '\r'], " ");
    if s.is_empty() {
        return String::new();
    }
    let fence = "`".repeat(longest_run(&s, '`') + 1);
    // A span that starts or ends with a backtick or a space needs one space
    // of padding on each side (CommonMark strips exactly one).
    let pad = s.starts_with(['`', ' ']) || s.ends_with(['`', ' ']);
    if pad {
        format!("{fence} {s} {fence}")
    } else {
        format!("{fence}{s}{fence}")
    }
}

/// Lines as a fenced code block (with `info` as its language).
pub fn block<'a>(lines: impl IntoIterator<Item = &'a str>, info: &str) -> String {
    let body: Vec<String> = lines
        .into_iter()
        .map(|l| escape_controls(l).into_owned())
        .collect();
    let longest = body.iter().map(|l| longest_run(l, '`')).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let mut out = format!("{fence}{info}\n");
    for l in body {
        out.push_str(&l);
        out.push('\n');
    }
    out.push_str(&fence);
    out.push('\n');
    out
}

/// Prose from the input (a reporter's sentence): control characters
/// escaped, and the characters that would start markup escaped.
pub fn text(s: &str) -> String {
    let s = escape_controls(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '!'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_and_blocks_hold_any_text() {
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x`"), "`` `x` ``");
        assert_eq!(code("esc\x1b[31m"), "`esc\\x1b[31m`");
        let b = block(["```", "x"], "text");
        assert!(b.starts_with("````text\n"), "{b}");
        assert!(b.ends_with("\n````\n"));
        assert_eq!(text("**bold** <img>"), "\\*\\*bold\\*\\* \\<img\\>");
    }
}
