//! The doc page of every diagnosis id, as `lpa rules show ID` prints it:
//! what the id means, its typical causes, how to confirm and how to fix it
//! (written in kb/pages.toml), then from the rules themselves the evidence
//! lpa matches, the benign look-alikes and the next commands, so the page
//! says what the knowledge base does.

use super::command::{setup_line, Given, Vars};
use super::schema::{KnowledgeBase, Known, Role, Rule};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::LazyLock;

const PAGES: &str = include_str!("kb/pages.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Page {
    pub id: String,
    /// The linkerd.io page on the mechanism.
    pub doc: String,
    pub meaning: String,
    pub causes: Vec<String>,
    pub confirm: Vec<String>,
    pub fix: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PagesFile {
    page: Vec<Page>,
}

static PAGES_PARSED: LazyLock<Vec<Page>> = LazyLock::new(|| {
    toml::from_str::<PagesFile>(PAGES)
        .expect("kb/pages.toml is valid")
        .page
});

/// The shipped pages, one per id (checked by the tests).
pub fn pages() -> &'static [Page] {
    &PAGES_PARSED
}

/// The page of `id`, if it is a diagnosis id.
pub fn page(id: &str) -> Option<&'static Page> {
    pages().iter().find(|p| p.id == id)
}

/// What a rule looks for in a line, in words.
fn matches(r: &Rule) -> String {
    let quote = |v: &[String]| {
        v.iter()
            .map(|t| format!("\"{t}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if !r.text.is_empty() {
        parts.push(quote(&r.text));
    }
    if !r.all_text.is_empty() {
        parts.push(format!("with {}", quote(&r.all_text)));
    }
    if let Some(rx) = &r.regex {
        parts.push(format!("matching /{rx}/"));
    }
    if r.metrics.is_some() {
        parts.push("(metrics snapshot series)".into());
    }
    if parts.is_empty() {
        parts.push("(conditions on fields, spans or tags only)".into());
    }
    parts.join(" ")
}

/// Rules whose lines look like `id`'s evidence and are harmless: the id's
/// own benign verdicts (probes), and rules known benign or neutral whose
/// words hold one of the id's.
fn lookalikes<'k>(id: &str, kb: &'k KnowledgeBase) -> Vec<&'k Rule> {
    let words: Vec<String> = kb
        .rules
        .iter()
        .filter(|r| r.id.as_deref() == Some(id) && !r.benign)
        .flat_map(|r| r.text.iter().map(|t| t.to_lowercase()))
        .collect();
    kb.rules
        .iter()
        .filter(|r| {
            let own = r.id.as_deref() == Some(id) && r.benign;
            let known = matches!(r.known, Some(Known::Benign | Known::Info))
                && r.text
                    .iter()
                    .any(|t| words.iter().any(|w| t.to_lowercase().contains(w.as_str())));
            own || known
        })
        .collect()
}

