//! `--anonymize`: one mapping from real names to placeholders for a whole
//! run, so the output can be pasted into a public issue. IP addresses (v4
//! and v6, bracketed or bare), pod, node, namespace, service, Server and
//! service-account names, trust and cluster domains are replaced
//! consistently: one name, one placeholder, in every format.
//!
//! The mapping is learnt from the input before anything is rendered
//! ([`Anonymizer::learn`], in input order, so every format of one input
//! numbers the same way), then applied to the final text of any format, so
//! no renderer can leak a name by forgetting to call it. Names are learnt
//! from the places that reveal them (`svc` and `serviceaccount` names,
//! SPIFFE ids, `-n` flags, service spans, pod and node fields, wrapper
//! prefixes); every whole token equal to a learnt name is replaced,
//! wherever it stands. Inputs are renamed `input-N` by the caller.

use regex::{Captures, Regex};
use std::collections::HashMap;
use std::sync::LazyLock;

/// Namespaces that name Linkerd or Kubernetes itself, not the user.
const PUBLIC_NAMESPACES: &[&str] = &[
    "linkerd",
    "linkerd-multicluster",
    "linkerd-viz",
    "linkerd-jaeger",
    "linkerd-cni",
    "kube-system",
    "default",
    "cluster",
    "namespace",
];

fn rx(s: &str) -> Regex {
    Regex::new(s).expect("static regex")
}

static IPV4: LazyLock<Regex> = LazyLock::new(|| rx(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b"));
/// IPv6 candidates, bracketed or bare; [`is_ipv6`] decides. The
/// characters around them are kept (group 1 and 3): a Rust path such as
/// `inbound::detect` is no address.
static IPV6: LazyLock<Regex> = LazyLock::new(|| {
    rx(r"(^|[^0-9A-Za-z_:.])([0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7})($|[^0-9A-Za-z_:])")
});
/// `pod.name.ns.svc.`, `name.ns.svc.` and `sa.ns.serviceaccount.`, and
/// the cluster domain after them.
static DNS: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r"\b(?:([a-z0-9][a-z0-9-]*)\.)?([a-z0-9][a-z0-9-]*)\.([a-z0-9][a-z0-9-]*)\.(svc|serviceaccount)\.(?:identity\.linkerd\.)?([a-z0-9-]+(?:\.[a-z0-9-]+)*)",
    )
});
/// `spiffe://DOMAIN/ns/NS/sa/SA`
static SPIFFE: LazyLock<Regex> =
    LazyLock::new(|| rx(r"spiffe://([A-Za-z0-9.-]+)(?:/ns/([a-z0-9-]+))?(?:/sa/([a-z0-9-]+))?"));
/// `-n NS`, `--namespace NS`, `ns=NS`, `"ns":"NS"`, `namespace: NS`
static NS: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r#"(?:-n |--namespace[ =]|\bns=|"ns":\s*"|"namespace":\s*"|\bnamespace[:=] ?"?)([a-z0-9][a-z0-9-]*)"#,
    )
});
/// Service names in spans, JSON and label selectors.
static SVC: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r#"(?:service\{ns=[a-z0-9-]+ name=|"ns":\s*"[a-z0-9-]+",\s*"name":\s*"|service-name=|\bsvc=)([a-z0-9][a-z0-9-]*)"#,
    )
});
/// Server, route and authorization names of policy lines.
static POLICY: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r#"(?:\b(?:server|route|authz)\.name=|"(?:server|route)":\s*"|\bon server/)([a-z0-9][a-z0-9-]*)"#,
    )
});
/// Names Linkerd gives its default policies and routes.
const PUBLIC_POLICIES: &[&str] = &[
    "default",
    "all-unauthenticated",
    "all-authenticated",
    "cluster-unauthenticated",
    "cluster-authenticated",
    "deny",
    "audit",
    "probe",
];
/// Pod names: `deploy-<replicaset hash>-<5 chars>`, also once summaries
/// masked the hash, `[pod/NAME/…]` prefixes, and the fields that name a
/// pod (a StatefulSet's `db-0`, a DaemonSet's `agent-x2k4q`).
static POD: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r#"\b[a-z][a-z0-9-]*?-(?:[a-z0-9]{8,10}|<hex>)-[a-z0-9]{5}\b|pod/([^/\s\]]+)/|(?:\bpod(?:_?name)?[=:] ?"?|"pod(?:_?name)?":\s*"|podName\W+|\bPod="?[a-z0-9-]+/)([a-z0-9][a-z0-9.-]*)"#,
    )
});
/// Node and host names.
static NODE: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r#"(?:nodeName\W+|\bnode(?:_?name)?[=:] ?"?|"node(?:_?name)?":\s*"|\bhost(?:name)?[=:] ?"?|"host(?:name)?":\s*"|\bon node )([A-Za-z][A-Za-z0-9-]*)|\b(ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3})\b"#,
    )
});
/// Name-like tokens, the unit of replacement.
static TOKEN: LazyLock<Regex> =
    LazyLock::new(|| rx(r"[A-Za-z0-9][A-Za-z0-9-]*(?:<hex>-[a-z0-9]{5}|<n>)?"));

