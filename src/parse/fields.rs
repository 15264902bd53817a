//! The tracing `DefaultVisitor` layout shared by event bodies and span
//! fields: `message key=value key="quoted" key=Debug { … } key=[a, b]`.
//!
//! Display values are not delimited, so a value ends at the next ` key=` at
//! bracket depth 0 (research/log-format.md §1.4, §1.7).

use super::event::{Fields, Str};
use memchr::memchr_iter;
use std::borrow::Cow;

/// Length of `key` if `s` starts with `key=`; keys are dotted identifiers
/// (`client.addr`, `error.sources`, `r#type` printed as `type`).
#[inline]
pub fn key_len(s: &[u8]) -> Option<usize> {
    let first = *s.first()?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            b'=' => return Some(i),
            b'.' => {
                if !s
                    .get(i + 1)
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
                {
                    return None;
                }
            }
            c if c.is_ascii_alphanumeric() || c == b'_' => {}
            _ => return None,
        }
        i += 1;
    }
    None
}

/// Is `at` (the index of a space) the start of a field boundary ` key=`?
#[inline]
fn is_boundary(b: &[u8], at: usize) -> bool {
    b[at] == b' ' && key_len(&b[at + 1..]).is_some()
}

/// First field boundary at or after `from`, ignoring bracket depth.
fn next_boundary(b: &[u8], from: usize) -> Option<usize> {
    memchr_iter(b' ', &b[from..])
        .map(|i| i + from)
        .find(|&i| is_boundary(b, i))
}

/// End of a `"…"` string starting at `start` (index just past the closing
/// quote), honouring backslash escapes.
fn quoted_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// End of a value that may hold balanced `()[]{}` and quoted strings: the
/// first boundary at depth 0. `None` when the brackets never balance.
/// Bytes that matter while a value is scanned for its end.
static VALUE: [bool; 256] = super::plain::byte_table(b"([{)]}\" ");

fn balanced_end(b: &[u8], start: usize) -> Option<usize> {
    let mut depth: i32 = 0;
    let mut i = start;
    loop {
        while i < b.len() && !VALUE[b[i] as usize] {
            i += 1;
        }
        let Some(&c) = b.get(i) else {
            return (depth == 0).then_some(b.len());
        };
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            }
            b'"' if depth > 0 => {
                i = quoted_end(b, i)?;
                continue;
            }
            b' ' if depth == 0 && is_boundary(b, i) => return Some(i),
            _ => {}
        }
        i += 1;
    }
}

/// The end of the value of `key` that starts at `start`.
/// `unbalanced` is set once a value's brackets never close: later values of
/// the same body then end at the next boundary, so a line of many open
/// brackets costs linear, not quadratic, time.
fn value_end(b: &[u8], start: usize, key: &[u8], unbalanced: &mut bool) -> usize {
    let at_boundary_or_end = |e: usize| e == b.len() || is_boundary(b, e);
    match b.get(start) {
        Some(b'"') => {
            if let Some(e) = quoted_end(b, start).filter(|&e| at_boundary_or_end(e)) {
                return e;
            }
        }
        Some(b'[') if key == b"error.sources" => {
            // Entries contain `[::1]` and `, `: the list ends at the `]` that
            // is followed by the end of the line or the next field.
            if let Some(e) = memchr_iter(b']', &b[start..])
                .map(|i| start + i + 1)
                .find(|&e| at_boundary_or_end(e))
            {
                return e;
            }
            return b.len();
        }
        _ => {}
    }
    let balanced = if *unbalanced {
        None
    } else {
        balanced_end(b, start)
    };
    *unbalanced |= balanced.is_none();
    balanced
        .or_else(|| next_boundary(b, start))
        .unwrap_or(b.len())
}

/// Rust Debug string unescape (`\"`, `\\`, `\n`, `\t`, `\r`, `\u{…}`).
fn unquote(v: &str) -> Str<'_> {
    let inner = &v[1..v.len() - 1];
    if !inner.contains('\\') {
        return Cow::Borrowed(inner);
    }
    let mut out = String::with_capacity(inner.len());
    let mut it = inner.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('u') => {
                let hex: String = it
                    .by_ref()
                    .skip_while(|c| *c == '{')
                    .take_while(|c| *c != '}')
                    .collect();
                if let Some(ch) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    out.push(ch);
                }
            }
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    Cow::Owned(out)
}

fn value_str(v: &str) -> Str<'_> {
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        unquote(v)
    } else {
        Cow::Borrowed(v)
    }
}

/// Splits `body` into an optional leading message and `key=value` fields,
/// appended to `out`. Returns the message.
pub fn split_body<'a, const N: usize>(
    body: &'a str,
    out: &mut smallvec::SmallVec<[(Str<'a>, Str<'a>); N]>,
    allow_message: bool,
) -> Option<&'a str>
where
    [(Str<'a>, Str<'a>); N]: smallvec::Array<Item = (Str<'a>, Str<'a>)>,
{
    split_body_cut(body, out, allow_message).0
}

