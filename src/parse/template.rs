//! Shapes of lean lines, kept per thread (a thread that meets a shape it
//! does not know asks the other threads first: [`learnt`](super::learnt)).
//! Lines of a busy proxy's log that differ only in their digits
//! (addresses, ports, stream ids, sizes, times) are cut at the same
//! places: every test the plain tokenizer makes on such a line (brackets,
//! quotes, `: `, spaces, identifier bytes) answers the same for any digit.
//! So a line whose text, with each digit read as `0`, was seen before is
//! read by slicing it where the earlier one was cut, instead of being
//! scanned again.
//!
//! The one test that reads digits themselves, a known crate root (`h2`)
//! for a target without `::`, keeps a shape from being kept; so do a
//! plain line's quoted values with escapes, which are copied rather than
//! sliced, and a JSON line's `\u` escapes. A JSON string with other
//! escapes is decoded from its place in each line. A shape is
//! looked up by its masked text (compared whole, not by hash), so the
//! cache never changes what a line is read as, only how fast.

use super::event::{Event, Level, Producer, Span};
use super::learnt::{Generations, Learnt};
use super::mask::mask;
use super::plain::{
    level_word, proxy_uptime, root_reads_digits, seconds, thread_id, uptime, uptime_parts,
};
use memchr::memchr;
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Shapes kept per thread in each of the cache's two generations: a busy
/// gateway's log has some ten thousand shapes (12 320 in the generated
/// 1 GiB gateway log), and a thread now keeps them all; with 3 584 it read
/// a third of them again (16 594 reads for 12 320 shapes, explain of the
/// JSON log on one thread), each some 46 000 instructions, and found anew
/// what explain needs of each (explain 0.90 x the time on the JSON log).
/// Seven eighths of a power of two, the most a map of that many buckets
/// holds.
const GENERATION: usize = 7168;

/// The bytes of masked text a generation holds at most, the longest line
/// whose shape the threads share, and the bytes a generation of the shared
/// shapes holds: a log of long lines each of its own shape (20 KB each)
/// would otherwise keep a generation's count of them. A gateway's lines
/// are under a KiB. The shared generations hold twice a thread's bytes,
/// for a shape the threads dropped is asked for there before it is read
/// again.
const GENERATION_BYTES: usize = 2 << 20;
const SHARED_LINE: usize = 2048;
const SHARED_BYTES: usize = 2 * GENERATION_BYTES;

/// What a generation of the shared shapes holds for explain of mapped
/// files, whose look-back blocks give their pages back (8 MiB of them):
/// the mixed 1 GiB JSON log's 16 600 shapes of some 500 bytes, which
/// generations of 7 168 and 4 MiB held a share of (20 300 shapes read,
/// the rest again after they were dropped, and their facts found again),
/// fit; explain of it takes 0.95-0.97 times the time. A log of 2 KB lines
/// each its own shape fills them: its peak grows by some 11 MiB (45 to
/// 56).
const SHARED_MORE: (usize, usize) = (12288, 8 << 20);

/// Lets the threads share [`SHARED_MORE`] shapes, or the usual number.
pub fn share_more(more: bool) {
    let (cap, bytes) = if more {
        SHARED_MORE
    } else {
        (GENERATION, SHARED_BYTES)
    };
    SHARED.limit(cap, bytes);
}

