//! The explain report: ranked findings, rendered for a terminal, as the JSON
//! contract of spec/diagnoses.md, or as Markdown.

use super::plural::{count, times};
use super::text::{self, code, fenced};
use crate::parse::era::EraRange;
use crate::parse::Era;
use crate::rules::command::setup_line;
use crate::rules::engine::{Finding, Stats, UnmatchedEntry};
use crate::rules::unmatched::Unmatched;
use serde::Serialize;
use std::fmt::Write as _;

#[derive(Debug, Clone, Serialize)]
pub struct InputSummary {
    pub lines: u64,
    pub events: u64,
    pub unparsed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The lpa that wrote the report (its rules are built in).
    pub lpa_version: &'static str,
    pub findings: Vec<Finding>,
    pub input: InputSummary,
    /// The Linkerd release line the log's format points to; next commands
    /// are chosen for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub era: Option<&'static str>,
    /// The eras the log's wording allows (`min`/`max`, null when unbounded).
    pub era_range: EraRange,
    pub notes: Vec<String>,
    /// Warnings and errors no rule placed, by template: not findings.
    pub unmatched: Vec<UnmatchedEntry>,
    /// Lines past the unmatched table's capacity.
    #[serde(skip_serializing_if = "is_zero")]
    pub unmatched_more: u64,
    #[serde(skip)]
    pub stats: Stats,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

pub const DEBUG_ANNOTATION: &str = "config.linkerd.io/proxy-log-level: linkerd=debug,info";

impl Report {
    pub fn new(findings: Vec<Finding>, stats: Stats, unmatched: Unmatched) -> Report {
        let mut notes = Vec::new();
        const EXPECTS: &str = "lpa reads Linkerd's logs: `kubectl logs POD -c linkerd-proxy` (plain or JSON, \
             with or without --timestamps/--prefix), the control plane's (`kubectl logs -n linkerd deploy/linkerd-destination \
             --all-containers`), linkerd-init's and the CNI plugin's.";
        if stats.lines == 0 {
            notes.push("The input is empty.".to_string());
        } else if stats.linkerd_lines == 0 {
            // Say what the input looks like, when its shape tells.
            let shapes: Vec<String> = stats
                .foreign
                .iter()
                .map(|(f, n)| format!("{} ({})", f.as_str(), count(*n, "line", "lines")))
                .collect();
            if shapes.is_empty() {
                notes.push(format!("No line carries a Linkerd mark (a Linkerd log head, target, container or component): this does not look like a Linkerd log. {EXPECTS}"));
            } else {
                notes.push(format!(
                    "This looks like {}, not a Linkerd log: application output is not read as Linkerd's. {EXPECTS}",
                    shapes.join(", ")
                ));
            }
        } else if stats.proxy_events == 0 && findings.is_empty() {
            notes.push(
                "No linkerd-proxy lines in this input: for data-plane problems add `kubectl logs POD -c linkerd-proxy`."
                    .to_string(),
            );
        }
        if stats.snapshots_dropped > 0 {
            notes.push(metrics_dropped_note(stats.snapshots_dropped));
        }
        if stats.cut_lines > 0 {
            notes.push(format!(
                "{}: what {} past it is not read.",
                crate::report::summary::cut_note(stats.cut_lines),
                if stats.cut_lines == 1 {
                    "it holds"
                } else {
                    "they hold"
                }
            ));
        }
        if stats.proxy_events > 0 && !stats.has_debug() && findings.iter().any(|f| !f.benign) {
            notes.push(format!(
                "Only INFO and above were logged: connect errors and TLS details are DEBUG lines. \
                 To see them, annotate the workload with `{DEBUG_ANNOTATION}` and restart it."
            ));
        }
        if stats.outside > 0 {
            notes.push(format!(
                "{} outside --since/--until left out (a line without the bound's clock cannot be placed).",
                count(stats.outside, "line", "lines")
            ));
        }
        Report {
            lpa_version: env!("CARGO_PKG_VERSION"),
            findings,
            input: InputSummary {
                lines: stats.lines,
                events: stats.events,
                unparsed: stats.unparsed,
            },
            era: stats.era.era().map(Era::as_str),
            era_range: stats.era.range(),
            notes,
            unmatched_more: unmatched.more,
            unmatched: unmatched.ranked(),
            stats,
        }
    }

