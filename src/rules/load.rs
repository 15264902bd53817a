//! Reading and validating rules files: TOML, with `like` inheritance, and
//! every problem reported at its `file:line` with a hint.

use super::schema::*;
use crate::parse::Era;
use anyhow::{bail, Result};
use serde::Deserialize;

/// The rules shipped with lpa, by file: one per area of the knowledge base.
pub const BUILT_IN: &[(&str, &str)] = &[
    ("core.toml", include_str!("kb/core.toml")),
    ("proxy.toml", include_str!("kb/proxy.toml")),
    ("legacy.toml", include_str!("kb/legacy.toml")),
    ("control-plane.toml", include_str!("kb/control-plane.toml")),
    ("lifecycle.toml", include_str!("kb/lifecycle.toml")),
    ("runtime.toml", include_str!("kb/runtime.toml")),
    ("libraries.toml", include_str!("kb/libraries.toml")),
    ("checks.toml", include_str!("kb/checks.toml")),
    ("tools.toml", include_str!("kb/tools.toml")),
    ("prose.toml", include_str!("kb/prose.toml")),
    ("metrics.toml", include_str!("kb/metrics.toml")),
    ("eras.toml", include_str!("kb/eras.toml")),
];

/// Keys a rule takes from the rule it is `like`: its verdict, grouping and
/// words. Conditions are never inherited.
const INHERITED: &[&str] = &[
    "id",
    "severity",
    "role",
    "benign",
    "confidence",
    "weight",
    "title",
    "explain",
    "detail",
    "doc",
    "known",
    "undecided",
    "group_by",
    "explains",
    "min_count",
    "min_clients",
    "max_clients",
    "if_info_only",
    "yields_to",
    "next",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    #[serde(default, rename = "rule")]
    rules: Vec<Rule>,
    #[serde(default, rename = "era")]
    eras: Vec<EraRule>,
}

/// A problem in a rules file, located at `file:line`.
#[derive(Debug)]
pub struct RuleError {
    pub file: String,
    pub line: usize,
    pub message: String,
    pub hint: String,
}

impl std::fmt::Display for RuleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)?;
        if !self.hint.is_empty() {
            write!(f, "\n  hint: {}", self.hint)?;
        }
        Ok(())
    }
}

/// Line number (1-based) of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Line of `name = "…"` for a rule, to point errors at it.
fn rule_line(text: &str, name: &str) -> usize {
    let pat = format!("\"{name}\"");
    text.find(&pat).map_or(1, |o| line_of(text, o))
}

fn toml_error(file: &str, text: &str, e: &toml::de::Error) -> RuleError {
    let line = e.span().map_or(1, |s| line_of(text, s.start));
    let msg = e.message().to_string();
    let hint = if msg.contains("unknown field") {
        "see `lpa rules show connect-timeout` for a rule with every common key".to_string()
    } else if msg.contains("unknown variant") {
        "`lpa rules show connect-timeout` shows the keys; README's knowledge-base section lists their values".to_string()
    } else {
        "each rule is a `[[rule]]` table of `key = value` lines (TOML)".to_string()
    };
    RuleError {
        file: file.to_string(),
        line,
        message: msg,
        hint,
    }
}

/// A file's document, when it is TOML.
fn document(text: &str) -> Option<toml::Table> {
    toml::from_str(text).ok()
}

/// The `[[rule]]` tables of a document, as written.
fn rule_tables(doc: Option<&toml::Table>) -> Vec<toml::Table> {
    match doc.and_then(|d| d.get("rule")) {
        Some(toml::Value::Array(a)) => a.iter().filter_map(|v| v.as_table().cloned()).collect(),
        _ => Vec::new(),
    }
}

