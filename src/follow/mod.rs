//! `lpa explain --follow`: findings as they appear, from a pipe
//! (`kubectl logs -f … | lpa explain --follow`), a FIFO, or a growing file
//! that may be rotated. Lines are matched as soon as they end; new findings
//! and doubled counts are printed at most twice a second. At the end of the
//! input, or on SIGINT/SIGTERM, the final ranked report is printed.
//!
//! Memory stays bounded however long it runs and however fast the input:
//! the reader waits on a bounded channel, a line is read up to `--max-line`
//! like everywhere else, the engine's tables are capped and only a handful
//! of evidence lines are kept per finding.

mod file;

use crate::input::{self, Blocks, Cut, Data, Source};
use crate::pipeline::{process_block, Accumulator};
use crate::report::evidence::fit;
use crate::report::explain::Report;
use crate::report::text::clean;
use crate::rules::engine::{Engine, State};
use anyhow::Result;
use file::{file_name, is_fifo, Followed, Tail};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Changes are printed at most this often.
const TICK: Duration = Duration::from_millis(500);
/// On a signal, the input read so far is matched for at most this long
/// (a file to its current end; a pipe what it has sent).
const DRAIN: Duration = Duration::from_secs(3);

/// Where follow mode's running lines go.
pub enum Updates {
    Stdout,
    Stderr,
    Nowhere,
}

pub struct Follow {
    /// A file or FIFO; stdin when `None`.
    pub path: Option<PathBuf>,
    pub max_line: usize,
    pub updates: Updates,
    /// Rotation and truncation told on stderr (not with `--quiet`).
    pub notices: bool,
}

/// Whole lines as the reader read them, numbered, and the file they are in.
struct Piece {
    source: Arc<str>,
    data: Data,
    first_line: u64,
    cuts: Vec<Cut>,
}

/// Reads `src` in live blocks (see `Blocks::live`), its lines numbered
/// from `first`, and sends them to the matcher; the bounded channel makes
/// it wait when the matcher is behind. The number of the last line read,
/// or `None` when the matcher is gone or the input broke off.
fn reader(mut src: Source, first: u64, max_line: usize, tx: &SyncSender<Piece>) -> Option<u64> {
    let source: Arc<str> = src.name.as_str().into();
    let mut blocks = Blocks::new(&mut src, 1)
        .max_line(max_line)
        .first_line(first)
        .live();
    loop {
        match blocks.next(&mut Vec::new()) {
            Ok(Some((first_line, data))) => {
                let piece = Piece {
                    source: source.clone(),
                    data,
                    first_line,
                    cuts: blocks.cuts().to_vec(),
                };
                tx.send(piece).ok()?;
            }
            Ok(None) => return Some(blocks.lines_read()),
            Err(e) => {
                input::report_read_error(&e, blocks.lines_read() + 1 - first);
                return None;
            }
        }
    }
}

/// The followed file, shared between the reader of its current file and
/// the reader thread that starts the next one.
struct Shared(Arc<Mutex<Followed>>);

impl Read for Shared {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut f = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f.read(buf)
    }
}

/// Reads each file at the path in turn, each with its own line numbers;
/// a rotated file is read on by a thread of its own while it still grows.
fn follow_path(
    f: Followed,
    path: &Path,
    stop: &Arc<AtomicBool>,
    max_line: usize,
    tx: SyncSender<Piece>,
) {
    let f = Arc::new(Mutex::new(f));
    loop {
        let number = f.lock().unwrap_or_else(|e| e.into_inner()).number;
        let name = file_name(path, number);
        let src = Source::from_reader(&name, Shared(f.clone()));
        let Some(last) = reader(src, 1, max_line, &tx) else {
            return;
        };
        let mut f = f.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(old) = f.retired.take() {
            let (tx, stop) = (tx.clone(), stop.clone());
            let tail = move || {
                let src = Source::from_reader(&name, Tail::new(old, stop));
                reader(src, last + 1, max_line, &tx);
            };
            if let Err(e) = std::thread::Builder::new().spawn(tail) {
                eprintln!("lpa: cannot read on the rotated file: {e}");
            }
        }
        if !f.ended {
            return;
        }
        f.ended = false;
    }
}

