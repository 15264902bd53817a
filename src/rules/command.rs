//! Next commands rendered for one finding: each `{placeholder}` takes a
//! value the log shows (or a flag gives) only when the value is exactly
//! what the placeholder stands for ([`values`](super::values)), and is
//! shell-quoted; an unknown value becomes a shell variable (`"$NS"`) that
//! the report says how to set. The same templates fill the prose around
//! them (titles, explanations, the why of a command).

use super::finding::Values;
use super::values::{self, Hole};
use super::Subject;
use crate::parse::typed::host_of;
use crate::shell::{self, Piece};
use serde::Serialize;
use std::collections::BTreeMap;

/// A next command, rendered for this log.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Command {
    /// What to paste into a shell.
    pub command: String,
    pub why: String,
    /// The same command as data: the pipeline's programs, each as its
    /// argument vector (`$NAME` where `needs` names a variable).
    pub argv: Vec<Vec<String>>,
    /// Shell variables the command uses for values the log does not show.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<&'static str>,
}

/// What the command line says the log cannot: `-n`, `--pod`, `--workload`.
#[derive(Debug, Clone, Default)]
pub struct Given {
    pub ns: Option<String>,
    pub pod: Option<String>,
    pub workload: Option<String>,
}

impl Given {
    /// Each given value checked like a value from the log; the error names
    /// the flag.
    pub fn new(
        ns: Option<String>,
        pod: Option<String>,
        workload: Option<String>,
    ) -> Result<Given, String> {
        for (flag, hole, v) in [
            ("--namespace", "ns", &ns),
            ("--pod", "pod", &pod),
            ("--workload", "workload", &workload),
        ] {
            let h = values::find(hole).expect("a placeholder");
            if let Some(v) = v.as_deref().filter(|v| !h.accepts(v)) {
                return Err(format!("{flag} {v:?} is not {}", h.what));
            }
        }
        Ok(Given { ns, pod, workload })
    }
}

/// Values for `{placeholders}`.
pub(super) struct Vars<'a> {
    pub subjects: &'a BTreeMap<Subject, Values>,
    pub workload: Option<String>,
    pub given: &'a Given,
}

/// The namespace in `name.ns.svc.…` or `sa.ns.serviceaccount.…`.
fn ns_of(v: &str) -> Option<&str> {
    let host = v.split(':').next()?;
    [".svc.", ".serviceaccount."]
        .iter()
        .find_map(|m| host.find(m).map(|i| &host[..i]))
        .and_then(|h| h.rsplit('.').next())
}

