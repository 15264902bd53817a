//! The explain report for a terminal. The first screen is the answer: a
//! recap with one line per finding (severity, id, title, the first next
//! command), as `linkerd check` gives one line per check; then each real
//! cause in detail; benign noise last, under one heading and in less room.

use super::evidence::fit;
use super::explain::{collect_next, unmatched_shown, Report};
use super::plural::count as plural;
use super::style::Style;
use super::text::clean;
use crate::rules::command::setup_line;
use crate::rules::engine::{Evidence, Finding};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;

/// How to lay the report out.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// Columns of the terminal (or `COLUMNS`).
    pub width: usize,
    /// Evidence lines as the log wrote them, never shortened.
    pub verbose: bool,
}

fn severity(st: &Style, f: &Finding) -> String {
    let s = format!("{:<8}", f.severity.to_uppercase());
    match f.severity {
        "critical" => st.red(&s),
        "warning" => st.yellow(&s),
        _ => st.dim(&s),
    }
}

pub fn human(r: &Report, st: &Style, lay: &Layout) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} {}, {}, {} unparsed{}",
        st.bold("lpa explain:"),
        plural(r.input.lines, "line", "lines"),
        plural(r.input.events, "event", "events"),
        r.input.unparsed,
        r.era_text()
            .map(|e| format!(", log format of Linkerd {e}"))
            .unwrap_or_default()
    );
    if r.findings.is_empty() {
        if r.unmatched.is_empty() {
            let _ = writeln!(o, "\nNo known problem found in these lines.");
        } else {
            let _ = writeln!(
                o,
                "\nNo known problem found, but the input holds warnings or errors lpa has no rule for (below)."
            );
        }
    }
    let (real, benign): (Vec<&Finding>, Vec<&Finding>) = r.findings.iter().partition(|f| !f.benign);
    recap(&mut o, st, lay, &real, &benign);
    let mut said: HashMap<&str, String> = HashMap::new();
    let mut p = Printer {
        o: &mut o,
        st,
        lay,
        one_source: r.stats.sources.len() <= 1,
    };
    for (i, f) in real.iter().enumerate() {
        p.finding(&(i + 1).to_string(), f, &mut said);
    }
    if !benign.is_empty() {
        let _ = writeln!(
            p.o,
            "\n{}",
            st.bold("Benign: expected noise, nothing to fix")
        );
        for (i, f) in benign.iter().enumerate() {
            p.benign(&format!("b{}", i + 1), f, &mut said);
        }
    }
    p.unmatched(r);
    for n in &r.notes {
        let _ = writeln!(p.o);
        p.hanging(0, 6, &format!("note: {n}"));
    }
    o
}

/// One line per real finding, its first command beside it when the width
/// allows (under it otherwise); the benign ones named on one line.
fn recap(o: &mut String, st: &Style, lay: &Layout, real: &[&Finding], benign: &[&Finding]) {
    if real.is_empty() && benign.is_empty() {
        return;
    }
    let _ = writeln!(o);
    let mut first_cmds = Vec::new();
    for f in real {
        let first = lay.width.saturating_sub(9 + f.id.chars().count() + 2);
        let lines = hang(&clean(&f.title), first, lay.width.saturating_sub(9));
        let _ = write!(o, "{} {}  ", severity(st, f), st.bold(&f.id));
        let _ = writeln!(o, "{}", lines.join("\n         "));
        if let Some(c) = f.next_commands.first() {
            let _ = writeln!(o, "         {} {}", st.green("$"), c.command);
            first_cmds.push(c.clone());
        }
    }
    if !benign.is_empty() {
        let ids: Vec<&str> = benign.iter().map(|f| f.id.as_str()).collect();
        let line = format!(
            "{}, details at the end: {}",
            plural(benign.len() as u64, "benign finding", "benign findings"),
            ids.join(", ")
        );
        let room = lay.width.saturating_sub(9);
        let _ = writeln!(
            o,
            "{} {}",
            st.dim("INFO    "),
            st.dim(&hang(&line, room, room).join("\n         "))
        );
    }
    if let Some(l) = setup_line(&first_cmds) {
        for l in wrap(&l, lay.width.saturating_sub(9).max(20)) {
            let _ = writeln!(o, "         {}", st.dim(&l));
        }
    }
}

