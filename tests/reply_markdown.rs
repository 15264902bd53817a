//! Every triage reply on the shipped tickets is CommonMark in which text
//! taken from the ticket stays in code: parsed with a CommonMark parser, a
//! backtick shows as text only where the reply escaped it (otherwise a code
//! span broke), and every evidence line is the content of a code block.

use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn lpa(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_lpa"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

fn tickets() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus/tickets");
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name()?.to_str()?;
            (p.extension()? == "txt").then(|| format!("corpus/tickets/{name}"))
        })
        .collect();
    v.sort();
    assert!(v.len() >= 10, "tickets: {v:?}");
    v
}

/// A backtick in text must be one the reply escaped (`\``) on purpose.
fn assert_spans_whole(what: &str, md: &str, text: &[String]) {
    let shown: usize = text.iter().map(|s| s.matches('`').count()).sum();
    let escaped = md.matches("\\`").count();
    assert!(
        shown <= escaped,
        "{what}: {shown} backticks shown as text, {escaped} escaped: a code span broke\n{md}"
    );
}

/// What a reply's parse shows: its text outside code, and its code blocks' lines.
fn read(md: &str) -> (Vec<String>, Vec<String>) {
    let (mut text, mut code) = (Vec::new(), Vec::new());
    let mut in_block = false;
    for ev in Parser::new(md) {
        match ev {
            Event::Start(Tag::CodeBlock(_)) => in_block = true,
            Event::End(TagEnd::CodeBlock) => in_block = false,
            Event::Text(t) if in_block => code.extend(t.lines().map(str::to_string)),
            Event::Text(t) => text.push(t.into_string()),
            // The reply's own `<sub>` footer is the only HTML it writes.
            Event::Html(h) | Event::InlineHtml(h) => {
                assert!(
                    h.starts_with("<sub>") || h.starts_with("</sub>"),
                    "HTML from the ticket: {h:?}\n{md}"
                )
            }
            _ => {}
        }
    }
    (text, code)
}

#[test]
fn replies_keep_ticket_text_in_code() {
    for t in tickets() {
        let md = lpa(&["triage", &t]);
        let (text, code) = read(&md);
        assert_spans_whole(&t, &md, &text);
        let doc: Value = serde_json::from_str(&lpa(&["triage", "--format", "json", &t])).unwrap();
        for f in doc["findings"].as_array().unwrap() {
            for e in f["evidence"].as_array().unwrap() {
                let line = e["text"].as_str().unwrap().lines().next().unwrap_or("");
                assert!(
                    code.iter().any(|c| c.contains(line)),
                    "{t}: evidence {line:?} is not inside a code block"
                );
            }
        }
    }
}

#[test]
fn hostile_ticket_text_cannot_become_markup() {
    let dir = std::env::temp_dir().join(format!("lpa-reply-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("t.txt");
    std::fs::write(
        &p,
        "We tried restarting ``` and <img src=x onerror=alert(1)> and [link](http://x) **twice**.\n\
         Our proxy says `Failed to proxy request: HTTP Balancer service in fail-fast` every time ```` on stable-2.14.1.\n\
         [   1.0s]  WARN ThreadId(01) outbound:proxy{addr=10.0.0.1:80}: linkerd_app_core::errors: Failed to proxy request: HTTP Balancer service in fail-fast ` <b>x</b>\n",
    )
    .unwrap();
    let md = lpa(&["triage", p.to_str().unwrap()]);
    let (text, _) = read(&md);
    assert_spans_whole("hostile", &md, &text);
    let links = Parser::new(&md)
        .filter(|e| matches!(e, Event::Start(Tag::Link { .. } | Tag::Image { .. })))
        .count();
    assert_eq!(links, 0, "a link or image from the ticket:\n{md}");
    std::fs::remove_dir_all(&dir).ok();
}
