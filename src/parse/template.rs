//! Shapes of lean lines, kept per thread. Lines of a busy proxy's log that
//! differ only in their digits (addresses, ports, stream ids, sizes, times)
//! are cut at the same places: every test the plain tokenizer makes on
//! such a line (brackets, quotes, `: `, spaces, identifier bytes) answers
//! the same for any digit. So a line whose text, with each digit read as
//! `0`, was seen before is read by slicing it where the earlier one was
//! cut, instead of being scanned again.
//!
//! The one test that reads digits themselves, a known crate root (`h2`)
//! for a target without `::`, keeps a shape from being kept; so do quoted
//! values with escapes, which are copied rather than sliced. A shape is
//! looked up by its masked text (compared whole, not by hash), so the
//! cache never changes what a line is read as, only how fast.

use super::event::{Component, Event, Level, Producer, Span};
use super::lean::{self, Lean};
use super::plain::{proxy_uptime, root_reads_digits, seconds, split_tail, uptime_parts};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Shapes kept per thread before the cache starts over: a few MiB.
const MAX_SHAPES: usize = 4096;

/// A byte range of the line.
type R = (u32, u32);

/// A map keyed by a hash or an id already: not hashed again.
pub type ById<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Where a line of one shape is cut, as its event and as a lean line.
struct Shape {
    id: u64,
    /// The line with its digits masked.
    key: Box<[u8]>,
    level: Level,
    thread: Option<R>,
    /// The uptime's digits before and after the point.
    secs: R,
    frac: R,
    /// Each span's name and how many of `span_fields` are its.
    spans: Vec<(R, u16)>,
    span_fields: Vec<(R, R)>,
    target: Option<R>,
    body: R,
    message: Option<R>,
    fields: Vec<(R, R)>,
    cut: bool,
    component: Component,
    /// Spans, target and body as [`lean::scan`] splits the line.
    lean: Option<(R, R, R)>,
}

#[derive(Default)]
struct Cache {
    shapes: ById<Shape>,
    /// The masked text of the line being looked up.
    masked: Vec<u8>,
    next_id: u64,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// Copies `line` into `out` with every ASCII digit made `0` (a loop the
/// compiler turns into vector code); returns a hash of the copy, made four
/// words at a time.
fn mask(line: &[u8], out: &mut Vec<u8>) -> u64 {
    out.clear();
    out.resize(line.len(), 0);
    for (o, b) in out.iter_mut().zip(line) {
        *o = if b.is_ascii_digit() { b'0' } else { *b };
    }
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = [line.len() as u64, 1, 2, 3];
    let mut chunks = out.chunks_exact(32);
    for c in &mut chunks {
        for (i, w) in c.chunks_exact(8).enumerate() {
            let x = u64::from_le_bytes(w.try_into().expect("eight bytes"));
            h[i] = (h[i].rotate_left(5) ^ x).wrapping_mul(K);
        }
    }
    let mut tail = [0u8; 32];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    for (i, w) in tail.chunks_exact(8).enumerate() {
        let x = u64::from_le_bytes(w.try_into().expect("eight bytes"));
        h[i] = (h[i].rotate_left(5) ^ x).wrapping_mul(K);
    }
    h.iter()
        .fold(0u64, |a, x| (a.rotate_left(17) ^ x).wrapping_mul(K))
}

fn range(line: &str, part: &str) -> Option<R> {
    let start = (part.as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
    let end = start + part.len();
    (end <= line.len()).then_some((start as u32, end as u32))
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
    /// The shape of `line`, read into `ev` by the tokenizer's own path;
    /// `None` when the line's reading cannot be sliced from another's.
    fn read<'a>(line: &'a str, ev: &mut Event<'a>) -> Option<Option<Shape>> {
        let (_, _, rest) = lean::head(line)?;
        super::plain::proxy_plain(line, ev)?;
        ev.component = super::component::of(ev);
        let reads_digits = split_tail(rest)
            .and_then(|t| t.rooted)
            .is_some_and(root_reads_digits);
        let (secs, frac, _) = uptime_parts(line)?;
        let pair =
            |(k, v): &(Cow<'_, str>, Cow<'_, str>)| Some((borrowed(line, k)?, borrowed(line, v)?));
        let spans = ev
            .spans
            .iter()
            .map(|s| {
                Some((
                    borrowed(line, &s.name)?,
                    u16::try_from(s.fields.len()).ok()?,
                ))
            })
            .collect::<Option<Vec<_>>>();
        let span_fields = ev
            .spans
            .iter()
            .flat_map(|s| s.fields.iter().map(pair))
            .collect::<Option<Vec<_>>>();
        let fields = ev.fields.iter().map(pair).collect::<Option<Vec<_>>>();
        let lean = lean::scan(line).map(|l| {
            Some((
                range(line, l.spans)?,
                range(line, l.target)?,
                range(line, l.body)?,
            ))
        });
        let shape = (|| {
            Some(Shape {
                id: 0,
                key: Box::default(),
                level: ev.level?,
                thread: match &ev.thread {
                    Some(t) => Some(borrowed(line, t)?),
                    None => None,
                },
                secs: range(line, secs)?,
                frac: range(line, frac)?,
                spans: spans?,
                span_fields: span_fields?,
                target: match &ev.target {
                    Some(t) => Some(borrowed(line, t)?),
                    None => None,
                },
                body: range(line, ev.body)?,
                message: match &ev.message {
                    Some(m) => Some(borrowed(line, m)?),
                    None => None,
                },
                fields: fields?,
                cut: ev.cut,
                component: ev.component,
                lean: match lean {
                    Some(l) => Some(l?),
                    None => None,
                },
            })
        })();
        Some(shape.filter(|_| !reads_digits))
    }

    fn fill<'a>(&self, line: &'a str, ev: &mut Event<'a>) -> bool {
        let at = |r: R| &line[r.0 as usize..r.1 as usize];
        let frac = at(self.frac);
        let Some(up) = seconds(at(self.secs), frac) else {
            return false;
        };
        ev.reset(Producer::ProxyPlain, line);
        ev.level = Some(self.level);
        ev.thread = self.thread.map(|r| Cow::Borrowed(at(r)));
        ev.uptime = Some(proxy_uptime(up, frac.len(), self.thread.is_some()));
        let mut fields = self.span_fields.iter();
        for (name, n) in &self.spans {
            ev.spans.push(Span {
                name: Cow::Borrowed(at(*name)),
                fields: fields
                    .by_ref()
                    .take(usize::from(*n))
                    .map(|(k, v)| (Cow::Borrowed(at(*k)), Cow::Borrowed(at(*v))))
                    .collect(),
            });
        }
        ev.target = self.target.map(|r| Cow::Borrowed(at(r)));
        ev.body = at(self.body);
        ev.message = self.message.map(|r| Cow::Borrowed(at(r)));
        ev.fields.extend(
            self.fields
                .iter()
                .map(|(k, v)| (Cow::Borrowed(at(*k)), Cow::Borrowed(at(*v)))),
        );
        ev.cut = self.cut;
        ev.component = self.component;
        true
    }
}

