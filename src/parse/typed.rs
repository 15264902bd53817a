//! Typed views over an event's fields and spans: the error and its sources,
//! the TLS state, addresses, HTTP status, and the era cues a line carries.
//! Every view reads the spellings of every proxy version.

use super::event::{Event, Names};
use super::fields::split_list;
use super::shape_views::View;
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

/// The HTTP status a `status` value gives.
pub fn status_of(s: &str) -> Option<u16> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    s[..digits].parse().ok().filter(|c| (100..600).contains(c))
}

/// The bytes an `sz` value gives.
pub fn sz_of(v: &str) -> Option<u64> {
    v.parse().ok()
}

/// The authority a `service{ns= name= port=}` span names.
pub fn service_authority(name: &str, ns: &str, port: &str) -> String {
    format!("{name}.{ns}.svc.cluster.local:{port}")
}

/// The places [`Event::port`] reads, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortFrom {
    /// The `server` span's `port`.
    Server,
    /// The port of the address the client connected to.
    Target,
    Field,
    /// `header=TransportHeader { port: 8080, name: None, … }`
    Header,
}

impl PortFrom {
    pub const ALL: [PortFrom; 4] = [
        PortFrom::Server,
        PortFrom::Target,
        PortFrom::Field,
        PortFrom::Header,
    ];

    /// The port its text gives.
    pub fn read(self, t: &str) -> Option<u16> {
        match self {
            PortFrom::Server | PortFrom::Field => t.parse().ok(),
            PortFrom::Target => port_of(t),
            PortFrom::Header => {
                let r = &t[t.find("port: ")? + 6..];
                r[..r.find(|c: char| !c.is_ascii_digit())?].parse().ok()
            }
        }
    }
}

/// `host:port` → port.
pub fn port_of(addr: &str) -> Option<u16> {
    // By bytes: summarize asks it of every line's target address.
    let colon = memchr::memrchr(b':', addr.as_bytes())?;
    addr[colon + 1..].parse().ok()
}