/// The built-in files' documents, each parsed once, and their rules'
/// tables, which any file's `like` may name: where each file's are, and
/// all of them.
fn built_in_tables() -> (
    Vec<Option<toml::Table>>,
    Vec<std::ops::Range<usize>>,
    Vec<toml::Table>,
) {
    use rayon::prelude::*;
    let docs: Vec<_> = BUILT_IN.par_iter().map(|(_, t)| document(t)).collect();
    let mut ranges = Vec::new();
    let mut all = Vec::new();
    for d in &docs {
        let t = rule_tables(d.as_ref());
        ranges.push(all.len()..all.len() + t.len());
        all.extend(t);
    }
    (docs, ranges, all)
}

/// Fills a rule's unset inherited keys from the rule it is `like`
/// (following chains); `Err` names the rule that does not exist.
fn inherit(t: &mut toml::Table, pool: &[&toml::Table]) -> std::result::Result<(), String> {
    let mut seen = Vec::new();
    let mut like = t.get("like").and_then(|v| v.as_str()).map(str::to_string);
    while let Some(name) = like {
        if seen.contains(&name) || seen.len() > 8 {
            return Err(format!("`like` chain loops through '{name}'"));
        }
        let base = pool
            .iter()
            .find(|b| b.get("name").and_then(|v| v.as_str()) == Some(&name))
            .ok_or_else(|| format!("is like '{name}', which is no rule"))?;
        for k in INHERITED {
            if !t.contains_key(*k) {
                if let Some(v) = base.get(*k) {
                    t.insert(k.to_string(), v.clone());
                }
            }
        }
        seen.push(name);
        like = base
            .get("like")
            .and_then(|v| v.as_str())
            .map(str::to_string);
    }
    Ok(())
}

/// Parses and validates a rules file; `like` may name a rule of this file
/// or a built-in one. Every problem is reported, each with its `file:line`
/// and a hint.
pub fn parse_rules(file: &str, text: &str) -> std::result::Result<KnowledgeBase, Vec<RuleError>> {
    parse_over(file, text, None, &built_in_tables().2)
}

