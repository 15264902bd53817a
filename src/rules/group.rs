//! One rule's matches for one subject while the input is read ([`Acc`]):
//! its count, earliest evidence, subjects, clients and connections, merged
//! across blocks in input order. Findings are built from these.

use super::conns::{ConnCtx, Missing};
use super::finding::{Evidence, Seen, Values};
use super::matching::{Caps, Line};
use super::{Rule, Subject, TagKey};
use crate::parse::typed::host_of;
use crate::parse::{Event, Level, Producer};
use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet};

/// Evidence lines kept per finding.
pub const MAX_EVIDENCE: usize = 5;
/// Metric lines kept per finding, beside its log lines.
const MAX_METRIC_EVIDENCE: usize = 4;
/// Notes a finding's matches may add.
const MAX_NOTES: usize = 4;
/// Distinct client IPs counted exactly per finding.
const MAX_CLIENTS: usize = 4096;
/// Inputs (or pods of a prefixed stream) named per finding.
const MAX_PROXIES: usize = 64;
/// One (rule, group) while the input is read.
#[derive(Debug, Clone, Default)]
pub struct Acc {
    pub count: u64,
    /// The earliest lines, in input order.
    pub evidence: Vec<Evidence>,
    pub first: Seen,
    pub last: Seen,
    /// Where `first` and `last` were seen: (source, line).
    pub first_at: (String, u64),
    pub last_at: (String, u64),
    pub subjects: BTreeMap<Subject, Values>,
    pub workload: Values,
    pub clients: BTreeSet<String>,
    /// The proxies (inputs, or pods of a prefixed stream) the lines are from.
    pub proxies: BTreeSet<String>,
    /// Some line is a Linkerd component's event (not fallback text).
    pub attributed: bool,
    /// Some line is a program's output, not a reporter's words.
    pub logged: bool,
    /// Lines that are `linkerd check` warnings (‼), not failures.
    pub check_warnings: u64,
    /// The connections its lines are on (client address and port, the
    /// endpoint connected to), so that findings on one connection can be
    /// linked.
    pub conns: BTreeSet<String>,
    /// Lines of metrics snapshots that show it, beside the log lines.
    pub metric_evidence: Vec<Evidence>,
    /// The weight of the rule whose metric lines these are: a cause's
    /// decisive series are kept before a symptom's counters.
    pub metric_weight: i32,
    /// What the matches add to the finding's notes (what grew between two
    /// snapshots).
    pub notes: Vec<String>,
    /// It rests on counters that did not grow between two snapshots: it
    /// happened, but not now.
    pub old: bool,
}

impl Acc {
    /// Adds other matches: a later block's, a match that waited for an
    /// earlier block (so it may come before some of this one's), or another
    /// rule's with the same verdict. Within a source, lines keep input order
    /// whatever the order of merging; sources keep the order they came in.
    pub fn merge(&mut self, o: Acc) {
        if o.count == 0 {
            return;
        }
        let before = |a: &(String, u64), b: &(String, u64)| a.0 == b.0 && a.1 < b.1;
        self.old = if self.count == 0 {
            o.old
        } else {
            self.old && o.old
        };
        if !o.metric_evidence.is_empty() {
            let mine = std::mem::take(&mut self.metric_evidence);
            let (mut first, then) = if o.metric_weight > self.metric_weight {
                (o.metric_evidence, mine)
            } else {
                (mine, o.metric_evidence)
            };
            first.extend(then);
            first.truncate(MAX_METRIC_EVIDENCE);
            in_input_order(&mut first, MAX_METRIC_EVIDENCE);
            self.metric_evidence = first;
            self.metric_weight = self.metric_weight.max(o.metric_weight);
        }
        for n in o.notes {
            if self.notes.len() < MAX_NOTES && !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
        if self.count == 0 || before(&o.first_at, &self.first_at) {
            self.first = o.first;
            self.first_at = o.first_at;
        }
        if self.count == 0 || !before(&o.last_at, &self.last_at) {
            self.last = o.last;
            self.last_at = o.last_at;
        }
        self.count += o.count;
        self.check_warnings += o.check_warnings;
        self.attributed |= o.attributed;
        self.logged |= o.logged;
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
            in_input_order(&mut self.evidence, MAX_EVIDENCE);
        }
        for (k, v) in o.subjects {
            self.subjects.entry(k).or_default().merge(v);
        }
        self.workload.merge(o.workload);
        for c in o.clients {
            if self.clients.len() >= MAX_CLIENTS {
                break;
            }
            self.clients.insert(c);
        }
        for p in o.proxies {
            if self.proxies.len() < MAX_PROXIES {
                self.proxies.insert(p);
            }
        }
        for c in o.conns {
            if self.conns.len() < MAX_PROXIES {
                self.conns.insert(c);
            }
        }
    }
}