/// The level, whether a thread is named, and the text after them.
fn head(line: &str) -> Option<(Level, bool, &str)> {
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

/// A byte range of the line (lines of shapes kept are under 64 KiB).
type R = (u16, u16);

fn at(line: &str, r: R) -> &str {
    &line[r.0 as usize..r.1 as usize]
}

/// Where a value is: `true` when it is a JSON string with escapes, whose
/// range holds its quotes and which each line decodes.
type V = (R, bool);

/// A map keyed by a hash or an id: hashed by one product.
pub type ById<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    /// Shape ids count up from one: kept as they are, their top bits,
    /// which the map's probes compare first, would be alike, and a key not
    /// in a full map compared with every key of each group it passed
    /// (3 500 instructions a look-up in an old generation). An odd product
    /// keeps them distinct and spreads them over the top bits.
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Where a line's clock is, and how it is read.
#[derive(Clone, Copy, Debug)]
enum Clock {
    /// The plain format's uptime bracket: its seconds with their padding
    /// (masked as digits), and the digits after the point. Padding of other
    /// whitespace than spaces is not read here (the tokenizer reads it).
    Bracket {
        secs: R,
        frac: R,
    },
    /// A JSON `timestamp` that is an uptime bracket, or a wall-clock time.
    Uptime(R),
    Wall(R),
    None,
}

/// Where a line of one shape is cut, as its event.
struct Shape {
    id: u64,
    /// The line with its digits masked.
    key: Box<[u8]>,
    producer: Producer,
    level: Option<Level>,
    thread: Option<R>,
    clock: Clock,
    /// Each span's name and how many of `span_fields` are its.
    spans: Vec<(R, u16)>,
    span_fields: Vec<(R, V)>,
    target: Option<R>,
    body: R,
    message: Option<V>,
    fields: Vec<(R, V)>,
    cut: bool,
    /// Where a JSON line's numbers of several integer digits start
    /// ([`leading_digits`]).
    leads: Vec<u16>,
}

struct Cache {
    /// Shapes seen lately, by the hash of their masked text.
    shapes: Generations<Arc<Shape>>,
    /// The masked text of the line being looked up.
    masked: Vec<u8>,
}

/// Shape ids are drawn from one counter for every thread: an event read on
/// one thread names no other thread's shape.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static CACHE: RefCell<Cache> = const {
        RefCell::new(Cache {
            shapes: Generations::new(GENERATION, GENERATION_BYTES),
            masked: Vec::new(),
        })
    };
}

/// Shapes some thread read, for the others.
static SHARED: Learnt<Shape> = Learnt::weighed(GENERATION, SHARED_BYTES, |s| s.key.len());

