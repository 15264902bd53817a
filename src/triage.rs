//! `lpa triage`: a support ticket (prose with log blocks) → findings and a
//! draft reply. Log lines are extracted from fences, indentation and `> `
//! quotes, hard-wrapped lines are rejoined, and the prose is read for the
//! Linkerd version, the components named and what the reporter tried.

use crate::input::wrap::{normalize, unwrap};
use crate::parse::{parse_line, Era, Record, Tokenizer};
use crate::pipeline::Accumulator;
use crate::report::explain::{finding_markdown, Report, DEBUG_ANNOTATION};
use crate::report::text;
use crate::rules::command::{setup_line, Command};
use crate::rules::engine::Engine;
use regex::Regex;
use serde::Serialize;
use std::fmt::Write as _;
use std::sync::LazyLock;
use typed_arena::Arena;

/// What the text around the logs says.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Context {
    /// The Linkerd version the reporter states, as written.
    pub version: Option<String>,
    pub components: Vec<String>,
    pub multicluster: bool,
    /// What the reporter says they already did.
    pub tried: Vec<String>,
    pub log_lines: u64,
    pub prose_lines: u64,
    pub yaml_lines: u64,
    pub check_lines: u64,
    pub code_blocks: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Missing {
    pub id: &'static str,
    pub why: String,
    pub how: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Triage {
    #[serde(flatten)]
    pub report: Report,
    pub context: Context,
    pub missing: Vec<Missing>,
    pub questions: Vec<String>,
}

static VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(stable-2\.\d+\.\d+|edge-\d{2}\.\d{1,2}\.\d+|enterprise-2\.\d+\.\d+)\b|\b(?:linkerd|version|running|on|v)\s*:?\s*v?(2\.\d{1,2}(?:\.\d+)?)\b")
        .expect("static regex")
});
static TRIED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(re-?created|rotated|re-?generated|re-?rolled|rolled out|restarted|re-?installed|upgraded|re-?issued|re-?injected|deleted|replaced|re-?linked|unlinked|re-?ran|recreated)\b[^.\n!?]{0,90}")
        .expect("static regex")
});
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

fn is_check_line(s: &str) -> bool {
    s.starts_with('√') || s.starts_with('×') || s.starts_with('‼') || s.starts_with("--------")
}

fn is_yaml_line(s: &str) -> bool {
    static Y: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^(- )?[A-Za-z][\w./-]*:( |$)").expect("static regex"));
    s.starts_with("- ") || Y.is_match(s)
}

/// A line that is one inline code span: quoted output, not prose.
fn is_code_span(line: &str) -> bool {
    let t = line.trim();
    t.len() > 2 && t.starts_with('`') && t.ends_with('`')
}

/// A fragment that continues a hard-wrapped log line: it starts where a
/// wrapped value would (lowercase, a target, a field) and the line before it
/// looks cut (long, or ending inside the head).
fn continues(prev: &str, frag: &str) -> bool {
    let first = frag.chars().next().unwrap_or(' ');
    let prev_cut =
        prev.len() > 90 || prev.ends_with(':') || prev.ends_with(',') || prev.ends_with('{');
    prev_cut
        && (first.is_ascii_lowercase()
            || first == '_'
            || first == '('
            || first == '[' && !frag.starts_with("[ "))
}

