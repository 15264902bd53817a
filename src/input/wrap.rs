//! Wrappers that tools and people put around a producer's line: kubectl's
//! `--timestamps` and `--prefix`, stern's `pod container `, ANSI colour,
//! CRLF, aggregator CSV exports, and the indentation or `> ` quoting of a copy
//! out of GitHub or chat. They are stripped here, before any grammar runs.

use crate::parse::event::Wrapper;
use std::borrow::Cow;
use typed_arena::Arena;

/// Bytes of one physical line to `&str`. Allocates (in `arena`) only when the
/// line is invalid UTF-8, carries ANSI escapes or is a CSV-quoted export.
pub fn normalize<'a>(raw: &'a [u8], arena: &'a Arena<String>) -> &'a str {
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    // Validation is SIMD-fast; the lossy path only runs on broken input.
    let mut s: Cow<'a, str> = match std::str::from_utf8(raw) {
        Ok(v) => Cow::Borrowed(v),
        Err(_) => String::from_utf8_lossy(raw),
    };
    if memchr::memchr(0x1b, s.as_bytes()).is_some() {
        s = Cow::Owned(strip_csi(&s));
    }
    unwrap_text(s, arena)
}

/// `normalize` of a line of a block already known to be UTF-8 without
/// escape bytes (checked once for the block, not per line).
pub fn normalize_clean<'a>(line: &'a str, arena: &'a Arena<String>) -> &'a str {
    unwrap_text(
        Cow::Borrowed(line.strip_suffix('\r').unwrap_or(line)),
        arena,
    )
}

/// The rest of `normalize`, once the line is text: a CSV export's payload,
/// and the line ends a copy may carry.
fn unwrap_text<'a>(mut s: Cow<'a, str>, arena: &'a Arena<String>) -> &'a str {
    if let Some(inner) = csv_payload(&s) {
        s = Cow::Owned(inner);
    }
    let s = match s {
        Cow::Borrowed(b) => b,
        Cow::Owned(o) => arena.alloc(o).as_str(),
    };
    // JSON-string copies keep a literal `\n` at the end.
    let s = s.trim_end_matches(['\r', '\n']);
    let s = s
        .strip_suffix("\\\\n")
        .or_else(|| s.strip_suffix("\\n"))
        .unwrap_or(s);
    s.trim_end()
}

/// Removes CSI sequences (`ESC [ params letter`). The literal text `\x1b`
/// that newer proxies print for an escaped byte is not an escape and stays.
fn strip_csi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\x1b' {
            if it.peek() == Some(&'[') {
                it.next();
                while let Some(&n) = it.peek() {
                    it.next();
                    if n.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Kibana-style CSV export: `"Dec 2, 2020 @ 06:45:47.043","[ 80905.816738s]  INFO …"`.
fn csv_payload(s: &str) -> Option<String> {
    if !s.starts_with('"') {
        return None;
    }
    let sep = s.find("\",\"")?;
    let payload = s[sep + 3..].strip_suffix('"')?;
    if !looks_like_record(payload) {
        return None;
    }
    Some(payload.replace("\"\"", "\""))
}

/// The line with its wrappers removed.
pub struct Unwrapped<'a> {
    pub wrapper: Wrapper<'a>,
    pub rest: &'a str,
    /// The line began with whitespace before any wrapper (a continuation
    /// candidate, or an indented copy).
    pub indented: bool,
}

pub fn unwrap(line: &str) -> Unwrapped<'_> {
    let mut w = Wrapper::default();
    let indented = line.starts_with([' ', '\t']);
    let mut s = line.trim_start();
    // Markdown emphasis around a pasted line: **line** or __line__.
    for mark in ["**", "__"] {
        if let Some(r) = s.strip_prefix(mark) {
            s = r.strip_suffix(mark).unwrap_or(r);
        }
    }
    // Inline code in chat or Markdown: `line`.
    // A span may open on one line and close on a later one, so each end is
    // stripped on its own; a closing backtick counts only when it is unpaired.
    if let Some(r) = s.strip_prefix('`') {
        s = r;
    }
    if s.ends_with('`') && s.matches('`').count() % 2 == 1 {
        s = &s[..s.len() - 1];
    }
    let unquoted = unquote(s);
    if unquoted.len() != s.len() {
        s = unquoted;
        w.kind = Some("quote");
    }
    if let Some((pod, container, r)) = kubectl_prefix(s) {
        w.pod = Some(pod);
        w.container = Some(container);
        w.kind = Some("kubectl-prefix");
        s = r;
    } else if let Some((pod, container, r)) = bracket_prefix(s) {
        w.pod = Some(pod);
        w.container = Some(container);
        w.kind = Some("bracket-prefix");
        s = r;
    } else if let Some((pod, container, r)) = stern_prefix(s) {
        w.pod = pod;
        w.container = Some(container);
        w.kind = Some("stern");
        s = r;
    }
    if let Some((ts, r)) = outer_timestamp(s) {
        w.timestamp = Some(ts);
        s = r;
    }
    Unwrapped {
        wrapper: w,
        rest: s,
        indented,
    }
}

/// The line without its `> ` quote markers, possibly nested, from mail and
/// GitHub replies (and the spaces after them).
pub fn unquote(line: &str) -> &str {
    let mut s = line.trim_start();
    while let Some(r) = s.strip_prefix('>') {
        if r.is_empty() || r.starts_with(' ') {
            s = r.trim_start();
        } else {
            break;
        }
    }
    s
}

/// `[pod/NAME/CONTAINER] `
fn kubectl_prefix(s: &str) -> Option<(&str, &str, &str)> {
    let r = s.strip_prefix("[pod/")?;
    let end = r.find("] ")?;
    let inner = &r[..end];
    let (pod, container) = inner.split_once('/')?;
    if !is_k8s_name(pod) || !is_k8s_name(container) {
        return None;
    }
    Some((pod, container, &r[end + 2..]))
}

