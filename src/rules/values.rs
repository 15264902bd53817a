//! What each `{placeholder}` of a template stands for, and whether a value
//! taken from the log is one. A log line carries whatever a client put in
//! a header or a name, so a value is only ever interpolated once it is
//! exactly the kind of thing its placeholder names (a DNS name, a
//! Kubernetes name, an address, a port); any other value counts as unknown.

/// A placeholder: its name in templates, the shell variable a command uses
/// when the value is unknown, and what it is, for the line that says how to
/// set that variable (and for prose).
pub struct Hole {
    pub name: &'static str,
    pub var: &'static str,
    pub what: &'static str,
    kind: Kind,
}

#[derive(Clone, Copy)]
enum Kind {
    /// `host:port` (or a bare host): a DNS name, an IPv4 address or a
    /// bracketed IPv6 address.
    Addr,
    Ip,
    Port,
    /// A DNS-1123 label: namespaces, containers, services, clusters.
    Label,
    /// A DNS-1123 subdomain: pods, nodes, Servers.
    Subdomain,
    /// A DNS name of any case (identities, destinations without port).
    Dns,
    /// `kind/name`: `deploy/web`, `po/web-0`.
    Workload,
    /// A kubeconfig context name.
    Context,
    /// A Kubernetes memory quantity: `256Mi`.
    Quantity,
}

pub const HOLES: &[Hole] = &[
    hole("dst", "DST", "the destination, host:port", Kind::Addr),
    hole("svc", "SVC", "the Service's name", Kind::Label),
    hole("ns", "NS", "the namespace", Kind::Label),
    hole("peer", "PEER", "the endpoint, ip:port", Kind::Addr),
    hole("peer_ip", "PEER_IP", "the endpoint's IP", Kind::Ip),
    hole("client", "CLIENT", "the client's IP", Kind::Ip),
    hole("port", "PORT", "the port", Kind::Port),
    hole("identity", "IDENTITY", "the TLS identity", Kind::Dns),
    hole(
        "server",
        "SERVER",
        "the Server resource's name",
        Kind::Subdomain,
    ),
    hole(
        "pod",
        "POD",
        "the pod that logged these lines",
        Kind::Subdomain,
    ),
    hole("target", "TARGET", "the target address", Kind::Addr),
    hole(
        "workload",
        "WORKLOAD",
        "the workload, as deploy/NAME",
        Kind::Workload,
    ),
    hole("workload_ns", "NS", "the namespace", Kind::Label),
    hole(
        "container",
        "CONTAINER",
        "the application container's name",
        Kind::Label,
    ),
    hole("node", "NODE", "the pod's node", Kind::Subdomain),
    hole(
        "cluster",
        "CLUSTER",
        "the linked cluster's name",
        Kind::Label,
    ),
    hole(
        "remote_context",
        "REMOTE_CONTEXT",
        "the linked cluster's kubeconfig context",
        Kind::Context,
    ),
    hole(
        "local_context",
        "LOCAL_CONTEXT",
        "this cluster's kubeconfig context",
        Kind::Context,
    ),
    hole(
        "memory_limit",
        "MEMORY_LIMIT",
        "the new memory limit, e.g. 512Mi",
        Kind::Quantity,
    ),
];

const fn hole(name: &'static str, var: &'static str, what: &'static str, kind: Kind) -> Hole {
    Hole {
        name,
        var,
        what,
        kind,
    }
}

pub fn find(name: &str) -> Option<&'static Hole> {
    HOLES.iter().find(|h| h.name == name)
}

pub fn is_placeholder(name: &str) -> bool {
    find(name).is_some()
}