    /// The releases the log's wording allows, for people: `2.12-2.14`,
    /// `2.10 to 2.14`, `2.10 or later`.
    pub fn era_text(&self) -> Option<String> {
        let lo = |e: Era| {
            e.as_str()
                .split(['-', '+'])
                .next()
                .unwrap_or("")
                .to_string()
        };
        let hi = |e: Era| {
            e.as_str()
                .rsplit('-')
                .next()
                .unwrap_or("")
                .trim_end_matches('+')
                .to_string()
        };
        match (self.era_range.min, self.era_range.max) {
            (Some(a), Some(b)) if a == b => Some(a.as_str().to_string()),
            (Some(a), Some(b)) => Some(format!("{} to {}", lo(a), hi(b))),
            (Some(a), None) => Some(format!("{} or later", lo(a))),
            (None, Some(b)) => Some(format!("{} or earlier", hi(b))),
            (None, None) => None,
        }
    }

    pub fn has_at_least(&self, sev: &str) -> bool {
        self.findings.iter().any(|f| rank(f.severity) >= rank(sev))
    }

    /// Drops the findings below `min` and those `--suppress` names, and
    /// says how many were hidden.
    pub fn hide(&mut self, min: Option<&str>, suppress: &[Suppress]) {
        let before = self.findings.len();
        self.findings.retain(|f| {
            min.is_none_or(|m| rank(f.severity) >= rank(m)) && !suppress.iter().any(|s| s.covers(f))
        });
        let hidden = before - self.findings.len();
        if hidden > 0 {
            self.notes.push(format!(
                "{} hidden by --min-severity or --suppress.",
                count(hidden as u64, "finding", "findings")
            ));
        }
    }
}

fn rank(s: &str) -> u8 {
    match s {
        "critical" => 2,
        "warning" => 1,
        _ => 0,
    }
}

/// `--suppress ID[=SUBJECT]`: a diagnosis id, everywhere or only where one
/// of its subjects (a destination, a client, a port…) has that value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suppress {
    pub id: String,
    pub subject: Option<String>,
}

impl std::str::FromStr for Suppress {
    type Err = String;
    fn from_str(s: &str) -> Result<Suppress, String> {
        let (id, subject) = match s.split_once('=') {
            Some((id, v)) => (id, Some(v.to_string())),
            None => (s, None),
        };
        if !crate::rules::IDS.contains(&id) {
            return Err(format!(
                "no diagnosis id '{id}' (`lpa rules list` shows them)"
            ));
        }
        Ok(Suppress {
            id: id.to_string(),
            subject,
        })
    }
}

impl Suppress {
    fn covers(&self, f: &Finding) -> bool {
        f.id == self.id
            && self.subject.as_ref().is_none_or(|v| {
                // `deploy/web` names the workload `web`.
                let v = v.split_once('/').map_or(v.as_str(), |(_, name)| name);
                f.subjects
                    .values()
                    .flatten()
                    .any(|x| names_of(x).any(|n| n == v))
            })
    }
}

/// The names an operator may call a subject by: the value itself, its host
/// without the port, a service or service account without its DNS suffix
/// (`web`, `web.shop`), a pod's workload (`web` for `web-7d9c8b6f5-x2k4q`
/// and for `web-0`).
fn names_of(x: &str) -> impl Iterator<Item = &str> {
    let host = match x.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !h.ends_with(':') => {
            h.trim_start_matches('[').trim_end_matches(']')
        }
        _ => x,
    };
    let is_ip = host.parse::<std::net::IpAddr>().is_ok();
    // The first labels of a DNS name, up to its `n`th dot.
    let labels = |n: usize| {
        let end = host.match_indices('.').nth(n - 1)?.0;
        (!is_ip).then(|| &host[..end])
    };
    [Some(x), Some(host), labels(1), labels(2), workload(host)]
        .into_iter()
        .flatten()
}

