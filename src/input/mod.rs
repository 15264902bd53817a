//! Reading inputs: files, directories, gzip, stdin; splitting them into
//! newline-aligned blocks and the blocks into lines with memchr.
//!
//! Memory stays flat: input is read in bounded blocks, a few blocks (one per
//! thread) are tokenized in parallel, and only the per-block results
//! (accumulators, rendered output) outlive them.

mod blocks;
pub mod ends;
pub mod idle;
mod map;
mod twice;
pub mod wrap;

pub use blocks::{Blocks, Cut, DEFAULT_MAX_LINE};
pub use map::Data;

use anyhow::{bail, Context, Result};
use flate2::read::MultiGzDecoder;
use map::Map;
use memchr::{memchr, memrchr};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// A plain (not gzip) regular file, which may be read in place.
    plain_file: bool,
}

impl Source {
    /// It is a plain file, which is mapped rather than read (unless
    /// `--no-mmap`, or the mapping fails).
    pub fn mappable(&self) -> bool {
        self.plain_file
    }

    pub fn from_reader(name: &str, reader: impl Read + Send + 'static) -> Source {
        Source {
            name: name.to_string(),
            size: None,
            reader: Some(Box::new(reader)),
            path: None,
            plain_file: false,
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
        let meta = f.metadata().ok();
        let mut magic = [0u8; 2];
        let gz = f.read_exact(&mut magic).is_ok() && magic == GZIP_MAGIC;
        Ok(Source {
            name: path.display().to_string(),
            size: meta.as_ref().filter(|_| !gz).map(|m| m.len()),
            reader: None,
            path: Some(path.to_path_buf()),
            plain_file: !gz && meta.is_some_and(|m| m.is_file()),
        })
    }

    /// The file mapped, to be read in place ([`map`]): a plain regular file
    /// not read from yet. `None` otherwise, and it is then read.
    fn map(&mut self) -> Option<Arc<Map>> {
        let path = self.path.as_ref().filter(|_| self.plain_file)?;
        let f = File::open(path).ok()?;
        let len = f.metadata().ok().filter(|m| m.is_file())?.len();
        // It may have become gzip since it was opened.
        let map = Map::of(&f, len).filter(|m| !m.bytes().starts_with(&GZIP_MAGIC))?;
        self.path = None;
        Some(map)
    }

    /// Reads on from `reader` (the rest of a mapped file).
    fn read_on(&mut self, reader: impl Read + Send + 'static) {
        self.reader = Some(Box::new(reader));
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
