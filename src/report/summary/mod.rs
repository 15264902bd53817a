//! `lpa summarize`: what a log holds, in one streaming pass with bounded
//! memory (every table keeps at most a fixed number of keys).
//!
//! The counts live here; [`collect`] reads events into them, [`doc`] ranks
//! them into the JSON document, [`render`] lays that out for a terminal or
//! as Markdown.

mod collect;
mod doc;
mod lean;
mod render;

pub use collect::SummaryAcc;
pub use doc::*;
pub use render::{human, markdown};

use super::metrics_summary::Tables;
use crate::parse::era::EraVote;
use crate::parse::Level;
use crate::rules::snapshot::Snapshots;
use serde::Serialize;
use std::borrow::{Borrow, Cow};
use std::collections::BTreeMap;

/// Keys kept per table; past this, new keys count under `(other)`.
const MAX_KEYS: usize = 2000;
/// Keys kept per table inside a row (a destination's endpoints, a port's
/// TLS states): 2000 destinations × 2000 endpoints would be 4 M keys.
const MAX_NESTED_KEYS: usize = 64;
/// Keys kept in all the destinations' endpoint tables together: the rows
/// share this budget, so memory reaches its bound early instead of growing
/// up to 2000 × 64 keys as more of each destination's endpoints show up.
const MAX_DEST_ENDPOINTS: usize = 8192;
/// Bytes of a key kept: a hostile line's megabyte "destination" is one
/// bounded key, not a megabyte per table row.
const MAX_KEY_LEN: usize = 256;
/// Seconds kept in the time histogram.
const MAX_SECONDS: usize = 200_000;
const OTHER: &str = "(other)";

pub use crate::rules::engine::template;

/// The key counted for every key past a full table's `MAX_KEYS`.
trait Overflow {
    fn other() -> Self;
}

impl Overflow for String {
    fn other() -> Self {
        OTHER.to_string()
    }
}

impl Overflow for u16 {
    fn other() -> Self {
        0
    }
}

/// A table keyed by strings or numbers: the summary's sorted maps, or a
/// block's hash maps while it is read (no key compares on the way down a
/// tree for every line).
trait Keyed<Q: ?Sized, V> {
    fn len(&self) -> usize;
    fn contains(&self, k: &Q) -> bool;
    fn get(&mut self, k: &Q) -> Option<&mut V>;
    /// Adds `k` (known missing) and returns its value.
    fn add(&mut self, k: &Q) -> &mut V;
    /// The value of `k`, made if missing, without allocating a key that
    /// is already there.
    fn at(&mut self, k: &Q) -> &mut V {
        if !self.contains(k) {
            return self.add(k);
        }
        self.get(k).expect("just looked up")
    }
}

impl<K, Q, V> Keyed<Q, V> for BTreeMap<K, V>
where
    K: Ord + Borrow<Q>,
    Q: Ord + ToOwned<Owned = K> + ?Sized,
    V: Default,
{
    fn len(&self) -> usize {
        BTreeMap::len(self)
    }
    fn contains(&self, k: &Q) -> bool {
        self.contains_key(k)
    }
    fn get(&mut self, k: &Q) -> Option<&mut V> {
        self.get_mut(k)
    }
    fn add(&mut self, k: &Q) -> &mut V {
        self.entry(k.to_owned()).or_default()
    }
}

/// A block's table of addresses while it is read.
type Fast<V> = hashbrown::HashMap<String, V, rustc_hash::FxBuildHasher>;

impl<V: Default> Keyed<str, V> for Fast<V> {
    fn len(&self) -> usize {
        hashbrown::HashMap::len(self)
    }
    fn contains(&self, k: &str) -> bool {
        self.contains_key(k)
    }
    fn get(&mut self, k: &str) -> Option<&mut V> {
        self.get_mut(k)
    }
    fn add(&mut self, k: &str) -> &mut V {
        self.entry_ref(k).or_default()
    }
    fn at(&mut self, k: &str) -> &mut V {
        self.entry_ref(k).or_default()
    }
}

