//! The command line's flags and subcommands (clap), and what they mean
//! for the engine.

use crate::parse::Level;
use crate::report::explain::{self, Report};
use crate::report::style::ColorChoice;
use crate::rules::window::{Bound, Window};
use crate::rules::{self, command::Given, engine::Engine};
use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
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

/// Flags every command takes, on purpose: they shape any command's output,
/// and may stand before or after the command (`lpa -q explain`).
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// When to colour human output; `auto` colours only a terminal and honours NO_COLOR.
    #[arg(long, global = true, value_enum, default_value = "auto")]
    pub color: ColorChoice,
    /// Replace addresses and the names of pods, nodes, namespaces, services, Servers, identities and inputs consistently, to paste the output publicly.
    #[arg(long, global = true)]
    pub anonymize: bool,
    /// Print nothing on stdout (use the exit status, e.g. with --fail-on).
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Never page human output (by default a terminal gets $LPA_PAGER, $PAGER or `less -FRX`).
    #[arg(long, global = true)]
    pub no_pager: bool,
}

/// How the commands that stream logs (parse, explain, summarize) read them.
#[derive(clap::Args, Debug, Clone)]
pub struct ReadArgs {
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Read at most this much of one line (e.g. 512K, 4M); the rest of a longer line is skipped and counted.
    #[arg(long, value_name = "BYTES", default_value = "2M", value_parser = parse_bytes)]
    pub max_line: usize,
    /// Read files with read(2) rather than mapping them into memory: for a file that may be truncated while lpa reads it.
    #[arg(long)]
    pub no_mmap: bool,
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
        #[command(flatten)]
        read: ReadArgs,
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
  kubectl logs -n linkerd-multicluster deploy/linkerd-gateway -c linkerd-proxy \\
      --timestamps | lpa explain
  kubectl logs -f deploy/web -c linkerd-proxy | lpa explain --follow
  lpa explain --format json gateway.log client.log | jq '.findings[0].id'
  lpa explain --format markdown --anonymize proxy.log > findings.md
  lpa explain --quiet --fail-on critical proxy.log || echo 'critical finding'")]
    Explain {
        #[arg(help = INPUTS)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        read: ReadArgs,
        /// Keep reading (stdin, or one FILE across rotation): print findings as they appear, the full report at the end or on Ctrl-C or SIGTERM.
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
        #[command(flatten)]
        read: ReadArgs,
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
    /// The diagnosis ids and their doc pages; show and validate rules.
    #[command(after_help = "Examples:
  lpa rules                          # the diagnosis ids
  lpa rules show connect.timeout     # the id's page
  lpa rules show connect-timeout > my-rules.toml   # a rule, to edit
  lpa rules check my-rules.toml
  lpa explain --rules my-rules.toml proxy.log")]
    Rules {
        /// Without a command: `list`.
        #[command(subcommand)]
        command: Option<RulesCommand>,
    },
    /// Shell completions on stdout.
    #[command(after_help = "Examples:
  mkdir -p ~/.local/share/bash-completion/completions
  lpa completions bash > ~/.local/share/bash-completion/completions/lpa
  mkdir -p ~/.zfunc && lpa completions zsh > ~/.zfunc/_lpa   # fpath+=~/.zfunc
  mkdir -p ~/.config/fish/completions
  lpa completions fish > ~/.config/fish/completions/lpa.fish")]
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// The man page (roff) on stdout: lpa(1), or a command's own page with its flags.
    #[command(after_help = "Examples:
  mkdir -p ~/.cargo/share/man/man1
  lpa man > ~/.cargo/share/man/man1/lpa.1
  lpa man explain > ~/.cargo/share/man/man1/lpa-explain.1
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
    /// Hide a diagnosis id, or only its findings about SUBJECT: an address (10.42.0.7:8080 or 10.42.0.7), a service (web, web.shop), a Server, a pod or its workload (web, deploy/web). Repeatable.
    #[arg(long, value_name = "ID[=SUBJECT]")]
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
    pub(super) fn engine(&self) -> Result<Engine> {
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
    pub(super) fn hide(&self, r: &mut Report) {
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
        /// Extra rules file, as for explain. Repeatable.
        #[arg(long = "rules", value_name = "FILE")]
        rules: Vec<PathBuf>,
    },
    /// A diagnosis id's page (meaning, causes, how to confirm and fix, the
    /// evidence lpa matches, benign look-alikes, next commands), or a rule
    /// in full as TOML (a template for your own).
    Show {
        /// A diagnosis id (its page) or a rule name (its TOML).
        name: String,
        /// An id's rules as TOML instead of its page.
        #[arg(long)]
        toml: bool,
        /// Extra rules file, as for explain. Repeatable.
        #[arg(long = "rules", value_name = "FILE")]
        rules: Vec<PathBuf>,
    },
    /// Validate a rules file; errors point at FILE:LINE with a hint.
    Check {
        /// The rules file (TOML) to check.
        file: PathBuf,
    },
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

impl Command {
    /// How the command reads logs, when it streams them.
    pub(super) fn read(&self) -> Option<&ReadArgs> {
        match self {
            Command::Parse { read, .. }
            | Command::Explain { read, .. }
            | Command::Summarize { read, .. } => Some(read),
            _ => None,
        }
    }

    /// Does the command read standard input (no file, or `-`)?
    pub(super) fn reads_stdin(&self) -> bool {
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
