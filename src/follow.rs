//! `lpa explain --follow`: findings as they appear, from a pipe
//! (`kubectl logs -f … | lpa explain --follow`), a FIFO, or a growing file
//! that may be rotated. Lines are matched as soon as they end; new findings
//! and changed counts are printed at most twice a second. At the end of the
//! input, or on SIGINT/SIGTERM, the final ranked report is printed.
//!
//! Memory stays bounded however long it runs and however fast the input:
//! the reader waits on a bounded channel, a line is read up to `--max-line`
//! like everywhere else, the engine's tables are capped and only a handful
//! of evidence lines are kept per finding.

use crate::input::{self, Blocks, Cut, Source};
use crate::pipeline::{process_block, Accumulator};
use crate::report::evidence::fit;
use crate::report::explain::Report;
use crate::report::text::clean;
use crate::rules::engine::{Engine, State};
use anyhow::Result;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a followed file that has no more to read is checked for
/// growth and rotation.
const POLL: Duration = Duration::from_millis(250);
/// Changes are printed at most this often.
const TICK: Duration = Duration::from_millis(500);
/// After a rotation the old file is still read for this long: its writer
/// may add lines before it reopens the path.
const GRACE: Duration = Duration::from_secs(2);
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

/// A followed file as one endless reader: at its end it waits for growth,
/// and it moves to the new file when the path is rotated (renamed or
/// deleted, then created again) or starts over when it is truncated
/// (copytruncate), so every line written is read once. A FIFO ends when
/// its writers close it, as a pipe does.
struct Followed {
    path: PathBuf,
    file: File,
    id: Option<(u64, u64)>,
    pos: u64,
    fifo: bool,
    /// The file the path named before a rotation, until it stays quiet.
    old: Option<(File, Instant)>,
    stop: Arc<AtomicBool>,
    notices: bool,
}

#[cfg(unix)]
fn file_id(m: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((m.dev(), m.ino()))
}

/// No inode to compare: rotation is seen as truncation only.
#[cfg(not(unix))]
fn file_id(_: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

#[cfg(unix)]
fn is_fifo(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    m.file_type().is_fifo()
}

#[cfg(not(unix))]
fn is_fifo(_: &std::fs::Metadata) -> bool {
    false
}

impl Followed {
    fn new(
        path: PathBuf,
        file: File,
        stop: Arc<AtomicBool>,
        notices: bool,
    ) -> io::Result<Followed> {
        let meta = file.metadata()?;
        Ok(Followed {
            path,
            id: file_id(&meta),
            fifo: is_fifo(&meta),
            file,
            pos: 0,
            old: None,
            stop,
            notices,
        })
    }

    fn notice(&self, what: &str) {
        if self.notices {
            eprintln!("lpa: {} {what}", clean(&self.path.display().to_string()));
        }
    }

    /// Checks the path once the file has no more to read: a new file
    /// there (rotation) is opened, a shorter one (truncation) read again
    /// from its start. True when there is something new to read.
    fn check_path(&mut self) -> io::Result<bool> {
        // Deleted and not yet created again: the old file may still grow.
        let Ok(meta) = std::fs::metadata(&self.path) else {
            return Ok(false);
        };
        if file_id(&meta) != self.id {
            let Ok(file) = File::open(&self.path) else {
                return Ok(false);
            };
            let old = std::mem::replace(&mut self.file, file);
            self.old = Some((old, Instant::now()));
            self.id = file_id(&meta);
            self.pos = 0;
            self.notice("was rotated: reading the new file from its start");
            return Ok(true);
        }
        if meta.len() < self.pos {
            self.file.seek(SeekFrom::Start(0))?;
            self.pos = 0;
            self.notice("was truncated: reading it again from its start");
            return Ok(true);
        }
        Ok(meta.len() > self.pos)
    }

    /// Lines the old file's writer added after the rotation.
    fn read_old(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some((f, since)) = &mut self.old else {
            return Ok(0);
        };
        let n = f.read(buf)?;
        if n > 0 {
            *since = Instant::now();
        } else if since.elapsed() > GRACE {
            self.old = None;
        }
        Ok(n)
    }
}

impl Read for Followed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.read_old(buf)?;
            if n > 0 {
                return Ok(n);
            }
            let n = self.file.read(buf)?;
            self.pos += n as u64;
            // A signal ends the input at the file's current end.
            if n > 0 || self.fifo || self.stop.load(Ordering::SeqCst) {
                return Ok(n);
            }
            // The old file is read to its end before the path is checked,
            // so nothing written to it before the rotation is lost.
            if !self.check_path()? {
                std::thread::sleep(POLL);
            }
        }
    }
}

/// Whole lines as the reader read them, numbered.
struct Piece {
    data: Vec<u8>,
    first_line: u64,
    cuts: Vec<Cut>,
}

/// Reads `src` in live blocks (see `Blocks::live`) and sends them to the
/// matcher; the bounded channel makes it wait when the matcher is behind.
fn reader(mut src: Source, max_line: usize, tx: mpsc::SyncSender<Piece>) {
    let mut blocks = Blocks::new(&mut src, 1).max_line(max_line).live();
    loop {
        let mut data = Vec::new();
        match blocks.next_into(&mut data) {
            Ok(Some(first_line)) => {
                let cuts = blocks.cuts().to_vec();
                let piece = Piece {
                    data,
                    first_line,
                    cuts,
                };
                if tx.send(piece).is_err() {
                    return;
                }
            }
            Ok(None) => return,
            Err(e) => {
                input::report_read_error(&e, blocks.lines_read());
                return;
            }
        }
    }
}

/// One line per new finding or changed count. They go to stdout for the
/// human report, to stderr when stdout carries a JSON or Markdown document.
fn print_changes(
    report: &Report,
    seen: &mut HashMap<String, u64>,
    width: usize,
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
                    // Cut as the final report cuts it: inside the span
                    // stack only, so the message and error stay.
                    let loc = format!("{}:{}", e.source, e.line);
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
                return reader(Source::stdin(), max_line, tx);
            };
            let opened = match file {
                Some(f) => Ok(f),
                None => File::open(&p),
            };
            match opened.and_then(|f| Followed::new(p, f, reader_stop, notices)) {
                Ok(f) => reader(Source::from_reader(&reader_name, f), max_line, tx),
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
    let mut seen = HashMap::new();
    let mut drain_until: Option<Instant> = None;
    loop {
        if drain_until.is_none() && stop.load(Ordering::SeqCst) {
            drain_until = Some(Instant::now() + DRAIN);
        }
        let ended = match rx.recv_timeout(TICK) {
            Ok(p) => {
                for c in &p.cuts {
                    state.cut(&name, *c);
                }
                state = process_block(&name, &p.data, p.first_line, state);
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
                    print_changes(&snapshot(), &mut seen, width, &mut io::stdout().lock())?
                }
                Updates::Stderr => {
                    print_changes(&snapshot(), &mut seen, width, &mut io::stderr().lock())?
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
