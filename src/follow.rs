//! `lpa explain --follow`: findings as they appear, from a pipe
//! (`kubectl logs -f … | lpa explain --follow`) or a growing file that may be
//! rotated. Lines are gathered for at most a second, then matched; new
//! findings and changed counts are printed at once. At the end of the input
//! or on Ctrl-C the final ranked report is printed.
//!
//! Memory stays bounded however long it runs: the engine's tables are capped
//! and only a handful of evidence lines are kept per finding.

use crate::pipeline::process_block;
use crate::report::explain::Report;
use crate::report::text::clean;
use crate::rules::engine::{Engine, State};
use anyhow::Result;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a followed file is polled for growth and rotation.
const POLL: Duration = Duration::from_millis(250);
/// Bytes of a followed file read at a time.
const CHUNK: u64 = 1 << 20;
/// Lines are matched at least this often.
const TICK: Duration = Duration::from_millis(500);

/// Lines from stdin, or from a file followed across growth and rotation,
/// sent in batches to the matcher.
fn reader(path: Option<PathBuf>, tx: mpsc::SyncSender<Vec<u8>>) {
    let send = |buf: Vec<u8>| tx.send(buf).is_ok();
    match path {
        None => {
            let mut r = BufReader::new(io::stdin());
            loop {
                let mut line = Vec::new();
                match r.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if !send(line) {
                            return;
                        }
                    }
                }
            }
        }
        Some(p) => follow_file(&p, send),
    }
}

#[cfg(unix)]
fn file_id(m: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    m.ino()
}

#[cfg(not(unix))]
fn file_id(_: &std::fs::Metadata) -> u64 {
    0
}

fn follow_file(path: &Path, send: impl Fn(Vec<u8>) -> bool) {
    let mut pos = 0u64;
    let mut id = None;
    let mut partial = Vec::new();
    loop {
        let Ok(meta) = std::fs::metadata(path) else {
            std::thread::sleep(POLL);
            continue;
        };
        // A new file at the path (rotation) or a truncated one: start over.
        if id != Some(file_id(&meta)) || meta.len() < pos {
            id = Some(file_id(&meta));
            pos = 0;
            partial.clear();
        }
        let mut more = false;
        if meta.len() > pos {
            if let Ok(mut f) = File::open(path) {
                if f.seek(SeekFrom::Start(pos)).is_ok() {
                    let mut buf = Vec::new();
                    // In steps, so a large file is never held whole.
                    let step = (meta.len() - pos).min(CHUNK);
                    if let Ok(n) = f.take(step).read_to_end(&mut buf) {
                        pos += n as u64;
                        more = n > 0 && pos < meta.len();
                        partial.extend_from_slice(&buf);
                        if let Some(end) = partial.iter().rposition(|b| *b == b'\n') {
                            let rest = partial.split_off(end + 1);
                            if !send(std::mem::replace(&mut partial, rest)) {
                                return;
                            }
                        }
                    }
                }
            }
        }
        // Straight on while a file has more to read.
        if !more {
            std::thread::sleep(POLL);
        }
    }
}

/// One line per new finding or changed count. They go to stdout for the
/// human report, to stderr when stdout carries a JSON or Markdown document.
fn print_changes(
    report: &Report,
    seen: &mut HashMap<String, u64>,
    out: &mut dyn Write,
) -> io::Result<()> {
    for f in &report.findings {
        let key = format!("{}\u{0}{}", f.id, f.title);
        let sev = if f.benign {
            "benign".to_string()
        } else {
            f.severity.to_uppercase()
        };
        match seen.get(&key) {
            None => {
                writeln!(
                    out,
                    "+ {sev} {}  {} ({} lines)",
                    f.id,
                    clean(&f.title),
                    f.count
                )?;
                if let Some(e) = f.evidence.first() {
                    writeln!(
                        out,
                        "    {}:{} {}",
                        clean(&e.source),
                        e.line,
                        clean(&crate::report::explain::elide(&e.text, 160))
                    )?;
                }
                if let Some(c) = f.next_commands.first() {
                    writeln!(out, "    $ {}", c.command)?;
                }
            }
            Some(n) if *n != f.count => {
                writeln!(out, "~ {} {}: {} lines", f.id, clean(&f.title), f.count)?
            }
            Some(_) => {}
        }
        seen.insert(key, f.count);
    }
    out.flush()
}

/// Where follow mode's running lines go.
pub enum Updates {
    Stdout,
    Stderr,
    Nowhere,
}

/// Follows `path` (or stdin) until the input ends or Ctrl-C; returns the
/// final report.
pub fn run(path: Option<PathBuf>, engine: &Engine, updates: Updates) -> Result<Report> {
    // Bounded: on a fast input the reader waits for the matcher instead of
    // queueing the input in memory.
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(256);
    let name = path
        .as_ref()
        .map_or("stdin".to_string(), |p| p.display().to_string());
    if let Some(p) = &path {
        File::open(p).map_err(|e| anyhow::anyhow!("cannot read '{}': {e}", p.display()))?;
        if p.is_dir() {
            anyhow::bail!(
                "cannot follow '{}': it is a directory; name one log file",
                p.display()
            );
        }
    }
    std::thread::Builder::new()
        .name("follow-reader".into())
        .spawn(move || reader(path, tx))
        .map_err(|e| anyhow::anyhow!("cannot start the reader thread: {e}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // Only fails when a handler exists already; then Ctrl-C ends the process.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    let mut state: State<'_> = engine.whole_state();
    let mut batch: Vec<u8> = Vec::new();
    let mut next_line = 1u64;
    let mut last = Instant::now();
    let mut seen = HashMap::new();
    loop {
        let ended = match rx.recv_timeout(TICK) {
            Ok(lines) => {
                batch.extend_from_slice(&lines);
                false
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => true,
        };
        let stopping = ended || stop.load(Ordering::SeqCst);
        if !batch.is_empty() && (stopping || last.elapsed() >= TICK) {
            let n = crate::input::count_lines(&batch);
            state = process_block(&name, &batch, next_line, state);
            next_line += n;
            batch.clear();
            let snapshot = || state.clone().finish(None);
            match updates {
                Updates::Stdout => print_changes(&snapshot(), &mut seen, &mut io::stdout().lock())?,
                Updates::Stderr => print_changes(&snapshot(), &mut seen, &mut io::stderr().lock())?,
                Updates::Nowhere => {}
            }
            last = Instant::now();
        }
        if stopping {
            break;
        }
    }
    Ok(state.finish(None))
}
