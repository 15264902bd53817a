//! The metrics section of `lpa summarize`: from the latest snapshot of each
//! pod, the authorities with the most failures, errno and error-kind
//! counts, authorization denials, endpoints per balancer, certificate
//! expiry against the snapshot's clock, and file descriptors.

use super::style::Style;
use super::table::{field, fit, heading, num, table};
use super::text::{code, code_cell};
use crate::parse::typed::port_of;
use crate::parse::Event;
use crate::rules::snapshot::{Pod, Reduce, Snapshots};
use comfy_table::Cell;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Keys kept per table of one snapshot; a summary holds two snapshots of
/// each of up to 256 pods, so this bounds its memory.
const MAX_KEYS: usize = 128;

/// The row of outbound failures no authority label accounts for.
const NO_AUTHORITY: &str = "(no authority label)";

/// Failures the proxy itself reported for one authority.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Failures {
    pub failfast: f64,
    pub loadshed: f64,
    pub timeouts: f64,
    /// Endpoints whose connects never completed (`tcp_open_total` 0).
    pub endpoints_never_connected: u64,
}

impl Failures {
    fn total(&self) -> f64 {
        self.failfast + self.loadshed + self.timeouts + self.endpoints_never_connected as f64
    }

    fn add(&mut self, o: &Failures) {
        self.failfast += o.failfast;
        self.loadshed += o.loadshed;
        self.timeouts += o.timeouts;
        self.endpoints_never_connected += o.endpoints_never_connected;
    }
}

/// What one snapshot holds for the summary.
#[derive(Debug, Clone, Default)]
pub struct Tables {
    authorities: BTreeMap<String, Failures>,
    /// Outbound failures of counters without an authority label (2.11+);
    /// the route-level families of 2.15+ count the same requests by Service.
    unlabelled: Failures,
    errno: BTreeMap<String, f64>,
    /// Error kind → family → count: each family that exports a kind counts
    /// the same requests, so a kind's count is its largest family's.
    error_kinds: BTreeMap<String, BTreeMap<String, f64>>,
    denials: BTreeMap<String, f64>,
    /// Balancer (its Service, or a control-plane address) → (ready, pending).
    balancers: BTreeMap<String, (f64, f64)>,
    cert_expiry: Option<f64>,
    open_fds: Option<f64>,
    max_fds: Option<f64>,
}

fn add<V: Default>(m: &mut BTreeMap<String, V>, k: &str, f: impl FnOnce(&mut V)) {
    if let Some(v) = m.get_mut(k) {
        f(v);
    } else if m.len() < MAX_KEYS {
        f(m.entry(k.to_string()).or_default());
    }
}

impl Reduce for Tables {
    fn merge(&mut self, o: Tables) {
        for (k, v) in o.authorities {
            add(&mut self.authorities, &k, |x| x.add(&v));
        }
        self.unlabelled.add(&o.unlabelled);
        for (k, fams) in o.error_kinds {
            add(&mut self.error_kinds, &k, |x| {
                for (f, v) in fams {
                    *x.entry(f).or_insert(0.0) += v;
                }
            });
        }
        for (m, o) in [(&mut self.errno, o.errno), (&mut self.denials, o.denials)] {
            for (k, v) in o {
                add(m, &k, |x| *x += v);
            }
        }
        for (k, (r, p)) in o.balancers {
            add(&mut self.balancers, &k, |x| {
                x.0 += r;
                x.1 += p;
            });
        }
        self.cert_expiry = o.cert_expiry.or(self.cert_expiry);
        self.open_fds = o.open_fds.or(self.open_fds);
        self.max_fds = o.max_fds.or(self.max_fds);
    }

    fn weight(&self) -> usize {
        let keys = |n: usize| n * 128;
        keys(self.authorities.len())
            + keys(self.errno.len() + self.denials.len() + self.balancers.len())
            + self
                .error_kinds
                .values()
                .map(|f| keys(1 + f.len()))
                .sum::<usize>()
    }
}

