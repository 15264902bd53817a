//! Follow mode through the binary, with real files and a child process:
//! every line written is read once across rename rotation, delete and
//! recreate, and copytruncate; a FIFO is read to its end; stdin lines are
//! read up to --max-line; SIGTERM and SIGINT give the final report.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lpa-follow-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn line(i: usize) -> String {
    format!(
        "[{:>6}.000000s]  INFO ThreadId(01) linkerd2_proxy: line {i}\n",
        i / 100
    )
}

/// Appends lines `from..to` to `f`, in bursts, without waiting for lpa.
fn append(f: &mut File, from: usize, to: usize) {
    for i in from..to {
        f.write_all(line(i).as_bytes()).unwrap();
        if i % 200 == 0 {
            f.flush().unwrap();
            thread::sleep(Duration::from_millis(5));
        }
    }
    f.flush().unwrap();
}

/// lpa following `path`, once it holds the file open (what is written
/// from then on must be read, whatever happens to the path).
fn follow(path: &Path) -> Child {
    let child = spawn_follow(path);
    let fds = PathBuf::from(format!("/proc/{}/fd", child.id()));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !fs::read_dir(&fds)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| fs::read_link(e.path()).is_ok_and(|l| l == path))
    {
        assert!(Instant::now() < deadline, "lpa never opened {path:?}");
        thread::sleep(Duration::from_millis(10));
    }
    child
}

fn spawn_follow(path: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_lpa"))
        .args(["explain", "--follow", "--format", "json"])
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Sends `sig`, then waits (at most 20 s) for the exit; code, stdout, stderr.
fn stop(mut child: Child, sig: i32) -> (Option<i32>, String, String) {
    // SAFETY: a plain kill(2) of our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
    finish(&mut child)
}

fn finish(child: &mut Child) -> (Option<i32>, String, String) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("lpa did not exit");
        }
        thread::sleep(Duration::from_millis(20));
    };
    let (mut out, mut err) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code(), out, err)
}

fn lines_read(out: &str, err: &str) -> u64 {
    let doc: serde_json::Value =
        serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}\nstderr: {err}"));
    doc["input"]["lines"].as_u64().unwrap()
}

#[test]
fn every_line_is_read_once_across_rotation_recreation_and_truncation() {
    let dir = tmp("rotate");
    let path = dir.join("proxy.log");
    let mut f = File::create(&path).unwrap();
    append(&mut f, 0, 1000);
    let child = follow(&path);

    // Rename rotation: the writer goes on writing to the moved file until
    // it reopens the path, as a logger does before its reopen signal.
    append(&mut f, 1000, 3000);
    fs::rename(&path, dir.join("proxy.log.1")).unwrap();
    append(&mut f, 3000, 3500);
    let mut f = File::create(&path).unwrap();
    append(&mut f, 3500, 6000);
    // A file must be at the path for one poll (250 ms) to be seen there.
    thread::sleep(Duration::from_millis(600));

    // Delete and create again.
    fs::remove_file(&path).unwrap();
    append(&mut f, 6000, 6200);
    let mut f = File::create(&path).unwrap();
    append(&mut f, 6200, 8000);
    thread::sleep(Duration::from_millis(600));

    // copytruncate: copied, then cut to nothing in place. Lines written
    // between the copy and the cut are logrotate's loss, not lpa's, so
    // none are written then; lpa has read up to the copy by then.
    fs::copy(&path, dir.join("proxy.log.2")).unwrap();
    drop(f);
    let mut f = OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(0).unwrap();
    append(&mut f, 8000, 8500);

    thread::sleep(Duration::from_secs(1));
    let (code, out, err) = stop(child, libc::SIGTERM);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(lines_read(&out, &err), 8500, "stderr: {err}");
    assert_eq!(err.matches("was rotated").count(), 2, "{err}");
    assert_eq!(err.matches("was truncated").count(), 1, "{err}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_reads_a_growing_file_to_its_end_first() {
    // Lines appended just before the signal are in the report: the
    // reader reads the file to its end before the report is made.
    let dir = tmp("term");
    let path = dir.join("proxy.log");
    let mut f = File::create(&path).unwrap();
    let child = follow(&path);
    thread::sleep(Duration::from_millis(300));
    append(&mut f, 0, 20_000);
    let (code, out, err) = stop(child, libc::SIGTERM);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(lines_read(&out, &err), 20_000, "stderr: {err}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_fifo_is_read_to_its_end() {
    let dir = tmp("fifo");
    let path = dir.join("proxy.fifo");
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut child = spawn_follow(&path);
    let mut w = OpenOptions::new().write(true).open(&path).unwrap();
    for i in 0..5000 {
        w.write_all(line(i).as_bytes()).unwrap();
    }
    drop(w);
    let (code, out, err) = finish(&mut child);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(lines_read(&out, &err), 5000, "stderr: {err}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn stdin_lines_are_read_up_to_max_line_and_sigint_reports() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lpa"))
        .args([
            "explain",
            "--follow",
            "--format",
            "json",
            "--max-line",
            "1K",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // 8 MiB without a line end, then two lines; stdin stays open.
    for _ in 0..128 {
        stdin.write_all(&[b'x'; 64 << 10]).unwrap();
    }
    stdin.write_all(b"\n").unwrap();
    stdin.write_all(line(1).as_bytes()).unwrap();
    stdin.write_all(line(2).as_bytes()).unwrap();
    stdin.flush().unwrap();
    thread::sleep(Duration::from_millis(1500));
    let (code, out, err) = stop(child, libc::SIGINT);
    drop(stdin);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(lines_read(&out, &err), 3, "stderr: {err}");
    assert!(out.contains("1 line longer than --max-line"), "{out}");
}
