//! Quiet lines: lines below WARN that hold none of the rules' literals, no
//! era wording and nothing that bounds the era or names an alias. Their
//! events would match no rule and add no warning, alias or era cue beyond
//! their format's, so explain counts them without tokenizing them.
//!
//! What makes a line quiet is decided once per line shape
//! ([`template`](crate::parse::template)), from the event of the first line
//! of the shape, where it reads no digit; per line where it does: where the
//! shape's masked text could hold a literal with a digit (`status=431`),
//! each line's digits are compared with the literal's.

use super::fold::Folded;
use super::group::tag_key;
use super::haystack::{full_text, literal_pieces, literal_text};
use super::lookback::ConnShape;
use super::matching::{conditions_but_fields, Engine};
use super::schema::Rule;
use super::stats::era_text;
use super::TagKey;
use crate::parse::component::{self, of_target};
use crate::parse::era::{format_cue, wording_bounds, EraCue};
use crate::parse::learnt::{Generations, Learnt};
use crate::parse::template::{self, Seen};
use crate::parse::{Event, Level};
use aho_corasick::{AhoCorasickBuilder, AhoCorasickKind};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Shapes' facts kept per thread before starting over: seven eighths of
/// a power of two, as [`template`](crate::parse::template)'s generations.
const MAX_FACTS: usize = 14336;

/// The searches that tell quiet lines, made with an engine.
pub struct Quiet {
    /// Tells which engine a shape's facts were found with.
    pub(super) id: u64,
    /// The literals without a digit (in any case): a text without any
    /// holds none of them, whatever its digits.
    words: Folded,
    /// The literals with a digit, their digits masked, the rules' and then
    /// the era cues' (each looked for in its own text): a shape whose masked
    /// text holds none has no line that holds one of them.
    digits: [Option<Folded>; 2],
    /// How many of the literals with a digit are the rules'.
    rules_digits: usize,
    /// The digits of each literal with a digit, in the same order: where
    /// the first is in the literal, then where each is from it and which.
    pub(super) digit_places: Vec<(usize, Vec<(u16, u8)>)>,
    /// Which of the literals given each literal with a digit is.
    pub(super) digit_of: Vec<usize>,
}

/// The digits of `literal`: where the first is, then where each is from
/// it and which.
fn places(literal: &str) -> (usize, Vec<(u16, u8)>) {
    let b = literal.as_bytes();
    let first = b.iter().position(u8::is_ascii_digit).unwrap_or(0);
    let places = (first..b.len())
        .filter(|i| b[*i].is_ascii_digit())
        .map(|i| ((i - first) as u16, b[i]))
        .collect();
    (first, places)
}

fn masked(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_digit() { '0' } else { c })
        .collect()
}

impl Quiet {
    /// For `literals`: the rules' and the era cues' wording that a quiet
    /// line could hold, each with its pattern's number (the rules' are
    /// those below `rule_patterns`).
    pub fn new<'a>(
        literals: impl Iterator<Item = (usize, &'a str)>,
        rule_patterns: usize,
    ) -> Quiet {
        static IDS: AtomicU64 = AtomicU64::new(1);
        let (digits, words): (Vec<_>, Vec<_>) =
            literals.partition(|(_, l)| l.bytes().any(|b| b.is_ascii_digit()));
        // Searched once per shape, not per line: automata quick to build
        // rather than quick to run.
        let build = |pats: Vec<String>| {
            let mut b = AhoCorasickBuilder::new();
            Folded::new(b.kind(Some(AhoCorasickKind::ContiguousNFA)), pats)
        };
        // The literals with a digit are few, and masked texts are full of
        // `0`, which their prefilter took for a rare byte: a small DFA
        // without one runs several times faster.
        let digits_dfa = |pats: Vec<String>| {
            let mut b = AhoCorasickBuilder::new();
            Folded::new(b.kind(Some(AhoCorasickKind::DFA)).prefilter(false), pats)
        };
        let rules_digits = digits.partition_point(|(i, _)| *i < rule_patterns);
        let (rules, eras) = digits.split_at(rules_digits);
        let dfa = |ds: &[(usize, &str)]| {
            (!ds.is_empty()).then(|| digits_dfa(ds.iter().map(|(_, d)| masked(d)).collect()))
        };
        Quiet {
            id: IDS.fetch_add(1, Ordering::Relaxed),
            words: build(words.iter().map(|(_, w)| w.to_string()).collect()),
            digits: [dfa(rules), dfa(eras)],
            rules_digits,
            digit_places: digits.iter().map(|(_, d)| places(d)).collect(),
            digit_of: digits.iter().map(|(i, _)| *i).collect(),
        }
    }
}

