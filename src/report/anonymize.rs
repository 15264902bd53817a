//! `--anonymize`: rewrites a rendered report so it can be pasted into a
//! public issue. IP addresses, pod names, namespaces, service and identity
//! names are replaced consistently (one name, one placeholder, everywhere in
//! the output), so the report still reads: the same endpoint stays the same.
//!
//! It works on the final text of any format, so no renderer can leak a name
//! by forgetting to call it.

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
];

#[derive(Default)]
pub struct Anonymizer {
    map: HashMap<(&'static str, String), String>,
    counts: HashMap<&'static str, usize>,
}

static IPV4: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\b").expect("static regex")
});
static IPV6: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[([0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{0,4}){2,7})\]").expect("static regex")
});
/// `name.ns.svc.cluster.local` and `sa.ns.serviceaccount.identity.linkerd.cluster.local`
static DNS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b([a-z0-9][a-z0-9-]*)\.([a-z0-9][a-z0-9-]*)\.(svc|serviceaccount)\.")
        .expect("static regex")
});
/// Pod names: `deploy-<replicaset hash>-<5 chars>` or `statefulset-<n>`.
static POD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b([a-z][a-z0-9-]*?)-([a-z0-9]{8,10})-([a-z0-9]{5})\b").expect("static regex")
});
/// `-n NAMESPACE` and `--namespace NAMESPACE` in commands.
static NS_FLAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(-n |--namespace[ =])([a-z0-9][a-z0-9-]*)").expect("static regex")
});

impl Anonymizer {
    fn name(&mut self, kind: &'static str, real: &str) -> String {
        if let Some(v) = self.map.get(&(kind, real.to_string())) {
            return v.clone();
        }
        let n = self.counts.entry(kind).or_insert(0);
        *n += 1;
        let v = match kind {
            "ipv4" => format!("10.255.{}.{}", (*n - 1) / 250, (*n - 1) % 250 + 1),
            "ipv6" => format!("fd00::{:x}", *n),
            _ => format!("{kind}-{n}"),
        };
        self.map.insert((kind, real.to_string()), v.clone());
        v
    }

    fn namespace(&mut self, ns: &str) -> String {
        if PUBLIC_NAMESPACES.contains(&ns) {
            ns.to_string()
        } else {
            self.name("ns", ns)
        }
    }

    pub fn apply(&mut self, text: &str) -> String {
        // Names first (they contain dots that look like nothing else), then
        // the namespaces they revealed wherever they stand alone.
        let s = DNS
            .replace_all(text, |c: &Captures| {
                let ns = self.namespace(&c[2]);
                let first = if PUBLIC_NAMESPACES.contains(&&c[2]) && c[1].starts_with("linkerd") {
                    c[1].to_string()
                } else if &c[3] == "svc" {
                    self.name("svc", &c[1])
                } else {
                    self.name("sa", &c[1])
                };
                format!("{first}.{ns}.{}.", &c[3])
            })
            .into_owned();
        let s = NS_FLAG
            .replace_all(&s, |c: &Captures| {
                format!("{}{}", &c[1], self.namespace(&c[2]))
            })
            .into_owned();
        let s = POD
            .replace_all(&s, |c: &Captures| {
                if c[1].starts_with("linkerd") {
                    c[0].to_string()
                } else {
                    self.name("pod", &c[0])
                }
            })
            .into_owned();
        let s = IPV6
            .replace_all(&s, |c: &Captures| format!("[{}]", self.name("ipv6", &c[1])))
            .into_owned();
        IPV4.replace_all(&s, |c: &Captures| {
            let ip = &c[0];
            // Unspecified and loopback addresses say nothing about the user.
            if ip.starts_with("0.") || ip.starts_with("127.") {
                ip.to_string()
            } else {
                self.name("ipv4", ip)
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
             kubectl get pods -n shop | grep 10.1.2.3\npod web-7d9c8b6f5-x2k4q at 127.0.0.1 linkerd-dst-headless.linkerd.svc.cluster.local",
        );
        assert_eq!(
            out,
            "dst=svc-1.ns-1.svc.cluster.local:80 peer=10.255.0.1:8080 id=sa-1.ns-1.serviceaccount.identity.linkerd.cluster.local\n\
             kubectl get pods -n ns-1 | grep 10.255.0.1\npod pod-1 at 127.0.0.1 linkerd-dst-headless.linkerd.svc.cluster.local"
        );
    }
}
