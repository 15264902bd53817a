//! Metric rules: each sample of a snapshot is added to the series of the
//! rules that select it (by name, labels, direction, port), grouped by the
//! rule's subject as its labels name it (the authority is the destination,
//! a `peer="dst"` target the endpoint, `client_id`/`server_id` identities…);
//! once the input is read, a rule's conditions are checked per group on the
//! latest snapshot of each pod, and against the first one for what grew.

use super::correlation::Acc;
use super::expr::{Agg, Cond, Env};
use super::finding::{Evidence, Values};
use super::ports;
use super::snapshot::{Line, Pod, Reduce, Snapshot};
use super::{MetricRule, Rule, Series, Subject};
use crate::parse::typed::{port_of, Direction};
use crate::parse::Event;
use std::collections::{BTreeMap, HashMap};

/// Sample lines kept as evidence per series and group.
const LINES_PER_SERIES: usize = 3;
/// Groups kept per series of a rule; past this, samples of new groups are
/// not counted.
const MAX_GROUPS: usize = 256;
/// The cluster domain a Service's name is completed with: the proxy's own
/// default, and what its logs print.
const CLUSTER_DOMAIN: &str = "svc.cluster.local";

/// What is wrong with a metric rule, for `lpa rules check`.
pub fn problems(r: &Rule, m: &MetricRule) -> Vec<String> {
    let mut out = Vec::new();
    if !(r.text.is_empty() && r.regex.is_none() && r.fields.is_empty() && r.all_text.is_empty()) {
        out.push("a metric rule reads samples, not log lines: drop text, regex and fields".into());
    }
    if m.series.is_empty() || m.when.is_empty() {
        out.push("it needs `series` and `when`".into());
    }
    let aliases: Vec<String> = m.series.iter().map(|s| s.alias.clone()).collect();
    for (i, a) in aliases.iter().enumerate() {
        if aliases[..i].contains(a) {
            out.push(format!("two series are called `{a}`"));
        }
    }
    for s in &m.series {
        if s.names.is_empty() {
            out.push(format!("series `{}` names no sample", s.alias));
        }
    }
    for w in &m.when {
        if let Err(e) = Cond::parse(w, &aliases) {
            out.push(e);
        }
    }
    if let Some(g) = &m.grows {
        if !aliases.contains(g) {
            out.push(format!("`grows` names `{g}`, which no series is called"));
        }
    }
    out
}

/// One metric rule, compiled.
struct Compiled {
    rule: usize,
    conds: Vec<Cond>,
    grows: Option<usize>,
    series: Vec<Series>,
}

/// The metric rules of an engine, indexed by sample name.
#[derive(Default)]
pub struct Program {
    rules: Vec<Compiled>,
    by_name: HashMap<String, Vec<(u16, u16)>, rustc_hash::FxBuildHasher>,
}

impl Program {
    pub fn new(rules: &[Rule]) -> Program {
        let mut p = Program::default();
        for (ri, r) in rules.iter().enumerate() {
            let Some(m) = &r.metrics else { continue };
            let aliases: Vec<String> = m.series.iter().map(|s| s.alias.clone()).collect();
            let k = p.rules.len() as u16;
            for (si, s) in m.series.iter().enumerate() {
                for n in &s.names {
                    p.by_name.entry(n.clone()).or_default().push((k, si as u16));
                }
            }
            p.rules.push(Compiled {
                rule: ri,
                conds: m
                    .when
                    .iter()
                    .map(|w| Cond::parse(w, &aliases).expect("validated when loaded"))
                    .collect(),
                grows: m
                    .grows
                    .as_ref()
                    .and_then(|g| aliases.iter().position(|a| a == g)),
                series: m.series.clone(),
            });
        }
        p
    }

