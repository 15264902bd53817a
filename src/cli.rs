//! The command line: flags, subcommands, exit codes.

use crate::input::{self, Source};
use crate::parse::{Level, Record};
use crate::pipeline::{self, Accumulator};
use crate::report::jsonl;
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
                self.only != Only::Unparsed && self.level.is_none_or(|min| e.level.is_some_and(|l| l >= min))
            }
            Record::Unparsed { .. } => self.only != Only::Events && self.level.is_none(),
        };
        if keep {
            jsonl::write_record(&mut self.buf, source, rec);
        }
    }
}

fn cmd_parse(sources: &mut [Source], opts: &pipeline::Options, level: Option<Level>, only: Only) -> Result<()> {
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
        let _ = rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build_global();
    }
    let opts = pipeline::Options::default();
    let result = match cli.command {
        Command::Parse { files, level, only } => input::open_all(&files)
            .and_then(|mut s| cmd_parse(&mut s, &opts, level.map(Level::from), only)),
    };
    match result {
        Ok(()) => 0,
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("lpa: {e:#}");
            2
        }
    }
}
