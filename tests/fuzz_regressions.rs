//! Inputs found by the fuzz targets in fuzz/ (cargo-fuzz), minimised with
//! `cargo fuzz tmin`, fed through the same code path as the target that
//! found them. Each must run without a panic and keep the target's checks.

use lpa::input::count_lines;
use lpa::parse::Record;
use lpa::pipeline::{process_block, Accumulator};
use lpa::rules::engine::{Engine, State};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| Engine::new(lpa::rules::load(&[]).unwrap()))
}

struct Acc<'e> {
    ranges: Vec<(u64, u32)>,
    state: State<'e>,
}

impl Accumulator for Acc<'_> {
    fn record(&mut self, source: &str, rec: &Record<'_>) {
        self.ranges.push((rec.line(), rec.lines()));
        self.state.record(source, rec);
    }
}

/// What fuzz/fuzz_targets/tokenizer.rs does with one input.
fn tokenizer(data: &[u8]) {
    let acc = Acc {
        ranges: Vec::new(),
        state: engine().state(),
    };
    let acc = process_block("fuzz", data, 1, acc);
    let mut next = 1u64;
    for &(line, lines) in &acc.ranges {
        assert_eq!(line, next, "gap or overlap; records {:?}", acc.ranges);
        assert!(lines >= 1);
        next = line + u64::from(lines);
    }
    assert_eq!(next, count_lines(data) + 1, "records {:?}", acc.ranges);
    let _ = acc.state.finish(None);
}

fn no_panic(data: &[u8]) {
    let r = catch_unwind(AssertUnwindSafe(|| tokenizer(data)));
    assert!(
        r.is_ok(),
        "tokenizer panicked on {:?}",
        String::from_utf8_lossy(data)
    );
}

/// `close_of` (src/parse/plain.rs) skipped two bytes past a `\` that ended
/// the line inside a quoted string, then sliced `b[i..]` with `i > len`:
/// "range start index 6 out of range for slice of length 5". Reached from
/// `plain::lenient` (any line with `::`) through `tracing_tail`/`head_end`.
#[test]
fn quoted_backslash_at_end_of_line_in_brackets() {
    no_panic(b"(\"::\\");
}

/// The same bug as the fuzzer first found it, through `proxy_plain`.
#[test]
fn quoted_backslash_at_end_of_proxy_line() {
    no_panic(b"[    30.004067s] DEBUG ThreadId( level=error msg=\"k8s.io/client-go: Failed to watch *v1.Service: f\\");
}

/// The same bug when the `\` is not the last byte of the line: `unwrap`
/// strips a closing inline-code backtick first (found as a 577-byte input
/// whose 4th line ended in ``\` ``; `tmin` reduced it to `::("\`).
#[test]
fn quoted_backslash_before_inline_code_backtick() {
    no_panic(b"::(\"\\");
    no_panic(b"(\"::\\`");
    no_panic(b"[ 86401.417730s] DEBUG ThreadId(01) inbound:accept{client.adl. typ\"20e: SRV c3.0.113.26:6443/verslass: ion?timeo199\\`");
}

/// Variants around the same scanner: span braces, a later line, CRLF.
#[test]
fn quoted_backslash_variants() {
    no_panic(b"[ 1.000000s]  INFO ThreadId(01) outbound{addr=\"x\\");
    no_panic(b"[ 1.000000s]  INFO ThreadId(01) a::b: ok\n(\"::\\\r\n");
}

/// `rfc3339_len` (src/input/wrap.rs) accepts `±..:..` as a zone offset
/// without checking its four digits, so the length it returns can end inside
/// a multi-byte character; `outer_timestamp` then slices `s[n..]`: "start
/// byte index 25 is not a char boundary; it is inside '�' (bytes 24..27)".
/// Reached from `parse_line` → `unwrap` on every line. Minimised input (the
/// 0x97 byte is invalid UTF-8 and becomes U+FFFD in `normalize`).
#[test]
fn zone_offset_ending_inside_a_character() {
    no_panic(b"3\n2024-03-12T08:02:11-10:\"\x97");
    no_panic(b"2024-03-12T08:02:11-10:\"\x97");
    no_panic(b"2024-03-12T08:02:11-10:\xa2inbou");
}

/// The same with valid UTF-8: a timestamp-like line with a non-ASCII
/// character in the offset's minutes.
#[test]
fn zone_offset_with_non_ascii_minutes() {
    no_panic("2024-03-12T08:02:11+00:0é".as_bytes());
    no_panic("[ 1.0s]  INFO ok\n2024-03-12T08:02:11+05:3— x".as_bytes());
}