/// Where `part` is in `line`, when it is a slice of it (under 64 KiB in).
pub(crate) fn range(line: &str, part: &str) -> Option<R> {
    let start = (part.as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
    let end = start + part.len();
    Some((u16::try_from(start).ok()?, u16::try_from(end).ok()?)).filter(|_| end <= line.len())
}

/// The range of a part the tokenizer sliced from the line; `None` for a
/// part it copied (it must tell the two apart, so it takes the `Cow`).
#[allow(clippy::ptr_arg)]
fn borrowed(line: &str, c: &Cow<'_, str>) -> Option<R> {
    match c {
        Cow::Borrowed(s) => range(line, s),
        Cow::Owned(_) => None,
    }
}

impl Shape {
    /// Reads `line` into `ev` by the tokenizer's own path (its plain or
    /// JSON grammar, with no wrapper) and makes its shape: `None` when the
    /// line is not one of those, `Some(None)` when it was read but its
    /// reading cannot be sliced from another line's.
    fn read<'a>(line: &'a str, ev: &mut Event<'a>) -> Option<Option<Shape>> {
        let b = line.as_bytes();
        let mut leads = Some(Vec::new());
        let (clock, kept) = if b.first() == Some(&b'[') {
            head(line)?;
            // Which head is the target may turn on a crate root spelt
            // with a digit (`h2`).
            let rooted = super::plain::proxy_plain(line, ev)?.is_some_and(root_reads_digits);
            let (secs, frac, _) = uptime_parts(line)?;
            let clock = (|| {
                Some(Clock::Bracket {
                    secs: (1, range(line, secs)?.1),
                    frac: range(line, frac)?,
                })
            })();
            (clock, !rooted)
        } else {
            // A JSON line that `unwrap` and `normalize` leave whole (it
            // ends with its brace), without `\u` escapes (whose hex digits
            // are characters), and whose numbers are told apart from `012`.
            if b.first() != Some(&b'{') || b.last() != Some(&b'}') {
                return None;
            }
            super::json::parse(line, ev)?;
            let tracing = matches!(
                ev.producer,
                Producer::ProxyJson | Producer::PolicyController
            );
            let clock = match (ev.uptime.is_some(), &ev.timestamp) {
                (_, Some(t)) => borrowed(line, t).map(Clock::Wall),
                (true, None) => json_uptime(line).map(Clock::Uptime),
                (false, None) => Some(Clock::None),
            };
            leads = leading_digits(b);
            (clock, tracing && !unicode_escapes(b) && leads.is_some())
        };
        ev.component = super::component::of(ev);
        if !kept {
            return Some(None);
        }
        // A JSON string with escapes is decoded, not sliced: its place is
        // the one string of the line with escapes that decodes to it.
        let escaped = if b.first() == Some(&b'{') && memchr(b'\\', b).is_some() {
            escaped_strings(b)
        } else {
            Vec::new()
        };
        let value = |v: &Cow<'_, str>| match v {
            Cow::Borrowed(s) => Some((range(line, s)?, false)),
            Cow::Owned(s) => {
                let mut places = escaped
                    .iter()
                    .filter(|r| super::json::scalar(at(line, **r)) == *s);
                let place = places.next()?;
                places.next().is_none().then_some((*place, true))
            }
        };
        let pair = |(k, v): &(Cow<'_, str>, Cow<'_, str>)| Some((borrowed(line, k)?, value(v)?));
        let opt = |c: &Option<Cow<'_, str>>| match c {
            Some(c) => borrowed(line, c).map(Some),
            None => Some(None),
        };
        let shape = (|| {
            Some(Shape {
                id: 0,
                key: Box::default(),
                producer: ev.producer,
                level: ev.level,
                thread: opt(&ev.thread)?,
                clock: clock?,
                spans: ev
                    .spans
                    .iter()
                    .map(|s| {
                        Some((
                            borrowed(line, &s.name)?,
                            u16::try_from(s.fields.len()).ok()?,
                        ))
                    })
                    .collect::<Option<_>>()?,
                span_fields: ev
                    .spans
                    .iter()
                    .flat_map(|s| s.fields.iter().map(pair))
                    .collect::<Option<_>>()?,
                target: opt(&ev.target)?,
                body: range(line, ev.body).unwrap_or((0, 0)),
                message: match &ev.message {
                    Some(m) => Some(value(m)?),
                    None => None,
                },
                fields: ev.fields.iter().map(pair).collect::<Option<_>>()?,
                cut: ev.cut,
                leads: leads?,
            })
        })();
        Some(shape)
    }

    /// Is `line`, of this shape's masked text, read as its first line was?
    /// Not when one of its numbers is not one (`012`).
    fn reads(&self, line: &[u8]) -> bool {
        self.leads.iter().all(|p| line[usize::from(*p)] != b'0')
    }

    fn fill<'a>(&self, line: &'a str, ev: &mut Event<'a>) -> bool {
        let at = |r: R| at(line, r);
        let value = |(r, escaped): V| {
            if escaped {
                super::json::scalar(at(r))
            } else {
                Cow::Borrowed(at(r))
            }
        };
        ev.reset(self.producer, line);
        ev.level = self.level;
        ev.thread = self.thread.map(|r| Cow::Borrowed(at(r)));
        let Some(up) = self.clock.uptime(line, self.thread.is_some()) else {
            return false;
        };
        ev.uptime = up;
        if let Clock::Wall(r) = self.clock {
            ev.timestamp = Some(Cow::Borrowed(at(r)));
        }
        let mut fields = self.span_fields.iter();
        for (name, n) in &self.spans {
            ev.spans.push(Span {
                name: Cow::Borrowed(at(*name)),
                fields: fields
                    .by_ref()
                    .take(usize::from(*n))
                    .map(|(k, v)| (Cow::Borrowed(at(*k)), value(*v)))
                    .collect(),
            });
        }
        ev.target = self.target.map(|r| Cow::Borrowed(at(r)));
        ev.body = at(self.body);
        ev.message = self.message.map(value);
        ev.fields.extend(
            self.fields
                .iter()
                .map(|(k, v)| (Cow::Borrowed(at(*k)), value(*v))),
        );
        ev.cut = self.cut;
        // A JSON line's component turns on its target's crate root, which
        // may be spelt with a digit (`h2`): told for each line.
        ev.component = super::component::of(ev);
        true
    }

    fn seen<'a>(&self, line: &'a str) -> Seen<'a> {
        Seen {
            id: self.id,
            clock: self.clock,
            producer: self.producer,
            level: self.level,
            thread: self.thread.is_some(),
            timestamp: matches!(self.clock, Clock::Wall(_)),
            target: self.target.map_or("", |r| at(line, r)),
            cut: self.cut,
            line,
        }
    }
}

