//! Metrics input through the binary: exposition text that breaks the
//! grammar is kept as unparsed lines without losing the rest, logs and
//! metrics mixed in one stream make one verdict, `lpa parse` shows samples.

use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn corpus(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpus/metrics")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

fn lpa(args: &[&str], stdin: &str) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lpa"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn explain(stdin: &str) -> Value {
    let (code, out) = lpa(&["explain", "--format", "json"], stdin);
    assert_eq!(code, 0, "{out}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn malformed_exposition_lines_are_unparsed_and_the_rest_still_reads() {
    let mut text = corpus("gateway-connect-timeout-2.10.prom");
    let huge = (0..2000)
        .map(|i| format!("l{i}=\"v\""))
        .collect::<Vec<_>>()
        .join(",");
    for bad in [
        // Cut in a label value, a bad escape, a huge label set, no value,
        // a value that is no number, a TYPE of no type.
        "tcp_open_total{direction=\"outbound\",peer=\"d".to_string(),
        "tcp_open_total{authority=\"a\\q\"} 0".to_string(),
        format!("tcp_open_total{{{huge}}} 0"),
        "tcp_close_total{direction=\"outbound\"}".to_string(),
        "tcp_close_total{direction=\"outbound\"} zero".to_string(),
        "# TYPE tcp_close_total sometimes".to_string(),
    ] {
        text.push_str(&bad);
        text.push('\n');
    }
    let doc = explain(&text);
    assert_eq!(doc["input"]["unparsed"], 6, "{}", doc["input"]);
    assert_eq!(doc["findings"][0]["id"], "connect.timeout");
}

#[test]
fn binary_and_truncated_input_never_crash() {
    let text = corpus("client-no-endpoints-2.16.prom");
    for cut in [1, 7, 100, 999, text.len() / 2] {
        let (code, _) = lpa(&["explain"], &text[..cut.min(text.len())]);
        assert_eq!(code, 0, "cut at {cut}");
    }
    let (code, _) = lpa(&["summarize"], "\u{0}\u{1}{{{}}} # POD ( of )\n#\n# EOF\n");
    assert_eq!(code, 0);
}

#[test]
fn logs_and_metrics_in_one_stream_make_one_verdict() {
    // Interleaved: the snapshot in the middle of the log.
    let log = corpus("gateway-info-2.10.log");
    let prom = corpus("gateway-connect-timeout-2.10.prom");
    let half = log[..log.len() / 2].rfind('\n').unwrap() + 1;
    let (head, tail) = log.split_at(half);
    let doc = explain(&format!("{head}{prom}{tail}"));
    let f = &doc["findings"][0];
    assert_eq!(f["id"], "connect.timeout", "{doc}");
    let kinds: Vec<&str> = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"metric"), "{f}");
    let folded: Vec<&str> = f["consequences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert!(folded.contains(&"discovery.no-endpoints"), "{folded:?}");
    let notes = f["notes"].to_string();
    assert!(notes.contains("debug log"), "{notes}");
}

#[test]
fn parse_shows_samples_with_their_labels() {
    let (code, out) = lpa(
        &["parse"],
        "#\n# POD web-1 (1 of 2)\n#\ntcp_open_total{direction=\"outbound\",authority=\"a:80\"} 3 1700000000000\n# EOF\n",
    );
    assert_eq!(code, 0);
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[1]["metric"]["kind"], "pod");
    assert_eq!(lines[1]["metric"]["name"], "web-1");
    let s = &lines[3];
    assert_eq!(s["producer"], "metrics");
    assert_eq!(s["metric"]["name"], "tcp_open_total");
    assert_eq!(s["metric"]["value"], 3.0);
    assert_eq!(s["metric"]["timestamp"], 1700000000000.0);
    assert_eq!(s["fields"]["authority"], "a:80");
    assert_eq!(lines[4]["metric"]["kind"], "eof");
}

#[test]
fn two_pods_of_one_output_are_read_apart() {
    // `linkerd diagnostics proxy-metrics` for a deployment of two pods: one
    // pod's endpoints never connect, the other's do.
    let mut text = String::new();
    for (i, open) in [(1, 0), (2, 5)] {
        text += &format!(
            "#\n# POD web-{i} ({i} of 2)\n#\n# TYPE tcp_open_total counter\ntcp_open_total{{direction=\"outbound\",peer=\"dst\",authority=\"api.ns.svc.cluster.local:80\",target_addr=\"10.0.0.{i}:80\"}} {open}\n"
        );
    }
    let doc = explain(&text);
    let f = &doc["findings"][0];
    assert_eq!(f["id"], "connect.timeout");
    assert_eq!(f["subjects"]["pod"], serde_json::json!(["web-1"]));
}

mod blocks {
    use lpa::input::Source;
    use lpa::pipeline::Options;
    use lpa::rules::{self, engine::Engine};
    use proptest::prelude::*;

    fn report(data: &[u8], block_size: usize, engine: &Engine) -> String {
        let mut sources = vec![Source::from_reader(
            "p",
            std::io::Cursor::new(data.to_vec()),
        )];
        let opts = Options {
            block_size,
            threads: 2,
            progress: false,
            ..Options::blocks_of(block_size)
        };
        let r = lpa::cli::analyze(&mut sources, &opts, engine).unwrap();
        serde_json::to_string(&r).unwrap()
    }

    /// Lines of exposition text the rules read, framing, and broken ones.
    fn line() -> impl Strategy<Value = String> {
        let auth = prop::sample::select(vec![
            "a.ns.svc.cluster.local:80",
            "b.ns.svc.cluster.local:80",
        ]);
        let value = prop::sample::select(vec!["0", "1", "3", "NaN", "+Inf", "1e+06"]);
        prop_oneof![
            (auth.clone(), 0u8..4, value.clone()).prop_map(|(a, ip, v)| format!(
                "tcp_open_total{{direction=\"outbound\",peer=\"dst\",authority=\"{a}\",target_addr=\"10.0.0.{ip}:80\"}} {v}"
            )),
            (auth, value.clone()).prop_map(|(a, v)| format!(
                "tcp_close_total{{direction=\"outbound\",peer=\"dst\",authority=\"{a}\",errno=\"\"}} {v}"
            )),
            value.prop_map(|v| format!("outbound_http_errors_total{{error=\"failfast\"}} {v}")),
            (0u8..3).prop_map(|p| format!("#\n# POD web-{p} (1 of 1)\n#")),
            Just("# EOF".to_string()),
            Just("process_start_time_seconds 1700000000".to_string()),
            Just("tcp_open_total{direction=\"outbound\",peer=\"d".to_string()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn snapshots_read_in_blocks_match_the_whole(lines in prop::collection::vec(line(), 1..120), size in 40usize..600) {
            let engine = Engine::new(rules::load(&[]).unwrap());
            let data = lines.join("\n") + "\n";
            prop_assert_eq!(report(data.as_bytes(), size, &engine), report(data.as_bytes(), 1 << 30, &engine));
        }
    }
}
