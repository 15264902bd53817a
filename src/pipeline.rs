//! bytes → lines → records, in parallel blocks, in input order.
//!
//! Each block gets a fresh accumulator; accumulators are handed to the
//! consumer in input order, and blocks are cut where the input alone says,
//! so results do not depend on the thread count.

use crate::input::wrap::{normalize, normalize_clean};
use crate::input::{self, Cut, Data, Source};
use crate::parse::template::{self, Seen};
use crate::parse::{Record, Tokenizer};
use crate::progress::Progress;
use anyhow::Result;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::Arc;
use typed_arena::Arena;

/// What a pass over the input keeps of each record.
pub trait Accumulator: Send {
    fn record(&mut self, source: &str, rec: &Record<'_>);
    /// A record, told the block it was read from (for an accumulator that
    /// looks back into the lines before it).
    fn record_in(&mut self, source: &str, rec: &Record<'_>, _around: &Around<'_>) {
        self.record(source, rec)
    }
    /// A line of the block was longer than the maximum and is read cut;
    /// told before the block's records.
    fn cut(&mut self, _source: &str, _cut: Cut) {}
    /// The lines told next, up to the block's end, are all from `source`:
    /// told once before them (a lean line is not told its source again).
    fn source(&mut self, _source: &str) {}
    /// Whether to look for lean lines ([`Accumulator::lean`]) at all.
    fn wants_lean(&self) -> bool {
        false
    }
    /// Takes a line in the lean shape instead of its record, when what the
    /// record would add is known from the line's level, target and body
    /// alone: true when taken (the line is then not tokenized).
    /// `fresh` is the event the line was read into when its shape was
    /// new (see [`template::seen_reading`]).
    fn lean(
        &mut self,
        _source: &str,
        _line: u64,
        _seen: &Seen<'_>,
        _fresh: Option<&crate::parse::Event<'_>>,
        _around: &Around<'_>,
    ) -> bool {
        false
    }
    /// Every record of the block has been told; `text` is the block, for an
    /// accumulator that keeps it (to look back into it from later blocks).
    fn end_block(&mut self, _text: &Arc<Text>) {}
}

/// The block a record is read from: what look-back reads of the lines
/// before a record.
#[derive(Clone, Copy)]
pub struct Around<'b> {
    pub data: &'b [u8],
    /// Where each of its lines ends ([`Blocks::ends`](input::Blocks::ends)).
    pub ends: &'b [usize],
    pub first_line: u64,
}

impl Around<'_> {
    /// No block: a record read on its own.
    pub const NONE: Around<'static> = Around {
        data: b"",
        ends: &[],
        first_line: 1,
    };
}

pub struct Options {
    /// Bytes of input in one block; one block per thread is in flight.
    pub block_size: usize,
    pub threads: usize,
    /// Draw a progress line on stderr for long runs (on a terminal).
    pub progress: bool,
    /// Bytes of a line read at most (`--max-line`).
    pub max_line: usize,
    /// Plain files are read in place, mapped, not copied into buffers
    /// (not with `--no-mmap`).
    pub in_place: bool,
}

impl Default for Options {
    /// 768 KiB blocks. Each block costs a few thread wake-ups, and its
    /// connections' lines in the blocks around it are waited for: against
    /// 512 KiB, explain with 2 threads takes 6 % less time on a 256 MiB
    /// gateway log and 8 % less on a log where every line is a different
    /// connection's error (1 MiB: 8 % and 17 %). But explain's per-block
    /// state can be many times its block (lines waiting for an earlier
    /// block's tags keep their matches), and one block per thread is in
    /// flight, two queued: that log of 300 MB peaks at 49 MiB in 512 KiB
    /// blocks, 51 in 768 KiB and 61 in 1 MiB; explain of the 1 GiB JSON
    /// gateway log at 56, 58 and 62 MiB.
    fn default() -> Self {
        Options::blocks_of(768 << 10)
    }
}

impl Options {
    /// Blocks of `bytes`.
    pub fn blocks_of(bytes: usize) -> Options {
        Options {
            block_size: bytes,
            threads: rayon::current_num_threads(),
            progress: true,
            max_line: input::DEFAULT_MAX_LINE,
            in_place: true,
        }
    }
}

