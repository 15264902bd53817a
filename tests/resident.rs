//! What lpa keeps resident, measured from outside: the peak RSS of the
//! process, as `wait4` reports it. A test of its own, in a process of its
//! own that allocates little: a child's peak starts at its parent's
//! (the child shares the parent's memory until it runs lpa).

use std::io::Write;
use std::process::{Command, Stdio};

/// The peak RSS of `lpa ARGS`, in KiB, once it exited with status 0.
// The child is reaped by `wait4`, which `Child::wait` does not give the
// usage of.
#[allow(clippy::zombie_processes)]
fn peak_kib(args: &[&str]) -> i64 {
    let child = Command::new(env!("CARGO_BIN_EXE_lpa"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid one to be written over.
    let mut usage = unsafe { std::mem::zeroed::<libc::rusage>() };
    // SAFETY: waits for our own child, into locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{args:?}"
    );
    usage.ru_maxrss
}

/// A file read through buffers from a line that must be rewritten (here
/// its one line of 64 MiB, past `--max-line`) gives the pages of its
/// mapping back as it goes: what stays resident is the blocks, not the
/// file (a 100 MB line peaked at 112 MiB).
#[test]
fn a_file_of_one_long_line_is_not_kept_resident() {
    let dir = std::env::temp_dir().join(format!("lpa-resident-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("one-line.log");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..64 {
        f.write_all(&chunk).unwrap();
    }
    drop(f);
    let file = path.to_str().unwrap();
    for cmd in ["explain", "summarize", "parse"] {
        let kib = peak_kib(&[cmd, "--threads", "2", file]);
        assert!(kib < 40 << 10, "{cmd}: {kib} KiB");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
