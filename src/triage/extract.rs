//! Where a ticket holds evidence: fenced and unfenced blocks (logs, tool
//! output, manifests), log lines inside prose, inline code and emphasised
//! spans, quotes and indentation. Each piece keeps its line, so the reply
//! can quote it, and the label the prose before its block gave it
//! ("gateway logs:").

use crate::input::wrap::{unquote, unwrap};
use crate::parse::parse_line;
use crate::rules::unmatched::error_worded;
use regex::Regex;
use std::sync::LazyLock;

/// What a run of lines is, to triage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// Logs, or output no shape tells: read as a log.
    Log,
    /// `kubectl get`/`describe` output or a manifest: only its status
    /// fields and events are evidence; the rest is not a log.
    Kube,
    /// A YAML or JSON document that is not a log.
    Manifest,
    /// `curl -v`/`wget` output: the response and its errors are evidence.
    Curl,
    /// `linkerd check` output.
    Check,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A line of a block (or a log line standing alone in the prose).
    Line(Block),
    /// An inline code span, emphasised or quoted text inside a sentence.
    Span,
    /// A line of prose.
    Prose,
}

#[derive(Debug, Clone)]
pub struct Piece<'a> {
    pub line: u64,
    pub text: &'a str,
    pub kind: Kind,
    /// The next piece is this log line's hard-wrapped rest.
    pub continued: bool,
    /// The component the prose before the piece's block named.
    pub label: Option<&'static str>,
}

/// Components a reporter names before a block of their logs.
const LABELS: &[(&str, &str)] = &[
    ("service mirror", "service-mirror"),
    ("service-mirror", "service-mirror"),
    ("gateway", "gateway"),
    ("destination", "destination"),
    ("identity", "identity"),
    ("injector", "proxy-injector"),
    ("policy controller", "policy"),
    ("linkerd-init", "linkerd-init"),
    ("proxy-init", "linkerd-init"),
    ("cni", "linkerd-cni"),
    ("tap", "tap"),
    ("client", "client"),
    ("server", "server"),
];

/// The component a prose line names when it introduces what follows.
fn label_of(prose: &str) -> Option<&'static str> {
    let lower = prose.to_ascii_lowercase();
    let introduces = lower.trim_end().ends_with(':') || lower.contains("log");
    if !introduces {
        return None;
    }
    LABELS
        .iter()
        .find(|(w, _)| {
            lower.match_indices(w).any(|(i, _)| {
                let b = lower.as_bytes();
                (i == 0 || !b[i - 1].is_ascii_alphanumeric())
                    && b.get(i + w.len())
                        .is_none_or(|c| !c.is_ascii_alphanumeric())
            })
        })
        .map(|(_, l)| *l)
}

fn is_fence(s: &str) -> bool {
    let t = s.trim_start();
    let t = t.trim_start_matches('>').trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

static YAML: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(- )?[A-Za-z_][\w./-]*:( |$)").expect("static regex"));
static KUBE_HEAD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(NAME\s+READY\s+STATUS|LAST SEEN\s+TYPE\s+REASON|NAMESPACE\s+NAME\s+READY|Name:\s+\S|apiVersion: |kind: |Events:|Containers:|Init Containers:|\s*containerStatuses:)")
        .expect("static regex")
});

