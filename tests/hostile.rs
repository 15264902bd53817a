//! Logs written by an attacker, through the binary: next commands that run
//! only the programs their templates name (checked by running them under
//! `sh` with stub programs), control characters shown escaped in every
//! human and Markdown output, and Markdown that keeps text from the log in
//! code.

use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn lpa(args: &[&str], stdin: &[u8]) -> (i32, Vec<u8>, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lpa"));
    c.args(args)
        .env_remove("NO_COLOR")
        .env("COLUMNS", "100")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("lpa runs");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What an attacker puts where a name should be.
const EVIL: &[&str] = &[
    "x$(touch PWNED)",
    "x`touch PWNED`",
    "x;touch PWNED",
    "x|touch PWNED",
    "x&&touch PWNED",
    "x'\"touch PWNED",
    "-oProxyCommand=touch PWNED",
    "x\ntouch PWNED",
    "x>PWNED",
];

/// Lines in several producers' formats, with `v` in every field a next
/// command can take a value from: destination (service span, `dst=`,
/// authority), endpoint, client, port, identity, Server, pod (prefix),
/// target.
fn hostile_log(v: &str) -> String {
    let j = serde_json::to_string(v).unwrap();
    let j = &j[1..j.len() - 1];
    // In plain text a space ends a field value: keep them, the fallback
    // matcher still reads the line.
    let mut s = String::new();
    for (i, line) in [
        format!("[pod/{v}/linkerd-proxy] [     1.000000s]  WARN ThreadId(01) outbound:proxy{{addr={v}:80}}:service{{ns={v} name={v} port=80}}:endpoint{{addr={v}:8080}}: linkerd_reconnect: Failed to connect error=connect timed out after 1s"),
        format!("[    2.000000s]  INFO ThreadId(01) inbound:server{{port={v}}}:rescue{{client.addr={v}:5000}}: linkerd_app_core::errors::respond: Request failed error=unauthorized request on route server.name={v} client.id={v}.ns.serviceaccount.identity.linkerd.cluster.local"),
        format!("[    3.000000s]  WARN ThreadId(01) inbound:accept{{client.addr={v}:49812 target.addr={v}:8080}}: linkerd_app_core::serve: Server failed to become ready error=Connection refused (os error 111) dst={v}.{v}.svc.cluster.local:8080"),
        format!(r#"{{"timestamp":"[     4.000000s]","level":"WARN","fields":{{"message":"Failed to connect","error":"connect timed out after 1s"}},"target":"linkerd_reconnect","spans":[{{"name":"outbound"}},{{"name":"service","ns":"{j}","name":"{j}","port":"80"}},{{"name":"endpoint","addr":"{j}:8080"}}],"threadId":"ThreadId(1)"}}"#),
        format!(r#"{{"timestamp":"[     5.000000s]","level":"INFO","fields":{{"message":"Request failed","error":"logical service {j}.{j}.svc.cluster.local:80: service unavailable"}},"target":"linkerd_app_outbound::http::server","spans":[{{"name":"outbound"}},{{"name":"proxy","addr":"{j}:80"}}],"threadId":"ThreadId(1)"}}"#),
        format!("[    6.000000s]  WARN ThreadId(01) outbound:proxy{{addr=10.0.0.1:80}}:service{{ns=shop name=web port=80}}:endpoint{{addr=10.0.0.2:8080}}: linkerd_reconnect: Failed to connect error=connect timed out after 1s {v}"),
    ]
    .into_iter()
    .enumerate()
    {
        s.push_str(&line);
        s.push('\n');
        if i == 2 {
            s.push_str("Error from server (Forbidden): pods is forbidden: User cannot list\n");
        }
    }
    s
}

/// Writes an executable stub for each program: it records its argument
/// vector (fields split by \x1f, records by \x1e) in `$STUB_LOG`.
fn stubs(dir: &Path, programs: &BTreeSet<String>) {
    for p in programs
        .iter()
        .chain(["touch".to_string(), "rm".to_string()].iter())
    {
        let path = dir.join(p);
        std::fs::write(
            &path,
            // One write per record, so the stages of a pipeline do not interleave.
            "#!/bin/sh\nr=$(printf '%s\\037' \"${0##*/}\" \"$@\")\nprintf '%s\\036' \"$r\" >> \"$STUB_LOG\"\n",
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lpa-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `command` under `sh` with only stubs on PATH and every variable it
/// needs set; returns the argument vectors the stubs saw, sorted.
fn run_under_stubs(dir: &Path, command: &str, needs: &[String]) -> (Vec<Vec<String>>, String) {
    let log = dir.join("stub.log");
    let _ = std::fs::remove_file(&log);
    let mut script = String::new();
    for v in needs {
        script.push_str(&format!("{v}=value-of-{v}\n"));
    }
    script.push_str(command);
    script.push('\n');
    let check = Command::new("sh")
        .arg("-n")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(check.status.success(), "sh -n rejects {command:?}");
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(&script)
        .current_dir(dir)
        .env_clear()
        .env("PATH", dir.join("bin"))
        .env("STUB_LOG", &log)
        .output()
        .unwrap();
    let recorded = std::fs::read_to_string(&log).unwrap_or_default();
    let mut argvs: Vec<Vec<String>> = recorded
        .split('\u{1e}')
        .filter(|r| !r.is_empty())
        .map(|r| {
            r.trim_end_matches('\u{1f}')
                .split('\u{1f}')
                .map(str::to_string)
                .collect()
        })
        .collect();
    argvs.sort();
    (argvs, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn commands_of(doc: &Value) -> Vec<Value> {
    let mut v = Vec::new();
    for f in doc["findings"].as_array().into_iter().flatten() {
        v.extend(f["next_commands"].as_array().into_iter().flatten().cloned());
    }
    v
}

#[test]
fn next_commands_run_only_their_own_programs() {
    let dir = tmpdir("cmds");
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let mut checked = 0;
    for v in EVIL {
        let log = hostile_log(v);
        let mut cmds = Vec::new();
        for args in [
            &["explain", "--format", "json"][..],
            &["triage", "--format", "json"][..],
        ] {
            let (code, out, err) = lpa(args, log.as_bytes());
            assert_eq!(code, 0, "{err}");
            cmds.extend(commands_of(&serde_json::from_slice(&out).unwrap()));
        }
        assert!(!cmds.is_empty(), "no command for {v}");
        let programs: BTreeSet<String> = cmds
            .iter()
            .flat_map(|c| c["argv"].as_array().unwrap().clone())
            .map(|stage| stage[0].as_str().unwrap().to_string())
            .collect();
        stubs(&dir.join("bin"), &programs);
        for c in &cmds {
            let command = c["command"].as_str().unwrap();
            let needs: Vec<String> = c["needs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|n| n.as_str().unwrap().to_string())
                .collect();
            let (ran, stderr) = run_under_stubs(&dir, command, &needs);
            let mut want: Vec<Vec<String>> = c["argv"]
                .as_array()
                .unwrap()
                .iter()
                .map(|stage| {
                    stage
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|a| {
                            let mut a = a.as_str().unwrap().to_string();
                            for n in &needs {
                                a = a.replace(&format!("${n}"), &format!("value-of-{n}"));
                            }
                            a
                        })
                        .collect()
                })
                .collect();
            want.sort();
            assert_eq!(ran, want, "{command}");
            assert!(stderr.is_empty(), "{command}: {stderr}");
            assert!(
                !dir.join("PWNED").exists(),
                "{command} ran code from the log"
            );
            for arg in ran.iter().flatten() {
                assert!(
                    !arg.contains("PWNED"),
                    "{command}: a value from the log got in"
                );
            }
            checked += 1;
        }
        // The human and Markdown reports print the same commands.
        let (_, human, _) = lpa(&["explain", "--color", "never"], log.as_bytes());
        let human = String::from_utf8(human).unwrap();
        let shown: BTreeSet<&str> = human
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("$ "))
            .collect();
        let (_, json, _) = lpa(&["explain", "--format", "json"], log.as_bytes());
        let doc: Value = serde_json::from_slice(&json).unwrap();
        let want: BTreeSet<String> = commands_of(&doc)
            .iter()
            .map(|c| c["command"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            shown,
            want.iter().map(String::as_str).collect::<BTreeSet<_>>()
        );
        for c in &shown {
            assert!(!c.contains('<'), "a <placeholder> in {c}");
        }
    }
    assert!(checked > 20, "only {checked} commands checked");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn flags_fill_what_the_log_cannot_and_are_checked_too() {
    let log = "[    1.000000s]  WARN ThreadId(01) outbound:proxy{addr=10.0.0.1:80}:endpoint{addr=10.0.0.2:8080}: linkerd_reconnect: Failed to connect error=connect timed out after 1s\n";
    let (code, out, _) = lpa(
        &[
            "explain",
            "--format",
            "json",
            "-n",
            "shop",
            "--workload",
            "deploy/web",
        ],
        log.as_bytes(),
    );
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_slice(&out).unwrap();
    let all: Vec<String> = commands_of(&doc)
        .iter()
        .map(|c| c["command"].as_str().unwrap().to_string())
        .collect();
    assert!(all.iter().any(|c| c.contains("-n shop")), "{all:?}");
    assert!(all.iter().all(|c| !c.contains("\"$NS\"")), "{all:?}");
    for bad in [
        &["explain", "-n", "a;b"][..],
        &["explain", "--pod", "$(id)"][..],
        &["explain", "--workload", "web"][..],
    ] {
        let (code, _, err) = lpa(bad, log.as_bytes());
        assert_eq!(code, 2, "{bad:?}");
        assert!(err.contains("is not"), "{err}");
    }
}

/// Controls planted raw (plain text) and through JSON escapes.
fn control_log() -> String {
    let mut s = String::new();
    s.push_str("[    1.000000s]  WARN ThreadId(01) outbound:proxy{addr=10.0.0.1:80}:endpoint{addr=10.0.0.2:8080}: linkerd_reconnect: Failed to connect error=connect timed out \x1b]0;TITLE\x07 \x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ \r\u{9b}2J \x7f end\n");
    s.push_str(r#"{"timestamp":"[     2.000000s]","level":"WARN","fields":{"message":"Failed to connect \u001b]0;TITLE\u0007 \u001b[2J \r \u0085 \u202e","error":"connect timed out \u001b]8;;http://evil\u001b\\"},"target":"linkerd_reconnect","spans":[{"name":"outbound"},{"name":"service","ns":"shop","name":"web","port":"80"},{"name":"endpoint","addr":"10.0.0.2:8080"}],"threadId":"ThreadId(1)"}"#);
    s.push('\n');
    s.push_str("[    3.000000s]  WARN ThreadId(01) linkerd_app: unknown thing happened \x1b]0;TITLE\x07\x08\x08\x08 \u{9d}\n");
    s.push_str("Hello, we see \x1b]0;TITLE\x07 errors since the upgrade\n");
    s
}

fn assert_no_controls(what: &str, out: &[u8], colour: bool) {
    let text = String::from_utf8_lossy(out);
    let mut rest: &str = &text;
    while let Some(c) = rest.chars().next() {
        if colour && c == '\x1b' {
            let sgr = [
                "\x1b[0m",
                "\x1b[1m",
                "\x1b[2m",
                "\x1b[1;31m",
                "\x1b[33m",
                "\x1b[32m",
            ];
            let code = sgr.iter().find(|s| rest.starts_with(**s));
            assert!(
                code.is_some(),
                "{what}: a raw escape: {:?}",
                &rest[..rest.len().min(20)]
            );
            rest = &rest[code.unwrap().len()..];
            continue;
        }
        assert!(
            c == '\n' || !(c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
            "{what}: raw control {c:?} in {:?}",
            &text[..text.len().min(3000)]
        );
        rest = &rest[c.len_utf8()..];
    }
}

#[test]
fn control_characters_are_shown_escaped_in_every_human_and_markdown_output() {
    let log = control_log();
    for args in [
        &["explain"][..],
        &["explain", "--color", "always"][..],
        &["explain", "-v"][..],
        &["explain", "--format", "markdown"][..],
        &["summarize"][..],
        &["summarize", "--color", "always"][..],
        &["summarize", "--format", "markdown"][..],
        &["triage"][..],
        &["triage", "--format", "markdown"][..],
        &["explain", "--follow"][..],
        &["explain", "--anonymize"][..],
    ] {
        let (code, out, err) = lpa(args, log.as_bytes());
        assert_eq!(code, 0, "{args:?}: {err}");
        let colour = args.contains(&"always");
        assert_no_controls(&format!("{args:?}"), &out, colour);
        assert_no_controls(&format!("{args:?} stderr"), err.as_bytes(), false);
        if args.contains(&"-v") {
            assert!(
                String::from_utf8_lossy(&out).contains("\\x07"),
                "{args:?}: the escape is not shown"
            );
        }
    }
}

/// The text left when fenced blocks and code spans are taken out, as a
/// CommonMark reader would see them.
fn outside_code(md: &str) -> String {
    let mut out = String::new();
    let mut fence: Option<usize> = None;
    for line in md.lines() {
        let t = line.trim_start();
        let run = t.chars().take_while(|&c| c == '`').count();
        match fence {
            Some(n) if run >= n && t[run..].trim().is_empty() => fence = None,
            Some(_) => {}
            None if run >= 3 => fence = Some(run),
            None => {
                let b = line.as_bytes();
                let mut i = 0;
                while i < b.len() {
                    if b[i] == b'`' {
                        let n = line[i..].chars().take_while(|&c| c == '`').count();
                        let close = "`".repeat(n);
                        let mut j = i + n;
                        let mut found = None;
                        while let Some(k) = line[j..].find(&close) {
                            let at = j + k;
                            let m = line[at..].chars().take_while(|&c| c == '`').count();
                            if m == n {
                                found = Some(at);
                                break;
                            }
                            j = at + m;
                        }
                        match found {
                            Some(at) => i = at + n,
                            None => {
                                out.push_str(&line[i..i + n]);
                                i += n;
                            }
                        }
                    } else {
                        let c = line[i..].chars().next().unwrap();
                        out.push(c);
                        i += c.len_utf8();
                    }
                }
                out.push('\n');
            }
        }
    }
    assert!(fence.is_none(), "an unclosed fence in {md}");
    out
}

#[test]
fn markdown_keeps_text_from_the_log_in_code() {
    let payload = "EVIL``` <img src=x onerror=alert(1)> [click](http://evil) **bold** `tick` ````";
    let log = format!(
        "[    1.000000s]  WARN ThreadId(01) outbound:proxy{{addr=10.0.0.1:80}}:endpoint{{addr=10.0.0.2:8080}}: linkerd_reconnect: Failed to connect error=connect timed out {payload}\n\
         [    2.000000s]  WARN ThreadId(01) linkerd_app: unknown thing {payload}\n\
         ```\n\
         [    3.000000s]  WARN ThreadId(01) linkerd_app: inside a fence {payload}\n\
         We tried restarting {payload} and Linkerd {payload}\n"
    );
    for args in [
        &["explain", "--format", "markdown"][..],
        &["summarize", "--format", "markdown"][..],
        &["triage"][..],
    ] {
        let (code, out, err) = lpa(args, log.as_bytes());
        assert_eq!(code, 0, "{err}");
        let md = String::from_utf8(out).unwrap();
        let prose = outside_code(&md);
        for bad in ["EVIL", "<img", "](http", "**bold**"] {
            assert!(
                !prose.contains(bad),
                "{args:?}: {bad} outside code:\n{prose}\n---\n{md}"
            );
        }
    }
}