struct Printer<'a> {
    o: &'a mut String,
    st: &'a Style,
    lay: &'a Layout,
    one_source: bool,
}

impl Printer<'_> {
    /// Prose from a rule, wrapped under `indent`.
    fn prose(&mut self, indent: usize, s: &str) {
        self.hanging(indent, indent, s);
    }

    /// A list item: its first line at `indent`, the next ones under `rest`.
    fn hanging(&mut self, indent: usize, rest: usize, s: &str) {
        let room = |i: usize| self.lay.width.saturating_sub(i);
        for (k, line) in hang(s, room(indent), room(rest)).iter().enumerate() {
            let pad = if k == 0 { indent } else { rest };
            let _ = writeln!(self.o, "{}{}", " ".repeat(pad), clean(line));
        }
    }

    fn seen(&mut self, f: &Finding) {
        let line = format!(
            "{}, confidence {:.0}%{}{}",
            plural(f.count, "line", "lines"),
            f.confidence * 100.0,
            f.first_seen
                .as_ref()
                .map(|s| format!(", first {}", clean(s)))
                .unwrap_or_default(),
            f.last_seen
                .as_ref()
                .filter(|l| Some(*l) != f.first_seen.as_ref())
                .map(|s| format!(", last {}", clean(s)))
                .unwrap_or_default()
        );
        self.hanging(3, 5, &line);
    }

    /// The explanation, or a pointer to the finding that printed the same.
    fn explanation<'f>(&mut self, n: &str, f: &'f Finding, said: &mut HashMap<&'f str, String>) {
        match said.get(f.explanation.as_str()) {
            Some(first) => {
                let _ = writeln!(
                    self.o,
                    "   {}",
                    self.st.dim(&format!("(same as {first} above)"))
                );
            }
            None => {
                said.insert(&f.explanation, n.to_string());
                self.prose(3, &f.explanation);
            }
        }
    }

    fn title(&mut self, n: &str, f: &Finding) {
        let head = format!("{n}. {} ", f.severity.to_uppercase());
        let first = self
            .lay
            .width
            .saturating_sub(head.chars().count() + f.id.chars().count() + 2);
        let lines = hang(&clean(&f.title), first, self.lay.width.saturating_sub(3));
        let sev = match f.severity {
            "critical" => self.st.red(&f.severity.to_uppercase()),
            "warning" => self.st.yellow(&f.severity.to_uppercase()),
            _ => self.st.dim(&f.severity.to_uppercase()),
        };
        let _ = writeln!(
            self.o,
            "\n{n}. {sev} {}  {}",
            self.st.bold(&f.id),
            lines.join("\n   ")
        );
    }

    fn finding<'f>(&mut self, n: &str, f: &'f Finding, said: &mut HashMap<&'f str, String>) {
        self.title(n, f);
        self.seen(f);
        self.explanation(n, f, said);
        if !f.subjects.is_empty() {
            let subj: Vec<String> = f
                .subjects
                .iter()
                .map(|(k, v)| {
                    let shown: Vec<Cow<'_, str>> = v.iter().take(6).map(|s| clean(s)).collect();
                    let more = if v.len() > 6 {
                        format!(" (+{})", v.len() - 6)
                    } else {
                        String::new()
                    };
                    format!("{k}: {}{more}", shown.join(", "))
                })
                .collect();
            let lines = wrap(
                &format!("subjects: {}", subj.join("; ")),
                self.lay.width.saturating_sub(3).max(20),
            );
            for l in lines {
                let _ = writeln!(self.o, "   {}", self.st.dim(&l));
            }
        }
        let _ = writeln!(self.o, "   {}", self.st.dim("evidence:"));
        for e in &f.evidence {
            self.evidence(5, e);
        }
        if !f.consequences.is_empty() {
            let _ = writeln!(
                self.o,
                "   {}",
                self.st.dim("consequences (explained by this cause):")
            );
            for c in &f.consequences {
                let line = format!(
                    "- {} {} ({})",
                    c.id,
                    clean(&c.title),
                    plural(c.count, "line", "lines")
                );
                self.hanging(5, 7, &line);
                for e in &c.evidence {
                    self.evidence(7, e);
                }
            }
        }
        for note in &f.notes {
            self.hanging(3, 9, &format!("note: {note}"));
        }
        if !f.next_commands.is_empty() {
            let _ = writeln!(self.o, "   {}", self.st.dim("next:"));
            if let Some(l) = setup_line(&f.next_commands) {
                let _ = writeln!(self.o, "     {}", self.st.dim(&l));
            }
            for c in &f.next_commands {
                // A command is never wrapped: it must paste as one line.
                let _ = writeln!(self.o, "     {} {}", self.st.green("$"), c.command);
                self.prose(7, &c.why);
            }
        }
        let (url, page) = docs(f);
        let _ = writeln!(self.o, "   {} {url}", self.st.dim("docs:"));
        let _ = writeln!(self.o, "         {page}");
    }

    /// A benign finding: its title, counts, why it is harmless, one line
    /// of evidence and the command that silences it.
    fn benign<'f>(&mut self, n: &str, f: &'f Finding, said: &mut HashMap<&'f str, String>) {
        self.title(n, f);
        self.seen(f);
        self.explanation(n, f, said);
        if let Some(e) = f.evidence.first() {
            self.evidence(5, e);
        }
        if let Some(c) = f.next_commands.first() {
            if let Some(l) = setup_line(std::slice::from_ref(c)) {
                let _ = writeln!(self.o, "     {}", self.st.dim(&l));
            }
            let _ = writeln!(self.o, "     {} {}", self.st.green("$"), c.command);
        }
    }

    /// `LINE text` for one input, `SOURCE:LINE text` for several; a long
    /// line gives up the middle of its span stack, never its message.
    fn evidence(&mut self, indent: usize, e: &Evidence) {
        let loc = if self.one_source {
            e.line.to_string()
        } else {
            format!("{}:{}", e.source, e.line)
        };
        let room = self
            .lay
            .width
            .saturating_sub(indent + loc.chars().count() + 1);
        let pad = " ".repeat(indent);
        let under = " ".repeat(loc.chars().count() + 3);
        for (k, line) in e.text.lines().enumerate() {
            let shown = match (&e.parts, k) {
                (Some(p), 0) if !self.lay.verbose => fit(p, room),
                _ => line.to_string(),
            };
            let loc = if k == 0 {
                clean(&loc)
            } else {
                Cow::Borrowed("")
            };
            let shown = clean(&shown);
            let pieces = if self.lay.verbose {
                vec![&*shown]
            } else {
                break_at_spaces(&shown, room, room.saturating_sub(2))
            };
            for (j, piece) in pieces.iter().enumerate() {
                if j == 0 {
                    let _ = writeln!(self.o, "{pad}{} {piece}", self.st.dim(&loc));
                } else {
                    let _ = writeln!(self.o, "{pad}{under}{piece}");
                }
            }
        }
    }

    fn unmatched(&mut self, r: &Report) {
        if r.unmatched.is_empty() {
            return;
        }
        let _ = writeln!(
            self.o,
            "\n{}",
            self.st.bold("Warnings and errors lpa has no rule for:")
        );
        let shown = unmatched_shown(r);
        for e in r.unmatched.iter().take(shown) {
            let lvl = e
                .level
                .map_or("line".to_string(), |l| l.as_str().to_uppercase());
            self.hanging(2, 5, &format!("{}× {lvl} {}", e.count, e.template));
            self.evidence(5, &e.example);
        }
        let more = r.unmatched.len().saturating_sub(shown) as u64 + r.unmatched_more;
        if more > 0 {
            let _ = writeln!(
                self.o,
                "  … and {more} more (`lpa summarize` lists them all)"
            );
        }
        let _ = writeln!(self.o, "  {}", self.st.dim("to place them, collect:"));
        for c in collect_next(r) {
            self.hanging(3, 5, &format!("- {c}"));
        }
    }
}