/// Reads the ticket, runs the engine over its log lines.
pub fn triage(name: &str, text: &[u8], engine: &Engine) -> Triage {
    let arena: Arena<String> = Arena::new();
    let mut st = engine.whole_state();
    let mut ctx = Context::default();
    let mut tok = Tokenizer::new(&arena);
    let mut in_fence = false;
    let mut prose = String::new();
    let mut prev_log: Option<(u64, &str)> = None;
    let mut pending: Vec<(u64, &str, u32)> = Vec::new();
    let lines: Vec<&[u8]> = crate::input::lines(text).collect();
    for (i, raw) in lines.iter().enumerate() {
        let n = i as u64 + 1;
        let line = normalize(raw, &arena);
        let inner = unwrap(line).rest;
        let raw_start = line.trim_start().trim_start_matches('>').trim_start();
        if raw_start.starts_with("```") || raw_start.starts_with("~~~") {
            in_fence = !in_fence;
            ctx.code_blocks += u64::from(in_fence);
            prev_log = None;
            continue;
        }
        if parse_line(line).is_some() {
            ctx.log_lines += 1;
            pending.push((n, line, 1));
            prev_log = Some((n, line));
            continue;
        }
        if inner.is_empty() {
            prev_log = None;
            continue;
        }
        if let Some((pn, prev)) = prev_log {
            if continues(prev, inner) {
                let joined: &str = arena.alloc(format!("{prev} {inner}"));
                if parse_line(joined).is_some() {
                    pending.pop();
                    pending.push((pn, joined, (n - pn + 1) as u32));
                    prev_log = Some((pn, joined));
                    continue;
                }
            }
        }
        prev_log = None;
        let quoted_or_indented = in_fence || line.starts_with("    ") || line.starts_with('\t');
        if is_check_line(inner) {
            ctx.check_lines += 1;
        } else if quoted_or_indented && is_yaml_line(inner) {
            ctx.yaml_lines += 1;
        } else if in_fence || is_code_span(line) {
            // Output in a code block that no grammar knows: application logs.
            pending.push((n, line, 0));
        } else {
            ctx.prose_lines += 1;
            prose.push_str(inner);
            prose.push('\n');
        }
    }
    for (n, line, span) in pending {
        let mut emit = |r: &mut Record<'_>| {
            if let Record::Event(e) = r {
                e.lines = span.max(1);
            }
            st.record(name, r)
        };
        if span == 0 {
            // Application output: matched as unparsed text only.
            tok.flush(&mut emit);
            emit(&mut Record::Unparsed {
                line: n,
                text: std::borrow::Cow::Borrowed(line),
                looks_like: None,
            });
        } else {
            tok.push(n, line, &mut emit);
        }
    }
    tok.flush(&mut |r: &mut Record<'_>| st.record(name, r));
    read_prose(&prose, &mut ctx);
    let stated = ctx.version.as_deref().and_then(Era::of_linkerd_version);
    let report = st.finish(stated);
    let missing = missing(&report, &ctx);
    let questions = questions(&report, &ctx, &missing);
    Triage {
        report,
        context: ctx,
        missing,
        questions,
    }
}

fn read_prose(prose: &str, ctx: &mut Context) {
    if let Some(c) = VERSION.captures(prose) {
        ctx.version = c
            .get(1)
            .or_else(|| c.get(2))
            .map(|m| m.as_str().to_string());
    }
    let lower = prose.to_ascii_lowercase();
    for (word, comp) in COMPONENTS {
        if lower.contains(word) && !ctx.components.iter().any(|c| c == comp) {
            ctx.components.push(comp.to_string());
        }
    }
    ctx.multicluster = [
        "multicluster",
        "multi-cluster",
        "gateway",
        "mirror",
        "link ",
    ]
    .iter()
    .any(|w| lower.contains(w));
    for m in TRIED.find_iter(prose) {
        let t = m.as_str().trim().to_string();
        if !ctx.tried.contains(&t) && ctx.tried.len() < 8 {
            ctx.tried.push(t);
        }
    }
}

fn tried_certificates(ctx: &Context) -> bool {
    ctx.tried.iter().any(|t| {
        let t = t.to_ascii_lowercase();
        [
            "trust anchor",
            "trust-anchor",
            "certificate",
            "cert",
            "issuer",
            " ca",
            "root",
        ]
        .iter()
        .any(|w| t.contains(w))
    })
}

fn any_id(r: &Report, prefix: &str) -> bool {
    r.findings.iter().any(|f| {
        f.id.starts_with(prefix) || f.consequences.iter().any(|c| c.id.starts_with(prefix))
    })
}

