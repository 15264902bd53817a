//! The command line: flags and subcommands ([`args`]), output
//! ([`out`]), running the commands and their exit codes.

mod args;
mod out;

pub use args::*;
use out::Out;

use crate::input::{self, Cut, Source};
use crate::parse::template::{self, Seen};
use crate::parse::{Level, Record};
use crate::pipeline::{self, Accumulator};
use crate::report::explain::{self, Report};
use crate::report::human::{self, Layout};
use crate::report::jsonl;
use crate::report::plural::count;
use crate::report::style::Style;
use crate::report::summary::{self, Summary, SummaryAcc};
use crate::rules::{self, engine::Engine};
use crate::{follow, triage};
use anyhow::Result;
use clap::{CommandFactory, Parser};
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

/// `lpa parse`: each block renders its lines; blocks are written in order,
/// in chunks as they are rendered.
struct ParseOut {
    out: pipeline::Chunks,
    /// Cut lines of the block not yet written, in order.
    cuts: Vec<Cut>,
    level: Option<Level>,
    only: Only,
    /// Write lines read through their shape from their shape's record.
    by_shape: bool,
}

impl ParseOut {
    fn keeps_events_at(&self, level: Option<Level>) -> bool {
        self.only != Only::Unparsed && self.level.is_none_or(|min| level.is_some_and(|l| l >= min))
    }

    /// A record of the lines before `end` was written (or left out): the
    /// lines among them cut come after it.
    fn record_ends(&mut self, source: &str, end: u64) {
        while let Some(c) = self.cuts.first().filter(|c| c.line < end).copied() {
            self.cuts.remove(0);
            jsonl::write_cut(self.out.buf(), source, c);
        }
        self.out.record_done();
    }
}

impl Accumulator for ParseOut {
    fn cut(&mut self, _: &str, cut: Cut) {
        self.cuts.push(cut);
    }

    fn record(&mut self, source: &str, rec: &Record<'_>) {
        let keep = match rec {
            Record::Event(e) => self.keeps_events_at(e.level),
            Record::Unparsed { .. } => self.only != Only::Events && self.level.is_none(),
        };
        if keep {
            jsonl::write_record(self.out.buf(), source, rec);
        }
        self.record_ends(source, rec.line() + u64::from(rec.lines()));
    }

    fn wants_lean(&self) -> bool {
        self.by_shape
    }

    /// A line read through its shape is written from its shape's record
    /// ([`jsonl::write_seen`]), without its event.
    fn lean(
        &mut self,
        source: &str,
        line: u64,
        seen: &Seen<'_>,
        _: Option<&crate::parse::Event<'_>>,
        _: &pipeline::Around<'_>,
    ) -> bool {
        if seen.cut {
            return false;
        }
        let written = if self.keeps_events_at(seen.level) {
            jsonl::write_seen(self.out.buf(), source, line, seen)
        } else {
            seen.uptime().is_some()
        };
        if written {
            self.record_ends(source, line + 1);
        }
        written
    }
}

impl pipeline::Render for ParseOut {
    fn output(&mut self) -> &mut pipeline::Chunks {
        &mut self.out
    }
}

fn cmd_parse(
    files: &[PathBuf],
    level: Option<Level>,
    only: Only,
    read: &pipeline::Options,
    out: &mut Out,
) -> Result<i32> {
    let mut sources = out.open(files)?;
    let stdout = io::stdout();
    // JSON is about three times the input, and many times more for short
    // lines: small blocks, and their output streamed in chunks.
    let opts = pipeline::Options {
        block_size: 1 << 20,
        ..*read
    };
    let filter = ParseFilter {
        level,
        only,
        by_shape: true,
    };
    parse_records(&mut sources, &opts, filter, |chunk| {
        if out.anon.is_some() || out.quiet {
            // JSON output is UTF-8 by construction.
            out.write(&String::from_utf8_lossy(chunk))
        } else {
            Ok(stdout.lock().write_all(chunk)?)
        }
    })?;
    stdout.lock().flush()?;
    Ok(0)
}

/// Which records `lpa parse` writes, and how.
#[derive(Clone, Copy)]
pub struct ParseFilter {
    pub level: Option<Level>,
    pub only: Only,
    /// Write lines read through a line shape from the shape's record
    /// rather than from their events (the same bytes).
    pub by_shape: bool,
}

