//! Reading inputs: files, directories, gzip, stdin; splitting them into
//! newline-aligned blocks and the blocks into lines with memchr.
//!
//! Memory stays flat: input is read in bounded blocks, a few blocks (one per
//! thread) are tokenized in parallel, and only the per-block results
//! (accumulators, rendered output) outlive them.

pub mod ends;
pub mod idle;
mod twice;
pub mod wrap;

use anyhow::{bail, Context, Result};
use flate2::read::MultiGzDecoder;
use memchr::{memchr, memchr2, memrchr};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// One named input. A file is opened when it is first read and closed at
/// its end, so any number of inputs needs one descriptor at a time.
pub struct Source {
    /// The name evidence lines cite (`-` reads as `stdin`).
    pub name: String,
    /// Bytes to read, when known (plain files), for progress.
    pub size: Option<u64>,
    reader: Option<Box<dyn Read + Send>>,
    /// The file to open on the first read.
    path: Option<PathBuf>,
}

impl Source {
    pub fn from_reader(name: &str, reader: impl Read + Send + 'static) -> Source {
        Source {
            name: name.to_string(),
            size: None,
            reader: Some(Box::new(reader)),
            path: None,
        }
    }

    /// Reads everything that is left (`--anonymize` learns its mapping
    /// from the whole input before it renders).
    pub fn read_to_end(&mut self, buf: &mut Vec<u8>) -> Result<()> {
        let r = self.reader()?.read_to_end(buf);
        r.map_err(|e| anyhow::anyhow!("cannot read '{}': {e}", self.name))?;
        self.close();
        Ok(())
    }

    /// Reads up to `max` bytes, ending at a line end when there is one;
    /// what is left is read and counted, never kept. The bytes not kept.
    pub fn read_capped(&mut self, buf: &mut Vec<u8>, max: usize) -> Result<u64> {
        let name = self.name.clone();
        let fail = |e: io::Error| anyhow::anyhow!("cannot read '{name}': {e}");
        let r = self.reader()?;
        r.by_ref()
            .take(max as u64 + 1)
            .read_to_end(buf)
            .map_err(fail)?;
        if buf.len() <= max {
            self.close();
            return Ok(0);
        }
        let keep = memrchr(b'\n', &buf[..max]).map_or(max, |i| i + 1);
        let rest = io::copy(r, &mut io::sink()).map_err(fail)?;
        let dropped = (buf.len() - keep) as u64 + rest;
        buf.truncate(keep);
        self.close();
        Ok(dropped)
    }

    /// Opens the file now, with the error naming it; the size is known when
    /// it is not gzip.
    fn open_file(path: &Path) -> Result<Source> {
        let mut f = File::open(path).map_err(|e| describe(path, e))?;
        let len = f.metadata().ok().map(|m| m.len());
        let mut magic = [0u8; 2];
        let gz = f.read_exact(&mut magic).is_ok() && magic == GZIP_MAGIC;
        Ok(Source {
            name: path.display().to_string(),
            size: if gz { None } else { len },
            reader: None,
            path: Some(path.to_path_buf()),
        })
    }

    /// Standard input (`kubectl logs … | gzip | lpa` works too).
    pub fn stdin() -> Source {
        Source::from_reader("stdin", sniffed(idle::Watched(io::stdin())))
    }

    fn reader(&mut self) -> Result<&mut Box<dyn Read + Send>> {
        if self.reader.is_none() {
            self.reader = Some(match self.path.take() {
                Some(p) => Box::new(sniffed(File::open(&p).map_err(|e| describe(&p, e))?)),
                None => Box::new(io::empty()),
            });
        }
        Ok(self.reader.as_mut().expect("opened above"))
    }

    /// Read to the end: its descriptor is released for the next input.
    fn close(&mut self) {
        self.reader = Some(Box::new(io::empty()));
        self.path = None;
    }
}

