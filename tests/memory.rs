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
