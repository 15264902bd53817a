//! Producers beside the proxy that share its log stream: the Go control
//! plane (logrus text, klog), proxy-init, the apache access log, and panics.

use super::event::{Event, Level, Producer};
use std::borrow::Cow;

/// logrus `TextFormatter`: `time="…" level=info msg="…" k=v k="v"`; also
/// what is left of one when a copy lost its head: `level=error msg="…"`,
/// or `msg="…"` alone.
pub fn logrus<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let loose = if s.starts_with("time=\"") {
        false
    } else if s.starts_with("level=") || s.starts_with("msg=\"") {
        true
    } else {
        return None;
    };
    ev.reset(Producer::Logrus, s);
    let mut cut = false;
    for (k, v, open) in logfmt(s) {
        cut |= open;
        match k {
            "time" => ev.timestamp = Some(v),
            "level" => ev.level = Level::parse(&v),
            "msg" => ev.message = Some(v),
            _ => ev.fields.push((Cow::Borrowed(k), v)),
        }
    }
    ev.cut = cut;
    ev.truncated_head = loose;
    if ev.level.is_some() || (loose && ev.message.is_some()) {
        Some(())
    } else {
        None
    }
}

/// `key=bare` or `key="Go %q quoted"` pairs; `true` for a quote that
/// never closed.
fn logfmt(s: &str) -> impl Iterator<Item = (&str, Cow<'_, str>, bool)> {
    let b = s.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
        let eq = i + s[i..].find('=')?;
        let key = &s[i..eq];
        if key.contains(' ') {
            return None;
        }
        let start = eq + 1;
        if b.get(start) == Some(&b'"') {
            let mut j = start + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = j.min(b.len());
            // An unterminated quote runs to the end of the line; do not step
            // past it (`s[i..]` on the next pair would be out of bounds).
            i = (end + 1).min(b.len());
            Some((key, go_unquote(&s[start + 1..end]), j >= b.len()))
        } else {
            let end = s[start..].find(' ').map_or(b.len(), |e| start + e);
            i = end;
            Some((key, Cow::Borrowed(&s[start..end]), false))
        }
    })
}

fn go_unquote(s: &str) -> Cow<'_, str> {
    if !s.contains('\\') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(o) => out.push(o),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// klog: `I0203 21:30:23.123456       1 reflector.go:219] message`.
pub fn klog<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let b = s.as_bytes();
    if b.len() < 22 || !matches!(b[0], b'I' | b'W' | b'E' | b'F') {
        return None;
    }
    if !b[1..5].iter().all(u8::is_ascii_digit) || b[5] != b' ' || b[8] != b':' {
        return None;
    }
    let close = s.find("] ")?;
    let head = &s[..close];
    let src = head.rsplit(' ').next()?;
    if !src.contains(".go:") {
        return None;
    }
    ev.reset(Producer::Klog, s);
    ev.level = Level::parse(&s[..1]);
    // `0203 21:30:23.123456`: month-day and time; klog prints no year.
    let time_end = s[6..].find(' ').map_or(close, |e| 6 + e);
    ev.timestamp = Some(Cow::Borrowed(&s[1..time_end]));
    // The right-aligned thread id between the time and the source file
    // (log-format.md C7: `tid=1`).
    if let Some(tid) = s
        .get(time_end..close)
        .and_then(|h| h.split_whitespace().next())
        .filter(|t| t.bytes().all(|c| c.is_ascii_digit()))
    {
        ev.thread = Some(Cow::Borrowed(tid));
    }
    ev.target = Some(Cow::Borrowed(src));
    ev.message = Some(Cow::Borrowed(&s[close + 2..]));
    Some(())
}

/// Go stdlib `log`: `2020/07/15 16:22:43[.micros] message`. proxy-init
/// ≤ v1.3 writes it, and so does every Go program: the line is
/// proxy-init's only when its message carries proxy-init's marks.
pub fn go_log<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let b = s.as_bytes();
    if b.len() < 20
        || !(b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'/' && b[7] == b'/')
        || b[10] != b' '
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let mut end = 19;
    if b[end] == b'.' {
        end += 1;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
    }
    if b.get(end) != Some(&b' ') {
        return None;
    }
    let msg = &s[end + 1..];
    // nginx's error log shares the stamp: `[error] 12#12: …`.
    if is_nginx_level(msg) {
        return None;
    }
    init_event(s, msg, ev);
    if !is_init_message(msg) {
        ev.producer = Producer::GoLog;
        ev.level = Some(if go_log_is_error(msg) {
            Level::Error
        } else {
            Level::Info
        });
    }
    ev.timestamp = Some(Cow::Borrowed(&s[..end]));
    Some(())
}

