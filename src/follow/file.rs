//! A followed file as an endless reader that ends once per file: at its
//! end it waits for growth; when the path is rotated (renamed or deleted,
//! then created again) or truncated (copytruncate) it ends, so that the
//! reader starts the next file with its own line numbers. The file a
//! rotation retired is read on by a [`Tail`] while its writer may still
//! add to it. Every line written is read once.

use crate::report::text::clean;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a followed file that has no more to read is checked for
/// growth and rotation.
const POLL: Duration = Duration::from_millis(250);
/// After a rotation the old file is still read for this long: its writer
/// may add lines before it reopens the path.
const GRACE: Duration = Duration::from_secs(2);

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
pub fn is_fifo(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    m.file_type().is_fifo()
}

#[cfg(not(unix))]
pub fn is_fifo(_: &std::fs::Metadata) -> bool {
    false
}

/// The name evidence cites for the `n`th file read at `path` (from 1):
/// after a rotation the lines are numbered from 1 again, so the name says
/// which file they are in.
pub fn file_name(path: &Path, n: u32) -> String {
    match n {
        1 => path.display().to_string(),
        n => format!("{} (file {n})", path.display()),
    }
}

pub struct Followed {
    path: PathBuf,
    file: File,
    id: Option<(u64, u64)>,
    pos: u64,
    fifo: bool,
    /// Which file at the path this is, from 1.
    pub number: u32,
    /// The current file was rotated or truncated: reads return the end
    /// until the reader starts the next one.
    pub ended: bool,
    /// The file a rotation moved away, for a [`Tail`].
    pub retired: Option<File>,
    stop: Arc<AtomicBool>,
    notices: bool,
}

impl Followed {
    pub fn new(
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
            number: 1,
            ended: false,
            retired: None,
            stop,
            notices,
        })
    }

    fn next_file(&mut self, what: &str) {
        self.ended = true;
        self.number += 1;
        self.pos = 0;
        if self.notices {
            eprintln!(
                "lpa: {} {what}; its lines are cited as '{}'",
                clean(&self.path.display().to_string()),
                clean(&file_name(&self.path, self.number))
            );
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
            self.retired = Some(std::mem::replace(&mut self.file, file));
            self.id = file_id(&meta);
            self.next_file("was rotated: reading the new file from its start");
            return Ok(true);
        }
        if meta.len() < self.pos {
            self.file.seek(SeekFrom::Start(0))?;
            self.next_file("was truncated: reading it again from its start");
            return Ok(true);
        }
        Ok(meta.len() > self.pos)
    }
}

impl Read for Followed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.ended {
                return Ok(0);
            }
            let n = self.file.read(buf)?;
            self.pos += n as u64;
            // A signal ends the input at the file's current end.
            if n > 0 || self.fifo || self.stop.load(Ordering::SeqCst) {
                return Ok(n);
            }
            // The file is read to its end before the path is checked, so
            // nothing written to it before the rotation is lost.
            if !self.check_path()? {
                std::thread::sleep(POLL);
            }
        }
    }
}

/// A rotated file, read until it has been quiet for a while (or a signal).
pub struct Tail {
    file: File,
    since: Instant,
    stop: Arc<AtomicBool>,
}

impl Tail {
    pub fn new(file: File, stop: Arc<AtomicBool>) -> Tail {
        Tail {
            file,
            since: Instant::now(),
            stop,
        }
    }
}

impl Read for Tail {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.file.read(buf)?;
            if n > 0 {
                self.since = Instant::now();
                return Ok(n);
            }
            if self.since.elapsed() > GRACE || self.stop.load(Ordering::SeqCst) {
                return Ok(0);
            }
            std::thread::sleep(POLL);
        }
    }
}
