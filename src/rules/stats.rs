//! What a pass over the input counts beside its findings: lines, events,
//! levels, producers, inputs, and the cues that date the log.

use super::matching::Engine;
use crate::parse::era::{format_cue, EraCue, EraVote};
use crate::parse::{Event, Foreign, Level};
use std::collections::BTreeMap;

/// Proxy lines per block scanned for era cues, beside every warning and error.
const ERA_SAMPLE: u32 = 2000;

/// What the whole input held, beside the findings.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub lines: u64,
    pub events: u64,
    pub unparsed: u64,
    pub levels: [u64; 5],
    pub proxy_events: u64,
    /// Lines that carry a Linkerd mark (a component's event, or the word).
    pub linkerd_lines: u64,
    /// Lines a `known` rule recognised as harmless or neutral.
    pub known: u64,
    /// Unparsed lines by the shape of the program that wrote them.
    pub foreign: BTreeMap<Foreign, u64>,
    /// The inputs in the order they were read.
    pub sources: Vec<String>,
    /// `linkerd check` results: passed, and warned or failed.
    pub checks: (u64, u64),
    pub era: EraVote,
    /// Lines of metrics exposition text, and the samples among them.
    pub metric_lines: u64,
    pub samples: u64,
    /// Lines longer than `--max-line`, read cut.
    pub cut_lines: u64,
    /// Metrics snapshots not read: of pods past what is kept.
    pub snapshots_dropped: u64,
    /// Records outside `--since`/`--until`.
    pub outside: u64,
}

impl Stats {
    pub(super) fn merge(&mut self, o: &Stats) {
        self.lines += o.lines;
        self.events += o.events;
        self.unparsed += o.unparsed;
        for i in 0..5 {
            self.levels[i] += o.levels[i];
        }
        self.proxy_events += o.proxy_events;
        self.cut_lines += o.cut_lines;
        self.linkerd_lines += o.linkerd_lines;
        self.known += o.known;
        self.checks.0 += o.checks.0;
        self.checks.1 += o.checks.1;
        self.metric_lines += o.metric_lines;
        self.samples += o.samples;
        self.outside += o.outside;
        for (k, n) in &o.foreign {
            *self.foreign.entry(*k).or_insert(0) += n;
        }
        for s in &o.sources {
            self.see_source(s);
        }
        self.era.merge(&o.era);
    }

    pub(super) fn see_source(&mut self, s: &str) {
        if self.sources.last().is_none_or(|l| l != s) && !self.sources.iter().any(|x| x == s) {
            self.sources.push(s.to_string());
        }
    }

    /// DEBUG or TRACE lines were captured (connect errors are at DEBUG).
    pub fn has_debug(&self) -> bool {
        self.levels[0] + self.levels[1] > 0
    }

    pub fn source_index(&self, s: &str) -> usize {
        self.sources
            .iter()
            .position(|x| x == s)
            .unwrap_or(usize::MAX)
    }
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

/// What is known of a line's era wording before it is looked for.
pub enum Wording<'a> {
    Unknown,
    /// [`Engine::silent`] said so of the line's text.
    Silent,
    /// Told by its shape: the era cues in it, and whether it bounds the era
    /// otherwise ([`crate::parse::era::wording_bounds`]).
    Shaped {
        cues: &'a [EraCue],
        bounds: bool,
    },
}

impl EraSampler {
    pub fn observe(&mut self, engine: &Engine, ev: &Event<'_>, w: Wording<'_>, vote: &mut EraVote) {
        let cue = match w {
            // Nothing in its wording: its format's cue.
            Wording::Shaped { bounds: false, .. } => format_cue(
                ev.producer,
                ev.thread.is_some() || ev.truncated_head,
                ev.timestamp.is_some(),
                ev.target(),
            ),
            _ => ev.era_cue(),
        };
        if !cue.is_empty() {
            vote.add(cue);
        }
        let loud = ev.level.is_some_and(|l| l >= Level::Warn);
        if ev.producer.is_proxy() && (self.budget > 0 || loud) {
            self.budget = self.budget.saturating_sub(1);
            match w {
                Wording::Shaped { cues, .. } => cues.iter().for_each(|c| vote.add(*c)),
                Wording::Silent => {}
                Wording::Unknown => engine.era_cues(era_text(ev)).for_each(|c| vote.add(c)),
            }
        }
    }
}

impl EraSampler {
    /// A quiet line read by its shape, whose wording does not bound the
    /// era: its format's `cue`, and while the sample lasts (a proxy's
    /// line), the `cues` its shape's wording holds.
    pub fn lean(&mut self, cue: EraCue, proxy: bool, cues: &[EraCue], vote: &mut EraVote) {
        vote.add(cue);
        if proxy && self.budget > 0 {
            self.budget -= 1;
            cues.iter().for_each(|c| vote.add(*c));
        }
    }
}

/// The text an event's era cues are looked for in.
pub fn era_text<'a>(ev: &'a Event<'_>) -> &'a str {
    if ev.body.is_empty() {
        &ev.text
    } else {
        ev.body
    }
}

pub(super) fn level_index(l: Level) -> usize {
    Level::ALL.iter().position(|x| *x == l).unwrap_or(2)
}
