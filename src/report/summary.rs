//! `lpa summarize`: what a log holds, in one streaming pass with bounded
//! memory (every table keeps at most a fixed number of keys).

use super::metrics_summary::{self, MetricsDoc, Tables};
use super::style::Style;
use crate::parse::typed::{host_of, EraVote};
use crate::parse::{Event, Level, Metric, Record};
use crate::pipeline::Accumulator;
use crate::rules::engine::{Engine, EraSampler};
use crate::rules::snapshot::Snapshots;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, ContentArrangement, Table};
use serde::Serialize;
use std::borrow::{Borrow, Cow};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Keys kept per table; past this, new keys count under `(other)`.
const MAX_KEYS: usize = 2000;
/// Keys kept per table inside a row (a destination's endpoints, a port's
/// TLS states): 2000 destinations × 2000 endpoints would be 4 M keys.
const MAX_NESTED_KEYS: usize = 64;
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

/// Counts `n` under `k`; allocates only for a key not seen before.
fn bump<K, Q>(m: &mut BTreeMap<K, u64>, k: &Q, n: u64)
where
    K: Ord + Borrow<Q> + Overflow,
    Q: Ord + ToOwned<Owned = K> + ?Sized,
{
    bump_in(m, k, n, MAX_KEYS)
}

/// `bump` into a table of at most `cap` keys.
fn bump_in<K, Q>(m: &mut BTreeMap<K, u64>, k: &Q, n: u64, cap: usize)
where
    K: Ord + Borrow<Q> + Overflow,
    Q: Ord + ToOwned<Owned = K> + ?Sized,
{
    if let Some(c) = m.get_mut(k) {
        *c += n;
    } else if m.len() < cap {
        m.insert(k.to_owned(), n);
    } else {
        *m.entry(K::other()).or_insert(0) += n;
    }
}

/// The entry for `k`, or the shared `(other)` entry once the table is full.
/// Looks up before allocating: most keys repeat.
fn slot<'m, V: Default>(m: &'m mut BTreeMap<String, V>, k: &str) -> &'m mut V {
    let k = short(k);
    let key = if m.len() < MAX_KEYS || m.contains_key(k.as_ref()) {
        k.as_ref()
    } else {
        OTHER
    };
    entry(m, key)
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

/// The entry for `k`, made if missing, without allocating a key that is
/// already there.
fn entry<'m, V: Default>(m: &'m mut BTreeMap<String, V>, k: &str) -> &'m mut V {
    if !m.contains_key(k) {
        m.insert(k.to_string(), V::default());
    }
    m.get_mut(k).expect("just inserted")
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

/// The accumulator of one block; `engine` tells which messages some rule knows.
pub struct SummaryAcc<'e> {
    pub summary: Summary,
    engine: &'e Engine,
    last_wall: Option<(String, i64)>,
    era_sampler: EraSampler,
}

impl<'e> SummaryAcc<'e> {
    pub fn new(engine: &'e Engine) -> Self {
        SummaryAcc {
            summary: Summary::default(),
            engine,
            last_wall: None,
            era_sampler: EraSampler::default(),
        }
    }

    fn second_of(&mut self, ev: &Event<'_>) -> Option<(i64, bool)> {
        if let Some(ts) = ev.wrapper.timestamp.or(ev.timestamp.as_deref()) {
            let key = ts.get(..19)?;
            if let Some((k, s)) = &self.last_wall {
                if k == key {
                    return Some((*s, true));
                }
            }
            let secs = chrono::NaiveDateTime::parse_from_str(key, "%Y-%m-%dT%H:%M:%S")
                .ok()?
                .and_utc()
                .timestamp();
            self.last_wall = Some((key.to_string(), secs));
            return Some((secs, true));
        }
        ev.uptime.map(|u| (u as i64, false))
    }