    /// Adds a sample to the series of every rule that selects it.
    pub fn add(&self, rules: &[Rule], found: &mut Found, ev: &Event<'_>, name: &str, value: f64) {
        let Some(sel) = self.by_name.get(name) else {
            return;
        };
        let subjects = subjects_of(ev);
        for &(k, si) in sel {
            let c = &self.rules[k as usize];
            let r = &rules[c.rule];
            if !selects(r, &c.series[si as usize], ev, name) {
                continue;
            }
            let group = r
                .group_by
                .and_then(|g| subjects.iter().find(|(s, _)| *s == g))
                .map_or(String::new(), |(_, v)| v.clone());
            let per = found.groups_per.entry((k, si)).or_insert(0);
            let key = (k, si, group);
            if !found.series.contains_key(&key) {
                if *per >= MAX_GROUPS {
                    continue;
                }
                *per += 1;
            }
            let a = found.series.entry(key).or_default();
            a.add(ev.line, &ev.text, value);
            for (s, v) in &subjects {
                a.subjects.entry(*s).or_default().add(v, 1);
            }
        }
    }

    /// The matches of every metric rule: per pod, per group of the latest
    /// snapshot whose series meet all its conditions.
    pub fn evaluate(&self, rules: &[Rule], pods: &[Pod<Found>]) -> Vec<(usize, String, Acc)> {
        let mut out = Vec::new();
        for pod in pods {
            let (now, before) = pod.now_and_before();
            for (k, c) in self.rules.iter().enumerate() {
                for group in now.data.groups_of(k as u16) {
                    let env = Group {
                        snap: now,
                        k: k as u16,
                        group: &group,
                        n: c.series.len(),
                    };
                    if !c.conds.iter().all(|x| x.holds(&env) == Some(true)) {
                        continue;
                    }
                    let mut acc = env.acc(c.conds.iter().any(Cond::uses_now));
                    acc.metric_weight = rules[c.rule].weight;
                    if let (Some(g), Some(b)) = (c.grows, before) {
                        grew(&mut acc, &env, b, g);
                    }
                    out.push((c.rule, group, acc));
                }
            }
        }
        out
    }
}

/// Says whether the `grows` series grew since the earlier snapshot: a
/// counter that did not is an old failure, not the current one.
fn grew(acc: &mut Acc, now: &Group<'_>, before: &Snapshot<Found>, g: usize) {
    let old = Group {
        snap: before,
        k: now.k,
        group: now.group,
        n: now.n,
    };
    let (a, b) = (old.get(g, Agg::Sum), now.get(g, Agg::Sum));
    // The counter as the snapshot names it.
    let name = now
        .series(g)
        .and_then(|s| s.lines.first())
        .map_or("", |l| l.text.split(['{', ' ']).next().unwrap_or(""));
    let lines = format!(
        "lines {} and {} of {}",
        before.line, now.snap.line, now.snap.source
    );
    let secs = match (before.clock.now(), now.snap.clock.now()) {
        (Some((t0, _)), Some((t1, _))) if t1 > t0 => Some(t1 - t0),
        _ => None,
    };
    if b > a {
        let rate = secs.map_or(String::new(), |s| {
            format!(" in {s:.0} s ({:.2}/s)", (b - a) / s)
        });
        acc.notes.push(format!(
            "`{name}` grew by {}{rate} between the snapshots ({lines}): it is happening now.",
            b - a
        ));
    } else {
        acc.old = true;
        acc.notes.push(format!(
            "`{name}` did not grow between the snapshots ({lines}): it happened before the first one, not now."
        ));
    }
}

/// A rule's series in one group of one snapshot.
struct Group<'s> {
    snap: &'s Snapshot<Found>,
    k: u16,
    group: &'s str,
    n: usize,
}

impl Env for Group<'_> {
    fn get(&self, series: usize, agg: Agg) -> f64 {
        self.series(series).map_or(0.0, |a| a.get(agg))
    }

    fn now(&self) -> Option<f64> {
        self.snap.clock.now().map(|(t, _)| t)
    }
}

