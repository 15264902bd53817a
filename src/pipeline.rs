//! bytes → lines → records, in parallel blocks, in input order.
//!
//! Each block gets a fresh accumulator; accumulators are handed to the
//! consumer in input order, and blocks are cut where the input alone says,
//! so results do not depend on the thread count.

use crate::input::{self, wrap::normalize, Cut, Source};
use crate::parse::{Record, Tokenizer};
use crate::progress::Progress;
use anyhow::Result;
use rayon::prelude::*;
use typed_arena::Arena;

/// What a pass over the input keeps of each record.
pub trait Accumulator: Send {
    fn record(&mut self, source: &str, rec: &Record<'_>);
    /// A line of the block was longer than the maximum and is read cut;
    /// told before the block's records.
    fn cut(&mut self, _source: &str, _cut: Cut) {}
}

pub struct Options {
    /// Bytes of input in one block; one block per thread is in flight.
    pub block_size: usize,
    pub threads: usize,
    /// Draw a progress line on stderr for long runs (on a terminal).
    pub progress: bool,
    /// Bytes of a line read at most (`--max-line`).
    pub max_line: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options::blocks_of(4 << 20)
    }
}

impl Options {
    /// Blocks of `bytes`. Commands whose per-block result is larger than
    /// the block itself (`parse` renders JSON) take smaller blocks, so
    /// memory stays flat.
    pub fn blocks_of(bytes: usize) -> Options {
        Options {
            block_size: bytes,
            threads: rayon::current_num_threads(),
            progress: true,
            max_line: input::DEFAULT_MAX_LINE,
        }
    }
}

/// Tokenizes one block of whole lines into a fresh accumulator.
pub fn process_block<A: Accumulator>(source: &str, block: &[u8], first_line: u64, mut acc: A) -> A {
    let arena = Arena::new();
    let mut tok = Tokenizer::new(&arena);
    let mut emit = |r: &mut Record<'_>| acc.record(source, r);
    for (i, raw) in input::lines(block).enumerate() {
        let line = normalize(raw, &arena);
        tok.push(first_line + i as u64, line, &mut emit);
    }
    tok.flush(&mut emit);
    acc
}

/// Runs every source through `make`-d accumulators, one per block, feeding
/// them in input order to `consume` (which may write output, or merge).
pub fn run<A, M, C>(sources: &mut [Source], opts: &Options, make: M, mut consume: C) -> Result<()>
where
    A: Accumulator,
    M: Fn() -> A,
    C: FnMut(&str, A) -> Result<()>,
{
    let total = sources.iter().map(|s| s.size).sum::<Option<u64>>();
    let mut progress = Progress::new(total, opts.progress);
    let mut spare: Vec<Vec<u8>> = Vec::new();
    for src in sources.iter_mut() {
        let name = src.name.clone();
        let mut blocks = input::Blocks::new(src, opts.block_size).max_line(opts.max_line);
        loop {
            let mut batch: Vec<(Vec<u8>, u64)> = Vec::with_capacity(opts.threads);
            let mut cuts: Vec<Vec<Cut>> = Vec::with_capacity(opts.threads);
            let mut broken = false;
            while batch.len() < opts.threads.max(1) {
                let mut buf = spare.pop().unwrap_or_default();
                match blocks.next_into(&mut buf) {
                    Ok(Some(first)) => {
                        batch.push((buf, first));
                        cuts.push(blocks.cuts().to_vec());
                    }
                    Ok(None) => {
                        spare.push(buf);
                        break;
                    }
                    // What was read of it still counts, as do the others.
                    Err(e) => {
                        input::report_read_error(&e, blocks.lines_read());
                        spare.push(buf);
                        broken = true;
                        break;
                    }
                }
            }
            if batch.is_empty() {
                break;
            }
            progress.advance(batch.iter().map(|(b, _)| b.len() as u64).sum());
            // Accumulators are made (and, after `consume`, dropped) on this
            // thread: their buffers then come from and return to one malloc
            // arena instead of piling up in each worker's.
            let fresh: Vec<A> = cuts
                .iter()
                .map(|cs| {
                    let mut a = make();
                    for c in cs {
                        a.cut(&name, *c);
                    }
                    a
                })
                .collect();
            let accs: Vec<A> = if batch.len() == 1 {
                let (b, first) = &batch[0];
                fresh
                    .into_iter()
                    .map(|a| process_block(&name, b, *first, a))
                    .collect()
            } else {
                batch
                    .par_iter()
                    .zip(fresh)
                    .map(|((b, first), a)| process_block(&name, b, *first, a))
                    .collect()
            };
            for a in accs {
                consume(&name, a)?;
            }
            spare.extend(batch.into_iter().map(|(b, _)| b));
            if broken {
                break;
            }
        }
    }
    Ok(())
}