    fn event(&mut self, source: &str, ev: &Event<'_>) {
        let s = &mut self.summary;
        s.events += 1;
        s.lines += u64::from(ev.lines);
        let src = entry(&mut s.sources, source);
        src.events += 1;
        src.lines += u64::from(ev.lines);
        *s.producers.entry(ev.producer.as_str()).or_insert(0) += 1;
        if let Some(l) = ev.level {
            *s.levels.entry(l.as_str()).or_insert(0) += 1;
            match l {
                Level::Warn => src.warnings += 1,
                Level::Error => src.errors += 1,
                _ => {}
            }
        }
        self.era_sampler.observe(self.engine, ev, &mut s.era);
        if let Some(p) = ev.wrapper.pod {
            bump(&mut s.pods, short(p).as_ref(), 1);
        }
        if let Some(c) = ev.wrapper.container {
            bump(&mut s.containers, short(c).as_ref(), 1);
        }
        if let Some(u) = ev.uptime {
            s.uptime = Some(s.uptime.map_or((u, u), |(a, b)| (a.min(u), b.max(u))));
        }
        if let Some(ts) = ev.wrapper.timestamp.or(ev.timestamp.as_deref()) {
            if ts.len() >= 19 && ts.as_bytes()[4] == b'-' {
                let w = s
                    .wall
                    .get_or_insert_with(|| (ts.to_string(), ts.to_string()));
                if ts < w.0.as_str() {
                    w.0 = ts.to_string();
                }
                if ts > w.1.as_str() {
                    w.1 = ts.to_string();
                }
            }
        }
        let error = ev.error();
        let loud = ev.level.is_some_and(|l| l >= Level::Warn);
        let failing = loud || error.is_some();
        if let Some((sec, wall)) = self.second_of(ev) {
            let s = &mut self.summary;
            s.seconds_are_wall |= wall;
            if s.seconds.len() < MAX_SECONDS || s.seconds.contains_key(&sec) {
                let e = s.seconds.entry(sec).or_insert((0, 0));
                e.0 += 1;
                e.1 += u64::from(loud);
            }
        }
        let s = &mut self.summary;
        if failing {
            let msg = ev.message();
            let text = match error {
                Some(e) if !msg.ends_with(e) => format!("{msg} error={e}"),
                _ if msg.is_empty() => ev.text.to_string(),
                _ => msg.to_string(),
            };
            record_kind(
                &mut s.error_kinds,
                template(&text),
                source,
                ev.line,
                ev.level,
            );
        }
        if let Some(st) = ev.status() {
            bump(&mut s.statuses, &st, 1);
        }
        let msg = ev.message();
        let err = error.unwrap_or("");
        let is_connect_err = msg.starts_with("Failed to connect")
            || err.contains("error trying to connect")
            || err.contains("connect timed out");
        if let Some(dst) = ev.dst() {
            let d = slot(&mut s.destinations, &dst);
            d.events += 1;
            if msg.contains("request failed") || msg.starts_with("Failed to proxy request") {
                d.requests_failed += 1;
            }
            let lower_ff = |t: &str| t.contains("fail-fast") || t.contains("failfast");
            if lower_ff(msg) || lower_ff(err) {
                d.failfast += 1;
            }
            if is_connect_err {
                let kind = connect_kind(&format!("{msg} {err}"));
                *d.connect_errors.entry(kind.to_string()).or_insert(0) += 1;
                if let Some(p) = ev.endpoint() {
                    bump_in(&mut d.endpoints, short(p).as_ref(), 1, MAX_NESTED_KEYS);
                }
            }
            if let Some(st) = ev.status() {
                bump_in(&mut d.statuses, &st, 1, MAX_NESTED_KEYS);
            }
        }
        if let Some(c) = ev.client_addr().filter(|c| !c.starts_with(':')) {
            let p = slot(&mut s.clients, host_of(c));
            p.events += 1;
            p.errors += u64::from(failing);
            p.closes_with_error += u64::from(msg == "Connection closed" && error.is_some());
        }
        if let Some(p) = ev.endpoint() {
            bump(&mut s.endpoints, short(p).as_ref(), 1);
        }
        let tls_state: Option<Cow<str>> = if let Some(t) = ev.tls() {
            Some(match (t.state.as_ref(), t.reason, t.client_id) {
                ("none", Some(r), _) => format!("none ({r})").into(),
                ("established", _, Some(id)) => {
                    bump(&mut s.identities, short(id).as_ref(), 1);
                    "established".into()
                }
                (st, _, _) => st.to_string().into(),
            })
        } else if msg == "Peeked bytes from TCP stream" {
            Some(if ev.sz() == Some(0) {
                "peek sz=0".into()
            } else {
                "peek sz>0".into()
            })
        } else if err.contains("identity required")
            || err.contains("must be mutually authenticated")
        {
            Some("plaintext refused".into())
        } else {
            None
        };
        if let Some(t) = tls_state {
            let port = ev.port().map_or_else(|| "-".to_string(), |p| p.to_string());
            bump_in(
                slot(&mut s.tls, &port),
                short(&t).as_ref(),
                1,
                MAX_NESTED_KEYS,
            );
        }
        for id in ev.identities() {
            if ev.tls().is_none() {
                bump(&mut s.identities, short(id).as_ref(), 1);
            }
        }
        if loud && !self.engine.knows(&ev.text) {
            let t = template(&format!("{} {}", ev.target(), ev.message()));
            record_kind(&mut self.summary.unknown, t, source, ev.line, ev.level);
        }
    }
}

