//! The command line as a user meets it: every test runs the BUILT binaries
//! (`lpa` and `kubectl-lpa`) as child processes and checks exit statuses,
//! stdout, stderr and the JSON contract.
//!
//! Fixtures are written at run time into a fresh directory under the system
//! temp dir (removed when the test ends); `corpus/scenarios/*.log` are only
//! read. Every child runs under a watchdog, so a hang fails the test instead
//! of stalling the suite.

use flate2::write::GzEncoder;
use flate2::Compression;
use regex::Regex;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

const LPA: &str = env!("CARGO_BIN_EXE_lpa");
const KUBECTL_LPA: &str = env!("CARGO_BIN_EXE_kubectl-lpa");

/// A failing scenario (critical connect.timeout, a benign probe finding).
const TIMEOUT_LOG: &str = "connect-timeout-netpol-2.10.log";
/// A log with no finding at all.
const HEALTHY_LOG: &str = "healthy-startup-2.14.log";
/// A log whose only finding is a warning.
const WARNING_LOG: &str = "detection-timeout-mysql-2.11.log";
/// A log whose only finding is benign (info).
const BENIGN_LOG: &str = "probes-benign-2.12.log";
/// Another failing scenario (critical policy.unauthorized).
const POLICY_LOG: &str = "policy-unauthorized-2.12.log";
/// Yet another one (discovery.no-endpoints, names in `service{ns=… name=…}` spans).
const NO_ENDPOINTS_LOG: &str = "no-endpoints-2.14.log";

// ------------------------------------------------------------ helpers ----

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus/scenarios")
        .join(name)
}

fn corpus_bytes(name: &str) -> Vec<u8> {
    fs::read(corpus(name)).unwrap_or_else(|e| panic!("read {name}: {e}"))
}

/// A fresh directory under the system temp dir, removed on drop.
struct Tmp(PathBuf);

impl Tmp {
    fn new(tag: &str) -> Tmp {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "lpa-cli-test-{}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst),
            tag
        ));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).expect("create temp dir");
        Tmp(p)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    fn write(&self, name: &str, data: &[u8]) -> PathBuf {
        let p = self.path(name);
        fs::write(&p, data).expect("write fixture");
        p
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// What a finished (or killed) child left behind.
struct Run {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    timed_out: bool,
    what: String,
}

impl Run {
    fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    fn err(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
    /// Context for assertion messages.
    fn ctx(&self) -> String {
        let out = self.out();
        let short: String = out.chars().take(1500).collect();
        format!(
            "\n  command: {}\n  exit: {:?}{}\n  stderr: {}\n  stdout (start): {}",
            self.what,
            self.code,
            if self.timed_out {
                " (killed: timed out)"
            } else {
                ""
            },
            self.err(),
            short
        )
    }
    fn assert_code(&self, want: i32) -> &Run {
        assert_eq!(
            self.code,
            Some(want),
            "unexpected exit status{}",
            self.ctx()
        );
        self
    }
    fn assert_no_panic(&self) -> &Run {
        let e = self.err();
        assert!(
            !e.contains("panicked") && !e.contains("RUST_BACKTRACE") && self.code != Some(101),
            "the binary panicked{}",
            self.ctx()
        );
        self
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}{}", self.ctx()))
    }
    /// `lpa parse` output: one JSON object per line.
    fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| {
                serde_json::from_slice(l).unwrap_or_else(|e| {
                    panic!(
                        "parse output line is not JSON ({e}): {}{}",
                        String::from_utf8_lossy(&l[..l.len().min(300)]),
                        self.ctx()
                    )
                })
            })
            .collect()
    }
}

fn base(bin: &str) -> Command {
    let mut c = Command::new(bin);
    // Tests decide about colour themselves.
    c.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
    c
}

fn lpa_cmd<S: AsRef<OsStr>>(args: &[S]) -> Command {
    let mut c = base(LPA);
    c.args(args);
    c
}

/// Runs a command to completion (or kills it after `timeout`), feeding
/// `stdin` (or an empty, closed stdin) and capturing both outputs.
fn run_cmd(mut cmd: Command, stdin: Option<Vec<u8>>, timeout: Duration) -> Run {
    let what = format!("{cmd:?}");
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    let mut w = child.stdin.take().expect("stdin");
    let feeder = thread::spawn(move || {
        if let Some(data) = stdin {
            let _ = w.write_all(&data);
        }
        // dropping `w` closes the child's stdin
    });
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let h_out = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = so.read_to_end(&mut v);
        v
    });
    let h_err = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = se.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait killed child");
        }
        thread::sleep(Duration::from_millis(10));
    };
    let _ = feeder.join();
    Run {
        code: if timed_out { None } else { status.code() },
        stdout: h_out.join().unwrap(),
        stderr: h_err.join().unwrap(),
        timed_out,
        what,
    }
}

const T: Duration = Duration::from_secs(60);

fn lpa<S: AsRef<OsStr>>(args: &[S]) -> Run {
    run_cmd(lpa_cmd(args), None, T)
}

fn lpa_stdin<S: AsRef<OsStr>>(args: &[S], stdin: &[u8]) -> Run {
    run_cmd(lpa_cmd(args), Some(stdin.to_vec()), T)
}

/// Lines as `lpa` counts them: every `\n`, plus an unterminated last line.
/// LF, CRLF and a lone CR each end a line.
fn count_lines(b: &[u8]) -> u64 {
    let lone_cr = b
        .windows(2)
        .filter(|w| w[0] == b'\r' && w[1] != b'\n')
        .count();
    let n = b.iter().filter(|c| **c == b'\n').count() + lone_cr;
    // An unfinished last line, or a CR at the very end (which `windows`
    // never sees).
    n as u64 + u64::from(!b.is_empty() && !b.ends_with(b"\n"))
}

fn ids(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .expect("findings array")
        .iter()
        .map(|f| f["id"].as_str().unwrap_or("").to_string())
        .collect()
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// A log of about `min_bytes` made of the given corpus files, repeated.
fn repeated(files: &[&str], min_bytes: usize) -> Vec<u8> {
    let parts: Vec<Vec<u8>> = files.iter().map(|f| corpus_bytes(f)).collect();
    let mut v = Vec::with_capacity(min_bytes + 100_000);
    while v.len() < min_bytes {
        for part in &parts {
            v.extend_from_slice(part);
            if !v.ends_with(b"\n") {
                v.push(b'\n');
            }
        }
    }
    v
}

/// Lines of a child's stdout as they come, on a channel.
fn line_reader<R: Read + Send + 'static>(r: R) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut r = BufReader::new(r);
        loop {
            let mut line = Vec::new();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if tx
                        .send(String::from_utf8_lossy(&line).into_owned())
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// Collects lines from `rx` into `seen` until one satisfies `pred` or the
/// deadline passes; true when found.
fn wait_for_line(
    rx: &Receiver<String>,
    seen: &mut Vec<String>,
    within: Duration,
    pred: impl Fn(&str) -> bool,
) -> bool {
    let deadline = Instant::now() + within;
    if seen.iter().any(|l| pred(l)) {
        return true;
    }
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(l) => {
                let hit = pred(&l);
                seen.push(l);
                if hit {
                    return true;
                }
            }
            Err(_) => return false,
        }
    }
    false
}

/// Kills a child on drop, so a failing assertion never leaves one behind.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// ------------------------------------------------- 1. bad input ----

#[test]
fn missing_file_exits_2_with_one_line_naming_path_and_problem() {
    let tmp = Tmp::new("missing");
    let missing = tmp.path("no-such-proxy.log");
    let m = p(&missing);
    for args in [
        vec!["explain", m.as_str()],
        vec!["explain", "--format", "json", m.as_str()],
        vec!["parse", m.as_str()],
        vec!["summarize", m.as_str()],
        vec!["triage", m.as_str()],
        vec!["explain", "--follow", m.as_str()],
    ] {
        let r = run_cmd(lpa_cmd(&args), None, Duration::from_secs(10));
        r.assert_code(2).assert_no_panic();
        let err = r.err();
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "want exactly one stderr line{}", r.ctx());
        assert!(
            lines[0].contains(&m),
            "stderr must name the path{}",
            r.ctx()
        );
        assert!(
            lines[0].to_lowercase().contains("no such file"),
            "stderr must say the file does not exist{}",
            r.ctx()
        );
        assert!(r.stdout.is_empty(), "nothing on stdout{}", r.ctx());
    }
}

#[test]
fn directory_without_log_files_exits_2_with_clear_message() {
    let tmp = Tmp::new("nologs");
    let dir = tmp.path("logs");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("notes.txt"), corpus_bytes(TIMEOUT_LOG)).unwrap();
    fs::write(dir.join("proxy.log.bak"), corpus_bytes(TIMEOUT_LOG)).unwrap();
    let d = p(&dir);
    for cmd in ["explain", "parse", "summarize"] {
        let r = lpa(&[cmd, d.as_str()]);
        r.assert_code(2).assert_no_panic();
        let err = r.err();
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "want one stderr line{}", r.ctx());
        assert!(
            err.contains(&d),
            "stderr must name the directory{}",
            r.ctx()
        );
        assert!(
            err.contains("*.log") && err.contains("directory"),
            "stderr must say the directory holds no *.log file{}",
            r.ctx()
        );
    }
}

