//! `lpa parse`: one JSON object per record, in input order.
//!
//! The keys are a stable contract (README, "lpa parse"): `kind`, `source`,
//! `line`, `lines`; events add `producer`, `level`, `target`, `message`,
//! `spans`, `fields`, `uptime`/`timestamp` and the typed views; unparsed
//! lines add `text`.

use crate::parse::template::range;
use crate::parse::typed::{status_of, sz_of, Tls};
use crate::parse::{Event, Metric, Record};
use std::borrow::Cow;

mod template;
pub use template::write_seen;

/// A JSON object written straight into the output, as serde_json's compact
/// form writes it (the same bytes: `parse` output is a contract), without
/// its per-byte escaping of strings that need none. With a recorder, it
/// notes what of the output is the line's own (see [`template`]).
struct Obj<'o, 'l> {
    out: &'o mut Vec<u8>,
    first: bool,
    rec: Option<&'o mut Recorder<'l>>,
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

/// Appends what is between the quotes of `b` as a JSON string.
fn escaped(out: &mut Vec<u8>, b: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    if !needs_escape(b) {
        out.extend_from_slice(b);
        return;
    }
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

/// Appends `s` as a JSON string.
fn string(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    escaped(out, s.as_bytes());
    out.push(b'"');
}

impl<'o, 'l> Obj<'o, 'l> {
    fn new(out: &'o mut Vec<u8>, rec: Option<&'o mut Recorder<'l>>) -> Obj<'o, 'l> {
        out.push(b'{');
        Obj {
            out,
            first: true,
            rec,
        }
    }

    /// An object inside this one, written to the same output.
    fn nested(&mut self) -> Obj<'_, 'l> {
        Obj::new(self.out, self.rec.as_deref_mut())
    }

    /// A key of the contract's: plain words, written without a look (and
    /// inlined, so that its length is a constant where it is written).
    #[inline(always)]
    fn key(&mut self, k: &'static str) -> &mut Self {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(k.as_bytes());
        self.out.extend_from_slice(b"\":");
        self
    }

    /// A string value (or key) as JSON, noted as the line's own when it is
    /// a slice of the line.
    fn text(&mut self, s: &str) {
        let start = self.out.len() + 1;
        string(self.out, s);
        if let Some(r) = self.rec.as_deref_mut() {
            r.text(s, start, self.out.len() - 1);
        }
    }

    /// A key read from the input, escaped as it needs.
    fn any_key(&mut self, k: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.text(k);
        self.out.push(b':');
    }

    fn str(&mut self, k: &'static str, v: &str) {
        self.key(k).text(v);
    }

    fn opt_str(&mut self, k: &'static str, v: Option<&str>) {
        if let Some(v) = v {
            self.str(k, v);
        }
    }

    fn num(&mut self, k: &'static str, v: impl std::fmt::Display) {
        use std::io::Write;
        let _ = write!(self.key(k).out, "{v}");
    }

    fn float(&mut self, k: &'static str, v: f64) {
        // serde_json's own rendering of a float (shortest round-trip, or
        // null when not finite).
        let _ = serde_json::to_writer(&mut *self.key(k).out, &v);
    }

    fn fields(&mut self, k: &'static str, fields: &[(Cow<'_, str>, Cow<'_, str>)]) {
        let mut m = self.key(k).nested();
        for (k, v) in fields {
            m.any_key(k);
            m.text(v);
        }
        m.end();
    }

    /// What `write` writes, which differs from line to line of a shape: a
    /// [`Hole`] of the template.
    fn hole(&mut self, hole: Hole, write: impl FnOnce(&mut Self)) {
        let start = self.out.len();
        let rec = self.rec.take();
        write(self);
        self.rec = rec;
        if let Some(r) = self.rec.as_deref_mut() {
            r.holes.push((start, self.out.len(), hole));
        }
    }

    /// What `write` writes of `v`, a value read from the line's digits: a
    /// hole where `v` is a slice of the line.
    fn read_hole(
        &mut self,
        v: Option<&str>,
        hole: fn(u16, u16) -> Hole,
        write: fn(&mut Self, Option<&str>),
    ) {
        let place = self.rec.as_deref().zip(v).map(|(r, v)| r.place(v));
        match place {
            Some(Some((from, len))) => self.hole(hole(from, len), |o| write(o, v)),
            Some(None) => {
                if let Some(r) = self.rec.as_deref_mut() {
                    r.spoilt = true;
                }
                write(self, v);
            }
            None => write(self, v),
        }
    }

    fn end(self) {
        self.out.push(b'}');
    }
}

fn status_part(o: &mut Obj<'_, '_>, text: Option<&str>) {
    if let Some(s) = text.and_then(status_of) {
        o.num("status", s);
    }
}

fn sz_part(o: &mut Obj<'_, '_>, text: Option<&str>) {
    if let Some(s) = text.and_then(sz_of) {
        o.num("sz", s);
    }
}

fn tls(mut o: Obj<'_, '_>, t: &Tls<'_>) {
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
fn metric(mut o: Obj<'_, '_>, m: &Metric<'_>) {
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

/// What differs from line to line in the `parse` records of one line
/// shape: where each line's own text goes (its digits differ), and the
/// values read from its digits.
#[derive(Clone, Copy)]
enum Hole {
    /// The line's bytes `from..from + len`, escaped as JSON when `esc`.
    Slice {
        from: u16,
        len: u16,
        esc: bool,
    },
    Source,
    /// Its component, which turns on its target's crate root, which may
    /// be spelt with a digit (`h2`).
    Component,
    Line,
    Uptime,
    /// `"status"` and `"sz"`, read from the line's bytes there.
    Status {
        from: u16,
        len: u16,
    },
    Sz {
        from: u16,
        len: u16,
    },
}

/// Notes, as an event's record is written, where its holes are.
struct Recorder<'l> {
    line: &'l str,
    holes: Vec<(usize, usize, Hole)>,
    /// A string with a digit was written that is not a slice of the line:
    /// no template can be made of this record.
    spoilt: bool,
}

impl Recorder<'_> {
    /// Where `s` is in the line, and its length, if it is a slice of it.
    fn place(&self, s: &str) -> Option<(u16, u16)> {
        range(self.line, s).map(|(from, end)| (from, end - from))
    }

    /// `s` was written at `start..end` of the output (inside its quotes).
    fn text(&mut self, s: &str, start: usize, end: usize) {
        match self.place(s) {
            Some((from, len)) => {
                let esc = end - start != s.len();
                self.holes
                    .push((start, end, Hole::Slice { from, len, esc }));
            }
            None => self.spoilt |= s.bytes().any(|b| b.is_ascii_digit()),
        }
    }
}

fn event(out: &mut Vec<u8>, source: &str, e: &Event<'_>, rec: Option<&mut Recorder<'_>>) {
    let mut o = Obj::new(out, rec);
    o.str("kind", "event");
    o.key("source").hole(Hole::Source, |o| o.text(source));
    o.hole(Hole::Line, |o| o.num("line", e.line));
    o.num("lines", e.lines);
    o.str("producer", e.producer.as_str());
    o.key("component")
        .hole(Hole::Component, |o| o.text(e.component.as_str()));
    if let Some(l) = e.level {
        o.str("level", l.as_str());
    }
    o.hole(Hole::Uptime, |o| {
        if let Some(u) = e.uptime {
            o.float("uptime", u);
        }
    });
    o.opt_str("timestamp", e.timestamp.as_deref());
    o.opt_str("wrapper_timestamp", e.wrapper.timestamp);
    o.opt_str("pod", e.wrapper.pod);
    o.opt_str("container", e.wrapper.container);
    // Text before the record on its line (a prompt, a describe field).
    o.opt_str("lead", e.wrapper.lead);
    o.opt_str("thread", e.thread.as_deref());
    o.key("spans").out.push(b'[');
    for (i, s) in e.spans.iter().enumerate() {
        if i > 0 {
            o.out.push(b',');
        }
        let mut so = o.nested();
        so.str("name", &s.name);
        so.fields("fields", &s.fields);
        so.end();
    }
    o.out.push(b']');
    o.opt_str("target", e.target.as_deref());
    o.opt_str("message", e.message.as_deref());
    o.fields("fields", &e.fields);
    o.opt_str("error", e.error());
    let sources = e.error_sources();
    if !sources.is_empty() {
        o.key("error_sources").out.push(b'[');
        for (i, s) in sources.iter().enumerate() {
            if i > 0 {
                o.out.push(b',');
            }
            o.text(s);
        }
        o.out.push(b']');
    }
    if let Some(t) = e.tls() {
        tls(o.key("tls").nested(), &t);
    }
    o.opt_str("client_addr", e.client_addr());
    o.opt_str("target_addr", e.target_addr());
    o.opt_str("dst", e.dst().as_deref());
    o.opt_str("endpoint", e.endpoint());
    // Read from the line's digits: the key may be there for one line of a
    // shape and not for another.
    o.read_hole(
        e.status_text(),
        |from, len| Hole::Status { from, len },
        status_part,
    );
    o.read_hole(e.field("sz"), |from, len| Hole::Sz { from, len }, sz_part);
    if e.truncated_head {
        o.key("truncated_head").out.extend_from_slice(b"true");
    }
    o.opt_str("continuation", e.continuation.as_deref());
    if let Some(m) = &e.metric {
        metric(o.key("metric").nested(), m);
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
        Record::Event(e) => template::write_event(out, source, e),
        Record::Unparsed {
            line,
            text,
            looks_like,
        } => {
            let mut o = Obj::new(out, None);
            o.str("kind", "unparsed");
            o.str("source", source);
            o.num("line", line);
            o.num("lines", 1);
            o.str("text", text);
            o.opt_str("looks_like", looks_like.map(|f| f.as_str()));
            o.end();
            out.push(b'\n');
        }
    }
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

    /// A line written from its shape's template as the first record of
    /// an empty buffer, after holes shorter than the template's (its
    /// uptime), is its event's record.
    #[test]
    fn a_record_from_its_template_is_its_events_first_in_a_buffer() {
        let a = "[     1.123456s]  INFO ThreadId(01) outbound:proxy{addr=10.0.0.1:80}: linkerd_app_core::serve: Connection closed sz=12";
        let b = "[     2.500000s]  INFO ThreadId(01) outbound:proxy{addr=10.0.0.2:81}: linkerd_app_core::serve: Connection closed sz=99";
        let record = |line: &str| {
            let mut ev = crate::parse::parse_line(line).unwrap();
            ev.line = 7;
            let mut out = Vec::new();
            write_record(&mut out, "f", &Record::Event(ev));
            String::from_utf8(out).unwrap()
        };
        record(a);
        let seen = crate::parse::template::seen(b).unwrap();
        let mut out = Vec::new();
        assert!(write_seen(&mut out, "f", 7, &seen));
        assert_eq!(String::from_utf8(out).unwrap(), record(b));
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