fn record_kind(
    m: &mut BTreeMap<String, Kind>,
    key: String,
    source: &str,
    line: u64,
    level: Option<Level>,
) {
    let key = if m.len() >= MAX_KEYS && !m.contains_key(&key) {
        OTHER.to_string()
    } else {
        key
    };
    let k = m.entry(key).or_insert_with(|| Kind {
        count: 0,
        first_line: line,
        last_line: line,
        source: source.to_string(),
        level,
    });
    k.count += 1;
    k.last_line = line;
}

fn connect_kind(t: &str) -> &'static str {
    let t = t.to_ascii_lowercase();
    if t.contains("timed out") || t.contains("os error 110") {
        "timeout"
    } else if t.contains("refused") {
        "refused"
    } else if t.contains("no route") || t.contains("unreachable") {
        "no route"
    } else if t.contains("reset") {
        "reset"
    } else {
        "other"
    }
}

impl SummaryAcc<'_> {
    /// A line of exposition text: counted as an event, read into its
    /// snapshot's tables (never into the log tables: its labels are not a
    /// log line's fields).
    fn metric(&mut self, source: &str, ev: &Event<'_>) {
        let s = &mut self.summary;
        s.events += 1;
        s.lines += u64::from(ev.lines);
        let src = entry(&mut s.sources, source);
        src.events += 1;
        src.lines += u64::from(ev.lines);
        *s.producers.entry(ev.producer.as_str()).or_insert(0) += 1;
        match ev.metric {
            Some(Metric::Sample { name, value, .. }) => s
                .metrics
                .sample(source, ev.line, name, value, &ev.text)
                .add(ev, name, value),
            Some(Metric::Pod { name, .. }) => s.metrics.header(source, ev.line, name),
            Some(Metric::Eof) => s.metrics.end(),
            _ => {}
        }
    }
}

/// What a count of cut lines means.
pub const CUT_NOTE: &str = "lines longer than --max-line were read only up to it";

