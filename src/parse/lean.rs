//! The line most of a busy proxy's log is made of — `[uptime] LEVEL
//! ThreadId(N) spans: target: body`, with nothing around it — told apart
//! without building its event. A pass that only counts such a line (explain,
//! on a line no rule can match) reads its level, target and body here, at a
//! fraction of the tokenizer's cost.

use super::event::Level;
use super::plain::{level_word, split_tail, thread_id, uptime_parts};
use std::sync::LazyLock;

/// A line in the lean shape, split where its event would be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lean<'a> {
    pub level: Level,
    /// It names its thread (`ThreadId(N)`).
    pub thread: bool,
    /// The span stack, empty when there is none.
    pub spans: &'a str,
    /// The tracing target, empty when only spans precede the body.
    pub target: &'a str,
    pub body: &'a str,
    /// The whole line.
    pub text: &'a str,
}

impl<'a> Lean<'a> {
    /// The text rules read: the body, or the whole line when it has none
    /// (as for its event).
    pub fn haystack(&self) -> &'a str {
        if self.body.is_empty() {
            self.text
        } else {
            self.body
        }
    }
}

/// `Some` only when [`parse_into`](super::parse_into) reads the line as a
/// proxy plain-text event without a wrapper, with exactly this level,
/// thread, spans, target and body, and `normalize` leaves the line as it
/// is. The caller has checked that the line's block is UTF-8 without escape
/// bytes.
pub fn scan(line: &str) -> Option<Lean<'_>> {
    let (level, thread, rest) = head(line)?;
    let tail = split_tail(rest)?;
    Some(Lean {
        level,
        thread,
        spans: tail.spans.unwrap_or(""),
        target: tail.target,
        body: tail.body,
        text: line,
    })
}

/// Words a lean line's span stack is searched for, once, by what counts
/// such lines: spans that bound the era (`service`, `rescue`, `accept` with
/// `peer.addr`) and the spellings that name a client connection.
pub const SPAN_WORDS: [&str; 7] = [
    "service",
    "rescue",
    "peer.addr",
    "conn{",
    "remote",
    "client_addr",
    "accept{",
];

/// Which of [`SPAN_WORDS`] a span stack holds (bit `i` for word `i`), and
/// where its first `accept{` is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpanWords {
    pub held: u8,
    pub accepts: u8,
    pub first_accept: usize,
}

impl SpanWords {
    pub fn has(&self, word: usize) -> bool {
        self.held & (1 << word) != 0
    }
}

pub fn span_words(spans: &str) -> SpanWords {
    // A packed (SIMD) search for all of them at once; without SIMD, one
    // search each.
    static WORDS: LazyLock<Option<aho_corasick::packed::Searcher>> = LazyLock::new(|| {
        aho_corasick::packed::Config::new()
            .builder()
            .extend(SPAN_WORDS)
            .build()
    });
    let mut w = SpanWords::default();
    let mut hit = |i: usize, at: usize| {
        w.held |= 1 << i;
        if i == 6 {
            if w.accepts == 0 {
                w.first_accept = at;
            }
            w.accepts = w.accepts.saturating_add(1);
        }
    };
    match WORDS.as_ref() {
        Some(s) => s
            .find_iter(spans.as_bytes())
            .for_each(|m| hit(m.pattern().as_usize(), m.start())),
        None => {
            for (i, word) in SPAN_WORDS.iter().enumerate() {
                spans.match_indices(word).for_each(|(at, _)| hit(i, at));
            }
        }
    }
    w
}

/// The level, whether a thread is named, and the text after them.
pub(crate) fn head(line: &str) -> Option<(Level, bool, &str)> {
    // Such a line starts with its uptime bracket, which no wrapper looks
    // like, and ends in a printable ASCII byte other than the backtick
    // `unwrap` strips, so `normalize` (which trims) and `unwrap` leave it
    // whole; nor does it end in a `\n` copied as text.
    if line.as_bytes().first() != Some(&b'[')
        || !matches!(line.as_bytes().last(), Some(0x21..=0x7e))
        || line.ends_with('`')
        || line.ends_with("\\n")
    {
        return None;
    }
    let (_, _, rest) = uptime_parts(line)?;
    let (level, rest) = level_word(rest)?;
    Some(match thread_id(rest) {
        Some((_, r)) => (level, true, r),
        None => (level, false, rest),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse_line, Producer};

    /// Lean lines read as their events do; other lines are not lean.
    #[test]
    fn lean_lines_are_read_as_their_events() {
        let lines = [
            "[     0.361018s] DEBUG ThreadId(01) inbound:accept{client.addr=10.240.1.136:49614 target.addr=10.0.57.7:4143}:direct:gateway:http{v=h2}: h2::codec::framed_read: received frame=Headers { stream_id: StreamId(281) }",
            "[     0.002233s]  INFO ThreadId(01) linkerd2_proxy::rt: Using single-threaded proxy runtime",
            "[     3.005000s]  WARN outbound: linkerd_app_core::serve: Server failed to accept connection",
            "[     0.1s] DEBUG ThreadId(2) inbound:accept{client.addr=10.0.0.1:1}: linkerd_app_core::serve:",
            "[     0.1s] DEBUG ThreadId(2) inbound: linkerd_app_core::serve: Connection closed",
        ];
        for l in lines {
            let lean = scan(l).unwrap_or_else(|| panic!("not lean: {l}"));
            let ev = parse_line(l).unwrap();
            assert_eq!(ev.producer, Producer::ProxyPlain);
            assert_eq!(ev.level, Some(lean.level), "{l}");
            assert_eq!(ev.thread.is_some(), lean.thread, "{l}");
            assert_eq!(ev.target(), lean.target, "{l}");
            assert_eq!(ev.body, lean.body, "{l}");
            assert_eq!(ev.text, l);
            assert_eq!(ev.wrapper, Default::default());
        }
        for l in [
            "[pod/web-1/linkerd-proxy] [     1.000000s]  INFO ThreadId(01) linkerd2_proxy: ready",
            "[     1.000000s]  INFO ThreadId(01) linkerd2_proxy: ready `",
            "[     1.000000s]  INFO ThreadId(01) linkerd2_proxy: ready ",
            "[     1.000000s] NOTICE ThreadId(01) linkerd2_proxy: ready",
            "[     1.000000s]  INFO ThreadId(01) a message without a target",
            "2024-01-01T00:00:00Z [     1.000000s]  INFO ThreadId(01) linkerd2_proxy: ready",
        ] {
            assert!(scan(l).is_none(), "lean: {l}");
        }
    }
}
