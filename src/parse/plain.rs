//! The tracing `Full` text layout: the proxy's plain format, the policy
//! controller's, and lenient forms of both as they survive a copy-paste.
//!
//! `[UPTIME] LEVEL [ThreadId(NN)] [span{f}:span:…: ]target: body`

use super::event::{Event, Level, Producer, Span};
use super::fields::{push_fields, split_body};
use memchr::memchr;
use smallvec::SmallVec;
use std::borrow::Cow;

/// `[   12.345678s]` → the digits before and after the point, and the rest
/// after `]`: the bracket's shape alone, without reading the number.
pub(crate) fn uptime_parts(s: &str) -> Option<(&str, &str, &str)> {
    let b = s.as_bytes();
    if b.first() != Some(&b'[') {
        return None;
    }
    let close = memchr(b']', b)?;
    let inner = s[1..close].trim_start().strip_suffix('s')?;
    let (secs, frac) = inner.split_once('.')?;
    if secs.is_empty()
        || frac.is_empty()
        || frac.len() > 9
        || !secs.bytes().all(|c| c.is_ascii_digit())
        || !frac.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    Some((secs, frac, &s[close + 1..]))
}

/// `[   12.345678s]` → seconds, the rest after `]`, and the fraction's digit
/// count (more than 6 digits: integer nanoseconds, proxies ≤ v2.115).
pub fn uptime(s: &str) -> Option<(f64, usize, &str)> {
    let (secs, frac, rest) = uptime_parts(s)?;
    Some((seconds(secs, frac)?, frac.len(), rest))
}

/// The seconds an uptime's digits (before and after the point) stand for.
pub(crate) fn seconds(secs: &str, frac: &str) -> Option<f64> {
    let secs = whole(secs)?;
    let frac_v = whole(frac)?;
    // Powers of ten up to 1e6 are exact: what `10f64.powi` gives.
    const SCALE: [f64; 7] = [1.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6];
    let scale = SCALE.get(frac.len()).copied().unwrap_or(1e9);
    Some(secs + frac_v / scale)
}

/// A number of digits as `f64` parses it: up to 15 digits, exactly, as an
/// integer (each is below 2^53), which is several times quicker than
/// `f64`'s parser, asked for every line's uptime.
fn whole(digits: &str) -> Option<f64> {
    if digits.len() <= 15 && !digits.is_empty() {
        // One pass: a byte that is not a digit sends the text to the parser.
        let mut n = 0u64;
        for b in digits.bytes() {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                return digits.parse().ok();
            }
            n = n * 10 + u64::from(d);
        }
        return Some(n as f64);
    }
    digits.parse().ok()
}

/// The proxy's uptime from its bracket's seconds: before v2.116 the
/// fraction is integer nanoseconds printed `{:06}`, so six digits mean
/// nanoseconds too when the line has no thread id (v2.91).
pub(crate) fn proxy_uptime(up: f64, frac_digits: usize, thread: bool) -> f64 {
    if frac_digits == 6 && !thread {
        up.trunc() + (up.fract() * 1e6).round() / 1e9
    } else {
        up
    }
}

pub(crate) fn level_word(s: &str) -> Option<(Level, &str)> {
    let s = s.trim_start_matches(' ');
    let end = s.find(' ').unwrap_or(s.len());
    let lvl = match &s[..end] {
        "TRACE" => Level::Trace,
        "DEBUG" => Level::Debug,
        "INFO" => Level::Info,
        "WARN" => Level::Warn,
        "ERROR" => Level::Error,
        _ => return None,
    };
    Some((lvl, s[end..].trim_start_matches(' ')))
}

pub(crate) fn thread_id(s: &str) -> Option<(&str, &str)> {
    let r = s.strip_prefix("ThreadId(")?;
    let close = r.find(')')?;
    let id = &r[..close];
    if id.is_empty() || !id.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((id, r[close + 1..].trim_start_matches(' ')))
}

