//! The explain report: ranked findings, rendered for a terminal, as the JSON
//! contract of spec/diagnoses.md, or as Markdown.

use super::text::{self, code, fenced};
use crate::parse::typed::EraRange;
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
                .map(|(f, n)| format!("{} ({n} lines)", f.as_str()))
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
                "{} {}: what they hold past it is not read.",
                stats.cut_lines,
                crate::report::summary::CUT_NOTE
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
                if stats.outside == 1 { "1 line".to_string() } else { format!("{} lines", stats.outside) }
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
            let what = if hidden == 1 {
                "1 finding"
            } else {
                &format!("{hidden} findings")
            };
            self.notes
                .push(format!("{what} hidden by --min-severity or --suppress."));
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
            && self
                .subject
                .as_ref()
                .is_none_or(|v| f.subjects.values().flatten().any(|x| x == v))
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
        "{} lines, {} events, {} unparsed{}.\n",
        r.input.lines,
        r.input.events,
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
    let times = if f.count == 1 {
        "once".to_string()
    } else {
        format!("{} times", f.count)
    };
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
                "- {} {} ({} lines)",
                code(&c.id),
                text::prose(&c.title, &c.quoted),
                c.count
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
    if let Some(d) = &f.doc {
        let _ = writeln!(o, "Docs: {d}\n");
    }
}