/// Parses `text`, whose rules' tables come before `base`'s for `like`.
/// A file already parsed comes as its document and its rules' tables:
/// reading the rules from those, not from the text again, saves a tenth
/// of the startup.
fn parse_over(
    file: &str,
    text: &str,
    parsed_as: Option<(toml::Table, &[toml::Table])>,
    base: &[toml::Table],
) -> std::result::Result<KnowledgeBase, Vec<RuleError>> {
    // The built-in rules' regexes are compiled by a test
    // (`built_in_regexes_compile`), not parsed again at every start.
    let built_in = parsed_as.is_some();
    let (parsed, own) = match parsed_as {
        Some((doc, own)) => (toml::Value::Table(doc).try_into(), Some(own)),
        None => (toml::from_str(text), None),
    };
    let mut parsed: RulesFile = parsed.map_err(|e| vec![toml_error(file, text, &e)])?;
    if parsed.rules.iter().any(|r| r.like.is_some()) {
        let made;
        let own = match own {
            Some(o) => o,
            None => {
                made = rule_tables(document(text).as_ref());
                &made
            }
        };
        let pool: Vec<&toml::Table> = own.iter().chain(base).collect();
        let mut errs = Vec::new();
        for (r, t) in parsed.rules.iter_mut().zip(own) {
            if r.like.is_none() {
                continue;
            }
            let mut t = t.clone();
            let resolved = inherit(&mut t, &pool).and_then(|()| {
                toml::Value::Table(t)
                    .try_into::<Rule>()
                    .map_err(|e| e.message().to_string())
            });
            match resolved {
                Ok(x) => *r = x,
                Err(m) => errs.push(RuleError {
                    file: file.to_string(),
                    line: rule_line(text, &r.name),
                    message: format!("rule '{}' {m}", r.name),
                    hint: "`like` names another rule whose verdict and words this one takes".into(),
                }),
            }
        }
        if !errs.is_empty() {
            return Err(errs);
        }
    }
    let mut errs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in &parsed.rules {
        // Found only for an error: a search of the whole file per rule
        // was a sixth of the startup.
        let mut err = |message: String, hint: &str| {
            errs.push(RuleError {
                file: file.to_string(),
                line: rule_line(text, &r.name),
                message,
                hint: hint.to_string(),
            })
        };
        if !seen.insert(r.name.clone()) {
            err(
                format!("rule '{}' is defined twice in this file", r.name),
                "rename one of them",
            );
        }
        if let Some(id) = &r.id {
            if !IDS.contains(&id.as_str()) {
                err(
                    format!("rule '{}': unknown diagnosis id '{id}'", r.name),
                    "ids are fixed; `lpa rules list` shows them",
                );
            }
            if r.title.is_empty() || r.explain.is_empty() {
                err(
                    format!("rule '{}' has an id but no title or explain", r.name),
                    "a finding needs a one-line title and a plain-words explanation",
                );
            }
            if r.known.is_some() {
                err(
                    format!("rule '{}' has both an id and `known`", r.name),
                    "`known` marks lines that report nothing; drop one of the two",
                );
            }
        } else if r.tag.is_none() && r.known.is_none() {
            err(
                format!(
                    "rule '{}' has neither an id nor a tag: it can never show",
                    r.name
                ),
                "add `id = \"…\"` to report a finding, `tag = \"…\"` to mark connections, or `known = \"benign\"` for harmless lines",
            );
        }
        for e in &r.explains {
            if !IDS.contains(&e.as_str()) {
                err(
                    format!("rule '{}': explains unknown id '{e}'", r.name),
                    "use ids from `lpa rules list`",
                );
            }
        }
        for p in &r.producers {
            if !PRODUCER_FAMILIES.contains(&p.as_str()) {
                err(
                    format!("rule '{}': unknown producer family '{p}'", r.name),
                    "use proxy, control-plane, init, access, panic, go-log, kube, check or prose",
                );
            }
        }
        // Parsed, not compiled: the engine compiles each once, and
        // compiling twice was a third of explain's start-up.
        let regexes = r.regex.iter().chain(&r.capture).chain(&r.not_regex);
        for rx in regexes.filter(|_| !built_in) {
            if let Err(e) = regex_syntax::Parser::new().parse(rx) {
                err(
                    format!("rule '{}': bad regex: {e}", r.name),
                    "regex syntax of the Rust regex crate",
                );
            }
        }
        for y in &r.yields_to {
            if !IDS.contains(&y.as_str()) {
                err(
                    format!("rule '{}': yields to unknown id '{y}'", r.name),
                    "use ids from `lpa rules list`",
                );
            }
        }
        if let Some(m) = &r.metrics {
            for problem in super::metrics::problems(r, m) {
                err(
                    format!("rule '{}': {problem}", r.name),
                    "a metric rule names its series (`[[rule.metrics.series]]` with `as`, `names`, `labels`) and compares their aggregates in `when`; `lpa rules show metrics-endpoints-never-connect` is an example",
                );
            }
        } else if r.text.is_empty()
            && r.regex.is_none()
            && r.fields.is_empty()
            && r.all_text.is_empty()
        {
            err(
                format!("rule '{}' matches every line", r.name),
                "give it `text = [\"…\"]`, `regex` or `fields`",
            );
        }
        if !(0.0..=1.0).contains(&r.confidence) {
            err(
                format!("rule '{}': confidence must be within 0..1", r.name),
                "",
            );
        }
        let templates = [Some(&r.title), Some(&r.explain), r.if_info_only.as_ref()]
            .into_iter()
            .flatten()
            .chain(r.next.iter().flat_map(|n| [&n.cmd, &n.why]));
        let placeholders = || {
            let names: Vec<String> = super::values::HOLES
                .iter()
                .map(|h| format!("{{{}}}", h.name))
                .collect();
            format!(
                "placeholders: {}, with an optional default: {{dst|the destination}}",
                names.join(" ")
            )
        };
        for t in templates {
            if let Some(problem) = template_problem(t) {
                err(format!("rule '{}': {problem}", r.name), &placeholders());
            }
        }
        for n in &r.next {
            if let Err(problem) = command_problem(&n.cmd) {
                err(
                    format!("rule '{}': next command `{}`: {problem}", r.name, n.cmd),
                    "a next command is one program or a `|` pipeline of words; quote literal text, and use a {placeholder} (never `<name>`) for what the log may name",
                );
            }
        }
    }
    for e in &parsed.eras {
        for v in e.since.iter().chain(&e.until) {
            if Era::of_linkerd_version(v).is_none() {
                errs.push(RuleError {
                    file: file.to_string(),
                    line: text
                        .find(&format!("\"{v}\""))
                        .map_or(1, |o| line_of(text, o)),
                    message: format!("era cue '{}': '{v}' is not a Linkerd version", e.text),
                    hint: "write stable versions as 2.12 or 2.14.1".into(),
                });
            }
        }
    }
    if errs.is_empty() {
        Ok(KnowledgeBase {
            rules: parsed.rules,
            eras: parsed.eras,
        })
    } else {
        Err(errs)
    }
}

