//! Peak memory through the binary, on inputs whose output or tables would
//! grow with their size: each run's peak RSS (from wait4) stays under the
//! README's bound.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Peak RSS promised for any input (issue 15: 64 MiB).
const BOUND_KIB: i64 = 64 << 10;

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lpa-memory-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs lpa on `file` with stdout counted (not kept); its exit code, the
/// bytes it wrote, its stderr and its peak RSS in KiB.
// The child is reaped by wait4, which clippy does not see.
#[allow(clippy::zombie_processes)]
fn peak(args: &[&str], file: &Path) -> (i32, u64, String, i64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lpa"))
        .args(args)
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let counter =
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()).unwrap());
    let errs = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).unwrap();
        s
    });
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pid is our own child, not yet waited for.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (
        code,
        counter.join().unwrap(),
        errs.join().unwrap(),
        usage.ru_maxrss,
    )
}

fn write_lines(path: &Path, n: usize, mut line: impl FnMut(usize) -> String) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..n {
        f.write_all(line(i).as_bytes()).unwrap();
    }
    f.flush().unwrap();
}

#[test]
fn parse_of_a_million_empty_lines_streams_its_output() {
    // 1 MB of input is one block, whose JSON is 75 MB: it must leave in
    // chunks as it is rendered, not after.
    let dir = tmp("parse");
    let file = dir.join("empty.log");
    std::fs::write(&file, vec![b'\n'; 1_000_000]).unwrap();
    let (code, written, err, rss) = peak(&["parse"], &file);
    assert_eq!(code, 0, "{err}");
    assert!(written > 60_000_000, "{written} bytes");
    assert!(rss < BOUND_KIB, "parse peaked at {rss} KiB");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a block keeps for each of its lines (where it ends, the key of
/// its connection), and the lines of earlier blocks explain looks back
/// into, are bounded by lines as well as by bytes: 8 MiB of empty lines is
/// eight million of them (explain peaked at 167 MiB on 100 MB of them).
#[test]
fn explain_and_summarize_of_twelve_million_empty_lines_stay_small() {
    let dir = tmp("empty");
    let file = dir.join("empty.log");
    std::fs::write(&file, vec![b'\n'; 12_000_000]).unwrap();
    for cmd in ["explain", "summarize"] {
        let (code, _, err, rss) = peak(&[cmd, "--threads", "2"], &file);
        assert_eq!(code, 0, "{err}");
        assert!(rss < BOUND_KIB, "{cmd} peaked at {rss} KiB");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn run(args: &[&str], file: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lpa"))
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn summarize_caps_endpoints_within_a_destination_and_says_what_it_folded() {
    let dir = tmp("folded");
    let file = dir.join("dests.log");
    // 100 destinations × 500 endpoints, each failing to connect.
    write_lines(&file, 50_000, |i| {
        let (d, e) = (i % 100, i / 100);
        format!(
            "[{i:>8}.000000s]  WARN ThreadId(01) outbound:proxy{{addr=10.96.0.{d}:80}}:service{{ns=shop name=svc{d} port=80}}:endpoint{{addr=10.1.{}.{}:8080}}: linkerd_reconnect: Failed to connect error=connect timed out after 1s\n",
            e / 250,
            e % 250
        )
    });
    let (code, out, err) = run(&["summarize", "--format", "json"], &file);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let folded = &doc["overview"]["folded"];
    // 500 endpoints per destination, 64 kept: the rest of each is folded.
    assert_eq!(
        folded["destination_endpoints"],
        50_000 - 100 * 64,
        "{folded}"
    );
    for d in doc["destinations"].as_array().unwrap() {
        // 64 endpoints and the (other) row.
        assert_eq!(d["endpoints"].as_object().unwrap().len(), 65, "{d}");
        assert_eq!(d["endpoints"]["(other)"], 500 - 64, "{d}");
    }
    let (_, human, _) = run(&["summarize", "--no-pager"], &file);
    assert!(human.contains("folded:"), "{human}");
    let (code, _, err, rss) = peak(&["summarize"], &file);
    assert_eq!(code, 0, "{err}");
    assert!(rss < BOUND_KIB, "summarize peaked at {rss} KiB");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn triage_reads_16_mib_of_a_ticket_and_says_so() {
    let dir = tmp("triage");
    let file = dir.join("ticket.md");
    write_lines(&file, 300_000, |i| {
        format!("[{i:>8}.000000s]  WARN ThreadId(01) linkerd_app: filler line {i}\n")
    });
    let (code, out, err) = run(&["triage", "--format", "json"], &file);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("Only the first 16 MiB"), "{err}");
    assert!(
        out.contains("Only the first 16 MiB"),
        "the note is in the report too"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn metrics_of_pods_past_the_cap_are_named_as_not_read() {
    let dir = tmp("pods");
    let file = dir.join("pods.prom");
    let mut text = String::new();
    for p in 0..300 {
        text.push_str(&format!("# POD web-{p} ({} of 300)\n", p + 1));
        text.push_str("process_start_time_seconds 1622600000\n");
        text.push_str("request_errors_total{direction=\"outbound\",message=\"failfast\"} 1\n");
        text.push_str("# EOF\n");
    }
    std::fs::write(&file, text).unwrap();
    let (code, out, err) = run(&["explain", "--format", "json"], &file);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("44 metrics snapshots were not read"),
        "{notes}"
    );
    let (_, out, _) = run(&["summarize", "--no-pager"], &file);
    assert!(out.contains("44 metrics snapshots were not read"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn anonymize_learns_from_the_input_without_holding_it() {
    // 48 MB: read whole, as it was, the input and its text copy alone
    // would pass the bound.
    let dir = tmp("anonymize");
    let file = dir.join("proxy.log");
    write_lines(&file, 300_000, |i| {
        format!(
            "[{:>6}.000000s]  WARN ThreadId(01) outbound:proxy{{addr=10.96.0.{}:8080}}:service{{ns=shop name=cart-{} port=8080}}: linkerd_reconnect: Failed to connect error=connect timed out after 1s\n",
            i / 100,
            i % 200,
            i % 7
        )
    });
    let (code, written, err, rss) = peak(&["explain", "--anonymize"], &file);
    assert_eq!(code, 0, "{err}");
    assert!(written > 0, "{err}");
    assert!(rss < BOUND_KIB, "explain --anonymize peaked at {rss} KiB");
    let _ = std::fs::remove_dir_all(&dir);
}
