//! What the words around the logs say: the version the reporter runs, the
//! components they name, what they already tried, what they say is silent
//! or unmeshed, and the logs they announce but did not include.

use regex::Regex;
use serde::Serialize;
use std::sync::LazyLock;

#[derive(Debug, Default, Clone, Serialize)]
pub struct Context {
    /// The Linkerd version the reporter states for their own cluster.
    pub version: Option<String>,
    pub components: Vec<String>,
    pub multicluster: bool,
    /// What the reporter says they already did, as whole sentences.
    pub tried: Vec<String>,
    /// The reporter says the client side logs nothing.
    pub client_silent: bool,
    /// The reporter says the workload runs without a proxy.
    pub unmeshed: bool,
    /// Logs or output the post announces but does not hold: what, and
    /// the words that announced them.
    pub announced_missing: Vec<(String, String)>,
    pub log_lines: u64,
    pub prose_lines: u64,
    pub yaml_lines: u64,
    pub check_lines: u64,
    pub code_blocks: u64,
}

fn rx(s: &str) -> Regex {
    Regex::new(s).expect("static regex")
}

const VERSION: &str =
    r"(stable-2\.\d+\.\d+|edge-\d{2}\.\d{1,2}\.\d+|enterprise-2\.\d+\.\d+|2\.\d{1,2}(?:\.\d+)?)\b";

/// `linkerd version` output names the cluster's release outright.
static SERVER_VERSION: LazyLock<Regex> =
    LazyLock::new(|| rx(&format!(r"(?i)\bServer version:\s*v?{VERSION}")));
/// The reporter's own cluster: "we run/use/are on …", "upgraded to …".
static OWN_VERSION: LazyLock<Regex> = LazyLock::new(|| {
    rx(&format!(
        r"(?i)\b(?:we|our|i|i'm|we're|my|us)\b[^.\n]{{0,60}}?\b(?:run|running|use|using|on|(?:upgraded|upgrading|updated|moved|migrated)(?: from (?:linkerd )?v?[\w.-]+)? to|installed|install|deployed|have)\b[^.\n]{{0,25}}?\bv?{VERSION}|\b(?:upgraded|upgrading|updated|moved|migrated)(?: from (?:linkerd )?v?[\w.-]+)? to (?:linkerd )?v?{VERSION}|\blinkerd(?: version)?:?\s+v?{VERSION}|\busing linkerd v?{VERSION}"
    ))
});
static ANY_VERSION: LazyLock<Regex> = LazyLock::new(|| {
    rx(&format!(
        r"(?i)\b(?:linkerd|version|running|on|v)\s*:?\s*v?{VERSION}|\b(stable-2\.\d+\.\d+|edge-\d{{2}}\.\d{{1,2}}\.\d+)"
    ))
});
static TRIED: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r"(?i)\b(tried|already|re-?created|rotated|re-?generated|re-?rolled|rolled out|restarted|re-?installed|upgraded|re-?issued|re-?injected|deleted|replaced|re-?linked|unlinked|re-?ran)\b",
    )
});
/// The other side's proxy was looked at and logged nothing.
static CLIENT_SILENT: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r"(?i)\b(client|caller|calling|source|other side|pod'?s? proxy log|proxy logs? of)\b[^.\n]{0,60}\b(silen(t|ce)|nothing|no errors?|clean|quiet)\b|\b(silen(t|ce)|nothing|no errors?)\b[^.\n]{0,40}\b(client|caller)\b",
    )
});
static UNMESHED: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r"(?i)\b(not (meshed|injected)|unmeshed|un-meshed|without (a |the )?(linkerd[- ])?(proxy|sidecar)|no (linkerd[- ])?(proxy|sidecar)|uninjected)\b",
    )
});
/// A line that introduces logs or output to follow.
static ANNOUNCES: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r"(?i)\b(logs?|output|errors?|events)\b[^.\n]{0,60}(:\s*$|\b(below|attached|following|as follows)\b)|\bhere (are|is) (the |my |our )?[\w -]{0,30}\b(logs?|output)\b",
    )
});

/// A sentence that quotes the application's own output.
static APP_SAYS: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r"(?i)\b(app|apps|application|service's own|our (service|code|client|backend)|client library|driver|pool)\b[^.\n]{0,30}\b(logs?|logged|says|said|prints|printed|throws|threw|reports|shows|returns|returned|fails with|gets?)\b",
    )
});

/// Does this line quote what the reporter's application printed?
pub fn app_says(line: &str) -> bool {
    APP_SAYS.is_match(line)
}

