//! The explain report: ranked findings, rendered for a terminal, as the JSON
//! contract of spec/diagnoses.md, or as Markdown.

use super::style::Style;
use super::text::{self, clean, code, fenced};
use crate::parse::typed::EraRange;
use crate::parse::Era;
use crate::rules::command::setup_line;
use crate::rules::engine::{Finding, Stats, UnmatchedEntry};
use crate::rules::unmatched::Unmatched;
use serde::Serialize;
use std::borrow::Cow;
use std::fmt::Write as _;

#[derive(Debug, Clone, Serialize)]
pub struct InputSummary {
    pub lines: u64,
    pub events: u64,
    pub unparsed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
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
        Report {
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
        let rank = |s: &str| match s {
            "critical" => 2,
            "warning" => 1,
            _ => 0,
        };
        self.findings.iter().any(|f| rank(f.severity) >= rank(sev))
    }
}

/// Shortens a long evidence line in the middle (span stacks), keeping the
/// head (time, level) and the tail (target, message, fields).
pub fn elide(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let head = max / 4;
    let tail = max - head - 1;
    let h: String = s.chars().take(head).collect();
    let t: String = s.chars().skip(n - tail).collect();
    format!("{h}…{t}")
}

pub fn human(r: &Report, st: &Style, verbose: bool) -> String {
    let mut o = String::new();
    let width = if verbose { usize::MAX } else { 180 };
    let _ = writeln!(
        o,
        "{} {} lines, {} events, {} unparsed{}",
        st.bold("lpa explain:"),
        r.input.lines,
        r.input.events,
        r.input.unparsed,
        r.era_text()
            .map(|e| format!(", log format of Linkerd {e}"))
            .unwrap_or_default()
    );
    if r.findings.is_empty() {
        if r.unmatched.is_empty() {
            let _ = writeln!(o, "\nNo known problem found in these lines.");
        } else {
            let _ = writeln!(
                o,
                "\nNo known problem found, but the input holds warnings or errors lpa has no rule for (below)."
            );
        }
    }
    for (i, f) in r.findings.iter().enumerate() {
        let sev = match f.severity {
            "critical" => st.red(&f.severity.to_uppercase()),
            "warning" => st.yellow(&f.severity.to_uppercase()),
            _ => st.dim(&f.severity.to_uppercase()),
        };
        let benign = if f.benign { " (benign)" } else { "" };
        let _ = writeln!(
            o,
            "\n{}. {sev}{benign} {}  {}",
            i + 1,
            st.bold(&f.id),
            clean(&f.title)
        );
        let _ = writeln!(
            o,
            "   {} lines, confidence {:.0}%{}{}",
            f.count,
            f.confidence * 100.0,
            f.first_seen
                .as_ref()
                .map(|s| format!(", first {}", clean(s)))
                .unwrap_or_default(),
            f.last_seen
                .as_ref()
                .filter(|l| Some(*l) != f.first_seen.as_ref())
                .map(|s| format!(", last {}", clean(s)))
                .unwrap_or_default()
        );
        for line in wrap(&f.explanation, 100) {
            let _ = writeln!(o, "   {}", clean(&line));
        }
        if !f.subjects.is_empty() {
            let subj: Vec<String> = f
                .subjects
                .iter()
                .map(|(k, v)| {
                    let shown: Vec<Cow<'_, str>> = v.iter().take(6).map(|s| clean(s)).collect();
                    let more = if v.len() > 6 {
                        format!(" (+{})", v.len() - 6)
                    } else {
                        String::new()
                    };
                    format!("{k}: {}{more}", shown.join(", "))
                })
                .collect();
            let _ = writeln!(o, "   {} {}", st.dim("subjects:"), subj.join("; "));
        }
        let _ = writeln!(o, "   {}", st.dim("evidence:"));
        for e in &f.evidence {
            for (k, line) in e.text.lines().enumerate() {
                let loc = if k == 0 {
                    format!("{}:{}", clean(&e.source), e.line)
                } else {
                    String::new()
                };
                let _ = writeln!(o, "     {} {}", st.dim(&loc), clean(&elide(line, width)));
            }
        }
        if !f.consequences.is_empty() {
            let _ = writeln!(
                o,
                "   {}",
                st.dim("consequences (explained by this cause):")
            );
            for c in &f.consequences {
                let _ = writeln!(o, "     - {} {} ({} lines)", c.id, clean(&c.title), c.count);
                for e in &c.evidence {
                    let _ = writeln!(
                        o,
                        "       {} {}",
                        st.dim(&format!("{}:{}", clean(&e.source), e.line)),
                        clean(&elide(&e.text, width))
                    );
                }
            }
        }
        for n in &f.notes {
            let _ = writeln!(o, "   {} {}", st.yellow("note:"), clean(n));
        }
        if !f.next_commands.is_empty() {
            let _ = writeln!(o, "   {}", st.dim("next:"));
            if let Some(l) = setup_line(&f.next_commands) {
                let _ = writeln!(o, "     {}", st.dim(&l));
            }
            for c in &f.next_commands {
                let _ = writeln!(o, "     {} {}", st.green("$"), c.command);
                let _ = writeln!(o, "       {}", st.dim(&clean(&c.why)));
            }
        }
        if let Some(d) = &f.doc {
            let _ = writeln!(o, "   {} {d}", st.dim("docs:"));
        }
    }
    unmatched_human(&mut o, r, st, width);
    for n in &r.notes {
        let _ = writeln!(o, "\n{} {n}", st.yellow("note:"));
    }
    o
}

/// Templates of unplaced warnings shown: fewer when findings explain the
/// input already.
fn unmatched_shown(r: &Report) -> usize {
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

fn unmatched_human(o: &mut String, r: &Report, st: &Style, width: usize) {
    if r.unmatched.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\n{}",
        st.bold("Warnings and errors lpa has no rule for:")
    );
    let shown = unmatched_shown(r);
    for e in r.unmatched.iter().take(shown) {
        let lvl = e
            .level
            .map_or("line".to_string(), |l| l.as_str().to_uppercase());
        let _ = writeln!(o, "  {}× {lvl} {}", e.count, clean(&e.template));
        let _ = writeln!(
            o,
            "     {} {}",
            st.dim(&format!("{}:{}", clean(&e.example.source), e.example.line)),
            clean(&elide(&e.example.text, width))
        );
    }
    let more = r.unmatched.len().saturating_sub(shown) as u64 + r.unmatched_more;
    if more > 0 {
        let _ = writeln!(o, "  … and {more} more (`lpa summarize` lists them all)");
    }
    let _ = writeln!(o, "  {}", st.dim("to place them, collect:"));
    for c in collect_next(r) {
        let _ = writeln!(o, "   - {c}");
    }
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

fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    for para in s.split('\n') {
        let mut line = String::new();
        for w in para.split_whitespace() {
            if !line.is_empty() && line.len() + 1 + w.len() > width {
                out.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(w);
        }
        out.push(line);
    }
    out
}
