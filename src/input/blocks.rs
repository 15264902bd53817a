//! A source cut into blocks of whole lines: where each line ends, which
//! lines were cut, and whether a block holds an escape byte.

use super::map::{Data, Map, Rest, Span};
use super::{ends, Source};
use anyhow::Result;
use memchr::{memchr2, memrchr};
use std::io::{self, Read};
use std::sync::Arc;

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
    /// whether the block `next` returned last holds one.
    scanned_escapes: Vec<usize>,
    block_escapes: bool,
    /// The number of the line being scanned, and its bytes dropped so far.
    read_line: u64,
    dropped: u64,
    /// A read error, told after the block read before it.
    error: Option<anyhow::Error>,
    /// Blocks of what one read returned, for follow mode.
    live: bool,
    /// The mapped file read in place, while no line needs rewriting.
    view: Option<View>,
}

/// The bytes of a mapped file that stand for the buffer: `len` bytes
/// from where the next block starts.
#[derive(Clone)]
struct View {
    map: Arc<Map>,
    start: usize,
    len: usize,
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
            view: None,
        }
    }

    /// Reads a plain file in place ([`Map`]): its blocks are ranges of it,
    /// until a line needs rewriting (a CR line end, a line cut), from
    /// where its blocks are read into buffers.
    pub fn in_place(mut self) -> Self {
        if !self.live {
            self.view = self.src.map().map(|map| View {
                map,
                start: 0,
                len: 0,
            });
        }
        self
    }

    /// What stands for the buffer: the view, or `buf`.
    fn bytes<'a>(&'a self, buf: &'a [u8]) -> &'a [u8] {
        match &self.view {
            Some(v) => &v.map.bytes()[v.start..v.start + v.len],
            None => buf,
        }
    }

    /// Follow mode: a block is the whole lines that one read brings, cut
    /// right after the last of them, so a line is matched as soon as it
    /// ends (the next block may continue its record) and a slow pipe is
    /// never waited on for a block's worth of bytes. The line cap and line
    /// ends are as in other modes.
    pub fn live(mut self) -> Self {
        self.live = true;
        self.view = None;
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

    /// The lines cut in the block `next` returned last.
    pub fn cuts(&self) -> &[Cut] {
        &self.block_cuts
    }

    /// Where each line of the block `next` returned last ends: the
    /// offset of its `\n` (a last line without one ends at the block's end).
    pub fn ends(&self) -> &[usize] {
        &self.block_ends
    }

    /// Whether the block `next` returned last holds an escape byte.
    pub fn escapes(&self) -> bool {
        self.block_escapes
    }

    /// The next block and the number of its first line; `None` at the end.
    /// A block read into a buffer takes `buf` (the buffer is left when
    /// there is no block).
    pub fn next(&mut self, buf: &mut Vec<u8>) -> Result<Option<(u64, Data)>> {
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
            let bytes = self.bytes(buf);
            // The block ends by the line `lines` at the latest.
            let room = self
                .scanned_ends
                .get(lines - 1)
                .map_or(bytes.len(), |e| e + 1);
            let capped = room < bytes.len();
            // Where the last line in reach starts.
            let last = if capped { room } else { self.line_start };
            if self.eof {
                break room;
            }
            if self.live {
                break self.line_start;
            }
            match anchored_cut(&bytes[..room], checked) {
                Some(cut) => break cut,
                // No line here starts a record, so one may still be running
                // (a panic's trace): reach on, up to a few blocks (reading
                // on only when no line already read is out of reach).
                None if lines < 4 * MAX_LINES && (capped || bytes.len() < 4 * self.size) => {
                    checked = last;
                    lines += MAX_LINES;
                    if !capped {
                        want = bytes.len() + self.size;
                    }
                }
                None if last == 0 => break bytes.len(),
                None => break last,
            }
        };
        let ends_line = cut > 0 && self.bytes(buf)[cut - 1] == b'\n';
        let block = self.split(buf, cut);
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
        let Some(block) = block else {
            return Ok(None);
        };
        let first = self.line_no;
        self.line_no += (self.block_ends.len() + usize::from(!ends_line)) as u64;
        let next = self.line_no;
        self.block_cuts.clear();
        self.block_cuts
            .extend(self.pending_cuts.iter().filter(|c| c.line < next).copied());
        self.pending_cuts.retain(|c| c.line >= next);
        Ok(Some((first, block)))
    }

    /// The block of the first `cut` bytes (none when `cut` is 0); the rest
    /// starts the next one. The rest was scanned as it was read (but for an
    /// undecided CR).
    fn split(&mut self, buf: &mut Vec<u8>, cut: usize) -> Option<Data> {
        if let Some(v) = &mut self.view {
            let span = Span::new(Arc::clone(&v.map), v.start, v.start + cut);
            v.start += cut;
            v.len -= cut;
            return (cut > 0).then_some(Data::Mapped(span));
        }
        self.carry.extend_from_slice(&buf[cut..]);
        buf.truncate(cut);
        (cut > 0).then(|| Data::Read(std::mem::take(buf)))
    }

    /// Reads until `buf` holds `want` bytes and a line end, or the end.
    fn fill(&mut self, buf: &mut Vec<u8>, want: usize) -> Result<()> {
        while !self.eof && (self.bytes(buf).len() < want || self.line_start == 0) {
            let old = self.bytes(buf).len();
            // Up to `want`; past it, in steps, until a line ends.
            let limit = if old < want { want - old } else { 1 << 16 };
            self.eof = self.read(buf, limit)? == 0;
            self.scan(buf);
        }
        Ok(())
    }

    /// Appends up to `limit` bytes; the number read.
    fn read(&mut self, buf: &mut Vec<u8>, limit: usize) -> Result<usize> {
        if let Some(v) = &mut self.view {
            let n = limit.min(v.map.bytes().len() - v.start - v.len);
            v.len += n;
            return Ok(n);
        }
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
        if let Some(v) = self.view.clone() {
            let bytes = &v.map.bytes()[v.start..v.start + v.len];
            if self.scan_plain(bytes) {
                return;
            }
            // Lines are rewritten in a buffer from here on.
            buf.clear();
            buf.extend_from_slice(bytes);
            self.src
                .read_on(Rest::new(Arc::clone(&v.map), v.start + v.len));
            self.view = None;
        }
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
        let mut seen = 0u64;
        let mut longest = 0;
        while let Some((first, buf)) = blocks.next(&mut Vec::new()).unwrap() {
            assert_eq!(first, seen + 1);
            seen += super::super::count_lines(&buf);
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
            let (mut with, mut without) = (0, 0);
            while let Some((_, buf)) = blocks.next(&mut Vec::new()).unwrap() {
                let holds = buf.contains(&0x1b);
                assert_eq!(blocks.escapes(), holds, "{end:?} {max_line}");
                *if holds { &mut with } else { &mut without } += 1;
            }
            assert_eq!(with, 3, "{end:?} {max_line}");
            assert!(without > 10);
        }
    }

    /// A block and what is told of it.
    #[derive(Debug, PartialEq)]
    struct Told {
        first: u64,
        data: Vec<u8>,
        ends: Vec<usize>,
        cuts: Vec<Cut>,
        escapes: bool,
    }

    /// Every block, and whether it is a range of a mapped file.
    fn all_blocks(mut blocks: Blocks<'_>) -> Vec<(Told, bool)> {
        let mut out = Vec::new();
        while let Some((first, data)) = blocks.next(&mut Vec::new()).unwrap() {
            let told = Told {
                first,
                data: data.to_vec(),
                ends: blocks.ends().to_vec(),
                cuts: blocks.cuts().to_vec(),
                escapes: blocks.escapes(),
            };
            out.push((told, matches!(data, Data::Mapped(_))));
        }
        out
    }

    /// A file read in place is cut into the same blocks, told the same
    /// way, as the same bytes read through a buffer: up to the first line
    /// that must be rewritten (a CR, a line past the maximum), as ranges of
    /// the file, and from there on through buffers.
    #[test]
    fn a_file_read_in_place_gives_the_blocks_it_gives_read() {
        let mut log = Vec::new();
        for i in 0..400 {
            let colour = if i % 97 == 5 { "\x1b[31m" } else { "" };
            let pad = "x".repeat(i * 7 % 120);
            log.extend(format!("[ {i}.000000s]  INFO x: {colour}line {i} {pad}\n").as_bytes());
            if i % 50 == 3 {
                log.extend(b"thread 'main' panicked at src/main.rs:1:1:\n    0: a frame\n");
            }
        }
        let path = std::env::temp_dir().join(format!("lpa-in-place-{}", std::process::id()));
        let long = format!("[ 9.000000s]  INFO x: {}\n", "y".repeat(500));
        for rewrite in [
            None,
            Some(&b"\r\n"[..]),
            Some(&b"\r"[..]),
            Some(long.as_bytes()),
        ] {
            for at in [0, log.len() / 3, log.len() - 20] {
                let mut data = log.clone();
                if let Some(r) = rewrite {
                    let at = at + memchr::memchr(b'\n', &data[at..]).unwrap() + 1;
                    data.splice(at..at, r.iter().copied());
                }
                data.extend(b"no line end");
                std::fs::write(&path, &data).unwrap();
                for size in [64, 700, 4096] {
                    let mut file = Source::open_file(&path).unwrap();
                    let mapped = all_blocks(Blocks::new(&mut file, size).max_line(300).in_place());
                    let mut read = Source::from_reader("t", io::Cursor::new(data.clone()));
                    let want = all_blocks(Blocks::new(&mut read, size).max_line(300));
                    let in_place: Vec<bool> = mapped.iter().map(|b| b.1).collect();
                    let told =
                        |b: Vec<(Told, bool)>| b.into_iter().map(|t| t.0).collect::<Vec<_>>();
                    assert_eq!(
                        told(mapped),
                        told(want),
                        "{rewrite:?} at {at}, blocks of {size}"
                    );
                    // Blocks before the first rewritten line are ranges of
                    // the file; none after it is.
                    let n = in_place.iter().take_while(|m| **m).count();
                    assert!(in_place[n..].iter().all(|m| !m));
                    match rewrite {
                        None => assert_eq!(n, in_place.len()),
                        Some(_) if at == 0 => assert!(n <= 1, "{n}"),
                        Some(_) => assert!(n > 0 && n < in_place.len()),
                    }
                }
            }
        }
        std::fs::remove_file(&path).unwrap();
    }
}
