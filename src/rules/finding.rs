//! What a finding holds and says: evidence lines, subjects, next commands
//! rendered from templates with the names the log shows.

use super::{Role, Severity, Subject};
use crate::parse::typed::host_of;
use crate::parse::Event;
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
    /// (another program's output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
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

/// A next command, rendered for this log.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Command {
    pub command: String,
    pub why: String,
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
}

impl Finding {
    pub(super) fn dsts(&self) -> &[String] {
        self.subjects.get("dst").map_or(&[], Vec::as_slice)
    }
}

/// Values for `{placeholders}`.
pub(super) struct Vars<'a> {
    pub subjects: &'a BTreeMap<Subject, Values>,
    pub workload: Option<String>,
}

impl Vars<'_> {
    fn first(&self, s: Subject) -> Option<String> {
        self.subjects.get(&s).and_then(Values::first)
    }

    fn get(&self, name: &str) -> Option<String> {
        let ns_of = |v: &str| -> Option<String> {
            let host = v.split(':').next()?;
            if let Some(i) = host.find(".svc.") {
                return host[..i].rsplit('.').next().map(str::to_string);
            }
            if let Some(i) = host.find(".serviceaccount.") {
                return host[..i].rsplit('.').next().map(str::to_string);
            }
            None
        };
        match name {
            "ns" => self
                .first(Subject::Dst)
                .and_then(|d| ns_of(&d))
                .or_else(|| self.first(Subject::Identity).and_then(|i| ns_of(&i))),
            "peer_ip" => self.first(Subject::Peer).map(|p| host_of(&p).to_string()),
            "svc" => self
                .first(Subject::Dst)
                .filter(|d| d.contains(".svc."))
                .and_then(|d| d.split(['.', ':']).next().map(str::to_string)),
            // A destination's port is the port a port-keyed finding means.
            "port" => self.first(Subject::Port).or_else(|| {
                self.first(Subject::Dst)
                    .and_then(|d| d.rsplit_once(':').map(|(_, p)| p.to_string()))
                    .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
            }),
            "workload" => self.workload.clone(),
            "workload_ns" => match self.workload.as_deref() {
                Some("deploy/linkerd-gateway") => Some("linkerd-multicluster".into()),
                _ => None,
            },
            other => Subject::parse(other).and_then(|s| self.first(s)),
        }
    }

    /// Fills `{name}` and `{name|default}`; unknown values stay as `<name>`
    /// (commands) or take their default.
    pub fn render(&self, template: &str) -> String {
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        while let Some(o) = rest.find('{') {
            out.push_str(&rest[..o]);
            let Some(c) = rest[o..].find('}') else {
                out.push_str(&rest[o..]);
                return out;
            };
            let inner = &rest[o + 1..o + c];
            let (name, default) = inner.split_once('|').unwrap_or((inner, ""));
            if !super::PLACEHOLDERS.contains(&name) {
                // Shell or jsonpath braces, not ours.
                out.push_str(&rest[o..=o + c]);
                rest = &rest[o + c + 1..];
                continue;
            }
            match self.get(name) {
                Some(v) => out.push_str(&v),
                None if !default.is_empty() => out.push_str(default),
                None => {
                    out.push('<');
                    out.push_str(if name == "ns" || name == "workload_ns" {
                        "namespace"
                    } else {
                        name
                    });
                    out.push('>');
                }
            }
            rest = &rest[o + c + 1..];
        }
        out.push_str(rest);
        out
    }
}
