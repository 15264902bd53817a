//! Matching one line against the rules: an Aho-Corasick prefilter over the
//! rules' literals (on word boundaries) picks the few rules a line can
//! match; each is then checked against the line's event, or, for a line no
//! grammar read, against its text alone (the fallback: conditions that need
//! an event are not asked).

use super::command::Given;
use super::fold::Folded;
use super::metrics::Program;
use super::ports;
use super::{KnowledgeBase, Rule, Subject};
use crate::parse::era::EraCue;
use crate::parse::{Component, Era, Event, Producer};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;

/// What a line is, to the rules.
#[derive(Clone, Copy)]
pub enum Line<'a, 'e> {
    Event(&'a Event<'e>),
    /// No grammar read it and nothing tells whose it is.
    Unparsed,
    /// Another program's output (an application container, an nginx log…).
    Foreign,
}

impl<'a, 'e> Line<'a, 'e> {
    pub fn event(self) -> Option<&'a Event<'e>> {
        match self {
            Line::Event(e) => Some(e),
            _ => None,
        }
    }
}

/// Rules compiled for matching; shared by every thread.
pub struct Engine {
    pub rules: Vec<Rule>,
    /// The rules' literals, then the era cues' wording, in any case: one
    /// search tells most lines, which hold neither, from the rest.
    prefilter: Folded,
    /// Patterns of `prefilter` that are rules' literals (the first ones).
    pub(super) rule_patterns: usize,
    pub(super) pattern_rule: Vec<usize>,
    /// Whether a pattern's first and last bytes are word bytes: a match
    /// there must not touch another word byte.
    pattern_edges: Vec<(bool, bool)>,
    /// Whether a pattern has a digit.
    pub(super) pattern_digit: Vec<bool>,
    /// Rules without literals: tried on every event.
    pub(super) always: Vec<usize>,
    /// What each rule checks in a line's text beyond its literals,
    /// compiled when a line first needs it: most rules never match a given
    /// log, and compiling them all was most of the startup.
    checks: Vec<OnceLock<Checks>>,
    pub(super) tag_bits: HashMap<String, u32>,
    era_prefilter: AhoCorasick,
    /// No era cue's wording has a digit: every line of a shape holds the
    /// same ([`super::by_shape`]).
    pub(super) eras_without_digits: bool,
    /// The era cues' wording in a packed (Teddy) searcher: several times
    /// faster than the automaton at saying that a line holds none. `None`
    /// where this CPU has no SIMD for it.
    era_gate: Option<aho_corasick::packed::Searcher>,
    era_cues: Vec<EraCue>,
    /// What the command line fills in next commands when the log cannot.
    pub given: Given,
    /// `--since`/`--until`: lines outside are counted, not read.
    pub window: super::window::Window,
    /// The metric rules, which read snapshots instead of lines.
    pub(super) metrics: Program,
    /// Tells the lines that change nothing but counts.
    pub(super) quiet: super::quiet::Quiet,
    /// Go by line shapes: count quiet lines without tokenizing them, and
    /// find a shape's literals once (on by default; off reads every line's
    /// event and searches its text, which gives the same report, slower).
    pub shapes: bool,
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn case_insensitive(literals: &[String]) -> Vec<AhoCorasick> {
    literals
        .iter()
        .map(|l| {
            AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .build([l])
                .expect("a literal compiles")
        })
        .collect()
}

pub fn producer_family(p: Producer) -> &'static str {
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
        Producer::Check => "check",
        Producer::Prose => "prose",
        Producer::Metrics => "metrics",
    }
}

/// Does a rule's component list admit this component? A line of the
/// control plane that does not say which controller printed it may be any.
fn component_in(list: &[Component], c: Component) -> bool {
    list.contains(&c)
        || (c == Component::ControlPlane && list.iter().any(|x| x.is_go_controller()))
        || (list.contains(&Component::ControlPlane) && c.is_go_controller())
}