/// Where a finding's id is documented: the rule's linkerd.io page (else
/// the id's), and the page lpa ships.
pub fn docs(f: &Finding) -> (String, String) {
    let page = crate::rules::pages::page(&f.id);
    let url = f.doc.clone().or_else(|| page.map(|p| p.doc.clone()));
    (url.unwrap_or_default(), format!("lpa rules show {}", f.id))
}

/// Words of `s` in lines of at most `width` characters (a longer word
/// stands alone); each `\n` starts a paragraph.
pub fn wrap(s: &str, width: usize) -> Vec<String> {
    hang(s, width, width)
}

/// As [`wrap`], the first line in `first` columns and the others in `rest`
/// (never fewer than 20, which a too-narrow terminal wraps again).
fn hang(s: &str, first: usize, rest: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for para in s.split('\n') {
        let mut line = String::new();
        let mut len = 0;
        for w in para.split_whitespace() {
            let n = w.chars().count();
            let width = if out.is_empty() { first } else { rest }.max(20);
            if len > 0 && len + 1 + n > width {
                out.push(std::mem::take(&mut line));
                len = 0;
            }
            if len > 0 {
                line.push(' ');
                len += 1;
            }
            line.push_str(w);
            len += n;
        }
        out.push(line);
    }
    out
}

