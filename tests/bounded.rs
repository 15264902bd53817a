//! Work per line is bounded, through the binary: lines past `--max-line`
//! are read cut and counted, deep JSON is kept as text without recursion,
//! a lone CR ends a line, and a line of gigabytes costs linear time.

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

fn lpa(args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let (child, mut input) = common::piped(args);
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn long_lines_are_cut_counted_and_reported() {
    let mut log = String::from("[     1.000000s]  INFO ThreadId(01) linkerd2_proxy: first\n");
    let long = format!(
        "[     2.000000s]  WARN ThreadId(01) linkerd_app: {}",
        "x".repeat(5000)
    );
    log.push_str(&long);
    log.push('\n');
    log.push_str("[     3.000000s]  INFO ThreadId(01) linkerd2_proxy: third\n");
    let (code, out, err) = lpa(&["parse", "--max-line", "1K"], log.as_bytes());
    assert_eq!(code, 0, "{err}");
    let recs = json_lines(&out);
    assert_eq!(recs.len(), 4, "{out}");
    assert_eq!(recs[1]["line"], 2);
    assert_eq!(recs[2]["kind"], "cut");
    assert_eq!(recs[2]["line"], 2);
    assert_eq!(recs[2]["dropped"], long.len() - 1024);
    assert_eq!(recs[3]["line"], 3);
    let (_, out, _) = lpa(
        &["summarize", "--max-line", "1K", "--format", "json"],
        log.as_bytes(),
    );
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["overview"]["cut_lines"], 1, "{out}");
    let (_, out, _) = lpa(&["explain", "--max-line", "1K"], log.as_bytes());
    assert!(
        out.contains("1 line longer than --max-line was read"),
        "{out}"
    );
    let (code, _, err) = lpa(&["parse", "--max-line", "0"], b"x\n");
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_lone_cr_ends_a_line() {
    let (code, out, _) = lpa(&["parse"], b"one\rtwo\r\nthree\rfour");
    assert_eq!(code, 0);
    let texts: Vec<String> = json_lines(&out)
        .iter()
        .map(|r| r["text"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(texts, ["one", "two", "three", "four"]);
}

#[test]
fn json_nested_100000_deep_is_kept_as_text() {
    let depth = 100_000;
    let mut line = String::from(
        r#"{"timestamp":"[     1.000000s]","level":"WARN","target":"linkerd_app","fields":{"message":"deep","x":"#,
    );
    line.push_str(&"{\"a\":".repeat(depth));
    line.push('1');
    line.push_str(&"}".repeat(depth));
    line.push_str("}}\n");
    for cmd in ["parse", "explain", "summarize"] {
        let started = Instant::now();
        let (code, out, err) = lpa(&[cmd], line.as_bytes());
        assert_eq!(code, 0, "{cmd}: {err}");
        assert!(!out.is_empty());
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{cmd} took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn a_line_of_zeros_costs_linear_time() {
    // 64 MiB without a line end: read at a fixed cost per byte, kept up
    // to --max-line.
    let zeros = vec![0u8; 64 << 20];
    for cmd in ["parse", "summarize", "explain"] {
        let started = Instant::now();
        let (code, out, err) = lpa(&[cmd, "--max-line", "1M"], &zeros);
        assert_eq!(code, 0, "{cmd}: {err}");
        assert!(!out.is_empty());
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{cmd} took {:?}",
            started.elapsed()
        );
    }
}
