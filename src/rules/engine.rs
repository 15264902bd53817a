//! The rule engine: an Aho-Corasick prefilter over the rules' literals picks
//! the few rules a line can match; matches are grouped into findings with
//! counts, evidence and subjects; connections carry tags between events
//! (`sz=0`, then `identity required`); at the end, symptoms fold under the
//! causes that explain them and findings are ranked.

use super::conns::{ConnCtx, Missing, Recent};
use super::{KnowledgeBase, Role, Rule, Severity, Subject, TagKey};
use crate::parse::typed::EraCue;
use crate::parse::typed::{host_of, EraVote};
use crate::parse::{Era, Event, Level, Producer, Record};
use crate::pipeline::Accumulator;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::Regex;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Evidence lines kept per finding.
pub const MAX_EVIDENCE: usize = 5;
/// Distinct values kept per subject of a finding.
const MAX_VALUES: usize = 64;
/// Distinct client IPs counted exactly per finding.
const MAX_CLIENTS: usize = 4096;
/// Groups (findings) per rule before the rest share one.
const MAX_GROUPS: usize = 256;
/// Matches per block waiting only for an earlier block's connection context;
/// past this, a match keeps what its block knows. (Matches waiting for tags
/// always wait: a wrong tag decision would add or drop a finding.)
const MAX_PENDING: u32 = 4096;
/// Proxy lines per block scanned for era cues, beside every warning and error.
const ERA_SAMPLE: u32 = 2000;

/// Rules compiled for matching; shared by every thread.
pub struct Engine {
    pub rules: Vec<Rule>,
    prefilter: AhoCorasick,
    pattern_rule: Vec<usize>,
    /// Rules without literals: tried on every event.
    always: Vec<usize>,
    regexes: Vec<Option<Regex>>,
    captures: Vec<Option<Regex>>,
    lower_all: Vec<Vec<String>>,
    lower_not: Vec<Vec<String>>,
    tag_bits: HashMap<String, u32>,
    era_prefilter: AhoCorasick,
    era_cues: Vec<EraCue>,
}

impl Engine {
    pub fn new(kb: KnowledgeBase) -> Engine {
        let rules = kb.rules;
        let era_of = |v: &Option<String>| v.as_deref().and_then(Era::of_linkerd_version);
        let era_cues = kb
            .eras
            .iter()
            .map(|e| EraCue {
                exact: None,
                min: era_of(&e.since),
                max: era_of(&e.until),
            })
            .collect();
        let era_prefilter = AhoCorasick::new(kb.eras.iter().map(|e| e.text.as_str()))
            .expect("era literals compile");
        let mut patterns = Vec::new();
        let mut pattern_rule = Vec::new();
        let mut always = Vec::new();
        let mut tag_bits = HashMap::new();
        for (i, r) in rules.iter().enumerate() {
            if r.text.is_empty() {
                always.push(i);
            }
            for t in &r.text {
                patterns.push(t.clone());
                pattern_rule.push(i);
            }
            for t in r.tag.iter().chain(&r.requires_tag).chain(&r.forbids_tag) {
                let n = tag_bits.len() as u32;
                tag_bits.entry(t.clone()).or_insert(1u32 << n.min(31));
            }
        }
        let prefilter = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .kind(Some(AhoCorasickKind::DFA))
            .match_kind(MatchKind::Standard)
            .build(&patterns)
            .expect("rule literals compile");
        let regexes = rules
            .iter()
            .map(|r| {
                r.regex
                    .as_ref()
                    .map(|x| Regex::new(x).expect("validated when loaded"))
            })
            .collect();
        let captures = rules
            .iter()
            .map(|r| {
                r.capture
                    .as_ref()
                    .map(|x| Regex::new(x).expect("validated when loaded"))
            })
            .collect();
        let lower = |v: &Vec<String>| v.iter().map(|s| s.to_ascii_lowercase()).collect();
        Engine {
            lower_all: rules.iter().map(|r| lower(&r.all_text)).collect(),
            lower_not: rules.iter().map(|r| lower(&r.not_text)).collect(),
            rules,
            prefilter,
            pattern_rule,
            always,
            regexes,
            captures,
            tag_bits,
            era_prefilter,
            era_cues,
        }
    }

    /// Era cues from release-specific wording in this text.
    pub fn era_cues<'a>(&'a self, text: &'a str) -> impl Iterator<Item = EraCue> + 'a {
        self.era_prefilter
            .find_overlapping_iter(text)
            .map(|m| self.era_cues[m.pattern().as_usize()])
    }

