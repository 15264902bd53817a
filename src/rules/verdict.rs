//! The verdict once the input is read: matches become findings (one per
//! id and subject, a match that names no destination joining the only
//! group that does), startup noise and undecided variants are settled,
//! findings are ranked, and symptoms fold under the causes that explain
//! them: on the same destination or connection, within one proxy.

use super::command::Given;
use super::command::Vars;
use super::correlation::{Acc, State, Stats};
use super::finding::{Command, Consequence, Finding};
use super::ports::is_control_plane_addr;
use super::{Role, Rule, Severity, Subject};
use crate::parse::Era;
use crate::report::explain::Report;
use std::collections::BTreeMap;

/// Seconds after the proxy starts within which connect errors to the
/// control plane are the control plane not being ready yet.
const STARTUP_SECONDS: f64 = 30.0;
/// At most this many such lines make startup noise, not an outage.
const STARTUP_LINES: u64 = 20;
/// A finding resting only on lines no Linkerd mark attributes is this
/// much less sure.
const UNATTRIBUTED_CONFIDENCE: f64 = 0.7;

/// What makes findings one: diagnosis id, subject group, benign.
type Verdict<'r> = (&'r str, String, bool);

impl State<'_> {
    /// The findings, ranked, with symptoms folded under their causes.
    pub fn finish(mut self, era_override: Option<Era>) -> Report {
        self.settle();
        let engine = self.engine;
        let (pods, dropped) = std::mem::take(&mut self.metrics).finish();
        self.stats.snapshots_dropped = dropped;
        for (ri, group, acc) in engine.metrics.evaluate(&engine.rules, &pods) {
            self.add_acc(ri, group, acc);
        }
        if let Some(e) = era_override {
            self.stats.era.add_stated(e);
        }
        let era = self.stats.era.era().unwrap_or(Era::V2_15);
        let rules = &self.engine.rules;
        let mut groups: Vec<((usize, String), Acc)> =
            std::mem::take(&mut self.groups).into_iter().collect();
        // A ClusterIP the log showed beside its Service's name is that
        // destination: the findings about either are one.
        for ((_, g), acc) in groups.iter_mut() {
            if let Some(name) = self.aliases.get(g.as_str()) {
                *g = name.clone();
                if let Some(d) = acc.subjects.get_mut(&Subject::Dst) {
                    d.rename(&self.aliases);
                }
            }
        }
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        let told: std::collections::BTreeSet<(&str, String)> = groups
            .iter()
            .filter(|((ri, _), a)| rules[*ri].yields_to.is_empty() && a.count > 0)
            .filter_map(|((ri, g), _)| Some((rules[*ri].id.as_deref()?, g.clone())))
            .collect();
        // A match that cannot tell its mechanism from another joins that
        // other's finding about the same subject.
        let yields: Vec<Option<&str>> = groups
            .iter()
            .map(|((ri, g), _)| {
                rules[*ri]
                    .yields_to
                    .iter()
                    .map(String::as_str)
                    .find(|y| told.contains(&(*y, g.clone())))
            })
            .collect();
        // Rules that reach the same verdict (id, benign) about the same
        // subject make one finding, told by its most telling rule (a cause
        // before a symptom, the more specific first).
        let mut merged: BTreeMap<Verdict<'_>, (Vec<usize>, Acc)> = BTreeMap::new();
        for (((ri, group), acc), yielded) in groups.into_iter().zip(yields) {
            let r = &rules[ri];
            if r.min_count.is_some_and(|m| acc.count < m)
                || r.min_clients.is_some_and(|m| acc.clients.len() < m)
                || r.max_clients.is_some_and(|m| acc.clients.len() > m)
            {
                continue;
            }
            let id = yielded.or(r.id.as_deref()).unwrap_or("");
            let key = (id, group, r.benign);
            match merged.get_mut(&key) {
                Some((ris, a)) => {
                    if !ris.contains(&ri) {
                        ris.push(ri);
                    }
                    a.merge(acc);
                }
                None => {
                    merged.insert(key, (vec![ri], acc));
                }
            }
        }
        let mut entries: Vec<(Vec<usize>, Acc)> = join_ungrouped(merged);
        join_undecided(&mut entries, rules);
        let mut findings: Vec<Finding> = entries
            .into_iter()
            .map(|(ris, acc)| {
                let mut rs: Vec<&Rule> = ris.iter().map(|&i| &rules[i]).collect();
                // A rule that yielded its match to this finding's mechanism
                // does not tell it.
                rs.sort_by(|a, b| {
                    (!a.yields_to.is_empty())
                        .cmp(&!b.yields_to.is_empty())
                        .then(a.role.cmp(&b.role))
                        .then(b.weight.cmp(&a.weight))
                });
                new_finding(&rs, acc, era, &self.stats, &self.engine.given)
            })
            .collect();
        rank(&mut findings);
        let findings = fold(findings);
        Report::new(findings, self.stats, self.unmatched)
    }
}

