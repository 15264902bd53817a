//! Reading events into a [`Summary`]: one accumulator per block of input.

use super::lean::{self, Line};
use super::Keyed;
use super::{
    bump, bump_endpoint, bump_in, short, slot, template, Dest, Fast, Kind, Peer, SourceStats,
    Summary, MAX_KEYS, MAX_NESTED_KEYS, MAX_SECONDS, OTHER,
};
use crate::parse::era::{format_cue, EraCue};
use crate::parse::template::Seen;
use crate::parse::typed::host_of;
use crate::parse::{Event, Level, Metric, Producer, Record};
use crate::pipeline::{Accumulator, Around};
use crate::rules::engine::{Engine, EraSampler, Wording};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The accumulator of one block; `engine` tells which messages some rule knows.
pub struct SummaryAcc<'e> {
    summary: Summary,
    /// The largest tables, hashed while the block is read and sorted into
    /// the summary at its end.
    destinations: Fast<Dest>,
    clients: Fast<Peer>,
    endpoints: Fast<u64>,
    engine: &'e Engine,
    last_wall: Option<(String, i64)>,
    era_sampler: EraSampler,
    /// A buffer for a line's era cues.
    era_found: Vec<EraCue>,
    running: Running,
}

/// Counts kept apart while a block is read, for the tables every line
/// adds to (each a look-up by name) and added to them at its end.
#[derive(Default)]
struct Running {
    /// A block is of one source: its name and counts.
    source: Option<(String, SourceStats)>,
    producers: Vec<(Producer, u64)>,
    levels: [u64; Level::ALL.len()],
}

impl Running {
    /// The counts of `source`'s lines.
    fn source(&mut self, s: &mut Summary, source: &str) -> &mut SourceStats {
        if self.source.as_ref().is_some_and(|(n, _)| n != source) {
            self.flush_source(s);
        }
        &mut self
            .source
            .get_or_insert_with(|| (source.to_string(), SourceStats::default()))
            .1
    }

    fn flush_source(&mut self, s: &mut Summary) {
        if let Some((name, c)) = self.source.take() {
            let e = s.sources.at(&name);
            e.lines += c.lines;
            e.events += c.events;
            e.unparsed += c.unparsed;
            e.warnings += c.warnings;
            e.errors += c.errors;
        }
    }

    /// Counts an event (a log line's or a metric sample's) in the totals
    /// and its source's, and by producer.
    fn count(
        &mut self,
        s: &mut Summary,
        source: &str,
        producer: Producer,
        lines: u32,
    ) -> &mut SourceStats {
        s.events += 1;
        s.lines += u64::from(lines);
        match self.producers.iter_mut().find(|(p, _)| *p == producer) {
            Some((_, n)) => *n += 1,
            None => self.producers.push((producer, 1)),
        }
        let src = self.source(s, source);
        src.events += 1;
        src.lines += u64::from(lines);
        src
    }

    fn add_to(mut self, s: &mut Summary) {
        self.flush_source(s);
        for (p, n) in self.producers {
            *s.producers.entry(p.as_str()).or_insert(0) += n;
        }
        for (l, n) in Level::ALL.iter().zip(self.levels) {
            if n > 0 {
                *s.levels.entry(l.as_str()).or_insert(0) += n;
            }
        }
    }
}

impl<'e> SummaryAcc<'e> {
    pub fn new(engine: &'e Engine) -> Self {
        SummaryAcc {
            summary: Summary::default(),
            destinations: Fast::default(),
            clients: Fast::default(),
            endpoints: Fast::default(),
            engine,
            last_wall: None,
            era_sampler: EraSampler::default(),
            era_found: Vec::new(),
            running: Running::default(),
        }
    }

    /// What the block held.
    pub fn into_summary(mut self) -> Summary {
        let s = &mut self.summary;
        self.running.add_to(s);
        s.destinations = self.destinations.into_iter().collect();
        s.clients = self.clients.into_iter().collect();
        s.endpoints = self.endpoints.into_iter().collect();
        self.summary
    }

