//! The era cues a line carries: what its format and wording tell of the
//! Linkerd release that wrote it, and how a log's cues fold into one era.

use super::event::{Era, Event, Producer};
use serde::Serialize;

/// What the line tells of the Linkerd version that wrote it.
pub fn era_cue(ev: &Event) -> EraCue {
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
    let c = format_cue(
        ev.producer,
        ev.thread.is_some() || ev.truncated_head,
        ev.timestamp.is_some(),
        target,
    );
    if matches!(ev.producer, Producer::ProxyPlain | Producer::ProxyJson) {
        wording_cue(ev, c)
    } else {
        c
    }
}

/// The cue of a line's format alone: its producer, whether its head names a
/// thread (or was lost in the copy), whether it has its own timestamp, and
/// its target.
pub fn format_cue(producer: Producer, thread: bool, timestamp: bool, target: &str) -> EraCue {
    let mut c = EraCue::default();
    match producer {
        Producer::ProxyLegacy => return c.at_most(Era::Upto2_9),
        Producer::ProxyPlain if !thread => c = c.at_most(Era::Upto2_9),
        Producer::ProxyJson if timestamp => c = c.at_least(Era::V2_15),
        _ => {}
    }
    if !producer.is_proxy() {
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
    if target.starts_with("linkerd_proxy_balance_queue") {
        c = c.at_least(Era::V2_15);
    }
    c
}

/// Does the line's wording (a version banner, or what [`wording_cue`]
/// reads) bound the era?
pub fn wording_bounds(ev: &Event) -> bool {
    let msg = ev.message();
    msg.starts_with("release ")
        || msg.starts_with("running version ")
        || (matches!(ev.producer, Producer::ProxyPlain | Producer::ProxyJson)
            && wording_cue(ev, EraCue::default()) != EraCue::default())
}

fn wording_cue(ev: &Event, mut c: EraCue) -> EraCue {
    let msg = ev.message();
    if msg.starts_with("Unavailable; entering failfast") {
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

impl Event<'_> {
    /// What the line tells of the Linkerd version that wrote it.
    pub fn era_cue(&self) -> EraCue {
        era_cue(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_line;

    #[test]
    fn versions_to_eras() {
        assert_eq!(Era::of_linkerd_version("stable-2.14.1"), Some(Era::V2_12));
        assert_eq!(Era::of_linkerd_version("2.10"), Some(Era::V2_10));
        assert_eq!(Era::of_linkerd_version("edge-24.5.1"), Some(Era::V2_15));
        assert_eq!(Era::of_proxy_version("2.210.4"), Some(Era::V2_12));
        assert_eq!(Era::of_proxy_version("2.91.0"), Some(Era::Upto2_9));
    }

    /// A proxy line's cue is its format's unless its wording bounds the era.
    #[test]
    fn wording_bounds_when_it_adds_to_the_format() {
        let lines = [
            ("[     1.0s]  WARN ThreadId(01) outbound:accept{client.addr=10.0.0.1:1}: linkerd_app_core::errors: Failed to proxy request: connection refused", true),
            ("[     1.0s]  WARN ThreadId(01) outbound: linkerd_app_core::errors::respond: HTTP/1.1 request failed error=x", true),
            ("[     1.0s] DEBUG ThreadId(01) outbound:service{ns=a name=b port=80}: linkerd_stack: hello", true),
            ("[     1.0s] DEBUG ThreadId(01) inbound:rescue: h2::proto: hello", true),
            ("[     1.0s] DEBUG ThreadId(01) inbound:accept{peer.addr=10.0.0.1:1}: h2::proto: hello", true),
            ("[     1.0s]  WARN ThreadId(01) linkerd_reconnect: Failed to connect error=a, error: b", true),
            ("[     1.0s] DEBUG ThreadId(01) inbound:accept{client.addr=10.0.0.1:1}: linkerd_app_core::serve: Connection closed", false),
            ("[     1.0s]  INFO ThreadId(01) linkerd2_proxy: Admin interface on 0.0.0.0:4191", false),
        ];
        for (l, worded) in lines {
            let ev = parse_line(l).unwrap();
            let format = format_cue(ev.producer, ev.thread.is_some(), false, ev.target());
            assert_eq!(wording_bounds(&ev), worded, "{l}");
            assert_eq!(era_cue(&ev) != format, worded, "{l}");
        }
    }
}
