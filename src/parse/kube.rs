//! Kubernetes output that carries proxy evidence: the container fields of
//! `kubectl describe pod` (and their YAML spellings in `kubectl get -o
//! yaml`), and event rows (`kubectl get events`, a describe's `Events:`).
//! They become events of their own producer so rules can read an OOM-killed
//! proxy, an init container that exits non-zero, a sandbox that fails.

use super::event::{Event, Level, Producer};
use std::borrow::Cow;

/// The describe fields read, with the name their YAML spelling has.
const FIELDS: &[(&str, &str)] = &[
    ("State", "state"),
    ("Last State", "lastState"),
    ("Reason", "reason"),
    ("Exit Code", "exitCode"),
    ("Signal", "signal"),
    ("Restart Count", "restartCount"),
    ("Ready", "ready"),
    ("Message", "message"),
    ("Started", "startedAt"),
    ("Finished", "finishedAt"),
];

/// Reasons of a container that did not run as it should.
const BAD_REASONS: &[&str] = &[
    "OOMKilled",
    "Error",
    "CrashLoopBackOff",
    "ContainerCannotRun",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    "StartError",
    "ImagePullBackOff",
    "ErrImagePull",
    "DeadlineExceeded",
];

/// Lowercase YAML keys of a pod that are not container names.
const YAML_KEYS: &[&str] = &[
    "terminated",
    "waiting",
    "running",
    "resources",
    "limits",
    "requests",
    "env",
    "ports",
    "metadata",
    "spec",
    "status",
    "annotations",
    "labels",
    "containers",
    "conditions",
    "volumes",
    "args",
    "command",
    "image",
    "events",
];

/// A container's name heading its block: `linkerd-proxy:` (describe) or
/// `name: linkerd-proxy` / `- name: linkerd-proxy` (YAML).
pub fn container_heading(s: &str) -> Option<&str> {
    let n = s
        .strip_suffix(':')
        .filter(|n| !n.contains(' '))
        .or_else(|| s.strip_prefix("- name: "))
        .or_else(|| s.strip_prefix("name: "))?;
    let n = n.trim_matches('"');
    (!n.is_empty()
        && n.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !FIELDS.iter().any(|(_, y)| *y == n)
        && !YAML_KEYS.contains(&n))
    .then_some(n)
}

/// One indented `Key: value` line of a container's status; `container` is
/// the block it sits in.
pub fn field<'a>(s: &'a str, container: Option<&'a str>, ev: &mut Event<'a>) -> Option<()> {
    let (key, value) = s.split_once(':')?;
    let value = value.trim();
    let name = FIELDS
        .iter()
        .find(|(d, y)| *d == key || *y == key)
        .map(|(_, y)| *y)?;
    if value.is_empty() && name != "lastState" && name != "state" {
        return None;
    }
    let value = value.trim_matches('"');
    ev.reset(Producer::Kube, s);
    let bad = match name {
        "reason" => BAD_REASONS.contains(&value),
        "exitCode" => value != "0",
        "ready" => value.eq_ignore_ascii_case("false"),
        _ => false,
    };
    ev.level = Some(if bad { Level::Warn } else { Level::Info });
    ev.message = Some(Cow::Borrowed(s));
    ev.fields.push((Cow::Borrowed(name), Cow::Borrowed(value)));
    // `kubectl describe` names the container above its fields; a pod's YAML
    // status names it among them (`lastState` before `name`), so only the
    // describe spelling is attributed.
    let describe = key.as_bytes()[0].is_ascii_uppercase();
    if let Some(c) = container.filter(|_| describe) {
        ev.fields
            .push((Cow::Borrowed("container"), Cow::Borrowed(c)));
    }
    Some(())
}

fn is_age(t: &str) -> bool {
    t == "<unknown>"
        || t.contains(" (x")
        || (t.len() <= 12
            && t.bytes().next().is_some_and(|c| c.is_ascii_digit())
            && t.bytes().all(|c| c.is_ascii_alphanumeric()))
}

