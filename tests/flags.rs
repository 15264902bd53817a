//! The flags operators reach for (`-o`, `--min-severity`, `--suppress`,
//! `--since`/`--until`), and what every shipped log's output promises: no
//! `<…>` placeholder in a command, no evidence line that lost its message.

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod common;
const TIMEOUT_LOG: &str = "corpus/scenarios/connect-timeout-netpol-2.10.log";

fn path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn lpa(args: &[&str]) -> (i32, String) {
    common::code_and_stdout(args, "")
}

fn json(args: &[&str]) -> Value {
    let (_, out) = lpa(args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}\n{out}"))
}

fn ids(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

fn timeout_log() -> String {
    path(TIMEOUT_LOG).display().to_string()
}

#[test]
fn short_o_is_format() {
    let log = timeout_log();
    let v = json(&["explain", "-o", "json", &log]);
    assert_eq!(v["lpa_version"], env!("CARGO_PKG_VERSION"));
    let f = &v["findings"][0];
    assert!(f["first_uptime"].as_f64().unwrap() <= f["last_uptime"].as_f64().unwrap());
    let (_, md) = lpa(&["explain", "-o", "markdown", &log]);
    assert!(md.starts_with("## lpa findings"), "{md}");
    let (_, s) = lpa(&["summarize", "-o", "json", &log]);
    assert!(serde_json::from_str::<Value>(&s).is_ok(), "{s}");
}

#[test]
fn min_severity_hides_what_is_below_and_says_so() {
    let log = timeout_log();
    let all = ids(&json(&["explain", "-o", "json", &log]));
    assert!(
        all.contains(&"identity.plaintext-to-mtls-port".to_string()),
        "{all:?}"
    );
    let v = json(&["explain", "-o", "json", "--min-severity", "critical", &log]);
    assert_eq!(ids(&v), vec!["connect.timeout"]);
    let notes = v["notes"].to_string();
    assert!(notes.contains("1 finding hidden"), "{notes}");
}

#[test]
fn suppress_takes_an_id_or_an_id_and_a_subject() {
    let log = timeout_log();
    let v = json(&[
        "explain",
        "-o",
        "json",
        "--suppress",
        "connect.timeout",
        &log,
    ]);
    assert!(!ids(&v).contains(&"connect.timeout".to_string()));
    // Another subject's value leaves the finding in place; its own hides it.
    let v = json(&[
        "explain",
        "-o",
        "json",
        "--suppress",
        "connect.timeout=10.9.9.9:1",
        &log,
    ]);
    assert!(ids(&v).contains(&"connect.timeout".to_string()));
    let v = json(&[
        "explain",
        "-o",
        "json",
        "--suppress",
        "connect.timeout=10.42.7.15:8080",
        &log,
    ]);
    assert!(!ids(&v).contains(&"connect.timeout".to_string()));
    // The service's name, with or without its namespace, names the
    // destination; another service's does not.
    for short in [
        "orders-api",
        "orders-api.shop",
        "orders-api.shop.svc.cluster.local:8080",
    ] {
        let v = json(&[
            "explain",
            "-o",
            "json",
            "--suppress",
            &format!("connect.timeout={short}"),
            &log,
        ]);
        assert!(!ids(&v).contains(&"connect.timeout".to_string()), "{short}");
    }
    for other in ["orders", "shop", "api", "10.42.7"] {
        let v = json(&[
            "explain",
            "-o",
            "json",
            "--suppress",
            &format!("connect.timeout={other}"),
            &log,
        ]);
        assert!(ids(&v).contains(&"connect.timeout".to_string()), "{other}");
    }
    // A client's IP without a port names it too.
    let v = json(&[
        "explain",
        "-o",
        "json",
        "--suppress",
        "connect.timeout=10.42.7.15",
        &log,
    ]);
    assert!(!ids(&v).contains(&"connect.timeout".to_string()));
    // A pod's workload, with or without its kind, names the pod.
    let prefixed = path("corpus/scenarios/policy-unauthorized-edge-prefix.log")
        .display()
        .to_string();
    for w in ["invoices", "deploy/invoices", "invoices-http"] {
        let v = json(&[
            "explain",
            "-o",
            "json",
            "--suppress",
            &format!("policy.unauthorized={w}"),
            &prefixed,
        ]);
        assert!(!ids(&v).contains(&"policy.unauthorized".to_string()), "{w}");
    }
    let v = json(&[
        "explain",
        "-o",
        "json",
        "--suppress",
        "policy.unauthorized=billing",
        &prefixed,
    ]);
    assert!(ids(&v).contains(&"policy.unauthorized".to_string()));
    // A suppressed critical finding no longer fails the run.
    let (code, _) = lpa(&[
        "explain",
        "-q",
        "--fail-on",
        "critical",
        "--suppress",
        "connect.timeout",
        &log,
    ]);
    assert_eq!(code, 0);
    let (code, _) = lpa(&["explain", "--suppress", "no.such-id", &log]);
    assert_eq!(code, 2);
}

#[test]
fn since_and_until_read_a_window_of_uptime() {
    let log = timeout_log();
    // The timeouts start at 86403.5s of uptime: a window before them has
    // none, one after the start has them.
    let before = json(&["explain", "-o", "json", "--until", "86403s", &log]);
    assert!(
        !ids(&before).contains(&"connect.timeout".to_string()),
        "{before}"
    );
    assert!(before["notes"]
        .to_string()
        .contains("outside --since/--until"));
    let after = json(&["explain", "-o", "json", "--since", "86403s", &log]);
    assert!(ids(&after).contains(&"connect.timeout".to_string()));
    // The log has no wall clock: an RFC 3339 bound places no line.
    let wall = json(&[
        "explain",
        "-o",
        "json",
        "--since",
        "2024-05-01T10:00:00Z",
        &log,
    ]);
    assert!(wall["findings"].as_array().unwrap().is_empty());
    let (code, _) = lpa(&["explain", "--since", "yesterday", &log]);
    assert_eq!(code, 2);
}

fn logs(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(path(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no *.{ext} in {dir}");
    v
}

fn assert_no_placeholder(name: &str, findings: &Value) {
    let hole = regex::Regex::new(r"<[^<>\s]+>").unwrap();
    for f in findings.as_array().unwrap() {
        for c in f["next_commands"].as_array().unwrap() {
            let cmd = c["command"].as_str().unwrap();
            assert!(!hole.is_match(cmd), "{name}: placeholder in `{cmd}`");
        }
    }
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_shipped_log_gives_pasteable_commands_and_evidence_with_its_message() {
    let mut checked = 0;
    for log in logs("corpus/scenarios", "log") {
        let name = log.display().to_string();
        let v = json(&["explain", "-o", "json", &name]);
        assert_no_placeholder(&name, &v["findings"]);
        // Messages by line, as lpa parse reads them.
        let (_, parsed) = lpa(&["parse", &name]);
        let messages: HashMap<u64, String> = parsed
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|r| Some((r["line"].as_u64()?, r["message"].as_str()?.to_string())))
            .collect();
        let (_, human) = lpa(&["explain", &name]);
        let human = squash(&human);
        for f in v["findings"].as_array().unwrap() {
            for e in f["evidence"].as_array().unwrap() {
                let Some(m) = messages.get(&e["line"].as_u64().unwrap()) else {
                    continue;
                };
                let m = squash(m);
                if m.is_empty() || m.chars().any(char::is_control) {
                    continue;
                }
                // logrus text quotes its msg: the line shows `\"` for `"`.
                let quoted = m.replace('"', "\\\"");
                assert!(
                    human.contains(&m) || human.contains(&quoted),
                    "{name}: evidence line {} lost its message {m:?}",
                    e["line"]
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "only {checked} evidence messages checked");
    for ticket in logs("corpus/tickets", "txt") {
        let name = ticket.display().to_string();
        let v = json(&["triage", "-o", "json", &name]);
        assert_no_placeholder(&name, &v["findings"]);
    }
}
