//! The rules file's schema: what a rule can match, how its matches
//! correlate, and what a finding says.

use crate::parse::{Component, Era, Level};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    /// Another rule whose verdict and words this one takes (its id,
    /// severity, role, weight, grouping, title, explanation, next commands…)
    /// for every key it does not set itself: a message family that is
    /// evidence of a mechanism another rule tells. Conditions are never
    /// inherited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub like: Option<String>,
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
    /// A rule without id whose lines are known and harmless (`benign`) or
    /// neutral (`info`): it reports nothing, but takes its lines from rules
    /// of lower weight and from the unrecognised warnings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known: Option<Known>,
    /// This verdict is the undecided variant of its id (probe or client,
    /// say): its matches join a decided finding of the same id on the same
    /// ports and clients.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub undecided: bool,

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
    /// And not this regex (case-sensitive words such as `CANCEL` that a
    /// case-insensitive `not_text` would also find inside `canceled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_regex: Option<String>,
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
    /// Producer families: `proxy`, `control-plane`, `init`, `access`, `panic`,
    /// `go-log`, `kube`. Empty: any producer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub producers: Vec<String>,
    /// The component that printed the line is one of these (`proxy`,
    /// `proxy-init`, `cni`, `destination`, `identity`, `policy`,
    /// `service-mirror`, `injector`, `viz`, `control-plane` for any Go
    /// controller, `kubernetes`, `application`, `unknown`). Empty: any but
    /// `application`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<Component>,
    /// And none of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_components: Vec<Component>,
    /// The traffic's direction: `inbound`, `outbound` (requests a gateway
    /// forwards count as outbound), or `unknown` when no span tells.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub direction: Vec<Direction>,
    /// A port of the line (the inbound port, the destination's or the
    /// endpoint's) has one of these roles (`lpa rules ports` lists them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub port_roles: Vec<PortRole>,
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
    /// Ids whose finding about the same subject this rule's matches join
    /// instead of making their own: mechanisms its evidence cannot tell
    /// from its own (a connect that never completes, in the metrics, may be
    /// refused as well as timed out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub yields_to: Vec<String>,
    /// Match series of a metrics snapshot instead of log lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricRule>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next: Vec<NextCommand>,
}

/// A rule's conditions on a metrics snapshot: its series, grouped by the
/// rule's `group_by` subject, and comparisons between their aggregates that
/// must all hold in a group.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MetricRule {
    /// `ALIAS.AGGREGATE` (count, sum, zeros, min, max), numbers, `now`
    /// (the snapshot's clock), `+ - * /`, one comparison each:
    /// `open.max == 0`, `expiry.min - now < 25200`.
    pub when: Vec<String>,
    /// With two snapshots of one pod: the series whose sum must have grown
    /// between them for the finding to be happening now, not in the past.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grows: Option<String>,
    pub series: Vec<Series>,
}

/// Samples a metric rule reads.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Series {
    /// What `when` calls them.
    #[serde(rename = "as")]
    pub alias: String,
    /// Sample names as exposed (with `_total`, `_bucket`…), one for each
    /// release's spelling of the family.
    pub names: Vec<String>,
    /// Label equals the value, or one of the values; `"*"`: present and not
    /// empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, LabelValues>,
    /// And none of these.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels_not: BTreeMap<String, LabelValues>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub enum LabelValues {
    One(String),
    Any(Vec<String>),
}

impl LabelValues {
    pub fn admits(&self, v: &str) -> bool {
        let one = |x: &String| x == v || (x == "*" && !v.is_empty());
        match self {
            LabelValues::One(x) => one(x),
            LabelValues::Any(xs) => xs.iter().any(one),
        }
    }
}

fn default_confidence() -> f64 {
    0.8
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Known {
    Benign,
    Info,
}

pub use super::ports::PortRole;
pub use crate::parse::typed::Direction;

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

pub const PRODUCER_FAMILIES: &[&str] = &[
    "proxy",
    "control-plane",
    "init",
    "access",
    "panic",
    "go-log",
    "kube",
    "check",
    "prose",
    "metrics",
];