/// The workload a pod name belongs to: a Deployment's pods end in
/// `-<replicaset hash>-<5 chars>`, a DaemonSet's in `-<5 chars>`, a
/// StatefulSet's in `-<ordinal>`.
fn workload(pod: &str) -> Option<&str> {
    // Kubernetes draws generated names from consonants and digits (no
    // vowels, 0, 1 or 3), which tells `-x2k4q` from `-exporter`.
    let generated = |s: &str, len: std::ops::RangeInclusive<usize>| {
        len.contains(&s.len())
            && s.bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
    };
    let (head, last) = pod.rsplit_once('-')?;
    if head.is_empty() || pod.contains('.') {
        return None;
    }
    if last.bytes().all(|b| b.is_ascii_digit()) {
        return Some(head);
    }
    if !generated(last, 5..=5) {
        return None;
    }
    match head.rsplit_once('-') {
        Some((name, hash)) if !name.is_empty() && generated(hash, 8..=10) => Some(name),
        _ => Some(head),
    }
}

/// What it means that metrics snapshots were not kept.
pub fn metrics_dropped_note(n: u64) -> String {
    format!(
        "{n} metrics snapshots were not read: lpa keeps the snapshots of at most {} pods \
         ({} MiB of them); give the pods that matter in a smaller input.",
        crate::rules::snapshot::MAX_PODS,
        crate::rules::snapshot::MAX_KEPT_BYTES >> 20
    )
}

/// Templates of unplaced warnings shown: fewer when findings explain the
/// input already.
pub fn unmatched_shown(r: &Report) -> usize {
    if r.findings.iter().any(|f| !f.benign) {
        5
    } else {
        10
    }
}

/// What would let lpa (or a person) place the unrecognised lines.
pub fn collect_next(r: &Report) -> Vec<String> {
    let mut v = Vec::new();
    if r.stats.proxy_events > 0 && !r.stats.has_debug() {
        v.push(format!(
            "debug-level proxy logs: annotate the workload with `{DEBUG_ANNOTATION}`, restart it and reproduce"
        ));
    }
    v.push("`kubectl logs POD -c linkerd-proxy --timestamps`, to line them up with events and the other side".into());
    v.push(
        "the logs of the proxy on the other side of the failing connections (client or server)"
            .into(),
    );
    v
}

pub fn markdown(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "## lpa findings\n");
    let _ = writeln!(
        o,
        "{}, {}, {} unparsed{}.\n",
        count(r.input.lines, "line", "lines"),
        count(r.input.events, "event", "events"),
        r.input.unparsed,
        r.era_text()
            .map(|e| format!("; log format of Linkerd {e}"))
            .unwrap_or_default()
    );
    if r.findings.is_empty() && r.unmatched.is_empty() {
        let _ = writeln!(o, "No known problem found in these lines.\n");
    }
    for (i, f) in r.findings.iter().enumerate() {
        finding_markdown(&mut o, i + 1, f);
    }
    unmatched_markdown(&mut o, r);
    for n in &r.notes {
        let _ = writeln!(o, "> **Note:** {n}\n");
    }
    o
}

pub fn unmatched_markdown(o: &mut String, r: &Report) {
    if r.unmatched.is_empty() {
        return;
    }
    let _ = writeln!(o, "### Warnings and errors lpa has no rule for\n");
    let lines: Vec<String> = r
        .unmatched
        .iter()
        .take(unmatched_shown(r))
        .map(|e| {
            format!(
                "{}× {}:{}: {}",
                e.count, e.example.source, e.example.line, e.example.text
            )
        })
        .collect();
    let _ = writeln!(o, "{}", fenced("text", &lines));
    let _ = writeln!(o, "To place them, collect:\n");
    for c in collect_next(r) {
        let _ = writeln!(o, "- {c}");
    }
    let _ = writeln!(o);
}

