//! The reply a maintainer can paste: valid CommonMark whatever the ticket
//! held (log text only in code spans and blocks whose fences it cannot
//! close), whole sentences quoted, asks fitted to what the post holds.

use super::Triage;
use crate::report::explain::{finding_markdown, unmatched_markdown};
use crate::report::plural::count;
use crate::report::text::{self, code, escaped, fenced};
use crate::rules::command::{setup_line, Command};
use std::fmt::Write as _;

fn tried_certificates(t: &Triage) -> bool {
    t.context.tried.iter().any(|s| {
        let s = s.to_ascii_lowercase();
        [
            "trust anchor",
            "trust-anchor",
            "certificate",
            "cert",
            "issuer",
            " ca ",
            "root",
        ]
        .iter()
        .any(|w| s.contains(w))
    })
}

fn any_id(t: &Triage, prefix: &str) -> bool {
    t.report.findings.iter().any(|f| {
        f.id.starts_with(prefix) || f.consequences.iter().any(|c| c.id.starts_with(prefix))
    })
}

/// The first sentence of a finding's explanation.
fn first_sentence(s: &str) -> &str {
    s.split(". ").next().unwrap_or(s).trim_end_matches('.')
}

pub fn markdown(t: &Triage) -> String {
    let r = &t.report;
    let mut o = String::new();
    let harmful: Vec<_> = r.findings.iter().filter(|f| !f.benign).collect();
    let benign: Vec<_> = r.findings.iter().filter(|f| f.benign).collect();
    let _ = writeln!(o, "## Likely cause\n");
    match harmful.first() {
        Some(f) => {
            let _ = writeln!(
                o,
                "**{}** ({}). {}.",
                text::prose(&f.title, &f.quoted),
                code(&f.id),
                text::prose(first_sentence(&f.explanation), &f.quoted)
            );
            let mut ids: Vec<String> = f.consequences.iter().map(|c| code(&c.id)).collect();
            ids.dedup();
            if !ids.is_empty() {
                let _ = writeln!(
                    o,
                    "The other errors in the logs ({}) follow from it.",
                    ids.join(", ")
                );
            }
        }
        None if !t.context.announced_missing.is_empty() => {
            let _ = writeln!(
                o,
                "The post refers to logs that it does not include, so there is nothing to read the failure from yet (see “What is missing”)."
            );
        }
        None if !benign.is_empty() => {
            let _ = writeln!(o, "Nothing in these logs shows traffic failing: what they hold is benign noise (see below).");
        }
        None if !r.unmatched.is_empty() => {
            let _ = writeln!(o, "The logs hold warnings or errors that lpa cannot place yet (listed below); the missing items would settle them.");
        }
        None => {
            let _ = writeln!(o, "The logs posted do not show a known failure.");
        }
    }
    if !benign.is_empty() {
        let b: Vec<String> = benign
            .iter()
            .map(|f| format!("{} ({})", text::prose(&f.title, &f.quoted), code(&f.id)))
            .collect();
        let _ = writeln!(o, "\nHarmless noise: {}.", b.join("; "));
    }
    let checks = r.stats.checks;
    if checks.0 > 0 && checks.1 == 0 {
        let _ = writeln!(
            o,
            "\nThe `linkerd check` output posted passes every check ({} of them): the control plane and its certificates are healthy as far as it tests, so the failure lies in what the logs show.",
            checks.0
        );
    }
    if tried_certificates(t)
        && r.stats.proxy_events > 0
        && r.stats.has_debug()
        && !any_id(t, "identity.")
    {
        let _ = writeln!(
            o,
            "\nThe trust anchor and certificates are not the problem: the posted debug logs show no certificate validation error (UnknownIssuer, BadCertificate, expiry), so re-creating them could not have helped."
        );
    }
    if !t.context.tried.is_empty() {
        let _ = writeln!(o, "\nAlready tried, per the report:\n");
        for s in &t.context.tried {
            let _ = writeln!(o, "- {}", escaped(&s.replace(['\n', '\r'], " ")));
        }
    }
    let _ = writeln!(o, "\n## Findings\n");
    for (i, f) in r.findings.iter().enumerate() {
        finding_markdown(&mut o, i + 1, f);
    }
    unmatched_markdown(&mut o, r);
    if !t.missing.is_empty() {
        let _ = writeln!(o, "## What is missing\n");
        for m in &t.missing {
            let how: Vec<String> = m.how.iter().map(|c| code(c)).collect();
            let how = match how.is_empty() {
                true => String::new(),
                false => format!(" How: {}", how.join(", then ")),
            };
            let _ = writeln!(o, "- **{}**: {}.{how}", m.id, escaped(&m.why));
        }
        let _ = writeln!(o);
    }
    let mut cmds: Vec<Command> = Vec::new();
    for f in &harmful {
        for c in &f.next_commands {
            if !cmds.iter().any(|x| x.command == c.command) {
                cmds.push(c.clone());
            }
        }
    }
    if !cmds.is_empty() {
        let setup = setup_line(&cmds);
        let lines: Vec<&str> = setup
            .iter()
            .chain(cmds.iter().map(|c| &c.command))
            .map(String::as_str)
            .collect();
        let _ = writeln!(o, "## Next commands, in order\n");
        o.push_str(&fenced("sh", &lines));
        o.push('\n');
    }
    if !t.questions.is_empty() {
        let _ = writeln!(o, "## Questions\n");
        for q in &t.questions {
            let _ = writeln!(o, "- {q}");
        }
        let _ = writeln!(o);
    }
    let c = &t.context;
    let _ = writeln!(
        o,
        "<sub>lpa read {} ({}), {}, {}, {}{}{}.</sub>",
        count(c.log_lines, "log line", "log lines"),
        count(r.input.events, "event", "events"),
        count(c.prose_lines, "prose line", "prose lines"),
        count(c.yaml_lines, "YAML line", "YAML lines"),
        count(
            c.check_lines,
            "`linkerd check` line",
            "`linkerd check` lines"
        ),
        c.version
            .as_ref()
            .map(|v| format!("; Linkerd {}", code(v)))
            .unwrap_or_default(),
        r.era_text()
            .map(|e| format!("; log format {e}"))
            .unwrap_or_default(),
    );
    o
}