/// Proxy plain format, strict head: `[uptime] LEVEL …`.
/// Returns, as [`tracing_tail`], the head whose crate root decided the
/// split.
pub fn proxy_plain<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<Option<&'a str>> {
    let (up, frac_digits, rest) = uptime(s)?;
    let (level, rest) = level_word(rest)?;
    ev.reset(Producer::ProxyPlain, s);
    ev.level = Some(level);
    let rest = match thread_id(rest) {
        Some((t, r)) => {
            ev.thread = Some(Cow::Borrowed(t));
            r
        }
        None => rest,
    };
    ev.uptime = Some(proxy_uptime(up, frac_digits, ev.thread.is_some()));
    tracing_tail(rest, ev, false)
}

/// The policy controller: RFC 3339 (its own clock), then the same layout
/// without thread ids.
pub fn policy_controller<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let n = crate::input::wrap::rfc3339_len(s)?;
    let (level, rest) = level_word(&s[n..])?;
    ev.reset(Producer::PolicyController, s);
    ev.timestamp = Some(Cow::Borrowed(&s[..n]));
    ev.level = Some(level);
    tracing_tail(rest, ev, false).map(drop)
}

/// What survives a copy that lost the head: `WARN ThreadId(01) …`,
/// `ThreadId(01) …`, `Jan 15 16:34:57.892 WARN  ThreadId(01) …`, `INFO
/// inbound: linkerd_app_core::serve: …`, or `inbound: linkerd_app::…: …`.
/// Accepted only when a known target anchors the line.
pub fn lenient<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    ev.reset(Producer::ProxyPlain, s);
    ev.truncated_head = true;
    let mut rest = s;
    if let Some(pos) = s.find("ThreadId(").filter(|&p| p < 48) {
        let before = s[..pos].trim_end();
        let lvl = before
            .rsplit(' ')
            .next()
            .and_then(|w| level_word(w).map(|l| l.0));
        if lvl.is_none() && !before.is_empty() && !before.ends_with(']') {
            return None;
        }
        // An uptime bracket after other text: the record starts there
        // (`recover` finds it and keeps the text before as a lead).
        if before.find('[').is_some_and(|i| i > 0) {
            return None;
        }
        ev.level = lvl;
        // What precedes the level is the clock a pipeline wrote in place of
        // the uptime (`Jan 15 16:34:57.892`, log-format.md P38), or a copied
        // uptime bracket: keep it rather than lose it.
        let clock = match lvl {
            Some(_) => before[..before.rfind(' ').map_or(0, |i| i)].trim_end(),
            None => before,
        };
        if clock.bytes().any(|c| c.is_ascii_digit()) {
            match uptime(clock) {
                Some((u, _, "")) => ev.uptime = Some(u),
                _ => ev.timestamp = Some(Cow::Borrowed(clock)),
            }
        }
        let (t, r) = thread_id(&s[pos..])?;
        ev.thread = Some(Cow::Borrowed(t));
        rest = r;
    } else if let Some((lvl, r)) = level_word(s) {
        ev.level = Some(lvl);
        rest = r;
    }
    tracing_tail(rest, ev, true)?;
    // The policy controller writes the same layout without thread ids; with
    // its timestamp lost, its targets still tell it (log-format.md C17, as
    // `json::tracing_json` does for its JSON).
    if ev.thread.is_none()
        && ev
            .target
            .as_deref()
            .is_some_and(|t| t.starts_with("linkerd_policy") || t.starts_with("kubert"))
    {
        ev.producer = Producer::PolicyController;
    }
    Some(())
}

/// Crate roots that mark a head as a tracing target (§1.6, rule 3a).
const KNOWN_ROOTS: &[&str] = &[
    "linkerd",
    "h2",
    "hyper",
    "tower",
    "rustls",
    "trust_dns",
    "hickory",
    "kube",
    "kubert",
    "tokio",
    "want",
    "mio",
];

fn is_target(s: &str) -> bool {
    !s.is_empty()
        && s.split("::").all(|seg| {
            let b = seg.as_bytes();
            !b.is_empty()
                && (b[0].is_ascii_alphabetic() || b[0] == b'_')
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
        })
}

fn has_known_root(s: &str) -> bool {
    s.contains("::") || KNOWN_ROOTS.iter().any(|r| s.starts_with(r))
}

pub(crate) const fn byte_table(bytes: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        t[bytes[i] as usize] = true;
        i += 1;
    }
    t
}

/// Bytes that matter outside brackets while looking for the head's end.
static TOP: [bool; 256] = byte_table(b":{( })");
/// Bytes that matter inside brackets.
static NESTED: [bool; 256] = byte_table(b"{}()\"");

