//! Where command output goes.

use super::Global;
use crate::input::{self, Source};
use crate::pager;
use crate::report::anonymize::Anonymizer;
use crate::report::text;
use anyhow::Result;
use std::io::{self, Write};
use std::path::PathBuf;

/// Where command output goes: stdout or a pager, unless `--quiet`;
/// anonymized on demand.
pub(super) struct Out {
    pub(super) quiet: bool,
    no_pager: bool,
    pub(super) anon: Option<Anonymizer>,
    pager: Option<std::process::Child>,
}

impl Out {
    pub(super) fn new(g: &Global) -> Out {
        Out {
            quiet: g.quiet,
            no_pager: g.no_pager,
            anon: g.anonymize.then(Anonymizer::default),
            pager: None,
        }
    }

    /// The inputs. With `--anonymize` each is read once first and the
    /// mapping learnt from it, in input order, before anything is
    /// rendered: every format of one input gets the same placeholders.
    /// Memory stays bounded (a pipe's input waits in a temporary file).
    /// They are renamed `input-N` (their paths name the user's things too).
    pub(super) fn open(&mut self, files: &[PathBuf]) -> Result<Vec<Source>> {
        let sources = input::open_all(files)?;
        let Some(anon) = self.anon.as_mut() else {
            return Ok(sources);
        };
        let mut out = Vec::with_capacity(sources.len());
        for (i, src) in sources.into_iter().enumerate() {
            let mut again = src.read_twice(&mut |text| anon.learn(text))?;
            if again.name != "stdin" {
                again.name = format!("input-{}", i + 1);
            }
            out.push(again);
        }
        Ok(out)
    }

    /// What follows goes through the pager, on a terminal.
    pub(super) fn page(&mut self) {
        if !self.quiet && !self.no_pager && self.pager.is_none() {
            self.pager = pager::spawn();
        }
    }

    /// Waits for the pager, so the shell prompt returns after it quits.
    pub(super) fn finish(&mut self) {
        if let Some(mut p) = self.pager.take() {
            drop(p.stdin.take());
            let _ = p.wait();
        }
    }

    /// Writes a human or Markdown document: no control character from the
    /// input reaches the terminal (with `colour`, lpa's own colour codes do).
    pub(super) fn write_doc(&mut self, text: &str, colour: bool) -> Result<()> {
        self.write(&text::document(text, colour))
    }

    pub(super) fn write(&mut self, text: &str) -> Result<()> {
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