impl Accumulator for SummaryAcc<'_> {
    fn cut(&mut self, _: &str, _: crate::input::Cut) {
        self.summary.cut_lines += 1;
    }

    fn record(&mut self, source: &str, rec: &Record<'_>) {
        match rec {
            Record::Event(ev) if ev.metric.is_some() => self.metric(source, ev),
            Record::Event(ev) => self.event(source, ev),
            Record::Unparsed { line, text, .. } => {
                let s = &mut self.summary;
                s.unparsed += 1;
                s.lines += 1;
                let src = entry(&mut s.sources, source);
                src.unparsed += 1;
                src.lines += 1;
                if !text.trim().is_empty() {
                    let t = template(text);
                    record_kind(
                        &mut s.unknown,
                        format!("(unparsed) {t}"),
                        source,
                        *line,
                        None,
                    );
                }
            }
        }
    }
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
                bump_in(&mut d.endpoints, a.as_str(), n, MAX_NESTED_KEYS);
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

impl Summary {
    /// Per table at its cap, the lines under `(other)`.
    fn folded(&self) -> BTreeMap<&'static str, u64> {
        let other = |m: &BTreeMap<String, u64>| m.get(OTHER).copied().unwrap_or(0);
        let kinds = |m: &BTreeMap<String, Kind>| m.get(OTHER).map_or(0, |k| k.count);
        let dests = self.destinations.get(OTHER);
        let clients = self.clients.get(OTHER);
        let tls_ports = self.tls.get(OTHER).map_or(0, |m| m.values().sum());
        let pairs = [
            ("pods", other(&self.pods)),
            ("containers", other(&self.containers)),
            ("error_kinds", kinds(&self.error_kinds)),
            ("unknown", kinds(&self.unknown)),
            ("destinations", dests.map_or(0, |d| d.events)),
            (
                "destination_endpoints",
                self.destinations
                    .values()
                    .map(|d| other(&d.endpoints))
                    .sum(),
            ),
            (
                "destination_statuses",
                self.destinations
                    .values()
                    .map(|d| d.statuses.get(&0).copied().unwrap_or(0))
                    .sum(),
            ),
            ("clients", clients.map_or(0, |p| p.events)),
            ("endpoints", other(&self.endpoints)),
            ("tls_ports", tls_ports),
            ("tls_states", self.tls.values().map(other).sum()),
            ("identities", other(&self.identities)),
            ("statuses", self.statuses.get(&0).copied().unwrap_or(0)),
        ];
        pairs.into_iter().filter(|(_, n)| *n > 0).collect()
    }
}

/// What the `folded` counts mean, after the tables' names.
fn folded_note() -> String {
    format!(
        "tables were full ({MAX_KEYS} keys, {MAX_NESTED_KEYS} within a row): \
         lines of further keys are counted under {OTHER}"
    )
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

/// Subnet of an address for grouping peers: /24 for IPv4, /64 for IPv6.
pub fn subnet(ip: &str) -> String {
    if let Some((a, _)) = ip.rsplit_once('.').filter(|_| ip.contains('.')) {
        return format!("{a}.0/24");
    }
    let parts: Vec<&str> = ip.split(':').collect();
    if parts.len() > 4 {
        return format!("{}::/64", parts[..4].join(":"));
    }
    ip.to_string()
}

fn top<K: Clone, V, F: Fn(&V) -> u64>(m: &BTreeMap<K, V>, n: usize, key: F) -> Vec<(K, &V)> {
    let mut v: Vec<(K, &V)> = m.iter().map(|(k, v)| (k.clone(), v)).collect();
    v.sort_by_key(|(_, x)| std::cmp::Reverse(key(x)));
    v.truncate(n);
    v
}

/// The JSON document of `summarize --format json` (stable keys).
#[derive(Serialize)]
pub struct SummaryDoc<'a> {
    pub overview: Overview<'a>,
    pub error_kinds: Vec<KindRow<'a>>,
    pub destinations: Vec<DestRow<'a>>,
    pub clients: Vec<PeerRow<'a>>,
    pub client_subnets: Vec<SubnetRow>,
    pub endpoints: Vec<(String, u64)>,
    pub tls: &'a BTreeMap<String, BTreeMap<String, u64>>,
    pub identities: Vec<(String, u64)>,
    pub http_statuses: &'a BTreeMap<u16, u64>,
    pub timeline: Timeline,
    pub unknown: Vec<KindRow<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricsDoc>,
}