/// Labels of domain names that name no one.
const PUBLIC_LABELS: &[&str] = &[
    "cluster", "local", "svc", "com", "org", "net", "io", "internal",
];

/// A pod name as summaries mask it: the ReplicaSet hash as `<hex>`, a
/// StatefulSet ordinal as `<n>`.
fn masked_pod(pod: &str) -> Option<String> {
    let (head, last) = pod.rsplit_once('-')?;
    if !head.is_empty() && last.bytes().all(|b| b.is_ascii_digit()) {
        return Some(format!("{head}-<n>"));
    }
    let (name, hash) = head.rsplit_once('-')?;
    let hex = (8..=10).contains(&hash.len()) && hash.bytes().all(|b| b.is_ascii_alphanumeric());
    (hex && !name.is_empty()).then(|| format!("{name}-<hex>-{last}"))
}

/// A bare candidate is an address when it parses as one and cannot be a
/// clock (`10:00:00`): it has `::` or all eight groups.
fn is_ipv6(s: &str) -> bool {
    s.parse::<std::net::Ipv6Addr>().is_ok() && (s.contains("::") || s.matches(':').count() == 7)
}

#[derive(Default)]
pub struct Anonymizer {
    names: HashMap<String, String>,
    counts: HashMap<&'static str, usize>,
}

impl Anonymizer {
    fn learn_name(&mut self, kind: &'static str, real: &str) {
        if real.is_empty() || self.names.contains_key(real) || PUBLIC_NAMESPACES.contains(&real) {
            return;
        }
        if real.starts_with("linkerd") || real.bytes().all(|b| b.is_ascii_digit()) {
            return;
        }
        let n = self.counts.entry(kind).or_insert(0);
        *n += 1;
        let placeholder = format!("{kind}-{n}");
        // Summaries mask the generated parts of pod names (`web-<hex>-x2k4q`,
        // `db-<n>`): the masked name is the same pod.
        if kind == "pod" {
            if let Some(masked) = masked_pod(real) {
                self.names
                    .entry(masked)
                    .or_insert_with(|| placeholder.clone());
            }
        }
        self.names.insert(real.to_string(), placeholder);
    }

    fn ip(&mut self, kind: &'static str, real: &str) -> String {
        if let Some(v) = self.names.get(real) {
            return v.clone();
        }
        let v = loop {
            let n = self.counts.entry(kind).or_insert(0);
            *n += 1;
            let k = *n - 1;
            let v = match kind {
                "ipv4" => format!("10.255.{}.{}", k / 250, k % 250 + 1),
                _ => format!("fd00::{:x}", k + 1),
            };
            // A placeholder that is itself an input address would be kept.
            if v != real {
                break v;
            }
        };
        self.names.insert(real.to_string(), v.clone());
        v
    }