/// A text literals are looked for in, its digits masked, with where in
/// the line each of its pieces starts (joins are not in it, and hold no
/// digit).
pub(super) struct Masked {
    pub text: Vec<u8>,
    /// Where each piece starts in `text`, and in the line.
    pieces: Vec<(u32, Option<u32>)>,
}

impl Masked {
    /// The text made of the `pieces` of `line` (and of what joins them).
    pub fn of<'p>(line: &str, pieces: impl FnOnce(&mut dyn FnMut(&'p str))) -> Masked {
        // The pieces are mostly the line's, and a JSON line's are a dozen
        // or more: grown a piece at a time, these were reallocated some six
        // times a shape.
        let mut m = Masked {
            text: Vec::with_capacity(line.len()),
            pieces: Vec::with_capacity(16),
        };
        pieces(&mut |p: &str| {
            let start = offset_in(line, p).and_then(|s| u32::try_from(s).ok());
            m.pieces.push((m.text.len() as u32, start));
            let masked = p.bytes().map(|b| if b.is_ascii_digit() { b'0' } else { b });
            m.text.extend(masked);
        });
        m
    }

    /// Where in the line byte `i` of the text is, when it is in one.
    fn at(&self, i: usize) -> Option<u32> {
        let i = i as u32;
        let p = self
            .pieces
            .partition_point(|(s, _)| *s <= i)
            .checked_sub(1)?;
        let (s, line) = self.pieces[p];
        line.map(|l| l + (i - s))
    }
}

impl Quiet {
    /// Each place in `m` where a rule's literal with a digit (an era
    /// cue's, with `era`) could be: which literal, where in `m`, and where
    /// in the line its first digit is (`None` when its digits are not as
    /// far apart in the line: a join or a copy is between them).
    pub(super) fn spots<'m>(
        &'m self,
        m: &'m Masked,
        era: bool,
    ) -> impl Iterator<Item = (usize, aho_corasick::Match, Option<u32>)> + 'm {
        let found = self.digits[usize::from(era)]
            .as_ref()
            .map(|d| d.overlapping(&m.text));
        let first = if era { self.rules_digits } else { 0 };
        found.into_iter().flatten().map(move |found| {
            let p = first + found.pattern().as_usize();
            let (first, places) = &self.digit_places[p];
            let base = found.start() + first;
            let at = m.at(base).filter(|s| {
                places
                    .iter()
                    .all(|(rel, _)| m.at(base + *rel as usize) == Some(s + u32::from(*rel)))
            });
            (p, found, at)
        })
    }

    /// Does `line` hold literal `p` (with a digit) where its first digit
    /// is at `at`, given that its masked text does?
    pub(super) fn holds(&self, line: &[u8], at: u32, p: u16) -> bool {
        self.digit_places[usize::from(p)]
            .1
            .iter()
            .all(|&(rel, d)| line.get(at as usize + usize::from(rel)) == Some(&d))
    }
}

/// A tag that each line of a shape may set: a rule that only tags its
/// connection (`Peeked bytes from TCP stream` with `sz=0`), whose every
/// condition but its fields' values answers the same for each line.
struct LeanTag {
    bit: u32,
    /// Where the line names the connection it tags.
    key: (u32, u32),
    fields: Box<[FieldIs]>,
}

/// A field a tagging rule reads: where it is, the value it asks for, and
/// whether it asks for that value (`fields`) or another (`fields_not`).
struct FieldIs {
    at: (u32, u32),
    value: Box<str>,
    is: bool,
}

