//! Arbitrary bytes through the tokenizer (`process_block`) and the built-in
//! rule engine. Checks that every input line is accounted for exactly once:
//! the records' `line()..line()+lines()` ranges tile `1..=count_lines`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lpa::input::count_lines;
use lpa::parse::Record;
use lpa::pipeline::{process_block, Accumulator};
use lpa::rules::engine::{Engine, State};
use std::sync::OnceLock;

static ENGINE: OnceLock<Engine> = OnceLock::new();

fn engine() -> &'static Engine {
    ENGINE.get_or_init(|| Engine::new(lpa::rules::load(&[]).unwrap()))
}

struct Acc<'e> {
    /// (first line, lines) of each record, in emission order.
    ranges: Vec<(u64, u32)>,
    state: State<'e>,
}

impl Accumulator for Acc<'_> {
    fn record(&mut self, source: &str, rec: &Record<'_>) {
        self.ranges.push((rec.line(), rec.lines()));
        self.state.record(source, rec);
    }
}

fuzz_target!(|data: &[u8]| {
    let acc = Acc {
        ranges: Vec::new(),
        state: engine().state(),
    };
    let acc = process_block("fuzz", data, 1, acc);
    let n = count_lines(data);
    let mut next = 1u64;
    for &(line, lines) in &acc.ranges {
        assert_eq!(
            line, next,
            "record starts at line {line}, expected {next} (gap or overlap); records {:?}",
            acc.ranges
        );
        assert!(lines >= 1, "record at line {line} covers no line");
        next = line + u64::from(lines);
    }
    assert_eq!(
        next,
        n + 1,
        "records cover lines 1..{next}, input has {n} lines; records {:?}",
        acc.ranges
    );
    let _report = acc.state.finish(None);
});