    /// State for a whole input read in order (follow mode, tickets).
    pub fn whole_state(&self) -> State<'_> {
        State {
            defer: false,
            ..self.state()
        }
    }

    /// State for one block of an input read in parallel blocks.
    pub fn state(&self) -> State<'_> {
        State {
            engine: self,
            groups: HashMap::new(),
            tags: Recent::default(),
            pending: Vec::new(),
            waiting_for_context: 0,
            conns: Recent::default(),
            stats: Stats::default(),
            defer: true,
            candidates: Vec::new(),
            era_sampler: EraSampler::default(),
        }
    }

    /// Does any rule's literal occur in this text?
    pub fn knows(&self, text: &str) -> bool {
        self.prefilter.is_match(text)
    }

    fn bits(&self, tags: &[String]) -> u32 {
        tags.iter()
            .filter_map(|t| self.tag_bits.get(t))
            .fold(0, |a, b| a | b)
    }
}

fn contains_ci(hay: &str, needle_lower: &str) -> bool {
    let h = hay.as_bytes();
    let n = needle_lower.as_bytes();
    n.is_empty() || h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n))
}

fn producer_family(p: Producer) -> &'static str {
    match p {
        Producer::ProxyPlain | Producer::ProxyJson | Producer::ProxyLegacy => "proxy",
        Producer::Logrus | Producer::LogrusJson | Producer::Klog | Producer::PolicyController => {
            "control-plane"
        }
        Producer::ProxyInit => "init",
        Producer::AccessApache | Producer::AccessJson => "access",
        Producer::RustPanic | Producer::GoPanic => "panic",
        Producer::GoLog => "go-log",
        Producer::Kube => "kube",
    }
}

/// Where and when a line was seen.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Evidence {
    pub source: String,
    pub line: u64,
    pub text: String,
}

/// Counts of distinct values, capped.
#[derive(Debug, Clone, Default)]
struct Values(BTreeMap<String, u64>);

impl Values {
    fn add(&mut self, v: &str, n: u64) {
        if let Some(c) = self.0.get_mut(v) {
            *c += n;
        } else if self.0.len() < MAX_VALUES {
            self.0.insert(v.to_string(), n);
        }
    }
    fn merge(&mut self, o: Values) {
        for (k, n) in o.0 {
            self.add(&k, n);
        }
    }
    /// Most frequent first, then by name.
    fn ranked(&self) -> Vec<String> {
        let mut v: Vec<(&String, &u64)> = self.0.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.into_iter().map(|(k, _)| k.clone()).collect()
    }
}

/// A time in the log: uptime seconds or a wall-clock string.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Seen {
    pub uptime: Option<f64>,
    pub timestamp: Option<String>,
}

