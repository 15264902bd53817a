//! JSON producers: the proxy's tracing JSON (both timestamp styles, keys in
//! any order, dotted keys flat or nested), the policy controller's, logrus
//! JSON and the JSON access log.
//!
//! Zero-copy: [`json_scan`](super::json_scan) reads the line once into
//! nodes whose values are raw text borrowed from the line; strings are
//! borrowed unless they hold escapes, numbers and booleans are their JSON
//! text. Only keys of re-nested objects and escaped strings allocate.

use super::event::{Event, Level, Producer, Span, Str};
use super::json_scan::{object, Kind, Node, Tree};
use super::plain::uptime;
use smallvec::SmallVec;
use std::borrow::Cow;

/// A scalar's text: a string's contents (decoded), or the JSON text of a
/// number, boolean, null or array.
pub(super) fn scalar(t: &str) -> Str<'_> {
    match t.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(inner) if !inner.contains('\\') => Cow::Borrowed(inner),
        // A lone surrogate (`\ud800`) is valid JSON text but no string:
        // keep it as written.
        Some(inner) => serde_json::from_str(t).map_or(Cow::Borrowed(inner), Cow::Owned),
        None => Cow::Borrowed(t),
    }
}

/// A node's text as [`scalar`] reads it; a string the scan found no
/// escape in is not looked through again.
fn text<'a>(n: &Node<'a>) -> Str<'a> {
    match n.raw.as_bytes() {
        [b'"', .., b'"'] if !n.escaped => Cow::Borrowed(&n.raw[1..n.raw.len() - 1]),
        _ => scalar(n.raw),
    }
}

/// The line's own members that tell its producer and that a tracing line
/// is read from, the first of each name, found in one pass over them.
#[derive(Default)]
struct Top {
    fields: Option<usize>,
    target: Option<usize>,
    level: Option<usize>,
    msg: Option<usize>,
    method: Option<usize>,
    client: Option<usize>,
    thread: Option<usize>,
    timestamp: Option<usize>,
    spans: Option<usize>,
}

impl Top {
    fn of(t: &Tree<'_>) -> Top {
        let mut top = Top::default();
        for j in t.inside(0) {
            let slot = match t.node(j).key.as_ref() {
                "fields" => &mut top.fields,
                "target" => &mut top.target,
                "level" => &mut top.level,
                "msg" => &mut top.msg,
                "method" => &mut top.method,
                "client.addr" | "client" => &mut top.client,
                "threadId" => &mut top.thread,
                "timestamp" => &mut top.timestamp,
                "spans" => &mut top.spans,
                _ => continue,
            };
            slot.get_or_insert(j);
        }
        top
    }
}

pub fn parse<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let t = object(s)?;
    let top = Top::of(&t);
    if top.fields.is_some() || (top.target.is_some() && top.level.is_some()) {
        tracing_json(s, &t, &top, ev);
    } else if top.level.is_some() && top.msg.is_some() {
        ev.reset(Producer::LogrusJson, s);
        flatten(&t, 0, &mut |k, v| match k.as_ref() {
            "level" => ev.level = Level::parse(&v),
            "msg" => ev.message = Some(v),
            "time" => ev.timestamp = Some(v),
            _ => ev.fields.push((k, v)),
        });
    } else if top.method.is_some() && top.client.is_some() {
        ev.reset(Producer::AccessJson, s);
        flatten(&t, 0, &mut |k, v| {
            if k == "timestamp" {
                ev.timestamp = Some(v);
            } else {
                ev.fields.push((k, v));
            }
        });
    } else {
        return None;
    }
    Some(())
}

/// Objects nested deeper than this inside a member are kept as their JSON
/// text: no log pipeline nests dotted keys this deep, and the depth bounds
/// what a line keeps of its nodes.
pub(super) const MAX_DEPTH: usize = 8;

/// Hands each member of object `i` to `out` with nested objects flattened
/// back to dotted keys (`{"client":{"addr":…}}` → `client.addr`), as log
/// pipelines re-nest them. Most members are flat: they are handed over as
/// they are.
fn flatten<'a>(t: &Tree<'a>, i: usize, out: &mut impl FnMut(Str<'a>, Str<'a>)) {
    for j in t.inside(i) {
        let n = t.node(j);
        if n.kind == Kind::Object {
            flatten_nested(t, n.key.to_string(), j, out);
        } else {
            out(n.key.clone(), text(n));
        }
    }
}

/// The members of the nested object `i`, under `prefix`. Iterative, with a
/// stack of at most `MAX_DEPTH` objects (the top one counted): the input
/// never decides how deep this recurses.
fn flatten_nested<'a>(
    t: &Tree<'a>,
    prefix: String,
    i: usize,
    out: &mut impl FnMut(Str<'a>, Str<'a>),
) {
    let mut stack = vec![(prefix, t.inside(i))];
    while let Some((p, members)) = stack.last_mut() {
        let Some(j) = members.next() else {
            stack.pop();
            continue;
        };
        let n = t.node(j);
        let key = format!("{p}.{}", n.key);
        if n.kind == Kind::Object && stack.len() < MAX_DEPTH {
            stack.push((key, t.inside(j)));
        } else {
            out(Cow::Owned(key), text(n));
        }
    }
}

/// `ThreadId(1)` → `1`.
fn thread_number(mut t: &str) -> &str {
    // As `trim_start_matches("ThreadId(")`, which searches for its pattern.
    while let Some(rest) = t.strip_prefix("ThreadId(") {
        t = rest;
    }
    t.trim_end_matches(')')
}