/// What a line shape's lines are, to explain.
struct Facts {
    engine: u64,
    /// Below WARN, no literal without a digit but tagging rules', no era
    /// wording, no span or wording that bounds the era, no alias.
    quiet: bool,
    /// The tags its lines set, in the order the rules are tried.
    tags: Box<[LeanTag]>,
    /// Where a literal with a digit could be, as where in the line its
    /// first digit would be and which literal: each line's digits decide.
    digits: Box<[(u32, u16)]>,
    conn: ConnShape,
    format: Shaped,
}

/// A shape's lines' format: its first line's, and that line's target when
/// it holds a digit (`h2`), for only lines of that target have it (the
/// same shape's `h7` is not the proxy's crate).
type Shaped = (Format, Option<Box<str>>);

/// What a quiet line's format adds to the counts: whether its target is
/// Linkerd's, and the era its producer, head and target suggest.
#[derive(Debug, Clone, Copy)]
pub(super) struct Format {
    pub linkerd: bool,
    pub cue: EraCue,
}

impl Format {
    fn of(seen: &Seen<'_>) -> Format {
        let target = Some(seen.target).filter(|t| !t.is_empty());
        Format {
            linkerd: of_target(seen.producer, target).is_some_and(|c| c.is_linkerd()),
            cue: format_cue(seen.producer, seen.thread, seen.timestamp, seen.target),
        }
    }

    fn of_shape(seen: &Seen<'_>) -> Shaped {
        let digit = seen.target.bytes().any(|b| b.is_ascii_digit());
        (Format::of(seen), digit.then(|| seen.target.into()))
    }

    /// The format of `seen`, a line of the shape `shaped` is of.
    fn of_line(shaped: &Shaped, seen: &Seen<'_>) -> Format {
        match &shaped.1 {
            Some(target) if **target != *seen.target => Format::of(seen),
            _ => shaped.0,
        }
    }
}

impl Facts {
    /// Is a line of the shape quiet? A literal with a digit is where the
    /// shape could hold one when the line's digits there are the literal's.
    fn quiet(&self, line: &[u8], q: &Quiet) -> bool {
        self.quiet && !self.digits.iter().any(|&(at, p)| q.holds(line, at, p))
    }
}

impl Facts {
    /// Tells `tag` of each tag a line of the shape sets: its bit and the
    /// connection it names.
    fn tag<'l>(&self, line: &'l str, tag: &mut impl FnMut(u32, &'l str)) {
        let at = |(a, b): (u32, u32)| line.get(a as usize..b as usize);
        for t in &self.tags {
            if t.fields
                .iter()
                .all(|f| (at(f.at) == Some(&f.value)) == f.is)
            {
                if let Some(key) = at(t.key) {
                    tag(t.bit, key);
                }
            }
        }
    }
}

/// Where `part` is in `line`, as a byte range, when it is a slice of it.
fn range_in(line: &str, part: &str) -> Option<(u32, u32)> {
    let s = offset_in(line, part)?;
    Some((u32::try_from(s).ok()?, u32::try_from(s + part.len()).ok()?))
}

