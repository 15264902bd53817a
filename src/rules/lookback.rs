//! Where a matched line that does not name its destination, endpoint or
//! port finds them: in its connection's earlier lines, looked for when the
//! line asks, first in the line's own block, then in the blocks before it,
//! instead of remembered from every line as it goes by. Only the lines of
//! connections that a matched line asks about are ever read for this, so
//! the lines no rule matches need not be tokenized at all.
//!
//! Each line of a block gets a key as it is read: a hash of its client
//! connection, taken exactly from the lines that were tokenized and cheaply
//! from the lean ones (or "unknown" where the cheap look cannot tell). A
//! line whose key matches is read again and its connection compared before
//! anything is taken from it.

use super::conns::{ConnCtx, Missing};
use super::group::tag_key;
use super::TagKey;
use crate::parse::typed::PortFrom;
use crate::parse::{parse_line, Event};
use crate::pipeline::{Around, Text};
use std::collections::VecDeque;
use std::sync::Arc;

/// A line that names no client connection.
const NONE: u64 = 0;
/// No line: the end of a key's chain.
const NIL: u32 = u32::MAX;
/// Input bytes of earlier blocks looked back into: far more than a
/// connection's lines are apart in a busy proxy's log, and what memory
/// allows beside the blocks in flight. A mapped file's blocks give their
/// pages back as they come here (explain of the mixed 1 GiB log peaked at
/// 52 MiB with them resident, 45 without), and few lines look back.
const HISTORY: usize = 8 << 20;
/// Lines of earlier blocks looked back into: some 20 bytes are kept for
/// each (its key, where it ends), so 8 MiB of short lines would hold far
/// more than their bytes. At a proxy's 300 bytes a line, 8 MiB is 28 000.
const HISTORY_LINES: usize = 1 << 17;
/// Blocks of earlier input looked back into: each is asked in turn by its
/// filter, so many small files, a block each, would make every look-back
/// ask thousands (21 340 one-line files took 1.8 times as long).
const HISTORY_BLOCKS: usize = 1 << 10;

/// The key of a client connection's address (never [`NONE`]): made for
/// every line, so by a hash that reads eight bytes at a step (FNV-1a, a
/// byte at a step, was a twentieth of a quiet line's cost).
fn key_of(client: &str) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    std::hash::Hasher::write(&mut h, client.as_bytes());
    std::hash::Hasher::finish(&h).max(NONE + 1)
}

/// Keys are hashes already: a map keyed by them need not hash again.
type ByKey<V> = crate::parse::template::ById<V>;

/// Where a quiet line's client connection is named, the same for every
/// line of its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyShape {
    /// Only reading the line tells.
    Unknown,
    NoClient,
    /// The client is the line's text in this byte range.
    At(u32, u32),
}

impl KeyShape {
    /// Where `line`'s event names its client: the same place in every line
    /// of its shape, for which of its fields or spans names the client is
    /// decided by their names and by their values' `:`, never by a digit.
    pub fn of(ev: &Event<'_>, line: &str) -> KeyShape {
        let Some(c) = tag_key(TagKey::Client, ev) else {
            return KeyShape::NoClient;
        };
        let start = (c.as_ptr() as usize).wrapping_sub(line.as_ptr() as usize);
        match line.get(start..start + c.len()) {
            Some(s) if std::ptr::eq(s.as_ptr(), c.as_ptr()) => {
                KeyShape::At(start as u32, (start + c.len()) as u32)
            }
            // Copied out of the line (decoded).
            _ => KeyShape::Unknown,
        }
    }

    /// The key of `line`, a line of this shape; `None` when unknown.
    fn key(self, line: &str) -> Option<u64> {
        match self {
            KeyShape::Unknown => None,
            KeyShape::NoClient => Some(NONE),
            KeyShape::At(a, b) => Some(key_of(&line[a as usize..b as usize])),
        }
    }
}

/// What the lines of a quiet line's shape say of their connection: where
/// the client is named, and which parts of its context they may name
/// ([`names_of`]: the same for every line of the shape).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnShape {
    pub key: KeyShape,
    names: u8,
}

impl ConnShape {
    pub const UNKNOWN: ConnShape = ConnShape {
        key: KeyShape::Unknown,
        names: ALL,
    };

