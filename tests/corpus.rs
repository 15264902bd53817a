//! The corpus: every scenario log and ticket is run through the built
//! binary and checked against its `.expect.toml` (the conclusion a Linkerd
//! engineer would reach) and against a golden projection of the full output
//! in tests/golden/ (regenerate with `LPA_BLESS=1 cargo test --test corpus`).

use serde::Deserialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Deserialize)]
struct Expect {
    top: String,
    #[serde(default)]
    present: Vec<String>,
    #[serde(default)]
    benign: Vec<String>,
    #[serde(default)]
    absent: Vec<String>,
    #[serde(default)]
    subjects: Vec<String>,
    #[serde(default)]
    era: String,
    /// Tickets only: the version the prose states, and what the reply asks for.
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    missing: Option<Vec<String>>,
    /// The files read together, beside the expectation (default: the log
    /// or ticket of the same name): logs and metrics snapshots.
    #[serde(default)]
    inputs: Vec<String>,
    /// Ids that must be findings of their own, not consequences.
    #[serde(default)]
    own: Vec<String>,
    /// Words a note of the report must hold (what lpa says the input is).
    #[serde(default)]
    note: Option<String>,
    /// Lines that must be listed as warnings or errors without a rule.
    #[serde(default)]
    unmatched: Option<u64>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_lpa"))
        .args(args)
        .output()
        .expect("run lpa");
    assert_eq!(
        out.status.code(),
        Some(0),
        "lpa {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

fn ids(findings: &[Value]) -> Vec<&str> {
    findings.iter().map(|f| f["id"].as_str().unwrap()).collect()
}

/// What the golden files pin: enough to catch any change of conclusion,
/// evidence or advice, without the long prose.
fn projection(doc: &Value) -> Value {
    let findings: Vec<Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            json!({
                "id": f["id"],
                "severity": f["severity"],
                "benign": f["benign"],
                "count": f["count"],
                "title": f["title"],
                "subjects": f["subjects"],
                "evidence_lines": f["evidence"].as_array().unwrap().iter().map(|e| e["line"].clone()).collect::<Vec<_>>(),
                "next_commands": f["next_commands"].as_array().unwrap().iter().map(|c| c["command"].clone()).collect::<Vec<_>>(),
                "consequences": f.get("consequences").map(|c| c.as_array().unwrap().iter().map(|c| json!([c["id"], c["count"]])).collect::<Vec<_>>()),
            })
        })
        .collect();
    let mut p = json!({ "findings": findings, "input": doc["input"], "era": doc["era"], "era_range": doc["era_range"] });
    for k in ["missing", "context"] {
        if let Some(v) = doc.get(k) {
            p[k] = if k == "missing" {
                json!(v
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m["id"].clone())
                    .collect::<Vec<_>>())
            } else {
                json!({ "version": v["version"], "components": v["components"] })
            };
        }
    }
    p
}

fn check_golden(kind: &str, name: &str, doc: &Value) -> Option<String> {
    let path = root()
        .join("tests/golden")
        .join(kind)
        .join(format!("{name}.json"));
    let got = serde_json::to_string_pretty(&projection(doc)).unwrap() + "\n";
    if std::env::var_os("LPA_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        return None;
    }
    match std::fs::read_to_string(&path) {
        Ok(want) if want == got => None,
        Ok(_) => Some(format!(
            "{name}: output differs from {} (LPA_BLESS=1 to accept)",
            path.display()
        )),
        Err(_) => Some(format!(
            "{name}: no golden file {} (LPA_BLESS=1 to create)",
            path.display()
        )),
    }
}