    /// Learns the names and addresses `text` reveals, in order of first
    /// appearance: called on the input before anything is rendered, and on
    /// each output (which may name more, as commands do).
    pub fn learn(&mut self, text: &str) {
        for c in DNS.captures_iter(text) {
            let ns = &c[3];
            if PUBLIC_NAMESPACES.contains(&ns) {
                continue;
            }
            self.learn_name("ns", ns);
            if let Some(pod) = c.get(1) {
                self.learn_name("pod", pod.as_str());
            }
            self.learn_name(if &c[4] == "svc" { "svc" } else { "sa" }, &c[2]);
            self.learn_domain(&c[5]);
        }
        for c in SPIFFE.captures_iter(text) {
            self.learn_domain(&c[1]);
            if let Some(ns) = c
                .get(2)
                .filter(|n| !PUBLIC_NAMESPACES.contains(&n.as_str()))
            {
                self.learn_name("ns", ns.as_str());
                if let Some(sa) = c.get(3) {
                    self.learn_name("sa", sa.as_str());
                }
            }
        }
        for c in NS.captures_iter(text) {
            self.learn_name("ns", &c[1]);
        }
        for c in SVC.captures_iter(text) {
            self.learn_name("svc", &c[1]);
        }
        for c in POLICY.captures_iter(text) {
            if !PUBLIC_POLICIES.contains(&&c[1]) {
                self.learn_name("server", &c[1]);
            }
        }
        for c in POD.captures_iter(text) {
            let m = c.get(1).or(c.get(2)).or(c.get(0)).expect("whole match");
            // `pod=web-0.web.shop.svc…` names the pod by its first label.
            self.learn_name("pod", m.as_str().split('.').next().unwrap_or(""));
        }
        for c in NODE.captures_iter(text) {
            self.learn_name("node", c.get(1).or(c.get(2)).expect("one name").as_str());
        }
        for c in IPV6.captures_iter(text) {
            if is_ipv6(&c[2]) {
                self.ipv6(&c[2]);
            }
        }
        for m in IPV4.find_iter(text) {
            self.ipv4(m.as_str());
        }
    }

    /// A trust or cluster domain's own labels (`prod.example.com`: `prod`,
    /// `example`).
    fn learn_domain(&mut self, domain: &str) {
        for label in domain.split('.') {
            if !PUBLIC_LABELS.contains(&label) && label != "linkerd" && label != "identity" {
                self.learn_name("domain", label);
            }
        }
    }

    fn ipv4(&mut self, ip: &str) -> String {
        // Unspecified and loopback addresses say nothing about the user.
        if ip.starts_with("0.") || ip.starts_with("127.") {
            ip.to_string()
        } else {
            self.ip("ipv4", ip)
        }
    }

    /// One placeholder per address, however it is spelt (`fd00::1`,
    /// `fd00:0:0::1`).
    fn ipv6(&mut self, ip: &str) -> String {
        match ip.parse::<std::net::Ipv6Addr>() {
            Ok(a) if a.is_loopback() || a.is_unspecified() => ip.to_string(),
            Ok(a) => self.ip("ipv6", &a.to_string()),
            Err(_) => ip.to_string(),
        }
    }