#[derive(Serialize)]
pub struct Overview<'a> {
    pub sources: &'a BTreeMap<String, SourceStats>,
    pub lines: u64,
    pub events: u64,
    pub unparsed: u64,
    pub producers: &'a BTreeMap<&'static str, u64>,
    pub levels: &'a BTreeMap<&'static str, u64>,
    pub era: Option<&'static str>,
    pub pods: &'a BTreeMap<String, u64>,
    pub containers: &'a BTreeMap<String, u64>,
    pub uptime: Option<(f64, f64)>,
    pub wall_clock: Option<(String, String)>,
    #[serde(skip_serializing_if = "is_zero")]
    pub cut_lines: u64,
    /// Tables that reached their cap of keys: the lines counted under
    /// `(other)` for keys past it.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub folded: BTreeMap<&'static str, u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize)]
pub struct KindRow<'a> {
    pub template: &'a str,
    #[serde(flatten)]
    pub kind: &'a Kind,
}

#[derive(Serialize)]
pub struct DestRow<'a> {
    pub dst: &'a str,
    #[serde(flatten)]
    pub dest: &'a Dest,
}

#[derive(Serialize)]
pub struct PeerRow<'a> {
    pub ip: &'a str,
    #[serde(flatten)]
    pub peer: &'a Peer,
}

#[derive(Serialize, Clone)]
pub struct SubnetRow {
    pub subnet: String,
    pub ips: u64,
    pub events: u64,
    pub errors: u64,
    pub closes_with_error: u64,
}

#[derive(Serialize)]
pub struct Timeline {
    pub clock: &'static str,
    pub start: Option<i64>,
    pub bucket_seconds: i64,
    pub events: Vec<u64>,
    pub warnings_and_errors: Vec<u64>,
}

const BUCKETS: i64 = 48;

impl Summary {
    pub fn doc(&self, n: usize) -> SummaryDoc<'_> {
        let mut subnets: BTreeMap<String, SubnetRow> = BTreeMap::new();
        for (ip, p) in &self.clients {
            let key = subnet(ip);
            let r = subnets.entry(key.clone()).or_insert(SubnetRow {
                subnet: key,
                ips: 0,
                events: 0,
                errors: 0,
                closes_with_error: 0,
            });
            r.ips += 1;
            r.events += p.events;
            r.errors += p.errors;
            r.closes_with_error += p.closes_with_error;
        }
        let mut subnets: Vec<SubnetRow> = subnets.into_values().collect();
        subnets.sort_by_key(|r| std::cmp::Reverse((r.closes_with_error, r.events)));
        subnets.truncate(n);
        let (start, end) = (
            self.seconds.keys().next().copied(),
            self.seconds.keys().next_back().copied(),
        );
        let span = match (start, end) {
            (Some(a), Some(b)) => b.saturating_sub(a).saturating_add(1),
            _ => 1,
        };
        let bucket = (span / BUCKETS).saturating_add(1);
        let nb = (span / bucket + 1) as usize;
        let mut events = vec![0; nb];
        let mut loud = vec![0; nb];
        if let Some(a) = start {
            for (k, (e, l)) in &self.seconds {
                let i = (k.saturating_sub(a) / bucket) as usize;
                events[i] += e;
                loud[i] += l;
            }
        }
        SummaryDoc {
            overview: Overview {
                sources: &self.sources,
                lines: self.lines,
                events: self.events,
                unparsed: self.unparsed,
                producers: &self.producers,
                levels: &self.levels,
                era: self.era.era().map(|e| e.as_str()),
                pods: &self.pods,
                containers: &self.containers,
                uptime: self.uptime,
                wall_clock: self.wall.clone(),
                cut_lines: self.cut_lines,
                folded: self.folded(),
            },
            error_kinds: top(&self.error_kinds, n, |k| k.count)
                .into_iter()
                .map(|(t, k)| KindRow {
                    template: self.error_kinds.get_key_value(&t).map_or("", |x| x.0),
                    kind: k,
                })
                .collect(),
            destinations: top(&self.destinations, n, |d| {
                d.failfast + d.connect_errors.values().sum::<u64>() + d.requests_failed
            })
            .into_iter()
            .map(|(k, d)| DestRow {
                dst: self.destinations.get_key_value(&k).map_or("", |x| x.0),
                dest: d,
            })
            .collect(),
            clients: top(&self.clients, n, |p| p.events)
                .into_iter()
                .map(|(k, p)| PeerRow {
                    ip: self.clients.get_key_value(&k).map_or("", |x| x.0),
                    peer: p,
                })
                .collect(),
            client_subnets: subnets,
            endpoints: top(&self.endpoints, n, |c| *c)
                .into_iter()
                .map(|(k, c)| (k, *c))
                .collect(),
            tls: &self.tls,
            identities: top(&self.identities, n, |c| *c)
                .into_iter()
                .map(|(k, c)| (k, *c))
                .collect(),
            http_statuses: &self.statuses,
            timeline: Timeline {
                clock: if self.seconds_are_wall {
                    "wall"
                } else {
                    "uptime"
                },
                start,
                bucket_seconds: bucket,
                events,
                warnings_and_errors: loud,
            },
            unknown: top(&self.unknown, n, |k| k.count)
                .into_iter()
                .map(|(t, k)| KindRow {
                    template: self.unknown.get_key_value(&t).map_or("", |x| x.0),
                    kind: k,
                })
                .collect(),
            metrics: metrics_summary::doc(&self.metrics, n),
        }
    }
}