/// Index of the byte closing the group opened at `open`: brackets are the
/// table's, quoted strings are text.
fn close_of(b: &[u8], open: usize, table: &[bool; 256]) -> Option<usize> {
    let mut depth = 0u32;
    let mut i = open;
    loop {
        while i < b.len() && !table[b[i] as usize] {
            i += 1;
        }
        match *b.get(i)? {
            b'{' | b'(' => depth += 1,
            b'}' | b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {
                // The closing quote of a string, past escaped characters.
                i += 1;
                loop {
                    // A backslash as the last byte escapes nothing: `get` ends the scan.
                    i += memchr::memchr2(b'"', b'\\', b.get(i..)?)?;
                    if b[i] == b'"' {
                        break;
                    }
                    i += 2;
                }
            }
        }
        i += 1;
    }
}

/// Index of the first `": "` outside brackets and quotes, or the final `:`
/// when the line ends there (an event with an empty body). `None` when a
/// space or an unbalanced bracket comes first: span contexts and targets
/// hold neither.
fn head_end(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    loop {
        while i < b.len() && !TOP[b[i] as usize] {
            i += 1;
        }
        match *b.get(i)? {
            b':' => {
                if i + 1 == b.len() || b[i + 1] == b' ' {
                    return Some(i);
                }
                i += if b[i + 1] == b':' { 2 } else { 1 };
            }
            b'{' | b'(' => i = close_of(b, i, &NESTED)? + 1,
            b' ' if i == 0 => i += 1,
            _ => return None,
        }
    }
}

/// Does the head hold a span context (braces or a single `:`)?
fn is_span_context(h: &str) -> bool {
    let b = h.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => return true,
            b':' if b.get(i + 1) == Some(&b':') => i += 1,
            b':' => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// `inbound:accept{client.addr=…}:direct:http{v=h2}` → spans.
fn parse_spans<'a>(h: &'a str, out: &mut SmallVec<[Span<'a>; 12]>) {
    let b = h.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        while i < b.len() && b[i] != b'{' && !(b[i] == b':' && b.get(i + 1) != Some(&b':')) {
            if b[i] == b':' {
                i += 1;
            }
            i += 1;
        }
        let name_end = i.min(b.len());
        let mut span = Span {
            name: Cow::Borrowed(&h[start..name_end]),
            fields: SmallVec::new(),
        };
        if b.get(i) == Some(&b'{') {
            let close = close_of(b, i, &BRACES).unwrap_or(b.len());
            let inner = &h[i + 1..close.min(b.len())];
            split_body(inner, &mut span.fields, false);
            i = close + 1;
        }
        if !span.name.is_empty() || !span.fields.is_empty() {
            out.push(span);
        }
        // Skip the `:` separator. Only a `:`: after a `}` that is not followed
        // by one (a mangled copy), stepping a byte could land inside a UTF-8
        // character and the next name slice would panic.
        if b.get(i) == Some(&b':') {
            i += 1;
        }
    }
}

/// Bytes that matter while looking for a span's closing brace.
static BRACES: [bool; 256] = byte_table(b"{}\"");

/// Where the text after a tracing line's level splits: its span stack (if
/// any), its target (empty when only spans precede the body) and its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tail<'a> {
    pub spans: Option<&'a str>,
    pub target: &'a str,
    pub body: &'a str,
    /// The head whose crate root decided the split, when one did.
    pub rooted: Option<&'a str>,
}

/// Splits the text after the level (and thread); `None` when no `": "`
/// closes a head (the text is all message).
pub fn split_tail(rest: &str) -> Option<Tail<'_>> {
    let h1_end = head_end(rest.as_bytes())?;
    let h1 = &rest[..h1_end];
    let after1 = rest.get(h1_end + 2..).unwrap_or("");
    let h2 = head_end(after1.as_bytes()).map(|e| (&after1[..e], after1.get(e + 2..).unwrap_or("")));
    let mut rooted = None;
    let (spans, target, body) = if is_span_context(h1) {
        match h2 {
            Some((t, body)) if is_target(t) => (Some(h1), t, body),
            _ => (Some(h1), "", after1),
        }
    } else {
        match h2 {
            Some((t, body))
                if is_target(t) && {
                    rooted = Some(t);
                    has_known_root(t)
                } =>
            {
                (Some(h1), t, body)
            }
            _ => (None, h1, after1),
        }
    };
    Some(Tail {
        spans,
        target,
        body,
        rooted,
    })
}

