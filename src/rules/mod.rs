//! The knowledge base: rules as data (TOML), embedded in the binary and
//! extendable with `--rules FILE`. A rule matches single events; the engine
//! ([`engine`]) correlates the matches into findings.

pub mod conns;
pub mod engine;

use crate::parse::{Era, Level};
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The rules shipped with lpa.
pub const DEFAULT_RULES: &str = include_str!("default.toml");

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    #[default]
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// Causes rank before the symptoms they explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    #[default]
    Cause,
    Symptom,
}

/// What a finding is about; also the keys of `subjects` in the JSON output
/// and the `{placeholders}` of next commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    Dst,
    Peer,
    Client,
    Port,
    Identity,
    Server,
    Pod,
    Target,
}

impl Subject {
    pub const ALL: [Subject; 8] = [
        Subject::Dst,
        Subject::Peer,
        Subject::Client,
        Subject::Port,
        Subject::Identity,
        Subject::Server,
        Subject::Pod,
        Subject::Target,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Subject::Dst => "dst",
            Subject::Peer => "peer",
            Subject::Client => "client",
            Subject::Port => "port",
            Subject::Identity => "identity",
            Subject::Server => "server",
            Subject::Pod => "pod",
            Subject::Target => "target",
        }
    }

    pub fn parse(s: &str) -> Option<Subject> {
        Subject::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TagKey {
    #[default]
    Client,
    Peer,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NextCommand {
    /// The command, with `{dst}`, `{ns}`, `{peer}`, `{port}`… placeholders.
    pub cmd: String,
    pub why: String,
    /// Only for logs of these eras: `<2.10`, `>=2.10`, `>=2.12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub era: Option<String>,
}

impl NextCommand {
    pub fn applies_to(&self, era: Era) -> bool {
        let Some(spec) = &self.era else { return true };
        let (op, v) = if let Some(v) = spec.strip_prefix(">=") {
            (">=", v)
        } else if let Some(v) = spec.strip_prefix('<') {
            ("<", v)
        } else {
            ("=", spec.as_str())
        };
        let Some(bound) = Era::of_linkerd_version(v) else {
            return true;
        };
        match op {
            ">=" => era >= bound,
            "<" => era < bound,
            _ => era == bound,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Unique name of the rule (several rules may report one diagnosis id).
    pub name: String,
    /// Diagnosis id from spec/diagnoses.md; a rule without id only tags
    /// connections for other rules (`tag`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default)]
    pub severity: Severity,
    #[serde(default)]
    pub role: Role,
    #[serde(default)]
    pub benign: bool,
    #[serde(default = "default_confidence")]
    pub confidence: f64,
    /// Breaks ties between rules: the more specific mechanism weighs more.
    #[serde(default)]
    pub weight: i32,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub explain: String,
    /// A finer label than the id (`TCP health probes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,

    // --- matching one event
    /// Any of these (case-insensitive) in the line's text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text: Vec<String>,
    /// And all of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub all_text: Vec<String>,
    /// And none of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_text: Vec<String>,
    /// And this regex; its named groups (`dst`, `peer`, `client`, `port`,
    /// `identity`, `server`, `target`) fill subjects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// A regex whose named groups fill subjects when it matches; unlike
    /// `regex` it does not decide whether the rule matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_level: Option<Level>,
    /// The target starts with one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// One of these spans is on the stack.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<String>,
    /// None of these spans is on the stack.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_spans: Vec<String>,
    /// Producer families: `proxy`, `control-plane`, `init`, `access`, `panic`.
    /// Empty: any producer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub producers: Vec<String>,
    /// Field equals value (`sz = "0"`); a missing field does not match.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, String>,
    /// Field present and not equal to value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields_not: BTreeMap<String, String>,
    /// The inbound port is one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<u16>,
    /// Match lines no grammar recognised (application output) instead of
    /// events.
    #[serde(default)]
    pub unparsed: bool,
    /// Only within this many seconds of proxy start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uptime: Option<f64>,
    /// Only after this many seconds of proxy start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_uptime: Option<f64>,

    // --- correlation
    /// Marks the event's connection (client address) with this tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// What tags attach to: the connection's `client` address (default) or
    /// the endpoint (`peer`) the event names.
    #[serde(default)]
    pub tag_key: TagKey,
    /// The connection carries one of these tags (from earlier events).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires_tag: Vec<String>,
    /// The connection carries none of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forbids_tag: Vec<String>,
    /// One finding per distinct value of this subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_by: Option<Subject>,
    /// Diagnosis ids this one explains: their findings for the same
    /// destination fold under it as consequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explains: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_count: Option<u64>,
    /// At least / at most this many distinct client IPs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_clients: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_clients: Option<usize>,
    /// Shown when the log holds no DEBUG lines: what would decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_info_only: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next: Vec<NextCommand>,
}

fn default_confidence() -> f64 {
    0.8
}

/// Wording that exists only in some releases: a cue to the log's era.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EraRule {
    /// Matched case-sensitively.
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    #[serde(default, rename = "rule")]
    rules: Vec<Rule>,
    #[serde(default, rename = "era")]
    eras: Vec<EraRule>,
}

/// Everything a rules file holds.
#[derive(Debug, Clone, Default)]
pub struct KnowledgeBase {
    pub rules: Vec<Rule>,
    pub eras: Vec<EraRule>,
}

/// The diagnosis ids of spec/diagnoses.md: a rule may emit no other.
pub const IDS: &[&str] = &[
    "identity.plaintext-to-mtls-port",
    "identity.trust-anchor-mismatch",
    "identity.certify-failed",
    "identity.issuer-expired",
    "identity.clock-skew",
    "policy.unauthorized",
    "discovery.no-endpoints",
    "discovery.controller-unreachable",
    "discovery.stale-endpoints",
    "discovery.pod-ip-conflict",
    "connect.refused",
    "connect.timeout",
    "connect.no-route",
    "protocol.detection-timeout",
    "protocol.misdetected",
    "config.opaque-ports-mismatch",
    "http.header-too-large",
    "http2.protocol-error",
    "timeout.response",
    "overload.loadshed",
    "multicluster.gateway-unreachable",
    "multicluster.link-credentials",
    "lifecycle.proxy-init-iptables",
    "lifecycle.startup-ordering",
    "lifecycle.sidecar-not-injected",
    "dns.resolution",
    "resource.exhaustion",
    "admin.non-http",
];

const PRODUCER_FAMILIES: &[&str] = &[
    "proxy",
    "control-plane",
    "init",
    "access",
    "panic",
    "go-log",
    "kube",
];

/// A problem in a rules file, located at `file:line`.
#[derive(Debug)]
pub struct RuleError {
    pub file: String,
    pub line: usize,
    pub message: String,
    pub hint: String,
}

impl std::fmt::Display for RuleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)?;
        if !self.hint.is_empty() {
            write!(f, "\n  hint: {}", self.hint)?;
        }
        Ok(())
    }
}

