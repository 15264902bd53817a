//! Explain's fast path gives the report its slow path gives: quiet lines
//! counted without their events, lines read through the shapes cache, a
//! shape's literals found once, and connection context looked back for, on every corpus log and on generated
//! logs of each scenario and format. So does parse's: lines written from
//! their shape's record; and summarize's: lines counted by their shape's
//! plan.

#[path = "../examples/gen.rs"]
#[allow(dead_code)]
mod gen;

mod common;

use lpa::cli::{parse_records, Only, ParseFilter};
use lpa::input::Source;
use lpa::parse::{template, Event, Level};
use lpa::pipeline::{process_block, run, Options};
use lpa::report::summary::{Summary, SummaryAcc};
use lpa::rules::{self, engine::Engine};
use proptest::prelude::*;

fn engine(quiet: bool) -> Engine {
    let mut e = Engine::new(rules::load(&[]).unwrap());
    e.shapes = quiet;
    e
}

/// `data` as the one source of a run in blocks of `block` bytes.
fn input(name: &str, data: &[u8], block: usize) -> (Vec<Source>, Options) {
    let sources = vec![Source::from_reader(
        name,
        std::io::Cursor::new(data.to_vec()),
    )];
    let opts = Options {
        threads: 2,
        progress: false,
        ..Options::blocks_of(block)
    };
    (sources, opts)
}

/// The JSON report of `data` read in blocks of `block` bytes.
fn report(name: &str, data: &[u8], block: usize, engine: &Engine) -> String {
    let (mut sources, opts) = input(name, data, block);
    let r = lpa::cli::analyze(&mut sources, &opts, engine).unwrap();
    serde_json::to_string_pretty(&r).unwrap()
}

/// Explain's report of `log` without shapes names each of `wants`, and
/// with shapes, quiet lines and looking back, in blocks of each of
/// `blocks` bytes, is the same.
fn fast_reports_as_slow(name: &str, log: &str, wants: &[&str], blocks: &[usize]) {
    let (fast, slow) = (engine(true), engine(false));
    let want = report(name, log.as_bytes(), 1 << 30, &slow);
    for w in wants {
        assert!(want.contains(w), "{w}: {want}");
    }
    for &block in blocks {
        let got = report(name, log.as_bytes(), block, &fast);
        assert_eq!(got, want, "blocks of {block}");
    }
}

fn corpus() -> Vec<(String, Vec<u8>)> {
    common::files("corpus/scenarios", "log")
        .into_iter()
        .map(|f| (f.display().to_string(), std::fs::read(&f).unwrap()))
        .collect()
}

fn generated(size: u64) -> Vec<(String, Vec<u8>)> {
    use gen::{Format, Scenario, Wrap};
    let mut out = Vec::new();
    for (scenario, format, wrap) in [
        (Scenario::Gateway, Format::Plain, Wrap::None),
        (Scenario::Healthy, Format::Plain, Wrap::None),
        (Scenario::Mixed, Format::Plain, Wrap::None),
        (Scenario::Gateway, Format::Json, Wrap::None),
        (Scenario::Mixed, Format::Mixed, Wrap::Timestamps),
        (Scenario::Gateway, Format::Plain, Wrap::Prefix),
    ] {
        let mut buf = Vec::new();
        let o = gen::Opts {
            size,
            seed: 7,
            scenario,
            format,
            wrap,
        };
        gen::generate(&o, &mut buf).unwrap();
        out.push((format!("{scenario:?} {format:?} {wrap:?}"), buf));
    }
    let mut young = Vec::new();
    let o = gen::Opts {
        size,
        seed: 7,
        scenario: Scenario::Mixed,
        format: Format::Mixed,
        wrap: Wrap::None,
    };
    gen::generate(&o, &mut young).unwrap();
    out.push(("Mixed Mixed None, from 0 s to 2 000 s".into(), aged(&young)));
    let broken = broken(&out[0].1);
    out.push(("Gateway Plain None, some lines not UTF-8".into(), broken));
    out
}

