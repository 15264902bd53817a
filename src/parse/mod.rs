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

/// Parses one normalized line. `None`: no grammar matched (prose).
pub fn parse_line(line: &str) -> Option<Event<'_>> {
    let u = unwrap(line);
    // An application container's own output, interleaved by `--prefix` or
    // stern, is not a Linkerd log even when it looks like one (logfmt).
    if u.wrapper
        .container
        .is_some_and(|c| !crate::input::wrap::is_linkerd_container(c))
    {
        return None;
    }
    let s = u.rest;
    let mut ev = dispatch(s)?;
    ev.wrapper = u.wrapper;
    ev.text = Cow::Borrowed(s);
    Some(ev)
}

fn dispatch(s: &str) -> Option<Event<'_>> {
    let first = *s.as_bytes().first()?;
    let specific = match first {
        b'[' => plain::proxy_plain(s).or_else(|| other::access_apache(s)),
        b'{' => return json::parse(s),
        b't' => other::logrus(s).or_else(|| other::panic(s)),
        b'p' | b'g' => other::panic(s),
        b'0'..=b'9' => plain::policy_controller(s)
            .or_else(|| other::proxy_init(s))
            .or_else(|| other::access_apache(s))
            .or_else(|| other::proxy_init_truncated(s)),
        b'/' => other::proxy_init_truncated(s),
        b'I' | b'W' | b'E' | b'F' => other::klog(s).or_else(|| plain::proxy_legacy(s)),
        b'D' | b'T' => plain::proxy_legacy(s),
        b'a'..=b'f' | b'A'..=b'C' => other::access_apache(s),
        _ => None,
    };
    specific.or_else(|| {
        if s.contains("ThreadId(") || s.contains("::") {
            plain::lenient(s)
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
/// next header shows it is complete.
#[derive(Default)]
pub struct Tokenizer<'a> {
    pending: Option<Event<'a>>,
}

impl<'a> Tokenizer<'a> {
    pub fn push(&mut self, line_no: u64, line: &'a str, emit: &mut impl FnMut(Record<'a>)) {
        let parsed = parse_line(line);
        let in_go_panic = self
            .pending
            .as_ref()
            .is_some_and(|p| p.producer == Producer::GoPanic);
        // A Go panic's `goroutine N [running]:` parses as a header of its
        // own, but it continues the `panic:` before it: one event
        // (log-format.md M7–M7e).
        let goroutine = in_go_panic
            && parsed.as_ref().is_some_and(|ev| {
                ev.producer == Producer::GoPanic && ev.message().starts_with("goroutine ")
            });
        if let Some(mut ev) = parsed.filter(|_| !goroutine) {
            ev.line = line_no;
            self.flush(emit);
            if takes_continuation(&ev) {
                self.pending = Some(ev);
            } else {
                emit(Record::Event(ev));
            }
            return;
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
        emit(Record::Unparsed {
            line: line_no,
            text: Cow::Borrowed(line),
        });
    }

    pub fn flush(&mut self, emit: &mut impl FnMut(Record<'a>)) {
        if let Some(mut ev) = self.pending.take() {
            // Blank lines that ended a Go panic are counted, not kept.
            if let Some(c) = ev.continuation.as_mut() {
                c.truncate(c.trim_end_matches('\n').len());
            }
            emit(Record::Event(ev));
        }
    }
}

/// Can a chunk of input start at this line? A line that could continue a
/// multi-line record cannot, so parallel chunks never split one.
pub fn is_chunk_anchor(line: &[u8]) -> bool {
    let looks_like_head = matches!(line.first(), Some(b'[' | b'{'))
        || line.starts_with(b"time=\"")
        || (line.len() > 20 && line[..4].iter().all(u8::is_ascii_digit) && line[4] == b'-');
    // Looking like a head is not enough: `[signal SIGSEGV: …]` in a Go panic,
    // or any `[…]`/`{…}` line after a panic header, continues the pending
    // record, and a cut there split it (chunked output differed from one
    // chunk). Only a line the tokenizer takes as a record header flushes its
    // state, so only such a line may start a chunk. `parse_line` is
    // context-free, so this decides the same way the tokenizer will.
    looks_like_head && {
        let arena = typed_arena::Arena::new();
        let header = parse_line(crate::input::wrap::normalize(line, &arena)).is_some();
        header
    }
}