/// Orders lines by line within a source, sources as they first appear,
/// without repeats, keeping the first `max`.
fn in_input_order(evidence: &mut Vec<Evidence>, max: usize) {
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
    evidence.extend(keyed.into_iter().take(max).map(|(_, e)| e));
}

/// Subjects are names: masked (`:42340`) or placeholder (`<dst>`) values
/// name nothing.
fn names(v: &str) -> bool {
    !v.is_empty() && !v.starts_with(':') && !v.starts_with('<')
}

/// The parts of a connection's context a line did not name, as subjects.
fn context_parts(ctx: &ConnCtx, missing: Missing) -> impl Iterator<Item = (Subject, String)> + '_ {
    [
        (Subject::Dst, ctx.dst.clone().filter(|_| missing.dst)),
        (Subject::Peer, ctx.peer.clone().filter(|_| missing.peer)),
        (
            Subject::Port,
            ctx.port.filter(|_| missing.port).map(|p| p.to_string()),
        ),
    ]
    .into_iter()
    .filter_map(|(s, v)| Some((s, v?)))
}

/// Adds what a connection's earlier blocks named and the line did not, to
/// a line's accumulator.
pub(super) fn add_context(acc: &mut Acc, ctx: &ConnCtx, missing: Missing) {
    for (s, v) in context_parts(ctx, missing).filter(|(_, v)| names(v)) {
        acc.subjects.entry(s).or_default().add(&v, acc.count);
    }
}

/// The finding a match belongs to, among its rule's: the rule's
/// `group_by` subject's leading value.
pub(super) fn group_of(r: &Rule, acc: &Acc) -> String {
    r.group_by
        .and_then(|g| acc.subjects.get(&g).and_then(Values::first))
        .unwrap_or_default()
}

pub(super) fn evidence(source: &str, line: u64, text: &str, how: Line<'_, '_>) -> Evidence {
    let kind = match how {
        Line::Event(e) if e.component == crate::parse::Component::Reporter => Some("prose"),
        Line::Event(e) if e.component.is_attributed() => None,
        Line::Event(_) => Some("unattributed"),
        Line::Unparsed => Some("unparsed"),
        Line::Foreign => Some("application"),
    };
    Evidence {
        source: source.to_string(),
        line,
        text: crate::report::evidence::stored(text),
        kind,
        parts: how.event().and_then(crate::report::evidence::parts),
    }
}

/// What a finding takes from a matched line's event beside its captures
/// and its evidence, read while the event is at hand: a line whose verdict
/// waits for an earlier block keeps it, owned, rather than being read
/// again then (the merging thread would read every such line twice over).
#[derive(Debug, Clone, Default)]
pub(super) struct Taken<'t> {
    /// The subjects the event names, as [`names`] admits them.
    subjects: Vec<(Subject, Cow<'t, str>)>,
    seen: Seen,
    check_warning: bool,
    attributed: bool,
    logged: bool,
    pod: Option<Cow<'t, str>>,
    gateway: bool,
    /// The connections it is on ([`tag_key`]), in order.
    conns: [Option<Cow<'t, str>>; 2],
}

impl<'t> Taken<'t> {
    pub(super) fn of(line: Line<'t, '_>) -> Taken<'t> {
        let Some(ev) = line.event() else {
            return Taken {
                logged: true,
                ..Taken::default()
            };
        };
        let mut subjects: Vec<(Subject, Cow<'t, str>)> = Vec::new();
        let mut add = |s: Subject, v: Cow<'t, str>| {
            if names(&v) {
                subjects.push((s, v));
            }
        };
        if let Some(d) = ev.dst() {
            add(Subject::Dst, d);
        }
        if let Some(p) = ev.endpoint() {
            add(Subject::Peer, Cow::Borrowed(p));
        }
        if let Some(c) = ev.client_addr() {
            add(Subject::Client, Cow::Borrowed(host_of(c)));
        }
        if let Some(p) = ev.port() {
            add(Subject::Port, Cow::Owned(p.to_string()));
        }
        for id in ev.identities() {
            add(Subject::Identity, Cow::Borrowed(id));
        }
        if let Some(s) = ev.field("server.name") {
            add(Subject::Server, Cow::Borrowed(s));
        }
        if let Some(p) = ev.wrapper.pod {
            add(Subject::Pod, Cow::Borrowed(p));
        }
        if let Some(t) = ev.target_addr() {
            add(Subject::Target, Cow::Borrowed(t));
        }
        let mut conns = [TagKey::Client, TagKey::Peer].map(|k| tag_key(k, ev));
        conns.sort_unstable();
        Taken {
            subjects,
            seen: Seen::of(ev),
            check_warning: ev.producer == Producer::Check && ev.level == Some(Level::Warn),
            attributed: ev.component.is_attributed(),
            logged: ev.component != crate::parse::Component::Reporter,
            pod: ev.wrapper.pod.map(Cow::Borrowed),
            gateway: ev.wrapper.pod.is_none() && ev.has_span("gateway"),
            conns: conns.map(|c| c.map(Cow::Borrowed)),
        }
    }

    pub(super) fn owned(self) -> Taken<'static> {
        let own = |c: Cow<'t, str>| Cow::Owned(c.into_owned());
        Taken {
            subjects: self
                .subjects
                .into_iter()
                .map(|(s, v)| (s, own(v)))
                .collect(),
            seen: self.seen,
            check_warning: self.check_warning,
            attributed: self.attributed,
            logged: self.logged,
            pod: self.pod.map(own),
            gateway: self.gateway,
            conns: self.conns.map(|c| c.map(own)),
        }
    }
}

