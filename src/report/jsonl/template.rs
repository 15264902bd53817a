//! `parse` records of line shapes: the record of a shape's first line,
//! kept as a template, and each later line's record written from it.

use super::{escaped, event, status_part, string, sz_part, Hole, Obj, Recorder};
use crate::parse::component::of_target;
use crate::parse::learnt::Generations;
use crate::parse::mask::padding;
use crate::parse::template::Seen;
use crate::parse::{Component, Event, Producer};
use std::cell::RefCell;

/// The record of a line shape's lines ([`template`](crate::parse::template)):
/// a line's record is these bytes with each hole filled from the line, and
/// the line's digits where its first line's are.
struct Template {
    bytes: Box<[u8]>,
    /// Where each hole is in `bytes`, but for the slices of the line that
    /// need no escape: of those, a later line differs only in its digits.
    holes: Box<[(u32, u32, Hole)]>,
    /// Where runs of the line's digits are in `bytes`, from where in the
    /// line, and how many (every line of a shape has its digits where its
    /// first line has them, or pads its uptime).
    digits: Box<[(u32, u16, u16)]>,
}

/// Templates kept per thread in each of two generations (each about a
/// KiB, so at most 4 MiB a thread).
const MAX_TEMPLATES: usize = 2048;

thread_local! {
    /// By shape id; `None` for a shape whose record has no template.
    static TEMPLATES: RefCell<Generations<Option<Template>>> =
        const { RefCell::new(Generations::new(MAX_TEMPLATES, usize::MAX)) };
}

/// An event's record; the first of a shape's also makes its template.
pub(super) fn write_event(out: &mut Vec<u8>, source: &str, e: &Event<'_>) {
    // Its parts are the same for every line of its shape but where they
    // are the line's own, and its component is its target's.
    let fits = e.shape != 0
        && e.target.as_deref() != Some("")
        && e.component == shape_component(e.producer, e.target.as_deref())
        && e.lines == 1
        && e.continuation.is_none()
        && e.metric.is_none()
        && !e.truncated_head
        && e.wrapper.timestamp.is_none()
        && e.wrapper.pod.is_none()
        && e.wrapper.container.is_none()
        && e.wrapper.lead.is_none();
    if !fits || TEMPLATES.with(|t| t.borrow_mut().find(e.shape, |_| true, |_| 0).is_some()) {
        event(out, source, e, None);
        out.push(b'\n');
        return;
    }
    let start = out.len();
    let mut rec = Recorder {
        line: &e.text,
        holes: Vec::new(),
        spoilt: false,
    };
    event(out, source, e, Some(&mut rec));
    out.push(b'\n');
    let template = (!rec.spoilt)
        .then(|| Template::new(&out[start..], start, &rec))
        .flatten();
    TEMPLATES.with(|t| {
        t.borrow_mut().keep(e.shape, template, 0);
    });
}

impl Template {
    /// The template of a record written as `bytes`, from `start` of the
    /// output `rec` noted holes in.
    fn new(bytes: &[u8], start: usize, rec: &Recorder<'_>) -> Option<Template> {
        let at = |p: usize| u32::try_from(p - start).ok();
        let line = rec.line.as_bytes();
        // A later line may have digits where this one pads its uptime.
        let pad = padding(line);
        let (mut holes, mut digits) = (Vec::new(), Vec::<(u32, u16, u16)>::new());
        for &(s, e, h) in &rec.holes {
            let Hole::Slice {
                from,
                len,
                esc: false,
            } = h
            else {
                holes.push((at(s)?, at(e)?, h));
                continue;
            };
            for i in 0..len {
                let l = from + i;
                let padded = pad.is_some_and(|(f, t)| (f..t).contains(&usize::from(l)));
                if !line[usize::from(l)].is_ascii_digit() && !padded {
                    continue;
                }
                let o = at(s + usize::from(i))?;
                match digits.last_mut() {
                    Some(run) if run.0 + u32::from(run.2) == o && run.1 + run.2 == l => run.2 += 1,
                    _ => digits.push((o, l, 1)),
                }
            }
        }
        Some(Template {
            bytes: bytes.into(),
            holes: holes.into(),
            digits: digits.into(),
        })
    }
}