    fn second_of(&mut self, wall: Option<&str>, uptime: Option<f64>) -> Option<(i64, bool)> {
        if let Some(ts) = wall {
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
        uptime.map(|u| (u as i64, false))
    }

    fn event(&mut self, source: &str, ev: &Event<'_>) {
        let wording = match self.engine.era_by_shape(ev, &mut self.era_found) {
            Some(bounds) => Wording::Shaped {
                cues: &self.era_found,
                bounds,
            },
            None => Wording::Unknown,
        };
        self.era_sampler
            .observe(self.engine, ev, wording, &mut self.summary.era);
        self.tally(source, ev.line, ev);
        lean::learn(self.engine, ev);
    }

    /// Counts a line in every table but the era's.
    fn tally<'l>(&mut self, source: &str, n: u64, ev: &impl Line<'l>) {
        let src = self
            .running
            .count(&mut self.summary, source, ev.producer(), ev.lines());
        match ev.level() {
            Some(Level::Warn) => src.warnings += 1,
            Some(Level::Error) => src.errors += 1,
            _ => {}
        }
        if let Some(l) = ev.level() {
            self.running.levels[l as usize] += 1;
        }
        let s = &mut self.summary;
        if let Some(p) = ev.pod() {
            bump(&mut s.pods, short(p).as_ref(), 1);
        }
        if let Some(c) = ev.container() {
            bump(&mut s.containers, short(c).as_ref(), 1);
        }
        if let Some(u) = ev.uptime() {
            s.uptime = Some(s.uptime.map_or((u, u), |(a, b)| (a.min(u), b.max(u))));
        }
        if let Some(ts) = ev.wall() {
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
        let loud = ev.level().is_some_and(|l| l >= Level::Warn);
        let failing = loud || error.is_some();
        if let Some((sec, wall)) = self.second_of(ev.wall(), ev.uptime()) {
            let s = &mut self.summary;
            s.seconds_are_wall |= wall;
            if s.seconds.len() < MAX_SECONDS || s.seconds.contains_key(&sec) {
                let e = s.seconds.entry(sec).or_insert((0, 0));
                e.0 += 1;
                e.1 += u64::from(loud);
            }
        }
        let s = &mut self.summary;
        let msg = ev.message();
        if failing {
            let text = match error {
                Some(e) if !msg.ends_with(e) => format!("{msg} error={e}"),
                _ if msg.is_empty() => ev.text().to_string(),
                _ => msg.to_string(),
            };
            record_kind(&mut s.error_kinds, template(&text), source, n, ev.level());
        }
        let status = ev.status();
        if let Some(st) = status {
            bump(&mut s.statuses, &st, 1);
        }
        let endpoint = ev.endpoint();
        let err = error.unwrap_or("");
        let says = ev.says();
        if let Some(dst) = ev.dst() {
            let d = slot(&mut self.destinations, &dst);
            d.events += 1;
            d.requests_failed += u64::from(says.request_failed);
            d.failfast += u64::from(says.failfast);
            if says.connect_error {
                let kind = connect_kind(&format!("{msg} {err}"));
                *d.connect_errors.entry(kind.to_string()).or_insert(0) += 1;
                if let Some(p) = endpoint {
                    let k = short(p);
                    bump_endpoint(&mut d.endpoints, &k, 1, &mut s.dest_endpoint_keys);
                }
            }
            if let Some(st) = status {
                bump_in(&mut d.statuses, &st, 1, MAX_NESTED_KEYS);
            }
        }
        if let Some(c) = ev.client_addr().filter(|c| !c.starts_with(':')) {
            let p = slot(&mut self.clients, host_of(c));
            p.events += 1;
            p.errors += u64::from(failing);
            p.closes_with_error += u64::from(says.closed && error.is_some());
        }
        if let Some(p) = endpoint {
            bump(&mut self.endpoints, short(p).as_ref(), 1);
        }
        let tls = ev.tls();
        let tls_state: Option<Cow<str>> = if let Some(t) = &tls {
            Some(match (t.state.as_ref(), t.reason, t.client_id) {
                ("none", Some(r), _) => format!("none ({r})").into(),
                ("established", _, Some(id)) => {
                    bump(&mut s.identities, short(id).as_ref(), 1);
                    "established".into()
                }
                (st, _, _) => st.to_string().into(),
            })
        } else if says.peeked {
            Some(if ev.sz() == Some(0) {
                "peek sz=0".into()
            } else {
                "peek sz>0".into()
            })
        } else if says.plaintext_refused {
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
        // A TLS state's identity was counted with it.
        if tls.is_none() {
            for id in ev.identities() {
                bump(&mut s.identities, short(id).as_ref(), 1);
            }
        }
        if loud && !self.engine.knows(ev.text()) {
            let t = template(&format!("{} {}", ev.target(), msg));
            record_kind(&mut self.summary.unknown, t, source, n, ev.level());
        }
    }
}

/// What the tables ask of a line's message and error. Their wording has
/// no digit, so the answers are the same for every line of a shape.
#[derive(Clone, Copy)]
pub(super) struct Says {
    request_failed: bool,
    failfast: bool,
    connect_error: bool,
    closed: bool,
    /// A TLS detection's peek, whose `sz` tells what it found.
    peeked: bool,
    plaintext_refused: bool,
}

impl Says {
    pub(super) fn of(msg: &str, err: Option<&str>) -> Says {
        let err = err.unwrap_or("");
        // Most lines have no error: no search is set up for them.
        let err_has = |t: &str| !err.is_empty() && err.contains(t);
        let ff = |t: &str| t.contains("fail-fast") || t.contains("failfast");
        Says {
            request_failed: msg.contains("request failed")
                || msg.starts_with("Failed to proxy request"),
            failfast: ff(msg) || (!err.is_empty() && ff(err)),
            connect_error: msg.starts_with("Failed to connect")
                || err_has("error trying to connect")
                || err_has("connect timed out"),
            closed: msg == "Connection closed",
            peeked: msg == "Peeked bytes from TCP stream",
            plaintext_refused: err_has("identity required")
                || err_has("must be mutually authenticated"),
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
        self.running
            .count(&mut self.summary, source, ev.producer, ev.lines);
        let s = &mut self.summary;
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

impl Accumulator for SummaryAcc<'_> {
    fn cut(&mut self, _: &str, _: crate::input::Cut) {
        self.summary.cut_lines += 1;
    }

    fn wants_lean(&self) -> bool {
        self.engine.tells_by_shape()
    }

    /// A line of a shape with a plan ([`lean`]) is counted by it.
    fn lean(
        &mut self,
        source: &str,
        n: u64,
        seen: &Seen<'_>,
        _: Option<&Event<'_>>,
        _: &Around<'_>,
    ) -> bool {
        let engine = self.engine;
        lean::read(engine, seen, |line, cues| {
            let cue = format_cue(seen.producer, seen.thread, seen.timestamp, seen.target);
            let proxy = seen.producer.is_proxy();
            self.era_sampler
                .lean(cue, proxy, cues, &mut self.summary.era);
            self.tally(source, n, line);
        })
        .is_some()
    }

    fn record(&mut self, source: &str, rec: &Record<'_>) {
        match rec {
            Record::Event(ev) if ev.metric.is_some() => self.metric(source, ev),
            Record::Event(ev) => self.event(source, ev),
            Record::Unparsed { line, text, .. } => {
                let s = &mut self.summary;
                s.unparsed += 1;
                s.lines += 1;
                let src = self.running.source(s, source);
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