/// A match that names no subject of its rule's grouping joins the only
/// group of its id that has one, or of several the only one its proxy
/// shows; otherwise it stays apart.
fn join_ungrouped(merged: BTreeMap<Verdict<'_>, (Vec<usize>, Acc)>) -> Vec<(Vec<usize>, Acc)> {
    struct Group<'a> {
        key: (&'a str, bool),
        subject: String,
        rules: Vec<usize>,
        acc: Acc,
    }
    let mut ungrouped = Vec::new();
    let mut out: Vec<Group> = Vec::new();
    for ((id, subject, benign), (rules, acc)) in merged {
        let g = Group {
            key: (id, benign),
            subject,
            rules,
            acc,
        };
        if g.subject.is_empty() {
            ungrouped.push(g);
        } else {
            out.push(g);
        }
    }
    for g in ungrouped {
        let same: Vec<usize> = (0..out.len())
            .filter(|&i| out[i].key == g.key && !out[i].subject.is_empty())
            .collect();
        // Among several, the one seen by the same proxy (a snapshot's
        // unlabelled counter and that snapshot's balancer for a service).
        let of_proxy: Vec<usize> = same
            .iter()
            .copied()
            .filter(|&i| {
                g.acc
                    .proxies
                    .intersection(&out[i].acc.proxies)
                    .next()
                    .is_some()
            })
            .collect();
        let only = match (same.as_slice(), of_proxy.as_slice()) {
            ([i], _) | (_, [i]) => Some(*i),
            _ => None,
        };
        match only {
            Some(i) => {
                let o = &mut out[i];
                for r in g.rules {
                    if !o.rules.contains(&r) {
                        o.rules.push(r);
                    }
                }
                o.acc.merge(g.acc);
            }
            _ => out.push(g),
        }
    }
    out.into_iter().map(|g| (g.rules, g.acc)).collect()
}

fn overlap<T: Ord>(a: &std::collections::BTreeSet<T>, b: &std::collections::BTreeSet<T>) -> bool {
    a.is_empty() || b.is_empty() || a.intersection(b).next().is_some()
}

/// The undecided variant of an id (probe or client?) joins a decided
/// finding of the same id on the same ports and clients.
fn join_undecided(entries: &mut Vec<(Vec<usize>, Acc)>, rules: &[Rule]) {
    let ports = |a: &Acc| -> std::collections::BTreeSet<String> {
        a.subjects
            .get(&Subject::Port)
            .map(|v| v.0.keys().cloned().collect())
            .unwrap_or_default()
    };
    let mut i = 0;
    while i < entries.len() {
        let r = &rules[entries[i].0[0]];
        if !r.undecided {
            i += 1;
            continue;
        }
        let id = r.id.clone();
        let target = (0..entries.len()).find(|&j| {
            let d = &rules[entries[j].0[0]];
            j != i
                && !d.undecided
                && d.id == id
                && overlap(&ports(&entries[i].1), &ports(&entries[j].1))
                && overlap(&entries[i].1.clients, &entries[j].1.clients)
        });
        match target {
            Some(j) => {
                let (ris, acc) = entries.remove(i);
                let j = if j > i { j - 1 } else { j };
                for r in ris {
                    if !entries[j].0.contains(&r) {
                        entries[j].0.push(r);
                    }
                }
                entries[j].1.merge(acc);
            }
            None => i += 1,
        }
    }
}