/// What a block is, from its lines.
fn classify(lines: &[&str], info: &str) -> Block {
    let info = info.to_ascii_lowercase();
    let body: Vec<&str> = lines
        .iter()
        .map(|l| l.trim_end())
        .filter(|l| !l.trim().is_empty())
        .collect();
    if body.is_empty() {
        return Block::Log;
    }
    let logs = body.iter().filter(|l| parse_line(l).is_some()).count();
    if body.iter().any(|l| {
        let t = l.trim_start().trim_start_matches("$ ");
        t.starts_with("curl ") || t.starts_with("wget ")
    }) || body
        .iter()
        .filter(|l| l.starts_with("* ") || l.starts_with("< HTTP/") || l.starts_with("> GET "))
        .count()
        >= 2
    {
        return Block::Curl;
    }
    if body.iter().any(|l| KUBE_HEAD.is_match(l)) {
        return Block::Kube;
    }
    let checks = body
        .iter()
        .filter(|l| l.starts_with('√') || l.starts_with('×') || l.starts_with('‼'))
        .count();
    if checks > 0 && checks * 4 >= body.len() - logs {
        return Block::Check;
    }
    // A manifest has several `key: value` lines, or says it is YAML; one
    // line such as `http: TLS handshake error …` is an error message.
    let yaml = body.iter().filter(|l| YAML.is_match(l)).count();
    let errors = body.iter().filter(|l| error_worded(l)).count();
    if logs * 4 < body.len()
        && (info == "yaml"
            || info == "yml"
            || (yaml * 2 > body.len() && body.len() >= 2 && errors * 2 < body.len()))
    {
        return Block::Manifest;
    }
    Block::Log
}

/// Inline code spans (any number of backticks), `**bold**` and quoted
/// text of three words or more, inside one line of prose.
fn spans(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'`' {
            let n = b[i..].iter().take_while(|c| **c == b'`').count();
            let fence = &line[i..i + n];
            if let Some(e) = line[i + n..].find(fence) {
                let inner = line[i + n..i + n + e].trim();
                if !inner.is_empty() {
                    out.push(inner);
                }
                i += n + e + n;
                continue;
            }
            // An unclosed span runs to the end of the line (it may close on
            // the next one).
            out.push(line[i + n..].trim());
            break;
        }
        i += 1;
    }
    for (open, close) in [("**", "**"), ("\"", "\""), ("'", "'"), ("“", "”")] {
        let mut rest = line;
        while let Some(s) = rest.find(open) {
            let r = &rest[s + open.len()..];
            let Some(e) = r.find(close) else { break };
            let inner = r[..e].trim();
            if inner.split_whitespace().count() >= 3 && !inner.contains('`') {
                out.push(inner);
            }
            rest = &r[e + close.len()..];
        }
    }
    out
}

/// Does a line of prose read as a sentence (rather than a pasted message)?
pub fn sentence_like(s: &str) -> bool {
    let s = s.trim();
    s.chars().next().is_some_and(|c| c.is_uppercase())
        && s.ends_with(['.', '?', '!', ':'])
        && s.split_whitespace().count() >= 4
}

/// The ticket's pieces, in order.
/// The lines of one block, as pieces of the kind their content shows.
fn push_block<'a>(
    out: &mut Vec<Piece<'a>>,
    lines: &[&'a str],
    range: std::ops::Range<usize>,
    info: &str,
    label: Option<&'static str>,
) {
    let block = classify(&lines[range.clone()], info);
    for j in range {
        out.push(Piece {
            line: j as u64 + 1,
            text: lines[j],
            kind: Kind::Line(block),
            continued: j + 1 < lines.len() && wraps(lines[j], lines[j + 1]),
            label,
        });
    }
}

