//! Typed views over an event's fields and spans: the error and its sources,
//! the TLS state, addresses, HTTP status, and the era cues a line carries.
//! Every view reads the spellings of every proxy version.

use super::event::{Era, Event, Names, Producer};
use super::fields::split_list;
use crate::span_names;
use serde::Serialize;
use std::borrow::Cow;

/// Which way the traffic of a line goes, through this proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Toward the local application (the inbound proxy).
    Inbound,
    /// Toward another service (the outbound proxy; also requests a
    /// multicluster gateway forwards).
    Outbound,
    /// No span tells.
    Unknown,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Inbound => "inbound",
            Direction::Outbound => "outbound",
            Direction::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tls<'a> {
    /// `none`, `established`, `passthru`, or the raw state's name.
    pub state: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub negotiated_protocol: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sni: Option<&'a str>,
}

/// Innermost quoted string or bare word inside nested `Name(…)`/`Some(…)`.
fn unwrap_debug(v: &str) -> Option<&str> {
    let v = v.trim();
    if let Some(q) = v.find('"') {
        let rest = &v[q + 1..];
        return rest.find('"').map(|e| &rest[..e]);
    }
    let inner = v.rsplit('(').next()?.trim_end_matches(')').trim();
    (!inner.is_empty() && inner != "None").then_some(inner)
}

/// The value of `key: …` inside a Debug struct, up to the matching close.
fn debug_member<'a>(v: &'a str, key: &str) -> Option<&'a str> {
    let start = v.find(&format!("{key}: "))? + key.len() + 2;
    let b = v.as_bytes();
    let mut depth = 0i32;
    let mut i = start;
    while i < b.len() {
        match b[i] {
            b'(' | b'{' | b'[' => depth += 1,
            b')' | b'}' | b']' if depth == 0 => break,
            b')' | b'}' | b']' => depth -= 1,
            b',' if depth == 0 => break,
            _ => {}
        }
        i += 1;
    }
    Some(v[start..i].trim())
}

pub fn parse_tls(v: &str) -> Tls<'_> {
    let v = v.trim();
    let inner = v
        .strip_prefix("Some(")
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(v);
    let mut tls = Tls {
        state: Cow::Borrowed("other"),
        reason: None,
        client_id: None,
        negotiated_protocol: None,
        sni: None,
    };
    if let Some(r) = inner.strip_prefix("None(") {
        tls.state = Cow::Borrowed("none");
        tls.reason = Some(r.trim_end_matches(')'));
    } else if inner.starts_with("Established") {
        tls.state = Cow::Borrowed("established");
        tls.client_id = debug_member(inner, "client_id").and_then(unwrap_debug);
        tls.negotiated_protocol = debug_member(inner, "negotiated_protocol").and_then(unwrap_debug);
    } else if inner.starts_with("Passthru") {
        tls.state = Cow::Borrowed("passthru");
        tls.sni = debug_member(inner, "sni").and_then(unwrap_debug);
    } else if v == "None" {
        tls.state = Cow::Borrowed("none");
    } else {
        let name = inner.split([' ', '(', '{']).next().unwrap_or(inner);
        tls.state = Cow::Owned(name.to_ascii_lowercase());
    }
    tls
}

/// `host:port` → port.
pub fn port_of(addr: &str) -> Option<u16> {
    addr.rsplit_once(':')?.1.parse().ok()
}

/// `host:port` → host (IPv6 brackets removed).
pub fn host_of(addr: &str) -> &str {
    let h = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    h.trim_start_matches('[').trim_end_matches(']')
}

impl<'a> Event<'a> {
    fn first_of(&self, keys: &[&str]) -> Option<&str> {
        keys.iter().find_map(|k| self.field(k))
    }

    fn span_first(&self, spans: &Names, keys: &[&str]) -> Option<&str> {
        if !self.may_have_span(spans) {
            return None;
        }
        self.spans
            .iter()
            .rev()
            .filter(|s| spans.list.contains(&s.name.as_ref()))
            .find_map(|s| keys.iter().find_map(|k| s.field(k)))
    }

    /// The error text: the `error` field, or the text after `: ` in messages
    /// that carry their error inline (`Failed to proxy request: …`).
    pub fn error(&self) -> Option<&str> {
        if let Some(e) = self.first_of(&["error", "err"]) {
            // 0.2.x renderings glue sources into the value.
            let e = e.split(" error.source=").next().unwrap_or(e);
            return Some(e.split(", error: ").next().unwrap_or(e));
        }
        let m = self.message();
        for p in [
            "Failed to proxy request: ",
            "unexpected error: ",
            "Failed to certify identity: ",
            "Received invalid ceritficate: ",
            "Received invalid certificate: ",
        ] {
            if let Some(r) = m.strip_prefix(p) {
                return Some(r);
            }
        }
        None
    }