/// `lpa parse`: the records of `sources` as JSON lines, handed to `write`
/// in input order.
pub fn parse_records(
    sources: &mut [Source],
    opts: &pipeline::Options,
    filter: ParseFilter,
    write: impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    pipeline::stream(
        sources,
        opts,
        |chunks| ParseOut {
            out: chunks,
            level: filter.level,
            only: filter.only,
            cuts: Vec::new(),
            by_shape: filter.by_shape,
        },
        write,
    )
}

/// Runs the rule engine over the inputs (in parallel blocks).
pub fn analyze(
    sources: &mut [Source],
    opts: &pipeline::Options,
    engine: &Engine,
) -> Result<Report> {
    let mut total = engine.state();
    template::share_more(opts.in_place && sources.iter().all(Source::mappable));
    pipeline::run(
        sources,
        opts,
        || engine.state(),
        |_, st| {
            total.merge(st);
            Ok(())
        },
    )?;
    Ok(total.finish(None))
}

fn fail_status(r: &Report, fail_on: Option<FailOn>) -> i32 {
    let failed = match fail_on {
        Some(FailOn::Critical) => r.has_at_least("critical"),
        Some(FailOn::Warning) => r.has_at_least("warning"),
        None => false,
    };
    i32::from(failed)
}

fn cmd_explain(
    files: &[PathBuf],
    follow_mode: bool,
    args: &ReportArgs,
    g: &Global,
    opts: &pipeline::Options,
    out: &mut Out,
) -> Result<i32> {
    let engine = args.engine()?;
    let mut report = if follow_mode {
        if files.len() > 1 {
            anyhow::bail!("--follow takes one file (or stdin), not {}", files.len());
        }
        let path = files.first().filter(|p| p.as_os_str() != "-").cloned();
        let updates = match (g.quiet, args.format) {
            (true, _) => follow::Updates::Nowhere,
            (false, Format::Human) => follow::Updates::Stdout,
            (false, _) => follow::Updates::Stderr,
        };
        let opts = follow::Follow {
            path,
            max_line: opts.max_line,
            updates,
            notices: !g.quiet,
        };
        follow::run(opts, &engine)?
    } else {
        let mut sources = out.open(files)?;
        analyze(&mut sources, opts, &engine)?
    };
    args.hide(&mut report);
    let style = Style::for_stdout(g.color);
    match args.format {
        Format::Json => out.write(&(serde_json::to_string_pretty(&report)? + "\n"))?,
        Format::Markdown => out.write_doc(&explain::markdown(&report), false)?,
        Format::Human => {
            let lay = Layout {
                width: crate::report::style::width(),
                verbose: args.verbose,
            };
            // Follow mode has written its updates on stdout already.
            if !follow_mode {
                out.page();
            }
            out.write_doc(&human::human(&report, &style, &lay), style.color)?
        }
    }
    Ok(fail_status(&report, args.fail_on))
}

/// Bytes of a ticket that triage reads: a ticket is prose with pasted
/// excerpts; a whole log belongs to `lpa explain`, which streams.
const TRIAGE_MAX: usize = 16 << 20;

fn cmd_triage(file: Option<&PathBuf>, args: &ReportArgs, out: &mut Out) -> Result<i32> {
    let engine = args.engine()?;
    let files: Vec<PathBuf> = file.cloned().into_iter().collect();
    let mut text = Vec::new();
    let mut name = String::from("stdin");
    let mut dropped = 0;
    for mut src in out.open(&files)? {
        name = src.name.clone();
        dropped = src.read_capped(&mut text, TRIAGE_MAX)?;
    }
    let mut t = triage::triage(&name, &text, &engine);
    if dropped > 0 {
        let note = format!(
            "Only the first {} MiB of the ticket were read; {dropped} bytes after them were not. \
             For a whole log, run `lpa explain` on it.",
            TRIAGE_MAX >> 20
        );
        eprintln!("lpa: {note}");
        t.report.notes.push(note);
    }
    args.hide(&mut t.report);
    match args.format {
        Format::Json => out.write(&(serde_json::to_string_pretty(&t)? + "\n"))?,
        Format::Markdown | Format::Human => out.write_doc(&triage::markdown(&t), false)?,
    }
    Ok(fail_status(&t.report, args.fail_on))
}