/// One line per new finding, and one when a finding's count has doubled
/// since it was last told, so a busy stream adds a line per finding only
/// now and then; benign findings are told once, in one line. They go to
/// stdout for the human report, to stderr when stdout carries a JSON or
/// Markdown document.
fn print_changes(
    report: &Report,
    told: &mut HashMap<String, u64>,
    width: usize,
    out: &mut dyn Write,
) -> io::Result<()> {
    for f in &report.findings {
        let key = format!("{}\u{0}{}", f.id, f.title);
        let one_source = report.stats.sources.len() <= 1;
        let Some(&n) = told.get(&key) else {
            told.insert(key, f.count);
            let lines = crate::report::plural::count(f.count, "line", "lines");
            if f.benign {
                writeln!(out, "+ benign {}  {} ({lines})", f.id, clean(&f.title))?;
                continue;
            }
            let sev = f.severity.to_uppercase();
            writeln!(out, "+ {sev} {}  {} ({lines})", f.id, clean(&f.title))?;
            if let Some(e) = f.evidence.first() {
                // Cut as the final report cuts it: inside the span
                // stack only, so the message and error stay.
                let loc = if one_source {
                    e.line.to_string()
                } else {
                    format!("{}:{}", e.source, e.line)
                };
                let room = width.saturating_sub(4 + loc.chars().count() + 1);
                let line = match &e.parts {
                    Some(p) => fit(p, room),
                    None => e.text.lines().next().unwrap_or("").to_string(),
                };
                writeln!(out, "    {} {}", clean(&loc), clean(&line))?;
            }
            if let Some(c) = f.next_commands.first() {
                writeln!(out, "    $ {}", c.command)?;
            }
            continue;
        };
        if !f.benign && f.count >= 2 * n {
            let lines = crate::report::plural::count(f.count, "line", "lines");
            writeln!(out, "~ {} {}: {lines}", f.id, clean(&f.title))?;
            told.insert(key, f.count);
        }
    }
    out.flush()
}

/// Set on the first SIGINT or SIGTERM (`kubectl` and `timeout` send TERM);
/// a second one ends the process at once.
fn on_signal() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    // Only fails when a handler exists already; then a signal ends the
    // process without the final report.
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    stop
}

/// Follows the input until it ends or a signal; returns the final report.
pub fn run(opts: Follow, engine: &Engine) -> Result<Report> {
    let stop = on_signal();
    let name = opts
        .path
        .as_ref()
        .map_or("stdin".to_string(), |p| p.display().to_string());
    // A regular file is opened here, so lines written from now on are read
    // whatever happens to the path next; a FIFO by the reader, as opening
    // it waits for a writer.
    let mut file = None;
    if let Some(p) = &opts.path {
        let meta = std::fs::metadata(p)
            .map_err(|e| anyhow::anyhow!("cannot read '{}': {e}", p.display()))?;
        if meta.is_dir() {
            anyhow::bail!(
                "cannot follow '{}': it is a directory; name one log file",
                p.display()
            );
        }
        if !is_fifo(&meta) {
            let f =
                File::open(p).map_err(|e| anyhow::anyhow!("cannot read '{}': {e}", p.display()))?;
            file = Some(f);
        }
    }
    // Bounded: on a fast input the reader waits for the matcher instead of
    // queueing the input in memory.
    let (tx, rx) = mpsc::sync_channel::<Piece>(8);
    let (reader_stop, reader_name) = (stop.clone(), name.clone());
    let (path, max_line, notices) = (opts.path, opts.max_line, opts.notices);
    std::thread::Builder::new()
        .name("follow-reader".into())
        .spawn(move || {
            let Some(p) = path else {
                reader(Source::stdin(), 1, max_line, &tx);
                return;
            };
            let opened = match file {
                Some(f) => Ok(f),
                None => File::open(&p),
            };
            match opened.and_then(|f| Followed::new(p.clone(), f, reader_stop.clone(), notices)) {
                Ok(f) => follow_path(f, &p, &reader_stop, max_line, tx),
                Err(e) => {
                    let e = anyhow::anyhow!("cannot read '{reader_name}': {e}");
                    input::report_read_error(&e, 0)
                }
            }
        })
        .map_err(|e| anyhow::anyhow!("cannot start the reader thread: {e}"))?;
    let width = crate::report::style::width();
    let mut state: State<'_> = engine.whole_state();
    let mut last = Instant::now();
    let mut changed = false;
    let mut told = HashMap::new();
    let mut drain_until: Option<Instant> = None;
    loop {
        if drain_until.is_none() && stop.load(Ordering::SeqCst) {
            drain_until = Some(Instant::now() + DRAIN);
        }
        let ended = match rx.recv_timeout(TICK) {
            Ok(p) => {
                for c in &p.cuts {
                    state.cut(&p.source, *c);
                }
                state = process_block(&p.source, &p.data, p.first_line, state);
                changed = true;
                false
            }
            // Stopping, and nothing came for a while: the reader has sent
            // what it had (a pipe's reader may wait in a read for ever).
            Err(RecvTimeoutError::Timeout) => drain_until.is_some(),
            Err(RecvTimeoutError::Disconnected) => true,
        };
        let stopping = ended || drain_until.is_some_and(|t| Instant::now() >= t);
        if changed && (stopping || last.elapsed() >= TICK) {
            let snapshot = || state.clone().finish(None);
            match opts.updates {
                Updates::Stdout => {
                    print_changes(&snapshot(), &mut told, width, &mut io::stdout().lock())?
                }
                Updates::Stderr => {
                    print_changes(&snapshot(), &mut told, width, &mut io::stderr().lock())?
                }
                Updates::Nowhere => {}
            }
            changed = false;
            last = Instant::now();
        }
        if stopping {
            break;
        }
    }
    Ok(state.finish(None))
}
