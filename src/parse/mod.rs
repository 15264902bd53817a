//! Tokenizer: one physical line at a time, dispatched on the line's own
//! grammar (never per file), into events; multi-line records (panics,
//! proxy-init command output) gather their continuation lines.

pub mod check;
pub mod component;
pub mod era;
pub mod event;
pub mod fields;
pub mod foreign;
pub mod json;
mod json_scan;
pub mod kube;
pub mod learnt;
pub(crate) mod mask;
pub mod metrics;
pub mod other;
pub mod plain;
pub mod recover;
mod shape_views;
pub mod template;
pub mod typed;

pub use event::{Component, Era, Event, Foreign, Level, Metric, Producer, Record, Span, Wrapper};

use crate::input::wrap::{unquote, unwrap, Unwrapped};
use std::borrow::Cow;
use typed_arena::Arena;

/// Parses one normalized line into `ev` (reused from line to line); false
/// when no grammar matched (prose), leaving `ev` unspecified.
pub fn parse_into<'a>(line: &'a str, ev: &mut Event<'a>) -> bool {
    // Most lines of a busy proxy's log: read by a shape seen before.
    template::read(line, ev) || parse_uncached(line, ev)
}

/// `parse_into` without the shapes cache: for a line looked at once.
fn parse_uncached<'a>(line: &'a str, ev: &mut Event<'a>) -> bool {
    ev.shape = 0;
    let u = unwrap(line);
    // An application container's own output, interleaved by `--prefix` or
    // stern, is not a Linkerd log even when it looks like one (logfmt).
    if is_app_container(&u) {
        return false;
    }
    let s = u.rest;
    let at = if dispatch(s, ev).is_some() {
        0
    } else {
        match recover::find(s, ev) {
            Some(p) => p,
            None => return false,
        }
    };
    ev.wrapper = u.wrapper;
    if at > 0 {
        ev.wrapper.lead = Some(s[..at].trim_end());
    }
    ev.text = Cow::Borrowed(&s[at..]);
    ev.component = component::of(ev);
    true
}

fn is_app_container(u: &Unwrapped<'_>) -> bool {
    u.wrapper
        .container
        .is_some_and(|c| component::of_container(c) == Component::Application)
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
        b'[' => plain::proxy_plain(s, ev)
            .map(drop)
            .or_else(|| other::access_apache(s, ev)),
        b'{' => return json::parse(s, ev),
        b'#' => return metrics::parse(s, ev),
        b't' => other::logrus(s, ev).or_else(|| other::panic(s, ev)),
        b'l' | b'm' => other::logrus(s, ev),
        b'p' | b'g' => other::panic(s, ev),
        b'0'..=b'9' => plain::policy_controller(s, ev)
            .or_else(|| other::go_log(s, ev))
            .or_else(|| other::access_apache(s, ev))
            .or_else(|| other::proxy_init_truncated(s, ev)),
        b'/' => other::proxy_init_truncated(s, ev),
        b'I' | b'W' | b'E' | b'F' => other::klog(s, ev).or_else(|| plain::proxy_legacy(s, ev)),
        b'D' | b'T' => plain::proxy_legacy(s, ev),
        b'a'..=b'f' | b'A'..=b'C' => other::access_apache(s, ev),
        // `√` `‼` `×`: the first byte of their UTF-8.
        0xE2 | 0xC3 => check::parse(s, ev),
        _ => None,
    };
    specific.or_else(|| metrics::parse(s, ev)).or_else(|| {
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
        Producer::RustPanic | Producer::GoPanic | Producer::Check => true,
        Producer::ProxyInit => ev.message().starts_with("< "),
        _ => false,
    }
}

/// Lines and bytes a record spread over several physical lines may take
/// (a pretty-printed JSON object, a hard-wrapped line): past them the
/// pieces are kept as they are.
const MAX_JOIN_LINES: usize = 200;
const MAX_JOIN_BYTES: usize = 256 << 10;

/// A record whose line was visibly cut: the next line may continue it.
struct Held<'a> {
    ev: Event<'a>,
    /// The line (or lines joined) it was parsed from.
    raw: &'a str,
}

/// A JSON object spread over several lines, gathered until its braces
/// balance.
struct JsonJoin<'a> {
    first: u64,
    pieces: Vec<&'a str>,
    bytes: usize,
    depth: i64,
}