impl Clock {
    /// The uptime a line is read with: `None` when its clock does not read
    /// (the line is then not read through its shape).
    fn uptime(self, line: &str, thread: bool) -> Option<Option<f64>> {
        let at = |r: R| at(line, r);
        Some(match self {
            Clock::Bracket { secs, frac } => {
                let up = seconds(at(secs).trim_start_matches(' '), at(frac))?;
                let digits = (frac.1 - frac.0) as usize;
                Some(proxy_uptime(up, digits, thread))
            }
            Clock::Uptime(r) => uptime(at(r)).map(|(u, ..)| u),
            Clock::Wall(_) | Clock::None => None,
        })
    }
}

/// The range of a JSON line's `timestamp` value (an uptime bracket).
fn json_uptime(line: &str) -> Option<R> {
    let key = "\"timestamp\":\"";
    let start = line.find(key)? + key.len();
    let len = line[start..].find('"')?;
    Some((u16::try_from(start).ok()?, u16::try_from(start + len).ok()?))
}

/// Does a JSON text hold a `\u` escape (or what looks like one)? Its hex
/// digits are characters, which masking would take for numbers.
fn unicode_escapes(b: &[u8]) -> bool {
    // Most lines have no backslash: one quick search says so.
    memchr(b'\\', b).is_some_and(|i| memchr::memmem::find(&b[i..], b"\\u").is_some())
}

/// The strings of a JSON text that hold escapes, quotes included.
fn escaped_strings(b: &[u8]) -> Vec<R> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(open) = memchr(b'"', &b[i..]).map(|o| i + o) {
        let (mut j, mut escapes) = (open + 1, false);
        while j < b.len() && b[j] != b'"' {
            escapes |= b[j] == b'\\';
            j += if b[j] == b'\\' { 2 } else { 1 };
        }
        let end = (j + 1).min(b.len());
        if escapes {
            if let (Ok(s), Ok(e)) = (u16::try_from(open), u16::try_from(end)) {
                out.push((s, e));
            }
        }
        i = end;
    }
    out
}

/// Where each number of a JSON text has an integer part of several digits,
/// at its first: a line of the same masked text is JSON only where none of
/// those is `0` (`012` is not a number; other digits never make a line
/// more or less JSON). A quote not escaped opens or closes a string, and a
/// digit outside strings is in a number.
fn leading_digits(b: &[u8]) -> Option<Vec<u16>> {
    let mut leads = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'"' {
            // Most of a line is its strings: to their closing quote (or
            // the byte after an escape) by a search, not a byte at a time.
            let mut j = i + 1;
            loop {
                match memchr::memchr2(b'"', b'\\', &b[j.min(b.len())..]) {
                    None => return Some(leads),
                    Some(k) if b[j + k] == b'\\' => j += k + 2,
                    Some(k) => {
                        i = j + k + 1;
                        break;
                    }
                }
            }
            continue;
        }
        if c.is_ascii_digit() && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            // Not a fraction's or an exponent's digits, nor the integer
            // part's later ones.
            let sign = i > 0 && b[i - 1] == b'-';
            let before = b.get((i - usize::from(sign)).wrapping_sub(1));
            if !before.is_some_and(|p| matches!(p, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'))
            {
                leads.push(u16::try_from(i).ok()?);
            }
        }
        i += 1;
    }
    Some(leads)
}

/// What a pass that counts lines without their events needs of a line a
/// shape is kept for.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    /// The shape's id: the same for every line of the shape while this
    /// thread's cache keeps it, never another shape's.
    pub id: u64,
    clock: Clock,
    pub producer: Producer,
    pub level: Option<Level>,
    pub thread: bool,
    /// It has a wall-clock time of its own (a JSON producer's).
    pub timestamp: bool,
    pub target: &'a str,
    /// Its event looks cut (the tokenizer holds it for the next line to
    /// continue).
    pub cut: bool,
    pub line: &'a str,
}

impl Seen<'_> {
    /// The uptime its event has: `None` when the line is not read through
    /// its shape ([`read`] refuses it).
    pub fn uptime(&self) -> Option<Option<f64>> {
        self.clock.uptime(self.line, self.thread)
    }
}

/// The event a look-up reads a new shape's line into: the caller's, or
/// one made only then (a counting pass needs none for a known shape, and
/// making and dropping one for every line was 1.5 % of explain's
/// instructions).
trait Scratch<'a> {
    fn event(&mut self) -> &mut Event<'a>;
}

