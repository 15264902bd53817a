//! The command line: flags, subcommands, output and exit codes.

use crate::input::{self, Cut, Source};
use crate::parse::{Level, Record};
use crate::pipeline::{self, Accumulator};
use crate::report::anonymize::Anonymizer;
use crate::report::explain::{self, Report};
use crate::report::human::{self, Layout};
use crate::report::jsonl;
use crate::report::style::{ColorChoice, Style};
use crate::report::summary::{self, Summary, SummaryAcc};
use crate::report::text;
use crate::rules::window::{Bound, Window};
use crate::rules::{self, command::Given, engine::Engine};
use crate::{follow, pager, triage};
use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

const INPUTS: &str =
    "Log files, directories (their *.log, *.log.gz), globs, .gz; `-` or nothing reads stdin";

#[derive(Parser, Debug)]
#[command(
    name = "lpa",
    version,
    about = "Linkerd proxy log analyzer: turns linkerd2-proxy logs into root causes, evidence and next commands",
    after_help = "Examples:
  kubectl logs deploy/web -c linkerd-proxy | lpa explain
  kubectl logs -f deploy/web -c linkerd-proxy | lpa explain --follow
  lpa summarize gateway.log client.log
  lpa triage ticket.txt > reply.md
  lpa parse --level warn proxy.log | jq .message

Exit status: 0 success; 1 a finding at or above --fail-on; 2 usage, input or rules-file error."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub global: Global,
}

/// Flags every command takes.
#[derive(clap::Args, Debug, Clone)]
pub struct Global {
    /// Worker threads (default: one per core).
    #[arg(long, global = true, value_name = "N")]
    pub threads: Option<usize>,
    /// When to colour human output; `auto` colours only a terminal and honours NO_COLOR.
    #[arg(long, global = true, value_enum, default_value = "auto")]
    pub color: ColorChoice,
    /// Replace IPs, pod, namespace, service and identity names consistently, to paste the output publicly.
    #[arg(long, global = true)]
    pub anonymize: bool,
    /// Print nothing on stdout (use the exit status, e.g. with --fail-on).
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Read at most this much of one line (e.g. 512K, 4M); the rest of a longer line is skipped and counted.
    #[arg(long, global = true, value_name = "BYTES", default_value = "2M", value_parser = parse_bytes)]
    pub max_line: usize,
    /// Never page human output (by default a terminal gets $LPA_PAGER, $PAGER or `less -FRX`).
    #[arg(long, global = true)]
    pub no_pager: bool,
}

