//! JSON producers: the proxy's tracing JSON (both timestamp styles, keys in
//! any order, dotted keys flat or nested), the policy controller's, logrus
//! JSON and the JSON access log.

use super::event::{Event, Fields, Level, Producer, Span, Str};
use super::plain::uptime;
use serde_json::{Map, Value};
use smallvec::SmallVec;
use std::borrow::Cow;

pub fn parse<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(s) else {
        return None;
    };
    let has = |k: &str| obj.contains_key(k);
    if has("fields") || (has("target") && has("level")) {
        tracing_json(s, obj, ev);
        Some(())
    } else if has("level") && has("msg") {
        logrus_json(s, obj, ev);
        Some(())
    } else if has("method") && (has("client.addr") || has("client")) {
        access_json(s, obj, ev);
        Some(())
    } else {
        None
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Flattens nested objects back to dotted keys (`{"client":{"addr":…}}` →
/// `client.addr`), as log pipelines re-nest them.
fn flatten<'a, const N: usize>(
    prefix: &str,
    obj: &Map<String, Value>,
    out: &mut SmallVec<[(Str<'a>, Str<'a>); N]>,
    skip: &[&str],
) where
    [(Str<'a>, Str<'a>); N]: smallvec::Array<Item = (Str<'a>, Str<'a>)>,
{
    for (k, v) in obj {
        if prefix.is_empty() && skip.contains(&k.as_str()) {
            continue;
        }
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Object(inner) => flatten(&key, inner, out, skip),
            other => out.push((Cow::Owned(key), Cow::Owned(scalar(other)))),
        }
    }
}

fn tracing_json<'a>(s: &'a str, mut obj: Map<String, Value>, ev: &mut Event<'a>) {
    let target = obj.get("target").map(scalar);
    let is_policy = !obj.contains_key("threadId")
        && target
            .as_deref()
            .is_some_and(|t| t.starts_with("linkerd_policy") || t.starts_with("kubert"));
    let producer = if is_policy {
        Producer::PolicyController
    } else {
        Producer::ProxyJson
    };
    ev.reset(producer, s);
    ev.target = target.map(Cow::Owned);
    ev.level = obj
        .get("level")
        .and_then(Value::as_str)
        .and_then(Level::parse);
    if let Some(ts) = obj.get("timestamp").and_then(Value::as_str) {
        match uptime(ts) {
            Some((u, _, _)) => ev.uptime = Some(u),
            None if ts.trim_matches('.').is_empty() => {}
            None => ev.timestamp = Some(Cow::Owned(ts.to_string())),
        }
    }
    if let Some(t) = obj.get("threadId").and_then(Value::as_str) {
        let id = t.trim_start_matches("ThreadId(").trim_end_matches(')');
        ev.thread = Some(Cow::Owned(id.to_string()));
    }
    if let Some(Value::Object(fields)) = obj.remove("fields") {
        let mut f: Fields = SmallVec::new();
        flatten("", &fields, &mut f, &[]);
        for (k, v) in f {
            if k == "message" {
                ev.message = Some(v);
            } else if !k.starts_with("log.") {
                ev.fields.push((k, v));
            }
        }
    }
    if let Some(Value::Array(spans)) = obj.get("spans") {
        for sp in spans {
            if let Value::Object(o) = sp {
                let mut span = Span {
                    name: Cow::Owned(o.get("name").map(scalar).unwrap_or_default()),
                    fields: SmallVec::new(),
                };
                flatten("", o, &mut span.fields, &["name"]);
                ev.spans.push(span);
            }
        }
    }
}

fn logrus_json<'a>(s: &'a str, obj: Map<String, Value>, ev: &mut Event<'a>) {
    ev.reset(Producer::LogrusJson, s);
    let mut rest: Fields = SmallVec::new();
    flatten("", &obj, &mut rest, &[]);
    for (k, v) in rest {
        match k.as_ref() {
            "level" => ev.level = Level::parse(&v),
            "msg" => ev.message = Some(v),
            "time" => ev.timestamp = Some(v),
            _ => ev.fields.push((k, v)),
        }
    }
}

fn access_json<'a>(s: &'a str, obj: Map<String, Value>, ev: &mut Event<'a>) {
    ev.reset(Producer::AccessJson, s);
    let mut f: Fields = SmallVec::new();
    flatten("", &obj, &mut f, &[]);
    for (k, v) in f {
        if k == "timestamp" {
            ev.timestamp = Some(v);
        } else {
            ev.fields.push((k, v));
        }
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
    fn uptime_timestamp_and_log_keys() {
        let ev = with(parse, r#"{"timestamp":"[     0.002747s]","level":"WARN","fields":{"message":"m","log.target":"rustls","log.line":580,"port":4143},"target":"rustls::common_state"}"#).unwrap();
        assert_eq!(ev.uptime, Some(0.002747));
        assert_eq!(ev.fields.len(), 1);
        assert_eq!(ev.field("port"), Some("4143"));
    }
}
