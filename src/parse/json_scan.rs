//! A JSON value read in one pass over its text, every object's members and
//! every array's objects as nodes with their raw text, as serde_json's
//! `RawValue` would hand them back. Reading a line's members first and then
//! the objects a reader looks into (its `fields`, its spans, the objects a
//! pipeline re-nested) read most of a line two or three times; one pass
//! reads each byte once, and refuses exactly what serde_json refuses (a
//! test holds the two to the same answers on edited lines).

use super::event::Str;
use super::json::MAX_DEPTH;
use smallvec::SmallVec;
use std::borrow::Cow;

/// What a node's value is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// An object whose keys are all strings: its members are its nodes.
    Object,
    /// An object with a key that is no string (an escaped lone surrogate,
    /// which serde_json refuses as a key): a reader keeps it as text.
    Text,
    Array,
    Scalar,
}

/// One value: a member's (its key decoded, borrowed unless escaped), or an
/// array's item (no key).
pub struct Node<'a> {
    pub key: Str<'a>,
    pub raw: &'a str,
    pub kind: Kind,
    /// A string with an escape.
    pub escaped: bool,
    /// One past the last node inside it: nodes are in the order their text
    /// starts, so what is inside a value follows it.
    end: u32,
}

/// A value and everything inside it; node 0 is the value.
pub struct Tree<'a>(Vec<Node<'a>>);

impl<'a> Tree<'a> {
    pub fn node(&self, i: usize) -> &Node<'a> {
        &self.0[i]
    }

    /// The nodes directly inside node `i`, by index.
    pub fn inside(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let end = self.0[i].end as usize;
        let within = move |j: usize| Some(j).filter(|&j| j < end);
        std::iter::successors(within(i + 1), move |&j| within(self.0[j].end as usize))
    }

    /// The first member of object `i` named `key`.
    pub fn get(&self, i: usize, key: &str) -> Option<usize> {
        self.inside(i).find(|&j| self.0[j].key == key)
    }
}

/// How deep a value's nodes go (the value itself at depth 0): a reader
/// looks at a span's members (depth 3: `spans`, the span, its member) and
/// flattens the objects among them `MAX_DEPTH` levels down.
const RECORDED: usize = 3 + MAX_DEPTH + 1;

/// The object `s` is (whitespace around it allowed): `None` when `s` is not
/// one JSON object, or one of its own keys is no string.
pub fn object(s: &str) -> Option<Tree<'_>> {
    whole(s).filter(|t| t.0[0].kind == Kind::Object)
}

/// The value `s` is, when it is all of `s` but whitespace.
fn whole(s: &str) -> Option<Tree<'_>> {
    let mut p = Scan { s, i: 0 };
    let t = p.tree()?;
    p.ws();
    (p.i == s.len()).then_some(t)
}