    pub fn of(ev: &Event<'_>, line: &str) -> ConnShape {
        ConnShape {
            key: KeyShape::of(ev, line),
            names: names_of(ev),
        }
    }
}

/// What a line's event says of its connection: its client, and the
/// destination, endpoint and port it names.
fn conn_of(ev: &Event<'_>) -> Option<(String, ConnCtx)> {
    let client = tag_key(TagKey::Client, ev)?;
    Some((
        client.to_string(),
        ConnCtx {
            dst: ev.dst().map(|d| d.into_owned()),
            peer: ev.endpoint().map(str::to_string),
            port: ev.port(),
        },
    ))
}

/// Parts of a connection's context, as bits.
const DST: u8 = 1;
const PEER: u8 = 2;
const PORT: u8 = 4;
const ALL: u8 = DST | PEER | PORT;

fn bits(dst: bool, peer: bool, port: bool) -> u8 {
    [(dst, DST), (peer, PEER), (port, PORT)]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |b, (_, part)| b | part)
}

/// Which parts an event's line may name: those its views find a place
/// for, where they are looked for by span and field names and never by a
/// digit, so the same for every line of its shape (a port's place may hold
/// no port: reading the line tells). A line that names none of the parts
/// a look-back wants is not read again.
fn names_of(ev: &Event<'_>) -> u8 {
    let port = PortFrom::ALL.iter().any(|f| ev.port_text(*f).is_some());
    bits(ev.dst().is_some(), ev.endpoint().is_some(), port)
}

/// One block's lines by connection, as the block is read and afterwards.
#[derive(Debug, Clone, Default)]
pub struct BlockConns {
    /// Each line's key, by its index in the block.
    keys: Vec<u64>,
    /// Of the first `indexed` lines, each key's last, and for each line the
    /// one of its key before it ([`NIL`] for none): a chain per key, in one
    /// vector rather than a vector per key.
    last: ByKey<u32>,
    prev: Vec<u32>,
    indexed: usize,
    /// The parts each line may name ([`names_of`]), by its index.
    named: Vec<u8>,
    /// Lines read for their connection: when looked at, or as they went by
    /// when their line alone does not make their record.
    /// (Looked up for every line a look-back passes: FxHash, not SipHash.)
    read: rustc_hash::FxHashMap<u32, Option<(String, ConnCtx)>>,
    /// The keys of its lines, once it has been read ([`Lookback::end_block`]).
    filter: Filter,
}

/// A block's keys in a Bloom filter, two bits a key in eight a line: which
/// blocks of the history may hold a connection's lines. Made by the worker
/// that read the block; a map from every key to its blocks, kept as blocks
/// were merged, was a twentieth of explain's time, all of it on the
/// merging thread. A block it wrongly names (one in twenty) is looked
/// into for nothing.
#[derive(Debug, Clone, Default)]
struct Filter {
    /// A power of two of words, or none.
    words: Vec<u64>,
}

impl Filter {
    fn of(keys: &[u64]) -> Filter {
        let mut f = Filter {
            words: vec![0; (keys.len() / 8).next_power_of_two().min(1 << 11)],
        };
        for &k in keys.iter().filter(|k| **k != NONE) {
            for b in f.bits(k) {
                f.words[b >> 6] |= 1 << (b & 63);
            }
        }
        f
    }

    /// The bits of `key`: from a product of it, for a hash's low bits may
    /// be alike.
    fn bits(&self, key: u64) -> [usize; 2] {
        let mask = (self.words.len() << 6).wrapping_sub(1);
        let h = key.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        [(h >> 40) as usize & mask, (h >> 20) as usize & mask]
    }

    fn may_hold(&self, key: u64) -> bool {
        !self.words.is_empty()
            && self
                .bits(key)
                .iter()
                .all(|b| self.words[b >> 6] >> (b & 63) & 1 == 1)
    }
}

impl BlockConns {
    /// Makes room for each line of the block at once: grown a line at a
    /// time, the vectors were copied a dozen times a block.
    fn sized(&mut self, around: &Around<'_>) {
        if self.keys.capacity() == 0 {
            let lines = around.ends.len() + 1;
            self.keys.reserve(lines);
            self.named.reserve(lines);
            self.prev.reserve(lines);
        }
    }