/// `s` cut at spaces into pieces of at most `first`, then `rest`,
/// characters (a longer word stands alone, whole, to be copied): unlike
/// [`wrap`], a log line keeps its own spacing.
fn break_at_spaces(s: &str, first: usize, rest: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut s = s;
    loop {
        let width = if out.is_empty() { first } else { rest }.max(20);
        let Some((end, _)) = s.char_indices().nth(width) else {
            out.push(s);
            return out;
        };
        let cut = s[..end]
            .rfind(' ')
            .filter(|&i| i > 0)
            .or_else(|| s[end..].find(' ').map(|i| end + i));
        let Some(i) = cut else {
            out.push(s);
            return out;
        };
        let (piece, next) = (&s[..i], &s[i + 1..]);
        out.push(piece);
        s = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_counts_characters_and_keeps_long_words_whole() {
        // 20 characters (27 bytes) fit in 20 columns; no width goes below 20.
        assert_eq!(
            wrap("aé bé cé dé eé fé gé hé", 20),
            vec!["aé bé cé dé eé fé gé", "hé"]
        );
        assert_eq!(
            wrap("a averyverylongwordoftwentysix b", 4),
            vec!["a", "averyverylongwordoftwentysix", "b"]
        );
        assert_eq!(wrap("one\ntwo", 80), vec!["one", "two"]);
    }

    #[test]
    fn log_lines_break_at_spaces_and_keep_their_spacing() {
        let s = "[ 1.0s]  WARN linkerd_app: Failed to connect error=timed out";
        let pieces = break_at_spaces(s, 30, 25);
        assert_eq!(
            pieces,
            vec![
                "[ 1.0s]  WARN linkerd_app:",
                "Failed to connect",
                "error=timed out"
            ]
        );
        let word = "x".repeat(50);
        let long = format!("a {word} b");
        assert_eq!(break_at_spaces(&long, 20, 20), vec!["a", &word, "b"]);
    }
}