/// What a lean consumer needs of a line in the lean shape.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    pub lean: Lean<'a>,
    /// Its event would look cut (the tokenizer would hold it for the next
    /// line to continue).
    pub cut: bool,
    /// The shape's id: the same for every line of the shape while this
    /// thread's cache keeps it, never another shape's.
    pub id: u64,
}

/// Looks `line` up; on a miss, reads it into `ev` and keeps its shape.
/// `Some(hit)` when the line is one the cache can hold.
fn with_shape<'a, T>(
    line: &'a str,
    ev: &mut Event<'a>,
    hit: impl FnOnce(&Shape, &mut Event<'a>) -> T,
    miss: impl FnOnce(Option<&Shape>, &mut Event<'a>) -> T,
) -> Option<T> {
    // Cheap refusals first: most other lines do not start with `[`.
    if line.as_bytes().first() != Some(&b'[') {
        return None;
    }
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let c = &mut *c;
        let h = mask(line.as_bytes(), &mut c.masked);
        if let Some(s) = c.shapes.get(&h).filter(|s| *s.key == c.masked[..]) {
            return Some(hit(s, ev));
        }
        let Some(mut shape) = Shape::read(line, ev)? else {
            return Some(miss(None, ev));
        };
        if c.shapes.len() >= MAX_SHAPES {
            c.shapes.clear();
        }
        c.next_id += 1;
        shape.id = c.next_id;
        shape.key = c.masked.as_slice().into();
        let s = c.shapes.entry(h).insert_entry(shape).into_mut();
        Some(miss(Some(s), ev))
    })
}

/// Reads a line in the lean shape into `ev`, through the cache: false for
/// any other line (the tokenizer's general path reads it).
pub fn read<'a>(line: &'a str, ev: &mut Event<'a>) -> bool {
    with_shape(line, ev, |s, ev| s.fill(line, ev), |_, _| true).unwrap_or(false)
}

/// A line in the lean shape that [`lean::scan`] splits, with what its
/// event would say of being cut, through the cache.
pub fn seen(line: &str) -> Option<Seen<'_>> {
    let mut ev = Event::default();
    let lean_of = |s: &Shape| {
        let (sp, t, b) = s.lean?;
        let at = |r: R| &line[r.0 as usize..r.1 as usize];
        Some(Seen {
            lean: Lean {
                level: s.level,
                thread: s.thread.is_some(),
                spans: at(sp),
                target: at(t),
                body: at(b),
                text: line,
            },
            cut: s.cut,
            id: s.id,
        })
    };
    with_shape(
        line,
        &mut ev,
        |s, _| lean_of(s),
        |s, ev| match s {
            Some(s) => lean_of(s),
            // Not kept: the event was read all the same.
            None => lean::scan(line).map(|lean| Seen {
                lean,
                cut: ev.cut,
                id: 0,
            }),
        },
    )
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let mut b = Event::default();
            assert!(super::super::plain::proxy_plain(l, &mut b).is_some());
            b.component = super::super::component::of(&b);
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{l}");
        }
    }
}