    fn set(&mut self, i: usize, key: u64, named: u8) {
        // Lines come in order: each is most often the next.
        if self.keys.len() == i {
            self.keys.push(key);
            self.named.push(named);
            return;
        }
        if self.keys.len() < i {
            self.keys.resize(i + 1, NONE);
            self.named.resize(i + 1, 0);
        }
        self.keys[i] = key;
        self.named[i] = named;
    }

    /// A quiet line, read at index `i` of its block.
    fn lean(&mut self, i: usize, line: &str, conn: ConnShape) {
        match conn.key.key(line) {
            Some(k) => self.set(i, k, conn.names),
            None => {
                // The cheap look cannot tell: read it now, as its record.
                let got = parse_line(line).as_ref().and_then(conn_of);
                self.set(i, got.as_ref().map_or(NONE, |(c, _)| key_of(c)), ALL);
                self.remember(i, got);
            }
        }
    }

    /// A tokenized record starting at index `i` of its block: keyed now,
    /// and read again only if a later line looks back at it, unless its
    /// line alone does not make it (a record joined from several lines).
    fn event(&mut self, i: usize, ev: &Event<'_>) {
        if ev.lines > 1 {
            let got = conn_of(ev);
            self.set(i, got.as_ref().map_or(NONE, |(c, _)| key_of(c)), ALL);
            self.remember(i, got);
        } else {
            let key = tag_key(TagKey::Client, ev).map_or(NONE, key_of);
            self.set(i, key, names_of(ev));
        }
    }

    /// What `client`'s lines before index `i` (all of them with
    /// `usize::MAX`) named of the `missing` parts, each from the last line
    /// that named it.
    fn before(&mut self, client: &str, i: usize, missing: Missing, data: &Around<'_>) -> ConnCtx {
        while self.indexed < self.keys.len() {
            let k = self.keys[self.indexed];
            let before = if k == NONE {
                NIL
            } else {
                self.last.insert(k, self.indexed as u32).unwrap_or(NIL)
            };
            self.prev.push(before);
            self.indexed += 1;
        }
        let mut ctx = ConnCtx::default();
        let mut j = self.last.get(&key_of(client)).copied().unwrap_or(NIL);
        while j != NIL && j as usize >= i {
            j = self.prev[j as usize];
        }
        let mut want = bits(missing.dst, missing.peer, missing.port);
        while j != NIL && want != 0 {
            let this = j as usize;
            j = self.prev[this];
            if self.may_name(this) & want == 0 {
                continue;
            }
            let Some((c, named)) = self.line(this, data) else {
                continue;
            };
            if c != client {
                continue;
            }
            if want & DST != 0 && named.dst.is_some() {
                ctx.dst.clone_from(&named.dst);
                want &= !DST;
            }
            if want & PEER != 0 && named.peer.is_some() {
                ctx.peer.clone_from(&named.peer);
                want &= !PEER;
            }
            if want & PORT != 0 && named.port.is_some() {
                ctx.port = named.port;
                want &= !PORT;
            }
        }
        ctx
    }

    /// The text of line `j`.
    fn text<'d>(&self, j: usize, block: &Around<'d>) -> &'d [u8] {
        let (data, ends) = (block.data, block.ends);
        let start = match j.checked_sub(1) {
            None => 0,
            Some(p) => ends.get(p).map_or(data.len(), |e| e + 1),
        };
        let end = ends.get(j).copied().unwrap_or(data.len());
        &data[start.min(end)..end]
    }

    /// The parts line `j` may name: exactly those it names, once read.
    fn may_name(&self, j: usize) -> u8 {
        self.named.get(j).copied().unwrap_or(ALL)
    }

    /// Keeps what line `i` was read to say of its connection, and that it
    /// names those parts alone (so a look-back passing it asks no map).
    fn remember(&mut self, i: usize, got: Option<(String, ConnCtx)>) {
        if let Some(n) = self.named.get_mut(i) {
            *n = got.as_ref().map_or(0, |(_, c)| {
                bits(c.dst.is_some(), c.peer.is_some(), c.port.is_some())
            });
        }
        self.read.insert(i as u32, got);
    }

    /// Line `j`'s connection and what it names, reading it again if need be.
    fn line(&mut self, j: usize, data: &Around<'_>) -> Option<&(String, ConnCtx)> {
        if !self.read.contains_key(&(j as u32)) {
            let text = self.text(j, data);
            let arena = typed_arena::Arena::new();
            let line = crate::input::wrap::normalize(text, &arena);
            let got = parse_line(line).as_ref().and_then(conn_of);
            self.remember(j, got);
        }
        self.read[&(j as u32)].as_ref()
    }
}

