//! Arbitrary bytes as Prometheus exposition text, line by line through the
//! metrics grammar (must never panic), then as a whole input through the
//! rule engine, read whole and cut in two blocks: when every line is
//! exposition text (no multi-line log record a cut could split), the
//! reports must be the same, as snapshots carry across blocks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lpa::parse::{metrics, Event};
use lpa::pipeline::process_block;
use lpa::rules::engine::{Engine, State};
use std::sync::OnceLock;

static ENGINE: OnceLock<Engine> = OnceLock::new();

fn engine() -> &'static Engine {
    ENGINE.get_or_init(|| Engine::new(lpa::rules::load(&[]).unwrap()))
}

fn report(blocks: &[(&[u8], u64)]) -> String {
    let mut total: State<'_> = engine().state();
    for (b, first) in blocks {
        total.merge(process_block("fuzz", b, *first, engine().state()));
    }
    format!("{:?}", total.finish(None))
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut all_metrics = true;
    for line in text.lines() {
        let mut ev = Event::default();
        all_metrics &= metrics::parse(line, &mut ev).is_some() || line.trim().is_empty();
    }
    let whole = report(&[(data, 1)]);
    if !all_metrics || text.contains('\r') {
        return;
    }
    // One cut after the first line break past the middle.
    if let Some(i) = data[data.len() / 2..].iter().position(|&b| b == b'\n') {
        let at = data.len() / 2 + i + 1;
        let first_lines = lpa::input::count_lines(&data[..at]);
        let cut = report(&[(&data[..at], 1), (&data[at..], first_lines + 1)]);
        assert_eq!(whole, cut, "cut at byte {at}");
    }
});