/// Does a head's crate root (as [`split_tail`] asks) depend on its digits,
/// beyond their being digits? Only roots spelt with one can (`h2`).
pub(crate) fn root_reads_digits(head: &str) -> bool {
    !head.contains("::")
        && KNOWN_ROOTS.iter().any(|r| {
            r.bytes().any(|b| b.is_ascii_digit())
                && head.len() >= r.len()
                && head
                    .bytes()
                    .zip(r.bytes())
                    .all(|(h, r)| h == r || (h.is_ascii_digit() && r.is_ascii_digit()))
        })
}

/// Spans, target and body after the level (and thread). With `anchored`
/// the line is only accepted when the target is a known crate path.
/// Returns the head whose crate root decided the split ([`Tail::rooted`]).
pub fn tracing_tail<'a>(
    rest: &'a str,
    ev: &mut Event<'a>,
    anchored: bool,
) -> Option<Option<&'a str>> {
    let Some(Tail {
        spans,
        target,
        body,
        rooted,
    }) = split_tail(rest)
    else {
        if anchored {
            return None;
        }
        // No target at all: keep the text as the message. A span stack that
        // never closes is a copy cut in the middle of the head.
        let b = rest.as_bytes();
        ev.message = Some(Cow::Borrowed(rest)).filter(|m| !m.is_empty());
        ev.cut = memchr::memchr_iter(b'{', b).count() > memchr::memchr_iter(b'}', b).count();
        return Some(None);
    };
    if anchored && !(is_target(target) && has_known_root(target)) {
        return None;
    }
    if let Some(sp) = spans {
        parse_spans(sp, &mut ev.spans);
    }
    if !target.is_empty() {
        ev.target = Some(Cow::Borrowed(target));
    }
    ev.body = body;
    let (message, cut) = push_fields(body, &mut ev.fields);
    ev.message = message.map(Cow::Borrowed);
    ev.cut = cut;
    Some(rooted)
}

/// Proxies before stable-2.7 (research/proxy-catalog OLD-001/002/003):
/// `LEVEL [uptime] ctx target message`, the uptime optional (the earliest
/// env_logger format has none), levels `ERR!`/`WARN`/`INFO`/`DBUG`/`TRCE`,
/// then any number of contexts (`proxy={server=in listen=… remote=…}`,
/// `admin={client=control dst=…}`, a bare `{bg=resolver}`), or a bare
/// `authority:port`, then the target without a colon.
pub fn proxy_legacy<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let (lvl, rest) = s.split_once(' ')?;
    if lvl.len() != 4 {
        return None;
    }
    let level = Level::parse(lvl)?;
    let rest = rest.trim_start();
    let (up, mut rest) = match uptime(rest) {
        Some((u, _, r)) => (Some(u), r.trim_start()),
        None => (None, rest),
    };
    ev.reset(Producer::ProxyLegacy, s);
    ev.level = Some(level);
    ev.uptime = up;
    loop {
        let (name, open) = if rest.starts_with('{') {
            ("", 0)
        } else if let Some(p) = rest.find("={").filter(|&p| is_target(&rest[..p])) {
            (&rest[..p], p + 1)
        } else {
            break;
        };
        let mut span = Span {
            name: Cow::Borrowed(name),
            fields: SmallVec::new(),
        };
        // The context's fields may hold spaces: it ends at its closing brace.
        // One that never closes is a copy cut inside it.
        let Some(close) = close_of(rest.as_bytes(), open, &BRACES) else {
            split_body(&rest[open + 1..], &mut span.fields, false);
            ev.spans.push(span);
            ev.cut = true;
            return Some(());
        };
        split_body(&rest[open + 1..close], &mut span.fields, false);
        ev.spans.push(span);
        rest = rest[close + 1..].trim_start();
    }
    let (mut target, mut body) = rest.split_once(' ').unwrap_or((rest, ""));
    if !is_target(target) && is_authority(target) {
        // A bare `host:port` context: the destination the task serves.
        let mut span = Span {
            name: Cow::Borrowed("authority"),
            fields: SmallVec::new(),
        };
        span.fields
            .push((Cow::Borrowed("addr"), Cow::Borrowed(target)));
        ev.spans.push(span);
        (target, body) = body.split_once(' ').unwrap_or((body, ""));
    }
    if !is_target(target) {
        return None;
    }
    // Without an uptime the head is a level word and a path, which prose
    // can also be: demand a real crate path then.
    if up.is_none()
        && !(target.contains("::")
            || target.starts_with("linkerd")
            || target.starts_with("conduit"))
    {
        return None;
    }
    ev.target = Some(Cow::Borrowed(target));
    ev.message = Some(Cow::Borrowed(body)).filter(|m| !m.is_empty());
    Some(())
}

