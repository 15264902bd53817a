//! Records that do not start the line: a log head found after other text
//! (a shell prompt, `Message:` of `kubectl describe`, an export's own
//! timestamp, Markdown, a version label), and heads whose leading tokens were
//! lost in the copy (the line starts inside the span stack or at the target).
//!
//! Runs only on lines no grammar read from their first byte, so the common
//! path never pays for it.

use super::event::Event;
use super::{json, other, plain};
use crate::input::wrap::rfc3339_len;
use memchr::memmem;
use std::sync::LazyLock;

/// Lines shorter than this hold no record after other text.
const MIN_LEN: usize = 8;

/// Searchers built once: building one per line and needle cost more than
/// the searches (most lines here match none).
static NEEDLES: LazyLock<[memmem::Finder<'static>; 11]> = LazyLock::new(|| {
    [
        &b"{\""[..],
        b"time=\"",
        b"level=",
        b"msg=\"",
        b"ERR! ",
        b"WARN ",
        b"INFO ",
        b"DBUG ",
        b"TRCE ",
        b"ThreadId(",
        b"linkerd",
    ]
    .map(memmem::Finder::new)
});

/// Candidate heads looked at per line, leftmost first.
const MAX_CANDIDATES: usize = 24;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Uptime,
    Json,
    Logrus,
    Rfc3339,
    Legacy,
    GoLog,
    ThreadId,
    Target,
}

/// Finds the leftmost place after the line's start where a record begins
/// and parses it into `ev`; returns where it begins.
pub fn find<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<usize> {
    // Shorter than any head with something before it.
    if s.len() < MIN_LEN {
        return None;
    }
    let mut cands: Vec<(usize, Kind)> = Vec::new();
    collect(s, &mut cands);
    cands.sort_unstable();
    cands.dedup();
    for &(p, kind) in cands.iter().take(MAX_CANDIDATES) {
        let rest = &s[p..];
        let ok = match kind {
            Kind::Uptime => plain::proxy_plain(rest, ev).map(drop),
            Kind::Json => json::parse(rest, ev),
            Kind::Logrus => other::logrus(rest, ev),
            Kind::Rfc3339 => plain::policy_controller(rest, ev),
            Kind::Legacy => plain::proxy_legacy(rest, ev),
            Kind::GoLog => other::go_log(rest, ev),
            Kind::ThreadId | Kind::Target => plain::lenient(rest, ev),
        };
        if ok.is_some() {
            return Some(p);
        }
    }
    None
}

fn at_word_start(s: &str, p: usize) -> bool {
    p == 0 || !s.as_bytes()[p - 1].is_ascii_alphanumeric()
}

fn collect(s: &str, out: &mut Vec<(usize, Kind)>) {
    let b = s.as_bytes();
    for p in memchr::memchr_iter(b'[', b).filter(|&p| p > 0) {
        if plain::uptime(&s[p..]).is_some() {
            out.push((p, Kind::Uptime));
        }
    }
    let n = &*NEEDLES;
    for p in n[0].find_iter(b).filter(|&p| p > 0) {
        out.push((p, Kind::Json));
    }
    for needle in &n[1..4] {
        for p in needle.find_iter(b).filter(|&p| p > 0 && b[p - 1] == b' ') {
            out.push((p, Kind::Logrus));
        }
    }
    for needle in &n[4..9] {
        for p in needle.find_iter(b).filter(|&p| p > 0 && b[p - 1] == b' ') {
            out.push((p, Kind::Legacy));
        }
    }
    for p in n[9].find_iter(b) {
        // From the level word before it, when there is one.
        let before = s[..p].trim_end();
        let start = before.rfind(' ').map_or(0, |i| i + 1);
        let lvl = &before[start..];
        let q = if matches!(lvl, "TRACE" | "DEBUG" | "INFO" | "WARN" | "ERROR") {
            start
        } else {
            p
        };
        if q > 0 {
            out.push((q, Kind::ThreadId));
        }
    }
    // Dates: a kubert line (`2023-07-26T09:19:35.291752Z  INFO …`) or a
    // Go `log` line (`2019/06/18 14:07:11 …`).
    for p in memchr::memchr_iter(b'2', b).filter(|&p| p > 0 && at_word_start(s, p)) {
        let r = &b[p..];
        if r.len() > 20 && r[4] == b'-' && rfc3339_len(&s[p..]).is_some() {
            out.push((p, Kind::Rfc3339));
        } else if r.len() > 20 && r[4] == b'/' && r[7] == b'/' {
            out.push((p, Kind::GoLog));
        }
    }
    target_anchors(s, out);
}

/// A Linkerd target path followed by `: ` anchors a line whose head was
/// lost; the record starts where the span stack before it starts (brackets
/// balanced, so spaces inside span fields do not end it).
fn target_anchors(s: &str, out: &mut Vec<(usize, Kind)>) {
    let b = s.as_bytes();
    for p in NEEDLES[10].find_iter(b).filter(|&p| at_word_start(s, p)) {
        let end = p + b[p..]
            .iter()
            .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_' || *c == b':'))
            .unwrap_or(b.len() - p);
        let path = &s[p..end];
        let path = path.strip_suffix(':').unwrap_or(path);
        if !path.contains("::") && !path.contains('_') {
            continue;
        }
        if !s[p + path.len()..].starts_with(": ") {
            continue;
        }
        let start = span_stack_start(b, p);
        if start > 0 {
            out.push((start, Kind::Target));
        }
    }
}

/// Walks back from a target at `t` over `SPANS: ` to where the span stack
/// begins: the first space at bracket depth 0. When the line starts inside
/// a span's brackets (its first token was cut), the record starts at the
/// target.
fn span_stack_start(b: &[u8], t: usize) -> usize {
    if t < 2 || &b[t - 2..t] != b": " {
        return t;
    }
    let mut depth = 0i32;
    let mut i = t - 2;
    while i > 0 {
        let c = b[i - 1];
        match c {
            b'}' | b')' => depth += 1,
            b'{' | b'(' => {
                depth -= 1;
                if depth < 0 {
                    return t;
                }
            }
            b' ' if depth == 0 => return i,
            _ => {}
        }
        i -= 1;
    }
    if depth == 0 {
        0
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use crate::parse::parse_line;

    #[test]
    fn heads_after_leading_text() {
        for (line, lead, target) in [
            (
                "Mar 3, 2022 @ 14:02:11.019[  8812.004211s]  WARN ThreadId(01) linkerd_reconnect: Failed to connect error=connect timed out after 1s",
                "Mar 3, 2022 @ 14:02:11.019",
                "linkerd_reconnect",
            ),
            (
                "Message:     readId(01) inbound:accept{peer.addr=10.2.1.4:57400 target.addr=10.2.1.9:8080}: linkerd_app_core::serve: Connection closed error=server: Connection reset by peer (os error 104)",
                "Message:     readId(01)",
                "linkerd_app_core::serve",
            ),
            (
                "stable-2.14.1: [     0.003s] ERROR ThreadId(01) linkerd_app::env: Could not read LINKERD2_PROXY_IDENTITY_TOKEN_FILE",
                "stable-2.14.1:",
                "linkerd_app::env",
            ),
        ] {
            let ev = parse_line(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(ev.wrapper.lead, Some(lead), "{line}");
            assert_eq!(ev.target(), target, "{line}");
        }
    }

    #[test]
    fn prose_stays_prose() {
        for line in [
            "We run linkerd 2.14 and see [errors] every day",
            "the proxy says level= something",
            "see linkerd_app_core for details",
        ] {
            assert!(parse_line(line).is_none(), "{line}");
        }
    }
}