struct Scan<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn ws(&mut self) {
        let b = self.s.as_bytes();
        while matches!(b.get(self.i), Some(b' ' | b'\n' | b'\t' | b'\r')) {
            self.i += 1;
        }
    }

    /// A member's key and its colon. The key of an `object` that is a
    /// node is decoded when it has escapes; one that makes no string (a
    /// lone surrogate) makes the object `Text`, and is kept as written.
    fn key(&mut self, object: Option<&mut Node<'a>>) -> Option<Str<'a>> {
        let start = self.i;
        let escaped = self.string()?;
        let text = &self.s[start..self.i];
        self.ws();
        self.eat(b':')?;
        let inner = &text[1..text.len() - 1];
        match object {
            Some(object) if escaped => Some(match serde_json::from_str::<String>(text) {
                Ok(k) => Cow::Owned(k),
                Err(_) => {
                    object.kind = Kind::Text;
                    Cow::Borrowed(inner)
                }
            }),
            _ => Some(Cow::Borrowed(inner)),
        }
    }

    /// A string from its opening quote: whether it has an escape.
    fn string(&mut self) -> Option<bool> {
        self.eat(b'"')?;
        let b = self.s.as_bytes();
        let mut escaped = false;
        loop {
            self.i += plain_run(&b[self.i..]);
            match *b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some(escaped);
                }
                b'\\' => {
                    escaped = true;
                    self.i += 1;
                    match *b.get(self.i)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 1,
                        b'u' => {
                            let hex = b.get(self.i + 1..self.i + 5)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.i += 5;
                        }
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                _ => self.i += 1,
            }
        }
    }

    fn digits(&mut self) -> usize {
        let b = self.s.as_bytes();
        let start = self.i;
        while b.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        self.i - start
    }

    /// A number: `-`, one `0` or digits not led by one, a fraction with a
    /// digit, an exponent with one.
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => {
                self.i += 1;
                if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    return None;
                }
            }
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    fn word(&mut self, w: &[u8]) -> Option<()> {
        let b = self.s.as_bytes();
        (b.get(self.i..self.i + w.len())? == w).then(|| self.i += w.len())
    }

    /// One value, and the values inside it a reader may look at, in the
    /// order they start: an object's members, an array's objects, no
    /// deeper than `RECORDED`. The rest is read for its syntax only. The
    /// objects and arrays it is inside are kept on stacks, not in calls: a
    /// line decides how deep they go.
    fn tree(&mut self) -> Option<Tree<'a>> {
        let mut nodes: Vec<Node<'a>> = Vec::with_capacity(32);
        // The open objects and arrays that are nodes (their index, where
        // their text starts), and the brackets of those inside them that
        // are not.
        let mut open: SmallVec<[(usize, usize); RECORDED]> = SmallVec::new();
        let mut unrecorded: SmallVec<[u8; 16]> = SmallVec::new();
        let mut key: Str<'a> = Cow::Borrowed("");
        loop {
            self.ws();
            let (at, start) = (nodes.len(), self.i);
            let c = self.peek()?;
            let mut escaped = false;
            let record = unrecorded.is_empty()
                && open.last().is_none_or(|&(o, _)| {
                    open.len() < RECORDED && (nodes[o].kind != Kind::Array || c == b'{')
                });
            let kind = match c {
                b'{' => Kind::Object,
                b'[' => Kind::Array,
                b'"' => {
                    escaped = self.string()?;
                    Kind::Scalar
                }
                b'-' | b'0'..=b'9' => self.number().map(|()| Kind::Scalar)?,
                b't' => self.word(b"true").map(|()| Kind::Scalar)?,
                b'f' => self.word(b"false").map(|()| Kind::Scalar)?,
                b'n' => self.word(b"null").map(|()| Kind::Scalar)?,
                _ => return None,
            };
            let k = std::mem::take(&mut key);
            if record {
                let raw = &self.s[start..self.i];
                let end = (at + 1) as u32;
                nodes.push(Node {
                    key: k,
                    raw,
                    kind,
                    escaped,
                    end,
                });
            }
            if kind != Kind::Scalar {
                self.i += 1;
                self.ws();
                if self.peek()? != if c == b'{' { b'}' } else { b']' } {
                    if record {
                        open.push((at, start));
                    } else {
                        unrecorded.push(c);
                    }
                    if c == b'{' {
                        key = self.key(nodes.get_mut(at).filter(|_| record))?;
                    }
                    continue;
                }
                self.i += 1;
                if record {
                    nodes[at].raw = &self.s[start..self.i];
                }
            }
            // A value ended: it closes what it ends, or a comma leads to
            // the next.
            loop {
                let (bracket, node) = match (unrecorded.last(), open.last()) {
                    (Some(&c), _) => (c, None),
                    (None, Some(&(o, start))) => {
                        let c = if nodes[o].kind == Kind::Array {
                            b'['
                        } else {
                            b'{'
                        };
                        (c, Some((o, start)))
                    }
                    (None, None) => return Some(Tree(nodes)),
                };
                self.ws();
                match (self.peek()?, bracket) {
                    (b',', _) => {
                        self.i += 1;
                        if bracket == b'{' {
                            self.ws();
                            key = self.key(node.map(|(o, _)| &mut nodes[o]))?;
                        }
                        break;
                    }
                    (b'}', b'{') | (b']', b'[') => self.i += 1,
                    _ => return None,
                }
                match node {
                    Some((o, start)) => {
                        nodes[o].raw = &self.s[start..self.i];
                        nodes[o].end = nodes.len() as u32;
                        open.pop();
                    }
                    None => {
                        unrecorded.pop();
                    }
                }
            }
        }
    }
}