/// Tokenizes one block of whole lines into a fresh accumulator; lines in
/// the lean shape that it takes are not tokenized.
pub fn process_block<A: Accumulator>(source: &str, block: &[u8], first_line: u64, acc: A) -> A {
    let mut ends = Vec::new();
    let found = input::ends::push_newlines(block, 0, &mut ends);
    let around = Around {
        data: block,
        ends: &ends,
        first_line,
    };
    process_lines(source, &around, found.esc, acc)
}

/// [`process_block`] of a block whose line ends, and whether it holds an
/// escape byte, are known.
fn process_lines<A: Accumulator>(
    source: &str,
    around: &Around<'_>,
    escapes: bool,
    mut acc: A,
) -> A {
    let arena = Arena::new();
    let mut tok = Tokenizer::new(&arena);
    let block = around.data;
    // Lean lines are looked for only in a block without escape bytes
    // (colour codes), whose UTF-8 lines `normalize` leaves as they are; a
    // line is UTF-8 as its shape's first line was, so only a line of a new
    // shape is checked. Other blocks are checked once here, not line by
    // line.
    let lean = !escapes && acc.wants_lean();
    let clean = if lean || escapes {
        None
    } else {
        simdutf8::basic::from_utf8(block).ok()
    };
    let emit = |acc: &mut A, r: &mut Record<'_>| acc.record_in(source, r, around);
    if !block.is_empty() {
        acc.source(source);
    }
    let (mut pos, mut n) = (0, around.first_line);
    let mut ends = around.ends.iter();
    let mut fresh = None;
    let mut asked = 0;
    while pos < block.len() {
        let end = ends.next().copied().unwrap_or(block.len());
        asked = ask_ahead(block, asked.max(end + 1), end + 1 + LINES_AHEAD);
        let seen = if lean {
            template::seen_reading(&block[pos..end], &mut fresh)
        } else {
            None
        };
        if let Some(l) = seen {
            // A record the tokenizer holds ends before this line.
            tok.flush(&mut |r| emit(&mut acc, r));
            if acc.lean(source, n, &l, fresh.as_ref(), around) {
                (pos, n) = (end + 1, n + 1);
                continue;
            }
        }
        let line = match clean {
            Some(t) => normalize_clean(&t[pos..end], &arena),
            None => normalize(&block[pos..end], &arena),
        };
        tok.push(n, line, &mut |r| emit(&mut acc, r));
        (pos, n) = (end + 1, n + 1);
    }
    tok.flush(&mut |r| emit(&mut acc, r));
    acc
}

/// Bytes after a line asked for as it is read, so that the next lines
/// wait for none of theirs: the block was read from memory a while ago
/// (its line ends found), and its bytes have left the nearest cache since.
/// Explain of the 1 GiB gateway and mixed JSON logs took 0.96-0.97 times
/// the time, summarize and parse 0.98.
const LINES_AHEAD: usize = 1024;

/// Asks for the cache lines of `block` from `from` to `to` (which may
/// pass its end); returns `to`.
fn ask_ahead(block: &[u8], from: usize, to: usize) -> usize {
    for at in (from..to).step_by(64) {
        input::ends::prefetch(block.as_ptr().wrapping_add(at));
    }
    to
}

/// One block of whole lines, with what it needs to be processed alone.
pub struct Text {
    pub source: String,
    pub data: Data,
    /// Where each of its lines ends ([`Blocks::ends`](input::Blocks::ends)).
    pub ends: Vec<usize>,
    pub first_line: u64,
    pub cuts: Vec<Cut>,
    /// It holds an escape byte ([`Blocks::escapes`](input::Blocks::escapes)).
    pub escapes: bool,
}

impl Text {
    /// The block, to read its lines.
    pub fn around(&self) -> Around<'_> {
        Around {
            data: &self.data,
            ends: &self.ends,
            first_line: self.first_line,
        }
    }

    /// A fresh accumulator told of the block's cut lines, then fed its lines.
    fn process<A: Accumulator>(&self, mut acc: A) -> A {
        for c in &self.cuts {
            acc.cut(&self.source, *c);
        }
        process_lines(&self.source, &self.around(), self.escapes, acc)
    }
}