/// The built-in rules, every file of them.
pub fn built_in() -> std::result::Result<KnowledgeBase, Vec<RuleError>> {
    let (docs, files, base) = built_in_tables();
    let mut kb = KnowledgeBase::default();
    let mut errs = Vec::new();
    let mut names = std::collections::HashSet::new();
    // Each file is parsed on its own (in parallel: TOML parsing is most of
    // the startup), then they are checked together in order.
    let parsed: Vec<_> = {
        use rayon::prelude::*;
        BUILT_IN
            .par_iter()
            .zip(docs)
            .zip(&files)
            .map(|(((file, text), doc), own)| {
                let parsed_as = doc.map(|d| (d, &base[own.clone()]));
                parse_over(file, text, parsed_as, &base)
            })
            .collect()
    };
    for ((file, text), parsed) in BUILT_IN.iter().zip(parsed) {
        match parsed {
            Ok(k) => {
                for r in &k.rules {
                    if !names.insert(r.name.clone()) {
                        errs.push(RuleError {
                            file: file.to_string(),
                            line: rule_line(text, &r.name),
                            message: format!("rule '{}' is defined in two built-in files", r.name),
                            hint: "rename one of them".into(),
                        });
                    }
                }
                kb.rules.extend(k.rules);
                kb.eras.extend(k.eras);
            }
            Err(e) => errs.extend(e),
        }
    }
    if errs.is_empty() {
        Ok(kb)
    } else {
        Err(errs)
    }
}

/// Why a next-command template is not one: shell syntax beyond words,
/// quotes and `|`, or a placeholder where the program name stands.
fn command_problem(t: &str) -> Result<(), String> {
    let tpl = crate::shell::parse_template(t, &super::values::is_placeholder)?;
    for stage in &tpl.stages {
        let program = &stage[0];
        let literal =
            matches!(program.as_slice(), [crate::shell::Piece::Lit(p)] if !p.contains('='));
        if !literal {
            return Err("a command's program must be literal text".into());
        }
    }
    Ok(())
}

/// What is wrong with a template's placeholders, if anything.
fn template_problem(t: &str) -> Option<String> {
    let mut rest = t;
    while let Some(o) = rest.find('{') {
        let Some(c) = rest[o..].find('}') else { break };
        let inner = &rest[o + 1..o + c];
        if inner.contains('{') {
            return Some(format!("placeholders cannot nest: {{{inner}…}}"));
        }
        let name = inner.split('|').next().unwrap_or(inner);
        // Literal braces of shell syntax (`{.spec…}`, `{range …}`) are not placeholders.
        if name.chars().all(|c| c.is_ascii_lowercase() || c == '_')
            && !super::values::is_placeholder(name)
        {
            return Some(format!("unknown placeholder {{{name}}}"));
        }
        rest = &rest[o + c + 1..];
    }
    None
}

