//! The Prometheus text exposition format as the proxy (and the service
//! mirror) writes it, one line at a time: the legacy `linkerd-metrics`
//! section, the OpenMetrics section that follows it from 2.15 (`# UNIT`,
//! `# EOF`), Go's `expfmt` (`--obfuscate`, the service mirror), labels
//! copied from UIs with spaces, and the `linkerd diagnostics proxy-metrics`
//! framing (`#`, `# POD name (i of n)`). Labels land in the event's
//! fields; a line that breaks the grammar (cut, a bad escape, a huge label
//! set) is not an event, so it is kept as unparsed.

use super::era::EraCue;
use super::event::{Component, Era, Event, Metric, Producer};
use std::borrow::Cow;

/// Labels one sample may carry before the line counts as malformed: the
/// proxy's widest series have about twenty.
const MAX_LABELS: usize = 128;
/// Longer lines are not exposition text (or not whole).
const MAX_LINE: usize = 64 << 10;

/// Parses one line of exposition text into `ev`.
pub fn parse<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let s = s.trim_end();
    if s.len() > MAX_LINE {
        return None;
    }
    let metric = if let Some(rest) = s.strip_prefix('#') {
        comment(rest, ev)?
    } else {
        sample(s, ev)?
    };
    ev.metric = Some(metric);
    Some(())
}

/// `# HELP`, `# TYPE`, `# UNIT`, `# EOF`, the CLI's `# POD` header and its
/// bare `#` lines; any other comment is not ours.
fn comment<'a>(rest: &'a str, ev: &mut Event<'a>) -> Option<Metric<'a>> {
    if rest.trim().is_empty() {
        ev.reset(Producer::Metrics, "");
        return Some(Metric::Frame);
    }
    let rest = rest.strip_prefix(' ')?;
    let (word, tail) = rest.split_once(' ').unwrap_or((rest, ""));
    let (name, text) = tail.split_once(' ').unwrap_or((tail, ""));
    ev.reset(Producer::Metrics, "");
    let m = match word {
        "HELP" if is_name(name) => {
            ev.message = Some(Cow::Borrowed(text));
            Metric::Help { name }
        }
        "TYPE" if is_name(name) && is_type(text) => Metric::Type { name, kind: text },
        "UNIT" if is_name(name) => Metric::Unit { name },
        "EOF" if tail.is_empty() => Metric::Eof,
        "POD" => pod_header(tail)?,
        _ => return None,
    };
    Some(m)
}

fn is_type(t: &str) -> bool {
    matches!(
        t,
        "counter"
            | "gauge"
            | "histogram"
            | "summary"
            | "untyped"
            | "unknown"
            | "info"
            | "stateset"
            | "gaugehistogram"
    )
}

/// `web-6d8f7c9b5-4hx2q (1 of 3)`.
fn pod_header(s: &str) -> Option<Metric<'_>> {
    let (name, count) = s.split_once(" (")?;
    let (i, n) = count.strip_suffix(')')?.split_once(" of ")?;
    let (index, of) = (i.parse().ok()?, n.parse().ok()?);
    (!name.is_empty() && !name.contains(' ')).then_some(Metric::Pod { name, index, of })
}

fn is_name(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_' || c == b':')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':')
}

fn name_len(s: &[u8], first: impl Fn(u8) -> bool, rest: impl Fn(u8) -> bool) -> usize {
    match s.first() {
        Some(&c) if first(c) => 1 + s[1..].iter().take_while(|&&c| rest(c)).count(),
        _ => 0,
    }
}

/// `name{label="value",…} value [timestamp]`, an OpenMetrics exemplar
/// (` # {…} value`) ignored.
fn sample<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<Metric<'a>> {
    let b = s.as_bytes();
    let n = name_len(
        b,
        |c| c.is_ascii_alphabetic() || c == b'_' || c == b':',
        |c| c.is_ascii_alphanumeric() || c == b'_' || c == b':',
    );
    if n == 0 {
        return None;
    }
    let name = &s[..n];
    let mut rest = &s[n..];
    ev.reset(Producer::Metrics, "");
    let labelled = rest.starts_with('{');
    if labelled {
        rest = labels(&rest[1..], ev)?;
    }
    // A word and a number (`Step 1`) is prose, not a sample: metric names
    // have an underscore, or the sample has labels.
    if !labelled && !name.contains(['_', ':']) {
        return None;
    }
    let rest = rest.strip_prefix([' ', '\t'])?.trim_start();
    let rest = rest.split(" # ").next().unwrap_or(rest);
    let mut words = rest.split_ascii_whitespace();
    let value = number(words.next()?)?;
    let timestamp = match words.next() {
        Some(t) => Some(number(t).filter(|t| t.is_finite())?),
        None => None,
    };
    if words.next().is_some() {
        return None;
    }
    ev.message = Some(Cow::Borrowed(name));
    Some(Metric::Sample {
        name,
        value,
        timestamp,
    })
}

