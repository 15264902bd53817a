//! Quiet lines: lines below WARN that hold none of the rules' literals, no
//! era wording and nothing that bounds the era or names an alias. Their
//! events would match no rule and add no warning, alias or era cue beyond
//! their format's, so explain counts them without tokenizing them.
//!
//! What makes a line quiet is decided once per line shape
//! ([`template`](crate::parse::template)), from the event of the first line
//! of the shape, where it reads no digit; per line where it does: the few
//! literals whose wording is mostly digits (`431`) are looked for in each
//! line of a shape whose masked text could hold them.

use super::correlation::{full_text, literal_text};
use super::lookback::KeyShape;
use super::matching::Engine;
use super::stats::era_text;
use crate::parse::era::wording_bounds;
use crate::parse::template::{self, ById, Seen};
use crate::parse::{Event, Level};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Shapes' facts kept per thread before starting over.
const MAX_FACTS: usize = 16384;
/// A digit-free part of a literal shorter than this is too common a
/// wording to stand for it: the literal is looked for, digits and all.
const MIN_RUN: usize = 4;

/// The searches that tell quiet lines, made with an engine.
pub struct Quiet {
    /// Tells which engine a shape's facts were found with.
    id: u64,
    /// For each literal, its longest digit-free part (in any case): a text
    /// without any holds none of the literals with such a part.
    words: AhoCorasick,
    /// The literals with no long digit-free part, with their digits
    /// masked: searched once per shape.
    digits: Option<AhoCorasick>,
    /// The same literals as they are, searched in the lines of a shape
    /// that could hold them; none when one holds what joins a JSON event's
    /// message and fields (then such lines are never quiet).
    in_line: Option<AhoCorasick>,
}

fn longest_run(s: &str) -> &str {
    s.split(|c: char| c.is_ascii_digit())
        .max_by_key(|r| r.len())
        .unwrap_or("")
}

fn masked(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_digit() { '0' } else { c })
        .collect()
}

impl Quiet {
    /// For `literals`: the rules' and the era cues' wording.
    pub fn new<'a>(literals: impl Iterator<Item = &'a str>) -> Quiet {
        static IDS: AtomicU64 = AtomicU64::new(1);
        let (mut words, mut digits) = (Vec::new(), Vec::new());
        for l in literals {
            let run = longest_run(l);
            if run.len() >= MIN_RUN || run.len() == l.len() {
                words.push(run);
            } else {
                digits.push(l);
            }
        }
        // Searched once per shape, not per line: an automaton quick to
        // build rather than one quick to run.
        let build = |pats: Vec<String>, kind| {
            AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .kind(kind)
                .build(pats)
                .expect("literals compile")
        };
        let nfa = Some(AhoCorasickKind::ContiguousNFA);
        let joins = |d: &&str| d.contains([' ', '=', '\n']);
        Quiet {
            id: IDS.fetch_add(1, Ordering::Relaxed),
            words: build(words.into_iter().map(str::to_string).collect(), nfa),
            digits: (!digits.is_empty())
                .then(|| build(digits.iter().map(|d| masked(d)).collect(), nfa)),
            // Few literals, searched in many lines: the fastest automaton.
            in_line: (!digits.iter().any(joins))
                .then(|| build(digits.iter().map(|d| d.to_string()).collect(), None)),
        }
    }
}

/// What a line shape's lines are, to explain.
#[derive(Debug, Clone, Copy)]
struct Facts {
    engine: u64,
    /// Below WARN, no literal with a long digit-free part, no era wording,
    /// no span or wording that bounds the era, no alias.
    quiet: bool,
    /// A literal that is mostly digits may be there: each line's own
    /// digits decide.
    digits: bool,
    key: KeyShape,
}

impl Engine {
    /// Is this line quiet? `key` is set to where it names its client.
    pub(super) fn quiet(&self, seen: &Seen<'_>, key: &mut KeyShape) -> bool {
        let f = self.facts(seen);
        *key = f.key;
        if !f.quiet || !f.digits {
            return f.quiet;
        }
        // The line's body holds the text its event's literals are looked
        // for in (for JSON, message and fields, joined by what no literal
        // searched here holds).
        self.quiet
            .in_line
            .as_ref()
            .is_some_and(|d| !d.is_match(seen.body))
    }

    fn facts(&self, seen: &Seen<'_>) -> Facts {
        thread_local! {
            static FACTS: RefCell<ById<Facts>> = RefCell::new(ById::default());
        }
        let known = FACTS.with(|f| f.borrow().get(&seen.id).copied());
        if let Some(f) = known.filter(|f| f.engine == self.quiet.id) {
            return f;
        }
        let mut ev = Event::default();
        let f = if template::read(seen.line, &mut ev) {
            self.find(&ev, seen.line)
        } else {
            Facts {
                engine: self.quiet.id,
                quiet: false,
                digits: false,
                key: KeyShape::Unknown,
            }
        };
        FACTS.with(|facts| {
            let mut facts = facts.borrow_mut();
            if facts.len() >= MAX_FACTS {
                facts.clear();
            }
            facts.insert(seen.id, f);
        });
        f
    }

    /// A shape's facts, from the event of one of its lines: none of it
    /// reads a digit, but for what `digits` leaves to each line.
    fn find(&self, ev: &Event<'_>, line: &str) -> Facts {
        let full = full_text(ev);
        let body = literal_text(ev, &full);
        let q = &self.quiet;
        Facts {
            engine: q.id,
            quiet: ev.level.is_none_or(|l| l < Level::Warn)
                && !q.words.is_match(body)
                && self.era_cues(era_text(ev)).next().is_none()
                && !wording_bounds(ev)
                && !ev.has_span("service"),
            digits: q
                .digits
                .as_ref()
                .is_some_and(|masked_digits| masked_digits.is_match(&masked(body))),
            key: KeyShape::of(ev, line),
        }
    }
}