impl Hole {
    /// Is `v` a value of this placeholder's kind?
    pub fn accepts(&self, v: &str) -> bool {
        match self.kind {
            Kind::Addr => addr(v),
            Kind::Ip => ip(v),
            Kind::Port => port(v),
            Kind::Label => label(v),
            Kind::Subdomain => subdomain(v),
            Kind::Dns => dns(v),
            Kind::Workload => v
                .split_once('/')
                .is_some_and(|(k, n)| WORKLOAD_KINDS.contains(&k) && subdomain(n)),
            Kind::Context => {
                !v.is_empty()
                    && v.len() <= 253
                    && v.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_.:/@-".contains(&b))
                    && !v.starts_with('-')
            }
            Kind::Quantity => {
                let digits = v.trim_end_matches(|c: char| c.is_ascii_alphabetic());
                !digits.is_empty()
                    && digits.len() <= 12
                    && digits.bytes().all(|b| b.is_ascii_digit())
                    && ["", "Ki", "Mi", "Gi", "K", "M", "G"].contains(&&v[digits.len()..])
            }
        }
    }
}

const WORKLOAD_KINDS: &[&str] = &[
    "deploy",
    "deployment",
    "sts",
    "statefulset",
    "ds",
    "daemonset",
    "po",
    "pod",
    "job",
    "cronjob",
    "rs",
    "replicaset",
];

/// A DNS-1123 label: lowercase letters, digits and inner `-`, at most 63.
pub fn label(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 63
        && v.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !v.starts_with('-')
        && !v.ends_with('-')
}

/// A DNS-1123 subdomain: labels joined by dots, at most 253.
pub fn subdomain(v: &str) -> bool {
    v.len() <= 253 && v.split('.').all(label)
}

/// A DNS name as logs write it: letters of any case, digits, `-` and `_`
/// (SRV-style names) in dot-separated labels, optionally ending in a dot.
fn dns(v: &str) -> bool {
    let v = v.strip_suffix('.').unwrap_or(v);
    !v.is_empty()
        && v.len() <= 253
        && v.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                && !l.starts_with('-')
        })
}

fn ip(v: &str) -> bool {
    v.parse::<std::net::IpAddr>().is_ok()
}

fn port(v: &str) -> bool {
    v.len() <= 5 && v.bytes().all(|b| b.is_ascii_digit()) && v.parse::<u16>().is_ok_and(|p| p > 0)
}

/// `host:port`, `host`, `[v6]:port`, `[v6]`, or a bare IPv6 address.
fn addr(v: &str) -> bool {
    if let Some(rest) = v.strip_prefix('[') {
        let Some((host, tail)) = rest.split_once(']') else {
            return false;
        };
        return host.parse::<std::net::Ipv6Addr>().is_ok()
            && (tail.is_empty() || tail.strip_prefix(':').is_some_and(port));
    }
    if ip(v) {
        return true;
    }
    let (host, p) = match v.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (v, None),
    };
    p.is_none_or(port) && (host.parse::<std::net::Ipv4Addr>().is_ok() || dns(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_must_be_what_they_stand_for() {
        let ok = |n: &str, v: &str| find(n).unwrap().accepts(v);
        assert!(ok("dst", "orders-api.shop.svc.cluster.local:8080"));
        assert!(ok("dst", "10.0.0.1:80"));
        assert!(ok("dst", "[fd00::1]:4143"));
        assert!(ok("peer", "fd00::1"));
        assert!(ok("ns", "shop"));
        assert!(ok("pod", "web-7d9c8b6f5-x2k4q"));
        assert!(ok("workload", "deploy/linkerd-gateway"));
        assert!(ok("port", "4143"));
        assert!(ok("memory_limit", "512Mi"));
        for bad in [
            "$(id)", "a`b`", "x;y", "a|b", "a\nb", "a'b", "a\"b", "-n", "", "a b", "Shop",
        ] {
            assert!(!ok("ns", bad), "{bad:?}");
            assert!(!ok("dst", &format!("{bad}:80")) || bad == "Shop", "{bad:?}");
            assert!(!ok("pod", bad), "{bad:?}");
        }
        assert!(!ok("port", "0"));
        assert!(!ok("port", "65536"));
        assert!(!ok("workload", "deploy/$(id)"));
        assert!(!ok("remote_context", "-oProxyCommand=x"));
    }
}