/// A finding told by `rules[0]`; the other rules that reached the same
/// verdict add their next commands, notes and explained ids.
fn new_finding(rules: &[&Rule], acc: Acc, era: Era, stats: &Stats, given: &Given) -> Finding {
    let r = rules[0];
    let vars = Vars {
        subjects: &acc.subjects,
        workload: acc.workload.first(),
        given,
    };
    let mut quoted: Vec<String> = Vec::new();
    let mut prose = |t: &str| {
        let (s, used) = vars.prose(t);
        for u in used {
            if !quoted.contains(&u) {
                quoted.push(u);
            }
        }
        s
    };
    let mut next_commands: Vec<Command> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut explains: Vec<String> = Vec::new();
    // Asking for the proxy's metrics is for findings that rest on logs:
    // once a snapshot is evidence, the input already holds them.
    let has_metrics = !acc.metric_evidence.is_empty();
    for rule in rules {
        for n in rule.next.iter().filter(|n| n.applies_to(era)) {
            if has_metrics && n.cmd.starts_with("linkerd diagnostics proxy-metrics") {
                continue;
            }
            let Some(c) = vars.command(&n.cmd, &n.why) else {
                continue;
            };
            prose(&n.why);
            if !next_commands.iter().any(|x| x.command == c.command) {
                next_commands.push(c);
            }
        }
        // What would decide, when the lines it rests on are INFO lines or
        // metrics (a log rule's words are not about a snapshot alone).
        let info_only = !stats.has_debug() && (rule.metrics.is_some() || !acc.evidence.is_empty());
        if let (true, Some(n)) = (info_only, &rule.if_info_only) {
            let n = prose(n);
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
        for e in &rule.explains {
            if !explains.contains(e) {
                explains.push(e.clone());
            }
        }
    }
    let subjects = acc
        .subjects
        .iter()
        .map(|(k, v)| (k.as_str(), v.ranked()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let mut sev = rules.iter().map(|x| x.severity).max().unwrap_or(r.severity);
    let mut benign = r.benign;
    let mut confidence = rules.iter().map(|x| x.confidence).fold(0.0, f64::max);
    if !acc.evidence.is_empty() && !acc.metric_evidence.is_empty() {
        // The logs and the metrics agree: two witnesses of one mechanism.
        confidence += (1.0 - confidence) / 2.0;
    }
    for n in &acc.notes {
        if !notes.contains(n) {
            notes.push(n.clone());
        }
    }
    if acc.old {
        sev = Severity::Info;
    }
    let mut detail = r.detail.clone();
    let hearsay = !acc.logged;
    if acc.check_warnings == acc.count {
        // `linkerd check` warned (‼); it did not fail.
        sev = sev.min(Severity::Warning);
    }
    if hearsay {
        sev = Severity::Info;
        confidence *= UNATTRIBUTED_CONFIDENCE * UNATTRIBUTED_CONFIDENCE;
        notes.push("From the reporter's own words, not from a log line: ask for the logs that would show it.".into());
    } else if !acc.attributed {
        // Nothing ties these lines to a Linkerd component: a hypothesis.
        sev = sev.min(Severity::Warning);
        confidence *= UNATTRIBUTED_CONFIDENCE;
        notes.push("lpa could not tell which component printed these lines (no Linkerd log head or mark): a lead to confirm, not a proven cause.".into());
    }
    let values = |s: Subject| acc.subjects.get(&s).map(|v| v.ranked()).unwrap_or_default();
    let addrs: Vec<String> = values(Subject::Dst)
        .into_iter()
        .chain(values(Subject::Peer))
        .collect();
    if r.id.as_deref().is_some_and(|id| id.starts_with("connect."))
        && !addrs.is_empty()
        && addrs.iter().all(|a| is_control_plane_addr(a))
        && acc.count <= STARTUP_LINES
        && acc.last.uptime.is_some_and(|u| u <= STARTUP_SECONDS)
    {
        sev = Severity::Info;
        benign = true;
        detail = Some("startup: the control plane was not reachable yet".into());
        notes.push(format!(
            "These connects to the control plane failed in the proxy's first {STARTUP_SECONDS:.0} seconds only: the usual start-up race, harmless if they stop."
        ));
    }
    let first_at = (stats.source_index(&acc.first_at.0), acc.first_at.1);
    let title = prose(&r.title);
    let explanation = prose(r.explain.trim());
    Finding {
        id: r.id.clone().unwrap_or_default(),
        severity: sev.as_str(),
        benign,
        confidence,
        title,
        detail,
        explanation,
        count: acc.count,
        subjects,
        sources: acc.proxies.iter().cloned().collect(),
        first_seen: acc.first.display(),
        last_seen: acc.last.display(),
        first_uptime: acc.first.uptime,
        last_uptime: acc.last.uptime,
        evidence: acc
            .evidence
            .into_iter()
            .chain(acc.metric_evidence)
            .collect(),
        next_commands,
        doc: r.doc.clone(),
        notes,
        consequences: Vec::new(),
        rules: rules.iter().map(|x| x.name.clone()).collect(),
        role: r.role,
        sev,
        weight: rules.iter().map(|x| x.weight).max().unwrap_or(0),
        explains,
        first_at,
        proxies: acc.proxies,
        conns: acc.conns,
        hearsay,
        quoted,
    }
}

/// Log evidence before a reporter's words, harmful before benign, then
/// severity, causes before symptoms, weight (specificity), confidence,
/// weight of evidence, and first occurrence.
fn rank(f: &mut [Finding]) {
    f.sort_by(|a, b| {
        a.hearsay
            .cmp(&b.hearsay)
            .then(a.benign.cmp(&b.benign))
            .then(b.sev.cmp(&a.sev))
            .then(a.role.cmp(&b.role))
            .then(b.weight.cmp(&a.weight))
            .then(b.confidence.total_cmp(&a.confidence))
            .then(b.count.cmp(&a.count))
            .then(a.first_at.cmp(&b.first_at))
    });
}

/// How a cause accounts for a symptom: the same lines show both, or, in
/// one proxy, they are on the same connection or name the same destination
/// (`Some(None)`); or in two inputs the destination links them
/// (`Some(Some(words))`).
fn link(symptom: &Finding, cause: &Finding) -> Option<Option<String>> {
    let same_line = symptom.evidence.iter().any(|e| {
        cause
            .evidence
            .iter()
            .any(|c| c.source == e.source && c.line == e.line)
    });
    let same_proxy = symptom
        .proxies
        .intersection(&cause.proxies)
        .next()
        .is_some();
    let same_conn = symptom.conns.intersection(&cause.conns).next().is_some();
    if same_line || (same_proxy && same_conn) {
        return Some(None);
    }
    let shared = symptom.dsts().iter().find(|d| cause.dsts().contains(d))?;
    if same_proxy {
        return Some(None);
    }
    Some(Some(format!(
        "seen in {}; linked to this cause (seen in {}) by the destination {shared}",
        symptom.sources.join(", "),
        cause.sources.join(", ")
    )))
}

/// Folds each finding under the best ranked unfolded finding that explains
/// its id and is linked to it. A symptom that names no destination folds
/// only under the one cause of its proxy that could explain it.
fn fold(findings: Vec<Finding>) -> Vec<Finding> {
    let n = findings.len();
    let mut parent: Vec<Option<(usize, Option<String>)>> = vec![None; n];
    for i in 0..n {
        // A finding that already explains others stays a root.
        if parent
            .iter()
            .any(|p| p.as_ref().is_some_and(|(j, _)| *j == i))
        {
            continue;
        }
        let f = &findings[i];
        let causes: Vec<usize> = (0..n)
            .filter(|&j| {
                j != i
                    && parent[j].is_none()
                    && !findings[j].benign
                    && findings[j].explains.contains(&f.id)
            })
            .collect();
        let mut found = causes
            .iter()
            .find_map(|&j| link(f, &findings[j]).map(|l| (j, l)));
        // Only a symptom (fail-fast, say) may hang on a cause by their
        // sharing a proxy alone; a cause of its own needs a link.
        if found.is_none() && f.dsts().is_empty() && f.role == Role::Symptom {
            let mut same_proxy = causes.iter().filter(|&&j| {
                f.proxies
                    .intersection(&findings[j].proxies)
                    .next()
                    .is_some()
            });
            if let (Some(&j), None) = (same_proxy.next(), same_proxy.next()) {
                found = Some((j, None));
            }
        }
        parent[i] = found;
    }
    let mut out: Vec<Option<Finding>> = findings.into_iter().map(Some).collect();
    for i in 0..n {
        if let Some((j, link)) = parent[i].take() {
            let f = out[i].take().expect("folded once");
            let c = Consequence {
                id: f.id,
                title: f.title,
                count: f.count,
                evidence: f.evidence.into_iter().take(2).collect(),
                link,
                quoted: f.quoted,
            };
            if let Some(p) = out[j].as_mut() {
                p.consequences.push(c);
            }
        }
    }
    demote_symptoms(out.into_iter().flatten().collect())
}

/// A symptom left standing (no link to fold it) still ranks after a cause
/// that explains its id: fail-fast is never the root cause when the input
/// shows a mechanism that produces it.
fn demote_symptoms(mut f: Vec<Finding>) -> Vec<Finding> {
    let mut i = 0;
    while i < f.len() {
        let later_cause = (i + 1..f.len()).rev().find(|&j| {
            f[i].role == Role::Symptom
                && f[j].role == Role::Cause
                && !f[j].benign
                && !f[j].hearsay
                && f[j].explains.contains(&f[i].id)
        });
        match later_cause {
            Some(j) => {
                let s = f.remove(i);
                f.insert(j, s);
            }
            None => i += 1,
        }
    }
    f
}
