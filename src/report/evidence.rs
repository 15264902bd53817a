//! Evidence lines for a terminal. A line is cut in three: the head (time,
//! level), the span stack, and the tail (target, message, fields). A line
//! too long for the screen loses the middle of its span stack only: the
//! message and the error that make it evidence always stay.

use crate::parse::{Event, Producer};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parts {
    pub head: String,
    pub spans: String,
    pub tail: String,
}

/// Bytes of an evidence line kept when it is stored: a line of megabytes
/// (up to `--max-line`) is kept as its start and end, so a report's memory
/// does not grow with the input's line length.
const MAX_STORED: usize = 4096;

/// `s` cut to about `MAX_STORED` bytes: its start and its end (where a
/// log line keeps its message and error), with the middle's size told.
pub fn stored(s: &str) -> String {
    if s.len() <= MAX_STORED {
        return s.to_string();
    }
    let mut head = MAX_STORED / 2;
    while !s.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = s.len() - MAX_STORED / 2;
    while !s.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}…[{} bytes]…{}", &s[..head], tail - head, &s[tail..])
}

/// Where `inner` starts in `outer`, when it is a slice of it.
fn offset(outer: &str, inner: &str) -> Option<usize> {
    let (o, i) = (outer.as_ptr() as usize, inner.as_ptr() as usize);
    (i >= o && i + inner.len() <= o + outer.len()).then(|| i - o)
}

/// The parts of an event's line; `None` when it has no span stack to give
/// up (the line is then shown whole).
pub fn parts(ev: &Event<'_>) -> Option<Parts> {
    let p = whole_parts(ev)?;
    Some(Parts {
        head: stored(&p.head),
        spans: stored(&p.spans),
        tail: stored(&p.tail),
    })
}

fn whole_parts(ev: &Event<'_>) -> Option<Parts> {
    let first = ev.spans.first()?;
    match ev.producer {
        Producer::ProxyJson | Producer::LogrusJson | Producer::AccessJson => Some(normalised(ev)),
        _ => {
            // A tracing text line: the span stack is the slice between the
            // head and `target: body`.
            let text: &str = &ev.text;
            let start = offset(text, &first.name)?;
            let target = ev.target.as_deref()?;
            let body_at = offset(text, ev.body).filter(|_| !ev.body.is_empty())?;
            let tail_at = body_at.checked_sub(target.len() + 2)?;
            if start > tail_at || text[tail_at..body_at] != format!("{target}: ") {
                return None;
            }
            Some(Parts {
                head: text[..start].to_string(),
                spans: text[start..tail_at].to_string(),
                tail: text[tail_at..].to_string(),
            })
        }
    }
}

/// A JSON event as the proxy's text format would print it: a raw object
/// starts with the span stack and buries the message.
fn normalised(ev: &Event<'_>) -> Parts {
    let mut head = String::new();
    if let Some(t) = &ev.timestamp {
        head.push_str(t);
        head.push(' ');
    }
    if let Some(l) = ev.level {
        head.push_str(&l.as_str().to_uppercase());
        head.push(' ');
    }
    let spans: Vec<String> = ev
        .spans
        .iter()
        .map(|s| {
            let fields: Vec<String> = s.fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
            if fields.is_empty() {
                s.name.to_string()
            } else {
                format!("{}{{{}}}", s.name, fields.join(" "))
            }
        })
        .collect();
    let mut tail = String::new();
    if let Some(t) = &ev.target {
        tail.push_str(t);
        tail.push_str(": ");
    }
    tail.push_str(ev.message());
    for (k, v) in &ev.fields {
        tail.push_str(&format!(" {k}={v}"));
    }
    Parts {
        head,
        spans: format!("{}: ", spans.join(":")),
        tail,
    }
}

/// The line in at most `width` characters where the span stack allows;
/// the head and tail are never cut.
pub fn fit(p: &Parts, width: usize) -> String {
    let len = |s: &str| s.chars().count();
    let fixed = len(&p.head) + len(&p.tail);
    let spans = len(&p.spans);
    if fixed + spans <= width {
        return format!("{}{}{}", p.head, p.spans, p.tail);
    }
    // Keep the outermost span's start (inbound/outbound, the listener) and
    // the innermost's end (the separator before the target).
    let room = width.saturating_sub(fixed + 1).min(spans);
    let keep_head = room * 2 / 3;
    let keep_tail = room - keep_head;
    let h: String = p.spans.chars().take(keep_head).collect();
    let t: String = p.spans.chars().skip(spans - keep_tail).collect();
    format!("{}{h}…{t}{}", p.head, p.tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_cuts_only_the_spans() {
        let p = Parts {
            head: "[ 1.0s]  WARN ".into(),
            spans: "outbound:proxy{addr=10.0.0.1:80}:service{ns=a name=b}: ".into(),
            tail: "linkerd_app: Failed to connect error=timed out".into(),
        };
        let s = fit(&p, 75);
        assert!(s.starts_with("[ 1.0s]  WARN outbound"), "{s}");
        assert!(
            s.ends_with("linkerd_app: Failed to connect error=timed out"),
            "{s}"
        );
        assert!(s.contains('…'));
        assert_eq!(fit(&p, 500), format!("{}{}{}", p.head, p.spans, p.tail));
    }
}
