//! Running the binary from the integration tests.

// Each test file compiles this module alone and uses only some of it.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};

pub const LPA: &str = env!("CARGO_BIN_EXE_lpa");

/// lpa with `args`, `columns` wide and without a pager, fed `stdin`.
pub fn run(args: &[&str], columns: &str, stdin: &str) -> Output {
    let mut child = Command::new(LPA)
        .args(args)
        .env("COLUMNS", columns)
        .env_remove("LPA_PAGER")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// lpa with `args`, its stdin a pipe the test writes to (its stdout and
/// stderr piped too).
pub fn piped(args: &[&str]) -> (Child, ChildStdin) {
    let mut child = Command::new(LPA)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    (child, stdin)
}

/// Its exit code and stdout, fed `stdin`, 80 columns wide.
pub fn code_and_stdout(args: &[&str], stdin: &str) -> (i32, String) {
    let out = run(args, "80", stdin);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The files of the project's folder `dir` named `*.ext`, sorted.
pub fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}