    /// The error's causes, in all three renderings (`error.source=`,
    /// `, error: `, `error.sources=[…]`).
    pub fn error_sources(&self) -> Vec<&str> {
        if let Some(list) = self.field("error.sources") {
            return split_list(list);
        }
        if let Some(src) = self.field("error.source") {
            return vec![src];
        }
        if let Some(e) = self.first_of(&["error", "err"]) {
            if let Some((_, s)) = e.split_once(" error.source=") {
                return vec![s];
            }
            let mut parts = e.split(", error: ");
            parts.next();
            return parts.collect();
        }
        Vec::new()
    }

    pub fn tls(&self) -> Option<Tls<'_>> {
        self.first_of(&["tls", "client.tls"])
            .or_else(|| self.span_field("tls"))
            .map(parse_tls)
    }

    /// The connecting client: `client.addr` / `peer.addr` of the accept span.
    pub fn client_addr(&self) -> Option<&str> {
        self.first_of(&["client.addr", "client_addr", "client"])
            .filter(|a| a.contains(':'))
            .or_else(|| {
                self.span_first(
                    span_names!["accept", "rescue", "conn"],
                    &["client.addr", "client_addr", "peer.addr", "remote"],
                )
            })
            .or_else(|| self.span_first(span_names!["proxy"], &["remote"]))
    }

    /// The address the client connected to (inbound: this pod's port).
    pub fn target_addr(&self) -> Option<&str> {
        self.first_of(&["target.addr", "target_addr"])
            .or_else(|| {
                self.span_first(
                    span_names!["accept", "source"],
                    &["target.addr", "target_addr"],
                )
            })
            .or_else(|| self.span_first(span_names!["server"], &["orig_dst"]))
            .or_else(|| {
                self.field("server.addr")
                    .filter(|_| self.has_span("inbound"))
            })
    }

    /// The inbound port a connection arrived on.
    pub fn port(&self) -> Option<u16> {
        self.span_first(span_names!["server"], &["port"])
            .and_then(|p| p.parse().ok())
            .or_else(|| self.target_addr().and_then(port_of))
            .or_else(|| self.field("port").and_then(|p| p.parse().ok()))
            .or_else(|| {
                // `header=TransportHeader { port: 8080, name: None, … }`
                let h = self.field("header")?;
                let r = &h[h.find("port: ")? + 6..];
                r[..r.find(|c: char| !c.is_ascii_digit())?].parse().ok()
            })
    }

    /// The logical destination (service authority) the request went to.
    pub fn dst(&self) -> Option<Cow<'_, str>> {
        if let Some(d) = self
            .span_first(span_names!["logical"], &["dst", "addr"])
            .or_else(|| self.span_first(span_names!["gateway"], &["target", "dst"]))
            .or_else(|| {
                self.span_first(
                    span_names!["concrete", "profile", "balance", "target", "ingress"],
                    &["addr", "dst"],
                )
            })
            .or_else(|| self.field("dst"))
        {
            return Some(Cow::Borrowed(d));
        }
        if let Some(svc) = self.span("service") {
            if let (Some(ns), Some(name), Some(port)) =
                (svc.field("ns"), svc.field("name"), svc.field("port"))
            {
                return Some(Cow::Owned(format!("{name}.{ns}.svc.cluster.local:{port}")));
            }
        }
        self.span_first(span_names!["proxy", "tcp.forward"], &["addr"])
            .filter(|_| self.has_span("outbound"))
            .or_else(|| self.legacy_client_dst())
            .or_else(|| self.span_first(span_names!["authority"], &["addr"]))
            .map(Cow::Borrowed)
    }

    /// Pre-2.7 `proxy={client=out dst=…}`: the upstream a task connects to.
    fn legacy_client_dst(&self) -> Option<&str> {
        self.span("proxy")
            .filter(|s| s.field("client") == Some("out"))
            .and_then(|s| s.field("dst"))
    }

    /// The endpoint (pod address) a connection was made to.
    pub fn endpoint(&self) -> Option<&str> {
        self.span_first(
            span_names!["endpoint", "forward"],
            &["peer.addr", "server.addr", "addr"],
        )
        .or_else(|| {
            self.first_of(&["server.addr", "peer.addr"])
                .filter(|_| !self.has_span("inbound") || self.has_span("gateway"))
        })
        .or_else(|| self.legacy_client_dst())
    }

    /// Which way the line's traffic goes, from its spans in every
    /// release's layout (research/proxy-catalog SPN-006..008, OLD-003).
    pub fn direction(&self) -> Direction {
        if self.has_span("gateway") {
            return Direction::Outbound;
        }
        for s in &self.spans {
            match s.name.as_ref() {
                "inbound" => return Direction::Inbound,
                "outbound" => return Direction::Outbound,
                // Pre-2.7 contexts: `proxy={server=in …}`, `{client=out …}`.
                "proxy" => match s.field("server").or_else(|| s.field("client")) {
                    Some("in") => return Direction::Inbound,
                    Some("out") => return Direction::Outbound,
                    _ => {}
                },
                // 2.9–2.11 without the root span: `server{port=…}` is the
                // inbound server, `server{orig_dst=…}` the outbound one.
                "server" => {
                    if s.field("orig_dst").is_some() {
                        return Direction::Outbound;
                    }
                    if s.field("port").is_some() {
                        return Direction::Inbound;
                    }
                }
                _ => {}
            }
        }
        Direction::Unknown
    }

    /// HTTP status as a number (`status=503 Service Unavailable`, `"status":404`).
    pub fn status(&self) -> Option<u16> {
        let s = self.first_of(&["status", "http.status"])?;
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok().filter(|c| (100..600).contains(c))
    }

    /// Bytes peeked at TLS detection (`Peeked bytes from TCP stream sz=0`).
    pub fn sz(&self) -> Option<u64> {
        self.field("sz").and_then(|v| v.parse().ok())
    }

    /// Mesh identities the line names.
    pub fn identities(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        if let Some(t) = self.tls() {
            if let Some(id) = t.client_id {
                out.push(id);
            }
        }
        for k in ["client.id", "server.id", "id", "peer.id"] {
            if let Some(v) = self.field(k).or_else(|| self.span_field(k)) {
                let v = unwrap_debug(v).unwrap_or(v);
                if v.contains(".identity.") || v.contains(".serviceaccount.") {
                    out.push(v);
                }
            }
        }
        out.retain(|v| !v.is_empty() && *v != "-");
        out
    }

    /// What the line tells of the Linkerd version that wrote it.
    pub fn era_cue(&self) -> EraCue {
        era_cue(self)
    }
}

