//! `lpa help` at 80 columns: no line wider, examples never broken
//! mid-command, every flag documented, and the global flags only those
//! that mean something to every command.

use clap::CommandFactory;
use lpa::cli::Cli;

/// The command and every subcommand under it, with its path.
fn all(cmd: &clap::Command, path: String, out: &mut Vec<(String, clap::Command)>) {
    out.push((path.clone(), cmd.clone()));
    for sub in cmd.get_subcommands() {
        if sub.get_name() != "help" {
            all(sub, format!("{path} {}", sub.get_name()), out);
        }
    }
}

fn commands() -> Vec<(String, clap::Command)> {
    let mut top = Cli::command().term_width(80);
    top.build();
    let mut v = Vec::new();
    all(&top, "lpa".into(), &mut v);
    assert!(v.len() > 8, "{}", v.len());
    v
}

#[test]
fn help_fits_80_columns_and_keeps_examples_whole() {
    for (path, mut cmd) in commands() {
        let examples = cmd
            .get_after_help()
            .map(|h| h.to_string())
            .unwrap_or_default();
        for help in [
            cmd.render_help().to_string(),
            cmd.render_long_help().to_string(),
        ] {
            for l in help.lines() {
                assert!(
                    l.chars().count() <= 80,
                    "{path}: {} columns: {l}",
                    l.chars().count()
                );
            }
            // An example line is printed as written: clap did not wrap it.
            for e in examples.lines().filter(|l| l.starts_with("  ")) {
                assert!(help.contains(e), "{path}: example broken: {e}\n{help}");
            }
        }
    }
}

#[test]
fn every_flag_and_argument_is_documented() {
    for (path, cmd) in commands() {
        for a in cmd.get_arguments() {
            let id = a.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            assert!(a.get_help().is_some(), "{path}: {id} has no help");
        }
    }
}

#[test]
fn global_flags_are_the_ones_every_command_uses() {
    let top = Cli::command();
    let mut global: Vec<&str> = top
        .get_arguments()
        .filter(|a| a.is_global_set())
        .map(|a| a.get_id().as_str())
        .collect();
    global.sort();
    assert_eq!(global, ["anonymize", "color", "no_pager", "quiet"]);
    // Reading flags belong to the commands that stream logs.
    for (path, cmd) in commands() {
        let has = |id: &str| cmd.get_arguments().any(|a| a.get_id().as_str() == id);
        let streams = ["lpa parse", "lpa explain", "lpa summarize"].contains(&path.as_str());
        assert_eq!(has("threads"), streams, "{path} --threads");
        assert_eq!(has("max_line"), streams, "{path} --max-line");
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lpa"))
        .args(["triage", "--threads", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
