//! Correlating matches while the input is read: each line's winning rules
//! (the most specific mechanism wins its line), groups per rule and
//! subject, tags on connections (`sz=0`, then `identity required`), the
//! destination a connection's earlier lines named, and matches that wait
//! for what a block before theirs said.

mod waiting;

use super::conns::{Missing, Recent};
use super::finding::Evidence;
use super::group::{evidence, hit, tag_key, target_prefix, Hit, Said, Taken};
pub use super::group::{Acc, MAX_EVIDENCE};
use super::haystack::{full_text, literal_text};
use super::lookback::Lookback;
use super::matching::Caps;
use super::matching::{Engine, Line};
use super::metrics::Found;
use super::snapshot::Snapshots;
use super::stats::level_index;
pub use super::stats::{era_text, EraSampler, Stats, Wording};
use super::unmatched::{error_worded, Unmatched};
use super::{Rule, TagKey};
use crate::parse::era::EraCue;
use crate::parse::template::Seen;
use crate::parse::{Event, Level, Metric, Producer, Record};
use crate::pipeline::{Accumulator, Around, Text};
use std::collections::BTreeMap;
use std::sync::Arc;
use waiting::{Match, Pending, Unwon, Waiting};

/// Address aliases of service names kept.
const MAX_ALIASES: usize = 4096;
/// Groups (findings) per rule before the rest share one: more findings of
/// one id than a report can show, and few enough that their capped values
/// (endpoints, connections) fill early, so memory stays flat.
const MAX_GROUPS: usize = 64;
/// Lines per block waiting only for an earlier block's connection context;
/// past this, a line keeps what its block knows. (Lines waiting for tags
/// always wait: a wrong tag decision would add or drop a finding.)
const MAX_PENDING: u32 = 4096;

/// Per-block (and, after merging, whole-input) matching state.
#[derive(Clone)]
pub struct State<'e> {
    pub(super) engine: &'e Engine,
    /// Looked up for every matched line: FxHash, not SipHash.
    pub(super) groups: rustc_hash::FxHashMap<(usize, String), Acc>,
    /// Groups per rule: counted as they are made, not at each match.
    group_counts: Vec<u32>,
    tags: Recent<u32>,
    pending: Vec<Pending>,
    waiting_for_context: u32,
    /// The destination and endpoint a connection's earlier lines named,
    /// for matches whose own line does not name them (2.7-era error lines).
    lookback: Lookback,
    pub stats: Stats,
    pub(super) unmatched: Unmatched,
    /// Addresses known to stand for a service name (`proxy{addr=ClusterIP}`
    /// beside `service{…}` on one line): one destination, not two.
    pub(super) aliases: BTreeMap<String, String>,
    /// A block of a larger input defers lines on connections it has not
    /// seen (their tags or context may be in an earlier block) to the
    /// merge; a state that reads the whole input decides at once (so
    /// follow mode keeps nothing pending).
    defer: bool,
    /// Buffers for a line's candidate rules and era cues.
    candidates: Vec<usize>,
    era_found: Vec<EraCue>,
    era_sampler: EraSampler,
    /// Metrics snapshots, reduced to what the metric rules read.
    pub(super) metrics: Snapshots<Found>,
}

impl Engine {
    /// State for a whole input read in order (follow mode, tickets).
    pub fn whole_state(&self) -> State<'_> {
        State {
            defer: false,
            lookback: Lookback::Remember(Recent::default()),
            ..self.state()
        }
    }

    /// State for one block of an input read in parallel blocks.
    pub fn state(&self) -> State<'_> {
        State {
            engine: self,
            groups: Default::default(),
            group_counts: vec![0; self.rules.len()],
            tags: Recent::default(),
            pending: Vec::new(),
            waiting_for_context: 0,
            lookback: Lookback::blocks(),
            stats: Stats::default(),
            unmatched: Unmatched::default(),
            aliases: BTreeMap::new(),
            defer: true,
            candidates: Vec::new(),
            era_found: Vec::new(),
            era_sampler: EraSampler::default(),
            metrics: Snapshots::default(),
        }
    }
}

/// Does a rule report something (a finding, or a known line)?
fn reports(r: &Rule) -> bool {
    r.id.is_some() || r.known.is_some()
}

