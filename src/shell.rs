//! POSIX shell words, both ways: quoting a value so that `sh` reads it back
//! as one literal word, and the small grammar next-command templates are
//! written in (words, quotes, `{placeholder}` holes and `|` pipelines).
//! A template that needs more of the shell (`;`, `$(…)`, redirections,
//! globs) is refused when the rules are loaded, so a rendered command can
//! only ever run the programs its template names.

use std::borrow::Cow;

/// Bytes that never mean anything to a shell, wherever they stand in a
/// word (`=`, `~` and `#` can, at a word's start: never let out bare).
fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"@%+:,./_-".contains(&b)
}

/// `s` as one shell word with the same literal value, for any word but a
/// command's first (where `NAME=value` would be an assignment: templates
/// keep their program names literal).
pub fn quote(s: &str) -> Cow<'_, str> {
    if !s.is_empty() && !s.starts_with('=') && s.bytes().all(|b| plain(b) || b == b'=') {
        return Cow::Borrowed(s);
    }
    // Double quotes read better around an apostrophe, and are literal as
    // long as nothing in them expands.
    if s.contains('\'') && !s.contains(['"', '$', '`', '\\', '!']) {
        return Cow::Owned(format!("\"{s}\""));
    }
    Cow::Owned(format!("'{}'", s.replace('\'', "'\\''")))
}

/// One piece of a template word.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Lit(String),
    /// `{name}` or `{name|default}`.
    Hole {
        name: String,
        default: Option<String>,
    },
}

/// A template word: literal text and holes, joined without spaces.
pub type Word = Vec<Piece>;

/// A parsed template: a pipeline of simple commands, each a list of words.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub stages: Vec<Vec<Word>>,
}

fn push_lit(word: &mut Word, c: char) {
    match word.last_mut() {
        Some(Piece::Lit(s)) => s.push(c),
        _ => word.push(Piece::Lit(c.to_string())),
    }
}

/// A `{name}` or `{name|default}` hole at the start of `s` (which starts
/// with `{`), and its length; `None` when the braces are not ours
/// (jsonpath's `{.spec…}`).
fn hole(s: &str, is_placeholder: &dyn Fn(&str) -> bool) -> Option<(Piece, usize)> {
    let close = s.find('}')?;
    let inner = &s[1..close];
    let (name, default) = match inner.split_once('|') {
        Some((n, d)) => (n, Some(d.to_string())),
        None => (inner, None),
    };
    is_placeholder(name).then(|| {
        (
            Piece::Hole {
                name: name.to_string(),
                default,
            },
            close + 1,
        )
    })
}

/// Parses a next-command template; the error says what shell syntax it
/// uses that a next command may not.
pub fn parse_template(t: &str, is_placeholder: &dyn Fn(&str) -> bool) -> Result<Template, String> {
    #[derive(PartialEq)]
    enum Q {
        None,
        Single,
        Double,
    }
    let mut stages: Vec<Vec<Word>> = vec![Vec::new()];
    let mut word: Option<Word> = None;
    let mut q = Q::None;
    let mut i = 0;
    while i < t.len() {
        let rest = &t[i..];
        let c = rest.chars().next().expect("in bounds");
        if c == '{' {
            if let Some((p, n)) = hole(rest, is_placeholder) {
                word.get_or_insert_with(Vec::new).push(p);
                i += n;
                continue;
            }
        }
        i += c.len_utf8();
        match q {
            Q::Single if c == '\'' => q = Q::None,
            Q::Single => push_lit(word.get_or_insert_with(Vec::new), c),
            Q::Double => match c {
                '"' => q = Q::None,
                '$' | '`' => return Err(format!("`{c}` inside double quotes expands")),
                '\\' => {
                    let n = t[i..].chars().next().ok_or("a `\\` ends the template")?;
                    i += n.len_utf8();
                    if !matches!(n, '$' | '`' | '"' | '\\') {
                        push_lit(word.get_or_insert_with(Vec::new), '\\');
                    }
                    push_lit(word.get_or_insert_with(Vec::new), n);
                }
                _ => push_lit(word.get_or_insert_with(Vec::new), c),
            },
            Q::None => match c {
                ' ' | '\t' => {
                    if let Some(w) = word.take() {
                        stages.last_mut().expect("one stage").push(w);
                    }
                }
                '|' => {
                    if let Some(w) = word.take() {
                        stages.last_mut().expect("one stage").push(w);
                    }
                    if stages.last().is_some_and(Vec::is_empty) {
                        return Err("a `|` with no command before it".into());
                    }
                    stages.push(Vec::new());
                }
                '\'' => {
                    word.get_or_insert_with(Vec::new);
                    q = Q::Single;
                }
                '"' => {
                    word.get_or_insert_with(Vec::new);
                    q = Q::Double;
                }
                '\\' => {
                    let n = t[i..].chars().next().ok_or("a `\\` ends the template")?;
                    i += n.len_utf8();
                    push_lit(word.get_or_insert_with(Vec::new), n);
                }
                c if c.is_ascii() && !plain(c as u8) && !"=".contains(c) => {
                    return Err(format!(
                        "`{c}` outside quotes: a next command is words and `|` only (quote it, or use a placeholder)"
                    ))
                }
                c if c.is_control() => return Err("a control character".into()),
                c => push_lit(word.get_or_insert_with(Vec::new), c),
            },
        }
    }
    if q != Q::None {
        return Err("an unclosed quote".into());
    }
    if let Some(w) = word.take() {
        stages.last_mut().expect("one stage").push(w);
    }
    if stages.iter().any(Vec::is_empty) {
        return Err("an empty command (a `|` at an end, or nothing at all)".into());
    }
    Ok(Template { stages })
}

