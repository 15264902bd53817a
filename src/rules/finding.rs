//! What a finding holds and says: evidence lines, subjects, next commands
//! (rendered by [`command`](super::command)).

pub use super::command::Command;
use super::{Role, Severity};
use crate::parse::Event;
use crate::report::evidence::Parts;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Distinct values kept per subject of a finding.
const MAX_VALUES: usize = 64;

/// Where and when a line was seen.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Evidence {
    pub source: String,
    pub line: u64,
    pub text: String,
    /// How lpa read the line, when not as a Linkerd component's event:
    /// `unparsed` (no grammar read it; the fallback matched its words),
    /// `unattributed` (an event no mark ties to a component), `application`
    /// (another program's output), `metric` (a sample of a metrics
    /// snapshot).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// The line cut for a terminal, where it has a span stack to shorten.
    #[serde(skip)]
    pub parts: Option<Parts>,
}

/// Counts of distinct values, capped.
#[derive(Debug, Clone, Default)]
pub struct Values(pub(super) BTreeMap<String, u64>);

impl Values {
    pub fn add(&mut self, v: &str, n: u64) {
        if let Some(c) = self.0.get_mut(v) {
            *c += n;
        } else if self.0.len() < MAX_VALUES {
            self.0.insert(v.to_string(), n);
        }
    }
    pub fn merge(&mut self, o: Values) {
        for (k, n) in o.0 {
            self.add(&k, n);
        }
    }
    /// Most frequent first, then by name.
    pub fn ranked(&self) -> Vec<String> {
        let mut v: Vec<(&String, &u64)> = self.0.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.into_iter().map(|(k, _)| k.clone()).collect()
    }
    pub fn first(&self) -> Option<String> {
        self.ranked().into_iter().next()
    }
    /// Each value that `names` renames counts under its new name.
    pub fn rename(&mut self, names: &BTreeMap<String, String>) {
        for (k, n) in std::mem::take(&mut self.0) {
            let k = names.get(&k).cloned().unwrap_or(k);
            *self.0.entry(k).or_insert(0) += n;
        }
    }
}

/// A time in the log: uptime seconds or a wall-clock string.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Seen {
    pub uptime: Option<f64>,
    pub timestamp: Option<String>,
}

impl Seen {
    pub fn of(ev: &Event) -> Seen {
        Seen {
            uptime: ev.uptime,
            timestamp: ev
                .wrapper
                .timestamp
                .map(str::to_string)
                .or_else(|| ev.timestamp.as_deref().map(str::to_string)),
        }
    }

    pub fn display(&self) -> Option<String> {
        match (&self.timestamp, self.uptime) {
            (Some(t), _) => Some(t.clone()),
            (None, Some(u)) => Some(format!("{u:.6}s uptime")),
            _ => None,
        }
    }
}

/// A symptom folded under its cause.
#[derive(Debug, Clone, Serialize)]
pub struct Consequence {
    pub id: String,
    pub title: String,
    pub count: u64,
    pub evidence: Vec<Evidence>,
    /// How the two are linked when they come from different inputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Values from the log in its title (see [`Finding::quoted`]).
    #[serde(skip)]
    pub quoted: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub id: String,
    pub severity: &'static str,
    pub benign: bool,
    pub confidence: f64,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub explanation: String,
    pub count: u64,
    pub subjects: BTreeMap<&'static str, Vec<String>>,
    /// The inputs (or the pods of a prefixed stream) whose lines show it:
    /// each is its own proxy.
    pub sources: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_seen: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<String>,
    /// The same times as numbers, seconds of the proxy's uptime, where the
    /// lines carry it (`first_seen` may be wall-clock time instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_uptime: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_uptime: Option<f64>,
    pub evidence: Vec<Evidence>,
    pub next_commands: Vec<Command>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub consequences: Vec<Consequence>,
    /// The rules that reported it, first the one whose words it uses.
    pub rules: Vec<String>,
    #[serde(skip)]
    pub(super) role: Role,
    #[serde(skip)]
    pub(super) sev: Severity,
    #[serde(skip)]
    pub(super) weight: i32,
    #[serde(skip)]
    pub(super) explains: Vec<String>,
    /// Where it was first seen: (position of its source among the inputs,
    /// line).
    #[serde(skip)]
    pub(super) first_at: (usize, u64),
    #[serde(skip)]
    pub(super) proxies: BTreeSet<String>,
    #[serde(skip)]
    pub(super) conns: BTreeSet<String>,
    /// Rests only on a reporter's words, no log line.
    #[serde(skip)]
    pub(super) hearsay: bool,
    /// Values from the log filled into its prose (title, explanation, the
    /// why of its commands): Markdown sets them as code.
    #[serde(skip)]
    pub quoted: Vec<String>,
}

impl Finding {
    pub(super) fn dsts(&self) -> &[String] {
        self.subjects.get("dst").map_or(&[], Vec::as_slice)
    }
}