/// The embedded rules, then each user file; a user rule with the name of an
/// existing one replaces it.
pub fn load(user_files: &[std::path::PathBuf]) -> Result<KnowledgeBase> {
    let mut kb = match built_in() {
        Ok(r) => r,
        Err(e) => bail!("built-in rules are broken: {}", e[0]),
    };
    for f in user_files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| anyhow::anyhow!("cannot read rules file '{}': {e}", f.display()))?;
        let user = parse_rules(&f.display().to_string(), &text).map_err(|errs| {
            anyhow::anyhow!(
                "{}",
                errs.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        })?;
        for r in user.rules {
            match kb.rules.iter_mut().find(|x| x.name == r.name) {
                Some(slot) => *slot = r,
                None => kb.rules.push(r),
            }
        }
        kb.eras.extend(user.eras);
    }
    Ok(kb)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    /// Every built-in rule's regex compiles: they are not checked when
    /// loaded, and the engine compiles each when first asked.
    #[test]
    fn built_in_regexes_compile() {
        for r in built_in().unwrap().rules {
            for rx in r.regex.iter().chain(&r.capture).chain(&r.not_regex) {
                if let Err(e) = regex::Regex::new(rx) {
                    panic!("rule '{}': {e}", r.name);
                }
            }
        }
    }

    #[test]
    fn built_in_rules_are_valid_and_cover_every_id() {
        let rules = built_in().unwrap_or_else(|e| {
            panic!(
                "{}",
                e.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        });
        for id in IDS {
            assert!(
                rules.rules.iter().any(|r| r.id.as_deref() == Some(id)),
                "no rule emits {id}"
            );
        }
    }

    /// A rule without literals is tried on every line: the prefilter can
    /// only skip a line for the rules whose wording it knows.
    #[test]
    fn every_built_in_line_rule_has_literals() {
        let rules = built_in().expect("built-in rules load");
        let bare: Vec<_> = rules
            .rules
            .iter()
            .filter(|r| r.text.is_empty() && r.metrics.is_none())
            .map(|r| r.name.as_str())
            .collect();
        assert!(bare.is_empty(), "rules without `text`: {bare:?}");
    }

    #[test]
    fn every_rule_survives_show_then_check() {
        #[derive(Serialize)]
        struct Doc<'a> {
            rule: Vec<&'a Rule>,
        }
        let kb = built_in().unwrap_or_else(|_| panic!("built-in rules"));
        for r in &kb.rules {
            let text = toml::to_string_pretty(&Doc { rule: vec![r] }).unwrap();
            let back =
                parse_rules("shown.toml", &text).unwrap_or_else(|e| panic!("{}: {}", r.name, e[0]));
            assert_eq!(
                serde_json::to_value(&back.rules[0]).unwrap(),
                serde_json::to_value(r).unwrap(),
                "{}",
                r.name
            );
        }
    }

    #[test]
    fn errors_point_at_file_and_line() {
        let text = "[[rule]]\nname = \"a\"\nid = \"connect.bogus\"\ntitle = \"t\"\nexplain = \"e\"\ntext = [\"x\"]\n";
        let e = parse_rules("mine.toml", text).unwrap_err();
        assert_eq!(e[0].line, 2);
        assert!(e[0]
            .to_string()
            .starts_with("mine.toml:2: rule 'a': unknown diagnosis id"));
        let e = parse_rules("mine.toml", "[[rule]]\nname = \"a\"\ntxt = [\"x\"]\n").unwrap_err();
        assert_eq!(e[0].line, 3);
        assert!(e[0].to_string().contains("unknown field"));
    }

    #[test]
    fn era_bounds_on_commands() {
        let n = NextCommand {
            cmd: "linkerd endpoints {dst}".into(),
            why: String::new(),
            era: Some("<2.10".into()),
        };
        assert!(n.applies_to(Era::Upto2_9));
        assert!(!n.applies_to(Era::V2_10));
    }
}