fn is_nginx_level(msg: &str) -> bool {
    let Some(r) = msg.strip_prefix('[') else {
        return false;
    };
    [
        "emerg]", "alert]", "crit]", "error]", "warn]", "notice]", "info]", "debug]",
    ]
    .iter()
    .any(|l| r.starts_with(l))
}

/// What proxy-init ≤ v1.3 prints: its trace of the iptables commands it
/// runs (`> iptables …`, `< output`) and its own sentences.
fn is_init_message(msg: &str) -> bool {
    msg.starts_with("> ")
        || msg.starts_with("< ")
        || msg.contains("iptables")
        || msg.contains("PROXY_INIT")
        || msg.contains("firewall configuration")
        || msg.starts_with("Tracing this script execution")
        || msg.starts_with("Will ignore port")
        || msg.starts_with("Will redirect")
        || msg.starts_with("Ignoring uid")
        || msg.starts_with("Redirecting ")
        || msg.starts_with("Invalid port configuration")
        || msg.starts_with(":; ")
}

/// Go's stdlib logger has no levels; an error reads as one.
fn go_log_is_error(msg: &str) -> bool {
    ["error", "Error", "failed", "Failed", "panic", "fatal"]
        .iter()
        .any(|w| msg.contains(w))
}

/// proxy-init ≤ v1.3 with the front of its stamp cut off, as a truncated
/// termination message shows it: `/02/25 08:33:56 Will ignore port …`
/// (log-format.md C14: time unknown, message recovered).
pub fn proxy_init_truncated<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let b = s.as_bytes();
    // What is left of the year (0–3 digits), then `/MM/DD HH:MM:SS `.
    let k = b.iter().take(3).take_while(|c| c.is_ascii_digit()).count();
    let pat = b"/dd/dd dd:dd:dd ";
    let r = &b[k..];
    if r.len() <= pat.len()
        || !pat.iter().zip(r).all(|(p, c)| match p {
            b'd' => c.is_ascii_digit(),
            _ => p == c,
        })
    {
        return None;
    }
    init_event(s, &s[k + pat.len()..], ev);
    ev.truncated_head = true;
    Some(())
}

fn init_event<'a>(s: &'a str, msg: &'a str, ev: &mut Event<'a>) {
    ev.reset(Producer::ProxyInit, s);
    ev.level = Some(if msg.starts_with("Error") || msg.starts_with("Aborting") {
        Level::Error
    } else {
        Level::Info
    });
    ev.message = Some(Cow::Borrowed(msg));
}

/// Apache common access log: `IP:port ID - [ts] "METHOD URI VERSION" STATUS`.
pub fn access_apache<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let (addr, rest) = s.split_once(' ')?;
    if !addr.contains(':') || !addr.bytes().next()?.is_ascii_hexdigit() && !addr.starts_with('[') {
        return None;
    }
    let (id, rest) = rest.split_once(" - [")?;
    let (ts, rest) = rest.split_once("] \"")?;
    let (req, status) = rest.rsplit_once('"')?;
    let mut parts = req.splitn(3, ' ');
    let (method, uri, version) = (parts.next()?, parts.next()?, parts.next()?);
    if !version.starts_with("HTTP/") {
        return None;
    }
    ev.reset(Producer::AccessApache, s);
    ev.timestamp = Some(Cow::Borrowed(ts));
    ev.level = Some(Level::Info);
    ev.fields
        .push((Cow::Borrowed("client.addr"), Cow::Borrowed(addr)));
    ev.fields
        .push((Cow::Borrowed("client.id"), Cow::Borrowed(id)));
    ev.fields
        .push((Cow::Borrowed("method"), Cow::Borrowed(method)));
    ev.fields.push((Cow::Borrowed("uri"), Cow::Borrowed(uri)));
    ev.fields
        .push((Cow::Borrowed("version"), Cow::Borrowed(version)));
    let status = status.trim();
    if !status.is_empty() {
        ev.fields
            .push((Cow::Borrowed("status"), Cow::Borrowed(status)));
    }
    Some(())
}