#[test]
fn follow_on_directory_exits_2() {
    let tmp = Tmp::new("followdir");
    let dir = tmp.path("logs");
    fs::create_dir(&dir).unwrap();
    let d = p(&dir);
    let r = run_cmd(
        lpa_cmd(&["explain", "--follow", d.as_str()]),
        None,
        Duration::from_secs(5),
    );
    assert!(!r.timed_out, "lpa explain --follow DIR hangs{}", r.ctx());
    r.assert_code(2).assert_no_panic();
    assert!(
        r.err().contains(&d),
        "stderr must name the directory{}",
        r.ctx()
    );
}

#[test]
fn glob_matching_nothing_exits_2() {
    let tmp = Tmp::new("noglob");
    let pat = p(&tmp.path("*.log"));
    let r = lpa(&["explain", pat.as_str()]);
    r.assert_code(2).assert_no_panic();
    assert!(
        r.err().contains(&pat),
        "stderr must name the pattern{}",
        r.ctx()
    );
}

#[test]
fn unreadable_file_exits_2() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = Tmp::new("unreadable");
    let f = tmp.write("secret.log", &corpus_bytes(TIMEOUT_LOG));
    fs::set_permissions(&f, fs::Permissions::from_mode(0o000)).unwrap();
    fs::set_permissions(&tmp.0, fs::Permissions::from_mode(0o755)).unwrap();
    // As root every file opens: then run lpa as `nobody` when setpriv can,
    // else skip the assertion.
    let as_nobody = fs::File::open(&f).is_ok();
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|s| Path::new(s).exists());
    if as_nobody && setpriv.is_none() {
        eprintln!("unreadable_file_exits_2: skipped, running as root and no setpriv");
        return;
    }
    let fp = p(&f);
    for cmd in ["explain", "parse", "summarize"] {
        let c = if as_nobody {
            let mut c = Command::new(setpriv.unwrap());
            c.args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                LPA,
                cmd,
                fp.as_str(),
            ]);
            c
        } else {
            lpa_cmd(&[cmd, fp.as_str()])
        };
        let r = run_cmd(c, None, T);
        r.assert_code(2).assert_no_panic();
        let err = r.err();
        assert_eq!(err.lines().count(), 1, "one stderr line{}", r.ctx());
        assert!(err.contains(&fp), "stderr must name the file{}", r.ctx());
        assert!(
            err.to_lowercase().contains("permission denied"),
            "stderr must say why{}",
            r.ctx()
        );
    }
}

/// Odd input: every command exits 0 without a panic, and every line is
/// counted (the `lines` of `lpa parse` sum to the input's line count, as does
/// `input.lines` of `lpa explain --format json`).
fn check_odd_input(tag: &str, data: &[u8]) {
    let tmp = Tmp::new(tag);
    let f = tmp.write(&format!("{tag}.log"), data);
    let fp = p(&f);
    let want = count_lines(data);

    let r = lpa(&["parse", fp.as_str()]);
    r.assert_code(0).assert_no_panic();
    let recs = r.json_lines();
    let sum: u64 = recs.iter().map(|v| v["lines"].as_u64().unwrap_or(0)).sum();
    assert_eq!(
        sum,
        want,
        "{tag}: parse `lines` must sum to the input's lines{}",
        r.ctx()
    );

    let r = lpa(&["explain", "--format", "json", fp.as_str()]);
    r.assert_code(0).assert_no_panic();
    let j = r.json();
    assert_eq!(
        j["input"]["lines"].as_u64(),
        Some(want),
        "{tag}: input.lines{}",
        r.ctx()
    );
    let ev = j["input"]["events"].as_u64().unwrap();
    let un = j["input"]["unparsed"].as_u64().unwrap();
    assert!(
        ev + un <= want,
        "{tag}: events+unparsed exceed lines{}",
        r.ctx()
    );

    for args in [
        vec!["explain", fp.as_str()],
        vec!["summarize", fp.as_str()],
        vec!["summarize", "--format", "json", fp.as_str()],
        vec!["triage", fp.as_str()],
    ] {
        lpa(&args).assert_code(0).assert_no_panic();
    }
    // the same bytes on stdin
    let r = lpa_stdin(&["explain", "--format", "json", "-"], data);
    r.assert_code(0).assert_no_panic();
    assert_eq!(
        r.json()["input"]["lines"].as_u64(),
        Some(want),
        "{tag}: stdin{}",
        r.ctx()
    );
}

#[test]
fn binary_data_is_counted_not_fatal() {
    let mut data: Vec<u8> = (0..=255u8).cycle().take(256 * 40).collect();
    data.extend_from_slice(b"\n\x7fELF\x02\x01\x01\0\0\0\0\n");
    check_odd_input("binary", &data);
}

#[test]
fn nul_bytes_are_counted_not_fatal() {
    let mut data = corpus_bytes(TIMEOUT_LOG);
    data.extend_from_slice(
        b"\0\0\0\n[ 86420.000001s]  INFO ThreadId(01) linkerd2_proxy: a\0b\n\0\n",
    );
    // NULs in the middle of recognised lines too
    let policy = corpus_bytes(POLICY_LOG);
    for l in policy.split(|b| *b == b'\n') {
        data.extend_from_slice(&l[..l.len() / 2]);
        data.push(0);
        data.extend_from_slice(&l[l.len() / 2..]);
        data.push(b'\n');
    }
    check_odd_input("nul", &data);
}

#[test]
fn invalid_utf8_is_counted_not_fatal() {
    let mut data = Vec::new();
    for l in corpus_bytes(TIMEOUT_LOG).split(|b| *b == b'\n') {
        data.extend_from_slice(l);
        data.extend_from_slice(b" \xff\xfe\xc3\x28 \xe2\x82\n");
    }
    data.extend_from_slice(b"\xc3\n\xa0\xa1\n\xf0\x9f\x92");
    check_odd_input("utf8", &data);
}

#[test]
fn ten_megabyte_single_line_is_counted_not_fatal() {
    let mut data = corpus_bytes(TIMEOUT_LOG);
    data.extend(std::iter::repeat_n(b'x', 10 * 1024 * 1024));
    data.push(b'\n');
    data.extend_from_slice(&corpus_bytes(TIMEOUT_LOG));
    check_odd_input("long", &data);
}

#[test]
fn crlf_line_endings_are_read_like_lf() {
    let lf = corpus_bytes(TIMEOUT_LOG);
    let crlf: Vec<u8> = String::from_utf8(lf.clone())
        .unwrap()
        .replace('\n', "\r\n")
        .into_bytes();
    check_odd_input("crlf", &crlf);
    let tmp = Tmp::new("crlf2");
    let a = tmp.write("lf.log", &lf);
    let b = tmp.write("crlf.log", &crlf);
    let ja = lpa(&["explain", "--format", "json", &p(&a)]).json();
    let jb = lpa(&["explain", "--format", "json", &p(&b)]).json();
    assert_eq!(ids(&ja), ids(&jb), "CRLF must give the same findings as LF");
    assert_eq!(
        ja["input"], jb["input"],
        "CRLF must parse the same events as LF"
    );
    let r = lpa(&["parse", &p(&b)]);
    assert!(
        !r.out().contains("\\r"),
        "a carriage return leaked into parse output{}",
        r.ctx()
    );
}

#[test]
fn truncated_json_is_counted_not_fatal() {
    // every prefix of a real JSON proxy line, and of a plain one
    let json = corpus_bytes("connect-timeout-edge-json.log");
    let plain = corpus_bytes(TIMEOUT_LOG);
    let mut data = Vec::new();
    for src in [&json, &plain] {
        for l in src.split(|b| *b == b'\n').take(4) {
            for i in (0..l.len()).step_by(5) {
                data.extend_from_slice(&l[..i]);
                data.push(b'\n');
            }
        }
    }
    data.extend_from_slice(b"{\"timestamp\":\"2024-01-01T00:00:00Z\",\"level\":\"INFO\",\"fields\":{\"message\":\"hi\"\n{\"a\":\n{\"level\":\"WARN\",\"fie");
    check_odd_input("truncjson", &data);
}

#[test]
fn empty_file_exits_0() {
    let tmp = Tmp::new("empty");
    let f = p(&tmp.write("empty.log", b""));
    let r = lpa(&["parse", f.as_str()]);
    r.assert_code(0).assert_no_panic();
    assert!(
        r.stdout.is_empty(),
        "parse of an empty file prints nothing{}",
        r.ctx()
    );
    let r = lpa(&["explain", "--format", "json", f.as_str()]);
    r.assert_code(0).assert_no_panic();
    assert_eq!(r.json()["input"]["lines"], 0);
    assert!(r.json()["findings"].as_array().unwrap().is_empty());
    lpa(&["explain", f.as_str()])
        .assert_code(0)
        .assert_no_panic();
    lpa(&["summarize", f.as_str()])
        .assert_code(0)
        .assert_no_panic();
    lpa(&["triage", f.as_str()])
        .assert_code(0)
        .assert_no_panic();
    // empty stdin too
    lpa_stdin(&["explain"], b"")
        .assert_code(0)
        .assert_no_panic();
}

