//! Inputs through the binary: files are opened one at a time, and an input
//! that breaks off (a truncated `.gz`) is reported while the others still
//! give their report.

use std::path::PathBuf;
use std::process::Command;

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lpa-inputs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn line(i: usize) -> String {
    format!("[     {i}.000000s]  WARN ThreadId(01) linkerd_app: file {i}\n")
}

#[test]
fn two_hundred_files_under_an_fd_limit_of_32() {
    let dir = tmp("fds");
    for i in 0..200 {
        std::fs::write(dir.join(format!("f{i:03}.log")), line(i)).unwrap();
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -n 32 && exec "$0" summarize --format json "$1""#)
        .arg(env!("CARGO_BIN_EXE_lpa"))
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["overview"]["lines"], 200, "{err}");
    assert_eq!(doc["overview"]["sources"].as_object().unwrap().len(), 200);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_truncated_gz_is_reported_and_the_others_still_count() {
    use flate2::{write::GzEncoder, Compression};
    use std::io::Write;
    let dir = tmp("gz");
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    for i in 0..100_000 {
        gz.write_all(line(i).as_bytes()).unwrap();
    }
    let whole = gz.finish().unwrap();
    let broken = dir.join("broken.log.gz");
    std::fs::write(&broken, &whole[..whole.len() / 2]).unwrap();
    let good = dir.join("good.log");
    std::fs::write(&good, line(1)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lpa"))
        .args(["summarize", "--format", "json"])
        .arg(&broken)
        .arg(&good)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&*broken.to_string_lossy()), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sources = &doc["overview"]["sources"];
    assert_eq!(sources[&*good.to_string_lossy()]["lines"], 1);
    let read = sources[&*broken.to_string_lossy()]["lines"]
        .as_u64()
        .unwrap();
    assert!(read > 1000 && read < 100_000, "{read}");
    assert!(err.contains(&format!("{read} lines")), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file read in place that is truncated while lpa reads it (log
/// rotation by copytruncate) ends the run with a message and status 2,
/// never a bare SIGBUS; with `--no-mmap` what is left is read.
#[test]
fn a_file_truncated_while_it_is_read_is_told_not_a_crash() {
    use std::io::Read;
    let dir = tmp("truncated");
    let path = dir.join("rotated.log");
    let body: String = (0..400_000).map(line).collect();
    for (flag, code) in [(None, Some(2)), (Some("--no-mmap"), Some(0))] {
        std::fs::write(&path, &body).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lpa"));
        cmd.args(["parse", "--threads", "2"]).args(flag).arg(&path);
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Its output is not read meanwhile, so it waits a few MiB in.
        let mut out = child.stdout.take().unwrap();
        out.read_exact(&mut [0; 1 << 16]).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
        std::io::copy(&mut out, &mut std::io::sink()).unwrap();
        let status = child.wait().unwrap();
        let mut err = String::new();
        child.stderr.unwrap().read_to_string(&mut err).unwrap();
        assert_eq!(status.code(), code, "{flag:?}: {err}");
        assert_eq!(
            err.contains("shrank while it was read"),
            flag.is_none(),
            "{flag:?}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
