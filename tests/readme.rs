//! The README's install steps work on a fresh home directory, and the
//! release profile that `cargo install` builds carries no debug info.

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The shell block under a README heading.
fn sh_block_after(heading: &str) -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let at = readme
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    let rest = &readme[at..];
    let start = rest.find("```sh\n").expect("a sh block") + 6;
    let len = rest[start..].find("```").unwrap();
    rest[start..start + len].to_string()
}

#[test]
fn completions_and_man_pages_install_into_a_fresh_home() {
    let script = sh_block_after("### Shell completions, man page, kubectl plugin");
    assert!(script.contains("mkdir -p"), "{script}");
    let home = std::env::temp_dir().join(format!("lpa-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    // Where `cargo install` puts the binary; nothing else exists yet.
    let bin = home.join(".cargo/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_lpa"), bin.join("lpa")).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let completion =
        std::fs::read_to_string(home.join(".local/share/bash-completion/completions/lpa")).unwrap();
    assert!(completion.contains("complete -F"), "{completion}");
    for page in ["lpa", "lpa-explain", "lpa-rules"] {
        let roff = std::fs::read_to_string(home.join(format!(".cargo/share/man/man1/{page}.1")))
            .unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(roff.contains(".TH"), "{page}: {roff}");
    }
    // man finds the pages from PATH alone, as the README says.
    if Path::new("/usr/bin/man").exists() {
        let found = Command::new("man")
            .args(["-w", "lpa-explain"])
            .env_clear()
            .env("HOME", &home)
            .env("PATH", &path)
            .output()
            .unwrap();
        let at = String::from_utf8_lossy(&found.stdout);
        assert!(
            at.contains(".cargo/share/man/man1/lpa-explain.1"),
            "man -w: {at}"
        );
    }
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn release_profile_has_no_debug_info() {
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(root().join("Cargo.toml")).unwrap()).unwrap();
    let release = &manifest["profile"]["release"];
    let debug = release.get("debug");
    assert!(
        debug.is_none_or(|d| matches!(d.as_integer(), Some(0))
            || d.as_bool() == Some(false)
            || d.as_str() == Some("none")),
        "{release:?}"
    );
}