/// The blocks of every source in turn. A source that breaks off (a
/// truncated `.gz`) is reported with what was read of it, and the next one
/// is read.
struct Reader<'s> {
    sources: std::slice::IterMut<'s, Source>,
    current: Option<input::Blocks<'s>>,
    name: String,
    opts: (usize, usize, bool),
    progress: Progress,
    /// The buffer of the block before, when that block was copied out of it.
    spare: Option<Vec<u8>>,
}

impl<'s> Reader<'s> {
    fn new(sources: &'s mut [Source], opts: &Options) -> Reader<'s> {
        let total = sources.iter().map(|s| s.size).sum::<Option<u64>>();
        Reader {
            sources: sources.iter_mut(),
            current: None,
            name: String::new(),
            opts: (opts.block_size, opts.max_line, opts.in_place),
            progress: Progress::new(total, opts.progress),
            spare: None,
        }
    }

    /// The next block, read into `buf` (a spare buffer, or empty).
    fn next(&mut self, mut buf: Vec<u8>) -> Option<Text> {
        if let Some(spare) = self.spare.take().filter(|s| s.capacity() > buf.capacity()) {
            buf = spare;
        }
        loop {
            let blocks = match &mut self.current {
                Some(b) => b,
                None => {
                    let src = self.sources.next()?;
                    self.name = src.name.clone();
                    let (size, max_line, in_place) = self.opts;
                    let blocks = input::Blocks::new(src, size).max_line(max_line);
                    let blocks = if in_place { blocks.in_place() } else { blocks };
                    self.current.insert(blocks)
                }
            };
            match blocks.next(&mut buf) {
                Ok(Some((first_line, mut data))) => {
                    self.progress.advance(data.len() as u64);
                    // A block cut by its line count is a sliver of what it
                    // was read into (16 384 empty lines of 768 KiB read),
                    // and look-back keeps blocks: it is copied out, and its
                    // buffer kept to read the next block into (explain of
                    // 100 MB of empty lines peaked at 37 MiB, now 25).
                    // Blocks cut by their size are never a quarter full.
                    if let Data::Read(buf) = &mut data {
                        if buf.capacity() > 4 * buf.len() {
                            let small = buf.to_vec();
                            self.spare = Some(std::mem::replace(buf, small));
                        }
                    }
                    return Some(Text {
                        source: self.name.clone(),
                        cuts: blocks.cuts().to_vec(),
                        ends: blocks.ends().to_vec(),
                        escapes: blocks.escapes(),
                        data,
                        first_line,
                    });
                }
                Ok(None) => {}
                // What was read of it still counts, as do the others.
                Err(e) => input::report_read_error(&e, blocks.lines_read()),
            }
            self.current = None;
        }
    }
}

/// Runs every source through `make`-d accumulators, one per block, feeding
/// them in input order to `consume` (which merges them: each is small
/// beside its block). Workers process the next blocks while `consume`
/// merges, so the merge is not a pause for every thread.
pub fn run<A, M, C>(sources: &mut [Source], opts: &Options, make: M, mut consume: C) -> Result<()>
where
    A: Accumulator,
    M: Fn() -> A,
    C: FnMut(&str, A) -> Result<()>,
{
    let threads = opts.threads.max(1);
    let mut reader = Reader::new(sources, opts);
    // A block's buffer is read into again once no accumulator keeps it.
    let mut done = |text: Arc<Text>, acc: A| -> Result<Option<Vec<u8>>> {
        consume(&text.source, acc)?;
        Ok(Arc::try_unwrap(text)
            .ok()
            .and_then(|t| t.data.into_buffer()))
    };
    if threads == 1 {
        let mut spare = None;
        while let Some(t) = reader.next(spare.take().unwrap_or_default()) {
            let text = Arc::new(t);
            let mut acc = text.process(make());
            acc.end_block(&text);
            spare = done(text, acc)?;
        }
        return Ok(());
    }
    let (turns, order_rx, spare_tx) = Turns::new(reader, threads);
    // Accumulators are made (and, after `consume`, dropped) on this
    // thread: their buffers then come from and return to one malloc arena
    // instead of piling up in each worker's.
    let (acc_tx, acc_rx) = mpsc::channel::<A>();
    let acc_rx = std::sync::Mutex::new(acc_rx);
    std::thread::scope(|s| -> Result<()> {
        for i in 0..threads {
            let (turns, acc_rx) = (&turns, &acc_rx);
            spawn(s, format!("lpa-block-{i}"), move || loop {
                let Ok(Ok(acc)) = acc_rx.lock().map(|rx| rx.recv()) else {
                    return;
                };
                let Some((text, tx)) = turns.next(1) else {
                    return;
                };
                let text = Arc::new(text);
                let mut acc = text.process(acc);
                acc.end_block(&text);
                if tx.send((text, acc)).is_err() {
                    return;
                }
            })?;
        }
        // Two accumulators per worker: while the oldest block is merged,
        // each worker has the next one to fill.
        let result = (|| {
            for _ in 0..2 * threads {
                let _ = acc_tx.send(make());
            }
            for rx in order_rx {
                let Ok((text, acc)) = rx.recv() else {
                    return Err(anyhow::anyhow!("a worker thread stopped"));
                };
                if let Some(buf) = done(text, acc)? {
                    let _ = spare_tx.send(buf);
                }
                let _ = acc_tx.send(make());
            }
            Ok(())
        })();
        // Workers stop when their channels close; on an error, what is in
        // flight is dropped.
        drop(acc_tx);
        result
    })
}

/// Bytes of rendered output handed to the writer at a time: each hand-off
/// wakes the writer, and at 64 KiB the wake-ups took a tenth of `parse`'s
/// time.
const CHUNK: usize = 512 << 10;
/// Chunks of one block waiting for the writer, at most: room for a
/// block's whole output in the usual case (JSON about three times its
/// input), so the workers on later blocks need not wait for the writer to
/// reach them; a block whose output is larger (short lines) waits.
const CHUNKS_QUEUED: usize = 8;

/// A block's rendered output, sent to the writer in chunks as it grows:
/// output many times larger than its block (`parse` of empty lines) never
/// piles up.
pub struct Chunks {
    buf: Vec<u8>,
    tx: Option<SyncSender<Vec<u8>>>,
    pool: Arc<Pool>,
}

/// Chunk buffers the writer is done with, to render into again: a fresh
/// buffer's pages were faulted in and cleared by the kernel for every
/// chunk, a twentieth of `parse`'s time.
#[derive(Default)]
struct Pool(std::sync::Mutex<Vec<Vec<u8>>>);

impl Pool {
    /// Buffers kept at most: a few MiB.
    const KEPT: usize = 8;

