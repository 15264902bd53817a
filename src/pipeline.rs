//! bytes → lines → records, in parallel chunks, in input order.
//!
//! Each chunk gets a fresh accumulator; accumulators are handed to the
//! consumer in input order, so results do not depend on the thread count.

use crate::input::{self, wrap::normalize, Source};
use crate::parse::{Record, Tokenizer};
use anyhow::Result;
use rayon::prelude::*;
use typed_arena::Arena;

/// What a pass over the input keeps of each record.
pub trait Accumulator: Send {
    fn record(&mut self, source: &str, rec: &Record<'_>);
}

pub struct Options {
    /// Bytes read per block; each block is split across the threads.
    pub block_size: usize,
    pub threads: usize,
}

impl Default for Options {
    fn default() -> Self {
        let threads = rayon::current_num_threads();
        Options {
            block_size: (4 << 20) * threads,
            threads,
        }
    }
}

/// Tokenizes one chunk of whole lines into a fresh accumulator.
pub fn process_chunk<A: Accumulator>(source: &str, chunk: &[u8], first_line: u64, mut acc: A) -> A {
    let arena = Arena::new();
    let mut tok = Tokenizer::default();
    let mut emit = |r: Record<'_>| acc.record(source, &r);
    for (i, raw) in input::lines(chunk).enumerate() {
        let line = normalize(raw, &arena);
        tok.push(first_line + i as u64, line, &mut emit);
    }
    tok.flush(&mut emit);
    acc
}

/// Runs every source through `make`-d accumulators, feeding them in input
/// order to `consume` (which may write output, or merge).
pub fn run<A, M, C>(sources: &mut [Source], opts: &Options, make: M, mut consume: C) -> Result<()>
where
    A: Accumulator,
    M: Fn() -> A + Sync,
    C: FnMut(&str, A) -> Result<()>,
{
    for src in sources.iter_mut() {
        let name = src.name.clone();
        input::for_each_block(src, opts.block_size, |block, first| {
            let chunks = input::split_chunks(block, first, opts.threads);
            let accs: Vec<A> = if chunks.len() == 1 {
                vec![process_chunk(&name, chunks[0].0, chunks[0].1, make())]
            } else {
                chunks
                    .par_iter()
                    .map(|(c, l)| process_chunk(&name, c, *l, make()))
                    .collect()
            };
            for a in accs {
                consume(&name, a)?;
            }
            Ok(())
        })?;
    }
    Ok(())
}