/// How many bytes `b` starts with that are in a string as they are:
/// neither `"`, `\` nor a control character. Eight at a time, as
/// serde_json does: most of a line is inside strings.
fn plain_run(b: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    // The high bit of each byte that is zero (of each below `n`, with
    // `n * ONES`); above the lowest, a byte may be marked that is not.
    let below = |x: u64, n: u64| x.wrapping_sub(n) & !x & HIGH;
    let mut i = 0;
    while let Some(w) = b.get(i..i + 8) {
        let v = u64::from_le_bytes(w.try_into().expect("eight bytes"));
        let hit = below(v ^ (ONES * u64::from(b'"')), ONES)
            | below(v ^ (ONES * u64::from(b'\\')), ONES)
            | below(v, ONES * 0x20);
        if hit != 0 {
            return i + (hit.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + b[i..]
        .iter()
        .take_while(|c| !matches!(c, b'"' | b'\\' | 0..=0x1f))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::value::RawValue;

    /// What serde_json makes of `s` as an object: its members, values raw.
    fn by_serde(s: &str) -> Option<Vec<(String, String)>> {
        let raw: Vec<(String, &RawValue)> = serde_json::from_str::<OrderedMembers>(s).ok()?.0;
        Some(
            raw.into_iter()
                .map(|(k, v)| (k, v.get().to_string()))
                .collect(),
        )
    }

    struct OrderedMembers<'a>(Vec<(String, &'a RawValue)>);

    impl<'de> serde::Deserialize<'de> for OrderedMembers<'de> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = OrderedMembers<'de>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut m: A,
                ) -> Result<Self::Value, A::Error> {
                    let mut out = Vec::new();
                    while let Some(k) = m.next_key::<String>()? {
                        out.push((k, m.next_value()?));
                    }
                    Ok(OrderedMembers(out))
                }
            }
            d.deserialize_map(V)
        }
    }

    /// What the tree holds of node `i`'s members or items.
    fn inside(t: &Tree, i: usize) -> Vec<(String, String)> {
        t.inside(i)
            .map(|j| (t.node(j).key.to_string(), t.node(j).raw.to_string()))
            .collect()
    }

    fn ours(s: &str) -> Option<Vec<(String, String)>> {
        object(s).map(|t| inside(&t, 0))
    }

    /// Each node of the value `s` is what its text alone reads as: an
    /// object's members as serde_json reads them (none when it refuses a
    /// key), an array's objects.
    fn nodes_read_as_alone(s: &str) {
        let Some(t) = whole(s) else { return };
        for i in 0..t.0.len() {
            let n = t.node(i);
            let alone = whole(n.raw).expect("a value inside reads alone");
            assert_eq!(alone.node(0).kind, n.kind, "{}", n.raw);
            match n.kind {
                Kind::Object => assert_eq!(Some(inside(&t, i)), by_serde(n.raw), "{}", n.raw),
                Kind::Text => assert_eq!(by_serde(n.raw), None, "{}", n.raw),
                Kind::Array => {
                    let objects = array(n.raw).iter().filter(|i| i.starts_with('{')).count();
                    assert_eq!(t.inside(i).count(), objects, "{}", n.raw);
                }
                Kind::Scalar => {
                    assert_eq!(n.end as usize, i + 1);
                    assert_eq!(n.escaped, n.raw.contains('\\'), "{}", n.raw);
                }
            }
        }
    }

    /// The items of the array `s` is, by serde_json.
    fn array(s: &str) -> Vec<String> {
        let items: Vec<&RawValue> = serde_json::from_str(s).unwrap_or_default();
        items.into_iter().map(|i| i.get().to_string()).collect()
    }

    const LINES: &[&str] = &[
        r#"{"timestamp":"[     0.002747s]","level":"WARN","fields":{"message":"Failed to proxy request: HTTP Balancer service in fail-fast","client.addr":"10.42.0.1:41234","log.line":580},"target":"linkerd_app_core::errors","spans":[{"name":"inbound"},{"client.addr":"10.42.0.1:41234","name":"accept"}],"threadId":"ThreadId(1)"}"#,
        r#" {"a" : [1, -0.5e+3, true, false, null, "x\"\u00e9\\", {"b":{}}, []] , "c":"d"} "#,
        r#"{"k\u0041y":1,"k":"v","k":2}"#,
        r#"{"level":"info","msg":"x","time":"2026-01-01T00:00:00Z"}"#,
    ];

    #[test]
    fn reads_what_serde_json_reads() {
        for l in LINES {
            assert_eq!(ours(l), by_serde(l), "{l}");
            assert!(ours(l).is_some(), "{l}");
        }
    }

    #[test]
    fn refuses_what_serde_json_refuses() {
        for l in [
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":1e}"#,
            r#"{"a":-}"#,
            r#"{"a":[1,]}"#,
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{a:1}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12"}"#,
            "{\"a\":\"\t\"}",
            r#"{"\ud800":1}"#,
            r#"{"a":1} x"#,
            r#"{"a":nul}"#,
            r#"[1]"#,
            r#"{"a":{"b":1}"#,
            r#"{"a":[}"#,
        ] {
            assert_eq!(ours(l), None, "{l}");
            assert_eq!(by_serde(l), None, "{l}");
        }
        // A lone surrogate in a value is kept as written: it is text; so is
        // one in a key inside a value.
        assert!(ours(r#"{"a":"\ud800"}"#).is_some());
        assert!(ours(r#"{"a":{"\ud800":1}}"#).is_some());
        assert!(by_serde(r#"{"a":{"\ud800":1}}"#).is_some());
    }

    #[test]
    fn a_plain_run_stops_at_the_first_byte_a_string_reads() {
        for stop in ["\"", "\\", "\u{0}", "\u{1f}", "\n"] {
            for at in 0..20 {
                let text = format!("{}{stop}x\"é{}", "a".repeat(at), "b".repeat(9));
                assert_eq!(plain_run(text.as_bytes()), at, "{text:?}");
            }
        }
        assert_eq!(plain_run("é ~\u{7f}abcdefgh".as_bytes()), 13);
    }

    #[test]
    fn arrays_hold_their_objects() {
        let t = whole(r#" [ {"name":"a"}, 1 ,"s", [{"b":2}], {} ] "#).unwrap();
        assert_eq!(t.node(0).kind, Kind::Array);
        let items: Vec<_> = t.inside(0).map(|i| t.node(i).raw).collect();
        assert_eq!(items, [r#"{"name":"a"}"#, "{}"]);
        assert!(whole("[1,]").is_none());
        assert!(object("[1]").is_none());
    }

    #[test]
    fn nodes_are_what_their_text_reads_as() {
        for l in LINES {
            nodes_read_as_alone(l);
        }
        nodes_read_as_alone(r#"[{"\ud800":1},2,{"name":"x","n":{"\ud800":{}}},[{"a":1}],"s"]"#);
        nodes_read_as_alone(r#"{"a":{"b":{"c":[{"d":{"e":1}}]}},"f":[]}"#);
    }

    /// A reader looks no deeper than `RECORDED`: what is below is read
    /// for its syntax only, and the value that holds it is its raw text.
    #[test]
    fn nodes_stop_where_readers_do() {
        let deep = |n: usize| format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n));
        let line = deep(RECORDED + 3);
        let t = whole(&line).unwrap();
        assert_eq!(t.0.len(), RECORDED);
        let last = t.node(RECORDED - 1);
        assert_eq!((last.kind, last.raw), (Kind::Object, deep(4).as_str()));
        assert!(whole(&line.replace('1', "01")).is_none());
    }

    /// Deep nesting is read without a call per level.
    #[test]
    fn nesting_does_not_recurse() {
        let deep = format!(r#"{{"a":{}{}}}"#, "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(ours(&deep).map(|m| m.len()), Some(1));
        nodes_read_as_alone(&deep);
        assert!(by_serde(&deep).is_some());
    }

    proptest! {
        /// Any edit of a real line (a byte changed, cut short, a piece
        /// repeated) is read, or refused, as serde_json does.
        #[test]
        fn edited_lines_read_as_serde_json_reads(
            line in 0..LINES.len(),
            at in any::<prop::sample::Index>(),
            len in 0usize..6,
            with in prop::sample::select(&[
                "", "\"", "\\", ",", ":", "{", "}", "[", "]", "0", "-", ".", "e", " ", "\u{1}",
                "\\u", "\\ud800", "\"\\ud800\":", "tru", "null", "1.5E-3", "\"a\":1,", "é",
            ][..]),
        ) {
            let l = LINES[line];
            let cuts: Vec<usize> = (0..=l.len()).filter(|i| l.is_char_boundary(*i)).collect();
            let a = cuts[at.index(cuts.len())];
            let b = cuts.iter().copied().find(|c| *c >= a + len).unwrap_or(l.len());
            let edited = format!("{}{}{}", &l[..a], with, &l[b..]);
            prop_assert_eq!(ours(&edited), by_serde(&edited), "{}", edited);
            nodes_read_as_alone(&edited);
        }
    }
}