/// `4096`, `512K`, `2M`, `1G` (powers of 1024).
fn parse_bytes(s: &str) -> Result<usize, String> {
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: usize = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a size like 2M"))?;
    let mult = match unit.to_ascii_uppercase().trim_end_matches(['B', 'I']) {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return Err(format!("{s:?}: the unit is K, M or G")),
    };
    n.checked_mul(mult)
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{s:?} is not a size above zero"))
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Structured events as JSON lines, one per event or unparsed line.
    #[command(after_help = "Examples:
  lpa parse proxy.log | jq 'select(.level == \"warn\") | .message'
  kubectl logs pod/web-0 -c linkerd-proxy --timestamps | lpa parse --level info
  lpa parse --only unparsed ticket.txt      # what lpa did not recognise")]
    Parse {
        #[arg(help = INPUTS)]
        files: Vec<PathBuf>,
        /// Only events at or above this level (drops unparsed lines).
        #[arg(long, value_enum)]
        level: Option<LevelArg>,
        /// Only events or only unparsed lines.
        #[arg(long, value_enum, default_value = "all")]
        only: Only,
    },
    /// Likely root causes, ranked, with evidence lines, benign noise and next commands.
    #[command(after_help = "Examples:
  kubectl logs deploy/web -c linkerd-proxy | lpa explain
  kubectl logs -n linkerd-multicluster deploy/linkerd-gateway -c linkerd-proxy --timestamps | lpa explain
  kubectl logs -f deploy/web -c linkerd-proxy | lpa explain --follow
  lpa explain --format json gateway.log client.log | jq '.findings[0].id'
  lpa explain --format markdown --anonymize proxy.log > findings.md
  lpa explain --quiet --fail-on critical proxy.log || echo 'critical finding'")]
    Explain {
        #[arg(help = INPUTS)]
        files: Vec<PathBuf>,
        /// Keep reading (stdin, or one FILE across rotation): print findings as they appear, the full report at the end or on Ctrl-C.
        #[arg(long, short)]
        follow: bool,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// A support ticket or GitHub issue (prose with logs inside) → findings and a draft reply in Markdown.
    #[command(after_help = "Examples:
  lpa triage ticket.txt > reply.md
  pbpaste | lpa triage
  lpa triage --format json issue.md | jq '.missing'")]
    Triage {
        /// The ticket text; `-` or nothing reads stdin.
        file: Option<PathBuf>,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// Tables of what a log holds: levels, error kinds, destinations, peers, TLS, statuses, time.
    #[command(after_help = "Examples:
  lpa summarize gateway.log
  lpa summarize --by source client.log gateway.log
  lpa summarize --format json gateway.log | jq '.destinations[0]'
  kubectl logs deploy/web -c linkerd-proxy | lpa summarize --top 20")]
    Summarize {
        #[arg(help = INPUTS)]
        files: Vec<PathBuf>,
        /// Rows per table.
        #[arg(long, default_value_t = 10, value_name = "N")]
        top: usize,
        /// `source`: a summary per input as well as the combined one.
        #[arg(long, value_enum)]
        by: Option<By>,
        /// Output format.
        #[arg(long, short = 'o', value_enum, default_value = "human")]
        format: Format,
    },
    /// Inspect, show and validate the knowledge base.
    #[command(after_help = "Examples:
  lpa rules list
  lpa rules show connect-timeout > my-rules.toml   # a template to edit
  lpa rules check my-rules.toml
  lpa explain --rules my-rules.toml proxy.log")]
    Rules {
        #[command(subcommand)]
        command: RulesCommand,
    },
    /// Shell completions on stdout.
    #[command(after_help = "Examples:
  lpa completions bash > /etc/bash_completion.d/lpa
  lpa completions zsh > \"${fpath[1]}/_lpa\"
  lpa completions fish > ~/.config/fish/completions/lpa.fish")]
    Completions { shell: clap_complete::Shell },
    /// The man page (roff) on stdout: lpa(1), or a command's own page with its flags.
    #[command(after_help = "Examples:
  lpa man > ~/.local/share/man/man1/lpa.1
  lpa man explain > ~/.local/share/man/man1/lpa-explain.1
  lpa man summarize | man -l -")]
    Man {
        /// A command (parse, explain, summarize, triage, rules, completions): its page, lpa-COMMAND(1).
        command: Option<String>,
    },
}

/// Options of the commands that report findings.
#[derive(clap::Args, Debug, Clone)]
pub struct ReportArgs {
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value = "human")]
    pub format: Format,
    /// Report only findings of this severity or worse.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub min_severity: Option<MinSeverity>,
    /// Hide a diagnosis id, or only its findings where a subject has VALUE (e.g. connect.timeout=10.42.0.7:8080). Repeatable.
    #[arg(long, value_name = "ID[=VALUE]")]
    pub suppress: Vec<explain::Suppress>,
    /// Read only lines at or after this time: RFC 3339 (2024-05-01T10:00:00Z) where the log has wall-clock times, else proxy uptime (300s).
    #[arg(long, value_name = "TIME")]
    pub since: Option<Bound>,
    /// Read only lines at or before this time (as --since).
    #[arg(long, value_name = "TIME")]
    pub until: Option<Bound>,
    /// Extra rules file (TOML); a rule with a built-in rule's name replaces it. Repeatable.
    #[arg(long = "rules", value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// Exit with status 1 when a finding of this severity or worse is reported.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    /// Print evidence lines as the log wrote them (JSON events raw), never shortened.
    #[arg(long, short)]
    pub verbose: bool,
    /// The namespace of the workload that wrote the log, for next commands where the log does not show it.
    #[arg(long, short = 'n', value_name = "NS")]
    pub namespace: Option<String>,
    /// The pod that wrote the log, for next commands where the log does not show it.
    #[arg(long, value_name = "POD")]
    pub pod: Option<String>,
    /// The workload that wrote the log (deploy/NAME, sts/NAME, ds/NAME), for next commands.
    #[arg(long, value_name = "KIND/NAME")]
    pub workload: Option<String>,
}

impl ReportArgs {
    /// The rule engine, with what the flags fill in next commands.
    fn engine(&self) -> Result<Engine> {
        let mut engine = Engine::new(rules::load(&self.rules)?);
        engine.given = Given::new(
            self.namespace.clone(),
            self.pod.clone(),
            self.workload.clone(),
        )
        .map_err(anyhow::Error::msg)?;
        engine.window = Window {
            since: self.since,
            until: self.until,
        };
        Ok(engine)
    }

