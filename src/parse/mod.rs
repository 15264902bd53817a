//! Tokenizer: one physical line at a time, dispatched on the line's own
//! grammar (never per file), into events; multi-line records (panics,
//! proxy-init command output) gather their continuation lines.

pub mod event;
pub mod fields;
pub mod json;
pub mod other;
pub mod plain;
pub mod typed;

pub use event::{Era, Event, Level, Producer, Record, Span, Wrapper};

use crate::input::wrap::unwrap;
use std::borrow::Cow;

/// Parses one normalized line into `ev` (reused from line to line); false
/// when no grammar matched (prose), leaving `ev` unspecified.
pub fn parse_into<'a>(line: &'a str, ev: &mut Event<'a>) -> bool {
    let u = unwrap(line);
    // An application container's own output, interleaved by `--prefix` or
    // stern, is not a Linkerd log even when it looks like one (logfmt).
    if u.wrapper
        .container
        .is_some_and(|c| !crate::input::wrap::is_linkerd_container(c))
    {
        return false;
    }
    let s = u.rest;
    if dispatch(s, ev).is_none() {
        return false;
    }
    ev.wrapper = u.wrapper;
    ev.text = Cow::Borrowed(s);
    true
}

/// Parses one normalized line. `None`: no grammar matched (prose).
pub fn parse_line(line: &str) -> Option<Event<'_>> {
    let mut ev = Event::default();
    parse_into(line, &mut ev).then_some(ev)
}

/// Runs one producer's grammar alone over a line.
#[cfg(test)]
pub(crate) fn with<'a>(
    grammar: impl FnOnce(&'a str, &mut Event<'a>) -> Option<()>,
    s: &'a str,
) -> Option<Event<'a>> {
    let mut ev = Event::default();
    grammar(s, &mut ev).map(|()| ev)
}

fn dispatch<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let first = *s.as_bytes().first()?;
    let specific = match first {
        b'[' => plain::proxy_plain(s, ev).or_else(|| other::access_apache(s, ev)),
        b'{' => return json::parse(s, ev),
        b't' => other::logrus(s, ev).or_else(|| other::panic(s, ev)),
        b'p' | b'g' => other::panic(s, ev),
        b'0'..=b'9' => plain::policy_controller(s, ev)
            .or_else(|| other::proxy_init(s, ev))
            .or_else(|| other::access_apache(s, ev))
            .or_else(|| other::proxy_init_truncated(s, ev)),
        b'/' => other::proxy_init_truncated(s, ev),
        b'I' | b'W' | b'E' | b'F' => other::klog(s, ev).or_else(|| plain::proxy_legacy(s, ev)),
        b'D' | b'T' => plain::proxy_legacy(s, ev),
        b'a'..=b'f' | b'A'..=b'C' => other::access_apache(s, ev),
        _ => None,
    };
    specific.or_else(|| {
        if s.contains("ThreadId(") || s.contains("::") {
            plain::lenient(s, ev)
        } else {
            None
        }
    })
}

/// Records that may continue on following lines that have no header.
fn takes_continuation(ev: &Event) -> bool {
    match ev.producer {
        Producer::RustPanic | Producer::GoPanic => true,
        Producer::ProxyInit => ev.message().starts_with("< "),
        _ => false,
    }
}

/// Turns lines into records, holding back a multi-line record until the
/// next header shows it is complete. Records are lent to `emit` (mutably, so
/// a caller can adjust one before it counts it), never moved: one event
/// slot serves every line.
pub struct Tokenizer<'a> {
    slot: Record<'a>,
    pending: Option<Event<'a>>,
}

impl Default for Tokenizer<'_> {
    fn default() -> Self {
        Tokenizer {
            slot: Record::Event(Event::default()),
            pending: None,
        }
    }
}