/// Regex captures that fill subjects.
pub type Caps = Vec<(Subject, String)>;

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
        let era_prefilter = AhoCorasickBuilder::new()
            .kind(Some(AhoCorasickKind::DFA))
            .build(kb.eras.iter().map(|e| e.text.as_str()))
            .expect("era literals compile");
        let era_gate = aho_corasick::packed::Config::new()
            .builder()
            .extend(kb.eras.iter().map(|e| e.text.as_str()))
            .build();
        let mut patterns = Vec::new();
        let mut pattern_rule = Vec::new();
        let mut always = Vec::new();
        let mut tag_bits = HashMap::new();
        for (i, r) in rules.iter().enumerate() {
            if r.text.is_empty() && r.metrics.is_none() {
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
        let pattern_edges = patterns
            .iter()
            .map(|p: &String| {
                let b = p.as_bytes();
                (
                    b.first().is_some_and(|c| is_word(*c)),
                    b.last().is_some_and(|c| is_word(*c)),
                )
            })
            .collect();
        let pattern_digit = patterns
            .iter()
            .map(|p| p.bytes().any(|b| b.is_ascii_digit()))
            .collect();
        let rule_patterns = patterns.len();
        let everything = || {
            patterns
                .iter()
                .map(String::as_str)
                .chain(kb.eras.iter().map(|e| e.text.as_str()))
        };
        // The two largest automata are built side by side: at startup the
        // other core has nothing else to do. Most lines never reach the
        // prefilter (quiet lines are told by their shape), so it is an
        // automaton quick to build and small rather than the fastest.
        let (prefilter, quiet) = rayon::join(
            || {
                let mut b = AhoCorasickBuilder::new();
                b.kind(Some(AhoCorasickKind::ContiguousNFA))
                    .match_kind(MatchKind::Standard);
                Folded::new(&b, everything())
            },
            || {
                // Quiet lines are a proxy's, never a reporter's words: the
                // prose rules' literals are not looked for in them (a bare
                // `431` is in every number of three digits or more).
                let logged = |p: usize| p >= rule_patterns || !prose_only(&rules[pattern_rule[p]]);
                let literals = everything().enumerate().filter(|(p, _)| logged(*p));
                super::quiet::Quiet::new(literals, rule_patterns)
            },
        );
        Engine {
            metrics: Program::new(&rules),
            checks: rules.iter().map(|_| OnceLock::new()).collect(),
            rules,
            prefilter,
            rule_patterns,
            pattern_rule,
            pattern_edges,
            pattern_digit,
            always,
            tag_bits,
            era_prefilter,
            eras_without_digits: kb
                .eras
                .iter()
                .all(|e| !e.text.bytes().any(|b| b.is_ascii_digit())),
            era_gate,
            era_cues,
            given: Given::default(),
            window: Default::default(),
            quiet,
            shapes: true,
        }
    }

    /// Era cues from release-specific wording in this text.
    pub fn era_cues<'a>(&'a self, text: &'a str) -> impl Iterator<Item = EraCue> + 'a {
        // The plain search skips ahead; the overlapping one cannot.
        let any = match &self.era_gate {
            Some(g) => g.find(text).is_some(),
            None => self.era_prefilter.is_match(text),
        };
        self.era_prefilter
            .find_overlapping_iter(if any { text } else { "" })
            .map(|m| self.era_cues[m.pattern().as_usize()])
    }

    /// Does any rule's literal occur in this text?
    pub fn knows(&self, text: &str) -> bool {
        self.prefilter.is_match(text)
            && self
                .prefilter
                .overlapping(text)
                .iter()
                .any(|m| m.pattern().as_usize() < self.rule_patterns)
    }

    /// Does this text hold neither a rule's literal nor an era cue's
    /// wording (in any case)? Then neither search need be made.
    pub fn silent(&self, text: &str) -> bool {
        !self.prefilter.is_match(text)
    }

    /// Are a shape's literals and era wording told once, for all of its
    /// lines ([`super::by_shape`])?
    pub fn tells_by_shape(&self) -> bool {
        self.shapes && self.eras_without_digits
    }

    /// Which engine this is: what a per-thread cache keeps for one engine
    /// is not another's.
    pub fn id(&self) -> u64 {
        self.quiet.id
    }

    /// Can a pass count a line without its event when it holds none of the
    /// rules' literals? Not when a rule has none (it is tried on every
    /// event), nor when a time window needs each line's time.
    pub fn reads_lean(&self) -> bool {
        self.shapes && self.always.is_empty() && !self.window.is_set()
    }

    pub(super) fn bits(&self, tags: &[String]) -> u32 {
        tags.iter()
            .filter_map(|t| self.tag_bits.get(t))
            .fold(0, |a, b| a | b)
    }

    /// The rules whose literals occur in `body` on word boundaries, sorted,
    /// plus those without literals; `silent` when [`Engine::silent`] said
    /// so of `body`.
    pub fn candidates(&self, body: &str, silent: bool, out: &mut Vec<usize>) {
        out.clear();
        // Most lines match no literal: a plain search settles that fast
        // (the overlapping search cannot skip ahead as it does).
        if silent || !self.prefilter.is_match(body) {
            out.extend_from_slice(&self.always);
            return;
        }
        out.extend(self.hits(body).into_iter().map(|p| self.pattern_rule[p]));
        out.extend_from_slice(&self.always);
        out.sort_unstable();
        out.dedup();
    }

    /// The rules' literals (as patterns) that occur in `text` on word
    /// boundaries.
    pub(super) fn hits(&self, text: &str) -> Vec<usize> {
        let b = text.as_bytes();
        let found = self.prefilter.overlapping(text).into_iter();
        found
            .filter_map(|m| {
                let p = m.pattern().as_usize();
                (p < self.rule_patterns && self.on_edges(p, b, m.start(), m.end())).then_some(p)
            })
            .collect()
    }

    /// Does pattern `p`, found at `start..end` of `text`, touch no word
    /// byte on a side where it ends in one?
    pub(super) fn on_edges(&self, p: usize, text: &[u8], start: usize, end: usize) -> bool {
        let (head, tail) = self.pattern_edges[p];
        let touches_before = head && start > 0 && is_word(text[start - 1]);
        let touches_after = tail && text.get(end).is_some_and(|c| is_word(*c));
        !(touches_before || touches_after)
    }

    /// Checks every condition of rule `ri` but the literals and the tags;
    /// returns the regex captures on a match.
    pub fn matches(&self, ri: usize, hay: &str, line: Line<'_, '_>) -> Option<Caps> {
        let r = &self.rules[ri];
        // A rule for a reporter's words reads prose events only: a line
        // without a head is a program's output, not what the reporter says.
        if prose_only(r) && !matches!(line, Line::Event(_)) {
            return None;
        }
        // The line's structure first: it is cheaper to ask than its text.
        match line {
            Line::Event(ev) => {
                if r.unparsed || !event_conditions(r, ev) {
                    return None;
                }
            }
            // Another program's output: only rules written for it.
            Line::Foreign => {
                if !(r.unparsed || r.components.contains(&Component::Application)) {
                    return None;
                }
            }
            // The fallback: what needs an event is not asked, but a rule
            // kept to some targets still needs one of them in the text (a
            // line that lost its head keeps its target).
            // Timing decides a rule kept to the proxy's first or later
            // seconds: without an uptime it cannot be told.
            Line::Unparsed => {
                if !r.targets.is_empty() && !r.targets.iter().any(|t| hay.contains(t.as_str())) {
                    return None;
                }
                if r.max_uptime.is_some() || r.min_uptime.is_some() {
                    return None;
                }
                // A rule about a port's role needs that port in the text.
                if !r.port_roles.is_empty() && !ports::text_has_role(hay, &r.port_roles) {
                    return None;
                }
            }
        }
        let c = self.checks(ri);
        let by_shape = match line {
            Line::Event(ev) => self.texts_by_shape(ev, ri),
            _ => None,
        };
        if !by_shape.unwrap_or_else(|| c.texts(hay)) {
            return None;
        }
        if c.not_regex.as_ref().is_some_and(|rx| rx.is_match(hay)) {
            return None;
        }
        let mut caps = Vec::new();
        let mut collect = |rx: &Regex, c: regex::Captures| {
            for name in rx.capture_names().flatten() {
                if let (Some(s), Some(m)) = (Subject::parse(name), c.name(name)) {
                    caps.push((s, m.as_str().to_string()));
                }
            }
        };
        if let Some(rx) = &c.regex {
            if c.regex_names {
                collect(rx, rx.captures(hay)?);
            } else if !rx.is_match(hay) {
                return None;
            }
        }
        if let Some(rx) = &c.capture {
            if let Some(c) = rx.captures(hay) {
                collect(rx, c);
            }
        }
        Some(caps)
    }
}