fn cmd_summarize(
    files: &[PathBuf],
    top: usize,
    by: Option<By>,
    format: Format,
    g: &Global,
    opts: &pipeline::Options,
    out: &mut Out,
) -> Result<i32> {
    let engine = Engine::new(rules::load(&[])?);
    let mut sources = out.open(files)?;
    let mut total = Summary::default();
    let mut per_source: Vec<(String, Summary)> = Vec::new();
    // A block's summary is small beside it (its tables are capped), so
    // larger blocks cost little memory, and each block costs a few thread
    // wake-ups: 1 GiB gateway log, 2 threads, 2.93 s in 256 KiB blocks,
    // 2.65 s in 1 MiB.
    let opts = pipeline::Options {
        block_size: 1 << 20,
        ..*opts
    };
    pipeline::run(
        &mut sources,
        &opts,
        || SummaryAcc::new(&engine),
        |name, acc| {
            let block = acc.into_summary();
            if by == Some(By::Source) {
                match per_source.last_mut() {
                    Some((n, s)) if n == name => s.merge(block.clone()),
                    _ => per_source.push((name.to_string(), block.clone())),
                }
            }
            total.merge(block);
            Ok(())
        },
    )?;
    let style = Style::for_stdout(g.color);
    let text = match format {
        Format::Json => {
            let mut doc = serde_json::to_value(total.doc(top))?;
            if by == Some(By::Source) {
                let each = per_source
                    .iter()
                    .map(|(n, s)| Ok((n.clone(), serde_json::to_value(s.doc(top))?)))
                    .collect::<Result<serde_json::Map<_, _>>>()?;
                doc["by_source"] = serde_json::Value::Object(each);
            }
            serde_json::to_string_pretty(&doc)? + "\n"
        }
        Format::Markdown => {
            let mut t: String = per_source
                .iter()
                .map(|(n, s)| format!("# {n}\n\n{}\n", summary::markdown(s, top)))
                .collect();
            t.push_str(&summary::markdown(&total, top));
            t
        }
        Format::Human => {
            let width = crate::report::style::width();
            let mut t: String = per_source
                .iter()
                .map(|(n, s)| {
                    format!(
                        "{}\n{}\n",
                        style.bold(&format!("=== {n}")),
                        summary::human(s, top, &style, width)
                    )
                })
                .collect();
            if !per_source.is_empty() {
                t.push_str(&format!("{}\n", style.bold("=== all inputs")));
            }
            t.push_str(&summary::human(&total, top, &style, width));
            t
        }
    };
    if format == Format::Json {
        out.write(&text)?;
    } else {
        if format == Format::Human {
            out.page();
        }
        out.write_doc(&text, style.color && format == Format::Human)?;
    }
    Ok(0)
}

fn cmd_rules(cmd: Option<&RulesCommand>, out: &mut Out) -> Result<i32> {
    let list = RulesCommand::List { rules: Vec::new() };
    match cmd.unwrap_or(&list) {
        RulesCommand::List { rules: files } => {
            let rules = rules::load(files)?.rules;
            let mut text = String::new();
            for id in rules::IDS {
                let names: Vec<&str> = rules
                    .iter()
                    .filter(|r| r.id.as_deref() == Some(*id))
                    .map(|r| r.name.as_str())
                    .collect();
                text.push_str(&format!("{id:<34} {}\n", names.join(", ")));
            }
            let tags: Vec<&str> = rules
                .iter()
                .filter(|r| r.id.is_none())
                .map(|r| r.name.as_str())
                .collect();
            text.push_str(&format!(
                "{:<34} {}\n",
                "(connection tags)",
                tags.join(", ")
            ));
            text.push_str("\n`lpa rules show ID` prints an id's page.\n");
            out.write(&text)?;
            Ok(0)
        }
        RulesCommand::Show {
            name,
            toml,
            rules: files,
        } => {
            let kb = rules::load(files)?;
            if let Some(page) = rules::pages::page(name).filter(|_| !toml) {
                let width = crate::report::style::width();
                out.write_doc(&rules::pages::render(page, &kb, width), false)?;
                return Ok(0);
            }
            let rules = kb.rules;
            let found: Vec<&rules::Rule> = rules
                .iter()
                .filter(|r| &r.name == name || r.id.as_deref() == Some(name))
                .collect();
            if found.is_empty() {
                anyhow::bail!("no rule or diagnosis id '{name}'; `lpa rules list` shows them");
            }
            #[derive(serde::Serialize)]
            struct Doc<'a> {
                rule: Vec<&'a rules::Rule>,
            }
            out.write(&toml::to_string_pretty(&Doc { rule: found })?)?;
            Ok(0)
        }
        RulesCommand::Check { file } => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| anyhow::anyhow!("cannot read '{}': {e}", file.display()))?;
            match rules::parse_rules(&file.display().to_string(), &text) {
                Ok(kb) => {
                    out.write(&format!(
                        "{}: {} and {}, all valid\n",
                        file.display(),
                        count(kb.rules.len() as u64, "rule", "rules"),
                        count(kb.eras.len() as u64, "era cue", "era cues")
                    ))?;
                    Ok(0)
                }
                Err(errs) => {
                    for e in errs {
                        eprintln!("{e}");
                    }
                    Ok(2)
                }
            }
        }
    }
}

