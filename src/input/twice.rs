//! Inputs read twice, in bounded memory: `--anonymize` learns every name
//! from the whole input before anything is rendered, then the input is
//! read again for the report.

use super::Source;
use anyhow::Result;
use memchr::memrchr;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};

/// Text is looked at in pieces of about this size, each ending at a line
/// end (a longer line comes in pieces of this size).
const PIECE: usize = 1 << 20;

impl Source {
    /// Reads the source to its end, handing `look` each piece of its text,
    /// and returns a source that reads it again from its start: the file
    /// opened again, or what a pipe sent, kept in a temporary file that
    /// is already unlinked (so nothing is left behind).
    pub fn read_twice(mut self, look: &mut dyn FnMut(&str)) -> Result<Source> {
        let (name, path) = (self.name.clone(), self.path.clone());
        let mut spool = match path {
            Some(_) => None,
            None => Some(spool_file().map_err(|e| {
                anyhow::anyhow!("cannot keep '{name}' for a second read in a temporary file: {e}")
            })?),
        };
        let fail = |e: io::Error| anyhow::anyhow!("cannot read '{name}': {e}");
        let r = self.reader()?;
        let mut buf = vec![0u8; PIECE];
        let mut carry = Vec::new();
        loop {
            let n = match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(fail(e)),
            };
            if let Some(f) = spool.as_mut() {
                f.write_all(&buf[..n]).map_err(fail)?;
            }
            carry.extend_from_slice(&buf[..n]);
            let end = match memrchr(b'\n', &carry) {
                Some(i) => i + 1,
                None if carry.len() >= PIECE => carry.len(),
                None => continue,
            };
            look(&String::from_utf8_lossy(&carry[..end]));
            carry.drain(..end);
        }
        look(&String::from_utf8_lossy(&carry));
        self.close();
        match (path, spool) {
            (Some(p), _) => Source::open_file(&p),
            (None, Some(mut f)) => {
                f.seek(SeekFrom::Start(0)).map_err(fail)?;
                Ok(Source::from_reader(&name, f))
            }
            (None, None) => unreachable!("a source without a path is spooled"),
        }
    }
}

/// A new file in the temporary directory, unlinked once open.
fn spool_file() -> io::Result<File> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("lpa-{}-{n}.spool", std::process::id()));
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    // Where an open file cannot be removed, it stays until the run ends.
    let _ = std::fs::remove_file(&path);
    Ok(f)
}
