//! Plain files read in place: mapped into memory, their blocks are ranges
//! of the mapping rather than copies. The kernel's copy of a file into
//! block buffers of 768 KiB, which fall out of the cache, cost 0.1 to
//! 0.45 s a GiB on the 2-core machine the benchmarks run on, depending on
//! the hour, for bytes the workers then read once more (explain of a 1 GiB
//! log took 0.86 to 0.98 times the time read in place).

use std::fs::File;
use std::io::{self, Read};
use std::ops::Deref;
use std::os::unix::io::AsRawFd;
use std::sync::{Arc, Once};

/// A whole file, mapped read-only.
pub struct Map {
    ptr: *mut libc::c_void,
    len: usize,
    /// Byte ranges no block reads any more, whose pages are given back
    /// together.
    unread: std::sync::Mutex<Vec<(usize, usize)>>,
    /// Byte ranges of blocks kept only for a look-back to read (explain's
    /// earlier blocks, 8 MiB of them): their pages are given back too, and
    /// mapped again where a look-back reads them, which few lines do.
    idle: std::sync::Mutex<Vec<(usize, usize)>>,
}

/// Bytes of pages given back at a time: each call stops every thread of
/// the process a moment (their address translations are flushed), and a
/// block's pages alone made a call a block.
const GIVE_BACK: usize = 4 << 20;

// SAFETY: the mapping is never written, and lives until the last `Arc` of
// it is dropped.
unsafe impl Send for Map {}
unsafe impl Sync for Map {}

impl Map {
    /// `file`, of `len` bytes; `None` when it is empty or cannot be mapped
    /// (it is then read).
    pub fn of(file: &File, len: u64) -> Option<Arc<Map>> {
        let len = usize::try_from(len).ok().filter(|l| *l > 0)?;
        tell_of_shrunk_files();
        // SAFETY: a fresh read-only private mapping of a file we hold open.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        (ptr != libc::MAP_FAILED).then(|| {
            Arc::new(Map {
                ptr,
                len,
                unread: std::sync::Mutex::default(),
                idle: std::sync::Mutex::default(),
            })
        })
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `len` bytes are mapped at `ptr` for as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: unmaps what `of` mapped; no slice of it outlives `self`.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// A block's bytes: read into a buffer, or a range of a mapped file.
pub enum Data {
    Read(Vec<u8>),
    Mapped(Span),
}

impl Data {
    /// The block is kept, but only for a look-back to read: a mapped one's
    /// pages are given back (and mapped again where one is read).
    pub fn idle(&self) {
        if let Data::Mapped(s) = self {
            s.map.give_back(&s.map.idle, s.start, s.end);
        }
    }

    /// The buffer, to read another block into.
    pub fn into_buffer(self) -> Option<Vec<u8>> {
        match self {
            Data::Read(v) => Some(v),
            Data::Mapped(_) => None,
        }
    }
}

impl Deref for Data {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Data::Read(v) => v,
            Data::Mapped(s) => &s.map.bytes()[s.start..s.end],
        }
    }
}

/// A range of a mapped file. Its pages are given back when it is dropped
/// (they stay in the page cache), so what is resident is the blocks still
/// kept, as when blocks are read into buffers.
pub struct Span {
    map: Arc<Map>,
    start: usize,
    end: usize,
}

impl Span {
    pub fn new(map: Arc<Map>, start: usize, end: usize) -> Span {
        Span { map, start, end }
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        self.map.unread(self.start, self.end);
    }
}

impl Map {
    /// No block reads bytes `from..to` any more.
    fn unread(&self, from: usize, to: usize) {
        self.give_back(&self.unread, from, to);
    }

    /// Adds bytes `from..to` to `ranges` (`unread` or `idle`), and gives
    /// back the whole pages they cover once they add up to [`GIVE_BACK`].
    fn give_back(&self, ranges: &std::sync::Mutex<Vec<(usize, usize)>>, from: usize, to: usize) {
        let Ok(mut ranges) = ranges.lock() else {
            return;
        };
        ranges.push((from, to));
        if ranges.iter().map(|(f, t)| t - f).sum::<usize>() < GIVE_BACK {
            return;
        }
        for (from, to) in whole_pages(&mut ranges, page_size()) {
            // SAFETY: the pages are inside the mapping; a read-only file
            // mapping's pages read the same after MADV_DONTNEED.
            unsafe {
                libc::madvise(
                    self.ptr.cast::<u8>().add(from).cast(),
                    to - from,
                    libc::MADV_DONTNEED,
                )
            };
        }
    }
}

/// The pages that `unread`, byte ranges no block reads any more, cover
/// whole, in runs; what is left of them (the ends of each run, on a page a
/// block still reads) stays in `unread`, to join the ranges on either side
/// as those are given up. A page two blocks share is given back once both
/// are done, in whichever order: given back by the one that held its first
/// byte, it was mapped again when the other read on, and stayed resident
/// (parse's workers drop their blocks in any order: at two threads its
/// file pages grew by some 4 MiB a GiB, and parse of a 4 GiB log peaked at
/// 62 MiB). The file's last page goes with the mapping.
fn whole_pages(unread: &mut Vec<(usize, usize)>, page: usize) -> Vec<(usize, usize)> {
    unread.sort_unstable();
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &(from, to) in unread.iter() {
        match runs.last_mut() {
            Some(run) if run.1 == from => run.1 = to,
            _ => runs.push((from, to)),
        }
    }
    unread.clear();
    let mut pages = Vec::new();
    for (from, to) in runs {
        let (first, last) = (from.div_ceil(page) * page, to / page * page);
        if first < last {
            pages.push((first, last));
            unread.extend(
                [(from, first), (last, to)]
                    .into_iter()
                    .filter(|(f, t)| f < t),
            );
        } else {
            unread.push((from, to));
        }
    }
    pages
}

fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE.get_or_init(|| {
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
    })
}

/// The rest of a mapped file from `pos`, read as a stream: for the blocks
/// whose lines are rewritten as they are read (CR line ends, lines cut).
pub struct Rest {
    map: Arc<Map>,
    pos: usize,
}

impl Rest {
    pub fn new(map: Arc<Map>, pos: usize) -> Rest {
        Rest { map, pos }
    }
}

impl Read for Rest {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let rest = &self.map.bytes()[self.pos..];
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        // The bytes copied are read no more: their pages are given back,
        // or a file read this way, a 100 MB line of one, would stay
        // resident whole.
        self.map.unread(self.pos, self.pos + n);
        self.pos += n;
        Ok(n)
    }
}

/// A mapped file cut short while it is read (log rotation that truncates
/// it) faults on the pages it lost: lpa then says so and stops, rather
/// than die of a bare SIGBUS.
fn tell_of_shrunk_files() {
    static ONCE: Once = Once::new();
    extern "C" fn shrunk(_: libc::c_int) {
        const MSG: &[u8] =
            b"lpa: an input file shrank while it was read (truncated by log rotation?); \
run lpa on a copy of it, or with --no-mmap\n";
        // SAFETY: write and _exit are async-signal-safe.
        unsafe {
            libc::write(2, MSG.as_ptr().cast(), MSG.len());
            libc::_exit(2);
        }
    }
    ONCE.call_once(|| {
        // SAFETY: installs a handler that only calls async-signal-safe
        // functions.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = shrunk as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bytes of the mapping at `at` that are resident, as the kernel
    /// counts them for this process.
    #[cfg(target_os = "linux")]
    fn resident(at: usize) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let mut lines = smaps.lines();
        while let Some(l) = lines.next() {
            let start = l
                .split('-')
                .next()
                .and_then(|s| usize::from_str_radix(s, 16).ok());
            if start != Some(at) {
                continue;
            }
            for l in lines.by_ref() {
                if let Some(kb) = l.strip_prefix("Rss:") {
                    let kb = kb.trim().trim_end_matches("kB").trim();
                    return kb.parse::<usize>().expect("a size") << 10;
                }
            }
        }
        0
    }

    /// A block kept only for a look-back to read gives its pages back, and
    /// reads the same when it is read again.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_idle_block_leaves_memory_and_reads_the_same() {
        let path = std::env::temp_dir().join(format!("lpa-idle-{}", std::process::id()));
        let bytes: Vec<u8> = (0..2 * GIVE_BACK + 5000)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        std::fs::write(&path, &bytes).expect("a temporary file");
        let file = File::open(&path).expect("the file");
        std::fs::remove_file(&path).expect("removed");
        let map = Map::of(&file, bytes.len() as u64).expect("mapped");
        let cut = GIVE_BACK + 100;
        let first = Data::Mapped(Span::new(Arc::clone(&map), 0, cut));
        let second = Data::Mapped(Span::new(Arc::clone(&map), cut, bytes.len()));
        assert!(*first == bytes[..cut] && *second == bytes[cut..]);
        let at = map.ptr as usize;
        let touched = resident(at);
        assert!(touched >= 2 * GIVE_BACK, "{touched}");
        first.idle();
        let idle = resident(at);
        assert!(idle + GIVE_BACK <= touched, "{idle} of {touched}");
        assert!(*first == bytes[..cut]);
        assert!(resident(at) > idle);
    }

    proptest! {
        /// Blocks of any sizes, given up in any order: a page is given back
        /// only once every byte of it was given up, and then at once, and
        /// never twice; at the end every whole page of the file was.
        #[test]
        fn a_page_is_given_back_once_every_block_on_it_is_done(
            sizes in prop::collection::vec(1usize..40, 1..60),
            order in any::<prop::sample::Index>(),
            swaps in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>()), 0..30),
        ) {
            const PAGE: usize = 16;
            let mut blocks = Vec::new();
            let mut at = 0;
            for s in &sizes {
                blocks.push((at, at + s));
                at += s;
            }
            let len = at;
            // Mostly in order, as blocks are done: some pairs swapped.
            let mut done: Vec<usize> = (0..blocks.len()).collect();
            done.rotate_left(order.index(blocks.len()) % 2);
            for (a, b) in &swaps {
                let (a, b) = (a.index(done.len()), b.index(done.len()));
                done.swap(a, b);
            }
            let mut given_up = vec![false; len];
            let mut given_back = vec![false; len.div_ceil(PAGE)];
            let mut unread = Vec::new();
            for i in done {
                let (from, to) = blocks[i];
                given_up[from..to].fill(true);
                unread.push((from, to));
                for (first, last) in whole_pages(&mut unread, PAGE) {
                    prop_assert!(first % PAGE == 0 && last % PAGE == 0 && first < last);
                    for p in first / PAGE..last / PAGE {
                        prop_assert!(given_up[p * PAGE..(p + 1) * PAGE].iter().all(|g| *g));
                        prop_assert!(!given_back[p], "page {} twice", p);
                        given_back[p] = true;
                    }
                }
                // A page all of whose bytes are given up is given back.
                for (p, back) in given_back.iter().enumerate() {
                    let bytes = &given_up[p * PAGE..((p + 1) * PAGE).min(len)];
                    let whole = (p + 1) * PAGE <= len;
                    prop_assert_eq!(*back, whole && bytes.iter().all(|g| *g), "page {}", p);
                }
            }
        }
    }
}