fn needs_tags(r: &Rule) -> bool {
    !r.requires_tag.is_empty() || !r.forbids_tag.is_empty()
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
        self.lookback.absorb(later.lookback);
        self.stats.merge(&later.stats);
        self.unmatched.merge(later.unmatched);
        for (a, n) in later.aliases {
            if self.aliases.len() < MAX_ALIASES {
                self.aliases.entry(a).or_insert(n);
            }
        }
        self.metrics.merge(later.metrics);
    }

    pub(super) fn add_acc(&mut self, rule: usize, group: String, acc: Acc) {
        self.group(rule, group).merge(acc);
    }

    /// The accumulator of rule `rule`'s finding `group` (past
    /// [`MAX_GROUPS`], the one the rest share).
    fn group(&mut self, rule: usize, group: String) -> &mut Acc {
        let mut key = (rule, group);
        if !self.groups.contains_key(&key) {
            if self.group_counts[rule] as usize >= MAX_GROUPS {
                key.1.clear();
            }
            if !self.groups.contains_key(&key) {
                self.group_counts[rule] += 1;
            }
        }
        self.groups.entry(key).or_default()
    }

    fn tag_condition(&self, rule: usize, have: u32) -> bool {
        let r = &self.engine.rules[rule];
        let req = self.engine.bits(&r.requires_tag);
        let forbid = self.engine.bits(&r.forbids_tag);
        (req == 0 || have & req != 0) && have & forbid == 0
    }

    fn observe(&mut self, source: &str, ev: &Event<'_>, around: &Around<'_>) {
        self.stats.events += 1;
        self.stats.lines += u64::from(ev.lines);
        if let Some(l) = ev.level {
            self.stats.levels[level_index(l)] += 1;
        }
        if ev.producer.is_proxy() {
            self.stats.proxy_events += 1;
        }
        if ev.component.is_linkerd() {
            self.stats.linkerd_lines += 1;
        }
        if ev.producer == Producer::Check {
            if ev.level.is_some_and(|l| l >= Level::Warn) {
                self.stats.checks.1 += 1;
            } else {
                self.stats.checks.0 += 1;
            }
        }
        self.lookback.event(ev, around);
        if self.aliases.len() < MAX_ALIASES && ev.has_span("service") {
            if let (Some(addr), Some(name)) =
                (ev.span("proxy").and_then(|s| s.field("addr")), ev.dst())
            {
                if addr != name && !self.aliases.contains_key(addr) {
                    self.aliases.insert(addr.to_string(), name.into_owned());
                }
            }
        }
        let full = full_text(ev);
        let full: &str = &full;
        let body = literal_text(ev, full);
        let engine = self.engine;
        let mut cands = std::mem::take(&mut self.candidates);
        let mut era = std::mem::take(&mut self.era_found);
        let wording = if let Some(bounds) = engine.by_shape(ev, &mut cands, &mut era) {
            Wording::Shaped { cues: &era, bounds }
        } else {
            // One search tells most lines from those with a rule's literal
            // or an era cue's wording, when both would be looked for in the
            // same text.
            let silent = std::ptr::eq(era_text(ev), body) && engine.silent(body);
            engine.candidates(body, silent, &mut cands);
            if silent {
                Wording::Silent
            } else {
                Wording::Unknown
            }
        };
        self.era_sampler
            .observe(engine, ev, wording, &mut self.stats.era);
        self.era_found = era;
        let loud = ev.level.is_some_and(|l| l >= Level::Warn);
        let unmatched = || unwon(source, ev.line, ev);
        self.match_text(
            source,
            cands,
            full,
            (Line::Event(ev), ev.line, around),
            loud.then_some(unmatched),
        );
    }

    /// A line of exposition text: into its snapshot, for the metric rules.
    fn observe_metric(&mut self, source: &str, ev: &Event<'_>) {
        self.stats.events += 1;
        self.stats.lines += u64::from(ev.lines);
        self.stats.linkerd_lines += 1;
        self.stats.metric_lines += 1;
        match ev.metric {
            Some(Metric::Sample { name, value, .. }) => {
                self.stats.samples += 1;
                let cue = crate::parse::metrics::era_cue(name, ev);
                if !cue.is_empty() {
                    self.stats.era.add(cue);
                }
                let engine = self.engine;
                let found = self.metrics.sample(source, ev.line, name, value, &ev.text);
                engine.metrics.add(&engine.rules, found, ev, name, value);
            }
            Some(Metric::Pod { name, .. }) => self.metrics.header(source, ev.line, name),
            Some(Metric::Eof) => self.metrics.end(),
            _ => {}
        }
    }

    /// Matches the `candidates` (the rules whose literals occur in the
    /// line, [`Engine::candidates`]) against the line (other text
    /// conditions read the `full` text) and decides its verdict, now or
    /// once the blocks before are known. A loud line that
    /// no rule wins goes to the unrecognised warnings (`unmatched` makes
    /// its entry).
    fn match_text<U>(
        &mut self,
        source: &str,
        cands: Vec<usize>,
        hay: &str,
        (line, n, around): (Line<'_, '_>, u64, &Around<'_>),
        unmatched: Option<U>,
    ) where
        U: FnOnce() -> (String, Option<Level>, Evidence),
    {
        let engine = self.engine;
        let ev = line.event();
        let mut matches: Vec<Match<Caps>> = Vec::new();
        for &ri in &cands {
            let r = &engine.rules[ri];
            let Some(caps) = engine.matches(ri, hay, line) else {
                continue;
            };
            let conn = ev.and_then(|e| tag_key(r.tag_key, e));
            if let (Some(tag), Some(c)) = (&r.tag, conn) {
                let bit = engine.tag_bits[tag];
                self.tags.update(c, |t| *t |= bit);
            }
            if !reports(r) {
                continue;
            }
            let tags_of = conn.filter(|_| needs_tags(r));
            matches.push(Match {
                rule: ri,
                tags: tags_of.and_then(|c| self.tags.get(c).copied()),
                tags_of: tags_of.map(str::to_string),
                acc: caps,
            });
        }
        self.candidates = cands;
        if matches.is_empty() {
            if let Some(u) = unmatched {
                let (t, l, e) = u();
                self.unmatched.add(&t, l, || e);
            }
            return;
        }
        let client = ev.and_then(|e| tag_key(TagKey::Client, e));
        let mut missing = ev.map(Missing::of).unwrap_or_default();
        let ctx = client.and_then(|c| self.lookback.before(c, n, missing, around));
        let named = missing;
        if let Some(ctx) = &ctx {
            missing = missing.without(ctx);
        }
        // What the connection's lines in earlier blocks said may decide the
        // line: its tags, or what neither the line nor this block named
        // (its destination, endpoint, port). Decide at merge.
        let tags_wait = self.defer
            && matches.iter().any(|m| {
                m.tags_of
                    .as_deref()
                    .is_some_and(|c| self.tags.get(c).is_none())
            });
        let ctx_of = client.filter(|_| self.defer && missing.any());
        if tags_wait || (ctx_of.is_some() && self.waiting_for_context < MAX_PENDING) {
            self.waiting_for_context += u32::from(!tags_wait);
            // A record of one line is kept as its line, to be read again:
            // lighter than what its matches would add, made now.
            let raw = ev
                .filter(|e| e.lines == 1 && e.continuation.is_none())
                .and_then(|_| self.lookback.raw_line(n, around));
            let again = raw.is_some();
            let taken = Taken::of(line);
            let waiting = match raw {
                Some(raw) => Waiting::Line {
                    source: source.to_string(),
                    n,
                    raw: raw.into(),
                    taken: Box::new(taken.owned()),
                    matches,
                    ctx,
                    named,
                },
                None => Waiting::Accs(
                    matches
                        .into_iter()
                        .map(|m| Match {
                            rule: m.rule,
                            tags_of: m.tags_of,
                            tags: m.tags,
                            acc: hit(&Hit {
                                source,
                                said: Said::Here { hay, line },
                                taken: &taken,
                                n,
                                caps: &m.acc,
                                ctx: ctx.as_ref().map(|c| (c, named)),
                                subjects: Default::default(),
                            }),
                        })
                        .collect(),
                ),
            };
            self.pending.push(Pending {
                waiting,
                ctx_of: ctx_of.map(str::to_string),
                missing,
                unmatched: match unmatched {
                    None => Unwon::Nothing,
                    Some(_) if again => Unwon::Again,
                    Some(u) => Unwon::Made(Box::new(u())),
                },
            });
            return;
        }
        let ctx = ctx.as_ref().map(|c| (c, named));
        // Read once the line has a winner.
        let mut taken = None;
        let won = self.decide(matches, true, |st, rule, caps| {
            let h = Hit {
                source,
                said: Said::Here { hay, line },
                taken: taken.get_or_insert_with(|| Taken::of(line)),
                n,
                caps: &caps,
                ctx,
                subjects: Default::default(),
            };
            let group = h.group(&st.engine.rules[rule]);
            st.group(rule, group).add(&h);
        });
        if !won {
            if let Some(u) = unmatched {
                let (t, l, e) = u();
                self.unmatched.add(&t, l, || e);
            }
        }
    }

    /// Matches still waiting for what came before their block: nothing
    /// came before this state, so their connections carry no tag and no
    /// context.
    pub(super) fn settle(&mut self) {
        for p in std::mem::take(&mut self.pending) {
            self.resolve(p, false);
        }
    }
}