/// Appends the record of line `n`, read through its shape, from the
/// shape's template: false, with nothing written, when there is none yet
/// or the line is not read through its shape.
pub fn write_seen(out: &mut Vec<u8>, source: &str, n: u64, seen: &Seen<'_>) -> bool {
    let Some(uptime) = seen.uptime() else {
        return false;
    };
    TEMPLATES.with(|t| {
        let t = t.borrow();
        let Some(Some(template)) = t.young(seen.id) else {
            return false;
        };
        let line = seen.line;
        let at = |from: u16, len: u16| {
            let from = usize::from(from);
            line.get(from..from + usize::from(len)).unwrap_or("")
        };
        let mut o = Obj {
            out,
            first: false,
            rec: None,
        };
        // The bytes up to `to`, with the line's digits among them.
        let mut digits = template.digits.iter().peekable();
        let mut copy = |out: &mut Vec<u8>, from: usize, to: usize| {
            // Earlier holes may have been shorter than the template's: the
            // run is placed by where it starts, not by a shift.
            let at = out.len();
            out.extend_from_slice(&template.bytes[from..to]);
            while let Some(&(o, l, k)) = digits.next_if(|d| (d.0 as usize) < to) {
                let (o, l, k) = (at + (o as usize - from), usize::from(l), usize::from(k));
                put(&mut out[o..o + k], &line.as_bytes()[l..l + k]);
            }
        };
        let mut pos = 0;
        for &(start, end, hole) in &template.holes {
            copy(o.out, pos, start as usize);
            match hole {
                Hole::Slice { from, len, .. } => escaped(o.out, at(from, len).as_bytes()),
                Hole::Source => string(o.out, source),
                Hole::Component => {
                    let target = Some(seen.target).filter(|t| !t.is_empty());
                    string(o.out, shape_component(seen.producer, target).as_str());
                }
                Hole::Line => o.num("line", n),
                Hole::Uptime => {
                    if let Some(u) = uptime {
                        o.float("uptime", u);
                    }
                }
                Hole::Status { from, len } => status_part(&mut o, Some(at(from, len))),
                Hole::Sz { from, len } => sz_part(&mut o, Some(at(from, len))),
            }
            pos = end as usize;
        }
        copy(o.out, pos, template.bytes.len());
        true
    })
}

/// Copies `src` over `dst`, of the same length. A run of digits is a
/// few bytes, which a call to `memcpy` took longer to choose how to copy
/// than to copy (a line's dozens of runs were a sixth of `parse`'s time):
/// up to 16 bytes are copied as two words of a fixed size, which may
/// overlap.
#[inline]
fn put(dst: &mut [u8], src: &[u8]) {
    let n = dst.len();
    macro_rules! ends {
        ($w:literal) => {{
            dst[..$w].copy_from_slice(&src[..$w]);
            dst[n - $w..].copy_from_slice(&src[n - $w..]);
        }};
    }
    match n {
        0 => {}
        1 => dst[0] = src[0],
        2..=3 => ends!(2),
        4..=7 => ends!(4),
        8..=16 => ends!(8),
        _ => dst.copy_from_slice(src),
    }
}

/// The component of a line read by a shape, from its target.
fn shape_component(producer: Producer, target: Option<&str>) -> Component {
    of_target(producer, target).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    /// Every length is copied whole, and nothing beside it is touched.
    #[test]
    fn put_copies_every_length_exactly() {
        let src: Vec<u8> = (0..40u8).map(|b| b'0' + b % 10).collect();
        for n in 0..=src.len() {
            for at in [0, 1, 5] {
                let mut out = vec![b'.'; n + 8];
                super::put(&mut out[at..at + n], &src[..n]);
                assert_eq!(&out[at..at + n], &src[..n], "{n} bytes at {at}");
                assert!(out[..at].iter().chain(&out[at + n..]).all(|b| *b == b'.'));
            }
        }
    }
}