    fn take(&self) -> Vec<u8> {
        let kept = self.0.lock().ok().and_then(|mut p| p.pop());
        kept.unwrap_or_else(|| Vec::with_capacity(CHUNK + (CHUNK >> 2)))
    }

    /// Keeps `buf`, unless enough are kept or a long record grew it.
    fn give(&self, mut buf: Vec<u8>) {
        if buf.capacity() > 2 * CHUNK {
            return;
        }
        buf.clear();
        if let Ok(mut p) = self.0.lock() {
            if p.len() < Self::KEPT {
                p.push(buf);
            }
        }
    }
}

impl Chunks {
    /// Where to render; call `record_done` after each whole record.
    pub fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// A whole record was rendered: a full chunk goes to the writer (and
    /// waits while the writer is behind).
    pub fn record_done(&mut self) {
        if self.buf.len() >= CHUNK {
            self.send();
        }
    }

    fn send(&mut self) {
        let chunk = std::mem::replace(&mut self.buf, self.pool.take());
        // The writer has stopped (a closed pipe): the rest is dropped.
        if self.tx.as_ref().is_some_and(|tx| tx.send(chunk).is_err()) {
            self.tx = None;
        }
    }
}

/// An accumulator that renders output rather than merging results.
pub trait Render: Accumulator {
    fn output(&mut self) -> &mut Chunks;
}

/// Runs every source through `make`-d renderers, one per block, in
/// parallel, and hands their output to `write` in input order, while they
/// render. Memory is bounded by the blocks in flight (a few per thread)
/// and a few chunks each, whatever the output's size.
pub fn stream<A, M, W>(sources: &mut [Source], opts: &Options, make: M, mut write: W) -> Result<()>
where
    A: Render,
    M: Fn(Chunks) -> A + Sync,
    W: FnMut(&[u8]) -> Result<()>,
{
    let threads = opts.threads.max(1);
    let (turns, order_rx, spare_tx) = Turns::new(Reader::new(sources, opts), threads);
    let pool = Arc::new(Pool::default());
    std::thread::scope(|s| -> Result<()> {
        for i in 0..threads {
            let (turns, spare_tx, make, pool) = (&turns, spare_tx.clone(), &make, &pool);
            spawn(s, format!("lpa-render-{i}"), move || {
                let _stop = StopOnPanic(turns);
                while let Some((block, tx)) = turns.next(CHUNKS_QUEUED) {
                    let chunks = Chunks {
                        buf: pool.take(),
                        tx: Some(tx),
                        pool: Arc::clone(pool),
                    };
                    let mut acc = block.process(make(chunks));
                    acc.output().send();
                    drop(acc);
                    if let Some(buf) = block.data.into_buffer() {
                        let _ = spare_tx.send(buf);
                    }
                }
            })?;
        }
        drop(spare_tx);
        // Each block's chunks, in input order. On an error the receivers
        // are dropped, which stops the workers.
        for rx in order_rx {
            for chunk in rx {
                if !chunk.is_empty() {
                    write(&chunk)?;
                }
                pool.give(chunk);
            }
        }
        Ok(())
    })
}

/// The input's blocks, read by the workers in turn, each then processing
/// the block it read: its bytes land in the cache of the core that reads
/// them all again (read on a thread of its own and processed on another
/// core, a block's first pass over its bytes took 2.8 times as long, and
/// explain of a 1 GiB log 10 % more time). As it reads, a worker sends the
/// consumer where its block's result will come, so results are taken in
/// input order; that channel's bound, a block per worker, keeps the blocks
/// in flight to about two per worker.
struct Turns<'s, T> {
    /// The sender is dropped by the worker that finds no block left, which
    /// ends the consumer's loop.
    reading: std::sync::Mutex<(Reader<'s>, Option<SyncSender<Receiver<T>>>)>,
    /// Buffers of blocks done with, to read into again.
    spare: std::sync::Mutex<Receiver<Vec<u8>>>,
}

impl<'s, T> Turns<'s, T> {
    fn new(reader: Reader<'s>, threads: usize) -> (Self, Receiver<Receiver<T>>, Sender<Vec<u8>>) {
        let (order_tx, order_rx) = mpsc::sync_channel(threads);
        let (spare_tx, spare_rx) = mpsc::channel();
        let turns = Turns {
            reading: std::sync::Mutex::new((reader, Some(order_tx))),
            spare: std::sync::Mutex::new(spare_rx),
        };
        (turns, order_rx, spare_tx)
    }