impl Accumulator for State<'_> {
    fn cut(&mut self, _: &str, _: crate::input::Cut) {
        self.stats.cut_lines += 1;
    }

    fn record(&mut self, source: &str, rec: &Record<'_>) {
        self.record_in(source, rec, &Around::NONE)
    }

    fn record_in(&mut self, source: &str, rec: &Record<'_>, around: &Around<'_>) {
        self.stats.see_source(source);
        if !self.engine.window.admits(rec) {
            self.stats.outside += 1;
            return;
        }
        match rec {
            Record::Event(ev) if ev.metric.is_some() => self.observe_metric(source, ev),
            Record::Event(ev) => self.observe(source, ev, around),
            Record::Unparsed {
                line,
                text,
                looks_like,
            } => {
                self.stats.unparsed += 1;
                self.stats.lines += 1;
                if let Some(f) = looks_like {
                    *self.stats.foreign.entry(*f).or_insert(0) += 1;
                }
                if text.is_empty() {
                    return;
                }
                if text.contains("linkerd") {
                    self.stats.linkerd_lines += 1;
                }
                let kind = if looks_like.is_some() {
                    Line::Foreign
                } else {
                    Line::Unparsed
                };
                let loud = looks_like.is_none() && error_worded(text);
                let unmatched = || {
                    (
                        text.to_string(),
                        None,
                        evidence(source, *line, text, Line::Unparsed),
                    )
                };
                let mut cands = std::mem::take(&mut self.candidates);
                self.engine.candidates(text, false, &mut cands);
                self.match_text(
                    source,
                    cands,
                    text,
                    (kind, *line, around),
                    loud.then_some(unmatched),
                );
            }
        }
    }

    /// Lean lines are only counted when blocks look back for context (a
    /// state that remembers every line's needs each event), every rule has
    /// literals to search for, and no time window asks for each line's time.
    fn wants_lean(&self) -> bool {
        self.defer && self.engine.reads_lean()
    }

    /// A quiet line ([`super::quiet`]) changes nothing but counts.
    fn source(&mut self, source: &str) {
        self.stats.see_source(source);
    }

    fn lean(
        &mut self,
        _: &str,
        line: u64,
        seen: &Seen<'_>,
        fresh: Option<&Event<'_>>,
        around: &Around<'_>,
    ) -> bool {
        let tags = &mut self.tags;
        let mut tag = |bit: u32, c: &str| tags.update(c, |t| *t |= bit);
        if seen.cut {
            return false;
        }
        let Some((conn, format)) = self.engine.quiet(seen, fresh, &mut tag) else {
            return false;
        };
        let s = &mut self.stats;
        s.events += 1;
        s.lines += 1;
        if let Some(l) = seen.level {
            s.levels[level_index(l)] += 1;
        }
        s.linkerd_lines += u64::from(format.linkerd);
        let proxy = seen.producer.is_proxy();
        s.proxy_events += u64::from(proxy);
        self.era_sampler.lean(format.cue, proxy, &[], &mut s.era);
        self.lookback.lean(line, seen.line, conn, around);
        true
    }

    fn end_block(&mut self, text: &Arc<Text>) {
        self.lookback.end_block(text);
    }
}

/// What a loud event (of line `n`) that no rule wins adds to the
/// unrecognised warnings: its wording, level and evidence.
fn unwon(source: &str, n: u64, ev: &Event<'_>) -> (String, Option<Level>, Evidence) {
    let text = match (ev.message.as_deref(), ev.error()) {
        (Some(m), Some(e)) if !m.contains(e) => {
            format!("{}{m} error={e}", target_prefix(ev))
        }
        (Some(m), _) => format!("{}{m}", target_prefix(ev)),
        (None, _) => ev.text.to_string(),
    };
    (
        text,
        ev.level,
        evidence(source, n, &ev.text, Line::Event(ev)),
    )
}