/// `split_body`, also telling whether a value's brackets never closed: the
/// body was cut (a hard-wrapped copy).
fn split_body_cut<'a, const N: usize>(
    body: &'a str,
    out: &mut smallvec::SmallVec<[(Str<'a>, Str<'a>); N]>,
    allow_message: bool,
) -> (Option<&'a str>, bool)
where
    [(Str<'a>, Str<'a>); N]: smallvec::Array<Item = (Str<'a>, Str<'a>)>,
{
    let b = body.as_bytes();
    if b.is_empty() {
        return (None, false);
    }
    let mut message = None;
    let mut i = 0;
    if key_len(b).is_none() {
        if !allow_message {
            // Span fields never hold a message; keep the text as one value.
            out.push((Cow::Borrowed(""), Cow::Borrowed(body)));
            return (None, false);
        }
        let end = next_boundary(b, 0).unwrap_or(b.len());
        message = Some(&body[..end]);
        i = end + 1;
    } else if allow_message && b.get(key_len(b).unwrap() + 1) == Some(&b'"') {
        // `VAR="x" is not valid: …`: a quoted value not followed by a field
        // boundary means the text is a message, not a field.
        let start = key_len(b).unwrap() + 1;
        match quoted_end(b, start) {
            Some(e) if e == b.len() || is_boundary(b, e) => {}
            _ => return (Some(body), false),
        }
    }
    let mark = out.len();
    let mut unbalanced = false;
    while i < b.len() {
        let Some(k) = key_len(&b[i..]) else {
            // Text between fields (an explicit `message` field placed after
            // others): keep it as the message rather than lose it.
            let end = next_boundary(b, i).unwrap_or(b.len());
            if message.is_none() && allow_message {
                message = Some(&body[i..end]);
            }
            i = end + 1;
            continue;
        };
        let key = &body[i..i + k];
        let start = i + k + 1;
        let end = value_end(b, start, key.as_bytes(), &mut unbalanced);
        out.push((Cow::Borrowed(key), value_str(&body[start..end])));
        i = end + 1;
    }
    debug_assert!(out.len() >= mark);
    (message, unbalanced)
}

/// Splits a `Fields` list value such as `[a, b, c]` on top-level `, `.
pub fn split_list(v: &str) -> Vec<&str> {
    let inner = v.strip_prefix('[').unwrap_or(v);
    let inner = inner.strip_suffix(']').unwrap_or(inner);
    let b = inner.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b',' if depth <= 0 && b.get(i + 1) == Some(&b' ') => {
                out.push(&inner[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < inner.len() {
        out.push(&inner[start..]);
    }
    out
}

/// The message and fields of an event body; `true` when the body was cut.
pub fn push_fields<'a>(body: &'a str, out: &mut Fields<'a>) -> (Option<&'a str>, bool) {
    split_body_cut(body, out, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use smallvec::SmallVec;

    fn split(body: &str) -> (Option<&str>, Vec<(String, String)>) {
        let mut f: Fields = SmallVec::new();
        let (m, _) = push_fields(body, &mut f);
        (
            m,
            f.into_iter()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    #[test]
    fn message_then_display_value_with_colons() {
        let (m, f) = split("Failed to resolve control-plane component error=no record found for name: x. type: SRV class: IN");
        assert_eq!(m, Some("Failed to resolve control-plane component"));
        assert_eq!(f[0].1, "no record found for name: x. type: SRV class: IN");
    }

    #[test]
    fn error_sources_list_ends_at_the_right_bracket() {
        let (_, f) = split("HTTP/2.0 request failed error=a [::1]:80: b error.sources=[x [::1]:80, y] path=\"/missing\"");
        assert_eq!(f[0], ("error".into(), "a [::1]:80: b".into()));
        assert_eq!(f[1], ("error.sources".into(), "[x [::1]:80, y]".into()));
        assert_eq!(f[2], ("path".into(), "/missing".into()));
        assert_eq!(split_list(&f[1].1), vec!["x [::1]:80", "y"]);
    }

    #[test]
    fn debug_composites_and_empty_values() {
        let (m, f) = split("Request denied server.group= server.kind=default client.tls=None(NoClientHello) policy=ServerPolicy { a: [B { c: \"d e\" }] } client.ip=10.0.0.1");
        assert_eq!(m, Some("Request denied"));
        assert_eq!(f[0], ("server.group".into(), "".into()));
        assert_eq!(f[2].1, "None(NoClientHello)");
        assert_eq!(f[3].1, "ServerPolicy { a: [B { c: \"d e\" }] }");
        assert_eq!(f[4].1, "10.0.0.1");
    }

    #[test]
    fn quoted_key_value_that_is_really_a_message() {
        let (m, f) = split("LINKERD2_PROXY_INBOUND_PORTS=\"80,abc\" is not valid: ParseIntError { kind: InvalidDigit }");
        assert_eq!(m, Some("LINKERD2_PROXY_INBOUND_PORTS=\"80,abc\" is not valid: ParseIntError { kind: InvalidDigit }"));
        assert!(f.is_empty());
    }

    #[test]
    fn escaped_quotes() {
        let (m, f) = split("Request denied path=\"/api/\\\"weird\\\"\\\\x\" method=\"GET\"");
        assert_eq!(m, Some("Request denied"));
        assert_eq!(f[0].1, "/api/\"weird\"\\x");
        assert_eq!(f[1].1, "GET");
    }

    #[test]
    fn unbalanced_truncated_value_falls_back() {
        let (_, f) = split("Failed to connect error=endpoint 127.0.0.1:8090: Connection refused (os error 111) error.sources=[Con");
        assert_eq!(
            f[0].1,
            "endpoint 127.0.0.1:8090: Connection refused (os error 111)"
        );
        assert_eq!(f[1].1, "[Con");
    }
}