impl<'a> Scratch<'a> for &mut Event<'a> {
    fn event(&mut self) -> &mut Event<'a> {
        self
    }
}

impl<'a> Scratch<'a> for Option<Event<'a>> {
    fn event(&mut self) -> &mut Event<'a> {
        self.get_or_insert_with(Event::default)
    }
}

/// Looks `line` up; on a miss, reads it into `ev` and keeps its shape.
/// `None` when the line is not one a shape can be kept for, or is not
/// UTF-8. `text` is the line, when the caller knows it is UTF-8; a line
/// of a kept shape is, without being checked: it differs from the shape's
/// first line, which was, only where that had an ASCII digit or a space
/// of padding ([`mask`]), and has one of those there. The line as text is
/// passed on to `hit` or `miss`.
fn with_shape<'a, T, E: Scratch<'a>>(
    line: &'a [u8],
    text: Option<&'a str>,
    refuse_unicode_escapes: bool,
    ev: &mut E,
    hit: impl FnOnce(&'a str, &Shape, &mut E) -> T,
    miss: impl FnOnce(&'a str, Option<&Shape>, &mut E) -> T,
) -> Option<T> {
    // Cheap refusals first: other lines start with neither.
    if !matches!(line.first(), Some(b'[' | b'{')) {
        return None;
    }
    // SAFETY: called for a line whose masked text is a kept shape's key
    // (see above).
    let known = || text.unwrap_or_else(|| unsafe { std::str::from_utf8_unchecked(line) });
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let c = &mut *c;
        let h = mask(line, &mut c.masked);
        let masked = &c.masked[..];
        if let Some(s) = c.shapes.young(h).filter(|s| *s.key == *masked) {
            return s.reads(line).then(|| hit(known(), s, ev));
        }
        let old = c.shapes.take_old(h, |s| *s.key == *masked && s.reads(line));
        // The shape of a JSON line with `\u` escapes is never kept, so no
        // kept shape's line has one (a backslash and a `u` are masked as
        // themselves): a counting pass refuses such a line here, before
        // the shared shapes' lock, rather than read it to no end.
        let json = line[0] == b'{';
        if old.is_none() && refuse_unicode_escapes && json && unicode_escapes(line) {
            return None;
        }
        let (shape, fresh, text) = match old.or_else(|| SHARED.get(h, |s| *s.key == *masked)) {
            Some(s) if !s.reads(line) => return None,
            Some(s) => (s, false, known()),
            None => {
                let text = match text {
                    Some(t) => t,
                    None => simdutf8::basic::from_utf8(line).ok()?,
                };
                let Some(mut shape) = Shape::read(text, ev.event())? else {
                    return Some(miss(text, None, ev));
                };
                shape.id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
                shape.key = masked.into();
                let shape = if masked.len() <= SHARED_LINE {
                    SHARED.put(h, shape, |s| *s.key == *masked)
                } else {
                    Arc::new(shape)
                };
                (shape, true, text)
            }
        };
        let weight = shape.key.len();
        let s = c.shapes.keep(h, shape, weight);
        Some(if fresh {
            miss(text, Some(s), ev)
        } else {
            hit(text, s, ev)
        })
    })
}

/// Reads a plain or JSON line into `ev` through the cache: false for any
/// line it does not take (the tokenizer's general path reads it).
pub fn read<'a>(line: &'a str, mut ev: &mut Event<'a>) -> bool {
    let hit = |line: &'a str, s: &Shape, ev: &mut &mut Event<'a>| {
        let read = s.fill(line, ev);
        ev.shape = s.id;
        read
    };
    let miss = |_: &'a str, s: Option<&Shape>, ev: &mut &mut Event<'a>| {
        ev.shape = s.map_or(0, |s| s.id);
        true
    };
    with_shape(line.as_bytes(), Some(line), false, &mut ev, hit, miss).unwrap_or(false)
}

/// What a counting pass needs of a plain or JSON line whose shape is kept,
/// through the cache: without its event when the shape was seen before.
pub fn seen(line: &str) -> Option<Seen<'_>> {
    seen_in(line.as_bytes(), Some(line), &mut None)
}

