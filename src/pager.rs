//! A pager for human output on a terminal, run the way git runs one:
//! `LPA_PAGER`, else `PAGER`, else `less -FRX` (which quits at once when
//! the report fits the screen, passes colours, and leaves the text on the
//! screen after quitting). Never when stdout is not a terminal.

use std::io::IsTerminal;
use std::process::{Child, Command, Stdio};

/// The pager command, when one should run.
fn command() -> Option<String> {
    let cmd = std::env::var("LPA_PAGER")
        .or_else(|_| std::env::var("PAGER"))
        .unwrap_or_else(|_| "less -FRX".to_string());
    let cmd = cmd.trim();
    // An empty pager or `cat` means none, as for git.
    (!cmd.is_empty() && cmd != "cat").then(|| cmd.to_string())
}

/// Starts the pager, when stdout is a terminal and one is configured; its
/// stdin then takes the output. `None` (write to stdout) if it cannot start.
pub fn spawn() -> Option<Child> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let cmd = command()?;
    let mut c = Command::new("sh");
    c.arg("-c").arg(&cmd).stdin(Stdio::piped());
    // As git does: a `less` run through $PAGER gets the same defaults.
    if std::env::var_os("LESS").is_none() {
        c.env("LESS", "FRX");
    }
    if std::env::var_os("LV").is_none() {
        c.env("LV", "-c");
    }
    c.spawn().ok()
}