/// The blocks before the one being merged, newest last, as far back as
/// [`HISTORY`] reaches.
#[derive(Clone, Default)]
pub struct History {
    blocks: VecDeque<(Arc<Text>, BlockConns)>,
    bytes: usize,
    lines: usize,
}

impl History {
    /// What `client`'s lines in the blocks kept named of the `missing`
    /// parts, each from the newest block that names it; `None` when they
    /// name none.
    pub fn context(&mut self, client: &str, mut missing: Missing) -> Option<ConnCtx> {
        let key = key_of(client);
        let mut ctx = ConnCtx::default();
        for (text, conns) in self.blocks.iter_mut().rev() {
            if !missing.any() {
                break;
            }
            if !conns.filter.may_hold(key) {
                continue;
            }
            let part = conns.before(client, usize::MAX, missing, &text.around());
            missing = missing.without(&part);
            ctx.dst = ctx.dst.or(part.dst);
            ctx.peer = ctx.peer.or(part.peer);
            ctx.port = ctx.port.or(part.port);
        }
        (ctx != ConnCtx::default()).then_some(ctx)
    }

    /// Adds a merged block, dropping the oldest past [`HISTORY`].
    fn push(&mut self, text: Arc<Text>, conns: BlockConns) {
        self.bytes += text.data.len();
        self.lines += text.ends.len();
        text.data.idle();
        self.blocks.push_back((text, conns));
        while (self.bytes > HISTORY
            || self.lines > HISTORY_LINES
            || self.blocks.len() > HISTORY_BLOCKS)
            && self.blocks.len() > 1
        {
            if let Some((t, _)) = self.blocks.pop_front() {
                self.bytes -= t.data.len();
                self.lines -= t.ends.len();
            }
        }
    }
}

/// How a state finds a connection's earlier context.
#[derive(Clone)]
pub enum Lookback {
    /// Remembered from every record (a whole input read in order: follow
    /// mode, tickets).
    Remember(super::conns::Recent<ConnCtx>),
    /// Looked back for: in the block being read, and (after merging) in the
    /// blocks before.
    Blocks {
        block: Box<BlockConns>,
        /// The block, once read (for the merged state's history).
        text: Option<Arc<Text>>,
        history: History,
    },
}

impl Lookback {
    pub fn blocks() -> Lookback {
        Lookback::Blocks {
            block: Box::default(),
            text: None,
            history: History::default(),
        }
    }

    /// A tokenized record: remembered, or keyed for look-back.
    pub fn event(&mut self, ev: &Event<'_>, around: &Around<'_>) {
        match self {
            Lookback::Remember(conns) => remember(conns, ev),
            Lookback::Blocks { block, .. } => {
                if let Some(i) = ev.line.checked_sub(around.first_line) {
                    block.sized(around);
                    block.event(i as usize, ev);
                }
            }
        }
    }

    /// A quiet line, whose shape says what `conn` does.
    pub fn lean(&mut self, line: u64, text: &str, conn: ConnShape, around: &Around<'_>) {
        if let Lookback::Blocks { block, .. } = self {
            if let Some(i) = line.checked_sub(around.first_line) {
                block.sized(around);
                block.lean(i as usize, text, conn);
            }
        }
    }

    /// What `client`'s lines before line `line` of this block said (of the
    /// `missing` parts, at least).
    pub fn before(
        &mut self,
        client: &str,
        line: u64,
        missing: Missing,
        around: &Around<'_>,
    ) -> Option<ConnCtx> {
        match self {
            Lookback::Remember(conns) => conns.get(client).cloned(),
            Lookback::Blocks { block, .. } => {
                let i = line.checked_sub(around.first_line)? as usize;
                let ctx = block.before(client, i, missing, around);
                (ctx != ConnCtx::default()).then_some(ctx)
            }
        }
    }