impl Engine {
    /// Is this line quiet? Then what its shape says of its connection, and
    /// what its format adds to the counts; `tag` is told of each tag the
    /// line sets.
    pub(super) fn quiet<'l>(
        &self,
        seen: &Seen<'l>,
        fresh: Option<&Event<'_>>,
        tag: &mut impl FnMut(u32, &'l str),
    ) -> Option<(ConnShape, Format)> {
        thread_local! {
            static FACTS: RefCell<Generations<Arc<Facts>>> =
                const { RefCell::new(Generations::new(MAX_FACTS, usize::MAX)) };
        }
        /// Facts some thread found, for the others.
        static SHARED: Learnt<Facts> = Learnt::new(MAX_FACTS);
        let id = self.quiet.id;
        let ours = |f: &Facts| f.engine == id;
        let line = seen.line.as_bytes();
        let mut answer = |f: &Facts| {
            if !f.quiet(line, &self.quiet) {
                return None;
            }
            f.tag(seen.line, tag);
            Some((f.conn, Format::of_line(&f.format, seen)))
        };
        // What this thread knows is read in place: the shared count of an
        // `Arc` is not touched for every line.
        let known = FACTS.with(|f| {
            let f = f.borrow();
            f.young(seen.id).filter(|f| ours(f)).map(|f| answer(f))
        });
        if let Some(known) = known {
            return known;
        }
        let old = FACTS.with(|f| {
            f.borrow_mut()
                .find(seen.id, |f| ours(f), |_| 0)
                .map(|f| answer(f))
        });
        if let Some(known) = old {
            return known;
        }
        let f = SHARED.get(seen.id, ours).unwrap_or_else(|| {
            let mut ev = Event::default();
            let f = if let Some(fresh) = fresh {
                self.find(fresh, seen)
            } else if template::read(seen.line, &mut ev) {
                self.find(&ev, seen)
            } else {
                Facts {
                    engine: id,
                    quiet: false,
                    tags: Box::default(),
                    digits: Box::default(),
                    conn: ConnShape::UNKNOWN,
                    format: Format::of_shape(seen),
                }
            };
            SHARED.put(seen.id, f, ours)
        });
        let known = answer(&f);
        FACTS.with(|facts| {
            facts.borrow_mut().keep(seen.id, f, 0);
        });
        known
    }

    /// A shape's facts, from the event of one of its lines: none of it
    /// reads a digit, but for where `digits` says.
    fn find(&self, ev: &Event<'_>, seen: &Seen<'_>) -> Facts {
        let line = seen.line;
        let full = full_text(ev);
        let body = literal_text(ev, &full);
        let q = &self.quiet;
        let tags = self.lean_tags(ev, line, &full, body);
        let mut quiet = ev.level.is_none_or(|l| l < Level::Warn)
            && tags.is_some()
            && self.era_cues(era_text(ev)).next().is_none()
            && !wording_bounds(ev)
            && !ev.has_span("service");
        let mut digits = Vec::new();
        if quiet {
            // A literal with a digit counts only where its search would
            // find it: a rule's in the text the rules read, on its word
            // edges, for a rule that may match the shape's lines; an era
            // cue's in the era text. (A bare `431` is in every number of
            // three digits or more, and a JSON line is full of them.)
            let rules_text = Masked::of(line, |each| literal_pieces(ev, each));
            let era = Masked::of(line, |each| each(era_text(ev)));
            let for_rules = q.spots(&rules_text, false).filter(|(p, found, _)| {
                let pattern = q.digit_of[*p];
                self.on_edges(pattern, &rules_text.text, found.start(), found.end())
                    && self.may_match_shape(self.pattern_rule[pattern], ev, &full)
            });
            let for_era = q.spots(&era, true);
            for (p, _, at) in for_rules.chain(for_era) {
                match (at, u16::try_from(p)) {
                    (Some(at), Ok(p)) => digits.push((at, p)),
                    _ => quiet = false,
                }
            }
            digits.sort_unstable();
            digits.dedup();
        }
        Facts {
            engine: q.id,
            quiet,
            tags: tags.unwrap_or_default().into(),
            digits: digits.into(),
            conn: ConnShape::of(ev, line),
            format: Format::of_shape(seen),
        }
    }

    /// The tags a shape's lines set, from the event of one of them: none
    /// when its text holds no literal without a digit; `None` when one is
    /// a rule's that may do more than tag, or whose answer may turn on a
    /// line's digits. The rules' literals with a digit are left to
    /// `digits`.
    fn lean_tags(
        &self,
        ev: &Event<'_>,
        line: &str,
        full: &str,
        body: &str,
    ) -> Option<Vec<LeanTag>> {
        if !self.quiet.words.is_match(body) {
            return Some(Vec::new());
        }
        let mut tags = Vec::new();
        for ri in self.worded_rules(body) {
            tags.extend(self.lean_tag(ri, ev, line, full)?);
        }
        Some(tags)
    }