impl Tables {
    /// Counts one sample in the tables it belongs to.
    pub fn add(&mut self, ev: &Event<'_>, name: &str, v: f64) {
        let l = |k: &str| ev.field(k).unwrap_or("");
        let service = || match (l("parent_name"), l("parent_namespace"), l("parent_port")) {
            ("", _, _) => l("addr").to_string(),
            (n, ns, p) => format!("{n}.{ns}.svc.cluster.local:{p}"),
        };
        let authority = || match l("authority") {
            "" => service(),
            a => a.to_string(),
        };
        match name {
            "tcp_open_total" if l("peer") == "dst" && l("direction") == "outbound" && v == 0.0 => {
                add(&mut self.authorities, &authority(), |f| {
                    f.endpoints_never_connected += 1
                });
            }
            "tcp_close_total" if !l("errno").is_empty() => {
                add(&mut self.errno, l("errno"), |x| *x += v);
            }
            "request_errors_total"
            | "inbound_http_errors_total"
            | "outbound_http_errors_total"
            | "inbound_tcp_errors_total"
            | "outbound_tcp_errors_total"
            | "outbound_http_route_request_statuses_total"
            | "outbound_grpc_route_request_statuses_total" => {
                let kind = match (l("error"), l("message")) {
                    ("", "") => return,
                    ("", m) => canonical_kind(m),
                    (e, _) => canonical_kind(e),
                };
                if !l("errno").is_empty() {
                    add(&mut self.errno, l("errno"), |x| *x += v);
                }
                let dir = match (l("direction"), name.split('_').next()) {
                    ("", Some(d @ ("inbound" | "outbound"))) => d,
                    (d, _) => d,
                };
                add(
                    &mut self.error_kinds,
                    format!("{dir} {kind}").trim_start(),
                    |x| *x.entry(name.to_string()).or_insert(0.0) += v,
                );
                let count = |f: &mut Failures| match kind.as_str() {
                    "failfast" => f.failfast += v,
                    "loadshed" => f.loadshed += v,
                    k if k.contains("timeout") => f.timeouts += v,
                    _ => {}
                };
                match authority() {
                    a if a.is_empty() && dir == "outbound" => count(&mut self.unlabelled),
                    a if a.is_empty() => {}
                    a => add(&mut self.authorities, &a, count),
                }
            }
            "inbound_http_authz_deny_total"
            | "inbound_tcp_authz_deny_total"
            | "inbound_tcp_authz_terminate_total" => {
                let server = match (l("srv_name"), port_of(l("target_addr"))) {
                    ("", Some(p)) => format!("port {p}"),
                    (s, _) => s.to_string(),
                };
                let client = match l("client_id") {
                    "" => format!("tls={}", l("tls")),
                    c => c.to_string(),
                };
                add(&mut self.denials, &format!("{server} ← {client}"), |x| {
                    *x += v
                });
            }
            "identity_cert_expiration_timestamp_seconds"
            | "control_identity_cert_expiration_timestamp_seconds" => self.cert_expiry = Some(v),
            "process_open_fds" => self.open_fds = Some(v),
            "process_max_fds" => self.max_fds = Some(v),
            n if n.ends_with("_balancer_endpoints") => {
                let ready = l("endpoint_state") == "ready";
                add(&mut self.balancers, &service(), |x| {
                    if ready {
                        x.0 += v
                    } else {
                        x.1 += v
                    }
                });
            }
            _ => {}
        }
    }
}

/// One name for a kind across releases and families (`FAIL_FAST` in the
/// route-level statuses, `failfast` in the error counters).
fn canonical_kind(kind: &str) -> String {
    let k = kind.to_ascii_lowercase().replace('_', " ");
    match k.as_str() {
        "fail fast" => "failfast".to_string(),
        "load shed" => "loadshed".to_string(),
        _ => k,
    }
}

#[derive(Debug, Serialize)]
pub struct AuthorityRow {
    pub authority: String,
    #[serde(flatten)]
    pub failures: Failures,
}

#[derive(Debug, Serialize)]
pub struct BalancerRow {
    pub pod: String,
    pub balancer: String,
    pub ready: f64,
    pub pending: f64,
}

#[derive(Debug, Serialize)]
pub struct ProxyRow {
    pub pod: String,
    /// 1, or 2 when an earlier snapshot of the same process was read too
    /// (the latest is shown).
    pub snapshots: u64,
    /// Seconds from the snapshot's own clock to the certificate's expiry.
    pub certificate_expires_in: Option<f64>,
    pub open_fds: Option<f64>,
    pub max_fds: Option<f64>,
}

