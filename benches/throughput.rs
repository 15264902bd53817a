//! Throughput of each stage, in bytes per second, on realistic logs: the
//! corpus scenarios (every era and producer) repeated to 8 MiB, and a
//! gateway debug log in the shape `examples/gen.rs` writes when
//! `target/bench/gateway-8M.log` exists (`benches/compare.sh` creates it).
//!
//! Single-threaded on purpose: the figure is per core. A counting allocator
//! reports heap allocations per line for the tokenizer.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lpa::parse::Record;
use lpa::pipeline::{process_block, Accumulator};
use lpa::report::summary::SummaryAcc;
use lpa::rules::{self, engine::Engine};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Counts records: the tokenizer alone.
#[derive(Default)]
struct Count(u64);

impl Accumulator for Count {
    fn record(&mut self, _: &str, r: &Record<'_>) {
        self.0 += u64::from(r.lines());
    }
}

fn corpus_sample(size: usize) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|d| d.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    files.sort();
    let one: Vec<u8> = files
        .iter()
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect();
    let mut out = Vec::with_capacity(size + one.len());
    while out.len() < size {
        out.extend_from_slice(&one);
    }
    out
}

fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    let mut v = vec![("corpus-mix", corpus_sample(8 << 20))];
    let gen = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench/gateway-8M.log");
    if let Ok(g) = std::fs::read(gen) {
        v.push(("gateway-debug", g));
    }
    v
}

fn bench(c: &mut Criterion) {
    let engine = Engine::new(rules::load(&[]).unwrap());
    for (name, data) in inputs() {
        let lines = lpa::input::count_lines(&data);
        let before = ALLOCS.load(Ordering::Relaxed);
        let n = process_block("bench", &data, 1, Count::default()).0;
        let allocs = ALLOCS.load(Ordering::Relaxed) - before;
        assert_eq!(n, lines);
        eprintln!(
            "{name}: {} bytes, {lines} lines, tokenizer heap allocations per line: {:.3}",
            data.len(),
            allocs as f64 / lines as f64
        );
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Bytes(data.len() as u64));
        g.sample_size(10);
        g.bench_function("tokenize", |b| {
            b.iter(|| process_block("bench", &data, 1, Count::default()).0)
        });
        g.bench_function("explain", |b| {
            b.iter(|| {
                process_block("bench", &data, 1, engine.state())
                    .finish(None)
                    .findings
                    .len()
            })
        });
        g.bench_function("summarize", |b| {
            b.iter(|| {
                process_block("bench", &data, 1, SummaryAcc::new(&engine))
                    .into_summary()
                    .lines
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