impl Group<'_> {
    fn series(&self, i: usize) -> Option<&SeriesAgg> {
        self.snap
            .data
            .series
            .get(&(self.k, i as u16, self.group.to_string()))
    }

    /// The match: its series' lines as evidence, their subjects, the pod.
    fn acc(&self, with_clock: bool) -> Acc {
        let s = self.snap;
        let mut acc = Acc {
            first_at: (s.source.clone(), s.line),
            last_at: (s.source.clone(), s.line),
            attributed: true,
            logged: true,
            ..Default::default()
        };
        let mut lines: Vec<&Line> = Vec::new();
        for i in 0..self.n {
            let Some(a) = self.series(i) else { continue };
            acc.count += a.count;
            lines.extend(&a.lines);
            for (k, v) in &a.subjects {
                acc.subjects.entry(*k).or_default().merge(v.clone());
            }
        }
        if with_clock {
            if let Some((_, c)) = s.clock.now() {
                lines.extend(c);
            }
        }
        lines.sort_by_key(|l| l.line);
        lines.dedup_by_key(|l| l.line);
        acc.metric_evidence = lines
            .into_iter()
            .map(|l| Evidence {
                source: s.source.clone(),
                line: l.line,
                text: l.text.clone(),
                kind: Some("metric"),
                parts: None,
            })
            .collect();
        acc.count = acc.count.max(1);
        acc.proxies.insert(s.proxy());
        if let Some(p) = &s.pod {
            acc.workload.add(&format!("po/{p}"), 1);
            acc.subjects.entry(Subject::Pod).or_default().add(p, 1);
        }
        acc
    }
}

/// Aggregates of the samples of one series of a rule, in one group.
#[derive(Debug, Clone)]
pub struct SeriesAgg {
    count: u64,
    sum: f64,
    zeros: u64,
    min: f64,
    max: f64,
    lines: Vec<Line>,
    subjects: BTreeMap<Subject, Values>,
}

impl Default for SeriesAgg {
    fn default() -> Self {
        SeriesAgg {
            count: 0,
            sum: 0.0,
            zeros: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            lines: Vec::new(),
            subjects: BTreeMap::new(),
        }
    }
}

impl SeriesAgg {
    fn add(&mut self, line: u64, text: &str, v: f64) {
        self.count += 1;
        self.sum += v;
        self.zeros += u64::from(v == 0.0);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        if self.lines.len() < LINES_PER_SERIES {
            self.lines.push(Line {
                line,
                text: text.to_string(),
                value: v,
            });
        }
    }

    fn merge(&mut self, o: SeriesAgg) {
        self.count += o.count;
        self.sum += o.sum;
        self.zeros += o.zeros;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        let room = LINES_PER_SERIES.saturating_sub(self.lines.len());
        self.lines.extend(o.lines.into_iter().take(room));
        for (k, v) in o.subjects {
            self.subjects.entry(k).or_default().merge(v);
        }
    }

    /// An empty series reads 0 whatever the aggregate.
    fn get(&self, agg: Agg) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        match agg {
            Agg::Count => self.count as f64,
            Agg::Sum => self.sum,
            Agg::Zeros => self.zeros as f64,
            Agg::Min => self.min,
            Agg::Max => self.max,
        }
    }
}

/// What a snapshot holds for the metric rules: per (rule, series, group).
#[derive(Debug, Clone, Default)]
pub struct Found {
    series: BTreeMap<(u16, u16, String), SeriesAgg>,
    groups_per: BTreeMap<(u16, u16), usize>,
}

impl Found {
    fn groups_of(&self, k: u16) -> Vec<String> {
        let mut g: Vec<String> = self
            .series
            .keys()
            .filter(|(r, _, _)| *r == k)
            .map(|(_, _, g)| g.clone())
            .collect();
        g.sort();
        g.dedup();
        g
    }
}

impl Reduce for Found {
    fn merge(&mut self, later: Found) {
        for (key, a) in later.series {
            match self.series.get_mut(&key) {
                Some(x) => x.merge(a),
                None => {
                    let per = self.groups_per.entry((key.0, key.1)).or_insert(0);
                    if *per < MAX_GROUPS {
                        *per += 1;
                        self.series.insert(key, a);
                    }
                }
            }
        }
    }

