//! The summary ranked into the document `summarize --format json` prints
//! and the human and Markdown tables show: the top rows of each table.

use super::{
    Dest, Kind, Peer, SourceStats, Summary, MAX_DEST_ENDPOINTS, MAX_KEYS, MAX_NESTED_KEYS, OTHER,
};
use crate::report::metrics_summary::{self, MetricsDoc};
use serde::Serialize;
use std::collections::BTreeMap;

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
pub(super) fn folded_note() -> String {
    format!(
        "tables were full ({MAX_KEYS} keys, {MAX_NESTED_KEYS} within a row, \
         {MAX_DEST_ENDPOINTS} endpoints across the destinations): \
         lines of further keys are counted under {OTHER}"
    )
}
