//! `lpa parse`: one JSON object per record, in input order.
//!
//! The keys are a stable contract (README, "lpa parse"): `kind`, `source`,
//! `line`, `lines`; events add `producer`, `level`, `target`, `message`,
//! `spans`, `fields`, `uptime`/`timestamp` and the typed views; unparsed
//! lines add `text`.

use crate::parse::typed::Tls;
use crate::parse::{Event, Level, Metric, Record, Span};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use std::borrow::Cow;

struct FieldMap<'r, 'e>(&'r [(Cow<'e, str>, Cow<'e, str>)]);

impl Serialize for FieldMap<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k.as_ref(), v.as_ref())?;
        }
        m.end()
    }
}

struct SpanOut<'r, 'e>(&'r Span<'e>);

impl Serialize for SpanOut<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("name", self.0.name.as_ref())?;
        m.serialize_entry("fields", &FieldMap(&self.0.fields))?;
        m.end()
    }
}

#[derive(Serialize)]
struct EventOut<'r, 'e> {
    kind: &'static str,
    source: &'r str,
    line: u64,
    lines: u32,
    producer: &'static str,
    component: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    level: Option<Level>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uptime: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<&'r str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    wrapper_timestamp: Option<&'r str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pod: Option<&'r str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    container: Option<&'r str>,
    /// Text before the record on its line (a prompt, a describe field).
    #[serde(skip_serializing_if = "Option::is_none")]
    lead: Option<&'r str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thread: Option<&'r str>,
    spans: Vec<SpanOut<'r, 'e>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<&'r str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'r str>,
    fields: FieldMap<'r, 'e>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'r str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    error_sources: Vec<&'r str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tls: Option<Tls<'r>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_addr: Option<&'r str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target_addr: Option<&'r str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dst: Option<Cow<'r, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    endpoint: Option<&'r str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sz: Option<u64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated_head: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    continuation: Option<&'r str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metric: Option<MetricOut<'r>>,
}

/// A line of exposition text: `{"kind": "sample", "name", "value",
/// "timestamp"}` (labels are the event's `fields`), `help`, `type`, `unit`,
/// `eof`, `pod` (`name`, `index`, `of`) or `frame`.
#[derive(Serialize)]
struct MetricOut<'r> {
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'r str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    r#type: Option<&'r str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    of: Option<u32>,
}

fn metric_out<'r>(m: &Metric<'r>) -> MetricOut<'r> {
    let mut o = MetricOut {
        kind: "frame",
        name: None,
        value: None,
        timestamp: None,
        r#type: None,
        index: None,
        of: None,
    };
    match *m {
        Metric::Sample {
            name,
            value,
            timestamp,
        } => {
            o.kind = "sample";
            o.name = Some(name);
            o.value = Some(value);
            o.timestamp = timestamp;
        }
        Metric::Help { name } => (o.kind, o.name) = ("help", Some(name)),
        Metric::Type { name, kind } => {
            (o.kind, o.name, o.r#type) = ("type", Some(name), Some(kind))
        }
        Metric::Unit { name } => (o.kind, o.name) = ("unit", Some(name)),
        Metric::Eof => o.kind = "eof",
        Metric::Pod { name, index, of } => {
            (o.kind, o.name, o.index, o.of) = ("pod", Some(name), Some(index), Some(of))
        }
        Metric::Frame => {}
    }
    o
}

#[derive(Serialize)]
struct UnparsedOut<'r> {
    kind: &'static str,
    source: &'r str,
    line: u64,
    lines: u32,
    text: &'r str,
    #[serde(skip_serializing_if = "Option::is_none")]
    looks_like: Option<&'static str>,
}

fn event_out<'r, 'e>(source: &'r str, e: &'r Event<'e>) -> EventOut<'r, 'e> {
    EventOut {
        kind: "event",
        source,
        line: e.line,
        lines: e.lines,
        producer: e.producer.as_str(),
        component: e.component.as_str(),
        level: e.level,
        uptime: e.uptime,
        timestamp: e.timestamp.as_deref(),
        wrapper_timestamp: e.wrapper.timestamp,
        pod: e.wrapper.pod,
        container: e.wrapper.container,
        lead: e.wrapper.lead,
        thread: e.thread.as_deref(),
        spans: e.spans.iter().map(SpanOut).collect(),
        target: e.target.as_deref(),
        message: e.message.as_deref(),
        fields: FieldMap(&e.fields),
        error: e.error(),
        error_sources: e.error_sources(),
        tls: e.tls(),
        client_addr: e.client_addr(),
        target_addr: e.target_addr(),
        dst: e.dst(),
        endpoint: e.endpoint(),
        status: e.status(),
        sz: e.sz(),
        truncated_head: e.truncated_head,
        continuation: e.continuation.as_deref(),
        metric: e.metric.as_ref().map(metric_out),
    }
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
    let r = match rec {
        Record::Event(e) => serde_json::to_writer(&mut *out, &event_out(source, e)),
        Record::Unparsed {
            line,
            text,
            looks_like,
        } => serde_json::to_writer(
            &mut *out,
            &UnparsedOut {
                kind: "unparsed",
                source,
                line: *line,
                lines: 1,
                text,
                looks_like: looks_like.map(|f| f.as_str()),
            },
        ),
    };
    // Serializing to a Vec cannot fail: every value is a string or number.
    debug_assert!(r.is_ok());
    out.push(b'\n');
}
