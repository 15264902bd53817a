//! Properties of the bytes → lines → records pipeline:
//!
//! (a) no input panics the tokenizer (NUL, invalid UTF-8, `\r`, ANSI ESC,
//!     very long lines, mutated real lines);
//! (b) every input line is accounted for exactly once by the records' line
//!     ranges;
//! (c) reading the input in blocks (as the parallel pipeline does) does not
//!     change the records.

use lpa::input::{count_lines, Blocks, Cut, Source};
use lpa::parse::Record;
use lpa::pipeline::{process_block, Accumulator};
use proptest::prelude::*;

/// Input bytes, shown as (lossy) text when a case fails.
#[derive(Clone)]
struct Bytes(Vec<u8>);

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(&self.0))
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// What the tests keep of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rec {
    line: u64,
    lines: u32,
    kind: String,
    message: String,
}

#[derive(Default)]
struct Acc(Vec<Rec>);

impl Accumulator for Acc {
    fn record(&mut self, _source: &str, rec: &Record<'_>) {
        let (kind, message) = match rec {
            Record::Event(e) => (
                e.producer.as_str().to_string(),
                format!(
                    "{}|{:?}|{:?}",
                    e.message(),
                    e.fields,
                    e.continuation.as_deref()
                ),
            ),
            Record::Unparsed { text, .. } => ("unparsed".to_string(), text.to_string()),
        };
        self.0.push(Rec {
            line: rec.line(),
            lines: rec.lines(),
            kind,
            message,
        });
    }
}

fn run(input: &[u8]) -> Vec<Rec> {
    process_block("prop", input, 1, Acc::default()).0
}

/// The input cut by `Blocks` into blocks of about `size` bytes, each block
/// tokenized on its own (as the pipeline does), and the blocks' first lines.
/// The reader ends a line at a lone CR too, so its records tile the lines
/// it counts, not `count_lines` of the raw input.
fn run_blocks(input: &[u8], size: usize) -> (Vec<Rec>, Vec<u64>) {
    let (recs, firsts, _) = run_capped(input, size, lpa::input::DEFAULT_MAX_LINE);
    (recs, firsts)
}

/// The blocks of `input` written to a file and read in place: each with
/// its first line and cut lines.
fn in_place(input: &[u8], size: usize, max_line: usize) -> Vec<(u64, Vec<u8>, Vec<Cut>)> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("lpa-prop-{}-{n}", std::process::id()));
    std::fs::write(&path, input).unwrap();
    let mut sources = lpa::input::open_all(std::slice::from_ref(&path)).unwrap();
    let mut blocks = Blocks::new(&mut sources[0], size)
        .max_line(max_line)
        .in_place();
    let mut out = Vec::new();
    while let Some((first, buf)) = blocks.next(&mut Vec::new()).unwrap() {
        out.push((first, buf.to_vec(), blocks.cuts().to_vec()));
    }
    std::fs::remove_file(&path).unwrap();
    out
}

/// As `run_blocks`, reading at most `max_line` bytes of a line; also the
/// lines cut.
fn run_capped(input: &[u8], size: usize, max_line: usize) -> (Vec<Rec>, Vec<u64>, Vec<Cut>) {
    let mut src = Source::from_reader("prop", std::io::Cursor::new(input.to_vec()));
    let mut blocks = Blocks::new(&mut src, size).max_line(max_line);
    let (mut recs, mut firsts, mut cuts) = (Vec::new(), Vec::new(), Vec::new());
    let mut read = Vec::new();
    while let Some((first, buf)) = blocks.next(&mut Vec::new()).unwrap() {
        let ends: Vec<usize> = (0..buf.len()).filter(|i| buf[*i] == b'\n').collect();
        assert_eq!(
            blocks.ends(),
            ends,
            "the reader's line ends are the block's"
        );
        recs.extend(process_block("prop", &buf, first, Acc::default()).0);
        firsts.push(first);
        cuts.extend_from_slice(blocks.cuts());
        read.push((first, buf.to_vec(), blocks.cuts().to_vec()));
    }
    assert_eq!(in_place(input, size, max_line), read, "read in place");
    assert_tiles(blocks.lines_read(), &recs).expect("the reader's lines are tiled");
    (recs, firsts, cuts)
}