/// Where a matched line's evidence comes from.
#[derive(Clone, Copy)]
pub(super) enum Said<'h, 'e> {
    /// The line at hand (`hay` is its text when it is no event).
    Here { hay: &'h str, line: Line<'h, 'e> },
    /// A line kept while it waited, read again if its evidence is kept.
    Kept(&'h [u8]),
}

/// One line a rule matched, as a finding takes it in.
pub(super) struct Hit<'h, 'e> {
    pub source: &'h str,
    pub said: Said<'h, 'e>,
    pub taken: &'h Taken<'h>,
    pub n: u64,
    pub caps: &'h Caps,
    /// What its connection's earlier lines named of the parts it did not.
    pub ctx: Option<(&'h ConnCtx, Missing)>,
    /// [`Hit::subjects`], found once for its group and its accumulator.
    pub subjects: OnceCell<Vec<(Subject, Cow<'h, str>, u64)>>,
}

impl<'h> Hit<'h, '_> {
    /// The subjects the line names, each value with how often, in the
    /// order an accumulator's maps hold them.
    fn subjects(&self) -> &[(Subject, Cow<'h, str>, u64)] {
        self.subjects.get_or_init(|| self.find_subjects())
    }

    fn find_subjects(&self) -> Vec<(Subject, Cow<'h, str>, u64)> {
        let mut out: Vec<(Subject, Cow<'h, str>)> = Vec::new();
        for (s, v) in self.caps.iter().filter(|(_, v)| names(v)) {
            out.push((*s, Cow::Borrowed(v.as_str())));
        }
        for (s, v) in &self.taken.subjects {
            out.push((*s, Cow::Borrowed(v.as_ref())));
        }
        if let Some((ctx, missing)) = self.ctx {
            out.extend(
                context_parts(ctx, missing)
                    .filter(|(_, v)| names(v))
                    .map(|(s, v)| (s, Cow::Owned(v))),
            );
        }
        out.sort();
        let mut counted: Vec<(Subject, Cow<'h, str>, u64)> = Vec::with_capacity(out.len());
        for (s, v) in out {
            match counted.last_mut() {
                Some((ls, lv, n)) if *ls == s && *lv == v => *n += 1,
                _ => counted.push((s, v, 1)),
            }
        }
        counted
    }

    /// The finding of rule `r` the line belongs to: the leading value of
    /// the rule's `group_by` subject among the line's ([`group_of`]).
    pub(super) fn group(&self, r: &Rule) -> String {
        let Some(g) = r.group_by else {
            return String::new();
        };
        self.subjects()
            .iter()
            .filter(|(s, ..)| *s == g)
            .min_by(|a, b| b.2.cmp(&a.2).then_with(|| a.1.cmp(&b.1)))
            .map(|(_, v, _)| v.to_string())
            .unwrap_or_default()
    }

    fn evidence(&self) -> Evidence {
        let (hay, line) = match self.said {
            Said::Here { hay, line } => (hay, line),
            Said::Kept(raw) => {
                let arena = typed_arena::Arena::new();
                let text = crate::input::wrap::normalize(raw, &arena);
                return match crate::parse::parse_line(text) {
                    Some(ev) => self.evidence_of(text, Line::Event(&ev)),
                    None => evidence(self.source, self.n, text, Line::Unparsed),
                };
            }
        };
        self.evidence_of(hay, line)
    }

    fn evidence_of(&self, hay: &str, line: Line<'_, '_>) -> Evidence {
        let ev = line.event();
        let text = ev.map_or(hay, |e| &e.text);
        let mut e = evidence(self.source, self.n, text, line);
        if let Some(c) = ev.and_then(|e| e.continuation.as_deref()) {
            e.text.push('\n');
            e.text.push_str(c);
        }
        e
    }
}

impl Acc {
    /// Takes in one matched line: the same as merging the accumulator
    /// [`hit`] makes of it, without making what is not kept (most lines of
    /// a large finding add a count and no evidence).
    pub(super) fn add(&mut self, h: &Hit<'_, '_>) {
        let t = h.taken;
        // Is the line before `a`, in the same input?
        let before = |a: &(String, u64)| a.0 == h.source && h.n < a.1;
        self.old = false;
        // The input's name is copied only when it changes: most lines
        // are the last so far, of the same input.
        let at = |a: &mut (String, u64)| {
            if a.0 != h.source {
                a.0 = h.source.to_string();
            }
            a.1 = h.n;
        };
        if self.count == 0 || before(&self.first_at) {
            self.first = t.seen.clone();
            at(&mut self.first_at);
        }
        if self.count == 0 || !before(&self.last_at) {
            self.last = t.seen.clone();
            at(&mut self.last_at);
        }
        self.count += 1;
        self.check_warnings += u64::from(t.check_warning);
        self.attributed |= t.attributed;
        self.logged |= t.logged;
        let appends = match self.evidence.last() {
            Some(l) if l.source == h.source => l.line < h.n,
            _ => !self.evidence.iter().any(|e| e.source == h.source),
        };
        if !appends {
            self.evidence.push(h.evidence());
            in_input_order(&mut self.evidence, MAX_EVIDENCE);
        } else if self.evidence.len() < MAX_EVIDENCE {
            self.evidence.push(h.evidence());
        }
        let subjects = h.subjects();
        for (s, v, n) in subjects {
            self.subjects.entry(*s).or_default().add(v, *n);
        }
        if let Some(p) = &t.pod {
            self.workload.add(&format!("po/{p}"), 1);
        } else if t.gateway {
            self.workload.add("deploy/linkerd-gateway", 1);
        }
        for (_, c, _) in subjects.iter().filter(|(s, ..)| *s == Subject::Client) {
            if self.clients.len() >= MAX_CLIENTS {
                break;
            }
            if !self.clients.contains(c.as_ref()) {
                self.clients.insert(c.to_string());
            }
        }
        // The proxy the line is from: its input, and the pod when a prefix
        // names it (a stream of several pods holds several proxies; a
        // pod's containers share one).
        if self.proxies.len() < MAX_PROXIES {
            if let Some(pod) = &t.pod {
                let proxy = format!("{} {pod}", h.source);
                if !self.proxies.contains(&proxy) {
                    self.proxies.insert(proxy);
                }
            } else if !self.proxies.contains(h.source) {
                self.proxies.insert(h.source.to_string());
            }
        }
        // In order, as the cap keeps the first.
        for c in t.conns.iter().flatten() {
            if self.conns.len() < MAX_PROXIES && !self.conns.contains(c.as_ref()) {
                self.conns.insert(c.to_string());
            }
        }
    }
}

/// The accumulator of one matched line (kept while the line waits for an
/// earlier block).
pub(super) fn hit(h: &Hit<'_, '_>) -> Acc {
    let mut a = Acc::default();
    a.add(h);
    a
}

pub(super) fn target_prefix(ev: &Event<'_>) -> String {
    match ev.target.as_deref() {
        Some(t) if !t.is_empty() => format!("{t}: "),
        _ => String::new(),
    }
}

/// The address a rule's tags attach to.
pub(super) fn tag_key<'a>(k: TagKey, ev: &'a Event<'_>) -> Option<&'a str> {
    let v = match k {
        TagKey::Client => ev.client_addr(),
        TagKey::Peer => ev.endpoint().or_else(|| ev.field("addr")),
    };
    // Copies with addresses masked (`client.addr=:42340`) name no connection.
    v.filter(|c| c.contains(':') && !c.starts_with(':'))
}
