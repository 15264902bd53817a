//! bytes → lines → records, in parallel chunks, in input order.
//!
//! Each chunk gets a fresh accumulator; accumulators are handed to the
//! consumer in input order, so results do not depend on the thread count.

use crate::input::{self, wrap::normalize, Source};
use crate::parse::{Record, Tokenizer};
use crate::progress::Progress;
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
    /// Draw a progress line on stderr for long runs (on a terminal).
    pub progress: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options::per_thread(4 << 20)
    }
}

impl Options {
    /// Blocks of `bytes` per worker thread. Commands whose per-chunk result
    /// is larger than the chunk itself (`parse` renders JSON) take smaller
    /// blocks, so memory stays flat.
    pub fn per_thread(bytes: usize) -> Options {
        let threads = rayon::current_num_threads();
        Options {
            block_size: bytes * threads,
            threads,
            progress: true,
        }
    }

    /// Bytes of input in one chunk, about.
    pub fn chunk_size(&self) -> usize {
        self.block_size / self.threads.max(1)
    }
}

/// Tokenizes one chunk of whole lines into a fresh accumulator.
pub fn process_chunk<A: Accumulator>(source: &str, chunk: &[u8], first_line: u64, mut acc: A) -> A {
    let arena = Arena::new();
    let mut tok = Tokenizer::default();
    let mut emit = |r: &mut Record<'_>| acc.record(source, r);
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
    M: Fn() -> A,
    C: FnMut(&str, A) -> Result<()>,
{
    let total = sources.iter().map(|s| s.size).sum::<Option<u64>>();
    let mut progress = Progress::new(total, opts.progress);
    for src in sources.iter_mut() {
        let name = src.name.clone();
        input::for_each_block(src, opts.block_size, |block, first| {
            progress.advance(block.len() as u64);
            let chunks = input::split_chunks(block, first, opts.threads);
            // Accumulators are made (and, after `consume`, dropped) on this
            // thread: their buffers then come from and return to one malloc
            // arena instead of piling up in each worker's.
            let fresh: Vec<A> = chunks.iter().map(|_| make()).collect();
            let accs: Vec<A> = if chunks.len() == 1 {
                let (c, l) = chunks[0];
                fresh
                    .into_iter()
                    .map(|a| process_chunk(&name, c, l, a))
                    .collect()
            } else {
                chunks
                    .into_par_iter()
                    .zip(fresh)
                    .map(|((c, l), a)| process_chunk(&name, c, l, a))
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
