//! What Linkerd's well-known ports mean, and the ports whose protocols make
//! protocol detection stall, so that a rule can turn a generic finding
//! into a specific one ("identity required" on the gateway's port, a
//! detection timeout on MySQL's).

use crate::parse::typed::port_of;
use crate::parse::Event;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PortRole {
    /// The proxy's inbound port (4143), also the multicluster gateway's.
    ProxyInbound,
    /// The proxy's outbound port (4140).
    ProxyOutbound,
    /// The proxy's admin server (4191): metrics, readiness, the gateway's
    /// probe target from 2.10.
    ProxyAdmin,
    /// The proxy's tap/control port (4190).
    ProxyControl,
    /// The multicluster gateway's probe port before 2.10 (4181).
    GatewayProbe,
    /// Control-plane gRPC: destination (8086), policy (8090), identity
    /// (8080 on linkerd-identity), the injector and validators (8443).
    ControlPlane,
    /// Protocols where the server speaks first (SMTP, MySQL, …): protocol
    /// detection waits for the client in vain.
    ServerSpeaksFirst,
    /// Linkerd's default opaque ports (`config.linkerd.io/opaque-ports`).
    OpaqueDefault,
    /// The Kubernetes API server.
    KubeApi,
    Dns,
}

/// (port, roles, name) of the ports lpa knows.
pub const PORTS: &[(u16, &[PortRole], &str)] = {
    use PortRole::*;
    &[
        (21, &[ServerSpeaksFirst], "FTP"),
        (22, &[ServerSpeaksFirst], "SSH"),
        (25, &[ServerSpeaksFirst, OpaqueDefault], "SMTP"),
        (53, &[Dns], "DNS"),
        (110, &[ServerSpeaksFirst], "POP3"),
        (143, &[ServerSpeaksFirst], "IMAP"),
        (443, &[KubeApi], "HTTPS / the Kubernetes API"),
        (587, &[ServerSpeaksFirst, OpaqueDefault], "SMTP submission"),
        (3306, &[ServerSpeaksFirst, OpaqueDefault], "MySQL"),
        (4140, &[ProxyOutbound], "the proxy's outbound port"),
        (4143, &[ProxyInbound], "the proxy's inbound (mTLS) port"),
        (4181, &[GatewayProbe], "the gateway's probe port"),
        (4190, &[ProxyControl], "the proxy's tap port"),
        (4191, &[ProxyAdmin], "the proxy's admin port"),
        (4444, &[ServerSpeaksFirst, OpaqueDefault], "Galera"),
        (5432, &[OpaqueDefault], "PostgreSQL"),
        (6379, &[OpaqueDefault], "Redis"),
        (6443, &[KubeApi], "the Kubernetes API"),
        (8086, &[ControlPlane], "the destination controller"),
        (8090, &[ControlPlane], "the policy controller"),
        (8443, &[ControlPlane], "a Linkerd webhook"),
        (9300, &[OpaqueDefault], "Elasticsearch transport"),
        (11211, &[OpaqueDefault], "memcached"),
    ]
};

pub fn roles(port: u16) -> &'static [PortRole] {
    PORTS
        .iter()
        .find(|(p, _, _)| *p == port)
        .map_or(&[], |(_, r, _)| r)
}

pub fn name(port: u16) -> Option<&'static str> {
    PORTS
        .iter()
        .find(|(p, _, _)| *p == port)
        .map(|(_, _, n)| *n)
}

/// The ports a line names: the inbound port, and those of its destination
/// and endpoint.
pub fn of_event(ev: &Event<'_>) -> impl Iterator<Item = u16> {
    let dst = ev.dst().and_then(|d| port_of(&d));
    [ev.port(), dst, ev.endpoint().and_then(port_of)]
        .into_iter()
        .flatten()
}

/// Does the line name a port with one of these roles?
pub fn has_role(ev: &Event<'_>, want: &[PortRole]) -> bool {
    of_event(ev).any(|p| roles(p).iter().any(|r| want.contains(r)))
}

/// Does an unparsed line name, as `host:port`, a port of one of these
/// roles? (Without an event there are no addresses, only text.)
pub fn text_has_role(text: &str, want: &[PortRole]) -> bool {
    let b = text.as_bytes();
    memchr::memchr_iter(b':', b).any(|i| {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let end = i + 1 + digits;
        (1..=5).contains(&digits)
            && i > 0
            && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b']')
            && !b.get(end).is_some_and(|c| c.is_ascii_alphanumeric())
            && text[i + 1..end]
                .parse::<u16>()
                .is_ok_and(|p| roles(p).iter().any(|r| want.contains(r)))
    })
}

/// Is this a control-plane address (a Linkerd controller's name, or the
/// destination pod's own policy container on localhost:8090)?
pub fn is_control_plane_addr(addr: &str) -> bool {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    [
        "linkerd-dst",
        "linkerd-destination",
        "linkerd-identity",
        "linkerd-policy",
        "linkerd-sp-validator",
    ]
    .iter()
    .any(|n| host.starts_with(n))
        || port_of(addr).is_some_and(|p| roles(p).contains(&PortRole::ControlPlane))
}
