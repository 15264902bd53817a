//! `lpa rules` lists the diagnosis ids; `lpa rules show ID` prints the id's
//! page, whose evidence and commands come from the rules lpa runs (a user's
//! `--rules` file shows on it too); findings point at it.

mod common;

fn lpa(args: &[&str]) -> (i32, String) {
    common::code_and_stdout(args, "")
}

#[test]
fn rules_alone_lists_every_id() {
    let (code, out) = lpa(&["rules"]);
    assert_eq!(code, 0);
    for id in lpa::rules::IDS {
        assert!(out.lines().any(|l| l.starts_with(id)), "{id}\n{out}");
    }
    assert_eq!(out, lpa(&["rules", "list"]).1);
}

#[test]
fn every_id_has_a_page_with_its_sections() {
    for id in lpa::rules::IDS {
        let (code, out) = lpa(&["rules", "show", id]);
        assert_eq!(code, 0, "{id}");
        assert!(out.starts_with(&format!("{id}: ")), "{out}");
        for section in [
            "What it means",
            "Typical causes",
            "How to confirm",
            "How to fix",
            "Evidence lpa matches",
        ] {
            assert!(
                out.contains(&format!("\n{section}")),
                "{id}: no {section}\n{out}"
            );
        }
        assert!(out.contains("https://linkerd.io/"), "{id}");
        assert!(!out.contains("[[rule]]"), "{id}: TOML, not a page");
    }
    let (code, _) = lpa(&["rules", "show", "no.such-id"]);
    assert_eq!(code, 2);
}

#[test]
fn a_page_shows_a_users_rule_and_findings_link_to_it() {
    let dir = std::env::temp_dir().join(format!("lpa-pages-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rules = dir.join("mine.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"my-frobnicator\"\nid = \"connect.refused\"\nseverity = \"critical\"\n\
         title = \"t\"\nexplain = \"e\"\ntext = [\"frobnicator refused\"]\n",
    )
    .unwrap();
    let (_, page) = lpa(&[
        "rules",
        "show",
        "connect.refused",
        "--rules",
        &rules.display().to_string(),
    ]);
    assert!(
        page.contains("my-frobnicator: \"frobnicator refused\""),
        "{page}"
    );
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus/scenarios/connect-timeout-netpol-2.10.log");
    let (_, human) = lpa(&["explain", "--no-pager", &log.display().to_string()]);
    assert!(human.contains("lpa rules show connect.timeout"), "{human}");
    let (_, md) = lpa(&["explain", "-o", "markdown", &log.display().to_string()]);
    assert!(md.contains("`lpa rules show connect.timeout`"), "{md}");
    std::fs::remove_dir_all(&dir).unwrap();
}