/// `summarize --format json`'s `metrics` (present when the input held any).
#[derive(Debug, Serialize, Default)]
pub struct MetricsDoc {
    pub proxies: Vec<ProxyRow>,
    pub authorities: Vec<AuthorityRow>,
    pub errno: Vec<(String, f64)>,
    pub error_kinds: Vec<(String, f64)>,
    pub authz_denials: Vec<(String, f64)>,
    pub balancers: Vec<BalancerRow>,
    /// Snapshots not read (pods past what is kept).
    #[serde(skip_serializing_if = "is_zero")]
    pub snapshots_dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn ranked(m: BTreeMap<String, f64>, n: usize) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = m.into_iter().filter(|(_, c)| *c > 0.0).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

/// What `unlabelled` counts beyond the failures some authority's labels
/// account for: the requests only the unlabelled counters saw.
fn unattributed(t: &Tables) -> Failures {
    let mut labelled = Failures::default();
    for f in t.authorities.values() {
        labelled.add(f);
    }
    let u = &t.unlabelled;
    Failures {
        failfast: (u.failfast - labelled.failfast).max(0.0),
        loadshed: (u.loadshed - labelled.loadshed).max(0.0),
        timeouts: (u.timeouts - labelled.timeouts).max(0.0),
        endpoints_never_connected: 0,
    }
}

/// The section from every pod's latest snapshot, `n` rows per table.
pub fn doc(snaps: &Snapshots<Tables>, n: usize) -> Option<MetricsDoc> {
    let (pods, dropped): (Vec<Pod<Tables>>, u64) = snaps.clone().finish();
    if pods.is_empty() {
        return None;
    }
    let mut d = MetricsDoc {
        snapshots_dropped: dropped,
        ..MetricsDoc::default()
    };
    let mut auth: BTreeMap<String, Failures> = BTreeMap::new();
    let mut errno: BTreeMap<String, f64> = BTreeMap::new();
    let mut kinds: BTreeMap<String, f64> = BTreeMap::new();
    let mut deny: BTreeMap<String, f64> = BTreeMap::new();
    for p in &pods {
        let (s, before) = p.now_and_before();
        let t = &s.data;
        let pod = s.pod.clone().unwrap_or_else(|| s.source.clone());
        d.proxies.push(ProxyRow {
            pod: pod.clone(),
            snapshots: 1 + u64::from(before.is_some()),
            certificate_expires_in: t
                .cert_expiry
                .zip(s.clock.now())
                .map(|(e, (now, _))| e - now),
            open_fds: t.open_fds,
            max_fds: t.max_fds,
        });
        for (k, f) in &t.authorities {
            add(&mut auth, k, |x: &mut Failures| x.add(f));
        }
        let rest = unattributed(t);
        add(&mut auth, NO_AUTHORITY, |x| x.add(&rest));
        for (k, fams) in &t.error_kinds {
            let most = fams.values().copied().fold(0.0, f64::max);
            add(&mut kinds, k, |x| *x += most);
        }
        for (m, from) in [(&mut errno, &t.errno), (&mut deny, &t.denials)] {
            for (k, v) in from {
                add(m, k, |x| *x += v);
            }
        }
        for (b, (r, pe)) in &t.balancers {
            d.balancers.push(BalancerRow {
                pod: pod.clone(),
                balancer: b.clone(),
                ready: *r,
                pending: *pe,
            });
        }
    }
    let mut a: Vec<AuthorityRow> = auth
        .into_iter()
        .filter(|(_, f)| f.total() > 0.0)
        .map(|(authority, failures)| AuthorityRow {
            authority,
            failures,
        })
        .collect();
    a.sort_by(|x, y| y.failures.total().total_cmp(&x.failures.total()));
    a.truncate(n);
    d.authorities = a;
    d.errno = ranked(errno, n);
    d.error_kinds = ranked(kinds, n);
    d.authz_denials = ranked(deny, n);
    // Balancers without a ready endpoint first.
    d.balancers.sort_by(|x, y| {
        (x.ready > 0.0)
            .cmp(&(y.ready > 0.0))
            .then(x.balancer.cmp(&y.balancer))
    });
    d.balancers.truncate(n);
    Some(d)
}

fn counts(v: &[(String, f64)]) -> String {
    v.iter()
        .map(|(k, c)| format!("{k} {c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn hours(secs: Option<f64>) -> String {
    secs.map_or("-".to_string(), |s| format!("{:.1} h", s / 3600.0))
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |x| x.to_string())
}

/// The section in `summarize`'s human output.
pub fn human(o: &mut String, m: &MetricsDoc, st: &Style, width: usize) {
    o.push_str(&heading(
        st,
        "Metrics (latest snapshot of each proxy)",
        width,
    ));
    let mut t = table(
        width,
        &[
            "proxy",
            "snapshots",
            "certificate expires in",
            "open fds",
            "max fds",
        ],
    );
    if m.snapshots_dropped > 0 {
        let note = crate::report::explain::metrics_dropped_note(m.snapshots_dropped);
        let _ = writeln!(o, "{note}");
    }
    for p in &m.proxies {
        t.add_row(vec![
            Cell::new(&p.pod),
            num(p.snapshots),
            Cell::new(hours(p.certificate_expires_in)),
            Cell::new(opt(p.open_fds)),
            Cell::new(opt(p.max_fds)),
        ]);
    }
    let _ = writeln!(o, "{}", fit(&t));
    if !m.authorities.is_empty() {
        let mut t = table(
            width,
            &[
                "authority",
                "fail-fast",
                "load-shed",
                "timeouts",
                "endpoints never connected",
            ],
        );
        for a in &m.authorities {
            let f = &a.failures;
            t.add_row(vec![
                Cell::new(&a.authority),
                Cell::new(f.failfast),
                Cell::new(f.loadshed),
                Cell::new(f.timeouts),
                num(f.endpoints_never_connected),
            ]);
        }
        let _ = writeln!(o, "{}", fit(&t));
    }
    if !m.balancers.is_empty() {
        let mut t = table(width, &["proxy", "balancer", "ready", "pending"]);
        for b in &m.balancers {
            t.add_row(vec![
                Cell::new(&b.pod),
                Cell::new(&b.balancer),
                Cell::new(b.ready),
                Cell::new(b.pending),
            ]);
        }
        let _ = writeln!(o, "{}", fit(&t));
    }
    for (what, v) in [
        ("error kinds", &m.error_kinds),
        ("errno", &m.errno),
        ("authorization denials", &m.authz_denials),
    ] {
        if !v.is_empty() {
            o.push_str(&field(&format!("{what}:"), &counts(v), width));
        }
    }
}

/// The section in `summarize`'s Markdown output; label values from the
/// input stand in code spans.
pub fn markdown(o: &mut String, m: &MetricsDoc) {
    if m.snapshots_dropped > 0 {
        let note = crate::report::explain::metrics_dropped_note(m.snapshots_dropped);
        let _ = writeln!(o, "\n{note}");
    }
    let _ = writeln!(
        o,
        "\n### Metrics\n\n| proxy | certificate expires in | open fds | max fds |\n|---|---:|---:|---:|"
    );
    for p in &m.proxies {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} |",
            code_cell(&p.pod),
            hours(p.certificate_expires_in),
            opt(p.open_fds),
            opt(p.max_fds)
        );
    }
    if !m.authorities.is_empty() {
        let _ = writeln!(o, "\n| authority | fail-fast | load-shed | timeouts | endpoints never connected |\n|---|---:|---:|---:|---:|");
        for a in &m.authorities {
            let f = &a.failures;
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} |",
                code_cell(&a.authority),
                f.failfast,
                f.loadshed,
                f.timeouts,
                f.endpoints_never_connected
            );
        }
    }
    if !m.balancers.is_empty() {
        let _ = writeln!(
            o,
            "\n| proxy | balancer | ready | pending |\n|---|---|---:|---:|"
        );
        for b in &m.balancers {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} |",
                code_cell(&b.pod),
                code_cell(&b.balancer),
                b.ready,
                b.pending
            );
        }
    }
    for (what, v) in [
        ("Error kinds", &m.error_kinds),
        ("Errno", &m.errno),
        ("Authorization denials", &m.authz_denials),
    ] {
        if !v.is_empty() {
            let list: Vec<String> = v.iter().map(|(k, c)| format!("{} {c}", code(k))).collect();
            let _ = writeln!(o, "\n{what}: {}.", list.join(", "));
        }
    }
}