static READ_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// An input broke off with a read error (a truncated `.gz`): reported on
/// stderr, and the run goes on with the other inputs.
pub fn read_failed() -> bool {
    READ_FAILED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Tells on stderr which input broke off, and after how much of it.
pub fn report_read_error(e: &anyhow::Error, lines: u64) {
    READ_FAILED.store(true, std::sync::atomic::Ordering::Relaxed);
    let (lines, were) = if lines == 1 {
        ("1 line".to_string(), "was")
    } else {
        (format!("{lines} lines"), "were")
    };
    eprintln!("lpa: {e:#}; {lines} of it {were} read and {were} reported, with the other inputs");
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// A reader that is gunzipped when it starts with gzip's magic bytes,
/// whatever its name.
fn sniffed(inner: impl Read + Send + 'static) -> Box<dyn Read + Send> {
    let mut r = BufReader::with_capacity(1 << 16, inner);
    // A read error here shows again, with the source's name, on the
    // first real read.
    let gz = r
        .fill_buf()
        .map(|b| b.starts_with(&GZIP_MAGIC))
        .unwrap_or(false);
    if gz {
        Box::new(MultiGzDecoder::new(r))
    } else {
        Box::new(r)
    }
}

fn describe(path: &Path, e: io::Error) -> anyhow::Error {
    let what = match e.kind() {
        io::ErrorKind::NotFound => "no such file".to_string(),
        io::ErrorKind::PermissionDenied => {
            "permission denied (check the file's mode or run as its owner)".to_string()
        }
        _ => e.to_string(),
    };
    anyhow::anyhow!("cannot read '{}': {what}", path.display())
}

/// Expands the command line's inputs: `-` (stdin), files, directories (their
/// `*.log` and `*.log.gz` files, sorted), and `*`/`?` globs the shell left
/// unexpanded. No input at all means stdin.
pub fn open_all(args: &[PathBuf]) -> Result<Vec<Source>> {
    if args.is_empty() {
        return Ok(vec![Source::stdin()]);
    }
    let mut out = Vec::new();
    for a in args {
        let s = a.to_string_lossy();
        if s == "-" {
            out.push(Source::stdin());
        } else if a.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(a)
                .map_err(|e| describe(a, e))?
                .filter_map(|d| d.ok().map(|d| d.path()))
                .filter(|p| {
                    let n = p.to_string_lossy();
                    p.is_file() && (n.ends_with(".log") || n.ends_with(".log.gz"))
                })
                .collect();
            if files.is_empty() {
                bail!(
                    "'{}' is a directory with no *.log or *.log.gz file; name the log files instead",
                    a.display()
                );
            }
            files.sort();
            for f in files {
                out.push(Source::open_file(&f)?);
            }
        } else if !a.exists() && (s.contains('*') || s.contains('?')) {
            let matched = glob(a)?;
            if matched.is_empty() {
                bail!("no file matches '{s}'");
            }
            for f in matched {
                out.push(Source::open_file(&f)?);
            }
        } else {
            out.push(Source::open_file(a)?);
        }
    }
    Ok(out)
}

/// `dir/*.log`-style patterns in the last path component.
fn glob(pattern: &Path) -> Result<Vec<PathBuf>> {
    let dir = pattern
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let pat = pattern
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rx = regex::Regex::new(&format!(
        "^{}$",
        regex::escape(&pat).replace("\\*", ".*").replace("\\?", ".")
    ))
    .context("bad glob")?;
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| describe(dir, e))?
        .filter_map(|d| d.ok())
        .filter(|d| rx.is_match(&d.file_name().to_string_lossy()))
        .map(|d| d.path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    Ok(v)
}

/// Iterates the lines of a block (without `\n`), numbering them.
pub fn lines(block: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= block.len() {
            return None;
        }
        let end = memchr(b'\n', &block[pos..]).map_or(block.len(), |i| pos + i);
        let line = &block[pos..end];
        pos = end + 1;
        Some(line)
    })
}

pub fn count_lines(block: &[u8]) -> u64 {
    let n = memchr::memchr_iter(b'\n', block).count() as u64;
    n + u64::from(!block.is_empty() && !block.ends_with(b"\n"))
}

/// Bytes of one line read by default; the rest of a longer line is skipped
/// (counted, never buffered), so a line costs bounded time and memory.
pub const DEFAULT_MAX_LINE: usize = 2 << 20;

/// A line longer than the maximum: its number and the bytes not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub line: u64,
    pub dropped: u64,
}

/// Lines a block takes before it is cut, whatever its bytes: what a
/// block's lines cost beside its bytes (where each ends, explain's key of
/// each line's connection) is then bounded, though a mebibyte of a
/// proxy's lines is some 3 000 of them and of empty lines a million.
const MAX_LINES: usize = 16384;