/// The page of `id` in lines of at most `width` columns (words longer than
/// that, commands and regexes, stand whole).
pub fn render(p: &Page, kb: &KnowledgeBase, width: usize) -> String {
    let rules: Vec<&Rule> = kb
        .rules
        .iter()
        .filter(|r| r.id.as_deref() == Some(p.id.as_str()))
        .collect();
    // Titles and commands as a report with no value from a log shows them.
    let subjects = BTreeMap::new();
    let given = Given::default();
    let vars = Vars {
        subjects: &subjects,
        workload: None,
        given: &given,
    };
    let main = rules.iter().find(|r| !r.benign).or(rules.first());
    let mut o = String::new();
    let title = main.map_or(String::new(), |r| vars.prose(&r.title).0);
    let _ = writeln!(o, "{}: {title}", p.id);
    if let Some(r) = main {
        let role = match r.role {
            Role::Cause => "a cause",
            Role::Symptom => "a symptom",
        };
        let _ = writeln!(o, "{}, {role}; {}", r.severity.as_str(), p.doc);
    }
    let section = |o: &mut String, head: &str, items: &[String]| {
        let _ = writeln!(o, "\n{head}");
        for i in items {
            for (n, l) in crate::report::human::wrap(i, width.saturating_sub(4))
                .iter()
                .enumerate()
            {
                let _ = writeln!(o, "  {} {l}", if n == 0 { "-" } else { " " });
            }
        }
    };
    let _ = writeln!(o, "\nWhat it means");
    for l in crate::report::human::wrap(&p.meaning, width.saturating_sub(2)) {
        let _ = writeln!(o, "  {l}");
    }
    section(&mut o, "Typical causes", &p.causes);
    section(&mut o, "How to confirm", &p.confirm);
    section(&mut o, "How to fix", &p.fix);
    let evidence: Vec<String> = rules
        .iter()
        .filter(|r| !r.benign)
        .map(|r| format!("{}: {}", r.name, matches(r)))
        .collect();
    section(
        &mut o,
        "Evidence lpa matches (rule: words in the line)",
        &evidence,
    );
    let alike: Vec<String> = lookalikes(&p.id, kb)
        .iter()
        .map(|r| {
            let verdict = match (r.known, &r.detail) {
                (Some(Known::Benign), _) => "known harmless".to_string(),
                (Some(Known::Info), _) => "known, neutral".to_string(),
                (None, Some(d)) => format!("benign finding: {d}"),
                (None, None) => "benign finding".to_string(),
            };
            format!("{} ({verdict}): {}", r.name, matches(r))
        })
        .collect();
    if !alike.is_empty() {
        section(
            &mut o,
            "Benign look-alikes (reported as harmless, or not at all)",
            &alike,
        );
    }
    let mut cmds = Vec::new();
    for r in rules.iter().filter(|r| !r.benign) {
        for n in &r.next {
            if let Some(c) = vars.command(&n.cmd, &n.why) {
                let era = n
                    .era
                    .as_ref()
                    .map(|e| format!(" (Linkerd {e})"))
                    .unwrap_or_default();
                if !cmds
                    .iter()
                    .any(|(x, _): &(super::command::Command, String)| x.command == c.command)
                {
                    cmds.push((c, era));
                }
            }
        }
    }
    if !cmds.is_empty() {
        let _ = writeln!(
            o,
            "\nNext commands (a report fills the variables from the log)"
        );
        let all: Vec<_> = cmds.iter().map(|(c, _)| c.clone()).collect();
        if let Some(l) = setup_line(&all) {
            let _ = writeln!(o, "  {l}");
        }
        for (c, era) in &cmds {
            let _ = writeln!(o, "  {}{era}", c.command);
            for l in crate::report::human::wrap(&c.why, width.saturating_sub(6)) {
                let _ = writeln!(o, "      {l}");
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::super::schema::IDS;
    use super::*;

    #[test]
    fn every_id_has_one_page_and_every_page_an_id() {
        let pages = pages();
        for id in IDS {
            assert_eq!(pages.iter().filter(|p| p.id == *id).count(), 1, "{id}");
        }
        for p in pages {
            assert!(IDS.contains(&p.id.as_str()), "{}", p.id);
            assert!(p.doc.starts_with("https://linkerd.io/"), "{}", p.id);
            assert!(!p.meaning.is_empty(), "{}", p.id);
            for (what, items) in [
                ("causes", &p.causes),
                ("confirm", &p.confirm),
                ("fix", &p.fix),
            ] {
                assert!(!items.is_empty(), "{} has no {what}", p.id);
            }
        }
    }

    #[test]
    fn pages_print_no_placeholder() {
        // `(?P<dst>…)` in a regex is a named group, not a placeholder.
        let hole = regex::Regex::new(r"(?:^|[^P])(<[A-Za-z][^<>\s]*>)").unwrap();
        let kb = super::super::built_in().unwrap();
        for p in pages() {
            let text = render(p, &kb, 80);
            if let Some(m) = hole.find(&text) {
                panic!("{}: {}\n{text}", p.id, m.as_str());
            }
        }
    }

    #[test]
    fn a_page_shows_the_rules_words_and_the_ids_look_alikes() {
        let kb = super::super::built_in().unwrap();
        let text = render(page("identity.plaintext-to-mtls-port").unwrap(), &kb, 80);
        assert!(text.contains("plaintext-probes (benign finding"), "{text}");
        let text = render(page("connect.timeout").unwrap(), &kb, 80);
        for w in [
            "\"connect timed out\"",
            "linkerd diagnostics endpoints",
            "Typical causes",
        ] {
            assert!(text.contains(w), "{w}\n{text}");
        }
        assert!(page("no.such-id").is_none());
    }
}