/// A bound on the era: `exact` from a version banner, else a range.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EraCue {
    pub exact: Option<Era>,
    pub min: Option<Era>,
    pub max: Option<Era>,
}

impl EraCue {
    fn exact(e: Option<Era>) -> Self {
        EraCue {
            exact: e,
            ..Default::default()
        }
    }
    fn at_least(mut self, e: Era) -> Self {
        self.min = Some(self.min.map_or(e, |m| m.max(e)));
        self
    }
    fn at_most(mut self, e: Era) -> Self {
        self.max = Some(self.max.map_or(e, |m| m.min(e)));
        self
    }
    pub fn is_empty(&self) -> bool {
        *self == EraCue::default()
    }
}

fn era_cue(ev: &Event) -> EraCue {
    let msg = ev.message();
    let target = ev.target();
    if let Some(v) = msg.strip_prefix("release ") {
        if target.starts_with("linkerd2_proxy") {
            return EraCue::exact(Era::of_proxy_version(v.split(' ').next().unwrap_or("")));
        }
    }
    if let Some(v) = msg.strip_prefix("running version ") {
        return EraCue::exact(Era::of_linkerd_version(v));
    }
    let mut c = EraCue::default();
    match ev.producer {
        Producer::ProxyLegacy => return c.at_most(Era::Upto2_9),
        Producer::ProxyPlain if ev.thread.is_none() && !ev.truncated_head => {
            c = c.at_most(Era::Upto2_9)
        }
        Producer::ProxyJson if ev.timestamp.is_some() => c = c.at_least(Era::V2_15),
        _ => {}
    }
    if !ev.producer.is_proxy() {
        return c;
    }
    if target.starts_with("linkerd2_")
        && target != "linkerd2_proxy"
        && !target.starts_with("linkerd2_proxy::")
    {
        c = c.at_most(Era::Upto2_9);
    } else if target.starts_with("linkerd_") {
        c = c.at_least(Era::V2_10);
    }
    if target.starts_with("linkerd_proxy_balance_queue")
        || msg.starts_with("Unavailable; entering failfast")
    {
        c = c.at_least(Era::V2_15);
    }
    if msg.starts_with("Failed to proxy request") {
        c = c.at_most(Era::V2_10);
    }
    if msg.contains("HTTP Balancer service in fail-fast") {
        c = c.at_least(Era::V2_10).at_most(Era::V2_12);
    }
    if msg.ends_with(" request failed")
        || ev.span("service").is_some_and(|s| s.field("ns").is_some())
    {
        c = c.at_least(Era::V2_12);
    }
    if let Some(e) = ev.field("error") {
        if e.contains(", error: ") {
            c = c.at_least(Era::V2_10).at_most(Era::V2_10);
        } else if e.contains(" error.source=") {
            c = c.at_most(Era::Upto2_9);
        }
    }
    if ev.field("error.sources").is_some() || ev.has_span("rescue") {
        c = c.at_least(Era::V2_10);
    }
    if ev
        .span("accept")
        .is_some_and(|s| s.field("peer.addr").is_some())
    {
        c = c.at_most(Era::Upto2_9);
    }
    c
}