pub fn finding_markdown(o: &mut String, n: usize, f: &Finding) {
    let benign = if f.benign { ", benign" } else { "" };
    let q = &f.quoted;
    let _ = writeln!(
        o,
        "### {n}. {} — {} ({}{benign})\n",
        code(&f.id),
        text::prose(&f.title, q),
        f.severity
    );
    let _ = writeln!(o, "{}\n", text::prose(&f.explanation, q));
    let times = times(f.count);
    let _ = writeln!(
        o,
        "Seen {times}{}.\n",
        f.first_seen
            .as_ref()
            .map(|s| format!(", first at {}", code(s)))
            .unwrap_or_default()
    );
    let lines: Vec<String> = f
        .evidence
        .iter()
        .flat_map(|e| {
            let mut ls = e.text.split('\n');
            let first = format!("{}:{}: {}", e.source, e.line, ls.next().unwrap_or(""));
            std::iter::once(first).chain(ls.map(str::to_string))
        })
        .collect();
    let _ = writeln!(o, "{}", fenced("text", &lines));
    if !f.consequences.is_empty() {
        let _ = writeln!(o, "Consequences of this cause:\n");
        for c in &f.consequences {
            let _ = writeln!(
                o,
                "- {} {} ({})",
                code(&c.id),
                text::prose(&c.title, &c.quoted),
                count(c.count, "line", "lines")
            );
        }
        let _ = writeln!(o);
    }
    for note in &f.notes {
        let _ = writeln!(o, "> {}\n", text::prose(note, q));
    }
    if !f.next_commands.is_empty() {
        let _ = writeln!(o, "Next:\n");
        if let Some(l) = setup_line(&f.next_commands) {
            let _ = writeln!(o, "{}\n", code(&l));
        }
        for c in &f.next_commands {
            let _ = writeln!(o, "- {} — {}", code(&c.command), text::prose(&c.why, q));
        }
        let _ = writeln!(o);
    }
    let (url, page) = super::human::docs(f);
    let _ = writeln!(o, "Docs: {url}, {}\n", code(&page));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(x: &str) -> Vec<&str> {
        names_of(x).collect()
    }

    #[test]
    fn a_subject_answers_to_its_short_names() {
        let dst = names("orders-api.shop.svc.cluster.local:8080");
        for n in [
            "orders-api",
            "orders-api.shop",
            "orders-api.shop.svc.cluster.local",
        ] {
            assert!(dst.contains(&n), "{n}: {dst:?}");
        }
        assert!(!dst.contains(&"shop"), "{dst:?}");
        let ip = names("10.42.7.15:8080");
        assert!(ip.contains(&"10.42.7.15") && !ip.contains(&"10"), "{ip:?}");
        assert!(names("[fd00::1]:80").contains(&"fd00::1"));
        assert_eq!(names("fd00::1"), ["fd00::1", "fd00::1"]);
        let id = names("web.shop.serviceaccount.identity.linkerd.cluster.local");
        assert!(id.contains(&"web") && id.contains(&"web.shop"), "{id:?}");
    }

    #[test]
    fn pods_answer_to_their_workload() {
        assert_eq!(workload("web-7d9c8b6f5-x2k4q"), Some("web"));
        assert_eq!(workload("orders-api-7d9c8b6f5-x2k4q"), Some("orders-api"));
        assert_eq!(workload("db-0"), Some("db"));
        assert_eq!(workload("node-exporter-x2k4q"), Some("node-exporter"));
        assert_eq!(workload("invoices-6d8b7f9c4-tq5lm"), Some("invoices"));
        assert_eq!(workload("web-frontend"), None);
        assert_eq!(workload("orders-api"), None);
        assert_eq!(workload("web"), None);
    }
}
