//! A hint for standard input that does not end. Without `--follow`,
//! `kubectl logs -f POD | lpa explain` reports only when its input ends,
//! which a followed log never does; so when a read of stdin has waited a
//! few seconds, lpa says on stderr what it is waiting for.

use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A read that waits this long on an open pipe is taken for a stream.
const QUIET: Duration = Duration::from_secs(3);

/// When the read of stdin now waiting began, in milliseconds after
/// `epoch()`, plus one; 0 while no read waits.
static WAITING_SINCE: AtomicU64 = AtomicU64::new(0);

fn epoch() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64 + 1
}

/// Stdin, with each read timed for [`hint_when_waiting`].
pub struct Watched<R>(pub R);

impl<R: Read> Read for Watched<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        WAITING_SINCE.store(now_ms(), Ordering::Relaxed);
        let r = self.0.read(buf);
        WAITING_SINCE.store(0, Ordering::Relaxed);
        r
    }
}

/// Prints `hint` on stderr once, if a read of stdin waits for `QUIET`.
/// Reads of a regular file or of a pipe that keeps coming never wait
/// that long, so only a stream that has gone quiet gets the hint.
pub fn hint_when_waiting(hint: String) {
    epoch();
    let watch = move || loop {
        std::thread::sleep(Duration::from_millis(250));
        let since = WAITING_SINCE.load(Ordering::Relaxed);
        if since != 0 && now_ms().saturating_sub(since) >= QUIET.as_millis() as u64 {
            eprintln!("{hint}");
            return;
        }
    };
    // Without the thread there is no hint, and nothing else is lost.
    let _ = std::thread::Builder::new()
        .name("stdin-idle".into())
        .spawn(watch);
}