    /// What rule `ri`, a candidate for a line of `ev`'s shape, does for
    /// each of its lines: `Some(None)` nothing, `Some(Some(tag))` set the
    /// tag when the line's fields hold, `None` when that cannot be told
    /// from the shape.
    fn lean_tag(
        &self,
        ri: usize,
        ev: &Event<'_>,
        line: &str,
        full: &str,
    ) -> Option<Option<LeanTag>> {
        if !self.may_match_shape(ri, ev, full) {
            return Some(None);
        }
        let r = &self.rules[ri];
        let digit = |s: &String| s.bytes().any(|b| b.is_ascii_digit());
        let reads_digits = !self.checks(ri).same_for_shape()
            || event_reads_digits(r, ev)
            || r.fields.keys().chain(r.fields_not.keys()).any(digit);
        if r.id.is_some() || r.known.is_some() || r.tag_key != TagKey::Client || reads_digits {
            return None;
        }
        let tag = r.tag.as_ref()?;
        if r.unparsed || !conditions_but_fields(r, ev) {
            return Some(None);
        }
        let asked = r.fields.iter().map(|(k, v)| (k, v, true));
        let mut fields = Vec::new();
        for (k, v, is) in asked.chain(r.fields_not.iter().map(|(k, v)| (k, v, false))) {
            let Some(x) = ev.field(k) else {
                return Some(None);
            };
            fields.push(FieldIs {
                at: range_in(line, x)?,
                value: v.as_str().into(),
                is,
            });
        }
        let Some(key) = tag_key(r.tag_key, ev) else {
            return Some(None);
        };
        Some(Some(LeanTag {
            bit: *self.tag_bits.get(tag)?,
            key: range_in(line, key)?,
            fields: fields.into(),
        }))
    }

    /// May rule `ri` match a line of `ev`'s shape (`full` its text)? Not
    /// when its conditions on the event, reading no digit, fail for `ev`
    /// (a rule for a reporter's words, for another component, from INFO up
    /// when the shape's lines are DEBUG), nor when its checks of the text
    /// that read no digit fail (`code: ` in an h2 `GoAway { error_code: …`
    /// line, for a rule on gRPC status codes): they fail for every line of
    /// the shape.
    fn may_match_shape(&self, ri: usize, ev: &Event<'_>, full: &str) -> bool {
        let r = &self.rules[ri];
        (event_reads_digits(r, ev) || conditions_but_fields(r, ev))
            && !self.checks(ri).fail_shape(full)
    }
}

/// Can rule `r`'s conditions on the event (but its fields') answer one
/// line of a shape and not another, as `ev`'s? Its ports and uptimes are
/// the lines' digits, and so are targets and spans named with a digit; the
/// rest (producer, level, direction, targets and spans without a digit,
/// which are prefixes and names, and most often the component) is the
/// same for every line of a shape.
fn event_reads_digits(r: &Rule, ev: &Event<'_>) -> bool {
    let digit = |s: &String| s.bytes().any(|b| b.is_ascii_digit());
    !r.ports.is_empty()
        || !r.port_roles.is_empty()
        || r.max_uptime.is_some()
        || r.min_uptime.is_some()
        || r.targets
            .iter()
            .chain(&r.spans)
            .chain(&r.not_spans)
            .any(digit)
        || !component::same_for_shape(ev.producer, ev.target())
}