pub fn pieces<'a>(lines: &[&'a str]) -> Vec<Piece<'a>> {
    let mut out = Vec::new();
    let mut label: Option<&'static str> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let n = i as u64 + 1;
        if is_fence(line) {
            let info = line
                .trim()
                .trim_start_matches('>')
                .trim()
                .trim_start_matches(['`', '~'])
                .trim();
            let start = i + 1;
            let end = (start..lines.len())
                .find(|&j| is_fence(lines[j]))
                .unwrap_or(lines.len());
            push_block(&mut out, lines, start..end, info, label);
            i = end + 1;
            continue;
        }
        if line.trim().is_empty() {
            i += 1;
            continue;
        }
        // An unfenced run: indented or quoted lines, or lines that parse
        // as records, together until a blank line or prose.
        let inner = unwrap(line).rest;
        let blockish = |l: &str| {
            parse_line(l).is_some()
                || l.starts_with("    ")
                || l.starts_with('\t')
                || l.starts_with('√')
                || l.starts_with('×')
                || l.starts_with('‼')
        };
        if blockish(line) {
            let start = i;
            let mut end = i + 1;
            while end < lines.len()
                && !lines[end].trim().is_empty()
                && !is_fence(lines[end])
                && (blockish(lines[end]) || continues(lines[end - 1], lines[end]))
            {
                end += 1;
            }
            push_block(&mut out, lines, start..end, "", label);
            i = end;
            continue;
        }
        out.push(Piece {
            line: n,
            text: line,
            kind: Kind::Prose,
            continued: false,
            label,
        });
        for s in spans(inner) {
            out.push(Piece {
                line: n,
                text: s,
                kind: Kind::Span,
                continued: false,
                label,
            });
        }
        if let Some(l) = label_of(inner) {
            label = Some(l);
        }
        i += 1;
    }
    out
}

/// A line that continues a hard-wrapped log line before it: it starts
/// where a wrapped value would (lowercase, a field, a bracket) and the
/// line before it is long or ends inside the head. Quoted copies are
/// judged without their quote markers.
fn continues(prev: &str, frag: &str) -> bool {
    let frag = unquote(frag);
    let first = frag.chars().next().unwrap_or(' ');
    let prev = unquote(prev).trim_end();
    // A line that opens with a field (`error=…`) is the rest of a record:
    // no producer starts a line that way.
    let field = frag.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty()
            && k.bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'.' || b == b'_')
    });
    let prev_cut = field
        || prev.len() > 80
        || prev.ends_with(':')
        || prev.ends_with(',')
        || prev.ends_with('{');
    prev_cut
        && parse_line(prev).is_some()
        && (first.is_ascii_lowercase() || matches!(first, '_' | '(' | '[' | '{' | '"'))
}

/// `frag` is the rest of the log line `prev`, not a record of its own.
fn wraps(prev: &str, frag: &str) -> bool {
    !frag.trim().is_empty() && parse_line(frag).is_none() && continues(prev, frag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_in_prose() {
        assert_eq!(
            spans("the proxy logs `Failed to connect` and ``a `b` c`` here"),
            vec!["Failed to connect", "a `b` c"]
        );
        assert_eq!(
            spans("it says **Connection refused by the peer** always"),
            vec!["Connection refused by the peer"]
        );
        assert_eq!(spans("we use 'x' and \"y\""), Vec::<&str>::new());
    }

    #[test]
    fn blocks_by_shape() {
        assert_eq!(
            classify(
                &[
                    "$ curl -v http://web:8080/",
                    "< HTTP/1.1 503 Service Unavailable"
                ],
                ""
            ),
            Block::Curl
        );
        assert_eq!(
            classify(
                &[
                    "NAME   READY   STATUS    RESTARTS   AGE",
                    "web-1  1/2  Init:CrashLoopBackOff  4  2m"
                ],
                ""
            ),
            Block::Kube
        );
        assert_eq!(
            classify(
                &[
                    "√ can initialize the client",
                    "× issuer cert is within its validity period"
                ],
                ""
            ),
            Block::Check
        );
        assert_eq!(
            classify(&["spec:", "  ports:", "  - port: 80"], ""),
            Block::Manifest
        );
        assert_eq!(
            classify(
                &["[  1.0s]  WARN ThreadId(01) linkerd_reconnect: Failed to connect"],
                "yaml"
            ),
            Block::Log
        );
    }

    #[test]
    fn labels_from_the_line_before() {
        assert_eq!(label_of("Gateway logs:"), Some("gateway"));
        assert_eq!(label_of("and the client proxy log shows"), Some("client"));
        assert_eq!(label_of("the gateway is fine"), None);
    }
}