/// Turns lines into records, holding back a multi-line record until the
/// next header shows it is complete. Records are lent to `emit` (mutably, so
/// a caller can adjust one before it counts it), never moved: one event
/// slot serves every line.
pub struct Tokenizer<'a> {
    arena: &'a Arena<String>,
    slot: Record<'a>,
    pending: Option<Event<'a>>,
    held: Option<Held<'a>>,
    json: Option<JsonJoin<'a>>,
    /// The container whose `kubectl describe` block the lines are in.
    kube_container: Option<&'a str>,
    /// The caller saw that the next line continues this one.
    continued: bool,
}

impl<'a> Tokenizer<'a> {
    /// Joined lines are allocated in `arena`.
    pub fn new(arena: &'a Arena<String>) -> Self {
        Tokenizer {
            arena,
            slot: Record::Event(Event::default()),
            pending: None,
            held: None,
            json: None,
            kube_container: None,
            continued: false,
        }
    }

    /// The next line pushed is known to go on in the line after it (a
    /// ticket's hard-wrapped copy): its record waits to be joined, even
    /// though nothing in it looks cut.
    pub fn continued(&mut self) {
        self.continued = true;
    }

    pub fn push(&mut self, line_no: u64, line: &'a str, emit: &mut impl FnMut(&mut Record<'a>)) {
        let continued = std::mem::take(&mut self.continued);
        if self.json.is_some() && self.continue_json(line, emit) {
            return;
        }
        if self.held.is_some() && self.continue_held(line, emit) {
            return;
        }
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
                } else if ev.cut || continued {
                    self.held = Some(Held {
                        ev: std::mem::take(ev),
                        raw: line,
                    });
                } else {
                    emit(&mut self.slot);
                }
                return;
            }
        }
        let trimmed = line.trim();
        // A check's hints are indented under it; the next section's heading
        // is not.
        if self
            .pending
            .as_ref()
            .is_some_and(|p| p.producer == Producer::Check && !line.starts_with([' ', '\t']))
        {
            self.flush(emit);
        }
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
        let u = unwrap(line);
        if self.start_json(line_no, line, &u) {
            return;
        }
        if let Record::Event(ev) = &mut self.slot {
            if kube_line(&mut self.kube_container, &u, ev) {
                ev.line = line_no;
                emit(&mut self.slot);
                return;
            }
        }
        let looks_like = if is_app_container(&u) {
            Some(Foreign::AppContainer)
        } else {
            foreign::shape(u.rest)
        };
        emit(&mut Record::Unparsed {
            line: line_no,
            text: Cow::Borrowed(line),
            looks_like,
        });
    }

    /// Starts gathering a JSON object whose line leaves braces open.
    fn start_json(&mut self, line_no: u64, line: &'a str, u: &Unwrapped<'a>) -> bool {
        if !u.rest.starts_with('{') {
            return false;
        }
        let depth = brace_depth(u.rest);
        if depth <= 0 {
            return false;
        }
        self.json = Some(JsonJoin {
            first: line_no,
            pieces: vec![line],
            bytes: line.len(),
            depth,
        });
        true
    }

    /// Adds a line to the JSON object being gathered; false when the line
    /// is not part of it (a record of its own), after giving up the object.
    fn continue_json(&mut self, line: &'a str, emit: &mut impl FnMut(&mut Record<'a>)) -> bool {
        let Some(j) = self.json.as_mut() else {
            return false;
        };
        let mut probe = Event::default();
        let header = parse_into(line, &mut probe);
        if header || j.pieces.len() >= MAX_JOIN_LINES || j.bytes + line.len() > MAX_JOIN_BYTES {
            self.give_up_json(emit);
            return false;
        }
        j.pieces.push(line);
        j.bytes += line.len() + 1;
        j.depth += brace_depth(line);
        if j.depth > 0 {
            return true;
        }
        let j = self.json.take().expect("gathering");
        let joined: &'a str = self.arena.alloc(
            j.pieces
                .iter()
                .map(|p| p.trim())
                .collect::<Vec<_>>()
                .join(" "),
        );
        if let Record::Event(ev) = &mut self.slot {
            if parse_into(joined, ev) {
                ev.line = j.first;
                ev.lines = j.pieces.len() as u32;
                emit(&mut self.slot);
                return true;
            }
        }
        self.json = Some(j);
        self.give_up_json(emit);
        true
    }

    fn give_up_json(&mut self, emit: &mut impl FnMut(&mut Record<'a>)) {
        if let Some(j) = self.json.take() {
            for (i, p) in j.pieces.iter().enumerate() {
                emit(&mut Record::Unparsed {
                    line: j.first + i as u64,
                    text: Cow::Borrowed(p),
                    looks_like: None,
                });
            }
        }
    }

    /// Joins a line to the cut record before it when it continues it and the
    /// joined line parses; false (after emitting the held record) otherwise.
    fn continue_held(&mut self, line: &'a str, emit: &mut impl FnMut(&mut Record<'a>)) -> bool {
        let Some(h) = self.held.as_ref() else {
            return false;
        };
        // A quoted copy quotes every piece of a wrapped line.
        let frag = unquote(line).trim_end();
        let mut probe = Event::default();
        let joinable = !frag.is_empty()
            && h.ev.lines < MAX_JOIN_LINES as u32
            && h.raw.len() + frag.len() < MAX_JOIN_BYTES
            && !parse_into(line, &mut probe);
        if joinable {
            let joined: &'a str = self.arena.alloc(format!("{} {frag}", h.raw));
            if parse_into(joined, &mut probe) {
                let mut h = self.held.take().expect("held");
                probe.line = h.ev.line;
                probe.lines = h.ev.lines + 1;
                if probe.cut {
                    h.ev = probe;
                    h.raw = joined;
                    self.held = Some(h);
                } else {
                    let mut rec = Record::Event(probe);
                    emit(&mut rec);
                }
                return true;
            }
        }
        self.emit_held(emit);
        false
    }

    fn emit_held(&mut self, emit: &mut impl FnMut(&mut Record<'a>)) {
        if let Some(h) = self.held.take() {
            let mut rec = Record::Event(h.ev);
            emit(&mut rec);
        }
    }

    pub fn flush(&mut self, emit: &mut impl FnMut(&mut Record<'a>)) {
        emit_pending(&mut self.pending, emit);
        self.emit_held(emit);
        self.give_up_json(emit);
    }
}

/// `kubectl describe` and events output; `container` tracks the
/// container block the lines are in.
fn kube_line<'a>(container: &mut Option<&'a str>, u: &Unwrapped<'a>, ev: &mut Event<'a>) -> bool {
    let s = u.rest;
    if !u.indented && !s.is_empty() {
        *container = None;
    }
    let parsed = if u.indented {
        if let Some(c) = kube::container_heading(s) {
            *container = Some(c);
            return false;
        }
        kube::field(s, *container, ev).is_some()
    } else {
        false
    } || kube::event_row(s, ev).is_some();
    if parsed {
        ev.wrapper = u.wrapper.clone();
        ev.component = Component::Kubernetes;
    }
    parsed
}

/// Open braces left by a line, outside JSON strings.
fn brace_depth(s: &str) -> i64 {
    let mut depth = 0i64;
    let mut in_str = false;
    let mut esc = false;
    for &c in s.as_bytes() {
        if in_str {
            match c {
                _ if esc => esc = false,
                b'\\' => esc = true,
                b'"' => in_str = false,
                _ => {}
            }
        } else {
            match c {
                b'"' => in_str = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth -= 1,
                _ => {}
            }
        }
    }
    depth
}

fn emit_pending<'a>(pending: &mut Option<Event<'a>>, emit: &mut impl FnMut(&mut Record<'a>)) {
    if let Some(mut ev) = pending.take() {
        // Blank lines that ended a Go panic are counted, not kept.
        if let Some(c) = ev.continuation.as_mut() {
            c.truncate(c.trim_end_matches('\n').len());
        }
        // The stack trace tells whose panic it is.
        ev.component = component::of(&ev);
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
        let mut ev = Event::default();
        // One line a block: not worth keeping its shape.
        parse_uncached(crate::input::wrap::normalize(line, &arena), &mut ev)
            && !(ev.producer == Producer::GoPanic && ev.message().starts_with("goroutine "))
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