#[test]
fn input_without_linkerd_lines_gets_a_note_on_what_lpa_reads() {
    let text = b"Hello, this is my application.\nGET /index.html 200\nnothing to see here\n";
    let tmp = Tmp::new("nolinkerd");
    let f = p(&tmp.write("app.log", text));
    let r = lpa(&["explain", f.as_str()]);
    r.assert_code(0).assert_no_panic();
    let all = r.out() + &r.err();
    assert!(
        all.contains("kubectl logs POD -c linkerd-proxy"),
        "explain must say lpa expects e.g. `kubectl logs POD -c linkerd-proxy`{}",
        r.ctx()
    );
    let r = lpa(&["explain", "--format", "json", f.as_str()]);
    r.assert_code(0);
    let j = r.json();
    assert_eq!(j["input"]["lines"], 3);
    assert_eq!(j["input"]["unparsed"], 3);
    assert!(
        j["notes"].as_array().is_some_and(|n| n.iter().any(|s| s
            .as_str()
            .unwrap_or("")
            .contains("kubectl logs POD -c linkerd-proxy"))),
        "the JSON notes must carry the hint{}",
        r.ctx()
    );
}

// ---------------------------------------------- 2. closed pipe ----

/// Runs `lpa ARGS BIG 2>ERR | head -1` in bash and returns lpa's own exit
/// status (PIPESTATUS[0]) and its stderr.
fn through_head(args: &[&str], big: &Path, tmp: &Tmp) -> (String, String) {
    let err = tmp.path("stderr.txt");
    let script = format!(
        "\"$LPA\" {} \"$BIG\" 2>\"$ERR\" | head -1 >/dev/null; echo \"${{PIPESTATUS[0]}}\"",
        args.join(" ")
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("LPA", LPA)
        .env("BIG", big)
        .env("ERR", &err)
        .output()
        .expect("run bash");
    (
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        fs::read_to_string(&err).unwrap_or_default(),
    )
}

#[test]
fn parse_into_a_closed_pipe_exits_0_quietly() {
    let tmp = Tmp::new("pipe");
    let big = tmp.write("big.log", &repeated(&[TIMEOUT_LOG], 3 << 20));
    for args in [&["parse"][..], &["--anonymize", "parse"][..]] {
        let (status, err) = through_head(args, &big, &tmp);
        assert_eq!(
            status,
            "0",
            "`lpa {} BIG | head -1`: lpa's exit status; stderr: {err}",
            args.join(" ")
        );
        assert!(
            err.is_empty(),
            "`lpa {} BIG | head -1` wrote to stderr: {err}",
            args.join(" ")
        );
    }
}

#[test]
fn follow_into_a_closed_pipe_exits_0_quietly() {
    let mut child = base(LPA)
        .args(["explain", "--follow"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let err_h = thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut child = KillOnDrop(child);
    stdin.write_all(&corpus_bytes(TIMEOUT_LOG)).unwrap();
    stdin.flush().unwrap();
    // read one line, then close the pipe like `| head -1`
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap();
    assert!(first.starts_with("+ "), "first follow line: {first:?}");
    // more input changes counts and adds findings: lpa must write again
    thread::sleep(Duration::from_millis(700));
    let _ = stdin.write_all(&corpus_bytes(TIMEOUT_LOG));
    thread::sleep(Duration::from_millis(700));
    let _ = stdin.write_all(&corpus_bytes(POLICY_LOG));
    thread::sleep(Duration::from_millis(700));
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            break None;
        }
        thread::sleep(Duration::from_millis(20));
    };
    let status = status.expect("lpa explain --follow did not exit after stdin closed");
    let err = err_h.join().unwrap();
    assert_eq!(status.code(), Some(0), "exit status; stderr: {err}");
    assert!(!err.contains("panicked"), "panic on stderr: {err}");
    assert!(err.is_empty(), "stderr: {err}");
}

// --------------------------------------------------- 3. inputs ----

/// The set of evidence `source`s per finding id.
fn sources_by_id(j: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in j["findings"].as_array().unwrap() {
        let e = m.entry(f["id"].as_str().unwrap().to_string()).or_default();
        for ev in f["evidence"].as_array().unwrap() {
            e.insert(ev["source"].as_str().unwrap().to_string());
        }
        for c in f["consequences"].as_array().into_iter().flatten() {
            for ev in c["evidence"].as_array().into_iter().flatten() {
                if let Some(s) = ev["source"].as_str() {
                    e.insert(s.to_string());
                }
            }
        }
    }
    m
}

fn all_sources(j: &Value) -> BTreeSet<String> {
    sources_by_id(j).into_values().flatten().collect()
}

#[test]
fn several_files_make_one_report_citing_each_file() {
    let a = corpus(TIMEOUT_LOG);
    let b = corpus(POLICY_LOG);
    let r = lpa(&["explain", "--format", "json", &p(&a), &p(&b)]);
    r.assert_code(0);
    let j = r.json();
    let by = sources_by_id(&j);
    assert!(
        by.get("connect.timeout")
            .is_some_and(|s| s.contains(&p(&a))),
        "{by:?}"
    );
    assert!(
        by.get("policy.unauthorized")
            .is_some_and(|s| s.contains(&p(&b))),
        "{by:?}"
    );
    assert_eq!(
        j["input"]["lines"].as_u64(),
        Some(count_lines(&corpus_bytes(TIMEOUT_LOG)) + count_lines(&corpus_bytes(POLICY_LOG)))
    );
    // parse names each file too, and numbers lines per file
    let r = lpa(&["parse", &p(&a), &p(&b)]);
    let recs = r.json_lines();
    let srcs: BTreeSet<&str> = recs.iter().map(|v| v["source"].as_str().unwrap()).collect();
    assert_eq!(srcs, BTreeSet::from([p(&a).as_str(), p(&b).as_str()]));
    let first_b = recs.iter().find(|v| v["source"] == p(&b)).unwrap();
    assert_eq!(first_b["line"], 1, "line numbers restart per file");
}

/// A directory holding two logs, a gzipped log and a text file that must be ignored.
fn log_dir(tmp: &Tmp) -> PathBuf {
    let dir = tmp.path("logs");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("a.log"), corpus_bytes(TIMEOUT_LOG)).unwrap();
    fs::write(dir.join("b.log"), corpus_bytes(POLICY_LOG)).unwrap();
    // not a *.log: would add lifecycle.proxy-init-iptables if read
    fs::write(
        dir.join("notes.txt"),
        corpus_bytes("proxy-init-iptables-2.10.log"),
    )
    .unwrap();
    dir
}

#[test]
fn directory_reads_its_log_files() {
    let tmp = Tmp::new("dir");
    let dir = log_dir(&tmp);
    gz_write(&dir.join("c.log.gz"), &[&corpus_bytes(NO_ENDPOINTS_LOG)]);
    let r = lpa(&["explain", "--format", "json", &p(&dir)]);
    r.assert_code(0);
    let j = r.json();
    let got = ids(&j);
    let srcs = all_sources(&j);
    for (file, id) in [
        ("a.log", "connect.timeout"),
        ("b.log", "policy.unauthorized"),
        ("c.log.gz", "discovery.no-endpoints"),
    ] {
        assert!(got.iter().any(|g| g == id), "{id} missing from {got:?}");
        assert!(
            srcs.iter().any(|s| s.ends_with(file)),
            "{file} not cited: {srcs:?}"
        );
    }
    assert!(
        !got.iter().any(|g| g == "lifecycle.proxy-init-iptables"),
        "notes.txt was read: {got:?}"
    );
    let want = [TIMEOUT_LOG, POLICY_LOG, NO_ENDPOINTS_LOG]
        .iter()
        .map(|f| count_lines(&corpus_bytes(f)))
        .sum::<u64>();
    assert_eq!(j["input"]["lines"].as_u64(), Some(want), "{}", r.ctx());
}

#[test]
fn quoted_glob_is_expanded_by_lpa() {
    let tmp = Tmp::new("glob");
    let dir = log_dir(&tmp);
    let pattern = format!("{}/*.log", p(&dir));
    // passed as one argument, as the shell passes 'dir/*.log'
    let r = lpa(&["explain", "--format", "json", pattern.as_str()]);
    r.assert_code(0);
    let j = r.json();
    let srcs = all_sources(&j);
    assert!(srcs.contains(&p(&dir.join("a.log"))), "{srcs:?}");
    assert!(srcs.contains(&p(&dir.join("b.log"))), "{srcs:?}");
    assert!(!ids(&j).iter().any(|g| g == "lifecycle.proxy-init-iptables"));
    assert_eq!(
        j["input"]["lines"].as_u64(),
        Some(count_lines(&corpus_bytes(TIMEOUT_LOG)) + count_lines(&corpus_bytes(POLICY_LOG)))
    );
    // and through a real shell, quoted
    let out = Command::new("sh")
        .arg("-c")
        .arg("\"$LPA\" parse \"$DIR\"/'*.log' | wc -l")
        .env("LPA", LPA)
        .env("DIR", &dir)
        .output()
        .unwrap();
    let n: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_eq!(
        n,
        count_lines(&corpus_bytes(TIMEOUT_LOG)) + count_lines(&corpus_bytes(POLICY_LOG))
    );
}