fn tracing_json<'a>(s: &'a str, t: &Tree<'a>, top: &Top, ev: &mut Event<'a>) {
    let get = |slot: Option<usize>| slot.map(|j| text(t.node(j)));
    let target = get(top.target);
    let is_policy = top.thread.is_none()
        && target
            .as_deref()
            .is_some_and(|t| t.starts_with("linkerd_policy") || t.starts_with("kubert"));
    let producer = if is_policy {
        Producer::PolicyController
    } else {
        Producer::ProxyJson
    };
    ev.reset(producer, s);
    ev.target = target;
    ev.level = get(top.level).and_then(|l| Level::parse(&l));
    if let Some(ts) = get(top.timestamp) {
        match uptime(&ts) {
            Some((u, _, _)) => ev.uptime = Some(u),
            None if ts.trim_matches('.').is_empty() => {}
            None => ev.timestamp = Some(ts),
        }
    }
    if let Some(th) = get(top.thread) {
        ev.thread = Some(match th {
            Cow::Borrowed(th) => Cow::Borrowed(thread_number(th)),
            Cow::Owned(th) => Cow::Owned(thread_number(&th).to_string()),
        });
    }
    if let Some(fields) = top.fields.filter(|&f| t.node(f).kind == Kind::Object) {
        flatten(t, fields, &mut |k, v| {
            if k == "message" {
                ev.message = Some(v);
            } else if !k.starts_with("log.") {
                ev.fields.push((k, v));
            }
        });
    }
    // `span` (v2.124.2) repeats the last of `spans`: not read. What is not
    // an object is skipped.
    let Some(spans) = top.spans.filter(|&s| t.node(s).kind == Kind::Array) else {
        return;
    };
    for o in t.inside(spans).filter(|&o| t.node(o).kind == Kind::Object) {
        let mut span = Span {
            name: t
                .get(o, "name")
                .map(|j| text(t.node(j)))
                .unwrap_or_default(),
            fields: SmallVec::new(),
        };
        flatten(t, o, &mut |k, v| {
            if k != "name" {
                span.fields.push((k, v));
            }
        });
        ev.spans.push(span);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::with;

    #[test]
    fn nested_and_reordered_keys_flatten() {
        let ev = with(parse, r#"{"threadId":"ThreadId(1)","spans":[{"name":"inbound"},{"server":{"addr":"10.0.1.32:9443"},"name":"accept","client":{"addr":"10.0.0.198:60736"}}],"level":"DEBUG","fields":{"message":"Connection closed"},"timestamp":"2026-01-12T15:39:45.802812Z","target":"linkerd_app_core::serve"}"#).unwrap();
        assert_eq!(ev.producer, Producer::ProxyJson);
        assert_eq!(ev.spans[1].field("client.addr"), Some("10.0.0.198:60736"));
        assert_eq!(ev.spans[1].name, "accept");
        assert_eq!(ev.thread.as_deref(), Some("1"));
        assert_eq!(ev.timestamp.as_deref(), Some("2026-01-12T15:39:45.802812Z"));
    }

    #[test]
    fn escapes_are_decoded_and_a_lone_surrogate_kept() {
        let ev = with(parse, r#"{"level":"WARN","target":"t","fields":{"message":"a \"b\"\n\u00e9","error":"x\ud800y","n":1E2}}"#).unwrap();
        assert_eq!(ev.message(), "a \"b\"\né");
        assert_eq!(ev.field("error"), Some("x\\ud800y"));
        assert_eq!(ev.field("n"), Some("1E2"));
    }

    #[test]
    fn uptime_timestamp_and_log_keys() {
        let ev = with(parse, r#"{"timestamp":"[     0.002747s]","level":"WARN","fields":{"message":"m","log.target":"rustls","log.line":580,"port":4143},"target":"rustls::common_state"}"#).unwrap();
        assert_eq!(ev.uptime, Some(0.002747));
        assert_eq!(ev.fields.len(), 1);
        assert_eq!(ev.field("port"), Some("4143"));
    }

    /// Objects in a span's member (the deepest a line is read) and in
    /// `fields` are flattened `MAX_DEPTH` levels down; the last key holds
    /// the rest as its JSON text.
    #[test]
    fn the_deepest_objects_read_are_kept_as_text() {
        let deep = format!(r#"{}{{"a":1}}{}"#, r#"{"a":"#.repeat(8), "}".repeat(8));
        let line = format!(
            r#"{{"level":"INFO","target":"t","fields":{{"message":"m","f":{deep}}},"spans":[{{"name":"s","a":{deep}}}]}}"#
        );
        let ev = with(parse, &line).unwrap();
        let key = ["a"; MAX_DEPTH + 1].join(".");
        assert_eq!(ev.spans[0].field(&key), Some(r#"{"a":1}"#));
        assert_eq!(ev.spans[0].fields.len(), 1);
        let key = format!("f.{}", ["a"; MAX_DEPTH].join("."));
        assert_eq!(ev.field(&key), Some(r#"{"a":1}"#));
    }

    /// Of a name given twice, the first member is read, as when each was
    /// looked up alone.
    #[test]
    fn the_first_of_a_repeated_name_is_read() {
        let ev = with(
            parse,
            r#"{"target":"a","level":"WARN","target":"b","fields":"x","fields":{"message":"m"}}"#,
        )
        .unwrap();
        assert_eq!(ev.target.as_deref(), Some("a"));
        assert_eq!(ev.message, None);
        let ev = with(
            parse,
            r#"{"method":"GET","client":1,"client.addr":"10.0.0.1:1","timestamp":"t"}"#,
        )
        .unwrap();
        assert_eq!(ev.producer, Producer::AccessJson);
        assert_eq!(ev.field("client.addr"), Some("10.0.0.1:1"));
    }
}
