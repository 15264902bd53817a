//! `lpa parse`: one JSON object per record, in input order.
//!
//! The keys are a stable contract (README, "lpa parse"): `kind`, `source`,
//! `line`, `lines`; events add `producer`, `level`, `target`, `message`,
//! `spans`, `fields`, `uptime`/`timestamp` and the typed views; unparsed
//! lines add `text`.

use crate::parse::typed::Tls;
use crate::parse::{Event, Metric, Record};
use std::borrow::Cow;

/// A JSON object written straight into the output, as serde_json's compact
/// form writes it (the same bytes: `parse` output is a contract), without
/// its per-byte escaping of strings that need none.
struct Obj<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

/// Does `b` hold a byte a JSON string escapes (a control byte, `"`, `\\`)?
/// Eight bytes at a time (the compiler kept the per-byte test scalar): a
/// word has a byte below 0x20, or equal to one, exactly when these
/// borrow-and-mask tests leave a high bit set.
fn needs_escape(b: &[u8]) -> bool {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    let word = |w: u64| {
        let below_space = w.wrapping_sub(ONES * 0x20) & !w;
        let (q, s) = (w ^ (ONES * u64::from(b'"')), w ^ (ONES * u64::from(b'\\')));
        let quote = q.wrapping_sub(ONES) & !q;
        let slash = s.wrapping_sub(ONES) & !s;
        (below_space | quote | slash) & HIGH != 0
    };
    let mut chunks = b.chunks_exact(8);
    if chunks.any(|c| word(u64::from_le_bytes(c.try_into().expect("eight bytes")))) {
        return true;
    }
    let rest = chunks.remainder();
    let mut last = [b'a'; 8];
    last[..rest.len()].copy_from_slice(rest);
    word(u64::from_le_bytes(last))
}

/// Appends `s` as a JSON string.
fn string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    let plain = !needs_escape(b);
    if plain {
        out.extend_from_slice(b);
    } else {
        for &c in b {
            match c {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                0x08 => out.extend_from_slice(b"\\b"),
                0x0c => out.extend_from_slice(b"\\f"),
                c if c < 0x20 => {
                    out.extend_from_slice(b"\\u00");
                    out.push(HEX[usize::from(c >> 4)]);
                    out.push(HEX[usize::from(c & 0xf)]);
                }
                c => out.push(c),
            }
        }
    }
    out.push(b'"');
}