/// The records' ranges tile the input's lines, as `process_block` counts
/// them.
fn assert_covers(input: &[u8], recs: &[Rec]) -> Result<(), TestCaseError> {
    assert_tiles(count_lines(input), recs)
}

/// The records' ranges tile 1..=n.
fn assert_tiles(n: u64, recs: &[Rec]) -> Result<(), TestCaseError> {
    let mut next = 1u64;
    for r in recs {
        prop_assert!(r.lines >= 1, "record with no line: {r:?}");
        prop_assert_eq!(r.line, next, "gap or overlap at {:?}", r);
        next = r.line + u64::from(r.lines);
    }
    prop_assert_eq!(next - 1, n, "records cover {} of {} lines", next - 1, n);
    Ok(())
}

/// Realistic records, one or more physical lines each.
const SAMPLES: &[&str] = &[
    "[     0.001961s]  INFO ThreadId(01) linkerd2_proxy::rt: Using single-threaded proxy runtime",
    "[ 11992.915758s]  WARN ThreadId(01) inbound: linkerd_app_core::serve: Server failed to accept connection error=Transport endpoint is not connected (os error 107)",
    "[ 11992.906251s] DEBUG ThreadId(02) daemon:admin{listen.addr=0.0.0.0:4191}:accept{client.addr=10.244.0.123:50254}: linkerd_app_core::serve: Connection closed",
    "[ 73137.020196s]  INFO ThreadId(01) outbound:proxy{addr=10.0.3.18:80}:rescue{client.addr=10.244.101.75:43486}: linkerd_app_core::errors::respond: HTTP/1.1 request failed error=logical service 10.0.3.18:80: route default.http: backend Service.ns.svc:80: service in fail-fast error.sources=[route default.http: backend Service.ns.svc:80: service in fail-fast, service in fail-fast]",
    "[  2341.879731s] DEBUG ThreadId(01) evict{target=Accept { orig_dst: OrigDstAddr(169.254.169.254:80), protocol: () }}: linkerd_cache: Awaiting idleness",
    "[   159.454774599s]  WARN inbound:accept{peer.addr=10.44.0.0:60534}:source{target.addr=10.44.0.3:9995}: linkerd2_app_core::errors: Failed to proxy request: request timed out",
    "[    10.455917s]  INFO ThreadId(01) inbound:server{port=8080}:rescue{client.addr=10.244.0.1:55002}: linkerd_app_inbound::policy::http: Request denied server.group= server.kind=default client.tls=None(NoClientHello) client.ip=10.244.0.1",
    "[     1.000001s] DEBUG ThreadId(01) linkerd_app_inbound::policy::http: Request denied path=\"/api/\\\"weird\\\"\\\\x\" method=\"GET\"",
    "[     5.100000s]  WARN ThreadId(01) linkerd_app_core::errors::respond: Failed to encode error header error=invalid header value: \"bad\nvalue\"",
    "Jan 15 16:34:57.892 WARN  ThreadId(01) inbound:accept{peer.addr=10.110.16.96:47812 target.addr=10.110.80.70:8558}:http{v=h2}: linkerd2_app_core::errors: Failed to proxy request: error trying to connect\\\\n",
    "\x1b[2m[     0.001234s]\x1b[0m \x1b[32m INFO\x1b[0m ThreadId(01) \x1b[1minbound\x1b[0m\x1b[2m:\x1b[0m linkerd_app_core::serve: Connection closed",
    "[     0.002984s]  INFO ThreadId(01) linkerd2_proxy: Outbound interface on 127.0.0.1:4140\r",
    "{\"timestamp\":\"[     0.002747s]\",\"level\":\"INFO\",\"fields\":{\"message\":\"Admin interface on 0.0.0.0:4191\"},\"target\":\"linkerd2_proxy\",\"threadId\":\"ThreadId(1)\"}",
    "{\"threadId\":\"ThreadId(1)\",\"spans\":[{\"name\":\"inbound\"},{\"server\":{\"addr\":\"10.0.1.32:9443\"},\"name\":\"accept\"}],\"level\":\"DEBUG\",\"fields\":{\"message\":\"Connection closed\"},\"timestamp\":\"2026-01-12T15:39:45.802812Z\",\"target\":\"linkerd_app_core::serve\"}",
    "{\"addr\":\":8086\",\"level\":\"info\",\"msg\":\"Establishing watch\",\"time\":\"2023-01-10T10:00:00Z\"}",
    "10.244.0.9:35612 - - [2023-03-01T12:00:00.000000001Z] \"POST http://backend:8080/submit HTTP/2.0\"",
    "[pod/web-7d9c8b6f5-x2k4q/linkerd-proxy] 2024-06-13T10:15:02.1234Z [     0.003148s]  INFO ThreadId(01) linkerd2_proxy: Admin interface on 0.0.0.0:4191",
    "[pod/web-7d9c8b6f5-x2k4q/app] [     0.003148s]  INFO ThreadId(01) linkerd2_proxy: not the proxy",
    "foo-77b8f6cc97-8bjxj linkerd-proxy 2021-05-20T08:00:07.805841158Z [  1200.000001s] DEBUG ThreadId(01) inbound: linkerd_tls::server: Peeked bytes sz=517",
    "\"Dec 2, 2020 @ 06:45:47.043\",\"[ 80905.816738s]  INFO ThreadId(01) linkerd2_app_core::serve: Connection closed error=Service in fail-fast\"",
    "time=\"2023-01-10T10:00:00Z\" level=warning msg=\"Failed to get endpoints\" error=\"endpoints \\\"web\\\" not found\" ns=default",
    "time=\"2022-02-03T21:30:23Z\" level=info msg=\"# Generated by iptables-save\\n*nat\\nCOMMIT\\n\"",
    "I0203 21:30:23.123456       1 reflector.go:219] Starting reflector *v1.Pod (10m0s)",
    "2023-07-26T09:19:35.291752Z  INFO grpc{port=8090}: linkerd_policy_controller: policy gRPC server listening addr=0.0.0.0:8090",
    "DEBUG status::Index: linkerd_policy_controller_k8s_status::index: Lease holder reconciling cluster",
    "    ThreadId(01) outbound:proxy{addr=10.0.3.18:80}: linkerd_app_outbound::http::logical: Using balancer",
    "2020/07/15 16:22:43 < Chain PREROUTING (policy ACCEPT 0 packets, 0 bytes)\n pkts bytes target     prot opt in     out     source               destination\n\n    0     0 PROXY_INIT_REDIRECT  all  --  *      *       0.0.0.0/0            0.0.0.0/0",
    "/02/25 08:33:56 Will ignore port [4190 4191] on chain PROXY_INIT_REDIRECT",
    // Panics, whose continuation lines may look like record heads.
    "thread 'main' panicked at 'called `Option::unwrap()` on a `None` value', linkerd/app/src/lib.rs:200:14\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
    "thread 'proxy' panicked at linkerd/proxy/balance/queue/src/worker.rs:120:9:\nassertion failed: self.pending.is_empty()\n[ 1.0s] not a record\n{not json}\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n   4: linkerd_app::Config::build::{{closure}}\n             at /linkerd/app/src/lib.rs:200:14",
    "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x1a2b3c4]\ngoroutine 214 [running]:\ngithub.com/linkerd/linkerd2/controller/api/destination.(*endpointTranslator).Add(0xc000123400)\n\t/linkerd-build/controller/api/destination/endpoint_translator.go:123 +0x1a4",
    // Prose.
    "Defaulted container \"linkerd-proxy\" out of: linkerd-proxy, proxy-injector, linkerd-init (init)",
    "[bogdan@admin scripts]$ k logs linkerd-destination-5694c5787c-pm27w linkerd-proxy",
    "‼ control plane proxies are up-to-date",
    "",
    "   ",
    "{",
    "[",
    "time=\"",
    "2024-06-13T10:15:02Z",
];