/// `log` with a byte that is not UTF-8 in every 97th line: the blocks
/// with one hold lines of kept shapes that are UTF-8 and some that are not.
fn broken(log: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(log.len() + log.len() / 4096);
    for (i, line) in log.split(|b| *b == b'\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        if i % 97 == 0 && line.len() > 40 {
            out.extend_from_slice(&line[..30]);
            out.push(0xff);
            out.extend_from_slice(&line[30..]);
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

/// `log` with its uptimes, plain and JSON, spread from where they are to
/// 2 000 s more: its lines' brackets fill their padding as they grow.
fn aged(log: &[u8]) -> Vec<u8> {
    let lines: Vec<&[u8]> = log.split(|b| *b == b'\n').collect();
    let n = lines.len() as u64;
    let mut out = Vec::with_capacity(log.len());
    for (i, line) in lines.iter().enumerate() {
        let at = if line.starts_with(b"[") {
            Some(0)
        } else if line.starts_with(br#"{"timestamp":"["#) {
            Some(14)
        } else {
            None
        };
        // `[` six places of seconds, a point, six digits, `s]`.
        let bracket = at.and_then(|a| {
            let b = line.get(a..a + 16)?;
            let secs: u64 = std::str::from_utf8(&b[1..7]).ok()?.trim().parse().ok()?;
            (b[7] == b'.' && &b[14..] == b"s]").then_some((a, secs))
        });
        match bracket {
            Some((a, secs)) => {
                let grown = secs + 2000 * i as u64 / n;
                out.extend_from_slice(&line[..a + 1]);
                out.extend_from_slice(format!("{grown:>6}").as_bytes());
                out.extend_from_slice(&line[a + 7..]);
            }
            None => out.extend_from_slice(line),
        }
        out.push(b'\n');
    }
    out.pop();
    out
}

/// Every corpus log and generated log gives one report whether quiet lines
/// are counted from their shape or read as events, and whatever the blocks.
#[test]
fn quiet_lines_are_counted_as_their_events_would_be() {
    let (fast, slow) = (engine(true), engine(false));
    for (name, data) in corpus().into_iter().chain(generated(1 << 20)) {
        let want = report(&name, &data, 1 << 30, &slow);
        assert_eq!(report(&name, &data, 1 << 30, &fast), want, "{name}");
        // Blocks of 64 KiB: most connections' lines fall in two blocks.
        assert_eq!(
            report(&name, &data, 64 << 10, &fast),
            want,
            "{name}, in blocks"
        );
    }
}

/// The summary of `data` read in blocks of `block` bytes, as JSON.
fn summary(name: &str, data: &[u8], block: usize, engine: &Engine) -> String {
    let (mut sources, opts) = input(name, data, block);
    let mut total = Summary::default();
    run(
        &mut sources,
        &opts,
        || SummaryAcc::new(engine),
        |_, acc| {
            total.merge(acc.into_summary());
            Ok(())
        },
    )
    .unwrap();
    serde_json::to_string_pretty(&total.doc(20)).unwrap()
}

/// Summarize gives one summary whether its lines' era wording is told by
/// their shapes or searched for in each, on every corpus log and generated
/// log.
#[test]
fn summaries_read_by_shape_are_the_same() {
    let (fast, slow) = (engine(true), engine(false));
    for (name, data) in corpus().into_iter().chain(generated(1 << 20)) {
        let want = summary(&name, &data, 64 << 10, &slow);
        assert_eq!(summary(&name, &data, 64 << 10, &fast), want, "{name}");
    }
}

/// A port is read from the first of its places where it reads as one; a
/// line of a known shape whose port does not read where its shape's first
/// line's did (`port=99999`) still counts under the port read elsewhere.
/// Its TLS state is counted by port, as are the statuses and peeks of the
/// lines around it, whichever comes first.
#[test]
fn summaries_read_each_lines_port_where_it_reads() {
    let line = |n: u32, server: u32, target: u32| {
        format!("[     {n}.000001s] DEBUG ThreadId(01) inbound:accept{{client.addr=10.0.0.7:40000 target.addr=10.0.0.1:{target}}}:server{{port={server}}}: linkerd_tls::server: Peeked bytes from TCP stream sz=517\n")
    };
    let (fast, slow) = (engine(true), engine(false));
    for ports in [
        [
            (14143, 14143),
            (99999, 18080),
            (14143, 14143),
            (99999, 99999),
        ],
        [
            (99999, 18080),
            (14143, 14143),
            (99999, 99999),
            (14143, 14143),
        ],
    ] {
        let log: String = (1..40)
            .map(|n| {
                let (server, target) = ports[n as usize % 4];
                line(n, server, target)
            })
            .collect();
        let want = summary("ports.log", log.as_bytes(), 1 << 30, &slow);
        for port in ["14143", "18080"] {
            assert!(want.contains(port), "{port}: {want}");
        }
        assert_eq!(summary("ports.log", log.as_bytes(), 1 << 30, &fast), want);
    }
}

/// A literal with a digit (`status=431`) in a line whose shape's first
/// lines lack it, plain and JSON: the line is read, not counted quiet.
#[test]
fn a_literal_with_digits_is_found_in_any_line_of_a_shape() {
    let plain = |status: u32| {
        format!("[     1.{status:06}s] DEBUG ThreadId(01) inbound:accept{{client.addr=10.0.0.7:1234 target.addr=10.0.0.1:4143}}: linkerd_app_core::errors: Handling error with HTTP response status={status} version=HTTP/1.1")
    };
    let json = |status: u32| {
        format!(
            r#"{{"timestamp":"[     1.{status:06}s]","level":"DEBUG","fields":{{"message":"Handling error with HTTP response","status":"{status}","version":"HTTP/1.1"}},"target":"linkerd_app_core::errors","spans":[{{"name":"inbound"}}],"threadId":"ThreadId(1)"}}"#
        )
    };
    for line in [&plain as &dyn Fn(u32) -> String, &json] {
        let mut log = String::new();
        for status in [200, 503, 404, 431, 200] {
            log += &line(status);
            log.push('\n');
        }
        let wants = ["http.header-too-large"];
        fast_reports_as_slow("digits.log", &log, &wants, &[1 << 30]);
    }
}

/// Warnings of one shape whose literals differ in their digits (`os error
/// 111`, `113`, `11`): each line's rules are its own, not its shape's
/// first line's, whichever comes first.
#[test]
fn a_literal_with_digits_decides_each_loud_line_of_a_shape() {
    let line = |n: u32, code: u32| {
        format!("[     {n}.000001s]  WARN ThreadId(01) outbound:proxy{{addr=10.0.0.9:8080}}: linkerd_reconnect: Failed to connect error=os error {code}\n")
    };
    for codes in [[104, 111, 113, 11], [113, 11, 104, 111]] {
        let log: String = (1..40).map(|n| line(n, codes[n as usize % 4])).collect();
        let wants = ["connect.refused", "connect.no-route"];
        fast_reports_as_slow("codes.log", &log, &wants, &[1 << 30]);
    }
}

/// Peeks of one shape that tag their connections by their size (`sz=0`
/// a probe, `sz=5` a client: the same shape) tag each connection by its
/// own line's size, counted quiet or read, in one block or many, whichever
/// size comes first.
#[test]
fn quiet_peeks_tag_each_connection_by_its_own_size() {
    let lines = |n: u32, sz: u32| {
        let client = format!("client.addr=10.0.{}.{}:{}", n / 200, n % 200, 40000 + n);
        format!(
            "[{n:>10}.000001s] DEBUG ThreadId(01) inbound:accept{{{client}}}: linkerd_tls::server: Peeked bytes from TCP stream sz={sz}\n\
             [{n:>10}.000002s]  INFO ThreadId(01) inbound:accept{{{client}}}: linkerd_app_core::serve: Connection closed error=direct connections must be mutually authenticated {client}\n"
        )
    };
    for sizes in [[0, 5, 0, 517], [5, 0, 517, 0]] {
        let log: String = (1..400).map(|n| lines(n, sizes[n as usize % 4])).collect();
        let wants = ["TCP health probes", "unmeshed or misconfigured client"];
        fast_reports_as_slow("peeks.log", &log, &wants, &[4 << 10, 1 << 30]);
    }
}

/// A gateway's fail-fast errors, which name no destination: each takes
/// it from its connection's line before (`logical{dst=…}`).
fn failfast_log() -> String {
    let head = |n: u32, level: &str, client: u32| {
        format!("[    12.{n:06}s] {level} ThreadId(01) inbound:accept{{client.addr=10.240.1.{client}:58786 target.addr=10.0.57.7:4143}}:direct:gateway:http{{v=h2}}")
    };
    let mut log = String::new();
    for (i, (client, svc)) in [(80, "voting"), (81, "books"), (82, "voting")]
        .into_iter()
        .enumerate()
    {
        let n = 1000 * i as u32;
        let dst = format!("{svc}.booksapp.svc.cluster.local:80");
        log += &format!("{}:gateway{{target={dst} v=1.x}}:logical{{dst={dst}}}:concrete{{addr={dst}}}: linkerd_stack::failfast: HTTP Balancer in failfast\n", head(n, "DEBUG", client));
        log += &format!("{}: linkerd_app_core::errors: Failed to proxy request: HTTP Balancer service in fail-fast client.addr=10.240.1.{client}:58786\n", head(n + 1, " WARN", client));
        log += &format!("{}: linkerd_app_core::errors: Handling error with HTTP response status=503 Service Unavailable version=HTTP/2.0\n", head(n + 2, "DEBUG", client));
    }
    log
}

/// Looking back (blocks) and remembering every line (a whole input read in
/// order, as follow mode does) agree on every corpus log, generated log and
/// a gateway's fail-fast errors (which take their destination from their
/// connection's lines before).
#[test]
fn looking_back_finds_what_remembering_kept() {
    let e = engine(true);
    let failfast = ("failfast.log".to_string(), failfast_log().into_bytes());
    for (name, data) in corpus()
        .into_iter()
        .chain(generated(1 << 20))
        .chain([failfast])
    {
        let blocks = report(&name, &data, 1 << 30, &e);
        let mut st = e.whole_state();
        st = process_block(&name, &data, 1, st);
        let remembered = serde_json::to_string_pretty(&st.finish(None)).unwrap();
        assert_eq!(blocks, remembered, "{name}");
    }
}

/// A loud line that waits for its connection's earlier lines and is then
/// won by no rule goes to the unrecognised warnings as it would have when
/// read in order: its wording, and its own line as evidence.
#[test]
fn a_waiting_line_no_rule_wins_is_an_unrecognised_warning() {
    let e = engine(true);
    // The first loud line is line 3.
    let mut log = String::from(
        "[         0.000001s]  INFO ThreadId(01) linkerd2_proxy: Admin interface on 0.0.0.0:4191\n",
    )
    .repeat(2);
    log += &(1..3000)
        .map(|i| {
            format!(
                "[{i:>10}.000000s]  WARN ThreadId(01) inbound:accept{{client.addr=10.0.{}.{}:{}}}: linkerd_app_core::serve: Connection closed error=connection reset by peer\n",
                i / 256,
                i % 256,
                1024 + i
            )
        })
        .collect::<String>();
    let mut st = e.whole_state();
    st = process_block("clients.log", log.as_bytes(), 1, st);
    let remembered = serde_json::to_string_pretty(&st.finish(None)).unwrap();
    let unmatched = &serde_json::from_str::<serde_json::Value>(&remembered).unwrap()["unmatched"];
    assert_eq!(unmatched[0]["example"]["line"], 3, "{unmatched}");
    assert_eq!(unmatched[0]["count"], 2999, "{unmatched}");
    for block in [4 << 10, 1 << 30] {
        let blocks = report("clients.log", log.as_bytes(), block, &e);
        assert_eq!(blocks, remembered, "blocks of {block}");
    }
}

/// `lpa parse` of `data`, its lines written from their shape's record or
/// each from its event.
fn parse_output(
    data: &[u8],
    by_shape: bool,
    level: Option<Level>,
    only: Only,
    max_line: usize,
) -> String {
    let (mut sources, mut opts) = input("in.log", data, 64 << 10);
    opts.max_line = max_line;
    let filter = ParseFilter {
        level,
        only,
        by_shape,
    };
    let mut out = Vec::new();
    parse_records(&mut sources, &opts, filter, |c| {
        out.extend_from_slice(c);
        Ok(())
    })
    .unwrap();
    String::from_utf8(out).unwrap()
}

/// Parse writes the same records whether a line's comes from its shape's
/// record or from its event, with every filter, and with lines cut.
#[test]
fn parse_records_by_shape_are_the_same() {
    for (name, data) in corpus().into_iter().chain(generated(1 << 20)) {
        for (level, only, max_line) in [
            (None, Only::All, 2 << 20),
            (Some(Level::Warn), Only::Events, 2 << 20),
            (None, Only::Unparsed, 2 << 20),
            (None, Only::All, 200),
        ] {
            let want = parse_output(&data, false, level, only, max_line);
            let got = parse_output(&data, true, level, only, max_line);
            assert!(got == want, "{name} {level:?} {only:?} {max_line}");
        }
    }
}

/// Lines of one shape whose digits decide their status (`099` is none),
/// their size (past `u64`, none), their component (`h2` is the proxy's
/// HTTP/2 crate, `h7` nothing known) and their uptime (grown into its
/// padding), plain and JSON; and JSON lines whose timestamp, not an
/// uptime, is padded as one (a line has digits where the first had
/// spaces).
#[test]
fn what_a_shapes_digits_decide_is_read_from_each_line() {
    let plain = |up: &str, root: &str, status: &str, sz: &str| {
        format!("[{up}s] DEBUG ThreadId(01) outbound:proxy{{addr=10.0.0.1:80}}: {root}::codec::framed_read: received status={status} sz={sz} frame=Data\n")
    };
    let json = |up: &str, root: &str, status: &str| {
        format!(
            r#"{{"timestamp":"[{up}s]","level":"WARN","fields":{{"message":"Failed","status":{status}}},"target":"{root}::proto","spans":[{{"name":"outbound"}}],"threadId":"ThreadId(1)"}}"#
        ) + "\n"
    };
    let mut text = String::new();
    for (up, root, status, sz, json_status) in [
        ("     1.000000", "h2", "503", "12345678901234567890", "503"),
        ("     2.000000", "h7", "099", "99999999999999999999", "999"),
        ("     3.000000", "h2", "999", "00000000000000000012", "200"),
        ("     4.000000", "h7", "200", "12345678901234567890", "404"),
        ("   500.000000", "h2", "503", "12345678901234567890", "503"),
    ] {
        text += &plain(up, root, status, sz);
        text += &json(up, root, json_status);
    }
    for stamp in ["[  5 weird]", "[ 55 weird]", "[555 weird]"] {
        text += &format!(
            r#"{{"timestamp":"{stamp}","level":"INFO","fields":{{"message":"grown"}},"target":"linkerd_app_inbound","threadId":"ThreadId(1)"}}"#
        );
        text += "\n";
    }
    let want = parse_output(text.as_bytes(), false, None, Only::All, 2 << 20);
    assert!(want.contains(r#""component":"unknown""#) && want.contains(r#""status":200"#));
    assert!(want.contains(r#""uptime":500.0,"#) && want.contains("[ 55 weird]"));
    assert_eq!(
        parse_output(text.as_bytes(), true, None, Only::All, 2 << 20),
        want
    );
}

fn corpus_lines() -> Vec<String> {
    let mut lines: Vec<String> = corpus()
        .into_iter()
        .flat_map(|(_, d)| {
            String::from_utf8_lossy(&d)
                .lines()
                .filter(|l| l.starts_with('[') || l.starts_with('{'))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    lines.sort();
    lines.dedup();
    lines
}

fn parsed(line: &str) -> String {
    let mut ev = Event::default();
    let ok = if line.starts_with('{') {
        lpa::parse::json::parse(line, &mut ev).is_some()
    } else {
        lpa::parse::plain::proxy_plain(line, &mut ev).is_some()
    };
    ev.component = lpa::parse::component::of(&ev);
    format!("{ok} {ev:?}")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A plain or JSON line read through the shape another line left (the
    /// same text with other digits) reads as the line itself.
    #[test]
    fn a_line_reads_through_its_shape_as_itself(
        pick in any::<prop::sample::Index>(),
        digits in prop::collection::vec(0u8..10, 64),
    ) {
        let lines = corpus_lines();
        let line = &lines[pick.index(lines.len())];
        let mut d = digits.iter().cycle();
        let other: String = line
            .chars()
            .map(|c| if c.is_ascii_digit() { char::from(b'0' + d.next().unwrap()) } else { c })
            .collect();
        for l in [line.as_str(), other.as_str(), line.as_str()] {
            let mut ev = Event::default();
            if template::read(l, &mut ev) {
                // Which shape read it is not what it reads as.
                ev.shape = 0;
                prop_assert_eq!(format!("true {ev:?}"), parsed(l), "{}", l);
            }
        }
    }

    /// Lines of one shape whose digits make their status, size, uptime and
    /// component differ (`status=099` is none; `h2` is not `h3`) are
    /// written as their events would be.
    #[test]
    fn a_line_is_written_from_its_shape_as_from_its_event(
        picks in prop::collection::vec(any::<prop::sample::Index>(), 4),
        digits in prop::collection::vec(0u8..10, 256),
    ) {
        let mut lines = corpus_lines();
        lines.extend([
            "[     1.000000s] DEBUG ThreadId(01) outbound:proxy{addr=10.0.0.1:80}: h2::codec::framed_read: received status=503 sz=12 frame=Data { stream_id: StreamId(1) }".to_string(),
            r#"{"timestamp":"[     1.000000s]","level":"WARN","fields":{"message":"Failed","status":503,"sz":"12"},"target":"h2::proto","spans":[{"name":"outbound"}],"threadId":"ThreadId(1)"}"#.to_string(),
        ]);
        let mut d = digits.iter().cycle();
        let mut text = String::new();
        for pick in &picks {
            let line = &lines[pick.index(lines.len())];
            text.push_str(line);
            text.push('\n');
            let other: String = line
                .chars()
                .map(|c| if c.is_ascii_digit() { char::from(b'0' + d.next().unwrap()) } else { c })
                .collect();
            text.push_str(&other);
            text.push('\n');
        }
        let data = text.as_bytes();
        let want = parse_output(data, false, None, Only::All, 2 << 20);
        prop_assert_eq!(parse_output(data, true, None, Only::All, 2 << 20), want);
    }
}