/// An event row: `Warning  FailedCreatePodSandBox  25m  kubelet  Failed …`
/// (describe) or `5m  Warning  Unhealthy  pod/web-1  Readiness probe …`
/// (`kubectl get events`).
pub fn event_row<'a>(s: &'a str, ev: &mut Event<'a>) -> Option<()> {
    let cols: Vec<(usize, &str)> = columns(s);
    let ti = cols
        .iter()
        .take(2)
        .position(|(_, c)| *c == "Warning" || *c == "Normal")?;
    let kind = cols[ti].1;
    let reason = cols.get(ti + 1)?.1;
    if !reason.bytes().all(|c| c.is_ascii_alphanumeric())
        || !reason.as_bytes()[0].is_ascii_uppercase()
    {
        return None;
    }
    let mut i = ti + 2;
    let mut object = None;
    let mut from = None;
    while let Some(&(_, c)) = cols.get(i) {
        if is_age(c) {
        } else if c.contains('/') && !c.contains(' ') && object.is_none() {
            object = Some(c);
        } else if from.is_none()
            && !c.contains(' ')
            && (c == "kubelet"
                || c.ends_with("-scheduler")
                || c.ends_with("-controller")
                || c.ends_with("controller"))
        {
            from = Some(c);
        } else {
            break;
        }
        i += 1;
    }
    let (start, _) = *cols.get(i)?;
    ev.reset(Producer::Kube, s);
    ev.level = Some(if kind == "Warning" {
        Level::Warn
    } else {
        Level::Info
    });
    ev.message = Some(Cow::Borrowed(&s[start..]));
    ev.fields.push((Cow::Borrowed("type"), Cow::Borrowed(kind)));
    ev.fields
        .push((Cow::Borrowed("reason"), Cow::Borrowed(reason)));
    if let Some(o) = object {
        ev.fields.push((Cow::Borrowed("object"), Cow::Borrowed(o)));
    }
    if let Some(f) = from {
        ev.fields.push((Cow::Borrowed("from"), Cow::Borrowed(f)));
    }
    Some(())
}

/// Columns separated by two or more spaces, with their offsets.
fn columns(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b' ' && b.get(i + 1) == Some(&b' ') {
            if i > start {
                out.push((start, &s[start..i]));
            }
            while i < b.len() && b[i] == b' ' {
                i += 1;
            }
            start = i;
            if out.len() >= 8 {
                break;
            }
        } else {
            i += 1;
        }
    }
    if start < b.len() {
        out.push((start, &s[start..]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_fields_and_events() {
        let mut ev = Event::default();
        field("Reason:      OOMKilled", Some("linkerd-proxy"), &mut ev).unwrap();
        assert_eq!(ev.field("reason"), Some("OOMKilled"));
        assert_eq!(ev.field("container"), Some("linkerd-proxy"));
        assert_eq!(ev.level, Some(Level::Warn));
        field("exitCode: 1", Some("linkerd-init"), &mut ev).unwrap();
        assert_eq!(ev.field("exitCode"), Some("1"));
        assert!(field("Reason: we think it is DNS", None, &mut ev)
            .is_some_and(|_| ev.level == Some(Level::Info)));
        assert!(field("Because: x", None, &mut ev).is_none());

        event_row("Warning  FailedCreatePodSandBox  25m                 kubelet            Failed to create pod sandbox: rpc error", &mut ev).unwrap();
        assert_eq!(ev.field("reason"), Some("FailedCreatePodSandBox"));
        assert_eq!(ev.field("from"), Some("kubelet"));
        assert_eq!(ev.message(), "Failed to create pod sandbox: rpc error");
        event_row("5m          Warning   Unhealthy   pod/web-1   Readiness probe failed: HTTP probe failed with statuscode: 503", &mut ev).unwrap();
        assert_eq!(ev.field("object"), Some("pod/web-1"));
        assert!(ev.message().starts_with("Readiness probe failed"));
        assert!(event_row("Warning  this is prose", &mut ev).is_none());
        assert_eq!(container_heading("linkerd-proxy:"), Some("linkerd-proxy"));
        assert_eq!(
            container_heading("- name: linkerd-init"),
            Some("linkerd-init")
        );
        assert_eq!(container_heading("Reason:"), None);
    }
}
