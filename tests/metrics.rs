//! Metrics input through the binary: exposition text that breaks the
//! grammar is kept as unparsed lines without losing the rest, logs and
//! metrics mixed in one stream make one verdict, `lpa parse` shows samples.

use serde_json::Value;
use std::path::PathBuf;

mod common;

fn corpus(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpus/metrics")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

fn lpa(args: &[&str], stdin: &str) -> (i32, String) {
    common::code_and_stdout(args, stdin)
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

    /// One engine for every case: loading the rules dominates a case.
    fn engine() -> &'static Engine {
        static E: std::sync::OnceLock<Engine> = std::sync::OnceLock::new();
        E.get_or_init(|| Engine::new(rules::load(&[]).unwrap()))
    }

    fn input_counts(data: &[u8], engine: &Engine) -> (u64, u64) {
        let r: serde_json::Value = serde_json::from_str(&report(data, 1 << 20, engine)).unwrap();
        let n = |k: &str| r["input"][k].as_u64().unwrap();
        (n("events"), n("unparsed"))
    }

    /// A sample with label values that need escapes.
    fn sample() -> impl Strategy<Value = String> {
        let value = prop::sample::select(vec!["a", "b\\\"c", "d\\ne", "é ü", ""]);
        (value.clone(), value, 0u32..1000).prop_map(|(a, b, v)| {
            format!("request_errors_total{{direction=\"outbound\",authority=\"{a}\",message=\"{b}\"}} {v}")
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// A sample cut anywhere inside its label set is one unparsed line,
        /// and the whole samples around it still read.
        #[test]
        fn a_sample_cut_in_its_labels_is_unparsed(lines in prop::collection::vec(sample(), 1..8), cut in sample(), at in 0.0f64..1.0) {
            let engine = engine();
            let open = cut.find('{').unwrap() + 1;
            let close = cut.rfind('}').unwrap();
            let mut end = open + ((close - open) as f64 * at) as usize;
            while !cut.is_char_boundary(end) {
                end -= 1;
            }
            let data = format!("{}\n{}\n", lines.join("\n"), &cut[..end]);
            prop_assert_eq!(input_counts(data.as_bytes(), engine), (lines.len() as u64, 1));
        }

        /// Any bytes at all: read without a panic, each line counted once.
        #[test]
        fn arbitrary_bytes_never_crash(data in prop::collection::vec(any::<u8>(), 0..2000)) {
            let engine = engine();
            let (events, unparsed) = input_counts(&data, engine);
            // The reader ends a line at a lone CR too.
            let lf: Vec<u8> = data
                .iter()
                .enumerate()
                .map(|(i, &b)| if b == b'\r' && data.get(i + 1) != Some(&b'\n') { b'\n' } else { b })
                .collect();
            prop_assert!(events + unparsed <= lpa::input::count_lines(&lf));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn snapshots_read_in_blocks_match_the_whole(lines in prop::collection::vec(line(), 1..120), size in 40usize..600) {
            let engine = engine();
            let data = lines.join("\n") + "\n";
            prop_assert_eq!(report(data.as_bytes(), size, engine), report(data.as_bytes(), 1 << 30, engine));
        }
    }
}

fn summarize(args: &[&str], stdin: &str) -> String {
    let mut all = vec!["summarize"];
    all.extend_from_slice(args);
    let (code, out) = lpa(&all, stdin);
    assert_eq!(code, 0, "{out}");
    out
}

#[test]
fn summarize_has_a_metrics_section() {
    let text = corpus("client-info-2.16.log") + &corpus("client-no-endpoints-2.16.prom");
    let doc: Value = serde_json::from_str(&summarize(&["--format", "json"], &text)).unwrap();
    let m = &doc["metrics"];
    assert_eq!(m["proxies"][0]["pod"], "web-6d8f7c9b5-4hx2q");
    let left = m["proxies"][0]["certificate_expires_in"].as_f64().unwrap();
    assert!((left / 3600.0 - 17.5).abs() < 0.1, "{left}");
    assert_eq!(m["proxies"][0]["open_fds"], 39.0);
    // 2.16 counts each shed request twice, in the unlabelled
    // outbound_http_errors_total and in the route statuses by Service: one
    // row, each kind once.
    let auth = m["authorities"].as_array().unwrap();
    assert_eq!(auth.len(), 1, "{auth:?}");
    assert_eq!(auth[0]["authority"], "payments.shop.svc.cluster.local:8080");
    assert_eq!(auth[0]["failfast"], 6.0);
    assert_eq!(auth[0]["loadshed"], 1410.0);
    assert_eq!(
        m["error_kinds"],
        serde_json::json!([["outbound loadshed", 1410.0], ["outbound failfast", 6.0]])
    );
    // Balancers without a ready endpoint come first.
    assert_eq!(
        m["balancers"][0]["balancer"],
        "payments.shop.svc.cluster.local:8080"
    );
    assert_eq!(m["balancers"][0]["ready"], 0.0);
    assert!(m["balancers"][1]["ready"].as_f64().unwrap() > 0.0);
    // The log's own tables do not take the samples' labels.
    assert!(doc["tls"].as_object().unwrap().is_empty(), "{}", doc["tls"]);
    let human = summarize(&["--color", "never"], &text);
    let section = &human[human
        .find("Metrics (latest snapshot of each proxy)")
        .expect(&human)..];
    assert!(
        section.contains("error kinds: outbound loadshed 1410, outbound failfast 6"),
        "{section}"
    );
    let md = summarize(&["--format", "markdown"], &text);
    assert!(
        md.contains("| `payments.shop.svc.cluster.local:8080` | 6 | 1410 | 0 | 0 |"),
        "{md}"
    );
    // Logs alone have no metrics section.
    let logs: Value = serde_json::from_str(&summarize(
        &["--format", "json"],
        &corpus("client-info-2.16.log"),
    ))
    .unwrap();
    assert!(logs.get("metrics").is_none(), "{}", logs["metrics"]);
}

#[test]
fn summarize_counts_endpoints_that_never_connected() {
    let doc: Value = serde_json::from_str(&summarize(
        &["--format", "json"],
        &corpus("gateway-connect-timeout-2.10.prom"),
    ))
    .unwrap();
    let auth = &doc["metrics"]["authorities"][0];
    assert_eq!(
        auth["authority"],
        "metric-proxy.prometheus.svc.cluster.local:80"
    );
    assert_eq!(auth["endpoints_never_connected"], 3);
}

/// With INFO logs only, a fail-fast finding asks for the families that
/// tell no endpoints from unreachable ones, of the proxy that logged it.
#[test]
fn fail_fast_asks_for_the_proxy_metrics_that_decide() {
    let (code, out) = lpa(
        &[
            "explain",
            "--format",
            "json",
            "-n",
            "shop",
            "--workload",
            "deploy/web",
        ],
        &corpus("client-info-2.16.log"),
    );
    assert_eq!(code, 0, "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let f = &doc["findings"][0];
    assert_eq!(f["id"], "discovery.no-endpoints");
    let cmds: Vec<&str> = f["next_commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["command"].as_str().unwrap())
        .collect();
    assert!(
        cmds.contains(&"linkerd diagnostics proxy-metrics -n shop deploy/web | grep -E 'tcp_open_total|balancer.*endpoints'"),
        "{cmds:?}"
    );
}

#[test]
fn a_cluster_ip_and_its_service_name_make_one_no_endpoints_finding() {
    // The log names the destination by its ClusterIP on the fail-fast
    // lines and beside its Service's name on one line; the metrics name
    // the Service: one destination, one finding.
    let input = corpus("client-info-2.16.log") + &corpus("client-no-endpoints-2.16.prom");
    let doc = explain(&input);
    let found: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "discovery.no-endpoints")
        .collect();
    assert_eq!(found.len(), 1, "{found:#?}");
    let dsts = found[0]["subjects"]["dst"].to_string();
    assert!(
        dsts.contains("payments.shop.svc.cluster.local:8080"),
        "{dsts}"
    );
}