/// Line number (1-based) of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Line of `name = "…"` for a rule, to point errors at it.
fn rule_line(text: &str, name: &str) -> usize {
    let pat = format!("\"{name}\"");
    text.find(&pat).map_or(1, |o| line_of(text, o))
}

/// Parses and validates a rules file. Every problem is reported, each with
/// its `file:line` and a hint.
pub fn parse_rules(file: &str, text: &str) -> std::result::Result<KnowledgeBase, Vec<RuleError>> {
    let parsed: RulesFile = match toml::from_str(text) {
        Ok(p) => p,
        Err(e) => {
            let line = e.span().map_or(1, |s| line_of(text, s.start));
            let msg = e.message().to_string();
            let hint = if msg.contains("unknown field") {
                "see `lpa rules show connect-timeout` for a rule with every common key".to_string()
            } else {
                "each rule is a `[[rule]]` table of `key = value` lines (TOML)".to_string()
            };
            return Err(vec![RuleError {
                file: file.to_string(),
                line,
                message: msg,
                hint,
            }]);
        }
    };
    let mut errs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in &parsed.rules {
        let line = rule_line(text, &r.name);
        let mut err = |message: String, hint: &str| {
            errs.push(RuleError {
                file: file.to_string(),
                line,
                message,
                hint: hint.to_string(),
            })
        };
        if !seen.insert(r.name.clone()) {
            err(
                format!("rule '{}' is defined twice in this file", r.name),
                "rename one of them",
            );
        }
        if let Some(id) = &r.id {
            if !IDS.contains(&id.as_str()) {
                err(
                    format!("rule '{}': unknown diagnosis id '{id}'", r.name),
                    "ids are fixed; `lpa rules list` shows them",
                );
            }
            if r.title.is_empty() || r.explain.is_empty() {
                err(
                    format!("rule '{}' has an id but no title or explain", r.name),
                    "a finding needs a one-line title and a plain-words explanation",
                );
            }
        } else if r.tag.is_none() {
            err(
                format!(
                    "rule '{}' has neither an id nor a tag: it can never show",
                    r.name
                ),
                "add `id = \"…\"` to report a finding, or `tag = \"…\"` to mark connections",
            );
        }
        for e in &r.explains {
            if !IDS.contains(&e.as_str()) {
                err(
                    format!("rule '{}': explains unknown id '{e}'", r.name),
                    "use ids from `lpa rules list`",
                );
            }
        }
        for p in &r.producers {
            if !PRODUCER_FAMILIES.contains(&p.as_str()) {
                err(
                    format!("rule '{}': unknown producer family '{p}'", r.name),
                    "use proxy, control-plane, init, access, panic, go-log or kube",
                );
            }
        }
        for rx in r.regex.iter().chain(&r.capture) {
            if let Err(e) = regex::Regex::new(rx) {
                err(
                    format!("rule '{}': bad regex: {e}", r.name),
                    "regex syntax of the Rust regex crate",
                );
            }
        }
        if r.text.is_empty() && r.regex.is_none() && r.fields.is_empty() && r.all_text.is_empty() {
            err(
                format!("rule '{}' matches every line", r.name),
                "give it `text = [\"…\"]`, `regex` or `fields`",
            );
        }
        if !(0.0..=1.0).contains(&r.confidence) {
            err(
                format!("rule '{}': confidence must be within 0..1", r.name),
                "",
            );
        }
        let templates = [Some(&r.title), Some(&r.explain), r.if_info_only.as_ref()]
            .into_iter()
            .flatten()
            .chain(r.next.iter().flat_map(|n| [&n.cmd, &n.why]));
        for t in templates {
            if let Some(problem) = template_problem(t) {
                err(
                    format!("rule '{}': {problem}", r.name),
                    "placeholders: {dst} {svc} {ns} {peer} {peer_ip} {client} {port} {identity} {server} {pod} {target} {workload} {workload_ns}, with an optional default: {dst|the destination}",
                );
            }
        }
    }
    for e in &parsed.eras {
        for v in e.since.iter().chain(&e.until) {
            if Era::of_linkerd_version(v).is_none() {
                errs.push(RuleError {
                    file: file.to_string(),
                    line: text
                        .find(&format!("\"{v}\""))
                        .map_or(1, |o| line_of(text, o)),
                    message: format!("era cue '{}': '{v}' is not a Linkerd version", e.text),
                    hint: "write stable versions as 2.12 or 2.14.1".into(),
                });
            }
        }
    }
    if errs.is_empty() {
        Ok(KnowledgeBase {
            rules: parsed.rules,
            eras: parsed.eras,
        })
    } else {
        Err(errs)
    }
}