/// The eras a log's wording allows (both ends inclusive).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EraRange {
    pub min: Option<Era>,
    pub max: Option<Era>,
}

/// Folds the cues of a whole log into one era.
#[derive(Debug, Default, Clone)]
pub struct EraVote {
    exact: [u64; 4],
    min: Option<Era>,
    max: Option<Era>,
}

fn idx(e: Era) -> usize {
    match e {
        Era::Upto2_9 => 0,
        Era::V2_10 => 1,
        Era::V2_12 => 2,
        Era::V2_15 => 3,
    }
}

const ERAS: [Era; 4] = [Era::Upto2_9, Era::V2_10, Era::V2_12, Era::V2_15];

impl EraVote {
    pub fn add(&mut self, c: EraCue) {
        if let Some(e) = c.exact {
            self.exact[idx(e)] += 1;
        }
        if let Some(m) = c.min {
            self.min = Some(self.min.map_or(m, |x| x.max(m)));
        }
        if let Some(m) = c.max {
            self.max = Some(self.max.map_or(m, |x| x.min(m)));
        }
    }

    /// A version stated elsewhere (a ticket's prose) outranks format cues.
    pub fn add_stated(&mut self, e: Era) {
        self.exact[idx(e)] += 1_000_000;
    }

    pub fn merge(&mut self, o: &EraVote) {
        for i in 0..4 {
            self.exact[i] += o.exact[i];
        }
        self.add(EraCue {
            exact: None,
            min: o.min,
            max: o.max,
        });
    }

    /// What the cues allow: the exact era when a banner or stated version
    /// fixes it, else the bounds the wording sets.
    pub fn range(&self) -> EraRange {
        if let Some(e) = self.exact_era() {
            return EraRange {
                min: Some(e),
                max: Some(e),
            };
        }
        match (self.min, self.max) {
            // Contradicting cues (mixed versions in one input): trust the newer.
            (Some(lo), Some(hi)) if lo > hi => EraRange {
                min: Some(lo),
                max: None,
            },
            (min, max) => EraRange { min, max },
        }
    }

    fn exact_era(&self) -> Option<Era> {
        self.exact
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .max_by_key(|(_, n)| **n)
            .map(|(i, _)| ERAS[i])
    }

    /// The era advice is chosen for: exact, else the oldest the cues allow
    /// (commands that exist there exist later too, mostly), else the newest.
    pub fn era(&self) -> Option<Era> {
        let r = self.range();
        r.min.or(r.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_spellings() {
        let t = parse_tls("Some(Established { client_id: Some(ClientId(Name(\"web.ns.serviceaccount.identity.linkerd.cluster.local\"))), negotiated_protocol: Some(\"transport.l5d.io/v1\") })");
        assert_eq!(t.state, "established");
        assert_eq!(
            t.client_id,
            Some("web.ns.serviceaccount.identity.linkerd.cluster.local")
        );
        assert_eq!(t.negotiated_protocol, Some("transport.l5d.io/v1"));
        let t = parse_tls("Some(Established { client_id: Some(ClientId(web.ns.serviceaccount.identity.linkerd.cluster.local)), negotiated_protocol: None })");
        assert_eq!(
            t.client_id,
            Some("web.ns.serviceaccount.identity.linkerd.cluster.local")
        );
        assert_eq!(t.negotiated_protocol, None);
        let t = parse_tls("None(NoClientHello)");
        assert_eq!(
            (t.state.as_ref(), t.reason),
            ("none", Some("NoClientHello"))
        );
        let t = parse_tls("Some(Passthru { sni: ServerName(Name(\"api.example.com\")) })");
        assert_eq!(
            (t.state.as_ref(), t.sni),
            ("passthru", Some("api.example.com"))
        );
    }

    #[test]
    fn versions_to_eras() {
        assert_eq!(Era::of_linkerd_version("stable-2.14.1"), Some(Era::V2_12));
        assert_eq!(Era::of_linkerd_version("2.10"), Some(Era::V2_10));
        assert_eq!(Era::of_linkerd_version("edge-24.5.1"), Some(Era::V2_15));
        assert_eq!(Era::of_proxy_version("2.210.4"), Some(Era::V2_12));
        assert_eq!(Era::of_proxy_version("2.91.0"), Some(Era::Upto2_9));
    }
}