/// `host:port` → host (IPv6 brackets removed).
pub fn host_of(addr: &str) -> &str {
    // By bytes: summarize asks it of every line's client.
    let b = addr.as_bytes();
    let mut end = memchr::memrchr(b':', b).unwrap_or(b.len());
    let start = b[..end].iter().take_while(|c| **c == b'[').count();
    while end > start && b[end - 1] == b']' {
        end -= 1;
    }
    &addr[start..end]
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
        self.by_shape(View::Error, Event::find_error)
    }

    fn find_error(&self) -> Option<&str> {
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
        self.by_shape(View::Tls, Event::tls_text).map(parse_tls)
    }

    /// The text [`Event::tls`] reads.
    pub fn tls_text(&self) -> Option<&str> {
        self.first_of(&["tls", "client.tls"])
            .or_else(|| self.span_field("tls"))
    }

    /// The connecting client: `client.addr` / `peer.addr` of the accept span.
    pub fn client_addr(&self) -> Option<&str> {
        self.by_shape(View::ClientAddr, Event::find_client_addr)
    }

    fn find_client_addr(&self) -> Option<&str> {
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
        self.by_shape(View::TargetAddr, Event::find_target_addr)
    }

    fn find_target_addr(&self) -> Option<&str> {
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

    /// The inbound port a connection arrived on: the first of its places
    /// that reads as one.
    pub fn port(&self) -> Option<u16> {
        PortFrom::ALL
            .iter()
            .find_map(|f| f.read(self.port_text(*f)?))
    }

    /// The text at one of the places [`Event::port`] reads.
    pub fn port_text(&self, from: PortFrom) -> Option<&str> {
        match from {
            PortFrom::Server => self.span_first(span_names!["server"], &["port"]),
            PortFrom::Target => self.target_addr(),
            PortFrom::Field => self.field("port"),
            PortFrom::Header => self.field("header"),
        }
    }

    /// The logical destination (service authority) the request went to.
    pub fn dst(&self) -> Option<Cow<'_, str>> {
        if let Some(d) = self.by_shape(View::DstSliced, Event::dst_sliced) {
            return Some(Cow::Borrowed(d));
        }
        if let Some(svc) = self.span("service") {
            if let (Some(ns), Some(name), Some(port)) =
                (svc.field("ns"), svc.field("name"), svc.field("port"))
            {
                return Some(Cow::Owned(service_authority(name, ns, port)));
            }
        }
        self.by_shape(View::DstLegacy, Event::dst_legacy)
            .map(Cow::Borrowed)
    }

    /// [`Event::dst`] where a span or field names it.
    fn dst_sliced(&self) -> Option<&str> {
        self.span_first(span_names!["logical"], &["dst", "addr"])
            .or_else(|| self.span_first(span_names!["gateway"], &["target", "dst"]))
            .or_else(|| {
                self.span_first(
                    span_names!["concrete", "profile", "balance", "target", "ingress"],
                    &["addr", "dst"],
                )
            })
            .or_else(|| self.field("dst"))
    }

    /// [`Event::dst`] where neither that nor `service{…}` names it.
    fn dst_legacy(&self) -> Option<&str> {
        self.span_first(span_names!["proxy", "tcp.forward"], &["addr"])
            .filter(|_| self.has_span("outbound"))
            .or_else(|| self.legacy_client_dst())
            .or_else(|| self.span_first(span_names!["authority"], &["addr"]))
    }

    /// Pre-2.7 `proxy={client=out dst=…}`: the upstream a task connects to.
    fn legacy_client_dst(&self) -> Option<&str> {
        self.span("proxy")
            .filter(|s| s.field("client") == Some("out"))
            .and_then(|s| s.field("dst"))
    }

    /// The endpoint (pod address) a connection was made to.
    pub fn endpoint(&self) -> Option<&str> {
        self.by_shape(View::Endpoint, Event::find_endpoint)
    }

    fn find_endpoint(&self) -> Option<&str> {
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
        self.status_text().and_then(status_of)
    }

    /// The text [`Event::status`] reads.
    pub fn status_text(&self) -> Option<&str> {
        self.first_of(&["status", "http.status"])
    }

    /// Bytes peeked at TLS detection (`Peeked bytes from TCP stream sz=0`).
    pub fn sz(&self) -> Option<u64> {
        self.field("sz").and_then(sz_of)
    }

    /// Mesh identities the line names.
    pub fn identities(&self) -> Vec<&str> {
        self.identities_by_shape(Event::find_identities)
    }

    fn find_identities(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        if let Some(t) = self.tls() {
            if let Some(id) = t.client_id {
                out.push(id);
            }
        }
        const KEYS: [&str; 4] = ["client.id", "server.id", "id", "peer.id"];
        // Each key's first value, the line's fields before its spans'
        // (innermost first): one pass over them, not one per key.
        let mut first = [None; KEYS.len()];
        let span_fields = self.spans.iter().rev().flat_map(|s| s.fields.iter());
        for (k, v) in self.fields.iter().chain(span_fields) {
            if k.ends_with("id") {
                if let Some(i) = KEYS.iter().position(|x| k == x) {
                    first[i].get_or_insert(v.as_ref());
                }
            }
        }
        for v in first.into_iter().flatten() {
            let v = unwrap_debug(v).unwrap_or(v);
            if v.contains(".identity.") || v.contains(".serviceaccount.") {
                out.push(v);
            }
        }
        out.retain(|v| !v.is_empty() && *v != "-");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The host is what is before the last `:`, without the brackets
        /// around it (the same as splitting and trimming as text).
        #[test]
        fn host_of_is_before_the_last_colon_without_brackets(
            addr in "[\\[\\]:a-f0-9.é]{0,12}",
        ) {
            let h = addr.rsplit_once(':').map_or(addr.as_str(), |(h, _)| h);
            prop_assert_eq!(host_of(&addr), h.trim_start_matches('[').trim_end_matches(']'));
        }
    }

    #[test]
    fn host_of_addresses() {
        for (a, h) in [
            ("10.0.0.1:8080", "10.0.0.1"),
            ("[fd00::1]:80", "fd00::1"),
            ("web", "web"),
            ("[]:1", ""),
            ("[[x]]", "x"),
        ] {
            assert_eq!(host_of(a), h, "{a}");
        }
    }

    /// Each key's identity comes from the line's fields before its spans',
    /// innermost span first, and the keys in their order whatever the
    /// line's.
    #[test]
    fn identities_in_key_order_fields_first() {
        let id = |n: &str| format!("{n}.ns.serviceaccount.identity.linkerd.cluster.local");
        let line = format!(
            "[     1.000000s]  INFO ThreadId(01) outer{{client.id={}}}:inner{{client.id={} peer.id={}}}: linkerd_app: hello server.id={} client.id={}",
            id("outer"),
            id("inner"),
            id("peer"),
            id("server"),
            id("field"),
        );
        let ev = crate::parse::parse_line(&line).unwrap();
        let want = [id("field"), id("server"), id("peer")];
        assert_eq!(
            ev.identities(),
            want.iter().map(String::as_str).collect::<Vec<_>>()
        );
    }

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
}
