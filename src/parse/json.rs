//! JSON producers: the proxy's tracing JSON (both timestamp styles, keys in
//! any order, dotted keys flat or nested), the policy controller's, logrus
//! JSON and the JSON access log.
//!
//! Zero-copy: [`json_scan`](super::json_scan) checks the syntax and hands
//! back each member's value as raw text borrowed from the line; strings are borrowed unless
//! they hold escapes, numbers and booleans are their JSON text. Only nested
//! objects (a pipeline's re-nested dotted keys) and escaped strings allocate.

use super::event::{Event, Level, Producer, Span, Str};
use super::json_scan::{object as members, objects, Members};
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

fn get<'a>(m: &Members<'a>, key: &str) -> Option<&'a str> {
    m.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

pub fn parse<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let obj = members(s)?;
    let has = |k: &str| get(&obj, k).is_some();
    if has("fields") || (has("target") && has("level")) {
        tracing_json(s, &obj, ev);
    } else if has("level") && has("msg") {
        ev.reset(Producer::LogrusJson, s);
        flatten(&obj, &mut |k, v| match k.as_ref() {
            "level" => ev.level = Level::parse(&v),
            "msg" => ev.message = Some(v),
            "time" => ev.timestamp = Some(v),
            _ => ev.fields.push((k, v)),
        });
    } else if has("method") && (has("client.addr") || has("client")) {
        ev.reset(Producer::AccessJson, s);
        flatten(&obj, &mut |k, v| {
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
/// text: no log pipeline nests dotted keys this deep, and each level is
/// parsed again, so the depth bounds the work per line.
const MAX_DEPTH: usize = 8;

/// Hands each member to `out` with nested objects flattened back to dotted
/// keys (`{"client":{"addr":…}}` → `client.addr`), as log pipelines re-nest
/// them. Most members are flat: they are handed over as they are, without
/// copying the object.
fn flatten<'a>(obj: &Members<'a>, out: &mut impl FnMut(Str<'a>, Str<'a>)) {
    for (k, v) in &obj.0 {
        match nested(v) {
            Some(inner) => flatten_nested(k.to_string(), inner, out),
            None => out(k.clone(), scalar(v)),
        }
    }
}

/// The members of a value that is an object.
fn nested(v: &str) -> Option<Members<'_>> {
    Some(v).filter(|v| v.starts_with('{')).and_then(members)
}

/// The members of a nested object, under `prefix`. Iterative, with a stack
/// of at most `MAX_DEPTH` objects (the top one counted): the input never
/// decides how deep this recurses.
fn flatten_nested<'a>(prefix: String, obj: Members<'a>, out: &mut impl FnMut(Str<'a>, Str<'a>)) {
    // (key prefix, members, next member)
    let mut stack: Vec<(String, Members<'a>, usize)> = vec![(prefix, obj, 0)];
    while let Some((p, m, i)) = stack.last_mut() {
        let Some((k, v)) = m.0.get(*i) else {
            stack.pop();
            continue;
        };
        *i += 1;
        let (key, v) = (format!("{p}.{k}"), *v);
        match Some(v).filter(|_| stack.len() < MAX_DEPTH).and_then(nested) {
            Some(inner) => stack.push((key, inner, 0)),
            None => out(Cow::Owned(key), scalar(v)),
        }
    }
}

/// `ThreadId(1)` → `1`.
fn thread_number(t: &str) -> &str {
    t.trim_start_matches("ThreadId(").trim_end_matches(')')
}

fn tracing_json<'a>(s: &'a str, obj: &Members<'a>, ev: &mut Event<'a>) {
    let target = get(obj, "target").map(scalar);
    let is_policy = get(obj, "threadId").is_none()
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
    ev.level = get(obj, "level").map(scalar).and_then(|l| Level::parse(&l));
    if let Some(ts) = get(obj, "timestamp").map(scalar) {
        match uptime(&ts) {
            Some((u, _, _)) => ev.uptime = Some(u),
            None if ts.trim_matches('.').is_empty() => {}
            None => ev.timestamp = Some(ts),
        }
    }
    if let Some(t) = get(obj, "threadId").map(scalar) {
        ev.thread = Some(match t {
            Cow::Borrowed(t) => Cow::Borrowed(thread_number(t)),
            Cow::Owned(t) => Cow::Owned(thread_number(&t).to_string()),
        });
    }
    if let Some(fields) = get(obj, "fields").and_then(members) {
        flatten(&fields, &mut |k, v| {
            if k == "message" {
                ev.message = Some(v);
            } else if !k.starts_with("log.") {
                ev.fields.push((k, v));
            }
        });
    }
    // `span` (v2.124.2) repeats the last of `spans`: not read. The array is
    // read in one pass; what is not an object is skipped.
    let Some(raw) = get(obj, "spans") else { return };
    for o in objects(raw).unwrap_or_default() {
        let mut span = Span {
            name: get(&o, "name").map(scalar).unwrap_or_default(),
            fields: SmallVec::new(),
        };
        flatten(&o, &mut |k, v| {
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
}