    /// What `client`'s lines in the blocks before this state's last said
    /// (of the `missing` parts, at least).
    pub fn earlier(&mut self, client: &str, missing: Missing) -> Option<ConnCtx> {
        match self {
            Lookback::Remember(conns) => conns.get(client).cloned(),
            Lookback::Blocks { history, .. } => history.context(client, missing),
        }
    }

    /// The text of line `line` of this block, as read.
    pub fn raw_line<'d>(&mut self, line: u64, around: &Around<'d>) -> Option<&'d [u8]> {
        let Lookback::Blocks { block, .. } = self else {
            return None;
        };
        let j = line.checked_sub(around.first_line)? as usize;
        Some(block.text(j, around))
    }

    pub fn end_block(&mut self, t: &Arc<Text>) {
        if let Lookback::Blocks { text, block, .. } = self {
            *text = Some(Arc::clone(t));
            block.filter = Filter::of(&block.keys);
        }
    }

    /// Takes in a later block's (after its waiting lines looked back).
    pub fn absorb(&mut self, later: Lookback) {
        match (self, later) {
            (Lookback::Remember(a), Lookback::Remember(b)) => a.absorb(b, ConnCtx::absorb),
            (
                Lookback::Blocks { history, .. },
                Lookback::Blocks {
                    block,
                    text: Some(text),
                    ..
                },
            ) => history.push(text, *block),
            _ => {}
        }
    }
}

/// Remembers what a record names of its connection.
fn remember(conns: &mut super::conns::Recent<ConnCtx>, ev: &Event<'_>) {
    let Some(c) = tag_key(TagKey::Client, ev) else {
        return;
    };
    let dst = ev.dst();
    let peer = ev.endpoint();
    let port = ev.port();
    if dst.is_none() && peer.is_none() && port.is_none() {
        return;
    }
    let same = conns.get(c).is_some_and(|x| {
        dst.as_deref().is_none_or(|d| x.dst.as_deref() == Some(d))
            && peer.is_none_or(|p| x.peer.as_deref() == Some(p))
            && port.is_none_or(|p| x.port == Some(p))
    });
    if same {
        return;
    }
    conns.update(c, |e| {
        e.absorb(ConnCtx {
            dst: dst.map(|d| d.into_owned()),
            peer: peer.map(str::to_string),
            port,
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block's filter holds every key of its lines, and few others: at
    /// eight bits a line, about one in twenty.
    #[test]
    fn a_filter_holds_its_keys_and_few_others() {
        for lines in [1, 7, 100, 5_000, 16_384, 40_000] {
            let keys: Vec<u64> = (0..lines)
                .map(|i| key_of(&format!("10.0.{i}.1:4143")))
                .collect();
            let f = Filter::of(&keys);
            assert!(keys.iter().all(|k| f.may_hold(*k)), "{lines} lines");
            let others = 20_000;
            let wrong = (0..others)
                .filter(|i| f.may_hold(key_of(&format!("192.168.{i}.9:80"))))
                .count();
            if lines >= 100 {
                let bits = (f.words.len() * 64) as f64 / lines as f64;
                // Two bits a key: (1 - e^(-2/bits))^2, with room for chance.
                let expected = (1.0 - (-2.0 / bits).exp()).powi(2);
                assert!(
                    (wrong as f64) < 1.5 * expected * others as f64 + 50.0,
                    "{lines} lines: {wrong} of {others} wrongly held"
                );
            }
        }
        assert!(!Filter::of(&[]).may_hold(key_of("10.0.0.1:80")));
        assert!(!Filter::default().may_hold(key_of("10.0.0.1:80")));
    }

    /// Many small files, a block each, keep the history to its count of
    /// blocks, newest kept.
    #[test]
    fn the_history_keeps_at_most_its_count_of_blocks() {
        let mut h = History::default();
        for n in 1..=3 * HISTORY_BLOCKS as u64 {
            let text = Text {
                source: format!("{n}.log"),
                data: crate::input::Data::Read(b"one line".to_vec()),
                ends: Vec::new(),
                first_line: 1,
                cuts: Vec::new(),
                escapes: false,
            };
            h.push(Arc::new(text), BlockConns::default());
        }
        assert_eq!(h.blocks.len(), HISTORY_BLOCKS);
        let newest = h.blocks.back().map(|(t, _)| t.source.as_str());
        assert_eq!(newest, Some("3072.log"));
    }
}