impl Seen {
    fn of(ev: &Event) -> Seen {
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

/// One (rule, group) while the input is read.
#[derive(Debug, Clone, Default)]
struct Acc {
    count: u64,
    /// The earliest lines, in input order.
    evidence: Vec<Evidence>,
    first: Seen,
    last: Seen,
    /// Where `first` and `last` were seen: (source, line).
    first_at: (String, u64),
    last_at: (String, u64),
    subjects: BTreeMap<Subject, Values>,
    workload: Values,
    clients: std::collections::BTreeSet<String>,
}

impl Acc {
    /// Adds other matches: a later block's, a match that waited for an
    /// earlier block (so it may come before some of this one's), or another
    /// rule's with the same verdict. Within a source, lines keep input order
    /// whatever the order of merging; sources keep the order they came in.
    fn merge(&mut self, o: Acc) {
        if o.count == 0 {
            return;
        }
        let before = |a: &(String, u64), b: &(String, u64)| a.0 == b.0 && a.1 < b.1;
        if self.count == 0 || before(&o.first_at, &self.first_at) {
            self.first = o.first;
            self.first_at = o.first_at;
        }
        if self.count == 0 || !before(&o.last_at, &self.last_at) {
            self.last = o.last;
            self.last_at = o.last_at;
        }
        self.count += o.count;
        // Most merges bring lines after all of these (a later block, the
        // next match): appending keeps the order. Only a match that waited
        // for an earlier block, or another rule's, needs the sort.
        let appends = match o.evidence.first() {
            None => true,
            Some(f) => match self.evidence.last() {
                Some(l) if l.source == f.source => l.line < f.line,
                _ => !self.evidence.iter().any(|e| e.source == f.source),
            },
        } && o.evidence.iter().all(|e| o.evidence[0].source == e.source);
        if appends {
            let room = MAX_EVIDENCE.saturating_sub(self.evidence.len());
            self.evidence.extend(o.evidence.into_iter().take(room));
        } else {
            self.evidence.extend(o.evidence);
            in_input_order(&mut self.evidence);
        }
        self.merge_subjects(o.subjects, o.workload, o.clients);
    }

    fn merge_subjects(
        &mut self,
        subjects: BTreeMap<Subject, Values>,
        workload: Values,
        clients: std::collections::BTreeSet<String>,
    ) {
        for (k, v) in subjects {
            self.subjects.entry(k).or_default().merge(v);
        }
        self.workload.merge(workload);
        for c in clients {
            if self.clients.len() >= MAX_CLIENTS {
                break;
            }
            self.clients.insert(c);
        }
    }
}

/// A match whose verdict waits for what came before its block.
#[derive(Debug, Clone)]
struct Pending {
    rule: usize,
    /// The connection whose tags decide it (the rule's tag key).
    tags_of: Option<String>,
    /// The connection whose earlier lines may name what the event did not.
    ctx_of: Option<String>,
    missing: Missing,
    acc: Acc,
}

/// What the whole input held, beside the findings.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub lines: u64,
    pub events: u64,
    pub unparsed: u64,
    pub levels: [u64; 5],
    pub proxy_events: u64,
    pub era: EraVote,
}

impl Stats {
    fn merge(&mut self, o: &Stats) {
        self.lines += o.lines;
        self.events += o.events;
        self.unparsed += o.unparsed;
        for i in 0..5 {
            self.levels[i] += o.levels[i];
        }
        self.proxy_events += o.proxy_events;
        self.era.merge(&o.era);
    }

    /// DEBUG or TRACE lines were captured (connect errors are at DEBUG).
    pub fn has_debug(&self) -> bool {
        self.levels[0] + self.levels[1] > 0
    }
}

/// Per-block (and, after merging, whole-input) matching state.
#[derive(Clone)]
pub struct State<'e> {
    engine: &'e Engine,
    groups: HashMap<(usize, String), Acc>,
    tags: Recent<u32>,
    pending: Vec<Pending>,
    waiting_for_context: u32,
    /// The destination and endpoint last seen on each connection, for
    /// matches whose own line does not name them (2.7-era error lines).
    conns: Recent<ConnCtx>,
    pub stats: Stats,
    /// A block of a larger input defers matches on connections it has not
    /// seen (their tags or context may be in an earlier block) to the merge;
    /// a state that reads the whole input decides at once (so follow mode
    /// keeps nothing pending).
    defer: bool,
    candidates: Vec<usize>,
    era_sampler: EraSampler,
}

/// Collects a log's era cues: the format cues of every line, and the
/// release-specific wording of a sample of lines. One release writes a whole
/// log, so a sample (and every warning or error) settles its era without
/// scanning each line.
#[derive(Debug, Clone)]
pub struct EraSampler {
    budget: u32,
}

impl Default for EraSampler {
    fn default() -> Self {
        EraSampler { budget: ERA_SAMPLE }
    }
}

impl EraSampler {
    pub fn observe(&mut self, engine: &Engine, ev: &Event<'_>, vote: &mut EraVote) {
        let cue = ev.era_cue();
        if !cue.is_empty() {
            vote.add(cue);
        }
        let loud = ev.level.is_some_and(|l| l >= Level::Warn);
        if ev.producer.is_proxy() && (self.budget > 0 || loud) {
            self.budget = self.budget.saturating_sub(1);
            let text = if ev.body.is_empty() {
                &ev.text
            } else {
                ev.body
            };
            for c in engine.era_cues(text) {
                vote.add(c);
            }
        }
    }
}

fn level_index(l: Level) -> usize {
    Level::ALL.iter().position(|x| *x == l).unwrap_or(2)
}

impl<'e> State<'e> {
    /// Folds a later block's state into this one (input order).
    pub fn merge(&mut self, later: State<'e>) {
        for p in later.pending {
            self.resolve(p, true);
        }
        // In a fixed order: past MAX_GROUPS, which groups share one must
        // not change from run to run.
        let mut groups: Vec<_> = later.groups.into_iter().collect();
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        for (k, a) in groups {
            self.add_acc(k.0, k.1, a);
        }
        self.tags.absorb(later.tags, |t, l| *t |= l);
        self.conns.absorb(later.conns, ConnCtx::absorb);
        self.stats.merge(&later.stats);
    }

