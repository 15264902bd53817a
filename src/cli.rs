//! The command line: flags, subcommands, exit codes.

use crate::input::{self, Source};
use crate::parse::{Level, Record};
use crate::pipeline::{self, Accumulator};
use crate::report::explain::{self, Report};
use crate::report::jsonl;
use crate::report::style::{ColorChoice, Style};
use crate::report::summary::{self, Summary, SummaryAcc};
use crate::rules::{self, engine::Engine};
use crate::triage;
use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use std::io::{self, Write};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "lpa",
    version,
    about = "Linkerd proxy log analyzer: turns linkerd2-proxy logs into root causes, evidence and next commands",
    after_help = "Examples:
  kubectl logs deploy/web -c linkerd-proxy | lpa explain
  lpa summarize gateway.log
  lpa triage ticket.txt > reply.md
  lpa parse --level warn proxy.log | jq .message

Exit status: 0 ok; 1 a finding at or above --fail-on; 2 usage or input error."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Worker threads (default: one per core).
    #[arg(long, global = true, value_name = "N")]
    pub threads: Option<usize>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Structured events as JSON lines, one per event or unparsed line.
    #[command(after_help = "Examples:
  lpa parse proxy.log | jq 'select(.level == \"warn\") | .message'
  kubectl logs pod/web-0 -c linkerd-proxy --timestamps | lpa parse --level info
  lpa parse --only unparsed ticket.txt      # what lpa did not recognise")]
    Parse {
        /// Log files, directories, globs, `.gz`; `-` or nothing for stdin.
        files: Vec<PathBuf>,
        /// Only events at or above this level (drops unparsed lines).
        #[arg(long, value_enum)]
        level: Option<LevelArg>,
        /// Only events or only unparsed lines.
        #[arg(long, value_enum, default_value = "all")]
        only: Only,
    },
    /// Likely root causes, ranked, with evidence lines and next commands.
    #[command(after_help = "Examples:
  kubectl logs deploy/web -c linkerd-proxy | lpa explain
  kubectl logs -n linkerd-multicluster deploy/linkerd-gateway -c linkerd-proxy --timestamps | lpa explain
  lpa explain --format json gateway.log client.log | jq '.findings[0].id'
  lpa explain --format markdown proxy.log > findings.md
  lpa explain --fail-on critical proxy.log || echo 'critical finding'")]
    Explain {
        /// Log files, directories, globs, `.gz`; `-` or nothing for stdin.
        files: Vec<PathBuf>,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// A support ticket or GitHub issue (prose with logs inside) → findings and a draft reply in Markdown.
    #[command(after_help = "Examples:
  lpa triage ticket.txt > reply.md
  pbpaste | lpa triage
  lpa triage --format json issue.md | jq '.missing'")]
    Triage {
        /// The ticket text; `-` or nothing for stdin.
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
        /// Log files, directories, globs, `.gz`; `-` or nothing for stdin.
        files: Vec<PathBuf>,
        /// Rows per table.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// `source`: one summary per input as well as the combined one.
        #[arg(long, value_enum)]
        by: Option<By>,
        /// Output format.
        #[arg(long, value_enum, default_value = "human")]
        format: Format,
        /// When to colour human output (NO_COLOR is honoured in auto).
        #[arg(long, value_enum, default_value = "auto")]
        color: ColorChoice,
    },
    /// Inspect, show and validate the knowledge base.
    Rules {
        #[command(subcommand)]
        command: RulesCommand,
    },
}

/// Options shared by the commands that report findings.
#[derive(clap::Args, Debug, Clone)]
pub struct ReportArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Extra rules file (TOML); rules with a built-in rule's name replace it. Repeatable.
    #[arg(long = "rules", value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// Exit with status 1 when a finding of this severity or worse is reported.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    /// When to colour human output (NO_COLOR is honoured in auto).
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorChoice,
    /// Print evidence lines in full instead of shortening long span stacks.
    #[arg(long, short)]
    pub verbose: bool,
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

/// `lpa parse`: each chunk renders its lines; blocks are written in order.
struct ParseOut {
    buf: Vec<u8>,
    level: Option<Level>,
    only: Only,
}

impl Accumulator for ParseOut {
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
            jsonl::write_record(&mut self.buf, source, rec);
        }
    }
}

fn cmd_parse(
    sources: &mut [Source],
    opts: &pipeline::Options,
    level: Option<Level>,
    only: Only,
) -> Result<()> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    pipeline::run(
        sources,
        opts,
        || ParseOut {
            buf: Vec::new(),
            level,
            only,
        },
        |_, acc| {
            out.write_all(&acc.buf)?;
            Ok(())
        },
    )?;
    out.flush()?;
    Ok(())
}

/// Runs the rule engine over the inputs.
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

fn print_report(
    r: &Report,
    args: &ReportArgs,
    markdown: impl Fn(&Report) -> String,
) -> Result<i32> {
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(r)? + "\n",
        Format::Markdown => markdown(r),
        Format::Human => explain::human(r, &Style::for_stdout(args.color), args.verbose),
    };
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    let failed = match args.fail_on {
        Some(FailOn::Critical) => r.has_at_least("critical"),
        Some(FailOn::Warning) => r.has_at_least("warning"),
        None => false,
    };
    Ok(i32::from(failed))
}

