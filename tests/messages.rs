//! The knowledge base, one message family at a time: every line of
//! tests/messages/*.tsv (`ID<TAB>line`, written from the message catalog's
//! facts) is explained alone, and the first finding must be ID, or, for
//! `quiet`, no finding may be a warning or critical.

use lpa::pipeline::process_block;
use lpa::rules::engine::Engine;
use std::path::Path;

fn engine() -> Engine {
    Engine::new(lpa::rules::load(&[]).expect("built-in rules"))
}

#[test]
fn every_message_family_gives_its_id() {
    let engine = engine();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/messages");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut fails = Vec::new();
    let mut n = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, row) in text.lines().enumerate() {
            if row.trim().is_empty() || row.starts_with('#') {
                continue;
            }
            let (want, line) = row
                .split_once('\t')
                .unwrap_or_else(|| panic!("{}:{}: no tab", f.display(), i + 1));
            // `\n` in a row stands for a line break (multi-line records).
            let input = line.replace("\\n", "\n") + "\n";
            let st = process_block("t", input.as_bytes(), 1, engine.whole_state());
            let report = st.finish(None);
            let ids: Vec<(&str, &str)> = report
                .findings
                .iter()
                .map(|f| (f.id.as_str(), f.severity))
                .collect();
            let ok = if want == "quiet" {
                ids.iter().all(|(_, s)| *s == "info")
            } else {
                ids.first().is_some_and(|(id, _)| *id == want)
            };
            n += 1;
            if !ok {
                fails.push(format!(
                    "{}:{}: want {want}, got {ids:?}\n    {line}",
                    f.file_name().unwrap().to_string_lossy(),
                    i + 1
                ));
            }
        }
    }
    assert!(
        fails.is_empty(),
        "{} of {n} message lines give the wrong verdict:\n{}",
        fails.len(),
        fails.join("\n")
    );
}