/// A line of junk, biased toward the bytes the grammars care about. (One
/// `u16` per byte: half pick any byte, half one of `SPECIAL`. A weighted
/// `prop_oneof!` per byte is ~100x slower to generate.)
fn junk_line() -> impl Strategy<Value = Vec<u8>> {
    const SPECIAL: &[u8] = b"  \0\r\x1b[]{}()\"\\:=.\xc3\xa9\xff\t";
    prop::collection::vec(any::<u16>(), 0..120).prop_map(|v| {
        v.into_iter()
            .map(|x| {
                if x < 0x8000 {
                    x as u8
                } else {
                    SPECIAL[usize::from(x) % SPECIAL.len()]
                }
            })
            .filter(|b| *b != b'\n')
            .collect()
    })
}

/// A real line with one byte replaced, one inserted, or the line cut short:
/// malformed input that gets deep into a grammar.
fn mutated_line() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(SAMPLES),
        any::<prop::sample::Index>(),
        any::<u8>(),
        0..3u8,
    )
        .prop_map(|(s, at, b, how)| {
            let mut v = s.as_bytes().to_vec();
            if v.is_empty() {
                return v;
            }
            let i = at.index(v.len());
            match how {
                0 => v[i] = b,
                1 => v.insert(i, b),
                _ => v.truncate(i),
            }
            v
        })
}