/// A source cut into blocks of whole lines of about `size` bytes, never
/// inside a multi-line record. Where a block ends depends on the input and
/// `size` alone, never on the thread count, so neither do results. A lone
/// CR ends a line like LF (old Mac files, progress output); CRLF stays one
/// line end.
pub struct Blocks<'s> {
    src: &'s mut Source,
    size: usize,
    max_line: usize,
    /// The lines read past the last cut, which start the next block.
    carry: Vec<u8>,
    line_no: u64,
    eof: bool,
    /// Bytes of the buffer checked for line ends.
    scanned: usize,
    /// Where the buffer's last (unfinished) line starts.
    line_start: usize,
    /// Lines cut so far, of this block and of the carry.
    pending_cuts: Vec<Cut>,
    /// The cuts in the block last returned.
    block_cuts: Vec<Cut>,
    /// Where each line of the buffer's scanned bytes ends (its `\n`), found
    /// as they are scanned; and those of the block last returned, so that
    /// no later pass looks for them again.
    scanned_ends: Vec<usize>,
    block_ends: Vec<usize>,
    /// Where the escape bytes scanned so far are (a coloured log's), and
    /// whether the block `next_into` returned last holds one.
    scanned_escapes: Vec<usize>,
    block_escapes: bool,
    /// The number of the line being scanned, and its bytes dropped so far.
    read_line: u64,
    dropped: u64,
    /// A read error, told after the block read before it.
    error: Option<anyhow::Error>,
    /// Blocks of what one read returned, for follow mode.
    live: bool,
}

impl<'s> Blocks<'s> {
    pub fn new(src: &'s mut Source, size: usize) -> Self {
        Blocks {
            src,
            size: size.max(1),
            max_line: DEFAULT_MAX_LINE,
            carry: Vec::new(),
            line_no: 1,
            eof: false,
            scanned: 0,
            line_start: 0,
            pending_cuts: Vec::new(),
            block_cuts: Vec::new(),
            scanned_ends: Vec::new(),
            block_ends: Vec::new(),
            scanned_escapes: Vec::new(),
            block_escapes: false,
            read_line: 1,
            dropped: 0,
            error: None,
            live: false,
        }
    }

    /// Follow mode: a block is the whole lines that one read brings, cut
    /// right after the last of them, so a line is matched as soon as it
    /// ends (the next block may continue its record) and a slow pipe is
    /// never waited on for a block's worth of bytes. The line cap and line
    /// ends are as in other modes.
    pub fn live(mut self) -> Self {
        self.live = true;
        self
    }

    /// Numbers the lines from `n`: a file followed on after a reader of it
    /// stopped.
    pub fn first_line(mut self, n: u64) -> Self {
        self.line_no = n;
        self.read_line = n;
        self
    }

    /// Reads at most `n` bytes of any line.
    pub fn max_line(mut self, n: usize) -> Self {
        self.max_line = n.max(1);
        self
    }

    /// The lines returned so far.
    pub fn lines_read(&self) -> u64 {
        self.line_no - 1
    }

    /// The lines cut in the block `next_into` returned last.
    pub fn cuts(&self) -> &[Cut] {
        &self.block_cuts
    }

    /// Where each line of the block `next_into` returned last ends: the
    /// offset of its `\n` (a last line without one ends at the block's end).
    pub fn ends(&self) -> &[usize] {
        &self.block_ends
    }

    /// Whether the block `next_into` returned last holds an escape byte.
    pub fn escapes(&self) -> bool {
        self.block_escapes
    }