    /// The next block, and where to send its results (`bound` of them
    /// queued at most); `None` once there is no block left or the consumer
    /// has stopped.
    fn next(&self, bound: usize) -> Option<(Text, SyncSender<T>)> {
        let spare = self.spare.lock().ok().and_then(|rx| rx.try_recv().ok());
        let mut guard = match self.reading.lock() {
            Ok(g) => g,
            // A worker panicked while reading: the consumer is let go (its
            // loop ends once the sender is dropped), and the panic is told
            // when the threads are joined, rather than the consumer waiting
            // for ever.
            Err(poisoned) => {
                poisoned.into_inner().1 = None;
                return None;
            }
        };
        let (reader, order) = &mut *guard;
        let Some(text) = reader.next(spare.unwrap_or_default()) else {
            *order = None;
            return None;
        };
        let (tx, rx) = mpsc::sync_channel(bound);
        order.as_ref()?.send(rx).ok()?;
        Some((text, tx))
    }
}

/// Lets the consumer go when a worker panics while processing its block:
/// no worker would read the next block in order, and the consumer would
/// wait for it for ever. The panic is told when the threads are joined.
struct StopOnPanic<'t, 's, T>(&'t Turns<'s, T>);

impl<T> Drop for StopOnPanic<'_, '_, T> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut guard = self.0.reading.lock().unwrap_or_else(|p| p.into_inner());
            guard.1 = None;
        }
    }
}

fn spawn<'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    name: String,
    f: impl FnOnce() + Send + 'scope,
) -> Result<()> {
    std::thread::Builder::new()
        .name(name)
        .spawn_scoped(s, f)
        .map(drop)
        .map_err(|e| anyhow::anyhow!("cannot start a worker thread: {e}"))
}