/// Where `part` starts in `line`, when it is a slice of it.
fn offset_in(line: &str, part: &str) -> Option<usize> {
    let (l, p) = (line.as_ptr() as usize, part.as_ptr() as usize);
    (p >= l && p + part.len() <= l + line.len()).then(|| p - l)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(e: &Engine, line: &str) -> Facts {
        let seen = template::seen(line).expect("a line with a shape");
        e.find(&crate::parse::parse_line(line).unwrap(), &seen)
    }

    /// A shape's format is each of its lines' only where their target holds
    /// no digit: where it does, lines of the first line's target have its
    /// format (`linkerd2_app_core`, of proxies up to 2.9), others their own
    /// (`linkerd3_app_core`, of none).
    #[test]
    fn a_format_is_the_shapes_only_where_its_target_has_no_digit() {
        let line = |t: &str| format!("[     1.000000s] DEBUG ThreadId(01) {t}: something happened");
        let serve = line("linkerd_app_core::serve");
        let f = Format::of_shape(&template::seen(&serve).unwrap());
        assert!(f.0.linkerd && f.1.is_none());
        let (two, three) = (
            line("linkerd2_app_core::serve"),
            line("linkerd3_app_core::serve"),
        );
        let (two, three) = (
            template::seen(&two).unwrap(),
            template::seen(&three).unwrap(),
        );
        assert_eq!(two.id, three.id, "one shape");
        let f = Format::of_shape(&two);
        assert_eq!(f.1.as_deref(), Some("linkerd2_app_core::serve"));
        let debug = |f: Format| format!("{f:?}");
        assert_ne!(debug(Format::of(&two)), debug(Format::of(&three)));
        assert_eq!(debug(Format::of_line(&f, &two)), debug(Format::of(&two)));
        assert_eq!(
            debug(Format::of_line(&f, &three)),
            debug(Format::of(&three))
        );
    }

    /// A literal with a digit is a spot where a rule's search would find
    /// it: not a prose rule's bare `431` in a log line, nor `431` inside a
    /// longer number; a rule's `status=431` still is.
    #[test]
    fn a_spot_is_where_a_rules_search_would_find_its_literal() {
        let e = Engine::new(crate::rules::load(&[]).unwrap());
        let spots = |line: &str| {
            let f = facts(&e, line);
            assert!(f.quiet, "{line}");
            f.digits.len()
        };
        let head = "[     1.000431s] DEBUG ThreadId(01) outbound: linkerd_proxy_http::client:";
        assert_eq!(spots(&format!("{head} response sz=431 took=14312ms")), 0);
        assert_eq!(spots(&format!("{head} response status=2000 sz=431")), 0);
        assert_eq!(spots(&format!("{head} response status=200 sz=431")), 1);
    }

    /// A DEBUG line with the wording of a rule read from INFO up (an h2
    /// GOAWAY) is quiet: that rule matches no line of its shape. At INFO
    /// the line is read.
    #[test]
    fn a_rule_that_matches_no_line_of_a_shape_keeps_none_loud() {
        let e = Engine::new(crate::rules::load(&[]).unwrap());
        let line = |level: &str| {
            format!("[     1.000431s] {level} ThreadId(01) outbound: h2::codec::framed_write: send frame=GoAway")
        };
        assert!(facts(&e, &line("DEBUG")).quiet);
        assert!(!facts(&e, &line(" INFO")).quiet);
    }

    /// An h2 GOAWAY's `error_code: ` holds a gRPC status rule's `code: `,
    /// but that rule's regex, which reads no digit, fails for the line: it
    /// keeps none of the shape's lines loud.
    #[test]
    fn a_regex_that_fails_for_a_shape_keeps_none_of_it_loud() {
        let e = Engine::new(crate::rules::load(&[]).unwrap());
        let line = "[     1.000431s] DEBUG ThreadId(01) inbound:accept{client.addr=10.0.0.1:40000}: h2::codec::framed_read: received frame=GoAway { error_code: NO_ERROR, last_stream_id: StreamId(0) }";
        assert!(facts(&e, line).quiet);
    }

    /// An era cue with a digit (a user's) is looked for in a quiet line's
    /// era text, apart from the rules' literals: the line with it is read,
    /// the same line with other digits is quiet.
    #[test]
    fn an_era_cue_with_a_digit_is_a_spot_of_its_own() {
        let mut kb = crate::rules::load(&[]).unwrap();
        kb.eras.push(crate::rules::schema::EraRule {
            text: "pool size 7".into(),
            since: Some("2.14".into()),
            until: None,
        });
        let e = Engine::new(kb);
        let line = |n: u8| {
            format!("[     1.000431s] DEBUG ThreadId(01) outbound: linkerd_proxy_pool: pool size {n} ready")
        };
        let f = facts(&e, &line(9));
        assert_eq!(f.digits.len(), 1);
        assert!(f.quiet(line(9).as_bytes(), &e.quiet));
        assert!(!f.quiet(line(7).as_bytes(), &e.quiet));
    }
}