impl<'o> Obj<'o> {
    fn new(out: &'o mut Vec<u8>) -> Obj<'o> {
        out.push(b'{');
        Obj { out, first: true }
    }

    /// A key of the contract's: plain words, written without a look (and
    /// inlined, so that its length is a constant where it is written).
    #[inline(always)]
    fn key(&mut self, k: &'static str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(k.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    /// A key read from the input, escaped as it needs.
    fn any_key(&mut self, k: &str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        string(self.out, k);
        self.out.push(b':');
        self.out
    }

    fn str(&mut self, k: &'static str, v: &str) {
        let out = self.key(k);
        string(out, v);
    }

    fn opt_str(&mut self, k: &'static str, v: Option<&str>) {
        if let Some(v) = v {
            self.str(k, v);
        }
    }

    fn num(&mut self, k: &'static str, v: impl std::fmt::Display) {
        use std::io::Write;
        let _ = write!(self.key(k), "{v}");
    }

    fn float(&mut self, k: &'static str, v: f64) {
        // serde_json's own rendering of a float (shortest round-trip, or
        // null when not finite).
        let _ = serde_json::to_writer(self.key(k), &v);
    }

    fn fields(&mut self, k: &'static str, fields: &[(Cow<'_, str>, Cow<'_, str>)]) {
        let mut m = Obj::new(self.key(k));
        for (k, v) in fields {
            string(m.any_key(k), v);
        }
        m.end();
    }

    fn end(self) {
        self.out.push(b'}');
    }
}

fn tls(out: &mut Vec<u8>, t: &Tls<'_>) {
    let mut o = Obj::new(out);
    o.str("state", &t.state);
    o.opt_str("reason", t.reason);
    o.opt_str("client_id", t.client_id);
    o.opt_str("negotiated_protocol", t.negotiated_protocol);
    o.opt_str("sni", t.sni);
    o.end();
}

/// A line of exposition text: `{"kind": "sample", "name", "value",
/// "timestamp"}` (labels are the event's `fields`), `help`, `type`, `unit`,
/// `eof`, `pod` (`name`, `index`, `of`) or `frame`.
fn metric(out: &mut Vec<u8>, m: &Metric<'_>) {
    let mut o = Obj::new(out);
    match *m {
        Metric::Sample {
            name,
            value,
            timestamp,
        } => {
            o.str("kind", "sample");
            o.str("name", name);
            o.float("value", value);
            if let Some(t) = timestamp {
                o.float("timestamp", t);
            }
        }
        Metric::Help { name } => {
            o.str("kind", "help");
            o.str("name", name);
        }
        Metric::Type { name, kind } => {
            o.str("kind", "type");
            o.str("name", name);
            o.str("type", kind);
        }
        Metric::Unit { name } => {
            o.str("kind", "unit");
            o.str("name", name);
        }
        Metric::Eof => o.str("kind", "eof"),
        Metric::Pod { name, index, of } => {
            o.str("kind", "pod");
            o.str("name", name);
            o.num("index", index);
            o.num("of", of);
        }
        Metric::Frame => o.str("kind", "frame"),
    }
    o.end();
}

fn event(out: &mut Vec<u8>, source: &str, e: &Event<'_>) {
    let mut o = Obj::new(out);
    o.str("kind", "event");
    o.str("source", source);
    o.num("line", e.line);
    o.num("lines", e.lines);
    o.str("producer", e.producer.as_str());
    o.str("component", e.component.as_str());
    if let Some(l) = e.level {
        o.str("level", l.as_str());
    }
    if let Some(u) = e.uptime {
        o.float("uptime", u);
    }
    o.opt_str("timestamp", e.timestamp.as_deref());
    o.opt_str("wrapper_timestamp", e.wrapper.timestamp);
    o.opt_str("pod", e.wrapper.pod);
    o.opt_str("container", e.wrapper.container);
    // Text before the record on its line (a prompt, a describe field).
    o.opt_str("lead", e.wrapper.lead);
    o.opt_str("thread", e.thread.as_deref());
    let spans = o.key("spans");
    spans.push(b'[');
    for (i, s) in e.spans.iter().enumerate() {
        if i > 0 {
            spans.push(b',');
        }
        let mut so = Obj::new(spans);
        so.str("name", &s.name);
        so.fields("fields", &s.fields);
        so.end();
    }
    spans.push(b']');
    o.opt_str("target", e.target.as_deref());
    o.opt_str("message", e.message.as_deref());
    o.fields("fields", &e.fields);
    o.opt_str("error", e.error());
    let sources = e.error_sources();
    if !sources.is_empty() {
        let list = o.key("error_sources");
        list.push(b'[');
        for (i, s) in sources.iter().enumerate() {
            if i > 0 {
                list.push(b',');
            }
            string(list, s);
        }
        list.push(b']');
    }
    if let Some(t) = e.tls() {
        tls(o.key("tls"), &t);
    }
    o.opt_str("client_addr", e.client_addr());
    o.opt_str("target_addr", e.target_addr());
    o.opt_str("dst", e.dst().as_deref());
    o.opt_str("endpoint", e.endpoint());
    if let Some(s) = e.status() {
        o.num("status", s);
    }
    if let Some(s) = e.sz() {
        o.num("sz", s);
    }
    if e.truncated_head {
        let _ = o.key("truncated_head");
        o.out.extend_from_slice(b"true");
    }
    o.opt_str("continuation", e.continuation.as_deref());
    if let Some(m) = &e.metric {
        metric(o.key("metric"), m);
    }
    o.end();
}

/// A line longer than `--max-line`: `{"kind":"cut","source":…,"line":N,"dropped":BYTES}`,
/// after the record read from its first bytes.
pub fn write_cut(out: &mut Vec<u8>, source: &str, cut: crate::input::Cut) {
    let doc = serde_json::json!({
        "kind": "cut",
        "source": source,
        "line": cut.line,
        "dropped": cut.dropped,
    });
    out.extend_from_slice(doc.to_string().as_bytes());
    out.push(b'\n');
}

/// Appends the record as one JSON line to `out`.
pub fn write_record(out: &mut Vec<u8>, source: &str, rec: &Record<'_>) {
    match rec {
        Record::Event(e) => event(out, source, e),
        Record::Unparsed {
            line,
            text,
            looks_like,
        } => {
            let mut o = Obj::new(out);
            o.str("kind", "unparsed");
            o.str("source", source);
            o.num("line", line);
            o.num("lines", 1);
            o.str("text", text);
            o.opt_str("looks_like", looks_like.map(|f| f.as_str()));
            o.end();
        }
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings come out as serde_json writes them, escapes and all.
    #[test]
    fn strings_as_serde_json_writes_them() {
        let all: String = (0u8..0x80)
            .map(char::from)
            .chain("é€\u{1F600}".chars())
            .collect();
        for s in ["", "plain", "a\"b\\c", "\u{7f}", all.as_str()] {
            let mut out = Vec::new();
            string(&mut out, s);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(s).unwrap()
            );
        }
    }

    proptest::proptest! {
        /// Any text, of any length around the eight bytes tested at a time,
        /// with escapes anywhere in it.
        #[test]
        fn any_string_as_serde_json_writes_it(s in "[a-z\"\\\\\u{0}-\u{1f}\u{7f}-\u{10ffff}]{0,40}") {
            let mut out = Vec::new();
            string(&mut out, &s);
            proptest::prop_assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(&s).unwrap()
            );
        }
    }
}
