//! What every report of every shipped log promises about its text: counts
//! agree with their nouns (no `1 lines`, `Seen 1 times` or `1 findings` in
//! any format), and summary tables fit the terminal's width.

use lpa::report::explain;
use lpa::report::human::{self, Layout};
use lpa::report::style::Style;
use lpa::report::summary::{self, Summary, SummaryAcc};
use lpa::rules::engine::Engine;
use lpa::{input, pipeline, triage};
use std::path::Path;
use std::process::Command;

mod common;

use common::files;

use common::LPA;

fn lpa(args: &[&str], stdin: &str) -> String {
    let out = common::run(args, "80", stdin);
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// `1` followed (maybe after one word) by a plural noun.
fn bad_plural(text: &str) -> Option<String> {
    let rx = regex::Regex::new(
        r"(?:^|[^\d.,:/x-])1 (?:[A-Za-z`-]+ )?(lines|events|times|findings|rules|clients|endpoints|connections|requests|errors|warnings|inputs|destinations|IPs|seconds|cues|pods)\b",
    )
    .unwrap();
    rx.find(text).map(|m| m.as_str().to_string())
}

#[test]
fn the_detector_finds_what_it_is_for() {
    assert!(bad_plural("read 1 lines, 2 events").is_some());
    assert!(bad_plural("Seen 1 times.").is_some());
    assert!(bad_plural("(1 log lines)").is_some());
    assert!(bad_plural("read 1 line, 11 lines, 2.1 lines").is_none());
}

#[test]
fn one_of_anything_is_singular() {
    let one = "[     0.002178s]  INFO ThreadId(01) linkerd2_proxy: release 2.170.0 by linkerd\n";
    for args in [
        &["explain"][..],
        &["explain", "-o", "markdown"],
        &["triage"],
    ] {
        let out = lpa(args, one);
        assert!(
            out.contains("1 line, 1 event") || out.contains("1 log line (1 event)"),
            "{args:?}: {out}"
        );
        assert_eq!(bad_plural(&out), None, "{args:?}: {out}");
    }
    // One line past --max-line.
    let long = format!("{}\n", "x".repeat(5000));
    for args in [
        &["summarize", "--max-line", "1K"][..],
        &["explain", "--max-line", "1K"],
    ] {
        let out = lpa(args, &long);
        assert!(
            out.contains("1 line longer than --max-line was read"),
            "{args:?}: {out}"
        );
    }
}

fn summary_of(engine: &Engine, log: &Path) -> Summary {
    let mut total = Summary::default();
    let mut sources = input::open_all(&[log.to_path_buf()]).unwrap();
    pipeline::run(
        &mut sources,
        &pipeline::Options::default(),
        || SummaryAcc::new(engine),
        |_, acc| {
            total.merge(acc.into_summary());
            Ok(())
        },
    )
    .unwrap();
    total
}

/// Every report of one input, rendered in-process: one knowledge base for
/// the whole corpus (the binary would compile it again for each run).
fn reports(engine: &Engine, log: &Path) -> Vec<(&'static str, String)> {
    let st = Style { color: false };
    let opts = pipeline::Options::default();
    let mut sources = input::open_all(&[log.to_path_buf()]).unwrap();
    let r = lpa::cli::analyze(&mut sources, &opts, engine).unwrap();
    let lay = Layout {
        width: 80,
        verbose: false,
    };
    let total = summary_of(engine, log);
    vec![
        ("explain", human::human(&r, &st, &lay)),
        ("explain markdown", explain::markdown(&r)),
        ("summarize", summary::human(&total, 10, &st, 80)),
        ("summarize markdown", summary::markdown(&total, 10)),
    ]
}

#[test]
fn no_shipped_log_reads_one_lines() {
    let engine = Engine::new(lpa::rules::load(&[]).unwrap());
    let mut checked = 0;
    for log in files("corpus/scenarios", "log") {
        for (what, out) in reports(&engine, &log) {
            assert_eq!(bad_plural(&out), None, "{} {what}", log.display());
            checked += 1;
        }
    }
    for t in files("corpus/tickets", "txt") {
        let text = std::fs::read(&t).unwrap();
        let reply = triage::markdown(&triage::triage("ticket", &text, &engine));
        assert_eq!(bad_plural(&reply), None, "{}", t.display());
        checked += 1;
    }
    assert!(checked > 150, "only {checked} outputs checked");
}

fn too_wide(text: &str, width: usize) -> Option<&str> {
    text.lines().find(|l| l.chars().count() > width)
}

#[test]
fn summaries_fit_the_width_from_wide_to_narrow() {
    let engine = Engine::new(lpa::rules::load(&[]).unwrap());
    let st = Style { color: false };
    let mut logs = files("corpus/scenarios", "log");
    logs.extend(files("corpus/metrics", "prom"));
    let mut vertical = 0;
    for log in &logs {
        let s = summary_of(&engine, log);
        for width in [200, 80, 40] {
            let out = summary::human(&s, 10, &st, width);
            if let Some(l) = too_wide(&out, width) {
                panic!("{} at {width}: {l:?}\n{out}", log.display());
            }
            vertical += usize::from(out.contains("\ndestination "));
        }
    }
    // Some tables did not fit as grids, and were shown row by row.
    assert!(vertical > 0);
}

#[test]
fn summarize_takes_its_width_from_columns() {
    let log = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus/scenarios/connect-timeout-netpol-2.10.log");
    let log = log.display().to_string();
    for width in ["60", "120"] {
        let out = Command::new(LPA)
            .args(["summarize", &log])
            .env("COLUMNS", width)
            .output()
            .unwrap();
        let out = String::from_utf8(out.stdout).unwrap();
        let w: usize = width.parse().unwrap();
        assert_eq!(too_wide(&out, w), None, "{out}");
        // The widest table uses the room it has.
        assert!(
            out.lines().any(|l| l.chars().count() > w - 25),
            "{width}: {out}"
        );
    }
}