/// Sentences of a paragraph, split at `.`, `!` or `?` followed by a space
/// and a capital letter (or the end), never inside `2.14.1` or `e.g.`.
pub fn sentences(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..b.len() {
        if !matches!(b[i], b'.' | b'!' | b'?') {
            continue;
        }
        let next = b.get(i + 1).copied();
        let after = b.get(i + 2).copied();
        let ends = match next {
            None => true,
            Some(b' ') | Some(b'\n') => after.is_none_or(|c| c.is_ascii_uppercase() || c == b'\n'),
            _ => false,
        };
        let abbrev = text[start..i].ends_with("e.g")
            || text[start..i].ends_with("i.e")
            || text[start..i].ends_with("etc");
        if ends && !abbrev {
            let s = text[start..=i].trim();
            if !s.is_empty() {
                out.push(s);
            }
            start = i + 1;
        }
    }
    let s = text[start..].trim();
    if !s.is_empty() {
        out.push(s);
    }
    out
}

/// At most `max` characters, cut at a word boundary.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max).collect();
    match cut.rfind(' ') {
        Some(i) if i > max / 2 => format!("{}…", cut[..i].trim_end_matches([',', ';', ':'])),
        _ => format!("{cut}…"),
    }
}

impl Context {
    /// Reads the prose (`prose`, paragraphs joined) and the whole ticket
    /// (`all`, where `linkerd version` output may sit in a block).
    pub fn read(&mut self, prose: &str, all: &str) {
        let pick = |c: regex::Captures| {
            c.iter()
                .skip(1)
                .flatten()
                .next()
                .map(|m| m.as_str().to_string())
        };
        self.version = SERVER_VERSION
            .captures(all)
            .and_then(pick)
            .or_else(|| OWN_VERSION.captures(prose).and_then(pick))
            .or_else(|| ANY_VERSION.captures(prose).and_then(pick));
        let lower = prose.to_ascii_lowercase();
        for (word, comp) in COMPONENTS {
            if lower.contains(word) && !self.components.iter().any(|c| c == comp) {
                self.components.push(comp.to_string());
            }
        }
        self.multicluster = [
            "multicluster",
            "multi-cluster",
            "gateway",
            "mirror",
            "link ",
        ]
        .iter()
        .any(|w| lower.contains(w));
        for s in sentences(prose) {
            if TRIED.is_match(s) && self.tried.len() < 6 {
                let s = clip(s, 220);
                if !self.tried.contains(&s) {
                    self.tried.push(s);
                }
            }
        }
        self.client_silent = CLIENT_SILENT.is_match(prose);
        self.unmeshed = UNMESHED.is_match(prose);
    }

    /// A prose line announcing logs that no log piece follows.
    pub fn announces(line: &str) -> bool {
        ANNOUNCES.is_match(line)
    }
}

const COMPONENTS: &[(&str, &str)] = &[
    ("gateway", "gateway"),
    ("service mirror", "service-mirror"),
    ("service-mirror", "service-mirror"),
    ("destination", "destination"),
    ("identity", "identity"),
    ("proxy-injector", "proxy-injector"),
    ("policy controller", "policy"),
    ("linkerd-init", "linkerd-init"),
    ("proxy-init", "linkerd-init"),
    ("cni", "linkerd-cni"),
    ("client", "client"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_keep_versions_whole() {
        assert_eq!(
            sentences("We upgraded to 2.14.1 last week. Then it broke! Did we miss e.g. a flag?"),
            vec![
                "We upgraded to 2.14.1 last week.",
                "Then it broke!",
                "Did we miss e.g. a flag?"
            ]
        );
    }

    #[test]
    fn own_version_beats_the_first_mentioned() {
        let mut c = Context::default();
        c.read(
            "This worked in 2.10 but we are running stable-2.14.1 now.",
            "",
        );
        assert_eq!(c.version.as_deref(), Some("stable-2.14.1"));
        let mut c = Context::default();
        c.read(
            "It broke after upgrading to 2.12.",
            "Client version: stable-2.13.0\nServer version: stable-2.12.3",
        );
        assert_eq!(c.version.as_deref(), Some("stable-2.12.3"));
    }

    #[test]
    fn clips_at_words() {
        assert_eq!(
            clip("restarted the gateway and the service mirror", 20),
            "restarted the…"
        );
    }

    #[test]
    fn statements() {
        let mut c = Context::default();
        c.read(
            "I checked also the traefik pod proxy log, there was silence at that time.",
            "",
        );
        assert!(c.client_silent);
        let mut c = Context::default();
        c.read("The client gets 503s.", "");
        assert!(!c.client_silent);
        assert!(Context::announces("Here are the gateway logs:"));
        assert!(!Context::announces("The gateway is up."));
    }
}