/// Installed as `kubectl-lpa`, lpa runs as a kubectl plugin (`kubectl lpa …`).
fn man_page(command: Option<&str>, out: &mut Out) -> Result<i32> {
    let top = Cli::command();
    let page = match command {
        None => top,
        Some(c) => {
            let name = format!("{}-{c}", top.get_name());
            top.find_subcommand(c)
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("no command '{c}' (`lpa help` lists them)"))?
                .name(name)
        }
    };
    let mut buf = Vec::new();
    clap_mangen::Man::new(page).render(&mut buf)?;
    out.write(&String::from_utf8_lossy(&buf))?;
    Ok(0)
}

fn bin_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|a| {
            PathBuf::from(a)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .filter(|n| n == "kubectl-lpa")
        .unwrap_or_else(|| "lpa".to_string())
}

/// What stdin that stays open and quiet is told (`kubectl logs -f` piped
/// into a command that reports at the end of its input).
fn waiting_hint(command: &Command) -> Option<String> {
    let what = match command {
        Command::Explain { follow: false, .. } => format!(
            "explain reports when it ends; to see findings as a stream \
             (kubectl logs -f) brings them, run: {} explain --follow",
            bin_name()
        ),
        Command::Summarize { .. } => "summarize reports when it ends; for a followed log, \
             read a window that ends: kubectl logs --since=10m …"
            .to_string(),
        _ => return None,
    };
    Some(format!(
        "lpa: standard input is still open and has sent nothing for a few seconds; {what}"
    ))
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

pub fn main() -> i32 {
    let cli = Cli::parse();
    let g = &cli.global;
    let read = cli.command.read();
    // Built here, so a thread that cannot be spawned is an error (rayon's
    // lazily built pool would panic); 0 means one per core.
    if let Err(e) = rayon::ThreadPoolBuilder::new()
        .num_threads(read.and_then(|r| r.threads).map_or(0, |n| n.max(1)))
        .build_global()
    {
        eprintln!("lpa: cannot start worker threads: {e}");
        return 2;
    }
    let mut opts = pipeline::Options {
        progress: !g.quiet,
        ..Default::default()
    };
    if let Some(r) = read {
        opts.max_line = r.max_line;
        opts.in_place = !r.no_mmap;
    }
    let mut out = Out::new(g);
    if !g.quiet && cli.command.reads_stdin() && io::stdin().is_terminal() {
        // Without this, `lpa explain` with no file waits in silence.
        eprintln!(
            "lpa: reading the log from standard input; end it with Ctrl-D \
             (or name a file, or pipe: kubectl logs POD -c linkerd-proxy | {} …)",
            bin_name()
        );
    }
    if !g.quiet && cli.command.reads_stdin() && !io::stdin().is_terminal() {
        if let Some(hint) = waiting_hint(&cli.command) {
            input::idle::hint_when_waiting(hint);
        }
    }
    let result = match &cli.command {
        Command::Parse {
            files, level, only, ..
        } => cmd_parse(files, level.map(Level::from), *only, &opts, &mut out),
        Command::Explain {
            files,
            follow,
            report,
            ..
        } => cmd_explain(files, *follow, report, g, &opts, &mut out),
        Command::Triage { file, report } => cmd_triage(file.as_ref(), report, &mut out),
        Command::Summarize {
            files,
            top,
            by,
            format,
            ..
        } => cmd_summarize(files, *top, *by, *format, g, &opts, &mut out),
        Command::Rules { command } => cmd_rules(command.as_ref(), &mut out),
        Command::Completions { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(*shell, &mut Cli::command(), bin_name(), &mut buf);
            out.write(&String::from_utf8_lossy(&buf)).map(|()| 0)
        }
        Command::Man { command } => man_page(command.as_deref(), &mut out),
    };
    out.finish();
    match result {
        // The other inputs were reported; the exit status tells of the one
        // that could not be read.
        Ok(_) if input::read_failed() => 2,
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("lpa: {e:#}");
            2
        }
    }
}