    /// Fills `buf` with the next block and returns the number of its first
    /// line; `None` at the end.
    pub fn next_into(&mut self, buf: &mut Vec<u8>) -> Result<Option<u64>> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        buf.clear();
        buf.append(&mut self.carry);
        let (mut want, mut lines) = (self.size, MAX_LINES);
        // Lines before `checked` are known not to start a record.
        let mut checked = 0;
        let cut = loop {
            self.fill(buf, want)?;
            // The block ends by the line `lines` at the latest.
            let room = self
                .scanned_ends
                .get(lines - 1)
                .map_or(buf.len(), |e| e + 1);
            let capped = room < buf.len();
            // Where the last line in reach starts.
            let last = if capped { room } else { self.line_start };
            if self.eof {
                break room;
            }
            if self.live {
                break self.line_start;
            }
            match anchored_cut(&buf[..room], checked) {
                Some(cut) => break cut,
                // No line here starts a record, so one may still be running
                // (a panic's trace): reach on, up to a few blocks (reading
                // on only when no line already read is out of reach).
                None if lines < 4 * MAX_LINES && (capped || buf.len() < 4 * self.size) => {
                    checked = last;
                    lines += MAX_LINES;
                    if !capped {
                        want = buf.len() + self.size;
                    }
                }
                None if last == 0 => break buf.len(),
                None => break last,
            }
        };
        // The carry was scanned as it was read (but for an undecided CR).
        self.carry.extend_from_slice(&buf[cut..]);
        buf.truncate(cut);
        let k = self.scanned_ends.partition_point(|e| *e < cut);
        self.block_ends.clear();
        self.block_ends.extend(self.scanned_ends.drain(..k));
        for e in &mut self.scanned_ends {
            *e -= cut;
        }
        let k = self.scanned_escapes.partition_point(|e| *e < cut);
        self.block_escapes = k > 0;
        self.scanned_escapes.drain(..k);
        for e in &mut self.scanned_escapes {
            *e -= cut;
        }
        self.scanned = self.scanned.saturating_sub(cut);
        self.line_start = self.line_start.saturating_sub(cut);
        if buf.is_empty() {
            return Ok(None);
        }
        let first = self.line_no;
        self.line_no += (self.block_ends.len() + usize::from(!buf.ends_with(b"\n"))) as u64;
        let next = self.line_no;
        self.block_cuts.clear();
        self.block_cuts
            .extend(self.pending_cuts.iter().filter(|c| c.line < next).copied());
        self.pending_cuts.retain(|c| c.line >= next);
        Ok(Some(first))
    }

    /// Reads until `buf` holds `want` bytes and a line end, or the end.
    fn fill(&mut self, buf: &mut Vec<u8>, want: usize) -> Result<()> {
        while !self.eof && (buf.len() < want || self.line_start == 0) {
            let old = buf.len();
            // Up to `want`; past it, in steps, until a line ends.
            let limit = if old < want { want - old } else { 1 << 16 };
            self.eof = self.read(buf, limit)? == 0;
            self.scan(buf);
        }
        Ok(())
    }

    /// Appends up to `limit` bytes; the number read.
    fn read(&mut self, buf: &mut Vec<u8>, limit: usize) -> Result<usize> {
        loop {
            let r = if self.live {
                // One read: what a pipe has now, not `limit` bytes later.
                let old = buf.len();
                buf.resize(old + limit.max(1 << 16), 0);
                let r = self.src.reader()?.read(&mut buf[old..]);
                buf.truncate(old + *r.as_ref().unwrap_or(&0));
                r
            } else {
                // read_to_end on a bounded reader appends without zero-filling
                // (and, with the room made first, without growing the buffer
                // step by step).
                buf.reserve(limit.min(64 << 20));
                self.src.reader()?.take(limit as u64).read_to_end(buf)
            };
            match r {
                Ok(0) => {
                    self.src.close();
                    return Ok(0);
                }
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // What was read before it is returned as the last block;
                // the error comes on the next call.
                Err(e) => {
                    self.error = Some(anyhow::anyhow!("cannot read '{}': {e}", self.src.name));
                    self.src.close();
                    return Ok(0);
                }
            }
        }
    }

    /// Finds the line ends in what was read since the last scan (a lone CR
    /// becomes LF) and drops, in place, what any line holds past the
    /// maximum: one pass over each byte read, however long the lines.
    fn scan(&mut self, buf: &mut Vec<u8>) {
        if self.scan_plain(buf) {
            return;
        }
        let len = buf.len();
        let (mut r, mut w) = (self.scanned, self.scanned);
        let from = w;
        loop {
            let end = memchr2(b'\n', b'\r', &buf[r..]).map_or(len, |k| r + k);
            // A CR is a line end unless LF follows; at the end of what was
            // read, the next read decides.
            let pending_cr = end + 1 == len && buf[end] == b'\r' && !self.eof;
            let line_end =
                end < len && !pending_cr && (buf[end] == b'\n' || buf.get(end + 1) != Some(&b'\n'));
            let seg = if line_end || end == len || pending_cr {
                end
            } else {
                end + 1
            };
            let room = (self.line_start + self.max_line).saturating_sub(w);
            let keep = room.min(seg - r);
            buf.copy_within(r..r + keep, w);
            w += keep;
            self.dropped += (seg - r - keep) as u64;
            r = seg;
            if line_end {
                buf[w] = b'\n';
                self.scanned_ends.push(w);
                w += 1;
                r += 1;
                self.end_line();
                self.line_start = w;
            } else if r == len || pending_cr {
                break;
            }
        }
        if self.eof && self.dropped > 0 {
            self.end_line();
        }
        // An undecided CR stays unscanned, right after what was kept.
        buf.copy_within(r..len, w);
        buf.truncate(w + (len - r));
        self.scanned = w;
        self.note_escapes(buf, from, w);
    }

    fn note_escapes(&mut self, buf: &[u8], from: usize, to: usize) {
        let at = memchr::memchr_iter(0x1b, &buf[from..to]).map(|p| from + p);
        self.scanned_escapes.extend(at);
    }

    /// `scan` where nothing changes: no CR, and no line past the maximum.
    /// Then only the line count and where the last line starts move on, and
    /// the bytes need not be copied one line at a time. False (nothing
    /// done) otherwise.
    fn scan_plain(&mut self, buf: &[u8]) -> bool {
        let from = self.scanned;
        if self.dropped > 0 {
            return false;
        }
        let known = self.scanned_ends.len();
        let found = ends::push_newlines(&buf[from..], from, &mut self.scanned_ends);
        if found.cr {
            self.scanned_ends.truncate(known);
            return false;
        }
        let mut start = self.line_start;
        for &e in &self.scanned_ends[known..] {
            if e - start > self.max_line {
                break;
            }
            start = e + 1;
        }
        if buf.len() - start > self.max_line {
            self.scanned_ends.truncate(known);
            return false;
        }
        self.read_line += (self.scanned_ends.len() - known) as u64;
        self.line_start = start;
        self.scanned = buf.len();
        if found.esc {
            self.note_escapes(buf, from, buf.len());
        }
        true
    }

    /// The line being scanned ends: told as cut if bytes of it were dropped.
    fn end_line(&mut self) {
        if self.dropped > 0 {
            self.pending_cuts.push(Cut {
                line: self.read_line,
                dropped: std::mem::take(&mut self.dropped),
            });
        }
        self.read_line += 1;
    }
}