/// A sample value: floats in every spelling the encoders use (`42`,
/// `1.0`, `2.894311e+06`, `+Inf`, `-Inf`, `NaN`).
fn number(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ if s
            .bytes()
            .all(|c| c.is_ascii_digit() || b"+-.eE".contains(&c)) =>
        {
            s.parse().ok()
        }
        _ => None,
    }
}

/// The label set after `{`, into `ev.fields`; returns the text after `}`.
fn labels<'a>(mut s: &'a str, ev: &mut Event<'a>) -> Option<&'a str> {
    loop {
        s = s.trim_start();
        if let Some(r) = s.strip_prefix('}') {
            return Some(r);
        }
        if ev.fields.len() >= MAX_LABELS {
            return None;
        }
        let n = name_len(
            s.as_bytes(),
            |c| c.is_ascii_alphabetic() || c == b'_',
            |c| c.is_ascii_alphanumeric() || c == b'_',
        );
        if n == 0 {
            return None;
        }
        let key = &s[..n];
        let r = s[n..].trim_start().strip_prefix('=')?.trim_start();
        let r = r.strip_prefix('"')?;
        let (value, r) = quoted(r)?;
        ev.fields.push((Cow::Borrowed(key), value));
        s = r.trim_start();
        if let Some(r) = s.strip_prefix(',') {
            s = r;
        } else if !s.starts_with('}') {
            return None;
        }
    }
}

/// A label value up to its closing quote, unescaping `\\`, `\"` and `\n`;
/// any other escape makes the line malformed.
fn quoted(s: &str) -> Option<(Cow<'_, str>, &str)> {
    let b = s.as_bytes();
    let end = b.iter().position(|&c| c == b'"' || c == b'\\')?;
    if b[end] == b'"' {
        return Some((Cow::Borrowed(&s[..end]), &s[end + 1..]));
    }
    let mut out = String::from(&s[..end]);
    let mut i = end;
    while i < b.len() {
        match b[i] {
            b'"' => return Some((Cow::Owned(out), &s[i + 1..])),
            b'\\' => {
                match b.get(i + 1)? {
                    b'\\' => out.push('\\'),
                    b'"' => out.push('"'),
                    b'n' => out.push('\n'),
                    _ => return None,
                }
                i += 2;
            }
            _ => {
                let len = s[i..].chars().next()?.len_utf8();
                out.push_str(&s[i..i + len]);
                i += len;
            }
        }
    }
    None
}

/// What a sample tells of the proxy's release: `proxy_build_info`'s
/// `version` (2.13+), or a family only some releases export.
pub fn era_cue(name: &str, ev: &Event<'_>) -> EraCue {
    let mut c = EraCue::default();
    match name {
        "proxy_build_info" => c.exact = ev.field("version").and_then(Era::of_proxy_version),
        // Renamed to inbound/outbound_http_errors_total in 2.11.
        "request_errors_total" => c.max = Some(Era::V2_10),
        "inbound_http_errors_total" | "outbound_http_errors_total" => c.min = Some(Era::V2_10),
        // The prometheus-client registry came with 2.15.
        "process_threads" => c.min = Some(Era::V2_15),
        _ => {}
    }
    c
}