fn missing(r: &Report, ctx: &Context) -> Vec<Missing> {
    let mut m = Vec::new();
    let s = &r.stats;
    if s.proxy_events == 0 {
        m.push(Missing {
            id: "proxy-logs",
            why: "no linkerd-proxy log lines were posted".into(),
            how: "kubectl logs -n <namespace> <pod> -c linkerd-proxy --timestamps".into(),
        });
    } else if !s.has_debug() {
        m.push(Missing {
            id: "debug-logs",
            why: "only INFO/WARN lines were posted: connect errors and TLS details are logged at DEBUG".into(),
            how: format!("annotate the workload with `{DEBUG_ANNOTATION}`, restart it, reproduce, then send `kubectl logs <pod> -c linkerd-proxy --timestamps`"),
        });
    }
    let range = s.era.range();
    if ctx.version.is_none() && (range.min.is_none() || range.min != range.max) {
        m.push(Missing {
            id: "version",
            why: "no Linkerd version is stated and the log format does not pin it down".into(),
            how: "linkerd version".into(),
        });
    }
    let failing = r.findings.iter().any(|f| !f.benign);
    if failing
        && s.proxy_events > 0
        && r.findings.iter().all(|f| !f.subjects.contains_key("dst"))
        && !ctx.components.iter().any(|c| c == "client")
    {
        m.push(Missing {
            id: "client-logs",
            why: "only the server side's logs were posted; the calling pod's proxy shows where requests go and how they fail".into(),
            how: "kubectl logs -n <client-namespace> <client-pod> -c linkerd-proxy --timestamps".into(),
        });
    }
    if ctx.multicluster && failing && !ctx.components.iter().any(|c| c == "gateway") {
        m.push(Missing {
            id: "gateway-logs",
            why: "multicluster traffic fails but the gateway's own log is not included".into(),
            how: "kubectl logs -n linkerd-multicluster deploy/linkerd-gateway -c linkerd-proxy --timestamps".into(),
        });
    }
    m
}

fn questions(r: &Report, ctx: &Context, missing: &[Missing]) -> Vec<String> {
    let mut q = Vec::new();
    if let Some(f) = r.findings.iter().find(|f| !f.benign) {
        match f.id.split('.').next().unwrap_or("") {
            "connect" => q.push("Did NetworkPolicies, namespace labels, security groups or node pools change around when this started?".to_string()),
            "policy" => q.push("Which Server / AuthorizationPolicy resources select this workload, and what identity does the client run as?".to_string()),
            "identity" => q.push("When were the trust anchor and issuer certificates last rotated, and were all proxies restarted since?".to_string()),
            "discovery" => q.push("Does the destination Service have Ready pods (`kubectl get endpointslices`)?".to_string()),
            "protocol" | "config" => q.push("Which protocol does this port speak, and is it listed in config.linkerd.io/opaque-ports on both the workload and the Service?".to_string()),
            "multicluster" => q.push("Is the remote gateway's address reachable from this cluster, and did its load balancer or nodes change?".to_string()),
            _ => {}
        }
    }
    for m in missing {
        q.push(format!(
            "Could you share {}? ({})",
            match m.id {
                "debug-logs" => "debug-level proxy logs",
                "version" => "the output of `linkerd version`",
                "client-logs" => "the client pod's linkerd-proxy logs",
                "gateway-logs" => "the gateway's linkerd-proxy logs",
                _ => "the linkerd-proxy logs",
            },
            m.why
        ));
    }
    if !ctx.tried.is_empty() && q.len() < 4 {
        q.push("Did anything change in the errors after the steps you already tried?".to_string());
    }
    q
}