/// `host:port` (a name or an IPv4/IPv6 address, then a port).
fn is_authority(s: &str) -> bool {
    s.rsplit_once(':').is_some_and(|(h, p)| {
        !h.is_empty()
            && !p.is_empty()
            && p.bytes().all(|c| c.is_ascii_digit())
            && h.bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b':' | b'[' | b']'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::with;

    fn plain<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
        proxy_plain(s, ev).map(drop)
    }

    proptest::proptest! {
        /// `whole` reads what `f64`'s parser reads, as it does.
        #[test]
        fn whole_is_what_f64_parses(s in "[0-9]{0,20}|[0-9+.e-]{0,8}") {
            proptest::prop_assert_eq!(whole(&s), s.parse::<f64>().ok(), "{}", s);
        }
    }

    #[test]
    fn uptime_fraction_rules() {
        assert_eq!(uptime("[     0.001961s]").unwrap().0, 0.001961);
        let (u, d, _) = uptime("[    12.12345678s]").unwrap();
        assert_eq!(d, 8);
        assert!((u - 12.012345678).abs() < 1e-9);
        assert!(uptime("[bogdan@admin scripts]$").is_none());
        let ev = with(
            plain,
            "[     3.005000s]  INFO linkerd2_proxy: Admin interface on 127.0.0.1:4191",
        )
        .unwrap();
        assert!((ev.uptime.unwrap() - 3.000005).abs() < 1e-9);
    }

    #[test]
    fn span_context_vs_target() {
        let ev = with(plain, "[ 11992.915758s]  WARN ThreadId(01) inbound: linkerd_app_core::serve: Server failed to accept connection error=Transport endpoint is not connected (os error 107)").unwrap();
        assert_eq!(ev.spans.len(), 1);
        assert_eq!(ev.target.as_deref(), Some("linkerd_app_core::serve"));
        let ev = with(plain, "[     0.030000s] ERROR ThreadId(01) linkerd2_proxy: Initialization: failed to bind 0.0.0.0:4143").unwrap();
        assert!(ev.spans.is_empty());
        assert_eq!(ev.message(), "Initialization: failed to bind 0.0.0.0:4143");
    }

    #[test]
    fn braces_quotes_and_colons_inside_spans() {
        let ev = with(plain, "[     2.000000s] DEBUG outbound:forward{peer.addr=10.1.2.3:8080 peer.id=Some(\"we}ird: name\")}: linkerd2_proxy_http::client: Building HTTP client").unwrap();
        assert_eq!(ev.spans.len(), 2);
        assert_eq!(ev.spans[1].field("peer.id"), Some("Some(\"we}ird: name\")"));
        assert_eq!(ev.message(), "Building HTTP client");
    }

    #[test]
    fn legacy_format() {
        let ev = with(proxy_legacy, "ERR! [589538.085822s] linkerd2_proxy::app::errors unexpected error: error trying to connect: No route to host (os error 113)").unwrap();
        assert_eq!(ev.level, Some(Level::Error));
        assert_eq!(ev.target(), "linkerd2_proxy::app::errors");
        assert!(ev.message().starts_with("unexpected error"));
        let ev = with(proxy_legacy, "INFO [     5.000000s] proxy={server=out listen=127.0.0.1:4140 remote=10.1.1.1:34567} linkerd2_proxy::proxy::tcp forward").unwrap();
        assert_eq!(ev.spans[0].field("remote"), Some("10.1.1.1:34567"));
        assert_eq!(ev.target(), "linkerd2_proxy::proxy::tcp");
    }
}