    fn weight(&self) -> usize {
        self.series
            .iter()
            .map(|((_, _, g), a)| {
                // Allocator and tree-node overheads included, as measured:
                // 312 pods of 9,000 series, peak RSS against the sum.
                let lines: usize = a.lines.iter().map(|l| 2 * l.text.len() + 96).sum();
                let subjects: usize = a
                    .subjects
                    .values()
                    .flat_map(|v| v.0.keys())
                    .map(|k| 2 * k.len() + 128)
                    .sum();
                2 * g.len() + lines + subjects + 384
            })
            .sum()
    }
}

/// The direction of a series: its `direction` label, or its family's
/// prefix.
fn direction_of(ev: &Event<'_>, name: &str) -> Direction {
    match ev.field("direction") {
        Some("inbound") => Direction::Inbound,
        Some("outbound") => Direction::Outbound,
        _ if name.starts_with("inbound_") => Direction::Inbound,
        _ if name.starts_with("outbound_") || name.starts_with("gateway_") => Direction::Outbound,
        _ => Direction::Unknown,
    }
}

fn selects(r: &Rule, s: &Series, ev: &Event<'_>, name: &str) -> bool {
    let label = |k: &str| ev.field(k).unwrap_or("");
    s.labels.iter().all(|(k, v)| v.admits(label(k)))
        && !s.labels_not.iter().any(|(k, v)| v.admits(label(k)))
        && (r.direction.is_empty() || r.direction.contains(&direction_of(ev, name)))
        && (r.ports.is_empty() || port(ev).is_some_and(|p| r.ports.contains(&p)))
        && (r.port_roles.is_empty()
            || port(ev).is_some_and(|p| ports::roles(p).iter().any(|x| r.port_roles.contains(x))))
}

/// The port a series is about: the inbound target's, or its Server's.
fn port(ev: &Event<'_>) -> Option<u16> {
    ["target_port", "srv_port"]
        .iter()
        .find_map(|k| ev.field(k)?.parse().ok())
        .or_else(|| ev.field("target_addr").and_then(port_of))
}

/// The subjects a series' labels name, as a log line of the same traffic
/// would: the authority (or the Service a route or balancer is for, or a
/// control-plane address) is the destination; the target of a connection
/// the proxy opened is the endpoint, of one it accepted the target;
/// `client_id` and `server_id` are identities; `srv_name` the Server.
fn subjects_of(ev: &Event<'_>) -> Vec<(Subject, String)> {
    let l = |k: &str| ev.field(k).filter(|v| !v.is_empty());
    let mut out = Vec::new();
    let service = match (l("parent_name"), l("parent_namespace"), l("parent_port")) {
        (Some(n), Some(ns), Some(p)) if l("parent_kind").is_none_or(|k| k == "Service") => {
            Some(format!("{n}.{ns}.{CLUSTER_DOMAIN}:{p}"))
        }
        _ => None,
    };
    let dst = l("authority")
        .map(str::to_string)
        .or(service)
        .or_else(|| l("addr").map(str::to_string));
    if let Some(d) = dst {
        out.push((Subject::Dst, d));
    }
    let opened = ev.field("peer") == Some("dst") && ev.field("direction") == Some("outbound");
    if let Some(t) = l("target_addr") {
        out.push((
            if opened {
                Subject::Peer
            } else {
                Subject::Target
            },
            t.to_string(),
        ));
    }
    if let Some(p) = port(ev).filter(|_| !opened) {
        out.push((Subject::Port, p.to_string()));
    }
    for k in ["client_id", "server_id"] {
        if let Some(id) = l(k) {
            out.push((Subject::Identity, id.to_string()));
        }
    }
    if let Some(s) = l("srv_name").filter(|_| l("srv_kind") != Some("default")) {
        out.push((Subject::Server, s.to_string()));
    }
    out
}