    /// Decides a pending match with what this state, all of the input
    /// before the match's block, knows (`earlier`), or with nothing.
    fn resolve(&mut self, p: Pending, earlier: bool) {
        let mut acc = p.acc;
        if let Some(t) = p.tags_of {
            let have = earlier.then(|| self.tags.get(&t).copied()).flatten();
            if !self.tag_condition(p.rule, have.unwrap_or(0)) {
                return;
            }
        }
        if let Some(ctx) = p
            .ctx_of
            .filter(|_| earlier)
            .and_then(|c| self.conns.get(&c))
        {
            add_context(&mut acc, ctx, p.missing);
        }
        let group = group_of(&self.engine.rules[p.rule], &acc);
        self.add_acc(p.rule, group, acc);
    }

    fn add_acc(&mut self, rule: usize, group: String, acc: Acc) {
        let n = self.groups.keys().filter(|k| k.0 == rule).count();
        let key = if n >= MAX_GROUPS && !self.groups.contains_key(&(rule, group.clone())) {
            (rule, String::new())
        } else {
            (rule, group)
        };
        self.groups.entry(key).or_default().merge(acc);
    }

    fn tag_condition(&self, rule: usize, have: u32) -> bool {
        let r = &self.engine.rules[rule];
        let req = self.engine.bits(&r.requires_tag);
        let forbid = self.engine.bits(&r.forbids_tag);
        (req == 0 || have & req != 0) && have & forbid == 0
    }

    fn observe(&mut self, source: &str, ev: &Event<'_>) {
        self.stats.events += 1;
        self.stats.lines += u64::from(ev.lines);
        if let Some(l) = ev.level {
            self.stats.levels[level_index(l)] += 1;
        }
        if ev.producer.is_proxy() {
            self.stats.proxy_events += 1;
        }
        self.era_sampler
            .observe(self.engine, ev, &mut self.stats.era);
        if let Some(c) = tag_key(TagKey::Client, ev) {
            self.remember_conn(c, ev);
        }
        let owned;
        let full: &str = if matches!(
            ev.producer,
            Producer::ProxyJson | Producer::LogrusJson | Producer::AccessJson
        ) || ev.continuation.is_some()
        {
            owned = haystack(ev);
            &owned
        } else {
            &ev.text
        };
        // Rule literals are about messages and fields: the span stack, often
        // most of a debug line, need not be scanned for them.
        let body = if ev.body.is_empty() || ev.continuation.is_some() {
            full
        } else {
            ev.body
        };
        self.match_text(source, body, full, Some(ev), ev.line);
    }

    fn remember_conn(&mut self, c: &str, ev: &Event<'_>) {
        let dst = ev.dst();
        let peer = ev.endpoint();
        let port = ev.port();
        if dst.is_none() && peer.is_none() && port.is_none() {
            return;
        }
        let same = self.conns.get(c).is_some_and(|x| {
            dst.as_deref().is_none_or(|d| x.dst.as_deref() == Some(d))
                && peer.is_none_or(|p| x.peer.as_deref() == Some(p))
                && port.is_none_or(|p| x.port == Some(p))
        });
        if same {
            return;
        }
        self.conns.update(c, |e| {
            e.absorb(ConnCtx {
                dst: dst.map(|d| d.into_owned()),
                peer: peer.map(str::to_string),
                port,
            })
        });
    }