impl Engine {
    /// Rule `ri`'s checks on a line's text, compiled when first asked.
    pub(super) fn checks(&self, ri: usize) -> &Checks {
        self.checks[ri].get_or_init(|| Checks::new(&self.rules[ri]))
    }
}

/// A rule's checks on a line's text, compiled.
pub(super) struct Checks {
    regex: Option<Regex>,
    /// Whether `regex` names a subject: else asking whether it matches is
    /// enough, and much cheaper than its captures.
    regex_names: bool,
    not_regex: Option<Regex>,
    capture: Option<Regex>,
    /// `all_text` and `not_text`, each a case-insensitive searcher (a
    /// single-literal automaton finds its rare bytes with memchr instead of
    /// comparing at every offset).
    all_text: Vec<AhoCorasick>,
    not_text: Vec<AhoCorasick>,
    /// No literal of `all_text` and `not_text` has a digit: they answer
    /// the same for every line of a shape ([`super::by_shape`]).
    pub(super) texts_without_digits: bool,
    /// `regex` (when it names no subject) and `not_regex` cannot tell one
    /// digit from another ([`tells_digits`]): they too answer the same for
    /// every line of a shape.
    regex_without_digits: bool,
    not_regex_without_digits: bool,
}

impl Checks {
    fn new(r: &Rule) -> Checks {
        let compile = |x: &Option<String>| {
            x.as_ref()
                .map(|x| Regex::new(x).expect("validated when loaded"))
        };
        let regex = compile(&r.regex);
        let regex_names = regex.as_ref().is_some_and(|rx| {
            rx.capture_names()
                .flatten()
                .any(|n| Subject::parse(n).is_some())
        });
        let without_digits = |x: &Option<String>| x.as_deref().is_none_or(|x| !tells_digits(x));
        Checks {
            regex_names,
            regex_without_digits: !regex_names && without_digits(&r.regex),
            not_regex_without_digits: without_digits(&r.not_regex),
            regex,
            not_regex: compile(&r.not_regex),
            capture: compile(&r.capture),
            all_text: case_insensitive(&r.all_text),
            not_text: case_insensitive(&r.not_text),
            texts_without_digits: r
                .all_text
                .iter()
                .chain(&r.not_text)
                .all(|l| !l.bytes().any(|b| b.is_ascii_digit())),
        }
    }

