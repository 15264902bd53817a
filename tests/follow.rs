//! Follow mode through the binary, with real files and a child process:
//! every line written is read once across rename rotation, delete and
//! recreate, and copytruncate; a FIFO is read to its end; stdin lines are
//! read up to --max-line; SIGTERM and SIGINT give the final report.

mod common;

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
    let (child, mut stdin) = common::piped(&[
        "explain",
        "--follow",
        "--format",
        "json",
        "--max-line",
        "1K",
    ]);
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

const REFUSED: &str = "[  1843.207731s]  WARN ThreadId(01) outbound:proxy{addr=10.96.118.7:8080}:endpoint{addr=10.42.1.77:8080}: linkerd_reconnect: Failed to connect error=Connection refused (os error 111)\n";
const ADMIN: &str = "[    17.302074s]  INFO ThreadId(02) daemon:admin{listen.addr=0.0.0.0:4191}:accept{client.addr=10.4.7.22:51234}: linkerd_app_core::serve: Connection closed error=proxy admin server is HTTP-only\n";

#[test]
fn after_a_rotation_lines_are_numbered_in_their_own_file() {
    let dir = tmp("numbers");
    let path = dir.join("proxy.log");
    let mut f = File::create(&path).unwrap();
    append(&mut f, 0, 5);
    let child = follow(&path);
    fs::rename(&path, dir.join("proxy.log.1")).unwrap();
    // Written to the moved file after the rotation: still its line 6.
    let mut g = File::create(&path).unwrap();
    f.write_all(REFUSED.as_bytes()).unwrap();
    g.write_all(line(0).as_bytes()).unwrap();
    g.write_all(REFUSED.as_bytes()).unwrap();
    thread::sleep(Duration::from_millis(1500));
    let (code, out, err) = stop(child, libc::SIGTERM);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(lines_read(&out, &err), 8, "stderr: {err}");
    let second = format!("{} (file 2)", path.display());
    assert!(err.contains(&format!("cited as '{second}'")), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut cited: Vec<(String, u64)> = doc["findings"][0]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["source"].as_str().unwrap().to_string(),
                e["line"].as_u64().unwrap(),
            )
        })
        .collect();
    cited.sort();
    let first = path.display().to_string();
    assert_eq!(cited, [(first, 6), (second, 2)], "{out}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn running_lines_are_told_when_a_count_doubles_and_benign_once() {
    let (mut child, mut stdin) = common::piped(&["explain", "--follow", "--color", "never"]);
    // Ten bursts, each seen on its own tick (ticks are 500 ms apart).
    for _ in 0..10 {
        stdin.write_all(REFUSED.as_bytes()).unwrap();
        stdin.write_all(ADMIN.as_bytes()).unwrap();
        stdin.flush().unwrap();
        thread::sleep(Duration::from_millis(600));
    }
    drop(stdin);
    let (code, out, err) = finish(&mut child);
    assert_eq!(code, Some(0), "{err}");
    let running: Vec<&str> = out
        .lines()
        .take_while(|l| !l.starts_with("lpa explain:"))
        .filter(|l| l.starts_with(['+', '~']))
        .collect();
    assert_eq!(
        running
            .iter()
            .filter(|l| l.starts_with("+ benign admin.non-http"))
            .count(),
        1,
        "{out}"
    );
    assert!(!running.iter().any(|l| l.starts_with("~ admin")), "{out}");
    let counts: Vec<u64> = running
        .iter()
        .filter(|l| l.starts_with("~ connect.refused"))
        .map(|l| {
            l.rsplit(": ")
                .next()
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    // Told at 1, then at 2, 4 and 8 (or later, when ticks merge bursts).
    assert!((1..=3).contains(&counts.len()), "{out}");
    assert!(counts.windows(2).all(|w| w[1] >= 2 * w[0]), "{out}");
}

/// explain without --follow on stdin that gets a line, then stays open
/// until its stderr holds `until` (when not empty) or `open` has passed;
/// its stderr, and how long stdin stayed open.
fn explain_stdin(open: Duration, until: &str, extra: &[&str]) -> (String, Duration) {
    let args: Vec<&str> = std::iter::once("explain")
        .chain(extra.iter().copied())
        .collect();
    let (mut child, mut stdin) = common::piped(&args);
    let mut pipe = child.stderr.take().unwrap();
    let err = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = err.clone();
    let errs = thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = pipe.read(&mut buf) {
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    stdin.write_all(REFUSED.as_bytes()).unwrap();
    stdin.flush().unwrap();
    // How long lpa takes to reach its first read (the rules compile
    // first) depends on the build and the machine: wait for the hint.
    let start = Instant::now();
    while start.elapsed() < open && (until.is_empty() || !err.lock().unwrap().contains(until)) {
        thread::sleep(Duration::from_millis(50));
    }
    let held = start.elapsed();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    errs.join().unwrap();
    let err = err.lock().unwrap().clone();
    assert!(out.status.success(), "{err}");
    // With --quiet the report is the exit status alone.
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(
        extra.contains(&"--quiet") || out.contains("connect.refused"),
        "{out}"
    );
    (err, held)
}

#[test]
fn a_stdin_that_stays_open_without_follow_gets_a_hint() {
    let (err, held) = explain_stdin(Duration::from_secs(60), "explain --follow", &[]);
    assert!(err.contains("still open"), "{err}");
    let quiet = explain_stdin(held + Duration::from_secs(1), "", &["--quiet"]).0;
    assert!(quiet.is_empty(), "{quiet}");
    let short = explain_stdin(Duration::from_millis(200), "", &[]).0;
    assert!(short.is_empty(), "{short}");
}