fn sparkline(v: &[u64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = v.iter().copied().max().unwrap_or(0).max(1);
    v.iter()
        .map(|&x| {
            if x == 0 {
                ' '
            } else {
                BARS[((x * 7) / max) as usize]
            }
        })
        .collect()
}

pub(super) fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    if let Some((w, _)) = terminal_width() {
        t.set_width(w);
    } else {
        t.set_width(160);
    }
    t.set_header(header.iter().map(Cell::new));
    t
}

fn terminal_width() -> Option<(u16, u16)> {
    let cols: u16 = std::env::var("COLUMNS").ok()?.parse().ok()?;
    Some((cols, 0))
}

pub(super) fn num(n: u64) -> Cell {
    Cell::new(n).set_alignment(CellAlignment::Right)
}

fn join_counts<K: std::fmt::Display>(m: &BTreeMap<K, u64>, n: usize) -> String {
    let mut v: Vec<(&K, &u64)> = m.iter().collect();
    v.sort_by_key(|(_, c)| std::cmp::Reverse(**c));
    v.iter()
        .take(n)
        .map(|(k, c)| format!("{k} {c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn human(s: &Summary, n: usize, st: &Style) -> String {
    let d = s.doc(n);
    let mut o = String::new();
    let ov = &d.overview;
    let _ = writeln!(o, "{}", st.bold("Overview"));
    let mut t = table(&["source", "lines", "events", "unparsed", "warn", "error"]);
    for (name, x) in ov.sources {
        t.add_row(vec![
            Cell::new(name),
            num(x.lines),
            num(x.events),
            num(x.unparsed),
            num(x.warnings),
            num(x.errors),
        ]);
    }
    if ov.sources.len() > 1 {
        let w: u64 = ov.sources.values().map(|x| x.warnings).sum();
        let e: u64 = ov.sources.values().map(|x| x.errors).sum();
        t.add_row(vec![
            Cell::new("(all)"),
            num(ov.lines),
            num(ov.events),
            num(ov.unparsed),
            num(w),
            num(e),
        ]);
    }
    let _ = writeln!(o, "{t}");
    if ov.cut_lines > 0 {
        let _ = writeln!(o, "cut:       {} {}", ov.cut_lines, CUT_NOTE);
    }
    if !ov.folded.is_empty() {
        let _ = writeln!(
            o,
            "folded:    {} — {}",
            join_counts(&ov.folded, 20),
            folded_note()
        );
    }
    let _ = writeln!(o, "producers: {}", join_counts(ov.producers, 12));
    let _ = writeln!(o, "levels:    {}", join_counts(ov.levels, 5));
    if let Some(e) = ov.era {
        let _ = writeln!(o, "format:    Linkerd {e}");
    }
    if !ov.pods.is_empty() {
        let _ = writeln!(o, "pods:      {}", join_counts(ov.pods, 8));
    }
    if !ov.containers.is_empty() {
        let _ = writeln!(o, "containers: {}", join_counts(ov.containers, 8));
    }
    if let Some((a, b)) = ov.uptime {
        let _ = writeln!(o, "uptime:    {a:.3}s → {b:.3}s");
    }
    if let Some((a, b)) = &ov.wall_clock {
        let _ = writeln!(o, "time:      {a} → {b}");
    }
    if !d.error_kinds.is_empty() {
        let _ = writeln!(o, "\n{}", st.bold("Error kinds"));
        let mut t = table(&[
            "count",
            "level",
            "message (addresses, numbers masked)",
            "first",
            "last",
        ]);
        for r in &d.error_kinds {
            t.add_row(vec![
                num(r.kind.count),
                Cell::new(r.kind.level.map_or("-", |l| l.as_str())),
                Cell::new(r.template),
                num(r.kind.first_line),
                num(r.kind.last_line),
            ]);
        }
        let _ = writeln!(o, "{t}");
    }
    if !d.destinations.is_empty() {
        let _ = writeln!(o, "\n{}", st.bold("Destinations"));
        let mut t = table(&[
            "destination",
            "events",
            "failed",
            "fail-fast",
            "connect errors",
            "failing endpoints",
            "statuses",
        ]);
        for r in &d.destinations {
            t.add_row(vec![
                Cell::new(r.dst),
                num(r.dest.events),
                num(r.dest.requests_failed),
                num(r.dest.failfast),
                Cell::new(join_counts(&r.dest.connect_errors, 5)),
                Cell::new(join_counts(&r.dest.endpoints, 6)),
                Cell::new(join_counts(&r.dest.statuses, 5)),
            ]);
        }
        let _ = writeln!(o, "{t}");
    }
    if !d.client_subnets.is_empty() {
        let _ = writeln!(o, "\n{}", st.bold("Clients by subnet"));
        let mut t = table(&["subnet", "IPs", "events", "errors", "closed with error"]);
        for r in &d.client_subnets {
            t.add_row(vec![
                Cell::new(&r.subnet),
                num(r.ips),
                num(r.events),
                num(r.errors),
                num(r.closes_with_error),
            ]);
        }
        let _ = writeln!(o, "{t}");
        let mut t = table(&["client IP", "events", "errors", "closed with error"]);
        for r in &d.clients {
            t.add_row(vec![
                Cell::new(r.ip),
                num(r.peer.events),
                num(r.peer.errors),
                num(r.peer.closes_with_error),
            ]);
        }
        let _ = writeln!(o, "{t}");
    }
    if !d.endpoints.is_empty() {
        let _ = writeln!(
            o,
            "endpoints: {}",
            d.endpoints
                .iter()
                .map(|(k, c)| format!("{k} {c}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !d.tls.is_empty() {
        let _ = writeln!(o, "\n{}", st.bold("TLS at accept, by port"));
        let mut t = table(&["port", "states"]);
        for (port, states) in d.tls {
            t.add_row(vec![Cell::new(port), Cell::new(join_counts(states, 8))]);
        }
        let _ = writeln!(o, "{t}");
    }
    if !d.identities.is_empty() {
        let _ = writeln!(
            o,
            "identities: {}",
            d.identities
                .iter()
                .map(|(k, c)| format!("{k} {c}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !d.http_statuses.is_empty() {
        let _ = writeln!(o, "HTTP statuses: {}", join_counts(d.http_statuses, 12));
    }
    let tl = &d.timeline;
    if tl.events.len() > 1 {
        let _ = writeln!(
            o,
            "\n{} ({} clock, {}s per column)",
            st.bold("Over time"),
            tl.clock,
            tl.bucket_seconds
        );
        let _ = writeln!(o, "  events  |{}|", sparkline(&tl.events));
        let _ = writeln!(
            o,
            "  warn+err|{}|",
            st.red(&sparkline(&tl.warnings_and_errors))
        );
    }
    if let Some(m) = &d.metrics {
        metrics_summary::human(&mut o, m, st);
    }
    if !d.unknown.is_empty() {
        let _ = writeln!(
            o,
            "\n{}",
            st.bold("Lines no rule knows (warnings, errors and unparsed text)")
        );
        let mut t = table(&["count", "template", "first", "source"]);
        for r in &d.unknown {
            t.add_row(vec![
                num(r.kind.count),
                Cell::new(r.template),
                num(r.kind.first_line),
                Cell::new(&r.kind.source),
            ]);
        }
        let _ = writeln!(o, "{t}");
    }
    o
}

pub fn markdown(s: &Summary, n: usize) -> String {
    let d = s.doc(n);
    let mut o = String::new();
    let ov = &d.overview;
    let _ = writeln!(o, "## Log summary\n\n| source | lines | events | unparsed | warn | error |\n|---|---:|---:|---:|---:|---:|");
    for (name, x) in ov.sources {
        let _ = writeln!(
            o,
            "| {name} | {} | {} | {} | {} | {} |",
            x.lines, x.events, x.unparsed, x.warnings, x.errors
        );
    }
    let _ = writeln!(
        o,
        "\nProducers: {}. Levels: {}.",
        join_counts(ov.producers, 12),
        join_counts(ov.levels, 5)
    );
    if let Some(e) = ov.era {
        let _ = writeln!(o, "Log format of Linkerd {e}.");
    }
    if ov.cut_lines > 0 {
        let _ = writeln!(o, "\n{} {}.", ov.cut_lines, CUT_NOTE);
    }
    if !ov.folded.is_empty() {
        let _ = writeln!(
            o,
            "\nFolded: {} — {}.",
            join_counts(&ov.folded, 20),
            folded_note()
        );
    }
    if !d.error_kinds.is_empty() {
        let _ = writeln!(
            o,
            "\n### Error kinds\n\n| count | message | first line |\n|---:|---|---:|"
        );
        for r in &d.error_kinds {
            let _ = writeln!(
                o,
                "| {} | `{}` | {} |",
                r.kind.count,
                r.template.replace('|', "\\|"),
                r.kind.first_line
            );
        }
    }
    if !d.destinations.is_empty() {
        let _ = writeln!(o, "\n### Destinations\n\n| destination | failed | fail-fast | connect errors | failing endpoints |\n|---|---:|---:|---|---|");
        for r in &d.destinations {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} |",
                r.dst,
                r.dest.requests_failed,
                r.dest.failfast,
                join_counts(&r.dest.connect_errors, 5),
                join_counts(&r.dest.endpoints, 6)
            );
        }
    }
    if !d.client_subnets.is_empty() {
        let _ = writeln!(o, "\n### Clients by subnet\n\n| subnet | IPs | events | closed with error |\n|---|---:|---:|---:|");
        for r in &d.client_subnets {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} |",
                r.subnet, r.ips, r.events, r.closes_with_error
            );
        }
    }
    if !d.tls.is_empty() {
        let _ = writeln!(o, "\n### TLS at accept\n\n| port | states |\n|---|---|");
        for (p, states) in d.tls {
            let _ = writeln!(o, "| {p} | {} |", join_counts(states, 8));
        }
    }
    if let Some(m) = &d.metrics {
        metrics_summary::markdown(&mut o, m);
    }
    o
}