pub const PLACEHOLDERS: &[&str] = &[
    "dst",
    "svc",
    "ns",
    "peer",
    "peer_ip",
    "client",
    "port",
    "identity",
    "server",
    "pod",
    "target",
    "workload",
    "workload_ns",
];

/// What is wrong with a template's placeholders, if anything.
fn template_problem(t: &str) -> Option<String> {
    let mut rest = t;
    while let Some(o) = rest.find('{') {
        let Some(c) = rest[o..].find('}') else { break };
        let inner = &rest[o + 1..o + c];
        if inner.contains('{') {
            return Some(format!("placeholders cannot nest: {{{inner}…}}"));
        }
        let name = inner.split('|').next().unwrap_or(inner);
        // Literal braces of shell syntax (`{.spec…}`, `{range …}`) are not placeholders.
        if name.chars().all(|c| c.is_ascii_lowercase() || c == '_') && !PLACEHOLDERS.contains(&name)
        {
            return Some(format!("unknown placeholder {{{name}}}"));
        }
        rest = &rest[o + c + 1..];
    }
    None
}

/// The embedded rules, then each user file; a user rule with the name of an
/// existing one replaces it.
pub fn load(user_files: &[std::path::PathBuf]) -> Result<KnowledgeBase> {
    let mut kb = match parse_rules("<built-in rules>", DEFAULT_RULES) {
        Ok(r) => r,
        Err(e) => bail!("built-in rules are broken: {}", e[0]),
    };
    for f in user_files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| anyhow::anyhow!("cannot read rules file '{}': {e}", f.display()))?;
        let user = parse_rules(&f.display().to_string(), &text).map_err(|errs| {
            anyhow::anyhow!(
                "{}",
                errs.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        })?;
        for r in user.rules {
            match kb.rules.iter_mut().find(|x| x.name == r.name) {
                Some(slot) => *slot = r,
                None => kb.rules.push(r),
            }
        }
        kb.eras.extend(user.eras);
    }
    Ok(kb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_rules_are_valid_and_cover_every_id() {
        let rules = parse_rules("default.toml", DEFAULT_RULES).unwrap_or_else(|e| {
            panic!(
                "{}",
                e.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        });
        for id in IDS {
            assert!(
                rules.rules.iter().any(|r| r.id.as_deref() == Some(id)),
                "no rule emits {id}"
            );
        }
    }

    #[test]
    fn every_rule_survives_show_then_check() {
        #[derive(Serialize)]
        struct Doc<'a> {
            rule: Vec<&'a Rule>,
        }
        let kb =
            parse_rules("default.toml", DEFAULT_RULES).unwrap_or_else(|_| panic!("built-in rules"));
        for r in &kb.rules {
            let text = toml::to_string_pretty(&Doc { rule: vec![r] }).unwrap();
            let back =
                parse_rules("shown.toml", &text).unwrap_or_else(|e| panic!("{}: {}", r.name, e[0]));
            assert_eq!(
                serde_json::to_value(&back.rules[0]).unwrap(),
                serde_json::to_value(r).unwrap(),
                "{}",
                r.name
            );
        }
    }

    #[test]
    fn errors_point_at_file_and_line() {
        let text = "[[rule]]\nname = \"a\"\nid = \"connect.bogus\"\ntitle = \"t\"\nexplain = \"e\"\ntext = [\"x\"]\n";
        let e = parse_rules("mine.toml", text).unwrap_err();
        assert_eq!(e[0].line, 2);
        assert!(e[0]
            .to_string()
            .starts_with("mine.toml:2: rule 'a': unknown diagnosis id"));
        let e = parse_rules("mine.toml", "[[rule]]\nname = \"a\"\ntxt = [\"x\"]\n").unwrap_err();
        assert_eq!(e[0].line, 3);
        assert!(e[0].to_string().contains("unknown field"));
    }

    #[test]
    fn era_bounds_on_commands() {
        let n = NextCommand {
            cmd: "linkerd endpoints {dst}".into(),
            why: String::new(),
            era: Some("<2.10".into()),
        };
        assert!(n.applies_to(Era::Upto2_9));
        assert!(!n.applies_to(Era::V2_10));
    }
}