impl<'a> Tokenizer<'a> {
    pub fn push(&mut self, line_no: u64, line: &'a str, emit: &mut impl FnMut(&mut Record<'a>)) {
        let in_go_panic = self
            .pending
            .as_ref()
            .is_some_and(|p| p.producer == Producer::GoPanic);
        if !matches!(self.slot, Record::Event(_)) {
            // A caller swapped the lent record for another: take it back.
            self.slot = Record::Event(Event::default());
        }
        if let Record::Event(ev) = &mut self.slot {
            // A Go panic's `goroutine N [running]:` parses as a header of its
            // own, but it continues the `panic:` before it: one event
            // (log-format.md M7–M7e).
            if parse_into(line, ev)
                && !(in_go_panic
                    && ev.producer == Producer::GoPanic
                    && ev.message().starts_with("goroutine "))
            {
                ev.line = line_no;
                emit_pending(&mut self.pending, emit);
                if takes_continuation(ev) {
                    self.pending = Some(std::mem::take(ev));
                } else {
                    emit(&mut self.slot);
                }
                return;
            }
        }
        let trimmed = line.trim();
        if let Some(p) = self.pending.as_mut() {
            if !trimmed.is_empty() {
                // Rust ≥ 1.73 prints the panic message on the line after the
                // header (log-format.md M3/M3b); borrowed, no copy.
                if p.producer == Producer::RustPanic
                    && p.message.is_none()
                    && !trimmed.starts_with("note:")
                {
                    p.message = Some(Cow::Borrowed(trimmed));
                }
                let c = p.continuation.get_or_insert_with(String::new);
                if !c.is_empty() {
                    c.push('\n');
                }
                c.push_str(trimmed);
                p.lines += 1;
                return;
            }
            if in_go_panic {
                // The Go runtime puts a blank line before each goroutine's
                // stack; it stays inside the panic.
                if let Some(c) = p.continuation.as_mut() {
                    c.push('\n');
                }
                p.lines += 1;
                return;
            }
        }
        self.flush(emit);
        emit(&mut Record::Unparsed {
            line: line_no,
            text: Cow::Borrowed(line),
        });
    }

    pub fn flush(&mut self, emit: &mut impl FnMut(&mut Record<'a>)) {
        emit_pending(&mut self.pending, emit);
    }
}

fn emit_pending<'a>(pending: &mut Option<Event<'a>>, emit: &mut impl FnMut(&mut Record<'a>)) {
    if let Some(mut ev) = pending.take() {
        // Blank lines that ended a Go panic are counted, not kept.
        if let Some(c) = ev.continuation.as_mut() {
            c.truncate(c.trim_end_matches('\n').len());
        }
        emit(&mut Record::Event(ev));
    }
}

/// Can a block of input start at this line? A line that could continue a
/// multi-line record cannot, so parallel blocks never split one.
pub fn is_block_anchor(line: &[u8]) -> bool {
    let looks_like_head = matches!(line.first(), Some(b'[' | b'{'))
        || line.starts_with(b"time=\"")
        || (line.len() > 20 && line[..4].iter().all(u8::is_ascii_digit) && line[4] == b'-');
    // Looking like a head is not enough: `[signal SIGSEGV: …]` in a Go panic,
    // or any `[…]`/`{…}` line after a panic header, continues the pending
    // record, and a cut there split it (output read in blocks differed from one
    // block). Only a line the tokenizer takes as a record header flushes its
    // state, so only such a line may start a block. `parse_line` is
    // context-free, so this decides the same way the tokenizer will, but for
    // `goroutine N [running]:` (behind a `--prefix` it looks like a head),
    // which continues a `panic:` before it.
    looks_like_head && {
        let arena = typed_arena::Arena::new();
        let header = parse_line(crate::input::wrap::normalize(line, &arena)).is_some_and(|ev| {
            !(ev.producer == Producer::GoPanic && ev.message().starts_with("goroutine "))
        });
        header
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefixed_goroutine_line_does_not_start_a_block() {
        assert!(is_block_anchor(
            b"[pod/web-1/linkerd-proxy] [     1.000000s]  INFO ThreadId(01) linkerd2_proxy: ready"
        ));
        assert!(!is_block_anchor(
            b"[pod/dst-1/destination] goroutine 1 [running]:"
        ));
        assert!(!is_block_anchor(
            b"[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x1a2b3c4]"
        ));
    }
}