fn gz_write(path: &Path, members: &[&[u8]]) {
    let mut out = Vec::new();
    for m in members {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(m).unwrap();
        out.extend_from_slice(&e.finish().unwrap());
    }
    fs::write(path, out).unwrap();
}

#[test]
fn gzip_file_is_read_transparently() {
    let tmp = Tmp::new("gz");
    let plain = corpus_bytes(TIMEOUT_LOG);
    let gz = tmp.path("proxy.log.gz");
    gz_write(&gz, &[&plain]);
    let plain_f = tmp.write("proxy.log", &plain);
    let jg = lpa(&["explain", "--format", "json", &p(&gz)]);
    jg.assert_code(0);
    let jp = lpa(&["explain", "--format", "json", &p(&plain_f)]);
    assert_eq!(ids(&jg.json()), ids(&jp.json()));
    assert_eq!(jg.json()["input"], jp.json()["input"]);
    assert!(all_sources(&jg.json()).contains(&p(&gz)));
    // a gzip file under any name, and several members (rotated logs concatenated)
    let odd = tmp.path("proxy.gzipped");
    gz_write(&odd, &[&plain, &corpus_bytes(POLICY_LOG)]);
    let r = lpa(&["explain", "--format", "json", &p(&odd)]);
    r.assert_code(0);
    let j = r.json();
    assert_eq!(
        j["input"]["lines"].as_u64(),
        Some(count_lines(&plain) + count_lines(&corpus_bytes(POLICY_LOG))),
        "{}",
        r.ctx()
    );
    assert!(ids(&j).contains(&"policy.unauthorized".to_string()));
    // gzip piped to stdin (`kubectl logs … | gzip`, a `.gz` attachment)
    let r = lpa_stdin(&["explain", "--format", "json"], &fs::read(&gz).unwrap());
    r.assert_code(0);
    assert_eq!(ids(&r.json()), ids(&jp.json()), "{}", r.ctx());
    assert_eq!(r.json()["input"]["lines"], jp.json()["input"]["lines"]);
    // parse of the .gz equals parse of the plain file but for the source
    let a = lpa(&["parse", &p(&gz)]).out().replace(&p(&gz), "X");
    let b = lpa(&["parse", &p(&plain_f)])
        .out()
        .replace(&p(&plain_f), "X");
    assert_eq!(a, b);
}

#[test]
fn dash_and_no_file_read_stdin() {
    let data = corpus_bytes(TIMEOUT_LOG);
    for args in [
        &["explain", "--format", "json", "-"][..],
        &["explain", "--format", "json"][..],
    ] {
        let r = lpa_stdin(args, &data);
        r.assert_code(0);
        let j = r.json();
        assert_eq!(ids(&j)[0], "connect.timeout", "{}", r.ctx());
        assert_eq!(all_sources(&j), BTreeSet::from(["stdin".to_string()]));
        assert_eq!(j["input"]["lines"].as_u64(), Some(count_lines(&data)));
    }
    // stdin mixed with a file
    let r = run_cmd(
        lpa_cmd(&["explain", "--format", "json", "-", &p(&corpus(POLICY_LOG))]),
        Some(data.clone()),
        T,
    );
    let by = sources_by_id(&r.json());
    assert!(by["connect.timeout"].contains("stdin"), "{by:?}");
    assert!(
        by["policy.unauthorized"].contains(&p(&corpus(POLICY_LOG))),
        "{by:?}"
    );
    // parse and summarize read stdin too
    let r = lpa_stdin(&["parse", "-"], &data);
    assert_eq!(r.json_lines().len() as u64, count_lines(&data));
    lpa_stdin(&["summarize", "-"], &data).assert_code(0);
}

// ---------------------------------------------- 4. conventions ----

fn has_ansi(s: &[u8]) -> bool {
    s.windows(2).any(|w| w == b"\x1b[")
}

#[test]
fn color_always_never_and_no_color() {
    let f = p(&corpus(TIMEOUT_LOG));
    for cmd in ["explain", "summarize"] {
        let r = lpa(&["--color", "always", cmd, f.as_str()]);
        r.assert_code(0);
        assert!(
            has_ansi(&r.stdout),
            "--color always {cmd}: no ANSI escape{}",
            r.ctx()
        );

        let r = lpa(&["--color", "never", cmd, f.as_str()]);
        assert!(
            !has_ansi(&r.stdout),
            "--color never {cmd}: ANSI escape{}",
            r.ctx()
        );

        // stdout is a pipe here, so auto (the default) must be plain
        let r = lpa(&[cmd, f.as_str()]);
        assert!(
            !has_ansi(&r.stdout),
            "default {cmd} on a pipe: ANSI escape{}",
            r.ctx()
        );
        let r = lpa(&["--color", "auto", cmd, f.as_str()]);
        assert!(
            !has_ansi(&r.stdout),
            "--color auto {cmd} on a pipe: ANSI escape{}",
            r.ctx()
        );

        let mut c = lpa_cmd(&[cmd, f.as_str()]);
        c.env("NO_COLOR", "1");
        let r = run_cmd(c, None, T);
        r.assert_code(0);
        assert!(
            !has_ansi(&r.stdout),
            "NO_COLOR=1 {cmd}: ANSI escape{}",
            r.ctx()
        );
    }
    // JSON never carries colour
    let r = lpa(&[
        "--color",
        "always",
        "explain",
        "--format",
        "json",
        f.as_str(),
    ]);
    assert!(!has_ansi(&r.stdout));
    r.json();
}

#[test]
fn fail_on_critical() {
    let r = lpa(&["explain", "--fail-on", "critical", &p(&corpus(TIMEOUT_LOG))]);
    r.assert_code(1);
    assert!(
        r.out().contains("connect.timeout"),
        "the report is still printed{}",
        r.ctx()
    );
    lpa(&["explain", "--fail-on", "critical", &p(&corpus(HEALTHY_LOG))]).assert_code(0);
    // a warning is not critical
    lpa(&["explain", "--fail-on", "critical", &p(&corpus(WARNING_LOG))]).assert_code(0);
    // without --fail-on a finding never fails
    lpa(&["explain", &p(&corpus(TIMEOUT_LOG))]).assert_code(0);
    // json and markdown too, and triage
    lpa(&[
        "explain",
        "--format",
        "json",
        "--fail-on",
        "critical",
        &p(&corpus(TIMEOUT_LOG)),
    ])
    .assert_code(1);
    lpa(&[
        "explain",
        "--format",
        "markdown",
        "--fail-on",
        "critical",
        &p(&corpus(TIMEOUT_LOG)),
    ])
    .assert_code(1);
    lpa(&["triage", "--fail-on", "critical", &p(&corpus(TIMEOUT_LOG))]).assert_code(1);
}

#[test]
fn fail_on_warning() {
    lpa(&["explain", "--fail-on", "warning", &p(&corpus(TIMEOUT_LOG))]).assert_code(1);
    lpa(&["explain", "--fail-on", "warning", &p(&corpus(HEALTHY_LOG))]).assert_code(0);
    lpa(&["explain", "--fail-on", "warning", &p(&corpus(WARNING_LOG))]).assert_code(1);
    // a benign info finding is below warning
    lpa(&["explain", "--fail-on", "warning", &p(&corpus(BENIGN_LOG))]).assert_code(0);
}

#[test]
fn quiet_prints_nothing_but_keeps_the_exit_status() {
    let bad = p(&corpus(TIMEOUT_LOG));
    let good = p(&corpus(HEALTHY_LOG));
    let r = lpa(&["--quiet", "explain", "--fail-on", "critical", bad.as_str()]);
    r.assert_code(1);
    assert!(r.stdout.is_empty(), "--quiet printed{}", r.ctx());
    let r = lpa(&["explain", "-q", "--fail-on", "critical", good.as_str()]);
    r.assert_code(0);
    assert!(r.stdout.is_empty(), "-q printed{}", r.ctx());
    for args in [
        vec!["-q", "explain", "--format", "json", bad.as_str()],
        vec!["-q", "parse", bad.as_str()],
        vec!["-q", "summarize", bad.as_str()],
        vec!["-q", "triage", bad.as_str()],
    ] {
        let r = lpa(&args);
        r.assert_code(0);
        assert!(r.stdout.is_empty(), "--quiet printed{}", r.ctx());
    }
    // follow mode on stdin: no `+` lines, no final report
    let r = lpa_stdin(
        &["-q", "explain", "--follow", "--fail-on", "critical"],
        &corpus_bytes(TIMEOUT_LOG),
    );
    r.assert_code(1);
    assert!(r.stdout.is_empty(), "--quiet --follow printed{}", r.ctx());
    // errors still go to stderr
    let r = lpa(&["-q", "explain", "/nonexistent/dir/x.log"]);
    r.assert_code(2);
    assert!(!r.err().is_empty());
}

fn assert_help_has_examples(sub: &str) {
    let r = lpa(&[sub, "--help"]);
    r.assert_code(0);
    assert!(
        r.out().contains("Examples"),
        "`lpa {sub} --help` has no \"Examples\"{}",
        r.ctx()
    );
    let r = lpa(&["help", sub]);
    r.assert_code(0);
    assert!(
        r.out().contains("Examples"),
        "`lpa help {sub}` has no \"Examples\"{}",
        r.ctx()
    );
}