/// `[POD CONTAINER] `, as log shippers and older `kubectl --prefix` wrote it.
fn bracket_prefix(s: &str) -> Option<(&str, &str, &str)> {
    let r = s.strip_prefix('[')?;
    let end = r.find("] ")?;
    let (pod, container) = r[..end].split_once(' ')?;
    if !is_k8s_name(pod) || !is_k8s_name(container) {
        return None;
    }
    Some((pod, container, &r[end + 2..]))
}

/// stern's `POD CONTAINER ` (or a bare `CONTAINER `), recognised only when a
/// record follows, so that prose starting with two words is left alone.
fn stern_prefix(s: &str) -> Option<(Option<&str>, &str, &str)> {
    let (t1, r1) = s.split_once(' ')?;
    if !is_k8s_name(t1) {
        return None;
    }
    if let Some((t2, r2)) = r1.split_once(' ') {
        if is_k8s_name(t2) && looks_like_record(r2) {
            return Some((Some(t1), t2, r2));
        }
    }
    if KNOWN_CONTAINERS.contains(&t1) && looks_like_record(r1) {
        return Some((None, t1, r1));
    }
    None
}

const KNOWN_CONTAINERS: &[&str] = &[
    "linkerd-proxy",
    "linkerd-init",
    "linkerd-network-validator",
    "proxy-injector",
    "destination",
    "identity",
    "policy",
    "sp-validator",
    "service-mirror",
    "tap",
    "tap-injector",
    "web",
    "metrics-api",
    "jaeger-injector",
    "cni-plugin",
    "install-cni",
];

/// Containers whose logs lpa reads: the proxy, init and the control plane.
pub fn is_linkerd_container(name: &str) -> bool {
    KNOWN_CONTAINERS.contains(&name) || name.starts_with("linkerd-")
}

fn is_k8s_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && s.as_bytes()[0].is_ascii_alphanumeric()
}

/// An RFC 3339 timestamp followed by one space, when what follows is not a
/// level (then the timestamp belongs to the producer: the policy controller).
fn outer_timestamp(s: &str) -> Option<(&str, &str)> {
    let n = rfc3339_len(s)?;
    let rest = s[n..].strip_prefix(' ')?;
    let first = rest.trim_start().split(' ').next().unwrap_or("");
    if matches!(first, "TRACE" | "DEBUG" | "INFO" | "WARN" | "ERROR") {
        return None;
    }
    Some((&s[..n], rest))
}

/// Length of a leading `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
pub fn rfc3339_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if !(digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && (b[10] == b'T' || b[10] == b' ')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19))
    {
        return None;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    match b.get(i) {
        Some(b'Z') => Some(i + 1),
        Some(b'+') | Some(b'-')
            if b.len() >= i + 6
                && digits(i + 1..i + 3)
                && b[i + 3] == b':'
                && digits(i + 4..i + 6) =>
        {
            Some(i + 6)
        }
        _ => None,
    }
}

/// Does a producer's record start here? Used to accept a wrapper only when a
/// record follows it.
pub fn looks_like_record(s: &str) -> bool {
    let b = s.as_bytes();
    match b.first() {
        Some(b'[') => matches!(b.get(1), Some(b' ' | b'0'..=b'9')) && s.contains("s]"),
        Some(b'{') => b.get(1) == Some(&b'"'),
        Some(b'0'..=b'9') => rfc3339_len(s).is_some() || s.get(4..5) == Some("/"),
        _ => {
            s.starts_with("time=\"")
                || s.starts_with("thread '")
                || s.starts_with("panic: ")
                || ["ERR! [", "WARN [", "INFO [", "DBUG [", "TRCE ["]
                    .iter()
                    .any(|p| s.starts_with(p))
                || ["TRACE ", "DEBUG ", "INFO ", "WARN ", "ERROR "]
                    .iter()
                    .any(|p| s.starts_with(p) && s.contains("ThreadId("))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csi_is_stripped_but_literal_escapes_stay() {
        let a = Arena::new();
        let s = normalize(
            b"\x1b[32mweb-1\x1b[0m \x1b[34mlinkerd-proxy\x1b[0m msg \\x1b[31mred\r",
            &a,
        );
        assert_eq!(s, "web-1 linkerd-proxy msg \\x1b[31mred");
    }

    #[test]
    fn prefixes_in_kubectl_order() {
        let u =
            unwrap("[pod/web-1/linkerd-proxy] 2024-06-13T10:15:02.1234Z [     0.001961s]  INFO x");
        assert_eq!(u.wrapper.pod, Some("web-1"));
        assert_eq!(u.wrapper.container, Some("linkerd-proxy"));
        assert_eq!(u.wrapper.timestamp, Some("2024-06-13T10:15:02.1234Z"));
        assert_eq!(u.rest, "[     0.001961s]  INFO x");
    }

    #[test]
    fn policy_controller_timestamp_is_not_a_wrapper() {
        let u = unwrap("2023-07-26T09:19:35.291752Z  INFO grpc{port=8090}: x: y");
        assert_eq!(u.wrapper.timestamp, None);
    }

    #[test]
    fn prose_is_not_stern() {
        let u = unwrap("the proxy logs [ 1.0s] show");
        assert_eq!(u.wrapper.kind, None);
        let u = unwrap("linkerd-proxy ERR! [589538.085822s] linkerd2_proxy::app::errors x");
        assert_eq!(u.wrapper.container, Some("linkerd-proxy"));
        assert!(u.rest.starts_with("ERR!"));
    }
}