    /// Matches the rules whose literals occur in `body` against the event
    /// (other text conditions read the `full` line).
    fn match_text(
        &mut self,
        source: &str,
        body: &str,
        hay: &str,
        ev: Option<&Event<'_>>,
        line: u64,
    ) {
        let engine = self.engine;
        // Most lines match no literal: a plain search settles that fast.
        if engine.always.is_empty() && !engine.prefilter.is_match(body) {
            return;
        }
        let mut cands = std::mem::take(&mut self.candidates);
        cands.clear();
        cands.extend(
            engine
                .prefilter
                .find_overlapping_iter(body)
                .map(|m| engine.pattern_rule[m.pattern().as_usize()]),
        );
        cands.extend_from_slice(&engine.always);
        if cands.is_empty() {
            self.candidates = cands;
            return;
        }
        cands.sort_unstable();
        cands.dedup();
        for &ri in &cands {
            let r = &engine.rules[ri];
            let caps = match self.event_matches(ri, hay, ev) {
                Some(c) => c,
                None => continue,
            };
            let conn = ev.and_then(|e| tag_key(r.tag_key, e));
            if let (Some(tag), Some(c)) = (&r.tag, conn) {
                let bit = engine.tag_bits[tag];
                self.tags.update(c, |t| *t |= bit);
            }
            if r.id.is_none() {
                continue;
            }
            let client = ev.and_then(|e| tag_key(TagKey::Client, e));
            let mut missing = ev.map(Missing::of).unwrap_or_default();
            let mut acc = hit(source, hay, ev, line, caps);
            if let Some(ctx) = client.and_then(|c| self.conns.get(c)) {
                add_context(&mut acc, ctx, missing);
                missing = missing.without(ctx);
            }
            let needs_tags = !r.requires_tag.is_empty() || !r.forbids_tag.is_empty();
            let tags = conn.and_then(|c| self.tags.get(c).copied());
            // What the connection's lines in earlier blocks said may decide
            // the match: its tags, or what neither the line nor this block
            // named (its destination, endpoint, port). Decide at merge.
            let tags_of = conn.filter(|_| needs_tags && tags.is_none() && self.defer);
            let ctx_of = client.filter(|_| self.defer && missing.any());
            if tags_of.is_none() && needs_tags && !self.tag_condition(ri, tags.unwrap_or(0)) {
                continue;
            }
            if tags_of.is_some() || (ctx_of.is_some() && self.waiting_for_context < MAX_PENDING) {
                self.waiting_for_context += u32::from(tags_of.is_none());
                self.pending.push(Pending {
                    rule: ri,
                    tags_of: tags_of.map(str::to_string),
                    ctx_of: ctx_of.map(str::to_string),
                    missing,
                    acc,
                });
            } else {
                let group = group_of(r, &acc);
                self.add_acc(ri, group, acc);
            }
        }
        self.candidates = cands;
    }

    /// Checks every condition of rule `ri` but the literals; returns the
    /// regex captures (subject name, value) on a match.
    fn event_matches(
        &self,
        ri: usize,
        hay: &str,
        ev: Option<&Event<'_>>,
    ) -> Option<Vec<(Subject, String)>> {
        let engine = self.engine;
        let r = &engine.rules[ri];
        if !engine.lower_all[ri].iter().all(|n| contains_ci(hay, n)) {
            return None;
        }
        if engine.lower_not[ri].iter().any(|n| contains_ci(hay, n)) {
            return None;
        }
        if r.unparsed != ev.is_none() {
            return None;
        }
        match ev {
            None => {}
            Some(ev) => {
                if !r.producers.is_empty()
                    && !r
                        .producers
                        .iter()
                        .any(|p| p == producer_family(ev.producer))
                {
                    return None;
                }
                if let Some(min) = r.min_level {
                    if ev.level.is_some_and(|l| l < min) {
                        return None;
                    }
                }
                if !r.targets.is_empty()
                    && !r
                        .targets
                        .iter()
                        .any(|t| ev.target().starts_with(t.as_str()))
                {
                    return None;
                }
                if !r.spans.is_empty() && !r.spans.iter().any(|s| ev.has_span(s)) {
                    return None;
                }
                if r.not_spans.iter().any(|s| ev.has_span(s)) {
                    return None;
                }
                for (k, v) in &r.fields {
                    if ev.field(k) != Some(v.as_str()) {
                        return None;
                    }
                }
                for (k, v) in &r.fields_not {
                    match ev.field(k) {
                        Some(x) if x != v => {}
                        _ => return None,
                    }
                }
                if !r.ports.is_empty() && !ev.port().is_some_and(|p| r.ports.contains(&p)) {
                    return None;
                }
                if let Some(max) = r.max_uptime {
                    if !ev.uptime.is_some_and(|u| u <= max) {
                        return None;
                    }
                }
                if let Some(min) = r.min_uptime {
                    if !ev.uptime.is_some_and(|u| u >= min) {
                        return None;
                    }
                }
            }
        }
        let mut caps = Vec::new();
        let mut collect = |rx: &Regex, c: regex::Captures| {
            for name in rx.capture_names().flatten() {
                if let (Some(s), Some(m)) = (Subject::parse(name), c.name(name)) {
                    caps.push((s, m.as_str().to_string()));
                }
            }
        };
        if let Some(rx) = &engine.regexes[ri] {
            collect(rx, rx.captures(hay)?);
        }
        if let Some(rx) = &engine.captures[ri] {
            if let Some(c) = rx.captures(hay) {
                collect(rx, c);
            }
        }
        Some(caps)
    }

