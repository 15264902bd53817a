//! What a user sees first in a real terminal: the binary runs in a tmux
//! pseudo-terminal (a private server per test, `tmux -L lpa-test-PID-N`,
//! killed at the end) and the test reads the screen it shows, pager
//! included, as the user would before pressing a key.

use serde_json::Value;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const LPA: &str = env!("CARGO_BIN_EXE_lpa");
/// The README's quick-start log.
const QUICK_START: &str = "corpus/scenarios/connect-timeout-netpol-2.10.log";

fn path(rel: &str) -> String {
    format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// A tmux server of our own; dropping it kills that server only.
struct Tmux(String);

impl Tmux {
    fn new() -> Tmux {
        static N: AtomicUsize = AtomicUsize::new(0);
        Tmux(format!(
            "lpa-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ))
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.0)
            .args(["-f", "/dev/null"])
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `shell` in a `cols`×`rows` terminal and returns the screen once
    /// it has settled (the pager waiting for a key).
    fn screen(&self, cols: u16, rows: u16, shell: &str) -> String {
        // The trailing sleep keeps the pane (and its last screen) when the
        // pager quits by itself because everything fits.
        let cmd = format!("{shell}; sleep 30");
        self.run(&[
            "new-session",
            "-d",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
            "sh",
            "-c",
            &cmd,
        ]);
        let start = Instant::now();
        let mut last = String::new();
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let now = self.run(&["capture-pane", "-p", "-J"]);
            if now == last && now.contains("lpa explain:") {
                return now;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the screen never settled:\n{now}"
            );
            last = now;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

/// Whitespace runs as one space: wrapped prose compares with its source.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// lpa in the environment of a user with no pager or width configured,
/// plus `env` (`VAR=value …`).
fn shell(env: &str, args: &str) -> String {
    format!(
        "env -u PAGER -u LPA_PAGER -u LESS -u COLUMNS -u NO_COLOR TERM=xterm {env} {LPA} {args}"
    )
}

fn top_finding() -> Value {
    let out = Command::new(LPA)
        .args(["explain", "-o", "json", &path(QUICK_START)])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["findings"][0].clone()
}

fn assert_first_screen_answers(cols: u16, rows: u16) {
    let f = top_finding();
    let tmux = Tmux::new();
    let screen = tmux.screen(
        cols,
        rows,
        &shell("", &format!("explain {}", path(QUICK_START))),
    );
    assert!(
        screen.lines().count() <= rows as usize,
        "more rows than the terminal has:\n{screen}"
    );
    for l in screen.lines() {
        assert!(
            l.chars().count() <= cols as usize,
            "line wider than {cols}: {l}"
        );
    }
    let flat = squash(&screen);
    let sev = f["severity"].as_str().unwrap().to_uppercase();
    assert_eq!(
        sev, "CRITICAL",
        "the quick start's top finding is its critical cause"
    );
    for want in [
        sev,
        f["id"].as_str().unwrap().to_string(),
        squash(f["title"].as_str().unwrap()),
        f["next_commands"][0]["command"]
            .as_str()
            .unwrap()
            .to_string(),
    ] {
        assert!(
            flat.contains(&want),
            "the first {cols}x{rows} screen lacks {want:?}:\n{screen}"
        );
    }
}

#[test]
fn first_screen_at_80_columns_holds_the_answer() {
    assert_first_screen_answers(80, 24);
}

#[test]
fn first_screen_at_200_columns_holds_the_answer() {
    assert_first_screen_answers(200, 24);
}

#[test]
fn a_terminal_gets_the_pager_unless_no_pager() {
    let file = path(QUICK_START);
    let pager = "LPA_PAGER='sed s/^/PAGED:/'";
    let paged = Tmux::new().screen(200, 60, &shell(pager, &format!("explain {file}")));
    assert!(paged.contains("PAGED:lpa explain:"), "{paged}");
    let direct = Tmux::new().screen(
        200,
        60,
        &shell(pager, &format!("--no-pager explain {file}")),
    );
    assert!(!direct.contains("PAGED:"), "{direct}");
    assert!(direct.contains("CRITICAL"), "{direct}");
}

#[test]
fn a_pipe_never_gets_the_pager() {
    let out = Command::new(LPA)
        .args(["explain", &path(QUICK_START)])
        .env("LPA_PAGER", "sed s/^/PAGED:/")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("lpa explain:"), "{text}");
    assert!(!text.contains("PAGED:"), "{text}");
}