#[test]
fn help_parse_has_examples() {
    assert_help_has_examples("parse");
}

#[test]
fn help_explain_has_examples() {
    assert_help_has_examples("explain");
}

#[test]
fn help_summarize_has_examples() {
    assert_help_has_examples("summarize");
}

#[test]
fn help_triage_has_examples() {
    assert_help_has_examples("triage");
}

#[test]
fn help_rules_has_examples() {
    assert_help_has_examples("rules");
}

#[test]
fn help_completions_has_examples() {
    assert_help_has_examples("completions");
}

#[test]
fn help_man_has_examples() {
    assert_help_has_examples("man");
}

#[test]
fn top_level_help_and_version() {
    let r = lpa(&["--help"]);
    r.assert_code(0);
    assert!(r.out().contains("Examples"));
    for sub in [
        "parse",
        "explain",
        "summarize",
        "triage",
        "rules",
        "completions",
        "man",
    ] {
        assert!(r.out().contains(sub), "--help does not list {sub}");
    }
    let r = lpa(&["--version"]);
    r.assert_code(0);
    assert!(r.out().starts_with("lpa "), "{}", r.ctx());
    // usage errors are status 2
    lpa(&["explain", "--no-such-flag"]).assert_code(2);
    lpa(&["frobnicate"]).assert_code(2);
    lpa(&["explain", "--format", "yaml"]).assert_code(2);
}

const SUBCOMMANDS: [&str; 7] = [
    "parse",
    "explain",
    "summarize",
    "triage",
    "rules",
    "completions",
    "man",
];

#[test]
fn completions_for_bash_zsh_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let r = lpa(&["completions", shell]);
        r.assert_code(0).assert_no_panic();
        let out = r.out();
        assert!(out.len() > 200, "{shell} completion too short{}", r.ctx());
        for sub in SUBCOMMANDS {
            assert!(
                out.contains(sub),
                "{shell} completion does not mention {sub}"
            );
        }
        assert!(
            out.contains("--fail-on") || out.contains("fail-on"),
            "{shell}: no flags"
        );
    }
    lpa(&["completions", "tcsh"]).assert_code(2);
}

#[test]
fn man_page_is_roff() {
    let r = lpa(&["man"]);
    r.assert_code(0);
    let out = r.out();
    assert!(
        out.lines().any(|l| l.starts_with(".TH")),
        "no .TH{}",
        r.ctx()
    );
    assert!(out.contains(".SH"), "no .SH section");
    for sub in SUBCOMMANDS {
        assert!(out.contains(sub), "man page does not mention {sub}");
    }
    // A command's own page documents its flags.
    let r = lpa(&["man", "explain"]);
    r.assert_code(0);
    let out = r.out();
    assert!(out.contains(".TH lpa-explain"), "{}", r.ctx());
    for flag in ["follow", "fail\\-on", "rules"] {
        assert!(
            out.contains(flag),
            "lpa man explain lacks --{flag}{}",
            r.ctx()
        );
    }
    let r = lpa(&["man", "nonsense"]);
    r.assert_code(2);
    assert!(r.err().contains("no command 'nonsense'"), "{}", r.ctx());
}

#[test]
fn kubectl_plugin_works_like_lpa() {
    let f = p(&corpus(TIMEOUT_LOG));
    for args in [
        vec!["explain", "--format", "json", f.as_str()],
        vec!["explain", "--color", "never", f.as_str()],
        vec!["explain", "--format", "markdown", f.as_str()],
    ] {
        let a = run_cmd(
            {
                let mut c = base(KUBECTL_LPA);
                c.args(&args);
                c
            },
            None,
            T,
        );
        let b = lpa(&args);
        a.assert_code(0).assert_no_panic();
        assert_eq!(a.out(), b.out(), "kubectl-lpa {args:?} differs from lpa");
    }
    let r = run_cmd(
        {
            let mut c = base(KUBECTL_LPA);
            c.args(["explain", "--quiet", "--fail-on", "critical", f.as_str()]);
            c
        },
        None,
        T,
    );
    r.assert_code(1);
    assert!(r.stdout.is_empty());
    // reads stdin as `kubectl logs … | kubectl lpa explain` does
    let r = run_cmd(
        {
            let mut c = base(KUBECTL_LPA);
            c.args(["explain", "--format", "json"]);
            c
        },
        Some(corpus_bytes(TIMEOUT_LOG)),
        T,
    );
    assert_eq!(ids(&r.json())[0], "connect.timeout");
    let r = run_cmd(
        {
            let mut c = base(KUBECTL_LPA);
            c.arg("--help");
            c
        },
        None,
        T,
    );
    r.assert_code(0);
    assert!(r.out().contains("explain"));
}

// ------------------------------------------------ 5. anonymize ----