fn check(path: &Path, cmd: &str, kind: &str) -> Vec<String> {
    let name = path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .trim_end_matches(".expect.toml")
        .to_string();
    let e: Expect = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let ext = if kind == "tickets" { "txt" } else { "log" };
    let inputs = if e.inputs.is_empty() {
        vec![format!("{name}.{ext}")]
    } else {
        e.inputs.clone()
    };
    // Evidence cites the path as given: keep it relative for stable goldens.
    let rel: Vec<String> = inputs
        .iter()
        .map(|i| {
            path.with_file_name(i)
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    // Triage reads its ticket whole, on one thread: it takes no --threads.
    let mut args = vec![cmd, "--format", "json"];
    if cmd != "triage" {
        args.extend(["--threads", "1"]);
    }
    args.extend(rel.iter().map(String::as_str));
    let doc = run(&args);
    let f = doc["findings"].as_array().unwrap();
    let top_ids = ids(f);
    let mut all = top_ids.clone();
    for x in f {
        if let Some(c) = x["consequences"].as_array() {
            all.extend(c.iter().map(|c| c["id"].as_str().unwrap()));
        }
    }
    let mut errs = Vec::new();
    let loud: Vec<&str> = f
        .iter()
        .filter(|x| matches!(x["severity"].as_str(), Some("warning" | "critical")))
        .map(|x| x["id"].as_str().unwrap())
        .collect();
    if e.top == "none" {
        if !loud.is_empty() {
            errs.push(format!(
                "{name}: healthy log has warning/critical findings {loud:?}"
            ));
        }
    } else if top_ids.first() != Some(&e.top.as_str()) {
        errs.push(format!(
            "{name}: first finding {:?}, want {}",
            top_ids.first(),
            e.top
        ));
    }
    for p in &e.present {
        if !all.contains(&p.as_str()) {
            errs.push(format!("{name}: {p} not reported"));
        }
    }
    for a in &e.absent {
        if top_ids.contains(&a.as_str()) {
            errs.push(format!("{name}: {a} reported as a finding of its own"));
        }
    }
    for b in &e.benign {
        if !f
            .iter()
            .any(|x| x["id"] == b.as_str() && x["benign"] == true)
        {
            errs.push(format!("{name}: {b} not reported as benign"));
        }
    }
    if let (Some(first), false) = (f.first(), e.top == "none") {
        let text = first.to_string();
        for s in &e.subjects {
            if !text.contains(s.as_str()) {
                errs.push(format!("{name}: first finding does not name {s}"));
            }
        }
    }
    if !e.era.is_empty() && e.version.is_none() {
        // The wording bounds the era; the log's real era must lie within.
        const ORDER: [&str; 4] = ["2.7-2.9", "2.10-2.11", "2.12-2.14", "2.15+"];
        let pos = |v: &Value| v.as_str().and_then(|x| ORDER.iter().position(|o| *o == x));
        let want = ORDER.iter().position(|o| *o == e.era).expect("known era");
        let r = &doc["era_range"];
        let (lo, hi) = (pos(&r["min"]), pos(&r["max"]));
        if lo.is_some_and(|lo| want < lo) || hi.is_some_and(|hi| want > hi) {
            errs.push(format!("{name}: era range {r}, want {}", e.era));
        }
    }
    if let Some(v) = &e.version {
        let got = doc["context"]["version"].as_str().unwrap_or("");
        if !v.is_empty() && !got.ends_with(v.trim_start_matches("stable-")) {
            errs.push(format!("{name}: version {got:?}, want {v}"));
        }
    }
    if let Some(m) = &e.missing {
        let got: Vec<&str> = doc["missing"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["id"].as_str().unwrap())
            .collect();
        for want in m {
            if !got.contains(&want.as_str()) {
                errs.push(format!(
                    "{name}: reply does not ask for {want} (asks for {got:?})"
                ));
            }
        }
    }
    for o in &e.own {
        if !top_ids.contains(&o.as_str()) {
            errs.push(format!("{name}: {o} is not a finding of its own"));
        }
    }
    // Several logs are several proxies: a cause never explains lines of
    // another file. (A metrics snapshot beside a log is the same proxy's.)
    let file = |s: &str| s.split(' ').next().unwrap_or("").to_string();
    for x in f.iter().filter(|_| kind == "scenarios") {
        let mine: Vec<String> = x["sources"].as_array().map_or(vec![], |v| {
            v.iter().map(|s| file(s.as_str().unwrap_or(""))).collect()
        });
        for c in x["consequences"].as_array().into_iter().flatten() {
            for ev in c["evidence"].as_array().into_iter().flatten() {
                let src = file(ev["source"].as_str().unwrap_or(""));
                if !mine.contains(&src) {
                    errs.push(format!(
                        "{name}: {} explains {} from {src}, another input",
                        x["id"], c["id"]
                    ));
                }
            }
        }
    }
    if let Some(want) = &e.note {
        let notes = doc["notes"].to_string();
        if !notes.contains(want.as_str()) {
            errs.push(format!("{name}: no note says {want:?} (notes: {notes})"));
        }
    }
    if let Some(want) = e.unmatched {
        let got: u64 = doc["unmatched"].as_array().map_or(0, |u| {
            u.iter().map(|x| x["count"].as_u64().unwrap_or(0)).sum()
        });
        if got != want {
            errs.push(format!(
                "{name}: {got} unmatched warning/error lines, want {want}"
            ));
        }
    }
    errs.extend(check_golden(kind, &name, &doc));
    errs
}

fn run_dir(kind: &str, cmd: &str) {
    let dir = root().join("corpus").join(kind);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|d| d.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".expect.toml"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 5, "corpus/{kind} holds too few cases");
    let errs: Vec<String> = paths.iter().flat_map(|p| check(p, cmd, kind)).collect();
    assert!(
        errs.is_empty(),
        "{} problems:\n{}",
        errs.len(),
        errs.join("\n")
    );
}

#[test]
fn scenarios_reach_their_expected_conclusions() {
    run_dir("scenarios", "explain");
}

/// Metrics snapshots alone, and beside INFO-level logs of the same proxy.
#[test]
fn metrics_reach_their_expected_conclusions() {
    run_dir("metrics", "explain");
}

#[test]
fn tickets_reach_their_expected_conclusions() {
    run_dir("tickets", "triage");
}

#[test]
fn every_diagnosis_id_has_a_scenario_whose_first_finding_it_is() {
    let dir = root().join("corpus/scenarios");
    let tops: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|d| d.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".expect.toml"))
        .map(|p| {
            toml::from_str::<Expect>(&std::fs::read_to_string(p).unwrap())
                .unwrap()
                .top
        })
        .collect();
    for id in lpa::rules::IDS {
        assert!(tops.iter().any(|t| t == id), "no scenario shows {id} first");
    }
    assert!(
        tops.iter().filter(|t| *t == "none").count() >= 3,
        "too few healthy logs"
    );
}