/// The start of the last whole line of `buf` that a record may start at
/// (`parse::is_block_anchor`), so no multi-line record is split across
/// blocks; `None` when no line but the first, or one before `floor`, is.
fn anchored_cut(buf: &[u8], floor: usize) -> Option<usize> {
    let mut end = memrchr(b'\n', buf)?;
    while end > 0 {
        let start = memrchr(b'\n', &buf[..end]).map_or(0, |i| i + 1);
        if start == 0 || start < floor {
            return None;
        }
        if crate::parse::is_block_anchor(&buf[start..end]) {
            return Some(start);
        }
        end = start - 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_keep_line_numbers_and_long_lines() {
        let mut data = Vec::new();
        for i in 0..1000 {
            data.extend_from_slice(format!("[ {i}.000000s]  INFO x: line {i}\n").as_bytes());
        }
        data.extend_from_slice(&vec![b'a'; 200_000]);
        data.extend_from_slice(b"\nlast");
        let mut src = Source::from_reader("t", io::Cursor::new(data.clone()));
        let mut blocks = Blocks::new(&mut src, 4096);
        let mut buf = Vec::new();
        let mut seen = 0u64;
        let mut longest = 0;
        while let Some(first) = blocks.next_into(&mut buf).unwrap() {
            assert_eq!(first, seen + 1);
            seen += count_lines(&buf);
            longest = longest.max(buf.len());
        }
        assert!(longest > 200_000);
        assert_eq!(seen, 1002);
    }

    /// Which blocks hold an escape byte is told block by block, whether
    /// the lines are read as they are or rewritten (CR line ends, lines
    /// cut), and wherever in a block, or a block's carry, the byte is.
    #[test]
    fn blocks_tell_which_of_them_hold_an_escape_byte() {
        for (end, max_line) in [
            ("\n", DEFAULT_MAX_LINE),
            ("\r\n", DEFAULT_MAX_LINE),
            ("\n", 28),
        ] {
            let mut data = String::new();
            for i in 0..3000 {
                let colour = if [5, 1700, 2999].contains(&i) {
                    "\x1b[31m"
                } else {
                    ""
                };
                data.push_str(&format!("[ {i}.000000s]  INFO x: {colour}line {i}{end}"));
            }
            let mut src = Source::from_reader("t", io::Cursor::new(data.into_bytes()));
            let mut blocks = Blocks::new(&mut src, 4096).max_line(max_line);
            let mut buf = Vec::new();
            let (mut with, mut without) = (0, 0);
            while blocks.next_into(&mut buf).unwrap().is_some() {
                let holds = buf.contains(&0x1b);
                assert_eq!(blocks.escapes(), holds, "{end:?} {max_line}");
                *if holds { &mut with } else { &mut without } += 1;
            }
            assert_eq!(with, 3, "{end:?} {max_line}");
            assert!(without > 10);
        }
    }
}