static IPV4_RE: std::sync::LazyLock<Regex> =
    std::sync::LazyLock::new(|| Regex::new(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b").unwrap());

fn ipv4s(text: &str) -> Vec<String> {
    IPV4_RE
        .find_iter(text)
        .map(|m| m.as_str().to_string())
        .collect()
}

fn is_public_ip(ip: &str) -> bool {
    ip.starts_with("127.") || ip.starts_with("0.")
}

fn is_public_ns(ns: &str) -> bool {
    ns.starts_with("linkerd") || ns == "kube-system" || ns == "default" || ns == "cluster"
}

/// Namespace, service, service-account and pod names a log reveals.
fn names_in(log: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let dns = Regex::new(r"\b([a-z0-9][a-z0-9-]*)\.([a-z0-9][a-z0-9-]*)\.(svc|serviceaccount)\.")
        .unwrap();
    for c in dns.captures_iter(log) {
        if !is_public_ns(&c[2]) {
            names.insert(c[2].to_string());
        }
        if !c[1].starts_with("linkerd") {
            names.insert(c[1].to_string());
        }
    }
    let svc = Regex::new(r"service\{ns=([a-z0-9-]+) name=([a-z0-9-]+)").unwrap();
    for c in svc.captures_iter(log) {
        if !is_public_ns(&c[1]) {
            names.insert(c[1].to_string());
            names.insert(c[2].to_string());
        }
    }
    let pod = Regex::new(r"\b([a-z][a-z0-9-]*?)-([a-z0-9]{8,10})-([a-z0-9]{5})\b").unwrap();
    for c in pod.captures_iter(log) {
        if !c[1].starts_with("linkerd") {
            names.insert(c[0].to_string());
            // the random suffix alone identifies the pod
            names.insert(c[3].to_string());
        }
    }
    names
}

/// Occurrences of `name` in `text` as a whole name (not inside a longer one).
fn contains_name(text: &str, name: &str) -> Option<usize> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let is_suffix =
        !name.contains('-') && name.len() == 5 && name.bytes().any(|b| b.is_ascii_digit());
    text.match_indices(name).map(|(i, _)| i).find(|&i| {
        if is_suffix {
            // pod suffixes (random, with a digit): any occurrence
            return true;
        }
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// Runs `lpa ARGS LOG` with and without `--anonymize`; returns what leaked
/// or was inconsistent (empty: all good) and the plain→placeholder map.
fn anonymize_problems(
    log: &str,
    args: &[&str],
    only_names: Option<&[&str]>,
) -> (Vec<String>, HashMap<String, BTreeSet<String>>, Vec<String>) {
    let path = p(&corpus(log));
    let input = String::from_utf8_lossy(&corpus_bytes(log)).into_owned();
    let input_ips: BTreeSet<String> = ipv4s(&input)
        .into_iter()
        .filter(|ip| !is_public_ip(ip))
        .collect();
    let mut names = names_in(&input);
    if let Some(only) = only_names {
        for n in only {
            assert!(input.contains(n), "{log} does not hold {n}");
        }
        names = only.iter().map(|n| n.to_string()).collect();
    }
    assert!(
        !names.is_empty() && !input_ips.is_empty(),
        "{log}: no names or IPs to hide"
    );

    let mut plain_args: Vec<&str> = args.to_vec();
    plain_args.push(&path);
    let mut anon_args = vec!["--anonymize"];
    anon_args.extend_from_slice(&plain_args);
    let plain = lpa(&plain_args);
    plain.assert_code(0);
    let anon = lpa(&anon_args);
    anon.assert_code(0).assert_no_panic();
    let (po, ao) = (plain.out(), anon.out());
    let what = format!("lpa {}", anon_args.join(" "));
    assert!(!ao.trim().is_empty(), "{what}: no output");

    let mut problems = Vec::new();
    let anon_ips = ipv4s(&ao);
    for ip in &anon_ips {
        if input_ips.contains(ip) {
            problems.push(format!("{what}: input IP {ip} appears in the output"));
        }
    }
    for n in &names {
        if let Some(at) = contains_name(&ao, n) {
            let ctx: String = ao[at..].chars().take(n.len() + 40).collect();
            let pre: String = ao[..at]
                .chars()
                .rev()
                .take(60)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            problems.push(format!(
                "{what}: name {n:?} appears in the output: …{}…",
                format!("{pre}{ctx}").replace('\n', "⏎")
            ));
        }
    }
    // The IPs of the plain output, in order, against the anonymized one:
    // one real address, one placeholder, everywhere; distinct stay distinct.
    let plain_ips = ipv4s(&po);
    let mut map: HashMap<String, BTreeSet<String>> = HashMap::new();
    if plain_ips.len() != anon_ips.len() {
        problems.push(format!(
            "{what}: {} IPv4 addresses in the plain output, {} anonymized",
            plain_ips.len(),
            anon_ips.len()
        ));
    } else {
        for (r, a) in plain_ips.iter().zip(&anon_ips) {
            map.entry(r.clone()).or_default().insert(a.clone());
        }
        let mut back: HashMap<&String, &String> = HashMap::new();
        for (r, set) in &map {
            if set.len() > 1 {
                problems.push(format!("{what}: {r} became several placeholders: {set:?}"));
            }
            if is_public_ip(r) && !set.contains(r) {
                problems.push(format!(
                    "{what}: loopback/unspecified {r} was rewritten to {set:?}"
                ));
            }
            for a in set {
                if let Some(other) = back.insert(a, r) {
                    if other != r {
                        problems.push(format!("{what}: {r} and {other} share the placeholder {a}"));
                    }
                }
            }
        }
    }
    (problems, map, plain_ips)
}

/// The scenario's endpoint 10.42.7.15 is cited several times; all its
/// occurrences must map to one placeholder.
fn check_anonymized(log: &str, args: &[&str], repeated_ip: Option<&str>) {
    let (problems, map, plain_ips) = anonymize_problems(log, args, None);
    assert!(
        problems.is_empty(),
        "anonymization problems:\n  {}",
        problems.join("\n  ")
    );
    if let Some(ip) = repeated_ip {
        let n = plain_ips.iter().filter(|x| *x == ip).count();
        assert!(
            n >= 2,
            "lpa {args:?}: {ip} should appear several times in the plain output, got {n}"
        );
        let set = &map[ip];
        assert_eq!(set.len(), 1, "{ip} → {set:?}");
        assert!(!set.contains(ip), "{ip} was not replaced");
    }
}

const ENDPOINT_IP: &str = "10.42.7.15";

#[test]
fn anonymize_explain_human() {
    check_anonymized(
        TIMEOUT_LOG,
        &["explain", "--color", "never"],
        Some(ENDPOINT_IP),
    );
}

#[test]
fn anonymize_explain_json() {
    check_anonymized(
        TIMEOUT_LOG,
        &["explain", "--format", "json"],
        Some(ENDPOINT_IP),
    );
}

#[test]
fn anonymize_explain_markdown() {
    check_anonymized(
        TIMEOUT_LOG,
        &["explain", "--format", "markdown"],
        Some(ENDPOINT_IP),
    );
}

#[test]
fn anonymize_summarize() {
    check_anonymized(TIMEOUT_LOG, &["summarize", "--color", "never"], None);
    check_anonymized(TIMEOUT_LOG, &["summarize", "--format", "json"], None);
}

#[test]
fn anonymize_parse() {
    check_anonymized(TIMEOUT_LOG, &["parse"], Some(ENDPOINT_IP));
    // the JSON stays valid
    let r = lpa(&["--anonymize", "parse", &p(&corpus(TIMEOUT_LOG))]);
    assert_eq!(
        r.json_lines().len() as u64,
        count_lines(&corpus_bytes(TIMEOUT_LOG))
    );
}

#[test]
fn anonymize_json_stays_valid_json() {
    let r = lpa(&[
        "--anonymize",
        "explain",
        "--format",
        "json",
        &p(&corpus(TIMEOUT_LOG)),
    ]);
    let j = r.json();
    assert_eq!(ids(&j)[0], "connect.timeout");
    let r = lpa(&[
        "--anonymize",
        "summarize",
        "--format",
        "json",
        &p(&corpus(TIMEOUT_LOG)),
    ]);
    r.json();
}

#[test]
fn anonymize_hides_names_in_service_spans() {
    let mut all = Vec::new();
    for args in [
        &["explain", "--color", "never"][..],
        &["explain", "--format", "json"][..],
        &["explain", "--format", "markdown"][..],
        &["summarize", "--format", "json"][..],
        &["parse"][..],
    ] {
        all.extend(anonymize_problems(NO_ENDPOINTS_LOG, args, None).0);
    }
    assert!(
        all.is_empty(),
        "anonymization problems:\n  {}",
        all.join("\n  ")
    );
}

#[test]
fn anonymize_hides_prefixed_pod_names() {
    let mut all = Vec::new();
    for args in [
        &["explain", "--color", "never"][..],
        &["explain", "--format", "json"][..],
        &["summarize", "--color", "never"][..],
        &["summarize", "--format", "json"][..],
        &["parse"][..],
    ] {
        // the pod (and its random suffix) of the `[pod/NAME/container]`
        // prefix, and the namespaces of the identities; not "invoices",
        // which is also a URL path in this log
        all.extend(
            anonymize_problems(
                "policy-unauthorized-edge-prefix.log",
                args,
                Some(&[
                    "invoices-6d8b7f9c4-tq5lm",
                    "tq5lm",
                    "accounting",
                    "batch-export",
                    "jobs",
                ]),
            )
            .0,
        );
    }
    assert!(
        all.is_empty(),
        "anonymization problems:\n  {}",
        all.join("\n  ")
    );
}

// --------------------------------------------------- 6. rules ----

const RULES_UNKNOWN_ID: &str = r#"# my rules

[[rule]]
name = "my-rule"
id = "connect.nonsense"
severity = "critical"
title = "t"
explain = "e"
text = ["boom"]
"#;

const RULES_UNKNOWN_KEY: &str = r#"[[rule]]
name = "my-rule"
id = "connect.refused"
severity = "critical"
title = "t"
explain = "e"
textt = ["boom"]
"#;

const RULES_BAD_TOML: &str = r#"[[rule]]
name = "my-rule"
id = = "connect.refused"
"#;

const RULES_GOOD: &str = r#"# a site-specific rule
[[rule]]
name = "custom-frobnicator"
id = "resource.exhaustion"
severity = "critical"
confidence = 0.9
title = "The frobnicator overheated"
explain = "A custom rule matched the frobnicator message."
text = ["frobnicator overheated"]
[[rule.next]]
cmd = "kubectl get frobs"
why = "see them"
"#;

/// `FILE:LINE:` with LINE among `lines`, and a `hint:`.
fn assert_points_at(r: &Run, file: &Path, lines: &[u32]) {
    let err = r.err();
    let f = p(file);
    let at: Vec<String> = lines.iter().map(|l| format!("{f}:{l}:")).collect();
    assert!(
        at.iter().any(|a| err.contains(a.as_str())),
        "stderr must point at one of {at:?}{}",
        r.ctx()
    );
    assert!(
        err.contains("hint:"),
        "stderr must carry a hint:{}",
        r.ctx()
    );
}

#[test]
fn rules_check_unknown_diagnosis_id() {
    let tmp = Tmp::new("rules-id");
    let f = tmp.write("mine.toml", RULES_UNKNOWN_ID.as_bytes());
    let r = lpa(&["rules", "check", &p(&f)]);
    r.assert_code(2).assert_no_panic();
    // the rule (lines 3-4) or its id line (5)
    assert_points_at(&r, &f, &[3, 4, 5]);
    assert!(r.err().contains("connect.nonsense"), "{}", r.ctx());
}

#[test]
fn rules_check_unknown_key() {
    let tmp = Tmp::new("rules-key");
    let f = tmp.write("mine.toml", RULES_UNKNOWN_KEY.as_bytes());
    let r = lpa(&["rules", "check", &p(&f)]);
    r.assert_code(2).assert_no_panic();
    assert_points_at(&r, &f, &[7]);
    assert!(r.err().contains("textt"), "{}", r.ctx());
}

#[test]
fn rules_check_bad_toml() {
    let tmp = Tmp::new("rules-toml");
    let f = tmp.write("mine.toml", RULES_BAD_TOML.as_bytes());
    let r = lpa(&["rules", "check", &p(&f)]);
    r.assert_code(2).assert_no_panic();
    assert_points_at(&r, &f, &[3]);
}

#[test]
fn rules_check_valid_file() {
    let tmp = Tmp::new("rules-ok");
    let f = tmp.write("mine.toml", RULES_GOOD.as_bytes());
    let r = lpa(&["rules", "check", &p(&f)]);
    r.assert_code(0).assert_no_panic();
    assert!(r.err().is_empty(), "{}", r.ctx());
    assert!(r.out().contains("valid"), "{}", r.ctx());
    // a missing rules file is an input error
    lpa(&["rules", "check", &p(&tmp.path("nope.toml"))]).assert_code(2);
}

#[test]
fn explain_with_bad_rules_file_exits_2() {
    let tmp = Tmp::new("rules-explain");
    let log = p(&corpus(TIMEOUT_LOG));
    for (name, text) in [
        ("id.toml", RULES_UNKNOWN_ID),
        ("key.toml", RULES_UNKNOWN_KEY),
        ("toml.toml", RULES_BAD_TOML),
    ] {
        let f = tmp.write(name, text.as_bytes());
        let r = lpa(&["explain", "--rules", &p(&f), log.as_str()]);
        r.assert_code(2).assert_no_panic();
        assert!(
            r.err().contains(&format!("{}:", p(&f))),
            "stderr must name the rules file{}",
            r.ctx()
        );
        assert!(
            r.stdout.is_empty(),
            "no report with a bad rules file{}",
            r.ctx()
        );
    }
    let r = lpa(&[
        "explain",
        "--rules",
        &p(&tmp.path("missing.toml")),
        log.as_str(),
    ]);
    r.assert_code(2);
}

#[test]
fn user_rule_adds_a_finding() {
    let tmp = Tmp::new("rules-user");
    let rules = tmp.write("mine.toml", RULES_GOOD.as_bytes());
    let mut log = corpus_bytes(HEALTHY_LOG);
    log.extend_from_slice(
        b"[    30.000001s]  WARN ThreadId(01) linkerd_app: frobnicator overheated temp=99\n",
    );
    log.extend_from_slice(
        b"[    31.000001s]  WARN ThreadId(01) linkerd_app: frobnicator overheated temp=98\n",
    );
    let lf = tmp.write("proxy.log", &log);
    let without = lpa(&["explain", "--format", "json", &p(&lf)]).json();
    assert!(
        !without["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["title"] == "The frobnicator overheated"),
        "the built-in rules should not know the frobnicator"
    );
    let r = lpa(&[
        "explain",
        "--format",
        "json",
        "--rules",
        &p(&rules),
        &p(&lf),
    ]);
    r.assert_code(0);
    let j = r.json();
    let f = j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["title"] == "The frobnicator overheated")
        .unwrap_or_else(|| panic!("the user rule's finding is missing{}", r.ctx()));
    assert_eq!(f["id"], "resource.exhaustion");
    assert_eq!(f["count"], 2);
    assert_eq!(f["evidence"][0]["source"], p(&lf));
    let last = count_lines(&log);
    let lines: BTreeSet<u64> = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, BTreeSet::from([last - 1, last]));
    assert_eq!(f["next_commands"][0]["command"], "kubectl get frobs");
    // and --fail-on sees it
    lpa(&[
        "explain",
        "-q",
        "--fail-on",
        "critical",
        "--rules",
        &p(&rules),
        &p(&lf),
    ])
    .assert_code(1);
    // rules list shows the user rule under its id
    let r = lpa(&["rules", "list", "--rules", &p(&rules)]);
    r.assert_code(0);
    assert!(
        r.out()
            .lines()
            .any(|l| l.starts_with("resource.exhaustion") && l.contains("custom-frobnicator")),
        "{}",
        r.ctx()
    );
}

#[test]
fn rules_show_prints_a_rule_as_toml() {
    // A rule by name; an id's rules with --toml (without, its page).
    for args in [&["connect-timeout"][..], &["connect.timeout", "--toml"]] {
        let mut a = vec!["rules", "show"];
        a.extend_from_slice(args);
        let r = lpa(&a);
        r.assert_code(0).assert_no_panic();
        let out = r.out();
        assert!(
            out.contains("[[rule]]") && out.contains("connect-timeout"),
            "{}",
            r.ctx()
        );
        // it is a template for a user's own file: it must pass `rules check`
        let tmp = Tmp::new("rules-show");
        let f = tmp.write("shown.toml", out.as_bytes());
        lpa(&["rules", "check", &p(&f)]).assert_code(0);
    }
    let r = lpa(&["rules", "show", "no-such-rule"]);
    r.assert_code(2);
}

// -------------------------------------------------- 7. follow ----

#[test]
fn follow_stdin_prints_findings_before_the_input_ends() {
    let mut child = base(LPA)
        .args(["explain", "--follow", "--color", "never"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let rx = line_reader(child.stdout.take().unwrap());
    let err_rx = line_reader(child.stderr.take().unwrap());
    let mut child = KillOnDrop(child);

    // a slow writer: the scenario's lines in a few bursts, stdin left open
    let data = corpus_bytes(TIMEOUT_LOG);
    let lines: Vec<&[u8]> = data.split_inclusive(|b| *b == b'\n').collect();
    for chunk in lines.chunks(lines.len() / 3 + 1) {
        for l in chunk {
            stdin.write_all(l).unwrap();
        }
        stdin.flush().unwrap();
        thread::sleep(Duration::from_millis(150));
    }
    let mut seen = Vec::new();
    let found = wait_for_line(&rx, &mut seen, Duration::from_millis(6000), |l| {
        l.starts_with("+ ") && l.contains("connect.timeout")
    });
    assert!(
        found,
        "no `+ … connect.timeout` line while stdin was still open; got: {seen:?}"
    );
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "lpa exited before stdin closed"
    );
    let plus_at = seen.len();

    // end of input: the final ranked report follows, then exit 0
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "lpa did not exit after stdin closed; output: {seen:?}"
        );
        thread::sleep(Duration::from_millis(20));
    };
    while let Ok(l) = rx.recv_timeout(Duration::from_secs(5)) {
        seen.push(l);
    }
    let err: Vec<String> = err_rx.try_iter().collect();
    assert_eq!(status.code(), Some(0), "exit status; stderr: {err:?}");
    assert!(
        !err.iter().any(|l| l.contains("panicked")),
        "stderr: {err:?}"
    );
    let rest = seen[plus_at..].concat();
    assert!(
        rest.contains("1. CRITICAL connect.timeout"),
        "the final report must follow the `+` line; after it: {rest}"
    );
    assert!(
        rest.contains("$ linkerd diagnostics endpoints"),
        "final report has next commands: {rest}"
    );
}

#[test]
fn follow_stdin_json_final_report() {
    // --format json: `+` lines while following, then one JSON document
    let r = lpa_stdin(
        &["explain", "--follow", "--format", "json"],
        &corpus_bytes(TIMEOUT_LOG),
    );
    r.assert_code(0).assert_no_panic();
    let out = r.out();
    let start = out.find("\n{").map(|i| i + 1).unwrap_or(0);
    let j: Value = serde_json::from_str(&out[start..])
        .unwrap_or_else(|e| panic!("final JSON: {e}{}", r.ctx()));
    assert_eq!(ids(&j)[0], "connect.timeout");
    assert_eq!(
        j["input"]["lines"].as_u64(),
        Some(count_lines(&corpus_bytes(TIMEOUT_LOG)))
    );
}

#[test]
fn follow_takes_at_most_one_file() {
    let a = p(&corpus(TIMEOUT_LOG));
    let b = p(&corpus(POLICY_LOG));
    let r = run_cmd(
        lpa_cmd(&["explain", "--follow", a.as_str(), b.as_str()]),
        None,
        Duration::from_secs(10),
    );
    r.assert_code(2).assert_no_panic();
}

#[test]
fn follow_file_across_growth_and_rotation() {
    let tmp = Tmp::new("follow-file");
    let f = tmp.write("proxy.log", &corpus_bytes(HEALTHY_LOG));
    let mut child = base(LPA)
        .args(["explain", "--follow", "--color", "never"])
        .arg(&f)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let rx = line_reader(child.stdout.take().unwrap());
    let err_rx = line_reader(child.stderr.take().unwrap());
    let mut child = KillOnDrop(child);
    thread::sleep(Duration::from_millis(600));

    // growth: append a failing scenario
    {
        let mut w = fs::OpenOptions::new().append(true).open(&f).unwrap();
        w.write_all(&corpus_bytes(TIMEOUT_LOG)).unwrap();
    }
    let mut seen = Vec::new();
    assert!(
        wait_for_line(&rx, &mut seen, Duration::from_secs(6), |l| l
            .starts_with("+ ")
            && l.contains("connect.timeout")),
        "appended lines were not reported: {seen:?}; stderr: {:?}",
        err_rx.try_iter().collect::<Vec<_>>()
    );

    // rotation: the old file moves away, a new one takes its name
    fs::rename(&f, tmp.path("proxy.log.1")).unwrap();
    fs::write(&f, corpus_bytes(POLICY_LOG)).unwrap();
    assert!(
        wait_for_line(&rx, &mut seen, Duration::from_secs(6), |l| l
            .starts_with("+ ")
            && l.contains("policy.unauthorized")),
        "lines of the new file after rotation were not reported: {seen:?}"
    );
    // the evidence cites the new file under the followed path, numbered
    // from its own start
    let cited = format!("{} (file 2):", p(&f));
    assert!(
        wait_for_line(&rx, &mut seen, Duration::from_secs(6), |l| l
            .trim_start()
            .starts_with(&cited)),
        "evidence should cite {cited}: {seen:?}"
    );
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "lpa stopped following"
    );
    let _ = child.0.kill();
    let _ = child.0.wait();
    let err: Vec<String> = err_rx.try_iter().collect();
    assert!(
        !err.iter().any(|l| l.contains("panicked")),
        "stderr: {err:?}"
    );
}

// ------------------------------------------------- 8. threads ----

#[test]
fn thread_count_does_not_change_output() {
    let tmp = Tmp::new("threads");
    let data = repeated(
        &[
            TIMEOUT_LOG,
            POLICY_LOG,
            "healthy-debug-traffic-2.12.log",
            "connect-timeout-edge-json.log",
            NO_ENDPOINTS_LOG,
            "resource-exhaustion-2.11.log",
            "policy-unauthorized-edge-prefix.log",
        ],
        // Three 4 MiB blocks (nine for parse): --threads 4 runs them at once.
        9 << 20,
    );
    let f = p(&tmp.write("mixed.log", &data));
    let want_lines = count_lines(&data);
    for args in [
        &["parse"][..],
        &["explain", "--format", "json"][..],
        &["summarize", "--format", "json"][..],
    ] {
        let run = |n: &str| {
            let mut a = args.to_vec();
            a.extend(["--threads", n, &f]);
            let r = lpa(&a);
            r.assert_code(0).assert_no_panic();
            r
        };
        let one = run("1");
        let four = run("4");
        assert!(
            one.stdout == four.stdout,
            "lpa --threads 1 {args:?} and --threads 4 differ ({} vs {} bytes)",
            one.stdout.len(),
            four.stdout.len()
        );
        if args[0] == "parse" {
            let recs = one.json_lines();
            let sum: u64 = recs.iter().map(|v| v["lines"].as_u64().unwrap()).sum();
            assert_eq!(sum, want_lines);
            // records cover the input in order, without gaps or overlaps
            let mut next = 1;
            for v in &recs {
                assert_eq!(v["line"].as_u64(), Some(next), "record out of order: {v}");
                next += v["lines"].as_u64().unwrap();
            }
        } else if args[0] == "explain" {
            assert_eq!(one.json()["input"]["lines"].as_u64(), Some(want_lines));
        }
    }
}

// ----------------------------------------------- 9. JSON contract ----

/// The contract's ids, written out here rather than taken from the library,
/// so that a change to the library's list cannot silently change the contract.
const IDS: [&str; 28] = [
    "identity.plaintext-to-mtls-port",
    "identity.trust-anchor-mismatch",
    "identity.certify-failed",
    "identity.issuer-expired",
    "identity.clock-skew",
    "policy.unauthorized",
    "discovery.no-endpoints",
    "discovery.controller-unreachable",
    "discovery.stale-endpoints",
    "discovery.pod-ip-conflict",
    "connect.refused",
    "connect.timeout",
    "connect.no-route",
    "protocol.detection-timeout",
    "protocol.misdetected",
    "config.opaque-ports-mismatch",
    "http.header-too-large",
    "http2.protocol-error",
    "timeout.response",
    "overload.loadshed",
    "multicluster.gateway-unreachable",
    "multicluster.link-credentials",
    "lifecycle.proxy-init-iptables",
    "lifecycle.startup-ordering",
    "lifecycle.sidecar-not-injected",
    "dns.resolution",
    "resource.exhaustion",
    "admin.non-http",
];

fn check_finding(f: &Value, log_lines: &[&str], source: &str) {
    let id = f["id"].as_str().expect("id string");
    assert!(IDS.contains(&id), "unknown id {id}");
    assert!(
        ["critical", "warning", "info"].contains(&f["severity"].as_str().expect("severity")),
        "{f}"
    );
    assert!(f["benign"].is_boolean(), "benign: {f}");
    let c = f["confidence"].as_f64().expect("confidence number");
    assert!((0.0..=1.0).contains(&c), "confidence {c}");
    assert!(!f["title"].as_str().expect("title").is_empty());
    assert!(!f["explanation"].as_str().expect("explanation").is_empty());
    assert!(f["count"].as_u64().expect("count") >= 1);
    let subjects = f["subjects"].as_object().expect("subjects object");
    for (k, v) in subjects {
        assert!(
            ["dst", "peer", "client", "port", "identity", "server", "pod", "target"]
                .contains(&k.as_str()),
            "unknown subject key {k}"
        );
        assert!(v.is_array() || v.is_string(), "subject {k}: {v}");
    }
    let ev = f["evidence"].as_array().expect("evidence array");
    assert!(
        !ev.is_empty() && ev.len() <= 5,
        "1..=5 evidence lines: {}",
        ev.len()
    );
    for e in ev {
        assert_eq!(e["source"].as_str(), Some(source));
        let line = e["line"].as_u64().expect("line") as usize;
        assert!(line >= 1 && line <= log_lines.len(), "line {line}");
        // the cited line, wrappers (e.g. `kubectl logs --timestamps`) removed
        let text = e["text"].as_str().expect("evidence text");
        assert!(
            !text.is_empty() && log_lines[line - 1].contains(text),
            "evidence text {text:?} is not line {line} of {source}: {:?}",
            log_lines[line - 1]
        );
    }
    for n in f["next_commands"].as_array().expect("next_commands array") {
        assert!(!n["command"].as_str().expect("command").is_empty());
        assert!(n["why"].is_string(), "why: {n}");
    }
}

#[test]
fn explain_json_contract() {
    for log in [TIMEOUT_LOG, POLICY_LOG, NO_ENDPOINTS_LOG, WARNING_LOG] {
        let path = p(&corpus(log));
        let data = String::from_utf8(corpus_bytes(log)).unwrap();
        let lines: Vec<&str> = data.lines().collect();
        let r = lpa(&["explain", "--format", "json", path.as_str()]);
        r.assert_code(0);
        let j = r.json();
        let findings = j["findings"].as_array().expect("findings array");
        assert!(!findings.is_empty(), "{log}: no finding");
        for f in findings {
            check_finding(f, &lines, &path);
        }
        assert!(
            findings
                .iter()
                .any(|f| !f["next_commands"].as_array().unwrap().is_empty()),
            "{log}: no next command at all"
        );
        let input = &j["input"];
        let (l, e, u) = (
            input["lines"].as_u64().expect("input.lines"),
            input["events"].as_u64().expect("input.events"),
            input["unparsed"].as_u64().expect("input.unparsed"),
        );
        assert_eq!(l, lines.len() as u64, "{log}: input.lines");
        assert!(e + u <= l && e > 0, "{log}: {input}");
        assert!(j["notes"].is_array() || j["notes"].is_null());
    }
    // the healthy log: an empty findings array, not a missing key
    let j = lpa(&["explain", "--format", "json", &p(&corpus(HEALTHY_LOG))]).json();
    assert_eq!(j["findings"], Value::Array(vec![]));
    assert!(j["input"]["events"].as_u64().unwrap() > 0);
}

#[test]
fn parse_json_contract() {
    let tmp = Tmp::new("parse-contract");
    let mut data = corpus_bytes(TIMEOUT_LOG);
    data.extend_from_slice(b"this is not a log line\n");
    data.extend_from_slice(&corpus_bytes("connect-timeout-edge-json.log"));
    let f = p(&tmp.write("mixed.log", &data));
    let r = lpa(&["parse", f.as_str()]);
    r.assert_code(0);
    let recs = r.json_lines();
    let mut kinds = BTreeSet::new();
    let mut next = 1;
    for v in &recs {
        let kind = v["kind"].as_str().expect("kind");
        kinds.insert(kind.to_string());
        assert_eq!(v["source"].as_str(), Some(f.as_str()));
        assert_eq!(v["line"].as_u64(), Some(next), "in input order: {v}");
        let n = v["lines"].as_u64().expect("lines");
        assert!(n >= 1);
        next += n;
        match kind {
            "event" => {
                assert!(
                    v["producer"].as_str().is_some_and(|s| !s.is_empty()),
                    "producer: {v}"
                );
                let spans = v["spans"].as_array().expect("spans array");
                for s in spans {
                    assert!(s["name"].is_string(), "span name: {v}");
                    assert!(s["fields"].is_object(), "span fields: {v}");
                }
                assert!(v["fields"].is_object(), "fields: {v}");
            }
            "unparsed" => {
                assert!(v["text"].is_string(), "text: {v}");
            }
            other => panic!("unknown kind {other}"),
        }
    }
    assert_eq!(next - 1, count_lines(&data));
    assert_eq!(
        kinds,
        BTreeSet::from(["event".to_string(), "unparsed".to_string()])
    );
    let un = recs.iter().find(|v| v["kind"] == "unparsed").unwrap();
    assert_eq!(un["text"], "this is not a log line");
    // a plain proxy line with spans and fields
    let first = &recs[0];
    assert_eq!(first["spans"][1]["name"], "accept");
    assert_eq!(
        first["spans"][1]["fields"]["client.addr"],
        "192.168.10.21:31872"
    );
    assert_eq!(first["fields"]["sz"], "0");
    // filters
    let r = lpa(&["parse", "--only", "unparsed", f.as_str()]);
    assert_eq!(r.json_lines().len(), 1);
    let r = lpa(&["parse", "--only", "events", f.as_str()]);
    assert!(r.json_lines().iter().all(|v| v["kind"] == "event"));
    let r = lpa(&["parse", "--level", "warn", f.as_str()]);
    let lv = r.json_lines();
    assert!(!lv.is_empty());
    assert!(
        lv.iter().all(|v| v["kind"] == "event"
            && ["warn", "error"].contains(&v["level"].as_str().unwrap_or(""))),
        "{}",
        r.ctx()
    );
}
