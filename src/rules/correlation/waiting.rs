//! Lines whose verdict waits for what came before their block (their
//! connection's tags, or the destination its earlier lines named): what
//! they keep meanwhile, and their verdict once the earlier blocks are
//! merged.

use super::{needs_tags, unwon, State};
use crate::input::wrap::normalize;
use crate::parse::{parse_line, Level};
use crate::rules::conns::{ConnCtx, Missing};
use crate::rules::finding::Evidence;
use crate::rules::group::{add_context, group_of, Acc, Hit, Said, Taken};
use crate::rules::matching::Caps;

/// One rule's match of a line, before the line's verdict.
#[derive(Debug, Clone)]
pub(super) struct Match<P = Acc> {
    pub(super) rule: usize,
    /// The connection whose tags decide it, when its rule asks for tags.
    pub(super) tags_of: Option<String>,
    /// Its tags, when this block knew them at the match.
    pub(super) tags: Option<u32>,
    /// What the match adds: its captures while its line is at hand, the
    /// accumulator made of it once the line waits.
    pub(super) acc: P,
}

/// A line whose verdict waits for what came before its block.
#[derive(Debug, Clone)]
pub(super) struct Pending {
    pub(super) waiting: Waiting,
    /// The connection whose earlier lines may name what the line did not.
    pub(super) ctx_of: Option<String>,
    pub(super) missing: Missing,
    /// What the line adds to the unrecognised warnings if no rule wins it.
    pub(super) unmatched: Unwon,
}

/// What a waiting line adds to the unrecognised warnings if no rule wins
/// it.
#[derive(Debug, Clone)]
pub(super) enum Unwon {
    Nothing,
    /// Its entry, made from the line when it is read again (a line's
    /// entry holds it twice over: as its wording and as its evidence).
    Again,
    Made(Box<(String, Option<Level>, Evidence)>),
}

/// What a waiting line's matches add, kept until its verdict.
#[derive(Debug, Clone)]
pub(super) enum Waiting {
    /// A record of one line: what its finding takes of its event, the line
    /// itself for its evidence (read again only if its evidence is kept),
    /// beside what its block's look-back found (for the parts in `named`
    /// that it did not name).
    Line {
        source: String,
        n: u64,
        raw: Box<[u8]>,
        taken: Box<Taken<'static>>,
        matches: Vec<Match<Caps>>,
        ctx: Option<ConnCtx>,
        named: Missing,
    },
    /// A record of several lines: what each match adds, made now.
    Accs(Vec<Match>),
}

impl State<'_> {
    /// Decides a waiting line with what this state, all of the input
    /// before the line's block, knows (`earlier`), or with nothing.
    pub(super) fn resolve(&mut self, p: Pending, earlier: bool) {
        let ctx = p
            .ctx_of
            .as_deref()
            .filter(|_| earlier)
            .and_then(|c| self.lookback.earlier(c, p.missing));
        let explained = match p.waiting {
            Waiting::Accs(mut matches) => {
                if let Some(ctx) = &ctx {
                    for m in &mut matches {
                        add_context(&mut m.acc, ctx, p.missing);
                    }
                }
                self.decide(matches, earlier, Self::take_acc)
            }
            Waiting::Line {
                source,
                n,
                raw,
                taken,
                matches,
                ctx: found,
                named,
            } => {
                // The parts the block named, then those earlier blocks did.
                let mut c = found.unwrap_or_default();
                if let Some(e) = ctx.filter(|_| p.missing.any()) {
                    c.dst = c.dst.or(e.dst.filter(|_| p.missing.dst));
                    c.peer = c.peer.or(e.peer.filter(|_| p.missing.peer));
                    c.port = c.port.or(e.port.filter(|_| p.missing.port));
                }
                let explained = self.decide(matches, earlier, |st, rule, caps| {
                    let h = Hit {
                        source: &source,
                        said: Said::Kept(&raw),
                        taken: &taken,
                        n,
                        caps: &caps,
                        ctx: Some((&c, named)),
                        subjects: Default::default(),
                    };
                    let group = h.group(&st.engine.rules[rule]);
                    st.group(rule, group).add(&h);
                });
                if !explained && matches!(p.unmatched, Unwon::Again) {
                    let arena = typed_arena::Arena::new();
                    let ev = parse_line(normalize(&raw, &arena));
                    if let Some(ev) = ev {
                        let (t, l, e) = unwon(&source, n, &ev);
                        self.unmatched.add(&t, l, || e);
                    }
                }
                explained
            }
        };
        if let (false, Unwon::Made(u)) = (explained, p.unmatched) {
            let (t, l, e) = *u;
            self.unmatched.add(&t, l, || e);
        }
    }

    /// The line's verdict: of the rules whose tag conditions hold, those of
    /// the highest weight win it (the most specific mechanism); a wrapper
    /// message defers to the error it wraps. Each winner's match goes to
    /// `take`. True when some rule did.
    pub(super) fn decide<P>(
        &mut self,
        matches: Vec<Match<P>>,
        tags_known: bool,
        mut take: impl FnMut(&mut Self, usize, P),
    ) -> bool {
        let engine = self.engine;
        let mut live: Vec<Match<P>> = Vec::with_capacity(matches.len());
        for m in matches {
            let have = m
                .tags
                .or_else(|| {
                    m.tags_of
                        .as_deref()
                        .filter(|_| tags_known)
                        .and_then(|c| self.tags.get(c).copied())
                })
                .unwrap_or(0);
            if !needs_tags(&engine.rules[m.rule]) || self.tag_condition(m.rule, have) {
                live.push(m);
            }
        }
        let Some(best) = live.iter().map(|m| engine.rules[m.rule].weight).max() else {
            return false;
        };
        // A weaker match that a winner explains stays, as that winner's
        // consequence (they share the line, so the verdict folds it).
        let explained: Vec<String> = live
            .iter()
            .map(|m| &engine.rules[m.rule])
            .filter(|r| r.weight == best)
            .flat_map(|r| r.explains.iter().cloned())
            .collect();
        for m in live {
            let r = &engine.rules[m.rule];
            if r.weight != best && !r.id.as_ref().is_some_and(|id| explained.contains(id)) {
                continue;
            }
            if r.known.is_some() {
                self.stats.known += 1;
                continue;
            }
            take(self, m.rule, m.acc);
        }
        true
    }

    /// Adds a waiting line's accumulator to its finding.
    pub(super) fn take_acc(&mut self, rule: usize, acc: Acc) {
        let group = group_of(&self.engine.rules[rule], &acc);
        self.add_acc(rule, group, acc);
    }
}