impl Vars<'_> {
    /// The most frequent value of a subject that `hole` accepts.
    fn first(&self, s: Subject, hole: &Hole) -> Option<String> {
        self.subjects
            .get(&s)?
            .ranked()
            .into_iter()
            .find(|v| hole.accepts(v))
    }

    fn raw(&self, hole: &Hole) -> Option<String> {
        let dst = || self.first(Subject::Dst, values::find("dst").expect("dst"));
        let given_ns = || self.given.ns.clone();
        match hole.name {
            "ns" => dst()
                .and_then(|d| ns_of(&d).map(str::to_string))
                .or_else(|| {
                    self.subjects
                        .get(&Subject::Identity)?
                        .ranked()
                        .iter()
                        .find_map(|i| ns_of(i).map(str::to_string))
                })
                .or_else(given_ns),
            "peer_ip" => self
                .subjects
                .get(&Subject::Peer)?
                .ranked()
                .iter()
                .map(|p| host_of(p).trim_matches(['[', ']']).to_string())
                .find(|p| hole.accepts(p)),
            "svc" => dst()
                .filter(|d| d.contains(".svc."))
                .and_then(|d| d.split(['.', ':']).next().map(str::to_string)),
            "workload" => self
                .workload
                .clone()
                .or_else(|| self.given.workload.clone())
                .or_else(|| self.given.pod.as_ref().map(|p| format!("po/{p}"))),
            "workload_ns" => match self.workload.as_deref() {
                Some("deploy/linkerd-gateway") => Some("linkerd-multicluster".into()),
                _ => given_ns(),
            },
            // A destination's port is the port a port-keyed finding means.
            "port" => self
                .first(Subject::Port, hole)
                .or_else(|| dst().and_then(|d| d.rsplit_once(':').map(|(_, p)| p.to_string()))),
            "pod" => self
                .first(Subject::Pod, hole)
                .or_else(|| self.given.pod.clone()),
            other => Subject::parse(other).and_then(|s| self.first(s, hole)),
        }
    }

    /// A placeholder's value, when it is what the placeholder stands for.
    fn get(&self, hole: &Hole) -> Option<String> {
        self.raw(hole).filter(|v| hole.accepts(v))
    }

    /// Renders a next command; `None` when its template is not one (rules
    /// are checked when loaded, so only a bug gets here).
    pub fn command(&self, template: &str, why: &str) -> Option<Command> {
        let t = shell::parse_template(template, &values::is_placeholder).ok()?;
        let mut needs: Vec<&'static str> = Vec::new();
        let mut shown: Vec<String> = Vec::new();
        let mut argv: Vec<Vec<String>> = Vec::new();
        for stage in &t.stages {
            let mut words = Vec::new();
            for w in stage {
                let (display, arg) = self.word(w, &mut needs);
                shown.push(display);
                words.push(arg);
            }
            shown.push("|".into());
            argv.push(words);
        }
        shown.pop();
        Some(Command {
            command: shown.join(" "),
            why: self.prose(why).0,
            argv,
            needs,
        })
    }

    /// One word: as the shell should read it (quoted, `"$VAR"` for an
    /// unknown value) and as its argument (`$VAR` left in).
    fn word(&self, w: &[Piece], needs: &mut Vec<&'static str>) -> (String, String) {
        let mut display = String::new();
        let mut arg = String::new();
        let mut literal = String::new();
        for p in w {
            match p {
                Piece::Lit(s) => literal.push_str(s),
                Piece::Hole { name, default } => {
                    let hole = values::find(name).expect("parsed as a placeholder");
                    match self
                        .get(hole)
                        .or_else(|| default.clone().filter(|d| !d.is_empty()))
                    {
                        Some(v) => literal.push_str(&v),
                        None => {
                            if !literal.is_empty() {
                                display.push_str(&shell::quote(&literal));
                                arg.push_str(&std::mem::take(&mut literal));
                            }
                            display.push_str(&format!("\"${}\"", hole.var));
                            arg.push_str(&format!("${}", hole.var));
                            if !needs.contains(&hole.var) {
                                needs.push(hole.var);
                            }
                        }
                    }
                }
            }
        }
        if !literal.is_empty() || display.is_empty() {
            display.push_str(&shell::quote(&literal));
            arg.push_str(&literal);
        }
        (display, arg)
    }

    /// Fills `{name}` and `{name|default}` in prose; an unknown value takes
    /// its default or says what it stands for. Also returns the values
    /// filled in, which Markdown sets as code.
    pub fn prose(&self, template: &str) -> (String, Vec<String>) {
        let mut out = String::with_capacity(template.len());
        let mut used = Vec::new();
        let mut rest = template;
        while let Some(o) = rest.find('{') {
            out.push_str(&rest[..o]);
            let Some(c) = rest[o..].find('}') else {
                out.push_str(&rest[o..]);
                return (out, used);
            };
            let inner = &rest[o + 1..o + c];
            let (name, default) = inner.split_once('|').unwrap_or((inner, ""));
            match values::find(name) {
                // Braces that are not ours stay as written.
                None => out.push_str(&rest[o..=o + c]),
                Some(hole) => match self.get(hole) {
                    Some(v) => {
                        out.push_str(&v);
                        used.push(v);
                    }
                    None if !default.is_empty() => out.push_str(default),
                    None => out.push_str(hole.what),
                },
            }
            rest = &rest[o + c + 1..];
        }
        out.push_str(rest);
        (out, used)
    }
}

/// The line shown once above a list of commands that use variables: which
/// to set, and what each stands for.
pub fn setup_line(cmds: &[Command]) -> Option<String> {
    let mut vars: Vec<&'static str> = Vec::new();
    for v in cmds.iter().flat_map(|c| &c.needs) {
        if !vars.contains(v) {
            vars.push(v);
        }
    }
    if vars.is_empty() {
        return None;
    }
    let each: Vec<String> = vars
        .iter()
        .map(|v| {
            let what = values::HOLES
                .iter()
                .find(|h| h.var == *v)
                .map_or("", |h| h.what);
            format!("{v}=… ({what})")
        })
        .collect();
    let flags: Vec<&str> = [("NS", "-n"), ("POD", "--pod"), ("WORKLOAD", "--workload")]
        .iter()
        .filter(|(v, _)| vars.contains(v))
        .map(|(_, f)| *f)
        .collect();
    let hint = if flags.is_empty() {
        String::new()
    } else {
        format!(
            "; lpa {} fill{} them",
            flags.join(", "),
            if flags.len() == 1 { "s" } else { "" }
        )
    };
    Some(format!(
        "# the log does not show these, set them first: {}{hint}",
        each.join(", ")
    ))
}