/// A mix of records, junk and mutations, joined by newlines.
fn log(items: std::ops::Range<usize>) -> impl Strategy<Value = Bytes> {
    let item = prop_oneof![
        6 => prop::sample::select(SAMPLES).prop_map(|s| s.as_bytes().to_vec()),
        2 => junk_line(),
        2 => mutated_line(),
    ];
    (prop::collection::vec(item, items), any::<bool>()).prop_map(|(items, trailing_nl)| {
        let mut out = items.join(&b'\n');
        if trailing_nl {
            out.push(b'\n');
        }
        Bytes(out)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// (a) Arbitrary bytes never panic.
    #[test]
    fn arbitrary_bytes_never_panic(input in prop::collection::vec(any::<u8>(), 0..2048).prop_map(Bytes)) {
        let recs = run(&input);
        assert_covers(&input, &recs)?;
    }

    /// (a) Biased junk and mutated real lines never panic.
    #[test]
    fn junk_and_mutations_never_panic(input in log(0..40)) {
        let recs = run(&input);
        assert_covers(&input, &recs)?;
    }

    /// (b) Every line is in exactly one record.
    #[test]
    fn every_line_is_accounted_for_once(input in log(0..200)) {
        let recs = run(&input);
        assert_covers(&input, &recs)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// (a) Very long lines (longer than a block) never panic.
    #[test]
    fn very_long_lines_never_panic(
        head in prop::sample::select(SAMPLES),
        fill in prop_oneof![Just(b'a'), Just(b' '), Just(b'{'), Just(b'('), Just(b'"'), Just(0x1b), Just(0xff)],
        len in 70_000usize..300_000,
        tail in junk_line(),
    ) {
        let mut input = head.as_bytes().to_vec();
        input.extend(std::iter::repeat_n(fill, len));
        input.push(b'\n');
        input.extend(tail);
        assert_covers(&input, &run(&input))?;
        let (recs, _) = run_blocks(&input, input.len() + 1);
        // A block reads on past a line that starts no record for up to four
        // blocks' worth: a record that long may be cut, so blocks here are
        // larger than a quarter of the input.
        prop_assert_eq!(run_blocks(&input, input.len() / 3).0, recs);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// (c) One block and blocks of a quarter of the input give the same
    /// records. Both come from the reader, which ends lines at a lone CR
    /// where `process_block` on the raw bytes does not.
    #[test]
    fn blocks_do_not_change_results(input in log(1500..3000)) {
        assert_covers(&input, &run(&input))?;
        let (whole, _) = run_blocks(&input, input.len() + 1);
        if !input.contains(&b'\r') {
            prop_assert!(whole == run(&input), "one block differs from process_block on the input");
        }
        let (four, cuts) = run_blocks(&input, input.len() / 4);
        prop_assert!(cuts.len() >= 2, "input of {} bytes was not cut", input.len());
        if four != whole {
            let at = four.iter().zip(&whole).position(|(a, b)| a != b).unwrap_or(0);
            prop_assert!(
                false,
                "blocks (starting at lines {:?}) differ from one at record {}: {:?} vs {:?}",
                cuts, at, four.get(at), whole.get(at)
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// (c) With a line cap shorter than many lines, where blocks end still
    /// changes neither the records nor which lines are told as cut, nor by
    /// how much. The cap stays long enough for a cut line to keep its head:
    /// under a few dozen bytes hardly any line is a record header, a block
    /// finds no header to end at within four blocks and is cut where it
    /// stands (the limit the README names), which may split a record.
    #[test]
    fn the_line_cap_does_not_depend_on_blocks(input in log(300..600), cap in 100usize..200) {
        let (whole, _, whole_cuts) = run_capped(&input, input.len() + 1, cap);
        prop_assert!(!whole_cuts.is_empty(), "no line over {} bytes", cap);
        // Blocks are sized in what is kept of the lines: about 30 capped
        // lines each.
        let (seven, firsts, cuts) = run_capped(&input, (cap + 1) * 30, cap);
        prop_assert!(firsts.len() >= 2, "input of {} bytes was not cut", input.len());
        prop_assert_eq!(cuts, whole_cuts);
        if seven != whole {
            let at = seven.iter().zip(&whole).position(|(a, b)| a != b).unwrap_or(0);
            prop_assert!(
                false,
                "blocks (starting at lines {:?}) differ from one at record {}: {:?} vs {:?}",
                firsts, at, seven.get(at), whole.get(at)
            );
        }
    }
}

/// A block cut at a line that opens like a record (`[`, `{`, `time="`, a
/// date) but continues a multi-line record must not split that record.
#[test]
fn block_cut_never_splits_a_panic() {
    let filler = "[     0.001961s]  INFO ThreadId(01) linkerd2_proxy::rt: Using single-threaded proxy runtime\n";
    let panic = "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x1a2b3c4]\ngoroutine 214 [running]:\n";
    let mut input = String::new();
    while input.len() < 70_000 {
        input.push_str(filler);
    }
    // `panic:` is not an anchor; the next line, `[signal …]`, looks like
    // one but is not either.
    input.push_str(panic);
    while input.len() < 140_000 {
        input.push_str(filler);
    }
    let whole = run(input.as_bytes());
    // A block read up to the `goroutine` line ends inside the panic.
    let size = input.find("goroutine").unwrap();
    let (two, cuts) = run_blocks(input.as_bytes(), size);
    assert_eq!(cuts.len(), 2);
    assert_eq!(two, whole);
}

/// Inputs the properties found panicking, kept as fixed cases.
#[test]
fn found_panics_stay_fixed() {
    for input in [
        // logfmt stepped past an unterminated quote.
        "time=\"",
        "time=\"2023-01-10T10:00:00Z\" level=warning msg=\"",
        // A span close not followed by `:` put the next name inside a UTF-8
        // character.
        "[ 11992.906251s] DEBUG ThreadId(02) daemon:admin{listen.addr=0.0.0.0:4191}\u{fffd}accept{client.addr=10.244.0.123:50254}: linkerd_app_core::serve: Connection closed",
    ] {
        let recs = run(input.as_bytes());
        assert_eq!(recs.len(), 1, "{input:?}");
    }
}