fn cmd_explain(files: &[PathBuf], args: &ReportArgs, opts: &pipeline::Options) -> Result<i32> {
    let engine = Engine::new(rules::load(&args.rules)?);
    let mut sources = input::open_all(files)?;
    let report = analyze(&mut sources, opts, &engine)?;
    print_report(&report, args, explain::markdown)
}

fn cmd_summarize(
    files: &[PathBuf],
    top: usize,
    by: Option<By>,
    format: Format,
    color: ColorChoice,
    opts: &pipeline::Options,
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
    let style = Style::for_stdout(color);
    let text = match format {
        Format::Json => {
            let mut doc = serde_json::to_value(total.doc(top))?;
            if by == Some(By::Source) {
                let each: serde_json::Map<String, serde_json::Value> = per_source
                    .iter()
                    .map(|(n, s)| Ok((n.clone(), serde_json::to_value(s.doc(top))?)))
                    .collect::<Result<_>>()?;
                doc["by_source"] = serde_json::Value::Object(each);
            }
            serde_json::to_string_pretty(&doc)? + "\n"
        }
        Format::Markdown => {
            let mut t = String::new();
            for (n, s) in &per_source {
                t.push_str(&format!("# {n}\n\n{}\n", summary::markdown(s, top)));
            }
            t + &summary::markdown(&total, top)
        }
        Format::Human => {
            let mut t = String::new();
            for (n, s) in &per_source {
                t.push_str(&format!(
                    "{}\n{}\n",
                    style.bold(&format!("=== {n}")),
                    summary::human(s, top, &style)
                ));
            }
            if !per_source.is_empty() {
                t.push_str(&format!("{}\n", style.bold("=== all inputs")));
            }
            t + &summary::human(&total, top, &style)
        }
    };
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(0)
}

fn cmd_triage(file: Option<&PathBuf>, args: &ReportArgs) -> Result<i32> {
    let engine = Engine::new(rules::load(&args.rules)?);
    let files: Vec<PathBuf> = file.cloned().into_iter().collect();
    let mut text = Vec::new();
    let mut name = String::from("stdin");
    for mut src in input::open_all(&files)? {
        name = src.name.clone();
        src.read_to_end(&mut text)?;
    }
    let t = triage::triage(&name, &text, &engine);
    let out = match args.format {
        Format::Json => serde_json::to_string_pretty(&t)? + "\n",
        Format::Markdown | Format::Human => triage::markdown(&t),
    };
    let mut o = io::stdout().lock();
    o.write_all(out.as_bytes())?;
    o.flush()?;
    let failed = match args.fail_on {
        Some(FailOn::Critical) => t.report.has_at_least("critical"),
        Some(FailOn::Warning) => t.report.has_at_least("warning"),
        None => false,
    };
    Ok(i32::from(failed))
}

fn cmd_rules(cmd: &RulesCommand) -> Result<i32> {
    match cmd {
        RulesCommand::List { rules: files } => {
            let rules = rules::load(files)?.rules;
            let mut out = String::new();
            for id in rules::IDS {
                let names: Vec<&str> = rules
                    .iter()
                    .filter(|r| r.id.as_deref() == Some(*id))
                    .map(|r| r.name.as_str())
                    .collect();
                out.push_str(&format!("{id:<34} {}\n", names.join(", ")));
            }
            let tags: Vec<&str> = rules
                .iter()
                .filter(|r| r.id.is_none())
                .map(|r| r.name.as_str())
                .collect();
            out.push_str(&format!(
                "{:<34} {}\n",
                "(connection tags)",
                tags.join(", ")
            ));
            io::stdout().lock().write_all(out.as_bytes())?;
            Ok(0)
        }
        RulesCommand::Show { name, rules: files } => {
            let rules = rules::load(files)?.rules;
            let Some(r) = rules
                .iter()
                .find(|r| &r.name == name || r.id.as_deref() == Some(name))
            else {
                anyhow::bail!("no rule named '{name}'; `lpa rules list` shows them");
            };
            let doc = toml::to_string_pretty(&serde_json::json!({ "rule": [r] }))?;
            io::stdout().lock().write_all(doc.as_bytes())?;
            Ok(0)
        }
        RulesCommand::Check { file } => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| anyhow::anyhow!("cannot read '{}': {e}", file.display()))?;
            match rules::parse_rules(&file.display().to_string(), &text) {
                Ok(kb) => {
                    println!(
                        "{}: {} rules and {} era cues, all valid",
                        file.display(),
                        kb.rules.len(),
                        kb.eras.len()
                    );
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

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

pub fn main() -> i32 {
    let cli = Cli::parse();
    if let Some(n) = cli.threads {
        // Only fails when a pool exists already; the default pool is fine then.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build_global();
    }
    let opts = pipeline::Options::default();
    let result = match &cli.command {
        Command::Parse { files, level, only } => input::open_all(files)
            .and_then(|mut s| cmd_parse(&mut s, &opts, level.map(Level::from), *only))
            .map(|()| 0),
        Command::Explain { files, report } => cmd_explain(files, report, &opts),
        Command::Summarize {
            files,
            top,
            by,
            format,
            color,
        } => cmd_summarize(files, *top, *by, *format, *color, &opts),
        Command::Triage { file, report } => cmd_triage(file.as_ref(), report),
        Command::Rules { command } => cmd_rules(command),
    };
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("lpa: {e:#}");
            2
        }
    }
}
