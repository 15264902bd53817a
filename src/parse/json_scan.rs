//! A JSON object's members in one pass over its text, each value handed
//! back as its raw text, as serde_json's `RawValue` would be. serde_json
//! read a gateway's JSON line (two levels of objects and an array of
//! spans) three times over, at about 26 000 instructions a line; this
//! reads the line once and the objects a reader looks into (its `fields`,
//! its spans) once more, and refuses exactly what serde_json refuses (a
//! test holds the two to the same answers on edited lines).

use super::event::Str;
use smallvec::SmallVec;
use std::borrow::Cow;

/// An object's members in input order, values as their raw JSON text.
pub struct Members<'a>(pub SmallVec<[(Str<'a>, &'a str); 8]>);

/// The members of the object `s` is (whitespace around it allowed):
/// `None` when `s` is not one JSON object, or a key has an escape that
/// makes no string (a lone surrogate).
pub fn object(s: &str) -> Option<Members<'_>> {
    whole(s, Scan::members)
}

/// The members of each item of the array `s` is that is an object whose
/// keys are strings, in one pass: `None` when `s` is not one JSON array.
/// (What reading it as an array and then each item as an [`object`]
/// would find.)
pub fn objects(s: &str) -> Option<SmallVec<[Members<'_>; 6]>> {
    whole(s, |p| {
        let mut out = SmallVec::new();
        p.list(b'[', b']', |p| {
            let start = p.i;
            if p.peek()? == b'{' {
                if let Some(m) = p.members() {
                    out.push(m);
                    return Some(());
                }
                p.i = start;
            }
            p.value()
        })?;
        Some(out)
    })
}

/// What `read` makes of `s`, when it is all of `s` but whitespace.
fn whole<'a, T>(s: &'a str, read: impl FnOnce(&mut Scan<'a>) -> Option<T>) -> Option<T> {
    let mut p = Scan { s, i: 0 };
    p.ws();
    let t = read(&mut p)?;
    p.ws();
    (p.i == s.len()).then_some(t)
}

struct Scan<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Scan<'a> {
    /// An object's members, from its opening brace to its closing one.
    fn members(&mut self) -> Option<Members<'a>> {
        let mut out = SmallVec::new();
        self.list(b'{', b'}', |p| {
            let key = p.key()?;
            p.ws();
            p.eat(b':')?;
            p.ws();
            let start = p.i;
            p.value()?;
            out.push((key, &p.s[start..p.i]));
            Some(())
        })?;
        Some(Members(out))
    }

    /// A list from `open` to `close`, `item` reading each item (from its
    /// first byte) between the commas.
    fn list(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.eat(open)?;
        self.ws();
        if self.peek()? == close {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            item(self)?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                c if c == close => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

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

    /// A member's key: borrowed unless it has escapes, which serde_json
    /// decodes (and refuses a lone surrogate in).
    fn key(&mut self) -> Option<Str<'a>> {
        let start = self.i;
        let escaped = self.string()?;
        let text = &self.s[start..self.i];
        Some(if escaped {
            Cow::Owned(serde_json::from_str::<String>(text).ok()?)
        } else {
            Cow::Borrowed(&text[1..text.len() - 1])
        })
    }

    /// The key of a member inside a value, and its colon: not decoded, as
    /// serde_json reads a value it keeps as text.
    fn key_inside(&mut self) -> Option<()> {
        self.string()?;
        self.ws();
        self.eat(b':')
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

    /// One value, nested ones and all. The objects and arrays it is inside
    /// are kept on a stack, not in calls: a line decides how deep they go.
    fn value(&mut self) -> Option<()> {
        let mut open: SmallVec<[u8; 16]> = SmallVec::new();
        loop {
            self.ws();
            match self.peek()? {
                c @ (b'{' | b'[') => {
                    self.i += 1;
                    self.ws();
                    let close = if c == b'{' { b'}' } else { b']' };
                    if self.peek()? != close {
                        open.push(c);
                        if c == b'{' {
                            self.key_inside()?;
                        }
                        continue;
                    }
                    self.i += 1;
                }
                b'"' => {
                    self.string()?;
                }
                b'-' | b'0'..=b'9' => self.number()?,
                b't' => self.word(b"true")?,
                b'f' => self.word(b"false")?,
                b'n' => self.word(b"null")?,
                _ => return None,
            }
            // A value ended: it closes what it ends, or a comma leads to
            // the next.
            loop {
                let Some(&c) = open.last() else {
                    return Some(());
                };
                self.ws();
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        if c == b'{' {
                            self.ws();
                            self.key_inside()?;
                        }
                        break;
                    }
                    b'}' if c == b'{' => {
                        self.i += 1;
                        open.pop();
                    }
                    b']' if c == b'[' => {
                        self.i += 1;
                        open.pop();
                    }
                    _ => return None,
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

    /// The items of the array `s` is, as raw text: `None` when `s` is not one
    /// JSON array.
    fn array(s: &str) -> Option<SmallVec<[&str; 12]>> {
        whole(s, |p| {
            let mut out = SmallVec::new();
            p.list(b'[', b']', |p| {
                let start = p.i;
                p.value()?;
                out.push(&p.s[start..p.i]);
                Some(())
            })?;
            Some(out)
        })
    }

    fn ours(s: &str) -> Option<Vec<(String, String)>> {
        let m = object(s)?;
        Some(
            m.0.into_iter()
                .map(|(k, v)| (k.into_owned(), v.to_string()))
                .collect(),
        )
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
    fn arrays_hold_their_items_raw() {
        let items = array(r#" [ {"name":"a"}, 1 ,"s" ] "#).unwrap();
        assert_eq!(items.as_slice(), [r#"{"name":"a"}"#, "1", r#""s""#]);
        assert!(array("[1,]").is_none());
        assert!(array(r#"{"a":1}"#).is_none());
    }

    /// The objects of an array, read in one pass, are those its items'
    /// reading finds, on any edit of a line's spans.
    fn objects_as_items_are(s: &str) {
        let pairs = |m: &Members| -> Vec<(String, String)> {
            m.0.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let one_pass = objects(s).map(|o| o.iter().map(pairs).collect::<Vec<_>>());
        let by_item = array(s).map(|items| {
            items
                .iter()
                .filter_map(|i| {
                    Some(i)
                        .filter(|i| i.starts_with('{'))
                        .and_then(|i| object(i))
                })
                .map(|m| pairs(&m))
                .collect::<Vec<_>>()
        });
        assert_eq!(one_pass, by_item, "{s}");
    }

    #[test]
    fn objects_of_an_array_in_one_pass() {
        objects_as_items_are(
            r#"[{"name":"inbound"},{"client.addr":"10.0.0.1:1","name":"accept"}]"#,
        );
        objects_as_items_are(r#"[{"\ud800":1},2,{"name":"x"},[{"a":1}],"s"]"#);
        objects_as_items_are(r#"[{"a":1},]"#);
        objects_as_items_are("[]");
        objects_as_items_are(r#"{"a":1}"#);
    }

    /// Deep nesting is read without a call per level.
    #[test]
    fn nesting_does_not_recurse() {
        let deep = format!(r#"{{"a":{}{}}}"#, "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(ours(&deep).map(|m| m.len()), Some(1));
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
            if let Some(spans) = edited.find(r#""spans":"#) {
                let raw = &edited[spans + 8..];
                let end = raw.find("],").map_or(raw.len(), |e| e + 1);
                objects_as_items_are(&raw[..end]);
            }
        }
    }
}
