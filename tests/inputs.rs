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