/// Rust `thread 'x' panicked at …` or Go `panic: …` / `goroutine N [`.
pub fn panic<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let producer = if s.starts_with("thread '") && s.contains("' panicked at")
        || s.starts_with("thread '") && s.contains(") panicked at")
    {
        Producer::RustPanic
    } else if s.starts_with("panic: ") || (s.starts_with("goroutine ") && s.ends_with("]:")) {
        Producer::GoPanic
    } else {
        return None;
    };
    ev.reset(producer, s);
    ev.level = Some(Level::Error);
    ev.message = Some(Cow::Borrowed(s));
    if producer == Producer::RustPanic {
        rust_panic_header(s, ev);
    }
    Some(())
}

/// Thread, message and location of a Rust panic header (log-format.md §5,
/// M1/M3/M4): `thread 'NAME'[ (TID)] panicked at 'MSG', FILE:L:C` before
/// Rust 1.73, `… panicked at FILE:L:C:` after, the message then following on
/// the next line (the tokenizer takes it from there).
fn rust_panic_header<'a>(s: &'a str, ev: &mut Event<'a>) {
    let Some(r) = s.strip_prefix("thread '") else {
        return;
    };
    let Some(q) = r.find('\'') else {
        return;
    };
    let name = &r[..q];
    let mut r = &r[q + 1..];
    let mut tid = None;
    if let Some((t, rest)) = r.strip_prefix(" (").and_then(|t| t.split_once(')')) {
        if !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit()) {
            tid = Some(t);
            r = rest;
        }
    }
    let Some(r) = r.strip_prefix(" panicked at ") else {
        return;
    };
    ev.thread = Some(Cow::Borrowed(name));
    if let Some(t) = tid {
        ev.fields.push((Cow::Borrowed("tid"), Cow::Borrowed(t)));
    }
    if let Some(m) = r.strip_prefix('\'') {
        // `'MSG', FILE:L:C`; with no `', ` the message goes on next lines.
        let (msg, loc) = m
            .rsplit_once("', ")
            .map_or((m, None), |(a, b)| (a, Some(b)));
        ev.message = Some(Cow::Borrowed(msg));
        if let Some(l) = loc {
            ev.fields.push((Cow::Borrowed("loc"), Cow::Borrowed(l)));
        }
    } else {
        let loc = r.strip_suffix(':').unwrap_or(r);
        ev.fields.push((Cow::Borrowed("loc"), Cow::Borrowed(loc)));
        ev.message = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::with;

    #[test]
    fn logrus_quoting() {
        let ev = with(logrus, r#"time="2023-01-10T10:00:00Z" level=warning msg="Failed to get endpoints" addr=":8086" component=endpoints-watcher error="endpoints \"web\" not found" cluster= ns=default"#).unwrap();
        assert_eq!(ev.level, Some(Level::Warn));
        assert_eq!(ev.message(), "Failed to get endpoints");
        assert_eq!(ev.field("error"), Some("endpoints \"web\" not found"));
        assert_eq!(ev.field("cluster"), Some(""));
        assert_eq!(ev.field("ns"), Some("default"));
    }

    #[test]
    fn klog_and_init_and_access() {
        let ev = with(klog, "E0203 21:30:24.000001       1 reflector.go:138] k8s.io/client-go: Failed to watch *v1.Pod").unwrap();
        assert_eq!(ev.level, Some(Level::Error));
        assert_eq!(ev.target(), "reflector.go:138");
        assert_eq!(ev.timestamp.as_deref(), Some("0203 21:30:24.000001"));
        let ev = with(
            go_log,
            "2020/07/15 16:22:43 < Chain PREROUTING (policy ACCEPT 0 packets, 0 bytes)",
        )
        .unwrap();
        assert_eq!(
            ev.message(),
            "< Chain PREROUTING (policy ACCEPT 0 packets, 0 bytes)"
        );
        let ev = with(
            access_apache,
            r#"[fd00::9]:41000 - - [2025-05-01T08:00:00.5Z] "GET / HTTP/1.1" 503"#,
        )
        .unwrap();
        assert_eq!(ev.field("status"), Some("503"));
        assert_eq!(ev.field("client.addr"), Some("[fd00::9]:41000"));
    }
}
