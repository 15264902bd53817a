//! Quiet lines: lean lines below WARN that hold none of the rules'
//! literals, era wording or era-bounding spans. Their events would match no
//! rule and add no warning, alias or era cue beyond their format's, so
//! explain counts them without tokenizing them.
//!
//! What makes a line quiet is decided once per line shape
//! ([`template`](crate::parse::template)) where it reads no digit, and per
//! line where it does: the few literals whose wording is mostly digits
//! (`431`) are looked for in each line of a shape whose masked text could
//! hold them.

use super::lookback::KeyShape;
use crate::parse::era::spans_may_cue;
use crate::parse::lean::span_words;
use crate::parse::template::{ById, Seen};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Shapes' facts kept per thread before starting over.
const MAX_FACTS: usize = 4096;
/// A digit-free part of a literal shorter than this is too common a
/// wording to stand for it: the literal is looked for, digits and all.
const MIN_RUN: usize = 4;

/// The searches that tell quiet lines, made with an engine.
pub struct Quiet {
    /// Tells which engine a shape's facts were found with.
    id: u64,
    /// For each literal, its longest digit-free part (in any case): a line
    /// without any holds none of the literals with such a part.
    words: AhoCorasick,
    /// The literals with no long digit-free part, as they are and with
    /// their digits masked.
    digits: Option<(AhoCorasick, AhoCorasick)>,
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
    /// For `literals`, which every line the rules or the era cues may read
    /// holds one of.
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
        let build = |pats: Vec<String>| {
            AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .kind(Some(AhoCorasickKind::ContiguousNFA))
                .build(pats)
                .expect("literals compile")
        };
        Quiet {
            id: IDS.fetch_add(1, Ordering::Relaxed),
            words: build(words.into_iter().map(str::to_string).collect()),
            digits: (!digits.is_empty()).then(|| {
                (
                    build(digits.iter().map(|d| d.to_string()).collect()),
                    build(digits.iter().map(|d| masked(d)).collect()),
                )
            }),
        }
    }

    /// Is this lean line quiet? `key` is set to where it names its client.
    pub fn quiet(&self, seen: &Seen<'_>, key: &mut KeyShape) -> bool {
        let f = self.facts(seen);
        *key = f.key;
        let hay = seen.lean.haystack();
        f.quiet && !(f.digits && self.digits.as_ref().is_some_and(|(d, _)| d.is_match(hay)))
    }

    fn facts(&self, seen: &Seen<'_>) -> Facts {
        thread_local! {
            static FACTS: RefCell<ById<Facts>> = RefCell::new(ById::default());
        }
        if seen.id == 0 {
            return self.find(seen);
        }
        let known = FACTS.with(|f| f.borrow().get(&seen.id).copied());
        match known {
            Some(f) if f.engine == self.id => f,
            _ => {
                let f = self.find(seen);
                FACTS.with(|facts| {
                    let mut facts = facts.borrow_mut();
                    if facts.len() >= MAX_FACTS {
                        facts.clear();
                    }
                    facts.insert(seen.id, f);
                });
                f
            }
        }
    }

    /// A shape's facts, from one of its lines: none of it reads a digit,
    /// but for what `digits` leaves to each line.
    fn find(&self, seen: &Seen<'_>) -> Facts {
        let l = &seen.lean;
        let hay = l.haystack();
        let words = span_words(l.spans);
        Facts {
            engine: self.id,
            quiet: !self.words.is_match(hay) && !spans_may_cue(l.spans, words),
            digits: self
                .digits
                .as_ref()
                .is_some_and(|(_, masked_digits)| masked_digits.is_match(&masked(hay))),
            key: KeyShape::of(l, words),
        }
    }
}

/// What a line shape's lines are, to explain.
#[derive(Debug, Clone, Copy)]
struct Facts {
    engine: u64,
    /// No literal with a long digit-free part, era wording or trigger, and
    /// no span that bounds the era.
    quiet: bool,
    /// A literal that is mostly digits may be there: each line's own
    /// digits decide.
    digits: bool,
    key: KeyShape,
}