/// Counts `n` under `k`; allocates only for a key not seen before.
fn bump<Q, M>(m: &mut M, k: &Q, n: u64)
where
    Q: ?Sized + ToOwned,
    Q::Owned: Overflow + Borrow<Q>,
    M: Keyed<Q, u64>,
{
    bump_in(m, k, n, MAX_KEYS)
}

/// `bump` into a table of at most `cap` keys.
fn bump_in<Q, M>(m: &mut M, k: &Q, n: u64, cap: usize)
where
    Q: ?Sized + ToOwned,
    Q::Owned: Overflow + Borrow<Q>,
    M: Keyed<Q, u64>,
{
    if let Some(c) = m.get(k) {
        *c += n;
    } else if m.len() < cap {
        *m.add(k) = n;
    } else {
        let other = Q::Owned::other();
        match m.get(other.borrow()) {
            Some(c) => *c += n,
            None => *m.add(other.borrow()) = n,
        }
    }
}

/// `bump_in` a destination's endpoint table, within the budget its rows
/// share (`used` counts their keys).
fn bump_endpoint(m: &mut BTreeMap<String, u64>, k: &str, n: u64, used: &mut usize) {
    let cap = if *used < MAX_DEST_ENDPOINTS {
        MAX_NESTED_KEYS
    } else {
        0
    };
    let before = m.len();
    bump_in(m, k, n, cap);
    *used += m.len() - before;
}

/// The entry for `k`, or the shared `(other)` entry once the table is full.
/// Looks up before allocating: most keys repeat.
fn slot<'m, V: Default, M: Keyed<str, V>>(m: &'m mut M, k: &str) -> &'m mut V {
    let k = short(k);
    let key = if m.len() < MAX_KEYS || m.contains(k.as_ref()) {
        k.as_ref()
    } else {
        OTHER
    };
    m.at(key)
}

