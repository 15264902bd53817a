//! `--anonymize`: rewrites a rendered report so it can be pasted into a
//! public issue. IP addresses, pod, node, namespace, service and identity
//! names are replaced consistently (one name, one placeholder, everywhere in
//! the output), so the report still reads: the same endpoint stays the same.
//!
//! It works on the final text of any format, so no renderer can leak a name
//! by forgetting to call it. Names are learnt from the places that reveal
//! them (`svc.cluster.local` names, identities, `-n` flags, service spans,
//! pod prefixes), then every whole token equal to a learnt name is replaced,
//! wherever it stands.

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
static IPV6: LazyLock<Regex> =
    LazyLock::new(|| rx(r"\[([0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{0,4}){2,7})\]"));
/// `name.ns.svc.` and `sa.ns.serviceaccount.`
static DNS: LazyLock<Regex> =
    LazyLock::new(|| rx(r"\b([a-z0-9][a-z0-9-]*)\.([a-z0-9][a-z0-9-]*)\.(svc|serviceaccount)\."));
/// `-n NS`, `--namespace NS`, `ns=NS`, `"ns":"NS"`, `namespace: NS`
static NS: LazyLock<Regex> = LazyLock::new(|| {
    rx(r#"(?:-n |--namespace[ =]|\bns=|"ns":\s*"|\bnamespace: )([a-z0-9][a-z0-9-]*)"#)
});
/// Service names in spans, JSON and label selectors.
static SVC: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r#"(?:service\{ns=[a-z0-9-]+ name=|"ns":\s*"[a-z0-9-]+",\s*"name":\s*"|service-name=|\bsvc=)([a-z0-9][a-z0-9-]*)"#,
    )
});
/// Pod names: `deploy-<replicaset hash>-<5 chars>`, also once summaries
/// masked the hash, and `[pod/NAME/…]` prefixes.
static POD: LazyLock<Regex> = LazyLock::new(|| {
    rx(r"\b[a-z][a-z0-9-]*?-(?:[a-z0-9]{8,10}|<hex>)-[a-z0-9]{5}\b|pod/([^/\s\]]+)/")
});
static NODE: LazyLock<Regex> = LazyLock::new(|| rx(r#"nodeName\W+([a-z0-9][a-z0-9.-]*)"#));
/// Name-like tokens, the unit of replacement.
static TOKEN: LazyLock<Regex> =
    LazyLock::new(|| rx(r"[A-Za-z0-9][A-Za-z0-9-]*(?:<hex>-[a-z0-9]{5})?"));

#[derive(Default)]
pub struct Anonymizer {
    names: HashMap<String, String>,
    counts: HashMap<&'static str, usize>,
}

impl Anonymizer {
    fn learn(&mut self, kind: &'static str, real: &str) {
        if real.is_empty() || self.names.contains_key(real) || PUBLIC_NAMESPACES.contains(&real) {
            return;
        }
        if real.starts_with("linkerd") || real.bytes().all(|b| b.is_ascii_digit()) {
            return;
        }
        let n = self.counts.entry(kind).or_insert(0);
        *n += 1;
        self.names.insert(real.to_string(), format!("{kind}-{n}"));
    }

    fn ip(&mut self, kind: &'static str, real: &str) -> String {
        if let Some(v) = self.names.get(real) {
            return v.clone();
        }
        let n = self.counts.entry(kind).or_insert(0);
        *n += 1;
        let k = *n - 1;
        let v = match kind {
            "ipv4" => format!("10.255.{}.{}", k / 250, k % 250 + 1),
            _ => format!("fd00::{:x}", k + 1),
        };
        self.names.insert(real.to_string(), v.clone());
        v
    }

    pub fn apply(&mut self, text: &str) -> String {
        for c in DNS.captures_iter(text) {
            let ns = &c[2];
            if PUBLIC_NAMESPACES.contains(&ns) {
                continue;
            }
            self.learn("ns", ns);
            self.learn(if &c[3] == "svc" { "svc" } else { "sa" }, &c[1]);
        }
        for c in NS.captures_iter(text) {
            self.learn("ns", &c[1]);
        }
        for c in SVC.captures_iter(text) {
            self.learn("svc", &c[1]);
        }
        for c in POD.captures_iter(text) {
            self.learn(
                "pod",
                c.get(1).unwrap_or(c.get(0).expect("whole match")).as_str(),
            );
        }
        for c in NODE.captures_iter(text) {
            self.learn("node", &c[1]);
        }
        let s = TOKEN
            .replace_all(text, |c: &Captures| {
                self.names
                    .get(&c[0])
                    .cloned()
                    .unwrap_or_else(|| c[0].to_string())
            })
            .into_owned();
        let s = IPV6
            .replace_all(&s, |c: &Captures| format!("[{}]", self.ip("ipv6", &c[1])))
            .into_owned();
        IPV4.replace_all(&s, |c: &Captures| {
            let ip = &c[0];
            // Unspecified and loopback addresses say nothing about the user.
            if ip.starts_with("0.") || ip.starts_with("127.") {
                ip.to_string()
            } else {
                self.ip("ipv4", ip)
            }
        })
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
}
