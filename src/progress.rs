//! A progress line on stderr for long runs: only when stderr is a terminal,
//! only once a run has taken more than a moment, and erased at the end so
//! that it never mixes with the report.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Shown only after this long, so quick runs stay silent.
const DELAY: Duration = Duration::from_millis(700);
/// Redrawn at most this often.
const EVERY: Duration = Duration::from_millis(200);

pub struct Progress {
    total: u64,
    done: u64,
    start: Instant,
    last: Option<Instant>,
    enabled: bool,
}

impl Progress {
    /// `total`: bytes expected, when known (plain files).
    pub fn new(total: Option<u64>, enabled: bool) -> Progress {
        Progress {
            total: total.unwrap_or(0),
            done: 0,
            start: Instant::now(),
            last: None,
            enabled: enabled && std::io::stderr().is_terminal(),
        }
    }

    pub fn advance(&mut self, bytes: u64) {
        self.done += bytes;
        if !self.enabled
            || self.start.elapsed() < DELAY
            || self.last.is_some_and(|l| l.elapsed() < EVERY)
        {
            return;
        }
        self.last = Some(Instant::now());
        let mb = self.done as f64 / 1e6;
        let rate = mb / self.start.elapsed().as_secs_f64();
        let line = if self.total > 0 {
            let pct = (self.done as f64 * 100.0 / self.total as f64).min(100.0);
            let filled = (pct / 5.0) as usize;
            format!(
                "\rlpa [{}{}] {pct:3.0}%  {mb:.0} of {:.0} MB, {rate:.0} MB/s ",
                "#".repeat(filled),
                " ".repeat(20 - filled),
                self.total as f64 / 1e6
            )
        } else {
            format!("\rlpa {mb:.0} MB read, {rate:.0} MB/s ")
        };
        let _ = std::io::stderr().write_all(line.as_bytes());
    }

    /// Erases the line.
    pub fn finish(&mut self) {
        if self.last.is_some() {
            let _ = std::io::stderr().write_all(format!("\r{}\r", " ".repeat(72)).as_bytes());
            self.last = None;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