/// A key cut to `MAX_KEY_LEN` bytes (at a character boundary) before it is
/// stored.
fn short(k: &str) -> Cow<'_, str> {
    if k.len() <= MAX_KEY_LEN {
        return Cow::Borrowed(k);
    }
    let mut end = MAX_KEY_LEN;
    while !k.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &k[..end]))
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Kind {
    pub count: u64,
    pub first_line: u64,
    pub last_line: u64,
    pub source: String,
    pub level: Option<Level>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Dest {
    pub events: u64,
    pub requests_failed: u64,
    pub failfast: u64,
    pub connect_errors: BTreeMap<String, u64>,
    /// endpoint → connect errors
    pub endpoints: BTreeMap<String, u64>,
    pub statuses: BTreeMap<u16, u64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Peer {
    pub events: u64,
    pub errors: u64,
    pub closes_with_error: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SourceStats {
    pub lines: u64,
    pub events: u64,
    pub unparsed: u64,
    pub warnings: u64,
    pub errors: u64,
}

/// Everything `summarize` counts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub sources: BTreeMap<String, SourceStats>,
    pub lines: u64,
    pub events: u64,
    pub unparsed: u64,
    pub producers: BTreeMap<&'static str, u64>,
    pub levels: BTreeMap<&'static str, u64>,
    pub pods: BTreeMap<String, u64>,
    pub containers: BTreeMap<String, u64>,
    pub uptime: Option<(f64, f64)>,
    pub wall: Option<(String, String)>,
    pub error_kinds: BTreeMap<String, Kind>,
    pub destinations: BTreeMap<String, Dest>,
    pub clients: BTreeMap<String, Peer>,
    pub endpoints: BTreeMap<String, u64>,
    /// Keys in all the destinations' endpoint tables.
    #[serde(skip)]
    pub dest_endpoint_keys: usize,
    /// port → TLS state → count
    pub tls: BTreeMap<String, BTreeMap<String, u64>>,
    pub identities: BTreeMap<String, u64>,
    pub statuses: BTreeMap<u16, u64>,
    /// second (uptime or wall clock) → (events, warnings and errors)
    pub seconds: BTreeMap<i64, (u64, u64)>,
    pub seconds_are_wall: bool,
    pub unknown: BTreeMap<String, Kind>,
    /// Lines longer than `--max-line`, read cut.
    pub cut_lines: u64,
    #[serde(skip)]
    pub era: EraVote,
    /// Metrics snapshots, reduced to the metrics section's tables.
    #[serde(skip)]
    pub metrics: Snapshots<Tables>,
}

/// What a count of cut lines means.
pub fn cut_note(n: u64) -> String {
    let (lines, were) = if n == 1 {
        ("line", "was")
    } else {
        ("lines", "were")
    };
    format!("{n} {lines} longer than --max-line {were} read only up to it")
}

impl Summary {
    /// Adds a later block (input order).
    pub fn merge(&mut self, o: Summary) {
        for (k, v) in o.sources {
            let e = self.sources.entry(k).or_default();
            e.lines += v.lines;
            e.events += v.events;
            e.unparsed += v.unparsed;
            e.warnings += v.warnings;
            e.errors += v.errors;
        }
        self.lines += o.lines;
        self.events += o.events;
        self.unparsed += o.unparsed;
        self.cut_lines += o.cut_lines;
        for (k, v) in o.producers {
            *self.producers.entry(k).or_insert(0) += v;
        }
        for (k, v) in o.levels {
            *self.levels.entry(k).or_insert(0) += v;
        }
        for (k, v) in o.pods {
            bump(&mut self.pods, k.as_str(), v);
        }
        for (k, v) in o.containers {
            bump(&mut self.containers, k.as_str(), v);
        }
        if let Some((a, b)) = o.uptime {
            self.uptime = Some(self.uptime.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
        }
        if let Some((a, b)) = o.wall {
            let w = self.wall.get_or_insert_with(|| (a.clone(), b.clone()));
            if a < w.0 {
                w.0 = a;
            }
            if b > w.1 {
                w.1 = b;
            }
        }
        merge_kinds(&mut self.error_kinds, o.error_kinds);
        merge_kinds(&mut self.unknown, o.unknown);
        for (k, v) in o.destinations {
            let d = slot(&mut self.destinations, &k);
            d.events += v.events;
            d.requests_failed += v.requests_failed;
            d.failfast += v.failfast;
            for (a, n) in v.connect_errors {
                *d.connect_errors.entry(a).or_insert(0) += n;
            }
            for (a, n) in v.endpoints {
                bump_endpoint(&mut d.endpoints, &a, n, &mut self.dest_endpoint_keys);
            }
            for (a, n) in v.statuses {
                bump_in(&mut d.statuses, &a, n, MAX_NESTED_KEYS);
            }
        }
        for (k, v) in o.clients {
            let p = slot(&mut self.clients, &k);
            p.events += v.events;
            p.errors += v.errors;
            p.closes_with_error += v.closes_with_error;
        }
        for (k, v) in o.endpoints {
            bump(&mut self.endpoints, k.as_str(), v);
        }
        for (port, states) in o.tls {
            let m = slot(&mut self.tls, &port);
            for (st, n) in states {
                bump_in(m, st.as_str(), n, MAX_NESTED_KEYS);
            }
        }
        for (k, v) in o.identities {
            bump(&mut self.identities, k.as_str(), v);
        }
        for (k, v) in o.statuses {
            bump(&mut self.statuses, &k, v);
        }
        self.seconds_are_wall |= o.seconds_are_wall;
        for (k, v) in o.seconds {
            if self.seconds.len() < MAX_SECONDS || self.seconds.contains_key(&k) {
                let e = self.seconds.entry(k).or_insert((0, 0));
                e.0 += v.0;
                e.1 += v.1;
            }
        }
        self.era.merge(&o.era);
        self.metrics.merge(o.metrics);
    }
}

fn merge_kinds(into: &mut BTreeMap<String, Kind>, from: BTreeMap<String, Kind>) {
    for (k, v) in from {
        let key = if into.len() >= MAX_KEYS && !into.contains_key(&k) {
            OTHER.to_string()
        } else {
            k
        };
        match into.get_mut(&key) {
            Some(e) => {
                e.count += v.count;
                e.last_line = v.last_line;
            }
            None => {
                into.insert(key, v);
            }
        }
    }
}