    /// The findings, ranked, with symptoms folded under their causes.
    pub fn finish(mut self, era_override: Option<Era>) -> super::super::report::explain::Report {
        // Matches still waiting for what came before their block: nothing
        // came before this state, so their connections carry no tag and no
        // context.
        for p in std::mem::take(&mut self.pending) {
            self.resolve(p, false);
        }
        if let Some(e) = era_override {
            self.stats.era.add_stated(e);
        }
        let era = self.stats.era.era();
        let mut groups: Vec<((usize, String), Acc)> = self.groups.into_iter().collect();
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        // Rules that reach the same verdict (id, severity, benign) about the
        // same subject make one finding, told by the first of them in the
        // rules file.
        let mut merged: BTreeMap<Verdict<'_>, (Vec<usize>, Acc)> = BTreeMap::new();
        for ((ri, group), acc) in groups {
            let r = &self.engine.rules[ri];
            if r.min_count.is_some_and(|m| acc.count < m)
                || r.min_clients.is_some_and(|m| acc.clients.len() < m)
                || r.max_clients.is_some_and(|m| acc.clients.len() > m)
            {
                continue;
            }
            let key = (r.id.as_deref().unwrap_or(""), group, r.severity, r.benign);
            match merged.get_mut(&key) {
                Some((rules, a)) => {
                    if !rules.contains(&ri) {
                        rules.push(ri);
                    }
                    a.merge(acc);
                }
                None => {
                    merged.insert(key, (vec![ri], acc));
                }
            }
        }
        let mut findings: Vec<Finding> = merged
            .into_values()
            .map(|(ris, acc)| {
                let rules: Vec<&Rule> = ris.iter().map(|&i| &self.engine.rules[i]).collect();
                Finding::new(&rules, acc, era.unwrap_or(Era::V2_15), &self.stats)
            })
            .collect();
        rank(&mut findings);
        let findings = fold(findings);
        super::super::report::explain::Report::new(findings, self.stats)
    }
}

impl Accumulator for State<'_> {
    fn record(&mut self, source: &str, rec: &Record<'_>) {
        match rec {
            Record::Event(ev) => self.observe(source, ev),
            Record::Unparsed { line, text, .. } => {
                self.stats.unparsed += 1;
                self.stats.lines += 1;
                if !text.is_empty() {
                    self.match_text(source, text, text, None, *line);
                }
            }
        }
    }
}

/// The address a rule's tags attach to.
fn tag_key<'a>(k: TagKey, ev: &'a Event<'_>) -> Option<&'a str> {
    let v = match k {
        TagKey::Client => ev.client_addr(),
        TagKey::Peer => ev.endpoint().or_else(|| ev.field("addr")),
    };
    // Copies with addresses masked (`client.addr=:42340`) name no connection.
    v.filter(|c| c.contains(':') && !c.starts_with(':'))
}

/// The text rules match for events whose line is not contiguous text.
fn haystack(ev: &Event<'_>) -> String {
    let mut s = String::with_capacity(ev.text.len());
    if let Some(m) = &ev.message {
        s.push_str(m);
    }
    for (k, v) in &ev.fields {
        s.push(' ');
        s.push_str(k);
        s.push('=');
        s.push_str(v);
    }
    if let Some(c) = &ev.continuation {
        s.push('\n');
        s.push_str(c);
    }
    if s.is_empty() {
        s.push_str(&ev.text);
    }
    s
}

/// Orders lines by line within a source, sources as they first appear,
/// without repeats, keeping the first `MAX_EVIDENCE`.
fn in_input_order(evidence: &mut Vec<Evidence>) {
    let mut sources: Vec<String> = Vec::new();
    let mut keyed: Vec<((usize, u64), Evidence)> = Vec::with_capacity(evidence.len());
    for e in evidence.drain(..) {
        let i = sources
            .iter()
            .position(|s| *s == e.source)
            .unwrap_or_else(|| {
                sources.push(e.source.clone());
                sources.len() - 1
            });
        keyed.push(((i, e.line), e));
    }
    keyed.sort_by_key(|(k, _)| *k);
    keyed.dedup_by_key(|(k, _)| *k);
    evidence.extend(keyed.into_iter().take(MAX_EVIDENCE).map(|(_, e)| e));
}