/// Splits a rendered command back into its pipeline of argument vectors,
/// as `sh` would, for the subset `quote` and the renderer write (quotes,
/// backslashes, `"$NAME"`, `|`); `$NAME` stays as written. `None` for
/// anything else: tests and fuzzing use it to check the renderer.
pub fn split(s: &str) -> Option<Vec<Vec<String>>> {
    let mut stages = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            ' ' => {
                if let Some(w) = word.take() {
                    stages.last_mut()?.push(w);
                }
            }
            '|' => {
                if let Some(w) = word.take() {
                    stages.last_mut()?.push(w);
                }
                stages.push(Vec::new());
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match it.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match it.next()? {
                        '"' => break,
                        '`' => return None,
                        '$' => {
                            w.push('$');
                            while let Some(&n) = it.peek() {
                                if !(n.is_ascii_uppercase() || n == '_') {
                                    break;
                                }
                                w.push(n);
                                it.next();
                            }
                        }
                        '\\' => match it.next()? {
                            n @ ('$' | '`' | '"' | '\\') => w.push(n),
                            n => {
                                w.push('\\');
                                w.push(n);
                            }
                        },
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(it.next()?),
            c if c.is_ascii() && !plain(c as u8) && c != '=' => return None,
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(w) = word.take() {
        stages.last_mut()?.push(w);
    }
    Some(stages)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(n: &str) -> bool {
        matches!(n, "ns" | "pod" | "dst")
    }

    #[test]
    fn quoting_round_trips() {
        for s in [
            "plain-name.ns:80",
            "",
            "it's",
            "$(rm -rf ~)",
            "`id`",
            "a'b\"c$d",
            "x;y|z",
            "line\nbreak",
            "{.spec}",
            "~root",
            "#x",
            "=x",
            "--since=1h",
        ] {
            let q = quote(s);
            assert_eq!(split(&q), Some(vec![vec![s.to_string()]]), "{q}");
        }
    }

    #[test]
    fn templates_are_words_quotes_and_pipes() {
        let t = parse_template(
            "kubectl get pod -n {ns} {pod|web} -o jsonpath='{.spec.hostNetwork}' | grep -c \"Can't\"",
            &ours,
        )
        .unwrap();
        assert_eq!(t.stages.len(), 2);
        assert_eq!(
            t.stages[0][4],
            vec![Piece::Hole {
                name: "ns".into(),
                default: None
            }]
        );
        assert_eq!(
            t.stages[0][7],
            vec![Piece::Lit("jsonpath={.spec.hostNetwork}".into())]
        );
        assert_eq!(t.stages[1][2], vec![Piece::Lit("Can't".into())]);
        for bad in [
            "a; b",
            "a $(b)",
            "a `b`",
            "a > f",
            "a && b",
            "a \"$X\"",
            "a *.log",
            "a 'open",
            "| a",
            "a |",
            "a <pod>",
            "a {unknown}",
        ] {
            assert!(parse_template(bad, &ours).is_err(), "{bad}");
        }
    }
}