    /// Does `hay` hold every literal of `all_text` and none of `not_text`?
    pub(super) fn texts(&self, hay: &str) -> bool {
        self.all_text.iter().all(|n| n.is_match(hay))
            && !self.not_text.iter().any(|n| n.is_match(hay))
    }

    /// Does `hay`, a line's text, fail a check that answers the same for
    /// each line of its shape? Then no line of the shape passes them.
    pub(super) fn fail_shape(&self, hay: &str) -> bool {
        (self.texts_without_digits && !self.texts(hay))
            || (self.regex_without_digits
                && self.regex.as_ref().is_some_and(|rx| !rx.is_match(hay)))
            || (self.not_regex_without_digits
                && self.not_regex.as_ref().is_some_and(|rx| rx.is_match(hay)))
    }

    /// Does every check answer the same for each line of a shape, and
    /// take nothing from its text?
    pub(super) fn same_for_shape(&self) -> bool {
        self.texts_without_digits
            && self.regex_without_digits
            && self.not_regex_without_digits
            && self.capture.is_none()
    }
}

/// Can `pattern` match a text and not the same text with other digits in
/// it? Only where it names a digit, or a class that holds some digits and
/// not others: `\d`, `\S`, `.` and `[^:]` hold them all, `[A-Z]` none.
fn tells_digits(pattern: &str) -> bool {
    use regex_syntax::hir::{Class, Hir, HirKind};
    fn some_not_all(held: impl Iterator<Item = bool>) -> bool {
        let n = held.filter(|h| *h).count();
        n != 0 && n != 10
    }
    fn walk(h: &Hir) -> bool {
        match h.kind() {
            HirKind::Empty | HirKind::Look(_) => false,
            HirKind::Literal(l) => l.0.iter().any(u8::is_ascii_digit),
            HirKind::Class(Class::Unicode(c)) => some_not_all(('0'..='9').map(|d| {
                c.ranges()
                    .iter()
                    .any(|r| (r.start()..=r.end()).contains(&d))
            })),
            HirKind::Class(Class::Bytes(c)) => some_not_all((b'0'..=b'9').map(|d| {
                c.ranges()
                    .iter()
                    .any(|r| (r.start()..=r.end()).contains(&d))
            })),
            HirKind::Repetition(r) => walk(&r.sub),
            HirKind::Capture(c) => walk(&c.sub),
            HirKind::Concat(hs) | HirKind::Alternation(hs) => hs.iter().any(walk),
        }
    }
    regex_syntax::Parser::new()
        .parse(pattern)
        .map_or(true, |h| walk(&h))
}