    /// The findings the flags ask to see.
    fn hide(&self, r: &mut Report) {
        r.hide(self.min_severity.map(MinSeverity::as_str), &self.suppress);
    }
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum MinSeverity {
    Info,
    Warning,
    Critical,
}

impl MinSeverity {
    fn as_str(self) -> &'static str {
        match self {
            MinSeverity::Info => "info",
            MinSeverity::Warning => "warning",
            MinSeverity::Critical => "critical",
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
    Markdown,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    Source,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum FailOn {
    Warning,
    Critical,
}

#[derive(Subcommand, Debug)]
pub enum RulesCommand {
    /// The diagnosis ids and the rules that report them.
    List {
        #[arg(long = "rules", value_name = "FILE")]
        rules: Vec<PathBuf>,
    },
    /// One rule in full, as TOML (a template for your own).
    Show {
        /// A rule name or a diagnosis id.
        name: String,
        #[arg(long = "rules", value_name = "FILE")]
        rules: Vec<PathBuf>,
    },
    /// Validate a rules file; errors point at FILE:LINE with a hint.
    Check { file: PathBuf },
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum LevelArg {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl From<LevelArg> for Level {
    fn from(l: LevelArg) -> Level {
        match l {
            LevelArg::Trace => Level::Trace,
            LevelArg::Debug => Level::Debug,
            LevelArg::Info => Level::Info,
            LevelArg::Warn => Level::Warn,
            LevelArg::Error => Level::Error,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Only {
    All,
    Events,
    Unparsed,
}

/// Where command output goes: stdout or a pager, unless `--quiet`;
/// anonymized on demand.
struct Out {
    quiet: bool,
    no_pager: bool,
    anon: Option<Anonymizer>,
    pager: Option<std::process::Child>,
}

impl Out {
    fn new(g: &Global) -> Out {
        Out {
            quiet: g.quiet,
            no_pager: g.no_pager,
            anon: g.anonymize.then(Anonymizer::default),
            pager: None,
        }
    }

    /// What follows goes through the pager, on a terminal.
    fn page(&mut self) {
        if !self.quiet && !self.no_pager && self.pager.is_none() {
            self.pager = pager::spawn();
        }
    }

    /// Waits for the pager, so the shell prompt returns after it quits.
    fn finish(&mut self) {
        if let Some(mut p) = self.pager.take() {
            drop(p.stdin.take());
            let _ = p.wait();
        }
    }

    /// Writes a human or Markdown document: no control character from the
    /// input reaches the terminal (with `colour`, lpa's own colour codes do).
    fn write_doc(&mut self, text: &str, colour: bool) -> Result<()> {
        self.write(&text::document(text, colour))
    }

    fn write(&mut self, text: &str) -> Result<()> {
        if self.quiet {
            return Ok(());
        }
        let text = match self.anon.as_mut() {
            Some(a) => a.apply(text),
            None => text.to_string(),
        };
        if let Some(stdin) = self.pager.as_mut().and_then(|p| p.stdin.as_mut()) {
            stdin.write_all(text.as_bytes())?;
            return Ok(());
        }
        let mut o = io::stdout().lock();
        o.write_all(text.as_bytes())?;
        o.flush()?;
        Ok(())
    }
}

/// `lpa parse`: each block renders its lines; blocks are written in order,
/// in chunks as they are rendered.
struct ParseOut {
    out: pipeline::Chunks,
    /// Cut lines of the block not yet written, in order.
    cuts: Vec<Cut>,
    level: Option<Level>,
    only: Only,
}

impl Accumulator for ParseOut {
    fn cut(&mut self, _: &str, cut: Cut) {
        self.cuts.push(cut);
    }

    fn record(&mut self, source: &str, rec: &Record<'_>) {
        let keep = match rec {
            Record::Event(e) => {
                self.only != Only::Unparsed
                    && self
                        .level
                        .is_none_or(|min| e.level.is_some_and(|l| l >= min))
            }
            Record::Unparsed { .. } => self.only != Only::Events && self.level.is_none(),
        };
        if keep {
            jsonl::write_record(self.out.buf(), source, rec);
        }
        let end = rec.line() + u64::from(rec.lines());
        while let Some(c) = self.cuts.first().filter(|c| c.line < end).copied() {
            self.cuts.remove(0);
            jsonl::write_cut(self.out.buf(), source, c);
        }
        self.out.record_done();
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
    max_line: usize,
    out: &mut Out,
) -> Result<i32> {
    let mut sources = input::open_all(files)?;
    let stdout = io::stdout();
    // JSON is about three times the input, and many times more for short
    // lines: small blocks, and their output streamed in chunks.
    let mut opts = pipeline::Options::blocks_of(1 << 20);
    opts.progress = !out.quiet;
    opts.max_line = max_line;
    pipeline::stream(
        &mut sources,
        &opts,
        |out| ParseOut {
            out,
            level,
            only,
            cuts: Vec::new(),
        },
        |chunk| {
            if out.anon.is_some() || out.quiet {
                // JSON output is UTF-8 by construction.
                out.write(&String::from_utf8_lossy(chunk))
            } else {
                Ok(stdout.lock().write_all(chunk)?)
            }
        },
    )?;
    stdout.lock().flush()?;
    Ok(0)
}

/// Runs the rule engine over the inputs (in parallel blocks).
pub fn analyze(
    sources: &mut [Source],
    opts: &pipeline::Options,
    engine: &Engine,
) -> Result<Report> {
    let mut total = engine.state();
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
            max_line: g.max_line,
            updates,
            notices: !g.quiet,
        };
        follow::run(opts, &engine)?
    } else {
        let mut sources = input::open_all(files)?;
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
    for mut src in input::open_all(&files)? {
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
    let mut sources = input::open_all(files)?;
    let mut total = Summary::default();
    let mut per_source: Vec<(String, Summary)> = Vec::new();
    pipeline::run(
        &mut sources,
        opts,
        || SummaryAcc::new(&engine),
        |name, acc| {
            if by == Some(By::Source) {
                match per_source.last_mut() {
                    Some((n, s)) if n == name => s.merge(acc.summary.clone()),
                    _ => per_source.push((name.to_string(), acc.summary.clone())),
                }
            }
            total.merge(acc.summary);
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
            let mut t: String = per_source
                .iter()
                .map(|(n, s)| {
                    format!(
                        "{}\n{}\n",
                        style.bold(&format!("=== {n}")),
                        summary::human(s, top, &style)
                    )
                })
                .collect();
            if !per_source.is_empty() {
                t.push_str(&format!("{}\n", style.bold("=== all inputs")));
            }
            t.push_str(&summary::human(&total, top, &style));
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

fn cmd_rules(cmd: &RulesCommand, out: &mut Out) -> Result<i32> {
    match cmd {
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
            out.write(&text)?;
            Ok(0)
        }
        RulesCommand::Show { name, rules: files } => {
            let rules = rules::load(files)?.rules;
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
                        "{}: {} rules and {} era cues, all valid\n",
                        file.display(),
                        kb.rules.len(),
                        kb.eras.len()
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

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

impl Command {
    /// Does the command read standard input (no file, or `-`)?
    fn reads_stdin(&self) -> bool {
        let stdin = |files: &[PathBuf]| files.is_empty() || files.iter().any(|f| f == "-");
        match self {
            Command::Parse { files, .. }
            | Command::Explain { files, .. }
            | Command::Summarize { files, .. } => stdin(files),
            Command::Triage { file, .. } => stdin(file.as_slice()),
            Command::Rules { .. } | Command::Completions { .. } | Command::Man { .. } => false,
        }
    }
}

pub fn main() -> i32 {
    let cli = Cli::parse();
    let g = &cli.global;
    // Built here, so a thread that cannot be spawned is an error (rayon's
    // lazily built pool would panic); 0 means one per core.
    if let Err(e) = rayon::ThreadPoolBuilder::new()
        .num_threads(g.threads.map_or(0, |n| n.max(1)))
        .build_global()
    {
        eprintln!("lpa: cannot start worker threads: {e}");
        return 2;
    }
    let opts = pipeline::Options {
        progress: !g.quiet,
        max_line: g.max_line,
        ..Default::default()
    };
    let mut out = Out::new(g);
    if !g.quiet && cli.command.reads_stdin() && io::stdin().is_terminal() {
        // Without this, `lpa explain` with no file waits in silence.
        eprintln!(
            "lpa: reading the log from standard input; end it with Ctrl-D \
             (or name a file, or pipe: kubectl logs POD -c linkerd-proxy | {} …)",
            bin_name()
        );
    }
    let result = match &cli.command {
        Command::Parse { files, level, only } => {
            cmd_parse(files, level.map(Level::from), *only, g.max_line, &mut out)
        }
        Command::Explain {
            files,
            follow,
            report,
        } => cmd_explain(files, *follow, report, g, &opts, &mut out),
        Command::Triage { file, report } => cmd_triage(file.as_ref(), report, &mut out),
        Command::Summarize {
            files,
            top,
            by,
            format,
        } => cmd_summarize(files, *top, *by, *format, g, &opts, &mut out),
        Command::Rules { command } => cmd_rules(command, &mut out),
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
