//! Warnings and errors no rule placed: grouped into templates (what varies
//! between occurrences masked), counted, with the first example of each,
//! so that a real error is never answered with silence.

use super::finding::Evidence;
use crate::parse::Level;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::Regex;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// Templates kept; past them, lines are only counted.
const MAX_TEMPLATES: usize = 200;
/// Characters of an example line kept.
const MAX_EXAMPLE: usize = 2000;

/// Masks what varies between occurrences of one message: addresses,
/// numbers, identities, hex, quoted values.
pub fn template(s: &str) -> String {
    static RX: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
        [
            // Clocks first: their `:MM:SS` are no ports.
            (
                r"\b\d{4}[-/]\d{2}[-/]\d{2}([T ]\d{2}:\d{2}:\d{2}([.,]\d+)?(Z|[+-]\d{2}:?\d{2})?)?",
                "<time>",
            ),
            (r"\b\d{2}:\d{2}:\d{2}([.,]\d+)?\b", "<time>"),
            (
                r"[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.serviceaccount\.identity\.[A-Za-z0-9.-]+",
                "<identity>",
            ),
            (
                r"[a-z0-9-]+(\.[a-z0-9-]+)*\.svc\.cluster\.local(:\d+)?",
                "<svc>",
            ),
            (r"\[[0-9a-fA-F:]*:[0-9a-fA-F:]*\](:\d+)?", "<ip>"),
            (r"\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b", "<ip>"),
            (r":\d{2,5}\b", ":<port>"),
            (r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{8,}\b", "<hex>"),
            (r#""[^"]*""#, "\"…\""),
            (r"\b\d+(\.\d+)?(ms|s|µs|ns)?\b", "<n>"),
        ]
        .into_iter()
        .map(|(r, t)| (Regex::new(r).expect("static regex"), t))
        .collect()
    });
    let mut out: String = s.trim().chars().take(400).collect();
    for (rx, t) in RX.iter() {
        if rx.is_match(&out) {
            out = rx.replace_all(&out, *t).into_owned();
        }
    }
    if out.chars().count() > 240 {
        out = out.chars().take(239).collect::<String>() + "…";
    }
    out
}

/// Words that make a line no grammar read an error report.
static ERROR_WORDS: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .build([
            "error",
            "errors",
            "failed",
            "failure",
            "fails",
            "refused",
            "denied",
            "unauthorized",
            "forbidden",
            "timeout",
            "timed out",
            "exception",
            "panic",
            "panicked",
            "fatal",
            "unable to",
            "cannot",
            "can't",
            "invalid",
            "x509",
            "unreachable",
            "crashloopbackoff",
            "oomkilled",
        ])
        .expect("static words")
});

/// Does a line no grammar read report an error?
pub fn error_worded(text: &str) -> bool {
    let b = text.as_bytes();
    ERROR_WORDS.find_overlapping_iter(text).any(|m| {
        (m.start() == 0 || !b[m.start() - 1].is_ascii_alphanumeric())
            && b.get(m.end()).is_none_or(|c| !c.is_ascii_alphanumeric())
    })
}

#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub template: String,
    pub count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
    /// The first line of this template.
    pub example: Evidence,
}

/// The table, bounded.
#[derive(Debug, Clone, Default)]
pub struct Unmatched {
    entries: BTreeMap<String, Entry>,
    /// Lines past the table's capacity.
    pub more: u64,
}

impl Unmatched {
    pub fn add(&mut self, text: &str, level: Option<Level>, example: impl FnOnce() -> Evidence) {
        let t = template(text);
        if let Some(e) = self.entries.get_mut(&t) {
            e.count += 1;
            e.level = e.level.max(level);
            return;
        }
        if self.entries.len() >= MAX_TEMPLATES {
            self.more += 1;
            return;
        }
        let mut example = example();
        if example.text.chars().count() > MAX_EXAMPLE {
            example.text = example.text.chars().take(MAX_EXAMPLE).collect();
        }
        self.entries.insert(
            t.clone(),
            Entry {
                template: t,
                count: 1,
                level,
                example,
            },
        );
    }

    pub fn merge(&mut self, later: Unmatched) {
        self.more += later.more;
        for (t, e) in later.entries {
            let room = self.entries.len() < MAX_TEMPLATES;
            match self.entries.get_mut(&t) {
                Some(x) => {
                    x.count += e.count;
                    x.level = x.level.max(e.level);
                }
                None if room => {
                    self.entries.insert(t, e);
                }
                None => self.more += e.count,
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.more == 0
    }

    /// Most frequent first, then the first seen.
    pub fn ranked(self) -> Vec<Entry> {
        let mut v: Vec<Entry> = self.entries.into_values().collect();
        v.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then(b.level.cmp(&a.level))
                .then(a.example.line.cmp(&b.example.line))
        });
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_words_on_word_boundaries() {
        assert!(error_worded(
            "dial tcp 10.0.0.1:80: connect: connection refused"
        ));
        assert!(error_worded("ERROR: something"));
        assert!(!error_worded("terrorist mirrors"));
        assert!(!error_worded("all good"));
    }
}