/// Subjects are names: masked (`:42340`) or placeholder (`<dst>`) values
/// name nothing.
fn add_subject(acc: &mut Acc, s: Subject, v: &str) {
    if !v.is_empty() && !v.starts_with(':') && !v.starts_with('<') {
        acc.subjects.entry(s).or_default().add(v, acc.count);
    }
}

/// Adds what a connection's earlier lines named and the event did not.
fn add_context(acc: &mut Acc, ctx: &ConnCtx, missing: Missing) {
    let port = ctx.port.map(|p| p.to_string());
    for (s, v, miss) in [
        (Subject::Dst, ctx.dst.as_deref(), missing.dst),
        (Subject::Peer, ctx.peer.as_deref(), missing.peer),
        (Subject::Port, port.as_deref(), missing.port),
    ] {
        if let Some(v) = v.filter(|_| miss) {
            add_subject(acc, s, v);
        }
    }
}

/// The finding a match belongs to, among its rule's: the rule's
/// `group_by` subject's leading value.
fn group_of(r: &Rule, acc: &Acc) -> String {
    r.group_by
        .and_then(|g| {
            acc.subjects
                .get(&g)
                .and_then(|v| v.ranked().into_iter().next())
        })
        .unwrap_or_default()
}

fn hit(
    source: &str,
    hay: &str,
    ev: Option<&Event<'_>>,
    line: u64,
    caps: Vec<(Subject, String)>,
) -> Acc {
    let mut acc = Acc {
        count: 1,
        first_at: (source.to_string(), line),
        last_at: (source.to_string(), line),
        ..Default::default()
    };
    let text = ev.map_or(hay, |e| &e.text);
    let mut ev_text = text.to_string();
    if let Some(c) = ev.and_then(|e| e.continuation.as_deref()) {
        ev_text.push('\n');
        ev_text.push_str(c);
    }
    acc.evidence.push(Evidence {
        source: source.to_string(),
        line,
        text: ev_text,
    });
    if let Some(ev) = ev {
        acc.first = Seen::of(ev);
        acc.last = acc.first.clone();
    }
    let mut add = |s: Subject, v: &str| add_subject(&mut acc, s, v);
    for (s, v) in &caps {
        add(*s, v);
    }
    if let Some(ev) = ev {
        if let Some(d) = ev.dst() {
            add(Subject::Dst, &d);
        }
        if let Some(p) = ev.endpoint() {
            add(Subject::Peer, p);
        }
        if let Some(c) = ev.client_addr() {
            let ip = host_of(c);
            add(Subject::Client, ip);
        }
        if let Some(p) = ev.port() {
            add(Subject::Port, &p.to_string());
        }
        for id in ev.identities() {
            add(Subject::Identity, id);
        }
        if let Some(s) = ev.field("server.name") {
            add(Subject::Server, s);
        }
        if let Some(p) = ev.wrapper.pod {
            add(Subject::Pod, p);
        }
        if let Some(t) = ev.target_addr() {
            add(Subject::Target, t);
        }
        if let Some(p) = ev.wrapper.pod {
            acc.workload.add(&format!("po/{p}"), 1);
        } else if ev.has_span("gateway") {
            acc.workload.add("deploy/linkerd-gateway", 1);
        }
    }
    if let Some(c) = acc.subjects.get(&Subject::Client) {
        acc.clients.extend(c.0.keys().cloned());
    }
    acc
}

/// What makes findings one: diagnosis id, subject group, severity, benign.
type Verdict<'r> = (&'r str, String, Severity, bool);

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
    role: Role,
    #[serde(skip)]
    sev: Severity,
    #[serde(skip)]
    weight: i32,
    #[serde(skip)]
    explains: Vec<String>,
}

/// Values for `{placeholders}`.
struct Vars<'a> {
    subjects: &'a BTreeMap<Subject, Values>,
    workload: Option<String>,
}