/// The reply, in Markdown, ready to paste.
pub fn markdown(t: &Triage) -> String {
    let r = &t.report;
    let mut o = String::new();
    let harmful: Vec<_> = r.findings.iter().filter(|f| !f.benign).collect();
    let benign: Vec<_> = r.findings.iter().filter(|f| f.benign).collect();
    let _ = writeln!(o, "## Likely cause\n");
    match harmful.first() {
        Some(f) => {
            let first_sentence = f.explanation.split(". ").next().unwrap_or(&f.explanation);
            let _ = writeln!(
                o,
                "**{}** ({}). {}.",
                text::prose(&f.title, &f.quoted),
                text::code(&f.id),
                text::prose(first_sentence.trim_end_matches('.'), &f.quoted)
            );
            if !f.consequences.is_empty() {
                let mut c: Vec<String> = f
                    .consequences
                    .iter()
                    .map(|c| format!("`{}`", c.id))
                    .collect();
                c.dedup();
                let _ = writeln!(
                    o,
                    "The other errors in the logs ({}) follow from it.",
                    c.join(", ")
                );
            }
        }
        None if !benign.is_empty() => {
            let _ = writeln!(o, "Nothing in these logs shows traffic failing: what they hold is benign noise (see below).");
        }
        None => {
            let _ = writeln!(o, "The logs posted do not show a known failure.");
        }
    }
    if !benign.is_empty() {
        let b: Vec<String> = benign
            .iter()
            .map(|f| {
                format!(
                    "{} ({})",
                    text::prose(&f.title, &f.quoted),
                    text::code(&f.id)
                )
            })
            .collect();
        let _ = writeln!(o, "\nHarmless noise: {}.", b.join("; "));
    }
    if tried_certificates(&t.context)
        && r.stats.proxy_events > 0
        && r.stats.has_debug()
        && !any_id(r, "identity.")
    {
        let _ = writeln!(
            o,
            "\nThe trust anchor and certificates are not the problem: the posted debug logs show no certificate validation error (UnknownIssuer, BadCertificate, expiry), so re-creating them could not have helped."
        );
    }
    if !t.context.tried.is_empty() {
        let _ = writeln!(
            o,
            "\nAlready tried, per the report: {}.",
            t.context
                .tried
                .iter()
                .map(|s| text::code(s))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let _ = writeln!(o, "\n## Findings\n");
    for (i, f) in r.findings.iter().enumerate() {
        finding_markdown(&mut o, i + 1, f);
    }
    if !t.missing.is_empty() {
        let _ = writeln!(o, "## What is missing\n");
        for m in &t.missing {
            let _ = writeln!(o, "- **{}**: {}. How: `{}`", m.id, m.why, m.how);
        }
        let _ = writeln!(o);
    }
    let mut cmds: Vec<Command> = Vec::new();
    for f in &harmful {
        for c in &f.next_commands {
            if !cmds.iter().any(|x| x.command == c.command) {
                cmds.push(c.clone());
            }
        }
    }
    if !cmds.is_empty() {
        let setup = setup_line(&cmds);
        let lines: Vec<&str> = setup
            .iter()
            .chain(cmds.iter().map(|c| &c.command))
            .map(String::as_str)
            .collect();
        let _ = writeln!(
            o,
            "## Next commands, in order\n\n{}",
            text::fenced("sh", &lines)
        );
    }
    if !t.questions.is_empty() {
        let _ = writeln!(o, "## Questions\n");
        for q in &t.questions {
            let _ = writeln!(o, "- {q}");
        }
        let _ = writeln!(o);
    }
    let c = &t.context;
    let _ = writeln!(
        o,
        "<sub>lpa read {} log lines ({} events), {} prose lines, {} YAML lines, {} `linkerd check` lines{}{}.</sub>",
        c.log_lines,
        r.input.events,
        c.prose_lines,
        c.yaml_lines,
        c.check_lines,
        c.version.as_ref().map(|v| format!("; Linkerd {}", text::code(v))).unwrap_or_default(),
        r.era_text().map(|e| format!("; log format {e}")).unwrap_or_default(),
    );
    o
}
