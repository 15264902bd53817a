//! Reading inputs: files, directories, gzip, stdin; splitting them into
//! newline-aligned blocks and the blocks into lines with memchr.
//!
//! Memory stays flat: input is read in bounded blocks, each block is cut into
//! chunks that are tokenized in parallel, and only the per-chunk results
//! (accumulators, rendered output) outlive the block.

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
        let mut r = BufReader::with_capacity(1 << 16, f);
        let gz = r
            .fill_buf()
            .map(|b| b.starts_with(&[0x1f, 0x8b]))
            .unwrap_or(false);
        let reader: Box<dyn Read + Send> = if gz {
            Box::new(MultiGzDecoder::new(r))
        } else {
            Box::new(r)
        };
        Ok(Source {
            name: path.display().to_string(),
            size: if gz { None } else { len },
            reader,
        })
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
        return Ok(vec![Source::from_reader("stdin", io::stdin())]);
    }
    let mut out = Vec::new();
    for a in args {
        let s = a.to_string_lossy();
        if s == "-" {
            out.push(Source::from_reader("stdin", io::stdin()));
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

/// Cuts `block` (whole lines) into about `n` pieces at lines where a chunk
/// may start, returning the pieces with their first line numbers.
pub fn split_chunks(block: &[u8], first_line: u64, n: usize) -> Vec<(&[u8], u64)> {
    let target = (block.len() / n.max(1)).max(1 << 16);
    let mut out = Vec::new();
    let mut start = 0;
    let mut line_no = first_line;
    while start < block.len() {
        let mut cut = block.len();
        if block.len() - start > target + target / 2 {
            // Move forward from the nominal cut to a line that anchors a chunk.
            let mut p = start + target;
            p = memchr(b'\n', &block[p..]).map_or(block.len(), |i| p + i + 1);
            let limit = (p + (1 << 20)).min(block.len());
            while p < limit {
                let end = memchr(b'\n', &block[p..]).map_or(block.len(), |i| p + i);
                if crate::parse::is_chunk_anchor(&block[p..end]) {
                    cut = p;
                    break;
                }
                p = end + 1;
            }
        }
        let piece = &block[start..cut];
        out.push((piece, line_no));
        line_no += count_lines(piece);
        start = cut;
    }
    out
}

/// Reads `src` in blocks of whole lines of about `block_size` bytes, calling
/// `f(block, first_line_number)`. A line longer than the block grows it.
pub fn for_each_block(
    src: &mut Source,
    block_size: usize,
    mut f: impl FnMut(&[u8], u64) -> Result<()>,
) -> Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(block_size);
    let mut line_no = 1u64;
    let mut eof = false;
    while !eof {
        // Fill up to block_size (or more, while no newline has been seen).
        while buf.len() < block_size || (memrchr(b'\n', &buf).is_none() && !buf.is_empty()) {
            let old = buf.len();
            let want = block_size.max(old + (1 << 16));
            // read_to_end on a bounded reader appends without zero-filling.
            let n = loop {
                match (&mut src.reader)
                    .take((want - old) as u64)
                    .read_to_end(&mut buf)
                {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(anyhow::anyhow!("cannot read '{}': {e}", src.name)),
                }
            };
            if n == 0 {
                eof = true;
                break;
            }
        }
        let cut = if eof { buf.len() } else { anchored_cut(&buf) };
        if cut > 0 {
            f(&buf[..cut], line_no)?;
            line_no += count_lines(&buf[..cut]);
        }
        buf.drain(..cut);
    }
    Ok(())
}

/// The end of the last whole line, moved back to the start of a line that
/// anchors a record, so a multi-line record is never split across blocks.
fn anchored_cut(buf: &[u8]) -> usize {
    let Some(last_nl) = memrchr(b'\n', buf) else {
        return buf.len();
    };
    let mut end = last_nl + 1;
    let floor = end.saturating_sub(1 << 16);
    let mut p = last_nl;
    while p > floor {
        let start = memrchr(b'\n', &buf[..p]).map_or(0, |i| i + 1);
        if crate::parse::is_chunk_anchor(&buf[start..p]) {
            end = start;
            break;
        }
        if start == 0 {
            break;
        }
        p = start - 1;
    }
    if end == 0 {
        last_nl + 1
    } else {
        end
    }
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
        let mut seen = 0u64;
        for_each_block(&mut src, 4096, |b, first| {
            assert_eq!(first, seen + 1);
            for (i, piece) in split_chunks(b, first, 3).iter().enumerate() {
                let _ = i;
                seen += count_lines(piece.0);
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, 1002);
    }
}
