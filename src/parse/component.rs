//! Which program printed a line, from the marks the line itself carries:
//! the container a `--prefix`/stern wrapper names, the grammar, the tracing
//! target, logrus fields. A line whose marks say nothing is `Unknown`;
//! one from another container is `Application`.

use super::event::{Component, Event, Producer};

/// The component of a container name, as the Linkerd charts name them.
pub fn of_container(name: &str) -> Component {
    match name {
        "linkerd-proxy" => Component::Proxy,
        "linkerd-init" | "proxy-init" => Component::ProxyInit,
        "linkerd-network-validator"
        | "install-cni"
        | "cni-plugin"
        | "linkerd-cni"
        | "repair-controller" => Component::Cni,
        "destination" | "sp-validator" => Component::Destination,
        "identity" => Component::Identity,
        "policy" => Component::Policy,
        "service-mirror" => Component::ServiceMirror,
        "proxy-injector" => Component::Injector,
        "tap" | "tap-injector" | "metrics-api" | "jaeger-injector" => Component::Viz,
        // Shared with applications (emojivoto's `web`): the line decides.
        "web" | "prometheus" | "grafana" => Component::Unknown,
        n if n.starts_with("linkerd-") => Component::ControlPlane,
        _ => Component::Application,
    }
}

/// Crate roots of the proxy and the libraries whose targets it logs.
const PROXY_ROOTS: &[&str] = &[
    "linkerd",
    "conduit",
    "h2",
    "hyper",
    "tower",
    "rustls",
    "trust_dns",
    "hickory",
    "tokio",
    "want",
    "mio",
    "tonic",
    "webpki",
];

/// Is the component of a line the same for every line of its shape (the
/// lines that differ from it only in their digits)? It turns on prefixes
/// of the target and words of the fields, none with a digit, but for a
/// JSON proxy line's crate roots (`h2`).
pub fn same_for_shape(producer: Producer, target: &str) -> bool {
    let digit = |s: &str| s.bytes().any(|b| b.is_ascii_digit());
    !(producer == Producer::ProxyJson && digit(target) && PROXY_ROOTS.iter().any(|r| digit(r)))
}

fn is_proxy_target(t: &str) -> bool {
    PROXY_ROOTS.iter().any(|r| t.starts_with(r))
}

/// logrus fields that name the controller (service mirror: `apiAddress`,
/// `cluster`, `probe-key`; destination watchers: `component=…-watcher`).
fn of_logrus(ev: &Event<'_>) -> Component {
    if let Some(c) = ev.field("component") {
        if c.contains("watcher") || c.contains("translator") || c == "destination" {
            return Component::Destination;
        }
        if c.contains("mirror") || c.contains("probe") {
            return Component::ServiceMirror;
        }
        if c.contains("injector") || c.contains("webhook") {
            return Component::Injector;
        }
        if c.contains("identity") {
            return Component::Identity;
        }
        if c.contains("tap") {
            return Component::Viz;
        }
    }
    if ev.field("apiAddress").is_some()
        || ev.field("probe-key").is_some()
        || ev.field("target_cluster").is_some()
    {
        return Component::ServiceMirror;
    }
    Component::ControlPlane
}

/// The component of a tracing producer's line, which its target tells
/// (`None` for other producers).
pub fn of_target(producer: Producer, target: Option<&str>) -> Option<Component> {
    let cni = |t: &str| t.starts_with("linkerd_network_validator") || t.starts_with("linkerd_cni");
    let t = target.unwrap_or("");
    Some(match producer {
        Producer::ProxyPlain | Producer::ProxyLegacy if cni(t) => Component::Cni,
        Producer::ProxyPlain | Producer::ProxyLegacy => Component::Proxy,
        Producer::ProxyJson if target.is_none_or(is_proxy_target) => Component::Proxy,
        Producer::ProxyJson => Component::Unknown,
        // kubert's layout is shared by the CNI's network validator and
        // repair controller: their targets tell.
        Producer::PolicyController if cni(t) => Component::Cni,
        Producer::PolicyController => Component::Policy,
        _ => return None,
    })
}

pub fn of(ev: &Event<'_>) -> Component {
    if let Some(c) = ev.wrapper.container {
        let k = of_container(c);
        if k != Component::Unknown {
            return k;
        }
    }
    match ev.producer {
        Producer::ProxyPlain
        | Producer::ProxyLegacy
        | Producer::ProxyJson
        | Producer::PolicyController => {
            of_target(ev.producer, ev.target.as_deref()).unwrap_or_default()
        }
        Producer::AccessApache | Producer::AccessJson => Component::Proxy,
        Producer::ProxyInit => Component::ProxyInit,
        Producer::Logrus | Producer::LogrusJson => of_logrus(ev),
        Producer::Klog => Component::ControlPlane,
        Producer::RustPanic => {
            if ev.field("loc").is_some_and(|l| l.contains("linkerd"))
                || ev.thread.as_deref() == Some("proxy")
            {
                Component::Proxy
            } else {
                Component::Unknown
            }
        }
        Producer::GoPanic => {
            if ev
                .continuation
                .as_deref()
                .is_some_and(|c| c.contains("linkerd"))
            {
                Component::ControlPlane
            } else {
                Component::Unknown
            }
        }
        Producer::GoLog => Component::Unknown,
        Producer::Kube => Component::Kubernetes,
        Producer::Check => Component::Cli,
        Producer::Prose => Component::Reporter,
        Producer::Metrics => match ev.metric {
            Some(super::Metric::Sample { name, .. }) => super::metrics::component_of(name),
            _ => Component::Proxy,
        },
    }
}