    /// `text` with every learnt name and every address replaced.
    pub fn apply(&mut self, text: &str) -> String {
        self.learn(text);
        let s = TOKEN
            .replace_all(text, |c: &Captures| {
                let m = c.get(0).expect("whole match");
                // Part of a Rust path or an identifier (`linkerd_app_inbound`,
                // `web::x`) is the program's word, not a name.
                let before = text[..m.start()].chars().next_back();
                let after = text[m.end()..].chars().next();
                if before == Some('_') || after == Some('_') {
                    return c[0].to_string();
                }
                self.names
                    .get(&c[0])
                    .cloned()
                    .unwrap_or_else(|| c[0].to_string())
            })
            .into_owned();
        let s = IPV6
            .replace_all(&s, |c: &Captures| {
                let ip = if is_ipv6(&c[2]) {
                    self.ipv6(&c[2])
                } else {
                    c[2].to_string()
                };
                format!("{}{ip}{}", &c[1], &c[3])
            })
            .into_owned();
        IPV4.replace_all(&s, |c: &Captures| self.ipv4(&c[0]))
            .into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consistent_everywhere() {
        let mut a = Anonymizer::default();
        let out = a.apply(
            "dst=web.shop.svc.cluster.local:80 peer=10.1.2.3:8080 id=web.shop.serviceaccount.identity.linkerd.cluster.local\n\
             kubectl get pods -n shop | grep 10.1.2.3\npod web-7d9c8b6f5-x2k4q at 127.0.0.1 linkerd-dst-headless.linkerd.svc.cluster.local\n\
             service{ns=shop name=cart port=80} backend Service.shop.cart:80 web-frontend",
        );
        assert_eq!(
            out,
            "dst=svc-1.ns-1.svc.cluster.local:80 peer=10.255.0.1:8080 id=svc-1.ns-1.serviceaccount.identity.linkerd.cluster.local\n\
             kubectl get pods -n ns-1 | grep 10.255.0.1\npod pod-1 at 127.0.0.1 linkerd-dst-headless.linkerd.svc.cluster.local\n\
             service{ns=ns-1 name=svc-2 port=80} backend Service.ns-1.svc-2:80 web-frontend"
        );
    }

    #[test]
    fn masked_pod_names_and_prefixes() {
        let mut a = Anonymizer::default();
        let out = a.apply("[pod/invoices-<hex>-tq5lm/invoices] and [pod/api-0/linkerd-proxy] nodeName\":\"west-pool-a-3\"");
        assert!(
            !out.contains("invoices-") && !out.contains("api-0") && !out.contains("west-pool"),
            "{out}"
        );
    }

    #[test]
    fn leaks_are_closed() {
        let input = "[pod/db-0/linkerd-proxy] dst=db-0.db-headless.vault.svc.prod.example:5432\n\
             pod=node-agent-x2k4q nodeName\":\"ip-10-0-12-31.ec2.internal\" host=kind-worker\n\
             peer=fd00:10:244::5 addr=[2001:db8::7]:4143 client.id=web.shop.serviceaccount.identity.linkerd.prod.example\n\
             spiffe://prod.example/ns/ledger/sa/ledger-writer server.name=billing-http route.name=default\n\
             at 10:00:00 in linkerd_app_inbound::detect\n\
             unauthorized request on route error=client on server/billing-metrics";
        let mut a = Anonymizer::default();
        a.learn(input);
        let out = a.apply(input);
        for real in [
            "db-0",
            "db-headless",
            "vault",
            "prod",
            "example",
            "node-agent",
            "ip-10-0-12-31",
            "kind-worker",
            "fd00:10:244::5",
            "2001:db8::7",
            "shop",
            "ledger",
            "billing-http",
            "billing-metrics",
        ] {
            assert!(!out.contains(real), "{real} survives in {out}");
        }
        // The program's words, clocks and Linkerd's defaults stay.
        for kept in [
            "error=client",
            "10:00:00",
            "linkerd_app_inbound::detect",
            "route.name=default",
            "identity.linkerd",
        ] {
            assert!(out.contains(kept), "{kept} lost in {out}");
        }
    }

    #[test]
    fn one_address_one_placeholder_however_spelt() {
        let mut a = Anonymizer::default();
        let out = a.apply("fd00:0:0::1 [fd00::1]:80 10.255.0.1 10.1.1.1");
        let words: Vec<&str> = out
            .split([' ', '[', ']'])
            .filter(|w| !w.is_empty())
            .collect();
        assert_eq!(words[0], words[1].trim_end_matches(":80"), "{out}");
        // A placeholder never keeps an input address as it was.
        assert!(!out.contains("10.255.0.1 "), "{out}");
        assert!(!out.contains("10.1.1.1"), "{out}");
    }

    #[test]
    fn learning_first_numbers_by_input_order() {
        let input = "a 10.0.0.2 b 10.0.0.1";
        let mut a = Anonymizer::default();
        a.learn(input);
        // An output naming them in the other order keeps the input's numbers.
        assert_eq!(a.apply("10.0.0.1 10.0.0.2"), "10.255.0.2 10.255.0.1");
    }

    #[test]
    fn a_masked_pod_is_the_same_pod() {
        let mut a = Anonymizer::default();
        a.learn("[pod/web-7d9c8b6f5-x2k4q/linkerd-proxy] [pod/db-0/linkerd-proxy]");
        assert_eq!(
            a.apply("web-7d9c8b6f5-x2k4q web-<hex>-x2k4q db-0 db-<n>"),
            "pod-1 pod-1 pod-2 pod-2"
        );
    }
}
