//! Reading inputs: files, directories, gzip, stdin; splitting them into
//! newline-aligned blocks and the blocks into lines with memchr.
//!
//! Memory stays flat: input is read in bounded blocks, a few blocks (one per
//! thread) are tokenized in parallel, and only the per-block results
//! (accumulators, rendered output) outlive them.

pub mod wrap;

use anyhow::{bail, Context, Result};
use flate2::read::MultiGzDecoder;
use memchr::{memchr, memchr_iter, memrchr};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// One named input.
pub struct Source {
    /// The name evidence lines cite (`-` reads as `stdin`).
    pub name: String,
    /// Bytes to read, when known (plain files), for progress.
    pub size: Option<u64>,
    reader: Box<dyn Read + Send>,
}

impl Source {
    pub fn from_reader(name: &str, reader: impl Read + Send + 'static) -> Source {
        Source {
            name: name.to_string(),
            size: None,
            reader: Box::new(reader),
        }
    }

    /// Reads everything that is left (tickets are read whole).
    pub fn read_to_end(&mut self, buf: &mut Vec<u8>) -> Result<()> {
        self.reader
            .read_to_end(buf)
            .map_err(|e| anyhow::anyhow!("cannot read '{}': {e}", self.name))?;
        Ok(())
    }

    fn open_file(path: &Path) -> Result<Source> {
        let f = File::open(path).map_err(|e| describe(path, e))?;
        let len = f.metadata().ok().map(|m| m.len());
        Ok(Source::sniffed(&path.display().to_string(), f, len))
    }

    /// Standard input (`kubectl logs … | gzip | lpa` works too).
    pub fn stdin() -> Source {
        Source::sniffed("stdin", io::stdin(), None)
    }

    /// A source that is gunzipped when it starts with gzip's magic bytes,
    /// whatever its name.
    fn sniffed(name: &str, inner: impl Read + Send + 'static, len: Option<u64>) -> Source {
        let mut r = BufReader::with_capacity(1 << 16, inner);
        // A read error here shows again, with the source's name, on the
        // first real read.
        let gz = r
            .fill_buf()
            .map(|b| b.starts_with(&[0x1f, 0x8b]))
            .unwrap_or(false);
        let reader: Box<dyn Read + Send> = if gz {
            Box::new(MultiGzDecoder::new(r))
        } else {
            Box::new(r)
        };
        Source {
            name: name.to_string(),
            size: if gz { None } else { len },
            reader,
        }
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
    let n = memchr_iter(b'\n', block).count() as u64;
    n + u64::from(!block.is_empty() && !block.ends_with(b"\n"))
}

/// A source cut into blocks of whole lines of about `size` bytes, never
/// inside a multi-line record. Where a block ends depends on the input and
/// `size` alone, never on the thread count, so neither do results.
pub struct Blocks<'s> {
    src: &'s mut Source,
    size: usize,
    /// The lines read past the last cut, which start the next block.
    carry: Vec<u8>,
    line_no: u64,
    eof: bool,
}

impl<'s> Blocks<'s> {
    pub fn new(src: &'s mut Source, size: usize) -> Self {
        Blocks {
            src,
            size: size.max(1),
            carry: Vec::new(),
            line_no: 1,
            eof: false,
        }
    }

    /// Fills `buf` with the next block and returns the number of its first
    /// line; `None` at the end. A line longer than `size` grows the block.
    pub fn next_into(&mut self, buf: &mut Vec<u8>) -> Result<Option<u64>> {
        buf.clear();
        buf.append(&mut self.carry);
        let mut want = self.size;
        // Lines before `checked` are known not to start a record.
        let mut checked = 0;
        let cut = loop {
            self.fill(buf, want)?;
            if self.eof {
                break buf.len();
            }
            match anchored_cut(buf, checked) {
                Some(cut) => break cut,
                // No line here starts a record, so one may still be running
                // (a panic's trace): read on, up to a few blocks.
                None if buf.len() < 4 * self.size => {
                    checked = memrchr(b'\n', buf).map_or(0, |i| i + 1);
                    want = buf.len() + self.size;
                }
                None => break memrchr(b'\n', buf).map_or(buf.len(), |i| i + 1),
            }
        };
        self.carry.extend_from_slice(&buf[cut..]);
        buf.truncate(cut);
        if buf.is_empty() {
            return Ok(None);
        }
        let first = self.line_no;
        self.line_no += count_lines(buf);
        Ok(Some(first))
    }

    /// Reads until `buf` holds `want` bytes and a newline, or the end.
    fn fill(&mut self, buf: &mut Vec<u8>, want: usize) -> Result<()> {
        while !self.eof && (buf.len() < want || memrchr(b'\n', buf).is_none()) {
            let old = buf.len();
            // Up to `want`; past it, in steps, until a line ends.
            let limit = if old < want { want - old } else { 1 << 16 };
            // read_to_end on a bounded reader appends without zero-filling.
            let n = loop {
                match (&mut self.src.reader).take(limit as u64).read_to_end(buf) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(anyhow::anyhow!("cannot read '{}': {e}", self.src.name)),
                }
            };
            self.eof = n == 0;
        }
        Ok(())
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
}
