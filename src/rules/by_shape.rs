//! What a line shape's lines hold of the rules' literals and of the era
//! cues' wording, found in the first of its lines that becomes an event
//! rather than searched for in each: every line of a shape has the same
//! text but for its digits, so the same literals without a digit, and the
//! same era wording (which has none). Where a literal with a digit could
//! be, each line's digits decide, as for [quiet](super::quiet) lines.
//! Whether its wording bounds the era is its shape's too; then only its
//! format's cue is read per line.

use super::haystack::{full_text, literal_pieces, literal_text};
use super::matching::Engine;
use super::quiet::Masked;
use super::stats::era_text;
use crate::parse::era::{wording_bounds, EraCue};
use crate::parse::learnt::Generations;
use crate::parse::learnt::Learnt;
use crate::parse::Event;
use std::cell::RefCell;
use std::sync::Arc;

/// Shapes kept per thread before starting over: seven eighths of a power
/// of two, as [`template`](crate::parse::template)'s generations.
const MAX_SHAPES: usize = 14336;

struct Lits {
    /// The rules with a literal without a digit in the shape's text, and
    /// those without literals: sorted.
    rules: Box<[usize]>,
    /// For each of `rules`, whether the shape's text holds all of its
    /// `all_text` and none of its `not_text`, when none of them has a
    /// digit (their searches then answer the same for each of its lines).
    texts: Box<[Option<bool>]>,
    /// Where a literal with a digit could be: where in the line its first
    /// digit would be, which literal with a digit, and its rule.
    spots: Box<[(u32, u16, usize)]>,
    era: Box<[EraCue]>,
    /// Its wording bounds the era ([`wording_bounds`], which reads no digit).
    bounds: bool,
}

/// The engine a shape's literals were found with (its quiet searches'
/// id), and what it found.
type Found = (u64, Option<Lits>);

impl Engine {
    /// Runs `f` on what `ev`'s shape holds: `None` when the shape does not
    /// tell (there is none, another line is joined to the event, or its
    /// literals' digits are not in one piece of the line).
    fn with_lits<T>(&self, ev: &Event<'_>, f: impl FnOnce(&Lits) -> T) -> Option<T> {
        thread_local! {
            static LITS: RefCell<Generations<Arc<Found>>> =
                const { RefCell::new(Generations::new(MAX_SHAPES, usize::MAX)) };
        }
        /// What some thread found, for the others.
        static SHARED: Learnt<Found> = Learnt::new(MAX_SHAPES);
        if !self.shapes || ev.shape == 0 || ev.continuation.is_some() || !self.eras_without_digits {
            return None;
        }
        let engine = self.quiet.id;
        let ours = |l: &Found| l.0 == engine;
        LITS.with(|lits| {
            let mut lits = lits.borrow_mut();
            if lits.find(ev.shape, |l| ours(l), |_| 0).is_none() {
                let l = SHARED.get(ev.shape, ours);
                let l = l.unwrap_or_else(|| SHARED.put(ev.shape, (engine, self.lits(ev)), ours));
                lits.keep(ev.shape, l, 0);
            }
            lits.young(ev.shape)?.1.as_ref().map(f)
        })
    }

    /// The rules [`Engine::candidates`] would find in `ev`'s text, into
    /// `out`, and its shape's era wording, into `era`: `None` when the
    /// shape does not tell.
    pub(super) fn by_shape(
        &self,
        ev: &Event<'_>,
        out: &mut Vec<usize>,
        era: &mut Vec<EraCue>,
    ) -> Option<bool> {
        self.with_lits(ev, |l| {
            out.clear();
            out.extend_from_slice(&l.rules);
            let line = ev.text.as_bytes();
            let found = l.spots.iter().filter(|s| self.quiet.holds(line, s.0, s.1));
            let before = out.len();
            out.extend(found.map(|s| s.2));
            if out.len() > before {
                out.sort_unstable();
                out.dedup();
            }
            era.clear();
            era.extend_from_slice(&l.era);
            l.bounds
        })
    }

    /// Whether `ev`'s text holds the literals of rule `ri`'s `all_text`
    /// and none of its `not_text`, as its shape tells: `None` when it does
    /// not.
    pub(super) fn texts_by_shape(&self, ev: &Event<'_>, ri: usize) -> Option<bool> {
        self.with_lits(ev, |l| {
            let i = l.rules.binary_search(&ri).ok()?;
            l.texts[i]
        })
        .flatten()
    }

    /// The era wording of `ev`'s shape: the cues [`Engine::era_cues`] would
    /// find in it, into `era`, and whether it bounds the era
    /// ([`wording_bounds`]); `None` when the shape does not tell.
    pub fn era_by_shape(&self, ev: &Event<'_>, era: &mut Vec<EraCue>) -> Option<bool> {
        self.with_lits(ev, |l| {
            era.clear();
            era.extend_from_slice(&l.era);
            l.bounds
        })
    }

    /// The rules with a literal without a digit in `body` (on word
    /// boundaries), and those without literals: sorted. The same for each
    /// line of a shape.
    pub(super) fn worded_rules(&self, body: &str) -> Vec<usize> {
        let mut rules: Vec<usize> = self
            .hits(body)
            .into_iter()
            .filter(|p| !self.pattern_digit[*p])
            .map(|p| self.pattern_rule[p])
            .chain(self.always.iter().copied())
            .collect();
        rules.sort_unstable();
        rules.dedup();
        rules
    }

    /// What the shape of `ev` holds, read from `ev`.
    fn lits(&self, ev: &Event<'_>) -> Option<Lits> {
        let full = full_text(ev);
        let body = literal_text(ev, &full);
        let rules = self.worded_rules(body);
        let masked = Masked::of(&ev.text, |each| literal_pieces(ev, each));
        let mut spots = Vec::new();
        for (p, found, at) in self.quiet.spots(&masked, false) {
            let pattern = self.quiet.digit_of[p];
            // The edges' bytes are digits where the line's are: as much
            // word bytes.
            if self.on_edges(pattern, &masked.text, found.start(), found.end()) {
                spots.push((at?, u16::try_from(p).ok()?, self.pattern_rule[pattern]));
            }
        }
        let texts = rules
            .iter()
            .map(|&ri| {
                let c = self.checks(ri);
                c.texts_without_digits.then(|| c.texts(&full))
            })
            .collect();
        Some(Lits {
            texts,
            rules: rules.into(),
            spots: spots.into(),
            era: self.era_cues(era_text(ev)).collect(),
            bounds: wording_bounds(ev),
        })
    }
}