/// [`seen`] of a line of bytes (`None` for one that is not UTF-8), and
/// the event a line of a new shape was read into left in `scratch`
/// (`None` there for a shape seen before): what is found of a shape is
/// then found from it rather than by reading the line again.
pub fn seen_reading<'a>(line: &'a [u8], scratch: &mut Option<Event<'a>>) -> Option<Seen<'a>> {
    seen_in(line, None, scratch)
}

fn seen_in<'a>(
    line: &'a [u8],
    text: Option<&'a str>,
    scratch: &mut Option<Event<'a>>,
) -> Option<Seen<'a>> {
    *scratch = None;
    let found = with_shape(
        line,
        text,
        true,
        scratch,
        |line, s, _| (Some(s.seen(line)), false),
        |line, s, _| (s.map(|s| s.seen(line)), s.is_some()),
    );
    match (&found, scratch.as_mut()) {
        (Some((Some(seen), true)), Some(ev)) => ev.shape = seen.id,
        _ => *scratch = None,
    }
    found?.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of long lines, each of its own shape, keeps a few MiB of
    /// them, not a generation's count.
    #[test]
    fn long_lines_each_of_its_own_shape_keep_the_cache_small() {
        let word = |mut i: usize| {
            let mut w = String::new();
            for _ in 0..4 {
                w.push(char::from(b'a' + (i % 26) as u8));
                i /= 26;
            }
            w
        };
        let tail = "x".repeat(8000);
        let n = 1200;
        for i in 0..n {
            let line = format!("[     0.000001s]  INFO linkerd_app: {} {tail}", word(i));
            assert!(seen(&line).is_some());
        }
        CACHE.with(|c| {
            let c = c.borrow();
            let bytes: usize = c.shapes.values().map(|s| s.key.len()).sum();
            assert!(bytes <= 2 * (GENERATION_BYTES + 8100), "{bytes}");
            assert!(c.shapes.values().count() < n);
        });
    }

    /// Ids that count up are spread over the top bits of their hash,
    /// which a map's probes compare first.
    #[test]
    fn ids_that_count_up_hash_apart() {
        use std::hash::BuildHasher;
        let h = BuildHasherDefault::<IdHasher>::default();
        let tops: std::collections::HashSet<u64> =
            (1..2000u64).map(|id| h.hash_one(id) >> 57).collect();
        assert_eq!(tops.len(), 128);
    }

    /// The search that skips strings finds the numbers a byte at a time
    /// would: the quote and backslash rules, read one byte at a time here.
    #[test]
    fn leading_digits_skip_strings_as_a_byte_at_a_time_does() {
        fn one_at_a_time(b: &[u8]) -> Vec<u16> {
            let (mut in_string, mut escape) = (false, false);
            let mut leads = Vec::new();
            for (i, c) in b.iter().enumerate() {
                if in_string {
                    in_string = escape || *c != b'"';
                    escape = !escape && *c == b'\\';
                    continue;
                }
                in_string = *c == b'"';
                let lead = c.is_ascii_digit()
                    && b.get(i + 1).is_some_and(u8::is_ascii_digit)
                    && !b
                        .get((i - usize::from(i > 0 && b[i - 1] == b'-')).wrapping_sub(1))
                        .is_some_and(|p| b"0123456789.eE+-".contains(p));
                if lead {
                    leads.push(i as u16);
                }
            }
            leads
        }
        let alphabet = b"\"\\0123456789-.e :a{}";
        proptest::proptest!(|(picks in proptest::collection::vec(0..alphabet.len(), 0..80))| {
            let b: Vec<u8> = picks.iter().map(|i| alphabet[*i]).collect();
            proptest::prop_assert_eq!(leading_digits(&b), Some(one_at_a_time(&b)));
        });
    }

    /// A line of a new shape leaves the event it was read into, the one
    /// reading it through its shape makes; a line of a shape seen before
    /// leaves none.
    #[test]
    fn a_new_shapes_line_leaves_its_event() {
        let line = "[    12.000001s] DEBUG ThreadId(07) inbound:accept{client.addr=10.1.2.3:4567}: linkerd_app_inbound::detect: a shape of its own here";
        let mut scratch = None;
        let seen = seen_reading(line.as_bytes(), &mut scratch).expect("a shape");
        let fresh = scratch.take().expect("read into the scratch event");
        assert_eq!(fresh.shape, seen.id);
        let again = crate::parse::parse_line(line).unwrap();
        assert_eq!(format!("{fresh:?}"), format!("{again:?}"));
        let other = line.replace("12.000001", "13.500000");
        let mut scratch = None;
        assert_eq!(
            seen_reading(other.as_bytes(), &mut scratch).map(|s| s.id),
            Some(seen.id)
        );
        assert!(scratch.is_none());
    }

    /// A line of bytes that are not UTF-8 has no shape, beside a kept
    /// shape's line of the same words or not, and a later line of the kept
    /// shape (another uptime) reads as its text.
    #[test]
    fn a_line_that_is_not_utf8_has_no_shape() {
        let line = |up: &str, word: &[u8]| {
            let mut l = format!("[{up}s]  INFO ThreadId(01) linkerd_app: a ").into_bytes();
            l.extend_from_slice(word);
            l.extend_from_slice(b" word here");
            l
        };
        let bad = line("     1.5", b"\xff\xfe");
        assert!(seen_reading(&bad, &mut None).is_none());
        let kept = line("     1.5", "\u{e9}t\u{e9}".as_bytes());
        let first = seen_reading(&kept, &mut None).expect("a shape").id;
        let bad = line("     1.5", b"\xc3\xa9t\xc3");
        assert!(seen_reading(&bad, &mut None).is_none());
        let grown = line("    17.5", "\u{e9}t\u{e9}".as_bytes());
        let later = seen_reading(&grown, &mut None).expect("the same shape");
        assert_eq!(later.id, first);
        assert_eq!(later.line.as_bytes(), &grown[..]);
    }

    fn masked(s: &str) -> String {
        let mut out = Vec::new();
        mask(s.as_bytes(), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn masking_makes_every_digit_zero_and_nothing_else() {
        let all: String = (0u8..=127).map(char::from).collect();
        let want: String = all
            .chars()
            .map(|c| if c.is_ascii_digit() { '0' } else { c })
            .collect();
        assert_eq!(masked(&all), want);
        assert_eq!(masked("é9ü"), "é0ü");
        // An uptime's padding too, but no other spaces.
        assert_eq!(masked("[     9.5s] a 7"), "[000000.0s] a 0");
        assert_eq!(masked("[ 9 ] a b c"), "[00 ] a b c");
        assert_eq!(masked("[  x 9 a b c"), "[  x 0 a b c");
        assert_eq!(masked("[        9.5s] a"), "[        0.0s] a");
        assert_eq!(masked(" [ 9"), " [ 0");
        assert_eq!(
            masked(r#"{"timestamp":"[  12.5s]","x":"[ 1"}"#),
            r#"{"timestamp":"[0000.0s]","x":"[ 0"}"#
        );
    }

    /// A JSON line whose masked text is a known shape's, but one of whose
    /// numbers is not one (`017`, `-05`), is not read through the shape
    /// (nor is it JSON); its other numbers, fractions and exponents are.
    #[test]
    fn a_json_number_that_is_not_one_is_not_read_through_its_shape() {
        let line = |sz: &str, n: &str| {
            format!(
                r#"{{"timestamp":"[     1.000000s]","level":"DEBUG","fields":{{"message":"Peeked bytes","sz":{sz},"n":{n}}},"target":"linkerd_tls::server","spans":[{{"name":"inbound"}}],"threadId":"ThreadId(1)"}}"#
            )
        };
        let field = |ev: &Event<'_>, key: &str| {
            let (_, v) = ev.fields.iter().find(|(k, _)| k == key).unwrap();
            v.to_string()
        };
        for (sz, n) in [("517", "-25"), ("912", "-90"), ("100", "1.05e-07")] {
            let l = line(sz, n);
            let mut ev = Event::default();
            assert!(read(&l, &mut ev), "{l}");
            assert_eq!((field(&ev, "sz"), field(&ev, "n")), (sz.into(), n.into()));
        }
        for (sz, n) in [("017", "-25"), ("517", "-05"), ("000", "0.05e-07")] {
            let l = line(sz, n);
            assert!(!read(&l, &mut Event::default()), "{l}");
            assert!(super::super::json::parse(&l, &mut Event::default()).is_none());
        }
    }

    /// JSON lines of one shape whose strings hold escapes (but `\u`) are
    /// read through it, each decoding its own strings, as they read alone;
    /// a string with escapes whose decoding another string of the line
    /// shares is not given a place, nor is a `\u` escape's line kept.
    #[test]
    fn json_strings_with_escapes_read_through_their_shape() {
        let line = |a: &str, b: &str, extra: &str| {
            format!(
                r#"{{"timestamp":"[     1.000000s]","level":"WARN","fields":{{"message":"Failed \"{a}\"\n","error":"x\\{b}\/"{extra}}},"target":"linkerd_app_core::errors","spans":[{{"name":"inbound"}},{{"client.addr":"10.0.0.{a}:{b}","name":"accept"}}],"threadId":"ThreadId(1)"}}"#
            )
        };
        let alone = |l: &str| {
            let mut ev = Event::default();
            super::super::json::parse(l, &mut ev).unwrap();
            ev.component = super::super::component::of(&ev);
            format!("{ev:?}")
        };
        for (a, b) in [("1", "80"), ("7", "81"), ("9", "12"), ("7", "81")] {
            let l = line(a, b, "");
            let mut ev = Event::default();
            assert!(read(&l, &mut ev), "{l}");
            assert_ne!(ev.shape, 0, "{l}");
            ev.shape = 0;
            assert_eq!(format!("{ev:?}"), alone(&l), "{l}");
            assert!(seen(&l).is_some(), "{l}");
        }
        let twice = line("3", "4", r#","again":"x\\4\/""#);
        let mut ev = Event::default();
        assert!(read(&twice, &mut ev));
        assert_eq!(ev.shape, 0, "{twice}");
        let unicode = line("3", "4", r#","u":"\u00e9""#);
        assert!(seen(&unicode).is_none());
    }

    /// An uptime that grows into its bracket's padding keeps its line's
    /// shape (plain and JSON), and each line reads as it reads alone.
    #[test]
    fn an_uptime_grown_into_its_padding_keeps_its_shape() {
        let plain = |up: &str| {
            format!("[{up}s]  INFO ThreadId(01) inbound: linkerd_app_inbound: grown n=7")
        };
        let json = |up: &str| {
            format!(
                r#"{{"timestamp":"[{up}s]","level":"INFO","fields":{{"message":"grown","n":7}},"target":"linkerd_app_inbound","threadId":"ThreadId(1)"}}"#
            )
        };
        for line in [plain, json] {
            let ups = [
                "     9.250000",
                "    10.250000",
                "  1234.500000",
                "123456.000001",
            ];
            let mut ids = Vec::new();
            for up in ups {
                let l = line(up);
                let mut a = Event::default();
                assert!(read(&l, &mut a), "{l}");
                ids.push(a.shape);
                a.shape = 0;
                let mut b = Event::default();
                assert!(super::super::parse_uncached(&l, &mut b), "{l}");
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "{l}");
                let seen = seen(&l).expect("kept");
                assert_eq!(seen.uptime(), Some(Some(up.trim().parse::<f64>().unwrap())));
            }
            assert!(ids.iter().all(|i| *i == ids[0] && *i != 0), "{ids:?}");
        }
    }

    /// Lines of one shape read through the cache as they read alone.
    #[test]
    fn a_shape_seen_before_reads_as_the_line_itself() {
        let lines = [
            "[     0.361018s] DEBUG ThreadId(01) inbound:accept{client.addr=10.240.1.136:49614 target.addr=10.0.57.7:4143}:direct:gateway: h2::codec::framed_read: received frame=Headers { stream_id: StreamId(281) }",
            "[     9.361019s] DEBUG ThreadId(02) inbound:accept{client.addr=10.240.1.137:49615 target.addr=10.0.57.7:4143}:direct:gateway: h2::codec::framed_read: received frame=Headers { stream_id: StreamId(282) }",
            "[     1.000000s]  INFO inbound: h2: a target without :: whose root has a digit",
            "[     2.000000s]  INFO inbound: h3: a target without :: whose root has a digit",
            "[     1.000000s]  WARN ThreadId(01) linkerd_app_core::errors: Failed path=\"/a\\\"b\" status=503",
        ];
        for l in lines.iter().chain(lines.iter()) {
            let mut a = Event::default();
            assert!(read(l, &mut a), "{l}");
            // Which shape read it is not what it reads as.
            a.shape = 0;
            let mut b = Event::default();
            assert!(super::super::plain::proxy_plain(l, &mut b).is_some());
            b.component = super::super::component::of(&b);
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{l}");
        }
    }
}