/// The multicluster families come from the service mirror, the rest from
/// the proxy.
pub fn component_of(name: &str) -> Component {
    if [
        "gateway_alive",
        "gateway_probe",
        "gateway_latency",
        "gateway_enabled",
    ]
    .iter()
    .any(|p| name.starts_with(p))
        || name.starts_with("service_mirror_")
        || name.starts_with("probe_manager_")
    {
        Component::ServiceMirror
    } else {
        Component::Proxy
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::with;

    /// Name, value, timestamp and labels of one sample.
    type Sample = (String, f64, Option<f64>, Vec<(String, String)>);

    fn sample_of(s: &str) -> Option<Sample> {
        let ev = with(parse, s)?;
        match ev.metric? {
            Metric::Sample {
                name,
                value,
                timestamp,
            } => Some((
                name.to_string(),
                value,
                timestamp,
                ev.fields
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )),
            _ => None,
        }
    }

    #[test]
    fn samples_in_every_encoder_spelling() {
        let (n, v, t, l) =
            sample_of(r#"tcp_open_total{direction="outbound",peer="dst"} 0"#).unwrap();
        assert_eq!((n.as_str(), v, t), ("tcp_open_total", 0.0, None));
        assert_eq!(l[1], ("peer".into(), "dst".into()));
        assert_eq!(
            sample_of("process_start_time_seconds 1724144400.123408")
                .unwrap()
                .1,
            1724144400.123408
        );
        assert_eq!(
            sample_of("gateway_probe_latency_ms_sum{target_cluster_name=\"east\"} 2.894311e+06")
                .unwrap()
                .1,
            2894311.0
        );
        assert_eq!(
            sample_of(r#"x_bucket{le="+Inf"} 5"#).unwrap().3[0].1,
            "+Inf"
        );
        assert!(sample_of("x_sum NaN").unwrap().1.is_nan());
        assert_eq!(sample_of("x_total +Inf").unwrap().1, f64::INFINITY);
        assert_eq!(sample_of("x_total -Inf").unwrap().1, f64::NEG_INFINITY);
        // Optional timestamps (ms), spaces from UIs, a trailing comma.
        let (_, v, t, l) = sample_of(r#"up_total{a="b", c = "d",} 3 1724144400000"#).unwrap();
        assert_eq!((v, t, l.len()), (3.0, Some(1724144400000.0), 2));
        // An exemplar is not a timestamp.
        assert_eq!(
            sample_of(r#"a_total 1 # {trace_id="x"} 1.0"#).unwrap().2,
            None
        );
        assert_eq!(sample_of("up{} 1").unwrap().0, "up");
    }

    #[test]
    fn escapes_in_label_values() {
        let l = sample_of(r#"m_total{a="x\"y\\z\nw",b="é"} 1"#).unwrap().3;
        assert_eq!(l[0].1, "x\"y\\z\nw");
        assert_eq!(l[1].1, "é");
    }

    #[test]
    fn malformed_lines_are_not_samples() {
        for s in [
            r#"tcp_open_total{direction="outbound",peer="d"#,
            r#"tcp_open_total{direction="out"#,
            r#"m_total{a="\q"} 1"#,
            r#"m_total{a=b} 1"#,
            r#"m_total{="b"} 1"#,
            "m_total 1 2 3",
            "m_total one",
            "m_total",
            "Step 1",
            "1abc_total 3",
            "m_total 0x10",
        ] {
            assert!(with(parse, s).is_none(), "{s}");
        }
        let huge = format!(
            "m_total{{{}}} 1",
            (0..500)
                .map(|i| format!("l{i}=\"v\""))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert!(with(parse, &huge).is_none());
    }

    #[test]
    fn comments_and_framing() {
        let m = |s| with(parse, s).and_then(|e| e.metric);
        assert!(matches!(
            m("# HELP tcp_open_total Total count"),
            Some(Metric::Help {
                name: "tcp_open_total"
            })
        ));
        assert!(matches!(
            m("# TYPE x counter"),
            Some(Metric::Type {
                kind: "counter",
                ..
            })
        ));
        assert!(matches!(m("# UNIT x seconds"), Some(Metric::Unit { .. })));
        assert!(matches!(m("# EOF"), Some(Metric::Eof)));
        assert!(matches!(m("#"), Some(Metric::Frame)));
        assert!(matches!(
            m("# POD linkerd-gateway-6c5f8d9b7-x2k8p (1 of 3)"),
            Some(Metric::Pod {
                name: "linkerd-gateway-6c5f8d9b7-x2k8p",
                index: 1,
                of: 3
            })
        ));
        for s in [
            "# TYPE x bogus",
            "# Problem",
            "## HELP x y",
            "# POD (1 of 1)",
        ] {
            assert!(m(s).is_none(), "{s}");
        }
    }
}