impl Vars<'_> {
    fn first(&self, s: Subject) -> Option<String> {
        self.subjects
            .get(&s)
            .and_then(|v| v.ranked().into_iter().next())
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
    fn render(&self, template: &str) -> String {
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

impl Finding {
    /// A finding told by `rules[0]`; the other rules that reached the same
    /// verdict add their next commands, notes and explained ids.
    fn new(rules: &[&Rule], acc: Acc, era: Era, stats: &Stats) -> Finding {
        let r = rules[0];
        let vars = Vars {
            subjects: &acc.subjects,
            workload: acc.workload.ranked().into_iter().next(),
        };
        let mut next_commands: Vec<Command> = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        let mut explains: Vec<String> = Vec::new();
        for rule in rules {
            for n in rule.next.iter().filter(|n| n.applies_to(era)) {
                let c = Command {
                    command: vars.render(&n.cmd),
                    why: vars.render(&n.why),
                };
                if !next_commands.iter().any(|x| x.command == c.command) {
                    next_commands.push(c);
                }
            }
            if let (false, Some(n)) = (stats.has_debug(), &rule.if_info_only) {
                let n = vars.render(n);
                if !notes.contains(&n) {
                    notes.push(n);
                }
            }
            explains.extend(
                rule.explains
                    .iter()
                    .filter(|e| !explains.contains(e))
                    .cloned()
                    .collect::<Vec<_>>(),
            );
        }
        let subjects = acc
            .subjects
            .iter()
            .map(|(k, v)| (k.as_str(), v.ranked()))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        Finding {
            id: r.id.clone().unwrap_or_default(),
            severity: r.severity.as_str(),
            benign: r.benign,
            confidence: rules.iter().map(|x| x.confidence).fold(0.0, f64::max),
            title: vars.render(&r.title),
            detail: r.detail.clone(),
            explanation: vars.render(r.explain.trim()),
            count: acc.count,
            subjects,
            first_seen: acc.first.display(),
            last_seen: acc.last.display(),
            evidence: acc.evidence,
            next_commands,
            doc: r.doc.clone(),
            notes,
            consequences: Vec::new(),
            rules: rules.iter().map(|x| x.name.clone()).collect(),
            role: r.role,
            sev: r.severity,
            weight: rules.iter().map(|x| x.weight).max().unwrap_or(0),
            explains,
        }
    }

    fn dsts(&self) -> &[String] {
        self.subjects.get("dst").map_or(&[], Vec::as_slice)
    }
}

/// Harmful before benign, then severity, causes before symptoms, weight,
/// confidence, and weight of evidence.
fn rank(f: &mut [Finding]) {
    f.sort_by(|a, b| {
        a.benign
            .cmp(&b.benign)
            .then(b.sev.cmp(&a.sev))
            .then(a.role.cmp(&b.role))
            .then(b.weight.cmp(&a.weight))
            .then(b.confidence.total_cmp(&a.confidence))
            .then(b.count.cmp(&a.count))
            .then(a.id.cmp(&b.id))
    });
}

/// Whether `cause` can account for `symptom`: the same lines show both, or
/// they name the same destination, or the symptom names none. A cause that
/// names no destination never hides a more severe symptom that names one.
fn explained_by(symptom: &Finding, cause: &Finding) -> bool {
    let same_line = symptom.evidence.iter().any(|e| {
        cause
            .evidence
            .iter()
            .any(|c| c.source == e.source && c.line == e.line)
    });
    let (s, c) = (symptom.dsts(), cause.dsts());
    same_line
        || s.is_empty()
        || s.iter().any(|d| c.contains(d))
        || (c.is_empty() && cause.sev >= symptom.sev)
}

/// Folds each finding under the first (best ranked) unfolded finding that
/// explains its id and shares a destination with it (or where either side
/// names none).
fn fold(findings: Vec<Finding>) -> Vec<Finding> {
    let n = findings.len();
    let mut parent: Vec<Option<usize>> = vec![None; n];
    for i in 0..n {
        // A finding that already explains others stays a root.
        if parent.contains(&Some(i)) {
            continue;
        }
        let f = &findings[i];
        parent[i] = (0..n).find(|&j| {
            j != i
                && parent[j].is_none()
                && !findings[j].benign
                && findings[j].explains.contains(&f.id)
                && explained_by(f, &findings[j])
        });
    }
    let mut out: Vec<Option<Finding>> = findings.into_iter().map(Some).collect();
    for i in 0..n {
        if let Some(j) = parent[i] {
            let f = out[i].take().expect("folded once");
            let c = Consequence {
                id: f.id,
                title: f.title,
                count: f.count,
                evidence: f.evidence.into_iter().take(2).collect(),
            };
            if let Some(p) = out[j].as_mut() {
                p.consequences.push(c);
            }
        }
    }
    out.into_iter().flatten().collect()
}