/// Is `r` a rule for a reporter's words alone?
fn prose_only(r: &Rule) -> bool {
    !r.components.is_empty() && r.components.iter().all(|c| *c == Component::Reporter)
}

/// The conditions of a rule on an event's structure.
fn event_conditions(r: &Rule, ev: &Event<'_>) -> bool {
    conditions_but_fields(r, ev) && field_conditions(r, ev)
}

/// The rule's `fields` and `fields_not`.
fn field_conditions(r: &Rule, ev: &Event<'_>) -> bool {
    r.fields
        .iter()
        .all(|(k, v)| ev.field(k) == Some(v.as_str()))
        && r.fields_not
            .iter()
            .all(|(k, v)| ev.field(k).is_some_and(|x| x != v))
}

/// [`event_conditions`] but for the fields'.
pub(super) fn conditions_but_fields(r: &Rule, ev: &Event<'_>) -> bool {
    if !r.producers.is_empty()
        && !r
            .producers
            .iter()
            .any(|p| p == producer_family(ev.producer))
    {
        return false;
    }
    if r.components.is_empty() {
        // Another program's output and a reporter's words reach only the
        // rules written for them.
        if matches!(ev.component, Component::Application | Component::Reporter) {
            return false;
        }
    } else if !component_in(&r.components, ev.component) {
        return false;
    }
    if r.not_components.contains(&ev.component)
        || (r.not_components.contains(&Component::ControlPlane) && ev.component.is_go_controller())
    {
        return false;
    }
    if let Some(min) = r.min_level {
        if ev.level.is_some_and(|l| l < min) {
            return false;
        }
    }
    if !r.targets.is_empty()
        && !r
            .targets
            .iter()
            .any(|t| ev.target().starts_with(t.as_str()))
    {
        return false;
    }
    if !r.spans.is_empty() && !r.spans.iter().any(|s| ev.has_span(s)) {
        return false;
    }
    if r.not_spans.iter().any(|s| ev.has_span(s)) {
        return false;
    }
    if !r.direction.is_empty() && !r.direction.contains(&ev.direction()) {
        return false;
    }
    if !r.port_roles.is_empty() && !ports::has_role(ev, &r.port_roles) {
        return false;
    }
    if !r.ports.is_empty() && !ev.port().is_some_and(|p| r.ports.contains(&p)) {
        return false;
    }
    if let Some(max) = r.max_uptime {
        if !ev.uptime.is_some_and(|u| u <= max) {
            return false;
        }
    }
    if let Some(min) = r.min_uptime {
        if !ev.uptime.is_some_and(|u| u >= min) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::tells_digits;

    #[test]
    fn a_regex_tells_digits_only_by_a_digit_or_a_class_of_some() {
        for same in [
            r"code: ",
            r"\d+ more",
            r"\S+:\d+",
            r"[^\s:]+",
            r"(?i)tls: bad",
            r".*",
            r"\bA\b",
        ] {
            assert!(!tells_digits(same), "{same}");
        }
        for tells in [
            r"431",
            r"[0-5]",
            r"os error 1\b",
            r"[a-f1]",
            r"(?i)code: 110",
            r"(?i)x509?",
        ] {
            assert!(tells_digits(tells), "{tells}");
        }
    }
}
