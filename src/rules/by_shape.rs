//! What a line shape's lines hold of the rules' literals and of the era
//! cues' wording, found in the first of its lines that becomes an event
//! rather than searched for in each: every line of a shape has the same
//! text but for its digits, so the same literals without a digit, and the
//! same era wording (which has none). Where a literal with a digit could
//! be, each line's digits decide, as for [quiet](super::quiet) lines.

use super::correlation::{full_text, literal_pieces, literal_text};
use super::matching::Engine;
use super::quiet::Masked;
use super::stats::era_text;
use crate::parse::era::EraCue;
use crate::parse::template::ById;
use crate::parse::Event;
use std::cell::RefCell;

/// Shapes kept per thread before starting over.
const MAX_SHAPES: usize = 16384;

struct Lits {
    /// The rules with a literal without a digit in the shape's text, and
    /// those without literals: sorted.
    rules: Box<[usize]>,
    /// Where a literal with a digit could be: where in the line its first
    /// digit would be, which literal with a digit, and its rule.
    spots: Box<[(u32, u16, usize)]>,
    era: Box<[EraCue]>,
}

impl Engine {
    /// The rules [`Engine::candidates`] would find in `ev`'s text, into
    /// `out`, and the era cues [`Engine::era_cues`] would find in its
    /// wording, into `era`, told by its shape: false when the shape does
    /// not tell (there is none, another line is joined to the event, or its
    /// literals' digits are not in one piece of the line).
    pub(super) fn by_shape(
        &self,
        ev: &Event<'_>,
        out: &mut Vec<usize>,
        era: &mut Vec<EraCue>,
    ) -> bool {
        thread_local! {
            static LITS: RefCell<ById<(u64, Option<Lits>)>> = RefCell::new(ById::default());
        }
        if !self.shapes || ev.shape == 0 || ev.continuation.is_some() || !self.era_by_shape {
            return false;
        }
        let engine = self.quiet.id;
        LITS.with(|lits| {
            let mut lits = lits.borrow_mut();
            if lits.get(&ev.shape).is_none_or(|(e, _)| *e != engine) {
                if lits.len() >= MAX_SHAPES {
                    lits.clear();
                }
                lits.insert(ev.shape, (engine, self.lits(ev)));
            }
            let Some(l) = &lits[&ev.shape].1 else {
                return false;
            };
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
            true
        })
    }

    /// What the shape of `ev` holds, read from `ev`.
    fn lits(&self, ev: &Event<'_>) -> Option<Lits> {
        let full = full_text(ev);
        let body = literal_text(ev, &full);
        let mut rules: Vec<usize> = self
            .hits(body)
            .filter(|p| !self.pattern_digit[*p])
            .map(|p| self.pattern_rule[p])
            .chain(self.always.iter().copied())
            .collect();
        rules.sort_unstable();
        rules.dedup();
        let masked = Masked::of(&ev.text, |each| literal_pieces(ev, each));
        let mut spots = Vec::new();
        for (p, found, at) in self.quiet.spots(&masked) {
            let pattern = self.quiet.digit_of[p];
            // The edges' bytes are digits where the line's are: as much
            // word bytes.
            if pattern < self.rule_patterns
                && self.on_edges(pattern, &masked.text, found.start(), found.end())
            {
                spots.push((at?, u16::try_from(p).ok()?, self.pattern_rule[pattern]));
            }
        }
        Some(Lits {
            rules: rules.into(),
            spots: spots.into(),
            era: self.era_cues(era_text(ev)).collect(),
        })
    }
}
